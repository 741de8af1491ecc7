/* zoo/models/qaconv.c — QAConvModelV2 with the loss of its trainer (SPEC §6.6),
 * from the QAConv_Model seed (../shared/seeds/qaconv.txt): a BERT backbone,
 * a "query attention" that pools the question into one vector, a question-
 * type branch (multi-task learning, Liu et al. 2019, MT-DNN) and a Conv1d
 * span classifier.
 *
 *   seq  = BertModel(input_ids, attention_mask, token_type_ids or 0)  (B, S, H)
 *   q    = relu(seq · [tt == 0])[:, :Q]                    question tokens (B, Q, H)
 *   qv   = query_layer(flatten(q))                         query vector    (B, H)
 *   query_logits = softmax(query_calssify_layer(qv))       question type   (B, C)
 *   k    = key_layer(seq · [tt == 1])                      context keys    (B, S, H)
 *   attention_rate = softmax_t(k·qv / √H / T)              (B, S, 1)
 *   v    = value_layer(seq) · attention_rate               (B, S, H)
 *   c_k  = relu(conv1d_layer{k}(vᵀ)), k = 1, 3, 5          (B, F, S) each
 *   z    = classify_layer([c_1; c_3; c_5]ᵀ)                (B, S, 2): start, end
 *
 * Q = query_len, F = conv_filters, C = num_question_types,
 * T = attention_temperature. Dropout is identity in eval mode. The forward
 * also puts qv as query_vector (B, H) and c_1, c_3, c_5 as conv_output1/3/5
 * (B, F, S); "query_loss_input": "logits" gives the question-type CE the
 * logits (MT-DNN's loss) instead of the seed's probabilities. */
#include "zoo/zoo.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

/* ---- config keys --------------------------------------------------------- */

/* What the question-type cross-entropy reads: the seed's trainer
 * (cal_query_loss) gives it the softmax probabilities, MT-DNN's task loss
 * (the seed's reference, Liu et al. 2019) the logits. */
enum { QUERY_LOSS_PROBABILITIES, QUERY_LOSS_LOGITS };
static const char *const query_loss_inputs[] = {"probabilities", "logits", NULL};

typedef struct QAConvKeys {
    int query_len;                 /* Q: the question's tokens, a prefix of every input */
    int conv_filters;              /* F */
    int num_question_types;        /* C */
    float attention_temperature;   /* T */
    float query_loss_divisor;      /* loss = qa_loss + query_loss / this */
    int query_loss_input;          /* QUERY_LOSS_* */
} QAConvKeys;

static const ConfigKey qaconv_keys_table[] = {
    {.key = "query_len", .offset = offsetof(QAConvKeys, query_len), .kind = CONFIG_INT,
     .range = RANGE_POSITIVE, .default_value = 50, .doc = "question tokens Q (a prefix of "
     "every input, padded)"},
    {.key = "conv_filters", .offset = offsetof(QAConvKeys, conv_filters), .kind = CONFIG_INT,
     .range = RANGE_POSITIVE, .default_value = 1024, .doc = "filters F of each Conv1d"},
    {.key = "num_question_types", .offset = offsetof(QAConvKeys, num_question_types),
     .kind = CONFIG_INT, .range = RANGE_POSITIVE, .default_value = 6,
     .doc = "question types C of the multi-task branch"},
    {.key = "attention_temperature", .offset = offsetof(QAConvKeys, attention_temperature),
     .kind = CONFIG_FLOAT, .range = RANGE_POSITIVE, .default_value = 10,
     .doc = "temperature T of the query attention"},
    {.key = "query_loss_divisor", .offset = offsetof(QAConvKeys, query_loss_divisor),
     .kind = CONFIG_FLOAT, .range = RANGE_POSITIVE, .default_value = 5,
     .doc = "the question-type loss is divided by it"},
    {.key = "query_loss_input", .offset = offsetof(QAConvKeys, query_loss_input),
     .kind = CONFIG_CHOICE, .default_value = QUERY_LOSS_PROBABILITIES,
     .choices = query_loss_inputs, .doc = "probabilities (the seed's trainer: CE over "
     "softmax(query logits)) or logits (MT-DNN's task loss: CE over the logits)"},
};

