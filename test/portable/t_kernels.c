/* test/portable/t_kernels.c — GEMM and the row kernels on every path this
 * target has (scalar everywhere, NEON on aarch64, AVX2/AVX-512 on x86-64),
 * against the naive references, on odd sizes. */
#include "test/portable/portable.h"
#include "tensor/kernels_internal.h"

#include <math.h>

static void fill(Rng *r, float *x, int64_t n, float scale)
{
    for (int64_t i = 0; i < n; i++)
        x[i] = scale * (float)(2.0 * bertc_rng_uniform(r) - 1.0);
}

/* One GEMM case against bertc_gemm_reference; |c - ref| <= 1e-6 K + 1e-5 |ref|. */
static void gemm_case(CpuIsa isa, bool ta, bool tb, int64_t M, int64_t N, int64_t K,
                      float alpha, float beta)
{
    Arena *a = pt_arena();
    Rng r = bertc_rng_seed((uint64_t)(M * 10007 + N * 101 + K));
    int64_t lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 1, ldc = N + 2;
    float *A = bertc_arena_alloc(a, sizeof(float) * (size_t)((ta ? K : M) * lda));
    float *B = bertc_arena_alloc(a, sizeof(float) * (size_t)((tb ? N : K) * ldb));
    float *C = bertc_arena_alloc(a, sizeof(float) * (size_t)(M * ldc));
    float *R = bertc_arena_alloc(a, sizeof(float) * (size_t)(M * ldc));
    fill(&r, A, (ta ? K : M) * lda, 1.0f);
    fill(&r, B, (tb ? N : K) * ldb, 1.0f);
    fill(&r, C, M * ldc, 1.0f);
    for (int64_t i = 0; i < M * ldc; i++)
        R[i] = C[i];
    bertc_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    bertc_gemm_reference(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, R, ldc);
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++)
            if (!pt_close(C[i * ldc + j], R[i * ldc + j], 1e-6 * (double)K, 1e-5)) {
                pt_check(false, "bertc_gemm %s ta=%d tb=%d M=%lld N=%lld K=%lld: C[%lld,%lld] = %.9g, "
                         "reference %.9g", bertc_cpu_isa_name(isa), ta, tb, (long long)M,
                         (long long)N, (long long)K, (long long)i, (long long)j,
                         (double)C[i * ldc + j], (double)R[i * ldc + j]);
                return;
            }
    pt_check(true, "bertc_gemm");
}

void test_gemm(void)
{
    const int64_t sizes[] = {1, 3, 7, 16, 17, 33, 67};
    const int64_t bert[][3] = {{48, 128, 32}, {48, 32, 128}, {16, 96, 32}, {128, 128, 300}};
    for (int isa = ISA_SCALAR; isa < ISA_COUNT; isa++) {
        if (!bertc_cpu_isa_supported((CpuIsa)isa))
            continue;
        bertc_cpu_set_isa((CpuIsa)isa);
        int before = 0;
        for (int t = 0; t < 4; t++)
            for (size_t i = 0; i < 7; i++)
                for (size_t j = 0; j < 7; j += 2)
                    for (size_t k = 0; k < 7; k += 3, before++)
                        gemm_case((CpuIsa)isa, t & 1, t >> 1, sizes[i], sizes[j], sizes[k],
                                  k % 2 ? 0.5f : 1.0f, j % 4 ? 0.0f : 1.5f);
        for (size_t b = 0; b < 4; b++, before++)
            gemm_case((CpuIsa)isa, b & 1, b == 2, bert[b][0], bert[b][1], bert[b][2], 1.0f,
                      0.0f);
        pt_print("bertc_gemm %s: %d cases", bertc_cpu_isa_name((CpuIsa)isa), before);
    }
    bertc_cpu_set_isa(ISA_SCALAR);
}

/* |got - want| <= 2e-6 + 2e-5 |want| over n floats. */
static void expect_rows(const char *what, CpuIsa isa, int64_t n, const float *got,
                        const float *want, int64_t count)
{
    for (int64_t i = 0; i < count; i++)
        if (!pt_close(got[i], want[i], 2e-6, 2e-5)) {
            pt_check(false, "%s %s n=%lld: [%lld] = %.9g, scalar %.9g", what, bertc_cpu_isa_name(isa),
                     (long long)n, (long long)i, (double)got[i], (double)want[i]);
            return;
        }
    pt_check(true, "%s", what);
}

