#!/bin/sh
# tools/install_check.sh DIR — `make install` into DIR/prefix, then compile the
# small program at the top of bertc.h against the installed tree using only
# pkg-config (no -I into the source tree), run it and check that it learned
# y = 3x - 1. Proves the installed headers are complete (each includes only
# installed ones) and bertc.pc names everything the link needs. Then trains
# the topics example for two steps through the installed bertc from outside
# the source tree: the examples and their data/ were installed too. The
# manual page is installed, renders without a warning (groff, where there is
# one), carries bertc's version and has a section for every command
# `bertc help` lists and an entry for every flag their --help lists. Last, the porting kit: a firmware built from the prefix
# alone runs under qemu-system-arm (see the end of this file).
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
# The manual page: installed, its version bertc's own, a section for every
# command the installed bertc lists, and (with groff) no warning rendering it.
MAN="$OUT/prefix/share/man/man1/bertc.1"
[ -f "$MAN" ] || { echo "install-check: FAILED: no $MAN"; exit 1; }
version=$("$OUT/prefix/bin/bertc" --version | sed -n 's/^bertc \([^ ]*\) .*/\1/p')
grep -q "^\.TH BERTC 1 .*\"bertc $version\"" "$MAN" ||
    { echo "install-check: FAILED: $MAN does not say bertc $version"; exit 1; }
