#!/bin/sh
# bench/pretrain_rss.sh — does `bertc pretrain`'s memory grow with the corpus?
# Peak RSS on a 1 GB corpus against a 10 MB one (issue 26: at most twice).
#
#   bench/pretrain_rss.sh
#
# Environment (defaults in brackets): BUILD [build], CORPUS
# [build/corpus/corpus.txt: sh tools/build_corpus.sh makes it], VOCAB
# [WORK/vocab8k.txt, made by bertc vocab --size 8000 on CORPUS], WORK
# [BUILD/pretrain_rss: the two corpora, kept between runs], SMALL_MB [10],
# BIG_MB [1024], STEPS [20], THREADS [2], FLAGS [none: more bertc pretrain
# flags for both runs].
#
# small: the first SMALL_MB MiB of CORPUS, cut at a line end.
# big:   CORPUS again and again until BIG_MB MiB, each copy's lines prefixed
#        "copy K: " (blank lines, the document breaks, left blank), so no two
#        copies' lines are the same text. Needs 4 GB free where WORK is (the
#        corpus and its token cache); skipped with a message when not.
# Each: `/usr/bin/time -v bertc pretrain --corpus C --config (L2/H128/A2/I512,
# vocabulary VOCAB) --vocab VOCAB --steps STEPS --threads THREADS --quiet`
# with the token cache deleted first, so the run holds the tokenisation pass,
# the training steps and the default evaluations (a tenth of the run each,
# at most 1000 held-out rows). Prints each run's corpus, wall time and peak
# RSS, and big / small; exits 1 when that is over 2.
set -eu
BUILD=${BUILD:-build}
WORK=${WORK:-$BUILD/pretrain_rss}
SMALL_MB=${SMALL_MB:-10}
BIG_MB=${BIG_MB:-1024}
STEPS=${STEPS:-20}
THREADS=${THREADS:-2}
FLAGS=${FLAGS:-}
CORPUS=${CORPUS:-build/corpus/corpus.txt}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
if [ ! -f "$CORPUS" ]; then
    echo "pretrain_rss.sh: no $CORPUS: sh tools/build_corpus.sh makes it (or set CORPUS)" >&2
    exit 1
fi
make --no-print-directory -s BUILD="$BUILD" "$BUILD/bertc" >&2
mkdir -p "$WORK"
VOCAB=${VOCAB:-$WORK/vocab8k.txt}
if [ ! -f "$VOCAB" ]; then
    echo "pretrain_rss.sh: training $VOCAB on $CORPUS (bertc vocab --size 8000)" >&2
    "$BUILD/bertc" vocab --train "$CORPUS" --size 8000 --out "$VOCAB" >&2
fi
CFG=$WORK/cfg_L2_H128.json
cat > "$CFG" <<EOF
{"architectures": ["BertForMaskedLM"], "vocab_size": $(wc -l < "$VOCAB"), "hidden_size": 128,
 "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 512,
 "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
 "max_position_embeddings": 512, "type_vocab_size": 2, "initializer_range": 0.02,
 "layer_norm_eps": 1e-12, "pad_token_id": 0}
EOF
MIB=1048576

# The small corpus: its first SMALL_MB MiB, the partial last line dropped.
SMALL=$WORK/corpus_${SMALL_MB}mb.txt
if [ ! -f "$SMALL" ]; then
    head -c $((SMALL_MB * MIB)) "$CORPUS" | sed '$d' > "$SMALL.tmp"
    mv "$SMALL.tmp" "$SMALL"
fi

# The big corpus, when the disk has room for it and its cache.
BIG=$WORK/corpus_${BIG_MB}mb.txt
free_kb=$(df -Pk "$WORK" | awk 'NR == 2 { print $4 }')
if [ ! -f "$BIG" ] && [ "$free_kb" -lt $((4 * 1024 * 1024)) ]; then
    echo "pretrain_rss.sh: only $((free_kb / 1024)) MiB free on $WORK's disk, 4096 needed for the" \
         "${BIG_MB} MiB corpus and its token cache: skipped"
    exit 0
fi
if [ ! -f "$BIG" ]; then
    echo "pretrain_rss.sh: writing $BIG (copies of $CORPUS, each line prefixed 'copy K: ')" >&2
    : > "$BIG.tmp"
    k=0
    while [ "$(stat -c %s "$BIG.tmp")" -lt $((BIG_MB * MIB)) ]; do
        awk -v k="$k" 'NF { print "copy " k ": " $0; next } { print }' "$CORPUS" >> "$BIG.tmp"
        k=$((k + 1))
    done
    mv "$BIG.tmp" "$BIG"
fi

# run NAME CORPUS: "NAME bytes tokens rows wall_s rss_mib" of one fresh-cache run
run() {
    name=$1 text=$2
    cache=$WORK/$name.tokens out=$WORK/out_$name
    rm -rf "$cache" "$out"
    /usr/bin/time -v -o "$WORK/$name.time" "$BUILD/bertc" pretrain --corpus "$text" --config "$CFG" \
        --vocab "$VOCAB" --out "$out" --cache "$cache" --steps "$STEPS" --threads "$THREADS" \
        --quiet $FLAGS > "$WORK/$name.out" 2> "$WORK/$name.err" || {
        cat "$WORK/$name.err" >&2
        echo "pretrain_rss.sh: bertc pretrain failed on $text" >&2
        exit 1
    }
    rm -rf "$cache" "$out"
    rss_kb=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$WORK/$name.time")
    wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$WORK/$name.time" |
        awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; print s }')
    tokens_rows=$(sed -n 's/^pretrained .* on \([0-9]*\) rows of .* (\([0-9]*\) tokens, .*/\2 \1/p' \
        "$WORK/$name.out")
    echo "$name $(stat -c %s "$text") $tokens_rows $wall $((rss_kb / 1024))"
}

echo "bench/pretrain_rss.sh: bertc pretrain --steps $STEPS --threads $THREADS $FLAGS, L2/H128, a fresh token cache each"
echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
set -- $(run small "$SMALL")
S_RSS=$6
printf "%-6s %14s %12s %9s %8s %8s\n" corpus bytes tokens rows wall_s peakMiB
printf "%-6s %14s %12s %9s %8.1f %8s\n" small "$2" "$3" "$4" "$5" "$6"
set -- $(run big "$BIG")
B_RSS=$6
printf "%-6s %14s %12s %9s %8.1f %8s\n" big "$2" "$3" "$4" "$5" "$6"
awk -v b="$B_RSS" -v s="$S_RSS" 'BEGIN {
    r = b / s
    printf "peak RSS big / small: %.2f (%s: at most 2)\n", r, r <= 2 ? "ok" : "FAILED"
    exit r > 2 }'
