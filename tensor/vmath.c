/* tensor/vmath.c — bertc's own expf, tanhf and erff: a portable scalar twin
 * and AVX-512 (16 lanes), AVX2+FMA (8 lanes) and NEON (4 lanes) versions of
 * the same algorithm, plus array loops that dispatch on bertc_cpu_isa().
 *
 * Why not libm: erff/tanhf/expf differ in their last bits between glibc,
 * newlib and musl (SPEC §10), and libm has no vector versions. The scalar
 * functions here use only float +, -, *, / and bit operations, so they give
 * the same bits on every target whose float arithmetic is IEEE-754 single
 * with round-to-nearest and FLT_EVAL_METHOD == 0. The SIMD versions evaluate
 * the same polynomials with fused multiply-adds (one rounding instead of two),
 * so they can differ from the scalar twin in the last bit.
 *
 * Polynomial coefficients: weighted minimax fits (Lawson's iteratively
 * reweighted least squares on 3000 Chebyshev points in long double, then each
 * coefficient rounded to float, highest degree first, refitting the rest).
 *
 * Measured max error in ulps of the float result vs. double-precision libm
 * (exp, tanh, erf), over EVERY float in the range (an exhaustive run, x86-64,
 * 2.2e9 inputs for expf); test/test_vmath.c re-measures every path on a dense
 * sample (every 509th float) and asserts the bound in the last column:
 *
 *                      range           scalar  avx512  avx2   asserted
 *   bertc_expf    [-104, 88.73]        0.99    1.01    1.01   <= 1.5
 *   bertc_tanhf   [-10, 10]            1.33    1.33    1.33   <= 2
 *   bertc_erff    [-4, 4]              1.26    1.09    1.09   <= 2
 *
 * (worst inputs: expf -27.378985 / 37.778641, tanhf 0.631044, erff 0.994577 /
 * 1.058437). The NEON path runs the AVX2 code's operations lane for lane; it
 * is compile-checked here but was not measured (no AArch64 runner).
 *
 * Outside these ranges the results are exact: expf is 0 or +inf, tanhf and
 * erff are +-1 (the true values round there in float).
 */
#include "tensor/kernels_internal.h"

#include <string.h>

/* ---- constants shared by every path --------------------------------------- */

/* expf: Cody-Waite reduction x = n ln2 + r, |r| <= ln2/2, n = round(x log2 e).
 * LN2_HI = 355/512 has 9 significant bits, so n * LN2_HI is exact for
 * |n| < 2^15 and x - n * LN2_HI is exact (Sterbenz); LN2_LO = ln2 - LN2_HI. */
#define EXP_LOG2E 0x1.715476p+0f
#define EXP_LN2_HI 0x1.630000p-1f
#define EXP_LN2_LO -0x1.bd0106p-13f
/* Adding 1.5 * 2^23 rounds a float of magnitude < 2^22 to an integer, which
 * then sits in the low mantissa bits (round-to-nearest-even). */
#define ROUND_MAGIC 0x1.8p+23f
/* Clamping x to [-110, 89] keeps n in [-159, 129] so that 2^n splits into two
 * normal floats, and still gives exp = 0 below and +inf above. */
#define EXP_X_MIN -110.0f
#define EXP_X_MAX 89.0f

/* exp(r) = 1 + r + r^2 q(r), q of degree 4 (total degree 6) on
 * [-ln2/2, ln2/2]; relative error of the real-coefficient fit 3.1e-9. */
static const float EXP_Q[5] = {
    0x1.fffffcp-2f, 0x1.555492p-3f, 0x1.5558f2p-5f, 0x1.1239d4p-7f, 0x1.6a244ap-10f,
};

/* tanh(x) = x + x s p(s), s = x^2, p of degree 4 (odd degree 11), for
 * |x| < 0.625; relative error of the fit 4.4e-9. Above: 1 - 2 / (e^{2|x|} + 1). */
#define TANH_SMALL 0.625f
static const float TANH_P[5] = {
    -0x1.555532p-2f, 0x1.110726p-3f, -0x1.b83c5ap-5f, 0x1.52269ep-6f, -0x1.75e1dap-8f,
};

/* erf(x) = x + x p(s), s = x^2, p of degree 6 (odd degree 13), for |x| < 1;
 * relative error of the fit 1.2e-9. */
