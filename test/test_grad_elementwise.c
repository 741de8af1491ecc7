/* test/test_grad_elementwise.c — finite-difference gradient tests for add,
 * sub, mul, div (with broadcasting) and scale. */
#include "test/test_util.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <string.h>

TEST_SUITE_WITH_GRAPH(grad_elementwise, 7);

static Var *f_add(Graph *g, Var **x, void *u) { (void)u; return bertc_ag_add(g, x[0], x[1]); }
static Var *f_sub(Graph *g, Var **x, void *u) { (void)u; return bertc_ag_sub(g, x[0], x[1]); }
static Var *f_mul(Graph *g, Var **x, void *u) { (void)u; return bertc_ag_mul(g, x[0], x[1]); }
static Var *f_div(Graph *g, Var **x, void *u) { (void)u; return bertc_ag_div(g, x[0], x[1]); }
static Var *f_scale(Graph *g, Var **x, void *u) { (void)u; return bertc_ag_scale(g, x[0], -1.5f); }

/* a (2,3,4) with b (3,1): b broadcasts over dims 0 and 2, so its gradient is a
 * sum over them — the case a wrong reduction gets wrong. */
static void check_binary(const char *op, GradcheckFn fn, float lo_b)
{
    int64_t sa[3] = {2, 3, 4}, sb[2] = {3, 1};
    Var *in[2] = {test_param(params, 3, sa, &rng, -1, 1),
                  test_param(params, 2, sb, &rng, lo_b, lo_b + 1)};
    test_gradcheck(op, graph, fn, in, 2, NULL);
    /* and the other way round: the broadcast input first */
    Var *swapped[2] = {in[1], in[0]};
    if (lo_b > 0) /* div: the divisor must stay away from 0 */
        test_fill_uniform(in[0]->value.data, in[0]->value.numel, &rng, 0.5f, 1.5f);
    test_gradcheck(op, graph, fn, swapped, 2, NULL);
}

Test(grad_elementwise, add) { check_binary("add", f_add, -1); }
Test(grad_elementwise, sub) { check_binary("sub", f_sub, -1); }
Test(grad_elementwise, mul) { check_binary("mul", f_mul, -1); }
Test(grad_elementwise, div) { check_binary("div", f_div, 0.5f); }

Test(grad_elementwise, scale)
{
    int64_t s[2] = {3, 5};
    Var *in[1] = {test_param(params, 2, s, &rng, -1, 1)};
    test_gradcheck("scale", graph, f_scale, in, 1, NULL);
}

Test(grad_elementwise, broadcast_values)
{
    /* (2,1) + (3) -> (2,3): out[i][j] = a[i] + b[j] */
    int64_t sa[2] = {2, 1}, sb[1] = {3};
    Var *a = bertc_ag_tensor(graph, 2, sa, false), *b = bertc_ag_tensor(graph, 1, sb, false);
    a->value.data[0] = 10; a->value.data[1] = 20;
    b->value.data[0] = 1; b->value.data[1] = 2; b->value.data[2] = 3;
    Var *c = bertc_ag_add(graph, a, b);
    cr_assert_eq(c->value.ndim, 2);
    cr_assert_eq(c->value.shape[0], 2);
    cr_assert_eq(c->value.shape[1], 3);
    float expect[6] = {11, 12, 13, 21, 22, 23};
    for (int i = 0; i < 6; i++)
        cr_assert_float_eq(c->value.data[i], expect[i], 0, "add[%d] = %g, expected %g", i,
                           (double)c->value.data[i], (double)expect[i]);
}

static void add_mismatched(void *ctx)
{
    (void)ctx;
    int64_t sa[2] = {2, 3}, sb[2] = {4, 3};
    bertc_ag_add(graph, bertc_ag_tensor(graph, 2, sa, false), bertc_ag_tensor(graph, 2, sb, false));
}

Test(grad_elementwise, shape_mismatch_names_op_and_shapes)
{
    char msg[BERTC_ERROR_LEN];
    cr_assert(test_catch_fatal(add_mismatched, NULL, msg, sizeof msg), "add did not fail");
    cr_assert(strstr(msg, "add") && strstr(msg, "[2, 3]") && strstr(msg, "[4, 3]"),
              "message does not name the op and both shapes: %s", msg);
}

/* The default hook prints and aborts: the process dies with SIGABRT. */
Test(grad_elementwise, default_hook_aborts, .signal = SIGABRT)
{
    add_mismatched(NULL);
}
