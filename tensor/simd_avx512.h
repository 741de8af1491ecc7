/* tensor/simd_avx512.h — the vector primitives of the AVX-512 path: a Vec is
 * 16 floats (__m512). Private to tensor/kernels_avx512.c, which includes this
 * file and then the bodies written once over these primitives
 * (tensor/simd_vmath.inc, tensor/row_kernels_simd.inc).
 *
 * Every primitive is one or a few intrinsics, and the bodies' results depend
 * on exactly which: fma is fused (one rounding), hsum and hmax are GCC's and
 * clang's _mm512_reduce_add_ps/_mm512_reduce_max_ps (a pairwise tree: 256-bit
 * halves, 128-bit halves, 64-bit halves, then the last two lanes), max and
 * min return their second operand when either is NaN (VMAXPS/VMINPS). Change
 * one and the AVX-512 path's bits change. Every function carries the target
 * attribute, so the file compiles in the portable default build and runs only
 * when bertc_cpu_isa() says AVX-512. */
#ifndef BERTC_SIMD_AVX512_H
#define BERTC_SIMD_AVX512_H

#include "tensor/kernels_internal.h"

#include <immintrin.h>

/* The pieces the bodies name: the target of every function they define, the
 * table they fill, and the width. */
#define SIMD_TARGET __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,fma")))
#define SIMD_ROW_KERNELS bertc_row_kernels_avx512
enum { SIMD_W = 16 };

typedef __m512 Vec;        /* SIMD_W floats */
typedef __mmask16 VecMask; /* bit l: lane l selected */
typedef __m512i VecI;      /* SIMD_W 32-bit integers */
typedef __m512d VecD;      /* SIMD_W / 2 doubles */

SIMD_TARGET static inline Vec vec_load(const float *p) { return _mm512_loadu_ps(p); }
SIMD_TARGET static inline void vec_store(float *p, Vec v) { _mm512_storeu_ps(p, v); }
SIMD_TARGET static inline Vec vec_splat(float v) { return _mm512_set1_ps(v); }
SIMD_TARGET static inline Vec vec_zero(void) { return _mm512_setzero_ps(); }

SIMD_TARGET static inline Vec vec_add(Vec a, Vec b) { return _mm512_add_ps(a, b); }
SIMD_TARGET static inline Vec vec_sub(Vec a, Vec b) { return _mm512_sub_ps(a, b); }
SIMD_TARGET static inline Vec vec_mul(Vec a, Vec b) { return _mm512_mul_ps(a, b); }
SIMD_TARGET static inline Vec vec_div(Vec a, Vec b) { return _mm512_div_ps(a, b); }
SIMD_TARGET static inline Vec vec_sqrt(Vec a) { return _mm512_sqrt_ps(a); }
SIMD_TARGET static inline Vec vec_max(Vec a, Vec b) { return _mm512_max_ps(a, b); }
SIMD_TARGET static inline Vec vec_min(Vec a, Vec b) { return _mm512_min_ps(a, b); }
SIMD_TARGET static inline Vec vec_neg(Vec a) { return _mm512_sub_ps(_mm512_setzero_ps(), a); }

/* a * b + c and c - a * b, each with one rounding. */
SIMD_TARGET static inline Vec vec_fma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
SIMD_TARGET static inline Vec vec_fnma(Vec a, Vec b, Vec c) { return _mm512_fnmadd_ps(a, b, c); }

SIMD_TARGET static inline float vec_hsum(Vec v) { return _mm512_reduce_add_ps(v); }
SIMD_TARGET static inline float vec_hmax(Vec v) { return _mm512_reduce_max_ps(v); }

/* Lane masks: a < b (false for NaN), keep[0..16) != 0, and the blend. */
SIMD_TARGET static inline VecMask vec_less(Vec a, Vec b)
{
    return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ);
}

SIMD_TARGET static inline VecMask vec_keep_mask(const uint8_t *keep)
{
    __m128i k = _mm_loadu_si128((const __m128i *)keep);
    return _mm_test_epi8_mask(k, k);
}

/* mask ? a : b in each lane. */
SIMD_TARGET static inline Vec vec_select(VecMask mask, Vec a, Vec b)
{
    return _mm512_mask_blend_ps(mask, b, a);
}

/* The float's bits: |v| and a with the sign of x. */
SIMD_TARGET static inline Vec vec_abs(Vec v)
{
    return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(v),
                                                _mm512_set1_epi32(0x7fffffff)));
}

SIMD_TARGET static inline Vec vec_with_sign_of(Vec a, Vec x)
{
    __m512i sign = _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32((int)0x80000000u));
    return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(a), sign));
}

/* 32-bit integer lanes, for the exponent arithmetic of exp. */
SIMD_TARGET static inline VecI vec_bits(Vec v) { return _mm512_castps_si512(v); }
SIMD_TARGET static inline VecI veci_splat(uint32_t v) { return _mm512_set1_epi32((int)v); }
SIMD_TARGET static inline VecI veci_add(VecI a, VecI b) { return _mm512_add_epi32(a, b); }
SIMD_TARGET static inline VecI veci_sub(VecI a, VecI b) { return _mm512_sub_epi32(a, b); }
SIMD_TARGET static inline VecI veci_half(VecI a) { return _mm512_srli_epi32(a, 1); }
/* The float whose exponent field is e (and mantissa 0): 2^(e - 127). */
/* Float to int32 rounding toward zero, int32 to float, and table[j] in each
 * lane for j in [0, 16) (the whole table in one register). */
SIMD_TARGET static inline VecI vec_trunc_int(Vec v) { return _mm512_cvttps_epi32(v); }
SIMD_TARGET static inline Vec vec_from_int(VecI j) { return _mm512_cvtepi32_ps(j); }
SIMD_TARGET static inline Vec vec_lookup16(const float *table, VecI j)
{
    return _mm512_permutexvar_ps(j, _mm512_loadu_ps(table));
}

SIMD_TARGET static inline Vec vec_from_exponent(VecI e)
{
    return _mm512_castsi512_ps(_mm512_slli_epi32(e, 23));
}

/* Double lanes, for sums kept in double: the low and the high 8 floats of v
 * widened, the sum of two, and the sum of the 8 lanes (_mm512_reduce_add_pd). */
SIMD_TARGET static inline VecD vecd_zero(void) { return _mm512_setzero_pd(); }
SIMD_TARGET static inline VecD vecd_widen_lo(Vec v)
{
    return _mm512_cvtps_pd(_mm512_castps512_ps256(v));
}

SIMD_TARGET static inline VecD vecd_widen_hi(Vec v)
{
    return _mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1));
}

SIMD_TARGET static inline VecD vecd_add(VecD a, VecD b) { return _mm512_add_pd(a, b); }
SIMD_TARGET static inline double vecd_hsum(VecD v) { return _mm512_reduce_add_pd(v); }

#endif /* BERTC_SIMD_AVX512_H */
