/* tensor/qgemm_neon.c — the int8 micro-kernels on AArch64 NEON, and the NEON
 * row quantiser they share.
 *
 * neondot, 4 x 16 tile: sdot (vdotq_s32, the Armv8.2 dot-product extension,
 * standard from Armv8.4: Cortex-A55/A76 and later, Apple M1, Graviton 2+)
 * adds to each int32 lane the 4 products of 4 signed bytes of W by 4 signed
 * bytes of A. Both operands are signed, so no bias is needed. 16
 * accumulators (4 rows x 4 vectors of 4 channels), 4 registers of W, 1
 * broadcast of A: 21 of the 32 q registers.
 *
 * neon, 4 x 8 tile, for cores without sdot (Cortex-A53/A72, Raspberry Pi
 * 3/4): vmull_s8 multiplies 8 byte pairs into int16 (|product| <= 127^2 =
 * 16129, exact) and vpadalq_s16 adds adjacent int16 pairs into int32 lanes.
 * A 16-byte vector of W holds 4 channels x 4 k; its low half gives lanes
 * (c0 k0+k1, c0 k2+k3, c1 k0+k1, c1 k2+k3), its high half the same for c2,
 * c3, and one pairwise add (vpaddq_s32) of the two at the end leaves
 * (c0, c1, c2, c3). 16 accumulators (4 rows x 2 vectors x 2 halves).
 *
 * The sdot kernel carries its own target attribute, so the file builds for
 * any AArch64; bertc_qgemm_neon_has_dotprod decides at run time (the
 * compile-time feature, or the kernel's HWCAP in hosted Linux builds). */
#include "tensor/qgemm_internal.h"

#if defined(__aarch64__) && defined(__ARM_NEON)
#include <arm_neon.h>
#include <string.h>
#if defined(__linux__) && !defined(BERTC_FREESTANDING) && !defined(__ARM_FEATURE_DOTPROD)
#include <sys/auxv.h>
#endif

bool bertc_qgemm_neon_has_dotprod(void)
{
#if defined(__ARM_FEATURE_DOTPROD)
    return true;
#elif defined(__linux__) && !defined(BERTC_FREESTANDING)
    return (getauxval(AT_HWCAP) & (1ul << 20)) != 0;   /* HWCAP_ASIMDDP */
#else
    return false;
#endif
}

/* ---- quantising a row of A ---------------------------------------------- */

/* max |x|: vmaxnmq keeps the number when one operand is a NaN, so a NaN
 * never wins, as in the scalar definition. */
static float row_amax(const float *x, int64_t n)
{
    float32x4_t m = vdupq_n_f32(0.0f);
    int64_t k = 0;
    for (; k + 4 <= n; k += 4)
        m = vmaxnmq_f32(vabsq_f32(vld1q_f32(x + k)), m);
    float r = vmaxnmvq_f32(m);
    for (; k < n; k++) {
        float a = x[k] < 0.0f ? -x[k] : x[k];
        r = a > r ? a : r;
    }
    return r;
}

/* q = rne(clamp(x * inv, -127, 127)) for 8 elements: vmaxnm/vminnm clamp a
 * NaN to -127 as the scalar code does; vcvtnq rounds to nearest even. */
static int8x8_t quantize8(const float *x, float32x4_t inv)
{
    float32x4_t lo = vdupq_n_f32(-127.0f), hi = vdupq_n_f32(127.0f);
    float32x4_t v0 = vminnmq_f32(vmaxnmq_f32(vmulq_f32(vld1q_f32(x), inv), lo), hi);
    float32x4_t v1 = vminnmq_f32(vmaxnmq_f32(vmulq_f32(vld1q_f32(x + 4), inv), lo), hi);
    int16x8_t h = vcombine_s16(vmovn_s32(vcvtnq_s32_f32(v0)), vmovn_s32(vcvtnq_s32_f32(v1)));
    return vmovn_s16(h);
}

static float quantize_row(const float *x, int64_t cols, int64_t k_pad, int8_t *q, bool biased)
{
    (void)biased;   /* both NEON kernels take signed A */
    float inv, scale = bertc_qgemm_row_scale(row_amax(x, cols), &inv);
    float32x4_t vinv = vdupq_n_f32(inv);
    int64_t k = 0;
    for (; k + 8 <= cols; k += 8)
        vst1_s8(q + k, quantize8(x + k, vinv));
    for (; k < cols; k++)
        q[k] = (int8_t)bertc_qgemm_quantize_one(x[k], inv);
    memset(q + cols, 0, (size_t)(k_pad - cols));
    return scale;
}

/* ---- the epilogue ------------------------------------------------------- */

static int8x16_t a_broadcast(const int8_t *p)
{
    int32_t v;
    memcpy(&v, p, sizeof v);
    return vreinterpretq_s8_s32(vdupq_n_s32(v));
}