static QAConvKeys qaconv_keys(const BertConfig *cfg)
{
    QAConvKeys k;
    bertc_model_keys(cfg, &k, sizeof k);
    return k;
}

/* The question's Q tokens must fit an input, and the [SEP] that ends it
 * must be named. */
static int check_qaconv_keys(const BertConfig *cfg, BertcError *err)
{
    QAConvKeys k = qaconv_keys(cfg);
    if (cfg->sep_token_id < 0)
        return bertc_errorf(err, "config: QAConvModelV2 needs sep_token_id (the [SEP] that "
                            "ends the question): missing key \"sep_token_id\"");
    if (k.query_len > cfg->max_position_embeddings)
        return bertc_errorf(err, "config: query_len %d is longer than max_position_embeddings "
                            "%d, so no input can hold the question", k.query_len,
                            cfg->max_position_embeddings);
    return 0;
}

/* The seed's two dropout rates, written into its code rather than its config. */
/* nn.Dropout(0.1) on the question tokens. The seed builds it inside forward(),
 * so it stays in training mode even after model.eval(); bertc applies it in
 * training only, like every other dropout. */
#define QUERY_DROPOUT 0.1f
#define SPAN_DROPOUT 0.3f    /* self.drop_out before classify_layer */

typedef struct QAConv {
    BertModel backbone;
    Linear query_layer;              /* (H, Q·H) */
    Linear query_calssify_layer;     /* (C, H), the seed's spelling */
    Linear key_layer, value_layer;   /* (H, H) */
    Conv1d conv1d_layer1, conv1d_layer3, conv1d_layer5;   /* (F, H, k) */
    Dropout drop_out;
    Linear classify_layer;           /* (2, 3F) */
} QAConv;

/* Registered in the seed's __init__ order, so the tree prints as its repr. */
static void *qaconv_build(Registry *r, const BertConfig *cfg, BertcError *err)
{
    (void)err;   /* bertc_bert_config_check has checked every key */
    QAConvKeys k = qaconv_keys(cfg);
    int64_t H = cfg->hidden_size, Q = k.query_len, F = k.conv_filters;
    QAConv *m = bertc_arena_calloc(r->arena, 1, sizeof *m);
    bertc_nn_push(r, "backbone", "BertModel", false);
    bertc_bert_model_init(&m->backbone, r, cfg, BERT_HF, true);
    bertc_nn_pop(r);
    bertc_linear_init(&m->query_layer, r, "query_layer", Q * H, H, true);
    bertc_linear_init(&m->query_calssify_layer, r, "query_calssify_layer", H,
                k.num_question_types, true);
    bertc_linear_init(&m->key_layer, r, "key_layer", H, H, true);
    bertc_linear_init(&m->value_layer, r, "value_layer", H, H, true);
    bertc_conv1d_init(&m->conv1d_layer1, r, "conv1d_layer1", H, F, 1);
    bertc_conv1d_init(&m->conv1d_layer3, r, "conv1d_layer3", H, F, 3);
    bertc_conv1d_init(&m->conv1d_layer5, r, "conv1d_layer5", H, F, 5);
    bertc_dropout_init(&m->drop_out, r, "drop_out", SPAN_DROPOUT);
    bertc_linear_init(&m->classify_layer, r, "classify_layer", 3 * F, 2, true);
    return m;
}

/* ---- inputs ------------------------------------------------------------ */

/* The seed's make_token_type_ids: 0 before the first [SEP] of the row, 1 from
 * it on (the [SEP] itself and any padding after it are 1). A row without a
 * [SEP] has no question/context boundary (the seed dies with an IndexError
 * there): an error naming the row. */
static int derive_token_types(const BertConfig *cfg, Graph *g, const Batch *in,
                              const ITensor *ids, ITensor *tt, BertcError *err)
{
    int64_t B = ids->shape[0], S = ids->shape[1];
    *tt = bertc_itensor_new(g->step, 2, ids->shape);
    for (int64_t b = 0; b < B; b++) {
        const int32_t *row = ids->data + b * S;
        int64_t sep = 0;
        while (sep < S && row[sep] != cfg->sep_token_id)
            sep++;
        if (sep == S)
            return bertc_errorf(err, "%s: 'input_ids' row %lld has no [SEP] (sep_token_id "
                                "%d), so token_type_ids cannot be derived; give "
                                "'token_type_ids'", in->source, (long long)b,
                                cfg->sep_token_id);
        for (int64_t t = sep; t < S; t++)
            tt->data[b * S + t] = 1;
    }
    return 0;
}

