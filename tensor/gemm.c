/* tensor/gemm.c — C = alpha * op(A) op(B) + beta * C, row-major.
 *
 * This file holds the portable scalar GEMM (a cache-friendly loop order, no
 * intrinsics) and the double-precision reference used as the test oracle. */
#include "tensor/tensor.h"

#include <string.h>

/* Element (i, p) of op(A) and (p, j) of op(B). */
static inline float a_at(bool trans_a, const float *A, int64_t lda, int64_t i, int64_t p)
{
    return trans_a ? A[p * lda + i] : A[i * lda + p];
}

static inline float b_at(bool trans_b, const float *B, int64_t ldb, int64_t p, int64_t j)
{
    return trans_b ? B[j * ldb + p] : B[p * ldb + j];
}

void gemm_reference(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                    float alpha, const float *A, int64_t lda, const float *B,
                    int64_t ldb, float beta, float *C, int64_t ldc)
{
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double acc = 0.0;
            for (int64_t p = 0; p < K; p++)
                acc += (double)a_at(trans_a, A, lda, i, p) * b_at(trans_b, B, ldb, p, j);
            double c = beta == 0.0f ? 0.0 : (double)beta * C[i * ldc + j];
            C[i * ldc + j] = (float)(alpha * acc + c);
        }
}

/* C = beta * C, with beta == 0 writing zeros (never reading C). */
static void scale_c(int64_t M, int64_t N, float beta, float *C, int64_t ldc)
{
    for (int64_t i = 0; i < M; i++) {
        float *c = C + i * ldc;
        if (beta == 0.0f)
            memset(c, 0, sizeof(float) * (size_t)N);
        else if (beta != 1.0f)
            for (int64_t j = 0; j < N; j++)
                c[j] *= beta;
    }
}

/* The scalar path. Loop orders are chosen so the innermost loop walks memory
 * contiguously: for NN and TN it is "C row += a * B row" (i-p-j); for NT and
 * TT a dot product of a row of A with a row of B. */
static void gemm_scalar(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                        float alpha, const float *A, int64_t lda, const float *B,
                        int64_t ldb, float beta, float *C, int64_t ldc)
{
    scale_c(M, N, beta, C, ldc);
    if (!trans_b) {
        for (int64_t i = 0; i < M; i++) {
            float *c = C + i * ldc;
            for (int64_t p = 0; p < K; p++) {
                float a = alpha * a_at(trans_a, A, lda, i, p);
                const float *b = B + p * ldb;
                for (int64_t j = 0; j < N; j++)
                    c[j] += a * b[j];
            }
        }
    } else {
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                const float *b = B + j * ldb;
                float acc = 0.0f;
                for (int64_t p = 0; p < K; p++)
                    acc += a_at(trans_a, A, lda, i, p) * b[p];
                C[i * ldc + j] += alpha * acc;
            }
    }
}

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
          const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
          float *C, int64_t ldc)
{
    if (M <= 0 || N <= 0)
        return;
    gemm_scalar(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void gemm_batched(bool trans_a, bool trans_b, int64_t batch, int64_t M, int64_t N,
                  int64_t K, float alpha, const float *A, int64_t lda, int64_t stride_a,
                  const float *B, int64_t ldb, int64_t stride_b, float beta, float *C,
                  int64_t ldc, int64_t stride_c)
{
    for (int64_t i = 0; i < batch; i++)
        gemm(trans_a, trans_b, M, N, K, alpha, A + i * stride_a, lda, B + i * stride_b,
             ldb, beta, C + i * stride_c, ldc);
}
