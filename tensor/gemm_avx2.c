/* tensor/gemm_avx2.c — the AVX2+FMA micro-kernel (a 4 x 24 tile of C) and the
 * transposing packers (8 x 8, shared with the AVX-512 path, and 4 x 8).
 *
 * Register budget (16 ymm): 4 rows x 3 vectors of 8 floats = 12 accumulators,
 * 3 registers for the current row of the B micro-panel, 1 for a broadcast of A.
 * Each k step is 3 loads, 4 broadcasts and 12 FMAs (the 6 x 16 tile of BLIS
 * and OpenBLAS needs 8 loads; oneDNN's AVX2 kernel is this 4 x 24 one), and
 * MR = 4, NR = 24 divide the BERT shapes (128 and 1024 tokens; 768, 2304 and
 * 3072 features), where 6 rows left an edge tile on every 128 rows. Edge
 * tiles use vmaskmovps loads/stores.
 *
 * Only the functions carry the target attribute: the file compiles in the
 * portable default build and runs only when bertc_cpu_isa() says AVX2 (or AVX-512). */
#include "tensor/gemm_kernel_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define AVX2_TARGET __attribute__((target("avx2,fma")))

enum { MR = 4, NR = 24 };

#define ROW_FMA(i)                                           \
    do {                                                     \
        __m256 ai = _mm256_broadcast_ss(a + (i));            \
        c##i##0 = _mm256_fmadd_ps(ai, b0, c##i##0);          \
        c##i##1 = _mm256_fmadd_ps(ai, b1, c##i##1);          \
        c##i##2 = _mm256_fmadd_ps(ai, b2, c##i##2);          \
    } while (0)

/* Rows of B fetched ahead when the kernel reads B in place and packs it
 * (kernel_4x24_packing): as the copying packer's PACK_AHEAD below. */
enum { B_AHEAD = 32 };

/* One k step of the tile; with `copy` (the packing kernel) the row of B just
 * loaded also goes to copy[0..NR), the packed panel, and the row B_AHEAD on
 * is fetched. */
#define K_STEP()                                                                 \
    do {                                                                         \
        __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);             \
        __m256 b2 = _mm256_loadu_ps(b + 16);                                     \
        if (copy) {                                                              \
            _mm256_storeu_ps(copy, b0);                                          \
            _mm256_storeu_ps(copy + 8, b1);                                      \
            _mm256_storeu_ps(copy + 16, b2);                                     \
            copy += NR;                                                          \
            _mm_prefetch((const char *)(b + B_AHEAD * ldb), _MM_HINT_T0);        \
            _mm_prefetch((const char *)(b + B_AHEAD * ldb + NR - 1), _MM_HINT_T0); \
        }                                                                        \
        ROW_FMA(0); ROW_FMA(1); ROW_FMA(2); ROW_FMA(3);                          \
        a += MR;                                                                 \
        b += ldb;                                                                \
    } while (0)

/* out = alpha * acc + beta * C on the lanes of mask; C is read only if beta != 0. */
AVX2_TARGET static inline void store_vec_masked(float *c, __m256 acc, __m256i mask,
                                                __m256 alpha, float beta)
{
    __m256 out = _mm256_mul_ps(alpha, acc);
    if (beta != 0.0f)
        out = _mm256_fmadd_ps(_mm256_set1_ps(beta), _mm256_maskload_ps(c, mask), out);
    _mm256_maskstore_ps(c, mask, out);
}

/* The same on all 8 lanes, for full tiles. vmaskmovps stores are slow on
 * AMD (microcoded on Zen 4): the 12 of a full tile made a kc = 256 call
 * (1,536 cycles of FMAs) run at 82-90 % of the FMA peak, against 98 % with
 * plain stores (the kernel alone on L1-resident panels, Zen 4), and the
 * whole GEMM at M = 1024 0.88-0.92x of OpenBLAS's Haswell kernel against
 * 0.97-1.0x now (build/bench/gemm --isa avx2 --compare all). */