#define ERF_SMALL 1.0f
static const float ERF_P[7] = {
    0x1.06eba8p-3f, -0x1.81273ep-2f, 0x1.ce2cf8p-4f, -0x1.b7f912p-6f,
    0x1.5405cep-8f, -0x1.a3f7b6p-11f, 0x1.496bfp-14f,
};
/* For 1 <= a = |x| <= 4: erf(a) = 1 - exp(-h(a)), h(a) ~ -log(erfc(a)) of
 * degree 6, fitted with weight erfc(a)/erf(a) (the error h passes on to erf);
 * weighted error 1.1e-9. erfc(4) = 1.5e-8 is below half an ulp of 1, so for
 * a > 4 the clamped evaluation returns exactly 1. */
#define ERF_A_MAX 4.0f
static const float ERF_H[7] = {
    0x1.660c5cp-12f, 0x1.2088ecp+0f, 0x1.46baeap-1f, 0x1.a6535p-4f,
    -0x1.65cb92p-6f, 0x1.825b32p-9f, -0x1.86dde6p-13f,
};

#define N_COEF(c) (int)(sizeof(c) / sizeof((c)[0]))

/* ---- scalar twins ----------------------------------------------------------- */

static uint32_t f2u(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float u2f(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* c[0] + c[1] t + ... + c[n-1] t^(n-1), Horner's rule. */
static float horner(const float *c, int n, float t)
{
    float p = c[n - 1];
    for (int k = n - 2; k >= 0; k--)
        p = p * t + c[k];
    return p;
}

/* 2^n as the product of two normal floats 2^n1 * 2^n2, n1 = floor(n/2),
 * given m = n + 256 in [97, 385]. Unsigned arithmetic: a NaN input makes m
 * garbage, which must not be undefined behaviour (the result is NaN anyway). */
static float exp_scale(float p, uint32_t m)
{
    uint32_t h = m >> 1;                        /* n1 + 128 */
    float s1 = u2f((h - 1) << 23);              /* 2^n1: exponent field n1 + 127 */
    float s2 = u2f((m - h - 1) << 23);          /* 2^n2, n2 = n - n1 */
    return (p * s1) * s2;                       /* exact, then one rounding */
}

float bertc_expf(float x)
{
    x = x < EXP_X_MIN ? EXP_X_MIN : x;          /* NaN passes through */
    x = x > EXP_X_MAX ? EXP_X_MAX : x;
    float k = x * EXP_LOG2E + ROUND_MAGIC;
    float n = k - ROUND_MAGIC;
    float r = (x - n * EXP_LN2_HI) - n * EXP_LN2_LO;
    float q = horner(EXP_Q, N_COEF(EXP_Q), r);
    float p = 1.0f + (r + (r * r) * q);
    return exp_scale(p, f2u(k) - f2u(ROUND_MAGIC) + 256u);
}

/* |x| and copysign by bits, so that no libm call is needed. */
static float abs_bits(float x)
{
    return u2f(f2u(x) & 0x7fffffffu);
}

static float with_sign_of(float a, float x)
{
    return u2f(f2u(a) | (f2u(x) & 0x80000000u));
}

/* tanh is odd: both branches work on a = |x| >= 0 and the sign of x is put
 * back at the end (x + x s p(s) itself would turn -0 into +0). */
float bertc_tanhf(float x)
{
    float a = abs_bits(x);
    float t;
    if (a < TANH_SMALL) {
        float s = a * a;
        t = a + (a * s) * horner(TANH_P, N_COEF(TANH_P), s);
    } else {
        t = 1.0f - 2.0f / (bertc_expf(2.0f * a) + 1.0f); /* e = inf gives 1 */
    }
    return with_sign_of(t, x);
}

float bertc_erff(float x)
{
    float a = abs_bits(x);
    if (a < ERF_SMALL)
        return x + x * horner(ERF_P, N_COEF(ERF_P), x * x);
    a = a > ERF_A_MAX ? ERF_A_MAX : a;          /* NaN passes through */
    float e = 1.0f - bertc_expf(-horner(ERF_H, N_COEF(ERF_H), a));
    return with_sign_of(e, x);
}

static void expf_n_scalar(float *y, const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = bertc_expf(x[i]);
}

static void tanhf_n_scalar(float *y, const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = bertc_tanhf(x[i]);
}

static void erff_n_scalar(float *y, const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = bertc_erff(x[i]);
}

/* ---- AVX-512: 16 lanes, the same algorithm with FMA --------------------------- */
#if defined(__x86_64__) && defined(__GNUC__)

BERTC_TARGET_AVX512 static __m512 horner_avx512(const float *c, int n, __m512 t)
{
    __m512 p = _mm512_set1_ps(c[n - 1]);
    for (int k = n - 2; k >= 0; k--)
        p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(c[k]));
    return p;
}

/* MAXPS/MINPS return their second operand when either is NaN, so x goes
 * second and NaN passes through the clamp as in the scalar twin. */
BERTC_TARGET_AVX512 __m512 bertc_expf_avx512(__m512 x)
{
    const __m512 magic = _mm512_set1_ps(ROUND_MAGIC);
    x = _mm512_max_ps(_mm512_set1_ps(EXP_X_MIN), x);
    x = _mm512_min_ps(_mm512_set1_ps(EXP_X_MAX), x);
    /* n = round(x log2 e) with the scalar twin's two roundings (no FMA), so
     * both paths pick the same n. */
    __m512 k = _mm512_add_ps(_mm512_mul_ps(x, _mm512_set1_ps(EXP_LOG2E)), magic);
    __m512 n = _mm512_sub_ps(k, magic);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(EXP_LN2_HI), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(EXP_LN2_LO), r);
    __m512 q = horner_avx512(EXP_Q, N_COEF(EXP_Q), r);
    __m512 p = _mm512_add_ps(_mm512_set1_ps(1.0f),
                             _mm512_fmadd_ps(_mm512_mul_ps(r, r), q, r));
    /* 2^n = 2^n1 * 2^n2 as in exp_scale(): m = n + 256, h = n1 + 128. */
    __m512i m = _mm512_add_epi32(_mm512_sub_epi32(_mm512_castps_si512(k),
                                                  _mm512_castps_si512(magic)),
                                 _mm512_set1_epi32(256));
    __m512i h = _mm512_srli_epi32(m, 1);
    __m512i one = _mm512_set1_epi32(1);
    __m512 s1 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_sub_epi32(h, one), 23));
    __m512 s2 = _mm512_castsi512_ps(
        _mm512_slli_epi32(_mm512_sub_epi32(_mm512_sub_epi32(m, h), one), 23));
    return _mm512_mul_ps(_mm512_mul_ps(p, s1), s2);
}

