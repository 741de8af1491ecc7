/* tensor/qgemm_avx512vnni.c — the int8 micro-kernel on AVX-512 VNNI: an
 * 8 x 48 tile of int32 sums, as the fp32 kernel's tile (tensor/gemm_avx512.c).
 *
 * vpdpbusd adds to each int32 lane the four products
 * of 4 unsigned bytes of its first operand with 4 signed bytes of its second.
 * A's bytes are signed, so they are stored biased, u = qa + 128 (0..254), and
 * the bias is taken out once at the end:
 *     sum_k u[k] w[k] = sum_k qa[k] w[k] + 128 * sum_k w[k]
 * with sum_k w[k] = col_sum[j], computed when W is packed — the u8 x s8
 * compensation of oneDNN's and MLAS's int8 GEMMs. vpdpbusd wraps (it is not
 * the saturating vpdpbusds), so even when the biased sum passes 2^31 (K above
 * ~66000) the difference, computed mod 2^32, is the exact sum, which fits.
 *
 * Register budget (32 zmm): 8 rows x 3 vectors of 16 channels = 24
 * accumulators, 3 for the current k-group of the W panel (192 bytes = 48
 * channels x 4 k), 1 for a broadcast of 4 bytes of A. Per k-group: 3 loads,
 * 8 broadcasts, 24 vpdpbusd (each 64 multiply-adds).
 *
 * Only the functions carry the target attribute: the file compiles in the
 * portable default build and runs only when bertc_qgemm_isa() says so. */
#include "tensor/qgemm_internal.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <string.h>

#define VNNI512_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))

enum { MR = 8, NR = 48 };

/* ---- quantising a row of A ---------------------------------------------- */

/* max |x| as max(a, m) per lane: a NaN lane never wins (maxps keeps its second
 * operand), as in the scalar definition. */
VNNI512_TARGET static float row_amax(const float *x, int64_t n)
{
    __m512 m = _mm512_setzero_ps();
    for (int64_t k = 0; k < n; k += 16) {
        __mmask16 live = n - k >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - k)) - 1);
        m = _mm512_max_ps(_mm512_abs_ps(_mm512_maskz_loadu_ps(live, x + k)), m);
    }
    return _mm512_reduce_max_ps(m);
}

/* q[k] = rne(clamp(x[k] * inv, -127, 127)) (+ 128 when biased) for 16 lanes
 * at a time; the conversion rounds by MXCSR, to nearest even. */
VNNI512_TARGET static float quantize_row(const float *x, int64_t cols, int64_t k_pad, int8_t *q,
                                         bool biased)
{
    float inv, scale = bertc_qgemm_row_scale(row_amax(x, cols), &inv);
    __m512 vinv = _mm512_set1_ps(inv), lo = _mm512_set1_ps(-127.0f), hi = _mm512_set1_ps(127.0f);
    __m128i offset = _mm_set1_epi8(biased ? (char)0x80 : 0);
    for (int64_t k = 0; k < cols; k += 16) {
        __mmask16 live = cols - k >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (cols - k)) - 1);
        __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(live, x + k), vinv);
        v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
        __m128i b = _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(v));
        _mm_mask_storeu_epi8(q + k, live, _mm_xor_si128(b, offset));
    }
    memset(q + cols, biased ? 128 : 0, (size_t)(k_pad - cols));
    return scale;
}

/* ---- the micro-kernel ---------------------------------------------------- */

/* acc += per 32-bit lane, the 4 products of u8 bytes of a by s8 bytes of w:
 * vpdpbusd, written as inline asm because GCC 12 compiles
 * _mm512_dpbusd_epi32 in this loop with a second copy of every accumulator,
 * stored to the stack on each k-group (24 extra stores and 48 moves per 24
 * vpdpbusd, seen with objdump; the same in tensor/qgemm_avxvnni.c); "+v"
 * keeps each accumulator in one register. */
VNNI512_TARGET static inline __m512i dpbusd(__m512i acc, __m512i a, __m512i w)
{
    __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(w));
    return acc;
}

/* 4 bytes of row i of A at k-group g, in every lane. */
#define A_BROADCAST(i) _mm512_set1_epi32(load_u32(a + (i) * lda + 4 * g))

#define ROW_DOT(i)                                         \
    do {                                                   \
        __m512i ai = A_BROADCAST(i);                       \
        c##i##0 = dpbusd(c##i##0, ai, b0);    \
        c##i##1 = dpbusd(c##i##1, ai, b1);    \
        c##i##2 = dpbusd(c##i##2, ai, b2);    \
    } while (0)

