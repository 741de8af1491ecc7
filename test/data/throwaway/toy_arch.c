/* test/data/throwaway/toy_arch.c — a throw-away architecture, added the way
 * docs/adding-a-model.md says: this one file plus one line in the list of
 * zoo/models/architectures.c (the Makefile puts that line in a copy and links
 * build/throwaway/bertc; test/test_throwaway.c runs it). A classifier on the
 * first token's last hidden state, with no pooler:
 *
 *   X      = BertModel(ids, mask, types).last_hidden_state      (B, S, H)
 *   logits = X[:, 0] W^T + b                                    (B, num_labels)
 *   loss   = CE(logits, labels)
 *
 * Parameters: bert.* (no bert.pooler), classifier.weight (num_labels, H),
 * classifier.bias (num_labels). */
#include "zoo/models/bert_heads_internal.h"

typedef struct Throwaway {
    BertModel bert;
    Linear classifier;    /* (num_labels, H) */
} Throwaway;

static void *toy_build(Registry *r, const BertConfig *cfg, BertcError *err)
{
    if (cfg->num_labels < 1) {
        bertc_errorf(err, "config: num_labels must be >= 1, got %d", cfg->num_labels);
        return NULL;
    }
    Throwaway *m = bertc_arena_calloc(r->arena, 1, sizeof *m);
    bertc_bert_head_encoder_init(&m->bert, r, cfg, false);
    bertc_linear_init(&m->classifier, r, "classifier", cfg->hidden_size, cfg->num_labels, true);
    return m;
}

/* Classes only: its loss is CE against one class per text. */
static int toy_check_config(const BertConfig *cfg, BertcError *err)
{
    if (cfg->problem_type == PROBLEM_REGRESSION || cfg->problem_type == PROBLEM_MULTI_LABEL)
        return bertc_errorf(err, "config: problem_type must be single_label_classification "
                            "(the first-token classifier learns one class per text)");
    return 0;
}

static int toy_forward(void *impl, const BertConfig *cfg, Graph *g, const Batch *in,
                       Outputs *out, BertcError *err)
{
    Throwaway *m = impl;
    BertInputs x;
    if (bertc_bert_head_read_inputs(cfg, g, in, &x, err) != 0)
        return -1;
    BertOutput r = bertc_bert_model_forward(g, &m->bert, &x);
    Var *first = bertc_bert_first_token(g, r.last_hidden_state);         /* (B, H) */
    Var *logits = bertc_linear_forward(g, &m->classifier, first);        /* (B, num_labels) */
    ITensor y = {0};
    if (bertc_batch_find(in, "labels") &&
        bertc_bert_read_classes(in, "labels", 1, &x.B, cfg->num_labels, "num_labels", true, &y,
                                err) != 0)
        return -1;
    bertc_outputs_put(out, g, logits, "logits");
    bertc_bert_put_outputs(out, g, &m->bert, &r);
    if (bertc_batch_find(in, "labels"))
        bertc_outputs_put(out, g, bertc_bert_class_loss(g, logits, &y), "loss");
    return 0;
}

static int toy_random_batch(const BertConfig *cfg, Graph *g, int64_t B, int64_t S, bool labels,
                            Rng *rng, Batch *out, BertcError *err)
{
    (void)err;
    ITensor unused;
    bertc_bert_head_random_inputs(cfg, g, B, S, rng, out, &unused);
    if (labels)
        bertc_batch_put_ids(out, "labels", bertc_random_classes(g, B, cfg->num_labels, rng));
    return 0;
}

static const InputSpec toy_inputs[] = {
    {.name = "labels", .type = INPUT_IDS, .shape = "(B)", .values = "[0, num_labels) or -100",
     .label = true},
};

static const OutputSpec toy_outputs[] = {
    {"logits", "(B, num_labels)"},
    {"loss", "()"},
};

static const ExplainStep toy_steps[] = {
    {.title = "Classifier on the first token",
     .equation = "z = X<sub>L</sub>[:, 0] W<sub>C</sub> + b<sub>C</sub>  &nbsp; (B, num_labels)",
     .where = "test/data/throwaway/toy_arch.c:toy_forward", .output = "logits"},
};

static const ModelExplain toy_explain = {
    .mechanism = "A throw-away classifier on the first token's last hidden state, no pooler.",
    EXPLAIN_ENCODER(bertc_bert_encoder_steps), EXPLAIN_STEPS(toy_steps),
    .predict = {{.kind = PREDICT_CLASSES, .output = "logits"}},
};

const ModelArch bertc_arch_throwaway = {
    .name = "ThrowawayFirstTokenClassifier",
    .summary = "a test's throw-away architecture: classes from the first token, no pooler",
    .check_config = toy_check_config,
    .shared_inputs = bertc_bert_inputs,
    .n_shared_inputs = BERT_N_INPUTS,
    .inputs = toy_inputs,
    .n_inputs = 1,
    .shared_outputs = bertc_bert_outputs,
    .n_shared_outputs = BERT_N_OUTPUTS,
    .outputs = toy_outputs,
    .n_outputs = 2,
    .loss = "CE of logits against labels",
    .build = toy_build,
    .forward = toy_forward,
    .rename = bertc_bert_drop_prefix,
    .random_batch = toy_random_batch,
    .batch_from_text = bertc_bert_batch_from_text,
    .task = MODEL_TASK_SEQ_CLS,
    .finetune_head = true,
    .explain = &toy_explain,
};
