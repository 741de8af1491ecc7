#!/bin/sh
# tools/embedded_demo.sh CROSS_DIR — the firmware demo of `make cross-test`
# (issue #17; docs/porting.md is the same flow for a porter), run by
# tools/cross_test.sh after it built CROSS_DIR/{aarch64,mips}/libbertc.a.
#
#   1. `make install` into CROSS_DIR/demo/prefix: every later step uses only
#      that prefix (its bertc, and the porting kit share/bertc/firmware/).
#   2. data/topics.tsv split as examples/topics.c does: the first 80 % train,
#      the last 20 % (229 texts) held out.
#   3. `bertc vocab --size 1000` on the training texts; `bertc finetune
#      --config` from scratch: BertForSequenceClassification, H 64, 2 layers,
#      4 heads, I 128, 32 positions; the host's float32 accuracy on the
#      held-out texts with `bertc predict --max-len 32` (Y).
#   4. `bertc quantize --embeddings` (int8 Linear weights and word
#      embeddings), `bertc export-c --max-len 32` twice: packed for the
#      m4dsp int8 path (the Cortex-M4 DSP kernels) and for the scalar one.
#   5. Both built into firmware with the kit (cortex-m4f/Makefile), the 229
#      texts embedded as const data (texts.c), run under qemu-system-arm
#      mps2-an386 with -icount shift=0 (one virtual ns per instruction).
#   6. The m4dsp export (the firmware's own sources) built with the same
#      main.c for the host (the installed libbertc.a), aarch64 and big-endian
#      mips (qemu-user), which run its weights on the scalar path: every
#      text's logits, as float bits, must be the host's on every target and
#      in both firmwares (m4dsp sums exactly what scalar sums).
#   7. The firmware's accuracy X against the labels, its flash (text + data
#      without the texts) and RAM (arena high water + stack high water +
#      .data/.bss without the arena + newlib's heap), and instructions per
#      classification on each int8 path, from the board's timer, after a
#      loop of known length checked the conversion. Fails when RAM > 64 KiB,
#      flash > 512 KiB, |X - Y| > 2 points, or any logit differs.
set -eu

CROSS=${1:?usage: tools/embedded_demo.sh CROSS_DIR}
D=$CROSS/demo
PREFIX=$(pwd)/$D/prefix
BERTC=${BERTC:-$PREFIX/bin/bertc}
KIT=$PREFIX/share/bertc/firmware
MAX_LEN=32
RAM_MAX=65536
FLASH_MAX=524288
FAILED=0

fail() { echo "cross-test: FAILED: $*"; FAILED=1; }

rm -rf "$D"
mkdir -p "$D"
make -s --no-print-directory install PREFIX="$PREFIX" >/dev/null

# 2. the split
n=$(wc -l < data/topics.tsv)
n_train=$((n * 4 / 5))
{ printf 'label\ttext\n'; head -n "$n_train" data/topics.tsv; } > "$D/train.tsv"
head -n "$n_train" data/topics.tsv | cut -f2- > "$D/corpus.txt"
tail -n +"$((n_train + 1))" data/topics.tsv > "$D/held_out.tsv"
cut -f2- "$D/held_out.tsv" > "$D/held_out.txt"
n_held=$(wc -l < "$D/held_out.txt")

# 3. vocabulary, model, float32 accuracy
"$BERTC" vocab --train "$D/corpus.txt" --size 1000 --out "$D/vocab.txt" 2> "$D/vocab.log"
cat > "$D/config.json" <<EOF
{"architectures": ["BertForSequenceClassification"], "model_type": "bert",
 "vocab_size": 1000, "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
 "intermediate_size": 128, "max_position_embeddings": $MAX_LEN, "type_vocab_size": 2,
 "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
 "layer_norm_eps": 1e-12, "initializer_range": 0.02}
EOF
start=$(date +%s)
"$BERTC" finetune --config "$D/config.json" --vocab "$D/vocab.txt" --train "$D/train.tsv" \
    --task seq-cls --out "$D/fp32" --max-len $MAX_LEN --epochs 40 --batch-size 32 --lr 2e-3 \
    --threads 1 --seed 17 --quiet > "$D/finetune.log"
echo "cross-test: demo: trained the topics classifier (vocabulary 1000, H 64, 2 layers," \
     "$n_train texts) in $(($(date +%s) - start)) s"
