#!/bin/sh
# bench/pretrain_compare.sh — `bertc pretrain` against PyTorch doing the same
# step (tools/bench_pretrain_torch.py), same cores, same run, alternating.
#
#   bench/pretrain_compare.sh [PAIRS]       (default 3)
#
# Environment (defaults in brackets):
#   BUILD [build]   CORPUS [build/corpus/corpus.txt, else a generated text]
#   VOCAB [WORK/vocab8k.txt, made by bertc vocab --size 8000 on CORPUS]
#   WORK [BUILD/pretrain_bench: the vocabulary, the token cache, the configs,
#   kept between runs]   STEPS [50: bertc's steps a run]   THREADS ["1 2"]
#   TORCH_WARMUP [5], TORCH_WINDOWS [5], TORCH_WINDOW [10]: PyTorch's steps.
#
# The work: bertc pretrain's default objective (mlm) on CORPUS for the
# configs L2/H128/A2/I512 and L4/H256/A4/I1024, vocabulary 8000 (the line
# count of VOCAB), max_len 128, batch 32, lr 1e-3, at 1 and 2 threads.
#
# bertc: `bertc pretrain --steps STEPS --eval-rows 0 --eval-every STEPS+1
#   --cache WORK/corpus.tokens --threads N --quiet`; its own figure, the
#   "(T tokens/s)" of its last line: the real tokens of the rows over the
#   wall time of the training loop (every step, the first included: reading
#   the rows, masking, forward, backward, clipping, AdamW). The cache is built
#   once before the table (timed on its own, printed above it) and checked to
#   be unchanged after each run, so no figure holds tokenisation. With no
#   held-out rows and evaluations past the last step the loop holds no
#   evaluation and no checkpoint (both come after it, untimed).
# PyTorch: tools/bench_pretrain_torch.py on the same token cache, the same
#   config and shapes: the rows, HF's DataCollatorForLanguageModeling masking
#   per batch, BertForMaskedLM (tools/bert_ref.py) with the LM head on the
#   masked positions only, clipping, AdamW with decay on 2-D weights, the
#   same schedule; tokens/s is the median of its timed windows after
#   TORCH_WARMUP untimed steps. Debian's python3-torch (installed by the
#   script when missing), its matmuls in OpenBLAS (bench/install_refs.sh
#   makes OpenBLAS the libblas.so.3 alternative: Debian's default is the
#   reference BLAS, ~10x slower) at the core build/bench/gemm
#   --openblas-coretype picks; at N > 1 threads the fastest split of N cores
#   between torch's pool and OpenBLAS's (one probe run each of N x 1, 1 x N,
#   N x N: torch_set), as bench/compare.sh.
#
# Columns: ratio = bertc tok/s / torch tok/s (> 1: bertc faster); c_cpu,
# t_cpu = CPU time over wall time of each whole process (the cores it really
# used); bertcMiB, torchMiB = peak RSS of each whole process (/usr/bin/time;
# PyTorch's holds the interpreter and libtorch). Every figure is the median
# over PAIRS alternating runs (bertc, PyTorch, bertc, ...).
set -eu
PAIRS=${1:-3}
BUILD=${BUILD:-build}
WORK=${WORK:-$BUILD/pretrain_bench}
STEPS=${STEPS:-50}
THREADS=${THREADS:-1 2}
TORCH_WARMUP=${TORCH_WARMUP:-5}
TORCH_WINDOWS=${TORCH_WINDOWS:-5}
TORCH_WINDOW=${TORCH_WINDOW:-10}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
sh bench/install_refs.sh
make --no-print-directory -s BUILD="$BUILD" "$BUILD/bertc" "$BUILD/bench/gemm" >&2
mkdir -p "$WORK"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

field() { echo "$2" | awk -v k="$1" '{ for (i = 1; i < NF; i++) if ($i == k) print $(i + 1) }'; }
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
col() { cut -d' ' -f"$2" "$1" | median; }
# timed OUT CMD...: runs CMD, stdout to OUT; prints "wall cpu_over_wall rss_mib"
timed() {
    out=$1
    shift
    /usr/bin/time -f '%e %U %S %M' -o "$TMP/time" "$@" > "$out" 2> "$TMP/stderr" || {
        cat "$TMP/stderr" >&2
        echo "pretrain_compare.sh: failed: $*" >&2
        exit 1
    }
    awk '{ w = ($1 > 0) ? $1 : 0.005; printf "%.2f %.2f %.0f\n", $1, ($2 + $3) / w, $4 / 1024 }' \
        "$TMP/time"
}

