/* zoo/models/bert_question_answering.c — Hugging Face BertForQuestionAnswering
 * (SQuAD-style extractive QA): a start and an end score for every token.
 *
 *   X      = BertModel(ids, mask, types).last_hidden_state   (B, S, H), no pooler
 *   [s, e] = qa_outputs(X)                                   (B, S, 2)
 *   start_logits = s, end_logits = e                          (B, S) each
 *   loss   = (CE(start_logits, clamp(start_positions, 0, S))
 *             + CE(end_logits, clamp(end_positions, 0, S))) / 2, ignore_index S
 *
 * HF's clamping: a position past the sequence (a span truncated away)
 * becomes S, which is ignored; a negative one becomes 0 (the [CLS] that
 * SQuAD 2.0 uses for "no answer"). Both positions or neither must be given.
 * Parameters: bert.* (without bert.pooler, HF's add_pooling_layer=False),
 * qa_outputs.weight (2, H), qa_outputs.bias (2). */
#include "zoo/models/bert_heads_internal.h"

typedef struct BertQuestionAnswering {
    BertModel bert;
    Linear qa_outputs;    /* (2, H): row 0 scores starts, row 1 ends */
} BertQuestionAnswering;

static void *qa_build(Registry *r, const BertConfig *cfg, BertcError *err)
{
    if (cfg->num_labels != 2) {
        bertc_errorf(err, "config: BertForQuestionAnswering needs num_labels 2 (a start and an "
                     "end logit per token), got num_labels %d", cfg->num_labels);
        return NULL;
    }
    BertQuestionAnswering *m = bertc_arena_calloc(r->arena, 1, sizeof *m);
    bertc_bert_head_encoder_init(&m->bert, r, cfg, false);
    bertc_linear_init(&m->qa_outputs, r, "qa_outputs", cfg->hidden_size, 2, true);
    return m;
}

/* positions (B), any integer, clamped into [0, S] as HF does; S is then
 * the ignored index. */
static int read_positions(const Batch *in, const char *name, int64_t B, int64_t S, Graph *g,
                          ITensor *out, BertcError *err)
{
    ITensor given;
    if (bertc_batch_ids(in, name, 1, &B, &given, err) != 0)
        return -1;
    *out = bertc_itensor_new(g->step, 1, &B);
    for (int64_t i = 0; i < B; i++) {
        int64_t p = given.data[i];
        out->data[i] = (int32_t)(p < 0 ? 0 : p > S ? S : p);
    }
    return 0;
}

/* Sets *loss (NULL without positions). */
static int qa_loss(Graph *g, const Batch *in, Var *start, Var *end, Var **loss,
                   BertcError *err)
{
    int64_t B = start->value.shape[0], S = start->value.shape[1];
    bool has_start = bertc_batch_find(in, "start_positions") != NULL;
    bool has_end = bertc_batch_find(in, "end_positions") != NULL;
    ITensor s, e;
    *loss = NULL;
    if (has_start != has_end)
        return bertc_errorf(err, "%s: '%s' is given without '%s'; the QA loss needs both",
                            in->source, has_start ? "start_positions" : "end_positions",
                            has_start ? "end_positions" : "start_positions");
    if (!has_start)
        return 0;
    if (read_positions(in, "start_positions", B, S, g, &s, err) != 0 ||
        read_positions(in, "end_positions", B, S, g, &e, err) != 0)
        return -1;
    Var *ls = bertc_ag_cross_entropy(g, start, &s, (int)S), *le = bertc_ag_cross_entropy(g, end, &e, (int)S);
    *loss = bertc_ag_scale(g, bertc_ag_add(g, ls, le), 0.5f);
    return 0;
}

