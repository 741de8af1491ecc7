/* tensor/gemm_avx512.c — the AVX-512 micro-kernel: an 8 x 48 tile of C.
 *
 * Register budget (32 zmm): 8 rows x 3 vectors of 16 floats = 24 accumulators,
 * 3 registers for the current row of the B micro-panel, 1 for a broadcast of
 * A. Each k step is 3 loads, 8 broadcasts and 24 FMAs, enough independent FMAs
 * to hide their latency on two FMA pipes. MR = 8 and NR = 48 divide the BERT
 * shapes (128 and 1024 tokens; 768, 2304 and 3072 features) exactly, so the
 * common sizes never take an edge tile. Edge tiles use masked loads/stores.
 *
 * Only the functions carry the target attribute: the file compiles in the
 * portable default build and runs only when bertc_cpu_isa() says AVX-512. */
#include "tensor/gemm_kernel_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define AVX512_TARGET __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,fma")))

enum { MR = 8, NR = 48 };

/* The B micro-panel (KC x NR = 144 KiB) does not fit in L1, and B read in
 * place has rows a row of B apart (3-12 KiB at the BERT shapes), which the
 * hardware prefetchers do not follow: each k step fetches the row B_AHEAD
 * steps on (~750 cycles of FMAs ahead) into L1. Measured on Zen 4, one
 * core, alternating runs of build/bench/gemm on the 24 BERT shapes: +1.7 %
 * on average and up to +8 % at M = 128 (128 x 3072 x 768 NN: 90.7 -> 98.2
 * GFLOP/s); 16 steps ahead gained less, 64 lost. A prefetch past the end of
 * the panel is harmless (prefetches never fault). */
enum { B_AHEAD = 32 };

/* One k step for row i of the tile: c[i][0..2] += A[i][k] * b[0..2], A[i][k] at
 * a[i * ars] (a advances by aks per k: a packed micro-panel has ars = 1,
 * aks = MR; A read in place ars = its row stride, aks = 1). */
#define ROW_FMA(i)                                           \
    do {                                                     \
        __m512 ai = _mm512_set1_ps(a[(i) * ars]);            \
        c##i##0 = _mm512_fmadd_ps(ai, b0, c##i##0);          \
        c##i##1 = _mm512_fmadd_ps(ai, b1, c##i##1);          \
        c##i##2 = _mm512_fmadd_ps(ai, b2, c##i##2);          \
    } while (0)

/* One k step of the tile; with `copy` (the packing kernel below) the row of
 * B just loaded is also stored to copy[0..NR), the packed panel. */
#define K_STEP()                                                                 \
    do {                                                                         \
        __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);            \
        __m512 b2 = _mm512_loadu_ps(b + 32);                                     \
        if (copy) {                                                              \
            _mm512_storeu_ps(copy, b0);                                           \
            _mm512_storeu_ps(copy + 16, b1);                                      \
            _mm512_storeu_ps(copy + 32, b2);                                      \
            copy += NR;                                                          \
        }                                                                        \
        ROW_FMA(0); ROW_FMA(1); ROW_FMA(2); ROW_FMA(3);                          \
        ROW_FMA(4); ROW_FMA(5); ROW_FMA(6); ROW_FMA(7);                          \
        _mm_prefetch((const char *)(b + B_AHEAD * ldb), _MM_HINT_T0);            \
        _mm_prefetch((const char *)(b + B_AHEAD * ldb + 16), _MM_HINT_T0);       \
        _mm_prefetch((const char *)(b + B_AHEAD * ldb + 32), _MM_HINT_T0);       \
        a += aks;                                                                \
        b += ldb;                                                                \
    } while (0)

