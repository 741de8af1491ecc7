/* test/test_bgemm_mixed.c — the mixed-precision GEMM (tensor/bgemm_mixed.c).
 *
 * bertc_gemm_bf16 must give, bit for bit, the inference GEMM's oracle
 * (bertc_bgemm_reference) on op(A) and bf16(op(B)^T), plus beta C, on every
 * bf16 path this CPU runs, for the four transposes, edge sizes (odd K, M
 * and N off the tile sizes, K past one converted chunk) and 1 or 2 threads;
 * and the product must be close to the float32 one. */
#include "tensor/bgemm_internal.h"
#include "tensor/kernels_internal.h"
#include "test/test_util.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void restore_defaults(void)
{
    bertc_bgemm_set_isa(BGEMM_ISA_COUNT);
    bertc_threads_set_count(2);
}

TestSuite(bgemm_mixed, .fini = restore_defaults);

static float *random_floats(Rng *rng, int64_t n)
{
    float *x = malloc(sizeof(float) * (size_t)n);
    cr_assert(x);
    for (int64_t i = 0; i < n; i++)
        x[i] = (float)bertc_rng_normal(rng);
    return x;
}

/* What bertc_gemm_bf16 must give: op(A) copied to (M, K) float32, op(B)^T
 * rounded to bf16 (N, K), the oracle, then beta C. */
static void expected(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float *A,
                     int64_t lda, const float *B, int64_t ldb, float beta, const float *C0,
                     float *want)
{
    float *a = malloc(sizeof(float) * (size_t)(M * K));
    uint16_t *w = malloc(sizeof(uint16_t) * (size_t)(N * K));
    float *y = malloc(sizeof(float) * (size_t)(M * N));
    cr_assert(a && w && y);
    for (int64_t i = 0; i < M; i++)
        for (int64_t k = 0; k < K; k++)
            a[i * K + k] = ta ? A[k * lda + i] : A[i * lda + k];
    for (int64_t j = 0; j < N; j++)
        for (int64_t k = 0; k < K; k++)
            w[j * K + k] = bertc_bf16_from_f32(tb ? B[j * ldb + k] : B[k * ldb + j]);
    bertc_bgemm_reference(M, a, K, w, N, K, NULL, y, N);
    for (int64_t e = 0; e < M * N; e++) {
        if (beta == 0.0f)
            want[e] = y[e];
        else if (beta == 1.0f)
            want[e] = C0[e] + y[e];
        else
            want[e] = beta * C0[e] + y[e];
    }
    free(a), free(w), free(y);
}

/* The case with op(A) given already in bf16 (bertc_gemm_bf16_rows for A,
 * bertc_gemm_bf16_rows_t for A^T, its bf16 kept at A's own stride): the
 * same bits as bertc_gemm_bf16 on the float32 A. */
static void check_rounded_a(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float *A,
                            int64_t lda, const float *B, int64_t ldb, float beta,
                            const float *C0, const float *want)
{
    float *C = malloc(sizeof(float) * (size_t)(M * N));
    int64_t a_cols = bertc_gemm_bf16_a_cols(K), rows_pad = bertc_gemm_bf16_rows_pad(M);
    size_t n16 = (size_t)(ta ? K * lda : rows_pad * a_cols);
    uint16_t *a16 = calloc(n16, sizeof(uint16_t));
    cr_assert(C && a16);
    memcpy(C, C0, sizeof(float) * (size_t)(M * N));
    if (ta) {
        for (int64_t e = 0; e < K * lda; e++)
            a16[e] = bertc_bf16_from_f32(A[e]);
        bertc_gemm_bf16_rows_t(tb, M, N, K, a16, lda, B, ldb, beta, C, N);
    } else {
        for (int64_t i = 0; i < M; i++)
            for (int64_t k = 0; k < K; k++)
                a16[i * a_cols + k] = bertc_bf16_from_f32(A[i * lda + k]);
        bertc_gemm_bf16_rows(tb, M, N, K, a16, a_cols, B, ldb, beta, C, N);
    }
    for (int64_t e = 0; e < M * N; e++)
        if (memcmp(&C[e], &want[e], sizeof(float)) != 0)
            cr_assert_fail("path %s, bf16 %s, %s M %lld N %lld K %lld beta %g: C[%lld] = %.9g, "
                           "want %.9g", bertc_bgemm_isa_name(bertc_bgemm_isa()),
                           ta ? "A^T" : "A", tb ? "T" : "N", (long long)M, (long long)N,
                           (long long)K, beta, (long long)e, C[e], want[e]);
    free(C), free(a16);
}

/* One case: A and B stored as the transposes say, with a row stride one
 * longer than the row (a stride the code must honour). */