"$BERTC" predict --model "$D/fp32" --input "$D/held_out.txt" --max-len $MAX_LEN \
    --batch-size 32 --threads 1 > "$D/fp32.predictions.tsv" 2> "$D/fp32.predict.log"
Y=$(cut -f1 "$D/fp32.predictions.tsv" | paste "$D/held_out.tsv" - |
    awk -F'\t' '{ right += ($1 == $NF); total++ } END { printf "%.1f", 100 * right / total }')

# 4. int8, exported for both int8 paths
"$BERTC" quantize --model "$D/fp32" --out "$D/int8" --embeddings > "$D/quantize.log"
for path in m4dsp scalar; do
    "$BERTC" export-c --model "$D/int8" --out "$D/src-$path" --int8-path $path \
        --max-len $MAX_LEN | sed 's/^/cross-test: demo: /'
done

# 5. the firmware, one per int8 path (one build of the core serves both)
python3 tools/embed_files.py "$D/texts.c" firmware_texts="$D/held_out.txt"
for path in m4dsp scalar; do
    make -s --no-print-directory -j2 -f "$KIT/cortex-m4f/Makefile" MODEL="$D/src-$path" \
        TEXTS="$D/texts.c" OUT="$D/fw-$path" BERTC_BUILD="$D/core-m4" \
        BERTC_WARN="-Wall -Wextra -Werror" > "$D/fw-$path.build.log"
    timeout 600 qemu-system-arm -M mps2-an386 -nographic -semihosting-config \
        enable=on,target=native -icount shift=0 -kernel "$D/fw-$path/firmware.elf" \
        > "$D/fw-$path.log" 2>&1 || fail "the $path firmware: $(tail -n 1 "$D/fw-$path.log")"
done

# 6. the reference lines: the firmware's own sources (src-m4dsp), main.c, on
# the host and qemu-user, where the scalar path reads the m4dsp-packed weights
# (the same layout: bertc_qgemm_same_layout)
HOST_SRC="$KIT/main.c $KIT/host/board.c $D/src-m4dsp/model.c $D/src-m4dsp/model_data.c $D/texts.c"
CFLAGS_HOST="-std=c11 -Wall -Wextra -Werror -O2 -I$KIT -I$D/src-m4dsp -I$PREFIX/include/bertc"
# shellcheck disable=SC2086
cc $CFLAGS_HOST $HOST_SRC -L"$PREFIX/lib" -lbertc -lm -lpthread -o "$D/host"
BERTC_ISA=scalar "$D/host" > "$D/host.log" 2>&1 || fail "the host build: $(tail -n 1 "$D/host.log")"
# shellcheck disable=SC2086
aarch64-linux-gnu-gcc $CFLAGS_HOST $HOST_SRC "$CROSS/aarch64/libbertc.a" -lm -lpthread \
    -o "$D/aarch64"
BERTC_ISA=scalar qemu-aarch64 -L /usr/aarch64-linux-gnu "$D/aarch64" > "$D/aarch64.log" 2>&1 || true
# shellcheck disable=SC2086
mips-linux-gnu-gcc $CFLAGS_HOST $HOST_SRC "$CROSS/mips/libbertc.a" -lm -lpthread -latomic \
    -o "$D/mips"
BERTC_ISA=scalar qemu-mips -L /usr/mips-linux-gnu "$D/mips" > "$D/mips.log" 2>&1 || true

# "text I: label K logits ..." without the ticks: what every build must print alike.
text_lines() { sed -n 's/^\(text [0-9]*: .*\) ticks [0-9]*$/\1/p' "$1"; }
text_lines "$D/host.log" > "$D/host.texts"
if [ "$(wc -l < "$D/host.texts")" != "$n_held" ]; then
    fail "the host build classified $(wc -l < "$D/host.texts") of $n_held texts"
fi
for t in fw-m4dsp fw-scalar aarch64 mips; do
    text_lines "$D/$t.log" > "$D/$t.texts"
    if cmp -s "$D/host.texts" "$D/$t.texts"; then
        echo "cross-test: demo: $t: the logits of the $n_held texts equal the host int8 build's"
    else
        fail "$t: its logits differ from the host int8 build's:"
        diff "$D/host.texts" "$D/$t.texts" | head -4
    fi
done