/* out = alpha * acc + beta * C on the lanes of mask; C is read only if beta != 0. */
AVX512_TARGET static inline void store_vec(float *c, __m512 acc, __mmask16 mask,
                                           __m512 alpha, float beta)
{
    __m512 out = _mm512_mul_ps(alpha, acc);
    if (beta != 0.0f)
        out = _mm512_fmadd_ps(_mm512_set1_ps(beta), _mm512_maskz_loadu_ps(mask, c), out);
    _mm512_mask_storeu_ps(c, mask, out);
}

#define STORE_ROW(i)                                                          \
    do {                                                                      \
        if (i < m) {                                                          \
            float *ci = c + (i) * ldc;                                        \
            store_vec(ci, c##i##0, mask0, va, beta);                          \
            store_vec(ci + 16, c##i##1, mask1, va, beta);                     \
            store_vec(ci + 32, c##i##2, mask2, va, beta);                     \
        }                                                                     \
    } while (0)

#define ZERO_ROW(i) __m512 c##i##0 = _mm512_setzero_ps(), c##i##1 = c##i##0, c##i##2 = c##i##0

/* Lanes [0, n - offset) of a 16-lane vector, clamped to 0..16. */
static inline __mmask16 lane_mask(int n, int offset)
{
    int k = n - offset;
    return k >= 16 ? (__mmask16)0xFFFF : k <= 0 ? (__mmask16)0 : (__mmask16)((1u << k) - 1);
}

/* Every cache line of the (m, n) tile of C (a row of `vectors` x 16 floats
 * spans that many lines or one more), fetched while the k loop runs: C is
 * read (beta != 0) or written only at the end, and a row of a large C (M =
 * 1024: 3-12 MiB, in L3) that misses there stalls the stores. Fetching only
 * each row's first line left the other lines to miss: 7-14 % on the M = 1024
 * BERT shapes, one core, while other jobs shared the L3; within 2 % either
 * way on a quiet machine. */
static inline void prefetch_c(const float *c, int64_t ldc, int m, int n, int vectors)
{
    for (int i = 0; i < m; i++) {
        const float *row = c + i * ldc;
        for (int v = 0; v < vectors; v++)
            _mm_prefetch((const char *)(row + 16 * v), _MM_HINT_T0);
        _mm_prefetch((const char *)(row + n - 1), _MM_HINT_T0);
    }
}

/* a is the (MR, kc) packed A micro-panel, b the (kc, NR) B micro-panel with
 * row stride ldb (NR when packed, B's own when read in place); C (m, n) with
 * row stride ldc gets alpha * a.b + beta * C. copy: NULL, or where the rows
 * of b also go, packed. Always
 * inlined into the two kernels below, so each is compiled with copy known. */
AVX512_TARGET static inline __attribute__((always_inline)) void
tile_8x48(int64_t kc, const float *a, int64_t ars, int64_t aks, const float *b, int64_t ldb,
          float *copy, float *c, int64_t ldc, float alpha, float beta, int m, int n)
{
    ZERO_ROW(0); ZERO_ROW(1); ZERO_ROW(2); ZERO_ROW(3);
    ZERO_ROW(4); ZERO_ROW(5); ZERO_ROW(6); ZERO_ROW(7);
    prefetch_c(c, ldc, m, n, 3);
    for (int64_t k = 0; k < kc; k++)
        K_STEP();
    __mmask16 mask0 = lane_mask(n, 0), mask1 = lane_mask(n, 16), mask2 = lane_mask(n, 32);
    __m512 va = _mm512_set1_ps(alpha);
    STORE_ROW(0); STORE_ROW(1); STORE_ROW(2); STORE_ROW(3);
    STORE_ROW(4); STORE_ROW(5); STORE_ROW(6); STORE_ROW(7);
}

AVX512_TARGET static void kernel_8x48(int64_t kc, const float *a, const float *b, float *c,
                                      int64_t ldc, float alpha, float beta, int m, int n)
{
    tile_8x48(kc, a, 1, MR, b, NR, NULL, c, ldc, alpha, beta, m, n);
}

/* The same tile from a full panel of B read in place, which it packs on the
 * way into b_packed: the tiles below it in C then read the packed copy, and
 * the copy costs three stores per k step among 24 FMAs instead of a pass of
 * its own over B's strided rows (the packer's, which waits on them). */
AVX512_TARGET static void kernel_8x48_packing(int64_t kc, const float *a, const float *b,
                                              int64_t ldb, float *b_packed, float *c,
                                              int64_t ldc, float alpha, float beta, int m)
{
    tile_8x48(kc, a, 1, MR, b, ldb, b_packed, c, ldc, alpha, beta, m, NR);
}

/* The tile with its MR rows of A read in place (row stride lda; all MR rows
 * exist) from a packed B micro-panel: the same FMAs in the same order. */
AVX512_TARGET static void kernel_8x48_a(int64_t kc, const float *a, int64_t lda, const float *b,
                                        float *c, int64_t ldc, float alpha, float beta, int n)
{
    tile_8x48(kc, a, lda, 1, b, NR, NULL, c, ldc, alpha, beta, MR, n);
}

/* ---- the narrow tile: 8 x 32, for attention's short rows ------------------
 *
 * The attention products of BERT have N = d = 64 (context) or N = S = 128
 * (scores) columns: in panels of 48 the last panel of 64 columns is a third
 * full, of 128 two thirds, and the kernel spends those FMAs on padding. In
 * panels of 32 both are whole. 8 rows x 2 vectors = 16 accumulators (two FMA
 * pipes of latency 4 need 8 in flight); a k step is 2 loads, 8 broadcasts and
 * 16 FMAs. Each entry of C is the same chain of FMAs over k as in the 8 x 48
 * tile, so the bits do not depend on which tile computed it. */
enum { NR_NARROW = 32 };

#define ROW_FMA_NARROW(i)                                    \
    do {                                                     \
        __m512 ai = _mm512_set1_ps(a[(i) * ars]);            \
        c##i##0 = _mm512_fmadd_ps(ai, b0, c##i##0);          \
        c##i##1 = _mm512_fmadd_ps(ai, b1, c##i##1);          \
    } while (0)

#define K_STEP_NARROW()                                                          \
    do {                                                                         \
        __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);            \
        if (copy) {                                                              \
            _mm512_storeu_ps(copy, b0);                                           \
            _mm512_storeu_ps(copy + 16, b1);                                      \
            copy += NR_NARROW;                                                   \
        }                                                                        \
        ROW_FMA_NARROW(0); ROW_FMA_NARROW(1); ROW_FMA_NARROW(2); ROW_FMA_NARROW(3); \
        ROW_FMA_NARROW(4); ROW_FMA_NARROW(5); ROW_FMA_NARROW(6); ROW_FMA_NARROW(7); \
        _mm_prefetch((const char *)(b + B_AHEAD * ldb), _MM_HINT_T0);            \
        _mm_prefetch((const char *)(b + B_AHEAD * ldb + 16), _MM_HINT_T0);       \
        a += aks;                                                                \
        b += ldb;                                                                \
    } while (0)

#define STORE_ROW_NARROW(i)                                                   \
    do {                                                                      \
        if (i < m) {                                                          \
            float *ci = c + (i) * ldc;                                        \
            store_vec(ci, c##i##0, mask0, va, beta);                          \
            store_vec(ci + 16, c##i##1, mask1, va, beta);                     \
        }                                                                     \
    } while (0)

#define ZERO_ROW_NARROW(i) __m512 c##i##0 = _mm512_setzero_ps(), c##i##1 = c##i##0

/* tile_8x48 with two vectors per row. */
AVX512_TARGET static inline __attribute__((always_inline)) void
tile_8x32(int64_t kc, const float *a, int64_t ars, int64_t aks, const float *b, int64_t ldb,
          float *copy, float *c, int64_t ldc, float alpha, float beta, int m, int n)
{
    ZERO_ROW_NARROW(0); ZERO_ROW_NARROW(1); ZERO_ROW_NARROW(2); ZERO_ROW_NARROW(3);
    ZERO_ROW_NARROW(4); ZERO_ROW_NARROW(5); ZERO_ROW_NARROW(6); ZERO_ROW_NARROW(7);
    prefetch_c(c, ldc, m, n, 2);
    for (int64_t k = 0; k < kc; k++)
        K_STEP_NARROW();
    __mmask16 mask0 = lane_mask(n, 0), mask1 = lane_mask(n, 16);
    __m512 va = _mm512_set1_ps(alpha);
    STORE_ROW_NARROW(0); STORE_ROW_NARROW(1); STORE_ROW_NARROW(2); STORE_ROW_NARROW(3);
    STORE_ROW_NARROW(4); STORE_ROW_NARROW(5); STORE_ROW_NARROW(6); STORE_ROW_NARROW(7);
}

AVX512_TARGET static void kernel_8x32(int64_t kc, const float *a, const float *b, float *c,
                                      int64_t ldc, float alpha, float beta, int m, int n)
{
    tile_8x32(kc, a, 1, MR, b, NR_NARROW, NULL, c, ldc, alpha, beta, m, n);
}

AVX512_TARGET static void kernel_8x32_packing(int64_t kc, const float *a, const float *b,
                                              int64_t ldb, float *b_packed, float *c,
                                              int64_t ldc, float alpha, float beta, int m)
{
    tile_8x32(kc, a, 1, MR, b, ldb, b_packed, c, ldc, alpha, beta, m, NR_NARROW);
}

AVX512_TARGET static void kernel_8x32_a(int64_t kc, const float *a, int64_t lda, const float *b,
                                        float *c, int64_t ldc, float alpha, float beta, int n)
{
    tile_8x32(kc, a, lda, 1, b, NR_NARROW, NULL, c, ldc, alpha, beta, MR, n);
}

/* The 8 x 48 kernel's blocking, with panels of 32. */
static const GemmKernel kernel_avx512_narrow = {
    .name = "avx512",
    .mr = MR,
    .nr = NR_NARROW,
    .mc = 128,
    .kc = 768,
    .nc = 3072,
    .kernel = kernel_8x32,
    .kernel_packing = kernel_8x32_packing,
    .kernel_a_in_place = kernel_8x32_a,
    .pack_trans = bertc_gemm_pack_trans_avx2,
    .pack_copy = bertc_gemm_pack_copy_avx2,
};

/* Blocking for an L1 of 32-48 KiB and an L2 of 1-2 MiB per core: the packed
 * A block (MC x KC = 128 x 768 floats, 384 KiB) stays in L2. A B micro-panel
 * (KC x NR = 144 KiB) is larger than L1 and streams from L2, which is fast
 * enough: 192 bytes per k step of 24 FMAs. KC = 768 is all of K = 768 (each
 * C tile is loaded and stored once, not twice) and divides 3072; against
 * KC = 384 it measured 0.91 -> 0.99 of oneDNN at 1024 x 2304 x 768 and
 * 0.88 -> 0.93 at 1024 x 3072 x 768, one core (`build/bench/gemm --compare
 * onednn --shapes ...`). The B block (KC x NC) sits in L3. */
const GemmKernel bertc_gemm_kernel_avx512 = {
    .name = "avx512",
    .mr = MR,
    .nr = NR,
    .mc = 128,
    .kc = 768,
    .nc = 3072,
    .kernel = kernel_8x48,
    .kernel_packing = kernel_8x48_packing,
    .kernel_a_in_place = kernel_8x48_a,
    .pack_trans = bertc_gemm_pack_trans_avx2,
    .pack_copy = bertc_gemm_pack_copy_avx2,
    .narrow = &kernel_avx512_narrow,
};

#endif /* __x86_64__ */