static void rows_case(CpuIsa isa, int64_t n)
{
    Arena *a = pt_arena();
    const RowKernels *k = bertc_row_kernels(isa), *s = &bertc_row_kernels_scalar;
    const int64_t rows = 3, count = rows * n;
    Rng r = bertc_rng_seed((uint64_t)n);
    float *x = bertc_arena_alloc(a, sizeof(float) * (size_t)count);
    float *dy = bertc_arena_alloc(a, sizeof(float) * (size_t)count);
    float *g = bertc_arena_alloc(a, sizeof(float) * (size_t)n);
    float *b = bertc_arena_alloc(a, sizeof(float) * (size_t)n);
    float *y1 = bertc_arena_calloc(a, (size_t)count, sizeof(float));
    float *y2 = bertc_arena_calloc(a, (size_t)count, sizeof(float));
    fill(&r, x, count, 4.0f);
    fill(&r, dy, count, 1.0f);
    fill(&r, g, n, 1.0f);
    fill(&r, b, n, 1.0f);
    k->softmax_rows(y1, x, rows, n);
    s->softmax_rows(y2, x, rows, n);
    expect_rows("softmax", isa, n, y1, y2, count);
    k->log_softmax_rows(y1, x, rows, n);
    s->log_softmax_rows(y2, x, rows, n);
    expect_rows("log_softmax", isa, n, y1, y2, count);
    k->layernorm_rows(y1, NULL, NULL, x, g, b, rows, n, 1e-12f);
    s->layernorm_rows(y2, NULL, NULL, x, g, b, rows, n, 1e-12f);
    expect_rows("layernorm", isa, n, y1, y2, count);
    k->gelu(y1, x, count);
    s->gelu(y2, x, count);
    expect_rows("gelu", isa, n, y1, y2, count);
    k->gelu_tanh(y1, x, count);
    s->gelu_tanh(y2, x, count);
    expect_rows("gelu_tanh", isa, n, y1, y2, count);
    for (int64_t i = 0; i < n; i++)
        y1[i] = y2[i] = x[i];
    float max1 = k->add_max(y1, b, n), max2 = s->add_max(y2, b, n);
    pt_check(max1 == max2, "add_max %s n=%lld: max %.9g, scalar %.9g", bertc_cpu_isa_name(isa),
             (long long)n, (double)max1, (double)max2);
    double sum1 = k->exp_sum(y1, y1, max1, n), sum2 = s->exp_sum(y2, y2, max2, n);
    pt_check(pt_close(sum1, sum2, 0.0, 1e-6), "exp_sum %s n=%lld: sum %.17g, scalar %.17g",
             bertc_cpu_isa_name(isa), (long long)n, sum1, sum2);
    expect_rows("exp_sum", isa, n, y1, y2, n);
    for (int64_t i = 0; i < count; i++)
        y1[i] = y2[i] = dy[i];
    k->axpy(y1, -0.37f, x, count);
    s->axpy(y2, -0.37f, x, count);
    k->add_inplace(y1, x, count);
    s->add_inplace(y2, x, count);
    expect_rows("axpy, add_inplace", isa, n, y1, y2, count);
    /* the path writes y1, never reading its NaNs; the reference adds into zeros */
    for (int64_t i = 0; i < count; i++) {
        y1[i] = NAN;
        y2[i] = 0.0f;
    }
    k->gelu_backward(y1, x, dy, count, false);
    s->gelu_backward(y2, x, dy, count, true);
    expect_rows("bertc_gelu_backward", isa, n, y1, y2, count);
}

void test_row_kernels(void)
{
    const int64_t sizes[] = {1, 2, 3, 5, 7, 8, 15, 16, 17, 31, 33, 64, 67, 128};
    for (int isa = ISA_SCALAR; isa < ISA_COUNT; isa++)
        if (bertc_cpu_isa_supported((CpuIsa)isa))
            for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
                rows_case((CpuIsa)isa, sizes[i]);
}
