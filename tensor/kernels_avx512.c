/* tensor/kernels_avx512.c — the row kernels on 16-lane AVX-512 registers: the
 * AVX-512 primitives, then the bodies written once for every SIMD path
 * (tensor/row_kernels_simd.inc explains the pattern), then the one kernel
 * that is AVX-512's own: dropout's SplitMix64 draws on 64-bit lanes. */
#if defined(__x86_64__) && defined(__GNUC__)
#include "tensor/simd_avx512.h"
#include "tensor/simd_vmath.inc"
#include "tensor/row_kernels_simd.inc"

/* ---- dropout --------------------------------------------------------------- */

/* The states of draws i .. i+7 of the stream at `state`: state + (i+1+l) gamma
 * in lane l (mod 2^64). */
SIMD_TARGET static __m512i draw_states8(uint64_t state, int64_t i)
{
    uint64_t s[8];
    for (int l = 0; l < 8; l++)
        s[l] = state + (uint64_t)(i + 1 + l) * RNG_GAMMA;
    return _mm512_loadu_si512(s);
}

/* rng_mix on 8 states; _mm512_mullo_epi64 (AVX512DQ) is the 64-bit multiply
 * mod 2^64, like C's on uint64_t. */
SIMD_TARGET static __m512i mix8(__m512i z)
{
    z = _mm512_xor_si512(z, _mm512_srli_epi64(z, 30));
    z = _mm512_mullo_epi64(z, _mm512_set1_epi64((long long)0xBF58476D1CE4E5B9ull));
    z = _mm512_xor_si512(z, _mm512_srli_epi64(z, 27));
    z = _mm512_mullo_epi64(z, _mm512_set1_epi64((long long)0x94D049BB133111EBull));
    return _mm512_xor_si512(z, _mm512_srli_epi64(z, 31));
}

/* Bit l set when draw l passes: (rng_mix(states_l) >> 11) >= threshold. */
SIMD_TARGET static __mmask8 keep8(__m512i states, __m512i threshold)
{
    return _mm512_cmpge_epu64_mask(_mm512_srli_epi64(mix8(states), 11), threshold);
}

/* a, out, keep are (n): the scalar reference on 16 elements at a time; the
 * draws of elements i .. i+7 ride in `lo`, those of i+8 .. i+15 in `hi`. */
SIMD_TARGET static void dropout(const float *a, float *out, uint8_t *keep, int64_t n,
                                uint64_t state, uint64_t threshold, float scale)
{
    __m512i step = _mm512_set1_epi64((long long)(SIMD_W * RNG_GAMMA));
    __m512i t = _mm512_set1_epi64((long long)threshold);
    __m512i lo = draw_states8(state, 0), hi = draw_states8(state, 8);
    int64_t i = 0;
    for (; i + SIMD_W <= n; i += SIMD_W) {
        __mmask16 k = (__mmask16)(keep8(lo, t) | (keep8(hi, t) << 8));
        vec_store(out + i, _mm512_maskz_mul_ps(k, vec_load(a + i), vec_splat(scale)));
        _mm_storeu_si128((__m128i *)(keep + i), _mm_maskz_set1_epi8(k, 1));
        lo = _mm512_add_epi64(lo, step);
        hi = _mm512_add_epi64(hi, step);
    }
    scalar->dropout(a + i, out + i, keep + i, n - i, state + (uint64_t)i * RNG_GAMMA, threshold,
                    scale);
}
#endif /* x86-64 */
