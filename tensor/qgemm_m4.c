/* tensor/qgemm_m4.c — the int8 micro-kernel for Armv7E-M with the DSP
 * extension (Cortex-M4, M7, M33, M55 without MVE...; compile-time
 * __ARM_FEATURE_DSP): the SIMD32 instructions SXTB16 and SMLAD, the idiom of
 * CMSIS-NN's arm_nn_mat_mult_kernel_s8_s16 and read_and_pad.
 *
 * A packed panel of W keeps 4 consecutive k of one channel in one 32-bit
 * word (bytes k0 k1 k2 k3, tensor/tensor.h), and a row of quantised A the
 * same 4 k in one word. For such a word x:
 *     sxtb16(x)          = (int16) {x.byte0, x.byte2}  = {k0, k2}
 *     sxtb16(x ror 8)    = (int16) {x.byte1, x.byte3}  = {k1, k3}
 * and smlad(p, q, acc) = acc + p.lo * q.lo + p.hi * q.hi, so two SMLADs add
 * the 4 products of a group to one int32 accumulator, exactly (|product| <=
 * 127^2; the sum wraps mod 2^32 as the scalar code's would, and the driver's
 * K limit keeps it from doing so). A and W pair up byte for byte whatever the
 * byte order of the load, so the packed layout is the one every path shares,
 * and read_and_pad's PKHBT/PKHTB (which restore k order for an int16 operand
 * in natural order) are not needed: both operands are split the same way.
 *
 * Registers: a 2 x 2 block of C (4 accumulators) takes the 4 unpacked
 * halves of 2 rows of A, 2 unpacked halves of one channel at a time, the raw
 * words and 3 pointers: about the 13 general registers free in a Thumb-2
 * loop. The tile the driver sees is 2 rows x 8 channels (one panel); the
 * kernel walks its 4 column pairs, each over the whole K. Per group of 4 k
 * a 2 x 2 block costs 2 loads and 4 unpacks of A, 2 loads and 4 unpacks of W,
 * and 8 SMLADs: 16 multiply-adds in 25 instructions with the loop (GCC 12 -O2).
 *
 * A is quantised by the portable row quantiser (bertc_qgemm_quantize_row_scalar):
 * the M4F's FPU has no vector float to do better. The epilogue is the scalar
 * one, ((float)acc * sa) * sw + bias, in single precision on the FPU. */
#include "tensor/qgemm_internal.h"

#if defined(BERTC_QGEMM_HAS_M4DSP)
#include <arm_acle.h>
#include <string.h>

enum { MR = 2, NR = 8 };

/* 4 bytes as one word (an LDR; M-profile loads tolerate any alignment, and
 * the driver's rows and panels are 4-byte aligned anyway). */
static inline uint32_t load_word(const int8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* {byte1, byte3} sign-extended to int16: SXTB16 with its rotate operand
 * (CMSIS-Core's __SXTB16_RORn). GCC 12 does not fold a rotate into the
 * intrinsic, so it is written as the one instruction it is. */
static inline int16x2_t odd_bytes(uint32_t x)
{
#if defined(__GNUC__)
    int16x2_t r;
    __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(x));
    return r;
#else
    return __sxtb16((int8x4_t)((x >> 8) | (x << 24)));
#endif
}

static inline int16x2_t even_bytes(uint32_t x) { return __sxtb16((int8x4_t)x); }

/* acc[i][j] = sum_{k < 4 groups} a_i[k] w_j[k] for rows a0, a1 and the two
 * channels whose words sit at b[0..4) and b[4..8) of each group (group stride
 * 4 * NR bytes). */
static void block_2x2(int32_t groups, const int8_t *a0, const int8_t *a1, const int8_t *b,
                      int32_t acc[2][2])
{
    int32_t c00 = 0, c01 = 0, c10 = 0, c11 = 0;
    /* a1 runs to its end: one pointer fewer than a counter (13 registers). */
    ptrdiff_t row1 = a1 - a0;
    for (const int8_t *end = a0 + 4 * groups; a0 != end; a0 += 4, b += 4 * NR) {
        a1 = a0 + row1;
        uint32_t x0 = load_word(a0), x1 = load_word(a1);
        int16x2_t a0e = even_bytes(x0), a0o = odd_bytes(x0);
        int16x2_t a1e = even_bytes(x1), a1o = odd_bytes(x1);
        uint32_t w = load_word(b);
        int16x2_t we = even_bytes(w), wo = odd_bytes(w);
        c00 = __smlad(a0o, wo, __smlad(a0e, we, c00));
        c10 = __smlad(a1o, wo, __smlad(a1e, we, c10));
        w = load_word(b + 4);
        we = even_bytes(w), wo = odd_bytes(w);
        c01 = __smlad(a0o, wo, __smlad(a0e, we, c01));
        c11 = __smlad(a1o, wo, __smlad(a1e, we, c11));
    }
    acc[0][0] = c00, acc[0][1] = c01, acc[1][0] = c10, acc[1][1] = c11;
}

/* The driver's tile, 2 x 8: four 2 x 2 blocks, then the scalar epilogue. */
static void kernel_2x8(int64_t k_pad, const int8_t *a, int64_t lda, const int8_t *b,
                       const float *sa, const float *sw, const int32_t *col_sum,
                       const float *bias, float *c, int64_t ldc)
{
    (void)col_sum;
    int32_t groups = (int32_t)(k_pad / 4);
    for (int j = 0; j < NR; j += 2) {
        int32_t acc[2][2];
        block_2x2(groups, a, a + lda, b + 4 * j, acc);
        for (int i = 0; i < MR; i++)
            for (int t = 0; t < 2; t++) {
                float y = ((float)acc[i][t] * sa[i]) * sw[j + t];
                c[i * ldc + j + t] = bias ? y + bias[j + t] : y;
            }
    }
}

const QgemmKernel bertc_qgemm_kernel_m4dsp = {
    .isa = QGEMM_ISA_M4DSP,
    .mr = MR,
    .nr = NR,
    .mc = 64,
    .biased = false,
    .quantize_row = bertc_qgemm_quantize_row_scalar,
    .kernel = kernel_2x8,
};

#endif /* BERTC_QGEMM_HAS_M4DSP */
