/* zoo/models/bert_attention.c — BERT's self-attention, HF's BertSelfAttention
 * (modeling_bert.py), equations (3) and (4) of zoo/models/bert.c:
 *
 *   (3)  Q = X W_q + b_q,  K = X W_k + b_k,  V = X W_v + b_v      (B, S, H)
 *        heads: (B, S, H) = (B, S, nh, d) -> (B, nh, S, d),  d = H / nh
 *   (4)  P = softmax(Q K^T / sqrt(d) + M)                          (B, nh, S, S)
 *        C = merge(dropout(P) V)                                   (B, S, H)
 *
 * "Attention Is All You Need" eq. 1, with M the additive mask (B, 1, 1, S) of
 * bert.c's equation (2). W_q, W_k, W_v are attention.self.{query,key,value};
 * P is the layer's output "layers.{l}.attention_probs" (before dropout).
 *
 * Two ways to the same numbers: by default the heads are read where the Linear
 * wrote them (autograd/ops_attention.c: bertc_ag_attention_scores folds the
 * scale and M into the product, bertc_ag_attention_context merges as it
 * writes), so the four permute copies of the split and the merge never
 * happen; BERTC_NAIVE=1 (bertc_naive, nn/attention.c) takes HF's steps one op
 * at a time instead (naive_attention). The generic multi-head pieces — the
 * head split and merge, OpenNMT's attention — stay in nn/attention.c. */
#include "zoo/models/bert.h"

#include <math.h>

void bertc_bert_self_attention_init(BertSelfAttention *m, Registry *r, int64_t H, int64_t heads,
                                    float attention_dropout)
{
    if (H % heads != 0)
        bertc_fatal("attention: hidden size %lld is not a multiple of %lld heads",
                    (long long)H, (long long)heads);
    m->heads = heads;
    bertc_linear_init(&m->query, r, "query", H, H, true);
    bertc_linear_init(&m->key, r, "key", H, H, true);
    bertc_linear_init(&m->value, r, "value", H, H, true);
    bertc_dropout_init(&m->dropout, r, "dropout", attention_dropout);
}

/* (4) as HF's BertSelfAttention.forward writes it: transpose_for_scores
 * (permute copies), matmul, / sqrt(d), + M, softmax, dropout, matmul, and
 * the permute and view back. */
static Var *naive_attention(Graph *g, const BertSelfAttention *m, Var *q, Var *k, Var *v,
                            float scale, Var *mask_add, Var **probs_out)
{
    Var *qh = bertc_nn_split_heads(g, q, m->heads);                     /* (B, nh, S, d) */
    Var *kh = bertc_nn_split_heads(g, k, m->heads);
    Var *vh = bertc_nn_split_heads(g, v, m->heads);
    Var *scores = bertc_ag_matmul(g, qh, kh, false, true);              /* Q K^T (B, nh, S, S) */
    scores = bertc_ag_scale(g, scores, scale);                          /* / sqrt(d) */
    if (mask_add)
        scores = bertc_ag_add(g, scores, mask_add);                     /* + M (B, 1, 1, S) */
    Var *probs = bertc_ag_softmax(g, scores);                           /* P */
    if (probs_out)
        *probs_out = probs;
    Var *dropped = bertc_dropout_forward(g, &m->dropout, probs);
    Var *context = bertc_ag_matmul(g, dropped, vh, false, false);       /* P V (B, nh, S, d) */
    return bertc_nn_merge_heads(g, context);                            /* C (B, S, H) */
}

Var *bertc_bert_self_attention_forward(Graph *g, const BertSelfAttention *m, Var *x,
                                       Var *mask_add, Var **probs_out)
{
    const Linear *qkv[3] = {&m->query, &m->key, &m->value};
    Var *y[3];
    bertc_linears_forward(g, qkv, 3, x, y);         /* one read of X (int8: one quantisation) */
    Var *q = y[0], *k = y[1], *v = y[2];                                /* (3) Q, K, V (B, S, H) */
    float scale = 1.0f / sqrtf((float)(q->value.shape[2] / m->heads)); /* 1 / sqrt(d) */
    if (bertc_naive())
        return naive_attention(g, m, q, k, v, scale, mask_add, probs_out);
    if (g->no_grad && g->final_only && !g->training) {   /* no map kept, no dropout */
        if (probs_out)
            *probs_out = NULL;
        return bertc_ag_attention_heads(g, q, k, v, m->heads, scale, mask_add);   /* (4) C */
    }
    /* (4) Q K^T / sqrt(d) + M (B, nh, S, S): the scale and M folded into the product */
    Var *scores = bertc_ag_attention_scores(g, q, k, m->heads, scale, mask_add);
    Var *probs = bertc_ag_softmax(g, scores);                           /* (4) P (B, nh, S, S) */
    if (probs_out)
        *probs_out = probs;
    Var *dropped = bertc_dropout_forward(g, &m->dropout, probs);
    return bertc_ag_attention_context(g, dropped, v);                   /* (4) C = P V (B, S, H) */
}
