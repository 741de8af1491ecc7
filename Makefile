# bertc — build, test, sanitize. See README.md for the two commands that matter:
#   make demo    the main job
#   make test    the Criterion test suite (installs libcriterion-dev when missing)
#
# Sources are found by wildcard: a new .c file in a layer directory joins
# libbertc.a, a new test/test_*.c joins the test binary, a new bench/*.c becomes
# build/bench/<name>. No list here has to be kept in step by hand.

CC       ?= cc
BUILD    ?= build
OPT      ?= -O2
CFLAGS   ?=
WARN     := -Wall -Wextra -Werror
# -std=c11 (not gnu11): ISO mode never contracts a*b+c into an FMA behind our back.
BASE_CFLAGS := -std=c11 $(WARN) $(OPT) -g -D_POSIX_C_SOURCE=200809L -I. -MMD -MP
LDLIBS   := -lm

ifeq ($(NO_THREADS),1)
  BASE_CFLAGS += -DBERTC_NO_THREADS
else
  LDLIBS += -lpthread
endif

ALL_CFLAGS = $(BASE_CFLAGS) $(CFLAGS)

LIB_SRC   := $(wildcard tensor/*.c autograd/*.c nn/*.c zoo/*.c)

# FREESTANDING=1: the core for bare metal (docs/embedded.md). No stdio, heap
# or threads: it leaves out the files that need a filesystem or a terminal
# (*_file.c, `bertc run`, the trainer's progress bar, SVG output), and builds
# only the library. Use with NO_THREADS=1 and a cross CC, e.g.
#   make FREESTANDING=1 NO_THREADS=1 CC=arm-none-eabi-gcc AR=arm-none-eabi-ar lib
HOSTED_ONLY := %_file.c zoo/run.c zoo/train.c zoo/svg.c
ifeq ($(FREESTANDING),1)
  BASE_CFLAGS += -DBERTC_FREESTANDING
  LIB_SRC := $(filter-out $(HOSTED_ONLY),$(LIB_SRC))
endif
LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
LIB       := $(BUILD)/libbertc.a

CLI_SRC   := $(wildcard cli/*.c)
CLI_OBJ   := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)
CLI       := $(if $(CLI_SRC),$(BUILD)/bertc)

EXAMPLE_SRC := $(wildcard examples/*.c)
EXAMPLES    := $(EXAMPLE_SRC:examples/%.c=$(BUILD)/examples/%)

BENCH_SRC := $(wildcard bench/*.c)
BENCHES   := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)

TEST_SRC  := $(wildcard test/test_*.c test/support_*.c)
TEST_OBJ  := $(TEST_SRC:%.c=$(BUILD)/obj/%.o)
TEST_BIN  := $(BUILD)/test/bertc_tests
# Count every malloc the library makes during a test (test/malloc_count.c).
TEST_LDFLAGS := -Wl,--wrap=malloc -Wl,--wrap=calloc -Wl,--wrap=realloc

.PHONY: all lib test check-criterion sanitize bench demo clean cross-test freestanding-check

all: $(LIB) $(CLI) $(EXAMPLES)

lib: $(LIB)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@
	$(AR) rcs $@ $^

$(BUILD)/bertc: $(CLI_OBJ) $(LIB)
	$(CC) $(ALL_CFLAGS) $(CLI_OBJ) $(LIB) $(LDLIBS) -o $@

$(BUILD)/examples/%: $(BUILD)/obj/examples/%.o $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $< $(LIB) $(LDLIBS) -o $@

# Benchmarks may dlopen a reference library (OpenBLAS) at run time; the
# library itself never links one.
$(BUILD)/bench/%: $(BUILD)/obj/bench/%.o $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $< $(LIB) $(LDLIBS) -ldl -o $@

bench: $(BENCHES)

# --- tests -----------------------------------------------------------------

CRITERION_PKG := libcriterion-dev
check-criterion:
	@if ! printf '#include <criterion/criterion.h>\n' | $(CC) -E -x c - >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "Criterion is missing: installing $(CRITERION_PKG) with apt-get"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(CRITERION_PKG)) \
	      || { echo "apt-get install $(CRITERION_PKG) failed"; exit 1; }; \
	  else \
	    echo "Criterion is missing. Install it with:"; \
	    echo "    sudo apt-get install -y $(CRITERION_PKG)"; \
	    exit 1; \
	  fi; \
	fi

# test/test_examples.c and test/test_cli.c run the built examples and CLI.
$(TEST_OBJ): ALL_CFLAGS += -DBERTC_EXAMPLES_DIR='"$(BUILD)/examples"' -DBERTC_CLI='"$(BUILD)/bertc"'

$(TEST_BIN): $(TEST_OBJ) $(LIB) $(EXAMPLES) $(CLI)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(TEST_OBJ) $(LIB) $(TEST_LDFLAGS) -lcriterion $(LDLIBS) -o $@

# Tests find their fixtures relative to the repository root. `set -f` keeps
# the shell from globbing TEST_ARGS='--filter zoo/*' against the zoo/ folder.
test: check-criterion
	$(MAKE) --no-print-directory $(TEST_BIN)
	set -f; ./$(TEST_BIN) $(TEST_ARGS)

# The same suite under AddressSanitizer + UndefinedBehaviorSanitizer, in its
# own build tree; any report fails the run.
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
sanitize: check-criterion
	$(MAKE) --no-print-directory BUILD=$(BUILD)/san OPT=-O1 CFLAGS="$(SAN_FLAGS)" $(BUILD)/san/test/bertc_tests
	set -f; ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ./$(BUILD)/san/test/bertc_tests $(TEST_ARGS)

# Cross targets (SPEC §10, docs/embedded.md): the portable runner on aarch64
# (NEON) and big-endian mips under qemu-user and on a Cortex-M4F under
# qemu-system-arm; freestanding-check only builds the bare-metal core and nm-
# checks it. Both install their packages with apt-get when missing (as root).
cross-test:
	sh tools/cross_test.sh $(BUILD)/cross

freestanding-check:
	sh tools/cross_test.sh $(BUILD)/cross freestanding-check

# The main job: train a small BERT topic classifier from scratch on real text
# (about a minute on 2 cores), then use it. Writes build/demo/.
demo: all
	./$(BUILD)/examples/topics

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