/* c[0..4) = ((float)acc * sa) * sw + bias, the scalar epilogue's order. */
static void store_vec(float *c, int32x4_t acc, float sa, const float *sw, const float *bias)
{
    float32x4_t y = vmulq_f32(vmulq_n_f32(vcvtq_f32_s32(acc), sa), vld1q_f32(sw));
    if (bias)
        y = vaddq_f32(y, vld1q_f32(bias));
    vst1q_f32(c, y);
}

/* ---- sdot: 4 x 16 --------------------------------------------------------- */

enum { MR = 4, DOT_NR = 16, MULL_NR = 8 };

__attribute__((target("arch=armv8.2-a+dotprod")))
static void kernel_dot_4x16(int64_t k_pad, const int8_t *a, int64_t lda, const int8_t *b,
                            const float *sa, const float *sw, const int32_t *col_sum,
                            const float *bias, float *c, int64_t ldc)
{
    (void)col_sum;
    int32x4_t acc[MR][4];
    for (int i = 0; i < MR; i++)
        for (int v = 0; v < 4; v++)
            acc[i][v] = vdupq_n_s32(0);
    for (int64_t g = 0; g < k_pad / 4; g++, b += 4 * DOT_NR) {
        int8x16_t w0 = vld1q_s8(b), w1 = vld1q_s8(b + 16), w2 = vld1q_s8(b + 32);
        int8x16_t w3 = vld1q_s8(b + 48);
        for (int i = 0; i < MR; i++) {
            int8x16_t ai = a_broadcast(a + i * lda + 4 * g);
            acc[i][0] = vdotq_s32(acc[i][0], w0, ai);
            acc[i][1] = vdotq_s32(acc[i][1], w1, ai);
            acc[i][2] = vdotq_s32(acc[i][2], w2, ai);
            acc[i][3] = vdotq_s32(acc[i][3], w3, ai);
        }
    }
    for (int i = 0; i < MR; i++)
        for (int v = 0; v < 4; v++)
            store_vec(c + i * ldc + 4 * v, acc[i][v], sa[i], sw + 4 * v,
                      bias ? bias + 4 * v : NULL);
}

/* ---- widening multiplies: 4 x 8 ------------------------------------------ */

static void kernel_mull_4x8(int64_t k_pad, const int8_t *a, int64_t lda, const int8_t *b,
                            const float *sa, const float *sw, const int32_t *col_sum,
                            const float *bias, float *c, int64_t ldc)
{
    (void)col_sum;
    /* pairs[i][v][h]: row i, vector v (channels 4v..4v+3), half h (2 channels) */
    int32x4_t pairs[MR][2][2];
    for (int i = 0; i < MR; i++)
        for (int v = 0; v < 2; v++)
            pairs[i][v][0] = pairs[i][v][1] = vdupq_n_s32(0);
    for (int64_t g = 0; g < k_pad / 4; g++, b += 4 * MULL_NR) {
        int8x16_t w0 = vld1q_s8(b), w1 = vld1q_s8(b + 16);
        for (int i = 0; i < MR; i++) {
            int8x16_t ai = a_broadcast(a + i * lda + 4 * g);
            int8x8_t a8 = vget_low_s8(ai);
            pairs[i][0][0] = vpadalq_s16(pairs[i][0][0], vmull_s8(vget_low_s8(w0), a8));
            pairs[i][0][1] = vpadalq_s16(pairs[i][0][1], vmull_high_s8(w0, ai));
            pairs[i][1][0] = vpadalq_s16(pairs[i][1][0], vmull_s8(vget_low_s8(w1), a8));
            pairs[i][1][1] = vpadalq_s16(pairs[i][1][1], vmull_high_s8(w1, ai));
        }
    }
    for (int i = 0; i < MR; i++)
        for (int v = 0; v < 2; v++)
            store_vec(c + i * ldc + 4 * v, vpaddq_s32(pairs[i][v][0], pairs[i][v][1]), sa[i],
                      sw + 4 * v, bias ? bias + 4 * v : NULL);
}

const QgemmKernel bertc_qgemm_kernel_neondot = {
    .isa = QGEMM_ISA_NEONDOT,
    .mr = MR,
    .nr = DOT_NR,
    .mc = 128,
    .biased = false,
    .quantize_row = quantize_row,
    .kernel = kernel_dot_4x16,
};

const QgemmKernel bertc_qgemm_kernel_neon = {
    .isa = QGEMM_ISA_NEON,
    .mr = MR,
    .nr = MULL_NR,
    .mc = 128,
    .biased = false,
    .quantize_row = quantize_row,
    .kernel = kernel_mull_4x8,
};

#endif /* __aarch64__ */
