/* tensor/kernels_avx2.c — the row kernels on 8-lane AVX2+FMA registers: the
 * AVX2 primitives, then the bodies written once for every SIMD path
 * (tensor/row_kernels_simd.inc explains the pattern), then the one kernel
 * that is AVX2's own: dropout's SplitMix64 draws on 64-bit lanes. */
#if defined(__x86_64__) && defined(__GNUC__)
#include "tensor/simd_avx2.h"
#include "tensor/simd_vmath.inc"
#include "tensor/row_kernels_simd.inc"

/* ---- dropout --------------------------------------------------------------- */

/* The states of draws i .. i+3 of the stream at `state`: state + (i+1+l) gamma
 * in lane l (mod 2^64). */
SIMD_TARGET static __m256i draw_states4(uint64_t state, int64_t i)
{
    uint64_t s[4];
    for (int l = 0; l < 4; l++)
        s[l] = state + (uint64_t)(i + 1 + l) * RNG_GAMMA;
    return _mm256_loadu_si256((const __m256i *)s);
}

/* z * c mod 2^64 in each lane. AVX2 multiplies only 32-bit halves, so with
 * z = z_hi 2^32 + z_lo and c likewise:
 *   z c = z_lo c_lo + 2^32 (z_hi c_lo + z_lo c_hi)   (mod 2^64). */
SIMD_TARGET static __m256i mullo64(__m256i z, uint64_t c)
{
    __m256i c_lo = _mm256_set1_epi64x((long long)(c & 0xFFFFFFFFull));
    __m256i c_hi = _mm256_set1_epi64x((long long)(c >> 32));
    __m256i low = _mm256_mul_epu32(z, c_lo);
    __m256i cross = _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(z, 32), c_lo),
                                     _mm256_mul_epu32(z, c_hi));
    return _mm256_add_epi64(low, _mm256_slli_epi64(cross, 32));
}

/* rng_mix on 4 states. */
SIMD_TARGET static __m256i mix4(__m256i z)
{
    z = mullo64(_mm256_xor_si256(z, _mm256_srli_epi64(z, 30)), 0xBF58476D1CE4E5B9ull);
    z = mullo64(_mm256_xor_si256(z, _mm256_srli_epi64(z, 27)), 0x94D049BB133111EBull);
    return _mm256_xor_si256(z, _mm256_srli_epi64(z, 31));
}

/* Bit l set when draw l passes, (rng_mix(states_l) >> 11) >= threshold, i.e.
 * not threshold > m. AVX2 compares 64-bit lanes as signed; m and threshold
 * are at most 2^53, so that is the unsigned order too. */
SIMD_TARGET static int keep4(__m256i states, __m256i threshold)
{
    __m256i m = _mm256_srli_epi64(mix4(states), 11);
    int dropped = _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpgt_epi64(threshold, m)));
    return ~dropped & 0xF;
}

/* a, out, keep are (n): the scalar reference on 8 elements at a time; the
 * draws of elements i .. i+3 ride in `lo`, those of i+4 .. i+7 in `hi`. The
 * 8 keep bits become a lane mask (lane l: bit l of `kept`) and 8 bytes. */
SIMD_TARGET static void dropout(const float *a, float *out, uint8_t *keep, int64_t n,
                                uint64_t state, uint64_t threshold, float scale)
{
    __m256i step = _mm256_set1_epi64x((long long)(SIMD_W * RNG_GAMMA));
    __m256i t = _mm256_set1_epi64x((long long)threshold);
    __m256i lane_bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    __m256i lo = draw_states4(state, 0), hi = draw_states4(state, 4);
    int64_t i = 0;
    for (; i + SIMD_W <= n; i += SIMD_W) {
        int kept = keep4(lo, t) | keep4(hi, t) << 4;
        __m256i bit = _mm256_and_si256(_mm256_set1_epi32(kept), lane_bit);
        __m256 mask = _mm256_castsi256_ps(_mm256_cmpeq_epi32(bit, lane_bit));
        __m256 y = _mm256_mul_ps(_mm256_loadu_ps(a + i), _mm256_set1_ps(scale));
        _mm256_storeu_ps(out + i, _mm256_and_ps(mask, y)); /* dropped: +0 */
        for (int l = 0; l < SIMD_W; l++)
            keep[i + l] = (uint8_t)((kept >> l) & 1);
        lo = _mm256_add_epi64(lo, step);
        hi = _mm256_add_epi64(hi, step);
    }
    scalar->dropout(a + i, out + i, keep + i, n - i, state + (uint64_t)i * RNG_GAMMA, threshold,
                    scale);
}
#endif /* x86-64 */
