#!/bin/sh
# bench/loaded_finetune.sh — does bertc finetune on 2 threads slow down when
# another process keeps one core busy? The same run timed with this tree's
# bertc and with BASE's (a commit before the change under test), in turn,
# while a busy loop holds a core: the check that a thread pool which polls
# for its next job does not take cores the caller needs (commit 372e07a: a
# 1 ms poll made this run 4x slower).
#
#   bench/loaded_finetune.sh [BASE [PAIRS [STEPS]]]
#       BASE   default e00ed81 (the last commit before issue #27's work)
#       PAIRS  alternating runs per side (default 3), STEPS optimizer steps (60)
#
# The run is docs/finetune.md's example on real text: --config and --vocab
# of the shipped model (data/pretrained/bertc-docs), --train the demo's
# topics (data/topics.tsv with a header), --task seq-cls, --threads 2. It
# prints each run's wall and CPU seconds and the medians; BUILD=build.
set -eu
BASE=${1:-e00ed81}
PAIRS=${2:-3}
STEPS=${3:-60}
BUILD=${BUILD:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
make --no-print-directory -s BUILD="$BUILD" "$BUILD/bertc" >&2
TMP=$(mktemp -d)
BUSY=""
cleanup() {
    [ -n "$BUSY" ] && kill "$BUSY" 2>/dev/null || true
    git worktree remove --force "$TMP/base" 2>/dev/null || true
    rm -rf "$TMP"
}
trap cleanup EXIT INT TERM
git worktree add -q --detach "$TMP/base" "$BASE"
make --no-print-directory -s -C "$TMP/base" BUILD=build build/bertc >&2
{ printf 'label\ttext\n'; cat data/topics.tsv; } > "$TMP/topics.tsv"
M=data/pretrained/bertc-docs

# run BERTC OUT: "wall_s cpu_s" of one finetune. It runs in the $(...)
# subshell, so that shell's `times` (second line: its children's user and
# system time, "0m1.23s 0m0.45s") is the finetune's CPU time; rm and date
# are children too, a few ms.
run() {
    rm -rf "$2"
    s=$(date +%s.%N)
    "$1" finetune --config $M/config.json --vocab $M/vocab.txt --train "$TMP/topics.tsv" \
        --task seq-cls --out "$2" --steps "$STEPS" --max-len 64 --threads 2 --quiet >/dev/null 2>&1
    e=$(date +%s.%N)
    times > "$2.times"   # not in a pipe: a forked `times` has no children
    c=$(sed -n 2p "$2.times" | awk '{ n = 0; for (i = 1; i <= 2; i++) { split($i, p, "m"); sub("s", "", p[2]); n += p[1] * 60 + p[2] } print n }')
    awk -v s="$s" -v e="$e" -v c="$c" 'BEGIN { printf "%.2f %.2f\n", e - s, c }'
}
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

sh -c 'while :; do :; done' &
BUSY=$!
echo "bench/loaded_finetune.sh: bertc finetune --threads 2, $STEPS steps, while pid $BUSY keeps a core busy"
echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores; base $(git rev-parse --short "$BASE"), this tree $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- tensor || echo '+changes')"
: > "$TMP/b"; : > "$TMP/c"
i=0
while [ $i -lt "$PAIRS" ]; do
    b=$(run "$TMP/base/build/bertc" "$TMP/out-b")
    c=$(run "./$BUILD/bertc" "$TMP/out-c")
    echo "pair $((i + 1)): base wall/cpu s $b   this tree $c"
    echo "$b" >> "$TMP/b"; echo "$c" >> "$TMP/c"
    i=$((i + 1))
done
bw=$(cut -d' ' -f1 "$TMP/b" | median) cw=$(cut -d' ' -f1 "$TMP/c" | median)
echo "median wall s: base $bw, this tree $cw (this tree / base $(awk -v a="$cw" -v b="$bw" 'BEGIN { printf "%.2f", a / b }'))"
echo "median cpu s:  base $(cut -d' ' -f2 "$TMP/b" | median), this tree $(cut -d' ' -f2 "$TMP/c" | median)"
