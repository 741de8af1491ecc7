#!/bin/sh
# bench/compare.sh — bertc against PyTorch and ONNX Runtime on the same work,
# side by side, each reference at its best on this machine.
#
#   bench/compare.sh [PAIRS]          (default 5; BUILD=build by default)
#
# For each case the programs run alternately, bertc then the references,
# PAIRS times (A B C A B C ...), so all see the same machine noise; each run
# prints its own per-iteration median (bench/forward.c, bench/train.c,
# tools/bench_torch.py, bench/ort_forward.js) and this script prints the
# median of those medians, the speed ratios (reference time / bertc time: > 1
# means bertc is faster), each side's peak RSS and its CPU time over wall
# time (*_cpu: the cores it really used).
#
# References:
# - PyTorch: Debian's python3-torch run by /usr/bin/python3; its matmuls are
#   OpenBLAS's, given the core build/bench/gemm --openblas-coretype picks
#   (OpenBLAS 0.3.21 falls back to weak kernels on recent CPUs; an inherited
#   OPENBLAS_CORETYPE below the CPU is dropped). Debian's PyTorch has two
#   thread pools: its own (torch.set_num_threads) and OpenBLAS's, which
#   torch.set_num_threads does not limit. At N threads PyTorch gets N cores
#   and its fastest split of them: at 1 thread both pools are 1; at N > 1 one
#   probe run of each of (torch N, BLAS 1), (torch 1, BLAS N) and (torch N,
#   BLAS N) picks the setting the pairs then use (torch_set, torch x BLAS).
# - ONNX Runtime (npm onnxruntime-node, installed into ORT_DIR, default
#   $HOME/.cache/bertc-bench-ort, with ONNXRUNTIME_NODE_INSTALL=skip: its
#   postinstall only fetches GPU providers): the inference reference, on
#   tools/export_onnx.py's ONNX export of the very weights bertc loads
#   (--weights), intraOpNumThreads = N, at the faster of its 'all' and
#   'extended' optimisation levels (one probe run; ort_level). ort_diff is
#   max |ORT - bertc| over last_hidden_state on the same inputs.
# - The MLM step has two PyTorch variants: HF's (the LM head on every
#   position) and torchM, the LM head on the labelled positions only, as
#   bertc runs it: speedM compares the same work.
# - The int8 and bf16 table. int8_ms, bf16_ms: bertc's int8 and bf16
#   inference (bertc quantize's schemes, applied in memory by
#   build/bench/forward --int8 / --bf16, which time float32 and the copy in
#   turn in one process); speedQ, speedB are float32 / copy time in that
#   process, cosQ, cosB the cosine of last_hidden_state to float32.
# - ORT's int8 (ortQ): tools/quantize_onnx_int8.py turns the same ONNX export
#   into ORT's dynamic-quantisation graphs with bertc's per-channel int8
#   weights (variants tensor, channel, dqmm, qattention: DynamicQuantizeLinear
#   + MatMulInteger, which ORT fuses, its DynamicQuantizeMatMul, and
#   QAttention); one probe run per variant at both optimisation levels picks
#   the fastest (ortQ_var/level), which the pairs then time. ortQcos is its
#   last_hidden_state cosine to bertc's float32 forward on the same ids.
#   speedQO = ortQ_ms / int8_ms; speedBO = ort_ms (ORT float32) / bf16_ms.
#
# Cases (issues 7, 16 and 27): BERT-base forward 1x128 and 8x128 at 1 and 2
# threads; the MLM training step (AdamW, dropout on) of L2/H128, L4/H256 and
# L4/H512 at batch 8 x 128, at 1 and 2 threads. CASES=forward or CASES=train
# runs one of the two tables (default: both).
set -eu
PAIRS=${1:-5}
CASES=${CASES:-forward train}
BUILD=${BUILD:-build}
ORT_DIR=${ORT_DIR:-$HOME/.cache/bertc-bench-ort}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
sh bench/install_refs.sh
make --no-print-directory -s BUILD="$BUILD" "$BUILD/bench/forward" "$BUILD/bench/train" \
    "$BUILD/bench/gemm" >&2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
BASE=examples/configs/bert-base-uncased.json
MODEL_CFG=$TMP/bert-base-model.json
sed 's/"BertForMaskedLM"/"BertModel"/' "$BASE" > "$MODEL_CFG"

