/* tensor/kernels_dispatch.c — the public row kernels: each runs the table of
 * the active cpu_isa() path (scalar, AVX-512, AVX2 or NEON). */
#include "tensor/tensor.h"

const RowKernels row_kernels_scalar = {
    .softmax_rows = kernel_softmax_rows_scalar,
    .softmax_rows_backward = kernel_softmax_rows_backward_scalar,
    .log_softmax_rows = kernel_log_softmax_rows_scalar,
    .log_softmax_rows_backward = kernel_log_softmax_rows_backward_scalar,
    .layernorm_rows = kernel_layernorm_rows_scalar,
    .layernorm_rows_backward = kernel_layernorm_rows_backward_scalar,
    .gelu = kernel_gelu_scalar,
    .gelu_backward = kernel_gelu_backward_scalar,
    .gelu_tanh = kernel_gelu_tanh_scalar,
    .gelu_tanh_backward = kernel_gelu_tanh_backward_scalar,
};

const RowKernels *row_kernels(CpuIsa isa)
{
    switch (isa) {
#if defined(__x86_64__) && defined(__GNUC__)
    case ISA_AVX512:
        return &row_kernels_avx512;
    case ISA_AVX2:
        return &row_kernels_avx2;
#endif
#if defined(__aarch64__) && defined(__ARM_NEON)
    case ISA_NEON:
        return &row_kernels_neon;
#endif
    default:
        return &row_kernels_scalar;
    }
}

void kernel_softmax_rows(float *y, const float *x, int64_t rows, int64_t n)
{
    row_kernels(cpu_isa())->softmax_rows(y, x, rows, n);
}

void kernel_softmax_rows_backward(float *dx, const float *y, const float *dy,
                                  int64_t rows, int64_t n)
{
    row_kernels(cpu_isa())->softmax_rows_backward(dx, y, dy, rows, n);
}

void kernel_log_softmax_rows(float *y, const float *x, int64_t rows, int64_t n)
{
    row_kernels(cpu_isa())->log_softmax_rows(y, x, rows, n);
}

void kernel_log_softmax_rows_backward(float *dx, const float *y, const float *dy,
                                      int64_t rows, int64_t n)
{
    row_kernels(cpu_isa())->log_softmax_rows_backward(dx, y, dy, rows, n);
}

void kernel_layernorm_rows(float *y, float *mean, float *rstd, const float *x,
                           const float *gamma, const float *beta,
                           int64_t rows, int64_t n, float eps)
{
    row_kernels(cpu_isa())->layernorm_rows(y, mean, rstd, x, gamma, beta, rows, n, eps);
}

void kernel_layernorm_rows_backward(float *dx, float *dgamma, float *dbeta,
                                    const float *dy, const float *x,
                                    const float *mean, const float *rstd,
                                    const float *gamma, int64_t rows, int64_t n)
{
    row_kernels(cpu_isa())->layernorm_rows_backward(dx, dgamma, dbeta, dy, x, mean, rstd,
                                                    gamma, rows, n);
}

void kernel_gelu(float *y, const float *x, int64_t n)
{
    row_kernels(cpu_isa())->gelu(y, x, n);
}

void kernel_gelu_backward(float *dx, const float *x, const float *dy, int64_t n)
{
    row_kernels(cpu_isa())->gelu_backward(dx, x, dy, n);
}

void kernel_gelu_tanh(float *y, const float *x, int64_t n)
{
    row_kernels(cpu_isa())->gelu_tanh(y, x, n);
}

void kernel_gelu_tanh_backward(float *dx, const float *x, const float *dy, int64_t n)
{
    row_kernels(cpu_isa())->gelu_tanh_backward(dx, x, dy, n);
}
