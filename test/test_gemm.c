/* test/test_gemm.c — every GEMM path against bertc_gemm_reference (double-accumulating).
 *
 * Each ISA path the CPU supports is forced in turn with bertc_cpu_set_isa and
 * checked on: every size 1..67 in each dimension, random triples with padded
 * leading dimensions, all four transpose combinations, alpha/beta variants
 * (beta = 0 over a NaN-filled C), the BERT shapes, threaded vs one thread.
 *
 * Two kinds of check:
 *   exact  — small-integer data: every product and partial sum is an integer
 *            below 2^24, so any correct summation order gives the exact value,
 *            and the result must equal the reference bit for bit;
 *   bound  — uniform(-1, 1) data: float summation of K products in any order
 *            errs by at most (K + 4) u sum_p |a_ip b_pj| (u = 2^-24; Higham's
 *            gamma_K plus the alpha/beta roundings), plus u |ref| for rounding
 *            the double reference. The bound uses sum |a||b| computed by
 *            bertc_gemm_reference on |A| and |B|, so it tracks each entry. */
#include "tensor/kernels_internal.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct Case {
    bool ta, tb;
    int64_t M, N, K;
    float alpha, beta;
    int64_t pad;      /* extra floats on every leading dimension */
    bool integers;    /* small-integer data: exact check */
} Case;

/* A case's operands: A is (M, K) or (K, M) when ta; B is (K, N) or (N, K). */
typedef struct Operands {
    float *A, *B, *C0;
    int64_t lda, ldb, ldc, a_rows, b_rows;
} Operands;

static float draw(Rng *rng, bool integers)
{
    return integers ? (float)bertc_rng_randint(rng, -3, 3) : (float)(2.0 * bertc_rng_uniform(rng) - 1.0);
}

static float *filled(int64_t n, Rng *rng, bool integers)
{
    float *x = malloc(sizeof(float) * (size_t)n);
    cr_assert(x != NULL, "out of memory for %lld floats", (long long)n);
    for (int64_t i = 0; i < n; i++)
        x[i] = draw(rng, integers);
    return x;
}

static Operands make_operands(const Case *c, Rng *rng)
{
    Operands o;
    o.a_rows = c->ta ? c->K : c->M;
    o.lda = (c->ta ? c->M : c->K) + c->pad;
    o.b_rows = c->tb ? c->N : c->K;
    o.ldb = (c->tb ? c->K : c->N) + c->pad;
    o.ldc = c->N + c->pad;
    o.A = filled(o.a_rows * o.lda, rng, c->integers);
    o.B = filled(o.b_rows * o.ldb, rng, c->integers);
    o.C0 = filled(c->M * o.ldc, rng, c->integers);
    if (c->beta == 0.0f) /* BLAS: C is not read, so NaNs must not leak */
        for (int64_t i = 0; i < c->M * o.ldc; i++)
            o.C0[i] = NAN;
    return o;
}

static void free_operands(Operands *o)
{
    free(o->A);
    free(o->B);
    free(o->C0);
}

static float *copy_of(const float *x, int64_t n)
{
    float *y = malloc(sizeof(float) * (size_t)n);
    cr_assert(y != NULL);
    memcpy(y, x, sizeof(float) * (size_t)n);
    return y;
}

static float *abs_copy(const float *x, int64_t n)
{
    float *y = copy_of(x, n);
    for (int64_t i = 0; i < n; i++)
        y[i] = fabsf(y[i]);
    return y;
}

static const char *op_name(const Case *c)
{
    static const char *names[] = {"NN", "NT", "TN", "TT"};
    return names[c->ta * 2 + c->tb];
}

/* Rows [i0, i0 + rows) of C: bertc_gemm() against bertc_gemm_reference. Padding columns of
 * C must be left untouched. */
