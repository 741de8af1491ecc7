/*
 * tensor/kernels_internal.h — private to the tensor/ sources and to the tests and
 * benchmarks that check one instruction-set path against another. Not
 * installed, not included by tensor/tensor.h: a program calls the kernel_*
 * of tensor/tensor.h, which run on the active bertc_cpu_isa() path.
 *
 * Here: the per-ISA register-level vector math, the scalar reference of every
 * row kernel (the fallback on every target and the oracle of the SIMD paths,
 * test/test_kernels_simd.c), the table of one path's row kernels, the GEMM
 * oracle, and the constants the GELU kernels share.
 */
#ifndef BERTC_KERNELS_INTERNAL_H
#define BERTC_KERNELS_INTERNAL_H

#include "tensor/tensor.h"

/* bertc_expf/tanhf/erff at register level, for the SIMD kernels (the
 * algorithm and error table: tensor/vmath.c). Each x86 function carries its
 * target attribute, so the rest of the build stays portable and bertc_cpu_isa()
 * decides at run time. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define BERTC_TARGET_AVX512 __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,fma")))
#define BERTC_TARGET_AVX2 __attribute__((target("avx2,fma")))
BERTC_TARGET_AVX512 __m512 bertc_expf_avx512(__m512 x);
BERTC_TARGET_AVX512 __m512 bertc_tanhf_avx512(__m512 x);
BERTC_TARGET_AVX512 __m512 bertc_erff_avx512(__m512 x);
BERTC_TARGET_AVX2 __m256 bertc_expf_avx2(__m256 x);
BERTC_TARGET_AVX2 __m256 bertc_tanhf_avx2(__m256 x);
BERTC_TARGET_AVX2 __m256 bertc_erff_avx2(__m256 x);
#endif
#if defined(__aarch64__) && defined(__ARM_NEON)
#include <arm_neon.h>
float32x4_t bertc_expf_neon(float32x4_t x);
float32x4_t bertc_tanhf_neon(float32x4_t x);
float32x4_t bertc_erff_neon(float32x4_t x);
#endif

/* The GELU constants, shared by every path. */
#define GELU_SQRT1_2 0.70710678118654752440f      /* 1/sqrt(2) */
#define GELU_SQRT2_PI 0.79788456080286535588f     /* sqrt(2/pi) */
#define GELU_INV_SQRT_2PI 0.39894228040143267794f /* 1/sqrt(2 pi) */
#define GELU_TANH_A 0.044715f

/* The scalar references: same signatures and semantics as the kernel_* of
 * tensor/tensor.h. Softmax sums and LayerNorm mean/variance are accumulated
 * in double here. */
void bertc_kernel_softmax_rows_scalar(float *y, const float *x, int64_t rows, int64_t n);
void bertc_kernel_softmax_rows_backward_scalar(float *dx, const float *y, const float *dy,
                                         int64_t rows, int64_t n, bool accumulate);
void bertc_kernel_log_softmax_rows_scalar(float *y, const float *x, int64_t rows, int64_t n);
void bertc_kernel_log_softmax_rows_backward_scalar(float *dx, const float *y, const float *dy,
                                             int64_t rows, int64_t n, bool accumulate);
float bertc_kernel_add_max_scalar(float *y, const float *b, int64_t n);
double bertc_kernel_exp_sum_scalar(float *y, const float *x, float shift, int64_t n);
void bertc_kernel_layernorm_rows_scalar(float *y, float *mean, float *rstd, const float *x,
                                  const float *gamma, const float *beta,
                                  int64_t rows, int64_t n, float eps);
void bertc_kernel_layernorm_rows_backward_scalar(float *dx, float *dgamma, float *dbeta,
                                           const float *dy, const float *x,
                                           const float *mean, const float *rstd,
                                           const float *gamma, int64_t rows, int64_t n,
                                           bool dx_accumulate);
