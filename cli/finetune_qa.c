/* cli/finetune_qa.c — extractive question answering for `bertc finetune
 * --task qa`: SQuAD-style rows (question, context, answers.text,
 * answers.answer_start in characters of the context) -> BertForQuestionAnswering
 * batches of [CLS] question [SEP] context [SEP] with start_positions and
 * end_positions, the first and last context token of the first answer
 * (both 0, the [CLS], when truncation cut the answer off, as Hugging Face's
 * run_qa does) — and evaluation by SQuAD's exact match and F1 of the best
 * span (start <= end, at most QA_MAX_ANSWER tokens), against every gold
 * answer. */
#include "cli/finetune.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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

int finetune_qa_rows(FinetuneData *data, int64_t first, const Dataset *d, const int *col,
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
        if (first_answer(d, i, cell[1], cell[2], cell[3], data->span + 2 * r, err) != 0)
            return -1;
    }
    return 0;
}

/* The context tokens' [first, last] over the answer span, or 0 0. */
static void positions(const Encoding *e, const int32_t *span, int32_t *s, int32_t *t)
{
    int32_t first = -1, last = -1, covered = 0;
    for (int32_t k = 0; k < e->S; k++) {
        if (!e->attention_mask[k] || !e->token_type_ids[k] || e->end[k] <= e->start[k])
            continue;   /* the question, [SEP], [PAD] */
        if (e->end[k] > span[0] && e->start[k] < span[1]) {
            first = first < 0 ? k : first;
            last = k;
            covered = e->end[k];
        }
    }
    bool whole = first >= 0 && covered >= span[1];
    *s = whole ? first : 0;
    *t = whole ? last : 0;
}

int finetune_qa_batch(const FinetuneData *data, const Model *m, const int64_t *idx, int64_t n,
                      Graph *g, Batch *b, Encoding **enc, int64_t *tokens, BertcError *err)
{
    TextExample *ex = bertc_arena_alloc(g->step, sizeof *ex * (size_t)n);
    for (int64_t j = 0; j < n; j++)
        ex[j] = data->ex[idx[j]];
    TextBatch tb;
    if (bertc_text_batch_encode(&m->cfg, data->tok, ex, (int)n, data->max_len, 0, g, &tb, err) != 0)
        return -1;
    bertc_text_batch_put(&tb, "input_ids", "attention_mask", "token_type_ids", b);
    ITensor s = bertc_itensor_new(g->step, 1, &n), t = bertc_itensor_new(g->step, 1, &n);
    *tokens = 0;
    for (int64_t k = 0; k < tb.attention_mask.numel; k++)
        *tokens += tb.attention_mask.data[k];
    for (int64_t j = 0; j < n; j++)
        positions(&tb.enc[j], data->span + 2 * idx[j], &s.data[j], &t.data[j]);
    bertc_batch_put_ids(b, "start_positions", s);
    bertc_batch_put_ids(b, "end_positions", t);
    *enc = tb.enc;
    return 0;
}

/* The best context span of one example: argmax of start + end logits. */
static void best_span(const Encoding *e, const float *sl, const float *el, int32_t *bs,
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
}

void finetune_qa_predict(FinetuneData *data, const float *start_logits, const float *end_logits,
                         int64_t S, const int64_t *idx, int64_t n, const Encoding *enc)
{
    for (int64_t j = 0; j < n; j++) {
        int32_t bs, be;
        best_span(&enc[j], start_logits + j * S, end_logits + j * S, &bs, &be);
        const char *context = data->ex[idx[j]].text_pair;
        char *pred = bs < 0 ? strdup("")
                            : strndup(context + enc[j].byte_start[bs],
                                      (size_t)(enc[j].byte_end[be] - enc[j].byte_start[bs]));
        double em = 0, f1 = 0;
        for (const char *a = data->answers[idx[j]]; pred;) {   /* max over "a|b" */
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