/* The backbone's inputs, S >= query_len, and the token types that choose the
 * question (0) and context (1) rows: given, or derived from the first [SEP]. */
static int qaconv_read_inputs(const BertConfig *cfg, Graph *g, const Batch *in, BertInputs *x,
                              ITensor *tt, BertcError *err)
{
    if (bertc_bert_read_inputs(cfg, g, in, "input_ids", "attention_mask", "token_type_ids", x,
                         err) != 0)
        return -1;
    if (x->S < qaconv_keys(cfg).query_len)
        return bertc_errorf(err, "%s: 'input_ids' has sequence length %lld, shorter than "
                            "query_len %d (the question is read from the first query_len "
                            "tokens)", in->source, (long long)x->S, qaconv_keys(cfg).query_len);
    if (bertc_batch_find(in, "token_type_ids")) {
        *tt = x->token_type_ids;
        return 0;
    }
    return derive_token_types(cfg, g, in, &x->input_ids, tt, err);
}

/* start_positions, end_positions, question_type (B): all three or none
 * (*has_labels false: no loss). */
typedef struct QAConvLabels {
    bool has_labels;
    ITensor start_positions, end_positions, question_type;
} QAConvLabels;

static int qaconv_read_labels(const BertConfig *cfg, const Batch *in, int64_t B,
                              QAConvLabels *y, BertcError *err)
{
    y->has_labels = bertc_batch_find(in, "start_positions") || bertc_batch_find(in, "end_positions") ||
                    bertc_batch_find(in, "question_type");
    if (!y->has_labels)
        return 0;
    if (bertc_batch_ids(in, "start_positions", 1, &B, &y->start_positions, err) != 0 ||
        bertc_batch_ids(in, "end_positions", 1, &B, &y->end_positions, err) != 0 ||
        bertc_batch_ids(in, "question_type", 1, &B, &y->question_type, err) != 0)
        return -1;
    return bertc_batch_check_range(in, "question_type", &y->question_type, 0,
                             qaconv_keys(cfg).num_question_types, "num_question_types", err);
}

/* ---- forward ----------------------------------------------------------- */

/* [tt == type] as a float constant (B, S, 1): multiplying by it zeroes the
 * other rows but keeps them in the sequence (the seed's
 * `seq * (token_type_ids.unsqueeze(-1) == type)`). */
static Var *type_mask(Graph *g, const ITensor *tt, int type)
{
    int64_t shape[3] = {tt->shape[0], tt->shape[1], 1};
    Var *m = bertc_ag_tensor(g, 3, shape, false);
    for (int64_t i = 0; i < tt->numel; i++)
        m->value.data[i] = tt->data[i] == type ? 1.0f : 0.0f;
    return m;
}

/* seq (B, S, H) -> the query vector qv (B, 1, H). flatten keeps row-major
 * order, so feature t·H + h of query_layer's input is q[b, t, h]. */
static Var *query_vector(Graph *g, const QAConv *m, int64_t Q, Var *seq, const ITensor *tt)
{
    int64_t B = seq->value.shape[0], H = seq->value.shape[2];
    Var *q = bertc_ag_relu(g, bertc_ag_mul(g, seq, type_mask(g, tt, 0)));            /* (B, S, H) */
    q = bertc_ag_dropout(g, q, QUERY_DROPOUT);
    q = bertc_ag_slice(g, q, 1, 0, Q);                                         /* (B, Q, H) */
    int64_t flat[3] = {B, 1, Q * H};
    return bertc_linear_forward(g, &m->query_layer, bertc_ag_reshape(g, q, 3, flat)); /* (B, 1, H) */
}

/* attention_rate (B, S, 1) = softmax over t of k[b,t]·qv[b] / √H / T. The
 * softmax runs over ALL S positions: the seed masks neither padding nor the
 * question, whose keys are key_layer.bias. */
