/* tensor/bgemm_neon.c — the bf16 micro-kernel on AArch64 with FEAT_BF16
 * (Armv8.6; Neoverse V1/N2/V2, Cortex-A510/A710/X2 and later, Apple M2,
 * Graviton 3/4): BFDOT by element, an 8 x 48 tile of float32 sums.
 *
 * bfdot v.4s, w.8h, a.2h[l] adds to each float32 lane of v the two products
 * of the bf16 pair in the same lane of w with pair l of a. The packed W
 * (Bf16PackedB: per k-pair, 48 channels x 2 bf16) gives 4 channels' pairs in
 * one 16-byte load; a 16-byte load of a row of converted A gives its pairs
 * for 4 k-pairs, lanes 0..3. The instruction's arithmetic is not
 * vdpbf16ps's: each product and each sum rounded to odd, denormals flushed,
 * the default NaN (bertc_bgemm_bfdot2, tensor/bgemm_bfdot.c, the Arm ARM's
 * BFDotAdd), so this path has its own oracle (tensor/kernels.h).
 *
 * The 48 channels of a panel are done in 6 parts of 8, each over the whole
 * of K (each output's bfdots in k order: the definition's order). Register
 * budget (32 q) for one 8 x 8 part: 8 rows x 2 vectors = 16 accumulators,
 * 8 rows of A (4 k-pairs each), 2 vectors of W per k-pair. Per 4 k-pairs:
 * 8 + 8 loads, 64 bfdots (each 8 multiply-adds).
 *
 * Only the functions carry the target attribute: the file builds for any
 * AArch64 and runs only when bertc_bgemm_neon_has_bf16 says so. */
#include "tensor/bgemm_internal.h"

#if defined(BGEMM_HAVE_NEONBF16)
#include <arm_neon.h>
#include <string.h>
#if defined(__linux__) && !defined(BERTC_FREESTANDING) && !defined(__ARM_FEATURE_BF16_VECTOR_ARITHMETIC)
#include <sys/auxv.h>
#ifndef HWCAP2_BF16
#define HWCAP2_BF16 (1ul << 14)   /* linux/arch/arm64/include/uapi/asm/hwcap.h */
#endif
#endif

bool bertc_bgemm_neon_has_bf16(void)
{
#if defined(__ARM_FEATURE_BF16_VECTOR_ARITHMETIC)
    return true;
#elif defined(__linux__) && !defined(BERTC_FREESTANDING)
    return (getauxval(AT_HWCAP2) & HWCAP2_BF16) != 0;
#else
    return false;
#endif
}

#define BF16_TARGET __attribute__((target("arch=armv8.2-a+bf16")))

enum { MR = 8, NR = BGEMM_NR, PART = 8 };

/* ---- converting a row of A ------------------------------------------------ */

/* 4 floats to 4 bf16 by bertc_bf16_from_f32's steps, in integer lanes:
 * zero or denormal -> signed zero, NaN -> upper half with the quiet bit,
 * else round to nearest even on the upper half. (BFCVTN would round a
 * denormal instead of flushing it, so it is not used.) */
static uint16x4_t convert4(const float *x)
{
    uint32x4_t u = vld1q_u32((const uint32_t *)x), hi = vshrq_n_u32(u, 16);
    uint32x4_t mag = vandq_u32(u, vdupq_n_u32(0x7FFFFFFFu));
    uint32x4_t rne = vaddq_u32(vaddq_u32(u, vdupq_n_u32(0x7FFFu)), vandq_u32(hi, vdupq_n_u32(1)));
    uint32x4_t r = vshrq_n_u32(rne, 16);
    r = vbslq_u32(vcltq_u32(mag, vdupq_n_u32(0x00800000u)), vandq_u32(hi, vdupq_n_u32(0x8000u)), r);
    r = vbslq_u32(vcgtq_u32(mag, vdupq_n_u32(0x7F800000u)), vorrq_u32(hi, vdupq_n_u32(0x40u)), r);
    return vmovn_u32(r);
}

static void convert_row(const float *x, int64_t cols, int64_t k_pad, uint16_t *b)
{
    int64_t k = 0;
    for (; k + 4 <= cols; k += 4)
        vst1_u16(b + k, convert4(x + k));
    for (; k < cols; k++)
        b[k] = bertc_bf16_from_f32(x[k]);
    for (; k < k_pad; k++)
        b[k] = 0;
}

