/* tensor/vmath.c — bertc's own expf, tanhf, erff and the normal CDF Phi
 * (GELU's), the portable scalar twins. The vector versions (AVX-512 16 lanes, AVX2+FMA 8 lanes, NEON 4
 * lanes) are the same algorithm written once over each ISA's primitives in
 * tensor/simd_vmath.inc; the array loops bertc_expf_n etc. run the active
 * path's (tensor/kernels_dispatch.c). The constants: tensor/vmath_internal.h.
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
 * 1.058437). The NEON path runs the same body on 4 lanes; make cross-test
 * checks its bound under qemu (test/portable/t_vmath.c), but it was not
 * measured exhaustively.
 *
 * Outside these ranges the results are exact: expf is 0 or +inf, tanhf and
 * erff are +-1 (the true values round there in float).
 *
 * bertc_normal_cdf has no exp and no branch: 16 polynomials of degree 6 in
 * a table, one per half unit of |x| (vmath_internal.h NORMAL_TAIL), whose
 * coefficients a vector path looks up per lane in registers. GELU is x Phi(x):
 * one table lookup and 6 FMAs per coefficient set instead of erf's two
 * polynomials, exp and a blend (AVX-512: 0.45 -> 0.17 ns per element, one
 * core; AVX2 0.89 -> 0.50; build/bench/kernels). Relative error (test/
 * test_vmath.c asserts each range): 1.1e-7 for x >= 0, 1.2e-7 on [-3, 0),
 * 5.3e-7 on [-4, -3), 4.7e-6 on [-5, -4), 2.2e-4 on [-8, -5) where Phi < 3e-7;
 * 0 below -8 (Phi(-8) = 6e-16). float's 1 + erf(x / sqrt 2), PyTorch's, loses
 * more in that tail: 1 + erf(-3 / sqrt 2) = 2.7e-3 carries erf's rounding at
 * 0.997, up to 3e-8, which is 1.1e-5 of it.
 */
#include "tensor/tensor.h"
#include "tensor/vmath_internal.h"

#include <string.h>

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

float bertc_normal_cdf(float x)
{
    if (x != x)
        return x;                             /* NaN */
    float a = abs_bits(x), q = 0.0f;
    if (a < NORMAL_A_MAX) {
        float s = a * NORMAL_K;               /* exact */
        int j = (int)s;
        float t = s - ((float)j + 0.5f);      /* exact for a >= 1/8, one rounding below */
        q = NORMAL_TAIL[NORMAL_DEGREE][j];
        for (int k = NORMAL_DEGREE - 1; k >= 0; k--)
            q = q * t + NORMAL_TAIL[k][j];
    }
    return x < 0.0f ? q : 1.0f - q;           /* Phi(x) = Q(|x|), or 1 - Q(|x|) for x >= 0 */
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
