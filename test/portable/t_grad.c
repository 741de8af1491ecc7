/* test/portable/t_grad.c — a few gradient checks on the target: the tape's
 * gradient of f = sum_i w_i out_i (w random) against central differences,
 * for the ops a BERT forward is made of. */
#include "test/portable/portable.h"

#include <math.h>

#define STEP_BYTES (256u << 10)
#define EPS 1e-2f

/* The function under test: parameters p[0..n) -> one output Var. */
typedef Var *(*GradFn)(Graph *g, Var **p, const ITensor *ids);

/* f(p) = sum w_i out_i, accumulated in double, on a fresh tape. */
static double evaluate(Graph *g, GradFn fn, Var **p, const ITensor *ids, const float *w)
{
    bertc_ag_graph_reset(g);
    Var *out = fn(g, p, ids);
    double f = 0.0;
    for (int64_t i = 0; i < out->value.numel; i++)
        f += (double)w[i] * out->value.data[i];
    return f;
}

/* Every element of every parameter: |backward - numeric| <= 1e-3 + 2e-2 |numeric|. */
static void grad_case(Arena *a, const char *name, GradFn fn, Var **p, int n_p,
                      const ITensor *ids)
{
    Arena step;
    bertc_arena_init_fixed(&step, "step", bertc_arena_alloc(a, STEP_BYTES), STEP_BYTES);
    Graph g;
    bertc_ag_graph_init(&g, &step, 1);
    bertc_ag_set_training(&g, false);
    Var *out = fn(&g, p, ids);
    float *w = bertc_arena_alloc(a, sizeof(float) * (size_t)out->value.numel);
    Rng r = bertc_rng_seed(7);
    for (int64_t i = 0; i < out->value.numel; i++)
        w[i] = (float)(2.0 * bertc_rng_uniform(&r) - 1.0);
    for (int k = 0; k < n_p; k++)
        bertc_ag_zero_grad(p[k]);
    bertc_ag_backward_seeded(&g, out, w);
    for (int k = 0; k < n_p; k++)
        for (int64_t i = 0; i < p[k]->value.numel; i++) {
            float *x = &p[k]->value.data[i], saved = *x;
            *x = saved + EPS;
            double f_plus = evaluate(&g, fn, p, ids, w);
            *x = saved - EPS;
            double f_minus = evaluate(&g, fn, p, ids, w);
            *x = saved;
            double numeric = (f_plus - f_minus) / ((double)(saved + EPS) - (double)(saved - EPS));
            if (!pt_close(p[k]->grad[i], numeric, 1e-3, 2e-2)) {
                pt_check(false, "grad %s: parameter %d [%lld]: backward %.6g, numeric %.6g",
                         name, k, (long long)i, (double)p[k]->grad[i], numeric);
                return;
            }
        }
    pt_check(true, "grad %s", name);
}

static Var *param(Arena *a, Rng *r, int64_t d0, int64_t d1)
{
    int64_t shape[2] = {d0, d1};
    Var *v = bertc_ag_param(a, 2, shape, "p");
    for (int64_t i = 0; i < v->value.numel; i++)
        v->value.data[i] = (float)(2.0 * bertc_rng_uniform(r) - 1.0);
    return v;
}

/* gelu(x W^T + b): BERT's intermediate dense. */
static Var *linear_gelu(Graph *g, Var **p, const ITensor *ids)
{
    (void)ids;
    int64_t shape[1] = {p[2]->value.numel};
    return bertc_ag_gelu(g, bertc_ag_linear(g, p[0], p[1], bertc_ag_reshape(g, p[2], 1, shape)));
}

/* LayerNorm over the last dim with affine parameters. */
static Var *layernorm(Graph *g, Var **p, const ITensor *ids)
{
    (void)ids;
    int64_t shape[1] = {p[1]->value.numel};
    return bertc_ag_layernorm(g, p[0], bertc_ag_reshape(g, p[1], 1, shape), bertc_ag_reshape(g, p[2], 1, shape),
                        1e-5f);
}

/* softmax(Q K^T / 2) V: one attention head. */
static Var *attention(Graph *g, Var **p, const ITensor *ids)
{
    (void)ids;
    Var *scores = bertc_ag_scale(g, bertc_ag_matmul(g, p[0], p[1], false, true), 0.5f);
    return bertc_ag_matmul(g, bertc_ag_softmax(g, scores), p[2], false, false);
}

/* cross_entropy(embedding(ids) W^T, labels): the classifier's loss. */
static Var *embed_ce(Graph *g, Var **p, const ITensor *ids)
{
    Var *h = bertc_ag_embedding(g, p[0], ids, -1);
    Var *logits = bertc_ag_tanh(g, bertc_ag_linear(g, h, p[1], NULL));
    ITensor labels = bertc_itensor_view(ids->data + ids->numel, 1, ids->shape);
    return bertc_ag_cross_entropy(g, logits, &labels, -100);
}

void test_grad(void)
{
    Arena *a = pt_arena();
    Rng r = bertc_rng_seed(3);
    Var *p[3] = {param(a, &r, 3, 5), param(a, &r, 4, 5), param(a, &r, 1, 4)};
    grad_case(a, "linear+gelu", linear_gelu, p, 3, NULL);
    Var *q[3] = {param(a, &r, 4, 6), param(a, &r, 1, 6), param(a, &r, 1, 6)};
    grad_case(a, "layernorm", layernorm, q, 3, NULL);
    Var *s[3] = {param(a, &r, 3, 4), param(a, &r, 5, 4), param(a, &r, 5, 2)};
    grad_case(a, "attention", attention, s, 3, NULL);
    int32_t data[8] = {1, 4, 0, 4, /* labels: */ 2, 0, 1, 2};
    int64_t n[1] = {4};
    ITensor ids = bertc_itensor_view(data, 1, n);
    Var *e[2] = {param(a, &r, 5, 3), param(a, &r, 3, 3)};
    grad_case(a, "embedding+tanh+cross_entropy", embed_ce, e, 2, &ids);
}
