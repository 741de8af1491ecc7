/* tensor/simd_avx2.h — the vector primitives of the AVX2+FMA path: a Vec is
 * 8 floats (__m256). Private to tensor/kernels_avx2.c, which includes this
 * file and then the bodies written once over these primitives
 * (tensor/simd_vmath.inc, tensor/row_kernels_simd.inc).
 *
 * Every primitive is one or a few intrinsics, and the bodies' results depend
 * on exactly which: fma is fused (one rounding), hsum and hmax reduce the 8
 * lanes as the pairwise tree written below, max and min return their second
 * operand when either is NaN (MAXPS/MINPS). Change one and the AVX2 path's
 * bits change. Every function carries the target attribute, so the file
 * compiles in the portable default build and runs only when bertc_cpu_isa()
 * says AVX2. */
#ifndef BERTC_SIMD_AVX2_H
#define BERTC_SIMD_AVX2_H

#include "tensor/kernels_internal.h"

#include <immintrin.h>

/* The pieces the bodies name: the target of every function they define, the
 * table they fill, and the width. */
#define SIMD_TARGET __attribute__((target("avx2,fma")))
#define SIMD_ROW_KERNELS bertc_row_kernels_avx2
enum { SIMD_W = 8 };

typedef __m256 Vec;      /* SIMD_W floats */
typedef __m256 VecMask;  /* all ones in a selected lane */
typedef __m256i VecI;    /* SIMD_W 32-bit integers */
typedef __m256d VecD;    /* SIMD_W / 2 doubles */

SIMD_TARGET static inline Vec vec_load(const float *p) { return _mm256_loadu_ps(p); }
SIMD_TARGET static inline void vec_store(float *p, Vec v) { _mm256_storeu_ps(p, v); }
SIMD_TARGET static inline Vec vec_splat(float v) { return _mm256_set1_ps(v); }
SIMD_TARGET static inline Vec vec_zero(void) { return _mm256_setzero_ps(); }

SIMD_TARGET static inline Vec vec_add(Vec a, Vec b) { return _mm256_add_ps(a, b); }
SIMD_TARGET static inline Vec vec_sub(Vec a, Vec b) { return _mm256_sub_ps(a, b); }
SIMD_TARGET static inline Vec vec_mul(Vec a, Vec b) { return _mm256_mul_ps(a, b); }
SIMD_TARGET static inline Vec vec_div(Vec a, Vec b) { return _mm256_div_ps(a, b); }
SIMD_TARGET static inline Vec vec_sqrt(Vec a) { return _mm256_sqrt_ps(a); }
SIMD_TARGET static inline Vec vec_max(Vec a, Vec b) { return _mm256_max_ps(a, b); }
SIMD_TARGET static inline Vec vec_min(Vec a, Vec b) { return _mm256_min_ps(a, b); }
SIMD_TARGET static inline Vec vec_neg(Vec a) { return _mm256_sub_ps(_mm256_setzero_ps(), a); }

/* a * b + c and c - a * b, each with one rounding. */
SIMD_TARGET static inline Vec vec_fma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
SIMD_TARGET static inline Vec vec_fnma(Vec a, Vec b, Vec c) { return _mm256_fnmadd_ps(a, b, c); }

/* The sum and the max of the 8 lanes, as a pairwise tree: the two 128-bit
 * halves, then the two 64-bit halves, then the two lanes left. */
SIMD_TARGET static inline float vec_hsum(Vec v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

SIMD_TARGET static inline float vec_hmax(Vec v)
{
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

/* Lane masks: a < b (false for NaN), keep[0..8) != 0, and the blend. */
SIMD_TARGET static inline VecMask vec_less(Vec a, Vec b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
SIMD_TARGET static inline VecMask vec_keep_mask(const uint8_t *keep)
{
    __m256i k = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)keep));
    return _mm256_castsi256_ps(_mm256_cmpgt_epi32(k, _mm256_setzero_si256()));
}
/* mask ? a : b in each lane. */
SIMD_TARGET static inline Vec vec_select(VecMask mask, Vec a, Vec b)
{
    return _mm256_blendv_ps(b, a, mask);
}

/* The float's bits: |v| and a with the sign of x. */
SIMD_TARGET static inline Vec vec_abs(Vec v)
{
    return _mm256_castsi256_ps(_mm256_and_si256(_mm256_castps_si256(v),
                                                _mm256_set1_epi32(0x7fffffff)));
}

SIMD_TARGET static inline Vec vec_with_sign_of(Vec a, Vec x)
{
    __m256i sign = _mm256_and_si256(_mm256_castps_si256(x), _mm256_set1_epi32((int)0x80000000u));
    return _mm256_castsi256_ps(_mm256_or_si256(_mm256_castps_si256(a), sign));
}

/* 32-bit integer lanes, for the exponent arithmetic of exp. */
SIMD_TARGET static inline VecI vec_bits(Vec v) { return _mm256_castps_si256(v); }
SIMD_TARGET static inline VecI veci_splat(uint32_t v) { return _mm256_set1_epi32((int)v); }
SIMD_TARGET static inline VecI veci_add(VecI a, VecI b) { return _mm256_add_epi32(a, b); }
SIMD_TARGET static inline VecI veci_sub(VecI a, VecI b) { return _mm256_sub_epi32(a, b); }
SIMD_TARGET static inline VecI veci_half(VecI a) { return _mm256_srli_epi32(a, 1); }
/* The float whose exponent field is e (and mantissa 0): 2^(e - 127). */
/* Float to int32 rounding toward zero, int32 to float, and table[j] in each
 * lane for j in [0, 16): each half of the table is one register, looked up
 * by j's low 3 bits, and bit 3 picks the half. */
SIMD_TARGET static inline VecI vec_trunc_int(Vec v) { return _mm256_cvttps_epi32(v); }
SIMD_TARGET static inline Vec vec_from_int(VecI j) { return _mm256_cvtepi32_ps(j); }
SIMD_TARGET static inline Vec vec_lookup16(const float *table, VecI j)
{
    __m256 lo = _mm256_permutevar8x32_ps(_mm256_loadu_ps(table), j);
    __m256 hi = _mm256_permutevar8x32_ps(_mm256_loadu_ps(table + 8), j);
    __m256i upper = _mm256_slli_epi32(j, 28);   /* bit 3 of j in the sign bit */
    return _mm256_blendv_ps(lo, hi, _mm256_castsi256_ps(upper));
}

SIMD_TARGET static inline Vec vec_from_exponent(VecI e)
{
    return _mm256_castsi256_ps(_mm256_slli_epi32(e, 23));
}

/* Double lanes, for sums kept in double: the low and the high 4 floats of
 * v widened, the sum of two, and the sum of the 4 lanes (halves, then pair). */
SIMD_TARGET static inline VecD vecd_zero(void) { return _mm256_setzero_pd(); }
SIMD_TARGET static inline VecD vecd_widen_lo(Vec v)
{
    return _mm256_cvtps_pd(_mm256_castps256_ps128(v));
}

SIMD_TARGET static inline VecD vecd_widen_hi(Vec v)
{
    return _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
}

SIMD_TARGET static inline VecD vecd_add(VecD a, VecD b) { return _mm256_add_pd(a, b); }
SIMD_TARGET static inline double vecd_hsum(VecD v)
{
    __m128d s2 = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
    return _mm_cvtsd_f64(_mm_add_sd(s2, _mm_unpackhi_pd(s2, s2)));
}

#endif /* BERTC_SIMD_AVX2_H */
