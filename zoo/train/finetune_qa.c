/* zoo/train/finetune_qa.c — extractive question answering for `bertc finetune
 * --task qa`: SQuAD-style rows (question, context, answers.text,
 * answers.answer_start in characters of the context) -> BertForQuestionAnswering
 * batches of windows [CLS] question [SEP] context[s, s + L) [SEP] (a long
 * context split into windows overlapping by the doc stride, as Hugging
 * Face's run_qa prepare_train_features) with start_positions and
 * end_positions, the first and last context token of the first answer
 * (both 0, the [CLS], in a window that does not hold the whole answer, and
 * for a SQuAD v2.0 question without answers) — and evaluation by SQuAD's
 * exact match and F1 of the best span over a row's windows (start <= end,
 * at most QA_MAX_ANSWER tokens), against every gold answer. With
 * unanswerable questions in the data the [CLS] competes too, as run_qa
 * --version_2_with_negative: the answer is "" when the lowest null score
 * over the row's windows (start + end logit at the [CLS]) beats the best
 * span's. */
#include "zoo/train/finetune_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zoo/train/pipeline.h"

#define QA_MAX_ANSWER 30   /* tokens, run_qa's max_answer_length */

/* The byte offset of code point `cp` of s, or -1 past its end. */
static int64_t byte_of(const char *s, int64_t cp)
{
    int64_t k = -1;
    for (int64_t i = 0; s[i]; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80 && ++k == cp)
            return i;
    return k + 1 == cp ? (int64_t)strlen(s) : -1;
}

static int32_t code_points(const char *s, size_t n)
{
    int32_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += ((unsigned char)s[i] & 0xC0) != 0x80;
    return k;
}

/* The first answer's [start, end) in code points of the context, checked
 * against the context's text there. */
static int first_answer(const Dataset *d, int64_t i, const char *context, const char *texts,
                        const char *starts, int32_t *span, BertcError *err)
{
    size_t len = strcspn(texts, "|");
    char first[32];
    snprintf(first, sizeof first, "%.*s", (int)strcspn(starts, "|"), starts);
    int64_t start;
    if (len == 0 || !bertc_parse_i64(first, 0, INT32_MAX, &start))
        return bertc_errorf(err, "%s:%lld: the first answer needs a text and an answer_start "
                            "(a character offset), got '%.40s' at '%.20s'", d->name,
                            (long long)d->line[i], texts, first);
    int64_t at = byte_of(context, start);
    if (at < 0 || strncmp(context + at, texts, len) != 0)
        return bertc_errorf(err, "%s:%lld: answer_start %lld does not point at the answer "
                            "'%.*s' in the context", d->name, (long long)d->line[i],
                            (long long)start, (int)(len > 40 ? 40 : len), texts);
    span[0] = (int32_t)start;
    span[1] = (int32_t)(start + code_points(texts, len));
    return 0;
}

int bertc_finetune_qa_rows(FinetuneData *data, int64_t first, const Dataset *d, const int *col,
                           BertcError *err)
{
    for (int64_t i = 0; i < d->n_rows; i++) {
        const char *cell[4];
        for (int k = 0; k < 4; k++)
            if (!(cell[k] = bertc_dataset_cell(d, i, col[k])))
                return bertc_errorf(err, "%s:%lld: no '%s'", d->name, (long long)d->line[i],
                                    d->columns[col[k]]);
        int64_t r = first + i;
        data->ex[r] = (TextExample){.text = cell[0], .text_pair = cell[1], .context_id = -1};
        data->answers[r] = cell[2];
        if (!cell[2][0] && !cell[3][0]) {   /* SQuAD v2.0's is_impossible: no answers */
            data->span[2 * r] = data->span[2 * r + 1] = -1;
            data->qa_negative = true;
            continue;
        }
        if (first_answer(d, i, cell[1], cell[2], cell[3], data->span + 2 * r, err) != 0)
            return -1;
    }
    return 0;
}

/* The context tokens' [first, last] over the answer span when the window
 * holds it whole, else 0 0 (the [CLS]), as run_qa's prepare_train_features;
 * 0 0 too for a question without answers (span -1 -1). */
