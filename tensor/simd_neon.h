/* tensor/simd_neon.h — the vector primitives of the AArch64 NEON path: a Vec
 * is 4 floats (float32x4_t). Private to tensor/kernels_neon.c, which includes
 * this file and then the bodies written once over these primitives
 * (tensor/simd_vmath.inc, tensor/row_kernels_simd.inc).
 *
 * Every primitive is one or a few intrinsics, and the bodies' results depend
 * on exactly which: fma is fused (one rounding; vfmaq_f32 takes the addend
 * first), hsum and hmax are the across-vector FADDP/FMAXV reductions, max
 * and min return NaN when either operand is NaN (FMAX/FMIN). Change one and
 * the NEON path's bits change. NEON is part of every AArch64 CPU, so no
 * target attribute is needed. */
#ifndef BERTC_SIMD_NEON_H
#define BERTC_SIMD_NEON_H

#include "tensor/kernels_internal.h"

#include <arm_neon.h>

/* The pieces the bodies name: the target of every function they define
 * (none needed), the table they fill, and the width. */
#define SIMD_TARGET
#define SIMD_ROW_KERNELS bertc_row_kernels_neon
enum { SIMD_W = 4 };

typedef float32x4_t Vec;     /* SIMD_W floats */
typedef uint32x4_t VecMask;  /* all ones in a selected lane */
typedef uint32x4_t VecI;     /* SIMD_W 32-bit integers */
typedef float64x2_t VecD;    /* SIMD_W / 2 doubles */

static inline Vec vec_load(const float *p) { return vld1q_f32(p); }
static inline void vec_store(float *p, Vec v) { vst1q_f32(p, v); }
static inline Vec vec_splat(float v) { return vdupq_n_f32(v); }
static inline Vec vec_zero(void) { return vdupq_n_f32(0.0f); }

static inline Vec vec_add(Vec a, Vec b) { return vaddq_f32(a, b); }
static inline Vec vec_sub(Vec a, Vec b) { return vsubq_f32(a, b); }
static inline Vec vec_mul(Vec a, Vec b) { return vmulq_f32(a, b); }
static inline Vec vec_div(Vec a, Vec b) { return vdivq_f32(a, b); }
static inline Vec vec_sqrt(Vec a) { return vsqrtq_f32(a); }
static inline Vec vec_max(Vec a, Vec b) { return vmaxq_f32(a, b); }
static inline Vec vec_min(Vec a, Vec b) { return vminq_f32(a, b); }
static inline Vec vec_neg(Vec a) { return vnegq_f32(a); }

/* a * b + c and c - a * b, each with one rounding. */
static inline Vec vec_fma(Vec a, Vec b, Vec c) { return vfmaq_f32(c, a, b); }
static inline Vec vec_fnma(Vec a, Vec b, Vec c) { return vfmsq_f32(c, a, b); }

static inline float vec_hsum(Vec v) { return vaddvq_f32(v); }
static inline float vec_hmax(Vec v) { return vmaxvq_f32(v); }

/* Lane masks: a < b (false for NaN), keep[0..4) != 0, and the blend. */
static inline VecMask vec_less(Vec a, Vec b) { return vcltq_f32(a, b); }
static inline VecMask vec_keep_mask(const uint8_t *keep)
{
    uint32_t k[4] = {keep[0], keep[1], keep[2], keep[3]};
    return vtstq_u32(vld1q_u32(k), vld1q_u32(k)); /* all ones where k != 0 */
}
/* mask ? a : b in each lane. */
static inline Vec vec_select(VecMask mask, Vec a, Vec b) { return vbslq_f32(mask, a, b); }

/* |v| and a with the sign of x. */
static inline Vec vec_abs(Vec v) { return vabsq_f32(v); }
static inline Vec vec_with_sign_of(Vec a, Vec x)
{
    uint32x4_t sign = vandq_u32(vreinterpretq_u32_f32(x), vdupq_n_u32(0x80000000u));
    return vreinterpretq_f32_u32(vorrq_u32(vreinterpretq_u32_f32(a), sign));
}

/* 32-bit integer lanes, for the exponent arithmetic of exp. */
static inline VecI vec_bits(Vec v) { return vreinterpretq_u32_f32(v); }
static inline VecI veci_splat(uint32_t v) { return vdupq_n_u32(v); }
static inline VecI veci_add(VecI a, VecI b) { return vaddq_u32(a, b); }
static inline VecI veci_sub(VecI a, VecI b) { return vsubq_u32(a, b); }
static inline VecI veci_half(VecI a) { return vshrq_n_u32(a, 1); }
/* The float whose exponent field is e (and mantissa 0): 2^(e - 127). */
/* Float to int32 rounding toward zero (NaN: 0), int32 to float, and
 * table[j] in each lane for j in [0, 16): a byte lookup in the table's 64
 * bytes, lane l reading bytes 4 j + 0..3. */
static inline VecI vec_trunc_int(Vec v) { return vreinterpretq_u32_s32(vcvtq_s32_f32(v)); }
static inline Vec vec_from_int(VecI j) { return vcvtq_f32_s32(vreinterpretq_s32_u32(j)); }
static inline Vec vec_lookup16(const float *table, VecI j)
{
    uint8x16x4_t t = vld1q_u8_x4((const uint8_t *)table);
    uint32x4_t bytes = vaddq_u32(vmulq_n_u32(j, 0x04040404u), vdupq_n_u32(0x03020100u));
    return vreinterpretq_f32_u8(vqtbl4q_u8(t, vreinterpretq_u8_u32(bytes)));
}

static inline Vec vec_from_exponent(VecI e) { return vreinterpretq_f32_u32(vshlq_n_u32(e, 23)); }

/* Double lanes, for sums kept in double: the low and the high 2 floats of v
 * widened, the sum of two, and the sum of the 2 lanes. */
static inline VecD vecd_zero(void) { return vdupq_n_f64(0.0); }
static inline VecD vecd_widen_lo(Vec v) { return vcvt_f64_f32(vget_low_f32(v)); }
static inline VecD vecd_widen_hi(Vec v) { return vcvt_high_f64_f32(v); }
static inline VecD vecd_add(VecD a, VecD b) { return vaddq_f64(a, b); }
static inline double vecd_hsum(VecD v) { return vaddvq_f64(v); }

#endif /* BERTC_SIMD_NEON_H */
