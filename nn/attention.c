/* nn/attention.c — generic multi-head attention: the head split and merge
 * every attention uses, OpenNMT's MultiHeadedAttention (BertSum's), and the
 * BERTC_NAIVE switch.
 *
 *   heads:   (B, S, H) -> view (B, S, nh, d) -> permute -> (B, nh, S, d)
 *   scores:  (B, nh, S, S) = Q K^T / sqrt(d)      ("Attention Is All You Need", eq. 1)
 *   context: softmax(scores) V, merged back to (B, S, H).
 *
 * BERT's own self-attention (HF BertSelfAttention) is a model's, in
 * zoo/models/bert_attention.c; CGBERT's and QACGBERT's are theirs too. */
#include "nn/nn.h"

#include <math.h>
#include <stdlib.h>

/* ---- BERTC_NAIVE: the unfused path, for learners and debuggers ---------- */

/* -1 until BERTC_NAIVE is read (once: the first forward that asks), then 0
 * or 1. Unset, empty or "0" is the fused path. A graph is built by one
 * thread (the kernels' threads never ask), so a plain int does. */
static int naive_mode = -1;

bool bertc_naive(void)
{
    if (naive_mode < 0) {
        const char *env = getenv("BERTC_NAIVE");
        naive_mode = env && *env && !(env[0] == '0' && env[1] == '\0');
    }
    return naive_mode == 1;
}

void bertc_set_naive(bool on) { naive_mode = on; }

Var *bertc_nn_split_heads(Graph *g, Var *x, int64_t nh)
{
    int64_t B = x->value.shape[0], S = x->value.shape[1], H = x->value.shape[2];
    if (H % nh != 0)
        bertc_ag_shape_error("split_heads", "hidden size is not a multiple of the head count", x, NULL);
    int64_t shape[4] = {B, S, nh, H / nh};
    const int perm[4] = {0, 2, 1, 3};
    return bertc_ag_permute(g, bertc_ag_reshape(g, x, 4, shape), perm);
}

Var *bertc_nn_merge_heads(Graph *g, Var *x)
{
    int64_t B = x->value.shape[0], nh = x->value.shape[1], S = x->value.shape[2];
    int64_t d = x->value.shape[3];
    const int perm[4] = {0, 2, 1, 3};
    int64_t shape[3] = {B, S, nh * d};
    return bertc_ag_reshape(g, bertc_ag_permute(g, x, perm), 3, shape);
}

void bertc_onmt_attention_init(OnmtAttention *m, Registry *r, const char *attr, int64_t H,
                         int64_t heads, float dropout)
{
    if (H % heads != 0)
        bertc_fatal("attention: hidden size %lld is not a multiple of %lld heads",
                    (long long)H, (long long)heads);
    m->heads = heads;
    bertc_nn_push(r, attr, "MultiHeadedAttention", false);
    bertc_linear_init(&m->linear_keys, r, "linear_keys", H, H, true);
    bertc_linear_init(&m->linear_values, r, "linear_values", H, H, true);
    bertc_linear_init(&m->linear_query, r, "linear_query", H, H, true);
    bertc_nn_leaf(r, "softmax", "Softmax(dim=-1)");
    bertc_dropout_init(&m->dropout, r, "dropout", dropout);
    bertc_linear_init(&m->final_linear, r, "final_linear", H, H, true);
    bertc_nn_pop(r);
}

/* OpenNMT differs from BERT in two places that change the numbers:
 * the query is scaled before the product, and padded keys are replaced by
 * -1e18 rather than shifted by an additive mask. */
Var *bertc_onmt_attention_forward(Graph *g, const OnmtAttention *m, Var *key, Var *value,
                            Var *query, const ITensor *key_pad, Var **probs_out)
{
    Var *k = bertc_nn_split_heads(g, bertc_linear_forward(g, &m->linear_keys, key), m->heads);
    Var *v = bertc_nn_split_heads(g, bertc_linear_forward(g, &m->linear_values, value), m->heads);
    Var *q = bertc_nn_split_heads(g, bertc_linear_forward(g, &m->linear_query, query), m->heads);
    q = bertc_ag_scale(g, q, 1.0f / sqrtf((float)q->value.shape[3]));
    Var *scores = bertc_ag_matmul(g, q, k, false, true);                       /* (B, nh, S, S) */
    if (key_pad)
        scores = bertc_ag_masked_fill(g, scores, key_pad, -1e18f);
    Var *probs = bertc_ag_softmax(g, scores);
    if (probs_out)
        *probs_out = probs;
    Var *context = bertc_ag_matmul(g, bertc_dropout_forward(g, &m->dropout, probs), v, false, false);
    return bertc_linear_forward(g, &m->final_linear, bertc_nn_merge_heads(g, context));
}
