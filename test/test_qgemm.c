/* test/test_qgemm.c — the int8 GEMM of dynamic quantisation (tensor/qgemm*.c).
 *
 * The scheme's definition (tensor/tensor.h) is checked on hand-worked rows
 * (rounding ties to even, clamping, zero and tiny rows). Then every int8 path
 * this CPU runs is compared with the scalar oracle bertc_qgemm_reference bit
 * for bit on many shapes (M = 1, 3, 17, 128; N not a multiple of any NR; K not
 * a multiple of 4 or 64; strides wider than the rows; bias or none), with 1
 * and 2 threads; integer inputs of scale 1 check the int32 sums exactly
 * against sums the test makes itself; a weight packed for one path and used
 * with another is a fatal error. */
#include "tensor/qgemm_internal.h"
#include "test/test_util.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The paths this CPU runs, scalar first. */
static int available_paths(QgemmIsa *out)
{
    int n = 0;
    for (int i = 0; i < QGEMM_ISA_COUNT; i++)
        if (bertc_qgemm_isa_supported((QgemmIsa)i))
            out[n++] = (QgemmIsa)i;
    return n;
}

static void restore_defaults(void)
{
    bertc_qgemm_set_isa(QGEMM_ISA_COUNT);
    bertc_threads_set_count(2);
}

TestSuite(qgemm, .fini = restore_defaults);

/* ---- quantising rows ----------------------------------------------------- */

/* One row through bertc_quantize_rows on every path: q and the scale. */
static void expect_row(const char *what, const float *x, int64_t n, const int8_t *want_q,
                       float want_scale)
{
    QgemmIsa paths[QGEMM_ISA_COUNT];
    int np = available_paths(paths);
    for (int p = 0; p < np; p++) {
        bertc_qgemm_set_isa(paths[p]);
        int8_t q[16];
        float scale = -1.0f;
        bertc_quantize_rows(x, 1, n, n, q, &scale);
        cr_expect_eq(scale, want_scale, "%s, path %s: scale %.9g, expected %.9g", what,
                     bertc_qgemm_isa_name(paths[p]), scale, want_scale);
        for (int64_t k = 0; k < n; k++)
            cr_expect_eq(q[k], want_q[k], "%s, path %s: q[%lld] = %d for x = %g, expected %d",
                         what, bertc_qgemm_isa_name(paths[p]), (long long)k, q[k], x[k],
                         want_q[k]);
    }
}

Test(qgemm, quantize_rounds_ties_to_even)
{
    /* amax 127: scale 1, q = rne(x) */
    const float x[] = {127.0f, 63.5f, 62.5f, -63.5f, -0.5f, 0.5f, 1.5f, 0.0f, -2.5f, 3.49f};
    const int8_t q[] = {127, 64, 62, -64, 0, 0, 2, 0, -2, 3};
    expect_row("amax 127", x, 10, q, 1.0f);
}

Test(qgemm, quantize_clamps_to_127_never_128)
{
    /* amax 254 at a negative entry: scale 2; -254 * 0.5 = -127 exactly */
    const float x[] = {-254.0f, 1.0f, 3.0f, 253.0f, -5.0f};
    const int8_t q[] = {-127, 0, 2, 126, -2};
    expect_row("amax 254", x, 5, q, 2.0f);
    /* random rows reach +-127 and never -128 */
    Rng rng = bertc_rng_seed(7);
    float r[16];
    for (int t = 0; t < 200; t++) {
        test_fill_uniform(r, 16, &rng, -3.0f, 3.0f);
        int8_t qr[16];
        float s;
        bertc_quantize_rows(r, 1, 16, 16, qr, &s);
        int maxabs = 0;
        for (int k = 0; k < 16; k++) {
            cr_assert(qr[k] >= -127, "q[%d] = %d for x = %g: -128 must never occur", k, qr[k], r[k]);
            maxabs = abs(qr[k]) > maxabs ? abs(qr[k]) : maxabs;
        }
        cr_expect_eq(maxabs, 127, "row %d: the largest |q| is %d, expected 127", t, maxabs);
    }
}

