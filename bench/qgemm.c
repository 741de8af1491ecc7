/* bench/qgemm.c — the int8 GEMM (bertc_qgemm) on every int8 path this CPU
 * runs, and the bf16 GEMM (bertc_bgemm) on its default path (and on
 * avx512bf16 too when the default is amxbf16), against bertc's fp32 GEMM on
 * the same Linear, in the same run.
 *
 *   build/bench/qgemm [--threads N] [--reps R] [--scalar] [--cpu]
 *
 * A Linear y (M, N) = x (M, K) W^T + b as inference runs it: fp32 through
 * bertc_gemm_prepacked (W packed once), int8 through bertc_qgemm (W
 * quantised and packed once; x quantised inside every call, which is timed),
 * bf16 through bertc_bgemm (W rounded and packed once; x rounded to bf16
 * inside every call, timed too).
 * Shapes: M = 128 and 1024 tokens x BERT-base's (N, K) = (768, 768),
 * (3072, 768), (768, 3072); 1 and 2 threads unless --threads. The runs
 * alternate (fp32, then each path, R times) and each keeps its best time, so
 * a burst of load from another process hits them alike; on a shared machine
 * read the ratios, not the absolute rates. int8 is counted in GOPS (2 M N K
 * integer ops per call, like fp32's GFLOP/s); bf16 in GFLOP/s. --scalar adds
 * the portable int8 path (slow: ~100x). --cpu times by the process's CPU time
 * instead of the wall clock: on a machine with more runnable processes than cores, a run of
 * a few ms is often preempted and its wall time says little, while its CPU
 * time still counts only the work (with 2 threads, the rate is then per
 * CPU-second of both threads together). */
#include "tensor/tensor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static clockid_t bench_clock = CLOCK_MONOTONIC;   /* --cpu: CLOCK_PROCESS_CPUTIME_ID */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(bench_clock, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *alloc64(size_t bytes)
{
    void *p = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!p) {
        fprintf(stderr, "qgemm: out of memory for %zu bytes\n", bytes);
        exit(1);
    }
    return p;
}

static void fill(float *x, int64_t n, Rng *rng, float scale)
{
    for (int64_t i = 0; i < n; i++)
        x[i] = scale * (float)(2.0 * bertc_rng_uniform(rng) - 1.0);
}

/* One Linear shape, with every operand ready for both kernels. */
typedef struct Shape {
    int64_t M, N, K;
    float *x, *W, *b, *y, *Wpacked, *sw;
    int8_t *qw;
    GemmPackedB fp32;
    void *bf16_mem;
    Bf16PackedB bf16;
} Shape;

static Shape make_shape(int64_t M, int64_t N, int64_t K, Rng *rng)
{
    Shape s = {.M = M, .N = N, .K = K};
    s.x = alloc64(sizeof(float) * (size_t)(M * K));
    s.W = alloc64(sizeof(float) * (size_t)(N * K));
    s.b = alloc64(sizeof(float) * (size_t)N);
    s.y = alloc64(sizeof(float) * (size_t)(M * N));
    s.sw = alloc64(sizeof(float) * (size_t)N);
    s.qw = alloc64((size_t)(N * K));
    fill(s.x, M * K, rng, 1.0f);
    fill(s.W, N * K, rng, 0.05f);
    fill(s.b, N, rng, 0.1f);
    s.Wpacked = alloc64(sizeof(float) * bertc_gemm_packed_b_floats(K, N));
    bertc_gemm_pack_b(true, K, N, s.W, K, s.Wpacked, &s.fp32);   /* op(B) = W^T */
    bertc_quantize_rows(s.W, N, K, K, s.qw, s.sw);
    s.bf16_mem = alloc64(bertc_bgemm_packed_bytes(N, K));
    bertc_bgemm_pack_b_f32(s.W, N, K, s.bf16_mem, &s.bf16);
    return s;
}

static void free_shape(Shape *s)
{
    free(s->x), free(s->W), free(s->b), free(s->y), free(s->sw), free(s->qw), free(s->Wpacked);
    free(s->bf16_mem);
}

/* Seconds of one fp32 Linear (the bias add is the row kernel's job in bertc's
 * fp32 path, so it is left out here: the int8 side carries it). */
static double time_fp32(Shape *s)
{
    double t0 = now_s();
    bertc_gemm_prepacked(false, s->M, 1.0f, s->x, s->K, &s->fp32, 0.0f, s->y, s->N);
    return now_s() - t0;
}

static double time_int8(Shape *s, const QuantPackedB *pb)
{
    double t0 = now_s();
    bertc_qgemm(s->M, s->x, s->K, pb, s->b, s->y, s->N);
    return now_s() - t0;
}

static double time_bf16(Shape *s)
{
    double t0 = now_s();
    bertc_bgemm(s->M, s->x, s->K, &s->bf16, s->b, s->y, s->N);
    return now_s() - t0;
}

typedef struct Paths {
    int n, n_bf16;
    BgemmIsa bf16[2];   /* the default bf16 path, then avx512bf16 if that is amxbf16 */
    QgemmIsa isa[QGEMM_ISA_COUNT];
    void *mem[QGEMM_ISA_COUNT];
    QuantPackedB pb[QGEMM_ISA_COUNT];
} Paths;

