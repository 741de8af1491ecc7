#!/usr/bin/env python3
"""attention_stats.py OUT.safetensors INPUTS.safetensors [LABEL]: what a model's heads look at.

OUT is `bertc run`'s output on INPUTS (`bertc encode`), which holds
layers.{l}.attention_probs (B, nh, S, S). For each layer and head, averaged
over the real query tokens of every row: the entropy of the attention row in
bits (log2 of the keys a head spreads over: uniform over n keys is log2 n), and
the share of attention on the previous token, the next token, the token
itself, [CLS] (position 0) and the final [SEP]. Reads safetensors with the
standard library alone."""
import json, math, struct, sys

def load(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        head = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in head.items():
        if name == "__metadata__":
            continue
        a, b = t["data_offsets"]
        fmt = {"F32": "f", "I64": "q", "I32": "i"}[t["dtype"]]
        count = (b - a) // struct.calcsize(fmt)
        out[name] = (t["shape"], struct.unpack(f"<{count}{fmt}", data[a:b]))
    return out

def main():
    outs, ins = load(sys.argv[1]), load(sys.argv[2])
    label = sys.argv[3] if len(sys.argv) > 3 else sys.argv[1]
    (B, S), mask = ins["attention_mask"]
    lengths = [sum(mask[b * S:(b + 1) * S]) for b in range(B)]
    print(f"{label}: layer head  entropy_bits  prev  next  self   cls   sep")
    l = 0
    while f"layers.{l}.attention_probs" in outs:
        (B, nh, S, _), p = outs[f"layers.{l}.attention_probs"]
        for h in range(nh):
            acc = [0.0] * 6
            rows = 0
            for b in range(B):
                n = lengths[b]
                for q in range(n):
                    base = ((b * nh + h) * S + q) * S
                    row = p[base:base + S]
                    acc[0] -= sum(x * math.log2(x) for x in row[:n] if x > 0)
                    acc[1] += row[q - 1] if q > 0 else 0
                    acc[2] += row[q + 1] if q + 1 < n else 0
                    acc[3] += row[q]
                    acc[4] += row[0]
                    acc[5] += row[n - 1]
                    rows += 1
            print(f"{'':{len(label)}}  {l:5d} {h:4d}  {acc[0] / rows:12.2f}  " +
                  "  ".join(f"{x / rows:4.2f}" for x in acc[1:]))
        l += 1

main()
