/* zoo/models/bert_heads.c — HF BertModel, BertForSequenceClassification (§6.2) and
 * BertForMaskedLM with the LM head shared by SpanBERT. */
#include "zoo/models/bert_heads_internal.h"

#include <math.h>

/* ---- the inputs and outputs every head shares ------------------------- */

const InputSpec bertc_bert_inputs[BERT_N_INPUTS] = {
    {.name = "input_ids", .type = INPUT_IDS, .shape = "(B, S)", .values = "[0, vocab_size)",
     .required = true},
    {.name = "attention_mask", .type = INPUT_IDS, .shape = "(B, S)",
     .values = "1 token, 0 padding (absent: all 1)"},
    {.name = "token_type_ids", .type = INPUT_IDS, .shape = "(B, S)",
     .values = "[0, type_vocab_size) (absent: all 0)"},
};

const OutputSpec bertc_bert_outputs[BERT_N_OUTPUTS] = {
    {"last_hidden_state", "(B, S, H)"},
    {"hidden_states.{i}", "(B, S, H)"},
    {"layers.{l}.attention_probs", "(B, nh, S, S)"},
};

const ExplainStep bertc_bert_encoder_steps[BERT_N_ENCODER_STEPS] = {
    BERT_STEP_EMBEDDINGS,
    {.title = "Self-attention",
     .equation = "A = softmax(Q K<sup>T</sup> / &radic;d + M), &nbsp; Q = X<sub>l</sub>W<sub>Q</sub>, "
                 "K = X<sub>l</sub>W<sub>K</sub>; &nbsp; Attn = A V  &nbsp; (B, nh, S, S)",
     .where = "zoo/models/bert_attention.c:bertc_bert_self_attention_forward",
     .output = "layers.{l}.attention_probs"},
    BERT_STEP_LAYER_OUTPUT,
};

/* ---- BertModel -------------------------------------------------------- */

static void *bert_model_build(Registry *r, const BertConfig *cfg, BertcError *err)
{
    (void)err;
    BertModel *m = bertc_arena_calloc(r->arena, 1, sizeof *m);
    bertc_bert_model_init(m, r, cfg, BERT_HF, cfg->add_pooling_layer);
    return m;
}

static int bert_model_run(void *impl, const BertConfig *cfg, Graph *g, const Batch *in,
                          Outputs *out, BertcError *err)
{
    BertModel *m = impl;
    BertInputs x;
    if (bertc_bert_read_inputs(cfg, g, in, "input_ids", "attention_mask", "token_type_ids", &x,
                         err) != 0)
        return -1;
    BertOutput r = bertc_bert_model_forward(g, m, &x);
    bertc_bert_put_outputs(out, g, m, &r);
    return 0;
}

/* No loss to label for: input_ids, attention_mask, token_type_ids only. */
static int bert_model_random_batch(const BertConfig *cfg, Graph *g, int64_t B, int64_t S,
                                   bool labels, Rng *rng, Batch *out, BertcError *err)
{
    (void)labels;
    (void)err;
    ITensor unused;
    bertc_random_bert_inputs(cfg, g, B, S, rng, "input_ids", "attention_mask", "token_type_ids", out,
                       &unused);
    return 0;
}

static const OutputSpec bert_model_outputs[] = {
    {"pooler_output", "(B, H)"},
};

static const ExplainStep bert_model_steps[] = {BERT_STEP_POOLER};

static const ModelExplain bert_model_explain = {
    .mechanism = "The BERT encoder alone: every token's vector is rewritten, layer by layer, "
                 "as a mix of the others weighted by attention.",
    EXPLAIN_ENCODER(bertc_bert_encoder_steps), EXPLAIN_STEPS(bert_model_steps),
};

