#!/bin/sh
# bench/finetune_compare.sh — `bertc finetune` and `bertc predict` against a
# PyTorch loop doing the same work (tools/bench_finetune.py), same cores,
# same run, alternating.
#
#   bench/finetune_compare.sh [PAIRS]     (default 3; BUILD=build by default)
#
# The work is docs/finetune.md's worked example: data/topics.tsv (1,144
# texts, four labels) with a header row, its 2-layer H=64 config,
# --max-len 64 --batch-size 32 --lr 1e-3.
#
# fine-tune: `bertc finetune ... --steps STEPS --eval-every STEPS --quiet`
#   (STEPS default 100) against tools/bench_finetune.py train: the same
#   BertForSequenceClassification from the same config, dropout on, CE,
#   clipping at 1.0, AdamW (lr 1e-3, weight decay 0.01, 10 % warmup, linear
#   decay), the same steps of 32 rows, each batch padded to its longest. The
#   PyTorch side reads the texts bertc encode tokenized once (timed on its
#   own, printed above the table), so tokenization is not in its figures.
#   Rows are drawn in each side's own shuffled order (bertc from its 1,030
#   training rows, PyTorch from all 1,144), so the batches are alike, not the
#   same: tokens/s (real, unpadded tokens per second of the training loop,
#   bertc's own "trained ... (N tokens/s)" and PyTorch's loop) is the
#   comparable speed. bertc's process wall (c_wall) also holds reading and
#   tokenizing the file, one evaluation of the 114 held-out rows and writing
#   the model directory; PyTorch's (t_wall) holds importing torch and reading
#   the inputs.
# predict: the worked example trained in full (--epochs 15 --threads 2, not
#   timed) classifies the 1,144 texts REPEAT times over (default 4) with
#   `bertc predict --model DIR --input FILE` (batches of 8, the default)
#   against tools/bench_finetune.py predict: the same model loaded with
#   load_state_dict(strict=True), the same rows bertc encode made, batches of
#   8 in file order, forward + softmax + argmax. texts/s is over bertc's whole
#   process (loading, tokenizing, printing included) and over PyTorch's loop
#   only; agree counts the texts both give the same label.
#
# Both: wall, CPU time over wall (*_cpu) and peak RSS of each whole process
# from /usr/bin/time; medians over PAIRS alternating runs (bertc, PyTorch,
# bertc, ...). PyTorch is Debian's python3-torch run by /usr/bin/python3 with
# OpenBLAS at the core build/bench/gemm --openblas-coretype picks, and at
# N > 1 threads the fastest split of N between its two pools (torch x BLAS,
# one probe run each of N x 1, 1 x N, N x N), as bench/compare.sh.
set -eu
PAIRS=${1:-3}
BUILD=${BUILD:-build}
STEPS=${STEPS:-100}
REPEAT=${REPEAT:-4}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
make --no-print-directory -s BUILD="$BUILD" "$BUILD/bertc" "$BUILD/bench/gemm" >&2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
VOCAB=data/bert-base-uncased-vocab.txt

# The worked example's data and config (docs/finetune.md).
(printf 'label\ttext\n'; cat data/topics.tsv) > "$TMP/topics.tsv"
cut -f1 data/topics.tsv > "$TMP/labels.txt"
cut -f2 data/topics.tsv > "$TMP/texts.txt"
sed -n '/^{/,/^}/p' docs/finetune.md | sed -n '1,/^}/p' > "$TMP/cfg.json"
i=0
: > "$TMP/many.txt"
while [ $i -lt "$REPEAT" ]; do cat "$TMP/texts.txt" >> "$TMP/many.txt"; i=$((i + 1)); done
NTEXTS=$(wc -l < "$TMP/many.txt")

field() { echo "$2" | awk -v k="$1" '{ for (i = 1; i < NF; i++) if ($i == k) print $(i + 1) }'; }
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
col() { cut -d' ' -f"$2" "$1" | median; }
# timed OUT CMD...: runs CMD, stdout to OUT; prints "wall cpu_over_wall rss_mib"
timed() {
    out=$1
    shift
    /usr/bin/time -f '%e %U %S %M' -o "$TMP/time" "$@" > "$out" 2> "$TMP/stderr" || {
        grep -v 'truncated to' "$TMP/stderr" >&2
        echo "finetune_compare.sh: failed: $*" >&2
        exit 1
    }
    awk '{ w = ($1 > 0) ? $1 : 0.005; printf "%.2f %.2f %.0f\n", $1, ($2 + $3) / w, $4 / 1024 }' \
        "$TMP/time"
}

