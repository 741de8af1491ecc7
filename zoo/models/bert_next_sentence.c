/* zoo/models/bert_next_sentence.c — Hugging Face BertForNextSentencePrediction:
 * does sentence B follow sentence A (BERT's NSP pre-training task)?
 *
 *   pool   = BertModel(ids, mask, types).pooler_output       (B, H)
 *   logits = cls.seq_relationship(pool)                      (B, 2)
 *   loss   = CE(logits, labels), labels 0 = "B follows A", 1 = "B is random"
 *
 * Parameters: bert.* with bert.pooler, cls.seq_relationship.weight (2, H),
 * cls.seq_relationship.bias (2); HF applies no dropout before it. */
#include "zoo/models/bert_heads_internal.h"

typedef struct BertNextSentence {
    BertModel bert;
    Linear seq_relationship;      /* cls.seq_relationship (2, H) */
} BertNextSentence;

static void *nsp_build(Registry *r, const BertConfig *cfg, BertcError *err)
{
    (void)err;
    BertNextSentence *m = bertc_arena_calloc(r->arena, 1, sizeof *m);
    bertc_bert_head_encoder_init(&m->bert, r, cfg, true);
    bertc_nn_push(r, "cls", "BertOnlyNSPHead", false);
    bertc_linear_init(&m->seq_relationship, r, "seq_relationship", cfg->hidden_size, 2, true);
    bertc_nn_pop(r);
    return m;
}

static int nsp_forward(void *impl, const BertConfig *cfg, Graph *g, const Batch *in,
                       Outputs *out, BertcError *err)
{
    BertNextSentence *m = impl;
    BertInputs x;
    if (bertc_bert_head_read_inputs(cfg, g, in, &x, err) != 0)
        return -1;
    ITensor labels;
    bool labelled = bertc_batch_find(in, "labels") != NULL;
    if (labelled && bertc_bert_read_classes(in, "labels", 1, &x.B, 2, "next-sentence classes", false,
                                      &labels, err) != 0)
        return -1;
    BertOutput r = bertc_bert_model_forward(g, &m->bert, &x);
    Var *logits = bertc_linear_forward(g, &m->seq_relationship, r.pooler_output);   /* (B, 2) */
    bertc_outputs_put(out, g, logits, "logits");
    bertc_bert_put_outputs(out, g, &m->bert, &r);
    if (labelled)
        bertc_outputs_put(out, g, bertc_bert_class_loss(g, logits, &labels), "loss");
    return 0;
}

/* labels (B): 0 or 1 with equal odds, as BERT's pair sampling. */
static int nsp_random_batch(const BertConfig *cfg, Graph *g, int64_t B, int64_t S, bool labels,
                            Rng *rng, Batch *out, BertcError *err)
{
    (void)err;
    ITensor unused;
    bertc_bert_head_random_inputs(cfg, g, B, S, rng, out, &unused);
    if (labels)
        bertc_batch_put_ids(out, "labels", bertc_random_classes(g, B, 2, rng));
    return 0;
}

static const InputSpec nsp_inputs[] = {
    {.name = "labels", .type = INPUT_IDS, .shape = "(B)",
     .values = "0 (B follows A) or 1 (B is random)", .label = true},
};

static const OutputSpec nsp_outputs[] = {
    {"logits", "(B, 2)"},
    {"pooler_output", "(B, H)"},
    {"loss", "()"},
};

const char *const bertc_bert_nsp_labels[2] = {"IsNext", "NotNext"};

static const ExplainStep nsp_steps[] = {
    BERT_STEP_POOLER,
    {.title = "Next-sentence classifier",
     .equation = "z = p W<sub>NSP</sub> + b  &nbsp; (B, 2): IsNext, NotNext",
     .where = "zoo/models/bert_next_sentence.c:nsp_forward", .output = "logits"},
};

static const ModelExplain nsp_explain = {
    .mechanism = "Does TEXT_PAIR follow TEXT? A two-way classifier on the pooled [CLS].",
    EXPLAIN_ENCODER(bertc_bert_encoder_steps), EXPLAIN_STEPS(nsp_steps),
    .predict = {{.kind = PREDICT_CLASSES, .output = "logits", .labels = bertc_bert_nsp_labels}},
};

const ModelArch bertc_arch_bert_next_sentence = {
    .name = "BertForNextSentencePrediction",
    .summary = "BERT's next-sentence prediction on the pooled [CLS]: HF's "
               "BertForNextSentencePrediction",
    .shared_inputs = bertc_bert_inputs,
    .n_shared_inputs = BERT_N_INPUTS,
    .inputs = nsp_inputs,
    .n_inputs = 1,
    .shared_outputs = bertc_bert_outputs,
    .n_shared_outputs = BERT_N_OUTPUTS,
    .outputs = nsp_outputs,
    .n_outputs = 3,
    .loss = "CE of logits against labels",
    .build = nsp_build,
    .forward = nsp_forward,
    .rename = bertc_bert_drop_prefix,
    .random_batch = nsp_random_batch,
    .batch_from_text = bertc_bert_batch_from_text,
    .task = MODEL_TASK_SEQ_CLS,
    .explain = &nsp_explain,
};
