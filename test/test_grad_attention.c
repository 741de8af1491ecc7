/* test/test_grad_attention.c — the in-place multi-head products
 * (bertc_ag_attention_scores, bertc_ag_attention_context): finite-difference gradients,
 * and the same numbers as the plain path they replace (split heads, matmul,
 * scale, add the mask; matmul, merge heads). B = 2, S = 3, H = 8 in nh = 2
 * heads of d = 4: every head offset and stride matters. */
#include "test/test_util.h"
#include "nn/nn.h"

#include <criterion/criterion.h>
#include <math.h>

static Arena *params;
static Graph *graph;
static Rng rng;
static Var *mask;

enum { B = 2, S = 3, H = 8, NH = 2 };
#define ALPHA 0.5f

static void setup(void)
{
    test_open(&params, &graph);
    rng = bertc_rng_seed(31);
    int64_t ms[4] = {B, 1, 1, S};
    /* batch entry 1 pads its last key; a mild -3, not -10000, so that the
     * finite differences keep their digits in float */
    mask = bertc_ag_param(params, 4, ms, "mask");
    mask->requires_grad = false;
    mask->value.data[S + S - 1] = -3.0f;
}

static void teardown(void) { test_close(params, graph); }

TestSuite(grad_attention, .init = setup, .fini = teardown);

static Var *f_scores(Graph *g, Var **x, void *u)
{
    (void)u;
    return bertc_ag_attention_scores(g, x[0], x[1], NH, ALPHA, mask);
}

static Var *f_context(Graph *g, Var **x, void *u)
{
    (void)u;
    return bertc_ag_attention_context(g, x[0], x[1]);
}

Test(grad_attention, scores)
{
    int64_t s[3] = {B, S, H};
    Var *in[2] = {test_param(params, 3, s, &rng, -1, 1), test_param(params, 3, s, &rng, -1, 1)};
    test_gradcheck("attention_scores", graph, f_scores, in, 2, NULL);
}

Test(grad_attention, context)
{
    int64_t ps[4] = {B, NH, S, S}, s[3] = {B, S, H};
    Var *in[2] = {test_param(params, 4, ps, &rng, 0, 1), test_param(params, 3, s, &rng, -1, 1)};
    test_gradcheck("attention_context", graph, f_context, in, 2, NULL);
}

static void expect_same(const char *what, const float *got, const float *want, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        cr_assert(fabsf(got[i] - want[i]) <= 1e-6f * (1.0f + fabsf(want[i])),
                  "%s at flat index %lld: in place %.8g, plain path %.8g", what, (long long)i,
                  (double)got[i], (double)want[i]);
}

Test(grad_attention, same_as_split_matmul_merge)
{
    int64_t s[3] = {B, S, H};
    Var *q = test_param(params, 3, s, &rng, -1, 1), *k = test_param(params, 3, s, &rng, -1, 1);
    Var *v = test_param(params, 3, s, &rng, -1, 1);
    Var *plain = bertc_ag_add(graph, bertc_ag_scale(graph, bertc_ag_matmul(graph, bertc_nn_split_heads(graph, q, NH),
                                                         bertc_nn_split_heads(graph, k, NH), false,
                                                         true), ALPHA), mask);
    Var *scores = bertc_ag_attention_scores(graph, q, k, NH, ALPHA, mask);
    expect_same("scores", scores->value.data, plain->value.data, plain->value.numel);
    Var *p = bertc_ag_softmax(graph, scores);
    Var *ctx_plain = bertc_nn_merge_heads(graph, bertc_ag_matmul(graph, p, bertc_nn_split_heads(graph, v, NH),
                                                     false, false));
    Var *ctx = bertc_ag_attention_context(graph, p, v);
    cr_assert_eq(ctx->value.ndim, 3);
    expect_same("context", ctx->value.data, ctx_plain->value.data, ctx_plain->value.numel);
}
