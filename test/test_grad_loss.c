/* test/test_grad_loss.c — finite-difference gradient tests for cross_entropy
 * (with ignore_index), bce (mean and sum), bce_with_logits and mse, and value
 * checks against numbers worked out by hand or with an independent
 * double-precision formula, including PyTorch's edge cases: every row ignored
 * gives NaN, and BCE clamps its logs at -100. */
#include "test/test_util.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

TEST_SUITE_WITH_GRAPH(grad_loss, 83);

static void expect_close(const char *op, int64_t i, double got, double want, double atol,
                         double rtol)
{
    cr_assert(fabs(got - want) <= atol + rtol * fabs(want),
              "%s: value at flat index %lld: got %.8g, expected %.8g", op, (long long)i, got,
              want);
}

/* ------------------------------------------------------------------------ */
/* cross_entropy                                                             */
/* ------------------------------------------------------------------------ */

#define IGNORE (-100)

/* 6 rows of 5 classes; rows 1 and 4 are ignored */
static int32_t ce_targets[6] = {2, IGNORE, 0, 4, IGNORE, 1};

static Var *f_cross_entropy(Graph *g, Var **x, void *u)
{
    return bertc_ag_cross_entropy(g, x[0], u, IGNORE);
}

Test(grad_loss, cross_entropy)
{
    int64_t s[2] = {6, 5}, ts[1] = {6};
    ITensor target = bertc_itensor_view(ce_targets, 1, ts);
    Var *in[1] = {test_param(params, 2, s, &rng, -2, 2)};
    test_gradcheck("cross_entropy", graph, f_cross_entropy, in, 1, &target);
    /* ignored rows get exactly zero gradient */
    Var *loss = bertc_ag_cross_entropy(graph, in[0], &target, IGNORE);
    bertc_ag_zero_grad(in[0]);
    bertc_ag_backward(graph, loss);
    for (int64_t i = 0; i < 30; i++)
        if (ce_targets[i / 5] == IGNORE)
            cr_assert(in[0]->grad[i] == 0.0f,
                      "cross_entropy: ignored row %lld has gradient %.8g at flat index %lld",
                      (long long)(i / 5), (double)in[0]->grad[i], (long long)i);
}

/* linear_cross_entropy: x (6, 4), w (5, 4), bias (5), the targets above */
static Var *f_linear_cross_entropy(Graph *g, Var **x, void *u)
{
    return bertc_ag_linear_cross_entropy(g, x[0], x[1], x[2], u, IGNORE);
}

Test(grad_loss, linear_cross_entropy)
{
    int64_t xs[2] = {6, 4}, ws[2] = {5, 4}, bs[1] = {5}, ts[1] = {6};
    ITensor target = bertc_itensor_view(ce_targets, 1, ts);
    Var *in[3] = {test_param(params, 2, xs, &rng, -2, 2), test_param(params, 2, ws, &rng, -1, 1),
                  test_param(params, 1, bs, &rng, -1, 1)};
    test_gradcheck("linear_cross_entropy", graph, f_linear_cross_entropy, in, 3, &target);
}

/* The fused op against linear + cross_entropy, over 600 rows with every
 * third one ignored (400 counted: two chunks of the fused op): the loss and
 * every gradient agree to float rounding. */
