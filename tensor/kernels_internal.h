/*
 * tensor/kernels_internal.h — private to the tensor/ sources and to the tests and
 * benchmarks that check one instruction-set path against another. Not
 * installed, not included by tensor/tensor.h: a program calls the kernel_*
 * of tensor/tensor.h, which run on the active bertc_cpu_isa() path.
 *
 * Here: the table of one path's row kernels (each kernel's signature, once),
 * the scalar path's table (the fallback on every target and the oracle of the
 * SIMD paths, test/test_kernels_simd.c), the GEMM oracle, and the constants
 * the GELU kernels share. Which path runs: the ISA table, tensor/isa.c.
 */
#ifndef BERTC_KERNELS_INTERNAL_H
#define BERTC_KERNELS_INTERNAL_H

#include "tensor/tensor.h"

/* The GELU constants, shared by every path. */
#define GELU_SQRT2_PI 0.79788456080286535588f     /* sqrt(2/pi) */
#define GELU_INV_SQRT_2PI 0.39894228040143267794f /* 1/sqrt(2 pi) */
#define GELU_TANH_A 0.044715f

/* One path's row kernels as a table: the same signatures and semantics as the
 * bertc_kernel_* of tensor/tensor.h (and bertc_expf_n etc.), which run the
 * active path's table (tensor/kernels_dispatch.c). The scalar table is
 * tensor/kernels.c's; each SIMD path's is tensor/row_kernels_simd.inc
 * compiled with that path's primitives (tensor/kernels_avx2.c, ...).
 * bertc_row_kernels_avx512/avx2 exist on x86-64 builds, bertc_row_kernels_neon
 * on AArch64 builds. */
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
    /* the optimizer's update (bertc_kernel_adam) */
    void (*adam)(float *p, const float *g, float *m, float *v, int64_t n, const AdamStep *s);
    /* y[i] = f(x[i]): bertc_expf_n, bertc_tanhf_n, bertc_erff_n, bertc_normal_cdf_n */
    void (*expf_n)(float *y, const float *x, int64_t n);
    void (*tanhf_n)(float *y, const float *x, int64_t n);
    void (*erff_n)(float *y, const float *x, int64_t n);
    void (*normal_cdf_n)(float *y, const float *x, int64_t n);
} RowKernels;

extern const RowKernels bertc_row_kernels_scalar, bertc_row_kernels_avx512, bertc_row_kernels_avx2,
    bertc_row_kernels_neon;
/* The table of a path (its row of the ISA table); the scalar one for a path
 * this build lacks. */
const RowKernels *bertc_row_kernels(CpuIsa isa);

/* The naive triple loop, accumulating in double: the oracle for every faster
 * GEMM. Slow on purpose; use only in tests. */
void bertc_gemm_reference(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                    float alpha, const float *A, int64_t lda, const float *B,
                    int64_t ldb, float beta, float *C, int64_t ldc);

#endif /* BERTC_KERNELS_INTERNAL_H */
