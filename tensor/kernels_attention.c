/* tensor/kernels_attention.c — multi-head attention one query row at a time
 * ("Attention Is All You Need", eq. 1), never holding an (S, S) map:
 *
 *   for each batch entry b, head h, query row i < Sq:
 *       s_j   = alpha q_bhi . k_bhj + mask[b, j]          j < S    (S floats)
 *       p     = softmax(s)                                          (in place)
 *       out_bhi = sum_j p_j v_bhj                                   (d floats)
 *
 * q, out are (B, Sq, H) and k, v (B, S, H) = (B, S, nh, d) as their Linear
 * wrote them: head h of key row (b, j) is the d floats at (b S + j) H + h d.
 * Sq may be a block of the sequence's query rows (the lean encoder takes
 * them a few at a time). The only scratch is one row of S scores per (b, h)
 * block, so inference memory does not grow with S^2 (zoo/models/bert_inference.c). Numerics: the dot products are float
 * sums in j order; the softmax is the scalar reference kernel (double sum,
 * bertc_expf), so every target gives the same bits. It is the oracle and the
 * only path: the embedded targets it is for are scalar. */
#include "tensor/kernels_internal.h"

typedef struct AttnRowsJob {
    float *out, *scratch;
    const float *q, *k, *v, *mask;   /* mask (B, S) additive, or NULL */
    int64_t Sq, S, H, nh, d;
    float alpha;
} AttnRowsJob;

/* One query row of one head: s (S) is the scores row, then the probabilities. */
static void attention_row(const AttnRowsJob *j, int64_t b, int64_t h, int64_t i, float *s)
{
    int64_t S = j->S, H = j->H, d = j->d;
    const float *qi = j->q + (b * j->Sq + i) * H + h * d;
    for (int64_t t = 0; t < S; t++) {                       /* s_t = alpha q_i . k_t + M_t */
        const float *kt = j->k + (b * S + t) * H + h * d;
        float dot = 0.0f;
        for (int64_t c = 0; c < d; c++)
            dot += qi[c] * kt[c];
        s[t] = j->alpha * dot + (j->mask ? j->mask[b * S + t] : 0.0f);
    }
    bertc_row_kernels_scalar.softmax_rows(s, s, 1, S);      /* p = softmax(s) */
    /* q_i has been read: out_i may be q_i itself */
    float *oi = j->out + (b * j->Sq + i) * H + h * d;
    for (int64_t c = 0; c < d; c++)
        oi[c] = 0.0f;
    for (int64_t t = 0; t < S; t++) {                       /* out_i = sum_t p_t v_t */
        const float *vt = j->v + (b * S + t) * H + h * d;
        for (int64_t c = 0; c < d; c++)
            oi[c] += s[t] * vt[c];
    }
}

/* Blocks (b, h) in [begin, end): each has its own scores row in scratch. */
static void attention_blocks(void *ctx, int64_t begin, int64_t end)
{
    const AttnRowsJob *j = ctx;
    for (int64_t bh = begin; bh < end; bh++)
        for (int64_t i = 0; i < j->Sq; i++)
            attention_row(j, bh / j->nh, bh % j->nh, i, j->scratch + bh * j->S);
}

void bertc_kernel_attention_rows(float *out, const float *q, const float *k, const float *v,
                                 const float *mask, float *scratch, int64_t B, int64_t Sq,
                                 int64_t S, int64_t H, int64_t nh, float alpha)
{
    AttnRowsJob j = {.out = out, .scratch = scratch, .q = q, .k = k, .v = v, .mask = mask,
                     .Sq = Sq, .S = S, .H = H, .nh = nh, .d = H / nh, .alpha = alpha};
    bertc_parallel_for(B * nh, attention_blocks, &j);
}

/* ---- one head at a time: the scores of a (b, h) block while in cache ------
 *
 * The same three steps as the tape's ops (autograd/ops_attention.c
 * attention_scores, softmax, attention_context), the same calls on the same
 * operands, so the same bits; only where the (S, S) scores of a block live
 * differs: in one buffer per chunk of the pool, reused block after block
 * while it is in L1/L2, instead of a (B, nh, S, S) tensor written out and
 * read back three times. */
typedef struct AttnHeadsJob {
    float *out, *scratch;
    const float *q, *k, *v, *mask;   /* mask (B, S) additive, or NULL */
    int64_t S, H, nh, d, blocks;
    int parts;
    float alpha;
} AttnHeadsJob;

static void attention_head(const AttnHeadsJob *j, int64_t bh, float *s)
{
    int64_t b = bh / j->nh, S = j->S, H = j->H;
    int64_t head = b * S * H + bh % j->nh * j->d;
    bertc_gemm(false, true, S, S, j->d, j->alpha, j->q + head, H, j->k + head, H, 0.0f, s, S);
    if (j->mask)                                            /* s = alpha q k^T + M */
        for (int64_t i = 0; i < S; i++)
            bertc_kernel_add_inplace(s + i * S, j->mask + b * S, S);
    bertc_kernel_softmax_rows(s, s, S, S);                  /* p = softmax(s) */
    bertc_gemm(false, false, S, j->d, S, 1.0f, s, S, j->v + head, H, 0.0f, j->out + head, H);
}

/* Chunks [begin, end) of the `parts` equal shares of the blocks, in the
 * buffer of chunk `begin` (a chunk's parts run one after another). */
static void attention_head_parts(void *ctx, int64_t begin, int64_t end)
{
    const AttnHeadsJob *j = ctx;
    float *s = j->scratch + begin * j->S * j->S;
    for (int64_t part = begin; part < end; part++)
        for (int64_t bh = part * j->blocks / j->parts; bh < (part + 1) * j->blocks / j->parts; bh++)
            attention_head(j, bh, s);
}

int bertc_kernel_attention_heads_parts(void)
{
    return bertc_threads_count();
}

void bertc_kernel_attention_heads(float *out, const float *q, const float *k, const float *v,
                                  const float *mask, float *scratch, int64_t B, int64_t S,
                                  int64_t H, int64_t nh, float alpha)
{
    int parts = bertc_kernel_attention_heads_parts();
    AttnHeadsJob j = {.out = out, .scratch = scratch, .q = q, .k = k, .v = v, .mask = mask,
                      .S = S, .H = H, .nh = nh, .d = H / nh, .blocks = B * nh,
                      .parts = parts, .alpha = alpha};
    bertc_parallel_for(parts, attention_head_parts, &j);
}
