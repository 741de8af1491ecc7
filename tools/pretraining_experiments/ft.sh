#!/bin/sh
# ft.sh NAME LR SEED (--model DIR | --config cfg.json --vocab vocab.txt) [more flags]
# fine-tunes 400 steps x 32 at max-len 64 on the 915 texts, prints "NAME lr seed acc"
name=$1 lr=$2 seed=$3; shift 3
d=$(cd "$(dirname "$0")" && pwd)
out=$d/runs/$name-$lr-$seed
BERTC_THREADS=1 nice -n 5 "${BERTC:-$d/bin/bertc}" finetune "$@" --train "$d/train.tsv" --out "$out" \
  --max-len 64 --batch-size 32 --steps 400 --lr "$lr" --seed "$seed" --quiet > "$out.log" 2>&1 || { echo "$name $lr $seed FAILED"; tail -2 "$out.log"; exit 1; }
echo "$name $lr $seed $("$d/acc.sh" "$out")"