Test(grad_loss, linear_cross_entropy_matches_linear_then_cross_entropy)
{
    enum { N = 600, H = 8, V = 7 };
    int64_t xs[2] = {N, H}, ws[2] = {V, H}, bs[1] = {V}, ts[1] = {N};
    int32_t t[N];
    for (int i = 0; i < N; i++)
        t[i] = i % 3 == 1 ? IGNORE : (int32_t)bertc_rng_randint(&rng, 0, V - 1);
    ITensor target = bertc_itensor_view(t, 1, ts);
    Var *in[3] = {test_param(params, 2, xs, &rng, -2, 2), test_param(params, 2, ws, &rng, -1, 1),
                  test_param(params, 1, bs, &rng, -1, 1)};
    static float want[3][N * H];
    Var *ref = bertc_ag_cross_entropy(graph, bertc_ag_linear(graph, in[0], in[1], in[2]), &target, IGNORE);
    bertc_ag_backward(graph, ref);
    double want_loss = ref->value.data[0];
    for (int k = 0; k < 3; k++) {
        memcpy(want[k], in[k]->grad, sizeof(float) * (size_t)in[k]->value.numel);
        bertc_ag_zero_grad(in[k]);
    }
    bertc_ag_graph_reset(graph);
    Var *loss = bertc_ag_linear_cross_entropy(graph, in[0], in[1], in[2], &target, IGNORE);
    expect_close("linear_cross_entropy loss", 0, loss->value.data[0], want_loss, 0, 1e-6);
    bertc_ag_backward(graph, loss);
    for (int k = 0; k < 3; k++)
        for (int64_t i = 0; i < in[k]->value.numel; i++)
            expect_close(k == 0 ? "linear_cross_entropy dx" : k == 1 ? "linear_cross_entropy dw"
                                                                     : "linear_cross_entropy db",
                         i, in[k]->grad[i], want[k][i], 1e-8, 1e-5);
}

/* CE(logits {1, 2, 3}, target 2) = log(e^1 + e^2 + e^3) - 3 */
Test(grad_loss, cross_entropy_by_hand)
{
    int64_t s[2] = {1, 3}, ts[1] = {1};
    Var *z = bertc_ag_tensor(graph, 2, s, false);
    z->value.data[0] = 1;
    z->value.data[1] = 2;
    z->value.data[2] = 3;
    int32_t t[1] = {2};
    ITensor target = bertc_itensor_view(t, 1, ts);
    Var *loss = bertc_ag_cross_entropy(graph, z, &target, IGNORE);
    expect_close("cross_entropy {1,2,3} target 2", 0, loss->value.data[0],
                 log(exp(1.0) + exp(2.0) + exp(3.0)) - 3.0, 1e-7, 1e-6);
}

/* mean over the counted rows only (4 of 6), in double */
Test(grad_loss, cross_entropy_ignore_index_values)
{
    int64_t s[2] = {6, 5}, ts[1] = {6};
    ITensor target = bertc_itensor_view(ce_targets, 1, ts);
    Var *z = test_param(params, 2, s, &rng, -3, 3);
    Var *loss = bertc_ag_cross_entropy(graph, z, &target, IGNORE);
    double total = 0.0;
    int counted = 0;
    for (int r = 0; r < 6; r++) {
        if (ce_targets[r] == IGNORE)
            continue;
        double sum = 0.0;
        for (int j = 0; j < 5; j++)
            sum += exp((double)z->value.data[r * 5 + j]);
        total += log(sum) - z->value.data[r * 5 + ce_targets[r]];
        counted++;
    }
    expect_close("cross_entropy with ignored rows", 0, loss->value.data[0], total / counted,
                 1e-7, 1e-6);
}

/* PyTorch: mean over zero counted rows is 0/0 = NaN */
Test(grad_loss, cross_entropy_all_ignored_is_nan)
{
    int64_t s[2] = {2, 3}, ts[1] = {2};
    Var *z = test_param(params, 2, s, &rng, -1, 1);
    int32_t t[2] = {IGNORE, IGNORE};
    ITensor target = bertc_itensor_view(t, 1, ts);
    Var *loss = bertc_ag_cross_entropy(graph, z, &target, IGNORE);
    cr_assert(isnan(loss->value.data[0]),
              "cross_entropy with every row ignored: got %.8g, expected NaN (as PyTorch)",
              (double)loss->value.data[0]);
}

/* ------------------------------------------------------------------------ */
/* bce                                                                       */
/* ------------------------------------------------------------------------ */

typedef struct BceArgs {
    Tensor target;
    bool sum;
} BceArgs;

static Var *f_bce(Graph *g, Var **x, void *u)
{
    const BceArgs *b = u;
    return bertc_ag_bce(g, x[0], &b->target, b->sum);
}

