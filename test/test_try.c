/* test/test_try.c — the guard (bertc_catch_begin), bertc_try and the arena
 * memory limit: a failure that reaches bertc_fatal while the library works
 * on user input (a batch too big for memory, a malloc the system refuses, an
 * op given shapes it cannot take) comes back as an error from the entry
 * point, never an abort. */
#include "test/test_util.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- bertc_try itself ------------------------------------------------ */

static int returns_seven(void *ctx, BertcError *err)
{
    (void)err;
    return *(int *)ctx;
}

static int fails_with_message(void *ctx, BertcError *err)
{
    (void)ctx;
    return bertc_errorf(err, "plain error");
}

static int reaches_fatal(void *ctx, BertcError *err)
{
    (void)err;
    int *after = ctx;
    bertc_fatal("matmul: shapes [%d, 3] and [4, 3] do not agree", 2);
    *after = 1;   /* never reached */
    return 0;
}

static bool hook_called;
static void recording_hook(const char *msg, void *user)
{
    (void)msg, (void)user;
    hook_called = true;
}

Test(try, returns_what_the_function_returns)
{
    BertcError err = {{0}};
    int seven = 7;
    cr_expect_eq(bertc_try(returns_seven, &seven, &err), 7);
    cr_expect_eq(bertc_try(fails_with_message, NULL, &err), -1);
    cr_expect_str_eq(err.msg, "plain error");
}

Test(try, a_fatal_inside_is_the_error_and_skips_the_hook)
{
    BertcError err = {{0}};
    int after = 0;
    hook_called = false;
    BertcErrorHook old = bertc_set_error_hook(recording_hook, NULL);
    int rc = bertc_try(reaches_fatal, &after, &err);
    bertc_set_error_hook(old, NULL);
    cr_expect_eq(rc, -1);
    cr_expect_str_eq(err.msg, "matmul: shapes [2, 3] and [4, 3] do not agree");
    cr_expect_eq(after, 0, "the code after bertc_fatal ran");
    cr_expect(!hook_called, "the error hook ran although bertc_try caught the fatal");
}

static int inner_then_continue(void *ctx, BertcError *err)
{
    int *after = ctx;
    BertcError inner;
    int rc = bertc_try(reaches_fatal, after, &inner);
    if (rc != -1 || !strstr(inner.msg, "matmul"))
        return bertc_errorf(err, "the inner try did not catch: %d '%s'", rc, inner.msg);
    return 5;
}

Test(try, the_innermost_try_catches)
{
    BertcError err = {{0}};
    int after = 0;
    cr_expect_eq(bertc_try(inner_then_continue, &after, &err), 5, "%s", err.msg);
}

static void fatal_outside(void *ctx)
{
    (void)ctx;
    bertc_fatal("outside any try");
}

Test(try, a_fatal_after_the_try_returned_goes_to_the_hook)
{
    BertcError err;
    int after = 0;
    bertc_try(reaches_fatal, &after, &err);
    char msg[BERTC_ERROR_LEN];
    cr_expect(test_catch_fatal(fatal_outside, NULL, msg, sizeof msg),
              "a finished bertc_try still caught a later fatal");
}

/* ---- the guard: bertc_catch_begin, setjmp, the call, bertc_catch_end ---- */

/* What a guarded call reached, kept outside the test's frame: a local
 * changed after the setjmp would be indeterminate after the jump. */
static int reached;

static int guarded_fatal(BertcError *err, const char *what)
{
    BertcCatch guard;
    bertc_catch_begin(&guard, err);
    if (setjmp(guard.env) != 0)
        return -1;
    reached = 1;
    bertc_fatal("%s: out of memory", what);
    reached = 2;   /* never reached */
    bertc_catch_end(&guard);
    return 0;
}

Test(guard, a_fatal_lands_at_its_setjmp_with_the_message_and_skips_the_hook)
{
    BertcError err = {{0}};
    reached = 0;
    hook_called = false;
    BertcErrorHook old = bertc_set_error_hook(recording_hook, NULL);
    int rc = guarded_fatal(&err, "arena 'step'");
    bertc_set_error_hook(old, NULL);
    cr_expect_eq(rc, -1);
    cr_expect_eq(reached, 1, "the call ran %s", reached ? "past bertc_fatal" : "not at all");
    cr_expect_str_eq(err.msg, "arena 'step': out of memory");
    cr_expect(!hook_called, "the error hook ran although the guard caught the fatal");
}