static void check_rows(const Case *c, const Operands *o, const float *got, int64_t i0,
                       int64_t rows)
{
    const float *a = c->ta ? o->A + i0 : o->A + i0 * o->lda;
    float *want = copy_of(o->C0 + i0 * o->ldc, rows * o->ldc);
    bertc_gemm_reference(c->ta, c->tb, rows, c->N, c->K, c->alpha, a, o->lda, o->B, o->ldb, c->beta,
                   want, o->ldc);
    float *abs_a = abs_copy(o->A, o->a_rows * o->lda), *abs_b = abs_copy(o->B, o->b_rows * o->ldb);
    float *mag = malloc(sizeof(float) * (size_t)(rows * o->ldc));
    const float *abs_a_rows = c->ta ? abs_a + i0 : abs_a + i0 * o->lda;
    bertc_gemm_reference(c->ta, c->tb, rows, c->N, c->K, 1.0f, abs_a_rows, o->lda, abs_b, o->ldb, 0.0f,
                   mag, o->ldc);
    const double u = ldexp(1.0, -24);
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < o->ldc; j++) {
            int64_t at = i * o->ldc + j;
            float w = j < c->N ? want[at] : o->C0[(i0 + i) * o->ldc + j];
            float g = got[(i0 + i) * o->ldc + j];
            double tol = 0.0;
            if (!c->integers && j < c->N) {
                double c0 = c->beta == 0.0f ? 0.0 : fabs(c->beta * o->C0[(i0 + i) * o->ldc + j]);
                tol = (double)(c->K + 4) * u * (fabs(c->alpha) * mag[at] + c0) + u * fabs(w);
            }
            bool same = (isnan(w) && isnan(g)) || fabs((double)g - w) <= tol;
            if (!same)
                cr_assert_fail("bertc_gemm M=%lld N=%lld K=%lld op=%s isa=%s alpha=%g beta=%g "
                               "pad=%lld: C[%lld][%lld] expected %.9g, actual %.9g (tol %.3g)",
                               (long long)c->M, (long long)c->N, (long long)c->K, op_name(c),
                               bertc_cpu_isa_name(bertc_cpu_isa()), c->alpha, c->beta, (long long)c->pad,
                               (long long)(i0 + i), (long long)j, w, g, tol);
        }
    free(want);
    free(abs_a);
    free(abs_b);
    free(mag);
}

/* Runs bertc_gemm() on the case; returns C (M, ldc), caller frees. */
static float *run_gemm(const Case *c, const Operands *o)
{
    float *C = copy_of(o->C0, c->M * o->ldc);
    bertc_gemm(c->ta, c->tb, c->M, c->N, c->K, c->alpha, o->A, o->lda, o->B, o->ldb, c->beta, C,
         o->ldc);
    return C;
}

/* The whole of C checked when it is small; else a sample of rows (edges of the
 * MR and MC blocks among them). */
static void check_case(const Case *c, uint64_t seed)
{
    Rng rng = bertc_rng_seed(seed);
    Operands o = make_operands(c, &rng);
    float *got = run_gemm(c, &o);
    if (c->M * c->N * c->K <= (1 << 22)) {
        check_rows(c, &o, got, 0, c->M);
    } else {
        const int64_t rows[] = {0, 1, 5, 6, 7, 8, 63, 64, 127, 128, 129, c->M / 2, c->M - 1};
        for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++)
            if (rows[r] < c->M)
                check_rows(c, &o, got, rows[r], 1);
    }
    free(got);
    free_operands(&o);
}

/* The ISA paths this CPU can run, each forced in turn by for_each_isa. */
typedef void (*IsaTest)(void);

static void for_each_isa(IsaTest test)
{
    CpuIsa saved = bertc_cpu_isa();
    for (int isa = ISA_SCALAR; isa < ISA_COUNT; isa++)
        if (bertc_cpu_isa_supported((CpuIsa)isa)) {
            bertc_cpu_set_isa((CpuIsa)isa);
            test();
        }
    bertc_cpu_set_isa(saved);
}

static void all_ops(Case c, uint64_t seed)
{
    for (int op = 0; op < 4; op++) {
        c.ta = op & 2;
        c.tb = op & 1;
        check_case(&c, seed + (uint64_t)op);
    }
}

/* ------------------------------------------------------------------------ */

