/* tensor/qgemm_avxvnni.c — the int8 micro-kernel on AVX-VNNI: the 256-bit,
 * VEX-encoded vpdpbusd of Alder Lake and later client CPUs (and of Sapphire
 * Rapids, Zen 5), which have no AVX-512 or have it switched off: the path of
 * a laptop, and of BERTC_ISA=avx2 on a server that has it. A 6 x 16 tile.
 *
 * As on the AVX-512 VNNI path (tensor/qgemm_avx512vnni.c, which explains it),
 * A is stored biased, u = qa + 128, for vpdpbusd's u8 x s8 products, and
 * 128 * col_sum[j] is subtracted at the end (oneDNN's and MLAS's u8s8
 * compensation). A is quantised by the AVX2 quantiser (tensor/qgemm_avx2.c).
 *
 * Register budget (16 ymm): 6 rows x 2 vectors of 8 channels = 12
 * accumulators, 2 for the W k-group (64 bytes = 16 channels x 4 k), 1 for a
 * broadcast of A. Per k-group: 2 loads, 6 broadcasts, 12 vpdpbusd. */
#include "tensor/qgemm_internal.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <string.h>

#define AVXVNNI_TARGET __attribute__((target("avx2,avxvnni")))

enum { MR = 6, NR = 16 };

static inline int32_t load_u32(const int8_t *p)
{
    int32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* acc += per 32-bit lane, the 4 products of u8 bytes of a by s8 bytes of w:
 * the VEX vpdpbusd ({vex} picks AVX-VNNI over EVEX), as inline asm for the reason given in
 * tensor/qgemm_avx512vnni.c (GCC 12 spills copies of the accumulators of
 * _mm256_dpbusd_avx_epi32 on every k-group). "x": a VEX register, ymm0-15. */
AVXVNNI_TARGET static inline __m256i dpbusd(__m256i acc, __m256i a, __m256i w)
{
    __asm__("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(a), "x"(w));
    return acc;
}

#define ROW_DOT(i)                                                        \
    do {                                                                  \
        __m256i ai = _mm256_set1_epi32(load_u32(a + (i) * lda + 4 * g));  \
        c##i##0 = dpbusd(c##i##0, ai, b0);               \
        c##i##1 = dpbusd(c##i##1, ai, b1);               \
    } while (0)

#define ZERO_ROW(i) __m256i c##i##0 = _mm256_setzero_si256(), c##i##1 = c##i##0

/* c[0..8) = ((float)acc * sa) * sw + bias, the scalar epilogue's order. */
AVXVNNI_TARGET static inline void store_vec(float *c, __m256i acc, __m256 sa, __m256 sw,
                                            const float *bias)
{
    __m256 y = _mm256_mul_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(acc), sa), sw);
    if (bias)
        y = _mm256_add_ps(y, _mm256_loadu_ps(bias));
    _mm256_storeu_ps(c, y);
}

#define STORE_ROW(i)                                                              \
    do {                                                                          \
        __m256 s = _mm256_set1_ps(sa[i]);                                         \
        store_vec(c + (i) * ldc, _mm256_sub_epi32(c##i##0, k0), s, sw0, bias);    \
        store_vec(c + (i) * ldc + 8, _mm256_sub_epi32(c##i##1, k1), s, sw1,       \
                  bias ? bias + 8 : NULL);                                        \
    } while (0)

AVXVNNI_TARGET static void kernel_6x16(int64_t k_pad, const int8_t *a, int64_t lda,
                                       const int8_t *b, const float *sa, const float *sw,
                                       const int32_t *col_sum, const float *bias, float *c,
                                       int64_t ldc)
{
    ZERO_ROW(0); ZERO_ROW(1); ZERO_ROW(2); ZERO_ROW(3); ZERO_ROW(4); ZERO_ROW(5);
    for (int64_t g = 0; g < k_pad / 4; g++, b += 4 * NR) {
        __m256i b0 = _mm256_loadu_si256((const __m256i *)b);
        __m256i b1 = _mm256_loadu_si256((const __m256i *)(b + 32));
        ROW_DOT(0); ROW_DOT(1); ROW_DOT(2); ROW_DOT(3); ROW_DOT(4); ROW_DOT(5);
    }
    /* the bias of A: 128 * col_sum[j] */
    __m256i k0 = _mm256_slli_epi32(_mm256_loadu_si256((const __m256i *)col_sum), 7);
    __m256i k1 = _mm256_slli_epi32(_mm256_loadu_si256((const __m256i *)(col_sum + 8)), 7);
    __m256 sw0 = _mm256_loadu_ps(sw), sw1 = _mm256_loadu_ps(sw + 8);
    STORE_ROW(0); STORE_ROW(1); STORE_ROW(2); STORE_ROW(3); STORE_ROW(4); STORE_ROW(5);
}

/* MC = 120 rows: a multiple of MR = 6 near the 128 of the other paths. */
const QgemmKernel bertc_qgemm_kernel_avxvnni = {
    .isa = QGEMM_ISA_AVXVNNI,
    .mr = MR,
    .nr = NR,
    .mc = 120,
    .biased = true,
    .quantize_row = bertc_qgemm_quantize_row_avx2,
    .kernel = kernel_6x16,
};

#endif /* __x86_64__ */
