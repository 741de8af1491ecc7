/* test/test_util.h — helpers shared by the Criterion tests. */
#ifndef BERTC_TEST_UTIL_H
#define BERTC_TEST_UTIL_H

#include "autograd/autograd.h"
#include "zoo/zoo.h"

#include <sys/types.h>

/* malloc/calloc/realloc calls made since the start of the process by code
 * linked into the test binary (test/support_malloc_count.c, --wrap). */
size_t test_malloc_calls(void);
/* Make the n-th malloc/calloc/realloc from now (0: the next one) of that
 * code return NULL, as a machine out of memory would. test_malloc_fail_off
 * stops that and says whether the failure happened. */
void test_malloc_fail_at(long n);
bool test_malloc_fail_off(void);

/* File-system fault injection (test/support_io_fault.c, --wrap): after
 * test_io_arm(n, kill), the n-th call (from 1) of open, write, fchmod, fsync,
 * close or rename made by the test binary's code fails with EIO before it
 * does anything, or with kill the process SIGKILLs itself there (use it in a
 * forked child). test_io_disarm stops it and returns how many of those calls
 * were made since arming; test_io_hit names the call that was hit (NULL: n
 * was never reached). */
void test_io_arm(int n, bool kill);
int test_io_disarm(void);
const char *test_io_hit(void);

/* How many times the test binary's code has called bertc_tokenizer_encode
 * so far (test/support_tokenizer_count.c, --wrap): take the difference
 * around the work to count. */
long test_tokenizer_calls(void);

/* A persistent input for gradcheck: shape, values uniform in [lo, hi). */
Var *test_param(Arena *a, int ndim, const int64_t *shape, Rng *rng, float lo, float hi);

/* Fill with uniform values in [lo, hi). */
void test_fill_uniform(float *x, int64_t n, Rng *rng, float lo, float hi);

/* Run bertc_ag_gradcheck with the tolerances used for float32 central differences
 * (eps 1e-2 in float: truncation error ~eps^2, rounding ~1e-7/eps) and assert
 * it passes; the failure message names the op, input, index and both values. */
void test_gradcheck(const char *op, Graph *g, GradcheckFn fn, Var **inputs, int n, void *user);

/* Run fn(ctx), expecting it to call bertc_fatal. Returns true if it did, and
 * copies the message into msg. Uses an error hook that longjmps back. */
bool test_catch_fatal(void (*fn)(void *ctx), void *ctx, char *msg, size_t len);

/* A suite's setup: a "params" arena and a graph of 64 KiB each (the size
 * every suite uses); test_close frees both. */
void test_open(Arena **params, Graph **graph);
void test_close(Arena *params, Graph *graph);

/* A gradient suite's fixture: file-scope `params` (arena), `graph` and `rng`
 * (bertc_rng_seed(seed)), made by test_open before each test of `suite` and freed
 * after it. Needs <criterion/criterion.h>. */
