/* test/test_grad_reduce.c — finite-difference gradient tests for sum and mean
 * (each dim, keepdim or not, and all dims), softmax and log_softmax (rows of
 * length 1, 7 and 33), and fused LayerNorm (with and without gamma/beta, eps
 * 1e-12 as BERT and 1e-5 as PyTorch's default), plus value checks against
 * double-precision formulas. */
#include "test/test_util.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>

TEST_SUITE_WITH_GRAPH(grad_reduce, 59);

static void expect_close(const char *op, const float *got, const double *want, int64_t n,
                         double atol, double rtol)
{
    for (int64_t i = 0; i < n; i++)
        cr_assert(fabs(got[i] - want[i]) <= atol + rtol * fabs(want[i]),
                  "%s: value at flat index %lld: got %.8g, expected %.8g", op, (long long)i,
                  (double)got[i], want[i]);
}

/* ------------------------------------------------------------------------ */
/* sum / mean                                                                */
/* ------------------------------------------------------------------------ */

typedef struct ReduceArgs {
    bool mean;
    int dim;
    bool keepdim;
} ReduceArgs;

static Var *f_reduce(Graph *g, Var **x, void *u)
{
    const ReduceArgs *r = u;
    return r->mean ? bertc_ag_mean(g, x[0], r->dim, r->keepdim) : bertc_ag_sum(g, x[0], r->dim, r->keepdim);
}

static const int reduce_dims[5] = {0, 1, 2, -1, AG_ALL_DIMS};

Test(grad_reduce, sum_and_mean)
{
    int64_t s[3] = {2, 3, 4};
    Var *in[1] = {test_param(params, 3, s, &rng, -1, 1)};
    for (int m = 0; m < 2; m++)
        for (int k = 0; k < 5; k++)
            for (int keep = 0; keep < 2; keep++) {
                ReduceArgs r = {m == 1, reduce_dims[k], keep == 1};
                char op[48];
                snprintf(op, sizeof op, "%s dim %d%s", m ? "mean" : "sum", r.dim,
                         keep ? " keepdim" : "");
                test_gradcheck(op, graph, f_reduce, in, 1, &r);
            }
}

/* shapes as torch.sum(a, dim, keepdim) and values against a double loop */
Test(grad_reduce, sum_and_mean_values)
{
    int64_t s[3] = {2, 3, 4};
    Var *a = test_param(params, 3, s, &rng, -1, 1);
    for (int m = 0; m < 2; m++)
        for (int dim = 0; dim < 3; dim++)
            for (int keep = 0; keep < 2; keep++) {
                Var *out = m ? bertc_ag_mean(graph, a, dim, keep) : bertc_ag_sum(graph, a, dim, keep);
                char op[48];
                snprintf(op, sizeof op, "%s dim %d%s", m ? "mean" : "sum", dim,
                         keep ? " keepdim" : "");
                int64_t shape[3];
                int nd = 0;
                for (int d = 0; d < 3; d++)
                    if (d != dim || keep)
                        shape[nd++] = d == dim ? 1 : s[d];
                cr_assert(bertc_shape_equal(out->value.ndim, out->value.shape, nd, shape),
                          "%s: wrong output shape", op);
                double want[12] = {0};
                int64_t c[3];
                for (c[0] = 0; c[0] < 2; c[0]++)
                    for (c[1] = 0; c[1] < 3; c[1]++)
                        for (c[2] = 0; c[2] < 4; c[2]++) {
                            int64_t o = 0;
                            for (int d = 0; d < 3; d++)
                                if (d != dim)
                                    o = o * s[d] + c[d];
                            want[o] += a->value.data[(c[0] * 3 + c[1]) * 4 + c[2]] /
                                       (m ? (double)s[dim] : 1.0);
                        }
                expect_close(op, out->value.data, want, out->value.numel, 1e-6, 1e-6);
            }
    Var *all = bertc_ag_sum(graph, a, AG_ALL_DIMS, false), *avg = bertc_ag_mean(graph, a, AG_ALL_DIMS, false);
    cr_assert(all->value.ndim == 0 && all->value.numel == 1, "sum over all dims: not a scalar");
    double total = 0.0;
    for (int i = 0; i < 24; i++)
        total += a->value.data[i];
    double mean = total / 24;
    expect_close("sum all dims", all->value.data, &total, 1, 1e-6, 1e-6);
    expect_close("mean all dims", avg->value.data, &mean, 1, 1e-6, 1e-6);
}

/* ------------------------------------------------------------------------ */
/* softmax / log_softmax                                                     */
/* ------------------------------------------------------------------------ */

static Var *f_softmax(Graph *g, Var **x, void *u) { (void)u; return bertc_ag_softmax(g, x[0]); }
static Var *f_log_softmax(Graph *g, Var **x, void *u) { (void)u; return bertc_ag_log_softmax(g, x[0]); }

static const int64_t row_lengths[3] = {1, 7, 33};

Test(grad_reduce, softmax)
{
    for (int k = 0; k < 3; k++) {
        int64_t s[2] = {3, row_lengths[k]};
        Var *in[1] = {test_param(params, 2, s, &rng, -2, 2)};
        char op[32];
        snprintf(op, sizeof op, "softmax n = %lld", (long long)s[1]);
        test_gradcheck(op, graph, f_softmax, in, 1, NULL);
        snprintf(op, sizeof op, "log_softmax n = %lld", (long long)s[1]);
        test_gradcheck(op, graph, f_log_softmax, in, 1, NULL);
    }
}

