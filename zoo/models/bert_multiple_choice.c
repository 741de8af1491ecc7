/* zoo/models/bert_multiple_choice.c — Hugging Face BertForMultipleChoice (SWAG,
 * RACE): C candidate continuations per example, one score each.
 *
 *   ids, mask, types  (B, C, S) -> (B·C, S)      each choice is its own row
 *   pool   = BertModel(...).pooler_output        (B·C, H)
 *   logits = classifier(dropout(pool))           (B·C, 1) -> (B, C)
 *   loss   = CE(logits, labels), labels (B) in [0, C)
 *
 * The BERT outputs (last_hidden_state, hidden_states.*, ...) are those of
 * the B·C rows, as HF returns them. Parameters: bert.* with bert.pooler,
 * classifier.weight (1, H), classifier.bias (1); the dropout follows the
 * classifier_dropout rule. */
#include "zoo/models/bert_heads_internal.h"

typedef struct BertMultipleChoice {
    BertModel bert;
    Dropout dropout;      /* p = classifier_dropout, else hidden_dropout_prob */
    Linear classifier;    /* (1, H): one score per choice */
} BertMultipleChoice;

static void *mc_build(Registry *r, const BertConfig *cfg, BertcError *err)
{
    (void)err;
    BertMultipleChoice *m = bertc_arena_calloc(r->arena, 1, sizeof *m);
    bertc_bert_head_encoder_init(&m->bert, r, cfg, true);
    bertc_dropout_init(&m->dropout, r, "dropout", bertc_bert_classifier_dropout(cfg));
    bertc_linear_init(&m->classifier, r, "classifier", cfg->hidden_size, 1, true);
    return m;
}

/* The (B, C, S) inputs, checked with their own indices in messages, then
 * read as the (B·C, S) rows of a BERT batch. *C gets the number of choices. */
static int read_choices(const BertConfig *cfg, Graph *g, const Batch *in, BertInputs *x,
                        int64_t *C, BertcError *err)
{
    static const char *const names[3] = {"input_ids", "attention_mask", "token_type_ids"};
    const int64_t any3[3] = {-1, -1, -1};
    ITensor ids, t;
    if (bertc_batch_ids(in, "input_ids", 3, any3, &ids, err) != 0)
        return -1;
    int64_t B = ids.shape[0], S = ids.shape[2], rows[2] = {B * ids.shape[1], S};
    *C = ids.shape[1];
    Batch flat;
    bertc_batch_init(&flat, in->source);
    for (int i = 0; i < 3; i++) {
        if (!bertc_batch_find(in, names[i]))
            continue;
        if (bertc_batch_ids(in, names[i], 3, ids.shape, &t, err) != 0 ||
            (i == 0 && bertc_batch_check_range(in, names[i], &t, 0, cfg->vocab_size, "vocab_size",
                                         err) != 0) ||
            (i == 1 && bertc_batch_check_binary(in, names[i], &t, err) != 0) ||
            (i == 2 && bertc_batch_check_range(in, names[i], &t, 0, cfg->type_vocab_size,
                                         "type_vocab_size", err) != 0))
            return -1;
        bertc_batch_put_ids(&flat, names[i], bertc_itensor_view(t.data, 2, rows));
    }
    return bertc_bert_head_read_inputs(cfg, g, &flat, x, err);
}

static int mc_forward(void *impl, const BertConfig *cfg, Graph *g, const Batch *in,
                      Outputs *out, BertcError *err)
{
    BertMultipleChoice *m = impl;
    BertInputs x;
    int64_t C;
    if (read_choices(cfg, g, in, &x, &C, err) != 0)
        return -1;
    int64_t B = x.B / C, bc[2] = {B, C};
    ITensor labels;
    bool labelled = bertc_batch_find(in, "labels") != NULL;
    if (labelled && bertc_bert_read_classes(in, "labels", 1, &B, C, "num_choices", false,
                                      &labels, err) != 0)
        return -1;
    BertOutput r = bertc_bert_model_forward(g, &m->bert, &x);
    Var *pooled = bertc_dropout_forward(g, &m->dropout, r.pooler_output);
    Var *logits = bertc_ag_reshape(g, bertc_linear_forward(g, &m->classifier, pooled), 2, bc);  /* (B, C) */
    bertc_outputs_put(out, g, logits, "logits");
    bertc_bert_put_outputs(out, g, &m->bert, &r);
    if (labelled)
        bertc_outputs_put(out, g, bertc_bert_class_loss(g, logits, &labels), "loss");
    return 0;
}

/* The fewest choices a question can have. */
#define RANDOM_CHOICES 2

/* B questions of RANDOM_CHOICES choices of S tokens (B·2 sequences), the
 * right choice uniform. */
