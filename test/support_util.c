/* test/support_util.c — see test_util.h */
#include "test/test_util.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);

/* Atomic: GEMM worker threads allocate their packing buffers on first use. */
static atomic_size_t malloc_calls;

/* Calls left before the one that fails (test_malloc_fail_at); -1: none. */
static atomic_long fail_countdown = -1;
static atomic_bool fail_happened;

/* true when this call is the one to fail */
static bool fail_now(void)
{
    if (atomic_load(&fail_countdown) < 0)
        return false;
    if (atomic_fetch_sub(&fail_countdown, 1) != 0)
        return false;
    atomic_store(&fail_happened, true);
    return true;
}

/* The linker routes every malloc/calloc/realloc of the test binary's own
 * objects (the test code and libbertc.a; not shared libraries) through these
 * wrappers (-Wl,--wrap=malloc in the Makefile). */
void *__wrap_malloc(size_t n)
{
    malloc_calls++;
    return fail_now() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size)
{
    malloc_calls++;
    return fail_now() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n)
{
    malloc_calls++;
    return fail_now() ? NULL : __real_realloc(p, n);
}

void test_malloc_fail_at(long n)
{
    atomic_store(&fail_happened, false);
    atomic_store(&fail_countdown, n);
}

bool test_malloc_fail_off(void)
{
    atomic_store(&fail_countdown, -1);
    return atomic_load(&fail_happened);
}

size_t test_malloc_calls(void) { return atomic_load(&malloc_calls); }

void test_fill_uniform(float *x, int64_t n, Rng *rng, float lo, float hi)
{
    for (int64_t i = 0; i < n; i++)
        x[i] = lo + (hi - lo) * (float)bertc_rng_uniform(rng);
}

Var *test_param(Arena *a, int ndim, const int64_t *shape, Rng *rng, float lo, float hi)
{
    Var *v = bertc_ag_param(a, ndim, shape, "input");
    test_fill_uniform(v->value.data, v->value.numel, rng, lo, hi);
    return v;
}

void test_gradcheck(const char *op, Graph *g, GradcheckFn fn, Var **inputs, int n, void *user)
{
    GradcheckResult r = bertc_ag_gradcheck(g, fn, inputs, n, user, 1e-2f, 2e-3, 2e-2);
    cr_assert(r.ok, "%s: %s (max abs error %.3g)", op, r.msg, r.max_abs_err);
}

static jmp_buf fatal_jump;
static char fatal_msg[BERTC_ERROR_LEN];

static void longjmp_hook(const char *msg, void *user)
{
    (void)user;
    snprintf(fatal_msg, sizeof fatal_msg, "%s", msg);
    longjmp(fatal_jump, 1);
}

bool test_catch_fatal(void (*fn)(void *ctx), void *ctx, char *msg, size_t len)
{
    BertcErrorHook old = bertc_set_error_hook(longjmp_hook, NULL);
    bool caught = false;
    if (setjmp(fatal_jump) == 0)
        fn(ctx);
    else
        caught = true;
    bertc_set_error_hook(old, NULL);
    snprintf(msg, len, "%s", caught ? fatal_msg : "");
    return caught;
}

void test_open(Arena **params, Graph **graph)
{
    *params = bertc_arena_create("params", 1 << 16);
    *graph = bertc_ag_graph_create(1 << 16, 1);
}

void test_close(Arena *params, Graph *graph)
{
    bertc_ag_graph_destroy(graph);
    bertc_arena_destroy(params);
}

void test_unflatten(int64_t i, int ndim, const int64_t *shape, int64_t *coord)
{
    for (int d = ndim - 1; d >= 0; d--) {
        coord[d] = i % shape[d];
        i /= shape[d];
    }
}

int64_t test_flatten(int ndim, const int64_t *shape, const int64_t *coord)
{
    int64_t i = 0;
    for (int d = 0; d < ndim; d++)
        i = i * shape[d] + coord[d];
    return i;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(((const TestName *)a)->name, ((const TestName *)b)->name);
}

size_t test_list_dir(const char *dir, size_t max, TestName **names)
{
    TestName *list = cr_malloc(sizeof(TestName) * max);
    size_t n = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d)) && n < max;)
        if (e->d_name[0] != '.')
            snprintf(list[n++].name, sizeof list[0].name, "%s", e->d_name);
    if (d)
        closedir(d);
    qsort(list, n, sizeof *list, compare_names);
    *names = list;
    return n;
}