static void check_case(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float beta,
                       int threads)
{
    Rng rng = bertc_rng_seed((uint64_t)(M * 1000003 + N * 1009 + K * 7 + ta * 2 + tb));
    int64_t a_rows = ta ? K : M, a_cols = ta ? M : K, lda = a_cols + 1;
    int64_t b_rows = tb ? N : K, b_cols = tb ? K : N, ldb = b_cols + 1;
    float *A = random_floats(&rng, a_rows * lda), *B = random_floats(&rng, b_rows * ldb);
    float *C = random_floats(&rng, M * N), *C0 = malloc(sizeof(float) * (size_t)(M * N));
    float *want = malloc(sizeof(float) * (size_t)(M * N));
    cr_assert(C0 && want);
    memcpy(C0, C, sizeof(float) * (size_t)(M * N));
    expected(ta, tb, M, N, K, A, lda, B, ldb, beta, C0, want);
    bertc_threads_set_count(threads);
    bertc_gemm_bf16(ta, tb, M, N, K, A, lda, B, ldb, beta, C, N);
    for (int64_t e = 0; e < M * N; e++)
        if (memcmp(&C[e], &want[e], sizeof(float)) != 0)
            cr_assert_fail("path %s, %s%s M %lld N %lld K %lld beta %g, %d threads: C[%lld] = %.9g, "
                     "want %.9g", bertc_bgemm_isa_name(bertc_bgemm_isa()), ta ? "T" : "N",
                     tb ? "T" : "N", (long long)M, (long long)N, (long long)K, beta, threads,
                     (long long)e, C[e], want[e]);
    check_rounded_a(ta, tb, M, N, K, A, lda, B, ldb, beta, C0, want);
    free(A), free(B), free(C), free(C0), free(want);
}

Test(bgemm_mixed, every_path_and_transpose_matches_the_oracle, .timeout = 300)
{
    const int64_t shapes[][3] = {
        {1, 1, 1}, {3, 5, 7}, {17, 49, 33}, {64, 48, 64}, {33, 97, 515}, {130, 100, 1030},
    };
    const float betas[] = {0.0f, 1.0f, 0.5f};
    for (int p = 0; p < BGEMM_ISA_COUNT; p++) {
        if (!bertc_bgemm_isa_supported((BgemmIsa)p))
            continue;
        bertc_bgemm_set_isa((BgemmIsa)p);
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int t = 0; t < 4; t++)
                for (int b = 0; b < 3; b++)
                    check_case(t & 1, t & 2, shapes[s][0], shapes[s][1], shapes[s][2],
                               betas[b], 1 + (int)(s % 2));
    }
}

Test(bgemm_mixed, a_training_shape_is_the_same_with_1_and_2_threads, .timeout = 300)
{
    /* dW = dy^T x of a BERT-small Linear at 8 x 128 tokens: op(A) transposed,
     * large enough that the packing and conversion are split over threads. */
    check_case(true, false, 256, 1024, 1024, 1.0f, 1);
    check_case(true, false, 256, 1024, 1024, 1.0f, 2);
    check_case(false, true, 1024, 256, 1024, 0.0f, 2);
}

Test(bgemm_mixed, close_to_the_float32_product)
{
    Rng rng = bertc_rng_seed(5);
    int64_t M = 40, N = 70, K = 300;
    float *A = random_floats(&rng, M * K), *B = random_floats(&rng, K * N);
    float *C = calloc((size_t)(M * N), sizeof(float)), *R = calloc((size_t)(M * N), sizeof(float));
    cr_assert(C && R);
    bertc_gemm_bf16(false, false, M, N, K, A, K, B, N, 0.0f, C, N);
    bertc_gemm_reference(false, false, M, N, K, 1.0f, A, K, B, N, 0.0f, R, N);
    /* Each bf16 rounding is within 2^-9 relative; a sum of K products of
     * unit normals has a typical size sqrt(K), its error ~ 2^-8 sqrt(K). */
    double worst = 0.0;
    for (int64_t e = 0; e < M * N; e++)
        worst = fmax(worst, fabs((double)C[e] - R[e]));
    cr_assert(worst < 0.02 * sqrt((double)K), "worst |bf16 - fp32| = %g", worst);
    cr_assert(worst > 0.0, "bf16 products should not be exactly the float32 ones");
    free(A), free(B), free(C), free(R);
}

Test(bgemm_mixed, empty_k_scales_c_without_reading_a_or_b)
{
    float C[4] = {1, 2, 3, 4};
    bertc_gemm_bf16(false, false, 2, 2, 0, NULL, 1, NULL, 2, 0.5f, C, 2);
    cr_assert(C[0] == 0.5f && C[3] == 2.0f);
    bertc_gemm_bf16(false, false, 2, 2, 0, NULL, 1, NULL, 2, 0.0f, C, 2);
    cr_assert(C[0] == 0.0f && C[3] == 0.0f);
}