static int mc_random_batch(const BertConfig *cfg, Graph *g, int64_t B, int64_t S, bool labels,
                           Rng *rng, Batch *out, BertcError *err)
{
    (void)err;
    Batch rows;
    ITensor unused;
    int64_t bcs[3] = {B, RANDOM_CHOICES, S};
    bertc_batch_init(&rows, "random batch");
    bertc_bert_head_random_inputs(cfg, g, B * RANDOM_CHOICES, S, rng, &rows, &unused);
    for (int i = 0; i < rows.n; i++)
        bertc_batch_put_ids(out, rows.items[i].name, bertc_itensor_view(rows.items[i].ids.data, 3, bcs));
    if (labels)
        bertc_batch_put_ids(out, "labels", bertc_random_classes(g, B, RANDOM_CHOICES, rng));
    return 0;
}

/* Raw text: the n examples are the n choices of one question (text: the
 * context, text_pair: the choice), so the batch is (1, n, S). */
static int mc_batch_from_text(const Model *m, const Tokenizer *tok, const TextExample *ex, int n,
                              int32_t max_len, Graph *g, Batch *out, BertcError *err)
{
    TextBatch tb;
    if (bertc_text_batch_encode(&m->cfg, tok, ex, n, max_len, 0, g, &tb, err) != 0)
        return -1;
    int64_t shape[3] = {1, n, tb.input_ids.shape[1]};
    bertc_batch_put_ids(out, "input_ids", bertc_itensor_view(tb.input_ids.data, 3, shape));
    bertc_batch_put_ids(out, "attention_mask", bertc_itensor_view(tb.attention_mask.data, 3, shape));
    bertc_batch_put_ids(out, "token_type_ids", bertc_itensor_view(tb.token_type_ids.data, 3, shape));
    return 0;
}

/* Its own (B, C, S) inputs rather than the encoder's (B, S) ones. */
static const InputSpec mc_inputs[] = {
    {.name = "input_ids", .type = INPUT_IDS, .shape = "(B, C, S)",
     .values = "[0, vocab_size)", .required = true},
    {.name = "attention_mask", .type = INPUT_IDS, .shape = "(B, C, S)",
     .values = "1 token, 0 padding (absent: all 1)"},
    {.name = "token_type_ids", .type = INPUT_IDS, .shape = "(B, C, S)",
     .values = "[0, type_vocab_size) (absent: all 0)"},
    {.name = "labels", .type = INPUT_IDS, .shape = "(B)", .values = "the right choice, [0, C)",
     .label = true},
};

/* The encoder's outputs are those of the B·C rows. */
static const OutputSpec mc_outputs[] = {
    {"logits", "(B, C)"},
    {"last_hidden_state", "(B·C, S, H)"},
    {"hidden_states.{i}", "(B·C, S, H)"},
    {"layers.{l}.attention_probs", "(B·C, nh, S, S)"},
    {"pooler_output", "(B·C, H)"},
    {"loss", "()"},
};

static const ExplainStep mc_steps[] = {
    {.title = "Pooler (every choice)",
     .equation = "p<sub>c</sub> = tanh(X<sub>L</sub><sup>(c)</sup>[:, 0] W<sub>P</sub> + b)  "
                 "&nbsp; (B&middot;C, H)",
     .where = "zoo/models/bert.c:pooler_forward", .output = "pooler_output"},
    {.title = "Choice scores",
     .equation = "z<sub>c</sub> = p<sub>c</sub> w + b, reshaped to (B, C)",
     .where = "zoo/models/bert_multiple_choice.c:mc_forward", .output = "logits"},
};

static const ModelExplain mc_explain = {
    .mechanism = "Each choice (TEXT with TEXT_PAIR) is encoded on its own and scored; the "
                 "pictures show choice 0.",
    EXPLAIN_ENCODER(bertc_bert_encoder_steps), EXPLAIN_STEPS(mc_steps),
    .predict = {{.kind = PREDICT_CLASSES, .output = "logits"}},
};

const ModelArch bertc_arch_bert_multiple_choice = {
    .name = "BertForMultipleChoice",
    .summary = "BERT scoring C candidate continuations of each example (SWAG, RACE): HF's "
               "BertForMultipleChoice",
    .inputs = mc_inputs,
    .n_inputs = 4,
    .outputs = mc_outputs,
    .n_outputs = 6,
    .loss = "CE of the C choice scores against labels",
    .build = mc_build,
    .forward = mc_forward,
    .rename = bertc_bert_drop_prefix,
    .random_batch = mc_random_batch,
    .batch_from_text = mc_batch_from_text,
    .task = MODEL_TASK_MULTIPLE_CHOICE,
    .explain = &mc_explain,
};
