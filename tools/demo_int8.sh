#!/bin/sh
# tools/demo_int8.sh BUILD — `make demo-int8`: the demo classifier's held-out
# accuracy in float32, int8 and bf16 (docs/quantization.md), all measured by
# the CLI on the same texts.
#
#   1. the demo model: BUILD/demo, the model directory `make demo` saves
#      (config.json with the topic names, model.safetensors, vocab.txt),
#      trained by `make demo` when absent;
#   2. BUILD/demo-int8/int8 = `bertc quantize` of it, BUILD/demo-int8/bf16 =
#      `bertc quantize --dtype bf16` (run on the CPU's bf16 path, `bertc
#      version` names it; the scalar oracle where the CPU has none);
#   3. the held-out texts: the last 20 % of data/topics.tsv, as the demo
#      splits it (examples/topics.c: n_train = n * 4 / 5);
#   4. `bertc predict --max-len 64` (the demo's length) with each model; a
#      prediction is right when its label is the line's topic.
set -eu
BUILD=${1:-build}
BERTC=./$BUILD/bertc
DEMO=$BUILD/demo
OUT=$BUILD/demo-int8

if [ ! -f "$DEMO/model.safetensors" ] || [ ! -f "$DEMO/vocab.txt" ]; then
    echo "demo-int8: no trained demo model in $DEMO; training it (make demo)"
    "./$BUILD/examples/topics"
fi

mkdir -p "$OUT"
"$BERTC" quantize --model "$DEMO" --out "$OUT/int8" --force
"$BERTC" quantize --model "$DEMO" --out "$OUT/bf16" --dtype bf16 --force

n=$(wc -l < data/topics.tsv)
first=$((n * 4 / 5 + 1))
tail -n +"$first" data/topics.tsv > "$OUT/held_out.tsv"
cut -f2- "$OUT/held_out.tsv" > "$OUT/held_out.txt"

# accuracy MODEL NAME: percent of held-out lines whose predicted label is right
accuracy() {
    "$BERTC" predict --model "$1" --input "$OUT/held_out.txt" --max-len 64 --batch-size 32 \
        > "$OUT/$2.predictions.tsv" 2> "$OUT/$2.predict.log"
    cut -f1 "$OUT/$2.predictions.tsv" | paste "$OUT/held_out.tsv" - | awk -F'\t' '
        { right += ($NF == $1); total++ }
        END { if (total == 0) exit 1; printf "%.1f %d %d\n", 100 * right / total, right, total }'
}

fp32=$(accuracy "$DEMO" fp32)
int8=$(accuracy "$OUT/int8" int8)
bf16=$(accuracy "$OUT/bf16" bf16)
set -- $fp32
echo "held-out accuracy, float32: $1 % ($2 of $3)"
fp=$1
set -- $int8
echo "held-out accuracy, int8:    $1 % ($2 of $3)"
awk -v a="$fp" -v b="$1" 'BEGIN { d = b - a; printf "int8 - float32: %+.1f points (%s)\n", d,
    (d >= -1 && d <= 1) ? "within 1 point" : "MORE than 1 point apart" }'
set -- $bf16
echo "held-out accuracy, bf16:    $1 % ($2 of $3; bf16 path $("$BERTC" version | sed -n 's/.*bf16[ _]path[: ]*\([a-z0-9]*\).*/\1/p'))"
awk -v a="$fp" -v b="$1" 'BEGIN { d = b - a; printf "bf16 - float32: %+.1f points (%s)\n", d,
    (d >= -0.5 && d <= 0.5) ? "within 0.5 point" : "MORE than 0.5 point apart" }'