const ModelArch bertc_arch_bert_model = {
    .name = "BertModel",
    .summary = "the BERT encoder (Devlin et al. 2019): hidden states, pooler output",
    .shared_inputs = bertc_bert_inputs,
    .n_shared_inputs = BERT_N_INPUTS,
    .shared_outputs = bertc_bert_outputs,
    .n_shared_outputs = BERT_N_OUTPUTS,
    .outputs = bert_model_outputs,
    .n_outputs = 1,
    .loss = "none",
    .build = bert_model_build,
    .forward = bert_model_run,
    .rename = bertc_bert_add_prefix,
    .random_batch = bert_model_random_batch,
    .batch_from_text = bertc_bert_batch_from_text,
    .task = MODEL_TASK_ENCODER,
    .explain = &bert_model_explain,
};

/* ---- BertForSequenceClassification ------------------------------------ */

typedef struct BertSeqCls {
    BertModel bert;
    Dropout dropout;
    Linear classifier;    /* (num_labels, H) */
} BertSeqCls;

static void *seqcls_build(Registry *r, const BertConfig *cfg, BertcError *err)
{
    if (cfg->num_labels < 1) {
        bertc_errorf(err, "config: num_labels must be >= 1, got %d", cfg->num_labels);
        return NULL;
    }
    BertSeqCls *m = bertc_arena_calloc(r->arena, 1, sizeof *m);
    bertc_nn_push(r, "bert", "BertModel", false);
    bertc_bert_model_init(&m->bert, r, cfg, BERT_HF, true);
    bertc_nn_pop(r);
    bertc_dropout_init(&m->dropout, r, "dropout", bertc_bert_classifier_dropout(cfg));
    bertc_linear_init(&m->classifier, r, "classifier", cfg->hidden_size, cfg->num_labels, true);
    return m;
}

/* Labels as floats of the given shape (regression and multi-label accept
 * integer files too: 0/1 targets are often stored as I64). */
static int float_labels(const Batch *in, int ndim, const int64_t *shape, Graph *g, Tensor *out,
                        BertcError *err)
{
    const BatchItem *it = bertc_batch_find(in, "labels");
    if (!it->is_int)
        return bertc_batch_f32(in, "labels", ndim, shape, out, err);
    ITensor ids;
    if (bertc_batch_ids(in, "labels", ndim, shape, &ids, err) != 0)
        return -1;
    *out = bertc_tensor_empty(g->step, ids.ndim, ids.shape);
    for (int64_t i = 0; i < ids.numel; i++)
        out->data[i] = (float)ids.data[i];
    return 0;
}

/* Sets *loss (NULL when the batch has no labels); returns -1 on bad labels. */
static int seqcls_loss(const BertConfig *cfg, Graph *g, const Batch *in, Var *logits,
                       Var **loss, BertcError *err)
{
    const BatchItem *labels = bertc_batch_find(in, "labels");
    int64_t B = logits->value.shape[0], C = cfg->num_labels;
    *loss = NULL;
    if (!labels)
        return 0;
    ProblemType problem = bertc_problem_type(cfg, labels->is_int);
    if (problem == PROBLEM_REGRESSION) {
        /* mean((logits.squeeze() - labels.squeeze())^2) */
        int64_t shape[1] = {B};
        Tensor y;
        if (C != 1)
            return bertc_errorf(err, "config: regression needs num_labels 1, got %lld",
                                (long long)C);
        if (float_labels(in, 1, shape, g, &y, err) != 0 ||
            bertc_batch_check_real(in, "labels", &y, -HUGE_VAL, HUGE_VAL, err) != 0)
            return -1;
        *loss = bertc_ag_mse(g, bertc_ag_reshape(g, logits, 1, shape), &y);
    } else if (problem == PROBLEM_MULTI_LABEL) {
        int64_t shape[2] = {B, C};
        Tensor y;
        /* targets are probabilities (SPEC 6.2: 0/1; soft labels in between) */
        if (float_labels(in, 2, shape, g, &y, err) != 0 ||
            bertc_batch_check_real(in, "labels", &y, 0.0, 1.0, err) != 0)
            return -1;
        *loss = bertc_ag_bce_with_logits(g, logits, &y);
    } else {
        int64_t shape[1] = {B};
        ITensor target;
        if (bertc_batch_ids(in, "labels", 1, shape, &target, err) != 0)
            return -1;
        for (int64_t i = 0; i < B; i++)
            if (target.data[i] != -100 && (target.data[i] < 0 || target.data[i] >= C))
                return bertc_errorf(err, "%s: 'labels'[%lld] = %d is outside [0, num_labels "
                                    "%lld)", in->source, (long long)i, (int)target.data[i],
                                    (long long)C);
        *loss = bertc_ag_cross_entropy(g, logits, &target, -100);
    }
    return 0;
}

