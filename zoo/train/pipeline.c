/* zoo/train/pipeline.c — the steps between a model's outputs and what `bertc
 * predict` / `bertc embed` print (zoo/train/pipeline.h): softmax and top-k,
 * HF's answer-span search and entity grouping, sentence-transformers'
 * pooling. */
#include "zoo/train/pipeline.h"

#include <math.h>
#include <string.h>

/* ---- scores -------------------------------------------------------------- */

void bertc_softmax(const float *x, int n, float *p)
{
    if (n < 1)
        return;
    float max = x[0];
    for (int i = 1; i < n; i++)
        max = x[i] > max ? x[i] : max;
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += exp((double)x[i] - max);
    for (int i = 0; i < n; i++)
        p[i] = (float)(exp((double)x[i] - max) / sum);
}

float bertc_sigmoid(float x)
{
    if (x >= 0)
        return (float)(1.0 / (1.0 + exp(-(double)x)));
    double e = exp((double)x);   /* exp(-x) would overflow for very negative x */
    return (float)(e / (1.0 + e));
}

/* i comes before j in the order of bertc_top_k: larger, or as large and first. */
static bool ranks_before(const float *x, int i, int j)
{
    return x[i] > x[j] || (x[i] == x[j] && i < j);
}

int bertc_top_k(const float *x, int n, int k, int *idx)
{
    k = k < n ? k : n;
    for (int j = 0; j < k; j++) {   /* pick j: the first of those after pick j - 1, O(k n) */
        int best = -1;
        for (int i = 0; i < n; i++)
            if ((j == 0 || ranks_before(x, idx[j - 1], i)) &&
                (best < 0 || ranks_before(x, i, best)))
                best = i;
        idx[j] = best;
    }
    return k > 0 ? k : 0;
}

/* ---- question answering --------------------------------------------------- */

/* p (S) = softmax of logits over the positions in `keep` (others 0). */
static void masked_softmax(const float *logits, const bool *keep, int S, float *p)
{
    float max = -INFINITY;
    for (int t = 0; t < S; t++)
        if (keep[t] && logits[t] > max)
            max = logits[t];
    double sum = 0;
    for (int t = 0; t < S; t++)
        sum += keep[t] ? exp((double)logits[t] - max) : 0;
    for (int t = 0; t < S; t++)
        p[t] = keep[t] ? (float)(exp((double)logits[t] - max) / sum) : 0.0f;
}

int bertc_qa_best_span(const float *start_logits, const float *end_logits,
                       const bool *is_context, int S, int max_answer_len, QaSpan *out)
{
    bool keep[S > 0 ? S : 1];
    float ps[S > 0 ? S : 1], pe[S > 0 ? S : 1];
    for (int t = 0; t < S; t++)   /* HF's p_mask: the context, and [CLS] at 0 */
        keep[t] = is_context[t] || t == 0;
    masked_softmax(start_logits, keep, S, ps);
    masked_softmax(end_logits, keep, S, pe);
    out->start = out->end = -1;
    out->score = -1;
    /* decode_spans: the upper band of outer(ps, pe), start <= end <
     * start + max_answer_len, both context tokens ([CLS] is not) */
    for (int s = 1; s < S; s++) {
        if (!is_context[s])
            continue;
        for (int e = s; e < S && e < s + max_answer_len; e++) {
            float score = ps[s] * pe[e];
            if (is_context[e] && score > out->score) {
                out->start = s;
                out->end = e;
                out->score = score;
            }
        }
    }
    return out->start < 0 ? -1 : 0;
}

/* ---- token classification ------------------------------------------------ */

/* HF's get_tag: "B-PER" -> ('B', "PER"); "I-PER" -> ('I', "PER"); anything
 * else -> ('I', the whole name). */
static char tag_of(const char *name, const char **type)
{
    if ((name[0] == 'B' || name[0] == 'I') && name[1] == '-') {
        *type = name + 2;
        return name[0];
    }
    *type = name;
    return 'I';
}

int bertc_group_entities(const TokenTag *tags, int n, const char *const *names, Entity *out)
{
    int n_out = 0, first = 0;
    for (int i = 0; i <= n; i++) {
        if (i > first && i < n) {
            const char *type, *last_type;
            char bi = tag_of(names[tags[i].label], &type);
            tag_of(names[tags[i - 1].label], &last_type);
            if (bi != 'B' && !strcmp(type, last_type))
                continue;   /* the token joins the open group */
        }
        if (i > first) {   /* close tokens [first, i) */
            const char *type;
            tag_of(names[tags[first].label], &type);
            double sum = 0;
            for (int j = first; j < i; j++)
                sum += tags[j].score;
            if (strcmp(type, "O") != 0)
                out[n_out++] = (Entity){.group = type, .group_len = (int)strlen(type),
                                        .score = (float)(sum / (i - first)),
                                        .start = tags[first].start, .end = tags[i - 1].end,
                                        .byte_start = tags[first].byte_start,
                                        .byte_end = tags[i - 1].byte_end};
        }
        first = i;
    }
    return n_out;
}

/* ---- extractive summarization --------------------------------------------- */

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
static bool is_closer(char c) { return c == '"' || c == '\'' || c == ')' || c == ']'; }

int bertc_split_sentences(const char *text, size_t len, int32_t *start, int32_t *end, int cap)
{
    int n = 0;
    size_t i = 0;
    while (n < cap) {
        while (i < len && is_space(text[i]))
            i++;
        if (i >= len)
            break;
        size_t s = i, e = len;
        for (; i < len; i++) {
            if (n == cap - 1 || (text[i] != '.' && text[i] != '!' && text[i] != '?'))
                continue;
            size_t j = i + 1;
            while (j < len && is_closer(text[j]))
                j++;
            if (j == len || is_space(text[j])) {
                e = j;
                break;
            }
        }
        while (e > s && is_space(text[e - 1]))
            e--;
        start[n] = (int32_t)s;
        end[n++] = (int32_t)e;
        i = e;
    }
    return n;
}

/* ---- sentence embeddings -------------------------------------------------- */

void bertc_pool(Pooling p, const float *h, const int32_t *mask, int64_t S, int64_t H,
                float *out)
{
    if (p == POOL_CLS) {
        memcpy(out, h, sizeof(float) * (size_t)H);
        return;
    }
    double count = 0;
    for (int64_t t = 0; t < S; t++)
        count += mask[t] != 0;
    count = count > 1e-9 ? count : 1e-9;   /* torch.clamp(sum_mask, min=1e-9) */
    for (int64_t k = 0; k < H; k++) {
        double sum = 0;
        for (int64_t t = 0; t < S; t++)
            sum += mask[t] ? (double)h[t * H + k] : 0.0;
        out[k] = (float)(sum / count);
    }
}

void bertc_l2_normalize(float *v, int64_t n)
{
    double sq = 0;
    for (int64_t i = 0; i < n; i++)
        sq += (double)v[i] * v[i];
    double norm = sqrt(sq);
    norm = norm > 1e-12 ? norm : 1e-12;
    for (int64_t i = 0; i < n; i++)
        v[i] = (float)(v[i] / norm);
}