AVX2_TARGET static inline void store_vec(float *c, __m256 acc, __m256 alpha, float beta)
{
    __m256 out = _mm256_mul_ps(alpha, acc);
    if (beta != 0.0f)
        out = _mm256_fmadd_ps(_mm256_set1_ps(beta), _mm256_loadu_ps(c), out);
    _mm256_storeu_ps(c, out);
}

#define STORE_ROW(i)                                                          \
    do {                                                                      \
        if (i < m) {                                                          \
            store_vec_masked(c + (i) * ldc, c##i##0, mask0, va, beta);        \
            store_vec_masked(c + (i) * ldc + 8, c##i##1, mask1, va, beta);    \
            store_vec_masked(c + (i) * ldc + 16, c##i##2, mask2, va, beta);   \
        }                                                                     \
    } while (0)

#define STORE_FULL_ROW(i)                                                     \
    do {                                                                      \
        store_vec(c + (i) * ldc, c##i##0, va, beta);                          \
        store_vec(c + (i) * ldc + 8, c##i##1, va, beta);                      \
        store_vec(c + (i) * ldc + 16, c##i##2, va, beta);                     \
    } while (0)

#define ZERO_ROW(i) __m256 c##i##0 = _mm256_setzero_ps(), c##i##1 = c##i##0, c##i##2 = c##i##0

/* All-ones in lanes [0, n - offset) of an 8-lane vector. */
AVX2_TARGET static inline __m256i lane_mask(int n, int offset)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n - offset),
                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* a is the (MR, kc) packed A micro-panel, b the (kc, NR) B micro-panel with
 * row stride ldb (NR when packed, B's own when read in place); C (m, n) with
 * row stride ldc gets alpha * a.b + beta * C. copy: NULL, or where the rows
 * of b also go, packed. Always
 * inlined into the two kernels below, so each is compiled with copy known. */
AVX2_TARGET static inline __attribute__((always_inline)) void
tile_4x24(int64_t kc, const float *a, const float *b, int64_t ldb, float *copy, float *c,
          int64_t ldc, float alpha, float beta, int m, int n)
{
    ZERO_ROW(0); ZERO_ROW(1); ZERO_ROW(2); ZERO_ROW(3);
    for (int i = 0; i < m; i++) { /* the 2 or 3 lines a row of 24 floats spans */
        _mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T0);
        _mm_prefetch((const char *)(c + i * ldc + 16), _MM_HINT_T0);
        _mm_prefetch((const char *)(c + i * ldc + n - 1), _MM_HINT_T0);
    }
    for (int64_t k = 0; k < kc; k++)
        K_STEP();
    __m256 va = _mm256_set1_ps(alpha);
    if (m == MR && n == NR) {
        STORE_FULL_ROW(0); STORE_FULL_ROW(1); STORE_FULL_ROW(2); STORE_FULL_ROW(3);
        return;
    }
    __m256i mask0 = lane_mask(n, 0), mask1 = lane_mask(n, 8), mask2 = lane_mask(n, 16);
    STORE_ROW(0); STORE_ROW(1); STORE_ROW(2); STORE_ROW(3);
}

AVX2_TARGET static void kernel_4x24(int64_t kc, const float *a, const float *b, float *c,
                                    int64_t ldc, float alpha, float beta, int m, int n)
{
    tile_4x24(kc, a, b, NR, NULL, c, ldc, alpha, beta, m, n);
}

/* The same tile from a full panel of B read in place, packed on the way into
 * b_packed for the tiles below it (see tensor/gemm_avx512.c). */
AVX2_TARGET static void kernel_4x24_packing(int64_t kc, const float *a, const float *b,
                                            int64_t ldb, float *b_packed, float *c,
                                            int64_t ldc, float alpha, float beta, int m)
{
    tile_4x24(kc, a, b, ldb, b_packed, c, ldc, alpha, beta, m, NR);
}

/* The 8 x 8 block at src (row stride ld) goes transposed to dst (row stride w):
 * dst[t * w + r] = src[r * ld + t]. Written out in full so that every value
 * stays in a register: unpack pairs of rows, shuffle pairs of pairs, then swap
 * 128-bit halves. */
AVX2_TARGET static inline void transpose_8x8(const float *src, int64_t ld, float *dst, int w)
{
    __m256 r0 = _mm256_loadu_ps(src), r1 = _mm256_loadu_ps(src + ld);
    __m256 r2 = _mm256_loadu_ps(src + 2 * ld), r3 = _mm256_loadu_ps(src + 3 * ld);
    __m256 r4 = _mm256_loadu_ps(src + 4 * ld), r5 = _mm256_loadu_ps(src + 5 * ld);
    __m256 r6 = _mm256_loadu_ps(src + 6 * ld), r7 = _mm256_loadu_ps(src + 7 * ld);
    __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
    __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
    __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
    __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    _mm256_storeu_ps(dst, _mm256_permute2f128_ps(u0, u4, 0x20));
    _mm256_storeu_ps(dst + w, _mm256_permute2f128_ps(u1, u5, 0x20));
    _mm256_storeu_ps(dst + 2 * w, _mm256_permute2f128_ps(u2, u6, 0x20));
    _mm256_storeu_ps(dst + 3 * w, _mm256_permute2f128_ps(u3, u7, 0x20));
    _mm256_storeu_ps(dst + 4 * w, _mm256_permute2f128_ps(u0, u4, 0x31));
    _mm256_storeu_ps(dst + 5 * w, _mm256_permute2f128_ps(u1, u5, 0x31));
    _mm256_storeu_ps(dst + 6 * w, _mm256_permute2f128_ps(u2, u6, 0x31));
    _mm256_storeu_ps(dst + 7 * w, _mm256_permute2f128_ps(u3, u7, 0x31));
}

/* The 4 x 8 block at src (row stride ld) goes transposed to 32 contiguous
 * floats: dst[t * 4 + r] = src[r * ld + t]. */
AVX2_TARGET static inline void transpose_4x8(const float *src, int64_t ld, float *dst)
{
    __m256 r0 = _mm256_loadu_ps(src), r1 = _mm256_loadu_ps(src + ld);
    __m256 r2 = _mm256_loadu_ps(src + 2 * ld), r3 = _mm256_loadu_ps(src + 3 * ld);
    __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
    __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    _mm256_storeu_ps(dst, _mm256_permute2f128_ps(u0, u1, 0x20));      /* k 0, 1 */
    _mm256_storeu_ps(dst + 8, _mm256_permute2f128_ps(u2, u3, 0x20));  /* k 2, 3 */
    _mm256_storeu_ps(dst + 16, _mm256_permute2f128_ps(u0, u1, 0x31)); /* k 4, 5 */
    _mm256_storeu_ps(dst + 24, _mm256_permute2f128_ps(u2, u3, 0x31)); /* k 6, 7 */
}

/* dst[k * 4 + r] = src[r * ld + k] for r < v, k < kc; 0 for v <= r < 4: an
 * A micro-panel of the 4 x 24 kernel, 4 x 8 register transposes when all 4
 * rows are there, the k tail and partial panels one float at a time. */
AVX2_TARGET static void pack_trans_4(const float *src, int64_t ld, int w, int v, int64_t kc,
                                     float *dst)
{
    if (w != 4 || v != 4) {
        bertc_gemm_pack_trans_avx2(src, ld, w, v, kc, dst);
        return;
    }
    int64_t kc8 = kc & ~(int64_t)7;
    for (int64_t k = 0; k < kc8; k += 8)
        transpose_4x8(src + k, ld, dst + k * 4);
    for (int64_t k = kc8; k < kc; k++)
        for (int r = 0; r < 4; r++)
            dst[k * 4 + r] = src[r * ld + k];
}

/* dst[k * w + r] = src[r * ld + k] for r < v, k < kc; 0 for v <= r < w.
 * Groups of 8 full rows go through 8 x 8 register transposes; the k tail and
 * a partial row group are copied one float at a time. One row group is
 * finished before the next: rows ld apart often fall in the same L1 set (ld =
 * 3072 floats is 3 x 4 KiB), so sweeping all rows per k block would evict each
 * cache line before its second half is read. */
AVX2_TARGET void bertc_gemm_pack_trans_avx2(const float *src, int64_t ld, int w, int v,
                                      int64_t kc, float *dst)
{
    int v8 = v & ~7;
    int64_t kc8 = kc & ~(int64_t)7;
    for (int r0 = 0; r0 < v8; r0 += 8)
        for (int64_t k = 0; k < kc8; k += 8)
            transpose_8x8(src + r0 * ld + k, ld, dst + k * w + r0, w);
    for (int64_t k = 0; k < kc; k++)
        for (int r = k < kc8 ? v8 : 0; r < w; r++)
            dst[k * w + r] = r < v ? src[r * ld + k] : 0.0f;
}

/* Rows of src fetched ahead by the copying packer: a B panel's rows are a
 * row of B apart (3-12 KiB at the BERT shapes), which the hardware
 * prefetchers do not follow, and packing B was 18-19 % of an AVX2 GEMM at
 * M = 128 (perf). 32 rows ahead: +2 % on average over the 24 BERT shapes
 * on the AVX2 path (Zen 4, one core, alternating runs), within the noise on
 * AVX-512; 4 rows ahead lost 11 %. */
enum { PACK_AHEAD = 32 };

/* dst[k * w + r] = src[k * ld + r] for r < v, k < kc; 0 for v <= r < w.
 * Full panels whose width is a multiple of 8 (all but edge panels) move 8
 * floats per instruction, full 4-wide A micro-panels of the 4 x 24 kernel
 * (op(A) = A^T) 4; the rest go through the scalar packer (a memcpy of 4
 * floats per k made TN 10 % slower than NN at M = 128). */
AVX2_TARGET void bertc_gemm_pack_copy_avx2(const float *src, int64_t ld, int w, int v,
                                     int64_t kc, float *dst)
{
    if (v == 4 && w == 4) {
        for (int64_t k = 0; k < kc; k++, src += ld, dst += 4)
            _mm_storeu_ps(dst, _mm_loadu_ps(src));
        return;
    }
    if (v != w || w % 8 != 0) {
        bertc_gemm_pack_copy_scalar(src, ld, w, v, kc, dst);
        return;
    }
    for (int64_t k = 0; k < kc; k++, src += ld, dst += w) {
        const char *ahead = (const char *)(src + PACK_AHEAD * ld);
        for (int r = 0; r < w; r += 16)
            _mm_prefetch(ahead + r * 4, _MM_HINT_T0);
        _mm_prefetch(ahead + w * 4 - 1, _MM_HINT_T0);
        for (int r = 0; r < w; r += 8)
            _mm256_storeu_ps(dst + r, _mm256_loadu_ps(src + r));
    }
}

/* Blocking for an L1 of 32-48 KiB and an L2 of 1-2 MiB per core: the packed
 * A block (MC x KC = 144 x 256 floats, 144 KiB) stays in L2 while the B
 * micro-panels (KC x NR = 24 KiB) stay in L1. */
const GemmKernel bertc_gemm_kernel_avx2 = {
    .name = "avx2",
    .mr = MR,
    .nr = NR,
    .mc = 144,
    .kc = 256,
    .nc = 3072,
    .kernel = kernel_4x24,
    .kernel_packing = kernel_4x24_packing,
    .pack_trans = pack_trans_4,
    .pack_copy = bertc_gemm_pack_copy_avx2,
};

#endif /* __x86_64__ */
