#!/bin/sh
# tools/hf_vocab_compare.sh [CORPUS...] — `bertc vocab` against Hugging Face's
# own WordPiece trainer (tools/hf_vocab_train.js, the npm `tokenizers`
# package, installed into $HF_NPM_DIR as tools/hf_tokenizer_fixtures.sh does).
# The Node binding trains with WordPieceTrainer's defaults only (no special
# tokens, min_frequency 0, no alphabet limit, vocab_size 30000), so bertc runs
# with --min-frequency 0 --limit-alphabet 0 and its 5 special tokens are
# dropped before comparing. Prints, for the hand corpus of
# test/test_vocab_train.c and each CORPUS (default data/topics.tsv): whether
# the vocabularies are identical, else how many tokens each has that the
# other lacks, next to the same count between two runs of Hugging Face's
# trainer (which orders the "##c" tokens by hash-map iteration, so its
# equal-count merges, and the tokens they lead to, vary from run to run).
# Needs node, npm, `make build/bertc`, and the network once. Not part of
# `make test`.
set -eu
DIR=${HF_NPM_DIR:-/tmp/bertc-hf-tokenizers}
VERSION=${HF_TOKENIZERS_VERSION:-0.23.2}
if [ ! -f "$DIR/node_modules/tokenizers/package.json" ]; then
    mkdir -p "$DIR"
    (cd "$DIR" && npm install --no-save --no-audit --no-fund "tokenizers@$VERSION" >&2)
fi
export NODE_PATH="$DIR/node_modules"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
printf 'H\303\251llo hello, HELLO! low lower\n' > "$TMP/hand.txt"
[ $# -gt 0 ] || set -- data/topics.tsv

differ() {   # tokens of $1 not in $2
    sort "$1" > "$TMP/a.sorted"
    sort "$2" > "$TMP/b.sorted"
    comm -23 "$TMP/a.sorted" "$TMP/b.sorted" | wc -l
}

for corpus in "$TMP/hand.txt" "$@"; do
    node tools/hf_vocab_train.js "$TMP/hf1.txt" "$corpus" > /dev/null
    node tools/hf_vocab_train.js "$TMP/hf2.txt" "$corpus" > /dev/null
    build/bertc vocab --train "$corpus" --min-frequency 0 --limit-alphabet 0 \
        --out "$TMP/bertc.txt" 2> /dev/null
    tail -n +6 "$TMP/bertc.txt" > "$TMP/bertc5.txt"
    name=$(basename "$corpus")
    if cmp -s "$TMP/hf1.txt" "$TMP/bertc5.txt"; then
        echo "$name: identical to Hugging Face's ($(wc -l < "$TMP/hf1.txt") tokens)"
    else
        echo "$name: bertc $(wc -l < "$TMP/bertc5.txt") tokens, HF $(wc -l < "$TMP/hf1.txt");" \
             "only in bertc $(differ "$TMP/bertc5.txt" "$TMP/hf1.txt")," \
             "only in HF $(differ "$TMP/hf1.txt" "$TMP/bertc5.txt");" \
             "HF run 2 vs run 1: $(differ "$TMP/hf2.txt" "$TMP/hf1.txt") /" \
             "$(differ "$TMP/hf1.txt" "$TMP/hf2.txt")"
    fi
done