/* ---- programs run by the tests ------------------------------------------ */

void test_read_text(const char *path, char *out, size_t cap)
{
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(out, 1, cap - 1, f) : 0;
    if (f)
        fclose(f);
    out[n] = '\0';
}

void test_write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert(f, "cannot write %s", path);
    cr_assert(fputs(text, f) >= 0 && fclose(f) == 0, "cannot write %s", path);
}

int test_shell(const char *cmd, TestCapture capture, char *out, size_t cap)
{
    char log[128];
    snprintf(log, sizeof log, "/tmp/bertc_shell_%d.log", (int)getpid());
    size_t len = strlen(cmd) + 256;
    char *full = malloc(len);
    cr_assert(full);
    if (capture == TEST_STDOUT_AND_STDERR)
        snprintf(full, len, "%s > %s 2>&1", cmd, log);
    else
        snprintf(full, len, "%s > /dev/null 2> %s", cmd, log);
    int status = system(full);
    free(full);
    test_read_text(log, out, cap);
    remove(log);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

double test_cosine(const float *a, const float *b, int64_t n)
{
    double ab = 0, aa = 0, bb = 0;
    for (int64_t i = 0; i < n; i++) {
        ab += (double)a[i] * b[i];
        aa += (double)a[i] * a[i];
        bb += (double)b[i] * b[i];
    }
    return ab / sqrt(aa * bb);
}

void test_scratch_make(char *dir, size_t cap, const char *name)
{
    snprintf(dir, cap, "/tmp/bertc_%s_%d", name, (int)getpid());
    cr_assert_eq(mkdir(dir, 0700), 0, "cannot create %s", dir);
}

void test_scratch_remove(const char *dir)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_expect_eq(system(cmd), 0);
}

char *test_long_dir(const char *root, size_t n, bool make)
{
    size_t at = strlen(root);
    cr_assert_gt(n, at + 1, "test_long_dir: %zu bytes leave no room under %s", n, root);
    char *p = malloc(n + 1);
    cr_assert(p);
    memcpy(p, root, at);
    for (size_t run = 200; at < n; at++, run++) {
        bool slash = run == 200 && at + 1 < n;
        p[at] = slash ? '/' : (char)('a' + at % 26);
        if (slash) {
            p[at] = '\0';
            cr_assert(!make || mkdir(p, 0700) == 0 || errno == EEXIST, "mkdir %s: %s", p,
                      strerror(errno));
            p[at] = '/';
            run = 0;
        }
    }
    p[n] = '\0';
    cr_assert(!make || mkdir(p, 0700) == 0 || errno == EEXIST, "mkdir of %zu bytes: %s", n,
              strerror(errno));
    return p;
}

long test_file_bytes(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert(f, "%s: missing", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fclose(f);
    return n;
}

bool test_same_file(const char *a, const char *b)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "cmp -s %s %s", a, b);
    return system(cmd) == 0;
}

int test_topics_run(TestTopics run)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s/topics --steps %d --checkpoint-every %d --out %s --quiet %s "
             "> /dev/null 2>&1", BERTC_EXAMPLES_DIR, run.steps, run.checkpoint_every, run.out,
             run.extra ? run.extra : "");
    int status = system(cmd);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

pid_t test_topics_start(TestTopics run)
{
    char ckpt[300];
    snprintf(ckpt, sizeof ckpt, "%s/checkpoint.safetensors", run.out);
    pid_t pid = fork();
    cr_assert_geq(pid, 0, "fork failed");
    if (pid == 0) {
        char exe[300], steps[16], every[16];
        snprintf(exe, sizeof exe, "%s/topics", BERTC_EXAMPLES_DIR);
        snprintf(steps, sizeof steps, "%d", run.steps);
        snprintf(every, sizeof every, "%d", run.checkpoint_every);
        if (run.log && (!freopen(run.log, "w", stderr) || !freopen("/dev/null", "w", stdout)))
            _exit(126);
        execl(exe, exe, "--steps", steps, "--checkpoint-every", every, "--out", run.out,
              "--quiet", (char *)NULL);
        _exit(127);
    }
    struct timespec pause = {0, 2000000};   /* 2 ms */
    while (access(ckpt, F_OK) != 0)
        nanosleep(&pause, NULL);
    return pid;
}