Test(qgemm, quantize_zero_and_tiny_rows)
{
    const float zeros[] = {0.0f, -0.0f, 0.0f};
    const float tiny[] = {1e-31f, -5e-32f, 0.0f};
    const int8_t q[] = {0, 0, 0};
    expect_row("all zeros", zeros, 3, q, 1.0f);
    expect_row("max |x| below BERTC_QUANT_MIN_AMAX", tiny, 3, q, 1.0f);
}

/* Rows with a stride: q is packed (row stride cols), the padding of X unread. */
Test(qgemm, quantize_rows_with_stride)
{
    float X[2][5] = {{1.0f, -3.0f, 4.0f, 99.0f, 99.0f}, {0.3f, 0.25f, -1.0f, 99.0f, 99.0f}};
    int8_t q[6];
    float s[2];
    bertc_quantize_rows(&X[0][0], 2, 3, 5, q, s);
    const int8_t want[6] = {32, -95, 127, 38, 32, -127};   /* 31.75, -95.25; 38.1, 31.75 */
    for (int k = 0; k < 6; k++)
        cr_expect_eq(q[k], want[k], "q[%d] = %d, expected %d", k, q[k], want[k]);
    cr_expect_eq(s[0], 4.0f / 127.0f, "scale[0] = %.9g", s[0]);
    cr_expect_eq(s[1], 1.0f / 127.0f, "scale[1] = %.9g", s[1]);
}

/* Rows of every length from 1 to 100 and 768, with ties (values on a grid
 * of halves after scaling) and random values: every path's quantiser (the
 * SIMD blocks of 8, 16, 32 and their tails) gives the scalar path's bytes
 * and scales. */
Test(qgemm, every_path_quantizes_like_scalar)
{
    QgemmIsa paths[QGEMM_ISA_COUNT];
    int np = available_paths(paths);
    Rng rng = bertc_rng_seed(5);
    float x[768], s_want, s_got;
    int8_t want[768], got[768];
    for (int64_t n = 1; n <= 101; n++) {
        int64_t cols = n == 101 ? 768 : n;
        for (int64_t k = 0; k < cols; k++)
            x[k] = k % 3 == 0 ? 0.5f * (float)bertc_rng_randint(&rng, -254, 254)
                              : (float)(254.0 * bertc_rng_uniform(&rng) - 127.0);
        x[cols / 2] = 127.0f;   /* scale 1: the halves stay exact ties */
        bertc_qgemm_set_isa(QGEMM_ISA_SCALAR);
        bertc_quantize_rows(x, 1, cols, cols, want, &s_want);
        for (int p = 0; p < np; p++) {
            bertc_qgemm_set_isa(paths[p]);
            bertc_quantize_rows(x, 1, cols, cols, got, &s_got);
            cr_assert_eq(s_got, s_want, "cols %lld, path %s: scale %.9g, scalar %.9g",
                         (long long)cols, bertc_qgemm_isa_name(paths[p]), s_got, s_want);
            for (int64_t k = 0; k < cols; k++)
                cr_assert_eq(got[k], want[k], "cols %lld, path %s: q[%lld] = %d for x = %.9g, "
                             "scalar %d", (long long)cols, bertc_qgemm_isa_name(paths[p]),
                             (long long)k, got[k], x[k], want[k]);
        }
    }
}

/* ---- every path against the oracle --------------------------------------- */

typedef struct QCase {
    int64_t M, N, K, lda_extra, ldc_extra;
    bool bias;
} QCase;

static const QCase cases[] = {
    {1, 1, 1, 0, 0, true},
    {1, 768, 768, 0, 0, true},
    {3, 50, 7, 3, 5, false},          /* K not a multiple of 4, N of any NR */
    {17, 97, 130, 1, 2, true},        /* K not a multiple of 64 */
    {17, 48, 64, 0, 0, false},
    {128, 200, 300, 4, 1, true},
    {128, 768, 768, 0, 0, true},      /* BERT-base Q, K, V, attention output */
    {9, 3072, 100, 0, 3, true},       /* 64 panels of 48 */
    {130, 31, 3075, 2, 0, false},     /* long K, edge rows and columns */
    {64, 500, 1000, 0, 0, true},      /* 32M multiply-adds: 2 threads, edge panels */
};

