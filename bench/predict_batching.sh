#!/bin/sh
# bench/predict_batching.sh — does a larger --batch-size pay on real text of
# mixed length? bertc predict and bertc embed over the same 2,000 texts at
# several batch sizes, each run's wall seconds, tokens/s and padding as
# --stats prints them, and the speed-up over --batch-size 1 (issue #29: a
# batch padded to its longest text made the default batch 8 slower than 1).
#
#   bench/predict_batching.sh [N [THREADS [SIZES]]]
#       N        texts (default 2000), THREADS (default 2), SIZES "1 8 32"
#       REPEAT   rounds over the batch sizes, the median reported (default 3)
#       BASE=1   also a BERT-base-sized classifier (12 layers, H 768) on the
#                first N/10 texts, --max-len 128 (minutes on 2 cores)
#
# The texts are real and of mixed length: the long descriptions of this
# machine's installed Debian packages (/var/lib/dpkg/status, cut to their
# first 1,000 characters) and, after them, the short fortunes of
# data/pretrain.txt, interleaved by a fixed shuffle (awk srand(29)). The
# models are random (speed does not depend on the weights): the shipped
# model's shape (data/pretrained/bertc-docs: 4 layers, H 128, 8,000-token
# vocabulary) as a 5-label classifier, --max-len 256, made by `bertc init`.
set -eu
N=${1:-2000}
THREADS=${2:-2}
SIZES=${3:-"1 8 32"}
BUILD=${BUILD:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
make --no-print-directory -s BUILD="$BUILD" "$BUILD/bertc" >&2
BERTC=$BUILD/bertc
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT INT TERM

# ---- the texts --------------------------------------------------------------
# dpkg's status file: a package's Description is its first line and the
# indented lines after it (" ." for a blank line); one text each.
awk '/^Description:/ { d = substr($0, 14); on = 1; next }
     on && /^ / { l = substr($0, 2); if (l != ".") d = d " " l; next }
     on { print substr(d, 1, 1000); on = 0 }' /var/lib/dpkg/status > "$TMP/debian.txt" || true
cat "$TMP/debian.txt" data/pretrain.txt |
    awk 'BEGIN { srand(29) } length($0) > 0 { printf "%.9f\t%s\n", rand(), $0 }' |
    sort -n | cut -f2- | head -n "$N" > "$TMP/texts.txt"
n=$(wc -l < "$TMP/texts.txt")

# ---- the models -------------------------------------------------------------
# model DIR CONFIG VOCAB: a random 5-label classifier directory
model() {
    mkdir -p "$1"
    sed -e 's/"BertForMaskedLM"/"BertForSequenceClassification"/' \
        -e 's/"num_labels": 2/"num_labels": 5/' "$2" > "$1/config.json"
    grep -q '"num_labels"' "$1/config.json" ||
        sed -i 's/^{/{\n  "num_labels": 5,/' "$1/config.json"
    cp "$3" "$1/vocab.txt"
    printf '{"do_lower_case": true}\n' > "$1/tokenizer_config.json"
    "$BERTC" init --config "$1/config.json" --output "$1/model.safetensors" > /dev/null
}
model "$TMP/small" data/pretrained/bertc-docs/config.json data/pretrained/bertc-docs/vocab.txt

echo "# bertc $(git rev-parse --short HEAD), $THREADS threads, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
from_debian=$(grep -cxFf "$TMP/debian.txt" "$TMP/texts.txt" || true)
echo "# $n texts: $from_debian Debian package descriptions, $((n - from_debian)) fortunes; $(awk '{ w += NF; if (NF > m) m = NF } END { printf "%.0f words on average, the longest %d", w / NR, m }' "$TMP/texts.txt")"

# once COMMAND MODEL MAXLEN INPUT BATCH: one run's wall seconds; its --stats
# line is left in $TMP/stats.BATCH
once() {
    start=$(date +%s.%N)
    "$BERTC" "$1" --model "$2" --max-len "$3" --input "$4" --batch-size "$5" \
        --threads "$THREADS" --stats > /dev/null 2> "$TMP/stats.$5"
    end=$(date +%s.%N)
    echo "$start $end" | awk '{ print $2 - $1 }'
}

# table COMMAND LABEL MODEL MAXLEN INPUT: REPEAT rounds (default 3), each
# running every batch size once in turn (so a change in the machine's clock
# between phases hits every size alike), then a line per size: the median
# wall time, tokens/s and padding from --stats, and batch 1's median over it
table() {
    for b in $SIZES; do : > "$TMP/walls.$b"; done
    for r in $(seq "${REPEAT:-3}"); do
        for b in $SIZES; do once "$1" "$3" "$4" "$5" "$b" >> "$TMP/walls.$b"; done
    done
    base=""
    for b in $SIZES; do
        wall=$(sort -n "$TMP/walls.$b" | awk '{ w[NR] = $1 } END { print w[int((NR + 1) / 2)] }')
        [ -n "$base" ] || base=$wall
        stats=$(grep 'tokens/s' "$TMP/stats.$b" | tail -n 1)
        # "bertc predict: N inputs (0 in windows), N sequences, T tokens + P % padding in S s: R tokens/s"
        tokens=$(echo "$stats" | sed -n 's/.* sequences, \([0-9]*\) tokens.*/\1/p')
        pad=$(echo "$stats" | sed -n 's/.* + \([0-9.]*\) % padding.*/\1/p')
        awk -v c="$1" -v m="$2" -v b="$b" -v w="$wall" -v t="$tokens" -v p="$pad" -v base="$base" \
            'BEGIN { printf "%-8s %-10s %6d %9.2f %11.0f %9s %9.2fx\n", c, m, b, w, t / w, p, base / w }'
    done
}

printf '%-8s %-10s %6s %9s %11s %9s %10s\n' command model batch wall_s tokens/s padding% vs_batch1
table predict L4/H128 "$TMP/small" 256 "$TMP/texts.txt"
table embed L4/H128 "$TMP/small" 256 "$TMP/texts.txt"
if [ "${BASE:-0}" = 1 ]; then
    model "$TMP/base" examples/configs/bert-base-uncased.json data/bert-base-uncased-vocab.txt
    head -n $((N / 10)) "$TMP/texts.txt" > "$TMP/texts-base.txt"
    echo "# BERT-base-sized: the first $(wc -l < "$TMP/texts-base.txt") texts, --max-len 128"
    table predict L12/H768 "$TMP/base" 128 "$TMP/texts-base.txt"
fi
