/* tensor/qgemm_avx2.c — the int8 micro-kernel on AVX2: a 4 x 16 tile of
 * int32 sums, for CPUs without VNNI (Haswell to Skylake, Zen 1-3). Also the
 * AVX2 row quantiser, which the AVX-VNNI path shares.
 *
 * AVX2's byte multiply, pmaddubsw (_mm256_maddubs_epi16), takes unsigned
 * bytes times signed bytes and adds adjacent pairs into int16 with
 * saturation. Both our operands are signed, so the sign of a moves onto w
 * (the trick of ggml's AVX2 q8 dot products, mul_sum_i8_pairs):
 *     a * w = |a| * (sign(a) * w)       _mm256_sign_epi8(w, a) is sign(a) * w
 * |a| <= 127 fits a u8, sign(a) * w stays in [-127, 127] (never -128), and a
 * pair sums to at most 2 * 127 * 127 = 32258 < 32767: no saturation, so the
 * result is exact. pmaddwd with ones (_mm256_madd_epi16) then adds the int16
 * pairs into the int32 lane of each channel's 4 bytes.
 *
 * Register budget (16 ymm): 4 rows x 2 vectors of 8 channels = 8
 * accumulators, 2 for the W k-group (64 bytes = 16 channels x 4 k), the
 * ones, a broadcast of A, its |a|, and 2 temporaries. */
#include "tensor/qgemm_internal.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <string.h>

#define AVX2_TARGET __attribute__((target("avx2")))

enum { MR = 4, NR = 16 };

/* ---- quantising a row of A ---------------------------------------------- */

/* Lanes [0, n) of 8 set, for maskload. */
AVX2_TARGET static __m256i live_lanes(int64_t n)
{
    __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(n < 8 ? n : 8)), idx);
}

/* x[k .. k + 8), the lanes past n read as 0 (and not touched in memory). */
AVX2_TARGET static __m256 load_part(const float *x, int64_t k, int64_t n)
{
    return n - k >= 8 ? _mm256_loadu_ps(x + k) : _mm256_maskload_ps(x + k, live_lanes(n - k));
}

/* max |x| as max(a, m) per lane: a NaN lane never wins (maxps keeps its second
 * operand), as in the scalar definition. */
AVX2_TARGET static float row_amax(const float *x, int64_t n)
{
    __m256 m = _mm256_setzero_ps(), abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
    for (int64_t k = 0; k < n; k += 8)
        m = _mm256_max_ps(_mm256_and_ps(load_part(x, k, n), abs_mask), m);
    float lanes[8], r = 0.0f;
    _mm256_storeu_ps(lanes, m);
    for (int i = 0; i < 8; i++)
        r = lanes[i] > r ? lanes[i] : r;
    return r;
}

/* 8 floats -> 8 int32 q = rne(clamp(x * inv, -127, 127)) (MXCSR rounding: to
 * nearest even). */
AVX2_TARGET static __m256i quantize8(__m256 x, __m256 inv)
{
    __m256 v = _mm256_mul_ps(x, inv);
    v = _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(-127.0f)), _mm256_set1_ps(127.0f));
    return _mm256_cvtps_epi32(v);
}

/* 32 elements at a time: four vectors q0..q3 of int32 packed to bytes. The
 * packs work within 128-bit lanes, so the 4-byte groups come out as
 * q0.lo q1.lo q2.lo q3.lo q0.hi q1.hi q2.hi q3.hi; the permute 0 4 1 5 2 6 3 7
 * puts them in order. */