typedef struct QData {
    float *A, *W, *sw, *bias, *want, *got;
    int8_t *qw;
    void *mem;
    int64_t lda, ldc;
} QData;

static void *xmalloc(size_t bytes)
{
    void *p = aligned_alloc(64, (bytes + 63) / 64 * 64);
    cr_assert(p != NULL, "out of memory for %zu bytes", bytes);
    return p;
}

static QData make_data(const QCase *c, Rng *rng)
{
    QData d = {.lda = c->K + c->lda_extra, .ldc = c->N + c->ldc_extra};
    d.A = xmalloc(sizeof(float) * (size_t)(c->M * d.lda));
    d.W = xmalloc(sizeof(float) * (size_t)(c->N * c->K));
    d.sw = xmalloc(sizeof(float) * (size_t)c->N);
    d.bias = xmalloc(sizeof(float) * (size_t)c->N);
    d.want = xmalloc(sizeof(float) * (size_t)(c->M * d.ldc));
    d.got = xmalloc(sizeof(float) * (size_t)(c->M * d.ldc));
    d.qw = xmalloc((size_t)(c->N * c->K));
    d.mem = xmalloc(bertc_qgemm_packed_bytes(c->N, c->K));
    test_fill_uniform(d.A, c->M * d.lda, rng, -2.0f, 2.0f);
    test_fill_uniform(d.W, c->N * c->K, rng, -0.5f, 0.5f);
    test_fill_uniform(d.bias, c->N, rng, -1.0f, 1.0f);
    bertc_qgemm_set_isa(QGEMM_ISA_SCALAR);
    bertc_quantize_rows(d.W, c->N, c->K, c->K, d.qw, d.sw);
    bertc_qgemm_reference(c->M, d.A, d.lda, d.qw, d.sw, c->N, c->K, c->bias ? d.bias : NULL,
                          d.want, d.ldc);
    return d;
}

static void free_data(QData *d)
{
    free(d->A), free(d->W), free(d->sw), free(d->bias), free(d->want), free(d->got);
    free(d->qw), free(d->mem);
}

/* Y on `path` with `threads` threads; the stride padding of Y must stay untouched. */
static void run_path(const QCase *c, QData *d, QgemmIsa path, int threads)
{
    bertc_qgemm_set_isa(path);
    bertc_threads_set_count(threads);
    QuantPackedB pb;
    bertc_qgemm_pack_b(d->qw, d->sw, c->N, c->K, d->mem, &pb);
    for (int64_t i = 0; i < c->M * d->ldc; i++)
        d->got[i] = 12345.0f;
    bertc_qgemm(c->M, d->A, d->lda, &pb, c->bias ? d->bias : NULL, d->got, d->ldc);
    for (int64_t i = 0; i < c->M; i++)
        for (int64_t j = 0; j < d->ldc; j++) {
            float want = j < c->N ? d->want[i * d->ldc + j] : 12345.0f;
            float got = d->got[i * d->ldc + j];
            if (memcmp(&want, &got, sizeof want) != 0)
                cr_assert_fail("bertc_qgemm M=%lld N=%lld K=%lld lda=%lld ldc=%lld bias=%d "
                               "path=%s threads=%d: Y[%lld][%lld] = %.9g, expected %.9g (%s)",
                               (long long)c->M, (long long)c->N, (long long)c->K,
                               (long long)d->lda, (long long)d->ldc, c->bias,
                               bertc_qgemm_isa_name(path), threads, (long long)i, (long long)j,
                               got, want, j < c->N ? "bertc_qgemm_reference" : "stride padding");
        }
}

Test(qgemm, every_path_matches_the_reference_bitwise, .timeout = 120)
{
    QgemmIsa paths[QGEMM_ISA_COUNT];
    int np = available_paths(paths);
    Rng rng = bertc_rng_seed(16);
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        QData d = make_data(&cases[t], &rng);
        for (int p = 0; p < np; p++)
            for (int threads = 1; threads <= 2; threads++)
                run_path(&cases[t], &d, paths[p], threads);
        free_data(&d);
    }
}

