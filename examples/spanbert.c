/* examples/spanbert.c — SpanBERT end to end (`bertc train spanbert`):
 * pre-train a small encoder on unlabelled real text with SpanBERT's two
 * objectives, then fine-tune it on the topic task of examples/topics.c and
 * compare with the very same fine-tuning from random weights.
 *
 *   data/pretrain.txt   4,068 fortunes, none of them a held-out topic text
 *                       (tools/make_pretrain.py)
 *   -> packed into rows of 64 WordPiece tokens, span-masked afresh at every
 *      step by the library's collator (bertc_span_mask_row, zoo/models/span_masking.c)
 *   -> SpanBertForPreTraining, 2 layers, H = 128: MLM + SBO losses, and the
 *      masked-token accuracy on held-out text before and after
 *   -> its bert.* weights start a BertForSequenceClassification (pooler and
 *      classifier fresh), fine-tuned on data/topics.tsv exactly as
 *      examples/topics.c; the same run from random weights is the control.
 *
 * Why spans (Joshi et al. 2020, §3.1): BERT masks single WordPieces, and a
 * masked "##ing" is easy to guess from the rest of its word. SpanBERT masks
 * whole words and runs of words (lengths ~ Geo(0.2), mean 3.8), so the
 * model has to predict a phrase from its context.
 *
 * What the span boundary objective learns (§3.2): every token of a masked
 * span is predicted a second time from only the two tokens just outside the
 * span and its position inside it. To do well, the encoder must pack what a
 * span holds into the representations of its boundary tokens, which is what
 * span-selection tasks (QA, coreference) later read.
 *
 * Flags: the standard ones (zoo/train/train.h) apply to all three runs, so
 * `--steps 2` makes a smoke test of the whole example; OUT (--out) defaults
 * to build/spanbert. BERTC_THREADS sets the thread count. */
#include "examples/example_util.h"
#include "zoo/pictures/svg.h"
#include "zoo/train/train.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define VOCAB "data/bert-base-uncased-vocab.txt"
#define CORPUS "data/pretrain.txt"
#define TOPICS "data/topics.tsv"
#define MAX_LEN 64
#define MAX_TEXTS 8192
#define CORPUS_HELD_OUT 256   /* the corpus' last texts: masked-token scores only */
#define EVAL_BATCH 32
#define N_CLASSES 4

static const char *const topics[N_CLASSES] = {"computers", "science", "law", "food"};

/* ---- data -------------------------------------------------------------- */

/* Token rows of MAX_LEN ids: row i is ids[i*MAX_LEN ...], len[i] real tokens
 * ([CLS] and [SEP] included) and then [PAD]s. Rows [0, n_train) train, the
 * rest are held out. label is the topic of a row (NULL for the corpus). */
typedef struct Rows {
    int64_t n, n_train;
    int32_t *ids, *len, *label;
} Rows;

static void rows_alloc(Rows *r, Arena *a, bool labelled)
{
    r->n = r->n_train = 0;
    r->ids = bertc_arena_calloc(a, (size_t)MAX_TEXTS * MAX_LEN, sizeof(int32_t));
    r->len = bertc_arena_calloc(a, MAX_TEXTS, sizeof(int32_t));
    r->label = labelled ? bertc_arena_calloc(a, MAX_TEXTS, sizeof(int32_t)) : NULL;
}

/* A text file split into lines in place: lines[0..*n-1] point into the
 * returned buffer (free it), each '\n' replaced by '\0'. A file of more than
 * max lines is an error (a fixed table: refuse, never drop lines silently). */
static char *read_lines(const char *path, char **lines, int64_t max, int64_t *n,
                        BertcError *err)
{
    size_t size;
    char *buf = example_read_file(path, &size, err);
    if (!buf)
        return NULL;
    *n = 0;
    char *line = buf;
    for (char *end; *line && *n < max; line = end + 1) {
        end = strchr(line, '\n');
        lines[(*n)++] = line;
        if (!end) {
            line += strlen(line);
            break;
        }
        *end = '\0';
    }
    if (*line) {
        bertc_errorf(err, "%s: more than %lld lines; the example takes at most %lld (cut the "
                     "file)", path, (long long)max, (long long)max);
        free(buf);
        return NULL;
    }
    return buf;
}