# The corpus: the real one (sh tools/build_corpus.sh), else a generated text
# (random 8-30 word lines over the words of data/topics.tsv, a blank line
# every 10 lines: documents), made once.
CORPUS=${CORPUS:-build/corpus/corpus.txt}
if [ ! -f "$CORPUS" ]; then
    CORPUS=$WORK/generated.txt
    if [ ! -f "$CORPUS" ]; then
        echo "pretrain_compare.sh: no build/corpus/corpus.txt (sh tools/build_corpus.sh makes it): generating $CORPUS" >&2
        cut -f2 data/topics.tsv | tr -s ' \t' '\n\n' | grep -v '^$' | awk 'BEGIN { srand(1) }
            { w[n++] = $0 }
            END { for (l = 0; l < 40000; l++) {
                      k = 8 + int(rand() * 23); s = w[int(rand() * n)]
                      for (i = 1; i < k; i++) s = s " " w[int(rand() * n)]
                      print s; if (l % 10 == 9) print "" } }' > "$CORPUS.tmp"
        mv "$CORPUS.tmp" "$CORPUS"
    fi
fi
VOCAB=${VOCAB:-$WORK/vocab8k.txt}
if [ ! -f "$VOCAB" ]; then
    echo "pretrain_compare.sh: training $VOCAB on $CORPUS (bertc vocab --size 8000)" >&2
    "$BUILD/bertc" vocab --train "$CORPUS" --size 8000 --out "$VOCAB" >&2
fi
V=$(wc -l < "$VOCAB")

# config L H A I: WORK/cfg_LxHy.json, the vocabulary's size
config() {
    f=$WORK/cfg_L$1_H$2.json
    cat > "$f" <<EOF
{"architectures": ["BertForMaskedLM"], "vocab_size": $V, "hidden_size": $2,
 "num_hidden_layers": $1, "num_attention_heads": $3, "intermediate_size": $4,
 "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
 "max_position_embeddings": 512, "type_vocab_size": 2, "initializer_range": 0.02,
 "layer_norm_eps": 1e-12, "pad_token_id": 0}
EOF
    echo "$f"
}

# The token cache, built (or found valid) once: tokenisation timed on its own.
CACHE=$WORK/corpus.tokens
CFG_SMALL=$(config 2 128 2 512)
STAMP0=$(stat -c '%Y %s' "$CACHE" 2>/dev/null || echo none)
CACHE_RUN=$(timed "$TMP/prime.out" "$BUILD/bertc" pretrain --corpus "$CORPUS" --config "$CFG_SMALL" \
    --vocab "$VOCAB" --out "$TMP/prime" --cache "$CACHE" --steps 1 --eval-rows 0 --max-len 128 --quiet)
CACHE_STAMP=$(stat -c '%Y %s' "$CACHE")
if [ "$STAMP0" = "$CACHE_STAMP" ]; then
    CACHE_HOW="valid, reused"
else
    CACHE_HOW="tokenised in $(echo "$CACHE_RUN" | cut -d' ' -f1) s (the run, with its one step), $(echo "$CACHE_RUN" | cut -d' ' -f3) MiB peak"
fi
CORPUS_INFO=$(sed -n 's/.* on \([0-9]* rows of [0-9]* tokens\) (\(.*\))$/\1, \2/p' "$TMP/prime.out")

set -- $("$BUILD/bench/gemm" --openblas-coretype)
if [ "$1" = "-" ]; then unset OPENBLAS_CORETYPE; else export OPENBLAS_CORETYPE="$1"; fi
shift
CORE_WHY="$*"
SHAPE="--max-len 128 --batch-size 32 --lr 1e-3"
torch() {
    /usr/bin/python3 tools/bench_pretrain_torch.py --vocab "$VOCAB" --cache "$CACHE" $SHAPE "$@"
}