/* A bertc_qgemm_many case's product d (of case c) reads d0's A: d gets that A
 * (d0 and d have the same M and row stride) and its oracle Y again. */
static void share_a(const QCase *c, QData *d, const QData *d0)
{
    memcpy(d->A, d0->A, sizeof(float) * (size_t)(c->M * d->lda));
    bertc_qgemm_set_isa(QGEMM_ISA_SCALAR);
    bertc_qgemm_reference(c->M, d->A, d->lda, d->qw, d->sw, c->N, c->K, c->bias ? d->bias : NULL,
                          d->want, d->ldc);
}

/* The n products for the active path: each W packed, its Y (stride padding
 * included) filled with 12345 to show what is left untouched; no act. */
static void pack_products(int n, const QCase *c, QData *d, QuantPackedB *pb, QgemmProduct *prod)
{
    for (int k = 0; k < n; k++) {
        bertc_qgemm_pack_b(d[k].qw, d[k].sw, c[k].N, c[k].K, d[k].mem, &pb[k]);
        prod[k] = (QgemmProduct){.pb = &pb[k], .bias = c[k].bias ? d[k].bias : NULL,
                                 .C = d[k].got, .ldc = d[k].ldc, .act = NULL};
        for (int64_t i = 0; i < c[k].M * d[k].ldc; i++)
            d[k].got[i] = 12345.0f;
    }
}

/* bertc_qgemm_many: three products of one A (Q, K and V's shape, and one
 * with N not a multiple of any NR, no bias, a wider Y stride) each match the
 * oracle bit for bit on every path, 1 and 2 threads. */
Test(qgemm, many_products_of_one_a_match_the_reference_bitwise, .timeout = 120)
{
    const QCase c[3] = {{130, 96, 200, 3, 0, true},
                        {130, 50, 200, 3, 7, false},
                        {130, 300, 200, 3, 1, true}};
    Rng rng = bertc_rng_seed(61);
    QData d[3];
    for (int k = 0; k < 3; k++) {
        d[k] = make_data(&c[k], &rng);
        if (k > 0)   /* one A for all three */
            share_a(&c[k], &d[k], &d[0]);
    }
    QgemmIsa paths[QGEMM_ISA_COUNT];
    int np = available_paths(paths);
    for (int p = 0; p < np; p++)
        for (int threads = 1; threads <= 2; threads++) {
            bertc_qgemm_set_isa(paths[p]);
            bertc_threads_set_count(threads);
            QuantPackedB pb[3];
            QgemmProduct prod[3];
            pack_products(3, c, d, pb, prod);
            bertc_qgemm_many(c[0].M, d[0].A, d[0].lda, prod, 3);
            for (int k = 0; k < 3; k++)
                for (int64_t i = 0; i < c[k].M; i++)
                    for (int64_t j = 0; j < d[k].ldc; j++) {
                        float want = j < c[k].N ? d[k].want[i * d[k].ldc + j] : 12345.0f;
                        float got = d[k].got[i * d[k].ldc + j];
                        if (memcmp(&want, &got, sizeof want) != 0)
                            cr_assert_fail("bertc_qgemm_many product %d (N=%lld) path=%s "
                                           "threads=%d: Y[%lld][%lld] = %.9g, expected %.9g",
                                           k, (long long)c[k].N, bertc_qgemm_isa_name(paths[p]),
                                           threads, (long long)i, (long long)j, got, want);
                    }
        }
    for (int k = 0; k < 3; k++)
        free_data(&d[k]);
}

/* act in bertc_qgemm_many: each row of Y is the oracle's row with GELU
 * applied (within an ulp: the kernel's lanes and its scalar tail fall where
 * the work items cut the row, which a whole-row call does not), on every
 * path, 1 and 2 threads, with a product without act beside it untouched. */
