/* tensor/qgemm_internal.h — private to tensor/qgemm*.c: what one int8 path
 * brings to the blocked driver of tensor/qgemm.c: its register tile MR x NR,
 * a row quantiser that writes A the way its micro-kernel reads it, and the
 * micro-kernel.
 *
 * Quantised A, as the driver hands it to a micro-kernel: MR rows of k_pad
 * bytes, row stride lda (a multiple of 4), k past K zero; rows past the last
 * real row are zero rows too (scale 1), so a kernel always computes a full
 * MR x NR tile and the driver keeps the m x n corner.
 *
 * Packed W: see QuantPackedB in tensor/tensor.h. A panel is nr channels x
 * k_pad bytes, 4 consecutive k of one channel together (the order vpdpbusd
 * and sdot consume: one 32-bit lane = 4 products summed). */
#ifndef BERTC_QGEMM_INTERNAL_H
#define BERTC_QGEMM_INTERNAL_H

#include "tensor/tensor.h"

/* Every path's NR divides it: bertc_qgemm_packed_bytes pads N to it. */
#define QGEMM_NR_MAX 48

/* Quantises one row x (cols) into q (k_pad bytes: cols quantised, then zeros
 * up to k_pad) and returns its scale, by the scheme of tensor/tensor.h.
 * With `biased` the bytes are stored as the unsigned qa + 128 (VNNI's u8
 * operand; the zero padding becomes 128). */
typedef float (*QgemmQuantizeRow)(const float *x, int64_t cols, int64_t k_pad, int8_t *q,
                                  bool biased);

/* The tile: with acc[i][j] = sum_{k < k_pad} qa[i][k] qw[j][k] (int32, exact),
 *     c[i * ldc + j] = ((float)acc[i][j] * sa[i]) * sw[j] + bias[j]
 * for i < MR, j < NR (bias NULL: no add). a holds MR rows of quantised A,
 * row stride lda (biased when the path's `biased` is set: the kernel then
 * subtracts 128 * col_sum[j]); b one packed panel of W; sw and col_sum the
 * panel's NR entries. */
typedef void (*QgemmMicroKernel)(int64_t k_pad, const int8_t *a, int64_t lda, const int8_t *b,
                                 const float *sa, const float *sw, const int32_t *col_sum,
                                 const float *bias, float *c, int64_t ldc);

typedef struct QgemmKernel {
    QgemmIsa isa;
    int mr, nr;           /* register tile of C */
    int64_t mc;           /* rows of A quantised at a time (a multiple of mr) */
    bool biased;          /* A is stored as u8 = qa + 128 */
    QgemmQuantizeRow quantize_row;
    QgemmMicroKernel kernel;
} QgemmKernel;

/* The two halves of the definition (tensor/qgemm.c), for the SIMD quantisers'
 * scalar tails: a row's scale (1 and inv = 0 below BERTC_QUANT_MIN_AMAX) from
 * its max |x|, and one element's q = rne(clamp(x * inv, -127, 127)). */
float bertc_qgemm_row_scale(float amax, float *inv);
int32_t bertc_qgemm_quantize_one(float x, float inv);

/* The portable quantiser (tensor/qgemm.c): the definition every path's
 * quantiser must match bit for bit. */
float bertc_qgemm_quantize_row_scalar(const float *x, int64_t cols, int64_t k_pad, int8_t *q,
                                      bool biased);

/* The paths this build has; each checks the CPU with bertc_qgemm_isa_supported
 * before it is used. */
extern const QgemmKernel bertc_qgemm_kernel_scalar;                     /* tensor/qgemm.c */
#if defined(__x86_64__) && defined(__GNUC__)
extern const QgemmKernel bertc_qgemm_kernel_avx512vnni; /* tensor/qgemm_avx512vnni.c */
extern const QgemmKernel bertc_qgemm_kernel_avxvnni;    /* tensor/qgemm_avxvnni.c */
extern const QgemmKernel bertc_qgemm_kernel_avx2;       /* tensor/qgemm_avx2.c */
/* The AVX2 row quantiser, shared by the AVX-VNNI path. */
float bertc_qgemm_quantize_row_avx2(const float *x, int64_t cols, int64_t k_pad, int8_t *q,
                                    bool biased);
#endif
#if defined(__aarch64__) && defined(__ARM_NEON)
extern const QgemmKernel bertc_qgemm_kernel_neon;       /* tensor/qgemm_neon.c */
extern const QgemmKernel bertc_qgemm_kernel_neondot;    /* tensor/qgemm_neon.c */
bool bertc_qgemm_neon_has_dotprod(void);                /* tensor/qgemm_neon.c */
#endif

/* Armv7E-M (and Armv7-A) with the DSP extension's SIMD32 instructions. */
#if defined(__arm__) && defined(__ARM_FEATURE_DSP) && defined(__ARM_FEATURE_SIMD32)
#define BERTC_QGEMM_HAS_M4DSP 1
extern const QgemmKernel bertc_qgemm_kernel_m4dsp;      /* tensor/qgemm_m4.c */
#endif

/* The table of a path this build has (NULL for one it lacks). */
const QgemmKernel *bertc_qgemm_kernel_for(QgemmIsa isa);

#endif /* BERTC_QGEMM_INTERNAL_H */