static int seqcls_run(void *impl, const BertConfig *cfg, Graph *g, const Batch *in,
                      Outputs *out, BertcError *err)
{
    BertSeqCls *m = impl;
    BertInputs x;
    if (bertc_bert_read_inputs(cfg, g, in, "input_ids", "attention_mask", "token_type_ids", &x,
                         err) != 0)
        return -1;
    BertOutput r = bertc_bert_model_forward(g, &m->bert, &x);
    Var *pooled = bertc_dropout_forward(g, &m->dropout, r.pooler_output);
    Var *logits = bertc_linear_forward(g, &m->classifier, pooled);          /* (B, num_labels) */
    Var *loss;
    if (seqcls_loss(cfg, g, in, logits, &loss, err) != 0)
        return -1;
    bertc_outputs_put(out, g, logits, "logits");
    bertc_bert_put_outputs(out, g, &m->bert, &r);
    if (loss)
        bertc_outputs_put(out, g, loss, "loss");
    return 0;
}

/* labels as the config's problem type reads them: a class index (B) below
 * num_labels, a float target (B) drawn from N(0, 1) for regression, 0/1
 * floats (B, num_labels) for multi-label. With the problem type unset, one
 * label is regression and several single-label (integer labels). */
static void seqcls_random_labels(const BertConfig *cfg, Graph *g, int64_t B, Rng *rng,
                                 Batch *out)
{
    int64_t C = cfg->num_labels, bc[2] = {B, C};
    ProblemType problem = bertc_problem_type(cfg, true);
    if (problem == PROBLEM_SINGLE_LABEL) {
        bertc_batch_put_ids(out, "labels", bertc_random_classes(g, B, C, rng));
    } else if (problem == PROBLEM_REGRESSION) {
        Tensor y = bertc_tensor_empty(g->step, 1, &B);
        for (int64_t i = 0; i < B; i++)
            y.data[i] = (float)bertc_rng_normal(rng);
        bertc_batch_put_f32(out, "labels", y);
    } else {
        Tensor y = bertc_tensor_empty(g->step, 2, bc);
        for (int64_t i = 0; i < B * C; i++)
            y.data[i] = bertc_rng_uniform(rng) < 0.5 ? 1.0f : 0.0f;
        bertc_batch_put_f32(out, "labels", y);
    }
}

static int seqcls_random_batch(const BertConfig *cfg, Graph *g, int64_t B, int64_t S,
                               bool labels, Rng *rng, Batch *out, BertcError *err)
{
    (void)err;
    ITensor unused;
    bertc_random_bert_inputs(cfg, g, B, S, rng, "input_ids", "attention_mask", "token_type_ids", out,
                       &unused);
    if (labels)
        seqcls_random_labels(cfg, g, B, rng, out);
    return 0;
}

/* BertForSequenceClassification's MSE compares one score per sequence
 * with labels (B). */
static int seqcls_check_config(const BertConfig *cfg, BertcError *err)
{
    if (cfg->problem_type == PROBLEM_REGRESSION && cfg->num_labels != 1)
        return bertc_errorf(err, "config: problem_type regression needs num_labels 1 (one "
                            "score per sequence), found num_labels %d; set num_labels to 1 or "
                            "choose another problem_type", cfg->num_labels);
    return 0;
}

static const InputSpec seqcls_inputs[] = {
    {.name = "labels", .type = INPUT_IDS_OR_FLOAT, .shape = "(B) or (B, num_labels)",
     .values = "class ids in [0, num_labels) (single-label), a float (regression), 0..1 "
               "per label (multi-label)", .label = true},
};

static const OutputSpec seqcls_outputs[] = {
    {"logits", "(B, num_labels)"},
    {"pooler_output", "(B, H)"},
    {"loss", "()"},
};