BERTC_TARGET_AVX512 static __m512 abs_avx512(__m512 x)
{
    return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(x),
                                                _mm512_set1_epi32(0x7fffffff)));
}

BERTC_TARGET_AVX512 static __m512 with_sign_of_avx512(__m512 a, __m512 x)
{
    __m512i sign = _mm512_and_si512(_mm512_castps_si512(x),
                                    _mm512_set1_epi32((int)0x80000000u));
    return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(a), sign));
}

/* Both branches are computed for every lane on a = |x| and blended by
 * a < TANH_SMALL (false for NaN, which then comes out of the exp branch). */
BERTC_TARGET_AVX512 __m512 bertc_tanhf_avx512(__m512 x)
{
    __m512 a = abs_avx512(x);
    __m512 s = _mm512_mul_ps(a, a);
    __m512 small = _mm512_fmadd_ps(_mm512_mul_ps(a, s),
                                   horner_avx512(TANH_P, N_COEF(TANH_P), s), a);
    __m512 one = _mm512_set1_ps(1.0f);
    __m512 e = bertc_expf_avx512(_mm512_add_ps(a, a));
    __m512 big = _mm512_sub_ps(one, _mm512_div_ps(_mm512_set1_ps(2.0f),
                                                  _mm512_add_ps(e, one)));
    __mmask16 is_small = _mm512_cmp_ps_mask(a, _mm512_set1_ps(TANH_SMALL), _CMP_LT_OQ);
    return with_sign_of_avx512(_mm512_mask_blend_ps(is_small, big, small), x);
}

