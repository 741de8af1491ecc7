#!/usr/bin/python3
"""tools/export_onnx.py - one BERT model for bertc and ONNX Runtime alike.

    /usr/bin/python3 tools/export_onnx.py --config C.json --out DIR [--layers L --hidden H]

Builds the BertModel of tools/bert_ref.py (SPEC 6.1 in PyTorch) with the
benches' seeded HF init (torch.manual_seed(0), as tools/bench_torch.py) and
writes:
  DIR/model.onnx         opset 12, inputs input_ids, attention_mask,
                         token_type_ids (int64, (batch, seq), both dynamic),
                         output last_hidden_state. nn.Linear on (B, S, H)
                         exports as MatMul + Add, so ORT's optimizer can fuse
                         Attention, SkipLayerNorm and BiasGelu itself.
  DIR/model.safetensors  the same weights under HF's names, for
                         build/bench/forward --weights.
The pooler and attention maps are not outputs: the benches time the encoder.
Needs Debian's python3-torch (/usr/bin/python3)."""
import argparse
import warnings
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bert_ref as R  # noqa: E402
import st  # noqa: E402
import zoo_common as Z  # noqa: E402


class Encoder(torch.nn.Module):
    """BertModel -> last_hidden_state only."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, ids, mask, types):
        return self.m(ids, mask, types)[0]


def config(a):
    with open(a.config) as f:
        c = json.load(f)
    if a.layers:
        c["num_hidden_layers"] = a.layers
    if a.hidden:  # heads H/64, intermediate 4H, as bench/bench_util.h
        c["hidden_size"] = a.hidden
        c["num_attention_heads"] = max(a.hidden // 64, 1)
        c["intermediate_size"] = 4 * a.hidden
    return c


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--layers", type=int, default=0)
    ap.add_argument("--hidden", type=int, default=0)
    a = ap.parse_args()
    warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)  # sqrt(head dim) is constant
    c = config(a)
    torch.manual_seed(0)
    m = R.BertModel(c).eval()
    Z.hf_init(m, c["initializer_range"])
    os.makedirs(a.out, exist_ok=True)
    st.save(os.path.join(a.out, "model.safetensors"), m.state_dict())
    ids = torch.randint(1000, c["vocab_size"], (1, 16))
    mask, types = torch.ones_like(ids), torch.zeros_like(ids)
    axes = {0: "batch", 1: "seq"}
    with torch.no_grad():
        torch.onnx.export(Encoder(m), (ids, mask, types), os.path.join(a.out, "model.onnx"),
                          opset_version=12, do_constant_folding=True,
                          input_names=["input_ids", "attention_mask", "token_type_ids"],
                          output_names=["last_hidden_state"],
                          dynamic_axes={"input_ids": axes, "attention_mask": axes,
                                        "token_type_ids": axes, "last_hidden_state": axes})
    print("export_onnx: %s (opset 12) and model.safetensors, %d layers, hidden %d, torch %s"
          % (a.out, c["num_hidden_layers"], c["hidden_size"], torch.__version__))


if __name__ == "__main__":
    main()