static const ExplainStep seqcls_steps[] = {
    BERT_STEP_POOLER,
    {.title = "Classifier",
     .equation = "z = p W<sub>C</sub> + b<sub>C</sub>  &nbsp; (B, num_labels)",
     .where = "zoo/models/bert_heads.c:seqcls_run", .output = "logits"},
};

static const ModelExplain seqcls_explain = {
    .mechanism = "A classifier on the pooled [CLS] vector.",
    EXPLAIN_ENCODER(bertc_bert_encoder_steps), EXPLAIN_STEPS(seqcls_steps),
    .predict = {{.kind = PREDICT_CLASSES, .output = "logits"}},
};

const ModelArch bertc_arch_bert_seqcls = {
    .name = "BertForSequenceClassification",
    .summary = "BERT with a classifier on the pooled [CLS]: classes, regression or "
               "multi-label",
    .check_config = seqcls_check_config,
    .shared_inputs = bertc_bert_inputs,
    .n_shared_inputs = BERT_N_INPUTS,
    .inputs = seqcls_inputs,
    .n_inputs = 1,
    .shared_outputs = bertc_bert_outputs,
    .n_shared_outputs = BERT_N_OUTPUTS,
    .outputs = seqcls_outputs,
    .n_outputs = 3,
    .loss = "by problem_type: CE (single-label), MSE (regression), BCE with logits "
            "(multi-label)",
    .build = seqcls_build,
    .forward = seqcls_run,
    .rename = bertc_bert_drop_prefix,
    .random_batch = seqcls_random_batch,
    .batch_from_text = bertc_bert_batch_from_text,
    .task = MODEL_TASK_SEQ_CLS,
    .finetune_head = true,
    .export_c = true,
    .explain = &seqcls_explain,
};

/* ---- the LM head and BertForMaskedLM ---------------------------------- */

void bertc_bert_lm_predictions_init(BertLMHead *h, Registry *r, const BertConfig *cfg,
                              Var *word_embeddings)
{
    int64_t H = cfg->hidden_size, V = cfg->vocab_size;
    h->act = cfg->hidden_act;
    bertc_nn_push(r, "predictions", "BertLMPredictionHead", false);
    bertc_nn_push(r, "transform", "BertPredictionHeadTransform", false);
    bertc_linear_init(&h->transform, r, "dense", H, H, true);
    bertc_layernorm_init(&h->transform_ln, r, "LayerNorm", H, cfg->layer_norm_eps);
    bertc_nn_pop(r);
    h->bias = bertc_nn_param(r, "bias", 1, &V, INIT_ZEROS);
    bertc_nn_push(r, "decoder", bertc_nn_format(r, "Linear(in_features=%lld, out_features=%lld, bias=True)",
                                    (long long)H, (long long)V), true);
    /* r->prefix is now "<...>predictions.decoder." */
    bertc_nn_tie(r, bertc_nn_format(r, "%sweight", r->prefix), word_embeddings);
    bertc_nn_tie(r, bertc_nn_format(r, "%sbias", r->prefix), h->bias);
    bertc_nn_pop(r);
    h->decoder_weight = word_embeddings;
    bertc_nn_pop(r);
}

void bertc_bert_lm_head_init(BertLMHead *h, Registry *r, const BertConfig *cfg, Var *word_embeddings)
{
    bertc_nn_push(r, "cls", "BertOnlyMLMHead", false);
    bertc_bert_lm_predictions_init(h, r, cfg, word_embeddings);
    bertc_nn_pop(r);
}

Var *bertc_bert_lm_head_forward(Graph *g, const BertLMHead *h, Var *x)
{
    Var *t = bertc_bert_activation(g, h->act, bertc_linear_forward(g, &h->transform, x));
    t = bertc_layernorm_forward(g, &h->transform_ln, t);
    return bertc_ag_linear(g, t, h->decoder_weight, h->bias);       /* t E^T + b */
}

typedef struct BertMLM {
    BertModel bert;
    BertLMHead head;
} BertMLM;

