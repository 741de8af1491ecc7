/* tensor/gemm.c — C = alpha * op(A) op(B) + beta * C, row-major.
 *
 * The GotoBLAS/BLIS algorithm. op(A) is (M, K), op(B) is (K, N), C is (M, N).
 * Five loops around a micro-kernel that keeps an MR x NR tile of C in
 * registers (tensor/gemm_avx512.c, gemm_avx2.c, gemm_neon.c, or the portable
 * one below):
 *
 *   for jc in N step NC:               B block KC x NC, shared by all threads
 *     for pc in K step KC:             one rank-KC update of C
 *       for ic in M step MC:           pack op(A)[ic:+MC, pc:+KC] -> A block (L2)
 *         for jr in NC step NR:        pack op(B)[pc:+KC, jr:+NR] -> B micro-panel
 *                                      (L1), once, on first use
 *           for ir in MC step MR:      micro-kernel: C[ir:+MR, jr:+NR] (+)= A.B
 *
 * Packing copies each operand into the exact order the micro-kernel reads it
 * (tensor/gemm_kernel_internal.h), so the kernel's loads are contiguous and aligned
 * whatever the transposes and leading dimensions, and zero padding turns an
 * edge panel into a full one: only the final store of an edge tile is partial.
 * The first rank-KC update applies beta; later ones add (beta = 1).
 *
 * Threads: each rank-KC update is one bertc_parallel_for. Its (ic, jr) iterations
 * are cut into ~4 work items per thread, which threads take from a shared
 * counter, so a thread slowed by another process simply takes fewer. Each
 * thread packs the A block of its item into its own buffer; each B micro-panel
 * is packed once, by the first thread that needs it, into the shared B block.
 * Every C entry is summed in the same order whatever the thread count, so
 * results are bitwise identical with 1 or many threads. A GEMM too small to
 * give each thread ~2^21 multiply-adds runs on the calling thread.
 *
 * Pack buffers are allocated once per thread with bertc_sys_alloc (or from
 * the arena of bertc_gemm_set_pack_arena) and reused; they grow only when a larger
 * block is needed than ever before.
 *
 * Pre-packed B (bertc_gemm_pack_b, bertc_gemm_prepacked): a B used by many GEMMs — an
 * inference weight — is packed once, panel by panel with the same packers,
 * into one buffer in block order; the loops above then take each B
 * micro-panel from it instead of packing it. */
#include "tensor/kernels_internal.h"
#include "tensor/gemm_kernel_internal.h"

#include <string.h>
#if !defined(BERTC_NO_THREADS)
#include <stdatomic.h>
#endif

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

void bertc_gemm_reference(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
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

void bertc_gemm_pack_trans_scalar(const float *src, int64_t ld, int w, int v, int64_t kc,
                            float *dst)
{
    for (int r = 0; r < v; r++)
        for (int64_t k = 0; k < kc; k++)
            dst[k * w + r] = src[r * ld + k];
    for (int64_t k = 0; k < kc; k++)
        for (int r = v; r < w; r++)
            dst[k * w + r] = 0.0f;
}

void bertc_gemm_pack_copy_scalar(const float *src, int64_t ld, int w, int v, int64_t kc,
                           float *dst)
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
    .pack_trans = bertc_gemm_pack_trans_scalar,
    .pack_copy = bertc_gemm_pack_copy_scalar,
};

