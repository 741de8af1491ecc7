/* tensor/gemm_neon.c — the AArch64 NEON micro-kernel: an 8 x 12 tile of C.
 *
 * Register budget (32 q registers of 4 floats): 8 rows x 3 vectors = 24
 * accumulators, 3 for the current row of the B micro-panel and 2 holding the
 * 8 values of A, used lane by lane (fmla by element), so A needs no
 * broadcasts. Each k step is 5 loads and 24 FMAs. Edge tiles are computed in
 * full and written back through a small tile on the stack.
 *
 * NEON is part of AArch64, so this path is chosen at compile time. */
#include "tensor/gemm_kernel_internal.h"

#if defined(__aarch64__)
#include <arm_neon.h>
#include <stdbool.h>

enum { MR = 8, NR = 12 };

#define ROW_FMA(i, av, lane)                                      \
    do {                                                          \
        c##i##0 = vfmaq_laneq_f32(c##i##0, b0, av, lane);         \
        c##i##1 = vfmaq_laneq_f32(c##i##1, b1, av, lane);         \
        c##i##2 = vfmaq_laneq_f32(c##i##2, b2, av, lane);         \
    } while (0)

#define ZERO_ROW(i) float32x4_t c##i##0 = vdupq_n_f32(0.0f), c##i##1 = c##i##0, c##i##2 = c##i##0

/* row[0..NR) = alpha * acc + beta * row (row is read only if beta != 0). */
static inline void store_row(float *row, float32x4_t x0, float32x4_t x1, float32x4_t x2,
                             float alpha, float beta)
{
    float32x4_t o0 = vmulq_n_f32(x0, alpha), o1 = vmulq_n_f32(x1, alpha);
    float32x4_t o2 = vmulq_n_f32(x2, alpha);
    if (beta != 0.0f) {
        o0 = vfmaq_n_f32(o0, vld1q_f32(row), beta);
        o1 = vfmaq_n_f32(o1, vld1q_f32(row + 4), beta);
        o2 = vfmaq_n_f32(o2, vld1q_f32(row + 8), beta);
    }
    vst1q_f32(row, o0);
    vst1q_f32(row + 4, o1);
    vst1q_f32(row + 8, o2);
}

/* A full tile goes straight to C; an edge tile goes to `tmp` first (alpha = 1,
 * beta = 0) and its (m, n) corner is then merged into C. */
#define STORE_ROW(i)                                                              \
    do {                                                                          \
        if (full)                                                                 \
            store_row(c + (i) * ldc, c##i##0, c##i##1, c##i##2, alpha, beta);     \
        else                                                                      \
            store_row(tmp + (i) * NR, c##i##0, c##i##1, c##i##2, 1.0f, 0.0f);     \
    } while (0)

/* a is the (MR, kc) packed A micro-panel, b the (kc, NR) packed B
 * micro-panel; C (m, n) with row stride ldc gets alpha * a.b + beta * C. */
static void kernel_8x12(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                        float alpha, float beta, int m, int n)
{
    ZERO_ROW(0); ZERO_ROW(1); ZERO_ROW(2); ZERO_ROW(3);
    ZERO_ROW(4); ZERO_ROW(5); ZERO_ROW(6); ZERO_ROW(7);
    for (int i = 0; i < m; i++) { /* the lines of C the stores will need */
        __builtin_prefetch(c + i * ldc, 1, 3);
        __builtin_prefetch(c + i * ldc + n - 1, 1, 3);
    }
    for (int64_t k = 0; k < kc; k++, a += MR, b += NR) {
        float32x4_t a0 = vld1q_f32(a), a1 = vld1q_f32(a + 4);
        float32x4_t b0 = vld1q_f32(b), b1 = vld1q_f32(b + 4), b2 = vld1q_f32(b + 8);
        ROW_FMA(0, a0, 0); ROW_FMA(1, a0, 1); ROW_FMA(2, a0, 2); ROW_FMA(3, a0, 3);
        ROW_FMA(4, a1, 0); ROW_FMA(5, a1, 1); ROW_FMA(6, a1, 2); ROW_FMA(7, a1, 3);
    }
    bool full = m == MR && n == NR;
    float tmp[MR * NR];
    STORE_ROW(0); STORE_ROW(1); STORE_ROW(2); STORE_ROW(3);
    STORE_ROW(4); STORE_ROW(5); STORE_ROW(6); STORE_ROW(7);
    if (full)
        return;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            float *cij = c + i * ldc + j;
            *cij = beta == 0.0f ? alpha * tmp[i * NR + j] : alpha * tmp[i * NR + j] + beta * *cij;
        }
}

/* Blocking for a 64 KiB L1 and 1+ MiB L2: the B micro-panel (KC x NR = 12 KiB)
 * stays in L1, the A block (MC x KC = 128 KiB) in L2. */
const GemmKernel bertc_gemm_kernel_neon = {
    .name = "neon",
    .mr = MR,
    .nr = NR,
    .mc = 128,
    .kc = 256,
    .nc = 3072,
    .kernel = kernel_8x12,
    .pack_trans = bertc_gemm_pack_trans_scalar,
    .pack_copy = bertc_gemm_pack_copy_scalar,
};

#endif /* __aarch64__ */
