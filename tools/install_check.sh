#!/bin/sh
# tools/install_check.sh DIR — `make install` into DIR/prefix, then compile the
# small program at the top of bertc.h against the installed tree using only
# pkg-config (no -I into the source tree), run it and check that it learned
# y = 3x - 1. Proves the installed headers are complete (each includes only
# installed ones) and bertc.pc names everything the link needs. Then trains
# the topics example for two steps through the installed bertc from outside
# the source tree: the examples and their data/ were installed too.
set -eu
OUT=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
rm -rf "$OUT"
mkdir -p "$OUT"
make -s --no-print-directory install PREFIX="$OUT/prefix" >/dev/null
# The example program is the comment block of bertc.h, " *     " indented.
sed -n '/^ \*     #include "bertc.h"/,/^ \*     }$/p' bertc.h | sed -e 's/^ \*     //' -e 's/^ \*$//' > "$OUT/prog.c"
export PKG_CONFIG_PATH="$OUT/prefix/lib/pkgconfig"
PC="$OUT/prefix/lib/pkgconfig/bertc.pc"
if command -v pkg-config >/dev/null 2>&1; then
    FLAGS=$(pkg-config --cflags --libs bertc)
else   # no pkg-config here: expand bertc.pc's Cflags and Libs the way it would
    includedir="$OUT/prefix/include/bertc" libdir="$OUT/prefix/lib"
    FLAGS=$(sed -n 's/^\(Cflags\|Libs\): //p' "$PC" |
            sed -e "s|\${includedir}|$includedir|g" -e "s|\${libdir}|$libdir|g" | tr '\n' ' ')
fi
# Only the public headers: nothing private (*_internal.h) was installed.
private=$(find "$OUT/prefix/include" -name '*_internal.h')
[ -z "$private" ] || { echo "install-check: FAILED: private headers installed: $private"; exit 1; }
echo "install-check: cc prog.c $FLAGS"
# shellcheck disable=SC2086
cc -std=c11 -Wall -Wextra -Werror -o "$OUT/prog" "$OUT/prog.c" $FLAGS
got=$("$OUT/prog")
echo "install-check: the bertc.h example, built from the installed tree, prints: $got"
case "$got" in
    "w = 3.000, b = -1.000") echo "install-check: ok" ;;
    *) echo "install-check: FAILED: expected w = 3.000, b = -1.000"; exit 1 ;;
esac
# The installed CLI runs on its own.
"$OUT/prefix/bin/bertc" summary --config examples/configs/bert-base-uncased.json |
    grep -q "Total parameters: 109,514,298" ||
    { echo "install-check: FAILED: the installed bertc summary"; exit 1; }
echo "install-check: the installed bertc CLI runs"
# `bertc train` from a directory outside the source tree, BERTC_DATA_DIR
# unset: the installed example must find the installed data/.
ELSEWHERE=$(mktemp -d)
(cd "$ELSEWHERE" && unset BERTC_DATA_DIR && "$OUT/prefix/bin/bertc" train topics --steps 2 \
    --eval-every 1 --out "$OUT/train" --quiet > "$OUT/train.log" 2>&1) ||
    { cat "$OUT/train.log"; rmdir "$ELSEWHERE";
      echo "install-check: FAILED: bertc train topics from $ELSEWHERE"; exit 1; }
rmdir "$ELSEWHERE"
[ -f "$OUT/train/model.safetensors" ] ||
    { echo "install-check: FAILED: no $OUT/train/model.safetensors"; exit 1; }
echo "install-check: the installed bertc train topics runs outside the source tree"
