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

# FREESTANDING=1 has no threads either (bare metal has no pthreads).
ifeq ($(FREESTANDING),1)
  NO_THREADS := 1
endif
ifeq ($(NO_THREADS),1)
  BASE_CFLAGS += -DBERTC_NO_THREADS
else
  LDLIBS += -lpthread
endif

ALL_CFLAGS = $(BASE_CFLAGS) $(CFLAGS)

LIB_SRC   := $(wildcard tensor/*.c autograd/*.c nn/*.c zoo/*/*.c)

# FREESTANDING=1: the core for bare metal (docs/embedded.md). No stdio, heap
# or threads (it implies NO_THREADS=1): it leaves out the files that need a
# filesystem or a terminal (*_file.c, `bertc run`, the trainer's
# progress bar, SVG output, the fine-tuning data readers and metrics), and
# builds only the library.
# With a cross CC, e.g.
#   make FREESTANDING=1 CC=arm-none-eabi-gcc AR=arm-none-eabi-ar lib
HOSTED_ONLY := %_file.c zoo/models/run.c zoo/train/train%.c zoo/pictures/svg.c zoo/train/dataset.c \
  zoo/train/dataset_squad.c zoo/train/metrics.c zoo/text/vocab_train.c zoo/train/finetune%.c \
  zoo/train/loss_curve.c zoo/train/out_dir.c zoo/train/pretrain%.c zoo/train/naive_bayes.c
ifeq ($(FREESTANDING),1)
  # One section per function and object: a firmware linked with
  # -Wl,--gc-sections keeps only what its model reaches (docs/embedded.md).
  BASE_CFLAGS += -DBERTC_FREESTANDING -ffunction-sections -fdata-sections
  LIB_SRC := $(filter-out $(HOSTED_ONLY),$(LIB_SRC))
endif
LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
LIB       := $(BUILD)/libbertc.a