#define TEST_SUITE_WITH_GRAPH(suite, seed)                                           \
    static Arena *params;                                                            \
    static Graph *graph;                                                             \
    static Rng rng;                                                                  \
    static void suite##_setup(void)                                                  \
    {                                                                                \
        test_open(&params, &graph);                                                  \
        rng = bertc_rng_seed(seed);                                                        \
    }                                                                                \
    static void suite##_teardown(void) { test_close(params, graph); }                \
    TestSuite(suite, .init = suite##_setup, .fini = suite##_teardown)

/* One case of a parameterised test named by a directory entry. */
typedef struct TestName {
    char name[256];
} TestName;

/* The entries of dir not starting with '.', sorted, at most max, in an array
 * from cr_malloc (as ParameterizedTestParameters needs); returns how many
 * (0 if dir cannot be opened). */
size_t test_list_dir(const char *dir, size_t max, TestName **names);

/* Row-major coordinates of flat index i in shape (ndim dims), and back. */
void test_unflatten(int64_t i, int ndim, const int64_t *shape, int64_t *coord);
int64_t test_flatten(int ndim, const int64_t *shape, const int64_t *coord);

/* ---- programs run by the tests (test/support_util.c) -------------------- */

/* What test_shell keeps of a command's output: its stderr (stdout goes to
 * /dev/null), or both, as they come. */
typedef enum TestCapture { TEST_STDERR, TEST_STDOUT_AND_STDERR } TestCapture;

/* The start of the file at path (at most cap - 1 bytes, NUL-terminated; ""
 * when it cannot be read) into out. */
void test_read_text(const char *path, char *out, size_t cap);
/* text as the whole file at path; fails the test when it cannot be written. */
void test_write_text(const char *path, const char *text);

/* Runs the shell command line cmd with that output in a log file, read back
 * into out (at most cap - 1 bytes, NUL-terminated); returns the exit code
 * (-1: it did not exit). */
int test_shell(const char *cmd, TestCapture capture, char *out, size_t cap);

/* The cosine of a and b (n floats each), summed in double. */
double test_cosine(const float *a, const float *b, int64_t n);

/* A fresh scratch directory /tmp/bertc_<name>_<pid> written into dir (cap
 * bytes); fails the test when it cannot be made. test_scratch_remove: rm -rf. */
void test_scratch_make(char *dir, size_t cap, const char *name);
void test_scratch_remove(const char *dir);

/* A directory path of exactly n bytes: root, then components of up to 200
 * letters joined by '/' (so that one can be far longer than 1,024 bytes, or
 * than PATH_MAX, with no component past NAME_MAX), malloc'd (the caller
 * frees it); created, with its parents, when make is true. */
char *test_long_dir(const char *root, size_t n, bool make);

/* The size of the file at path in bytes; fails the test when it is missing. */
long test_file_bytes(const char *path);

/* The two files hold the same bytes (cmp -s). */
bool test_same_file(const char *a, const char *b);

/* A run of the topics example (BERTC_EXAMPLES_DIR) with --quiet. */
typedef struct TestTopics {
    const char *out;                /* --out */
    int steps, checkpoint_every;    /* --steps, --checkpoint-every */
    const char *extra;              /* test_topics_run: more flags ("--resume"), or NULL */
    const char *log;                /* test_topics_start: its stderr goes here and its
                                     * stdout to /dev/null (NULL: both are the test's) */
} TestTopics;

/* The whole run, its output dropped; returns its exit code (-1: it did not exit). */
int test_topics_run(TestTopics run);

/* Starts the run in a child and returns its pid once out/checkpoint.safetensors
 * exists (the first periodic checkpoint), for the test to signal. */
pid_t test_topics_start(TestTopics run);

/* ---- zoo models (test/support_zoo.c) ---------------------------------- */

/* Reads config_path into *cfg (if cfg is not NULL) and builds *m in arena;
 * asserts both succeed, naming the file and the error. */
void test_model_build(Model *m, Arena *arena, const char *config_path, BertConfig *cfg);

/* Loads weights_path into *m (no missing parameters allowed); asserts it does. */
void test_model_load(Model *m, const char *weights_path);

/* bertc_model_forward of batch into *out, which must succeed (the failure names the error). */
void test_forward_ok(Model *m, Graph *g, const Batch *batch, Outputs *out);

/* bertc_model_forward of batch, which must fail with a message containing a, b and,
 * if not NULL, c; a failure prints the substrings and the actual message. */
void test_forward_fails(Model *m, Graph *g, const Batch *batch, const char *a, const char *b,
                        const char *c);

/* The sizes of a small model built in code (every field must be given but
 * num_labels): bertc_bert_config_default(arch) with them; num_labels > 0 makes a
 * single-label classifier of that many classes. */
typedef struct TestBertSize {
    const char *arch;
    int vocab_size, hidden_size, num_hidden_layers, num_attention_heads, intermediate_size;
    int max_position_embeddings, num_labels;
} TestBertSize;
BertConfig test_bert_config(TestBertSize size);

/* bertc_model_config_default(architecture), which must succeed. */
BertConfig test_config_default(const char *architecture);
/* bertc_model_config_set(cfg, key, value), which must succeed. */
void test_config_set(BertConfig *cfg, const char *key, double value);
/* SpanBERT's masking.special_token_ids := ids[0..n). */
void test_config_special_ids(BertConfig *cfg, int n, const int32_t *ids);

/* bertc_model_build of cfg into *m, which must succeed (the failure names the error). */
void test_model_from_config(Model *m, Arena *arena, const BertConfig *cfg);

/* bertc_registry_init_weights (std 0.02) from bertc_rng_seed(seed). */
void test_model_init_weights(Model *m, uint64_t seed);

/* The two-class classifier the training suites train (V 16, H 8, one layer of
 * 2 heads, S positions), its weights drawn from seed 3. */
Model test_tiny_classifier(Arena *arena, int S);

/* Every parameter of a and b holds the same bytes; the failure names the
 * first that differs and says `when` ("after resuming"). */
void test_expect_same_weights(const Registry *a, const Registry *b, const char *when);

/* What a checkpoint holds: a model of that size built in a 1 MiB arena,
 * AdamW (lr 1e-3) over it and the RNG. */
typedef struct TestTrainState {
    Arena *arena;
    Model m;
    Optimizer o;
    Rng rng;
} TestTrainState;
void test_train_state_init(TestTrainState *t, TestBertSize size);

/* Checkpoint generation k (test_checkpoint_*.c): every weight k + i/1024 (i
 * the parameter's index), first moments -k, second moments k, optimizer step
 * k and RNG state 1000 + k. test_load_generation loads path into t (first
 * filled with generation -1, so nothing stale passes), asserts it holds
 * exactly one generation and returns it. */
void test_fill_generation(TestTrainState *t, int64_t k);
int64_t test_load_generation(TestTrainState *t, const char *path);

/* The raw little-endian bytes of tensor ti of st, read through its source,
 * in a malloc'd buffer (8 spare bytes) the caller frees; asserts the read. */
void *test_tensor_bytes(const SafeTensors *st, const StTensorInfo *ti);

/* The fixtures: one directory of test/data/zoo/ each (config.json, weights,
 * inputs, expected outputs). test_zoo_cases lists them, sorted, for
 * ParameterizedTestParameters. */
#define TEST_ZOO_DIR "test/data/zoo"
size_t test_zoo_cases(TestName **cases);

/* A model directory's weights (DIR/model.safetensors) read back as entries
 * to damage and write again with bertc_st_write_file (test/support_tensors.c):
 * I8 tensors as bytes, every other dtype as F32, in `arena`. */
#define TEST_TENSORS_MAX 256
typedef struct TestTensors {
    StEntry e[TEST_TENSORS_MAX];
    int64_t shapes[TEST_TENSORS_MAX][TENSOR_MAX_DIMS];
    char names[TEST_TENSORS_MAX][200];
    size_t n;
} TestTensors;
SafeTensors *test_open_weights(const char *dir);   /* fails the test if it cannot */
TestTensors *test_read_tensors(Arena *arena, const char *dir);
StEntry *test_tensor_entry(TestTensors *t, const char *name);   /* fails if absent */

#endif
