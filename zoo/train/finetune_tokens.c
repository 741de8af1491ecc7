/* zoo/train/finetune_tokens.c — token classification for `bertc finetune --task
 * token-cls`: rows of words and their tags (JSONL "tokens"/"tags" lists) ->
 * BertForTokenClassification batches labelled as Hugging Face's run_ner
 * labels them: the first WordPiece of each word gets the word's tag, every
 * other position -100 (ignored by the loss) — and evaluation by entity F1
 * over the words (bertc_metric_entity_f1).
 *
 * The words are joined by single spaces into one text; word w starts at code
 * point word_cp[w] of it, and the tokenizer's offsets (code points, zoo/text/tokenizer.h)
 * say which word each token comes from. */
#include "zoo/train/finetune_internal.h"

#include <string.h>

/* UTF-8 code points in s[0..n). */
static int32_t code_points(const char *s, size_t n)
{
    int32_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += ((unsigned char)s[i] & 0xC0) != 0x80;
    return k;
}

static int64_t count_items(const char *s)
{
    int64_t n = *s ? 1 : 0;
    for (; *s; s++)
        n += *s == '|';
    return n;
}

/* "EU|rejects|German" -> the text "EU rejects German" and each word's first
 * code point, appended at data->word_cp + first_word. */
static const char *words_text(FinetuneData *data, int64_t first_word, const char *cell,
                              Arena *arena)
{
    size_t n = strlen(cell);
    char *text = bertc_arena_alloc(arena, n + 1);
    int32_t cp = 0;
    int64_t w = first_word;
    for (size_t i = 0, start = 0; i <= n; i++) {
        if (i < n && cell[i] != '|')
            continue;
        data->word_cp[w++] = cp;
        cp += code_points(cell + start, i - start) + 1;
        start = i + 1;
    }
    memcpy(text, cell, n + 1);
    for (size_t i = 0; i < n; i++)
        text[i] = text[i] == '|' ? ' ' : text[i];
    return text;
}

int bertc_finetune_token_rows(FinetuneData *data, int64_t first, const Dataset *d, int words,
                              int tags, Arena *arena, BertcError *err)
{
    for (int64_t i = 0; i < d->n_rows; i++) {
        int64_t r = first + i;
        const char *w = bertc_dataset_cell(d, i, words), *t = bertc_dataset_cell(d, i, tags);
        if (!w || !t)
            return bertc_errorf(err, "%s:%lld: no '%s'", d->name, (long long)d->line[i],
                                d->columns[!w ? words : tags]);
        int64_t nw = count_items(w), nt = count_items(t);
        if (nw != nt || nw == 0)
            return bertc_errorf(err, "%s:%lld: %lld words and %lld tags: a tag for every word",
                                d->name, (long long)d->line[i], (long long)nw, (long long)nt);
        data->word_off[r + 1] = data->word_off[r] + nw;
        data->ex[r] = (TextExample){.text = words_text(data, data->word_off[r], w, arena),
                                    .context_id = -1};
        int64_t k = data->word_off[r];
        for (const char *c = t;; k++) {
            const char *bar = strchr(c, '|');
            size_t len = bar ? (size_t)(bar - c) : strlen(c);
            data->word_tag[k] = bertc_label_set_id(&data->labels, c, len);
            if (data->word_tag[k] < 0)
                return bertc_errorf(err, "%s:%lld: a tag %s does not have: '%.*s'", d->name,
                                    (long long)d->line[i], bertc_finetune_labels_of(data),
                                    (int)(len > 60 ? 60 : len), c);
            if (!bar)
                break;
            c = bar + 1;
        }
    }
    return 0;
}

