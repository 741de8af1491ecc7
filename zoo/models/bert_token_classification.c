/* zoo/models/bert_token_classification.c — Hugging Face BertForTokenClassification
 * (NER, POS tagging): one label per token.
 *
 *   X      = BertModel(ids, mask, types).last_hidden_state   (B, S, H), no pooler
 *   logits = classifier(dropout(X))                          (B, S, num_labels)
 *   loss   = CE(logits, labels) over every position whose label is not -100
 *
 * As HF's current modeling_bert, the loss does not look at attention_mask:
 * padding is left out by labelling it -100 (what HF's data collators do).
 * Parameters: bert.* (without bert.pooler, HF's add_pooling_layer=False),
 * classifier.weight (num_labels, H), classifier.bias (num_labels). */
#include "zoo/models/bert_heads_internal.h"

typedef struct BertTokenClassification {
    BertModel bert;
    Dropout dropout;      /* p = classifier_dropout, else hidden_dropout_prob */
    Linear classifier;    /* (num_labels, H) */
} BertTokenClassification;

static void *tokcls_build(Registry *r, const BertConfig *cfg, BertcError *err)
{
    (void)err;
    BertTokenClassification *m = bertc_arena_calloc(r->arena, 1, sizeof *m);
    bertc_bert_head_encoder_init(&m->bert, r, cfg, false);
    bertc_dropout_init(&m->dropout, r, "dropout", bertc_bert_classifier_dropout(cfg));
    bertc_linear_init(&m->classifier, r, "classifier", cfg->hidden_size, cfg->num_labels, true);
    return m;
}

static int tokcls_forward(void *impl, const BertConfig *cfg, Graph *g, const Batch *in,
                          Outputs *out, BertcError *err)
{
    BertTokenClassification *m = impl;
    BertInputs x;
    if (bertc_bert_head_read_inputs(cfg, g, in, &x, err) != 0)
        return -1;
    int64_t bs[2] = {x.B, x.S};
    ITensor labels;
    bool labelled = bertc_batch_find(in, "labels") != NULL;
    if (labelled && bertc_bert_read_classes(in, "labels", 2, bs, cfg->num_labels, "num_labels", true,
                                      &labels, err) != 0)
        return -1;
    BertOutput r = bertc_bert_model_forward(g, &m->bert, &x);
    Var *h = bertc_dropout_forward(g, &m->dropout, r.last_hidden_state);
    Var *logits = bertc_linear_forward(g, &m->classifier, h);               /* (B, S, num_labels) */
    bertc_outputs_put(out, g, logits, "logits");
    bertc_bert_put_outputs(out, g, &m->bert, &r);
    if (labelled)
        bertc_outputs_put(out, g, bertc_bert_class_loss(g, logits, &labels), "loss");
    return 0;
}

/* labels (B, S): a class for every token, -100 on the [CLS] at position 0
 * (as a tagger labels only the words). */
static int tokcls_random_batch(const BertConfig *cfg, Graph *g, int64_t B, int64_t S,
                               bool labels, Rng *rng, Batch *out, BertcError *err)
{
    (void)err;
    ITensor unused;
    bertc_bert_head_random_inputs(cfg, g, B, S, rng, out, &unused);
    if (!labels)
        return 0;
    ITensor y = bertc_random_classes(g, B * S, cfg->num_labels, rng);
    int64_t bs[2] = {B, S};
    for (int64_t b = 0; b < B && S > 1; b++)
        y.data[b * S] = -100;
    bertc_batch_put_ids(out, "labels", bertc_itensor_view(y.data, 2, bs));
    return 0;
}

static const InputSpec tokcls_inputs[] = {
    {.name = "labels", .type = INPUT_IDS, .shape = "(B, S)",
     .values = "[0, num_labels), -100 ignored (padding, sub-words)", .label = true},
};

static const OutputSpec tokcls_outputs[] = {
    {"logits", "(B, S, num_labels)"},
    {"loss", "()"},
};

static const ExplainStep tokcls_steps[] = {
    {.title = "Token classifier",
     .equation = "z<sub>t</sub> = X<sub>L</sub>[t] W<sub>C</sub> + b<sub>C</sub>  &nbsp; "
                 "(B, S, num_labels)",
     .where = "zoo/models/bert_token_classification.c:tokcls_forward", .output = "logits"},
};

static const ModelExplain tokcls_explain = {
    .mechanism = "A label for every token (named entities, parts of speech).",
    EXPLAIN_ENCODER(bertc_bert_encoder_steps), EXPLAIN_STEPS(tokcls_steps),
    .predict = {{.kind = PREDICT_TOKEN_CLASSES, .output = "logits"}},
};

const ModelArch bertc_arch_bert_token_classification = {
    .name = "BertForTokenClassification",
    .summary = "BERT with a classifier on every token (NER, tagging): HF's "
               "BertForTokenClassification",
    .shared_inputs = bertc_bert_inputs,
    .n_shared_inputs = BERT_N_INPUTS,
    .inputs = tokcls_inputs,
    .n_inputs = 1,
    .shared_outputs = bertc_bert_outputs,
    .n_shared_outputs = BERT_N_OUTPUTS,
    .outputs = tokcls_outputs,
    .n_outputs = 2,
    .loss = "CE of logits against labels over every position whose label is not -100 "
            "(attention_mask plays no part)",
    .build = tokcls_build,
    .forward = tokcls_forward,
    .rename = bertc_bert_drop_prefix,
    .random_batch = tokcls_random_batch,
    .batch_from_text = bertc_bert_batch_from_text,
    .task = MODEL_TASK_TOKEN_CLS,
    .finetune_head = true,
    .explain = &tokcls_explain,
};