AVX2_TARGET float bertc_qgemm_quantize_row_avx2(const float *x, int64_t cols, int64_t k_pad, int8_t *q,
                                    bool biased)
{
    float inv, scale = bertc_qgemm_row_scale(row_amax(x, cols), &inv);
    __m256 vinv = _mm256_set1_ps(inv);
    __m256i offset = _mm256_set1_epi8(biased ? (char)0x80 : 0);
    __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (int64_t k = 0; k < cols; k += 32) {
        __m256i q0 = quantize8(load_part(x, k, cols), vinv);
        __m256i q1 = quantize8(load_part(x, k + 8, cols), vinv);
        __m256i q2 = quantize8(load_part(x, k + 16, cols), vinv);
        __m256i q3 = quantize8(load_part(x, k + 24, cols), vinv);
        __m256i b = _mm256_packs_epi16(_mm256_packs_epi32(q0, q1), _mm256_packs_epi32(q2, q3));
        b = _mm256_xor_si256(_mm256_permutevar8x32_epi32(b, order), offset);
        if (cols - k >= 32) {
            _mm256_storeu_si256((__m256i *)(q + k), b);
        } else {
            int8_t tail[32];
            _mm256_storeu_si256((__m256i *)tail, b);
            memcpy(q + k, tail, (size_t)(cols - k));
        }
    }
    memset(q + cols, biased ? 128 : 0, (size_t)(k_pad - cols));
    return scale;
}

/* ---- the micro-kernel ---------------------------------------------------- */

static inline int32_t load_u32(const int8_t *p)
{
    int32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* acc += the int32 sums of 4 products a * w per lane, by the sign trick. */
AVX2_TARGET static inline __m256i dot4(__m256i acc, __m256i abs_a, __m256i a, __m256i w,
                                       __m256i ones)
{
    __m256i pairs = _mm256_maddubs_epi16(abs_a, _mm256_sign_epi8(w, a));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, ones));
}

#define ROW_DOT(i)                                                        \
    do {                                                                  \
        __m256i ai = _mm256_set1_epi32(load_u32(a + (i) * lda + 4 * g));  \
        __m256i abs_ai = _mm256_abs_epi8(ai);                             \
        c##i##0 = dot4(c##i##0, abs_ai, ai, b0, ones);                    \
        c##i##1 = dot4(c##i##1, abs_ai, ai, b1, ones);                    \
    } while (0)

#define ZERO_ROW(i) __m256i c##i##0 = _mm256_setzero_si256(), c##i##1 = c##i##0

/* c[0..8) = ((float)acc * sa) * sw + bias, the scalar epilogue's order. */
AVX2_TARGET static inline void store_vec(float *c, __m256i acc, __m256 sa, __m256 sw,
                                         const float *bias)
{
    __m256 y = _mm256_mul_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(acc), sa), sw);
    if (bias)
        y = _mm256_add_ps(y, _mm256_loadu_ps(bias));
    _mm256_storeu_ps(c, y);
}

#define STORE_ROW(i)                                                             \
    do {                                                                         \
        __m256 s = _mm256_set1_ps(sa[i]);                                        \
        store_vec(c + (i) * ldc, c##i##0, s, sw0, bias);                         \
        store_vec(c + (i) * ldc + 8, c##i##1, s, sw1, bias ? bias + 8 : NULL);   \
    } while (0)

AVX2_TARGET static void kernel_4x16(int64_t k_pad, const int8_t *a, int64_t lda,
                                    const int8_t *b, const float *sa, const float *sw,
                                    const int32_t *col_sum, const float *bias, float *c,
                                    int64_t ldc)
{
    (void)col_sum;   /* A is not biased on this path */
    __m256i ones = _mm256_set1_epi16(1);
    ZERO_ROW(0); ZERO_ROW(1); ZERO_ROW(2); ZERO_ROW(3);
    for (int64_t g = 0; g < k_pad / 4; g++, b += 4 * NR) {
        __m256i b0 = _mm256_loadu_si256((const __m256i *)b);
        __m256i b1 = _mm256_loadu_si256((const __m256i *)(b + 32));
        ROW_DOT(0); ROW_DOT(1); ROW_DOT(2); ROW_DOT(3);
    }
    __m256 sw0 = _mm256_loadu_ps(sw), sw1 = _mm256_loadu_ps(sw + 8);
    STORE_ROW(0); STORE_ROW(1); STORE_ROW(2); STORE_ROW(3);
}

const QgemmKernel bertc_qgemm_kernel_avx2 = {
    .isa = QGEMM_ISA_AVX2,
    .mr = MR,
    .nr = NR,
    .mc = 128,
    .biased = false,
    .quantize_row = bertc_qgemm_quantize_row_avx2,
    .kernel = kernel_4x16,
};

#endif /* __x86_64__ */