#define ZERO_ROW(i) __m512i c##i##0 = _mm512_setzero_si512(), c##i##1 = c##i##0, c##i##2 = c##i##0

#define STORE_ROW(i)                                                        \
    do {                                                                    \
        __m512 s = _mm512_set1_ps(sa[i]);                                   \
        float *ci = c + (i) * ldc;                                          \
        store_vec(ci, _mm512_sub_epi32(c##i##0, k0), s, sw0, bias);         \
        store_vec(ci + 16, _mm512_sub_epi32(c##i##1, k1), s, sw1, bias ? bias + 16 : NULL); \
        store_vec(ci + 32, _mm512_sub_epi32(c##i##2, k2), s, sw2, bias ? bias + 32 : NULL); \
    } while (0)

static inline int32_t load_u32(const int8_t *p)
{
    int32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* c[0..16) = ((float)acc * sa) * sw + bias, the scalar epilogue's order. */
VNNI512_TARGET static inline void store_vec(float *c, __m512i acc, __m512 sa, __m512 sw,
                                            const float *bias)
{
    __m512 y = _mm512_mul_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(acc), sa), sw);
    if (bias)
        y = _mm512_add_ps(y, _mm512_loadu_ps(bias));
    _mm512_storeu_ps(c, y);
}

/* The tile's 8 rows of C (3 cache lines each), fetched while the k loop
 * runs, as the float32 kernel does (tensor/gemm_avx512.c): Y is only
 * written, at the end, and at M = 1024 (3-12 MiB) its lines are not in L2. */
static inline void prefetch_c(const float *c, int64_t ldc)
{
    for (int i = 0; i < MR; i++) {
        _mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T0);
        _mm_prefetch((const char *)(c + i * ldc + 16), _MM_HINT_T0);
        _mm_prefetch((const char *)(c + i * ldc + 32), _MM_HINT_T0);
        _mm_prefetch((const char *)(c + i * ldc + NR - 1), _MM_HINT_T0);
    }
}

VNNI512_TARGET static void kernel_8x48(int64_t k_pad, const int8_t *a, int64_t lda,
                                       const int8_t *b, const float *sa, const float *sw,
                                       const int32_t *col_sum, const float *bias, float *c,
                                       int64_t ldc)
{
    ZERO_ROW(0); ZERO_ROW(1); ZERO_ROW(2); ZERO_ROW(3);
    ZERO_ROW(4); ZERO_ROW(5); ZERO_ROW(6); ZERO_ROW(7);
    prefetch_c(c, ldc);
    for (int64_t g = 0; g < k_pad / 4; g++, b += 4 * NR) {
        __m512i b0 = _mm512_loadu_si512(b), b1 = _mm512_loadu_si512(b + 64);
        __m512i b2 = _mm512_loadu_si512(b + 128);
        ROW_DOT(0); ROW_DOT(1); ROW_DOT(2); ROW_DOT(3);
        ROW_DOT(4); ROW_DOT(5); ROW_DOT(6); ROW_DOT(7);
    }
    /* the bias of A: 128 * col_sum[j] */
    __m512i k0 = _mm512_slli_epi32(_mm512_loadu_si512(col_sum), 7);
    __m512i k1 = _mm512_slli_epi32(_mm512_loadu_si512(col_sum + 16), 7);
    __m512i k2 = _mm512_slli_epi32(_mm512_loadu_si512(col_sum + 32), 7);
    __m512 sw0 = _mm512_loadu_ps(sw), sw1 = _mm512_loadu_ps(sw + 16);
    __m512 sw2 = _mm512_loadu_ps(sw + 32);
    STORE_ROW(0); STORE_ROW(1); STORE_ROW(2); STORE_ROW(3);
    STORE_ROW(4); STORE_ROW(5); STORE_ROW(6); STORE_ROW(7);
}

/* MC = 128 rows of A (128 x 3072 bytes at most, in L2 beside a 144 KiB panel
 * of W); 128 and 1024 tokens are whole row blocks. */
const QgemmKernel bertc_qgemm_kernel_avx512vnni = {
    .isa = QGEMM_ISA_AVX512VNNI,
    .mr = MR,
    .nr = NR,
    .mc = 128,
    .biased = true,
    .quantize_row = quantize_row,
    .kernel = kernel_8x48,
};

#endif /* __x86_64__ */