/* pos[w] = the first token of word w of example e, -1 if truncated away. */
static void first_tokens(const FinetuneData *data, int64_t e, const Encoding *enc, int32_t *pos)
{
    const int32_t *cp = data->word_cp + data->word_off[e];
    int64_t nw = data->word_off[e + 1] - data->word_off[e];
    for (int64_t w = 0; w < nw; w++)
        pos[w] = -1;
    for (int32_t t = 0, w = 0; t < enc->S; t++) {
        if (!enc->attention_mask[t] || enc->end[t] <= enc->start[t])
            continue;   /* [CLS], [SEP], [PAD] */
        while (w + 1 < nw && cp[w + 1] <= enc->start[t])
            w++;
        if (pos[w] < 0)
            pos[w] = t;
    }
}

int bertc_finetune_token_batch(const FinetuneData *data, const Model *m, const int64_t *idx,
                               int64_t n, Graph *g, Batch *b, int32_t **pos, int64_t *tokens,
                               BertcError *err)
{
    TextExample *ex = bertc_arena_alloc(g->step, sizeof *ex * (size_t)n);
    for (int64_t j = 0; j < n; j++)
        ex[j] = data->ex[idx[j]];
    TextBatch tb;
    if (bertc_text_batch_encode(&m->cfg, data->tok, ex, (int)n, data->max_len, 0, g, &tb, err) != 0)
        return -1;
    bertc_text_batch_put(&tb, "input_ids", "attention_mask", "token_type_ids", b);
    int64_t S = tb.input_ids.shape[1], shape[2] = {n, S};
    ITensor y = bertc_itensor_new(g->step, 2, shape);
    *tokens = 0;
    for (int64_t k = 0; k < n * S; k++) {
        y.data[k] = -100;
        *tokens += tb.attention_mask.data[k];
    }
    for (int64_t j = 0; j < n; j++) {
        int64_t e = idx[j], first = data->word_off[e], nw = data->word_off[e + 1] - first;
        pos[j] = bertc_arena_alloc(g->step, sizeof(int32_t) * (size_t)nw);
        first_tokens(data, e, &tb.enc[j], pos[j]);
        for (int64_t w = 0; w < nw; w++)
            if (pos[j][w] >= 0)
                y.data[j * S + pos[j][w]] = data->word_tag[first + w];
    }
    bertc_batch_put_ids(b, "labels", y);
    return 0;
}

/* Each word's tag: the argmax of its first token's logits (B, S, C); a
 * word truncated away gets "O" (or tag 0 when there is no "O"). */
void bertc_finetune_token_predict(FinetuneData *data, const float *logits, int64_t S,
                                  const int64_t *idx, int64_t n, int32_t *const *pos)
{
    int C = data->labels.n, outside = bertc_label_set_id(&data->labels, "O", 1);
    for (int64_t j = 0; j < n; j++) {
        int64_t first = data->word_off[idx[j]], nw = data->word_off[idx[j] + 1] - first;
        for (int64_t w = 0; w < nw; w++) {
            int best = outside < 0 ? 0 : outside;
            if (pos[j][w] >= 0) {
                const float *z = logits + (j * S + pos[j][w]) * C;
                best = 0;
                for (int c = 1; c < C; c++)
                    best = z[c] > z[best] ? c : best;
            }
            data->pred_tag[first + w] = best;
        }
    }
}

double bertc_finetune_token_score(const FinetuneData *data, Arena *scratch)
{
    int64_t n_eval = data->n - data->n_train, first = data->word_off[data->n_train];
    int64_t W = data->word_off[data->n] - first;
    const char **gold = bertc_arena_alloc(scratch, sizeof(char *) * (size_t)W);
    const char **pred = bertc_arena_alloc(scratch, sizeof(char *) * (size_t)W);
    int64_t *lengths = bertc_arena_alloc(scratch, sizeof(int64_t) * (size_t)n_eval);
    for (int64_t w = 0; w < W; w++) {
        gold[w] = data->labels.names[data->word_tag[first + w]];
        pred[w] = data->labels.names[data->pred_tag[first + w]];
    }
    for (int64_t e = 0; e < n_eval; e++)
        lengths[e] = data->word_off[data->n_train + e + 1] - data->word_off[data->n_train + e];
    return bertc_metric_entity_f1(gold, pred, lengths, n_eval);
}
