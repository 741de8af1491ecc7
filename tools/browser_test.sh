#!/bin/sh
# tools/browser_test.sh — `make browser-test`: a `bertc explain` page for
# every architecture of zoo/models/architectures.c, and one of a 64-token
# text on data/pretrained/bertc-docs (long-64-tokens.png: its axis labels
# must not overlap), opened in headless Chromium.
#
# For each architecture: a model directory from its first test fixture
# (test/data/zoo/*/config.json + weights.safetensors) with a vocabulary cut
# from the real one (data/bert-base-uncased-vocab.txt: the special tokens,
# then its most frequent words up to the model's vocab_size), a page of it
# on an English sentence, then Chromium loads the page and takes a
# screenshot (build/browser-test/NAME.png). It fails when
#   - a page names anything to fetch (http, src=, href=, @import, url()),
#   - Chromium logs a console message (a script error) or loads any file
#     besides the page itself, or any network request fails,
#   - a screenshot is blank (tools/png_check.js: too few non-white pixels
#     or colours).
# Chromium (and node, for the PNG check) are installed with apt-get when
# missing and we are root; otherwise the script says how and fails.
set -eu
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BERTC=${BERTC:-build/bertc}
OUT=build/browser-test
VOCAB=data/bert-base-uncased-vocab.txt

fail() { echo "browser-test: $*" >&2; exit 1; }

# ---- tools -----------------------------------------------------------------

