/* test/test_tape.c — the tape itself: tied weights sum their gradients,
 * gradients accumulate until zero_grad, no_grad records nothing. */
#include "test/test_util.h"
#include "tensor/kernels_internal.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

TEST_SUITE_WITH_GRAPH(tape, 11);

static const int32_t tied_ids[4] = {2, 0, 2, 4};

/* A tied embedding, as BERT's MLM decoder: the table E (V=5, H=3) embeds the
 * ids and is also the output projection, logits = embed(ids) E^T. */
static Var *tied_model(Graph *g, Var **x, void *u)
{
    (void)u;
    int64_t shape[1] = {4};
    ITensor ids = bertc_itensor_view((int32_t *)tied_ids, 1, shape);
    Var *h = bertc_ag_embedding(g, x[0], &ids, -1);      /* (4, 3) */
    return bertc_ag_tanh(g, bertc_ag_linear(g, h, x[0], NULL)); /* (4, 5) */
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
    ITensor ids = bertc_itensor_view((int32_t *)tied_ids, 1, ishape);
    bertc_ag_zero_grad(table);
    bertc_ag_graph_reset(graph);
    bertc_ag_backward(graph, bertc_ag_sum(graph, tied_model(graph, in, NULL), AG_ALL_DIMS, false));
    float both[15];
    memcpy(both, table->grad, sizeof both);

    Var *frozen = bertc_ag_param(params, 2, shape, "frozen copy");
    memcpy(frozen->value.data, table->value.data, sizeof both);
    frozen->requires_grad = false;
    bertc_ag_zero_grad(table);
    bertc_ag_graph_reset(graph);
    Var *y1 = bertc_ag_tanh(graph, bertc_ag_linear(graph, bertc_ag_embedding(graph, table, &ids, -1), frozen, NULL));
    bertc_ag_backward(graph, bertc_ag_sum(graph, y1, AG_ALL_DIMS, false));
    bertc_ag_graph_reset(graph);
    Var *y2 = bertc_ag_tanh(graph, bertc_ag_linear(graph, bertc_ag_embedding(graph, frozen, &ids, -1), table, NULL));
    bertc_ag_backward(graph, bertc_ag_sum(graph, y2, AG_ALL_DIMS, false)); /* accumulates */
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
    bertc_ag_backward(graph, bertc_ag_sum(graph, bertc_ag_mul(graph, x, x), AG_ALL_DIMS, false));
    for (int i = 0; i < 6; i++)
        cr_assert_float_eq(x->grad[i], 2 * x->value.data[i], 1e-6, "grad[%d] = %g, x = %g", i,
                           (double)x->grad[i], (double)x->value.data[i]);
}

static void forward_backward(Var *w, Var *x)
{
    bertc_ag_graph_reset(graph);
    bertc_ag_backward(graph, bertc_ag_sum(graph, bertc_ag_linear(graph, x, w, NULL), AG_ALL_DIMS, false));
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
    bertc_ag_zero_grad(w);
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

    bertc_ag_graph_reset(graph);
    Var *y = bertc_ag_layernorm(graph, bertc_ag_gelu(graph, bertc_ag_linear(graph, x, w, NULL)), NULL, NULL, 1e-5f);
    cr_assert(y->requires_grad);
    cr_assert_eq(graph->n_nodes, 3);
    size_t with_grad = bertc_arena_used(graph->step);
    float y_values[16 * 8];
    memcpy(y_values, y->value.data, sizeof y_values); /* y dies with the reset */

    bertc_ag_graph_reset(graph);
    bertc_ag_set_no_grad(graph, true);
    Var *z = bertc_ag_layernorm(graph, bertc_ag_gelu(graph, bertc_ag_linear(graph, x, w, NULL)), NULL, NULL, 1e-5f);
    bertc_ag_set_no_grad(graph, false);
    cr_assert(!z->requires_grad, "a no_grad result requires grad");
    cr_assert_eq(graph->n_nodes, 0, "no_grad recorded %lld nodes", (long long)graph->n_nodes);
    cr_assert_lt(bertc_arena_used(graph->step), with_grad, "no_grad used %zu bytes, with grad %zu",
                 bertc_arena_used(graph->step), with_grad);
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
    bertc_ag_exp(graph, b); /* recorded, but unused */
    bertc_ag_backward(graph, bertc_ag_sum(graph, bertc_ag_tanh(graph, a), AG_ALL_DIMS, false));
    cr_assert_not_null(a->grad, "the parameter the loss reaches has no gradient");
    cr_assert_null(b->grad, "the unused branch got a gradient buffer");
}

