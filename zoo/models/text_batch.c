/* zoo/models/text_batch.c — raw text to a model's batch: the tokenizer's encodings
 * of n examples stacked into (n, S) tensors, S the longest, padded as Hugging
 * Face's tokenizer(..., padding=True) does. Each architecture's
 * batch_from_text starts here and adds what it reads besides. */
#include "zoo/zoo.h"

#include <stdio.h>
#include <string.h>

/* The longest the tokenizer may make an example: max_len, else (0) the
 * model's max_position_embeddings. */
static int32_t length_limit(const BertConfig *cfg, int32_t max_len)
{
    int32_t limit = cfg->max_position_embeddings;
    return max_len > 0 && max_len < limit ? max_len : limit;
}

int bertc_max_len_room(const MaxLen *m, int specials, BertcError *err)
{
    if (m->n >= specials)
        return 0;
    const char *tokens = specials == 2 ? "[CLS] TEXT [SEP]" : "[CLS] TEXT [SEP] TEXT_PAIR [SEP]";
    char shown[BERTC_SHOWN];
    if (!m->file)
        return bertc_errorf(err, "%s %d leaves no room for the %d special tokens (%s): give at "
                            "least %d", m->key, (int)m->n, specials, tokens, specials);
    if (strcmp(m->key, "max_position_embeddings") == 0)
        return bertc_errorf(err, "%s: max_position_embeddings %d leaves no room for the %d "
                            "special tokens (%s): the model needs at least %d positions",
                            bertc_shown(m->file, shown), (int)m->n, specials, tokens, specials);
    return bertc_errorf(err, "%s: %s %d leaves no room for the %d special tokens (%s): raise "
                        "it or give --max-len %d or more", bertc_shown(m->file, shown), m->key,
                        (int)m->n, specials, tokens, specials);
}

int bertc_encoding_check_vocab(const BertConfig *cfg, const Tokenizer *tok, const Encoding *e,
                               BertcError *err)
{
    for (int32_t t = 0; t < e->S; t++)
        if (e->input_ids[t] >= cfg->vocab_size)
            return bertc_errorf(err, "%s has %d tokens, more than the model's vocab_size %d: "
                                "token '%s' (id %d) has no embedding; give the vocabulary the "
                                "model was trained with", tok->name, (int)tok->V,
                                (int)cfg->vocab_size, bertc_tokenizer_token(tok, e->input_ids[t]),
                                (int)e->input_ids[t]);
    return 0;
}

int bertc_text_batch_encode(const BertConfig *cfg, const Tokenizer *tok, const TextExample *ex, int n,
                      int32_t max_len, int32_t min_len, Graph *g, TextBatch *tb, BertcError *err)
{
    if (n < 1)
        return bertc_errorf(err, "no text to encode: a batch needs at least one example");
    int32_t limit = length_limit(cfg, max_len);
    tb->enc = bertc_arena_alloc(g->step, sizeof(Encoding) * (size_t)n);
    int64_t S = min_len;
    for (int i = 0; i < n; i++) {
        const char *a = ex[i].text ? ex[i].text : "", *b = ex[i].text_pair;
        if (ex[i].encoding && ex[i].encoding->S > limit)
            return bertc_errorf(err, "example %d: its encoding is %d tokens, more than the "
                                "limit %d", i, (int)ex[i].encoding->S, (int)limit);
        if (ex[i].encoding)
            tb->enc[i] = *ex[i].encoding;
        else if (bertc_tokenizer_encode(tok, g->step, a, strlen(a), b, b ? strlen(b) : 0, limit,
                                        false, &tb->enc[i], err) != 0)
            return -1;
        if (bertc_encoding_check_vocab(cfg, tok, &tb->enc[i], err) != 0)
            return -1;
        S = tb->enc[i].S > S ? tb->enc[i].S : S;
    }
    int64_t shape[2] = {n, S};
    tb->input_ids = bertc_itensor_new(g->step, 2, shape);         /* zeros: [PAD] is id 0 ... */
    tb->attention_mask = bertc_itensor_new(g->step, 2, shape);
    tb->token_type_ids = bertc_itensor_new(g->step, 2, shape);
    for (int i = 0; i < n; i++) {
        const Encoding *e = &tb->enc[i];
        for (int64_t t = 0; t < S; t++)   /* ... unless the vocab says otherwise */
            tb->input_ids.data[i * S + t] = t < e->S ? e->input_ids[t] : tok->pad_id;
        memcpy(tb->attention_mask.data + i * S, e->attention_mask, sizeof(int32_t) * (size_t)e->S);
        memcpy(tb->token_type_ids.data + i * S, e->token_type_ids, sizeof(int32_t) * (size_t)e->S);
    }
    return 0;
}

/* Copies e's token k to w's token t. */
static void copy_token(const Encoding *e, int32_t k, Encoding *w, int32_t t)
{
    w->input_ids[t] = e->input_ids[k];
    w->token_type_ids[t] = e->token_type_ids[k];
    w->attention_mask[t] = e->attention_mask[k];
    w->start[t] = e->start[k];
    w->end[t] = e->end[k];
    w->byte_start[t] = e->byte_start[k];
    w->byte_end[t] = e->byte_end[k];
}