static int qa_forward(void *impl, const BertConfig *cfg, Graph *g, const Batch *in,
                      Outputs *out, BertcError *err)
{
    BertQuestionAnswering *m = impl;
    BertInputs x;
    if (bertc_bert_head_read_inputs(cfg, g, in, &x, err) != 0)
        return -1;
    BertOutput r = bertc_bert_model_forward(g, &m->bert, &x);
    Var *logits = bertc_linear_forward(g, &m->qa_outputs, r.last_hidden_state);   /* (B, S, 2) */
    int64_t bs[2] = {x.B, x.S};
    Var *start = bertc_ag_reshape(g, bertc_ag_slice(g, logits, 2, 0, 1), 2, bs);
    Var *end = bertc_ag_reshape(g, bertc_ag_slice(g, logits, 2, 1, 2), 2, bs);
    Var *loss;
    if (qa_loss(g, in, start, end, &loss, err) != 0)
        return -1;
    bertc_outputs_put(out, g, start, "start_logits");
    bertc_outputs_put(out, g, end, "end_logits");
    bertc_bert_put_outputs(out, g, &m->bert, &r);
    if (loss)
        bertc_outputs_put(out, g, loss, "loss");
    return 0;
}

/* start_positions, end_positions (B): a span start <= end inside the row. */
static int qa_random_batch(const BertConfig *cfg, Graph *g, int64_t B, int64_t S, bool labels,
                           Rng *rng, Batch *out, BertcError *err)
{
    (void)err;
    ITensor unused;
    bertc_bert_head_random_inputs(cfg, g, B, S, rng, out, &unused);
    if (!labels)
        return 0;
    ITensor start = bertc_random_classes(g, B, S, rng), end = bertc_itensor_new(g->step, 1, &B);
    for (int64_t i = 0; i < B; i++)
        end.data[i] = (int32_t)bertc_rng_randint(rng, start.data[i], S - 1);
    bertc_batch_put_ids(out, "start_positions", start);
    bertc_batch_put_ids(out, "end_positions", end);
    return 0;
}

static const InputSpec qa_inputs[] = {
    {.name = "start_positions", .type = INPUT_IDS, .shape = "(B)",
     .values = "the answer's first token; clamped to [0, S], S ignored", .label = true},
    {.name = "end_positions", .type = INPUT_IDS, .shape = "(B)",
     .values = "the answer's last token; clamped to [0, S], S ignored", .label = true},
};

static const OutputSpec qa_outputs[] = {
    {"start_logits", "(B, S)"},
    {"end_logits", "(B, S)"},
    {"loss", "()"},
};

static const ExplainStep qa_steps[] = {
    {.title = "Start logits",
     .equation = "[start, end] = X<sub>L</sub> W<sub>qa</sub> + b  &nbsp; (B, S) each",
     .where = "zoo/models/bert_question_answering.c:qa_forward", .output = "start_logits"},
    {.title = "End logits", .equation = "end = (X<sub>L</sub> W<sub>qa</sub> + b)[:, :, 1]",
     .where = "zoo/models/bert_question_answering.c:qa_forward", .output = "end_logits"},
};

static const ModelExplain qa_explain = {
    .mechanism = "Extractive QA: two scores per token, for the answer's start and its end; "
                 "TEXT is the question, TEXT_PAIR the context.",
    EXPLAIN_ENCODER(bertc_bert_encoder_steps), EXPLAIN_STEPS(qa_steps),
    .predict = {{.kind = PREDICT_SPAN, .output = "start_logits", .output2 = "end_logits"}},
};

const ModelArch bertc_arch_bert_question_answering = {
    .name = "BertForQuestionAnswering",
    .summary = "BERT scoring each token as the start and the end of an answer span "
               "(SQuAD): HF's BertForQuestionAnswering",
    .shared_inputs = bertc_bert_inputs,
    .n_shared_inputs = BERT_N_INPUTS,
    .inputs = qa_inputs,
    .n_inputs = 2,
    .shared_outputs = bertc_bert_outputs,
    .n_shared_outputs = BERT_N_OUTPUTS,
    .outputs = qa_outputs,
    .n_outputs = 3,
    .loss = "(CE(start_logits, start_positions) + CE(end_logits, end_positions)) / 2, "
            "positions clamped to [0, S] and S ignored",
    .build = qa_build,
    .forward = qa_forward,
    .rename = bertc_bert_drop_prefix,
    .random_batch = qa_random_batch,
    .batch_from_text = bertc_bert_batch_from_text,
    .task = MODEL_TASK_QA_SPAN,
    .finetune_head = true,
    .explain = &qa_explain,
};
