#!/bin/sh
# bench/mixed_precision_curve.sh — does --bf16 train as float32 does? Three
# pretraining runs of the shipped model's recipe (data/pretrained/bertc-docs:
# L4/H128, vocabulary 8000, batch 32 x 128, lr 1e-3, 6 % warmup):
# float32 seed 42, --bf16 seed 42, float32 seed 43, STEPS steps each
# (default 500), evaluated every STEPS/10. Prints the held-out loss of each
# at every evaluation, the bf16 run's distance to float32 of the same seed
# beside the distance between the two float32 seeds (run-to-run noise), and
# each run's wall time and tokens/s.
#
#   bench/mixed_precision_curve.sh [STEPS [THREADS]]     (BUILD=build by default)
#
# The corpus is tools/build_corpus.sh's (built into BUILD/corpus when
# missing, about 3 minutes); runs go to BUILD/mixed-precision/.
set -eu
STEPS=${1:-500}
THREADS=${2:-$(nproc)}
BUILD=${BUILD:-build}
cd "$(dirname "$0")/.."
make --no-print-directory -s BUILD="$BUILD" "$BUILD/bertc" >&2
CORPUS=$BUILD/corpus/corpus.txt
[ -f "$CORPUS" ] || sh tools/build_corpus.sh "$CORPUS" >&2
P=data/pretrained/bertc-docs
W=$BUILD/mixed-precision
mkdir -p "$W"
for run in "fp32 42" "bf16 42" "fp32 43"; do
    set -- $run
    flag=""
    [ "$1" = bf16 ] && flag=--bf16
    rm -rf "$W/$1-s$2"
    "$BUILD/bertc" pretrain --corpus "$CORPUS" --config "$P/config.json" --vocab "$P/vocab.txt" \
        --cache "$W/corpus.tokens" --out "$W/$1-s$2" --max-len 128 --batch-size 32 \
        --steps "$STEPS" --lr 1e-3 --warmup 0.06 --eval-every $((STEPS / 10)) --seed "$2" \
        --threads "$THREADS" $flag > "$W/$1-s$2.log" 2>&1
done
# eval NAME: "step loss" per evaluation
eval_losses() { sed 's/[{},:"]/ /g' "$W/$1/log.jsonl" | awk '{ for (i = 1; i < NF; i++) { if ($i == "step") s = $(i + 1); if ($i == "eval_loss") print s, $(i + 1) } }'; }
eval_losses fp32-s42 > "$W/a"; eval_losses bf16-s42 > "$W/b"; eval_losses fp32-s43 > "$W/c"
echo "bench/mixed_precision_curve.sh: $STEPS steps, $THREADS threads; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); bf16 path: $("$BUILD/bertc" version | sed -n 's/.*bf16 path: \([a-z0-9]*\).*/\1/p')"
echo "held-out loss (1000 rows) at each evaluation"
printf "%6s %12s %12s %12s %16s %16s\n" step fp32_s42 bf16_s42 fp32_s43 "|bf16-fp32|" "|s43-s42|"
paste -d' ' "$W/a" "$W/b" "$W/c" | awk '{ d = $4 - $2; if (d < 0) d = -d; n = $6 - $2; if (n < 0) n = -n
    printf "%6d %12.4f %12.4f %12.4f %16.4f %16.4f\n", $1, $2, $4, $6, d, n
    if (d > md) md = d; if (n > mn) mn = n }
    END { printf "max over the curve: |bf16 - fp32 s42| %.4f, |fp32 s43 - fp32 s42| %.4f\n", md, mn }'
for r in fp32-s42 bf16-s42 fp32-s43; do
    echo "$r: $(grep '^pretrained' "$W/$r.log")"
done