# field NAME LINE: the word after NAME in a bench output line
field() { echo "$2" | awk -v k="$1" '{ for (i = 1; i < NF; i++) if ($i == k) print $(i + 1) }'; }
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# record FILE LINE: "median_ms peak_rss_mib cores_used" of one run
record() { echo "$(field median_ms "$2") $(field peak_rss_mib "$2") $(field cores_used "$2")" >> "$1"; }
# col FILE N: the median of column N over the runs
col() { cut -d' ' -f"$2" "$1" | median; }

# OpenBLAS's best core here, for PyTorch's OpenBLAS ("-": its own pick).
set -- $("$BUILD/bench/gemm" --openblas-coretype)
if [ "$1" = "-" ]; then unset OPENBLAS_CORETYPE; else export OPENBLAS_CORETYPE="$1"; fi
shift
CORE_WHY="$*"
torch() { /usr/bin/python3 tools/bench_torch.py "$@"; }

# ONNX Runtime: the npm package in a scratch directory, and the exported model.
ORT=""
if command -v node >/dev/null && command -v npm >/dev/null; then
    if [ ! -d "$ORT_DIR/node_modules/onnxruntime-node" ]; then
        mkdir -p "$ORT_DIR"
        echo "compare.sh: installing onnxruntime-node into $ORT_DIR" >&2
        (cd "$ORT_DIR" && ONNXRUNTIME_NODE_INSTALL=skip npm install --no-audit --no-fund \
            onnxruntime-node >&2) || echo "compare.sh: npm install onnxruntime-node failed" >&2
    fi
    if [ -d "$ORT_DIR/node_modules/onnxruntime-node" ] &&
        /usr/bin/python3 tools/export_onnx.py --config "$MODEL_CFG" --out "$TMP/onnx" >&2; then
        ORT=yes
    fi
fi
[ -n "$ORT" ] || echo "compare.sh: no ONNX Runtime (needs node, npm and python3-torch's onnx export)" >&2
# ort_model MODEL ARGS: bench/ort_forward.js on MODEL; ort ARGS: on the float32 export.
ort_model() { m=$1; shift; NODE_PATH="$ORT_DIR/node_modules" node bench/ort_forward.js --model "$m" "$@"; }
ort() { ort_model "$TMP/onnx/model.onnx" "$@"; }
WEIGHTS=""
[ -n "$ORT" ] && WEIGHTS="--weights $TMP/onnx/model.safetensors"
# ORT's int8 graphs of the same weights (int8-VARIANT.onnx).
QVARIANTS=""
if [ -n "$ORT" ]; then
    QVARIANTS=$(/usr/bin/python3 tools/quantize_onnx_int8.py --model "$TMP/onnx/model.onnx" \
        --out "$TMP/onnx" | awk '$1 == "variant" { print $2 }' | tr '\n' ' ') ||
        echo "compare.sh: tools/quantize_onnx_int8.py failed; no ORT int8 column" >&2
fi

# best_ort_int8 SHAPE THREADS: "VARIANT LEVEL", ORT's fastest int8 graph and
# optimisation level (one probe run of each variant at both levels).
best_ort_int8() {
    best="- -" best_ms=""
    for v in $QVARIANTS; do
        out=$(ort_model "$TMP/onnx/int8-$v.onnx" $1 --threads "$2" --level probe || true)
        ms=$(field median_ms "$out") lv=$(field best_level "$out")
        if [ -n "$ms" ] && { [ -z "$best_ms" ] || awk -v a="$ms" -v b="$best_ms" 'BEGIN { exit !(a < b) }'; }; then
            best="$v $lv" best_ms=$ms
        fi
    done
    echo "$best"
}

# best_torch_setting THREADS PY_ARGS: "TORCH BLAS", PyTorch's fastest split of
# THREADS cores between its two thread pools (one probe run each).
best_torch_setting() {
    t=$1 args=$2 best="1 1" best_ms=""
    if [ "$t" -gt 1 ]; then
        for s in "$t 1" "1 $t" "$t $t"; do
            set -- $s
            out=$(torch $args --threads "$1" --blas-threads "$2" || true)
            ms=$(field median_ms "$out")
            if [ -n "$ms" ] && { [ -z "$best_ms" ] || awk -v a="$ms" -v b="$best_ms" 'BEGIN { exit !(a < b) }'; }; then
                best="$s" best_ms=$ms
            fi
        done
    fi
    echo "$best"
}