CLI_SRC   := $(wildcard cli/*.c)
CLI_OBJ   := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)
# The CLI without its main (cli/bertc.c): the flag parsers and `bertc
# attention`, which the tests and fuzz targets call directly (cli/cli.h).
CLI_PARTS := $(filter-out $(BUILD)/obj/cli/bertc.o,$(CLI_OBJ))
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
# Fail (or be killed at) any file-system call of the atomic save
# (test/support_io_fault.c).
TEST_LDFLAGS += -Wl,--wrap=open,--wrap=write,--wrap=fchmod,--wrap=fsync,--wrap=close,--wrap=rename
# Count the tokenizer's calls (test/support_tokenizer_count.c).
TEST_LDFLAGS += -Wl,--wrap=bertc_tokenizer_encode

.PHONY: mpi mpi-test all lib test check-criterion check-symbols check-layers sanitize bench bench-refs demo demo-int8 pretrained clean cross-test freestanding-check check-clang fuzz fuzzers \
        check-valgrind valgrind install install-check browser-test man

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

# The reference libraries build/bench/gemm --compare dlopens (OpenBLAS,
# oneDNN, BLIS): installed from Debian when missing and root.
bench-refs:
	sh bench/install_refs.sh

# --- tests -----------------------------------------------------------------

# A `bertc explain` page for every architecture, opened in headless Chromium
# (installed with apt-get when missing and root): no console error, nothing
# loaded besides the page, a screenshot that is not blank in
# build/browser-test/NAME.png (tools/browser_test.sh).
browser-test: $(CLI)
	sh tools/browser_test.sh

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

# A throw-away architecture added as a library author adds one
# (docs/adding-a-model.md): its file, test/data/throwaway/toy_arch.c, and one
# line in a copy of zoo/models/architectures.c, linked into a bertc of its
# own that test/test_throwaway.c runs (run, predict, explain, finetune,
# summary). The library and build/bertc never see it.
TOY_DIR := $(BUILD)/throwaway
TOY_CLI := $(TOY_DIR)/bertc
$(TOY_DIR)/architectures.c: zoo/models/architectures.c
	@mkdir -p $(dir $@)
	awk '/end of the architectures/ { print "    X(bertc_arch_throwaway) \\" } { print }' $< > $@
$(BUILD)/obj/throwaway/architectures.o: $(TOY_DIR)/architectures.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@
$(BUILD)/obj/throwaway/toy_arch.o: test/data/throwaway/toy_arch.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@
$(TOY_CLI): $(CLI_OBJ) $(filter-out %/zoo/models/architectures.o,$(LIB_OBJ)) \
            $(BUILD)/obj/throwaway/architectures.o $(BUILD)/obj/throwaway/toy_arch.o
	$(CC) $(ALL_CFLAGS) $^ $(LDLIBS) -o $@

# test/test_examples.c and test/test_cli.c run the built examples and CLI.
$(TEST_OBJ): ALL_CFLAGS += -DBERTC_EXAMPLES_DIR='"$(BUILD)/examples"' -DBERTC_CLI='"$(BUILD)/bertc"' \
    -DBERTC_TOY_CLI='"$(TOY_CLI)"' -DBERTC_TOY_TABLE='"$(TOY_DIR)/architectures.c"'

$(TEST_BIN): $(TEST_OBJ) $(CLI_PARTS) $(LIB) $(EXAMPLES) $(CLI) $(TOY_CLI)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(TEST_OBJ) $(CLI_PARTS) $(LIB) $(TEST_LDFLAGS) -lcriterion $(LDLIBS) -o $@

# The manual page, docs/bertc.1, is generated from the command tables that
# `bertc CMD --help` prints (cli/man.c): after changing a command or a flag,
# `make man` writes it again and the change is committed with the page.
# test/test_cli_man.c fails while the committed page differs from what
# `bertc help --man` prints. (Committed, so a cross build installs it too.)
man: $(CLI)
	$(CLI) help --man > docs/bertc.1.tmp && mv docs/bertc.1.tmp docs/bertc.1

# Tests find their fixtures relative to the repository root. `set -f` keeps
# the shell from globbing TEST_ARGS='--filter zoo/*' against the zoo/ folder.
test: check-criterion
	$(MAKE) --no-print-directory $(TEST_BIN) check-symbols check-layers
	set -f; ./$(TEST_BIN) $(TEST_ARGS)

# Every external symbol of libbertc.a starts with bertc_, so none collides
# with a firmware's or an application's own (a `gemm`, a `checkpoint_save`):
# nm lists the symbols the archive defines; any other name fails the build.
NM ?= nm
check-symbols: $(LIB)
	@bad=$$($(NM) -g --defined-only $(LIB) | awk 'NF == 3 && $$3 !~ /^bertc_/ { print $$3 }' | sort -u); \
	if [ -n "$$bad" ]; then \
	  echo "check-symbols: $(LIB) exports names without the bertc_ prefix:"; echo "$$bad" | head -20; exit 1; \
	fi; \
	echo "check-symbols: all $$($(NM) -g --defined-only $(LIB) | awk 'NF == 3' | wc -l) external symbols of $(LIB) start with bertc_"

# No layer includes a higher one: every #include of tensor/, autograd/, nn/,
# zoo/*/, cli/ and bertc.h against the table of docs/architecture.md, which
# tools/check_layers.sh reads (test/test_layers.c checks that it fails when
# it should).
check-layers:
	@sh tools/check_layers.sh .

# The same suite under AddressSanitizer + UndefinedBehaviorSanitizer, in its
# own build tree; any report fails the run.
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
sanitize: check-criterion
	$(MAKE) --no-print-directory BUILD=$(BUILD)/san OPT=-O1 CFLAGS="$(SAN_FLAGS)" $(BUILD)/san/test/bertc_tests
	set -f; ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 LSAN_OPTIONS=suppressions=$(CURDIR)/test/lsan.supp \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ./$(BUILD)/san/test/bertc_tests $(TEST_ARGS)

# --- fuzzing (SPEC §8) -------------------------------------------------------
# One libFuzzer target per parser in test/fuzz/fuzz_*.c (not test_*.c: the
# Criterion binary never sees them), built with clang, ASan and UBSan in
# $(BUILD)/fuzz. `make fuzz FUZZ_SECONDS=N` runs each for N seconds from its
# committed seeds (test/fuzz/corpus/<target>/); what it discovers goes to
# $(BUILD)/fuzz/corpus/<target>/ and a crashing input to
# $(BUILD)/fuzz/crash-<target>-*. A single allocation above 256 MB fails the
# run: no input of a few KB may make a parser ask for that much.
FUZZ_SECONDS ?= 60
FUZZ_CC      ?= clang
FUZZ_SRC     := $(wildcard test/fuzz/fuzz_*.c)
FUZZ_NAMES   := $(FUZZ_SRC:test/fuzz/%.c=%)
FUZZ_FLAGS   := -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all \
                -fno-omit-frame-pointer
FUZZ_RUN     := -max_total_time=$(FUZZ_SECONDS) -timeout=10 -malloc_limit_mb=256 \
                -rss_limit_mb=2048 -print_final_stats=1

check-clang:
	@if ! command -v $(FUZZ_CC) >/dev/null; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "$(FUZZ_CC) is missing: installing clang with apt-get"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang) \
	      || { echo "apt-get install clang failed"; exit 1; }; \
	  else \
	    echo "$(FUZZ_CC) (with libFuzzer) is missing. Install it with:"; \
	    echo "    sudo apt-get install -y clang"; \
	    exit 1; \
	  fi; \
	fi