BERTC_TARGET_AVX512 __m512 bertc_erff_avx512(__m512 x)
{
    __m512 a = abs_avx512(x);
    __m512 small = _mm512_fmadd_ps(x, horner_avx512(ERF_P, N_COEF(ERF_P),
                                                    _mm512_mul_ps(x, x)), x);
    __m512 ac = _mm512_min_ps(_mm512_set1_ps(ERF_A_MAX), a);
    __m512 h = horner_avx512(ERF_H, N_COEF(ERF_H), ac);
    __m512 e = bertc_expf_avx512(_mm512_sub_ps(_mm512_setzero_ps(), h));
    __m512 big = _mm512_sub_ps(_mm512_set1_ps(1.0f), e);
    __mmask16 is_small = _mm512_cmp_ps_mask(a, _mm512_set1_ps(ERF_SMALL), _CMP_LT_OQ);
    return _mm512_mask_blend_ps(is_small, with_sign_of_avx512(big, x), small);
}

BERTC_TARGET_AVX512 static void expf_n_avx512(float *y, const float *x, int64_t n)
{
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, bertc_expf_avx512(_mm512_loadu_ps(x + i)));
    expf_n_scalar(y + i, x + i, n - i);
}

BERTC_TARGET_AVX512 static void tanhf_n_avx512(float *y, const float *x, int64_t n)
{
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, bertc_tanhf_avx512(_mm512_loadu_ps(x + i)));
    tanhf_n_scalar(y + i, x + i, n - i);
}

BERTC_TARGET_AVX512 static void erff_n_avx512(float *y, const float *x, int64_t n)
{
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, bertc_erff_avx512(_mm512_loadu_ps(x + i)));
    erff_n_scalar(y + i, x + i, n - i);
}

/* ---- AVX2+FMA: 8 lanes, the AVX-512 code on 256-bit registers ------------- */

BERTC_TARGET_AVX2 static __m256 horner_avx2(const float *c, int n, __m256 t)
{
    __m256 p = _mm256_set1_ps(c[n - 1]);
    for (int k = n - 2; k >= 0; k--)
        p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(c[k]));
    return p;
}

BERTC_TARGET_AVX2 __m256 bertc_expf_avx2(__m256 x)
{
    const __m256 magic = _mm256_set1_ps(ROUND_MAGIC);
    x = _mm256_max_ps(_mm256_set1_ps(EXP_X_MIN), x);
    x = _mm256_min_ps(_mm256_set1_ps(EXP_X_MAX), x);
        __m256 k = _mm256_add_ps(_mm256_mul_ps(x, _mm256_set1_ps(EXP_LOG2E)), magic);
    __m256 n = _mm256_sub_ps(k, magic);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(EXP_LN2_HI), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(EXP_LN2_LO), r);
    __m256 q = horner_avx2(EXP_Q, N_COEF(EXP_Q), r);
    __m256 p = _mm256_add_ps(_mm256_set1_ps(1.0f),
                             _mm256_fmadd_ps(_mm256_mul_ps(r, r), q, r));
    __m256i m = _mm256_add_epi32(_mm256_sub_epi32(_mm256_castps_si256(k),
                                                  _mm256_castps_si256(magic)),
                                 _mm256_set1_epi32(256));
    __m256i h = _mm256_srli_epi32(m, 1);
    __m256i one = _mm256_set1_epi32(1);
    __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_sub_epi32(h, one), 23));
    __m256 s2 = _mm256_castsi256_ps(
        _mm256_slli_epi32(_mm256_sub_epi32(_mm256_sub_epi32(m, h), one), 23));
    return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

BERTC_TARGET_AVX2 static __m256 abs_avx2(__m256 x)
{
    return _mm256_castsi256_ps(_mm256_and_si256(_mm256_castps_si256(x),
                                                _mm256_set1_epi32(0x7fffffff)));
}

BERTC_TARGET_AVX2 static __m256 with_sign_of_avx2(__m256 a, __m256 x)
{
    __m256i sign = _mm256_and_si256(_mm256_castps_si256(x),
                                    _mm256_set1_epi32((int)0x80000000u));
    return _mm256_castsi256_ps(_mm256_or_si256(_mm256_castps_si256(a), sign));
}

