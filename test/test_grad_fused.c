/* test/test_grad_fused.c — the fused ops of ops_fused.c: finite-difference
 * gradient tests for add_layernorm (with and without gamma/beta, both eps,
 * and a + a), and checks that it gives the values and the gradients of
 * bertc_ag_layernorm(bertc_ag_add(a, b)), on rows of odd length (the SIMD tails) and on a
 * tensor large enough to run on the threads. */
#include "test/test_util.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static Arena *params;
static Graph *graph;
static Rng rng;

static void setup(void)
{
    params = bertc_arena_create("params", 1 << 20);
    graph = bertc_ag_graph_create(1 << 20, 1);
    rng = bertc_rng_seed(83);
}

static void teardown(void)
{
    bertc_ag_graph_destroy(graph);
    bertc_arena_destroy(params);
}

TestSuite(grad_fused, .init = setup, .fini = teardown);

/* |got - want| <= atol + rtol |want| everywhere, naming tensor and index. */
static void expect_close(const char *what, const float *got, const float *want, int64_t n,
                         double atol, double rtol)
{
    for (int64_t i = 0; i < n; i++)
        cr_assert(fabs((double)got[i] - want[i]) <= atol + rtol * fabs((double)want[i]),
                  "%s at flat index %lld: fused %.8g, unfused %.8g", what, (long long)i,
                  (double)got[i], (double)want[i]);
}

static float *copy_of(const float *x, int64_t n)
{
    float *c = bertc_arena_alloc(params, sizeof(float) * (size_t)n);
    memcpy(c, x, sizeof(float) * (size_t)n);
    return c;
}

/* Runs the backward of out seeded with `seed` from zeroed gradients, copies
 * the gradient of each of the n inputs into grads[k] and returns a copy of
 * out's value; then resets the graph, so the next backward sees a new tape. */
static float *grads_of(Var *out, const float *seed, Var **in, int n, float **grads)
{
    for (int k = 0; k < n; k++)
        bertc_ag_zero_grad(in[k]);
    bertc_ag_backward_seeded(graph, out, seed);
    for (int k = 0; k < n; k++)
        grads[k] = copy_of(bertc_ag_param_grad(in[k]), in[k]->value.numel);
    float *value = copy_of(out->value.data, out->value.numel);
    bertc_ag_graph_reset(graph);
    return value;
}

static float *random_seed(int64_t n)
{
    float *s = bertc_arena_alloc(params, sizeof(float) * (size_t)n);
    test_fill_uniform(s, n, &rng, -1, 1);
    return s;
}

/* ------------------------------------------------------------------------ */
/* add_layernorm                                                             */
/* ------------------------------------------------------------------------ */

typedef struct AddLnArgs {
    float eps;
    bool affine, same;    /* same: LayerNorm(a + a), one input used twice */
} AddLnArgs;

static Var *f_add_layernorm(Graph *g, Var **x, void *u)
{
    const AddLnArgs *l = u;
    return bertc_ag_add_layernorm(g, x[0], l->same ? x[0] : x[1], l->affine ? x[2] : NULL,
                            l->affine ? x[3] : NULL, l->eps);
}

static void check_add_layernorm(AddLnArgs l)
{
    int64_t s[3] = {2, 3, 8}, hs[1] = {8};
    Var *in[4] = {test_param(params, 3, s, &rng, -2, 2), test_param(params, 3, s, &rng, -2, 2),
                  test_param(params, 1, hs, &rng, 0.5f, 1.5f),
                  test_param(params, 1, hs, &rng, -1, 1)};
    in[1]->requires_grad = !l.same;
    char op[80];
    snprintf(op, sizeof op, "add_layernorm eps %g%s%s", (double)l.eps,
             l.affine ? " with gamma, beta" : "", l.same ? " (a + a)" : "");
    test_gradcheck(op, graph, f_add_layernorm, in, l.affine ? 4 : 2, &l);
}

Test(grad_fused, add_layernorm)
{
    check_add_layernorm((AddLnArgs){1e-12f, true, false});
    check_add_layernorm((AddLnArgs){1e-12f, false, false});
    check_add_layernorm((AddLnArgs){1e-5f, true, false});
    check_add_layernorm((AddLnArgs){1e-5f, false, false});
    check_add_layernorm((AddLnArgs){1e-12f, true, true});
}

/* Values and gradients of bertc_ag_layernorm(bertc_ag_add(a, b)), on the tape and in
 * no_grad mode (where the sum is normalised in place). */
static void check_add_layernorm_matches(int64_t B, int64_t S, int64_t H)
{
    int64_t s[3] = {B, S, H}, hs[1] = {H}, n = B * S * H;
    Var *in[4] = {test_param(params, 3, s, &rng, -2, 2), test_param(params, 3, s, &rng, -2, 2),
                  test_param(params, 1, hs, &rng, 0.5f, 1.5f),
                  test_param(params, 1, hs, &rng, -1, 1)};
    float *seed = random_seed(n), *want[4], *got[4];
    char what[96];
    float *ref = grads_of(bertc_ag_layernorm(graph, bertc_ag_add(graph, in[0], in[1]), in[2], in[3], 1e-12f),
                          seed, in, 4, want);
    float *out = grads_of(bertc_ag_add_layernorm(graph, in[0], in[1], in[2], in[3], 1e-12f), seed,
                          in, 4, got);
    snprintf(what, sizeof what, "add_layernorm (%lld,%lld,%lld) value", (long long)B,
             (long long)S, (long long)H);
    expect_close(what, out, ref, n, 1e-6, 1e-6);
    static const char *const names[4] = {"a", "b", "gamma", "beta"};
    for (int k = 0; k < 4; k++) {
        snprintf(what, sizeof what, "add_layernorm (%lld,%lld,%lld) gradient of %s",
                 (long long)B, (long long)S, (long long)H, names[k]);
        expect_close(what, got[k], want[k], in[k]->value.numel, 1e-6, 1e-5);
    }
    bool old = bertc_ag_set_no_grad(graph, true);
    Var *inference = bertc_ag_add_layernorm(graph, in[0], in[1], in[2], in[3], 1e-12f);
    bertc_ag_set_no_grad(graph, old);
    snprintf(what, sizeof what, "add_layernorm (%lld,%lld,%lld) no_grad value", (long long)B,
             (long long)S, (long long)H);
    expect_close(what, inference->value.data, ref, n, 1e-6, 1e-6);
    bertc_ag_graph_reset(graph);
}

Test(grad_fused, add_layernorm_matches_add_then_layernorm)
{
    check_add_layernorm_matches(2, 3, 37);     /* odd rows: the SIMD tails */
    check_add_layernorm_matches(2, 64, 384);   /* 49152 elements: on the threads */
}

static void mismatched_add_layernorm(void *ctx)
{
    (void)ctx;
    int64_t sa[2] = {2, 8}, sb[2] = {3, 8};
    bertc_ag_add_layernorm(graph, bertc_ag_tensor(graph, 2, sa, false), bertc_ag_tensor(graph, 2, sb, false),
                     NULL, NULL, 1e-12f);
}

/* add_layernorm does not broadcast: the error names the op and both shapes */
Test(grad_fused, add_layernorm_shape_error)
{
    char msg[256];
    cr_assert(test_catch_fatal(mismatched_add_layernorm, NULL, msg, sizeof msg),
              "add_layernorm accepted a (2,8) + (3,8) sum");
    cr_assert(strstr(msg, "add_layernorm") && strstr(msg, "[2, 8]") && strstr(msg, "[3, 8]"),
              "add_layernorm: the message should name the op and both shapes, got: %s", msg);
}