# Inside the $(BUILD)/fuzz tree: link each target with libFuzzer's main (and
# the CLI's parts, for the targets that parse its flags).
$(BUILD)/fuzzers/%: $(BUILD)/obj/test/fuzz/%.o $(CLI_PARTS) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fsanitize=fuzzer $< $(CLI_PARTS) $(LIB) $(LDLIBS) -o $@

fuzzers: check-clang
	$(MAKE) --no-print-directory BUILD=$(BUILD)/fuzz CC=$(FUZZ_CC) OPT=-O1 \
	  CFLAGS="$(FUZZ_FLAGS)" $(FUZZ_NAMES:%=$(BUILD)/fuzz/fuzzers/%)

fuzz: fuzzers
	@for t in $(FUZZ_NAMES); do \
	  mkdir -p $(BUILD)/fuzz/corpus/$$t; \
	  echo "fuzz: $$t for $(FUZZ_SECONDS) s"; \
	  ./$(BUILD)/fuzz/fuzzers/$$t $(FUZZ_RUN) -artifact_prefix=$(BUILD)/fuzz/crash-$$t- \
	    $(BUILD)/fuzz/corpus/$$t test/fuzz/corpus/$$t 2>$(BUILD)/fuzz/$$t.log \
	    || { tail -n 60 $(BUILD)/fuzz/$$t.log; echo "fuzz: $$t FAILED (log: $(BUILD)/fuzz/$$t.log)"; exit 1; }; \
	  grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb' $(BUILD)/fuzz/$$t.log; \
	done

# Cross targets (SPEC §10, docs/embedded.md): the portable runner on aarch64
# (NEON) and big-endian mips under qemu-user and on a Cortex-M4F under
# qemu-system-arm; freestanding-check only builds the bare-metal core and nm-
# checks it. Both install their packages with apt-get when missing (as root).
# The command linked with Open MPI, for data-parallel training under mpirun
# (docs/distributed.md): $(BUILD)/mpi/bertc. Only cli/mpi.c sees mpi.h (with
# BERTC_MPI); the library is compiled as always. tools/mpi_setup.sh installs
# Debian's libopenmpi-dev when missing and root, or prints the command.
ifeq ($(MPI),1)
  $(BUILD)/obj/cli/mpi.o: ALL_CFLAGS += -DBERTC_MPI \
      $(patsubst -I%,-isystem %,$(shell mpicc --showme:compile))
  $(BUILD)/obj/cli/mpi.o: Makefile
  LDLIBS += $(shell mpicc --showme:link)
endif
mpi:
	sh tools/mpi_setup.sh
	$(MAKE) --no-print-directory BUILD=$(BUILD)/mpi MPI=1 $(BUILD)/mpi/bertc

# mpirun -np 2 fine-tuning and pretraining against one process with the
# doubled batch, the resume rules, a rank that hangs; SKIPPED with the reason
# where Open MPI cannot be installed (tools/mpi_test.sh).
mpi-test: all
	sh tools/mpi_test.sh $(BUILD)

cross-test:
	sh tools/cross_test.sh $(BUILD)/cross

freestanding-check:
	sh tools/cross_test.sh $(BUILD)/cross freestanding-check

# --- valgrind ----------------------------------------------------------------
# The test suite and one `bertc run --grad` under memcheck: every process
# (Criterion runs each test in a child it execs, hence --trace-children) must
# end with "ERROR SUMMARY: 0 errors", leaks included (the checkpoint writers
# test/test_checkpoint_kill.c SIGKILLs, and children that exec a shell, write
# none). Shells and the programs
# tests start through them (examples, the CLI) are not traced: the CLI gets its
# own run below. The SIMD kernel suites (VALGRIND_SKIP) are left out: they
# allocate nothing of interest, take most of the time under valgrind, and
# `make sanitize` checks them with ASan (gemm_prepacked compares every ISA path
# bit for bit: minutes under valgrind; qgemm and bgemm run VNNI and BF16
# instructions valgrind cannot decode). test/valgrind.supp hides only the test
# framework's own buffers. Logs: $(BUILD)/valgrind/*.log.
VALGRIND_PKG  := valgrind
VALGRIND_SKIP ?= gemm|gemm_prepacked|qgemm|bgemm|vmath|kernels
VALGRIND      := valgrind --leak-check=full --errors-for-leak-kinds=definite,indirect,possible \
                 --error-exitcode=99 --num-callers=30 --suppressions=test/valgrind.supp \
                 --trace-children=yes \
                 --trace-children-skip='*/sh,*/bash,*/dash,*/rm,*/mkdir,*/cmp,*/examples/*,*/bertc'