Test(tape, no_grad_forward_allocates_no_parameter_gradient)
{
    int64_t s[2] = {3, 4};
    Var *w = test_param(params, 2, s, &rng, -1, 1);
    Var *x = test_param(params, 2, s, &rng, -1, 1);
    size_t before = bertc_arena_used(params);
    bertc_ag_set_no_grad(graph, true);
    bertc_ag_sum(graph, bertc_ag_linear(graph, x, w, NULL), AG_ALL_DIMS, false);
    bertc_ag_set_no_grad(graph, false);
    cr_assert_null(w->grad, "a no_grad forward allocated a gradient");
    cr_assert_eq(bertc_arena_used(params), before, "a no_grad forward used the parameter arena");
}

static void backward_of_vector(void *ctx)
{
    (void)ctx;
    int64_t s[1] = {3};
    Var *a = bertc_ag_param(params, 1, s, "a");
    bertc_ag_backward(graph, bertc_ag_tanh(graph, a));
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
        cr_assert(bertc_ag_op_table[op].name && bertc_ag_op_table[op].backward,
                  "op %d has no entry in bertc_ag_op_table", op);
    }
}

/* ---- The first gradient to arrive is written, later ones add ---------------------- */

/* got[i] == want[i] within 1e-6 + 1e-5 |want|, naming the first index that is not. */
static void expect_grad(const char *what, const float *got, const double *want, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        cr_assert(fabs(got[i] - want[i]) <= 1e-6 + 1e-5 * fabs(want[i]),
                  "%s[%lld]: expected %.9g, got %.9g", what, (long long)i, want[i],
                  (double)got[i]);
}

/* dx (R, C) = dh (R, K) w (K, C): the gradient linear sends back to x. */
static void linear_dx(const double *dh, const Var *w, int64_t R, double *dx)
{
    int64_t K = w->value.shape[0], C = w->value.shape[1];
    for (int64_t r = 0; r < R; r++)
        for (int64_t c = 0; c < C; c++) {
            dx[r * C + c] = 0.0;
            for (int64_t k = 0; k < K; k++)
                dx[r * C + c] += dh[r * K + k] * w->value.data[k * C + c];
        }
}

/* h = linear(x, w1) (4, 5), a step Var, feeds two ops. The linear recorded last
 * runs its backward first and writes h's fresh gradient with a beta = 0 GEMM;
 * tanh's backward must then add to it:
 *   loss = sum(tanh(h)) + sum(h w2^T),  dh = (1 - tanh(h)^2) + column sums of w2. */
Test(tape, second_consumer_adds_to_a_written_gradient)
{
    int64_t xs[2] = {4, 3}, w1s[2] = {5, 3}, w2s[2] = {2, 5};
    Var *x = test_param(params, 2, xs, &rng, -1, 1);
    Var *w1 = test_param(params, 2, w1s, &rng, -1, 1);
    Var *w2 = test_param(params, 2, w2s, &rng, -1, 1);
    Var *h = bertc_ag_linear(graph, x, w1, NULL);
    Var *t = bertc_ag_sum(graph, bertc_ag_tanh(graph, h), AG_ALL_DIMS, false);
    Var *a = bertc_ag_sum(graph, bertc_ag_linear(graph, h, w2, NULL), AG_ALL_DIMS, false);
    bertc_ag_backward(graph, bertc_ag_add(graph, t, a));

    double dh[20], dx[12];
    for (int i = 0; i < 20; i++) {
        double th = tanh((double)h->value.data[i]);
        dh[i] = 1.0 - th * th + w2->value.data[i % 5] + w2->value.data[5 + i % 5];
    }
    expect_grad("h.grad", h->grad, dh, 20);
    linear_dx(dh, w1, 4, dx);
    expect_grad("x.grad", x->grad, dx, 12);
}