/* Every M, N and K in 1..67 (with the other two from a few values), exact. */
static void sizes_1_to_67(void)
{
    const int64_t others[] = {1, 13, 67};
    for (int64_t d = 1; d <= 67; d++)
        for (int x = 0; x < 3; x++) {
            int64_t o1 = others[x], o2 = others[(x + 1) % 3];
            Case c = {.alpha = 1.0f, .beta = 0.0f, .integers = true};
            c.M = d, c.N = o1, c.K = o2;
            all_ops(c, (uint64_t)(d * 10 + x));
            c.M = o1, c.N = d, c.K = o2;
            all_ops(c, (uint64_t)(d * 10 + x + 1000));
            c.M = o1, c.N = o2, c.K = d;
            all_ops(c, (uint64_t)(d * 10 + x + 2000));
        }
}

Test(gemm, every_size_1_to_67_exact) { for_each_isa(sizes_1_to_67); }

/* Random triples in 1..67, padded leading dims, float data and alpha/beta. */
static void random_triples(void)
{
    Rng rng = bertc_rng_seed(7);
    const float alphas[] = {1.0f, -1.5f, 0.25f};
    const float betas[] = {0.0f, 1.0f, 0.5f};
    for (int t = 0; t < 120; t++) {
        Case c = {.M = bertc_rng_randint(&rng, 1, 67), .N = bertc_rng_randint(&rng, 1, 67),
                  .K = bertc_rng_randint(&rng, 1, 67), .alpha = alphas[t % 3],
                  .beta = betas[(t / 3) % 3], .pad = bertc_rng_randint(&rng, 0, 5)};
        all_ops(c, 100 + (uint64_t)t);
    }
}

Test(gemm, random_sizes_padded_alpha_beta) { for_each_isa(random_triples); }

/* Sizes that cross the cache blocks: K > KC (several rank-KC updates, the
 * first applying beta), M > MC, N > NC, with beta 0 (NaN C), 1 and 0.5. */
