#!/bin/sh
# tools/make_finetuned_fixture.sh — test/data/finetuned/: a classifier that
# `bertc finetune` trained, and what the PyTorch reference computes with it
# after load_state_dict(strict=True) (tools/hf_reference.py). Issue #15's
# journey (c): a model bertc fine-tunes is a Hugging Face model PyTorch loads.
#   sh tools/make_finetuned_fixture.sh      (needs build/bertc and python3-torch)
set -eu
cd "$(dirname "$0")/.."
OUT=test/data/finetuned
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# A small word-level vocabulary (the 400 most frequent words of the first 600
# texts of data/topics.tsv, letters and digits to spell the rest) and a
# 2-layer H=16 classifier, so the fixture is a few tens of KB.
/usr/bin/python3 - "$TMP" <<'PY'
import collections, csv, json, re, string, sys
tmp = sys.argv[1]
rows = [l.rstrip("\n").split("\t", 1) for l in open("data/topics.tsv")]
count = collections.Counter(w for _, t in rows[:600] for w in re.findall(r"[a-z]+", t.lower()))
words = [w for w, _ in count.most_common(400) if len(w) > 1]
tokens = (["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
          + list(string.ascii_lowercase + string.digits + ".,;:!?'\"-()")
          + ["##" + c for c in string.ascii_lowercase + string.digits] + words)
open(tmp + "/vocab.txt", "w").write("\n".join(tokens) + "\n")
json.dump({"architectures": ["BertForSequenceClassification"], "vocab_size": len(tokens),
           "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2,
           "intermediate_size": 32, "max_position_embeddings": 64, "type_vocab_size": 2,
           "hidden_act": "gelu", "layer_norm_eps": 1e-12, "pad_token_id": 0},
          open(tmp + "/config.json", "w"), indent=1)
with open(tmp + "/train.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["label", "text"])
    for label, text in rows[:600]:
        w.writerow([label, text])
open(tmp + "/new.txt", "w").write("\n".join(t.replace("\t", " ") for _, t in rows[1000:1006]) + "\n")
PY
build/bertc finetune --config "$TMP/config.json" --vocab "$TMP/vocab.txt" --train "$TMP/train.csv" \
    --task seq-cls --out "$TMP/model" --steps 600 --batch-size 16 --max-len 64 --lr 2e-3 --quiet
mkdir -p "$OUT"
cp "$TMP/model/config.json" "$TMP/model/model.safetensors" "$TMP/model/vocab.txt" \
   "$TMP/model/tokenizer_config.json" "$TMP/new.txt" "$OUT/"
build/bertc encode --model "$OUT" --input "$OUT/new.txt" --max-len 64 --output "$OUT/inputs.safetensors"
/usr/bin/python3 tools/hf_reference.py "$OUT" "$OUT/inputs.safetensors" "$OUT/pytorch_outputs.safetensors"
