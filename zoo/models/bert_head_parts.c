/* zoo/models/bert_head_parts.c — the pieces every Hugging Face BERT head shares
 * (zoo/models/bert_heads_internal.h). */
#include "zoo/models/bert_heads_internal.h"
#include "tensor/format_internal.h"

#include <stdio.h>
#include <string.h>

bool bertc_bert_add_prefix(const char *name, char *alt, size_t len)
{
    return (size_t)snprintf(alt, len, "bert.%s", name) < len;
}

bool bertc_bert_drop_prefix(const char *name, char *alt, size_t len)
{
    if (strncmp(name, "bert.", 5) != 0)
        return false;
    return (size_t)snprintf(alt, len, "%s", name + 5) < len;
}

void bertc_bert_head_encoder_init(BertModel *m, Registry *r, const BertConfig *cfg, bool has_pooler)
{
    bertc_nn_push(r, "bert", "BertModel", false);
    bertc_bert_model_init(m, r, cfg, BERT_HF, has_pooler);
    bertc_nn_pop(r);
}

int bertc_bert_head_read_inputs(const BertConfig *cfg, Graph *g, const Batch *in, BertInputs *x,
                          BertcError *err)
{
    return bertc_bert_read_inputs(cfg, g, in, "input_ids", "attention_mask", "token_type_ids", x,
                            err);
}

void bertc_bert_head_random_inputs(const BertConfig *cfg, Graph *g, int64_t B, int64_t S, Rng *rng,
                             Batch *out, ITensor *mlm_labels)
{
    bertc_random_bert_inputs(cfg, g, B, S, rng, "input_ids", "attention_mask", "token_type_ids", out,
                       mlm_labels);
}

float bertc_bert_classifier_dropout(const BertConfig *cfg)
{
    return cfg->classifier_dropout >= 0 ? cfg->classifier_dropout : cfg->hidden_dropout_prob;
}

int bertc_bert_read_classes(const Batch *in, const char *name, int ndim, const int64_t *shape,
                      int64_t C, const char *limit, bool ignore, ITensor *out, BertcError *err)
{
    if (bertc_batch_ids(in, name, ndim, shape, out, err) != 0)
        return -1;
    for (int64_t i = 0; i < out->numel; i++) {
        int32_t v = out->data[i];
        if ((v >= 0 && v < C) || (ignore && v == -100))
            continue;
        char at[SHAPE_STR_LEN];
        bertc_index_str(at, sizeof at, out->ndim, out->shape, i);
        return bertc_errorf(err, "%s: '%s'%s = %d is outside [0, %s %lld)%s", in->source, name,
                            at, (int)v, limit, (long long)C, ignore ? " and not -100" : "");
    }
    return 0;
}

Var *bertc_bert_class_loss(Graph *g, Var *logits, const ITensor *target)
{
    int64_t C = logits->value.shape[logits->value.ndim - 1], N = target->numel;
    int64_t nc[2] = {N, C};
    ITensor flat = bertc_itensor_view(target->data, 1, &N);
    return bertc_ag_cross_entropy(g, bertc_ag_reshape(g, logits, 2, nc), &flat, -100);
}