void bertc_encoding_window(const Encoding *e, int32_t first, int32_t n, Arena *arena,
                           Encoding *out)
{
    /* e: [CLS] A[0, n_a) [SEP] (B[0, n_b) [SEP]); the window keeps [CLS],
     * A[first, first + n), e's [SEP] after A and all of B's part */
    int32_t tail = e->S - (1 + e->n_a);   /* [SEP] (B [SEP]) */
    int32_t S = 1 + n + tail;
    int32_t **arrays[7] = {&out->input_ids, &out->token_type_ids, &out->attention_mask,
                           &out->start, &out->end, &out->byte_start, &out->byte_end};
    for (int k = 0; k < 7; k++)
        *arrays[k] = bertc_arena_alloc(arena, sizeof(int32_t) * (size_t)S);
    copy_token(e, 0, out, 0);
    for (int32_t k = 0; k < n; k++)
        copy_token(e, 1 + first + k, out, 1 + k);
    for (int32_t k = 0; k < tail; k++)
        copy_token(e, 1 + e->n_a + k, out, 1 + n + k);
    out->S = S;
    out->n_a = n;
    out->n_b = e->n_b;
    out->untruncated = e->untruncated;
}

int bertc_encoding_windows(const Encoding *full, int32_t max_len, int32_t stride, Arena *arena,
                           Encoding **windows, int32_t *n, BertcError *err)
{
    int32_t tail = full->S - (1 + full->n_a);   /* [SEP], and the pair with its [SEP] */
    int32_t L = max_len - 1 - tail;             /* text A's tokens a window */
    if (L < 1)
        return bertc_errorf(err, "its TEXT_PAIR is %d tokens, which leaves no room for a window "
                            "of TEXT in max_len %d", (int)full->n_b, (int)max_len);
    if (stride < 0 || stride >= L)
        return bertc_errorf(err, "stride %d: a window holds %d tokens of the text; give a "
                            "stride in [0, %d)", (int)stride, (int)L, (int)L);
    int32_t step = L - stride;
    /* windows start at 0, step, 2 step, ... until one reaches the end */
    int32_t count = full->n_a <= L ? 1 : 1 + (full->n_a - L + step - 1) / step;
    *windows = bertc_arena_alloc(arena, sizeof **windows * (size_t)count);
    for (int32_t w = 0; w < count; w++) {
        int32_t first = w * step;
        int32_t len = full->n_a - first < L ? full->n_a - first : L;
        bertc_encoding_window(full, first, len, arena, &(*windows)[w]);
    }
    *n = count;
    return 0;
}

void bertc_windows_add(WindowAggregate rule, float *acc, const float *z, int64_t n, int seen,
                       int32_t window)
{
    if (seen == 0 || (rule == WINDOWS_FIRST && window == 0)) {
        memcpy(acc, z, sizeof(float) * (size_t)n);
        return;
    }
    for (int64_t k = 0; rule != WINDOWS_FIRST && k < n; k++)
        acc[k] = rule == WINDOWS_MEAN ? acc[k] + z[k] : z[k] > acc[k] ? z[k] : acc[k];
}

void bertc_windows_finish(WindowAggregate rule, float *acc, int64_t n, int count)
{
    for (int64_t k = 0; rule == WINDOWS_MEAN && count > 1 && k < n; k++)
        acc[k] /= (float)count;
}

void bertc_text_batch_put(const TextBatch *tb, const char *ids, const char *mask, const char *types,
                    Batch *out)
{
    bertc_batch_put_ids(out, ids, tb->input_ids);
    bertc_batch_put_ids(out, mask, tb->attention_mask);
    bertc_batch_put_ids(out, types, tb->token_type_ids);
    out->enc = tb->enc;
    out->n_enc = (int)tb->input_ids.shape[0];
}

int bertc_bert_batch_from_text(const Model *m, const Tokenizer *tok, const TextExample *ex, int n,
                         int32_t max_len, Graph *g, Batch *out, BertcError *err)
{
    TextBatch tb;
    if (bertc_text_batch_encode(&m->cfg, tok, ex, n, max_len, 0, g, &tb, err) != 0)
        return -1;
    bertc_text_batch_put(&tb, "input_ids", "attention_mask", "token_type_ids", out);
    return 0;
}

int bertc_model_batch_from_text(const Model *m, const Tokenizer *tok, const TextExample *ex, int n,
                          int32_t max_len, Graph *g, Batch *out, BertcError *err)
{
    if (!m->arch->batch_from_text)
        return bertc_errorf(err, "%s cannot be given raw text (it has no batch_from_text); "
                            "give it an inputs .safetensors", m->arch->name);
    BertcCatch guard;
    bertc_catch_begin(&guard, err);
    if (setjmp(guard.env) != 0)
        return -1;   /* texts too long for memory: err says so */
    int rc = m->arch->batch_from_text(m, tok, ex, n, max_len, g, out, err);
    bertc_catch_end(&guard);
    return rc;
}
