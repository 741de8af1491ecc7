#!/usr/bin/python3
"""tools/make_bert_base.py OUT_DIR [ARCH] - a bert-base-uncased-shaped model.

Writes OUT_DIR/config.json, OUT_DIR/weights.safetensors (the PyTorch
state_dict of tools/bert_ref.py's model at bert-base sizes: 12 layers,
H=768, 12 heads, vocabulary 30522, random weights, about 440 MB) and
OUT_DIR/inputs.safetensors (a padded 2 x 128 batch with labels), so that
`bertc run` can be checked on a full-size state_dict with no missing or
unexpected keys. ARCH: BertForMaskedLM (default) or
BertForSequenceClassification. Nothing it writes is committed."""
import json
import os
import sys

import torch

import bert_ref as R
import st
import zoo_common as Z

out, arch = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "BertForMaskedLM")
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "..", "examples", "configs", "bert-base-uncased.json")) as f:
    c = json.load(f)
c["architectures"] = [arch]
c["num_labels"] = 2
os.makedirs(out, exist_ok=True)
torch.manual_seed(0)
m = R.BertForMaskedLM(c) if arch == "BertForMaskedLM" else R.BertForSequenceClassification(c)
Z.hf_init(m, 0.02)
sd = {k: v for k, v in m.state_dict().items()}
if arch == "BertForMaskedLM":
    sd["cls.predictions.decoder.weight"] = sd["bert.embeddings.word_embeddings.weight"]
    sd["cls.predictions.decoder.bias"] = sd["cls.predictions.bias"]
st.save(os.path.join(out, "weights.safetensors"), sd, metadata={"format": "pt"})
with open(os.path.join(out, "config.json"), "w") as f:
    json.dump(c, f, indent=2)
gen = torch.Generator().manual_seed(0)
ids, mask = Z.padded_batch(gen, 128, c["vocab_size"], [128, 77], first=101, sep=102)
x = {"input_ids": ids, "attention_mask": mask, "token_type_ids": torch.zeros_like(ids)}
if arch == "BertForMaskedLM":
    labels = torch.full_like(ids, -100)
    labels[:, 5:70:7] = ids[:, 5:70:7]
    x["labels"] = labels
else:
    x["labels"] = torch.tensor([0, 1])
st.save(os.path.join(out, "inputs.safetensors"), x)
print("wrote", out, sum(p.numel() for p in m.parameters()), "parameters")