/* bertc_fatal ends the guard it jumps to: a later fatal outside any guard
 * goes to the hook, not back into the returned function's dead frame. */
static void landed_then_fatal(void *ctx)
{
    guarded_fatal(ctx, "first");
    bertc_fatal("after the landing");
}

Test(guard, the_landing_ends_the_guard)
{
    BertcError err = {{0}};
    char msg[BERTC_ERROR_LEN];
    cr_expect(test_catch_fatal(landed_then_fatal, &err, msg, sizeof msg),
              "the fatal after the landing was caught by the ended guard");
    cr_expect_str_eq(msg, "after the landing");
    cr_expect_str_eq(err.msg, "first: out of memory");
}

static int guarded_value(int v, BertcError *err)
{
    BertcCatch guard;
    bertc_catch_begin(&guard, err);
    if (setjmp(guard.env) != 0)
        return -1;
    int rc = returns_seven(&v, err);
    bertc_catch_end(&guard);
    return rc;
}

static void ended_then_fatal(void *ctx)
{
    cr_expect_eq(guarded_value(7, ctx), 7);
    bertc_fatal("after bertc_catch_end");
}

Test(guard, bertc_catch_end_ends_the_guard)
{
    BertcError err = {{0}};
    char msg[BERTC_ERROR_LEN];
    cr_expect(test_catch_fatal(ended_then_fatal, &err, msg, sizeof msg),
              "a fatal after bertc_catch_end was still caught");
    cr_expect_str_eq(msg, "after bertc_catch_end");
}

/* An inner guard catches its own fatal; the outer one still catches the
 * next one, inside its own call. */
static int inner_then_outer(BertcError *err)
{
    BertcError inner = {{0}};
    if (guarded_fatal(&inner, "inner") != -1 || strcmp(inner.msg, "inner: out of memory") != 0)
        return bertc_errorf(err, "the inner guard did not catch: '%s'", inner.msg);
    bertc_fatal("outer");
    return 0;
}

Test(guard, guards_nest_and_the_innermost_catches)
{
    static BertcError err;   /* static: written after the setjmp, read after the jump */
    BertcCatch guard;
    bertc_catch_begin(&guard, &err);
    if (setjmp(guard.env) != 0) {
        cr_expect_str_eq(err.msg, "outer");
        return;
    }
    inner_then_outer(&err);
    bertc_catch_end(&guard);
    cr_assert_fail("the outer guard did not catch the fatal after the inner one: '%s'", err.msg);
}

Test(guard, arena_create_checked_is_null_and_the_reason_past_the_limit)
{
    bertc_arena_set_memory_limit(bertc_arena_memory_total() + 4096);
    BertcError err = {{0}};
    Arena *a = bertc_arena_create_checked("big", 8 << 20, &err);
    bertc_arena_set_memory_limit(0);
    cr_expect_null(a, "an 8 MiB arena past a 4 KiB allowance was made");
    cr_expect(strstr(err.msg, "arena 'big'") && strstr(err.msg, "out of memory"),
              "the message: %s", err.msg);
    a = bertc_arena_create_checked("small", 4096, &err);
    cr_expect_not_null(a, "%s", err.msg);
    bertc_arena_destroy(a);
}

/* ---- the arena memory limit ----------------------------------------- */

static int alloc_bytes(void *ctx, BertcError *err)
{
    (void)err;
    Arena *a = ctx;
    bertc_arena_alloc(a, 8 << 20);
    return 0;
}

Test(memory, growing_past_the_limit_is_an_error_and_the_arena_stays_usable)
{
    size_t empty = bertc_arena_memory_total();
    Arena *a = bertc_arena_create("grow", 4096);
    size_t before = bertc_arena_memory_total();
    bertc_arena_set_memory_limit(before + (1 << 20));
    BertcError err = {{0}};
    int rc = bertc_try(alloc_bytes, a, &err);
    bertc_arena_set_memory_limit(0);
    cr_expect_eq(rc, -1, "an 8 MiB block past a 1 MiB allowance was handed out");
    cr_expect(strstr(err.msg, "arena 'grow'") && strstr(err.msg, "out of memory") &&
              strstr(err.msg, "smaller batch"), "the message: %s", err.msg);
    cr_expect_eq(bertc_arena_memory_total(), before, "the refused chunk is still counted");
    memset(bertc_arena_alloc(a, 1000), 1, 1000);   /* the arena works on */
    bertc_arena_reset(a);
    bertc_arena_destroy(a);
    cr_expect_eq(bertc_arena_memory_total(), empty, "bertc_arena_destroy left bytes counted");
}

