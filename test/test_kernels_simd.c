/* test/test_kernels_simd.c — every SIMD path of the row kernels this CPU can
 * run (forced in turn with bertc_cpu_set_isa) equals the scalar reference within a
 * stated tolerance, on sizes 1..67 (every tail length) and BERT sizes
 * (n = 768, 3072; rows up to 128). Backward kernels must accumulate, and
 * with accumulate = false write dx exactly as accumulating into zeros would. */
#include "tensor/kernels_internal.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* |simd - scalar| <= ATOL + RTOL max|scalar| over the compared array: the
 * form of the model parity tolerance (1e-4 max|ref| + 1e-6), 10x tighter.
 * The paths differ by an ulp or two per exp/erf/tanh (FMA), and the SIMD
 * paths sum in float lanes where the scalar reference sums in double, so a
 * sum that cancels (LayerNorm's centred outputs, dgamma over 128 rows) is
 * only as exact as the size of its terms. */
#define ATOL 1e-6f
#define RTOL 1e-5f

/* Every SIMD path (every row of the ISA table but the scalar one) this CPU runs. */
static bool simd_path(int isa)
{
    return isa != ISA_SCALAR && bertc_cpu_isa_supported((CpuIsa)isa);
}

typedef struct Bufs {
    float *x, *y, *g, *b, *dy, *dx, *dg, *db, *want, *want_g, *want_b, *mean, *rstd;
} Bufs;

/* The largest case: rows = 128, n = 3072. */
#define MAX_ELEMS (128 * 3072)

static Bufs bufs;
static Rng rng;

static void fill(float *p, int64_t n, float lo, float hi)
{
    for (int64_t i = 0; i < n; i++)
        p[i] = lo + (hi - lo) * (float)bertc_rng_uniform(&rng);
}

static void setup(void)
{
    float **all[] = {&bufs.x, &bufs.y, &bufs.g, &bufs.b, &bufs.dy, &bufs.dx, &bufs.dg,
                     &bufs.db, &bufs.want, &bufs.want_g, &bufs.want_b, &bufs.mean,
                     &bufs.rstd};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        *all[i] = malloc(MAX_ELEMS * sizeof(float));
        cr_assert(*all[i]);
    }
    rng = bertc_rng_seed(2024);
}

static void teardown(void)
{
    float *all[] = {bufs.x, bufs.y, bufs.g, bufs.b, bufs.dy, bufs.dx, bufs.dg, bufs.db,
                    bufs.want, bufs.want_g, bufs.want_b, bufs.mean, bufs.rstd};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        free(all[i]);
}

TestSuite(kernels, .init = setup, .fini = teardown);

/* Asserts got == want within tolerance; names the first index that is not. */
static void expect_close(const char *fn, const char *what, CpuIsa isa, int64_t rows,
                         int64_t n, const float *got, const float *want, int64_t count)
{
    float scale = 0.0f;
    for (int64_t i = 0; i < count; i++)
        scale = fabsf(want[i]) > scale ? fabsf(want[i]) : scale;
    float tol = ATOL + RTOL * scale;
    for (int64_t i = 0; i < count; i++) {
        if (!(fabsf(got[i] - want[i]) <= tol)) {
            cr_expect(false, "%s [%s] rows=%lld n=%lld: %s[%lld] expected %.9g, got %.9g "
                      "(tol %.2g)", fn, bertc_cpu_isa_name(isa), (long long)rows, (long long)n,
                      what, (long long)i, (double)want[i], (double)got[i], (double)tol);
            return;
        }
    }
}

/* The sizes: every n in 1..67 with rows 1 and 3, then BERT rows. */
typedef void (*CaseFn)(CpuIsa isa, int64_t rows, int64_t n);

static void for_each_size(CaseFn fn)
{
    CpuIsa orig = bertc_cpu_isa();
    static const int64_t bert[][2] = {{1, 768}, {128, 768}, {1, 3072}, {128, 3072},
                                      {128, 128}, {12, 128}};
    for (int isa = 0; isa < ISA_COUNT; isa++) {
        if (!simd_path(isa))
            continue;
        for (int64_t n = 1; n <= 67; n++) {
            fn((CpuIsa)isa, 1, n);
            fn((CpuIsa)isa, 3, n);
        }
        for (size_t k = 0; k < sizeof bert / sizeof bert[0]; k++)
            fn((CpuIsa)isa, bert[k][0], bert[k][1]);
    }
    bertc_cpu_set_isa(orig);
}

