/* tensor/bgemm_avx512bf16.c — the bf16 micro-kernel on AVX512_BF16: an
 * 8 x 48 tile of float32 sums, as the int8 kernel's (tensor/qgemm_avx512vnni.c).
 *
 * vdpbf16ps adds to each float32 lane of its accumulator the two products
 * of a pair of bf16 of its first operand with the pair in the same lane of
 * its second: exactly bertc_bgemm_dot2 (the definition, tensor/kernels.h),
 * checked against the instruction by test/test_bgemm.c. A row of A is
 * converted 32 floats at a time by vcvtne2ps2bf16 (its tail by
 * vcvtneps2bf16, 16 at a time), the conversion bertc_bf16_from_f32 writes
 * out.
 *
 * Register budget (32 zmm): 8 rows x 3 vectors of 16 channels = 24
 * accumulators, 3 for the current k-pair of the W panel (192 bytes = 48
 * channels x 2 bf16), 1 for a broadcast of a pair of A. Per k-pair: 3 loads,
 * 8 broadcasts, 24 vdpbf16ps (each 32 multiply-adds).
 *
 * Only the functions carry the target attribute: the file compiles in the
 * portable default build and runs only when bertc_bgemm_isa() says so. */
#include "tensor/bgemm_internal.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <string.h>

#define BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

enum { MR = 8, NR = BGEMM_NR };

/* ---- converting a row of A ------------------------------------------------ */

/* 16 lanes from x (n of them live, the rest read as 0) into 16 bf16. */
BF16_TARGET static __m256i convert16(const float *x, int64_t n)
{
    __mmask16 live = n >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << n) - 1);
    return (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(live, x));
}

BF16_TARGET void bertc_bgemm_convert_row_avx512bf16(const float *x, int64_t cols, int64_t k_pad, uint16_t *b)
{
    int64_t k = 0;
    for (; k + 32 <= cols; k += 32) {
        __m512 lo = _mm512_loadu_ps(x + k), hi = _mm512_loadu_ps(x + k + 16);
        _mm512_storeu_si512(b + k, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));   /* lo first */
    }
    for (; k < cols; k += 16) {
        int64_t n = cols - k;
        __mmask16 live = n >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << n) - 1);
        _mm256_mask_storeu_epi16(b + k, live, convert16(x + k, n));
    }
    for (k = cols; k < k_pad; k++)
        b[k] = 0;
}

/* ---- converting a transposed tile ------------------------------------------ */

/* r[i] = column i of the 16 x 16 matrix whose row k is r[k] (lane i of
 * r[k] becomes lane k of r[i]): the usual butterfly. Within each 128-bit
 * lane, 4 x 4 blocks are transposed (unpack, then shuffle pairs), so that
 * t[4a + b] holds in its lane j the rows 4a .. 4a + 3 at column 4j + b;
 * two rounds of 128-bit lane shuffles then gather, for column c = 4j + b,
 * lane j of t[b], t[4 + b], t[8 + b], t[12 + b]. */
BF16_TARGET static void transpose_16x16(__m512 r[16])
{
    __m512 t[16], e[8], o[8];
    for (int a = 0; a < 4; a++) {
        __m512 *x = r + 4 * a;
        __m512 lo01 = _mm512_unpacklo_ps(x[0], x[1]), hi01 = _mm512_unpackhi_ps(x[0], x[1]);
        __m512 lo23 = _mm512_unpacklo_ps(x[2], x[3]), hi23 = _mm512_unpackhi_ps(x[2], x[3]);
        t[4 * a + 0] = _mm512_shuffle_ps(lo01, lo23, 0x44);
        t[4 * a + 1] = _mm512_shuffle_ps(lo01, lo23, 0xEE);
        t[4 * a + 2] = _mm512_shuffle_ps(hi01, hi23, 0x44);
        t[4 * a + 3] = _mm512_shuffle_ps(hi01, hi23, 0xEE);
    }
    for (int b = 0; b < 4; b++) {   /* 0x88: lanes 0 and 2 of each; 0xDD: lanes 1 and 3 */
        e[b] = _mm512_shuffle_f32x4(t[b], t[4 + b], 0x88);
        e[4 + b] = _mm512_shuffle_f32x4(t[8 + b], t[12 + b], 0x88);
        o[b] = _mm512_shuffle_f32x4(t[b], t[4 + b], 0xDD);
        o[4 + b] = _mm512_shuffle_f32x4(t[8 + b], t[12 + b], 0xDD);
    }
    for (int b = 0; b < 4; b++) {
        r[b] = _mm512_shuffle_f32x4(e[b], e[4 + b], 0x88);        /* lane j = 0 */
        r[4 + b] = _mm512_shuffle_f32x4(o[b], o[4 + b], 0x88);    /* j = 1 */
        r[8 + b] = _mm512_shuffle_f32x4(e[b], e[4 + b], 0xDD);    /* j = 2 */
        r[12 + b] = _mm512_shuffle_f32x4(o[b], o[4 + b], 0xDD);   /* j = 3 */
    }
}