/* MemAvailable + SwapFree of /proc/meminfo in bytes, 0 when unknown. */
static size_t meminfo_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[128];
    unsigned long long kb, sum = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu", &kb) == 1 || sscanf(line, "SwapFree: %llu", &kb) == 1)
            sum += kb;
    if (f)
        fclose(f);
    return (size_t)sum * 1024;
}

/* The default limit is what the machine can still give, not its whole RAM:
 * a batch that fits the RAM but not the free memory was killed by the OOM
 * killer (`bertc train bertsum --batch-size 4096` on a loaded 24 GB machine). */
Test(memory, the_default_limit_is_the_memory_there_is_to_have)
{
    bertc_arena_set_memory_limit(0);
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    size_t limit = bertc_arena_memory_limit(), avail = meminfo_available();
    cr_expect_leq(limit, (size_t)pages * (size_t)page);
    if (avail) {
        size_t slack = bertc_arena_memory_total() + ((size_t)64 << 20);  /* meminfo moves */
        cr_expect_leq(limit, avail - avail / 8 + slack, "limit %zu, available %zu", limit,
                      avail);
        cr_expect_gt(limit, avail / 2, "limit %zu, available %zu", limit, avail);
    }
}

#define ZOO_CASE TEST_ZOO_DIR "/bert_seqcls_single"

/* B x S ids of a valid batch for bert_seqcls_single (V = 120, S <= 40). */
static void big_batch(Graph *g, Batch *b, int64_t B, int64_t S)
{
    int64_t shape[2] = {B, S};
    ITensor ids = bertc_itensor_new(g->step, 2, shape);
    for (int64_t i = 0; i < ids.numel; i++)
        ids.data[i] = (int32_t)(1 + i % 100);
    bertc_batch_init(b, "batch");
    bertc_batch_put_ids(b, "input_ids", ids);
}

Test(memory, a_batch_too_big_for_memory_is_an_error_from_model_forward)
{
    Arena *params = bertc_arena_create("params", 1 << 20);
    Graph *g = bertc_ag_graph_create(1 << 16, 0);
    Model m;
    test_model_build(&m, params, ZOO_CASE "/config.json", NULL);
    test_model_load(&m, ZOO_CASE "/weights.safetensors");
    bertc_ag_set_training(g, false);
    bertc_ag_set_no_grad(g, true);
    Batch b;
    Outputs out;
    big_batch(g, &b, 512, 40);   /* attention scores alone: 512 x 4 x 40 x 40 floats, 13 MB */
    bertc_outputs_init(&out);
    bertc_arena_set_memory_limit(bertc_arena_memory_total() + (4 << 20));
    BertcError err = {{0}};
    int rc = bertc_model_forward(&m, g, &b, &out, &err);
    bertc_arena_set_memory_limit(0);
    cr_expect_eq(rc, -1, "a forward needing more than the limit ran");
    cr_expect(strstr(err.msg, "arena 'step'") && strstr(err.msg, "out of memory"),
              "the message: %s", err.msg);
    /* the graph and the model work on with a batch that fits */
    bertc_ag_graph_reset(g);
    big_batch(g, &b, 2, 40);
    bertc_outputs_init(&out);
    test_forward_ok(&m, g, &b, &out);
    bertc_ag_graph_destroy(g);
    bertc_arena_destroy(params);
}

/* ---- every allocation failure is an error ----------------------------- */

ParameterizedTestParameters(memory, every_failed_allocation_of_bertc_run_is_an_error)
{
    TestName *cases;
    size_t n = test_zoo_cases(&cases);
    return cr_make_param_array(TestName, cases, n);
}

/* File descriptors this process has open (a FILE a failed path forgot to
 * close is one more: LSan cannot see it, glibc still lists the FILE). */
static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