static void *mlm_build(Registry *r, const BertConfig *cfg, BertcError *err)
{
    (void)err;
    BertMLM *m = bertc_arena_calloc(r->arena, 1, sizeof *m);
    bertc_nn_push(r, "bert", "BertModel", false);
    bertc_bert_model_init(&m->bert, r, cfg, BERT_HF, false);
    bertc_nn_pop(r);
    bertc_bert_lm_head_init(&m->head, r, cfg, m->bert.word.weight);
    return m;
}

/* Every label is -100 (ignored) or a token id below V. */
static int mlm_check_labels(const Batch *in, const ITensor *labels, int64_t V, BertcError *err)
{
    for (int64_t i = 0; i < labels->numel; i++)
        if (labels->data[i] != -100 && (labels->data[i] < 0 || labels->data[i] >= V))
            return bertc_errorf(err, "%s: 'labels' holds %d, neither -100 nor a token id "
                                "below vocab_size %lld", in->source, (int)labels->data[i],
                                (long long)V);
    return 0;
}

/* The masked-LM loss: CE over every position whose label is not -100. */
static int mlm_loss(const BertConfig *cfg, Graph *g, const Batch *in, Var *logits, Var **loss,
                    BertcError *err)
{
    int64_t B = logits->value.shape[0], S = logits->value.shape[1], V = cfg->vocab_size;
    int64_t bs[2] = {B, S};
    ITensor labels;
    *loss = NULL;
    if (!bertc_batch_find(in, "labels"))
        return 0;
    if (bertc_batch_ids(in, "labels", 2, bs, &labels, err) != 0 ||
        mlm_check_labels(in, &labels, V, err) != 0)
        return -1;
    int64_t flat[2] = {B * S, V}, n = B * S;
    ITensor target = bertc_itensor_view(labels.data, 1, &n);
    *loss = bertc_ag_cross_entropy(g, bertc_ag_reshape(g, logits, 2, flat), &target, -100);
    return 0;
}

/* Training (out->loss_only): the loss alone, from the labelled positions
 * alone. The others never reach the loss, so the LM head runs on the
 * labelled rows only (as fairseq's masked_tokens) and the decoder and the CE
 * are one op that never stores the (B, S, V) logits. Returns NULL (use the
 * full path) when no position is labelled: CE is then NaN, as PyTorch's. */
static Var *mlm_loss_only(const BertConfig *cfg, Graph *g, const Batch *in, const BertMLM *m,
                          Var *hidden, BertcError *err, int *rc)
{
    int64_t B = hidden->value.shape[0], S = hidden->value.shape[1], H = hidden->value.shape[2];
    int64_t bs[2] = {B, S}, flat[2] = {B * S, H}, n = 0;
    ITensor labels;
    *rc = 0;
    if (!bertc_batch_find(in, "labels"))
        return NULL;
    if (bertc_batch_ids(in, "labels", 2, bs, &labels, err) != 0 ||
        mlm_check_labels(in, &labels, cfg->vocab_size, err) != 0) {
        *rc = -1;
        return NULL;
    }
    int32_t *rows = bertc_arena_alloc(g->step, sizeof(int32_t) * (size_t)(B * S));
    int32_t *target = bertc_arena_alloc(g->step, sizeof(int32_t) * (size_t)(B * S));
    for (int64_t i = 0; i < B * S; i++)
        if (labels.data[i] != -100) {
            rows[n] = (int32_t)i;
            target[n++] = labels.data[i];
        }
    if (n == 0)
        return NULL;
    ITensor idx = bertc_itensor_view(rows, 1, &n), t = bertc_itensor_view(target, 1, &n);
    Var *x = bertc_ag_index_select(g, bertc_ag_reshape(g, hidden, 2, flat), 0, &idx);   /* (n, H) */
    const BertLMHead *h = &m->head;
    x = bertc_bert_activation(g, h->act, bertc_linear_forward(g, &h->transform, x));
    x = bertc_layernorm_forward(g, &h->transform_ln, x);
    if (bertc_naive())   /* the (n, V) logits, then their cross-entropy */
        return bertc_ag_cross_entropy(g, bertc_ag_linear(g, x, h->decoder_weight, h->bias), &t, -100);
    return bertc_ag_linear_cross_entropy(g, x, h->decoder_weight, h->bias, &t, -100);
}