/* ---- GELU ---------------------------------------------------------------------- */

static void gelu_case(CpuIsa isa, int64_t rows, int64_t n)
{
    int64_t m = rows * n;
    fill(bufs.x, m, -8.0f, 8.0f);
    bertc_row_kernels_scalar.gelu(bufs.want, bufs.x, m);
    bertc_cpu_set_isa(isa);
    bertc_kernel_gelu(bufs.y, bufs.x, m);
    expect_close("bertc_kernel_gelu", "y", isa, rows, n, bufs.y, bufs.want, m);
    bertc_row_kernels_scalar.gelu_tanh(bufs.want, bufs.x, m);
    bertc_kernel_gelu_tanh(bufs.y, bufs.x, m);
    expect_close("bertc_kernel_gelu_tanh", "y", isa, rows, n, bufs.y, bufs.want, m);
}

static void gelu_backward_case(CpuIsa isa, int64_t rows, int64_t n)
{
    int64_t m = rows * n;
    fill(bufs.x, m, -8.0f, 8.0f);
    fill(bufs.dy, m, -1.0f, 1.0f);
    fill(bufs.want, m, -1.0f, 1.0f); /* dx starts non-zero: the kernels accumulate */
    memcpy(bufs.dx, bufs.want, m * sizeof(float));
    bertc_row_kernels_scalar.gelu_backward(bufs.want, bufs.x, bufs.dy, m, true);
    bertc_cpu_set_isa(isa);
    bertc_kernel_gelu_backward(bufs.dx, bufs.x, bufs.dy, m, true);
    expect_close("bertc_kernel_gelu_backward", "dx", isa, rows, n, bufs.dx, bufs.want, m);
    memcpy(bufs.dx, bufs.want, m * sizeof(float));
    bertc_row_kernels_scalar.gelu_tanh_backward(bufs.want, bufs.x, bufs.dy, m, true);
    bertc_kernel_gelu_tanh_backward(bufs.dx, bufs.x, bufs.dy, m, true);
    expect_close("bertc_kernel_gelu_tanh_backward", "dx", isa, rows, n, bufs.dx, bufs.want, m);
}

Test(kernels, gelu_matches_scalar) { for_each_size(gelu_case); }
Test(kernels, gelu_backward_matches_scalar) { for_each_size(gelu_backward_case); }

/* ---- softmax and log_softmax ----------------------------------------------------- */

static void softmax_case(CpuIsa isa, int64_t rows, int64_t n)
{
    int64_t m = rows * n;
    fill(bufs.x, m, -10.0f, 10.0f);
    bertc_row_kernels_scalar.softmax_rows(bufs.want, bufs.x, rows, n);
    bertc_cpu_set_isa(isa);
    memcpy(bufs.y, bufs.x, m * sizeof(float));
    bertc_kernel_softmax_rows(bufs.y, bufs.y, rows, n); /* in place: y aliases x */
    expect_close("bertc_kernel_softmax_rows", "y", isa, rows, n, bufs.y, bufs.want, m);
    bertc_row_kernels_scalar.log_softmax_rows(bufs.want, bufs.x, rows, n);
    bertc_kernel_log_softmax_rows(bufs.y, bufs.x, rows, n);
    expect_close("bertc_kernel_log_softmax_rows", "y", isa, rows, n, bufs.y, bufs.want, m);
}

static void softmax_backward_case(CpuIsa isa, int64_t rows, int64_t n)
{
    int64_t m = rows * n;
    fill(bufs.x, m, -10.0f, 10.0f);
    fill(bufs.dy, m, -1.0f, 1.0f);
    fill(bufs.want, m, -1.0f, 1.0f);
    memcpy(bufs.dx, bufs.want, m * sizeof(float));
    bertc_row_kernels_scalar.softmax_rows(bufs.y, bufs.x, rows, n);
    bertc_row_kernels_scalar.softmax_rows_backward(bufs.want, bufs.y, bufs.dy, rows, n, true);
    bertc_cpu_set_isa(isa);
    bertc_kernel_softmax_rows_backward(bufs.dx, bufs.y, bufs.dy, rows, n, true);
    expect_close("bertc_kernel_softmax_rows_backward", "dx", isa, rows, n, bufs.dx, bufs.want, m);
    memcpy(bufs.dx, bufs.want, m * sizeof(float));
    bertc_row_kernels_scalar.log_softmax_rows(bufs.y, bufs.x, rows, n);
    bertc_row_kernels_scalar.log_softmax_rows_backward(bufs.want, bufs.y, bufs.dy, rows, n, true);
    bertc_kernel_log_softmax_rows_backward(bufs.dx, bufs.y, bufs.dy, rows, n, true);
    expect_close("bertc_kernel_log_softmax_rows_backward", "dx", isa, rows, n, bufs.dx, bufs.want,
                 m);
}

