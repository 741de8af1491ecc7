/* autograd/ops_attention.c — the two products of multi-head attention, reading
 * and writing the heads in place, and (at the end) inference's row-at-a-time
 * attention that never stores the scores.
 *
 * q, k, v come out of their Linear as (B, S, H) = (B, S, nh, d): head h of
 * batch entry b is the (S, d) matrix at offset b S H + h d with row stride H.
 * A GEMM with leading dimension H reads it there, so neither the split into
 * (B, nh, S, d) nor the merge back is ever copied (forward or backward):
 *
 *   scores[b, h] = alpha q_bh k_bh^T + mask[b]      (B, nh, S, S)   attention_scores
 *   context_bh   = p[b, h] v_bh                     (B, S, H)       attention_context
 *
 * mask is the additive (B, 1, 1, S) mask (no gradient), added to every row.
 * Backward, with G the upstream gradient:
 *   scores:  dq_bh += alpha G_bh k_bh;   dk_bh += alpha G_bh^T q_bh
 *   context: dp_bh += G_bh v_bh^T;       dv_bh += p_bh^T G_bh
 * The blocks of a gradient cover all of it, so each GEMM writes (beta = 0)
 * instead of adding when that gradient is new (bertc_ag_grad_full).
 * The (b, h) blocks are independent: bertc_parallel_for hands them to the threads
 * (each block's GEMM is too small to split further). */
#include "autograd/ops_internal.h"

typedef struct HeadDims {
    int64_t B, S, H, nh, d;
} HeadDims;

static HeadDims head_dims(const char *op, Var *x, int64_t nh)
{
    const Tensor *t = &x->value;
    if (t->ndim != 3 || nh < 1 || t->shape[2] % nh != 0)
        bertc_ag_shape_error(op, "needs (B, S, H) with H a multiple of the head count", x, NULL);
    HeadDims h = {t->shape[0], t->shape[1], t->shape[2], nh, t->shape[2] / nh};
    return h;
}

typedef struct HeadJob {
    HeadDims hd;
    float alpha;
    const float *a, *b, *mask;   /* operands; mask (B, S) or NULL */
    float *out;
    float beta;                  /* gradients: 1 adds into out, 0 writes it */
    int kind;                    /* which product, below */
} HeadJob;

enum { SCORES, DQ, DK, CONTEXT, DP, DV };

/* One (b, h) block of one of the six products. Offsets: a head of a (B, S, H)
 * tensor starts at b S H + h d (row stride H), a block of a (B, nh, S, S)
 * tensor at (b nh + h) S S (row stride S). */
static void head_block(const HeadJob *j, int64_t bh)
{
    const HeadDims *h = &j->hd;
    int64_t b = bh / h->nh, S = h->S, H = h->H, d = h->d;
    int64_t head = b * S * H + bh % h->nh * d, block = bh * S * S;
    switch (j->kind) {
    case SCORES:
        bertc_gemm(false, true, S, S, d, j->alpha, j->a + head, H, j->b + head, H, 0.0f,
             j->out + block, S);
        if (j->mask)
            for (int64_t i = 0; i < S; i++)
                bertc_kernel_add_inplace(j->out + block + i * S, j->mask + b * S, S);
        break;
    case DQ:      /* a = G (scores grad), b = k */
        bertc_gemm(false, false, S, d, S, j->alpha, j->a + block, S, j->b + head, H, j->beta,
             j->out + head, H);
        break;
    case DK:      /* a = G, b = q */
        bertc_gemm(true, false, S, d, S, j->alpha, j->a + block, S, j->b + head, H, j->beta,
             j->out + head, H);
        break;
    case CONTEXT: /* a = p, b = v */
        bertc_gemm(false, false, S, d, S, 1.0f, j->a + block, S, j->b + head, H, 0.0f,
             j->out + head, H);
        break;
    case DP:      /* a = G (context grad), b = v */
        bertc_gemm(false, true, S, S, d, 1.0f, j->a + head, H, j->b + head, H, j->beta,
             j->out + block, S);
        break;
    case DV:      /* a = p, b = G */
        bertc_gemm(true, false, S, d, S, 1.0f, j->a + block, S, j->b + head, H, j->beta,
             j->out + head, H);
        break;
    }
}