static int topic_index(const char *name, size_t len)
{
    for (int k = 0; k < N_CLASSES; k++)
        if (strlen(topics[k]) == len && strncmp(topics[k], name, len) == 0)
            return k;
    return -1;
}

/* data/topics.tsv, "label<TAB>text" lines -> one padded row per text, split
 * as examples/topics.c does: the file is shuffled, the last 20 % held out. */
static int load_topics(const Tokenizer *tok, Arena *a, Rows *d, BertcError *err)
{
    static char *lines[MAX_TEXTS];
    int64_t n;
    char *buf = read_lines(example_data_path(TOPICS), lines, MAX_TEXTS, &n, err);
    if (!buf)
        return -1;
    rows_alloc(d, a, true);
    Arena *scratch = bertc_arena_create("tokenize", 1 << 16);
    int rc = 0;
    for (int64_t i = 0; i < n && rc == 0; i++) {
        char *tab = strchr(lines[i], '\t');
        int label = tab ? topic_index(lines[i], (size_t)(tab - lines[i])) : -1;
        if (label < 0) {
            rc = bertc_errorf(err, "%s:%lld: no known topic label", example_data_path(TOPICS),
                              (long long)i + 1);
            break;
        }
        Encoding enc;
        bertc_arena_reset(scratch);
        rc = bertc_tokenizer_encode(tok, scratch, tab + 1, strlen(tab + 1), NULL, 0, MAX_LEN, true,
                              &enc, err);
        if (rc != 0)
            example_line_error(example_data_path(TOPICS), i + 1, err);
        else {
            memcpy(d->ids + d->n * MAX_LEN, enc.input_ids, sizeof(int32_t) * MAX_LEN);
            d->len[d->n] = enc.n_a + 2;
            d->label[d->n++] = label;
        }
    }
    bertc_arena_destroy(scratch);
    free(buf);
    if (rc == 0)
        rc = example_check_rows(example_data_path(TOPICS), d->n, MAX_TEXTS, false, err);
    d->n_train = d->n * 4 / 5;
    return rc;
}

/* Pre-training packs texts: "[CLS] text [SEP] text [SEP] ..." up to MAX_LEN
 * tokens, as BERT and SpanBERT fill their 512-token inputs (one segment, no
 * next-sentence pair, as SpanBERT). Fortunes average ~28 tokens, so a row
 * of one text would be half padding, and padding costs as much as text.
 * A text that does not fit in the current row, or asks for a fresh one,
 * starts a new row. */
static int pack_text(const Tokenizer *tok, Arena *scratch, const char *text, bool fresh,
                     Rows *r, BertcError *err)
{
    Encoding enc;
    bertc_arena_reset(scratch);
    if (bertc_tokenizer_encode(tok, scratch, text, strlen(text), NULL, 0, MAX_LEN, false, &enc,
                         err) != 0)
        return -1;
    int32_t body = enc.S - 2;                   /* the text without [CLS] and [SEP] */
    if (fresh || r->n == 0 || r->len[r->n - 1] + body + 1 > MAX_LEN) {
        r->ids[r->n * MAX_LEN] = tok->cls_id;
        r->len[r->n++] = 1;
    }
    int32_t *row = r->ids + (r->n - 1) * MAX_LEN, *len = &r->len[r->n - 1];
    memcpy(row + *len, enc.input_ids + 1, sizeof(int32_t) * (size_t)body);
    *len += body;
    row[(*len)++] = tok->sep_id;
    return 0;
}

/* data/pretrain.txt, one text a line: the first texts packed into training
 * rows, the last CORPUS_HELD_OUT into held-out rows. */