Test(kernels, softmax_matches_scalar) { for_each_size(softmax_case); }
Test(kernels, softmax_backward_matches_scalar) { for_each_size(softmax_backward_case); }

/* ---- LayerNorm ----------------------------------------------------------------- */

/* x is (rows, n) around a mean of 3 (BERT activations are not centred). */
static void layernorm_case(CpuIsa isa, int64_t rows, int64_t n)
{
    int64_t m = rows * n;
    float mean[128], rstd[128];
    fill(bufs.x, m, 1.0f, 5.0f);
    fill(bufs.g, n, 0.5f, 1.5f);
    fill(bufs.b, n, -0.5f, 0.5f);
    for (int affine = 0; affine < 2; affine++) {
        const float *g = affine ? bufs.g : NULL, *b = affine ? bufs.b : NULL;
        bertc_row_kernels_scalar.layernorm_rows(bufs.want, bufs.mean, bufs.rstd, bufs.x, g, b,
                                                rows, n, 1e-12f);
        bertc_cpu_set_isa(isa);
        bertc_kernel_layernorm_rows(bufs.y, mean, rstd, bufs.x, g, b, rows, n, 1e-12f);
        bertc_cpu_set_isa(ISA_SCALAR);
        expect_close("bertc_kernel_layernorm_rows", "y", isa, rows, n, bufs.y, bufs.want, m);
        expect_close("bertc_kernel_layernorm_rows", "mean", isa, rows, n, mean, bufs.mean, rows);
        expect_close("bertc_kernel_layernorm_rows", "rstd", isa, rows, n, rstd, bufs.rstd, rows);
    }
}

static void layernorm_backward_case(CpuIsa isa, int64_t rows, int64_t n)
{
    int64_t m = rows * n;
    fill(bufs.x, m, 1.0f, 5.0f);
    fill(bufs.g, n, 0.5f, 1.5f);
    fill(bufs.dy, m, -1.0f, 1.0f);
    fill(bufs.want, m, -1.0f, 1.0f);
    fill(bufs.want_g, n, -1.0f, 1.0f);
    fill(bufs.want_b, n, -1.0f, 1.0f);
    memcpy(bufs.dx, bufs.want, m * sizeof(float));
    memcpy(bufs.dg, bufs.want_g, n * sizeof(float));
    memcpy(bufs.db, bufs.want_b, n * sizeof(float));
    bertc_row_kernels_scalar.layernorm_rows(bufs.y, bufs.mean, bufs.rstd, bufs.x, bufs.g, NULL,
                                            rows, n, 1e-5f);
    bertc_row_kernels_scalar.layernorm_rows_backward(bufs.want, bufs.want_g, bufs.want_b, bufs.dy,
                                                     bufs.x, bufs.mean, bufs.rstd, bufs.g, rows,
                                                     n, true);
    bertc_cpu_set_isa(isa);
    bertc_kernel_layernorm_rows_backward(bufs.dx, bufs.dg, bufs.db, bufs.dy, bufs.x, bufs.mean,
                                   bufs.rstd, bufs.g, rows, n, true);
    expect_close("bertc_kernel_layernorm_rows_backward", "dx", isa, rows, n, bufs.dx, bufs.want, m);
    expect_close("bertc_kernel_layernorm_rows_backward", "dgamma", isa, rows, n, bufs.dg,
                 bufs.want_g, n);
    expect_close("bertc_kernel_layernorm_rows_backward", "dbeta", isa, rows, n, bufs.db,
                 bufs.want_b, n);
}