/* ---- the micro-kernel ---------------------------------------------------- */

BF16_TARGET static inline bfloat16x8_t load8(const uint16_t *p)
{
    return vreinterpretq_bf16_u16(vld1q_u16(p));
}

/* Pair l of each row's a[i] against k-pair row w of the part: 2 vectors of
 * 4 channels, 8 rows. The lane must be a constant, hence the macro. */
#define DOT_LANE(acc, a, w, l)                                                   \
    do {                                                                         \
        bfloat16x8_t w0_ = load8(w), w1_ = load8((w) + 8);                       \
        for (int i_ = 0; i_ < MR; i_++) {                                        \
            acc[i_][0] = vbfdotq_laneq_f32(acc[i_][0], w0_, a[i_], l);           \
            acc[i_][1] = vbfdotq_laneq_f32(acc[i_][1], w1_, a[i_], l);           \
        }                                                                        \
    } while (0)

/* c[i][0..8) = acc[i] + bias (one add per lane), or acc. */
static void store_part(float32x4_t acc[MR][2], const float *bias, float *c, int64_t ldc)
{
    for (int i = 0; i < MR; i++)
        for (int v = 0; v < 2; v++) {
            float32x4_t y = acc[i][v];
            if (bias)
                y = vaddq_f32(y, vld1q_f32(bias + 4 * v));
            vst1q_f32(c + i * ldc + 4 * v, y);
        }
}

/* Channels [0, 8) of the panel b points into (its stride per k-pair is
 * 2 NR bf16): 4 k-pairs per load of A, then the last k_pad / 2 % 4 pairs
 * one at a time (lane 0 of a broadcast pair). */
BF16_TARGET static void kernel_part(int64_t k_pad, const uint16_t *a, int64_t lda,
                                    const uint16_t *b, const float *bias, float *c, int64_t ldc)
{
    float32x4_t acc[MR][2];
    for (int i = 0; i < MR; i++)
        acc[i][0] = acc[i][1] = vdupq_n_f32(0.0f);
    int64_t pairs = k_pad / 2, g = 0;
    bfloat16x8_t ar[MR];
    for (; g + 4 <= pairs; g += 4) {
        for (int i = 0; i < MR; i++)
            ar[i] = load8(a + i * lda + 2 * g);
        const uint16_t *w = b + g * 2 * NR;
        DOT_LANE(acc, ar, w, 0);
        DOT_LANE(acc, ar, w + 2 * NR, 1);
        DOT_LANE(acc, ar, w + 4 * NR, 2);
        DOT_LANE(acc, ar, w + 6 * NR, 3);
    }
    for (; g < pairs; g++) {
        for (int i = 0; i < MR; i++) {
            uint32_t pair;
            memcpy(&pair, a + i * lda + 2 * g, sizeof pair);
            ar[i] = vreinterpretq_bf16_u32(vdupq_n_u32(pair));
        }
        DOT_LANE(acc, ar, b + g * 2 * NR, 0);
    }
    store_part(acc, bias, c, ldc);
}

BF16_TARGET static void kernel_8x48(int64_t k_pad, const uint16_t *a, int64_t lda,
                                    const uint16_t *b, const float *bias, float *c, int64_t ldc)
{
    for (int p = 0; p < NR / PART; p++)
        kernel_part(k_pad, a, lda, b + 2 * PART * p, bias ? bias + PART * p : NULL,
                    c + PART * p, ldc);
}

/* MC = 128 rows of A, as the AVX512_BF16 path. */
const BgemmKernel bertc_bgemm_kernel_neonbf16 = {
    .isa = BGEMM_ISA_NEONBF16,
    .mr = MR,
    .mc = 128,
    .ka = 2,
    .convert_row = convert_row,
    .convert_trans = bertc_bgemm_convert_trans_scalar,
    .convert_pairs = bertc_bgemm_convert_pairs_scalar,
    .transpose_tile = bertc_bgemm_transpose_tile_scalar,
    .kernel = kernel_8x48,
};

#endif /* BGEMM_HAVE_NEONBF16 */
