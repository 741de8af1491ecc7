/* nn/modules.c — Linear, Embedding, LayerNorm, Dropout, Conv1d. Each init
 * registers the module (printed as PyTorch prints it) and its parameters;
 * each forward is a few autograd ops. */
#include "nn/nn.h"

#include <string.h>

void bertc_linear_init(Linear *m, Registry *r, const char *attr, int64_t in, int64_t out, bool bias)
{
    m->in_features = in;
    m->out_features = out;
    bertc_nn_push(r, attr, bertc_nn_format(r, "Linear(in_features=%lld, out_features=%lld, bias=%s)",
                               (long long)in, (long long)out, bias ? "True" : "False"), true);
    int64_t bshape[1] = {out};
    m->weight = bertc_nn_linear_weight(r, "weight", out, in);
    m->bias = bias ? bertc_nn_param(r, "bias", 1, bshape, INIT_ZEROS) : NULL;
    bertc_nn_pop(r);
}

Var *bertc_linear_forward(Graph *g, const Linear *m, Var *x)
{
    return bertc_ag_linear(g, x, m->weight, m->bias);
}

Var *bertc_linear_act_forward(Graph *g, const Linear *m, Var *x, AgAct act)
{
    return bertc_ag_linear_act(g, x, m->weight, m->bias, act);
}

void bertc_linears_forward(Graph *g, const Linear *const *ms, int n, Var *x, Var **out)
{
    Var *w[QGEMM_PRODUCTS_MAX], *bias[QGEMM_PRODUCTS_MAX];
    if (n > QGEMM_PRODUCTS_MAX) {   /* more than one int8 call can share: one at a time */
        for (int i = 0; i < n; i++)
            out[i] = bertc_linear_forward(g, ms[i], x);
        return;
    }
    for (int i = 0; i < n; i++) {
        w[i] = ms[i]->weight;
        bias[i] = ms[i]->bias;
    }
    bertc_ag_linears(g, x, n, w, bias, out);
}

void bertc_embedding_init(Embedding *m, Registry *r, const char *attr, int64_t V, int64_t H,
                    int padding_idx)
{
    m->num_embeddings = V;
    m->dim = H;
    m->padding_idx = padding_idx;
    const char *repr = padding_idx >= 0
        ? bertc_nn_format(r, "Embedding(%lld, %lld, padding_idx=%d)", (long long)V, (long long)H,
                    padding_idx)
        : bertc_nn_format(r, "Embedding(%lld, %lld)", (long long)V, (long long)H);
    bertc_nn_push(r, attr, repr, true);
    int64_t shape[2] = {V, H};
    /* Only the word embeddings may be int8 (a quantised model's largest
     * table); position and token-type tables stay float32. */
    m->weight = strcmp(attr, "word_embeddings") == 0
        ? bertc_nn_word_embedding_weight(r, "weight", V, H)
        : bertc_nn_param(r, "weight", 2, shape, INIT_NORMAL);
    if (padding_idx >= 0)
        r->params[r->n_params - 1].zero_row = padding_idx;
    bertc_nn_pop(r);
}

Var *bertc_embedding_forward(Graph *g, const Embedding *m, const ITensor *ids)
{
    return bertc_ag_embedding(g, m->weight, ids, m->padding_idx);
}

void bertc_layernorm_init_named(LayerNorm *m, Registry *r, const char *attr, int64_t H, float eps,
                          const char *weight_name, const char *bias_name)
{
    m->dim = H;
    m->eps = eps;
    bertc_nn_push(r, attr, bertc_nn_format(r, "LayerNorm((%lld,), eps=%g, elementwise_affine=True)",
                               (long long)H, (double)eps), true);
    int64_t shape[1] = {H};
    m->weight = bertc_nn_param(r, weight_name, 1, shape, INIT_ONES);
    m->bias = bertc_nn_param(r, bias_name, 1, shape, INIT_ZEROS);
    bertc_nn_pop(r);
}

void bertc_layernorm_init(LayerNorm *m, Registry *r, const char *attr, int64_t H, float eps)
{
    bertc_layernorm_init_named(m, r, attr, H, eps, "weight", "bias");
}

Var *bertc_layernorm_forward(Graph *g, const LayerNorm *m, Var *x)
{
    return bertc_ag_layernorm(g, x, m->weight, m->bias, m->eps);
}

void bertc_dropout_init(Dropout *m, Registry *r, const char *attr, float p)
{
    m->p = p;
    bertc_nn_leaf(r, attr, bertc_nn_format(r, "Dropout(p=%g, inplace=False)", (double)p));
}

Var *bertc_dropout_forward(Graph *g, const Dropout *m, Var *x)
{
    return bertc_ag_dropout(g, x, m->p);
}

void bertc_conv1d_init(Conv1d *m, Registry *r, const char *attr, int64_t in, int64_t out, int64_t k)
{
    m->in_channels = in;
    m->out_channels = out;
    m->kernel_size = k;
    int64_t pad = (k - 1) / 2;
    const char *repr = pad
        ? bertc_nn_format(r, "Conv1d(%lld, %lld, kernel_size=(%lld,), stride=(1,), padding=(%lld,))",
                    (long long)in, (long long)out, (long long)k, (long long)pad)
        : bertc_nn_format(r, "Conv1d(%lld, %lld, kernel_size=(%lld,), stride=(1,))", (long long)in,
                    (long long)out, (long long)k);
    bertc_nn_push(r, attr, repr, true);
    int64_t wshape[3] = {out, in, k}, bshape[1] = {out};
    m->weight = bertc_nn_param(r, "weight", 3, wshape, INIT_NORMAL);
    m->bias = bertc_nn_param(r, "bias", 1, bshape, INIT_ZEROS);
    bertc_nn_pop(r);
}

Var *bertc_conv1d_forward(Graph *g, const Conv1d *m, Var *x)
{
    return bertc_ag_conv1d(g, x, m->weight, m->bias);
}
