/* zoo/models/bert_pretraining.c — Hugging Face BertForPreTraining: BERT's two
 * pre-training tasks at once (Devlin et al. 2019, section 3.1).
 *
 *   X, pool  = BertModel(ids, mask, types)          (B, S, H), (B, H)
 *   prediction_logits       = cls.predictions(X)    (B, S, V), decoder tied to
 *                                                   the word embeddings
 *   seq_relationship_logits = cls.seq_relationship(pool)      (B, 2)
 *   loss = CE(prediction_logits, labels) [-100 ignored]
 *        + CE(seq_relationship_logits, next_sentence_label)
 *
 * As HF, the loss needs both labels; one alone is an error here (HF would
 * silently give no loss). Parameters: bert.* with bert.pooler,
 * cls.predictions.* (as BertForMaskedLM's, decoder.weight/bias tied) and
 * cls.seq_relationship.weight (2, H), .bias (2). */
#include "zoo/models/bert_heads_internal.h"

typedef struct BertPreTraining {
    BertModel bert;
    BertLMHead predictions;       /* cls.predictions */
    Linear seq_relationship;      /* cls.seq_relationship (2, H) */
} BertPreTraining;

static void *pretraining_build(Registry *r, const BertConfig *cfg, BertcError *err)
{
    (void)err;
    BertPreTraining *m = bertc_arena_calloc(r->arena, 1, sizeof *m);
    bertc_bert_head_encoder_init(&m->bert, r, cfg, true);
    bertc_nn_push(r, "cls", "BertPreTrainingHeads", false);
    bertc_bert_lm_predictions_init(&m->predictions, r, cfg, m->bert.word.weight);
    bertc_linear_init(&m->seq_relationship, r, "seq_relationship", cfg->hidden_size, 2, true);
    bertc_nn_pop(r);
    return m;
}

/* labels (B, S) and next_sentence_label (B), both or neither (*labelled). */
static int read_labels(const BertConfig *cfg, const Batch *in, const BertInputs *x,
                       ITensor *mlm, ITensor *nsp, bool *labelled, BertcError *err)
{
    bool has_mlm = bertc_batch_find(in, "labels") != NULL;
    bool has_nsp = bertc_batch_find(in, "next_sentence_label") != NULL;
    int64_t bs[2] = {x->B, x->S};
    *labelled = has_mlm;
    if (has_mlm != has_nsp)
        return bertc_errorf(err, "%s: '%s' is given without '%s'; BertForPreTraining's loss "
                            "is the sum of both", in->source,
                            has_mlm ? "labels" : "next_sentence_label",
                            has_mlm ? "next_sentence_label" : "labels");
    if (!has_mlm)
        return 0;
    if (bertc_bert_read_classes(in, "labels", 2, bs, cfg->vocab_size, "vocab_size", true, mlm,
                          err) != 0 ||
        bertc_bert_read_classes(in, "next_sentence_label", 1, &x->B, 2, "next-sentence classes",
                          false, nsp, err) != 0)
        return -1;
    return 0;
}

static int pretraining_forward(void *impl, const BertConfig *cfg, Graph *g, const Batch *in,
                               Outputs *out, BertcError *err)
{
    BertPreTraining *m = impl;
    BertInputs x;
    ITensor mlm, nsp;
    bool labelled;
    if (bertc_bert_head_read_inputs(cfg, g, in, &x, err) != 0 ||
        read_labels(cfg, in, &x, &mlm, &nsp, &labelled, err) != 0)
        return -1;
    BertOutput r = bertc_bert_model_forward(g, &m->bert, &x);
    Var *words = bertc_bert_lm_head_forward(g, &m->predictions, r.last_hidden_state);  /* (B, S, V) */
    Var *next = bertc_linear_forward(g, &m->seq_relationship, r.pooler_output);        /* (B, 2) */
    bertc_outputs_put(out, g, words, "prediction_logits");
    bertc_outputs_put(out, g, next, "seq_relationship_logits");
    bertc_bert_put_outputs(out, g, &m->bert, &r);
    if (labelled)
        bertc_outputs_put(out, g, bertc_ag_add(g, bertc_bert_class_loss(g, words, &mlm),
                                   bertc_bert_class_loss(g, next, &nsp)), "loss");
    return 0;
}

