/* zoo/models/random_batch.c — valid random inputs for any architecture, for the
 * benches (bench/forward.c, bench/train.c) and the smoke tests. Each
 * architecture writes its own batch next to its forward (the random_batch
 * hook of ModelArch) from the pieces here: the token ids, masks and MLM
 * labels every BERT input shares, and uniform class labels. */
#include "zoo/models/model.h"

/* bert-base-uncased: ids 0..998 are [PAD], [unusedN], [UNK], [CLS], [SEP],
 * [MASK]; from 999 on, real characters and WordPieces. */
#define BERT_BASE_FIRST_WORD 1000

/* The MLM share of labelled positions, as BERT's pre-training. */
#define MLM_PROBABILITY 0.15

int32_t bertc_random_first_token_past(const BertConfig *cfg, const ConfigTokenIds *more)
{
    if (cfg->vocab_size > BERT_BASE_FIRST_WORD)
        return BERT_BASE_FIRST_WORD;
    int32_t last = cfg->pad_token_id;
    const int32_t specials[] = {cfg->unk_token_id, cfg->cls_token_id, cfg->sep_token_id,
                                cfg->mask_token_id};
    for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++)
        last = specials[i] > last ? specials[i] : last;
    for (int i = 0; more && i < more->n; i++)
        last = more->ids[i] > last ? more->ids[i] : last;
    return last + 1 < cfg->vocab_size ? last + 1 : 0;
}

int32_t bertc_random_first_token(const BertConfig *cfg)
{
    return bertc_random_first_token_past(cfg, NULL);
}

/* One draw per position, and the MLM draw right after it (not for position
 * 0 of a row): the order bench/ has always used, so its BERT-base figures
 * stay comparable across versions. */
void bertc_random_tokens(const BertConfig *cfg, int32_t first, Graph *g, int64_t B, int64_t S,
                         Rng *rng, ITensor *ids, ITensor *mlm_labels)
{
    int64_t bs[2] = {B, S}, n_labelled = 0;
    *ids = bertc_itensor_new(g->step, 2, bs);
    *mlm_labels = bertc_itensor_new(g->step, 2, bs);
    for (int64_t i = 0; i < B * S; i++) {
        ids->data[i] = (int32_t)bertc_rng_randint(rng, first, cfg->vocab_size - 1);
        bool labelled = i % S && bertc_rng_uniform(rng) < MLM_PROBABILITY;
        mlm_labels->data[i] = labelled ? ids->data[i] : -100;
        n_labelled += labelled;
    }
    /* no labelled position: CE over nothing is NaN, so label one */
    if (n_labelled == 0 && S > 1)
        mlm_labels->data[1] = ids->data[1];
}

void bertc_random_bert_inputs_from(const BertConfig *cfg, int32_t first, Graph *g, int64_t B,
                                   int64_t S, Rng *rng, const char *ids_name,
                                   const char *mask_name, const char *types_name, Batch *out,
                                   ITensor *mlm_labels)
{
    int64_t bs[2] = {B, S};
    ITensor ids, mask = bertc_itensor_new(g->step, 2, bs);
    bertc_random_tokens(cfg, first, g, B, S, rng, &ids, mlm_labels);
    for (int64_t i = 0; i < B * S; i++)
        mask.data[i] = 1;
    bertc_batch_put_ids(out, ids_name, ids);
    bertc_batch_put_ids(out, mask_name, mask);
    bertc_batch_put_ids(out, types_name, bertc_itensor_new(g->step, 2, bs));
}

void bertc_random_bert_inputs(const BertConfig *cfg, Graph *g, int64_t B, int64_t S, Rng *rng,
                        const char *ids_name, const char *mask_name, const char *types_name,
                        Batch *out, ITensor *mlm_labels)
{
    bertc_random_bert_inputs_from(cfg, bertc_random_first_token(cfg), g, B, S, rng, ids_name,
                                  mask_name, types_name, out, mlm_labels);
}

ITensor bertc_random_classes(Graph *g, int64_t n, int64_t C, Rng *rng)
{
    ITensor t = bertc_itensor_new(g->step, 1, &n);
    for (int64_t i = 0; i < n; i++)
        t.data[i] = (int32_t)bertc_rng_randint(rng, 0, C - 1);
    return t;
}

int bertc_model_random_batch(const Model *m, Graph *g, int64_t B, int64_t S, bool labels, Rng *rng,
                       Batch *out, BertcError *err)
{
    if (B < 1 || S < 1)
        return bertc_errorf(err, "random batch: B and S must be >= 1, got B = %lld, S = %lld",
                            (long long)B, (long long)S);
    if (!m->arch->random_batch)
        return bertc_errorf(err, "random batch: %s cannot make one", m->arch->name);
    bertc_batch_init(out, "random batch");
    return m->arch->random_batch(&m->cfg, g, B, S, labels, rng, out, err);
}

Var *bertc_model_step_loss(Graph *g, const Outputs *out)
{
    Var *loss = bertc_outputs_get(out, "loss"), *h = bertc_outputs_get(out, "last_hidden_state");
    if (loss || !h)
        return loss;
    Tensor zeros = bertc_tensor_new(g->step, h->value.ndim, h->value.shape);
    return bertc_ag_mse(g, h, &zeros);
}