static int load_corpus(const Tokenizer *tok, Arena *a, Rows *r, BertcError *err)
{
    static char *lines[MAX_TEXTS];
    int64_t n;
    char *buf = read_lines(example_data_path(CORPUS), lines, MAX_TEXTS, &n, err);
    if (!buf)
        return -1;
    if (n <= CORPUS_HELD_OUT) {
        free(buf);
        return bertc_errorf(err, "%s: %lld texts, need more than %d",
                            example_data_path(CORPUS), (long long)n, CORPUS_HELD_OUT);
    }
    rows_alloc(r, a, false);
    Arena *scratch = bertc_arena_create("tokenize", 1 << 16);
    int rc = 0;
    for (int64_t i = 0; i < n && rc == 0; i++) {
        bool first_held_out = i == n - CORPUS_HELD_OUT;   /* never in a training row */
        if (first_held_out)
            r->n_train = r->n;
        rc = pack_text(tok, scratch, lines[i], first_held_out, r, err);
        if (rc != 0)
            example_line_error(example_data_path(CORPUS), i + 1, err);
    }
    bertc_arena_destroy(scratch);
    free(buf);
    return rc;
}

/* ---- span masking, afresh at every step ------------------------------- */

/* What the pre-training batches need besides the rows. */
typedef struct Pretrain {
    Rows rows;
    const BertConfig *cfg;       /* masking parameters, special token ids */
    int32_t *kind;               /* (V) the TokenKind of every vocabulary id */
    int64_t stuck_rows;          /* rows left unmasked: the collator gave up on them */
    double mlm_loss, sbo_loss;   /* the last evaluation, per masked token */
    double mlm_accuracy, sbo_accuracy;
} Pretrain;

/* The collator's candidates are whole words: "##x" continues the word
 * before it, and a token that starts with punctuation is never a word. */
static int32_t *vocab_kinds(const Tokenizer *tok, Arena *a)
{
    int32_t *kind = bertc_arena_alloc(a, sizeof(int32_t) * (size_t)tok->V);
    for (int32_t id = 0; id < tok->V; id++) {
        const char *s = bertc_tokenizer_token(tok, id);
        if (s[0] == '#' && s[1] == '#' && s[2])
            kind[id] = TOKEN_CONTINUATION;
        else if (ispunct((unsigned char)s[0]))
            kind[id] = TOKEN_EXCLUDED;
        else
            kind[id] = TOKEN_WORD_START;
    }
    return kind;
}

/* A batch's masks come from one SplitMix64 stream seeded by the masking seed
 * and the batch's rows: a resumed run, which replays the same rows, redraws
 * the same masks, and held-out rows are masked alike at every evaluation,
 * while each training step sees new masks (a new mask per step is what
 * RoBERTa calls dynamic masking; SpanBERT does the same). */
static uint64_t batch_seed(uint64_t seed, const int64_t *idx, int64_t n)
{
    Rng r = bertc_rng_seed(seed);
    for (int64_t j = 0; j < n; j++) {
        r.state ^= (uint64_t)idx[j];
        bertc_rng_next_u64(&r);
    }
    return bertc_rng_next_u64(&r);
}

/* Never predicted (SpanCollator.get_mask_tokens): a span running over a
 * [SEP] between two packed texts, or over an [UNK], skips that token. */
static bool is_special(const BertConfig *cfg, int32_t id)
{
    return id == cfg->pad_token_id || id == cfg->unk_token_id || id == cfg->cls_token_id ||
           id == cfg->sep_token_id || id == cfg->mask_token_id;
}

/* Span-mask one row of l real tokens: ids becomes the model's input
 * ([MASK] on the spans), labels the original ids there (-100 elsewhere) and
 * mask_labels the 0/1 span map the SBO head reads. */
