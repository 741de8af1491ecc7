/* bench/gemm.c — GFLOP/s of bertc's bertc_gemm(), optionally against OpenBLAS.
 *
 *   build/bench/gemm [--threads N] [--compare openblas] [--shapes LIST] [--reps R]
 *
 * LIST is comma-separated MxNxK:OP items, OP one of NN NT TN TT, e.g.
 * --shapes 128x768x768:NT,256x256x256:NN. The default list is 256^3, 512^3,
 * 1024^3 and the BERT Linear shapes (M = 128 and 1024 tokens; K -> N of
 * 768->768, 768->3072, 3072->768, 768->2304), each as NN, NT and TN.
 *
 * One line per shape: M N K op bertc_GFLOPs ref_GFLOPs ratio. A "run" repeats
 * the GEMM for at least ~20 ms; runs alternate bertc, reference, bertc, ... R
 * times each (so both see the same machine noise), and the best run of each is
 * reported. OpenBLAS is loaded with dlopen at run time, set to the same thread
 * count, and never linked; its result is also checked against bertc's.
 *
 * OpenBLAS's idle threads spin (sched_yield) for ~2^28 cycles after each call;
 * with alternating runs they would steal a core from bertc's next run. Unless
 * the user set it, OPENBLAS_THREAD_TIMEOUT=4 (2^4 cycles) makes them sleep at
 * once, as bertc's do after a short spin, so neither run pays for the other. */
#include "tensor/kernels_internal.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct Shape {
    int64_t M, N, K;
    bool ta, tb;
} Shape;

/* cblas_sgemm(order, transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc) */
typedef void (*CblasSgemm)(int, int, int, int, int, int, float, const float *, int,
                           const float *, int, float, float *, int);
typedef void (*OpenblasSetThreads)(int);
enum { CBLAS_ROW_MAJOR = 101, CBLAS_NO_TRANS = 111, CBLAS_TRANS = 112 };

static CblasSgemm ref_sgemm;

static int load_openblas(int threads)
{
    const char *names[] = {"libopenblas.so.0", "libopenblas.so"};
    setenv("OPENBLAS_THREAD_TIMEOUT", "4", 0); /* read when the library loads */
    void *lib = NULL;
    for (int i = 0; i < 2 && !lib; i++)
        lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "gemm bench: cannot dlopen OpenBLAS (%s); install libopenblas-dev\n",
                dlerror());
        return -1;
    }
    OpenblasSetThreads set_threads;
    *(void **)&ref_sgemm = dlsym(lib, "cblas_sgemm");
    *(void **)&set_threads = dlsym(lib, "openblas_set_num_threads");
    if (!ref_sgemm || !set_threads) {
        fprintf(stderr, "gemm bench: OpenBLAS lacks cblas_sgemm/openblas_set_num_threads\n");
        return -1;
    }
    set_threads(threads);
    return 0;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Operands of one shape: A is (M, K) or (K, M) when ta; B is (K, N) or (N, K). */
typedef struct Operands {
    Shape s;
    float *A, *B, *C;
    int64_t lda, ldb, ldc;
} Operands;

static void run_bertc(const Operands *o)
{
    bertc_gemm(o->s.ta, o->s.tb, o->s.M, o->s.N, o->s.K, 1.0f, o->A, o->lda, o->B, o->ldb, 0.0f,
         o->C, o->ldc);
}

static void run_ref(const Operands *o)
{
    ref_sgemm(CBLAS_ROW_MAJOR, o->s.ta ? CBLAS_TRANS : CBLAS_NO_TRANS,
              o->s.tb ? CBLAS_TRANS : CBLAS_NO_TRANS, (int)o->s.M, (int)o->s.N, (int)o->s.K,
              1.0f, o->A, (int)o->lda, o->B, (int)o->ldb, 0.0f, o->C, (int)o->ldc);
}

/* Seconds per call, averaged over `reps` back-to-back calls. */
static double time_run(void (*run)(const Operands *), const Operands *o, int reps)
{
    double t0 = now_seconds();
    for (int i = 0; i < reps; i++)
        run(o);
    return (now_seconds() - t0) / reps;
}

static float *random_matrix(int64_t n, Rng *rng)
{
    float *x = malloc(sizeof(float) * (size_t)n);
    if (!x) {
        fprintf(stderr, "gemm bench: out of memory\n");
        exit(1);
    }
    for (int64_t i = 0; i < n; i++)
        x[i] = (float)(2.0 * bertc_rng_uniform(rng) - 1.0);
    return x;
}

/* max |bertc - reference| over C, relative to sqrt(K) (entries of C ~ sqrt(K)). */
static void check_against_ref(const Operands *o)
{
    int64_t n = o->s.M * o->s.N;
    float *mine = malloc(sizeof(float) * (size_t)n);
    run_bertc(o);
    memcpy(mine, o->C, sizeof(float) * (size_t)n);
    run_ref(o);
    double worst = 0.0;
    for (int64_t i = 0; i < n; i++)
        worst = fmax(worst, fabs((double)mine[i] - o->C[i]));
    if (worst > 1e-5 * (double)o->s.K)
        fprintf(stderr, "gemm bench: bertc and OpenBLAS differ by %g\n", worst);
    free(mine);
}