Test(qgemm, an_activation_runs_on_the_products_rows, .timeout = 60)
{
    const QCase c[2] = {{67, 3072, 96, 0, 0, true}, {67, 50, 96, 0, 0, true}};
    Rng rng = bertc_rng_seed(62);
    QData d[2];
    d[0] = make_data(&c[0], &rng);
    d[1] = make_data(&c[1], &rng);
    share_a(&c[1], &d[1], &d[0]);
    for (int64_t i = 0; i < c[0].M; i++)
        bertc_kernel_gelu(d[0].want + i * d[0].ldc, d[0].want + i * d[0].ldc, c[0].N);
    QgemmIsa paths[QGEMM_ISA_COUNT];
    int np = available_paths(paths);
    for (int p = 0; p < np; p++)
        for (int threads = 1; threads <= 2; threads++) {
            bertc_qgemm_set_isa(paths[p]);
            bertc_threads_set_count(threads);
            QuantPackedB pb[2];
            QgemmProduct prod[2];
            pack_products(2, c, d, pb, prod);
            prod[0].act = bertc_kernel_gelu;
            bertc_qgemm_many(c[0].M, d[0].A, d[0].lda, prod, 2);
            for (int k = 0; k < 2; k++)
                for (int64_t i = 0; i < c[k].M * d[k].ldc; i++) {
                    float want = d[k].want[i], got = d[k].got[i];
                    float ulp = fabsf(nextafterf(want, INFINITY) - want);
                    cr_assert(k == 0 ? fabsf(got - want) <= ulp : memcmp(&got, &want, 4) == 0,
                              "product %d path=%s threads=%d: Y[%lld] = %.9g, expected %.9g", k,
                              bertc_qgemm_isa_name(paths[p]), threads, (long long)i, got, want);
                }
        }
    free_data(&d[0]);
    free_data(&d[1]);
}

typedef struct ManyCtx {
    QgemmProduct prod[2];
    float *A;
} ManyCtx;

static void run_many(void *ctx)
{
    ManyCtx *m = ctx;
    bertc_qgemm_many(1, m->A, 16, m->prod, 2);
}

Test(qgemm, many_products_that_read_different_k_are_refused)
{
    int8_t qw[4 * 16] = {1, 2, 3};
    float sw[4] = {1, 1, 1, 1}, A[16] = {1}, Y[8];
    void *mem8 = xmalloc(bertc_qgemm_packed_bytes(4, 8)), *mem16 = xmalloc(bertc_qgemm_packed_bytes(4, 16));
    QuantPackedB pb8, pb16;
    bertc_qgemm_pack_b(qw, sw, 4, 16, mem16, &pb16);
    bertc_qgemm_pack_b(qw, sw, 4, 8, mem8, &pb8);
    ManyCtx ctx = {.prod = {{.pb = &pb16, .C = Y, .ldc = 4, .act = NULL},
                            {.pb = &pb8, .C = Y + 4, .ldc = 4, .act = NULL}},
                   .A = A};
    char msg[BERTC_ERROR_LEN];
    cr_assert(test_catch_fatal(run_many, &ctx, msg, sizeof msg),
              "bertc_qgemm_many ran W (4, 8) on an A of K = 16");
    cr_expect(strstr(msg, "product 1's W is (4, 8)") != NULL, "message: %s", msg);
    free(mem8), free(mem16);
}

/* NaN and Inf in A give meaningless but finite-index results, the same on
 * every path as in the oracle (the clamps send a NaN to -127 everywhere). */
Test(qgemm, non_finite_rows_agree_on_every_path)
{
    const QCase c = {5, 20, 40, 0, 0, true};
    Rng rng = bertc_rng_seed(9);
    QData d = make_data(&c, &rng);
    d.A[0 * d.lda + 3] = NAN;
    d.A[1 * d.lda + 0] = INFINITY;
    d.A[2 * d.lda + 39] = -INFINITY;
    for (int64_t k = 0; k < c.K; k++)
        d.A[3 * d.lda + k] = NAN;
    bertc_qgemm_set_isa(QGEMM_ISA_SCALAR);
    bertc_qgemm_reference(c.M, d.A, d.lda, d.qw, d.sw, c.N, c.K, d.bias, d.want, d.ldc);
    QgemmIsa paths[QGEMM_ISA_COUNT];
    int np = available_paths(paths);
    for (int p = 0; p < np; p++)
        run_path(&c, &d, paths[p], 1);
    free_data(&d);
}

