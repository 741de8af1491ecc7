/* test/test_grad_unary.c — finite-difference gradient tests for the
 * elementwise functions of ops_unary.c: gelu (erf), gelu_tanh, relu, tanh,
 * sigmoid, exp, log, sqrt and pow. Each is checked on a (3,5) input whose
 * range keeps the function smooth (relu away from its kink, log/sqrt/pow on
 * positive numbers), plus a value check of each against libm in double. */
#include "test/test_util.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>

TEST_SUITE_WITH_GRAPH(grad_unary, 11);

static Var *f_gelu(Graph *g, Var **x, void *u) { (void)u; return bertc_ag_gelu(g, x[0]); }
static Var *f_gelu_tanh(Graph *g, Var **x, void *u) { (void)u; return bertc_ag_gelu_tanh(g, x[0]); }
static Var *f_relu(Graph *g, Var **x, void *u) { (void)u; return bertc_ag_relu(g, x[0]); }
static Var *f_tanh(Graph *g, Var **x, void *u) { (void)u; return bertc_ag_tanh(g, x[0]); }
static Var *f_sigmoid(Graph *g, Var **x, void *u) { (void)u; return bertc_ag_sigmoid(g, x[0]); }
static Var *f_exp(Graph *g, Var **x, void *u) { (void)u; return bertc_ag_exp(g, x[0]); }
static Var *f_log(Graph *g, Var **x, void *u) { (void)u; return bertc_ag_log(g, x[0]); }
static Var *f_sqrt(Graph *g, Var **x, void *u) { (void)u; return bertc_ag_sqrt(g, x[0]); }
/* pow reads its exponent through `user` */
static Var *f_pow(Graph *g, Var **x, void *u) { return bertc_ag_pow(g, x[0], *(const float *)u); }

/* A (3,5) input with values uniform in [lo, hi). */
static Var *input(float lo, float hi)
{
    int64_t s[2] = {3, 5};
    return test_param(params, 2, s, &rng, lo, hi);
}

static void check(const char *op, GradcheckFn fn, float lo, float hi, void *user)
{
    Var *in[1] = {input(lo, hi)};
    test_gradcheck(op, graph, fn, in, 1, user);
}

Test(grad_unary, gelu) { check("gelu", f_gelu, -3, 3, NULL); }
Test(grad_unary, gelu_tanh) { check("gelu_tanh", f_gelu_tanh, -3, 3, NULL); }
Test(grad_unary, tanh) { check("tanh", f_tanh, -2, 2, NULL); }
Test(grad_unary, sigmoid) { check("sigmoid", f_sigmoid, -4, 4, NULL); }
Test(grad_unary, exp) { check("exp", f_exp, -2, 2, NULL); }
Test(grad_unary, log) { check("log", f_log, 0.5f, 3, NULL); }
Test(grad_unary, sqrt) { check("sqrt", f_sqrt, 0.5f, 3, NULL); }

/* relu has a kink at 0: keep every input at least 0.1 (10 eps) away from it,
 * with both signs present. */
Test(grad_unary, relu)
{
    Var *x = input(-1, 1);
    float *d = x->value.data;
    int positive = 0, negative = 0;
    for (int64_t i = 0; i < x->value.numel; i++) {
        if (fabsf(d[i]) < 0.1f)
            d[i] += d[i] < 0 ? -0.1f : 0.1f;
        positive += d[i] > 0;
        negative += d[i] < 0;
    }
    cr_assert(positive > 0 && negative > 0, "relu: the input should have both signs");
    Var *in[1] = {x};
    test_gradcheck("relu", graph, f_relu, in, 1, NULL);
}

Test(grad_unary, pow)
{
    static const float exps[4] = {2.0f, 3.0f, 0.5f, -1.0f};
    for (int k = 0; k < 4; k++) {
        char op[32];
        snprintf(op, sizeof op, "pow(p = %g)", (double)exps[k]);
        float p = exps[k];
        check(op, f_pow, 0.5f, 2.0f, &p);
    }
}

/* pow with an integer exponent on negative inputs: x^2 and x^3 are smooth
 * everywhere, and powf handles a negative base with an integral exponent. */
Test(grad_unary, pow_integer_exponent_negative_base)
{
    static const float exps[2] = {2.0f, 3.0f};
    for (int k = 0; k < 2; k++) {
        char op[32];
        snprintf(op, sizeof op, "pow(p = %g, x < 0)", (double)exps[k]);
        float p = exps[k];
        check(op, f_pow, -2.0f, -0.5f, &p);
    }
}

/* x^0 = 1 is constant, so its gradient is 0 everywhere, also at x = 0 where
 * the general rule p x^(p-1) would give 0 * inf = NaN (PyTorch's
 * bertc_pow_backward returns zeros for exponent 0). */
Test(grad_unary, pow_zero_exponent_gradient_is_zero)
{
    int64_t s[1] = {3};
    Var *x = test_param(params, 1, s, &rng, -1, 1);
    x->value.data[0] = 0.0f;
    x->value.data[1] = 2.0f;
    x->value.data[2] = -0.5f;
    Var *y = bertc_ag_pow(graph, x, 0.0f);
    const float seed[3] = {1, 1, 1};
    bertc_ag_zero_grad(x);
    bertc_ag_backward_seeded(graph, y, seed);
    for (int i = 0; i < 3; i++) {
        cr_assert(y->value.data[i] == 1.0f,
                  "pow(p = 0): value at flat index %d: got %.8g, expected 1", i,
                  (double)y->value.data[i]);
        cr_assert(x->grad[i] == 0.0f,
                  "pow(p = 0): gradient at flat index %d (x = %g): got %.8g, expected 0", i,
                  (double)x->value.data[i], (double)x->grad[i]);
    }
}

/* ------------------------------------------------------------------------ */
/* Values against double-precision libm                                      */
/* ------------------------------------------------------------------------ */

typedef double (*RefFn)(double x);
static double ref_gelu(double x) { return 0.5 * x * (1.0 + erf(x / sqrt(2.0))); }
static double ref_gelu_tanh(double x)
{
    return 0.5 * x * (1.0 + tanh(sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
}
static double ref_relu(double x) { return x > 0 ? x : 0.0; }
static double ref_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

static void check_values(const char *op, GradcheckFn fn, RefFn ref, float lo, float hi)
{
    Var *x = input(lo, hi);
    Var *in[1] = {x};
    Var *y = fn(graph, in, NULL);
    for (int64_t i = 0; i < x->value.numel; i++) {
        double want = ref(x->value.data[i]), got = y->value.data[i];
        cr_assert(fabs(got - want) <= 1e-6 + 1e-6 * fabs(want),
                  "%s: value at flat index %lld (x = %.8g): got %.8g, expected %.8g", op,
                  (long long)i, (double)x->value.data[i], got, want);
    }
}

Test(grad_unary, values)
{
    check_values("gelu", f_gelu, ref_gelu, -4, 4);
    check_values("gelu_tanh", f_gelu_tanh, ref_gelu_tanh, -4, 4);
    check_values("relu", f_relu, ref_relu, -2, 2);
    check_values("tanh", f_tanh, tanh, -3, 3);
    check_values("sigmoid", f_sigmoid, ref_sigmoid, -6, 6);
    check_values("exp", f_exp, exp, -3, 3);
    check_values("log", f_log, log, 0.1f, 5);
    check_values("sqrt", f_sqrt, sqrt, 0.1f, 5);
}