static void mask_row(Pretrain *p, int32_t *ids, int64_t l, Rng *rng, Arena *scratch,
                     int32_t *labels, int32_t *mask_labels)
{
    int32_t kinds[MAX_LEN], raw[MAX_LEN];
    for (int64_t t = 0; t < l; t++)
        kinds[t] = p->kind[ids[t]];
    BertcError why;
    if (bertc_span_mask_row(p->cfg, ids, kinds, l, rng, scratch, raw, &why) != 0) {
        /* The seed's loop can spin forever, e.g. with one token of budget
         * left and only two-piece words uncovered; the library stops after
         * SPAN_MASKING_MAX_DRAWS draws with an error. Such a row (rare:
         * count in the summary) is left unmasked: with all labels -100 it
         * adds nothing to either loss, and the rest of the batch trains. */
        memset(raw, 0, sizeof raw);
        p->stuck_rows++;
    }
    for (int64_t t = 0; t < l; t++) {
        bool masked = raw[t] && !is_special(p->cfg, ids[t]);
        mask_labels[t] = masked;
        labels[t] = masked ? ids[t] : -100;
        ids[t] = masked ? p->cfg->mask_token_id : ids[t];
    }
}

/* ---- pre-training ------------------------------------------------------ */

/* Rows idx[0..n-1] -> input_ids (masked), attention_mask, labels,
 * mask_labels. token_type_ids are left out: all zeros, one segment. */
static int pretrain_batch(void *ctx, const int64_t *idx, int64_t n, Graph *g, Batch *b,
                          int64_t *tokens, BertcError *err)
{
    (void)err;
    Pretrain *p = ctx;
    int64_t bs[2] = {n, MAX_LEN};
    ITensor ids = bertc_itensor_new(g->step, 2, bs), mask = bertc_itensor_new(g->step, 2, bs);
    ITensor labels = bertc_itensor_new(g->step, 2, bs), mask_labels = bertc_itensor_new(g->step, 2, bs);
    Rng rng = bertc_rng_seed(batch_seed(bertc_spanbert_keys(p->cfg).masking.seed, idx, n));
    *tokens = 0;
    for (int64_t j = 0; j < n; j++) {
        int64_t e = idx[j], l = p->rows.len[e], at = j * MAX_LEN;
        memcpy(ids.data + at, p->rows.ids + e * MAX_LEN, sizeof(int32_t) * MAX_LEN);
        for (int64_t t = 0; t < MAX_LEN; t++) {
            mask.data[at + t] = t < l;
            labels.data[at + t] = -100;
        }
        mask_row(p, ids.data + at, l, &rng, g->step, labels.data + at, mask_labels.data + at);
        *tokens += l;
    }
    bertc_batch_put_ids(b, "input_ids", ids);
    bertc_batch_put_ids(b, "attention_mask", mask);
    bertc_batch_put_ids(b, "labels", labels);
    bertc_batch_put_ids(b, "mask_labels", mask_labels);
    return 0;
}

/* logits (B, S, V): how many masked positions (labels != -100) have their
 * label as the top prediction. */
static int64_t correct_tokens(const Var *logits, const ITensor *labels)
{
    int64_t V = logits->value.shape[2], correct = 0;
    for (int64_t i = 0; i < labels->numel; i++)
        if (labels->data[i] != -100)
            correct += example_argmax(logits->value.data + i * V, V) == labels->data[i];
    return correct;
}

static int64_t count_masked(const ITensor *labels)
{
    int64_t n = 0;
    for (int64_t i = 0; i < labels->numel; i++)
        n += labels->data[i] != -100;
    return n;
}

/* Both heads on the held-out rows: loss per masked token (the model's mean
 * per batch, weighted by the batch's masked tokens) and top-1 accuracy. */
