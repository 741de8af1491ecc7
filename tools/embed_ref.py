#!/usr/bin/python3
"""tools/embed_ref.py - Hugging Face-style model directories and what PyTorch
computes for their texts, for `bertc embed` and `bertc predict` (journey (b)
of issue 15).

    /usr/bin/python3 tools/embed_ref.py [DIR [CLS_DIR]]
        (default test/data/embed and test/data/predict_seqcls)

CLS_DIR is a BertForSequenceClassification with id2label (negative, neutral,
positive) on the same vocabulary and texts; its expected.safetensors holds
"probs" (N, 3), the softmax of its logits (float64, stored F32), which
test/test_predict.c compares with `bertc predict --top-k 3`.

DIR gets:
  config.json, model.safetensors   a small BertModel (HF names: embeddings.*,
                                   encoder.layer.N.*, pooler.dense.*), seed 15
  vocab.txt, tokenizer_config.json the tokenizer (do_lower_case true)
  texts.txt                        one text a line, of different lengths
  expected.safetensors             (N, H) float32, computed in float64:
      mean        sentence-transformers' Pooling(mean): sum(h * mask) / max(sum(mask), 1e-9)
      cls         h[:, 0]
      pooler      pooler_output
      mean_normalized  mean / max(||mean||, 1e-12), as its Normalize module
The texts run as ONE padded batch (padding=True), so the reference also
shows that padding does not change a text's vector. The tokenizer is
tools/tokenizer_ref.py (the cross-check of HF's BertTokenizerFast) and the
model tools/bert_ref.py, so no transformers install is needed.
test/test_embed.c runs `bertc embed` on DIR and compares.
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st  # noqa: E402
import tokenizer_ref  # noqa: E402
from bert_ref import BertForSequenceClassification, BertModel  # noqa: E402
from zoo_common import hf_init  # noqa: E402

WORDS = ("the a cat dog sat on mat ran fast slow play ##ing ##ed ##s bird sang "
         "morning house is big small red blue . , ! ?").split()
TEXTS = [
    "The cat sat on the mat.",
    "A dog ran!",
    "Birds sang in the morning, playing and played.",
    "Blue",
    "the big red house is small? the small blue house is big.",
]
CONFIG = {
    "architectures": ["BertModel"], "model_type": "bert", "vocab_size": 0,
    "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
    "intermediate_size": 64, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1, "max_position_embeddings": 64,
    "type_vocab_size": 2, "initializer_range": 0.02, "layer_norm_eps": 1e-12,
    "pad_token_id": 0,
}


def write_tokenizer(out, lines):
    with open(os.path.join(out, "vocab.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump({"do_lower_case": True, "model_max_length": 64,
                   "tokenizer_class": "BertTokenizer"}, f, indent=2)
    with open(os.path.join(out, "texts.txt"), "w") as f:
        f.write("\n".join(TEXTS) + "\n")


def write_config(out, config):
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)


def padded_texts(vocab):
    """The texts as one batch, padded to the longest (padding=True)."""
    enc = [tokenizer_ref.encode(vocab, t) for t in TEXTS]
    S = max(len(e["ids"]) for e in enc)
    ids = torch.zeros(len(TEXTS), S, dtype=torch.long)
    mask = torch.zeros(len(TEXTS), S, dtype=torch.long)
    for i, e in enumerate(enc):
        ids[i, :len(e["ids"])] = torch.tensor(e["ids"])
        mask[i, :len(e["ids"])] = 1
    return ids, mask


def encoder_dir(out, lines, ids, mask):
    config = dict(CONFIG, vocab_size=len(lines))
    torch.manual_seed(15)
    model = BertModel(config)
    hf_init(model, 0.2)
    weights = {k: v.detach().float().contiguous() for k, v in model.state_dict().items()}
    model.double().eval()
    with torch.no_grad():
        h, pooled, _, _ = model(ids, mask, torch.zeros_like(ids))
    m = mask[:, :, None].double()
    mean = (h * m).sum(1) / torch.clamp(m.sum(1), min=1e-9)
    norm = mean / torch.clamp(mean.norm(dim=1, keepdim=True), min=1e-12)
    expected = {"mean": mean, "cls": h[:, 0], "pooler": pooled, "mean_normalized": norm}
    os.makedirs(out, exist_ok=True)
    write_config(out, config)
    write_tokenizer(out, lines)
    st.save(os.path.join(out, "model.safetensors"), weights, metadata={"format": "pt"})
    st.save(os.path.join(out, "expected.safetensors"),
            {k: v.float().contiguous() for k, v in expected.items()})
    print("wrote", out, len(TEXTS), "texts,", ids.shape[1], "tokens at most")


def classifier_dir(out, lines, ids, mask):
    labels = ["negative", "neutral", "positive"]
    config = dict(CONFIG, vocab_size=len(lines), num_labels=3,
                  architectures=["BertForSequenceClassification"],
                  problem_type="single_label_classification",
                  id2label={str(i): n for i, n in enumerate(labels)},
                  label2id={n: i for i, n in enumerate(labels)})
    torch.manual_seed(16)
    model = BertForSequenceClassification(config)
    hf_init(model, 0.2)
    weights = {k: v.detach().float().contiguous() for k, v in model.state_dict().items()}
    model.double().eval()
    with torch.no_grad():
        _, pooled, _, _ = model.bert(ids, mask, torch.zeros_like(ids))
        probs = torch.softmax(model.classifier(pooled), dim=-1)
    os.makedirs(out, exist_ok=True)
    write_config(out, config)
    write_tokenizer(out, lines)
    st.save(os.path.join(out, "model.safetensors"), weights, metadata={"format": "pt"})
    st.save(os.path.join(out, "expected.safetensors"), {"probs": probs.float().contiguous()})
    print("wrote", out, "labels", [labels[i] for i in probs.argmax(-1).tolist()])


def main():
    data = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "data")
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(data, "embed")
    cls_out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(data, "predict_seqcls")
    lines = tokenizer_ref.SPECIAL + WORDS
    vocab = {t: i for i, t in enumerate(lines)}
    ids, mask = padded_texts(vocab)
    encoder_dir(out, lines, ids, mask)
    classifier_dir(cls_out, lines, ids, mask)


if __name__ == "__main__":
    main()