for cmd in $("$OUT/prefix/bin/bertc" help | sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p'); do
    grep -Eq "^\.SS \".*bertc $cmd([ ,\"]|\$)" "$MAN" ||
        { echo "install-check: FAILED: $MAN has no section for bertc $cmd"; exit 1; }
done
# Every flag of every `bertc CMD --help` has its entry in the page (the troff
# of an option's tag: \fB\%\-\-flag\fR, cli/man.c).
n_flags=0
for cmd in $("$OUT/prefix/bin/bertc" help | sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p'); do
    for flag in $("$OUT/prefix/bin/bertc" "$cmd" --help | sed -n 's/^  \(--[a-z0-9-]*\).*/\1/p'); do
        tag=$(printf '%s' "$flag" | sed 's/-/\\-/g')
        grep -qF "\\fB\\%$tag\\fR" "$MAN" ||
            { echo "install-check: FAILED: $MAN lacks bertc $cmd $flag"; exit 1; }
        n_flags=$((n_flags + 1))
    done
done
echo "install-check: the manual page has every one of the $n_flags flags bertc CMD --help lists"
if command -v groff >/dev/null 2>&1; then
    warnings=$(LC_ALL=C.UTF-8 groff -man -Tutf8 -ww -z "$MAN" 2>&1)
    [ -z "$warnings" ] || { echo "install-check: FAILED: groff on $MAN: $warnings"; exit 1; }
    echo "install-check: the manual page renders without warnings"
fi
if command -v man >/dev/null 2>&1; then
    MANPATH="$OUT/prefix/share/man" man bertc 2>/dev/null | grep -q "bertc encode" ||
        { echo "install-check: FAILED: man bertc does not find the installed page"; exit 1; }
    echo "install-check: man bertc finds the installed page"
fi
# The porting kit (docs/porting.md): installed, and firmware builds from the
# prefix alone. From a directory outside the clone, with nothing copied from
# it: the installed bertc trains a tiny classifier on the installed data,
# quantises and exports it; the kit's Makefile builds the firmware with
# arm-none-eabi-gcc (when there is one), it runs under qemu-system-arm (when
# there is one) and prints the logits the same main.c prints on the host.
KIT="$OUT/prefix/share/bertc/firmware"
for f in bertc.mk main.c board.h texts.c host/board.c cortex-m4f/Makefile cortex-m4f/startup.c \
         cortex-m4f/link.ld src/bertc.h src/zoo/models/model_const.c src/tensor/row_kernels_simd.inc; do
    [ -f "$KIT/$f" ] || { echo "install-check: FAILED: the porting kit has no $KIT/$f"; exit 1; }
done
# Every doc that a command's --help or the manual page cites is installed.
cited=$(for c in $("$OUT/prefix/bin/bertc" help | awk '/^commands:/ { on = 1; next }
                                                     on && /^  [a-z]/ { print $1 }'); do
            "$OUT/prefix/bin/bertc" help "$c"; done | cat - "$MAN" |
        grep -o 'docs/[a-z_/-]*\.md' | sort -u)
for d in $cited porting.md; do
    f="$OUT/prefix/share/doc/bertc/${d#docs/}"
    [ -f "$f" ] || { echo "install-check: FAILED: $d (cited by --help or man) is not installed"; exit 1; }
done
echo "install-check: the docs --help and man cite are installed ($(echo $cited | wc -w) cited)"
hosted=$(find "$KIT/src" -name '*_file.c' -o -name 'train.c' -o -name 'dataset*.c')
[ -z "$hosted" ] || { echo "install-check: FAILED: hosted-only sources in the kit: $hosted"; exit 1; }
echo "install-check: the porting kit is installed ($(find "$KIT/src" -name '*.c' | wc -l) core sources)"
if ! command -v arm-none-eabi-gcc >/dev/null 2>&1; then
    echo "install-check: no arm-none-eabi-gcc: the kit's firmware build is not tried"
    exit 0
fi
FW=$(mktemp -d)
B="$OUT/prefix/bin/bertc"
(
    set -e
    cd "$FW"
    DATA="$OUT/prefix/share/bertc/data/topics.tsv"
    { printf 'label\ttext\n'; head -n 200 "$DATA"; } > train.tsv
    head -n 200 "$DATA" | cut -f2- > corpus.txt
    "$B" vocab --train corpus.txt --size 300 --out vocab.txt
    printf '%s\n' '{"architectures": ["BertForSequenceClassification"], "vocab_size": 300,' \
        '"hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,' \
        '"intermediate_size": 32, "max_position_embeddings": 16}' > config.json
    "$B" finetune --config config.json --vocab vocab.txt --train train.tsv --out fp32 \
        --max-len 16 --steps 2 --quiet
    "$B" quantize --model fp32 --out int8
    "$B" export-c --model int8 --out model
    make -j2 -f "$KIT/cortex-m4f/Makefile" MODEL=model OUT=fw BERTC_WARN="-Wall -Wextra -Werror"
    # shellcheck disable=SC2086
    cc -std=c11 -Wall -Wextra -Werror -I"$KIT" -Imodel "$KIT/main.c" "$KIT/host/board.c" \
        model/model.c model/model_data.c "$KIT/texts.c" $FLAGS -o host
    BERTC_ISA=scalar ./host > host.log
) > "$OUT/kit.log" 2>&1 ||
    { tail -n 20 "$OUT/kit.log"; rm -rf "$FW";
      echo "install-check: FAILED: the porting kit's firmware from the prefix alone"; exit 1; }
echo "install-check: the kit's Cortex-M4F firmware built from the prefix alone in $FW:" \
     "$(arm-none-eabi-size "$FW/fw/firmware.elf" | awk 'NR == 2 { print "text " $1 " B, data " $2 " B, bss " $3 " B" }')"
if command -v qemu-system-arm >/dev/null 2>&1; then
    timeout 300 qemu-system-arm -M mps2-an386 -nographic -semihosting-config \
        enable=on,target=native -kernel "$FW/fw/firmware.elf" > "$OUT/kit-firmware.log" 2>&1 || true
    grep '^text ' "$FW/host.log" | sed 's/ ticks [0-9]*$//' > "$OUT/kit-host.texts"
    grep '^text ' "$OUT/kit-firmware.log" | sed 's/ ticks [0-9]*$//' > "$OUT/kit-firmware.texts"
    if [ "$(wc -l < "$OUT/kit-host.texts")" = 3 ] &&
       cmp -s "$OUT/kit-host.texts" "$OUT/kit-firmware.texts"; then
        echo "install-check: it runs under qemu-system-arm and prints the host build's logits"
    else
        cat "$OUT/kit-firmware.log"; rm -rf "$FW"
        echo "install-check: FAILED: the kit's firmware does not print the host build's logits"
        exit 1
    fi
fi
rm -rf "$FW"