static void head_range(void *ctx, int64_t begin, int64_t end)
{
    for (int64_t bh = begin; bh < end; bh++)
        head_block(ctx, bh);
}

static void run_heads(HeadDims hd, int kind, float alpha, const float *a, const float *b,
                      const float *mask, float *out, float beta)
{
    HeadJob j = {hd, alpha, a, b, mask, out, beta, kind};
    bertc_parallel_for(hd.B * hd.nh, head_range, &j);
}

/* The gradient buffer of x for run_heads, and the beta that adds into it or
 * writes it (every head block is written, so together they cover it all). */
static float *head_grad(Graph *g, Var *x, float *beta)
{
    bool accumulate;
    float *grad = bertc_ag_grad_full(g, x, &accumulate);
    *beta = accumulate ? 1.0f : 0.0f;
    return grad;
}

Var *bertc_ag_attention_scores(Graph *g, Var *q, Var *k, int64_t nh, float alpha, Var *mask)
{
    HeadDims hd = head_dims("attention_scores", q, nh);
    if (!bertc_tensor_same_shape(&q->value, &k->value))
        bertc_ag_shape_error("attention_scores", "q and k differ", q, k);
    if (mask && mask->value.numel != hd.B * hd.S)
        bertc_ag_shape_error("attention_scores", "the mask must be (B, 1, 1, S)", mask, q);
    int64_t shape[4] = {hd.B, nh, hd.S, hd.S};
    Var *in[2] = {q, k};
    Var *out = bertc_ag_result(g, 4, shape, in, 2);
    run_heads(hd, SCORES, alpha, q->value.data, k->value.data, mask ? mask->value.data : NULL,
              out->value.data, 0.0f);
    Node *node = bertc_ag_record(g, OP_ATTENTION_SCORES, out, in, 2);
    if (node)
        node->attr.attention_scores = (AttentionScoresAttrs){.nh = nh, .alpha = alpha};
    return out;
}

void bertc_attention_scores_backward(Graph *g, Node *node)
{
    Var *q = node->in[0], *k = node->in[1];
    HeadDims hd = head_dims("attention_scores", q, node->attr.attention_scores.nh);
    float alpha = node->attr.attention_scores.alpha, beta;
    if (q->requires_grad) {
        float *dq = head_grad(g, q, &beta);
        run_heads(hd, DQ, alpha, node->out->grad, k->value.data, NULL, dq, beta);
    }
    if (k->requires_grad) {
        float *dk = head_grad(g, k, &beta);
        run_heads(hd, DK, alpha, node->out->grad, q->value.data, NULL, dk, beta);
    }
}

Var *bertc_ag_attention_context(Graph *g, Var *p, Var *v)
{
    const Tensor *P = &p->value;
    if (P->ndim != 4 || P->shape[2] != P->shape[3])
        bertc_ag_shape_error("attention_context", "p must be (B, nh, S, S)", p, v);
    HeadDims hd = head_dims("attention_context", v, P->shape[1]);
    if (P->shape[0] != hd.B || P->shape[2] != hd.S)
        bertc_ag_shape_error("attention_context", "p (B, nh, S, S) and v (B, S, H) differ", p, v);
    Var *in[2] = {p, v};
    Var *out = bertc_ag_result(g, 3, v->value.shape, in, 2);
    run_heads(hd, CONTEXT, 1.0f, P->data, v->value.data, NULL, out->value.data, 0.0f);
    bertc_ag_record(g, OP_ATTENTION_CONTEXT, out, in, 2);
    return out;
}

void bertc_attention_context_backward(Graph *g, Node *node)
{
    Var *p = node->in[0], *v = node->in[1];
    HeadDims hd = head_dims("attention_context", v, p->value.shape[1]);
    float beta;
    if (p->requires_grad) {
        float *dp = head_grad(g, p, &beta);
        run_heads(hd, DP, 1.0f, node->out->grad, v->value.data, NULL, dp, beta);
    }
    if (v->requires_grad) {
        float *dv = head_grad(g, v, &beta);
        run_heads(hd, DV, 1.0f, p->value.data, node->out->grad, NULL, dv, beta);
    }
}

