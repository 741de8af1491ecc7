#!/bin/sh
# tools/hf_tokenizer_fixtures.sh — regenerates, from Hugging Face's own
# tokenizers (the npm package, the Rust code behind BertTokenizerFast):
#   zoo/text/unicode_tables.c                  the character tables of the C tokenizer
#   test/data/tokenizer/hf_uncased.json   bert-base-uncased expected outputs
#   test/data/tokenizer/hf_cased.json     the same inputs cased (cased-vocab.txt)
# and checks tools/tokenizer_ref.py against them. Needs node, npm, python3
# and the network once: the package goes into $HF_NPM_DIR (default
# /tmp/bertc-hf-tokenizers) when it is not there. `make test` needs none of
# this: it reads the committed files.
#
#     tools/hf_tokenizer_fixtures.sh            (from the repository root)
#     tools/hf_tokenizer_fixtures.sh --random N (also N random texts and pairs,
#         uncased and cased, through both; needs `make build/libbertc.a`)
set -eu
RANDOM_N=0
if [ "${1:-}" = "--random" ]; then
    RANDOM_N=${2:?--random needs a count}
fi
DIR=${HF_NPM_DIR:-/tmp/bertc-hf-tokenizers}
VERSION=${HF_TOKENIZERS_VERSION:-0.23.2}
if [ ! -f "$DIR/node_modules/tokenizers/package.json" ]; then
    mkdir -p "$DIR"
    (cd "$DIR" && npm install --no-save --no-audit --no-fund "tokenizers@$VERSION" >&2)
fi
export NODE_PATH="$DIR/node_modules"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

node tools/hf_unicode_probe.js > "$TMP/probe.jsonl"
python3 tools/gen_unicode_tables.py "$TMP/probe.jsonl" > "$TMP/unicode_tables.c"
mv "$TMP/unicode_tables.c" zoo/text/unicode_tables.c

python3 tools/tokenizer_ref.py --inputs > "$TMP/uncased.json"
python3 tools/tokenizer_ref.py --inputs --cased > "$TMP/cased.json"
node tools/hf_tokenizer_fixtures.js data/bert-base-uncased-vocab.txt uncased "$TMP/uncased.json" \
    > "$TMP/hf_uncased.json"
node tools/hf_tokenizer_fixtures.js test/data/tokenizer/cased-vocab.txt cased "$TMP/cased.json" \
    > "$TMP/hf_cased.json"
mv "$TMP/hf_uncased.json" "$TMP/hf_cased.json" test/data/tokenizer/

# The independent Python version should agree; where it does not, the
# difference is listed (expected only for Unicode-version differences).
python3 tools/tokenizer_ref.py --check test/data/tokenizer/hf_uncased.json || true
python3 tools/tokenizer_ref.py --cased --check test/data/tokenizer/hf_cased.json || true

if [ "$RANDOM_N" -gt 0 ]; then
    cc -std=c11 -O2 -I. tools/hf_tokenizer_random.c build/libbertc.a -lm -lpthread \
        -o "$TMP/hf_tokenizer_random"
    for mode in uncased cased; do
        mkdir -p "$TMP/$mode"
        node tools/hf_tokenizer_random.js write data/bert-base-uncased-vocab.txt $mode \
            "$RANDOM_N" 2024 "$TMP/$mode"
        "$TMP/hf_tokenizer_random" data/bert-base-uncased-vocab.txt $mode "$TMP/$mode/cases.bin" \
            > "$TMP/$mode/bertc.jsonl"
        node tools/hf_tokenizer_random.js compare "$TMP/$mode"
    done
fi