# forward_case B S THREADS ITERS: one row of the forward table.
forward_case() {
    B=$1 S=$2 t=$3 iters=$4
    shape="--batch $B --seq $S --iters $iters"
    set -- $(best_torch_setting "$t" "forward --config $MODEL_CFG $shape")
    tt=$1 bt=$2 level=- diff=- qvar=- qlevel=- qcos=-
    [ -n "$ORT" ] && level=$(field best_level "$(ort $shape --threads "$t" --level probe)")
    [ -n "$QVARIANTS" ] && set -- $(best_ort_int8 "$shape" "$t") && qvar=$1 qlevel=$2
    : > "$TMP/c"; : > "$TMP/p"; : > "$TMP/o"; : > "$TMP/q"; : > "$TMP/b"; : > "$TMP/oq"
    i=0
    while [ $i -lt "$PAIRS" ]; do
        dump=""
        [ $i = 0 ] && [ -n "$ORT" ] && dump="--dump $TMP/d"
        c=$(BERTC_THREADS=$t "$BUILD/bench/forward" --config "$MODEL_CFG" $WEIGHTS $shape --threads "$t" $dump)
        p=$(torch forward --config "$MODEL_CFG" $shape --threads "$tt" --blas-threads "$bt")
        record "$TMP/c" "$c"; record "$TMP/p" "$p"
        # int8 (bertc quantize's scheme, in memory): float32 and int8 timed in
        # turn in one process, so speedQ compares the two in the same run.
        q=$(BERTC_THREADS=$t "$BUILD/bench/forward" --config "$MODEL_CFG" $WEIGHTS $shape --threads "$t" \
            --int8 | grep '^forward-int8')
        echo "$(field median_ms "$q") $(field speedup "$q") $(field cosine "$q") $(field peak_rss_mib "$q")" >> "$TMP/q"
        b=$(BERTC_THREADS=$t "$BUILD/bench/forward" --config "$MODEL_CFG" $WEIGHTS $shape --threads "$t" \
            --bf16 | grep '^forward-bf16')
        echo "$(field median_ms "$b") $(field speedup "$b") $(field cosine "$b") $(field peak_rss_mib "$b")" >> "$TMP/b"
        if [ "$qvar" != - ]; then
            check=""
            [ $i = 0 ] && check="--check $TMP/d"
            oq=$(ort_model "$TMP/onnx/int8-$qvar.onnx" $shape --threads "$t" --level "$qlevel" $check)
            [ $i = 0 ] && qcos=$(field cosine_vs_bertc "$oq")
            record "$TMP/oq" "$oq"
        else
            echo "0 0 0" >> "$TMP/oq"
        fi
        if [ -n "$ORT" ]; then
            check=""
            [ $i = 0 ] && check="--check $TMP/d"
            o=$(ort $shape --threads "$t" --level "$level" $check)
            [ $i = 0 ] && diff=$(field max_abs_diff_vs_bertc "$o")
            record "$TMP/o" "$o"
        else
            echo "0 0 0" >> "$TMP/o"
        fi
        i=$((i + 1))
    done
    awk -v l="forward bert-base ${B}x$S" -v t="$t" -v cm="$(col "$TMP/c" 1)" -v pm="$(col "$TMP/p" 1)" \
        -v om="$(col "$TMP/o" 1)" -v cr="$(col "$TMP/c" 2)" -v pr="$(col "$TMP/p" 2)" \
        -v orss="$(col "$TMP/o" 2)" -v cc="$(col "$TMP/c" 3)" -v pc="$(col "$TMP/p" 3)" \
        -v oc="$(col "$TMP/o" 3)" -v ts="${tt}x$bt" -v lv="$level" -v d="$diff" 'BEGIN {
        printf "%-24s %2d %8.1f %8.1f %8.1f %6.2fx %6.2fx %8.0f %8.0f %7.0f %5.2f %5.2f %5.2f %9s %9s %8s\n",
               l, t, cm, pm, om, pm / cm, (om > 0 ? om / cm : 0), cr, pr, orss, cc, pc, oc, ts, lv, d }'
    # The int8 / bf16 row, printed after the float32 table.
    awk -v l="forward bert-base ${B}x$S" -v t="$t" -v cm="$(col "$TMP/c" 1)" -v om="$(col "$TMP/o" 1)" \
        -v qm="$(col "$TMP/q" 1)" -v qs="$(col "$TMP/q" 2)" -v qc="$(col "$TMP/q" 3)" \
        -v qr="$(col "$TMP/q" 4)" -v oqm="$(col "$TMP/oq" 1)" -v oqr="$(col "$TMP/oq" 2)" \
        -v qv="$qvar/$qlevel" -v oqc="$qcos" -v bm="$(col "$TMP/b" 1)" -v bs="$(col "$TMP/b" 2)" \
        -v bc="$(col "$TMP/b" 3)" -v br="$(col "$TMP/b" 4)" 'BEGIN {
        printf "%-24s %2d %8.1f %8.1f %8.1f %8.1f %6.2fx %6.2fx %18s %8.6f %8s %8.1f %6.2fx %6.2fx %8.6f %8.0f %8.0f %8.0f\n",
               l, t, cm, om, qm, oqm, qs, (oqm > 0 ? oqm / qm : 0), qv, qc, oqc, bm, bs,
               (om > 0 ? om / bm : 0), bc, qr, oqr, br }' >> "$TMP/rows_q"
}