static Var *attention_rate(Graph *g, const QAConv *m, float temperature, Var *seq,
                           const ITensor *tt, Var *qv)
{
    int64_t B = seq->value.shape[0], S = seq->value.shape[1], H = seq->value.shape[2];
    Var *k = bertc_linear_forward(g, &m->key_layer, bertc_ag_mul(g, seq, type_mask(g, tt, 1)));
    Var *r = bertc_ag_matmul(g, k, qv, false, true);                           /* (B, S, 1) */
    r = bertc_ag_scale(g, bertc_ag_scale(g, r, 1.0f / sqrtf((float)H)), 1.0f / temperature);
    int64_t bs[2] = {B, S}, bs1[3] = {B, S, 1};
    return bertc_ag_reshape(g, bertc_ag_softmax(g, bertc_ag_reshape(g, r, 2, bs)), 3, bs1);
}

/* v (B, S, H) -> z (B, S, 2). The three convolutions see the same x = vᵀ and
 * their feature maps are stacked in the order 1, 3, 5 (torch.cat dim 1).
 * Puts them as the seed names them: conv_output1, 3, 5 (B, F, S). */
static Var *span_logits(Graph *g, const QAConv *m, Var *v, Outputs *out)
{
    Var *x = bertc_ag_transpose(g, v, 1, 2);                                   /* (B, H, S) */
    Var *c[3] = {
        bertc_ag_relu(g, bertc_conv1d_forward(g, &m->conv1d_layer1, x)),            /* (B, F, S) */
        bertc_ag_relu(g, bertc_conv1d_forward(g, &m->conv1d_layer3, x)),
        bertc_ag_relu(g, bertc_conv1d_forward(g, &m->conv1d_layer5, x)),
    };
    for (int i = 0; i < 3; i++)
        bertc_outputs_put(out, g, c[i], "conv_output%d", 2 * i + 1);
    Var *features = bertc_ag_transpose(g, bertc_ag_concat(g, c, 3, 1), 1, 2);       /* (B, S, 3F) */
    features = bertc_dropout_forward(g, &m->drop_out, features);
    return bertc_linear_forward(g, &m->classify_layer, features);             /* (B, S, 2) */
}

/* z[..., which] as (B, S). */
static Var *logit_column(Graph *g, Var *z, int which)
{
    int64_t bs[2] = {z->value.shape[0], z->value.shape[1]};
    return bertc_ag_reshape(g, bertc_ag_slice(g, z, 2, which, which + 1), 2, bs);
}

/* ---- loss (the seed's trainer, train_mrc.py) --------------------------- */

/* clamp(positions, 0, S), as HF's QA heads: S is the ignore index, so a
 * position at or past the end drops out of the mean; a negative one becomes 0. */
static ITensor clamp_positions(Graph *g, const ITensor *p, int64_t S)
{
    ITensor out = bertc_itensor_new(g->step, 1, p->shape);
    for (int64_t i = 0; i < p->numel; i++)
        out.data[i] = p->data[i] < 0 ? 0 : p->data[i] > S ? (int32_t)S : p->data[i];
    return out;
}

static void qaconv_loss(const BertConfig *cfg, Graph *g, const QAConvLabels *y, Var *start,
                        Var *end, Var *query_scores, Var *query_logits, Outputs *out)
{
    int64_t S = start->value.shape[1];
    ITensor sp = clamp_positions(g, &y->start_positions, S);
    ITensor ep = clamp_positions(g, &y->end_positions, S);
    Var *qa_loss = bertc_ag_scale(g, bertc_ag_add(g, bertc_ag_cross_entropy(g, start, &sp, (int)S),
                                         bertc_ag_cross_entropy(g, end, &ep, (int)S)), 0.5f);
    /* The seed feeds the softmax PROBABILITIES of the question-type branch to
     * CrossEntropyLoss, which applies log_softmax again, and divides by 5
     * (query_loss_divisor). Kept on purpose: it is what the model was trained
     * with (SPEC §6.8); it flattens that branch's gradient. query_loss_input
     * "logits" gives the cross-entropy the scores before that softmax. */
    Var *ce_input = qaconv_keys(cfg).query_loss_input == QUERY_LOSS_LOGITS ? query_scores
                                                                          : query_logits;
    Var *query_loss = bertc_ag_scale(g, bertc_ag_cross_entropy(g, ce_input, &y->question_type, -100),
                               1.0f / qaconv_keys(cfg).query_loss_divisor);
    bertc_outputs_put(out, g, qa_loss, "qa_loss");
    bertc_outputs_put(out, g, query_loss, "query_loss");
    bertc_outputs_put(out, g, bertc_ag_add(g, qa_loss, query_loss), "loss");
}