static void positions(const Encoding *e, const int32_t *span, int32_t *s, int32_t *t)
{
    *s = *t = 0;
    if (span[0] < 0)
        return;
    int32_t first = -1, last = -1;
    for (int32_t k = 0; k < e->S; k++) {
        if (!e->attention_mask[k] || !e->token_type_ids[k] || e->end[k] <= e->start[k])
            continue;   /* the question, [SEP], [PAD] */
        if (e->end[k] > span[0] && e->start[k] < span[1]) {
            first = first < 0 ? k : first;
            last = k;
        }
    }
    bool whole = first >= 0 && e->start[first] <= span[0] && e->end[last] >= span[1];
    *s = whole ? first : 0;
    *t = whole ? last : 0;
}

/* ---- windows ------------------------------------------------------------ */

/* Row r's question and whole context, [CLS] q [SEP] c [SEP], no limit. */
static int encode_row(const FinetuneData *data, int64_t r, Arena *a, Encoding *e, BertcError *err)
{
    const TextExample *x = &data->ex[r];
    return bertc_tokenizer_encode(data->tok, a, x->text, strlen(x->text), x->text_pair,
                                  strlen(x->text_pair), 0, false, e, err);
}

/* Context tokens a window holds after row r's question, and the step from
 * one window's start to the next (HF's doc_stride: the overlap). */
static int plan(const FinetuneData *data, int64_t r, const Encoding *e, int32_t *L,
                int32_t *step, BertcError *err)
{
    *L = data->max_len > 0 ? data->max_len - e->n_a - 3 : (e->n_b > 0 ? e->n_b : 1);
    if (*L < 1)
        return bertc_errorf(err, "%s: the question '%.40s' is %d tokens, which leaves no room for "
                            "the context in --max-len %d", data->name, data->ex[r].text,
                            (int)e->n_a, (int)data->max_len);
    int32_t stride = data->doc_stride >= 0 ? data->doc_stride
                     : (QA_DOC_STRIDE < data->max_len / 2 ? QA_DOC_STRIDE : data->max_len / 2);
    if (stride >= *L && data->doc_stride >= 0)
        return bertc_errorf(err, "--doc-stride %d: a window holds %d context tokens after the "
                            "question '%.40s'; give a smaller stride", (int)data->doc_stride,
                            (int)*L, data->ex[r].text);
    *step = *L - (stride < *L ? stride : *L - 1);
    return 0;
}

static int32_t n_windows(int32_t n_ctx, int32_t L, int32_t step)
{
    int32_t n = 1;
    while ((n - 1) * step + L < n_ctx)
        n++;
    return n;
}

int bertc_finetune_qa_windows(FinetuneData *data, Arena *arena, BertcError *err)
{
    Arena *scratch = bertc_arena_create("qa windows", 1 << 16);
    int32_t *count = bertc_arena_alloc(arena, sizeof(int32_t) * (size_t)data->n);
    data->qa_L = bertc_arena_alloc(arena, sizeof(int32_t) * (size_t)data->n);
    data->qa_step = bertc_arena_alloc(arena, sizeof(int32_t) * (size_t)data->n);
    int64_t total = 0;
    int rc = 0;
    for (int64_t r = 0; r < data->n && rc == 0; r++) {
        Encoding e;
        bertc_arena_reset(scratch);
        rc = encode_row(data, r, scratch, &e, err) != 0 ||
             plan(data, r, &e, &data->qa_L[r], &data->qa_step[r], err) != 0;
        count[r] = rc ? 0 : n_windows(e.n_b, data->qa_L[r], data->qa_step[r]);
        total += count[r];
        data->n_feat_train += r < data->n_train ? count[r] : 0;
    }
    bertc_arena_destroy(scratch);
    if (rc)
        return -1;
    data->n_feat = total;
    data->feat_row = bertc_arena_alloc(arena, sizeof(int64_t) * (size_t)total);
    data->feat_win = bertc_arena_alloc(arena, sizeof(int32_t) * (size_t)total);
    for (int64_t r = 0, f = 0; r < data->n; r++)
        for (int32_t w = 0; w < count[r]; w++, f++) {
            data->feat_row[f] = r;
            data->feat_win[f] = w;
        }
    int64_t n_eval = data->n - data->n_train;
    data->qa_best = bertc_arena_alloc(arena, sizeof(float) * (size_t)(n_eval + 1));
    data->qa_null = bertc_arena_alloc(arena, sizeof(float) * (size_t)(n_eval + 1));
    data->qa_pred = bertc_arena_alloc(arena, sizeof(int32_t) * 2 * (size_t)(n_eval + 1));
    return 0;
}

