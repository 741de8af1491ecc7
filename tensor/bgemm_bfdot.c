/* tensor/bgemm_bfdot.c — the arithmetic of Arm's BFDOT in portable C: one
 * float32 lane of the instruction, bertc_bgemm_bfdot2, the definition the
 * neonbf16 path (tensor/bgemm_neon.c) computes and its oracle
 * (bertc_bgemm_reference_for) follows. It compiles on every target, so the
 * oracle runs and is tested everywhere, not only on an Armv8.6 CPU.
 *
 * The Arm ARM's pseudo-code, FEAT_BF16 without FEAT_EBF16 (or FPCR.EBF 0,
 * Linux's default), shared by BFDOT and BFMMLA:
 *
 *   BFDotAdd(addend, a_0, a_1, w_0, w_1)
 *       prod   = BFAdd(BFMul(a_0, w_0), BFMul(a_1, w_1))
 *       result = BFAdd(addend, prod)
 *
 * BFMul and BFAdd are float32 operations "following BFloat16 computation
 * behaviors": FPCR ignored, as if FZ = 1 (denormal inputs read as zero of
 * their sign) and DN = 1 (any NaN in, or Inf * 0, Inf - Inf: the default
 * NaN 0x7FC00000); each result goes through BFRound:
 *
 *   BFRound(v):  |v| < 2^-126           -> zero of v's sign (before rounding)
 *                truncate v to 24 bits; inexact: set the last bit (round to odd)
 *                exponent past 127      -> Inf of v's sign
 *
 * So the two products are rounded (bf16 x bf16 is exact in float32 unless
 * it overflows or falls below 2^-126), their sum is rounded, then the sum
 * with acc: three roundings, none to nearest. An exact zero sum of two
 * non-zeros is +0 (the rounding is not toward -Inf); +0 + -0 is +0. QEMU's
 * target/arm bfdotadd (float32_mul, float32_mul, float32_add, float32_add
 * with float_round_to_odd_inf, flush_inputs_to_zero, flush_to_zero and
 * default_nan_mode) is the same definition, and test/portable/t_bgemm.c
 * checks this code against the instruction under qemu-aarch64 -cpu max. */
#include "tensor/bgemm_internal.h"

#include <math.h>
#include <string.h>

static uint64_t f64_bits(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static double bits_f64(uint64_t u)
{
    double x;
    memcpy(&x, &u, sizeof x);
    return x;
}

static float default_nan(void)
{
    uint32_t u = 0x7FC00000u;
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* FZ on an input: a denormal reads as zero of its sign. */
static float daz(float x)
{
    return fabsf(x) < 0x1p-126f ? copysignf(0.0f, x) : x;
}

/* BFRound of v, given as a double that holds it exactly (or, for a sum,
 * rounded to odd at 53 bits, which rounds to odd at 24 bits the same: see
 * bf_add). Zero, Inf and NaN pass (NaN as the default NaN). */
static float bf_round(double v)
{
    if (isnan(v))
        return default_nan();
    if (v == 0.0 || isinf(v))
        return (float)v;
    if (fabs(v) < 0x1p-126)          /* the "fixed flush-to-zero" of BFRound */
        return copysignf(0.0f, (float)v);
    if (fabs(v) >= 0x1p128)          /* overflow: Inf, not the largest float */
        return copysignf(INFINITY, (float)v);
    /* normal float32 range: the double's top 23 fraction bits, the 29 below
     * them the part truncated; inexact sets the last kept bit */
    uint64_t u = f64_bits(v), frac = u & 0xFFFFFFFFFFFFFull;
    uint32_t exp = (uint32_t)((u >> 52) & 0x7FF) - 1023u + 127u;
    uint32_t r = (uint32_t)(u >> 63) << 31 | exp << 23 | (uint32_t)(frac >> 29);
    r |= (frac & 0x1FFFFFFFull) != 0;
    float f;
    memcpy(&f, &r, sizeof f);
    return f;
}

/* BFMul of two bf16: the product of their float32 values (inputs flushed)
 * is exact in double; BFRound does the rest. */
static float bf_mul(uint16_t a, uint16_t w)
{
    return bf_round((double)daz(bertc_bf16_to_f32(a)) * (double)daz(bertc_bf16_to_f32(w)));
}

/* BFAdd of two float32. x + y in double may round, so first the exact sum
 * s + e (Knuth's TwoSum: no overflow is possible in double) is rounded to
 * odd at 53 bits: truncated toward zero (one step down in magnitude when e
 * points at zero), then the last bit set. A value and its round-to-odd at
 * 53 bits lie between the same two float32 neighbours and are float32 (or
 * not) together, so BFRound of it is BFRound of the exact sum. */
static float bf_add(float x, float y)
{
    double a = daz(x), b = daz(y), s = a + b;
    if (!isfinite(s) || s == 0.0)    /* NaN, Inf, or an exact zero: x + y's IEEE sign */
        return bf_round(s);
    double bb = s - a, e = (a - (s - bb)) + (b - bb);
    if (e == 0.0)
        return bf_round(s);
    uint64_t u = f64_bits(s);
    if ((s > 0.0) != (e > 0.0))      /* s was rounded away from zero */
        u -= 1;
    return bf_round(bits_f64(u | 1u));
}

float bertc_bgemm_bfdot2(float acc, uint16_t a0, uint16_t a1, uint16_t w0, uint16_t w1)
{
    return bf_add(acc, bf_add(bf_mul(a0, w0), bf_mul(a1, w1)));
}
