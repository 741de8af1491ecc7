/* bench/gemm.c — GFLOP/s of bertc's bertc_gemm(), optionally against the best
 * reference SGEMMs this machine has (bench/gemm_refs.h):
 *
 *   build/bench/gemm [--threads N] [--compare openblas|onednn|blis|all|A,B]
 *                    [--isa avx2|avx512|scalar] [--shapes LIST] [--reps R]
 *                    [--clock wall|cpu] [--settle MS]
 *   build/bench/gemm --openblas-coretype
 *
 * LIST is comma-separated MxNxK:OP items, OP one of NN NT TN TT, e.g.
 * --shapes 128x768x768:NT,256x256x256:NN. The default list is 256^3, 512^3,
 * 1024^3 and BERT-base's Linear shapes at M = 128 and 1024 tokens: K -> N of
 * 768->768 (a query, key or value alone, and the attention output),
 * 768->2304 (query, key and value fused in one product), 768->3072 and
 * 3072->768, each as NN, NT and TN.
 *
 * Each reference (OpenBLAS, oneDNN's dnnl_sgemm, BLIS) is loaded with dlopen
 * when installed (bench/install_refs.sh, `make bench-refs`), never linked, at
 * the same thread count and at its best kernels for this CPU: the header lines
 * say which core/ISA/arch and how many threads each used. --isa avx2 runs
 * bertc's AVX2 path (BERTC_ISA=avx2) against references limited to AVX2 as
 * well (OPENBLAS_CORETYPE=Haswell, DNNL_MAX_CPU_ISA=AVX2, BLIS haswell): the
 * laptop case.
 *
 * One line per shape: M N K op, bertc's GFLOP/s, each reference's, bertc's
 * ratio to the best reference (> 1: bertc faster), and bertc's and the best
 * reference's share of the peak: the single-core FMA peak, measured with a
 * short loop of independent FMAs on the active ISA, times the thread count.
 * A "run" repeats the GEMM for at least ~20 ms; runs alternate bertc, then
 * each reference, R times (so all see the same machine noise), and the best
 * run of each is reported. Each reference's result is checked against bertc's.
 * The last line is each side's CPU time over wall time in its timed runs:
 * the cores it really used. --clock cpu (one thread only) times each run by
 * the process's CPU time instead of the wall clock: on a machine shared with
 * other jobs, a run that loses its core for a while is not counted slow.
 * --settle MS sleeps MS milliseconds before every timed run (default 50 with
 * more than one thread, else 0), so the previous side's idle threads have
 * stopped spinning (settle()).
 *
 * --openblas-coretype prints the OPENBLAS_CORETYPE that gives OpenBLAS its
 * best kernels here ("-": leave it unset) and why, for bench/compare.sh to
 * give PyTorch's OpenBLAS the same. */
#include "bench/gemm_refs.h"
#include "tensor/kernels_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <time.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

typedef struct Shape {
    int64_t M, N, K;
    bool ta, tb;
} Shape;

static Ref refs[REF_COUNT];

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

static void run_ref(const Ref *r, const Operands *o)
{
    RefCall c = {.ta = o->s.ta, .tb = o->s.tb, .M = o->s.M, .N = o->s.N, .K = o->s.K,
                 .A = o->A, .B = o->B, .C = o->C, .lda = o->lda, .ldb = o->ldb, .ldc = o->ldc};
    r->sgemm(r, &c);
}

