#!/usr/bin/python3
"""tools/hf_reference.py - run a model directory written by bertc (or any
HF-style BERT directory: config.json + model.safetensors with Hugging Face's
state_dict names) in the PyTorch reference (tools/bert_ref.py,
tools/heads_ref.py), loaded with load_state_dict(strict=True), on an
inputs.safetensors, and write its outputs.

  /usr/bin/python3 tools/hf_reference.py MODEL_DIR INPUTS.safetensors OUT.safetensors

A key the reference does not have, or one it lacks, fails the strict load:
that is the check that a bertc-saved model is what PyTorch expects. The only
keys dropped first are HF's tied aliases of the MLM decoder
(cls.predictions.decoder.{weight,bias}), which HF writes and ties on load.
Needs Debian's python3-torch."""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bert_ref as R    # noqa: E402
import heads_ref as H   # noqa: E402
import st               # noqa: E402

TIED_ALIASES = ("cls.predictions.decoder.weight", "cls.predictions.decoder.bias")


def seqcls_forward(m, x):
    _, pooled, _, _ = m.bert(x["input_ids"], x["attention_mask"], x["token_type_ids"])
    return {"logits": m.classifier(pooled)}


def mlm_forward(m, x):
    h, _, _, _ = m.bert(x["input_ids"], x["attention_mask"], x["token_type_ids"])
    return {"logits": m.cls.predictions(h, m.bert.embeddings.word_embeddings.weight)}


def model_forward(m, x):
    h, pooled, _, _ = m.bert(x["input_ids"], x["attention_mask"], x["token_type_ids"]) \
        if hasattr(m, "bert") else m(x["input_ids"], x["attention_mask"], x["token_type_ids"])
    out = {"last_hidden_state": h}
    if pooled is not None:
        out["pooler_output"] = pooled
    return out


def head_forward(m, x):
    out, _ = m(x)
    return {k: v for k, v in out.items() if "." not in k}


def build(c, keys):
    arch = c["architectures"][0]
    if arch == "BertModel":
        pooler = any(k.startswith("pooler.") for k in keys)
        return R.BertModel(c, pooler=pooler), model_forward
    if arch == "BertForSequenceClassification":
        return R.BertForSequenceClassification(c), seqcls_forward
    if arch == "BertForMaskedLM":
        return R.BertForMaskedLM(c), mlm_forward
    if arch == "BertForTokenClassification":
        return H.BertForTokenClassification(c), head_forward
    if arch == "BertForQuestionAnswering":
        return H.BertForQuestionAnswering(c), head_forward
    sys.exit("hf_reference.py: no PyTorch reference for %s" % arch)


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    model_dir, inputs_path, out_path = sys.argv[1:]
    c = json.load(open(os.path.join(model_dir, "config.json")))
    c.setdefault("layer_norm_eps", 1e-12)
    c.setdefault("hidden_act", "gelu")
    c.setdefault("type_vocab_size", 2)
    c.setdefault("pad_token_id", 0)
    weights = st.load(os.path.join(model_dir, "model.safetensors"))
    weights = {k: v for k, v in weights.items() if k not in TIED_ALIASES}
    m, forward = build(c, weights.keys())
    m.load_state_dict(weights, strict=True)   # the check: every key, no more, no less
    m = m.double().eval()
    raw = st.load(inputs_path)
    x = {k: v.long() for k, v in raw.items()}
    x.setdefault("attention_mask", torch.ones_like(x["input_ids"]))
    x.setdefault("token_type_ids", torch.zeros_like(x["input_ids"]))
    with torch.no_grad():
        out = forward(m, x)
    st.save(out_path, {k: v.float() for k, v in out.items()})
    print("%s: %s loaded strict=True (%d tensors); wrote %s to %s" % (
        model_dir, c["architectures"][0], len(weights), ", ".join(sorted(out)), out_path))


if __name__ == "__main__":
    main()