/* -(y ln p + (1-y) ln(1-p)) in double, for 0 < p < 1 */
static double bce_ref(double p, double y) { return -(y * log(p) + (1.0 - y) * log(1.0 - p)); }

/* p (3, 4) in (0.05, 0.95), hard targets. With eps = 1e-2 the central
 * difference of y ln p has a truncation error of eps^2 / (3 p^2) relative
 * to the gradient: 1.3% at p = 0.05, inside rtol = 2%. */
Test(grad_loss, bce)
{
    int64_t s[2] = {3, 4};
    float y[12] = {1, 0, 0, 1, 1, 1, 0, 0, 1, 0, 1, 0};
    for (int sum = 0; sum < 2; sum++) {
        Var *in[1] = {test_param(params, 2, s, &rng, 0.05f, 0.95f)};
        BceArgs b = {bertc_tensor_view(y, 2, s), sum == 1};
        test_gradcheck(sum ? "bce (sum)" : "bce (mean)", graph, f_bce, in, 1, &b);
    }
}

/* soft targets in [0, 1] on p in (0.2, 0.8), where the gradient (p - y) /
 * (p (1 - p)) can be near 0 and only atol protects against truncation */
Test(grad_loss, bce_soft_targets)
{
    int64_t s[2] = {3, 4};
    float y[12];
    test_fill_uniform(y, 12, &rng, 0, 1);
    Var *in[1] = {test_param(params, 2, s, &rng, 0.2f, 0.8f)};
    BceArgs b = {bertc_tensor_view(y, 2, s), false};
    test_gradcheck("bce (soft targets)", graph, f_bce, in, 1, &b);
}

Test(grad_loss, bce_values)
{
    int64_t s[1] = {8};
    float y[8];
    test_fill_uniform(y, 8, &rng, 0, 1);
    y[0] = 0;
    y[1] = 1;
    Var *p = test_param(params, 1, s, &rng, 0.05f, 0.95f);
    double total = 0.0;
    for (int i = 0; i < 8; i++)
        total += bce_ref(p->value.data[i], y[i]);
    Tensor target = bertc_tensor_view(y, 1, s);
    expect_close("bce (mean)", 0, bertc_ag_bce(graph, p, &target, false)->value.data[0], total / 8,
                 1e-7, 1e-6);
    expect_close("bce (sum)", 0, bertc_ag_bce(graph, p, &target, true)->value.data[0], total, 1e-7,
                 1e-6);
}

/* torch.nn.BCELoss clamps each log at -100: p = 0 with y = 1 (and p = 1 with
 * y = 0) costs exactly 100, and the gradient (p - y) / max(p (1 - p), 1e-12)
 * stays finite: -1e12 and +1e12, times the reduction scale. */
Test(grad_loss, bce_clamp)
{
    int64_t s[1] = {3};
    float y[3] = {1, 0, 0};
    Var *p = test_param(params, 1, s, &rng, 0, 1);
    p->value.data[0] = 0;
    p->value.data[1] = 1;
    p->value.data[2] = 0; /* p = 0, y = 0: no loss, no gradient */
    Tensor target = bertc_tensor_view(y, 1, s);
    for (int sum = 0; sum < 2; sum++) {
        const char *op = sum ? "bce clamp (sum)" : "bce clamp (mean)";
        double scale = sum ? 1.0 : 1.0 / 3.0;
        Var *loss = bertc_ag_bce(graph, p, &target, sum == 1);
        expect_close(op, 0, loss->value.data[0], 200.0 * scale, 0, 1e-6);
        bertc_ag_zero_grad(p);
        bertc_ag_backward(graph, loss);
        const double want[3] = {-1e12 * scale, 1e12 * scale, 0.0};
        for (int i = 0; i < 3; i++) {
            cr_assert(isfinite(p->grad[i]), "%s: gradient at flat index %d is %g", op, i,
                      (double)p->grad[i]);
            cr_assert(fabs(p->grad[i] - want[i]) <= 1e-6 * fabs(want[i]),
                      "%s: gradient at flat index %d: got %.8g, expected %.8g", op, i,
                      (double)p->grad[i], want[i]);
        }
        bertc_ag_graph_reset(graph);
    }
}