static int qaconv_run(void *impl, const BertConfig *cfg, Graph *g, const Batch *in,
                      Outputs *out, BertcError *err)
{
    QAConv *m = impl;
    BertInputs x;
    ITensor tt;
    QAConvLabels y;
    if (qaconv_read_inputs(cfg, g, in, &x, &tt, err) != 0 ||
        qaconv_read_labels(cfg, in, x.B, &y, err) != 0)
        return -1;
    BertOutput backbone = bertc_bert_model_forward(g, &m->backbone, &x);
    Var *seq = backbone.last_hidden_state;                                   /* (B, S, H) */
    QAConvKeys k = qaconv_keys(cfg);
    Var *qv = query_vector(g, m, k.query_len, seq, &tt);                 /* (B, 1, H) */
    int64_t bh[2] = {x.B, cfg->hidden_size};
    Var *query_vector = bertc_ag_reshape(g, qv, 2, bh);                      /* (B, H) */
    Var *query_scores = bertc_linear_forward(g, &m->query_calssify_layer, query_vector); /* (B, C) */
    Var *query_logits = bertc_ag_softmax(g, query_scores);   /* the seed's name: probabilities */
    Var *rate = attention_rate(g, m, k.attention_temperature, seq, &tt, qv);
    Var *v = bertc_ag_mul(g, bertc_linear_forward(g, &m->value_layer, seq), rate);        /* (B, S, H) */
    bertc_outputs_put(out, g, query_vector, "query_vector");
    Var *z = span_logits(g, m, v, out);
    Var *start = logit_column(g, z, 0), *end = logit_column(g, z, 1);
    bertc_outputs_put(out, g, start, "start_logits");
    bertc_outputs_put(out, g, end, "end_logits");
    bertc_outputs_put(out, g, query_logits, "query_logits");
    bertc_outputs_put(out, g, rate, "attention_rate");
    bertc_outputs_put(out, g, seq, "last_hidden_state");
    bertc_outputs_put_ids(out, g, tt, "used_token_type_ids");
    bertc_bert_put_attention(out, g, &m->backbone, &backbone);
    if (y.has_labels)
        qaconv_loss(cfg, g, &y, start, end, query_scores, query_logits, out);
    return 0;
}

/* ---- a random batch ------------------------------------------------------ */

/* The question is the first query_len tokens (token type 0), the context the
 * rest (type 1), given as token_type_ids so no [SEP] is needed. Labels: an
 * answer span start <= end inside the context, a question type below
 * num_question_types. */
static int qaconv_random_batch(const BertConfig *cfg, Graph *g, int64_t B, int64_t S,
                               bool labels, Rng *rng, Batch *out, BertcError *err)
{
    int64_t Q = qaconv_keys(cfg).query_len, bs[2] = {B, S};
    if (S <= Q)
        return bertc_errorf(err, "random batch: QAConvModelV2 needs S > query_len %lld (the "
                            "question) to hold a context, got S = %lld", (long long)Q,
                            (long long)S);
    ITensor unused, tt = bertc_itensor_new(g->step, 2, bs);
    bertc_random_bert_inputs(cfg, g, B, S, rng, "input_ids", "attention_mask", "token_type_ids", out,
                       &unused);
    for (int64_t i = 0; i < B * S; i++)
        tt.data[i] = i % S >= Q;
    bertc_batch_put_ids(out, "token_type_ids", tt);
    if (!labels)
        return 0;
    ITensor start = bertc_itensor_new(g->step, 1, &B), end = bertc_itensor_new(g->step, 1, &B);
    for (int64_t b = 0; b < B; b++) {
        start.data[b] = (int32_t)bertc_rng_randint(rng, Q, S - 1);
        end.data[b] = (int32_t)bertc_rng_randint(rng, start.data[b], S - 1);
    }
    bertc_batch_put_ids(out, "start_positions", start);
    bertc_batch_put_ids(out, "end_positions", end);
    bertc_batch_put_ids(out, "question_type", bertc_random_classes(g, B, qaconv_keys(cfg).num_question_types, rng));
    return 0;
}

