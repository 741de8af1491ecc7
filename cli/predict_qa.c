/* cli/predict_qa.c — question answering for `bertc predict`, as HF's
 * QuestionAnsweringPipeline: the question and its context, a context
 * longer than the window split into windows of "[CLS] question [SEP]
 * context[s, s + L) [SEP]" that overlap by the stride (the tokenizer's
 * return_overflowing_tokens), the best span of each window
 * (bertc_qa_best_span) and the best of the windows. A model with a
 * query_len (QAConv) reads the question from its first query_len tokens
 * and takes its one window from its own batch_from_text, whose encoding
 * (the batch's enc) gives the answer's offsets. */
#include "cli/predict.h"

#include <math.h>
#include <string.h>

/* The answer of window w from its span: token positions in the window ->
 * the context's token k (in the full encoding e, at 2 + n_a + k) -> chars. */
static void answer_of(const Encoding *e, int32_t first_ctx_token, int32_t window_ctx_pos,
                      const QaSpan *span, PredictAnswer *a)
{
    int32_t s = 2 + e->n_a + first_ctx_token + (span->start - window_ctx_pos);
    int32_t t = 2 + e->n_a + first_ctx_token + (span->end - window_ctx_pos);
    *a = (PredictAnswer){.score = span->score, .start = e->start[s], .end = e->end[t],
                         .byte_start = e->byte_start[s], .byte_end = e->byte_end[t]};
}

typedef struct Windows {
    int32_t L, step, n;   /* context tokens per window, start to start, windows */
    int64_t S;            /* tokens of the longest window */
} Windows;

static int plan_windows(const PredictRun *r, const CliText *t, int index, const Encoding *e,
                        Windows *w, BertcError *err)
{
    int32_t max_seq = r->max_len < QA_MAX_SEQ_LEN ? r->max_len : QA_MAX_SEQ_LEN;
    w->L = max_seq - e->n_a - 3;   /* [CLS] question [SEP] ... [SEP] */
    if (w->L < 1)
        return bertc_errorf(err, "%s: the question is %d tokens, which leaves no room for the "
                            "context in a window of %d (--max-len)",
                            predict_input_name(t, index), (int)e->n_a, (int)max_seq);
    int32_t stride = r->stride >= 0 ? r->stride
                     : (QA_DOC_STRIDE < max_seq / 2 ? QA_DOC_STRIDE : max_seq / 2);
    if (stride >= w->L) {
        if (r->stride >= 0)
            return bertc_errorf(err, "--stride %d: a window holds %d context tokens after %s's "
                                "question; give a smaller stride", r->stride, (int)w->L,
                                predict_input_name(t, index));
        stride = w->L - 1;
    }
    w->step = w->L - stride;
    w->n = 1;
    while ((w->n - 1) * w->step + w->L < e->n_b)
        w->n++;
    int32_t longest = e->n_b < w->L ? e->n_b : w->L;
    w->S = e->n_a + 3 + longest;
    return 0;
}

/* Window w's tokens into row w of the (n, S) tensors. */
static void fill_window(const Encoding *e, const Windows *w, int32_t win, int32_t sep_id,
                        ITensor *ids, ITensor *mask, ITensor *types)
{
    int64_t row = (int64_t)win * w->S;
    int32_t first = win * w->step, n_ctx = e->n_b - first < w->L ? e->n_b - first : w->L;
    int32_t head = 2 + e->n_a;   /* [CLS] question [SEP] */
    int64_t t = 0;
    for (; t < head; t++)
        ids->data[row + t] = e->input_ids[t];
    for (int32_t k = 0; k < n_ctx; k++, t++) {
        ids->data[row + t] = e->input_ids[head + first + k];
        types->data[row + t] = 1;
    }
    ids->data[row + t] = sep_id;
    types->data[row + t] = 1;
    for (int64_t u = 0; u <= t; u++)
        mask->data[row + u] = 1;
}

static int answer_windows(const PredictRun *r, Graph *g, const Encoding *e, const Windows *w,
                          PredictAnswer *best, BertcError *err)
{
    int64_t shape[2] = {w->n, w->S};
    ITensor ids = bertc_itensor_new(g->step, 2, shape);       /* zeros: [PAD] = 0 ... */
    ITensor mask = bertc_itensor_new(g->step, 2, shape);
    ITensor types = bertc_itensor_new(g->step, 2, shape);
    const Tokenizer *tok = r->cm->tok;
    for (int64_t i = 0; i < ids.numel; i++)                    /* ... unless the vocab says */
        ids.data[i] = tok->pad_id;
    for (int32_t win = 0; win < w->n; win++)
        fill_window(e, w, win, tok->sep_id, &ids, &mask, &types);
    Batch b;
    Outputs out;
    bertc_batch_init(&b, "the question and its context");
    bertc_outputs_init(&out);
    out.final_only = true;
    bertc_batch_put_ids(&b, "input_ids", ids);
    bertc_batch_put_ids(&b, "attention_mask", mask);
    bertc_batch_put_ids(&b, "token_type_ids", types);
    if (cli_forward(r->cm->model, g, &b, &out, err) != 0)
        return -1;
    Var *sl = bertc_outputs_get(&out, "start_logits"), *el = bertc_outputs_get(&out, "end_logits");
    if (!sl || !el)
        return bertc_errorf(err, "%s gave no start_logits and end_logits", r->cm->name);
    best->score = -1;
    bool *is_ctx = bertc_arena_calloc(g->step, (size_t)w->S, sizeof(bool));
    for (int32_t win = 0; win < w->n; win++) {
        int32_t first = win * w->step, n_ctx = e->n_b - first < w->L ? e->n_b - first : w->L;
        for (int64_t t = 0; t < w->S; t++)
            is_ctx[t] = t >= 2 + e->n_a && t < 2 + e->n_a + n_ctx;
        QaSpan span;
        if (bertc_qa_best_span(sl->value.data + win * w->S, el->value.data + win * w->S, is_ctx,
                               (int)w->S, QA_MAX_ANSWER_LEN, &span) == 0 &&
            span.score > best->score)
            answer_of(e, first, 2 + e->n_a, &span, best);
    }
    return 0;
}