/* labels: 15% of the positions with their own token (bertc_random_tokens), as
 * BertForMaskedLM's random batch; next_sentence_label 0 or 1. */
static int pretraining_random_batch(const BertConfig *cfg, Graph *g, int64_t B, int64_t S,
                                    bool labels, Rng *rng, Batch *out, BertcError *err)
{
    (void)err;
    ITensor mlm_labels;
    bertc_bert_head_random_inputs(cfg, g, B, S, rng, out, &mlm_labels);
    if (!labels)
        return 0;
    bertc_batch_put_ids(out, "labels", mlm_labels);
    bertc_batch_put_ids(out, "next_sentence_label", bertc_random_classes(g, B, 2, rng));
    return 0;
}

static const InputSpec pretraining_inputs[] = {
    {.name = "labels", .type = INPUT_IDS, .shape = "(B, S)",
     .values = "the token id to predict, -100 elsewhere", .label = true},
    {.name = "next_sentence_label", .type = INPUT_IDS, .shape = "(B)",
     .values = "0 (B follows A) or 1 (B is random)", .label = true},
};

static const OutputSpec pretraining_outputs[] = {
    {"prediction_logits", "(B, S, V)"},
    {"seq_relationship_logits", "(B, 2)"},
    {"pooler_output", "(B, H)"},
    {"loss", "()"},
};

static const ExplainStep pretraining_steps[] = {
    BERT_STEP_POOLER,
    {.title = "Masked-LM head",
     .equation = "z = LN(GELU(X<sub>L</sub> W<sub>T</sub>)) E<sub>word</sub><sup>T</sup> + b  "
                 "&nbsp; (B, S, V)",
     .where = "zoo/models/bert_pretraining.c:pretraining_forward", .output = "prediction_logits"},
    {.title = "Next-sentence head",
     .equation = "z = p W<sub>NSP</sub> + b  &nbsp; (B, 2)",
     .where = "zoo/models/bert_pretraining.c:pretraining_forward", .output = "seq_relationship_logits"},
};

static const ModelExplain pretraining_explain = {
    .mechanism = "BERT's two pre-training heads: masked tokens and next sentence.",
    EXPLAIN_ENCODER(bertc_bert_encoder_steps), EXPLAIN_STEPS(pretraining_steps),
    .predict = {{.kind = PREDICT_TOKENS, .output = "prediction_logits"},
                {.kind = PREDICT_CLASSES, .output = "seq_relationship_logits",
                 .labels = bertc_bert_nsp_labels}},
};

const ModelArch bertc_arch_bert_pretraining = {
    .name = "BertForPreTraining",
    .summary = "BERT's two pre-training heads, masked LM and next sentence: HF's "
               "BertForPreTraining",
    .shared_inputs = bertc_bert_inputs,
    .n_shared_inputs = BERT_N_INPUTS,
    .inputs = pretraining_inputs,
    .n_inputs = 2,
    .shared_outputs = bertc_bert_outputs,
    .n_shared_outputs = BERT_N_OUTPUTS,
    .outputs = pretraining_outputs,
    .n_outputs = 4,
    .loss = "MLM CE (labels not -100) + NSP CE (next_sentence_label); both labels "
            "or neither",
    .build = pretraining_build,
    .forward = pretraining_forward,
    .rename = bertc_bert_drop_prefix,
    .random_batch = pretraining_random_batch,
    .batch_from_text = bertc_bert_batch_from_text,
    .task = MODEL_TASK_MASKED_LM,
    .pretraining = MODEL_PRETRAIN_MLM_NSP,
    .explain = &pretraining_explain,
};