set -- $("$BUILD/bench/gemm" --openblas-coretype)
if [ "$1" = "-" ]; then unset OPENBLAS_CORETYPE; else export OPENBLAS_CORETYPE="$1"; fi
shift
CORE_WHY="$*"
torch() { /usr/bin/python3 tools/bench_finetune.py "$@"; }

# Tokenizing once for the PyTorch side, timed on its own.
ENC=$(timed "$TMP/enc.out" "$BUILD/bertc" encode --config "$TMP/cfg.json" --vocab "$VOCAB" \
    --max-len 64 --input "$TMP/texts.txt" --output "$TMP/train_in.safetensors")
set -- $ENC
ENC_WALL=$1 ENC_RSS=$3
TRAIN="--config $TMP/cfg.json --inputs $TMP/train_in.safetensors --labels $TMP/labels.txt \
--batch-size 32 --lr 1e-3"

# The predict model: the worked example in full, and its encoding of the texts.
"$BUILD/bertc" finetune --config "$TMP/cfg.json" --vocab "$VOCAB" --train "$TMP/topics.tsv" \
    --out "$TMP/model" --max-len 64 --batch-size 32 --lr 1e-3 --epochs 15 --threads 2 --quiet \
    2>/dev/null > "$TMP/model.out"
"$BUILD/bertc" encode --model "$TMP/model" --input "$TMP/many.txt" \
    --output "$TMP/pred_in.safetensors" 2>/dev/null >/dev/null

# best_split THREADS ARGS: "TORCH BLAS", the fastest split (by the loop time
# loop_s) of THREADS cores between PyTorch's two pools (one probe run each).
best_split() {
    t=$1 args=$2 best="1 1" best_s=""
    if [ "$t" -gt 1 ]; then
        for s in "$t 1" "1 $t" "$t $t"; do
            set -- $s
            sec=$(field loop_s "$(torch $args --threads "$1" --blas-threads "$2" 2>/dev/null || true)")
            if [ -n "$sec" ] && { [ -z "$best_s" ] || awk -v a="$sec" -v b="$best_s" 'BEGIN { exit !(a < b) }'; }; then
                best="$s" best_s=$sec
            fi
        done
    fi
    echo "$best"
}

# finetune_case THREADS: one row of the fine-tuning table.
finetune_case() {
    t=$1
    set -- $(best_split "$t" "train $TRAIN --steps 20")
    tt=$1 bt=$2
    : > "$TMP/c"; : > "$TMP/p"
    i=0
    while [ $i -lt "$PAIRS" ]; do
        rm -rf "$TMP/ft"
        c=$(timed "$TMP/c.out" "$BUILD/bertc" finetune --config "$TMP/cfg.json" --vocab "$VOCAB" \
            --train "$TMP/topics.tsv" --out "$TMP/ft" --max-len 64 --batch-size 32 --lr 1e-3 \
            --steps "$STEPS" --eval-every "$STEPS" --threads "$t" --quiet)
        tok=$(sed -n 's/.*(\([0-9.]*\) tokens\/s).*/\1/p' "$TMP/c.out")
        echo "$tok $c" >> "$TMP/c"
        p=$(timed "$TMP/p.out" /usr/bin/python3 tools/bench_finetune.py train $TRAIN --steps "$STEPS" --threads "$tt" --blas-threads "$bt")
        o=$(cat "$TMP/p.out")
        echo "$(field tokens_per_s "$o") $p $(field loop_s "$o") $(field ms_per_step "$o")" >> "$TMP/p"
        i=$((i + 1))
    done
    awk -v t="$t" -v ct="$(col "$TMP/c" 1)" -v pt="$(col "$TMP/p" 1)" -v cw="$(col "$TMP/c" 2)" \
        -v pw="$(col "$TMP/p" 2)" -v pl="$(col "$TMP/p" 5)" -v pm="$(col "$TMP/p" 6)" \
        -v cc="$(col "$TMP/c" 3)" -v pc="$(col "$TMP/p" 3)" -v cr="$(col "$TMP/c" 4)" \
        -v pr="$(col "$TMP/p" 4)" -v ts="${tt}x$bt" -v s="$STEPS" 'BEGIN {
        printf "%-16s %3d %9.0f %9.0f %6.2fx %7.2f %7.2f %7.2f %8.1f %5.2f %5.2f %8.0f %8.0f %9s\n",
               "finetune " s " st", t, ct, pt, ct / pt, cw, pl, pw, pm, cc, pc, cr, pr, ts }'
}

