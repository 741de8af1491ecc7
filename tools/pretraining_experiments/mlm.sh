#!/bin/sh
# mlm.sh NAME TRAIN.tsv STEPS [finetune flags...]: MLM pretraining (32 x 64, seed 42) with the
# experiment binary (BERTC, default bexp/bertc; knobs BERTC_EXP_* from the environment),
# then the dropout of the saved config set back to 0.1, and fine-tuning at lr 1e-3, seeds 1-3,
# with $d/bin/bertc (the pinned ffe5dc6 build in the evidence). Prints "NAME ppl P" then the ft.sh lines.
name=$1 train=$2 steps=$3; shift 3
d=$(cd "$(dirname "$0")" && pwd)
cfg=${CFG:-$d/cfg.json}
BERTC_THREADS=1 nice -n 5 "${BERTC:-$d/bexp/bertc}" finetune --task mlm --config "$cfg" --vocab "$d/vocab.txt" \
  --train "$train" --out "$d/$name" --max-len 64 --batch-size 32 --steps "$steps" --seed 42 --quiet "$@" \
  > "$d/$name.log" 2>&1 || { echo "$name MLM FAILED"; tail -2 "$d/$name.log"; exit 1; }
sed -i 's/"hidden_dropout_prob": [0-9.e-]*/"hidden_dropout_prob": 0.1/; s/"attention_probs_dropout_prob": [0-9.e-]*/"attention_probs_dropout_prob": 0.1/' "$d/$name/config.json"
echo "$name $(grep -o 'perplexity [0-9.]*' "$d/$name.log") $(grep -o 'in [0-9]* s' "$d/$name.log")"
for s in 1 2 3; do BERTC= "$d/ft.sh" "$name" 1e-3 $s --model "$d/$name"; done
