/* test/test_train_mlp.c — the whole stack learning something: a 2-layer MLP
 * (Linear + GELU + Linear, cross-entropy) trained with plain SGD written over
 * the tape, on XOR of two noisy coordinates. No linear model can beat
 * ln 2 = 0.693 on XOR, so a loss under 0.1 proves the network learned.
 * The same loop proves there is no malloc in a steady-state training step. */
#include "test/test_util.h"

#include <criterion/criterion.h>
#include <math.h>

#define N_POINTS 64
#define HIDDEN 16

typedef struct Mlp {
    Var *w1, *b1, *w2, *b2;   /* (16,2) (16) (2,16) (2) */
} Mlp;

static void init_normal(Var *v, Rng *rng, double std)
{
    for (int64_t i = 0; i < v->value.numel; i++)
        v->value.data[i] = (float)(std * bertc_rng_normal(rng));
}

static Mlp mlp_new(Arena *params, Rng *rng)
{
    int64_t w1s[2] = {HIDDEN, 2}, b1s[1] = {HIDDEN}, w2s[2] = {2, HIDDEN}, b2s[1] = {2};
    Mlp m = {bertc_ag_param(params, 2, w1s, "w1"), bertc_ag_param(params, 1, b1s, "b1"),
             bertc_ag_param(params, 2, w2s, "w2"), bertc_ag_param(params, 1, b2s, "b2")};
    init_normal(m.w1, rng, 1.0);
    init_normal(m.w2, rng, 0.25);
    return m;
}

/* x (N, 2) -> logits (N, 2) */
static Var *mlp_forward(Graph *g, const Mlp *m, Var *x)
{
    return bertc_ag_linear(g, bertc_ag_gelu(g, bertc_ag_linear(g, x, m->w1, m->b1)), m->w2, m->b2);
}

static void sgd_step(Var *p, float lr)
{
    for (int64_t i = 0; i < p->value.numel; i++)
        p->value.data[i] -= lr * p->grad[i];
    bertc_ag_zero_grad(p);
}

/* XOR data: points near the corners (+-1, +-1), label = [x > 0] xor [y > 0]. */
static void make_xor(Arena *a, Rng *rng, Tensor *x, ITensor *labels)
{
    int64_t xs[2] = {N_POINTS, 2}, ls[1] = {N_POINTS};
    *x = bertc_tensor_new(a, 2, xs);
    *labels = bertc_itensor_new(a, 1, ls);
    for (int i = 0; i < N_POINTS; i++) {
        float sx = (i & 1) ? 1.0f : -1.0f, sy = (i & 2) ? 1.0f : -1.0f;
        x->data[2 * i] = sx + 0.3f * (float)bertc_rng_normal(rng);
        x->data[2 * i + 1] = sy + 0.3f * (float)bertc_rng_normal(rng);
        labels->data[i] = (sx > 0) != (sy > 0);
    }
}

Test(train, mlp_learns_xor_without_malloc_in_the_loop)
{
    Arena *params = bertc_arena_create("params", 1 << 16);
    Graph *g = bertc_ag_graph_create(1 << 12, 3); /* small on purpose: step 1 must grow it */
    Rng rng = bertc_rng_seed(2024);
    Mlp m = mlp_new(params, &rng);
    Tensor x;
    ITensor labels;
    make_xor(params, &rng, &x, &labels);
    Var *params_list[4] = {m.w1, m.b1, m.w2, m.b2};

    float first_loss = 0, loss_value = 0;
    size_t mallocs_after_warmup = 0, sys_after_warmup = 0;
    const int steps = 400;
    for (int step = 0; step < steps; step++) {
        Var *loss = bertc_ag_cross_entropy(g, mlp_forward(g, &m, bertc_ag_constant(g, x)), &labels, -100);
        bertc_ag_backward(g, loss);
        loss_value = loss->value.data[0];
        if (step == 0)
            first_loss = loss_value;
        for (int i = 0; i < 4; i++)
            sgd_step(params_list[i], 0.5f);
        bertc_ag_graph_reset(g);
        if (step == 0) { /* the first step sized the step arena */
            mallocs_after_warmup = test_malloc_calls();
            sys_after_warmup = bertc_sys_alloc_count();
        }
    }
    cr_assert_gt(first_loss, 0.6f, "untrained loss %g is already low: the test is too easy",
                 (double)first_loss);
    cr_assert_lt(loss_value, 0.1f, "after %d SGD steps the loss is %g (start %g)", steps,
                 (double)loss_value, (double)first_loss);
    cr_assert_eq(test_malloc_calls(), mallocs_after_warmup,
                 "%zu malloc calls during %d steady-state steps",
                 test_malloc_calls() - mallocs_after_warmup, steps - 1);
    cr_assert_eq(bertc_sys_alloc_count(), sys_after_warmup);
    bertc_ag_graph_destroy(g);
    bertc_arena_destroy(params);
}
