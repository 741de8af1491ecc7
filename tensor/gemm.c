/* tensor/gemm.c — C = alpha * op(A) op(B) + beta * C, row-major.
 *
 * The GotoBLAS/BLIS algorithm. op(A) is (M, K), op(B) is (K, N), C is (M, N).
 * Five loops around a micro-kernel that keeps an MR x NR tile of C in
 * registers (tensor/gemm_avx512.c, gemm_avx2.c, gemm_neon.c, or the portable
 * one below):
 *
 *   for jc in N step NC:                 B block KC x NC      (L3)
 *     for pc in K step KC:               one rank-KC update of C
 *       for ic in M step MC:             pack op(A)[ic:+MC, pc:+KC] -> A block (L2)
 *         for jr in NC step NR:          pack op(B)[pc:+KC, jr:+NR] on the first
 *                                        ic block -> B micro-panel (L1), reused
 *                                        by every later ic block
 *           for ir in MC step MR:        micro-kernel: C[ir:+MR, jr:+NR] (+)= A.B
 *
 * Packing copies each operand into the exact order the micro-kernel reads it
 * (tensor/gemm_kernel.h), so the kernel's loads are contiguous and aligned
 * whatever the transposes and leading dimensions, and zero padding turns an
 * edge panel into a full one: only the final store of an edge tile is partial.
 * The first rank-KC update applies beta; later ones add (beta = 1).
 *
 * Threads: a large GEMM is cut into T independent sub-GEMMs along its longer
 * side (N when N >= M, else M), in whole NR (or MR) panels, run by
 * parallel_for. Each thread packs into its own buffers, so threads share
 * nothing but the read-only inputs; the price is that each packs the whole of
 * the shorter operand. A GEMM too small to give each thread ~2^21
 * multiply-adds runs on the calling thread.
 *
 * Pack buffers are allocated once per thread with bertc_sys_alloc and reused;
 * they grow only when a larger block is needed than ever before. */
#include "tensor/tensor.h"
#include "tensor/gemm_kernel.h"

#include <string.h>

/* ------------------------------------------------------------------------ */
/* The reference                                                             */
/* ------------------------------------------------------------------------ */

/* Element (i, p) of op(A) and (p, j) of op(B). */
static inline float a_at(bool trans_a, const float *A, int64_t lda, int64_t i, int64_t p)
{
    return trans_a ? A[p * lda + i] : A[i * lda + p];
}

static inline float b_at(bool trans_b, const float *B, int64_t ldb, int64_t p, int64_t j)
{
    return trans_b ? B[j * ldb + p] : B[p * ldb + j];
}

void gemm_reference(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                    float alpha, const float *A, int64_t lda, const float *B,
                    int64_t ldb, float beta, float *C, int64_t ldc)
{
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double acc = 0.0;
            for (int64_t p = 0; p < K; p++)
                acc += (double)a_at(trans_a, A, lda, i, p) * b_at(trans_b, B, ldb, p, j);
            double c = beta == 0.0f ? 0.0 : (double)beta * C[i * ldc + j];
            C[i * ldc + j] = (float)(alpha * acc + c);
        }
}

/* ------------------------------------------------------------------------ */
/* The portable path: a scalar micro-kernel and packers                      */
/* ------------------------------------------------------------------------ */

enum { SCALAR_MR = 4, SCALAR_NR = 8 };

/* a is the (MR, kc) packed A micro-panel, b the (kc, NR) packed B micro-panel;
 * C (m, n) with row stride ldc gets alpha * a.b + beta * C. */
static void kernel_scalar(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                          float alpha, float beta, int m, int n)
{
    float acc[SCALAR_MR][SCALAR_NR] = {{0}};
    for (int64_t k = 0; k < kc; k++, a += SCALAR_MR, b += SCALAR_NR)
        for (int i = 0; i < SCALAR_MR; i++)
            for (int j = 0; j < SCALAR_NR; j++)
                acc[i][j] += a[i] * b[j];
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            float *cij = c + i * ldc + j;
            *cij = beta == 0.0f ? alpha * acc[i][j] : alpha * acc[i][j] + beta * *cij;
        }
}

