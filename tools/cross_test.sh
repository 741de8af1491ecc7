#!/bin/sh
# tools/cross_test.sh — `make cross-test` and `make freestanding-check` (SPEC §10,
# docs/embedded.md).
#
#   tools/cross_test.sh BUILD_DIR [freestanding-check]
#
# Builds the portable test runner (test/portable/) for the host, aarch64
# Linux (NEON), big-endian mips Linux and a bare-metal Cortex-M4F, runs each
# (qemu-aarch64 / qemu-mips user mode, qemu-system-arm mps2-an386 with
# semihosting), checks every run ends in "N passed, 0 failed" and prints the
# same logits as the host (|x - host| <= 1e-5 + 1e-5 |host|), proves with nm
# that the freestanding core objects reference no malloc, free, stdio or
# pthread symbol, then runs the firmware demo (tools/embedded_demo.sh). Installs the cross packages with apt-get when missing and
# the user is root; when they cannot be installed it says so and exits 0.
set -eu

OUT=${1:?usage: tools/cross_test.sh BUILD_DIR [freestanding-check]}
MODE=${2:-all}
PACKAGES="gcc-aarch64-linux-gnu libc6-dev-arm64-cross gcc-mips-linux-gnu libc6-dev-mips-cross
qemu-user gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm"
TOOLS="aarch64-linux-gnu-gcc mips-linux-gnu-gcc qemu-aarch64 qemu-mips arm-none-eabi-gcc
qemu-system-arm"
M4="-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16"
# arm-none-eabi's int32_t is `long`: every int32_t printed with %d is cast to
# int, so the Cortex-M build keeps the format warning (as an error) too.
M4_CFLAGS="$M4"
CFLAGS_RUNNER="-std=c11 -Wall -Wextra -Werror -O2 -g -D_POSIX_C_SOURCE=200809L -I."
FIXTURE=test/data/zoo/bert_seqcls_single

missing() {
    for t in $TOOLS; do command -v "$t" >/dev/null 2>&1 || { echo "$t"; return; }; done
}

if [ -n "$(missing)" ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "cross-test: installing $(echo $PACKAGES) with apt-get"
        if ! (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
                  $PACKAGES >/dev/null); then
            echo "cross-test: SKIPPED: apt-get could not install the cross packages"
            exit 0
        fi
    else
        echo "cross-test: SKIPPED: $(missing) is missing. Install the cross packages with:"
        echo "    sudo apt-get install -y $(echo $PACKAGES)"
        exit 0
    fi
fi

mkdir -p "$OUT"
# The tiny classifier's files as C arrays (no filesystem on the targets).
python3 tools/embed_files.py "$OUT/tiny_model.c" tiny_config=$FIXTURE/config.json \
    tiny_weights=$FIXTURE/weights.safetensors tiny_inputs=$FIXTURE/inputs.safetensors \
    tiny_expected=$FIXTURE/expected.safetensors
RUNNER_SRC="test/portable/*.c $OUT/tiny_model.c"

# The freestanding core for the Cortex-M4F, and its nm check.
make -s --no-print-directory BUILD="$OUT/cortex-m4" FREESTANDING=1 NO_THREADS=1 \
    CC=arm-none-eabi-gcc AR=arm-none-eabi-ar CFLAGS="$M4_CFLAGS" lib
FORBIDDEN='^(malloc|calloc|realloc|free|_(malloc|calloc|realloc|free)_r|[a-z]*printf|f?puts|fopen|fclose|fread|fwrite|fflush|fputc|putchar|_impure_ptr|pthread_[a-z_]*)$'
BAD=$(arm-none-eabi-nm -u "$OUT/cortex-m4/libbertc.a" | awk '{print $2}' | grep -E "$FORBIDDEN" | sort -u || true)
OBJECTS=$(arm-none-eabi-ar t "$OUT/cortex-m4/libbertc.a" | wc -l)
if [ -n "$BAD" ]; then
    echo "freestanding-check: FAILED: the core objects reference: $(echo $BAD)"
    exit 1
fi
echo "freestanding-check: $OBJECTS core objects, no malloc/free/stdio/pthread symbols (nm -u)"
# ... and every symbol they define carries the bertc_ prefix (as `make
# check-symbols` on the host library): a firmware's own names never collide.
UNPREFIXED=$(arm-none-eabi-nm -g --defined-only "$OUT/cortex-m4/libbertc.a" | awk 'NF == 3 && $3 !~ /^bertc_/ { print $3 }' | sort -u)
if [ -n "$UNPREFIXED" ]; then
    echo "freestanding-check: FAILED: symbols without the bertc_ prefix: $(echo $UNPREFIXED)"
    exit 1
fi
echo "freestanding-check: every symbol the core defines starts with bertc_"
# SPEC §2: NO_THREADS=1 and/or FREESTANDING=1 compile for bare metal — each
# alone too (FREESTANDING implies NO_THREADS; NO_THREADS alone is the hosted
# library over newlib's stdio, files and all).
for flags in "FREESTANDING=1" "NO_THREADS=1"; do
    make -s --no-print-directory BUILD="$OUT/cortex-m4-$(echo "$flags" | tr 'A-Z=1' 'a-z__')" \
        $flags CC=arm-none-eabi-gcc AR=arm-none-eabi-ar CFLAGS="$M4_CFLAGS" lib ||
        { echo "freestanding-check: FAILED: $flags does not build for the Cortex-M4F"; exit 1; }
done
echo "freestanding-check: FREESTANDING=1 alone and NO_THREADS=1 alone also build for the Cortex-M4F"
[ "$MODE" = freestanding-check ] && exit 0

# run NAME LOG COMMAND...: run a target's runner, keep its output, check the tally.
FAILED=0
run() {
    name=$1 log=$2
    shift 2
    start=$(date +%s.%N)
    "$@" >"$log" 2>&1 || true
    secs=$(echo "$start $(date +%s.%N)" | awk '{printf "%.1f", $2 - $1}')
    last=$(tail -n 1 "$log")
    case "$last" in
    *" passed, 0 failed") echo "cross-test: $name: $last (${secs} s)" ;;
    *) echo "cross-test: $name: FAILED: $last"; grep -E '^(FAIL|FATAL)' "$log" | head -5
       FAILED=1 ;;
    esac
}