/* h (4, 6) feeds tanh and, through reshape to (2, 12), a square. Whichever
 * runs its backward first, h's gradient must be the sum of both:
 *   dh = (1 - tanh(h)^2) + 2 h.
 * reshape_first: the reshape is recorded last, so its backward runs first and
 * h takes the reshape's gradient buffer as its own; tanh then adds into it. */
static void reshape_and_other_consumer(bool reshape_first)
{
    int64_t xs[2] = {4, 3}, ws[2] = {6, 3}, flat[2] = {2, 12};
    Var *x = test_param(params, 2, xs, &rng, -1, 1);
    Var *w = test_param(params, 2, ws, &rng, -1, 1);
    bertc_ag_graph_reset(graph);
    Var *h = bertc_ag_linear(graph, x, w, NULL);
    Var *t = NULL, *r;
    if (reshape_first)
        t = bertc_ag_sum(graph, bertc_ag_tanh(graph, h), AG_ALL_DIMS, false);
    r = bertc_ag_reshape(graph, h, 2, flat);
    Var *sq = bertc_ag_sum(graph, bertc_ag_mul(graph, r, r), AG_ALL_DIMS, false);
    if (!reshape_first)
        t = bertc_ag_sum(graph, bertc_ag_tanh(graph, h), AG_ALL_DIMS, false);
    bertc_ag_backward(graph, bertc_ag_add(graph, t, sq));

    if (reshape_first)
        cr_assert(h->grad == r->grad, "the reshape ran first but h did not take its gradient "
                  "buffer: this test no longer covers the shared buffer");
    double dh[24], dx[12];
    for (int i = 0; i < 24; i++) {
        double hv = h->value.data[i], th = tanh(hv);
        dh[i] = 1.0 - th * th + 2.0 * hv;
    }
    expect_grad(reshape_first ? "h.grad (reshape first)" : "h.grad (tanh first)", h->grad, dh,
                24);
    linear_dx(dh, w, 4, dx);
    expect_grad(reshape_first ? "x.grad (reshape first)" : "x.grad (tanh first)", x->grad, dx,
                12);
}

Test(tape, reshape_shares_gradient_and_other_consumer_adds)
{
    reshape_and_other_consumer(true);
    reshape_and_other_consumer(false);
}

/* z = h + y hands its gradient to h unchanged, so h takes z's buffer; h's
 * other use (tanh, recorded earlier) then adds into it, while y gets a copy:
 *   loss = sum(tanh(h)) + sum(z * z),  dh = (1 - tanh(h)^2) + 2 z,  dy = 2 z. */
Test(tape, add_shares_gradient_and_other_consumer_adds)
{
    int64_t xs[2] = {4, 3}, ws[2] = {5, 3};
    Var *x = test_param(params, 2, xs, &rng, -1, 1);
    Var *w = test_param(params, 2, ws, &rng, -1, 1);
    Var *v = test_param(params, 2, ws, &rng, -1, 1);
    Var *h = bertc_ag_linear(graph, x, w, NULL);
    Var *y = bertc_ag_linear(graph, x, v, NULL);
    Var *t = bertc_ag_sum(graph, bertc_ag_tanh(graph, h), AG_ALL_DIMS, false);
    Var *z = bertc_ag_add(graph, h, y);
    bertc_ag_backward(graph, bertc_ag_add(graph, t, bertc_ag_sum(graph, bertc_ag_mul(graph, z, z), AG_ALL_DIMS, false)));

    cr_assert(h->grad == z->grad, "h did not take z's gradient buffer: this test no longer "
              "covers the shared buffer");
    double dh[20], dy[20];
    for (int i = 0; i < 20; i++) {
        double th = tanh((double)h->value.data[i]);
        dy[i] = 2.0 * z->value.data[i];
        dh[i] = 1.0 - th * th + dy[i];
    }
    expect_grad("h.grad", h->grad, dh, 20);
    expect_grad("y.grad", y->grad, dy, 20);
}