static int pretrain_scores(Pretrain *p, Model *m, Graph *g, BertcError *err)
{
    int64_t masked = 0, mlm_correct = 0, sbo_correct = 0;
    double mlm_sum = 0, sbo_sum = 0;
    HeldOut h = held_out(p->rows.n_train, p->rows.n - p->rows.n_train, EVAL_BATCH,
                         "held-out text");
    while (held_out_next(&h, pretrain_batch, p, m, g, err)) {
        const ITensor *labels = &bertc_batch_find(&h.batch, "labels")->ids;
        int64_t c = count_masked(labels);
        if (c == 0)
            continue;
        masked += c;
        mlm_sum += (double)c * bertc_outputs_get(&h.out, "mlm_loss")->value.data[0];
        sbo_sum += (double)c * bertc_outputs_get(&h.out, "sbo_loss")->value.data[0];
        mlm_correct += correct_tokens(bertc_outputs_get(&h.out, "mlm_logits"), labels);
        sbo_correct += correct_tokens(bertc_outputs_get(&h.out, "sbo_logits"), labels);
    }
    if (h.failed)
        return -1;
    p->mlm_loss = mlm_sum / (double)masked;
    p->sbo_loss = sbo_sum / (double)masked;
    p->mlm_accuracy = (double)mlm_correct / (double)masked;
    p->sbo_accuracy = (double)sbo_correct / (double)masked;
    return 0;
}

/* The engine's evaluation: the metric is the masked-LM accuracy. */
static int pretrain_evaluate(void *ctx, Model *m, Graph *g, double *metric, double *loss,
                             BertcError *err)
{
    Pretrain *p = ctx;
    if (pretrain_scores(p, m, g, err) != 0)
        return -1;
    *metric = p->mlm_accuracy;
    *loss = p->mlm_loss + p->sbo_loss;
    return 0;
}

static void print_scores(const char *when, const Pretrain *p)
{
    printf("%s: held-out masked tokens  MLM loss %.3f (accuracy %.1f%%)  SBO loss %.3f "
           "(accuracy %.1f%%)\n", when, p->mlm_loss, 100 * p->mlm_accuracy, p->sbo_loss,
           100 * p->sbo_accuracy);
}

/* The scores of the untrained model: a uniform guess over V = 30,522 ids
 * would give ln V = 10.33 for both losses. */
static int scores_at_init(Pretrain *p, Model *m, BertcError *err)
{
    Graph *g = bertc_ag_graph_create(1 << 20, 0);
    bertc_ag_set_training(g, false);
    bertc_ag_set_no_grad(g, true);
    int rc = pretrain_scores(p, m, g, err);
    bertc_ag_graph_destroy(g);
    return rc;
}

static int pretrain(Model *m, Pretrain *p, const TrainOptions *opt, const char *out,
                    BertcError *err)
{
    char picture[BERTC_PATH_MAX];
    if (scores_at_init(p, m, err) != 0)
        return -1;
    print_scores("before pre-training", p);
    TrainTask task = {.n_train = p->rows.n_train, .make_batch = pretrain_batch,
                      .evaluate = pretrain_evaluate, .metric_name = "MLM accuracy", .ctx = p};
    TrainResult res;
    if (bertc_train_run(m, &task, opt, &res, err) != 0)
        return -1;
    print_scores("after pre-training ", p);
    printf("pre-trained %lld steps of %lld rows in %.0f s at %.0f tokens/s\n",
           (long long)opt->steps, (long long)opt->batch_size, res.seconds,
           res.tokens_per_second);
    if (bertc_path_join(picture, out, "loss.svg", "--out", err) != 0)
        return -1;
    return bertc_svg_loss_curve(picture, &res, "SpanBERT pre-training: MLM + SBO loss", err);
}

/* ---- fine-tuning on the topic task (as examples/topics.c) -------------- */