# Every target's logits against the host's.
compare_logits() {
    name=$1 log=$2
    grep '^logits' "$OUT/host.log" >"$OUT/logits.host"
    grep '^logits' "$log" >"$OUT/logits.target" || true
    if paste -d' ' "$OUT/logits.host" "$OUT/logits.target" | awk '
        { for (i = 3; i <= 5; i++) { d = $i - $(i + 5); if (d < 0) d = -d;
              r = $i < 0 ? -$i : $i; if (d > 1e-5 + 1e-5 * r) bad = 1 } n++ }
        END { exit bad || n != 3 }'
    then echo "cross-test: $name: logits match the host's"
    else echo "cross-test: $name: FAILED: logits differ from the host's"; FAILED=1
    fi
}

make -s --no-print-directory BUILD="$OUT/host" NO_THREADS=1 lib
cc $CFLAGS_RUNNER -DBERTC_NO_THREADS $RUNNER_SRC "$OUT/host/libbertc.a" -lm -o "$OUT/host/runner"
run host "$OUT/host.log" "$OUT/host/runner"
grep '^logits' "$OUT/host.log"

make -s --no-print-directory BUILD="$OUT/aarch64" CC=aarch64-linux-gnu-gcc AR=aarch64-linux-gnu-ar lib
aarch64-linux-gnu-gcc $CFLAGS_RUNNER $RUNNER_SRC "$OUT/aarch64/libbertc.a" -lm -lpthread \
    -o "$OUT/aarch64/runner"
run "aarch64 (NEON, qemu-aarch64)" "$OUT/aarch64.log" \
    qemu-aarch64 -L /usr/aarch64-linux-gnu "$OUT/aarch64/runner"
compare_logits aarch64 "$OUT/aarch64.log"

make -s --no-print-directory BUILD="$OUT/mips" CC=mips-linux-gnu-gcc AR=mips-linux-gnu-ar lib
mips-linux-gnu-gcc $CFLAGS_RUNNER $RUNNER_SRC "$OUT/mips/libbertc.a" -lm -lpthread -latomic \
    -o "$OUT/mips/runner"
run "mips (big-endian, qemu-mips)" "$OUT/mips.log" qemu-mips -L /usr/mips-linux-gnu "$OUT/mips/runner"
compare_logits mips "$OUT/mips.log"

# Bare metal: newlib-nano, semihosting system calls (librdimon), our startup
# and linker script, the freestanding core.
arm-none-eabi-gcc $CFLAGS_RUNNER -DBERTC_FREESTANDING -DBERTC_NO_THREADS $M4 -Iexamples/firmware \
    --specs=nano.specs --specs=rdimon.specs -nostartfiles -T examples/firmware/cortex-m4f/link.ld \
    -Wl,--gc-sections -Wl,-Map="$OUT/cortex-m4/firmware.map" \
    $RUNNER_SRC examples/firmware/cortex-m4f/startup.c "$OUT/cortex-m4/libbertc.a" -lm \
    -o "$OUT/cortex-m4/firmware.elf"
run "Cortex-M4F (qemu-system-arm mps2-an386)" "$OUT/cortex-m4.log" timeout 300 \
    qemu-system-arm -M mps2-an386 -nographic -semihosting-config enable=on,target=native \
    -kernel "$OUT/cortex-m4/firmware.elf"
compare_logits Cortex-M4F "$OUT/cortex-m4.log"
grep -E '^(logits|memory|forward)' "$OUT/cortex-m4.log" | sed 's/^/cortex-m4: /'
arm-none-eabi-size "$OUT/cortex-m4/firmware.elf" "$OUT/cortex-m4/libbertc.a" 2>/dev/null | awk '
    NR == 1 || /firmware/ { print } !/firmware/ && NR > 1 { t += $1; d += $2; b += $3 }
    END { print "libbertc.a, all objects: text " t ", data " d ", bss " b }'

# The firmware demo (issue #17, tools/embedded_demo.sh): a topic classifier
# with a 1000-token vocabulary trained, quantised, exported with bertc
# export-c, built into firmware with the installed porting kit and run on the
# Cortex-M4F (and the same sources on the host, aarch64 and mips) on 229
# held-out texts: logits bit for bit, accuracy, flash, RAM, instructions.
sh tools/embedded_demo.sh "$OUT" || FAILED=1

if [ "$FAILED" = 0 ]; then echo "cross-test: all targets passed"; else echo "cross-test: FAILED"; exit 1; fi