static int mlm_run(void *impl, const BertConfig *cfg, Graph *g, const Batch *in, Outputs *out,
                   BertcError *err)
{
    BertMLM *m = impl;
    BertInputs x;
    if (bertc_bert_read_inputs(cfg, g, in, "input_ids", "attention_mask", "token_type_ids", &x,
                         err) != 0)
        return -1;
    BertOutput r = bertc_bert_model_forward(g, &m->bert, &x);
    if (out->loss_only) {
        int rc;
        Var *loss = mlm_loss_only(cfg, g, in, m, r.last_hidden_state, err, &rc);
        if (rc != 0)
            return -1;
        if (loss) {
            bertc_outputs_put(out, g, loss, "loss");
            return 0;
        }
    }
    Var *logits = bertc_bert_lm_head_forward(g, &m->head, r.last_hidden_state);
    Var *loss;
    if (mlm_loss(cfg, g, in, logits, &loss, err) != 0)
        return -1;
    bertc_outputs_put(out, g, logits, "logits");
    bertc_bert_put_outputs(out, g, &m->bert, &r);
    if (loss)
        bertc_outputs_put(out, g, loss, "loss");
    return 0;
}

/* 15% of the positions labelled with their own token (bertc_random_tokens); the
 * ids are not replaced by [MASK]: the cost of a step does not depend on it. */
static int mlm_random_batch(const BertConfig *cfg, Graph *g, int64_t B, int64_t S, bool labels,
                            Rng *rng, Batch *out, BertcError *err)
{
    (void)err;
    ITensor mlm_labels;
    bertc_random_bert_inputs(cfg, g, B, S, rng, "input_ids", "attention_mask", "token_type_ids", out,
                       &mlm_labels);
    if (labels)
        bertc_batch_put_ids(out, "labels", mlm_labels);
    return 0;
}

static const InputSpec mlm_inputs[] = {
    {.name = "labels", .type = INPUT_IDS, .shape = "(B, S)",
     .values = "the token id to predict, -100 elsewhere", .label = true},
};

static const OutputSpec mlm_outputs[] = {
    {"logits", "(B, S, V)"},
    {"loss", "()"},
};

static const ExplainStep mlm_steps[] = {
    {.title = "Masked-LM head (tied to the word embeddings)",
     .equation = "z = LN(GELU(X<sub>L</sub> W<sub>T</sub>)) E<sub>word</sub><sup>T</sup> + b  "
                 "&nbsp; (B, S, V)",
     .where = "zoo/models/bert_heads.c:bertc_bert_lm_head_forward", .output = "logits"},
};

static const ModelExplain mlm_explain = {
    .mechanism = "Every position predicts its token from the vocabulary; write [MASK] in the "
                 "text to see what it fills in.",
    EXPLAIN_ENCODER(bertc_bert_encoder_steps), EXPLAIN_STEPS(mlm_steps),
    .predict = {{.kind = PREDICT_TOKENS, .output = "logits"}},
};

const ModelArch bertc_arch_bert_mlm = {
    .name = "BertForMaskedLM",
    .summary = "BERT with the masked-language-model head (tied to the word embeddings)",
    .shared_inputs = bertc_bert_inputs,
    .n_shared_inputs = BERT_N_INPUTS,
    .inputs = mlm_inputs,
    .n_inputs = 1,
    .shared_outputs = bertc_bert_outputs,
    .n_shared_outputs = BERT_N_OUTPUTS,
    .outputs = mlm_outputs,
    .n_outputs = 2,
    .loss = "CE of logits against labels over the positions whose label is not -100",
    .build = mlm_build,
    .forward = mlm_run,
    .rename = bertc_bert_drop_prefix,
    .random_batch = mlm_random_batch,
    .batch_from_text = bertc_bert_batch_from_text,
    .task = MODEL_TASK_MASKED_LM,
    .finetune_head = true,
    .pretraining = MODEL_PRETRAIN_MLM,
    .explain = &mlm_explain,
};