apt_install() {   # PACKAGE: installed when root with apt-get, else a failure saying how
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "browser-test: $1 is missing: installing it with apt-get"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$1" >/dev/null 2>&1 ||
            { apt-get update -qq >/dev/null 2>&1 &&
              DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$1" >/dev/null 2>&1; } ||
            fail "apt-get install $1 failed"
    else
        fail "$1 is missing; install it with: sudo apt-get install -y $1"
    fi
}

CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROMIUM" ]; then
    apt_install chromium
    CHROMIUM=$(command -v chromium) || fail "chromium was installed but is not on PATH"
fi
command -v node >/dev/null || apt_install nodejs
[ -x "$BERTC" ] || fail "$BERTC is missing: run make first"

# ---- the architectures and their fixtures ---------------------------------

# The names of the ModelArch structs zoo/models/architectures.c lists, then each
# one's .name from its zoo file.
architectures() {
    sed -n 's/^ *X(\(bertc_arch_[a-z_]*\)) *\\$/\1/p' zoo/models/architectures.c | while read -r sym; do
        sed -n "/^const ModelArch $sym = {/,/^};/s/^ *\.name = \"\([A-Za-z0-9]*\)\",.*/\1/p" \
            zoo/models/*.c
    done
}

fixture_of() {   # ARCH -> the first fixture directory whose config names it
    for c in test/data/zoo/*/config.json; do
        if grep -q "\"$1\"" "$c"; then dirname "$c"; return; fi
    done
}

# DIR/vocab.txt: [PAD] [UNK] [CLS] [SEP] [MASK] . , ? and then the real
# vocabulary's most frequent words (from "the", id 1996) up to vocab_size.
make_vocab() {   # FIXTURE DIR
    size=$(sed -n 's/.*"vocab_size": *\([0-9]*\).*/\1/p' "$1/config.json")
    [ -n "$size" ] || fail "$1/config.json: no vocab_size"
    { printf '%s\n' '[PAD]' '[UNK]' '[CLS]' '[SEP]' '[MASK]' . , '?'
      sed -n '1997,$p' "$VOCAB" | head -n $((size - 8)); } > "$2/vocab.txt"
}

SENTENCE="she said that he was there for the first time ."
PAIR="then they were out with him ."

# ---- a page in Chromium ------------------------------------------------------

shoot() {   # NAME PAGE [HEIGHT]: fails on anything to fetch, console messages, other loads
    name=$1 page=$2 height=${3:-3000}
    if grep -n -i -E 'https?:|src=|href=|@import|url\(' "$page" | head -3 | grep .; then
        fail "$page names something to fetch (above): a page must be self-contained"
    fi
    log="$OUT/$name.chromium.log"
    url="file://$ROOT/$page"
    timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --hide-scrollbars \
        --no-first-run --disable-background-networking --disable-sync \
        --disable-component-update --disable-default-apps \
        --enable-logging=stderr --v=1 --window-size=1280,"$height" \
        --screenshot="$OUT/$name.png" "$url" >"$log" 2>&1 ||
        fail "$name: chromium failed on $page (log: $log)"
    [ -s "$OUT/$name.png" ] || fail "$name: no screenshot (log: $log)"
    if grep -E ':CONSOLE[:(]' "$log"; then
        fail "$page: console messages in Chromium (above; log: $log)"
    fi
    if grep 'FileURLLoader::Start' "$log" | grep -v -F "Start: $url" | grep .; then
        fail "$page: Chromium loaded other files (above): a page must be self-contained"
    fi
    # (Chromium's own sign-in and update services fail offline: not the page's)
    if grep -E 'net::ERR_|Failed to load resource' "$log" | grep -v google_apis | grep .; then
        fail "$page: a failed load (above; log: $log)"
    fi
}

# ---- pages ---------------------------------------------------------------

rm -rf "$OUT"
mkdir -p "$OUT/models"
n=0
for arch in $(architectures); do
    fixture=$(fixture_of "$arch")
    [ -n "$fixture" ] || fail "$arch: no fixture in test/data/zoo names it"
    dir="$OUT/models/$arch"
    mkdir -p "$dir"
    cp "$fixture/config.json" "$dir/config.json"
    cp "$fixture/weights.safetensors" "$dir/model.safetensors"
    make_vocab "$fixture" "$dir"
    page="$OUT/$arch.html"
    case "$arch" in
    CGBert*|QACGBert*) set -- --context 1 "$SENTENCE" ;;
    Summarizer) set -- "she said that he was there . then they were out with him . it was the first time ." ;;
    QAConv*|BertForQuestionAnswering) set -- "who was there ?" "$SENTENCE" ;;
    SpanBert*) set -- "she said that [MASK] [MASK] there for the first time ." ;;
    BertForMaskedLM|BertForPreTraining) set -- "she said that he was [MASK] for the first time ." "$PAIR" ;;
    *) set -- "$SENTENCE" "$PAIR" ;;
    esac
    "$BERTC" explain --model "$dir" --out "$page" "$@" >/dev/null ||
        fail "$arch: bertc explain failed (model from $fixture)"
    shoot "$arch" "$page"
    echo "browser-test: $arch: $page ($(wc -c < "$page") bytes), $OUT/$arch.png"
    n=$((n + 1))
done
[ "$n" -gt 0 ] || fail "no architectures found in zoo/models/architectures.c"

# A 64-token text on the shipped model (data/pretrained/bertc-docs): its maps
# are the ones whose axis labels blurred together (issue #29); look at
# build/browser-test/long-64-tokens.png, tall enough (6000 px) to reach layer
# 0's four attention maps below the 64-row token table.
LONG="the quick brown fox jumps over the lazy dog while the children play in the park near \
the river and the old man reads a book about the history of the city and its people who lived \
there many years ago before the war came to the town and all the young men left their homes to \
fight"
page="$OUT/long-64-tokens.html"
"$BERTC" explain --model data/pretrained/bertc-docs --out "$page" "$LONG" >/dev/null ||
    fail "bertc explain failed on the 64-token text"
grep -q '64 tokens (sequence 0' "$page" || fail "$page: the long text is not 64 tokens"
shoot long-64-tokens "$page" 6000
echo "browser-test: 64 tokens: $page ($(wc -c < "$page") bytes), $OUT/long-64-tokens.png"
n=$((n + 1))
node tools/png_check.js "$OUT"/*.png || fail "a screenshot is blank (above)"
echo "browser-test: $n pages, no console errors, no loads, no blank screenshot"