/* Rows idx[0..n-1] -> input_ids, attention_mask (n, MAX_LEN), labels (n). */
static int topic_batch(void *ctx, const int64_t *idx, int64_t n, Graph *g, Batch *b,
                       int64_t *tokens, BertcError *err)
{
    (void)err;
    const Rows *d = ctx;
    int64_t bs[2] = {n, MAX_LEN};
    ITensor ids = bertc_itensor_new(g->step, 2, bs), mask = bertc_itensor_new(g->step, 2, bs);
    ITensor labels = bertc_itensor_new(g->step, 1, &n);
    *tokens = 0;
    for (int64_t j = 0; j < n; j++) {
        int64_t e = idx[j];
        memcpy(ids.data + j * MAX_LEN, d->ids + e * MAX_LEN, sizeof(int32_t) * MAX_LEN);
        for (int64_t t = 0; t < MAX_LEN; t++)
            mask.data[j * MAX_LEN + t] = t < d->len[e];
        labels.data[j] = d->label[e];
        *tokens += d->len[e];
    }
    bertc_batch_put_ids(b, "input_ids", ids);
    bertc_batch_put_ids(b, "attention_mask", mask);
    bertc_batch_put_ids(b, "labels", labels);
    return 0;
}

/* Accuracy and mean loss over the held-out texts. */
static int topic_evaluate(void *ctx, Model *m, Graph *g, double *metric, double *loss,
                          BertcError *err)
{
    Rows *d = ctx;
    int64_t n_eval = d->n - d->n_train, correct = 0;
    double loss_sum = 0;
    HeldOut h = held_out(d->n_train, n_eval, EVAL_BATCH, "eval");
    while (held_out_next(&h, topic_batch, d, m, g, err)) {
        const float *logits = bertc_outputs_get(&h.out, "logits")->value.data;
        for (int64_t j = 0; j < h.n; j++)
            correct += example_argmax(logits + j * N_CLASSES, N_CLASSES) == d->label[h.row + j];
        loss_sum += bertc_outputs_get(&h.out, "loss")->value.data[0] * (double)h.n;
    }
    if (h.failed)
        return -1;
    *metric = (double)correct / (double)n_eval;
    *loss = loss_sum / (double)n_eval;
    return 0;
}

static double majority_baseline(const Rows *d)
{
    int64_t count[N_CLASSES] = {0}, best = 0;
    for (int64_t i = d->n_train; i < d->n; i++)
        count[d->label[i]]++;
    for (int k = 0; k < N_CLASSES; k++)
        best = count[k] > best ? count[k] : best;
    return (double)best / (double)(d->n - d->n_train);
}

/* ---- the two models ---------------------------------------------------- */

/* The encoder both models share (the weight copy needs equal shapes), the
 * size of examples/topics.c's classifier. */
static BertConfig encoder_config(const char *arch, const Tokenizer *tok)
{
    BertConfig c = bertc_bert_config_default(arch);
    c.vocab_size = tok->V;
    c.hidden_size = 128;
    c.num_hidden_layers = 2;
    c.num_attention_heads = 4;
    c.intermediate_size = 256;
    c.max_position_embeddings = MAX_LEN;
    return c;
}

/* HF's dropout 0.1; the SBO head as wide as the encoder's FFN; the masking
 * defaults of the paper (15 % budget, span lengths Geo(0.2) capped at 10). */
static int spanbert_config(const Tokenizer *tok, uint64_t seed, BertConfig *out,
                           BertcError *err)
{
    BertConfig c = encoder_config("SpanBertForPreTraining", tok);
    c.cls_token_id = tok->cls_id;
    c.sep_token_id = tok->sep_id;
    c.mask_token_id = tok->mask_id;
    c.unk_token_id = tok->unk_id;
    SpanBertKeys k = {.sbo_dim_ffn = c.intermediate_size, .sbo_max_span_length = 10,
                      .sbo_layer_norm_eps = 1e-5f,
                      .masking = {.present = true, .seed = seed, .masking_budget = 0.15,
                                  .span_probability = 0.2, .max_span_length_cap = 10}};
    memcpy(c.model.bytes, &k, sizeof k);
    if (bertc_bert_config_check(&c, err) != 0)
        return -1;
    *out = c;
    return 0;
}

/* examples/topics.c's classifier, dropout 0.3 included. */
static BertConfig classifier_config(const Tokenizer *tok)
{
    BertConfig c = encoder_config("BertForSequenceClassification", tok);
    c.hidden_dropout_prob = 0.3f;
    c.attention_probs_dropout_prob = 0.3f;
    c.num_labels = N_CLASSES;
    c.problem_type = PROBLEM_SINGLE_LABEL;
    return c;
}

