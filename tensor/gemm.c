/* tensor/gemm.c — C = alpha * op(A) op(B) + beta * C, row-major.
 *
 * The GotoBLAS/BLIS algorithm. op(A) is (M, K), op(B) is (K, N), C is (M, N).
 * Five loops around a micro-kernel that keeps an MR x NR tile of C in
 * registers (tensor/gemm_avx512.c, gemm_avx2.c, gemm_neon.c, or the portable
 * one below: the active path's, from its row of the ISA table, tensor/isa.c),
 * run by each thread on its own tile C[i0:i1, j0:j1]:
 *
 *   for jc in [j0, j1) step NC:
 *     for pc in K step KC:             one rank-KC update of the tile
 *       for ic in [i0, i1) step MC:    pack op(A)[ic:+MC, pc:+KC] -> A block (L2)
 *         for jr in NC step NR:        B micro-panel op(B)[pc:+KC, jr:+NR]: packed
 *                                      by the first ic (or by its first micro-kernel)
 *           for ir in MC step MR:      micro-kernel: C[ir:+MR, jr:+NR] (+)= A.B
 *
 * Packing copies each operand into the exact order the micro-kernel reads it
 * (tensor/gemm_kernel_internal.h), so the kernel's loads are contiguous and aligned
 * whatever the transposes and leading dimensions, and zero padding turns an
 * edge panel into a full one: only the final store of an edge tile is partial.
 * A full panel of a row-major op(B) is packed by the micro-kernel that first
 * reads it, in place (packed_by_kernel). On AVX-512, op(A) is read in place
 * rather than packed when B is pre-packed or C is narrow (a_in_place), and
 * a GEMM of 64 or 128 columns runs in an 8 x 32 tile instead of 8 x 48
 * (kernel_for_n); neither changes a bit of C. The first rank-KC update
 * applies beta; later ones add (beta = 1).
 *
 * Threads (as oneDNN's sgemm driver and BLIS's thrinfo ways cut C): one
 * bertc_parallel_for per GEMM. C is cut into a grid of tm x tn tiles, two per
 * thread, on MR and NR boundaries (plan_grid: even tiles, then the least
 * packing); threads take tiles from a shared counter and run the whole K loop
 * on each with their own pack buffers, so nothing waits until the end. Every C
 * entry is summed over the same rank-KC blocks in the same order whatever the
 * tile, so results are bitwise identical with 1 or many threads. A GEMM too
 * small to give each thread ~2^21 multiply-adds runs on the calling thread.
 *
 * Pack buffers are allocated once per thread with bertc_sys_alloc (or from
 * the arena of bertc_gemm_set_pack_arena) and reused; they grow only when a larger
 * block is needed than ever before.
 *
 * Pre-packed B (bertc_gemm_pack_b, bertc_gemm_prepacked): a B used by many GEMMs — an
 * inference weight — is packed once, panel by panel with the same packers,
 * into one buffer in block order; the loops above then take each B
 * micro-panel from it instead of packing it. */
#include "tensor/isa_internal.h"
#include "tensor/scratch_internal.h"

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

/* a is the (MR, kc) packed A micro-panel, b the (kc, NR) packed B
 * micro-panel; C (m, n) with row stride ldc gets alpha * a.b + beta * C. */
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