void bertc_kernel_gelu_scalar(float *y, const float *x, int64_t n);
void bertc_kernel_gelu_backward_scalar(float *dx, const float *x, const float *dy, int64_t n,
                                 bool accumulate);
void bertc_kernel_gelu_tanh_scalar(float *y, const float *x, int64_t n);
void bertc_kernel_gelu_tanh_backward_scalar(float *dx, const float *x, const float *dy,
                                      int64_t n, bool accumulate);
void bertc_kernel_dropout_scalar(const float *a, float *out, uint8_t *keep, int64_t n,
                           uint64_t state, uint64_t threshold, float scale);
void bertc_kernel_dropout_backward_scalar(const uint8_t *keep, const float *dy, float scale,
                                    float *da, int64_t n);
void bertc_kernel_add_inplace_scalar(float *y, const float *x, int64_t n);
void bertc_kernel_axpy_scalar(float *y, float a, const float *x, int64_t n);

void bertc_kernel_adam_scalar(float *p, const float *g, float *m, float *v, int64_t n,
                        const AdamStep *s);
#if defined(__x86_64__) && defined(__GNUC__)
void bertc_kernel_adam_avx512(float *p, const float *g, float *m, float *v, int64_t n,
                        const AdamStep *s);
#endif

/* One path's row kernels as a table (tensor/kernels_dispatch.c picks one).
 * bertc_row_kernels_avx512/avx2 exist on x86-64 builds, bertc_row_kernels_neon on
 * AArch64 builds. */
typedef struct RowKernels {
    void (*softmax_rows)(float *y, const float *x, int64_t rows, int64_t n);
    void (*softmax_rows_backward)(float *dx, const float *y, const float *dy,
                                  int64_t rows, int64_t n, bool accumulate);
    void (*log_softmax_rows)(float *y, const float *x, int64_t rows, int64_t n);
    void (*log_softmax_rows_backward)(float *dx, const float *y, const float *dy,
                                      int64_t rows, int64_t n, bool accumulate);
    float (*add_max)(float *y, const float *b, int64_t n);
    double (*exp_sum)(float *y, const float *x, float shift, int64_t n);
    void (*layernorm_rows)(float *y, float *mean, float *rstd, const float *x,
                           const float *gamma, const float *beta, int64_t rows,
                           int64_t n, float eps);
    void (*layernorm_rows_backward)(float *dx, float *dgamma, float *dbeta,
                                    const float *dy, const float *x, const float *mean,
                                    const float *rstd, const float *gamma, int64_t rows,
                                    int64_t n, bool dx_accumulate);
    void (*gelu)(float *y, const float *x, int64_t n);
    void (*gelu_backward)(float *dx, const float *x, const float *dy, int64_t n,
                          bool accumulate);
    void (*gelu_tanh)(float *y, const float *x, int64_t n);
    void (*gelu_tanh_backward)(float *dx, const float *x, const float *dy, int64_t n,
                               bool accumulate);
    void (*dropout)(const float *a, float *out, uint8_t *keep, int64_t n, uint64_t state,
                    uint64_t threshold, float scale);
    void (*dropout_backward)(const uint8_t *keep, const float *dy, float scale, float *da,
                             int64_t n);
    void (*add_inplace)(float *y, const float *x, int64_t n);
    void (*axpy)(float *y, float a, const float *x, int64_t n);
} RowKernels;

extern const RowKernels bertc_row_kernels_scalar, bertc_row_kernels_avx512, bertc_row_kernels_avx2,
    bertc_row_kernels_neon;
/* The table for a path; the scalar one for a path this build lacks. */
const RowKernels *bertc_row_kernels(CpuIsa isa);

/* The naive triple loop, accumulating in double: the oracle for every faster
 * GEMM. Slow on purpose; use only in tests. */
void bertc_gemm_reference(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                    float alpha, const float *A, int64_t lda, const float *B,
                    int64_t ldb, float beta, float *C, int64_t ldc);

#endif /* BERTC_KERNELS_INTERNAL_H */
