/* tensor/kernels_neon.c — the row kernels on 4-lane AArch64 NEON registers:
 * the NEON primitives, then the bodies written once for every SIMD path
 * (tensor/row_kernels_simd.inc explains the pattern), then dropout. */
#if defined(__aarch64__) && defined(__ARM_NEON)
#include "tensor/simd_neon.h"
#include "tensor/simd_vmath.inc"
#include "tensor/row_kernels_simd.inc"

/* The forward runs the scalar reference: NEON has no 64 x 64-bit lane
 * multiply for SplitMix64, only 32 x 32 -> 64 on two lanes, while AArch64's
 * scalar MUL does its multiplies natively. */
static void dropout(const float *a, float *out, uint8_t *keep, int64_t n, uint64_t state,
                    uint64_t threshold, float scale)
{
    scalar->dropout(a, out, keep, n, state, threshold, scale);
}
#endif /* AArch64 */