void gemm_pack_trans_scalar(const float *src, int64_t ld, int w, int v, int64_t kc,
                            float *dst)
{
    for (int r = 0; r < v; r++)
        for (int64_t k = 0; k < kc; k++)
            dst[k * w + r] = src[r * ld + k];
    for (int64_t k = 0; k < kc; k++)
        for (int r = v; r < w; r++)
            dst[k * w + r] = 0.0f;
}

/* The panel's own index is contiguous in memory (no transpose):
 *     dst[k * w + r] = src[k * ld + r]   for r < v;  0 for v <= r < w. */
static void pack_copy(const float *src, int64_t ld, int w, int v, int64_t kc, float *dst)
{
    for (int64_t k = 0; k < kc; k++, src += ld, dst += w) {
        memcpy(dst, src, sizeof(float) * (size_t)v);
        for (int r = v; r < w; r++)
            dst[r] = 0.0f;
    }
}

/* Small blocks: the portable kernel's panels are small too. */
static const GemmKernel gemm_kernel_scalar = {
    .name = "scalar",
    .mr = SCALAR_MR,
    .nr = SCALAR_NR,
    .mc = 128,
    .kc = 256,
    .nc = 2048,
    .kernel = kernel_scalar,
    .pack_trans = gemm_pack_trans_scalar,
};

static const GemmKernel *kernel_for(CpuIsa isa)
{
    switch (isa) {
#if defined(__x86_64__)
    case ISA_AVX512:
        return &gemm_kernel_avx512;
    case ISA_AVX2:
        return &gemm_kernel_avx2;
#endif
#if defined(__aarch64__)
    case ISA_NEON:
        return &gemm_kernel_neon;
#endif
    default:
        return &gemm_kernel_scalar;
    }
}

/* ------------------------------------------------------------------------ */
/* Packing op(A) and op(B)                                                   */
/* ------------------------------------------------------------------------ */

typedef struct GemmArgs {
    bool trans_a, trans_b;
    int64_t M, N, K;
    float alpha, beta;
    const float *A, *B;
    float *C;
    int64_t lda, ldb, ldc;
} GemmArgs;

/* op(A)[i0:i0+mc, p0:p0+kc] -> ceil(mc / MR) A micro-panels of MR * kc floats. */
static void pack_a_block(const GemmKernel *kr, const GemmArgs *g, int64_t i0, int64_t mc,
                         int64_t p0, int64_t kc, float *dst)
{
    for (int64_t ir = 0; ir < mc; ir += kr->mr, dst += kr->mr * kc) {
        int v = (int)(mc - ir < kr->mr ? mc - ir : kr->mr);
        int64_t i = i0 + ir;
        if (g->trans_a) /* A is (K, M): row p holds op(A)[:, p] */
            pack_copy(g->A + p0 * g->lda + i, g->lda, kr->mr, v, kc, dst);
        else            /* A is (M, K) */
            kr->pack_trans(g->A + i * g->lda + p0, g->lda, kr->mr, v, kc, dst);
    }
}

/* op(B)[p0:p0+kc, j0:j0+n] -> one B micro-panel of kc * NR floats. */
static void pack_b_panel(const GemmKernel *kr, const GemmArgs *g, int64_t j0, int n,
                         int64_t p0, int64_t kc, float *dst)
{
    if (g->trans_b) /* B is (N, K): row j holds op(B)[:, j] */
        kr->pack_trans(g->B + j0 * g->ldb + p0, g->ldb, kr->nr, n, kc, dst);
    else            /* B is (K, N) */
        pack_copy(g->B + p0 * g->ldb + j0, g->ldb, kr->nr, n, kc, dst);
}

/* ------------------------------------------------------------------------ */
/* Per-thread pack buffers                                                   */
/* ------------------------------------------------------------------------ */

#if defined(BERTC_NO_THREADS)
#define GEMM_THREAD_LOCAL
#else
#define GEMM_THREAD_LOCAL _Thread_local
#endif

typedef struct PackBuffer {
    void *raw;      /* from bertc_sys_alloc */
    float *data;    /* 64-byte aligned */
    size_t cap;     /* floats */
} PackBuffer;

static GEMM_THREAD_LOCAL PackBuffer pack_a_buffer, pack_b_buffer;