/* A span head over BERT's [CLS] question [SEP] context [SEP]: windows over the context. */
static int qa_windows(const PredictRun *r, Graph *g, const CliText *t, int index,
                      PredictAnswer *a, BertcError *err)
{
    Encoding e;
    if (bertc_tokenizer_encode(r->cm->tok, g->step, t->text, strlen(t->text), t->pair,
                               strlen(t->pair), 0, false, &e, err) != 0 ||
        bertc_encoding_check_vocab(&r->cm->model->cfg, r->cm->tok, &e, err) != 0)
        return -1;
    if (e.n_b == 0)
        return bertc_errorf(err, "%s: the context has no token", predict_input_name(t, index));
    Windows w;
    if (plan_windows(r, t, index, &e, &w, err) != 0)
        return -1;
    return answer_windows(r, g, &e, &w, a, err);
}

/* ---- QAConv: the question in the first query_len tokens ------------------- */

/* The model's one window through its batch_from_text, which cuts the
 * question to query_len tokens, truncates the pair to the limit and keeps
 * the encoding it made (b.enc) for the offsets. */
static int qa_query_len(PredictRun *r, Graph *g, const CliText *t, int index, int32_t Q,
                        PredictAnswer *a, BertcError *err)
{
    int32_t limit = r->max_len > Q ? r->max_len : Q;
    TextExample ex = {.text = t->text, .text_pair = t->pair, .context_id = -1};
    Batch b;
    Outputs out;
    bertc_batch_init(&b, "the question and its context");
    bertc_outputs_init(&out);
    out.final_only = true;
    Model *m = r->cm->model;
    if (bertc_model_batch_from_text(m, r->cm->tok, &ex, 1, limit, g, &b, err) != 0)
        return -1;
    const Encoding *enc = predict_batch_encoding(r, &b, 0, err);
    if (!enc)
        return -1;
    const Encoding e = *enc;
    if (e.untruncated > limit) {   /* for the run's one warning line */
        r->stats.truncated++;
        r->stats.cut += e.untruncated - e.S;
    }
    r->stats.longest = e.untruncated > r->stats.longest ? e.untruncated : r->stats.longest;
    if (cli_forward(m, g, &b, &out, err) != 0)
        return -1;
    Var *sl = bertc_outputs_get(&out, "start_logits"), *el = bertc_outputs_get(&out, "end_logits");
    if (!sl || !el || sl->value.ndim != 2)
        return bertc_errorf(err, "%s gave no (B, S) start_logits and end_logits", r->cm->name);
    int64_t S = sl->value.shape[1];
    bool *is_ctx = bertc_arena_calloc(g->step, (size_t)S, sizeof(bool));
    for (int64_t p = 2 + e.n_a; p < 2 + e.n_a + e.n_b && p < S; p++)
        is_ctx[p] = true;
    QaSpan span;
    if (e.n_b == 0 ||
        bertc_qa_best_span(sl->value.data, el->value.data, is_ctx, (int)S, QA_MAX_ANSWER_LEN,
                           &span) != 0)
        return bertc_errorf(err, "%s: no context token is left after the question",
                            predict_input_name(t, index));
    answer_of(&e, 0, 2 + e.n_a, &span, a);
    return 0;
}

int predict_qa_one(PredictRun *r, Graph *g, const CliText *t, int index, BertcError *err)
{
    double query_len = bertc_model_config_get(&r->cm->model->cfg, "query_len");
    if (!t->pair)
        return bertc_errorf(err, "%s: question answering needs a question and a context "
                            "(QUESTION CONTEXT, or QUESTION<TAB>CONTEXT in --input)",
                            predict_input_name(t, index));
    PredictAnswer a;
    r->stats.inputs++;
    int rc = isnan(query_len) ? qa_windows(r, g, t, index, &a, err)
                              : qa_query_len(r, g, t, index, (int32_t)query_len, &a, err);
    if (rc != 0)
        return -1;
    predict_print_answer(r, t, index, &a);
    return 0;
}