/* Window w of row encoding e as an encoding of S tokens (padded): [CLS]
 * question [SEP] context[w * step, + L) [SEP]; offsets kept (the context's
 * are into the context). */
static void window(const Encoding *e, int32_t L, int32_t step, int32_t w, int32_t S,
                   const Tokenizer *tok, Arena *a, Encoding *out)
{
    int32_t first = w * step, n_ctx = e->n_b - first < L ? e->n_b - first : L;
    int32_t head = 2 + e->n_a, n = head + n_ctx + 1;
    int32_t **arr[7] = {&out->input_ids, &out->token_type_ids, &out->attention_mask,
                        &out->start, &out->end, &out->byte_start, &out->byte_end};
    int32_t *const from[7] = {e->input_ids, e->token_type_ids, e->attention_mask, e->start,
                              e->end, e->byte_start, e->byte_end};
    for (int k = 0; k < 7; k++) {
        int32_t *x = bertc_arena_calloc(a, (size_t)S, sizeof(int32_t));
        memcpy(x, from[k], sizeof(int32_t) * (size_t)head);
        memcpy(x + head, from[k] + head + first, sizeof(int32_t) * (size_t)n_ctx);
        *arr[k] = x;
    }
    out->S = S;
    out->n_a = e->n_a;
    out->n_b = n_ctx;
    out->input_ids[n - 1] = tok->sep_id;   /* the final [SEP]: type 1, offsets (0, 0) */
    out->token_type_ids[n - 1] = out->attention_mask[n - 1] = 1;
    for (int32_t t = n; t < S; t++)
        out->input_ids[t] = tok->pad_id;
}

/* Features idx[0..n) as windows enc[0..n), padded to the longest. */
static int windows_of(const FinetuneData *data, const int64_t *idx, int64_t n, Arena *a,
                      Encoding *enc, int64_t *S, BertcError *err)
{
    Encoding *full = bertc_arena_alloc(a, sizeof *full * (size_t)n);
    *S = 0;
    for (int64_t j = 0; j < n; j++) {
        int64_t r = data->feat_row[idx[j]];
        if (encode_row(data, r, a, &full[j], err) != 0)
            return -1;
        int32_t first = data->feat_win[idx[j]] * data->qa_step[r], L = data->qa_L[r];
        int32_t n_ctx = full[j].n_b - first < L ? full[j].n_b - first : L;
        *S = 3 + full[j].n_a + n_ctx > *S ? 3 + full[j].n_a + n_ctx : *S;
    }
    for (int64_t j = 0; j < n; j++) {
        int64_t r = data->feat_row[idx[j]];
        window(&full[j], data->qa_L[r], data->qa_step[r], data->feat_win[idx[j]], (int32_t)*S,
               data->tok, a, &enc[j]);
    }
    return 0;
}

int bertc_finetune_qa_batch(const FinetuneData *data, const Model *m, const int64_t *idx, int64_t n,
                            Graph *g, Batch *b, Encoding **enc, int64_t *tokens, BertcError *err)
{
    int64_t S;
    *enc = bertc_arena_alloc(g->step, sizeof **enc * (size_t)n);
    if (windows_of(data, idx, n, g->step, *enc, &S, err) != 0)
        return -1;
    int64_t shape[2] = {n, S};
    ITensor ids = bertc_itensor_new(g->step, 2, shape), mask = bertc_itensor_new(g->step, 2, shape);
    ITensor types = bertc_itensor_new(g->step, 2, shape);
    ITensor s = bertc_itensor_new(g->step, 1, &n), t = bertc_itensor_new(g->step, 1, &n);
    *tokens = 0;
    for (int64_t j = 0; j < n; j++) {
        const Encoding *e = &(*enc)[j];
        if (bertc_encoding_check_vocab(&m->cfg, data->tok, e, err) != 0)
            return -1;
        memcpy(ids.data + j * S, e->input_ids, sizeof(int32_t) * (size_t)S);
        memcpy(mask.data + j * S, e->attention_mask, sizeof(int32_t) * (size_t)S);
        memcpy(types.data + j * S, e->token_type_ids, sizeof(int32_t) * (size_t)S);
        for (int64_t k = 0; k < S; k++)
            *tokens += e->attention_mask[k];
        positions(e, data->span + 2 * data->feat_row[idx[j]], &s.data[j], &t.data[j]);
    }
    bertc_batch_put_ids(b, "input_ids", ids);
    bertc_batch_put_ids(b, "attention_mask", mask);
    bertc_batch_put_ids(b, "token_type_ids", types);
    bertc_batch_put_ids(b, "start_positions", s);
    bertc_batch_put_ids(b, "end_positions", t);
    return 0;
}

