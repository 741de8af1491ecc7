/* tensor/vmath_internal.h — the constants of bertc's expf, tanhf and erff,
 * shared by the scalar twins (tensor/vmath.c) and the vector versions written
 * once over each ISA's primitives (tensor/simd_vmath.inc). Read tensor/vmath.c
 * first: its head explains the algorithm and lists the measured errors. */
#ifndef BERTC_VMATH_INTERNAL_H
#define BERTC_VMATH_INTERNAL_H

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

#endif /* BERTC_VMATH_INTERNAL_H */