BERTC_TARGET_AVX2 __m256 bertc_tanhf_avx2(__m256 x)
{
    __m256 a = abs_avx2(x);
    __m256 s = _mm256_mul_ps(a, a);
    __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(a, s),
                                   horner_avx2(TANH_P, N_COEF(TANH_P), s), a);
    __m256 one = _mm256_set1_ps(1.0f);
    __m256 e = bertc_expf_avx2(_mm256_add_ps(a, a));
    __m256 big = _mm256_sub_ps(one, _mm256_div_ps(_mm256_set1_ps(2.0f),
                                                  _mm256_add_ps(e, one)));
    __m256 is_small = _mm256_cmp_ps(a, _mm256_set1_ps(TANH_SMALL), _CMP_LT_OQ);
    return with_sign_of_avx2(_mm256_blendv_ps(big, small, is_small), x);
}

BERTC_TARGET_AVX2 __m256 bertc_erff_avx2(__m256 x)
{
    __m256 a = abs_avx2(x);
    __m256 small = _mm256_fmadd_ps(x, horner_avx2(ERF_P, N_COEF(ERF_P),
                                                    _mm256_mul_ps(x, x)), x);
    __m256 ac = _mm256_min_ps(_mm256_set1_ps(ERF_A_MAX), a);
    __m256 h = horner_avx2(ERF_H, N_COEF(ERF_H), ac);
    __m256 e = bertc_expf_avx2(_mm256_sub_ps(_mm256_setzero_ps(), h));
    __m256 big = _mm256_sub_ps(_mm256_set1_ps(1.0f), e);
    __m256 is_small = _mm256_cmp_ps(a, _mm256_set1_ps(ERF_SMALL), _CMP_LT_OQ);
    return _mm256_blendv_ps(with_sign_of_avx2(big, x), small, is_small);
}

BERTC_TARGET_AVX2 static void expf_n_avx2(float *y, const float *x, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, bertc_expf_avx2(_mm256_loadu_ps(x + i)));
    expf_n_scalar(y + i, x + i, n - i);
}

BERTC_TARGET_AVX2 static void tanhf_n_avx2(float *y, const float *x, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, bertc_tanhf_avx2(_mm256_loadu_ps(x + i)));
    tanhf_n_scalar(y + i, x + i, n - i);
}

BERTC_TARGET_AVX2 static void erff_n_avx2(float *y, const float *x, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, bertc_erff_avx2(_mm256_loadu_ps(x + i)));
    erff_n_scalar(y + i, x + i, n - i);
}
#endif /* x86-64 */

/* ---- NEON (AArch64): 4 lanes, the same algorithm with FMA --------------------- */
#if defined(__aarch64__) && defined(__ARM_NEON)

static float32x4_t horner_neon(const float *c, int n, float32x4_t t)
{
    float32x4_t p = vdupq_n_f32(c[n - 1]);
    for (int k = n - 2; k >= 0; k--)
        p = vfmaq_f32(vdupq_n_f32(c[k]), p, t);
    return p;
}

/* FMAX/FMIN return NaN when either operand is NaN, as the scalar clamp does. */
float32x4_t bertc_expf_neon(float32x4_t x)
{
    const float32x4_t magic = vdupq_n_f32(ROUND_MAGIC);
    x = vmaxq_f32(x, vdupq_n_f32(EXP_X_MIN));
    x = vminq_f32(x, vdupq_n_f32(EXP_X_MAX));
    float32x4_t k = vaddq_f32(vmulq_f32(x, vdupq_n_f32(EXP_LOG2E)), magic);
    float32x4_t n = vsubq_f32(k, magic);
    float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(EXP_LN2_HI));
    r = vfmsq_f32(r, n, vdupq_n_f32(EXP_LN2_LO));
    float32x4_t q = horner_neon(EXP_Q, N_COEF(EXP_Q), r);
    float32x4_t p = vaddq_f32(vdupq_n_f32(1.0f), vfmaq_f32(r, vmulq_f32(r, r), q));
    uint32x4_t m = vaddq_u32(vsubq_u32(vreinterpretq_u32_f32(k),
                                       vreinterpretq_u32_f32(magic)),
                             vdupq_n_u32(256));
    uint32x4_t h = vshrq_n_u32(m, 1);
    uint32x4_t one = vdupq_n_u32(1);
    float32x4_t s1 = vreinterpretq_f32_u32(vshlq_n_u32(vsubq_u32(h, one), 23));
    float32x4_t s2 = vreinterpretq_f32_u32(vshlq_n_u32(vsubq_u32(vsubq_u32(m, h), one), 23));
    return vmulq_f32(vmulq_f32(p, s1), s2);
}

