/* test/test_tape.c — the tape itself: tied weights sum their gradients,
 * gradients accumulate until zero_grad, no_grad records nothing. */
#include "test/test_util.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

static Arena *params;
static Graph *graph;
static Rng rng;

static void setup(void)
{
    params = arena_create("params", 1 << 16);
    graph = ag_graph_create(1 << 16, 1);
    rng = rng_seed(11);
}

static void teardown(void)
{
    ag_graph_destroy(graph);
    arena_destroy(params);
}

TestSuite(tape, .init = setup, .fini = teardown);

static const int32_t tied_ids[4] = {2, 0, 2, 4};

/* A tied embedding, as BERT's MLM decoder: the table E (V=5, H=3) embeds the
 * ids and is also the output projection, logits = embed(ids) E^T. */
static Var *tied_model(Graph *g, Var **x, void *u)
{
    (void)u;
    int64_t shape[1] = {4};
    ITensor ids = itensor_view((int32_t *)tied_ids, 1, shape);
    Var *h = ag_embedding(g, x[0], &ids, -1);      /* (4, 3) */
    return ag_tanh(g, ag_linear(g, h, x[0], NULL)); /* (4, 5) */
}

Test(tape, tied_weight_gets_sum_of_both_uses)
{
    int64_t shape[2] = {5, 3};
    Var *table = test_param(params, 2, shape, &rng, -1, 1);
    Var *in[1] = {table};
    test_gradcheck("tied embedding", graph, tied_model, in, 1, NULL);

    /* The same sum, built by hand: use 1 alone (projection frozen) plus use 2
     * alone (embedding frozen), each through its own copy of the table. */
    int64_t ishape[1] = {4};
    ITensor ids = itensor_view((int32_t *)tied_ids, 1, ishape);
    ag_zero_grad(table);
    ag_graph_reset(graph);
    ag_backward(graph, ag_sum(graph, tied_model(graph, in, NULL), AG_ALL_DIMS, false));
    float both[15];
    memcpy(both, table->grad, sizeof both);

    Var *frozen = ag_param(params, 2, shape, "frozen copy");
    memcpy(frozen->value.data, table->value.data, sizeof both);
    frozen->requires_grad = false;
    ag_zero_grad(table);
    ag_graph_reset(graph);
    Var *y1 = ag_tanh(graph, ag_linear(graph, ag_embedding(graph, table, &ids, -1), frozen, NULL));
    ag_backward(graph, ag_sum(graph, y1, AG_ALL_DIMS, false));
    ag_graph_reset(graph);
    Var *y2 = ag_tanh(graph, ag_linear(graph, ag_embedding(graph, frozen, &ids, -1), table, NULL));
    ag_backward(graph, ag_sum(graph, y2, AG_ALL_DIMS, false)); /* accumulates */
    for (int i = 0; i < 15; i++)
        cr_assert(fabsf(table->grad[i] - both[i]) <= 1e-6f + 1e-5f * fabsf(both[i]),
                  "grad[%d]: tied %g, sum of separate uses %g", i, (double)both[i],
                  (double)table->grad[i]);
}

Test(tape, same_var_twice_in_one_op)
{
    /* y = x * x: both inputs of one node are the same Var; dy/dx = 2x. */
    int64_t shape[1] = {6};
    Var *x = test_param(params, 1, shape, &rng, -2, 2);
    ag_backward(graph, ag_sum(graph, ag_mul(graph, x, x), AG_ALL_DIMS, false));
    for (int i = 0; i < 6; i++)
        cr_assert_float_eq(x->grad[i], 2 * x->value.data[i], 1e-6, "grad[%d] = %g, x = %g", i,
                           (double)x->grad[i], (double)x->value.data[i]);
}

static void forward_backward(Var *w, Var *x)
{
    ag_graph_reset(graph);
    ag_backward(graph, ag_sum(graph, ag_linear(graph, x, w, NULL), AG_ALL_DIMS, false));
}