# train_case L H THREADS: one row of the training table.
train_case() {
    L=$1 H=$2 t=$3
    args="--config $BASE --layers $L --hidden $H --batch 8 --seq 128 --steps 5"
    set -- $(best_torch_setting "$t" "train $args")
    tt=$1 bt=$2
    # PyTorch's bf16 matmuls run in oneDNN on its own pool, not OpenBLAS's:
    # its best split is probed apart
    set -- $(best_torch_setting "$t" "train $args --lm-head masked --autocast bf16")
    tbt=$1 bbt=$2
    : > "$TMP/c"; : > "$TMP/p"; : > "$TMP/m"; : > "$TMP/cb"; : > "$TMP/mb"
    i=0
    while [ $i -lt "$PAIRS" ]; do
        c=$(BERTC_THREADS=$t "$BUILD/bench/train" $args --threads "$t")
        p=$(torch train $args --threads "$tt" --blas-threads "$bt")
        m=$(torch train $args --threads "$tt" --blas-threads "$bt" --lm-head masked)
        cb=$(BERTC_THREADS=$t "$BUILD/bench/train" $args --threads "$t" --bf16)
        mb=$(torch train $args --threads "$tbt" --blas-threads "$bbt" --lm-head masked --autocast bf16)
        record "$TMP/c" "$c"; record "$TMP/p" "$p"; record "$TMP/m" "$m"
        record "$TMP/cb" "$cb"; record "$TMP/mb" "$mb"
        i=$((i + 1))
    done
    # The mixed-precision row, printed after the float32 table.
    awk -v l="train MLM L$L/H$H 8x128" -v t="$t" -v cm="$(col "$TMP/c" 1)" -v mm="$(col "$TMP/m" 1)" \
        -v bm="$(col "$TMP/cb" 1)" -v mbm="$(col "$TMP/mb" 1)" -v br="$(col "$TMP/cb" 2)" \
        -v mbr="$(col "$TMP/mb" 2)" -v bc="$(col "$TMP/cb" 3)" -v mbc="$(col "$TMP/mb" 3)" \
        -v ts="${tbt}x$bbt" 'BEGIN {
        printf "%-24s %2d %8.1f %9.1f %8.1f %10.1f %6.2fx %6.2fx %6.2fx %8.0f %10.0f %5.2f %5.2f %9s\n",
               l, t, cm, mm, bm, mbm, cm / bm, mm / cm, mbm / bm, br, mbr, bc, mbc, ts }' >> "$TMP/rows_b"
    awk -v l="train MLM L$L/H$H 8x128" -v t="$t" -v cm="$(col "$TMP/c" 1)" -v pm="$(col "$TMP/p" 1)" \
        -v mm="$(col "$TMP/m" 1)" -v cr="$(col "$TMP/c" 2)" -v pr="$(col "$TMP/p" 2)" \
        -v mr="$(col "$TMP/m" 2)" -v cc="$(col "$TMP/c" 3)" -v pc="$(col "$TMP/p" 3)" \
        -v mc="$(col "$TMP/m" 3)" -v ts="${tt}x$bt" 'BEGIN {
        printf "%-24s %2d %8.1f %8.1f %9.1f %6.2fx %6.2fx %8.0f %8.0f %9.0f %5.2f %5.2f %5.2f %9s\n",
               l, t, cm, pm, mm, pm / cm, mm / cm, cr, pr, mr, cc, pc, mc, ts }'
}