/* Rows k0 .. k0 + 15 of the tile (kn of them live, cols lanes each, the
 * rest 0), transposed: r[i] lane k = src[k0 + k][i]. */
BF16_TARGET static void load_transposed(const float *src, int64_t lds, int k0, int kn,
                                        __mmask16 live, __m512 r[16])
{
    for (int k = 0; k < 16; k++)
        r[k] = k0 + k < kn ? _mm512_maskz_loadu_ps(live, src + (k0 + k) * lds)
                           : _mm512_setzero_ps();
    transpose_16x16(r);
}

/* The tile of bertc_bgemm_convert_trans_scalar: two 16 x 16 halves along k
 * transposed, then each out row's 32 bf16 converted by one vcvtne2ps2bf16
 * and stored at once (its kn of them). */
BF16_TARGET void bertc_bgemm_convert_trans_avx512bf16(const float *src, int64_t lds, int kn,
                                                      int cols, int rows, uint16_t *out,
                                                      int64_t ldo)
{
    __mmask16 live = cols >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << cols) - 1);
    __mmask32 ks = kn >= 32 ? (__mmask32)0xFFFFFFFF : (__mmask32)((1u << kn) - 1);
    __m512 lo[16], hi[16];
    load_transposed(src, lds, 0, kn, live, lo);
    load_transposed(src, lds, 16, kn, live, hi);
    for (int i = 0; i < rows; i++)
        _mm512_mask_storeu_epi16(out + i * ldo, ks, (__m512i)_mm512_cvtne2ps_pbh(hi[i], lo[i]));
}

/* Rows k0 .. k0 + 15 of a bf16 tile, each bf16 widened to a 32-bit lane
 * (cols lanes, the rest 0), transposed as convert_trans's floats are. */
BF16_TARGET static void load_transposed_bf16(const uint16_t *src, int64_t lds, int k0, int kn,
                                             __mmask16 live, __m512 r[16])
{
    for (int k = 0; k < 16; k++)
        r[k] = k0 + k < kn
            ? _mm512_castsi512_ps(_mm512_cvtepu16_epi32(
                  _mm256_maskz_loadu_epi16(live, src + (k0 + k) * lds)))
            : _mm512_setzero_ps();
    transpose_16x16(r);
}

/* bertc_bgemm_transpose_tile_scalar: as convert_trans, the 32-bit lanes
 * narrowed back to bf16 (vpmovdw) instead of rounded. */
BF16_TARGET void bertc_bgemm_transpose_tile_avx512bf16(const uint16_t *src, int64_t lds, int kn,
                                                       int cols, int rows, uint16_t *out,
                                                       int64_t ldo)
{
    __mmask16 live = cols >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << cols) - 1);
    __mmask32 ks = kn >= 32 ? (__mmask32)0xFFFFFFFF : (__mmask32)((1u << kn) - 1);
    __m512 lo[16], hi[16];
    load_transposed_bf16(src, lds, 0, kn, live, lo);
    load_transposed_bf16(src, lds, 16, kn, live, hi);
    for (int i = 0; i < rows; i++) {
        __m256i l = _mm512_cvtepi32_epi16(_mm512_castps_si512(lo[i]));
        __m256i h = _mm512_cvtepi32_epi16(_mm512_castps_si512(hi[i]));
        _mm512_mask_storeu_epi16(out + i * ldo, ks,
                                 _mm512_inserti64x4(_mm512_castsi256_si512(l), h, 1));
    }
}

/* bertc_bgemm_convert_pairs_scalar 16 channels at a time: 16 of each row
 * converted by one vcvtne2ps2bf16 (even in the low half, odd in the high),
 * then interleaved by one vpermw into 16 pairs, 64 bytes stored at once. */