static const GemmKernel *kernel_for(CpuIsa isa)
{
    switch (isa) {
#if defined(__x86_64__)
    case ISA_AVX512:
        return &bertc_gemm_kernel_avx512;
    case ISA_AVX2:
        return &bertc_gemm_kernel_avx2;
#endif
#if defined(__aarch64__)
    case ISA_NEON:
        return &bertc_gemm_kernel_neon;
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
            kr->pack_copy(g->A + p0 * g->lda + i, g->lda, kr->mr, v, kc, dst);
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
        kr->pack_copy(g->B + p0 * g->ldb + j0, g->ldb, kr->nr, n, kc, dst);
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
    void *raw;      /* from bertc_sys_alloc, or from pack_arena */
    float *data;    /* 64-byte aligned */
    size_t cap;     /* floats */
    bool in_arena;
} PackBuffer;

static GEMM_THREAD_LOCAL PackBuffer pack_a_buffer, pack_b_buffer;
static Arena *pack_arena;   /* bertc_gemm_set_pack_arena; NULL: the heap */

void bertc_gemm_set_pack_arena(Arena *a)
{
    if (a && bertc_threads_count() > 1)
        bertc_fatal("bertc_gemm_set_pack_arena: needs bertc_threads_count() == 1, not %d", bertc_threads_count());
    PackBuffer *bufs[2] = {&pack_a_buffer, &pack_b_buffer};
    for (int i = 0; i < 2; i++) {
        if (!bufs[i]->in_arena)
            bertc_sys_free(bufs[i]->raw);
        *bufs[i] = (PackBuffer){0};
    }
    pack_arena = a;
}

/* At least `floats` floats, 64-byte aligned; allocates only to grow. */
static float *pack_buffer_get(PackBuffer *p, size_t floats)
{
    if (p->cap < floats) {
        size_t bytes = floats * sizeof(float) + 64;
        if (!p->in_arena)
            bertc_sys_free(p->raw);
        p->in_arena = pack_arena != NULL;
        p->raw = pack_arena ? bertc_arena_alloc(pack_arena, bytes) : bertc_sys_alloc(bytes);
        if (!p->raw)
            bertc_fatal("bertc_gemm: out of memory for a %zu-float pack buffer", floats);
        p->data = (float *)(((uintptr_t)p->raw + 63) & ~(uintptr_t)63);
        p->cap = floats;
    }
    return p->data;
}

/* ------------------------------------------------------------------------ */
/* Sharing the packed B block between threads                                */
/* ------------------------------------------------------------------------ */

/* Each B micro-panel of the current rank-KC update is packed once, by the
 * first thread that needs it; a thread that finds it being packed waits. Work
 * items are handed out by a shared counter. With NO_THREADS these are ints. */
enum { PANEL_EMPTY, PANEL_PACKING, PANEL_READY };

#if defined(BERTC_NO_THREADS)
typedef int PanelState;
typedef int64_t ItemCounter;
static void counter_reset(ItemCounter *c) { *c = 0; }
static int64_t counter_next(ItemCounter *c) { return (*c)++; }
static void panel_reset(PanelState *s) { *s = PANEL_EMPTY; }
static bool panel_claim(PanelState *s) { return *s == PANEL_EMPTY ? (*s = PANEL_PACKING, true) : false; }
static void panel_publish(PanelState *s) { *s = PANEL_READY; }
static bool panel_ready(PanelState *s) { return *s == PANEL_READY; }
#else
typedef atomic_int PanelState;
typedef atomic_int_fast64_t ItemCounter;
static void counter_reset(ItemCounter *c) { atomic_store(c, 0); }
static int64_t counter_next(ItemCounter *c) { return atomic_fetch_add(c, 1); }
static void panel_reset(PanelState *s) { atomic_store(s, PANEL_EMPTY); }
static bool panel_claim(PanelState *s)
{
    int empty = PANEL_EMPTY;
    return atomic_compare_exchange_strong(s, &empty, PANEL_PACKING);
}
static void panel_publish(PanelState *s) { atomic_store(s, PANEL_READY); }
static bool panel_ready(PanelState *s) { return atomic_load(s) == PANEL_READY; }
#endif

/* ------------------------------------------------------------------------ */
/* The blocked loops                                                         */
/* ------------------------------------------------------------------------ */

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t ceil_div(int64_t n, int64_t d) { return (n + d - 1) / d; }

#define GEMM_MAX_PANELS 256   /* B micro-panels in one KC x NC block */

/* One rank-KC update C[:, jc:+nc] (+)= op(A)[:, pc:+kc] op(B)[pc:+kc, jc:+nc],
 * cut into work items: item i covers A block ic = i / items_per_ic (MC rows)
 * and B micro-panels [p0, p0 + panels_per_item), p0 = (i % items_per_ic) * ...
 * Threads take items from `next` until none are left. */
typedef struct RankKc {
    const GemmKernel *kr;
    const GemmArgs *g;
    int64_t jc, nc, pc, kc;
    float beta;              /* g->beta on the first update, then 1 */
    float *b_block;          /* ceil(nc / NR) panels of kc * NR floats, shared */
    const GemmPackedB *pre;  /* op(B) packed in advance (bertc_gemm_prepacked), or NULL */
    int64_t n_panels, panels_per_item, items_per_ic, n_items;
    ItemCounter next;
    PanelState panel[GEMM_MAX_PANELS];
} RankKc;

/* Where panel P of rank-KC block pc starts in a pre-packed op(B) (the layout
 * of GemmPackedB in tensor/tensor.h). */
static const float *prepacked_panel(const GemmPackedB *pb, int nr, int64_t pc, int64_t kc,
                                    int64_t P)
{
    int64_t n_pad = (pb->N + nr - 1) / nr * nr;
    return pb->data + pc * n_pad + P * kc * nr;
}

/* B micro-panel p, packed by this thread if no other got to it first (or
 * already packed, when op(B) was pre-packed). */
static const float *b_panel(RankKc *r, int64_t p)
{
    if (r->pre)
        return prepacked_panel(r->pre, r->kr->nr, r->pc, r->kc, r->jc / r->kr->nr + p);
    float *b = r->b_block + p * r->kr->nr * r->kc;
    if (panel_claim(&r->panel[p])) {
        int n = (int)min64(r->kr->nr, r->nc - p * r->kr->nr);
        pack_b_panel(r->kr, r->g, r->jc + p * r->kr->nr, n, r->pc, r->kc, b);
        panel_publish(&r->panel[p]);
    }
    while (!panel_ready(&r->panel[p]))
        ;
    return b;
}

/* One item: pack its A block (unless this thread just packed it), then the
 * micro-kernel over every MR x NR tile of its rows and panels. */
static void run_item(RankKc *r, int64_t item, float *a_block, int64_t *packed_ic)
{
    const GemmKernel *kr = r->kr;
    const GemmArgs *g = r->g;
    int64_t ic = item / r->items_per_ic * kr->mc, mc = min64(kr->mc, g->M - ic);
    int64_t p0 = item % r->items_per_ic * r->panels_per_item;
    int64_t p1 = min64(p0 + r->panels_per_item, r->n_panels);
    if (*packed_ic != ic) {
        pack_a_block(kr, g, ic, mc, r->pc, r->kc, a_block);
        *packed_ic = ic;
    }
    for (int64_t p = p0; p < p1; p++) {
        const float *b = b_panel(r, p);
        int64_t jr = p * kr->nr;
        int n = (int)min64(kr->nr, r->nc - jr);
        float *c = g->C + ic * g->ldc + r->jc + jr;
        for (int64_t ir = 0; ir < mc; ir += kr->mr) {
            int m = (int)min64(kr->mr, mc - ir);
            kr->kernel(r->kc, a_block + ir * r->kc, b, c + ir * g->ldc, g->ldc, g->alpha,
                       r->beta, m, n);
        }
    }
}

/* A thread's share of a rank-KC update: items until none are left. */
static void rank_kc_worker(void *ctx, int64_t begin, int64_t end)
{
    (void)begin, (void)end;
    RankKc *r = ctx;
    const GemmKernel *kr = r->kr;
    int64_t mc_max = ceil_div(min64(kr->mc, r->g->M), kr->mr) * kr->mr;
    float *a_block = pack_buffer_get(&pack_a_buffer,
                                     (size_t)(mc_max * min64(kr->kc, r->g->K)));
    int64_t packed_ic = -1;
    for (int64_t item; (item = counter_next(&r->next)) < r->n_items;)
        run_item(r, item, a_block, &packed_ic);
}

/* About 4 items per thread: the A blocks first, then the B panels of each are
 * cut into groups (a short, wide C such as M = 128 gets all its items that way). */
static void plan_items(RankKc *r, int threads)
{
    int64_t n_ic = ceil_div(r->g->M, r->kr->mc);
    int64_t groups = min64(ceil_div(4 * (int64_t)threads, n_ic), r->n_panels);
    r->panels_per_item = ceil_div(r->n_panels, groups);
    r->items_per_ic = ceil_div(r->n_panels, r->panels_per_item);
    r->n_items = n_ic * r->items_per_ic;
}

/* C = alpha * op(A) op(B) + beta * C on `threads` threads (1: the caller only). */
static void gemm_blocked(const GemmKernel *kr, const GemmArgs *g, const GemmPackedB *pre,
                         int threads)
{
    RankKc r = {.kr = kr, .g = g, .pre = pre};
    int64_t nc_max = min64(kr->nc, GEMM_MAX_PANELS * kr->nr);
    int64_t b_floats = ceil_div(min64(nc_max, g->N), kr->nr) * kr->nr * min64(kr->kc, g->K);
    if (!pre)
        r.b_block = pack_buffer_get(&pack_b_buffer, (size_t)b_floats);
    for (r.jc = 0; r.jc < g->N; r.jc += nc_max) {
        r.nc = min64(nc_max, g->N - r.jc);
        r.n_panels = ceil_div(r.nc, kr->nr);
        plan_items(&r, threads);
        for (r.pc = 0; r.pc < g->K; r.pc += kr->kc) {
            r.kc = min64(kr->kc, g->K - r.pc);
            r.beta = r.pc == 0 ? g->beta : 1.0f;
            counter_reset(&r.next);
            for (int64_t p = 0; p < r.n_panels; p++)
                panel_reset(&r.panel[p]);
            if (threads == 1)
                rank_kc_worker(&r, 0, 1);
            else
                bertc_parallel_for(threads, rank_kc_worker, &r);
        }
    }
}

/* ------------------------------------------------------------------------ */
/* The public entry points                                                   */
/* ------------------------------------------------------------------------ */

/* Multiply-adds below which a thread is not worth waking (~20-50 us of work). */
#define GEMM_MIN_THREAD_WORK (1 << 21)

/* How many threads this GEMM is worth (1 = stay on the caller). */
static int gemm_thread_count(int64_t M, int64_t N, int64_t K)
{
    double by_work = (double)M * (double)N * (double)K / GEMM_MIN_THREAD_WORK;
    int t = bertc_threads_count();
    return by_work < 1.0 ? 1 : by_work < t ? (int)by_work : t;
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

void bertc_gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
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
    gemm_blocked(kernel_for(bertc_cpu_isa()), &g, NULL, gemm_thread_count(M, N, K));
}

/* ------------------------------------------------------------------------ */
/* Pre-packed B                                                              */
/* ------------------------------------------------------------------------ */

size_t bertc_gemm_packed_b_floats(int64_t K, int64_t N)
{
    const GemmKernel *kr = kernel_for(bertc_cpu_isa());
    return (size_t)(K * (ceil_div(N, kr->nr) * kr->nr));
}

/* Every panel of every rank-KC block, packed by the routine bertc_gemm() itself
 * would use for it (pack_b_panel), so the bits are the same. */
void bertc_gemm_pack_b(bool trans_b, int64_t K, int64_t N, const float *B, int64_t ldb, float *dst,
                 GemmPackedB *out)
{
    const GemmKernel *kr = kernel_for(bertc_cpu_isa());
    *out = (GemmPackedB){.K = K, .N = N, .kernel = kr, .data = dst};
    GemmArgs g = {.trans_b = trans_b, .N = N, .K = K, .B = B, .ldb = ldb};
    for (int64_t pc = 0; pc < K; pc += kr->kc) {
        int64_t kc = min64(kr->kc, K - pc);
        for (int64_t P = 0; P * kr->nr < N; P++) {
            int n = (int)min64(kr->nr, N - P * kr->nr);
            pack_b_panel(kr, &g, P * kr->nr, n, pc, kc,
                         (float *)prepacked_panel(out, kr->nr, pc, kc, P));
        }
    }
}

void bertc_gemm_unpack_b(const GemmPackedB *pb, bool trans_b, float *B, int64_t ldb)
{
    const GemmKernel *kr = pb->kernel;
    for (int64_t pc = 0; pc < pb->K; pc += kr->kc) {
        int64_t kc = min64(kr->kc, pb->K - pc);
        for (int64_t P = 0; P * kr->nr < pb->N; P++) {
            const float *panel = prepacked_panel(pb, kr->nr, pc, kc, P);
            int n = (int)min64(kr->nr, pb->N - P * kr->nr);
            for (int64_t k = 0; k < kc; k++)
                for (int j = 0; j < n; j++) {
                    int64_t row = pc + k, col = P * kr->nr + j;   /* op(B)[row][col] */
                    float *dst = trans_b ? B + col * ldb + row : B + row * ldb + col;
                    *dst = panel[k * kr->nr + j];
                }
        }
    }
}

void bertc_gemm_prepacked(bool trans_a, int64_t M, float alpha, const float *A, int64_t lda,
                    const GemmPackedB *pb, float beta, float *C, int64_t ldc)
{
    int64_t N = pb->N, K = pb->K;
    if (M <= 0 || N <= 0)
        return;
    if (K <= 0 || alpha == 0.0f) {
        scale_c(M, N, beta, C, ldc);
        return;
    }
    GemmArgs g = {.trans_a = trans_a, .M = M, .N = N, .K = K, .alpha = alpha, .beta = beta,
                  .A = A, .C = C, .lda = lda, .ldc = ldc};
    gemm_blocked(pb->kernel, &g, pb, gemm_thread_count(M, N, K));
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
        bertc_gemm(b->trans_a, b->trans_b, b->M, b->N, b->K, b->alpha, b->A + i * b->stride_a,
             b->lda, b->B + i * b->stride_b, b->ldb, b->beta, b->C + i * b->stride_c, b->ldc);
}

/* Many small GEMMs (attention heads) run one per thread, each serial inside
 * (a nested bertc_parallel_for runs in its caller); big ones thread internally. */
void bertc_gemm_batched(bool trans_a, bool trans_b, int64_t batch, int64_t M, int64_t N,
                  int64_t K, float alpha, const float *A, int64_t lda, int64_t stride_a,
                  const float *B, int64_t ldb, int64_t stride_b, float beta, float *C,
                  int64_t ldc, int64_t stride_c)
{
    GemmBatch b = {.trans_a = trans_a, .trans_b = trans_b, .M = M, .N = N, .K = K,
                   .lda = lda, .ldb = ldb, .ldc = ldc, .stride_a = stride_a,
                   .stride_b = stride_b, .stride_c = stride_c, .alpha = alpha,
                   .beta = beta, .A = A, .B = B, .C = C};
    double one = (double)M * (double)N * (double)K;
    bool small = one < (double)GEMM_MIN_THREAD_WORK * bertc_threads_count();
    if (batch > 1 && small && one * (double)batch >= 2.0 * GEMM_MIN_THREAD_WORK)
        bertc_parallel_for(batch, batch_range, &b);
    else
        batch_range(&b, 0, batch);
}