/* The scalar path's kernel. Small blocks: its panels are small too. */
const GemmKernel bertc_gemm_kernel_scalar = {
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

static SCRATCH_THREAD_LOCAL ScratchBuffer pack_a_buffer, pack_b_buffer;
/* The pack buffers of chunk c of a threaded GEMM: whichever thread runs
 * chunk c uses slot c's. The pool hands chunks to whichever thread comes
 * first (tensor/threads.c), so with per-thread buffers a worker that was
 * late for a GEMM's first call would allocate in a later one; per chunk,
 * every buffer a GEMM needs is taken in its first call. Only the pool's
 * owner runs threaded GEMMs, so a slot serves one thread at a time; a GEMM
 * run serially in its caller (one thread, or nested in another job's chunk)
 * uses that thread's own buffers above. */
#if !defined(BERTC_NO_THREADS)
static ScratchBuffer chunk_a_buffer[THREADS_MAX], chunk_b_buffer[THREADS_MAX];
#endif
static Arena *pack_arena;   /* bertc_gemm_set_pack_arena; NULL: the heap */

void bertc_gemm_set_pack_arena(Arena *a)
{
    if (a && bertc_threads_count() > 1)
        bertc_fatal("bertc_gemm_set_pack_arena: needs bertc_threads_count() == 1, not %d", bertc_threads_count());
    scratch_reset(&pack_a_buffer);
    scratch_reset(&pack_b_buffer);
    pack_arena = a;
}

void bertc_gemm_pack_sizes(size_t *a_bytes, size_t *b_bytes)
{
    *a_bytes = pack_a_buffer.cap;
    *b_bytes = pack_b_buffer.cap;
}

void bertc_gemm_reserve_packs(size_t a_bytes, size_t b_bytes)
{
    scratch_get(&pack_a_buffer, pack_arena, a_bytes, "bertc_gemm (pack buffer)");
    scratch_get(&pack_b_buffer, pack_arena, b_bytes, "bertc_gemm (pack buffer)");
}

/* At least `floats` floats, 64-byte aligned; allocates only to grow. */
static float *pack_buffer_get(ScratchBuffer *p, size_t floats)
{
    return scratch_get(p, pack_arena, floats * sizeof(float), "bertc_gemm (pack buffer)");
}

/* ------------------------------------------------------------------------ */
/* One thread's tile of C                                                    */
/* ------------------------------------------------------------------------ */

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t ceil_div(int64_t n, int64_t d) { return (n + d - 1) / d; }

/* What every tile of one GEMM shares: the operands, the kernel, where op(B)
 * comes from, and the grid of tiles (tm rows of tiles x tn columns). */
typedef struct GemmPlan {
    const GemmKernel *kr;
    const GemmArgs *g;
    const GemmPackedB *pre;  /* op(B) packed in advance (bertc_gemm_prepacked), or NULL */
    int tm, tn;
    bool b_one_panel;        /* M <= MC: one A block per tile, so no B panel is reused
                                across A blocks: each is packed into one panel's room
                                right before its use (same panels, same order, same bits) */
    int threads;             /* chunks of the bertc_parallel_for */
    WorkCounter next;        /* the next tile to take */
} GemmPlan;

/* One rank-KC block of a tile: C[ic.., jc:+nc] (+)= op(A)[.., pc:+kc] op(B)[pc:+kc, jc:+nc]. */
typedef struct KcBlock {
    int64_t jc, nc, pc, kc;
    float beta;              /* g->beta on the first block (pc == 0), then 1 */
} KcBlock;

/* Packing op(B) inside the first micro-kernel. A full panel of a row-major
 * op(B) (NN, TN) is packed by the micro-kernel that first reads it
 * (kernel_packing): it reads the panel in place, B's row stride apart, and
 * stores each row it loads into the packed panel, which the tiles below read.
 * A separate packer waits on those strided rows (3-12 KiB apart at the BERT
 * shapes, in L3): 14 % of the time at 128 x 2304 x 768 NN (perf, Zen 4);
 * among the first tile's FMAs the three stores per k step cost little.
 * Against the separate packer (and, for the short tiles, against reading
 * every panel in place, as this code did before), one core, build/bench/gemm
 * alternating runs, AMD EPYC Zen 5: 1.01-1.27x at M = 128 on the AVX-512
 * path (128 x 3072 x 768 TN 1.27x, 128 x 768 x 768 NN 1.14x), 1.01-1.04x on
 * AVX2, 0.98-1.04x at M = 1024. A transposed op(B) (NT) and edge panels go through
 * the packers. */

/* Where panel P of rank-KC block pc starts in a pre-packed op(B) (the layout
 * of GemmPackedB in tensor/tensor.h). */
static const float *prepacked_panel(const GemmPackedB *pb, int nr, int64_t pc, int64_t kc,
                                    int64_t P)
{
    int64_t n_pad = (pb->N + nr - 1) / nr * nr;
    return pb->data + pc * n_pad + P * kc * nr;
}

/* Where B micro-panel p of block `blk` is packed: in b_block (one panel's
 * room when each panel serves one A block, else the whole block's). */
static float *b_panel_room(const GemmPlan *pl, const KcBlock *blk, int64_t p, float *b_block)
{
    return pl->b_one_panel ? b_block : b_block + p * pl->kr->nr * blk->kc;
}

/* B micro-panel p of block `blk` (columns jr.. jr + n): pre-packed, or
 * packed into b_block by the tile's first A block (`first`; later A blocks
 * find it there). */
static const float *b_panel(const GemmPlan *pl, const KcBlock *blk, int64_t p, int64_t jr, int n,
                            bool first, float *b_block)
{
    const GemmKernel *kr = pl->kr;
    if (pl->pre)
        return prepacked_panel(pl->pre, kr->nr, blk->pc, blk->kc, jr / kr->nr);
    float *b = b_panel_room(pl, blk, p, b_block);
    if (first)
        pack_b_panel(kr, pl->g, jr, n, blk->pc, blk->kc, b);
    return b;
}

/* The micro-kernel packs panel p itself (kernel_packing, above): a full
 * panel of a row-major op(B), not pre-packed, met by the tile's first A
 * block. */
static bool packed_by_kernel(const GemmPlan *pl, int n, bool first)
{
    return pl->kr->kernel_packing && !pl->pre && !pl->g->trans_b && first && n == pl->kr->nr;
}

/* Reading A in place (kernel_a_in_place) instead of packing it, for op(A)
 * row-major (NN, NT) when every micro-panel of the block is full, and either
 * - op(B) is pre-packed (inference's Linears): no tile packs B then, so the
 *   in-place tiles give up nothing, and each tile of C on each thread no
 *   longer transposes its rows of A again. BERT-base forward, float32,
 *   alternating runs: 1 x 128 100 -> 97 ms on one thread, 54.5 -> 50.6 on
 *   two; 8 x 128 828 -> 800 and 442 -> 425 (Zen 5); or
 * - C has at most A_IN_PLACE_MAX_N columns, so that the A block meets few B
 *   panels (attention's products: N = 64 or 128) and transposing it costs
 *   about what the tiles that read it do. One core, build/bench/gemm:
 *   128x128x64 NT 212-214 -> 236-239 GFLOP/s, 256x256x256 NT 1.05x; on its
 *   wider shapes (N >= 512) it gave 0.93-1.02x (NN loses the first tile's
 *   packing of B), so they pack. */
#define A_IN_PLACE_MAX_N 256
static bool a_in_place(const GemmPlan *pl, int64_t mc)
{
    return pl->kr->kernel_a_in_place && !pl->g->trans_a && mc % pl->kr->mr == 0 &&
           (pl->pre || pl->g->N <= A_IN_PLACE_MAX_N);
}

/* Rows [ic, ic + mc) of one rank-KC block: pack their A block (unless it is
 * read in place), then the micro-kernel over every MR x NR tile, B panel by
 * B panel. */
static void block_rows(const GemmPlan *pl, const KcBlock *blk, int64_t ic, int64_t mc,
                       bool first, float *a_block, float *b_block)
{
    const GemmKernel *kr = pl->kr;
    const GemmArgs *g = pl->g;
    bool in_place = a_in_place(pl, mc);
    if (!in_place)
        pack_a_block(kr, g, ic, mc, blk->pc, blk->kc, a_block);
    for (int64_t p = 0; p * kr->nr < blk->nc; p++) {
        int64_t jr = blk->jc + p * kr->nr, ir = 0;
        int n = (int)min64(kr->nr, blk->jc + blk->nc - jr);
        float *c = g->C + ic * g->ldc + jr;
        const float *b;
        if (in_place) {
            b = b_panel(pl, blk, p, jr, n, first, b_block);
            for (; ir < mc; ir += kr->mr)
                kr->kernel_a_in_place(blk->kc, g->A + (ic + ir) * g->lda + blk->pc, g->lda, b,
                                      c + ir * g->ldc, g->ldc, g->alpha, blk->beta, n);
            continue;
        }
        if (packed_by_kernel(pl, n, first)) {   /* the first tile packs it for the others */
            float *room = b_panel_room(pl, blk, p, b_block);
            kr->kernel_packing(blk->kc, a_block, g->B + blk->pc * g->ldb + jr, g->ldb, room, c,
                               g->ldc, g->alpha, blk->beta, (int)min64(kr->mr, mc));
            b = room, ir = kr->mr;
        } else {
            b = b_panel(pl, blk, p, jr, n, first, b_block);
        }
        for (; ir < mc; ir += kr->mr) {
            int m = (int)min64(kr->mr, mc - ir);
            kr->kernel(blk->kc, a_block + ir * blk->kc, b, c + ir * g->ldc, g->ldc,
                       g->alpha, blk->beta, m, n);
        }
    }
}

/* The pack buffers of chunk `chunk` of the pool's job (-1: a serial GEMM,
 * the calling thread's own), sized for the whole of C rather than for one
 * tile, and taken before any tile: a chunk takes different tiles (or none)
 * from call to call, and its buffers must not grow in a later call. With
 * one A block (b_one_panel) op(B) needs one panel's room, KC x NR, not
 * KC x NC: what keeps a bare-metal GEMM's buffers at the size of its
 * shapes (a 64 x 64 Linear at M = 1: 2 KB instead of 16). */
static void tile_buffers(const GemmPlan *pl, int64_t chunk, float **a_block, float **b_block)
{
    const GemmKernel *kr = pl->kr;
    const GemmArgs *g = pl->g;
    int64_t kc_max = min64(kr->kc, g->K);
    int64_t mc_max = ceil_div(min64(kr->mc, g->M), kr->mr) * kr->mr;
    int64_t nc_max = pl->b_one_panel ? kr->nr : ceil_div(min64(kr->nc, g->N), kr->nr) * kr->nr;
    ScratchBuffer *a = &pack_a_buffer, *b = &pack_b_buffer;
#if !defined(BERTC_NO_THREADS)
    if (chunk >= 0)
        a = &chunk_a_buffer[chunk], b = &chunk_b_buffer[chunk];
#else
    (void)chunk;
#endif
    *a_block = pack_buffer_get(a, (size_t)(mc_max * kc_max));
    *b_block = pl->pre ? NULL : pack_buffer_get(b, (size_t)(nc_max * kc_max));
}

/* C[i0:i1, j0:j1] = alpha * op(A)[i0:i1, :] op(B)[:, j0:j1] + beta * C[i0:i1, j0:j1],
 * the whole K loop, in this thread's pack buffers. j0 is a multiple of NR.
 * Every entry is summed over the same rank-KC blocks (pc = 0, KC, 2 KC, ...)
 * whatever the tile, so the bits do not depend on how C is cut. */
static void gemm_tile(const GemmPlan *pl, float *a_block, float *b_block, int64_t i0, int64_t i1,
                      int64_t j0, int64_t j1)
{
    const GemmKernel *kr = pl->kr;
    const GemmArgs *g = pl->g;
    KcBlock blk = {0};
    for (blk.jc = j0; blk.jc < j1; blk.jc += kr->nc) {
        blk.nc = min64(kr->nc, j1 - blk.jc);
        for (blk.pc = 0; blk.pc < g->K; blk.pc += kr->kc) {
            blk.kc = min64(kr->kc, g->K - blk.pc);
            blk.beta = blk.pc == 0 ? g->beta : 1.0f;
            for (int64_t ic = i0; ic < i1; ic += kr->mc)
                block_rows(pl, &blk, ic, min64(kr->mc, i1 - ic), ic == i0, a_block, b_block);
        }
    }
}

/* ------------------------------------------------------------------------ */
/* Cutting C between threads                                                 */
/* ------------------------------------------------------------------------ */

/* Piece `i` of `parts` of [0, len) cut on multiples of `unit`. */
static void cut(int64_t len, int64_t unit, int parts, int i, int64_t *begin, int64_t *end)
{
    int64_t units = ceil_div(len, unit);
    *begin = min64(len, units * i / parts * unit);
    *end = min64(len, units * (i + 1) / parts * unit);
}

/* The grid of `threads` tiles (tm x tn = threads): the tiles as even as the
 * MR and NR units allow (largest tile smallest), then the least packing —
 * each thread packs its rows of A and its columns of B over all of K, so the
 * smallest tile height + width. M = 128 x N = 768 on 2 threads: two 128 x 384
 * tiles (A packed twice, 98K floats each, B once); M = 1024 x N = 768: two
 * 512 x 768 tiles. */
static bool plan_grid_of(GemmPlan *pl, int threads)
{
    const GemmKernel *kr = pl->kr;
    int64_t mu = ceil_div(pl->g->M, kr->mr), nu = ceil_div(pl->g->N, kr->nr);
    double best_area = 0.0, best_edge = 0.0;
    for (int tm = 1; tm <= threads; tm++) {
        int tn = threads / tm;
        if (tm * tn != threads || tm > mu || tn > nu)
            continue;
        double h = (double)ceil_div(mu, tm) * kr->mr, w = (double)ceil_div(nu, tn) * kr->nr;
        double area = h * w, edge = h + w;
        if (best_area == 0.0 || area < best_area || (area == best_area && edge < best_edge)) {
            best_area = area, best_edge = edge;
            pl->tm = tm, pl->tn = tn;
        }
    }
    return best_area > 0.0;
}

/* The grid for `threads` threads, or for fewer when C has too few MR x NR
 * tiles to cut that way (3 threads on one row of 2 panels: 2). */
static void plan_grid(GemmPlan *pl, int threads)
{
    pl->tm = pl->tn = 1;
    while (threads > 1 && !plan_grid_of(pl, threads))
        threads--;
}

/* A thread's share of the tiles: the next untaken one until none is left
 * (the caller takes them too, so a worker that wakes late or shares its core
 * with another process simply takes fewer). A call that got every chunk (one
 * thread, or a nested bertc_parallel_for run serially) computes C as one
 * tile: the same bits, without packing A once per tile column. */
static void tile_worker(void *ctx, int64_t begin, int64_t end)
{
    GemmPlan *pl = ctx;
    float *a_block, *b_block;
    if (begin == 0 && end == pl->threads) {
        tile_buffers(pl, -1, &a_block, &b_block);
        gemm_tile(pl, a_block, b_block, 0, pl->g->M, 0, pl->g->N);
        return;
    }
    tile_buffers(pl, begin, &a_block, &b_block);  /* a chunk of the pool is one index */
    int64_t tiles = (int64_t)pl->tm * pl->tn;
    for (int64_t t; (t = work_counter_next(&pl->next)) < tiles;) {
        int64_t i0, i1, j0, j1;
        cut(pl->g->M, pl->kr->mr, pl->tm, (int)(t / pl->tn), &i0, &i1);
        cut(pl->g->N, pl->kr->nr, pl->tn, (int)(t % pl->tn), &j0, &j1);
        if (i0 < i1 && j0 < j1)
            gemm_tile(pl, a_block, b_block, i0, i1, j0, j1);
    }
}

/* Tiles per thread: 2 lets a thread whose core is taken by another process
 * (a shared machine) hand half its share to the others, at the cost of
 * packing A or B once more per extra tile (< 1 % of a BERT-shape GEMM). With
 * one static tile per thread, a two-thread GEMM waited for its slower thread
 * and ran at a quarter of one core's speed when the other core was busy. */
#define TILES_PER_THREAD 2

/* C = alpha * op(A) op(B) + beta * C on `threads` threads (1: the caller only):
 * one bertc_parallel_for, the threads taking tiles of C, each with the whole
 * K loop. */
static void gemm_blocked(const GemmKernel *kr, const GemmArgs *g, const GemmPackedB *pre,
                         int threads)
{
    GemmPlan pl = {.kr = kr, .g = g, .pre = pre, .b_one_panel = g->M <= kr->mc};
    work_counter_reset(&pl.next);
    plan_grid(&pl, threads * TILES_PER_THREAD);
    int tiles = pl.tm * pl.tn;
    pl.threads = tiles < threads ? tiles : threads;
    if (pl.threads == 1)
        tile_worker(&pl, 0, 1);
    else
        bertc_parallel_for(pl.threads, tile_worker, &pl);
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

/* kr, or its narrow sibling when that computes fewer padded columns of C,
 * counting each of the narrow tile's columns NARROW_COST dearer (it does 16
 * FMAs per 10 loads instead of 24 per 11): N = 64 runs 64 columns in panels
 * of 32 instead of 96 in panels of 48, N = 128 runs 128 instead of 144; N =
 * 1024 stays in panels of 48. Every entry of C is the same FMA chain either
 * way, so the bits do not change. */
#define NARROW_COST 1.05
static const GemmKernel *kernel_for_n(const GemmKernel *kr, int64_t N)
{
    const GemmKernel *nk = kr->narrow;
    if (!nk)
        return kr;
    double wide = (double)(ceil_div(N, kr->nr) * kr->nr);
    double narrow = (double)(ceil_div(N, nk->nr) * nk->nr) * NARROW_COST;
    return narrow < wide ? nk : kr;
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
    gemm_blocked(kernel_for_n(bertc_isa_active()->gemm, N), &g, NULL,
                 gemm_thread_count(M, N, K));
}

/* ------------------------------------------------------------------------ */
/* Pre-packed B                                                              */
/* ------------------------------------------------------------------------ */

size_t bertc_gemm_packed_b_floats(int64_t K, int64_t N)
{
    const GemmKernel *kr = bertc_isa_active()->gemm;
    return (size_t)(K * (ceil_div(N, kr->nr) * kr->nr));
}

/* Every panel of every rank-KC block, packed by the routine bertc_gemm() itself
 * would use for it (pack_b_panel), so the bits are the same. */
void bertc_gemm_pack_b(bool trans_b, int64_t K, int64_t N, const float *B, int64_t ldb, float *dst,
                 GemmPackedB *out)
{
    const GemmKernel *kr = bertc_isa_active()->gemm;
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
