#!/bin/sh
# heldout.sh MODEL_DIR [WORK]: the held-out real task (debian_task.py: Debian package
# descriptions, five sections), fine-tuned with `bertc finetune` at its defaults from
# MODEL_DIR and, for comparison, the same config from scratch (its config.json and
# vocab.txt, random init; also at the defaults), against a multinomial naive Bayes on
# the same split. Prints one line each: accuracy on the held-out rows.
set -e
model=$1 work=${2:-build/heldout}
d=$(cd "$(dirname "$0")" && pwd)
B=${BERTC:-build/bertc}
mkdir -p "$work"
[ -f "$work/task/train.tsv" ] || python3 "$d/debian_task.py" "$work/task"
tail -n +2 "$work/task/test.tsv" | cut -f2 > "$work/test.txt"
tail -n +2 "$work/task/test.tsv" | cut -f1 > "$work/test.gold"
acc() { "$B" predict --model "$1" --input "$work/test.txt" 2>/dev/null | cut -f1 |
        paste - "$work/test.gold" | awk -F'\t' '{n++; if ($1==$2) c++} END {printf "%.1f %% (%d of %d)", 100*c/n, c, n}'; }
start=$(date +%s)
rm -rf "$work/pretrained"
"$B" finetune --model "$model" --train "$work/task/train.tsv" --out "$work/pretrained" --quiet
echo "fine-tuned from $model (defaults): $(acc "$work/pretrained") in $(( $(date +%s) - start )) s"
start=$(date +%s)
rm -rf "$work/scratch"
"$B" finetune --config "$model/config.json" --vocab "$model/vocab.txt" --train "$work/task/train.tsv" \
    --out "$work/scratch" --quiet
echo "the same config from scratch (defaults): $(acc "$work/scratch") in $(( $(date +%s) - start )) s"
python3 "$d/naive_bayes.py" "$work/task/train.tsv" "$work/task/test.tsv"