Test(kernels, layernorm_matches_scalar) { for_each_size(layernorm_case); }
Test(kernels, layernorm_backward_matches_scalar) { for_each_size(layernorm_backward_case); }

/* ---- a long row's softmax passes (the MLM loss) ---------------------------------- */

/* Each row of x (rows, n) plus the bias b (n), or without it: the sum and the
 * max are exact IEEE operations, so y and the max must equal the scalar
 * reference bit for bit; exp(y - max) is as close as the exps, and its
 * double sum within 1e-6 relative (an ulp of exp per term at most). */
static void add_max_exp_sum_case(CpuIsa isa, int64_t rows, int64_t n)
{
    fill(bufs.x, rows * n, -10.0f, 10.0f);
    fill(bufs.b, n, -1.0f, 1.0f);
    for (int with_bias = 0; with_bias < 2; with_bias++) {
        const float *b = with_bias ? bufs.b : NULL;
        for (int64_t r = 0; r < rows; r++) {
            float *want = bufs.want + r * n, *y = bufs.y + r * n;
            memcpy(want, bufs.x + r * n, n * sizeof(float));
            memcpy(y, bufs.x + r * n, n * sizeof(float));
            float want_max = bertc_row_kernels_scalar.add_max(want, b, n);
            bertc_cpu_set_isa(isa);
            float max = bertc_kernel_add_max(y, b, n);
            bertc_cpu_set_isa(ISA_SCALAR);
            cr_expect(max == want_max && memcmp(y, want, n * sizeof(float)) == 0,
                      "bertc_kernel_add_max [%s] n=%lld bias=%d row %lld: max expected %.9g, got "
                      "%.9g, or y differs", bertc_cpu_isa_name(isa), (long long)n, with_bias,
                      (long long)r, (double)want_max, (double)max);
            double want_sum = bertc_row_kernels_scalar.exp_sum(want, want, want_max, n);
            bertc_cpu_set_isa(isa);
            double sum = bertc_kernel_exp_sum(y, y, max, n);
            bertc_cpu_set_isa(ISA_SCALAR);
            cr_expect(fabs(sum - want_sum) <= 1e-6 * want_sum,
                      "bertc_kernel_exp_sum [%s] n=%lld row %lld: sum expected %.17g, got %.17g",
                      bertc_cpu_isa_name(isa), (long long)n, (long long)r, want_sum, sum);
            expect_close("bertc_kernel_exp_sum", "y", isa, rows, n, y, want, n);
        }
    }
}

/* The BERT sizes, and one row of BERT's 30522-word vocabulary. */
Test(kernels, add_max_exp_sum_match_scalar)
{
    CpuIsa orig = bertc_cpu_isa();
    for_each_size(add_max_exp_sum_case);
    for (int isa = 0; isa < ISA_COUNT; isa++)
        if (simd_path(isa))
            add_max_exp_sum_case((CpuIsa)isa, 1, 30522);
    bertc_cpu_set_isa(orig);
}

/* ---- y += x, y += a x ------------------------------------------------------------ */

/* Bit for bit: every path does the scalar reference's IEEE operations. */
static void expect_same(const char *fn, CpuIsa isa, int64_t n, const float *got,
                        const float *want)
{
    for (int64_t i = 0; i < n; i++)
        if (memcmp(&got[i], &want[i], sizeof(float)) != 0) {
            cr_expect(false, "%s [%s] n=%lld: y[%lld] expected %.9g, got %.9g", fn,
                      bertc_cpu_isa_name(isa), (long long)n, (long long)i, (double)want[i],
                      (double)got[i]);
            return;
        }
}

static void add_axpy_case(CpuIsa isa, int64_t rows, int64_t n)
{
    int64_t m = rows * n;
    fill(bufs.x, m, -10.0f, 10.0f);
    fill(bufs.want, m, -10.0f, 10.0f);
    memcpy(bufs.y, bufs.want, m * sizeof(float));
    bertc_row_kernels_scalar.add_inplace(bufs.want, bufs.x, m);
    bertc_cpu_set_isa(isa);
    bertc_kernel_add_inplace(bufs.y, bufs.x, m);
    expect_same("bertc_kernel_add_inplace", isa, m, bufs.y, bufs.want);
    bertc_row_kernels_scalar.axpy(bufs.want, -0.37f, bufs.x, m);
    bertc_kernel_axpy(bufs.y, -0.37f, bufs.x, m);
    expect_same("bertc_kernel_axpy", isa, m, bufs.y, bufs.want);
}