/* bertc_zoo_run (= bertc run --grad) of a fixture with the n-th allocation made
 * to fail, for n = 0, 1, 2, ... until a run needs no more allocations than
 * n: each must end in 0 or an error with a message, never a crash, and
 * close every file it opened; under ASan (make sanitize) nothing leaks. */
ParameterizedTest(TestName *zc, memory, every_failed_allocation_of_bertc_run_is_an_error)
{
    char config[512], weights[512], inputs[512], output[512];
    snprintf(config, sizeof config, "%s/%s/config.json", TEST_ZOO_DIR, zc->name);
    snprintf(weights, sizeof weights, "%s/%s/weights.safetensors", TEST_ZOO_DIR, zc->name);
    snprintf(inputs, sizeof inputs, "%s/%s/inputs.safetensors", TEST_ZOO_DIR, zc->name);
    snprintf(output, sizeof output, "/tmp/bertc_try_%d.safetensors", (int)getpid());
    bertc_threads_set_count(1);   /* every allocation on this thread, in a fixed order */
    RunArgs args = {config, weights, inputs, output, true, false};
    BertcError err;
    if (bertc_zoo_run(&args, &err) != 0)
        args.grad = false;   /* a model without a loss (BertModel) */
    int fds = open_fds();
    long n = 0;
    for (;; n++) {
        err.msg[0] = '\0';
        test_malloc_fail_at(n);
        int rc = bertc_zoo_run(&args, &err);
        bool failed = test_malloc_fail_off();
        if (!failed) {
            cr_assert_eq(rc, 0, "%s: the run failed with no allocation failing: %s", zc->name,
                         err.msg);
            break;
        }
        cr_assert(rc == 0 || (rc == -1 && err.msg[0]),
                  "%s: allocation %ld failed and bertc_zoo_run returned %d with '%s'", zc->name, n,
                  rc, err.msg);
        cr_assert_eq(open_fds(), fds, "%s: allocation %ld failed and a file stayed open (%s)",
                     zc->name, n, err.msg);
        cr_assert(n < 100000, "%s: more than 100000 allocations", zc->name);
    }
    cr_expect_gt(n, 3, "%s: only %ld allocations: is the failure injection working?", zc->name,
                 n);
    unlink(output);
}

Test(memory, a_text_too_long_for_memory_is_an_error_from_tokenizer_encode)
{
    Arena *a = bertc_arena_create("tokenizer", 1 << 20);
    Tokenizer tok;
    BertcError err = {{0}};
    cr_assert_eq(bertc_tokenizer_load(&tok, a, "data/bert-base-uncased-vocab.txt", &err), 0, "%s",
                 err.msg);
    size_t n = 4 << 20;   /* 4 MB of words: about 1 GB of work space */
    char *text = malloc(n);
    for (size_t i = 0; i < n; i++)
        text[i] = i % 6 == 5 ? ' ' : (char)('a' + i % 7);
    Encoding e;
    bertc_arena_set_memory_limit(bertc_arena_memory_total() + (64 << 20));
    int rc = bertc_tokenizer_encode(&tok, a, text, n, NULL, 0, 0, false, &e, &err);
    bertc_arena_set_memory_limit(0);
    free(text);
    cr_expect_eq(rc, -1, "4 MB of text encoded within 64 MiB");
    cr_expect(strstr(err.msg, "arena 'tokenizer'") && strstr(err.msg, "out of memory"),
              "the message: %s", err.msg);
    bertc_arena_destroy(a);
}

/* The outputs table has no fixed size (it held 512, and a deep model's
 * hidden states, attention maps and gates went past it). */
Test(memory, the_outputs_table_grows)
{
    Graph *g = bertc_ag_graph_create(1 << 16, 0);
    Outputs out;
    bertc_outputs_init(&out);
    int64_t one = 1;
    for (int i = 0; i < 2000; i++) {
        Var *v = bertc_ag_tensor(g, 1, &one, false);
        v->value.data[0] = (float)i;
        bertc_outputs_put(&out, g, v, "layers.%d.x", i);
    }
    cr_assert_eq(out.n, 2000);
    for (int i = 0; i < 2000; i += 499) {
        char name[32];
        snprintf(name, sizeof name, "layers.%d.x", i);
        Var *v = bertc_outputs_get(&out, name);
        cr_assert(v && v->value.data[0] == (float)i, "%s lost after the table grew", name);
    }
    bertc_ag_graph_destroy(g);
}