static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           1e-6 * (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

/* Wall and CPU seconds a side spent in its timed runs, over every shape. */
typedef struct Usage {
    double wall, cpu;
} Usage;

/* --clock cpu: runs are timed by the process's CPU time, not the wall clock. */
static bool cpu_clock;
/* --settle MS: idle time before each timed run (see settle()). */
static int settle_ms = -1;

/* Sleeps settle_ms milliseconds: the threads of the side that ran last
 * (OpenMP's spin-wait after a parallel region, OpenBLAS's server threads,
 * bertc's pool) stop spinning before the next side is timed, so no side
 * loses cores to another's idle threads. Without it the side after an OpenMP
 * library got 1.6-1.7 of 2 cores where it gets 1.9 alone. */
static void settle(void)
{
    if (settle_ms <= 0)
        return;
    struct timespec ts = {.tv_sec = settle_ms / 1000, .tv_nsec = (long)(settle_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Seconds per call, averaged over `reps` back-to-back calls; side r (NULL:
 * bertc). Adds the run's wall and CPU time to *u. */
static double time_run(const Ref *r, const Operands *o, int reps, Usage *u)
{
    settle();
    double c0 = cpu_seconds(), t0 = now_seconds();
    for (int i = 0; i < reps; i++) {
        if (r)
            run_ref(r, o);
        else
            run_bertc(o);
    }
    double wall = now_seconds() - t0, cpu = cpu_seconds() - c0;
    u->wall += wall;
    u->cpu += cpu;
    return (cpu_clock ? cpu : wall) / reps;
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

/* max |bertc - reference| over C, relative to K (entries of C ~ sqrt(K)). */
static void check_against_ref(const Ref *r, const Operands *o)
{
    int64_t n = o->s.M * o->s.N;
    float *mine = malloc(sizeof(float) * (size_t)n);
    run_bertc(o);
    memcpy(mine, o->C, sizeof(float) * (size_t)n);
    run_ref(r, o);
    double worst = 0.0;
    for (int64_t i = 0; i < n; i++)
        worst = fmax(worst, fabs((double)mine[i] - o->C[i]));
    if (!(worst <= 1e-5 * (double)o->s.K))
        fprintf(stderr, "gemm bench: %lldx%lldx%lld: bertc and %s differ by %g\n",
                (long long)o->s.M, (long long)o->s.N, (long long)o->s.K, r->name, worst);
    free(mine);
}

/* Everything one table row needs besides the shape. */
typedef struct Setup {
    int reps, threads;
    double peak;                     /* single-core FMA peak, GFLOP/s; 0 if unmeasured */
    Usage usage[REF_COUNT + 1];      /* [0] bertc, [1 + i] refs[i] */
} Setup;

static void print_percent(double gflops, const Setup *st)
{
    if (st->peak > 0.0 && gflops > 0.0)
        printf(" %6.0f%%", 100.0 * gflops / (st->peak * st->threads));
    else
        printf(" %7s", "-");
}

static void bench_shape(Shape s, Setup *st, Rng *rng)
{
    Operands o = {.s = s, .lda = s.ta ? s.M : s.K, .ldb = s.tb ? s.K : s.N, .ldc = s.N};
    o.A = random_matrix(s.M * s.K, rng);
    o.B = random_matrix(s.K * s.N, rng);
    o.C = random_matrix(s.M * s.N, rng);
    double flops = 2.0 * (double)s.M * (double)s.N * (double)s.K;
    Usage warm = {0};
    double once = time_run(NULL, &o, 1, &warm); /* warm-up, and sizes a run */
    int inner = once > 0.02 ? 1 : (int)(0.02 / fmax(once, 1e-7)) + 1;
    for (int i = 0; i < REF_COUNT; i++)
        if (refs[i].sgemm)
            check_against_ref(&refs[i], &o); /* also the references' warm-up (JIT, buffers) */
    double best[REF_COUNT + 1];
    for (int i = 0; i <= REF_COUNT; i++)
        best[i] = 1e30;
    for (int r = 0; r < st->reps; r++) {
        best[0] = fmin(best[0], time_run(NULL, &o, inner, &st->usage[0]));
        for (int i = 0; i < REF_COUNT; i++)
            if (refs[i].sgemm)
                best[1 + i] = fmin(best[1 + i], time_run(&refs[i], &o, inner, &st->usage[1 + i]));
    }
    char op[3] = {s.ta ? 'T' : 'N', s.tb ? 'T' : 'N', 0};
    double mine = flops / best[0] * 1e-9, best_ref = 0.0;
    printf("%5lld %5lld %5lld %s %8.1f", (long long)s.M, (long long)s.N, (long long)s.K, op, mine);
    for (int i = 0; i < REF_COUNT; i++)
        if (refs[i].sgemm) {
            double g = flops / best[1 + i] * 1e-9;
            best_ref = fmax(best_ref, g);
            printf(" %8.1f", g);
        }
    if (best_ref > 0.0)
        printf(" %6.2f", mine / best_ref);
    else
        printf(" %6s", "-");
    print_percent(mine, st);
    print_percent(best_ref, st);
    printf("\n");
    fflush(stdout);
    free(o.A);
    free(o.B);
    free(o.C);
}

/* --- the single-core FMA peak ------------------------------------------- */

#if defined(__x86_64__)
/* `iters` rounds of 16 independent 16-wide FMAs (enough to cover the FMA
 * latency on every unit); returns a sum so the work is kept. */
__attribute__((target("avx512f"))) static float fma_loop_avx512(long iters)
{
    __m512 acc[16], m = _mm512_set1_ps(0.999999f), a = _mm512_set1_ps(1e-7f);
    for (int j = 0; j < 16; j++)
        acc[j] = _mm512_set1_ps((float)j);
    for (long i = 0; i < iters; i++)
#pragma GCC unroll 16
        for (int j = 0; j < 16; j++)
            acc[j] = _mm512_fmadd_ps(acc[j], m, a);
    for (int j = 1; j < 16; j++)
        acc[0] = _mm512_add_ps(acc[0], acc[j]);
    return _mm512_reduce_add_ps(acc[0]);
}

/* 12 independent 8-wide FMAs per round (16 ymm registers). */
__attribute__((target("avx2,fma"))) static float fma_loop_avx2(long iters)
{
    __m256 acc[12], m = _mm256_set1_ps(0.999999f), a = _mm256_set1_ps(1e-7f);
    for (int j = 0; j < 12; j++)
        acc[j] = _mm256_set1_ps((float)j);
    for (long i = 0; i < iters; i++)
#pragma GCC unroll 12
        for (int j = 0; j < 12; j++)
            acc[j] = _mm256_fmadd_ps(acc[j], m, a);
    for (int j = 1; j < 12; j++)
        acc[0] = _mm256_add_ps(acc[0], acc[j]);
    float v[8];
    _mm256_storeu_ps(v, acc[0]);
    return v[0] + v[7];
}
#endif

/* GFLOP/s of one core running FMAs on `isa`'s widest vectors, best of 5
 * ~10 ms runs; 0 when no loop exists for it (scalar, NEON). */
static double measure_fma_peak(CpuIsa isa)
{
#if defined(__x86_64__)
    if (isa != ISA_AVX512 && isa != ISA_AVX2)
        return 0.0;
    double per_iter = isa == ISA_AVX512 ? 16 * 16 * 2 : 12 * 8 * 2, best = 0.0;
    long iters = 1 << 20;
    volatile float sink = 0.0f;
    for (int r = 0; r < 5; r++) {
        double t0 = now_seconds();
        sink += isa == ISA_AVX512 ? fma_loop_avx512(iters) : fma_loop_avx2(iters);
        double t = now_seconds() - t0;
        best = fmax(best, per_iter * (double)iters / t * 1e-9);
    }
    (void)sink;
    return best;
#else
    (void)isa;
    return 0.0;
#endif
}

/* --- flags and the shape list --------------------------------------------- */

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

/* The default list: squares, then BERT-base's Linear layers, each as NN, NT, TN. */
static int default_shapes(Shape *out)
{
    const int64_t mnk[][3] = {
        {256, 256, 256},  {512, 512, 512},   {1024, 1024, 1024},
        {128, 768, 768},  {128, 2304, 768},  {128, 3072, 768},  {128, 768, 3072},
        {1024, 768, 768}, {1024, 2304, 768}, {1024, 3072, 768}, {1024, 768, 3072},
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

/* "openblas,blis" or "all" -> wanted[]; exits 2 on an unknown name. */
static void parse_compare(const char *list, bool wanted[REF_COUNT])
{
    const char *names[REF_COUNT] = {"openblas", "onednn", "blis"};
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *item = strtok(buf, ","); item; item = strtok(NULL, ",")) {
        bool all = strcasecmp(item, "all") == 0, known = all;
        for (int i = 0; i < REF_COUNT; i++)
            if (all || strcasecmp(item, names[i]) == 0 ||
                (i == REF_ONEDNN && strcasecmp(item, "dnnl") == 0))
                wanted[i] = known = true;
        if (!known) {
            fprintf(stderr, "gemm bench: --compare %s: unknown reference '%s' (want openblas, "
                            "onednn, blis or all)\n", list, item);
            exit(2);
        }
    }
}

static void usage(void)
{
    fprintf(stderr, "usage: gemm [--threads N] [--compare openblas|onednn|blis|all] "
                    "[--isa avx2|avx512|scalar] [--shapes MxNxK:OP,...] [--reps R] "
                    "[--clock wall|cpu] [--settle MS]\n"
                    "       gemm --openblas-coretype\n");
    exit(2);
}

static void print_usage_line(const Setup *st)
{
    printf("# cores used (cpu/wall of the timed runs): bertc %.2f",
           st->usage[0].cpu / fmax(st->usage[0].wall, 1e-9));
    for (int i = 0; i < REF_COUNT; i++)
        if (refs[i].sgemm)
            printf(", %s %.2f", refs[i].name, st->usage[1 + i].cpu / fmax(st->usage[1 + i].wall, 1e-9));
    printf("; wall s: bertc %.1f", st->usage[0].wall);
    for (int i = 0; i < REF_COUNT; i++)
        if (refs[i].sgemm)
            printf(", %s %.1f", refs[i].name, st->usage[1 + i].wall);
    printf("\n");
}

static void print_header(const Setup *st)
{
    printf("# gemm: bertc isa %s, %d thread(s), best of %d alternating runs, timed by %s, "
           "%d ms idle before each\n",
           bertc_cpu_isa_name(bertc_cpu_isa()), bertc_threads_count(), st->reps,
           cpu_clock ? "CPU time (--clock cpu)" : "the wall clock", settle_ms);
    for (int i = 0; i < REF_COUNT; i++)
        if (refs[i].sgemm)
            printf("# %s: %s\n", refs[i].name, refs[i].what);
    if (st->peak > 0.0)
        printf("# FMA peak (measured, one core, %s): %.1f GFLOP/s; %%pk = share of %d x that\n",
               bertc_cpu_isa_name(bertc_cpu_isa()), st->peak, st->threads);
    printf("%5s %5s %5s %s %8s", "M", "N", "K", "op", "bertc");
    for (int i = 0; i < REF_COUNT; i++)
        if (refs[i].sgemm)
            printf(" %8s", refs[i].name);
    printf(" %6s %7s %7s   (GFLOP/s; ratio = bertc / best reference)\n", "ratio", "bertc%pk",
           "ref%pk");
}

int main(int argc, char **argv)
{
    static Shape shapes[MAX_SHAPES];
    int n_shapes = 0, reps = 5, threads = 0;
    bool wanted[REF_COUNT] = {false};
    if (argc == 2 && strcmp(argv[1], "--openblas-coretype") == 0) {
        char why[160];
        refs_openblas_coretype(false, why, sizeof why);
        const char *core = getenv("OPENBLAS_CORETYPE");
        printf("%s %s\n", core ? core : "-", why);
        return 0;
    }
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc)
            usage();
        if (strcmp(argv[i], "--threads") == 0)
            threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--clock") == 0 && strcmp(argv[i + 1], "cpu") == 0)
            cpu_clock = true, i++;
        else if (strcmp(argv[i], "--clock") == 0 && strcmp(argv[i + 1], "wall") == 0)
            cpu_clock = false, i++;
        else if (strcmp(argv[i], "--settle") == 0)
            settle_ms = atoi(argv[++i]);
        else if (strcmp(argv[i], "--reps") == 0)
            reps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--shapes") == 0)
            n_shapes = parse_shapes(argv[++i], shapes);
        else if (strcmp(argv[i], "--compare") == 0)
            parse_compare(argv[++i], wanted);
        else if (strcmp(argv[i], "--isa") == 0)
            setenv("BERTC_ISA", argv[++i], 1);
        else
            usage();
    }
    BertcError err;
    if (bertc_check_env(&err) != 0) {
        fprintf(stderr, "gemm bench: %s\n", err.msg);
        return 2;
    }
    if (n_shapes == 0)
        n_shapes = default_shapes(shapes);
    if (threads == 0)
        threads = bertc_threads_count();
    if (reps < 1 || threads < 1)
        usage();
    if (settle_ms < 0) /* threads sharing cores only matter with several */
        settle_ms = threads > 1 ? 50 : 0;
    if (cpu_clock && threads != 1) {
        fprintf(stderr, "gemm bench: --clock cpu needs --threads 1 (CPU time summed over "
                        "threads is not a speed)\n");
        return 2;
    }
    /* The references load first: OpenBLAS's core probe forks, before any
     * bertc thread exists. */
    bool avx2_only = bertc_cpu_isa() == ISA_AVX2;
    refs_load(refs, wanted, threads, avx2_only);
    bertc_threads_set_count(threads);
    Setup st = {.reps = reps, .threads = threads, .peak = measure_fma_peak(bertc_cpu_isa())};
    print_header(&st);
    Rng rng = bertc_rng_seed(1234);
    for (int i = 0; i < n_shapes; i++)
        bench_shape(shapes[i], &st, &rng);
    print_usage_line(&st);
    return 0;
}