# 7. accuracy, flash, RAM, instructions
LABELS=$(python3 -c 'import json, sys; m = json.load(open(sys.argv[1]))["id2label"]
print(" ".join(m[str(i)] for i in range(len(m))))' "$D/fp32/config.json")
X=$(sed -n 's/^text [0-9]*: label \([0-9]*\) .*/\1/p' "$D/fw-m4dsp.log" |
    paste "$D/held_out.tsv" - | awk -F'\t' -v labels="$LABELS" '
    BEGIN { split(labels, name, " ") }
    { right += ($1 == name[$NF + 1]); total++ } END { printf "%.1f", 100 * right / total }')

ELF=$D/fw-m4dsp/firmware.elf
TEXTS_BYTES=$((0x$(arm-none-eabi-nm -S "$ELF" | awk '$4 == "firmware_texts" { print $2 }')))
FLASH=$(arm-none-eabi-size "$ELF" | awk -v texts="$TEXTS_BYTES" 'NR == 2 { print $1 + $2 - texts }')
echo "cross-test: demo: flash = text + data of firmware.elf (code, newlib-nano, the model's" \
     "const weights, config and tokenizer) without the $n_held texts ($TEXTS_BYTES B of const data)"
# shellcheck disable=SC2046
set -- $(sed -n 's/^ram: arena \([0-9]*\) B of \([0-9]*\), stack \([0-9]*\) B, static \([0-9]*\) B, heap \([0-9]*\) B$/\1 \2 \3 \4 \5/p' "$D/fw-m4dsp.log") 0 0 0 0 0
RAM=$(($1 + $3 + $4 + $5))
echo "cross-test: demo: ram = arena high water $1 B (of $2 reserved) + stack high water $3 B" \
     "+ static data $4 B (.data + .bss without the arena) + heap $5 B"

# The conversion ticks -> instructions, checked on a loop of 2,000,000.
NS_PER_TICK=$(sed -n 's/^spin: .* ticks at \([0-9]*\) Hz$/\1/p' "$D/fw-m4dsp.log" |
    awk '{ if ($1 > 0) print 1e9 / $1 }')
SPIN=$(sed -n 's/^spin: 1000000 turns, \([0-9]*\) ticks .*/\1/p' "$D/fw-m4dsp.log" |
    awk -v ns="$NS_PER_TICK" '{ print $1 * ns }')
if awk -v s="${SPIN:-0}" -v ns="${NS_PER_TICK:-0}" \
       'BEGIN { d = s - 2000000; exit !(ns > 0 && (d < 0 ? -d : d) <= 2 * ns) }'; then
    echo "cross-test: demo: -icount check: a loop of 2000000 instructions counted as $SPIN" \
         "($NS_PER_TICK instructions a tick of the 25 MHz timer)"
else
    fail "-icount check: a loop of 2000000 instructions counted as ${SPIN:-nothing}"
fi
for path in m4dsp scalar; do
    sed -n 's/^text [0-9]*: .* ticks \([0-9]*\)$/\1/p' "$D/fw-$path.log" |
        awk -v ns="${NS_PER_TICK:-0}" '{ s += $1 } END { printf "%.0f\n", NR ? s * ns / NR : 0 }' \
        > "$D/fw-$path.instructions"
    echo "cross-test: cortex-m4f int8 classifier: $(cat "$D/fw-$path.instructions") instructions" \
         "per classification (mean of $n_held, -icount), $path int8 path"
done
awk -v a="$(cat "$D/fw-m4dsp.instructions")" -v b="$(cat "$D/fw-scalar.instructions")" \
    'BEGIN { if (b > 0) printf "cross-test: demo: the m4dsp path runs %.2fx the scalar path'"'"'s instructions\n", a / b }'

echo "cross-test: cortex-m4f int8 classifier: flash $FLASH B, ram $RAM B, accuracy $X %" \
     "(host fp32 $Y %)"
[ "$RAM" -le $RAM_MAX ] || fail "ram $RAM B > $RAM_MAX B"
[ "$FLASH" -le $FLASH_MAX ] || fail "flash $FLASH B > $FLASH_MAX B"
awk -v x="$X" -v y="$Y" 'BEGIN { d = x - y; exit !(d <= 2 && d >= -2) }' ||
    fail "accuracy $X % is more than 2 points from the host's float32 $Y %"
exit $FAILED