/* Start the classifier's encoder from the pre-trained one: every "bert.*"
 * tensor of `to` that `from` holds under the same name. SpanBERT has no
 * pooler, so bert.pooler stays at its init, as does the classifier. */
static int copy_encoder(Registry *to, const Registry *from, int *copied, BertcError *err)
{
    *copied = 0;
    for (int i = 0; i < to->n_params; i++) {
        Param *dst = &to->params[i];
        int j = strncmp(dst->name, "bert.", 5) == 0 ? bertc_registry_find(from, dst->name) : -1;
        if (j < 0 || dst->alias_of >= 0)
            continue;
        const Tensor *src = &from->params[j].var->value;
        if (src->numel != dst->var->value.numel)
            return bertc_errorf(err, "%s: %lld pre-trained values, %lld in the classifier",
                                dst->name, (long long)src->numel,
                                (long long)dst->var->value.numel);
        memcpy(dst->var->value.data, src->data, sizeof(float) * (size_t)src->numel);
        (*copied)++;
    }
    return 0;
}

/* config.json + model.safetensors of the fine-tuned model, for `bertc run`
 * (the checkpoint also holds the optimizer state, for --resume). */
static int save_model(const char *out, const Model *m, BertcError *err)
{
    char config[BERTC_PATH_MAX], weights[BERTC_PATH_MAX];
    if (bertc_path_join(config, out, "config.json", "--out", err) != 0 ||
        bertc_path_join(weights, out, "model.safetensors", "--out", err) != 0 ||
        bertc_bert_config_write(config, &m->cfg, err) != 0)
        return -1;
    return bertc_registry_save_file(m->reg, weights, err);
}

/* Fine-tune a fresh classifier (initialised as examples/topics.c does), its
 * encoder replaced by `encoder` when that is not NULL. save_dir (or NULL)
 * receives the model. */
static int finetune(Rows *d, const Tokenizer *tok, const Registry *encoder,
                    const TrainOptions *opt, const char *save_dir, TrainResult *res,
                    BertcError *err)
{
    Arena *arena = bertc_arena_create("classifier", 1 << 20);
    BertConfig cfg = classifier_config(tok);
    Model m;
    int copied = 0, rc = example_model(&m, arena, &cfg, err);
    if (rc == 0 && encoder)
        rc = copy_encoder(m.reg, encoder, &copied, err);
    if (rc == 0 && encoder)
        printf("classifier: %d encoder tensors from pre-training, pooler and classifier "
               "fresh\n", copied);
    TrainTask task = {.n_train = d->n_train, .make_batch = topic_batch,
                      .evaluate = topic_evaluate, .metric_name = "accuracy", .ctx = d};
    if (rc == 0)
        rc = bertc_train_run(&m, &task, opt, res, err);
    if (rc == 0 && save_dir)
        rc = save_model(save_dir, &m, err);
    bertc_arena_destroy(arena);
    return rc;
}

/* ---- the program ------------------------------------------------------- */

static TrainOptions pretrain_options(void)
{
    TrainOptions opt = bertc_train_defaults();
    opt.steps = 200;
    opt.batch_size = 16;
    opt.lr = 1e-3;
    opt.eval_every = 25;
    return opt;
}