echo "bench/compare.sh: $PAIRS alternating runs per side and case; times are medians of per-run medians (ms)"
echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "bertc: isa $(field isa "$(BERTC_THREADS=1 "$BUILD/bench/train" --config "$BASE" --layers 1 --hidden 64 --batch 1 --seq 8 --steps 1)") (BERTC_ISA=${BERTC_ISA:-unset}), threads as the column thr"
TORCH_INFO=$(torch info --threads 1)
echo "torch: $(echo "$TORCH_INFO" | sed -n 1p); OpenBLAS: $CORE_WHY; threads as torch_set"
echo "$TORCH_INFO" | sed -n '2,$p' | grep -E '^(ATen parallel backend|MKL|OpenMP|Intel)' | sed 's/^/       /'
if [ -n "$ORT" ]; then
    echo "ORT: onnxruntime-node $(cd "$ORT_DIR" && node -p "require('onnxruntime-node/package.json').version") (CPU EP, MLAS), intraOpNumThreads = thr, level as ort_level"
fi
echo "bertc bf16: path $(field bf16_isa "$(BERTC_THREADS=1 "$BUILD/bench/forward" --config "$MODEL_CFG" --layers 1 --hidden 768 --batch 1 --seq 8 --iters 1 --bf16 | grep '^forward-bf16')"), int8: path $(field int8_isa "$(BERTC_THREADS=1 "$BUILD/bench/forward" --config "$MODEL_CFG" --layers 1 --hidden 768 --batch 1 --seq 8 --iters 1 --int8 | grep '^forward-int8')")"
case " $CASES " in *" forward "*)
echo
printf "%-24s %2s %8s %8s %8s %7s %7s %8s %8s %7s %5s %5s %5s %9s %9s %8s\n" case thr bertc_ms \
    torch_ms ort_ms speedT speedO bertcMiB torchMiB ortMiB c_cpu t_cpu o_cpu torch_set ort_level ort_diff
: > "$TMP/rows_q"
for BS in "1 128 5" "8 128 3"; do
    set -- $BS
    for t in 1 2; do
        forward_case "$1" "$2" "$t" "$3"
        set -- $BS
    done
done
echo
echo "int8 and bf16 (bertc: build/bench/forward --int8 / --bf16, float32 and the copy timed in turn in one process; ORT int8: its fastest variant/level)"
printf "%-24s %2s %8s %8s %8s %8s %7s %7s %18s %8s %8s %8s %7s %7s %8s %8s %8s %8s\n" case thr fp32_ms \
    ort_ms int8_ms ortQ_ms speedQ speedQO ortQ_var/level cosQ ortQcos bf16_ms speedB speedBO cosB \
    int8MiB ortQMiB bf16MiB
cat "$TMP/rows_q"
;; esac
case " $CASES " in *" train "*)
echo
printf "%-24s %2s %8s %8s %9s %7s %7s %8s %8s %9s %5s %5s %5s %9s\n" case thr bertc_ms \
    torch_ms torchM_ms speedT speedM bertcMiB torchMiB torchMMiB c_cpu t_cpu m_cpu torch_set
: > "$TMP/rows_b"
for size in "2 128" "4 256" "4 512"; do
    set -- $size
    for t in 1 2; do
        train_case "$1" "$2" "$t"
        set -- $size
    done
done
echo
echo "mixed precision (bertc: bench/train --bf16, path $(field precision "$(BERTC_THREADS=1 "$BUILD/bench/train" --config "$BASE" --layers 1 --hidden 64 --batch 1 --seq 8 --steps 1 --bf16)"); PyTorch: torch.autocast(\"cpu\", bfloat16), masked head)"
echo "speedBF = bertc fp32 / bertc bf16; speedM = torchM fp32 / bertc fp32; speedMB = torchM bf16 / bertc bf16"
printf "%-24s %2s %8s %9s %8s %10s %7s %7s %7s %8s %10s %5s %5s %10s\n" case thr bertc_ms torchM_ms \
    bf16_ms torchMB_ms speedBF speedM speedMB bf16MiB torchMBMiB c_cpu m_cpu torchB_set
cat "$TMP/rows_b"
;; esac