/* Every path's packing of this shape's weight (each path has its own). */
static void pack_paths(Paths *p, const Shape *s)
{
    for (int i = 0; i < p->n; i++) {
        bertc_qgemm_set_isa(p->isa[i]);
        p->mem[i] = alloc64(bertc_qgemm_packed_bytes(s->N, s->K));
        bertc_qgemm_pack_b(s->qw, s->sw, s->N, s->K, p->mem[i], &p->pb[i]);
    }
}

static void bench_shape(Shape *s, Paths *p, int threads, int reps)
{
    bertc_threads_set_count(threads);
    pack_paths(p, s);
    double best_fp32 = 1e30, best_bf16[2] = {1e30, 1e30}, best[QGEMM_ISA_COUNT];
    for (int i = 0; i < p->n; i++)
        best[i] = 1e30;
    for (int r = 0; r < reps; r++) {
        double t = time_fp32(s);
        best_fp32 = t < best_fp32 ? t : best_fp32;
        for (int i = 0; i < p->n; i++) {
            bertc_qgemm_set_isa(p->isa[i]);
            t = time_int8(s, &p->pb[i]);
            best[i] = t < best[i] ? t : best[i];
        }
        for (int i = 0; i < p->n_bf16; i++) {   /* one packed W serves every bf16 path */
            bertc_bgemm_set_isa(p->bf16[i]);
            t = time_bf16(s);
            best_bf16[i] = t < best_bf16[i] ? t : best_bf16[i];
        }
    }
    double ops = 2.0 * (double)s->M * (double)s->N * (double)s->K;
    printf("%5lld %5lld %5lld %2d  fp32 %6.1f GFLOP/s", (long long)s->M, (long long)s->N,
           (long long)s->K, threads, ops / best_fp32 * 1e-9);
    for (int i = 0; i < p->n; i++) {
        printf("  %s %6.1f GOPS (%.2fx)", bertc_qgemm_isa_name(p->isa[i]), ops / best[i] * 1e-9,
               best_fp32 / best[i]);
        free(p->mem[i]);
    }
    for (int i = 0; i < p->n_bf16; i++)
        printf("  bf16 %s %6.1f GFLOP/s (%.2fx)", bertc_bgemm_isa_name(p->bf16[i]),
               ops / best_bf16[i] * 1e-9, best_fp32 / best_bf16[i]);
    printf("\n");
    fflush(stdout);
}

int main(int argc, char **argv)
{
    BertcError err;
    if (bertc_check_env(&err) != 0) {
        fprintf(stderr, "qgemm: %s\n", err.msg);
        return 2;
    }
    int threads_only = 0, reps = 5;
    bool scalar = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            threads_only = atoi(argv[++i]);
        else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--scalar") == 0)
            scalar = true;
        else if (strcmp(argv[i], "--cpu") == 0)
            bench_clock = CLOCK_PROCESS_CPUTIME_ID;
        else {
            fprintf(stderr, "usage: %s [--threads N] [--reps R] [--scalar] [--cpu]\n", argv[0]);
            return 2;
        }
    }
    if (reps < 1 || threads_only < 0 || threads_only > THREADS_MAX) {
        fprintf(stderr, "qgemm: --reps must be >= 1 and --threads 1..%d\n", THREADS_MAX);
        return 2;
    }
    Paths paths = {0};
    for (int i = 0; i < QGEMM_ISA_COUNT; i++)
        if (bertc_qgemm_isa_supported((QgemmIsa)i) && (scalar || i != QGEMM_ISA_SCALAR))
            paths.isa[paths.n++] = (QgemmIsa)i;
    paths.bf16[paths.n_bf16++] = bertc_bgemm_isa();
    if (paths.bf16[0] == BGEMM_ISA_AMXBF16)
        paths.bf16[paths.n_bf16++] = BGEMM_ISA_AVX512BF16;
    printf("fp32 path %s; int8 default %s; bf16 %s; best of %d alternating runs (%s time); "
           "ratio = int8 or bf16 rate / fp32 rate\n", bertc_cpu_isa_name(bertc_cpu_isa()),
           bertc_qgemm_isa_name(bertc_qgemm_isa()), bertc_bgemm_isa_name(bertc_bgemm_isa()), reps,
           bench_clock == CLOCK_MONOTONIC ? "wall" : "CPU");
    printf("    M     N     K th\n");
    static const int64_t nk[3][2] = {{768, 768}, {3072, 768}, {768, 3072}};
    static const int64_t ms[2] = {128, 1024};
    Rng rng = bertc_rng_seed(2026);
    for (int m = 0; m < 2; m++)
        for (int s = 0; s < 3; s++) {
            Shape shape = make_shape(ms[m], nk[s][0], nk[s][1], &rng);
            for (int t = 1; t <= 2; t++)
                if (threads_only == 0 || threads_only == t)
                    bench_shape(&shape, &paths, t, reps);
            free_shape(&shape);
        }
    return 0;
}