/* The question cut, at a token boundary, to what "[CLS] question [SEP]"
 * holds in Q tokens (SQuAD's max_query_length truncation), copied to g->step. */
static int cut_question(const Tokenizer *tok, const char *question, int32_t Q, Graph *g,
                        const char **cut, BertcError *err)
{
    Encoding e;
    if (bertc_tokenizer_encode(tok, g->step, question, strlen(question), NULL, 0, Q, false, &e,
                         err) != 0)
        return -1;
    size_t bytes = e.n_a > 0 ? (size_t)e.byte_end[e.n_a] : 0;   /* token 0 is [CLS] */
    char *text = bertc_arena_alloc(g->step, bytes + 1);
    memcpy(text, question, bytes);
    text[bytes] = '\0';
    *cut = text;
    return 0;
}

/* "[CLS] question [SEP] context [SEP]" (text, text_pair), padded to at
 * least query_len: the question with its [CLS] and [SEP] must fit in the
 * first query_len tokens, so a longer one is cut. */
static int qaconv_batch_from_text(const Model *m, const Tokenizer *tok, const TextExample *ex,
                                  int n, int32_t max_len, Graph *g, Batch *out, BertcError *err)
{
    int32_t Q = qaconv_keys(&m->cfg).query_len;
    if (Q < 3)
        return bertc_errorf(err, "query_len %d holds no question between [CLS] and [SEP]", (int)Q);
    TextExample *cut = bertc_arena_alloc(g->step, sizeof *cut * (size_t)(n > 0 ? n : 1));
    for (int i = 0; i < n; i++) {
        cut[i] = ex[i];
        if (cut_question(tok, ex[i].text ? ex[i].text : "", Q, g, &cut[i].text, err) != 0)
            return -1;
    }
    if (max_len > 0 && max_len < Q)
        max_len = Q;   /* every input holds the query_len tokens at least */
    TextBatch tb;
    if (bertc_text_batch_encode(&m->cfg, tok, cut, n, max_len, Q, g, &tb, err) != 0)
        return -1;
    for (int i = 0; i < n; i++)
        if (tb.enc[i].n_a + 2 > Q)
            return bertc_errorf(err, "example %d: the question is %d tokens with [CLS] and "
                                "[SEP], more than query_len %d", i, (int)tb.enc[i].n_a + 2, (int)Q);
    bertc_text_batch_put(&tb, "input_ids", "attention_mask", "token_type_ids", out);
    return 0;
}

static const InputSpec qaconv_inputs[] = {
    {.name = "input_ids", .type = INPUT_IDS, .shape = "(B, S)", .values = "[0, vocab_size); "
     "the question in the first query_len tokens", .required = true},
    {.name = "attention_mask", .type = INPUT_IDS, .shape = "(B, S)", .values = "0 or 1"},
    {.name = "token_type_ids", .type = INPUT_IDS, .shape = "(B, S)",
     .values = "0 question, 1 context; absent: from the first sep_token_id"},
    {.name = "start_positions", .type = INPUT_IDS, .shape = "(B)", .values = "[0, S)",
     .label = true},
    {.name = "end_positions", .type = INPUT_IDS, .shape = "(B)", .values = "[0, S)",
     .label = true},
    {.name = "question_type", .type = INPUT_IDS, .shape = "(B)",
     .values = "[0, num_question_types)", .label = true},
};

static const OutputSpec qaconv_outputs[] = {
    {"start_logits", "(B, S)"},
    {"end_logits", "(B, S)"},
    {"query_logits", "(B, num_question_types)"},
    {"attention_rate", "(B, S, 1)"},
    {"query_vector", "(B, H)"},
    {"conv_output1", "(B, conv_filters, S)"},
    {"conv_output3", "(B, conv_filters, S)"},
    {"conv_output5", "(B, conv_filters, S)"},
    {"last_hidden_state", "(B, S, H)"},
    {"used_token_type_ids", "(B, S)"},
    {"layers.{l}.attention_probs", "(B, nh, S, S)"},
    {"qa_loss", "()"},
    {"query_loss", "()"},
    {"loss", "()"},
};