# best_split CFG THREADS: "TORCH BLAS", PyTorch's fastest split of THREADS
# cores between its two pools (one short probe run each).
best_split() {
    cfg=$1 t=$2 best="1 1" best_r=""
    if [ "$t" -gt 1 ]; then
        for s in "$t 1" "1 $t" "$t $t"; do
            set -- $s
            r=$(field tokens_per_s "$(torch --config "$cfg" --warmup-steps 2 --windows 3 --window 3 \
                --threads "$1" --blas-threads "$2" 2>/dev/null || true)")
            if [ -n "$r" ] && { [ -z "$best_r" ] || awk -v a="$r" -v b="$best_r" 'BEGIN { exit !(a > b) }'; }; then
                best="$s" best_r=$r
            fi
        done
    fi
    echo "$best"
}

# pretrain_case L H A I THREADS: one row of the table.
pretrain_case() {
    L=$1 H=$2 t=$5
    cfg=$(config "$1" "$2" "$3" "$4")
    set -- $(best_split "$cfg" "$t")
    tt=$1 bt=$2
    : > "$TMP/c"; : > "$TMP/p"
    i=0
    while [ $i -lt "$PAIRS" ]; do
        rm -rf "$TMP/out"
        c=$(BERTC_THREADS=$t timed "$TMP/c.out" "$BUILD/bertc" pretrain --corpus "$CORPUS" \
            --config "$cfg" --vocab "$VOCAB" --out "$TMP/out" --cache "$CACHE" $SHAPE \
            --steps "$STEPS" --eval-rows 0 --eval-every $((STEPS + 1)) --threads "$t" --quiet)
        if [ "$(stat -c '%Y %s' "$CACHE")" != "$CACHE_STAMP" ]; then
            echo "pretrain_compare.sh: bertc rebuilt $CACHE: its figure would hold tokenisation" >&2
            exit 1
        fi
        tok=$(sed -n 's/^pretrained .*(\([0-9.]*\) tokens\/s).*/\1/p' "$TMP/c.out")
        echo "$tok $c" >> "$TMP/c"
        p=$(timed "$TMP/p.out" /usr/bin/python3 tools/bench_pretrain_torch.py --vocab "$VOCAB" \
            --cache "$CACHE" $SHAPE --config "$cfg" --warmup-steps "$TORCH_WARMUP" \
            --windows "$TORCH_WINDOWS" --window "$TORCH_WINDOW" --threads "$tt" --blas-threads "$bt")
        echo "$(field tokens_per_s "$(cat "$TMP/p.out")") $p" >> "$TMP/p"
        i=$((i + 1))
    done
    awk -v l="pretrain L$L/H$H 32x128" -v t="$t" -v ct="$(col "$TMP/c" 1)" -v pt="$(col "$TMP/p" 1)" \
        -v cc="$(col "$TMP/c" 3)" -v pc="$(col "$TMP/p" 3)" -v cr="$(col "$TMP/c" 4)" \
        -v pr="$(col "$TMP/p" 4)" -v ts="${tt}x$bt" 'BEGIN {
        printf "%-24s %3d %11.0f %11.0f %6.2fx %5.2f %5.2f %8.0f %8.0f %9s\n",
               l, t, ct, pt, ct / pt, cc, pc, cr, pr, ts }'
}

TORCH_LINE=$(torch --config "$CFG_SMALL" --warmup-steps 0 --windows 1 --window 1 --threads 1)
echo "bench/pretrain_compare.sh: $PAIRS alternating runs per side and case; medians over the runs"
echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "corpus: $CORPUS ($CORPUS_INFO); vocabulary $VOCAB ($V tokens)"
echo "token cache $CACHE: $CACHE_HOW; every run below reuses it"
echo "bertc: pretrain --steps $STEPS --eval-rows 0 --quiet, its own tokens/s (every step of the loop)"
echo "torch: $(field torch "$TORCH_LINE"), BLAS $(field blas_lib "$TORCH_LINE")" \
     "core $(field blas_core "$TORCH_LINE") (OpenBLAS: $CORE_WHY); median tokens/s of" \
     "$TORCH_WINDOWS windows of $TORCH_WINDOW steps after $TORCH_WARMUP; threads as torch_set (torch x BLAS)"
echo
printf "%-24s %3s %11s %11s %7s %5s %5s %8s %8s %9s\n" case thr bertc_tok/s torch_tok/s ratio \
    c_cpu t_cpu bertcMiB torchMiB torch_set
for size in "2 128 2 512" "4 256 4 1024"; do
    for t in $THREADS; do
        pretrain_case $size "$t"
    done
done