/* ------------------------------------------------------------------------ */
/* bce_with_logits                                                           */
/* ------------------------------------------------------------------------ */

static Var *f_bce_with_logits(Graph *g, Var **x, void *u)
{
    return bertc_ag_bce_with_logits(g, x[0], u);
}

Test(grad_loss, bce_with_logits)
{
    int64_t s[2] = {3, 4};
    float y[12];
    test_fill_uniform(y, 12, &rng, 0, 1);
    y[0] = 0;
    y[1] = 1;
    Tensor target = bertc_tensor_view(y, 2, s);
    Var *in[1] = {test_param(params, 2, s, &rng, -4, 4)};
    test_gradcheck("bce_with_logits", graph, f_bce_with_logits, in, 1, &target);
}

/* against BCE(sigmoid(z), y) written the naive way in double (fine for
 * |z| <= 4), and large |z| by hand: z = 50, y = 0 costs 50 + log1p(e^-50) */
Test(grad_loss, bce_with_logits_values)
{
    int64_t s[1] = {8};
    float y[8];
    test_fill_uniform(y, 8, &rng, 0, 1);
    Var *z = test_param(params, 1, s, &rng, -4, 4);
    double total = 0.0;
    for (int i = 0; i < 8; i++)
        total += bce_ref(1.0 / (1.0 + exp(-(double)z->value.data[i])), y[i]);
    Tensor target = bertc_tensor_view(y, 1, s);
    expect_close("bce_with_logits", 0, bertc_ag_bce_with_logits(graph, z, &target)->value.data[0],
                 total / 8, 1e-7, 1e-6);

    int64_t s2[1] = {2};
    Var *big = test_param(params, 1, s2, &rng, 0, 1);
    big->value.data[0] = 50;
    big->value.data[1] = -50;
    float y2[2] = {0, 1};
    Tensor t2 = bertc_tensor_view(y2, 1, s2);
    expect_close("bce_with_logits |z| = 50", 0, bertc_ag_bce_with_logits(graph, big, &t2)->value.data[0],
                 50.0 + log1p(exp(-50.0)), 0, 1e-6);
}

/* ------------------------------------------------------------------------ */
/* mse                                                                       */
/* ------------------------------------------------------------------------ */

static Var *f_mse(Graph *g, Var **x, void *u) { return bertc_ag_mse(g, x[0], u); }

Test(grad_loss, mse)
{
    int64_t s[2] = {3, 4};
    float t[12];
    test_fill_uniform(t, 12, &rng, -1, 1);
    Tensor target = bertc_tensor_view(t, 2, s);
    Var *in[1] = {test_param(params, 2, s, &rng, -1, 1)};
    test_gradcheck("mse", graph, f_mse, in, 1, &target);
}

Test(grad_loss, mse_values)
{
    /* by hand: a = {1, 2, 3}, t = {0, 2, 5}: (1 + 0 + 4) / 3 */
    int64_t s[1] = {3};
    Var *a = test_param(params, 1, s, &rng, 0, 1);
    a->value.data[0] = 1;
    a->value.data[1] = 2;
    a->value.data[2] = 3;
    float t[3] = {0, 2, 5};
    Tensor target = bertc_tensor_view(t, 1, s);
    Var *loss = bertc_ag_mse(graph, a, &target);
    expect_close("mse by hand", 0, loss->value.data[0], 5.0 / 3.0, 1e-7, 1e-6);
    /* d/da = 2 (a - t) / n = {2/3, 0, -4/3} */
    bertc_ag_zero_grad(a);
    bertc_ag_backward(graph, loss);
    const double want[3] = {2.0 / 3.0, 0.0, -4.0 / 3.0};
    for (int i = 0; i < 3; i++)
        cr_assert(fabs(a->grad[i] - want[i]) <= 1e-6 + 1e-6 * fabs(want[i]),
                  "mse: gradient at flat index %d: got %.8g, expected %.8g", i,
                  (double)a->grad[i], want[i]);
}