static const ExplainStep qaconv_steps[] = {
    {.title = "Query vector from the question tokens",
     .equation = "q = relu(seq &middot; [tt = 0])[:, :Q]; &nbsp; qv = flatten(q) W<sub>query</sub>"
                 "  &nbsp; (B, H)",
     .where = "zoo/models/qaconv.c:query_vector", .output = "query_vector"},
    {.title = "Query attention over the context",
     .equation = "attention_rate = softmax<sub>t</sub>(k<sub>t</sub>&middot;qv / &radic;H / T)"
                 "  &nbsp; (B, S, 1)",
     .where = "zoo/models/qaconv.c:attention_rate", .output = "attention_rate"},
    {.title = "Conv features, width 1", .equation = "c<sub>1</sub> = relu(conv1d<sub>1</sub>"
     "((v &middot; attention_rate)<sup>T</sup>))  &nbsp; (B, F, S)",
     .where = "zoo/models/qaconv.c:span_logits", .output = "conv_output1"},
    {.title = "Conv features, width 3", .equation = "c<sub>3</sub> = relu(conv1d<sub>3</sub>(&middot;))",
     .where = "zoo/models/qaconv.c:span_logits", .output = "conv_output3"},
    {.title = "Conv features, width 5", .equation = "c<sub>5</sub> = relu(conv1d<sub>5</sub>(&middot;))",
     .where = "zoo/models/qaconv.c:span_logits", .output = "conv_output5"},
    {.title = "Answer start logits",
     .equation = "z = [c<sub>1</sub>; c<sub>3</sub>; c<sub>5</sub>]<sup>T</sup> W  &nbsp; "
                 "start = z[:, :, 0]  &nbsp; (B, S)",
     .where = "zoo/models/qaconv.c:span_logits", .output = "start_logits"},
    {.title = "Answer end logits", .equation = "end = z[:, :, 1]  &nbsp; (B, S)",
     .where = "zoo/models/qaconv.c:span_logits", .output = "end_logits"},
    {.title = "Question type", .equation = "softmax(qv W<sub>type</sub>)  &nbsp; (B, C)",
     .where = "zoo/models/qaconv.c:qaconv_run", .output = "query_logits"},
};

static const ModelExplain qaconv_explain = {
    .mechanism = "QAConv: the question (TEXT, the first query_len tokens) is pooled into one "
                 "query vector that weighs the context tokens (TEXT_PAIR); convolutions of "
                 "width 1, 3 and 5 over the weighted context give the answer's start and end.",
    EXPLAIN_ENCODER(bertc_bert_encoder_steps), EXPLAIN_STEPS(qaconv_steps),
    .predict = {{.kind = PREDICT_SPAN, .output = "start_logits", .output2 = "end_logits"},
                {.kind = PREDICT_CLASSES, .output = "query_logits"}},
};

const ModelArch bertc_arch_qaconv = {
    .name = "QAConvModelV2",
    .summary = "QAConv: span QA over conversations with query attention and Conv1d "
               "(Wu et al. 2022)",
    .keys = qaconv_keys_table,
    .n_keys = sizeof qaconv_keys_table / sizeof qaconv_keys_table[0],
    .check_config = check_qaconv_keys,
    .inputs = qaconv_inputs,
    .n_inputs = sizeof qaconv_inputs / sizeof qaconv_inputs[0],
    .outputs = qaconv_outputs,
    .n_outputs = sizeof qaconv_outputs / sizeof qaconv_outputs[0],
    .loss = "mean CE of start and end positions + CE(query_logits) / query_loss_divisor",
    .build = qaconv_build,
    .forward = qaconv_run,
    .random_batch = qaconv_random_batch,
    .batch_from_text = qaconv_batch_from_text,
    .task = MODEL_TASK_QA_SPAN,
    .explain = &qaconv_explain,
};
