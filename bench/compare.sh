#!/bin/sh
# bench/compare.sh — bertc against PyTorch on the same work, side by side.
#
#   bench/compare.sh [PAIRS]          (default 5; BUILD=build by default)
#
# For each case the two programs run alternately, bertc then PyTorch, PAIRS
# times (A B A B ...), so both see the same machine noise; each run prints
# its own per-iteration median (bench/forward.c, bench/train.c,
# tools/bench_torch.py) and this script prints the median of those medians,
# the speed ratio (PyTorch time / bertc time: > 1 means bertc is faster) and
# the peak RSS of each side. PyTorch is Debian's python3-torch run by
# /usr/bin/python3 with torch.set_num_threads at the same thread count.
#
# Cases (issue 7): BERT-base forward 1x128 and 8x128 at 1 and 2 threads; the
# MLM training step (AdamW, dropout on) of L2/H128, L4/H256 and L4/H512 at
# batch 8 x 128, at 1 and 2 threads.
set -eu
PAIRS=${1:-5}
BUILD=${BUILD:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
make --no-print-directory -s BUILD="$BUILD" "$BUILD/bench/forward" "$BUILD/bench/train" >&2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
BASE=examples/configs/bert-base-uncased.json
sed 's/"BertForMaskedLM"/"BertModel"/' "$BASE" > "$TMP/bert-base-model.json"

# field NAME LINE: the number after NAME in a bench output line
field() { echo "$2" | awk -v k="$1" '{ for (i = 1; i < NF; i++) if ($i == k) print $(i + 1) }'; }
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# run LABEL THREADS C_CMD... -- PY_ARGS...
run() {
    label=$1 threads=$2
    shift 2
    ccmd="" pyargs=""
    while [ "$1" != "--" ]; do ccmd="$ccmd $1"; shift; done
    shift
    pyargs="$*"
    : > "$TMP/c" ; : > "$TMP/p"
    i=0
    while [ $i -lt "$PAIRS" ]; do
        c=$(BERTC_THREADS=$threads $ccmd --threads "$threads")
        p=$(/usr/bin/python3 tools/bench_torch.py $pyargs --threads "$threads")
        echo "$(field median_ms "$c") $(field peak_rss_mib "$c")" >> "$TMP/c"
        echo "$(field median_ms "$p") $(field peak_rss_mib "$p")" >> "$TMP/p"
        i=$((i + 1))
    done
    cm=$(cut -d' ' -f1 "$TMP/c" | median); pm=$(cut -d' ' -f1 "$TMP/p" | median)
    cr=$(cut -d' ' -f2 "$TMP/c" | median); pr=$(cut -d' ' -f2 "$TMP/p" | median)
    awk -v l="$label" -v t="$threads" -v cm="$cm" -v pm="$pm" -v cr="$cr" -v pr="$pr" 'BEGIN {
        printf "%-28s %2d %10.1f %10.1f %7.2fx %9.0f %9.0f %6.2f\n", l, t, cm, pm, pm / cm, cr, pr, cr / pr }'
}

echo "bench/compare.sh: $PAIRS alternating pairs per case; times are medians of per-run medians"
echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf "%-28s %2s %10s %10s %8s %9s %9s %6s\n" case thr bertc_ms torch_ms speedup bertc_MiB torch_MiB rss
for t in 1 2; do
    run "forward bert-base 1x128" $t "$BUILD/bench/forward" --config "$TMP/bert-base-model.json" \
        --batch 1 --seq 128 --iters 5 -- forward --config "$TMP/bert-base-model.json" \
        --batch 1 --seq 128 --iters 5
done
for t in 1 2; do
    run "forward bert-base 8x128" $t "$BUILD/bench/forward" --config "$TMP/bert-base-model.json" \
        --batch 8 --seq 128 --iters 3 -- forward --config "$TMP/bert-base-model.json" \
        --batch 8 --seq 128 --iters 3
done
for size in "2 128" "4 256" "4 512"; do
    set -- $size
    for t in 1 2; do
        run "train MLM L$1/H$2 8x128" $t "$BUILD/bench/train" --config "$BASE" --layers "$1" \
            --hidden "$2" --batch 8 --seq 128 --steps 5 -- train --config "$BASE" \
            --layers "$1" --hidden "$2" --batch 8 --seq 128 --steps 5
        set -- $size
    done
done