/* examples/topics.c's hyperparameters. */
static TrainOptions finetune_options(void)
{
    TrainOptions opt = bertc_train_defaults();
    opt.steps = 400;
    opt.batch_size = 32;
    opt.lr = 5e-4;
    opt.weight_decay = 0.1;
    opt.eval_every = 50;
    return opt;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The data: the vocabulary, the packed corpus and the topic task. */
static int load_data(Arena *a, Tokenizer *tok, Pretrain *p, Rows *topic_rows,
                     BertcError *err)
{
    if (example_need_data(VOCAB, err) != 0 || example_need_data(CORPUS, err) != 0 ||
        example_need_data(TOPICS, err) != 0 ||
        bertc_tokenizer_load(tok, a, example_data_path(VOCAB), err) != 0 ||
        load_corpus(tok, a, &p->rows, err) != 0 ||
        load_topics(tok, a, topic_rows, err) != 0)
        return -1;
    p->kind = vocab_kinds(tok, a);
    printf("bertc SpanBERT: pre-train on %s (%lld rows of %d tokens, %lld held out), then "
           "fine-tune on %s (%lld train, %lld held out)\n", CORPUS, (long long)p->rows.n_train,
           MAX_LEN, (long long)(p->rows.n - p->rows.n_train), TOPICS,
           (long long)topic_rows->n_train, (long long)(topic_rows->n - topic_rows->n_train));
    return 0;
}

/* Pre-train, then fine-tune with and without the pre-trained encoder. What
 * it allocates comes from `arena`, which run() frees on every path. */
static int pretrain_and_compare(const TrainOptions *pre, const TrainOptions *fine,
                                const TrainOptions *scratch, const char *out, Arena *arena,
                                BertcError *err)
{
    double start = now_seconds();
    Tokenizer tok;
    Rows topic_rows;
    Pretrain p = {0};
    if (load_data(arena, &tok, &p, &topic_rows, err) != 0)
        return -1;
    BertConfig cfg;
    Model spanbert;
    if (spanbert_config(&tok, pre->seed, &cfg, err) != 0 ||
        example_model(&spanbert, arena, &cfg, err) != 0)
        return -1;
    p.cfg = &cfg;
    printf("model: SpanBertForPreTraining, %d layers, H=%d, %lld parameters\n",
           cfg.num_hidden_layers, cfg.hidden_size, (long long)bertc_registry_count(spanbert.reg));
    TrainResult with, without;
    if (pretrain(&spanbert, &p, pre, out, err) != 0 ||
        finetune(&topic_rows, &tok, NULL, scratch, NULL, &without, err) != 0 ||
        finetune(&topic_rows, &tok, spanbert.reg, fine, out, &with, err) != 0)
        return -1;
    printf("topic accuracy on the %lld held-out texts: from scratch %.1f%%, pre-trained "
           "%.1f%% (majority-class baseline %.1f%%)\n",
           (long long)(topic_rows.n - topic_rows.n_train), 100 * without.final_metric,
           100 * with.final_metric, 100 * majority_baseline(&topic_rows));
    printf("rows the span collator gave up on (left unmasked): %lld\n",
           (long long)p.stuck_rows);
    printf("wrote %s/loss.svg, %s/config.json + model.safetensors and %s; %.0f s in all\n",
           out, out, fine->checkpoint, now_seconds() - start);
    return 0;
}

static int run(int argc, char **argv, BertcError *err)
{
    TrainOptions pre = pretrain_options(), fine = finetune_options(), scratch;
    const char *out = "build/spanbert";
    char pre_ckpt[BERTC_PATH_MAX], scratch_ckpt[BERTC_PATH_MAX], fine_ckpt[BERTC_PATH_MAX];
    /* every flag applies to both phases: parse them onto each one's defaults */
    if (bertc_train_parse_flags(argc, argv, &pre, &out, err) != 0 ||
        example_flags(argc, argv, &fine, &out, fine_ckpt, err) != 0 ||
        bertc_path_join(pre_ckpt, out, "pretrain.safetensors", "--out", err) != 0 ||
        bertc_path_join(scratch_ckpt, out, "scratch.safetensors", "--out", err) != 0)
        return -1;
    pre.checkpoint = pre_ckpt;
    scratch = fine;
    scratch.checkpoint = scratch_ckpt;
    Arena *arena = bertc_arena_create("spanbert", 1 << 20);
    int rc = pretrain_and_compare(&pre, &fine, &scratch, out, arena, err);
    bertc_arena_destroy(arena);
    return rc;
}

int main(int argc, char **argv)
{
    return example_main("spanbert", argc, argv, run);
}