VALGRIND_ZOO  := test/data/zoo/bert_seqcls_single

check-valgrind:
	@if ! command -v valgrind >/dev/null; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "valgrind is missing: installing $(VALGRIND_PKG) with apt-get"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(VALGRIND_PKG)) \
	      || { echo "apt-get install $(VALGRIND_PKG) failed"; exit 1; }; \
	  else \
	    echo "valgrind is missing. Install it with:"; \
	    echo "    sudo apt-get install -y $(VALGRIND_PKG)"; \
	    exit 1; \
	  fi; \
	fi

valgrind: check-criterion check-valgrind
	$(MAKE) --no-print-directory $(TEST_BIN) $(CLI)
	rm -rf $(BUILD)/valgrind && mkdir -p $(BUILD)/valgrind
	set -f; $(VALGRIND) --log-file=$(BUILD)/valgrind/test.%p.log ./$(TEST_BIN) -j1 \
	  --filter '!(@($(VALGRIND_SKIP))/*)' $(TEST_ARGS)
	$(VALGRIND) --log-file=$(BUILD)/valgrind/run.%p.log ./$(CLI) run --grad \
	  --config $(VALGRIND_ZOO)/config.json --weights $(VALGRIND_ZOO)/weights.safetensors \
	  --inputs $(VALGRIND_ZOO)/inputs.safetensors --output $(BUILD)/valgrind/out.safetensors
	@logs=$$(ls $(BUILD)/valgrind/*.log | wc -l); \
	killed=$$(grep -L 'ERROR SUMMARY' $(BUILD)/valgrind/*.log | wc -l); \
	bad=$$(grep -l 'ERROR SUMMARY: [1-9]' $(BUILD)/valgrind/*.log); \
	if [ -n "$$bad" ]; then \
	  for f in $$bad; do echo "== $$f"; cat $$f; done; \
	  echo "valgrind: errors or leaks in: $$bad"; exit 1; \
	fi; \
	echo "valgrind: $$logs processes, 0 errors, 0 leaks ($$killed without a summary:" \
	  "SIGKILLed on purpose, or replaced by an untraced program through exec)"

# --- install -----------------------------------------------------------------
# make install PREFIX=/usr/local [DESTDIR=...]: the public headers under
# PREFIX/include/bertc/ (bertc.h and each layer's own, in their directories,
# as they include one another), libbertc.a in PREFIX/lib, the CLI in
# PREFIX/bin and bertc.pc for pkg-config, so a program builds with
#   cc prog.c $$(pkg-config --cflags --libs bertc)
# The private headers (*_internal.h, nn/crc32_tables.h) stay behind. For
# `bertc train NAME` the example programs go to PREFIX/libexec/bertc/examples
# and data/ (with its README and licences) to PREFIX/share/bertc/data, where
# the installed bertc finds them (cli/bertc.c, train_layout). The manual page
# docs/bertc.1 (`make man`) goes to PREFIX/share/man/man1.
PREFIX  ?= /usr/local
VERSION := $(shell sed -n 's/^\#define BERTC_VERSION "\(.*\)"/\1/p' tensor/tensor.h)
# The headers a program includes: bertc.h includes every other one, and each
# compiles on its own with -std=c11 -pedantic (test/test_public_headers.c).
PUBLIC_HEADERS := bertc.h tensor/tensor.h tensor/kernels.h autograd/autograd.h nn/nn.h nn/config.h \
                  nn/json.h nn/safetensors.h nn/state.h zoo/text/tokenizer.h zoo/zoo.h zoo/models/batch.h \
                  zoo/models/model.h zoo/models/bert.h zoo/models/spanbert.h zoo/models/model_const.h \
                  zoo/train/pipeline.h zoo/train/train.h zoo/train/dataset.h zoo/train/finetune.h \
                  zoo/train/pretrain.h zoo/pictures/svg.h
# (rebuilt when this file changes: the list is compiled into the test)
$(BUILD)/obj/test/test_public_headers.o: Makefile
$(BUILD)/obj/test/test_public_headers.o: ALL_CFLAGS += -DBERTC_CC='"$(CC)"' \
    -DBERTC_PUBLIC_HEADERS='"$(PUBLIC_HEADERS)"'
PKG_LIBS := -lbertc $(LDLIBS)

DATA_FILES := $(wildcard data/*)
# The porting kit (docs/porting.md): examples/firmware/ (bertc.mk, the
# example firmware, the Cortex-M4F startup and linker script) into
# share/bertc/firmware/, and under it src/: the freestanding core's sources
# and headers, which bertc.mk compiles with the porter's own toolchain.
KIT_FILES := $(wildcard examples/firmware/*.* examples/firmware/*/*)
# (tensor/*.inc: the SIMD bodies the kernels_<isa>.c files include.)
KIT_CORE  := bertc.h $(filter-out $(HOSTED_ONLY),$(wildcard tensor/*.[ch] tensor/*.inc autograd/*.[ch] nn/*.[ch] zoo/*.h zoo/*/*.[ch]))
KIT_DIR    = $(DESTDIR)$(PREFIX)/share/bertc/firmware

