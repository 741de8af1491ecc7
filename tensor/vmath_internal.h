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

/* The standard normal CDF Phi (GELU's, y = x Phi(x)) from its upper tail
 * Q(a) = Phi(-a) = erfc(a / sqrt 2) / 2, a = |x| in [0, 8): 16 polynomials
 * of degree 6, one per interval [j/2, (j + 1)/2), in t = 2a - (j + 0.5):
 * Q(a) = sum_k NORMAL_TAIL[k][j] t^k. A row of the table is one coefficient
 * of all 16 intervals, so a vector path looks up a lane's coefficient in
 * one register (vec_lookup16). Fitted for relative error by
 * tools/fit_normal_cdf.py, which prints this table and its errors. Q = 0 from
 * a = 8 (Q(8) = 6e-16). */
#define NORMAL_DEGREE 6
#define NORMAL_K 2.0f            /* intervals per unit of a */
#define NORMAL_J_MAX 15.5f       /* 2a clamped below 16 before its floor is taken */
#define NORMAL_A_MAX 8.0f
#define NORMAL_A_BELOW_MAX 0x1.fffffep+2f   /* the float below 8 */
static const float NORMAL_TAIL[NORMAL_DEGREE + 1][16] = {
    {
        0x1.9aecbap-2f, 0x1.d022p-3f, 0x1.b0bdd2p-4f, 0x1.482a24p-5f,
        0x1.90924ep-7f, 0x1.869042p-9f, 0x1.2e86fep-11f, 0x1.72d95cp-14f,
        0x1.66a5dcp-17f, 0x1.1105b6p-20f, 0x1.46a244p-24f, 0x1.32a51ap-28f,
        0x1.c35132p-33f, 0x1.041cd8p-37f, 0x1.d54e9cp-43f, 0x1.4b2698p-48f,
    },
    {
        -0x1.8bf2b8p-3f, -0x1.345d6p-3f, -0x1.7610bcp-4f, -0x1.616454p-5f,
        -0x1.0402dcp-6f, -0x1.29fa4cp-8f, -0x1.09f38cp-10f, -0x1.71b954p-13f,
        -0x1.904b98p-16f, -0x1.518784p-19f, -0x1.bb4db8p-23f, -0x1.c5709p-27f,
        -0x1.693702p-31f, -0x1.c031fep-36f, -0x1.b11a26p-41f, -0x1.45eecp-46f,
    },
    {
        0x1.8bf2cep-7f, 0x1.ce8bfep-6f, 0x1.d394dp-6f, 0x1.3537c6p-6f,
        0x1.248356p-7f, 0x1.99b878p-9f, 0x1.b02bcep-11f, 0x1.5a9c96p-13f,
        0x1.a94b02p-16f, 0x1.90c44cp-19f, 0x1.22d7ccp-22f, 0x1.45c0dcp-26f,
        0x1.19f7a2p-30f, 0x1.79aaa2p-35f, 0x1.87b63ep-40f, 0x1.3ad352p-45f,
    },
    {
        0x1.eee8c6p-8f, 0x1.67c6fp-9f, -0x1.188146p-9f, -0x1.e5e754p-9f,
        -0x1.601caep-9f, -0x1.45ee84p-10f, -0x1.a7ddc2p-12f, -0x1.926a2cp-14f,
        -0x1.1c7c32p-16f, -0x1.2f079ap-19f, -0x1.ea05f8p-23f, -0x1.2e4c52p-26f,
        -0x1.1da312p-30f, -0x1.9e88b8p-35f, -0x1.cefe3ap-40f, -0x1.8ea7cap-45f,
    },
    {
        -0x1.83bc74p-11f, -0x1.77c48ap-10f, -0x1.bffacp-11f, 0x1.9c4d12p-16f,
        0x1.921028p-12f, 0x1.377994p-12f, 0x1.105c68p-13f, 0x1.3fb6f6p-15f,
        0x1.0b517ap-17f, 0x1.47a0dap-20f, 0x1.2b2654p-23f, 0x1.9b3ce4p-27f,
        0x1.ac987cp-31f, 0x1.546284p-35f, 0x1.9d91d2p-40f, 0x1.81815ap-45f,
    },
    {
        -0x1.123d4cp-12f, 0x1.cf6f3ap-19f, 0x1.82a2f6p-13f, 0x1.1933e6p-13f,
        0x1.00a884p-16f, -0x1.2157ecp-15f, -0x1.c4ff6cp-16f, -0x1.69c5dap-17f,
        -0x1.779738p-19f, -0x1.10fa06p-21f, -0x1.1f77bcp-24f, -0x1.bf2454p-28f,
        -0x1.03ef2ep-31f, -0x1.c7799ap-36f, -0x1.2e763p-40f, -0x1.31c5e6p-45f,
    },
    {
        0x1.f8bc5cp-16f, 0x1.873e08p-15f, 0x1.1bf94ap-17f, -0x1.53f462p-16f,
        -0x1.fa5e4ap-17f, -0x1.c9e2e6p-20f, 0x1.8db2d4p-19f, 0x1.0df7b8p-19f,
        0x1.6cd51ep-21f, 0x1.3c1a12p-23f, 0x1.7b8fcap-26f, 0x1.4775ap-29f,
        0x1.9e5e66p-33f, 0x1.859296p-37f, 0x1.128cd2p-41f, 0x1.23f138p-46f,
    },
};

#define N_COEF(c) (int)(sizeof(c) / sizeof((c)[0]))

#endif /* BERTC_VMATH_INTERNAL_H */