# predict_case THREADS: one row of the predict table.
predict_case() {
    t=$1
    set -- $(best_split "$t" "predict --model $TMP/model --inputs $TMP/pred_in.safetensors --batch-size 8")
    tt=$1 bt=$2
    : > "$TMP/c"; : > "$TMP/p"
    i=0 agree=-
    while [ $i -lt "$PAIRS" ]; do
        c=$(timed "$TMP/c.out" "$BUILD/bertc" predict --model "$TMP/model" --input "$TMP/many.txt" \
            --batch-size 8 --threads "$t")
        echo "$c" >> "$TMP/c"
        p=$(timed "$TMP/p.out" /usr/bin/python3 tools/bench_finetune.py predict --model "$TMP/model" --inputs "$TMP/pred_in.safetensors" \
            --batch-size 8 --out "$TMP/labels.out" --threads "$tt" --blas-threads "$bt")
        echo "$p $(field loop_s "$(cat "$TMP/p.out")")" >> "$TMP/p"
        if [ $i = 0 ]; then
            agree=$(cut -f1 "$TMP/c.out" | paste -d' ' - "$TMP/labels.out" | awk '$1 == $2' | wc -l)
            cut -f1 "$TMP/c.out" | sort | uniq -c | awk '{ printf "%s%s %s", (NR > 1 ? ", " : ""), $2, $1 }' \
                > "$TMP/dist"
        fi
        i=$((i + 1))
    done
    awk -v t="$t" -v n="$NTEXTS" -v cw="$(col "$TMP/c" 1)" -v pw="$(col "$TMP/p" 1)" \
        -v pl="$(col "$TMP/p" 4)" -v cc="$(col "$TMP/c" 2)" -v pc="$(col "$TMP/p" 2)" \
        -v cr="$(col "$TMP/c" 3)" -v pr="$(col "$TMP/p" 3)" -v ts="${tt}x$bt" -v ag="$agree" 'BEGIN {
        printf "%-16s %3d %9.0f %9.0f %6.2fx %7.2f %7.2f %7.2f %5.2f %5.2f %8.0f %8.0f %9s %11s\n",
               "predict " n, t, n / cw, n / pl, (n / cw) / (n / pl), cw, pl, pw, cc, pc, cr, pr, ts,
               ag "/" n }'
}

echo "bench/finetune_compare.sh: $PAIRS alternating runs per side and case; medians over the runs"
echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "torch: $(/usr/bin/python3 -c 'import torch; print(torch.__version__)' 2>/dev/null); OpenBLAS: $CORE_WHY; threads as torch_set (torch x BLAS)"
echo "tokenizing the 1,144 texts once for PyTorch (bertc encode --max-len 64): ${ENC_WALL} s, ${ENC_RSS} MiB"
echo "predict model: $(sed -n 1,2p "$TMP/model.out" | tr '\n' ' ')"
echo
echo "fine-tuning: tok/s = real tokens per second of the training loop; c_wall, t_wall = whole process (s); t_loop = PyTorch's loop (s)"
printf "%-16s %3s %9s %9s %7s %7s %7s %7s %8s %5s %5s %8s %8s %9s\n" case thr c_tok/s t_tok/s \
    speed c_wall t_loop t_wall t_ms/st c_cpu t_cpu bertcMiB torchMiB torch_set
for t in 1 2; do finetune_case "$t"; done
echo
echo "predict: c_txt/s over bertc's whole process (load, tokenize, print), t_txt/s over PyTorch's loop only"
printf "%-16s %3s %9s %9s %7s %7s %7s %7s %5s %5s %8s %8s %9s %11s\n" case thr c_txt/s t_txt/s \
    speed c_wall t_loop t_wall c_cpu t_cpu bertcMiB torchMiB torch_set agree
for t in 1 2; do predict_case "$t"; done
echo "labels bertc predict gave (first run at 2 threads): $(cat "$TMP/dist")"