Test(kernels, add_inplace_axpy_match_scalar) { for_each_size(add_axpy_case); }
/* ---- Writing instead of accumulating --------------------------------------------- */

typedef enum { BW_GELU, BW_GELU_TANH, BW_SOFTMAX, BW_LOG_SOFTMAX, BW_LAYERNORM, BW_COUNT } Backward;

static const char *const backward_names[BW_COUNT] = {
    "bertc_gelu_backward", "bertc_gelu_tanh_backward", "softmax_rows_backward",
    "log_softmax_rows_backward", "layernorm_rows_backward"};

/* One backward kernel into dx: the scalar reference, or the active path.
 * Inputs: x (and y = softmax or log_softmax of x), dy, gamma, mean, rstd. */
static void run_backward(Backward k, bool scalar, float *dx, bool accumulate, int64_t rows,
                         int64_t n)
{
    int64_t m = rows * n;
    const RowKernels *s = &bertc_row_kernels_scalar;
    switch (k) {
    case BW_GELU:
        (scalar ? s->gelu_backward : bertc_kernel_gelu_backward)(dx, bufs.x, bufs.dy, m,
                                                                 accumulate);
        break;
    case BW_GELU_TANH:
        (scalar ? s->gelu_tanh_backward : bertc_kernel_gelu_tanh_backward)(dx, bufs.x, bufs.dy,
                                                                           m, accumulate);
        break;
    case BW_SOFTMAX:
        s->softmax_rows(bufs.y, bufs.x, rows, n);
        (scalar ? s->softmax_rows_backward : bertc_kernel_softmax_rows_backward)(
            dx, bufs.y, bufs.dy, rows, n, accumulate);
        break;
    case BW_LOG_SOFTMAX:
        s->log_softmax_rows(bufs.y, bufs.x, rows, n);
        (scalar ? s->log_softmax_rows_backward : bertc_kernel_log_softmax_rows_backward)(
            dx, bufs.y, bufs.dy, rows, n, accumulate);
        break;
    case BW_LAYERNORM:
        (scalar ? s->layernorm_rows_backward : bertc_kernel_layernorm_rows_backward)(
            dx, NULL, NULL, bufs.dy, bufs.x, bufs.mean, bufs.rstd, bufs.g, rows, n,
            accumulate);
        break;
    case BW_COUNT:
        break;
    }
}

/* accumulate = false must store every element of dx without reading it: into a
 * NaN-filled dx it gives, bit for bit, what accumulating into zeros gives. */
static void write_case(CpuIsa isa, int64_t rows, int64_t n)
{
    int64_t m = rows * n;
    fill(bufs.x, m, -4.0f, 4.0f);
    fill(bufs.dy, m, -1.0f, 1.0f);
    fill(bufs.g, n, 0.5f, 1.5f);
    bertc_row_kernels_scalar.layernorm_rows(bufs.want_g, bufs.mean, bufs.rstd, bufs.x, bufs.g,
                                            NULL, rows, n, 1e-5f);
    for (int k = 0; k < BW_COUNT; k++)
        for (int scalar = 0; scalar < 2; scalar++) {
            bertc_cpu_set_isa(scalar ? ISA_SCALAR : isa);
            memset(bufs.want, 0, (size_t)m * sizeof(float));
            run_backward(k, scalar, bufs.want, true, rows, n);
            for (int64_t i = 0; i < m; i++)
                bufs.dx[i] = NAN;
            run_backward(k, scalar, bufs.dx, false, rows, n);
            for (int64_t i = 0; i < m; i++)
                if (memcmp(&bufs.dx[i], &bufs.want[i], sizeof(float)) != 0) {
                    cr_expect(false, "kernel_%s [%s] rows=%lld n=%lld: dx[%lld] written "
                              "%.9g, accumulated into zeros %.9g", backward_names[k],
                              scalar ? "scalar" : bertc_cpu_isa_name(isa), (long long)rows,
                              (long long)n, (long long)i, (double)bufs.dx[i],
                              (double)bufs.want[i]);
                    break;
                }
        }
}

Test(kernels, backward_write_equals_accumulate_into_zeros) { for_each_size(write_case); }