Test(tape, gradients_accumulate_until_zero_grad)
{
    int64_t ws[2] = {2, 3}, xs[2] = {4, 3};
    Var *w = test_param(params, 2, ws, &rng, -1, 1);
    Var *x = test_param(params, 2, xs, &rng, -1, 1);
    x->requires_grad = false;
    forward_backward(w, x);
    float once[6];
    memcpy(once, w->grad, sizeof once);
    forward_backward(w, x);
    for (int i = 0; i < 6; i++)
        cr_assert_float_eq(w->grad[i], 2 * once[i], 1e-6, "grad[%d] after two backward "
                           "passes = %g, expected %g", i, (double)w->grad[i], 2.0 * once[i]);
    ag_zero_grad(w);
    for (int i = 0; i < 6; i++)
        cr_assert_eq(w->grad[i], 0.0f);
    forward_backward(w, x);
    for (int i = 0; i < 6; i++)
        cr_assert_float_eq(w->grad[i], once[i], 1e-7);
}

Test(tape, no_grad_records_nothing_and_uses_less_memory)
{
    int64_t ws[2] = {8, 8}, xs[2] = {16, 8};
    Var *w = test_param(params, 2, ws, &rng, -1, 1);
    Var *x = test_param(params, 2, xs, &rng, -1, 1);

    ag_graph_reset(graph);
    Var *y = ag_layernorm(graph, ag_gelu(graph, ag_linear(graph, x, w, NULL)), NULL, NULL, 1e-5f);
    cr_assert(y->requires_grad);
    cr_assert_eq(graph->n_nodes, 3);
    size_t with_grad = arena_used(graph->step);
    float y_values[16 * 8];
    memcpy(y_values, y->value.data, sizeof y_values); /* y dies with the reset */

    ag_graph_reset(graph);
    ag_set_no_grad(graph, true);
    Var *z = ag_layernorm(graph, ag_gelu(graph, ag_linear(graph, x, w, NULL)), NULL, NULL, 1e-5f);
    ag_set_no_grad(graph, false);
    cr_assert(!z->requires_grad, "a no_grad result requires grad");
    cr_assert_eq(graph->n_nodes, 0, "no_grad recorded %lld nodes", (long long)graph->n_nodes);
    cr_assert_lt(arena_used(graph->step), with_grad, "no_grad used %zu bytes, with grad %zu",
                 arena_used(graph->step), with_grad);
    for (int64_t i = 0; i < z->value.numel; i++)
        cr_assert_eq(y_values[i], z->value.data[i], "value %lld differs", (long long)i);
}

/* Gradients of parameters are allocated lazily: one the loss never reaches
 * keeps no buffer at all. */
Test(tape, branch_not_reaching_loss_gets_no_gradient)
{
    int64_t s[1] = {4};
    Var *a = test_param(params, 1, s, &rng, -1, 1);
    Var *b = test_param(params, 1, s, &rng, -1, 1);
    ag_exp(graph, b); /* recorded, but unused */
    ag_backward(graph, ag_sum(graph, ag_tanh(graph, a), AG_ALL_DIMS, false));
    cr_assert_not_null(a->grad, "the parameter the loss reaches has no gradient");
    cr_assert_null(b->grad, "the unused branch got a gradient buffer");
}

Test(tape, no_grad_forward_allocates_no_parameter_gradient)
{
    int64_t s[2] = {3, 4};
    Var *w = test_param(params, 2, s, &rng, -1, 1);
    Var *x = test_param(params, 2, s, &rng, -1, 1);
    size_t before = arena_used(params);
    ag_set_no_grad(graph, true);
    ag_sum(graph, ag_linear(graph, x, w, NULL), AG_ALL_DIMS, false);
    ag_set_no_grad(graph, false);
    cr_assert_null(w->grad, "a no_grad forward allocated a gradient");
    cr_assert_eq(arena_used(params), before, "a no_grad forward used the parameter arena");
}

static void backward_of_vector(void *ctx)
{
    (void)ctx;
    int64_t s[1] = {3};
    Var *a = ag_param(params, 1, s, "a");
    ag_backward(graph, ag_tanh(graph, a));
}

Test(tape, backward_needs_a_scalar)
{
    char msg[BERTC_ERROR_LEN];
    cr_assert(test_catch_fatal(backward_of_vector, NULL, msg, sizeof msg));
    cr_assert(strstr(msg, "[3]") && strstr(msg, "one element"), "message: %s", msg);
}

Test(tape, op_table_is_complete)
{
    for (int op = 0; op < OP_COUNT; op++) {
        cr_assert(ag_op_table[op].name && ag_op_table[op].backward,
                  "op %d has no entry in ag_op_table", op);
    }
}
