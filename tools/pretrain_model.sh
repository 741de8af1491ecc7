#!/bin/sh
# tools/pretrain_model.sh — `make pretrained`: rebuild the shipped pretrained
# model, data/pretrained/bertc-docs, from scratch.
#
#   sh tools/pretrain_model.sh [BUILD]        (default BUILD: build)
#
#   1. the corpus: sh tools/build_corpus.sh (Debian's man pages, WordNet,
#      the Perl and Python documentation, the fortunes; the demo's held-out
#      texts removed) unless BUILD/corpus/corpus.txt is there;
#   2. the vocabulary: bertc vocab, 8,000 WordPiece tokens of that corpus;
#   3. phase 1: bertc pretrain, masked LM on rows of 128 tokens
#      (PHASE1_STEPS steps of 32 rows, lr 1e-3, 6 % warmup, linear decay);
#   4. phase 2: bertc pretrain --model (phase 1), the same rows for
#      PHASE2_STEPS more steps, the learning rate warmed up again (a warm
#      restart: the model card shows what the longer run bought);
#   5. phase 3: bertc pretrain --model (phase 2), rows of 256 tokens
#      (PHASE3_STEPS steps of 16 rows): the positions 128..255 that the
#      first phases never saw, as BERT's own recipe ends with its longest
#      rows;
#   6. the model files copied into data/pretrained/bertc-docs.
# Every phase checkpoints into BUILD/pretrained/ and is resumed when this
# script runs again after a stop (Ctrl-C, a lost session): nothing is lost
# and nothing is redone. A phase already complete is skipped. The model
# card, data/pretrained/bertc-docs/README.md, says what the run measured.
set -e
cd "$(dirname "$0")/.."
BUILD=${1:-build}
BERTC=${BERTC:-$BUILD/bertc}
CORPUS=$BUILD/corpus/corpus.txt
WORK=$BUILD/pretrained
OUT=data/pretrained/bertc-docs
PHASE1_STEPS=${PHASE1_STEPS:-8000}
PHASE2_STEPS=${PHASE2_STEPS:-12000}
PHASE3_STEPS=${PHASE3_STEPS:-800}

[ -f "$CORPUS" ] || sh tools/build_corpus.sh "$CORPUS"
mkdir -p "$WORK"
[ -f "$WORK/vocab.txt" ] || "$BERTC" vocab --train "$CORPUS" --size 8000 --out "$WORK/vocab.txt"

# 4 layers, H = 128, 4 heads, FFN 512, 256 positions: the size chosen by
# measurement (the model card's table); 2.9 M parameters, 11.7 MB.
cat > "$WORK/config.json" <<'EOF'
{"architectures": ["BertForMaskedLM"], "vocab_size": 8000, "hidden_size": 128,
 "num_hidden_layers": 4, "num_attention_heads": 4, "intermediate_size": 512,
 "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
 "max_position_embeddings": 256, "type_vocab_size": 2, "initializer_range": 0.02,
 "layer_norm_eps": 1e-12, "pad_token_id": 0}
EOF

# phase DIR: done when DIR holds a model and no newer checkpoint is pending.
done_phase() { [ -f "$1/model.safetensors" ] && [ -f "$1/log.jsonl" ]; }

if ! done_phase "$WORK/phase1"; then
    "$BERTC" pretrain --corpus "$CORPUS" --config "$WORK/config.json" --vocab "$WORK/vocab.txt" \
        --cache "$WORK/corpus.tokens" --out "$WORK/phase1" --resume \
        --max-len 128 --batch-size 32 --steps "$PHASE1_STEPS" --lr 1e-3 --warmup 0.06 \
        --eval-every $((PHASE1_STEPS / 20)) --seed 42
fi
if ! done_phase "$WORK/phase2"; then
    "$BERTC" pretrain --corpus "$CORPUS" --model "$WORK/phase1" \
        --cache "$WORK/corpus.tokens" --out "$WORK/phase2" --resume \
        --max-len 128 --batch-size 32 --steps "$PHASE2_STEPS" --lr 1e-3 --warmup 0.06 \
        --eval-every $((PHASE2_STEPS / 20)) --seed 43
fi
if ! done_phase "$WORK/phase3"; then
    "$BERTC" pretrain --corpus "$CORPUS" --model "$WORK/phase2" \
        --cache "$WORK/corpus.tokens" --out "$WORK/phase3" --resume \
        --max-len 256 --batch-size 16 --steps "$PHASE3_STEPS" --lr 5e-4 --warmup 0.06 \
        --eval-every $((PHASE3_STEPS / 5)) --eval-rows 496 --seed 44
fi

mkdir -p "$OUT"
for f in config.json model.safetensors vocab.txt tokenizer_config.json; do
    cp "$WORK/phase3/$f" "$OUT/$f"
done
for p in 1 2 3; do cp "$WORK/phase$p/log.jsonl" "$OUT/log-phase$p.jsonl"; done
echo "wrote $OUT ($(du -k "$OUT/model.safetensors" | cut -f1) KiB of weights)"