/* At least `floats` floats, 64-byte aligned; allocates only to grow. */
static float *pack_buffer_get(PackBuffer *p, size_t floats)
{
    if (p->cap < floats) {
        bertc_sys_free(p->raw);
        p->raw = bertc_sys_alloc(floats * sizeof(float) + 64);
        if (!p->raw)
            bertc_fatal("gemm: out of memory for a %zu-float pack buffer", floats);
        p->data = (float *)(((uintptr_t)p->raw + 63) & ~(uintptr_t)63);
        p->cap = floats;
    }
    return p->data;
}

/* ------------------------------------------------------------------------ */
/* The blocked loops                                                         */
/* ------------------------------------------------------------------------ */

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t round_up(int64_t n, int64_t to) { return (n + to - 1) / to * to; }

/* One MC x NC x KC block: C[ic:+mc, jc:+nc] (+)= A block . B block. */
typedef struct Block {
    int64_t ic, mc, jc, nc, pc, kc;
    float beta;       /* g->beta on the first rank-KC update, then 1 */
    bool pack_b;      /* the first ic block packs each B micro-panel */
} Block;

/* The two loops around the micro-kernel: jr over B micro-panels, ir over A's. */
static void macro_kernel(const GemmKernel *kr, const GemmArgs *g, const Block *blk,
                         const float *a_block, float *b_block)
{
    for (int64_t jr = 0; jr < blk->nc; jr += kr->nr) {
        int n = (int)min64(kr->nr, blk->nc - jr);
        float *b = b_block + jr * blk->kc;
        if (blk->pack_b)
            pack_b_panel(kr, g, blk->jc + jr, n, blk->pc, blk->kc, b);
        float *c = g->C + blk->ic * g->ldc + blk->jc + jr;
        for (int64_t ir = 0; ir < blk->mc; ir += kr->mr) {
            int m = (int)min64(kr->mr, blk->mc - ir);
            kr->kernel(blk->kc, a_block + ir * blk->kc, b, c + ir * g->ldc, g->ldc, g->alpha,
                       blk->beta, m, n);
        }
    }
}

/* C[m0:m1, n0:n1] = alpha * op(A)[m0:m1, :] op(B)[:, n0:n1] + beta * C[m0:m1, n0:n1]. */
static void gemm_blocked(const GemmKernel *kr, const GemmArgs *g, int64_t m0, int64_t m1,
                         int64_t n0, int64_t n1)
{
    int64_t kc_max = min64(kr->kc, g->K);
    float *a_block = pack_buffer_get(
        &pack_a_buffer, (size_t)(round_up(min64(kr->mc, m1 - m0), kr->mr) * kc_max));
    float *b_block = pack_buffer_get(
        &pack_b_buffer, (size_t)(round_up(min64(kr->nc, n1 - n0), kr->nr) * kc_max));
    Block blk;
    for (blk.jc = n0; blk.jc < n1; blk.jc += kr->nc) {
        blk.nc = min64(kr->nc, n1 - blk.jc);
        for (blk.pc = 0; blk.pc < g->K; blk.pc += kr->kc) {
            blk.kc = min64(kr->kc, g->K - blk.pc);
            blk.beta = blk.pc == 0 ? g->beta : 1.0f;
            for (blk.ic = m0; blk.ic < m1; blk.ic += kr->mc) {
                blk.mc = min64(kr->mc, m1 - blk.ic);
                blk.pack_b = blk.ic == m0;
                pack_a_block(kr, g, blk.ic, blk.mc, blk.pc, blk.kc, a_block);
                macro_kernel(kr, g, &blk, a_block, b_block);
            }
        }
    }
}

/* ------------------------------------------------------------------------ */
/* Threads and the public entry points                                       */
/* ------------------------------------------------------------------------ */

/* Multiply-adds below which a thread is not worth waking (~20-50 us of work). */
#define GEMM_MIN_TASK_WORK (1 << 21)

/* T sub-GEMMs: along N (in NR panels) when split_n, else along M (MR panels). */
typedef struct GemmTasks {
    const GemmKernel *kr;
    const GemmArgs *g;
    int64_t count;
    bool split_n;
} GemmTasks;

static void gemm_task_range(void *ctx, int64_t begin, int64_t end)
{
    const GemmTasks *t = ctx;
    const GemmArgs *g = t->g;
    int64_t unit = t->split_n ? t->kr->nr : t->kr->mr;
    int64_t len = t->split_n ? g->N : g->M;
    int64_t units = (len + unit - 1) / unit;
    for (int64_t i = begin; i < end; i++) {
        int64_t lo = min64(len, units * i / t->count * unit);
        int64_t hi = min64(len, units * (i + 1) / t->count * unit);
        if (lo >= hi)
            continue;
        if (t->split_n)
            gemm_blocked(t->kr, g, 0, g->M, lo, hi);
        else
            gemm_blocked(t->kr, g, lo, hi, 0, g->N);
    }
}