/* The fused attentions below keep no probabilities, so they have no
 * backward: an input that needs a gradient is refused rather than given a
 * wrong one. */
static void refuse_grad(const Graph *g, const char *op, const Var *q, const Var *k,
                        const Var *v)
{
    if (!g->no_grad && (q->requires_grad || k->requires_grad || v->requires_grad))
        bertc_fatal("%s: q, k or v requires grad and this op has no backward (it keeps no "
                    "attention probabilities); run it under no_grad, or use attention_scores, "
                    "softmax and attention_context", op);
}

/* attention_heads: attention_context(softmax(attention_scores(...)), v) with
 * their bits, one (b, h) block at a time (bertc_kernel_attention_heads): the
 * (B, nh, S, S) probabilities are never stored. No backward: an input that
 * needs a gradient is refused, as in attention_rows below. */
Var *bertc_ag_attention_heads(Graph *g, Var *q, Var *k, Var *v, int64_t nh, float alpha,
                              Var *mask)
{
    HeadDims hd = head_dims("attention_heads", q, nh);
    if (!bertc_tensor_same_shape(&q->value, &k->value) ||
        !bertc_tensor_same_shape(&k->value, &v->value))
        bertc_ag_shape_error("attention_heads", "q, k and v differ", q, k);
    if (mask && mask->value.numel != hd.B * hd.S)
        bertc_ag_shape_error("attention_heads", "the mask must be (B, 1, 1, S)", mask, q);
    refuse_grad(g, "attention_heads", q, k, v);
    Var *in[3] = {q, k, v};
    Var *out = bertc_ag_result(g, 3, q->value.shape, in, 3);
    size_t floats = (size_t)bertc_kernel_attention_heads_parts() * (size_t)(hd.S * hd.S);
    float *scratch = bertc_arena_alloc(g->step, sizeof(float) * floats);
    bertc_kernel_attention_heads(out->value.data, q->value.data, k->value.data, v->value.data,
                                 mask ? mask->value.data : NULL, scratch, hd.B, hd.S, hd.H, nh,
                                 alpha);
    return out;
}

/* attention_rows: the context of attention_scores, softmax and
 * attention_context in one pass per query row (bertc_kernel_attention_rows),
 * never storing the (B, nh, Sq, S) scores or probabilities. q may hold a block
 * of Sq query rows of each sequence against all S keys. It keeps nothing for
 * a backward, so it has none and is not in the op table: an input that needs
 * a gradient is refused here rather than given a wrong one. over_q writes the
 * context over q's values and returns q (the lean encoder's way to need no
 * buffer for it). */
Var *bertc_ag_attention_rows(Graph *g, Var *q, Var *k, Var *v, int64_t nh, float alpha,
                             Var *mask, bool over_q)
{
    HeadDims hd = head_dims("attention_rows", k, nh);
    const Tensor *Q = &q->value;
    if (Q->ndim != 3 || Q->shape[0] != hd.B || Q->shape[2] != hd.H)
        bertc_ag_shape_error("attention_rows", "q must be (B, Sq, H) as k (B, S, H)", q, k);
    if (!bertc_tensor_same_shape(&k->value, &v->value))
        bertc_ag_shape_error("attention_rows", "k and v differ", k, v);
    if (mask && mask->value.numel != hd.B * hd.S)
        bertc_ag_shape_error("attention_rows", "the mask must be (B, 1, 1, S)", mask, k);
    refuse_grad(g, "attention_rows", q, k, v);
    Var *in[3] = {q, k, v};
    Var *out = over_q ? q : bertc_ag_result(g, 3, Q->shape, in, 3);
    float *scores_rows = bertc_arena_alloc(g->step, sizeof(float) * (size_t)(hd.B * nh * hd.S));
    bertc_kernel_attention_rows(out->value.data, Q->data, k->value.data, v->value.data,
                                mask ? mask->value.data : NULL, scores_rows, hd.B, Q->shape[1],
                                hd.S, hd.H, nh, alpha);
    return out;
}