static void block_edges(void)
{
    const Case cases[] = {
        {.M = 300, .N = 70, .K = 600, .alpha = 1.0f, .beta = 0.0f, .pad = 3},
        {.M = 130, .N = 97, .K = 513, .alpha = 0.5f, .beta = 1.0f, .pad = 1},
        {.M = 9, .N = 3100, .K = 300, .alpha = -1.0f, .beta = 0.5f, .pad = 0},
        {.M = 145, .N = 49, .K = 257, .alpha = 2.0f, .beta = 0.0f, .pad = 7},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        all_ops(cases[i], 500 + i);
}

Test(gemm, cache_block_edges) { for_each_isa(block_edges); }

/* BERT Linear shapes (x (M, K) . W^T, W (N, K)) and their backward products. */
static void bert_shapes(void)
{
    const int64_t mnk[][3] = {{128, 768, 768},  {128, 3072, 768}, {128, 768, 3072},
                              {128, 2304, 768}, {1024, 768, 768}};
    for (int s = 0; s < 5; s++) {
        Case c = {.M = mnk[s][0], .N = mnk[s][1], .K = mnk[s][2], .alpha = 1.0f,
                  .beta = s == 2 ? 1.0f : 0.0f};
        for (int op = 0; op < 3; op++) { /* NN, NT, TN */
            c.ta = op == 2;
            c.tb = op == 1;
            check_case(&c, 900 + (uint64_t)(s * 3 + op));
        }
    }
}

Test(gemm, bert_shapes, .timeout = 120) { for_each_isa(bert_shapes); }

/* alpha = 0 and K = 0 scale C by beta without reading A or B. */
Test(gemm, alpha_zero_scales_c)
{
    float A[6] = {NAN, NAN, NAN, NAN, NAN, NAN}, B[6] = {NAN, NAN, NAN, NAN, NAN, NAN};
    float C[4] = {1, 2, 3, 4};
    bertc_gemm(false, false, 2, 2, 3, 0.0f, A, 3, B, 2, 0.5f, C, 2);
    for (int i = 0; i < 4; i++)
        cr_assert(C[i] == 0.5f * (float)(i + 1), "C[%d] expected %g, actual %g", i,
                  0.5 * (i + 1), C[i]);
    bertc_gemm(false, false, 2, 2, 0, 1.0f, A, 3, B, 2, 0.0f, C, 2);
    for (int i = 0; i < 4; i++)
        cr_assert(C[i] == 0.0f, "K=0 beta=0: C[%d] expected 0, actual %g", i, C[i]);
}

/* ------------------------------------------------------------------------ */

/* Threaded GEMM must equal the one-thread result bit for bit: threads own
 * whole NR (or MR) panels, and every C entry is summed in the same order. */
static void threads_equal_serial(void)
{
    const Case cases[] = {
        {.M = 256, .N = 300, .K = 200, .alpha = 1.0f, .beta = 0.5f, .pad = 2}, /* split N */
        {.M = 500, .N = 100, .K = 300, .alpha = 1.0f, .beta = 0.0f, .pad = 0}, /* split M */
    };
    int saved = bertc_threads_count();
    for (size_t i = 0; i < 2; i++)
        for (int op = 0; op < 4; op++) {
            Case c = cases[i];
            c.ta = op & 2;
            c.tb = op & 1;
            Rng rng = bertc_rng_seed(40 + i);
            Operands o = make_operands(&c, &rng);
            bertc_threads_set_count(1);
            float *one = run_gemm(&c, &o);
            for (int t = 2; t <= 3; t++) {
                bertc_threads_set_count(t);
                float *many = run_gemm(&c, &o);
                for (int64_t k = 0; k < c.M * o.ldc; k++)
                    if (memcmp(&one[k], &many[k], sizeof(float)) != 0)
                        cr_assert_fail("bertc_gemm M=%lld N=%lld K=%lld op=%s isa=%s threads=%d: "
                                       "C[%lld] expected %.9g (1 thread), actual %.9g",
                                       (long long)c.M, (long long)c.N, (long long)c.K,
                                       op_name(&c), bertc_cpu_isa_name(bertc_cpu_isa()), t,
                                       (long long)k, one[k], many[k]);
                free(many);
            }
            bertc_threads_set_count(saved);
            check_rows(&c, &o, one, 0, 8);
            free(one);
            free_operands(&o);
        }
}

Test(gemm, threaded_equals_single_thread) { for_each_isa(threads_equal_serial); }

/* bertc_gemm_batched: attention-like heads, shared B (stride_b = 0), threads. */
Test(gemm, batched_matches_reference)
{
    enum { BATCH = 6, M = 64, N = 40, K = 48 };
    Rng rng = bertc_rng_seed(77);
    float *A = filled(BATCH * M * K, &rng, false), *B = filled(K * N, &rng, false);
    float *C = filled(BATCH * M * N, &rng, false);
    float *want = copy_of(C, BATCH * M * N);
    bertc_gemm_batched(false, false, BATCH, M, N, K, 1.0f, A, K, M * K, B, N, 0, 0.5f, C, N, M * N);
    for (int b = 0; b < BATCH; b++)
        bertc_gemm_reference(false, false, M, N, K, 1.0f, A + b * M * K, K, B, N, 0.5f,
                       want + b * M * N, N);
    for (int i = 0; i < BATCH * M * N; i++)
        cr_assert(fabsf(C[i] - want[i]) <= 1e-5f * K,
                  "bertc_gemm_batched M=%d N=%d K=%d op=NN isa=%s: C[%d] expected %.9g, actual %.9g",
                  M, N, K, bertc_cpu_isa_name(bertc_cpu_isa()), i, want[i], C[i]);
    free(A);
    free(B);
    free(C);
    free(want);
}

/* Pack buffers are allocated once per thread: a repeated GEMM mallocs nothing. */
Test(gemm, no_allocation_in_steady_state)
{
    enum { M = 200, N = 300, K = 400 };
    Rng rng = bertc_rng_seed(5);
    float *A = filled(M * K, &rng, false), *B = filled(K * N, &rng, false);
    float *C = filled(M * N, &rng, false);
    bertc_gemm(false, true, M, N, K, 1.0f, A, K, B, K, 0.0f, C, N);
    size_t before = bertc_sys_alloc_count();
    for (int i = 0; i < 3; i++)
        bertc_gemm(false, true, M, N, K, 1.0f, A, K, B, K, 0.0f, C, N);
    cr_assert_eq(bertc_sys_alloc_count(), before,
                 "bertc_gemm allocated %zu times in steady state (M=%d N=%d K=%d op=NT)",
                 bertc_sys_alloc_count() - before, M, N, K);
    free(A);
    free(B);
    free(C);
}