static float32x4_t with_sign_of_neon(float32x4_t a, float32x4_t x)
{
    uint32x4_t sign = vandq_u32(vreinterpretq_u32_f32(x), vdupq_n_u32(0x80000000u));
    return vreinterpretq_f32_u32(vorrq_u32(vreinterpretq_u32_f32(a), sign));
}

float32x4_t bertc_tanhf_neon(float32x4_t x)
{
    float32x4_t a = vabsq_f32(x);
    float32x4_t s = vmulq_f32(a, a);
    float32x4_t small = vfmaq_f32(a, vmulq_f32(a, s), horner_neon(TANH_P, N_COEF(TANH_P), s));
    float32x4_t one = vdupq_n_f32(1.0f);
    float32x4_t e = bertc_expf_neon(vaddq_f32(a, a));
    float32x4_t big = vsubq_f32(one, vdivq_f32(vdupq_n_f32(2.0f), vaddq_f32(e, one)));
    uint32x4_t is_small = vcltq_f32(a, vdupq_n_f32(TANH_SMALL));
    return with_sign_of_neon(vbslq_f32(is_small, small, big), x);
}

float32x4_t bertc_erff_neon(float32x4_t x)
{
    float32x4_t a = vabsq_f32(x);
    float32x4_t small = vfmaq_f32(x, x, horner_neon(ERF_P, N_COEF(ERF_P), vmulq_f32(x, x)));
    float32x4_t ac = vminq_f32(a, vdupq_n_f32(ERF_A_MAX));
    float32x4_t h = horner_neon(ERF_H, N_COEF(ERF_H), ac);
    float32x4_t big = vsubq_f32(vdupq_n_f32(1.0f), bertc_expf_neon(vnegq_f32(h)));
    uint32x4_t is_small = vcltq_f32(a, vdupq_n_f32(ERF_SMALL));
    return vbslq_f32(is_small, small, with_sign_of_neon(big, x));
}

static void expf_n_neon(float *y, const float *x, int64_t n)
{
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        vst1q_f32(y + i, bertc_expf_neon(vld1q_f32(x + i)));
    expf_n_scalar(y + i, x + i, n - i);
}

static void tanhf_n_neon(float *y, const float *x, int64_t n)
{
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        vst1q_f32(y + i, bertc_tanhf_neon(vld1q_f32(x + i)));
    tanhf_n_scalar(y + i, x + i, n - i);
}

static void erff_n_neon(float *y, const float *x, int64_t n)
{
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        vst1q_f32(y + i, bertc_erff_neon(vld1q_f32(x + i)));
    erff_n_scalar(y + i, x + i, n - i);
}
#endif /* AArch64 */

/* ---- array loops on the active path ------------------------------------------- */

/* One table row per path; a NULL entry falls back to the scalar twin. */
typedef void (*ArrayFn)(float *y, const float *x, int64_t n);
typedef struct VmathPath {
    ArrayFn expf_n, tanhf_n, erff_n;
} VmathPath;

static VmathPath vmath_path(CpuIsa isa)
{
    VmathPath p = {expf_n_scalar, tanhf_n_scalar, erff_n_scalar};
    (void)isa; /* only the scalar path on other targets (mips, Cortex-M) */
#if defined(__x86_64__) && defined(__GNUC__)
    if (isa == ISA_AVX512)
        p = (VmathPath){expf_n_avx512, tanhf_n_avx512, erff_n_avx512};
    if (isa == ISA_AVX2)
        p = (VmathPath){expf_n_avx2, tanhf_n_avx2, erff_n_avx2};
#endif
#if defined(__aarch64__) && defined(__ARM_NEON)
    if (isa == ISA_NEON)
        p = (VmathPath){expf_n_neon, tanhf_n_neon, erff_n_neon};
#endif
    return p;
}

void bertc_expf_n(float *y, const float *x, int64_t n)
{
    vmath_path(bertc_cpu_isa()).expf_n(y, x, n);
}

void bertc_tanhf_n(float *y, const float *x, int64_t n)
{
    vmath_path(bertc_cpu_isa()).tanhf_n(y, x, n);
}

void bertc_erff_n(float *y, const float *x, int64_t n)
{
    vmath_path(bertc_cpu_isa()).erff_n(y, x, n);
}