/* softmax over the last dim of a (2, 3, n) input too: rows are everything but
 * the last dim */
Test(grad_reduce, softmax_3d)
{
    int64_t s[3] = {2, 3, 7};
    Var *in[1] = {test_param(params, 3, s, &rng, -2, 2)};
    test_gradcheck("softmax (2,3,7)", graph, f_softmax, in, 1, NULL);
    test_gradcheck("log_softmax (2,3,7)", graph, f_log_softmax, in, 1, NULL);
}

Test(grad_reduce, softmax_values)
{
    for (int k = 0; k < 3; k++) {
        int64_t n = row_lengths[k], s[2] = {3, n};
        Var *a = test_param(params, 2, s, &rng, -5, 5);
        a->value.data[0] = 30; /* a large logit: the max shift must keep exp finite */
        Var *sm = bertc_ag_softmax(graph, a), *lsm = bertc_ag_log_softmax(graph, a);
        double want_sm[99], want_lsm[99];
        for (int64_t r = 0; r < 3; r++) {
            double lse = 0.0;
            for (int64_t j = 0; j < n; j++)
                lse += exp((double)a->value.data[r * n + j]);
            lse = log(lse);
            for (int64_t j = 0; j < n; j++) {
                want_lsm[r * n + j] = a->value.data[r * n + j] - lse;
                want_sm[r * n + j] = exp(want_lsm[r * n + j]);
            }
        }
        char op[32];
        snprintf(op, sizeof op, "softmax n = %lld", (long long)n);
        expect_close(op, sm->value.data, want_sm, 3 * n, 1e-7, 1e-5);
        snprintf(op, sizeof op, "log_softmax n = %lld", (long long)n);
        expect_close(op, lsm->value.data, want_lsm, 3 * n, 1e-5, 1e-6);
    }
}

/* ------------------------------------------------------------------------ */
/* layernorm                                                                 */
/* ------------------------------------------------------------------------ */

typedef struct LnArgs {
    float eps;
    bool affine;
} LnArgs;

static Var *f_layernorm(Graph *g, Var **x, void *u)
{
    const LnArgs *l = u;
    return bertc_ag_layernorm(g, x[0], l->affine ? x[1] : NULL, l->affine ? x[2] : NULL, l->eps);
}

static void check_layernorm(float eps, bool affine)
{
    int64_t s[3] = {2, 3, 8}, hs[1] = {8};
    Var *in[3] = {test_param(params, 3, s, &rng, -2, 2),
                  test_param(params, 1, hs, &rng, 0.5f, 1.5f),
                  test_param(params, 1, hs, &rng, -1, 1)};
    LnArgs l = {eps, affine};
    char op[64];
    snprintf(op, sizeof op, "layernorm eps %g %s", (double)eps,
             affine ? "with gamma, beta" : "without gamma, beta");
    /* inputs 1 and 2 (gamma, beta) are checked too when affine */
    test_gradcheck(op, graph, f_layernorm, in, affine ? 3 : 1, &l);
}

Test(grad_reduce, layernorm)
{
    check_layernorm(1e-12f, true);
    check_layernorm(1e-12f, false);
    check_layernorm(1e-5f, true);
    check_layernorm(1e-5f, false);
}

/* gamma (x - mean) / sqrt(var + eps) + beta with the biased variance, in
 * double; a row with small spread makes eps matter. */
Test(grad_reduce, layernorm_values)
{
    const int64_t H = 8;
    int64_t s[2] = {3, H}, hs[1] = {H};
    Var *x = test_param(params, 2, s, &rng, -2, 2);
    Var *gamma = test_param(params, 1, hs, &rng, 0.5f, 1.5f);
    Var *beta = test_param(params, 1, hs, &rng, -1, 1);
    for (int64_t j = 0; j < H; j++)
        x->value.data[2 * H + j] = 1.0f + 1e-3f * (float)j;
    const float eps_list[2] = {1e-12f, 1e-5f};
    for (int e = 0; e < 2; e++) {
        Var *y = bertc_ag_layernorm(graph, x, gamma, beta, eps_list[e]);
        double want[24];
        for (int64_t r = 0; r < 3; r++) {
            const float *xr = x->value.data + r * H;
            double mu = 0.0, var = 0.0;
            for (int64_t j = 0; j < H; j++)
                mu += xr[j];
            mu /= (double)H;
            for (int64_t j = 0; j < H; j++)
                var += (xr[j] - mu) * (xr[j] - mu);
            var /= (double)H;
            for (int64_t j = 0; j < H; j++)
                want[r * H + j] = (xr[j] - mu) / sqrt(var + eps_list[e]) * gamma->value.data[j] +
                                  beta->value.data[j];
        }
        char op[32];
        snprintf(op, sizeof op, "layernorm eps %g", (double)eps_list[e]);
        /* the small-spread row: float xhat has a relative error of about
         * ulp(1) / spread ~ 1e-4, hence the wider atol */
        expect_close(op, y->value.data, want, 24, 5e-4, 1e-5);
    }
}