BF16_TARGET void bertc_bgemm_convert_pairs_avx512bf16(const float *even, const float *odd,
                                                      int n, uint16_t *out)
{
    const __m512i interleave = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10,
                                                25, 9, 24, 8, 23, 7, 22, 6, 21, 5, 20, 4, 19, 3,
                                                18, 2, 17, 1, 16, 0);
    for (int j = 0; j < NR; j += 16) {
        int live = n - j;
        __mmask16 m = live >= 16 ? (__mmask16)0xFFFF
                      : live <= 0 ? (__mmask16)0 : (__mmask16)((1u << live) - 1);
        __m512 e = _mm512_maskz_loadu_ps(m, even + j);
        __m512 o = odd ? _mm512_maskz_loadu_ps(m, odd + j) : _mm512_setzero_ps();
        __m512i both = (__m512i)_mm512_cvtne2ps_pbh(o, e);
        _mm512_storeu_si512(out + 2 * j, _mm512_permutexvar_epi16(interleave, both));
    }
}

/* ---- the micro-kernel ---------------------------------------------------- */

/* acc += per float32 lane, the 2 products of the bf16 pair of a with the
 * pair of w: vdpbf16ps, written as inline asm for the reason
 * tensor/qgemm_avx512vnni.c gives (GCC 12 keeps a second copy of each
 * accumulator on the stack around the intrinsic in this loop); "+v" keeps
 * each accumulator in one register. A is the first multiplicand, as in the
 * definition's fma(a, w, acc): which of two NaNs comes out depends on it. */
BF16_TARGET static inline __m512 dpbf16(__m512 acc, __m512i a, __m512i w)
{
    __asm__("vdpbf16ps %2, %1, %0" : "+v"(acc) : "v"(a), "v"(w));
    return acc;
}

static inline int32_t load_u32(const uint16_t *p)
{
    int32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* The pair of row i of A at k-pair g, in every lane. */
#define A_BROADCAST(i) _mm512_set1_epi32(load_u32(a + (i) * lda + 2 * g))

#define ROW_DOT(i)                                 \
    do {                                           \
        __m512i ai = A_BROADCAST(i);               \
        c##i##0 = dpbf16(c##i##0, ai, b0);         \
        c##i##1 = dpbf16(c##i##1, ai, b1);         \
        c##i##2 = dpbf16(c##i##2, ai, b2);         \
    } while (0)

#define ZERO_ROW(i) __m512 c##i##0 = _mm512_setzero_ps(), c##i##1 = c##i##0, c##i##2 = c##i##0

#define STORE_ROW(i)                                                 \
    do {                                                             \
        float *ci = c + (i) * ldc;                                   \
        store_vec(ci, c##i##0, bias);                                \
        store_vec(ci + 16, c##i##1, bias ? bias + 16 : NULL);        \
        store_vec(ci + 32, c##i##2, bias ? bias + 32 : NULL);        \
    } while (0)

/* c[0..16) = acc + bias (one add), or acc. */
BF16_TARGET static inline void store_vec(float *c, __m512 acc, const float *bias)
{
    if (bias)
        acc = _mm512_add_ps(acc, _mm512_loadu_ps(bias));
    _mm512_storeu_ps(c, acc);
}

BF16_TARGET static void kernel_8x48(int64_t k_pad, const uint16_t *a, int64_t lda,
                                    const uint16_t *b, const float *bias, float *c, int64_t ldc)
{
    ZERO_ROW(0); ZERO_ROW(1); ZERO_ROW(2); ZERO_ROW(3);
    ZERO_ROW(4); ZERO_ROW(5); ZERO_ROW(6); ZERO_ROW(7);
    for (int64_t g = 0; g < k_pad / 2; g++, b += 2 * NR) {
        __m512i b0 = _mm512_loadu_si512(b), b1 = _mm512_loadu_si512(b + 32);
        __m512i b2 = _mm512_loadu_si512(b + 64);
        ROW_DOT(0); ROW_DOT(1); ROW_DOT(2); ROW_DOT(3);
        ROW_DOT(4); ROW_DOT(5); ROW_DOT(6); ROW_DOT(7);
    }
    STORE_ROW(0); STORE_ROW(1); STORE_ROW(2); STORE_ROW(3);
    STORE_ROW(4); STORE_ROW(5); STORE_ROW(6); STORE_ROW(7);
}

/* MC = 128 rows of A (at most 768 KiB of bf16 for K = 3072, with a 288 KiB
 * panel of W: about one L2); 128 and 1024 tokens are whole row blocks. */
const BgemmKernel bertc_bgemm_kernel_avx512bf16 = {
    .isa = BGEMM_ISA_AVX512BF16,
    .mr = MR,
    .mc = 128,
    .ka = 2,
    .convert_row = bertc_bgemm_convert_row_avx512bf16,
    .convert_trans = bertc_bgemm_convert_trans_avx512bf16,
    .convert_pairs = bertc_bgemm_convert_pairs_avx512bf16,
    .transpose_tile = bertc_bgemm_transpose_tile_avx512bf16,
    .kernel = kernel_8x48,
};

#endif /* __x86_64__ */