install: $(LIB) $(CLI) $(EXAMPLES)
	@for h in $(PUBLIC_HEADERS); do \
	  mkdir -p "$(DESTDIR)$(PREFIX)/include/bertc/$$(dirname $$h)" && \
	  cp "$$h" "$(DESTDIR)$(PREFIX)/include/bertc/$$h" || exit 1; \
	done
	mkdir -p "$(DESTDIR)$(PREFIX)/lib/pkgconfig" "$(DESTDIR)$(PREFIX)/bin"
	cp $(LIB) "$(DESTDIR)$(PREFIX)/lib/libbertc.a"
	cp $(CLI) "$(DESTDIR)$(PREFIX)/bin/bertc"
	mkdir -p "$(DESTDIR)$(PREFIX)/libexec/bertc/examples" "$(DESTDIR)$(PREFIX)/share/bertc/data"
	cp $(EXAMPLES) "$(DESTDIR)$(PREFIX)/libexec/bertc/examples/"
	cp -R $(DATA_FILES) "$(DESTDIR)$(PREFIX)/share/bertc/data/"
	@for f in $(KIT_FILES:examples/firmware/%=%) $(KIT_CORE:%=src/%); do \
	  from=$$(case $$f in src/*) echo "$${f#src/}";; *) echo "examples/firmware/$$f";; esac); \
	  mkdir -p "$(KIT_DIR)/$$(dirname $$f)" && cp "$$from" "$(KIT_DIR)/$$f" || exit 1; \
	done
	mkdir -p "$(DESTDIR)$(PREFIX)/share/doc/bertc/models" "$(DESTDIR)$(PREFIX)/share/doc/bertc/examples"
	cp README.md docs/*.md "$(DESTDIR)$(PREFIX)/share/doc/bertc/"
	cp docs/models/*.md "$(DESTDIR)$(PREFIX)/share/doc/bertc/models/"
	cp docs/examples/*.md "$(DESTDIR)$(PREFIX)/share/doc/bertc/examples/"
	mkdir -p "$(DESTDIR)$(PREFIX)/share/man/man1"
	cp docs/bertc.1 "$(DESTDIR)$(PREFIX)/share/man/man1/bertc.1"
	printf '%s\n' "prefix=$(PREFIX)" 'includedir=$${prefix}/include/bertc' \
	  'libdir=$${prefix}/lib' '' 'Name: bertc' \
	  'Description: BERT variants in C11: tensors, autograd, nn modules and a model zoo' \
	  'Version: $(VERSION)' 'Cflags: -I$${includedir}' 'Libs: -L$${libdir} $(PKG_LIBS)' \
	  > "$(DESTDIR)$(PREFIX)/lib/pkgconfig/bertc.pc"
	@echo "installed bertc into $(DESTDIR)$(PREFIX)"

# Installs into a scratch prefix and builds bertc.h's own example program
# against it with pkg-config alone: the install is complete and usable.
install-check:
	sh tools/install_check.sh $(BUILD)/install-check

# The main job: fine-tune the shipped pretrained BERT into a topic classifier
# on real text, beside the same model from scratch and a bag-of-words
# baseline (a minute or two on 2 cores), then use it. Writes build/demo/.
demo: all
	./$(BUILD)/examples/topics

# The shipped pretrained model, data/pretrained/bertc-docs, rebuilt from a
# corpus of Debian's documentation (tools/build_corpus.sh): about 70 minutes
# on 2 cores, checkpointed and resumed when run again (tools/pretrain_model.sh).
pretrained: all
	sh tools/pretrain_model.sh $(BUILD)

# The demo classifier quantised to int8 (bertc quantize): its held-out
# accuracy in float32 and int8, both by bertc predict (tools/demo_int8.sh).
demo-int8: all
	sh tools/demo_int8.sh $(BUILD)

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