/* ---- the int32 sums, exactly ---------------------------------------------- */

/* A with integer entries and a 127 in every row (scale 1, q = A), W with
 * scale 1: Y is (float) of the exact sum, which the test computes in int64.
 * Entries of +-127 make the largest sums (K = 1040: |acc| < 2^24, so float
 * is exact too) and would expose any saturation in a pmaddubsw path. */
static void exact_case(int64_t M, int64_t N, int64_t K, bool extreme, Rng *rng)
{
    float *A = xmalloc(sizeof(float) * (size_t)(M * K)), *Y = xmalloc(sizeof(float) * (size_t)(M * N));
    int8_t *qw = xmalloc((size_t)(N * K));
    float *sw = xmalloc(sizeof(float) * (size_t)N);
    void *mem = xmalloc(bertc_qgemm_packed_bytes(N, K));
    for (int64_t i = 0; i < M * K; i++)
        A[i] = extreme ? (bertc_rng_uniform(rng) < 0.5 ? -127.0f : 127.0f)
                       : (float)bertc_rng_randint(rng, -127, 127);
    for (int64_t i = 0; i < M; i++)
        A[i * K + (i % K)] = 127.0f;
    for (int64_t j = 0; j < N * K; j++)
        qw[j] = (int8_t)(extreme ? (bertc_rng_uniform(rng) < 0.5 ? -127 : 127)
                                 : bertc_rng_randint(rng, -127, 127));
    for (int64_t j = 0; j < N; j++)
        sw[j] = 1.0f;
    QgemmIsa paths[QGEMM_ISA_COUNT];
    int np = available_paths(paths);
    for (int p = 0; p < np; p++) {
        bertc_qgemm_set_isa(paths[p]);
        QuantPackedB pb;
        bertc_qgemm_pack_b(qw, sw, N, K, mem, &pb);
        bertc_qgemm(M, A, K, &pb, NULL, Y, N);
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                int64_t acc = 0;
                for (int64_t k = 0; k < K; k++)
                    acc += (int64_t)A[i * K + k] * qw[j * K + k];
                cr_assert_eq(Y[i * N + j], (float)acc,
                             "path %s, M=%lld N=%lld K=%lld%s: Y[%lld][%lld] = %.9g, the exact "
                             "int sum is %lld", bertc_qgemm_isa_name(paths[p]), (long long)M,
                             (long long)N, (long long)K, extreme ? " (entries +-127)" : "",
                             (long long)i, (long long)j, Y[i * N + j], (long long)acc);
            }
    }
    free(A), free(Y), free(qw), free(sw), free(mem);
}

Test(qgemm, int32_sums_are_exact)
{
    Rng rng = bertc_rng_seed(32);
    exact_case(5, 53, 1040, true, &rng);
    exact_case(19, 100, 257, false, &rng);
    exact_case(8, 48, 3072, false, &rng);
}

/* ---- choosing the path ---------------------------------------------------- */

typedef struct MismatchCtx {
    QuantPackedB *pb;
    float *A, *Y;
} MismatchCtx;

static void run_mismatched(void *ctx)
{
    MismatchCtx *m = ctx;
    bertc_qgemm(1, m->A, m->pb->K, m->pb, NULL, m->Y, m->pb->N);
}

Test(qgemm, a_weight_packed_for_another_path_is_refused)
{
    QgemmIsa paths[QGEMM_ISA_COUNT];
    int np = available_paths(paths);
    cr_assert(np >= 2, "this test needs a SIMD int8 path besides scalar; this CPU has none");
    int8_t qw[4 * 8] = {1, 2, 3};
    float sw[4] = {1, 1, 1, 1}, A[8] = {1}, Y[4];
    void *mem = xmalloc(bertc_qgemm_packed_bytes(4, 8));
    QuantPackedB pb;
    bertc_qgemm_set_isa(QGEMM_ISA_SCALAR);
    bertc_qgemm_pack_b(qw, sw, 4, 8, mem, &pb);
    bertc_qgemm_set_isa(paths[np - 1]);
    MismatchCtx ctx = {.pb = &pb, .A = A, .Y = Y};
    char msg[BERTC_ERROR_LEN];
    cr_assert(test_catch_fatal(run_mismatched, &ctx, msg, sizeof msg),
              "bertc_qgemm ran a weight packed for 'scalar' on the '%s' path",
              bertc_qgemm_isa_name(paths[np - 1]));
    cr_expect(strstr(msg, "packed for the 'scalar' int8 path") != NULL, "message: %s", msg);
    free(mem);
}