/* How many sub-GEMMs are worth running in parallel (1 = stay serial). */
static int64_t gemm_task_count(const GemmKernel *kr, const GemmArgs *g, bool split_n)
{
    double work = (double)g->M * (double)g->N * (double)g->K;
    int64_t t = threads_count();
    int64_t by_work = (int64_t)(work / GEMM_MIN_TASK_WORK);
    int64_t by_panels = split_n ? (g->N + kr->nr - 1) / kr->nr : (g->M + kr->mr - 1) / kr->mr;
    t = min64(t, min64(by_work, by_panels));
    return t < 1 ? 1 : t;
}

/* C = beta * C, with beta == 0 writing zeros (never reading C). */
static void scale_c(int64_t M, int64_t N, float beta, float *C, int64_t ldc)
{
    for (int64_t i = 0; i < M; i++) {
        float *c = C + i * ldc;
        if (beta == 0.0f)
            memset(c, 0, sizeof(float) * (size_t)N);
        else if (beta != 1.0f)
            for (int64_t j = 0; j < N; j++)
                c[j] *= beta;
    }
}

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
          const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
          float *C, int64_t ldc)
{
    if (M <= 0 || N <= 0)
        return;
    if (K <= 0 || alpha == 0.0f) { /* BLAS: A and B are not read */
        scale_c(M, N, beta, C, ldc);
        return;
    }
    GemmArgs g = {.trans_a = trans_a, .trans_b = trans_b, .M = M, .N = N, .K = K,
                  .alpha = alpha, .beta = beta, .A = A, .B = B, .C = C,
                  .lda = lda, .ldb = ldb, .ldc = ldc};
    GemmTasks tasks = {.kr = kernel_for(cpu_isa()), .g = &g, .split_n = N >= M};
    tasks.count = gemm_task_count(tasks.kr, &g, tasks.split_n);
    if (tasks.count == 1)
        gemm_blocked(tasks.kr, &g, 0, M, 0, N);
    else
        parallel_for(tasks.count, gemm_task_range, &tasks);
}

/* Batch entries handed to one thread each (batch_range). */
typedef struct GemmBatch {
    bool trans_a, trans_b;
    int64_t M, N, K, lda, ldb, ldc, stride_a, stride_b, stride_c;
    float alpha, beta;
    const float *A, *B;
    float *C;
} GemmBatch;

static void batch_range(void *ctx, int64_t begin, int64_t end)
{
    const GemmBatch *b = ctx;
    for (int64_t i = begin; i < end; i++)
        gemm(b->trans_a, b->trans_b, b->M, b->N, b->K, b->alpha, b->A + i * b->stride_a,
             b->lda, b->B + i * b->stride_b, b->ldb, b->beta, b->C + i * b->stride_c, b->ldc);
}

/* Many small GEMMs (attention heads) run one per thread, each serial inside
 * (a nested parallel_for runs in its caller); big ones thread internally. */
void gemm_batched(bool trans_a, bool trans_b, int64_t batch, int64_t M, int64_t N,
                  int64_t K, float alpha, const float *A, int64_t lda, int64_t stride_a,
                  const float *B, int64_t ldb, int64_t stride_b, float beta, float *C,
                  int64_t ldc, int64_t stride_c)
{
    GemmBatch b = {.trans_a = trans_a, .trans_b = trans_b, .M = M, .N = N, .K = K,
                   .lda = lda, .ldb = ldb, .ldc = ldc, .stride_a = stride_a,
                   .stride_b = stride_b, .stride_c = stride_c, .alpha = alpha,
                   .beta = beta, .A = A, .B = B, .C = C};
    double one = (double)M * (double)N * (double)K;
    bool small = one < (double)GEMM_MIN_TASK_WORK * threads_count();
    if (batch > 1 && small && one * (double)batch >= 2.0 * GEMM_MIN_TASK_WORK)
        parallel_for(batch, batch_range, &b);
    else
        batch_range(&b, 0, batch);
}
