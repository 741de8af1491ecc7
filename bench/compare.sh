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
# /usr/bin/python3.
#
# Same thread count means the same number of cores. Debian's PyTorch has two
# thread pools: its own (torch.set_num_threads) and OpenBLAS's, which does
# its matmuls and which torch.set_num_threads does not limit. At N threads
# PyTorch gets N cores and its fastest split of them: at 1 thread both pools
# are 1; at N > 1 one probe run of each of (torch N, BLAS 1), (torch 1,
# BLAS N) and (torch N, BLAS N) picks the setting the pairs then use (the
# torch_set column, torch x BLAS). c_cpu and t_cpu are each side's CPU time
# over wall time: what it really used.
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

# best_torch_setting THREADS PY_ARGS: "TORCH BLAS", PyTorch's fastest split of
# THREADS cores between its two thread pools (one probe run each).
best_torch_setting() {
    t=$1 args=$2 best="1 1" best_ms=""
    if [ "$t" -gt 1 ]; then
        for s in "$t 1" "1 $t" "$t $t"; do
            set -- $s
            out=$(/usr/bin/python3 tools/bench_torch.py $args --threads "$1" --blas-threads "$2" || true)
            ms=$(field median_ms "$out")
            if [ -n "$ms" ] && { [ -z "$best_ms" ] || awk -v a="$ms" -v b="$best_ms" 'BEGIN { exit !(a < b) }'; }; then
                best="$s" best_ms=$ms
            fi
        done
    fi
    echo "$best"
}

# run LABEL THREADS C_CMD... -- PY_ARGS...
run() {
    label=$1 threads=$2
    shift 2
    ccmd="" pyargs=""
    while [ "$1" != "--" ]; do ccmd="$ccmd $1"; shift; done
    shift
    pyargs="$*"
    set -- $(best_torch_setting "$threads" "$pyargs")
    tt=$1 bt=$2
    : > "$TMP/c" ; : > "$TMP/p"
    i=0
    while [ $i -lt "$PAIRS" ]; do
        c=$(BERTC_THREADS=$threads $ccmd --threads "$threads")
        p=$(/usr/bin/python3 tools/bench_torch.py $pyargs --threads "$tt" --blas-threads "$bt")
        echo "$(field median_ms "$c") $(field peak_rss_mib "$c") $(field cores_used "$c")" >> "$TMP/c"
        echo "$(field median_ms "$p") $(field peak_rss_mib "$p") $(field cores_used "$p")" >> "$TMP/p"
        i=$((i + 1))
    done
    cm=$(cut -d' ' -f1 "$TMP/c" | median); pm=$(cut -d' ' -f1 "$TMP/p" | median)
    cr=$(cut -d' ' -f2 "$TMP/c" | median); pr=$(cut -d' ' -f2 "$TMP/p" | median)
    cc=$(cut -d' ' -f3 "$TMP/c" | median); pc=$(cut -d' ' -f3 "$TMP/p" | median)
    awk -v l="$label" -v t="$threads" -v cm="$cm" -v pm="$pm" -v cr="$cr" -v pr="$pr" \
        -v cc="$cc" -v pc="$pc" -v ts="${tt}x$bt" 'BEGIN {
        printf "%-24s %2d %9.1f %9.1f %7.2fx %9.0f %9.0f %5.2f %5.2f %5.2f %9s\n",
               l, t, cm, pm, pm / cm, cr, pr, cr / pr, cc, pc, ts }'
}

echo "bench/compare.sh: $PAIRS alternating pairs per case; times are medians of per-run medians"
echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf "%-24s %2s %9s %9s %8s %9s %9s %5s %5s %5s %9s\n" case thr bertc_ms torch_ms speedup \
    bertc_MiB torch_MiB rss c_cpu t_cpu torch_set
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