static void run_short_stride(void *ctx)
{
    MismatchCtx *m = ctx;
    bertc_qgemm(2, m->A, m->pb->K - 1, m->pb, NULL, m->Y, m->pb->N);
}

Test(qgemm, a_stride_shorter_than_a_row_is_refused)
{
    int8_t qw[4 * 8] = {1, 2, 3};
    float sw[4] = {1, 1, 1, 1}, A[16] = {1}, Y[8];
    void *mem = xmalloc(bertc_qgemm_packed_bytes(4, 8));
    QuantPackedB pb;
    bertc_qgemm_pack_b(qw, sw, 4, 8, mem, &pb);
    MismatchCtx ctx = {.pb = &pb, .A = A, .Y = Y};
    char msg[BERTC_ERROR_LEN];
    cr_assert(test_catch_fatal(run_short_stride, &ctx, msg, sizeof msg),
              "bertc_qgemm ran with lda 7 < K 8");
    cr_expect(strstr(msg, "row stride 7") != NULL, "message: %s", msg);
    free(mem);
}

/* With the fp32 path forced to avx2 (the laptop case), the int8 default uses
 * no AVX-512. */
Test(qgemm, default_path_follows_the_fp32_path)
{
    CpuIsa orig = bertc_cpu_isa();
    if (bertc_cpu_isa_supported(ISA_AVX2)) {
        bertc_cpu_set_isa(ISA_AVX2);
        QgemmIsa q = bertc_qgemm_isa();
        cr_expect(q == QGEMM_ISA_AVXVNNI || q == QGEMM_ISA_AVX2,
                  "BERTC_ISA=avx2 but the int8 path is '%s'", bertc_qgemm_isa_name(q));
    }
    bertc_cpu_set_isa(ISA_SCALAR);
    cr_expect_eq(bertc_qgemm_isa(), QGEMM_ISA_SCALAR, "fp32 scalar, int8 '%s'",
                 bertc_qgemm_isa_name(bertc_qgemm_isa()));
    bertc_cpu_set_isa(orig);
}

Test(qgemm, bertc_check_env_names_a_bad_int8_path)
{
    BertcError err = {{0}};
    setenv("BERTC_INT8_ISA", "avx9000", 1);
    cr_expect_eq(bertc_check_env(&err), -1, "BERTC_INT8_ISA=avx9000 was accepted");
    cr_expect(strstr(err.msg, "BERTC_INT8_ISA=avx9000") != NULL, "message: %s", err.msg);
    QgemmIsa missing = QGEMM_ISA_COUNT;
    for (int i = 0; i < QGEMM_ISA_COUNT; i++)
        if (!bertc_qgemm_isa_supported((QgemmIsa)i))
            missing = (QgemmIsa)i;
    if (missing != QGEMM_ISA_COUNT) {
        setenv("BERTC_INT8_ISA", bertc_qgemm_isa_name(missing), 1);
        cr_expect_eq(bertc_check_env(&err), -1, "BERTC_INT8_ISA=%s (unsupported) was accepted",
                     bertc_qgemm_isa_name(missing));
        cr_expect(strstr(err.msg, "cannot run") != NULL, "message: %s", err.msg);
    }
    setenv("BERTC_INT8_ISA", "scalar", 1);
    cr_expect_eq(bertc_check_env(&err), 0, "BERTC_INT8_ISA=scalar refused: %s", err.msg);
    bertc_qgemm_set_isa(QGEMM_ISA_COUNT);
    cr_expect_eq(bertc_qgemm_isa(), QGEMM_ISA_SCALAR, "BERTC_INT8_ISA=scalar not followed");
    unsetenv("BERTC_INT8_ISA");
}