/* ---- evaluation --------------------------------------------------------- */

/* The best context span of one window: argmax of start + end logits over
 * start <= end < start + QA_MAX_ANSWER (postprocess_qa_predictions). */
static float best_span(const Encoding *e, const float *sl, const float *el, int32_t *bs,
                       int32_t *be)
{
    float best = -INFINITY;
    *bs = *be = -1;
    for (int32_t i = 0; i < e->S; i++) {
        if (!e->attention_mask[i] || !e->token_type_ids[i] || e->end[i] <= e->start[i])
            continue;
        for (int32_t j = i; j < e->S && j < i + QA_MAX_ANSWER; j++) {
            if (!e->attention_mask[j] || e->end[j] <= e->start[j])
                break;   /* the final [SEP] */
            if (sl[i] + el[j] > best) {
                best = sl[i] + el[j];
                *bs = i;
                *be = j;
            }
        }
    }
    return best;
}

void bertc_finetune_qa_begin_eval(FinetuneData *data)
{
    for (int64_t r = 0; r < data->n - data->n_train; r++) {
        data->qa_best[r] = -INFINITY;
        data->qa_null[r] = INFINITY;
        data->qa_pred[2 * r] = data->qa_pred[2 * r + 1] = 0;
    }
}

void bertc_finetune_qa_predict(FinetuneData *data, const float *start_logits,
                               const float *end_logits, int64_t S, const int64_t *idx, int64_t n,
                               const Encoding *enc)
{
    for (int64_t j = 0; j < n; j++) {
        int32_t bs, be;
        const float *sl = start_logits + j * S, *el = end_logits + j * S;
        float score = best_span(&enc[j], sl, el, &bs, &be);
        int64_t r = data->feat_row[idx[j]] - data->n_train;
        if (sl[0] + el[0] < data->qa_null[r])   /* the [CLS]: run_qa keeps the lowest */
            data->qa_null[r] = sl[0] + el[0];
        if (bs < 0 || !(score > data->qa_best[r]))
            continue;   /* the row's best over its windows */
        data->qa_best[r] = score;
        data->qa_pred[2 * r] = enc[j].byte_start[bs];
        data->qa_pred[2 * r + 1] = enc[j].byte_end[be];
    }
}

void bertc_finetune_qa_end_eval(FinetuneData *data)
{
    data->qa_em = data->qa_f1 = 0;
    for (int64_t r = 0; r < data->n - data->n_train; r++) {
        const char *context = data->ex[data->n_train + r].text_pair;
        /* v2.0: no answer when the [CLS] scores above the best span */
        bool null = data->qa_negative && data->qa_null[r] > data->qa_best[r];
        char *pred = null ? strdup("")
                          : strndup(context + data->qa_pred[2 * r],
                                    (size_t)(data->qa_pred[2 * r + 1] - data->qa_pred[2 * r]));
        double em = 0, f1 = 0;
        for (const char *a = data->answers[data->n_train + r]; pred;) {   /* max over "a|b" */
            size_t len = strcspn(a, "|");
            char *gold = strndup(a, len);
            if (gold) {
                double e = bertc_metric_squad_em(pred, gold), f = bertc_metric_squad_f1(pred, gold);
                em = e > em ? e : em;
                f1 = f > f1 ? f : f1;
            }
            free(gold);
            if (!a[len])
                break;
            a += len + 1;
        }
        free(pred);
        data->qa_em += em;
        data->qa_f1 += f1;
    }
}
