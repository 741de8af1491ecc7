/* zoo/train/finetune_mlm.c — masked-language-model training for `bertc finetune
 * --task mlm` (domain adaptation of an encoder on unlabelled text): each
 * batch masks 15 % of the real tokens as BERT's pre-training and Hugging
 * Face's DataCollatorForLanguageModeling do (of those, 80 % become [MASK],
 * 10 % a random token, 10 % stay), "labels" holding the original id there
 * and -100 elsewhere; evaluation reports the perplexity exp(mean CE over the
 * masked tokens), the held-out rows masked the same way at every evaluation.
 *
 * The training draws come from the graph's RNG (g->rng), which checkpoints
 * save, so --resume masks as the uninterrupted run would. */
#include "zoo/train/finetune_internal.h"

#include <string.h>

#define MLM_PROBABILITY 0.15

static bool is_special(const Tokenizer *tok, int32_t id)
{
    return id == tok->cls_id || id == tok->sep_id || id == tok->pad_id;
}

/* Masks row j of ids (S) in place, labels (S) set; returns how many. */
static int64_t mask_row(const Tokenizer *tok, const BertConfig *cfg, int32_t *ids,
                        const int32_t *attention, int32_t *labels, int64_t S, Rng *rng)
{
    int64_t n = 0;
    int32_t first = bertc_random_first_token(cfg);
    for (int64_t t = 0; t < S; t++) {
        labels[t] = -100;
        if (!attention[t] || is_special(tok, ids[t]) || bertc_rng_uniform(rng) > MLM_PROBABILITY)
            continue;
        labels[t] = ids[t];
        double r = bertc_rng_uniform(rng);
        if (r <= 0.8)
            ids[t] = tok->mask_id;
        else if (r <= 0.9)
            ids[t] = (int32_t)bertc_rng_randint(rng, first, tok->V - 1);
        n++;
    }
    return n;
}

int bertc_finetune_mlm_batch(const FinetuneData *data, const Model *m, const int64_t *idx,
                             int64_t n, Graph *g, Batch *b, bool eval, int64_t *tokens,
                             int64_t *masked, BertcError *err)
{
    TextExample *ex = bertc_arena_alloc(g->step, sizeof *ex * (size_t)n);
    for (int64_t j = 0; j < n; j++)
        ex[j] = data->ex[idx[j]];
    TextBatch tb;
    if (bertc_text_batch_encode(&m->cfg, data->tok, ex, (int)n, data->max_len, 0, g, &tb, err) != 0)
        return -1;
    int64_t S = tb.input_ids.shape[1], shape[2] = {n, S};
    ITensor y = bertc_itensor_new(g->step, 2, shape);
    *tokens = *masked = 0;
    for (int64_t j = 0; j < n; j++) {
        /* held-out row r is masked from seed + r at every evaluation */
        Rng fixed = bertc_rng_seed(data->seed + (uint64_t)idx[j]);
        *masked += mask_row(data->tok, &m->cfg, tb.input_ids.data + j * S,
                            tb.attention_mask.data + j * S, y.data + j * S, S,
                            eval ? &fixed : &g->rng);
        for (int64_t t = 0; t < S; t++)
            *tokens += tb.attention_mask.data[j * S + t];
    }
    if (*masked == 0)   /* a loss needs one target: the first real token */
        for (int64_t t = 0; t < S && *masked == 0; t++)
            if (tb.attention_mask.data[t] && !is_special(data->tok, tb.input_ids.data[t])) {
                y.data[t] = tb.input_ids.data[t];
                tb.input_ids.data[t] = data->tok->mask_id;
                *masked = 1;
            }
    if (*masked == 0)
        return bertc_errorf(err, "%s: a batch of texts without a single token to mask",
                            data->name ? data->name : "data");
    bertc_text_batch_put(&tb, "input_ids", "attention_mask", "token_type_ids", b);
    bertc_batch_put_ids(b, "labels", y);
    return 0;
}