static void bench_shape(Shape s, bool compare, int reps, Rng *rng)
{
    Operands o = {.s = s, .lda = s.ta ? s.M : s.K, .ldb = s.tb ? s.K : s.N, .ldc = s.N};
    o.A = random_matrix(s.M * s.K, rng);
    o.B = random_matrix(s.K * s.N, rng);
    o.C = random_matrix(s.M * s.N, rng);
    double flops = 2.0 * (double)s.M * (double)s.N * (double)s.K;
    double once = time_run(run_bertc, &o, 1); /* warm-up, and sizes a run */
    int inner = once > 0.02 ? 1 : (int)(0.02 / fmax(once, 1e-7)) + 1;
    if (compare)
        check_against_ref(&o);
    double best_mine = 1e30, best_ref = 1e30;
    for (int r = 0; r < reps; r++) {
        best_mine = fmin(best_mine, time_run(run_bertc, &o, inner));
        if (compare)
            best_ref = fmin(best_ref, time_run(run_ref, &o, inner));
    }
    char op[3] = {s.ta ? 'T' : 'N', s.tb ? 'T' : 'N', 0};
    double mine = flops / best_mine * 1e-9, ref = flops / best_ref * 1e-9;
    if (compare)
        printf("%6lld %6lld %6lld %s %12.1f %12.1f %6.2f\n", (long long)s.M, (long long)s.N,
               (long long)s.K, op, mine, ref, mine / ref);
    else
        printf("%6lld %6lld %6lld %s %12.1f %12s %6s\n", (long long)s.M, (long long)s.N,
               (long long)s.K, op, mine, "-", "-");
    fflush(stdout);
    free(o.A);
    free(o.B);
    free(o.C);
}

/* "MxNxK:OP" -> shape; false if malformed. */
static bool parse_shape(const char *item, Shape *s)
{
    long long m, n, k;
    char op[3];
    if (sscanf(item, "%lldx%lldx%lld:%2[NT]", &m, &n, &k, op) != 4 || strlen(op) != 2)
        return false;
    if (m < 1 || n < 1 || k < 1)
        return false;
    *s = (Shape){.M = m, .N = n, .K = k, .ta = op[0] == 'T', .tb = op[1] == 'T'};
    return true;
}

/* The default list: squares, then BERT Linear layers, each as NN, NT, TN. */
static int default_shapes(Shape *out)
{
    const int64_t mnk[][3] = {
        {256, 256, 256},   {512, 512, 512},   {1024, 1024, 1024},
        {128, 768, 768},   {128, 3072, 768},  {128, 768, 3072},  {128, 2304, 768},
        {1024, 768, 768},  {1024, 3072, 768}, {1024, 768, 3072}, {1024, 2304, 768},
    };
    const bool ops[3][2] = {{false, false}, {false, true}, {true, false}};
    int n = 0;
    for (size_t i = 0; i < sizeof mnk / sizeof mnk[0]; i++)
        for (int j = 0; j < 3; j++)
            out[n++] = (Shape){.M = mnk[i][0], .N = mnk[i][1], .K = mnk[i][2],
                               .ta = ops[j][0], .tb = ops[j][1]};
    return n;
}

#define MAX_SHAPES 256

static int parse_shapes(const char *list, Shape *out)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", list);
    int n = 0;
    for (char *item = strtok(buf, ","); item && n < MAX_SHAPES; item = strtok(NULL, ",")) {
        if (!parse_shape(item, &out[n])) {
            fprintf(stderr, "gemm bench: bad shape '%s' (want MxNxK:OP, e.g. 128x768x768:NT)\n",
                    item);
            exit(2);
        }
        n++;
    }
    return n;
}

static void usage(void)
{
    fprintf(stderr, "usage: gemm [--threads N] [--compare openblas] [--shapes MxNxK:OP,...] "
                    "[--reps R]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    static Shape shapes[MAX_SHAPES];
    int n_shapes = 0, reps = 5, threads = bertc_threads_count();
    bool compare = false;
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc)
            usage();
        if (strcmp(argv[i], "--threads") == 0)
            threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--reps") == 0)
            reps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--shapes") == 0)
            n_shapes = parse_shapes(argv[++i], shapes);
        else if (strcmp(argv[i], "--compare") == 0 && strcmp(argv[i + 1], "openblas") == 0)
            compare = true, i++;
        else
            usage();
    }
    if (n_shapes == 0)
        n_shapes = default_shapes(shapes);
    if (reps < 1 || threads < 1)
        usage();
    bertc_threads_set_count(threads);
    if (compare && load_openblas(threads) != 0)
        return 1;
    printf("# gemm: isa %s, %d thread(s), best of %d runs%s\n", bertc_cpu_isa_name(bertc_cpu_isa()),
           bertc_threads_count(), reps, compare ? ", reference OpenBLAS (alternating)" : "");
    printf("%6s %6s %6s %s %12s %12s %6s\n", "M", "N", "K", "op", "bertc_GFLOPs", "ref_GFLOPs", "ratio");
    Rng rng = bertc_rng_seed(1234);
    for (int i = 0; i < n_shapes; i++)
        bench_shape(shapes[i], compare, reps, &rng);
    return 0;
}
