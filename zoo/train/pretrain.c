/* zoo/train/pretrain.c — bertc_pretrain (zoo/train/pretrain.h): the run.
 *
 *   prepare   the model (a config and a vocabulary, or a model directory to
 *             go on from) as the objective's architecture, --out's plan,
 *             the token cache, the rows and the held-out slice;
 *   batches   rows of the cache, masked anew at every step from the run's
 *             RNG (checkpointed, so --resume masks as the run it continues);
 *             held-out rows masked from seed + row, the same at every
 *             evaluation, so their perplexities compare;
 *   run       the engine (zoo/train/train.h), then the model directory,
 *             log.jsonl and loss.svg, and the swap into --out. */
#include "zoo/train/pretrain.h"
#include "zoo/train/finetune_internal.h"
#include "zoo/models/spanbert.h"

#include <ctype.h>
#include <math.h>
#include <string.h>

#define PRETRAIN_MAX_LEN 128
#define EVAL_BATCH 16
#define EVAL_MAX_ROWS 1000

PretrainOptions bertc_pretrain_defaults(void)
{
    PretrainOptions o = {.objective = PT_MLM, .mlm_probability = 0.15, .eval_rows = -1,
                         .train = bertc_train_defaults(), .out_mode = FINETUNE_OUT_NEW};
    o.train.steps = 0;              /* one pass over the rows */
    o.train.batch_size = 32;
    o.train.lr = 1e-3;
    o.train.warmup = 0.06;
    o.train.eval_every = -1;        /* a tenth of the run */
    o.train.checkpoint_every = -1;  /* at each evaluation */
    return o;
}

/* PretrainObjective -> the descriptor's ModelArch.pretraining */
static const ModelPretraining objective_kind[] = {MODEL_PRETRAIN_MLM, MODEL_PRETRAIN_MLM_NSP,
                                                  MODEL_PRETRAIN_SPAN};
static const char *const objective_name[] = {"mlm", "mlm-nsp", "span"};

/* Everything one run holds. */
typedef struct Pretrain {
    const PretrainOptions *o;
    FinetuneBase base;
    Model m;
    FinetuneOut out;
    PretrainCorpus corpus;
    Arena *arena;
    int64_t max_len, n_rows, n_train, n_eval;
    MlmMasking mm;
    int32_t *kind;            /* span: the TokenKind of every vocabulary id */
    int64_t stuck_rows;       /* span: rows the collator gave up on (left unmasked) */
    uint64_t seed;
    int64_t position;         /* the first training row's place in the run (batch_position) */
    bool writer;              /* this process writes --out (not a data-parallel rank > 0) */
    /* evaluations, for log.jsonl */
    int n_evals;
    double eval_ppl[TRAIN_MAX_POINTS];
    double eval_nsp[TRAIN_MAX_POINTS];   /* mlm-nsp: next-sentence accuracy */
} Pretrain;

/* ---- options ------------------------------------------------------------- */

static int check_options(const PretrainOptions *o, BertcError *err)
{
    if (bertc_finetune_check_base("pretraining", o->model, o->config_file, o->config, o->vocab,
                                  err) != 0)
        return -1;
    if (!o->corpus)
        return bertc_errorf(err, "pretraining: corpus (a plain-text file) is required");
    if (!o->out)
        return bertc_errorf(err, "pretraining: out (the model directory) is required");
    if ((unsigned)o->objective > PT_SPAN || (unsigned)o->out_mode > FINETUNE_OUT_IN_PLACE)
        return bertc_errorf(err, "pretraining: objective %d or out_mode %d is not one of the "
                            "enum's", (int)o->objective, (int)o->out_mode);
    if (!(o->mlm_probability > 0 && o->mlm_probability < 1))
        return bertc_errorf(err, "--mlm-probability must be between 0 and 1, got %g",
                            o->mlm_probability);
    if (o->whole_word_mask && o->objective == PT_SPAN)
        return bertc_errorf(err, "--whole-word-mask goes with --objective mlm or mlm-nsp: span "
                            "masking already masks whole words");
    if (o->max_len < 0 || o->max_len > INT32_MAX || o->eval_rows < -1)
        return bertc_errorf(err, "pretraining: max_len %lld or eval_rows %lld is out of range",
                            (long long)o->max_len, (long long)o->eval_rows);
    if (o->max_len && o->max_len < (o->objective == PT_MLM_NSP ? 5 : 3))
        return bertc_errorf(err, "--max-len %lld leaves no room for a token between the "
                            "special tokens", (long long)o->max_len);
    if (o->train.batch_size < 1 || o->train.batch_size > TRAIN_MAX_BATCH)
        return bertc_errorf(err, "--batch-size must be 1..%d, got %lld", TRAIN_MAX_BATCH,
                            (long long)o->train.batch_size);
    return 0;
}

/* ---- the model ------------------------------------------------------------ */

/* The base's config as the objective's architecture, with the tokenizer's
 * special ids (the masking and SpanBERT's collator need them). */
static int objective_config(const Pretrain *p, BertConfig *cfg, BertcError *err)
{
    const FinetuneBase *b = &p->base;
    const ModelArch *arch = bertc_zoo_arch_for_pretraining(objective_kind[p->o->objective]);
    BertConfig fresh;
    if (!arch)
        return bertc_errorf(err, "no architecture is the model of --objective %s",
                            objective_name[p->o->objective]);
    if (bertc_model_config_default(&fresh, arch->name, err) != 0)
        return -1;
    *cfg = b->cfg;
    if (strcmp(cfg->architecture, fresh.architecture) != 0) {
        memcpy(cfg->architecture, fresh.architecture, sizeof cfg->architecture);
        cfg->model = fresh.model;
    }
    cfg->add_pooling_layer = p->o->objective == PT_MLM_NSP;
    cfg->problem_type = PROBLEM_UNSET;
    cfg->n_label_names = 0;
    cfg->label_spill = NULL;
    cfg->label_heap = false;
    cfg->pad_token_id = b->tok.pad_id;
    cfg->cls_token_id = b->tok.cls_id;
    cfg->sep_token_id = b->tok.sep_id;
    cfg->mask_token_id = b->tok.mask_id;
    cfg->unk_token_id = b->tok.unk_id;
    if (b->tok.V > cfg->vocab_size)
        return bertc_errorf(err, "%s has %d tokens but the config's vocab_size is %d",
                            b->tok.name, (int)b->tok.V, cfg->vocab_size);
    if (!b->weights[0] && b->tok.V < cfg->vocab_size)
        return bertc_errorf(err, "%s has %d tokens but the config's vocab_size is %d: set "
                            "vocab_size to %d", b->tok.name, (int)b->tok.V, cfg->vocab_size,
                            (int)b->tok.V);
    return 0;
}

static int build_model(Pretrain *p, BertcError *err)
{
    BertConfig cfg = {0};
    if (objective_config(p, &cfg, err) != 0)
        return -1;
    if (cfg.int8_dynamic)
        return bertc_errorf(err, "--model is quantised to int8, which is for inference only: "
                            "pretrain its float32 original");
    cfg.bf16 = false;   /* a bf16 --model trains in float32, into a float32 model */
    int64_t positions = cfg.max_position_embeddings, wanted = p->o->max_len;
    if (wanted > positions)
        return bertc_errorf(err, "--max-len %lld is more than the model's "
                            "max_position_embeddings (%lld)", (long long)wanted,
                            (long long)positions);
    p->max_len = wanted ? wanted : positions < PRETRAIN_MAX_LEN ? positions : PRETRAIN_MAX_LEN;
    if (p->max_len < (p->o->objective == PT_MLM_NSP ? 5 : 3))
        return bertc_errorf(err, "%s: max_position_embeddings %lld leaves no room for a "
                            "token between the special tokens",
                            p->base.config_file ? p->base.config_file : "config",
                            (long long)positions);
    if (bertc_model_build(&p->m, p->arena, &cfg, err) != 0)
        return -1;
    Rng init = bertc_rng_seed(p->o->train.seed);
    bertc_registry_init_weights(p->m.reg, &init, cfg.initializer_range);
    return p->base.weights[0] ? bertc_model_load(&p->m, p->base.weights, true, err) : 0;
}

/* The masking's tables from the vocabulary: which ids are "##" pieces; for
 * span masking each id's TokenKind (a piece joins the word before it, a
 * token starting with punctuation never starts a span). */
static void vocab_tables(Pretrain *p)
{
    const Tokenizer *tok = &p->base.tok;
    uint8_t *cont = bertc_arena_alloc(p->arena, (size_t)tok->V);
    p->kind = bertc_arena_alloc(p->arena, sizeof(int32_t) * (size_t)tok->V);
    for (int32_t id = 0; id < tok->V; id++) {
        const char *s = bertc_tokenizer_token(tok, id);
        cont[id] = s[0] == '#' && s[1] == '#' && s[2];
        p->kind[id] = cont[id]                       ? TOKEN_CONTINUATION
                      : ispunct((unsigned char)s[0]) ? TOKEN_EXCLUDED
                                                     : TOKEN_WORD_START;
    }
    p->mm = (MlmMasking){.probability = p->o->mlm_probability,
                         .whole_words = p->o->whole_word_mask, .tok = tok,
                         .continuation = cont,
                         .first_random = bertc_random_first_token(&p->m.cfg)};
}

/* ---- batches ------------------------------------------------------------- */

/* NSP (Devlin et al. 2019, section 3.1, task #2): the row's tokens become
 * "[CLS] A [SEP] B [SEP]", A its first 1..W-1 tokens; B, half the time, the
 * tokens that follow A (label 0, IsNext), else as many from a random place
 * of the training stream (label 1, NotNext). Segments are cut at a token,
 * not a sentence: the corpus keeps no sentence boundaries. */
static int nsp_row(const Pretrain *p, int64_t r, int32_t *ids, int32_t *types, int64_t *l,
                   int32_t *label, Rng *rng, BertcError *err)
{
    const Tokenizer *tok = &p->base.tok;
    int64_t W = p->max_len - 3, first = r * (p->max_len - 2);
    int64_t avail = p->corpus.n_tokens - first;
    int64_t n = avail < W ? avail : W;                    /* A and B together */
    int64_t a = n >= 2 ? bertc_rng_randint(rng, 1, n - 1) : n, b_len = n - a;
    int64_t train_tokens = p->n_train * (p->max_len - 2);
    bool random_b = b_len > 0 && bertc_rng_uniform(rng) < 0.5 && train_tokens > b_len;
    int64_t b_first = random_b ? bertc_rng_randint(rng, 0, train_tokens - b_len) : first + a;
    ids[0] = tok->cls_id;
    if (bertc_pretrain_corpus_read(&p->corpus, first, a, ids + 1, err) != 0)
        return -1;
    ids[a + 1] = tok->sep_id;
    if (bertc_pretrain_corpus_read(&p->corpus, b_first, b_len, ids + a + 2, err) != 0)
        return -1;
    *l = a + b_len + 2 + (b_len > 0);
    if (b_len > 0)
        ids[*l - 1] = tok->sep_id;
    for (int64_t t = 0; t < p->max_len; t++) {
        types[t] = t >= a + 2 && t < *l;
        if (t >= *l)
            ids[t] = tok->pad_id;
    }
    *label = random_b;
    return 0;
}

/* SpanBERT (Joshi et al. 2020, section 3.1): the zoo's span masking of the
 * row (zoo/models/span_masking.c), every covered token [MASK]ed, and the
 * 0/1 span map the span boundary objective reads. */
static void span_row(Pretrain *p, int32_t *ids, int64_t l, int32_t *labels, int32_t *mask_labels,
                     Rng *rng, Arena *scratch)
{
    const BertConfig *cfg = &p->m.cfg;
    int32_t *kinds = bertc_arena_alloc(scratch, sizeof(int32_t) * (size_t)l);
    int32_t *raw = bertc_arena_calloc(scratch, (size_t)l, sizeof(int32_t));
    for (int64_t t = 0; t < l; t++)
        kinds[t] = p->kind[ids[t]];
    BertcError why;
    if (bertc_span_mask_row(cfg, ids, kinds, l, rng, scratch, raw, &why) != 0) {
        memset(raw, 0, sizeof(int32_t) * (size_t)l);   /* the seed's loop would spin: skip it */
        p->stuck_rows++;
    }
    for (int64_t t = 0; t < l; t++) {
        int32_t id = ids[t];
        bool special = id == cfg->pad_token_id || id == cfg->unk_token_id ||
                       id == cfg->cls_token_id || id == cfg->sep_token_id ||
                       id == cfg->mask_token_id;
        bool masked = raw[t] && !special;
        mask_labels[t] = masked;
        labels[t] = masked ? id : -100;
        ids[t] = masked ? cfg->mask_token_id : id;
    }
}

/* Rows idx[0..n) (train rows, or held-out ones at eval) as a batch: input_ids
 * masked, attention_mask, labels (and token_type_ids, next_sentence_label
 * for NSP; mask_labels for span). */
static int make_rows(Pretrain *p, const int64_t *idx, int64_t n, Graph *g, Batch *b, bool eval,
                     int64_t *tokens, int64_t *masked, BertcError *err)
{
    int64_t S = p->max_len, shape[2] = {n, S};
    ITensor ids = bertc_itensor_new(g->step, 2, shape);      /* (n, S) masked input_ids */
    ITensor mask = bertc_itensor_new(g->step, 2, shape);     /* (n, S) attention_mask */
    ITensor types = bertc_itensor_new(g->step, 2, shape);    /* (n, S) token_type_ids */
    ITensor labels = bertc_itensor_new(g->step, 2, shape);   /* (n, S) the ids to predict */
    ITensor spans = bertc_itensor_new(g->step, 2, shape);    /* (n, S) span: mask_labels */
    ITensor next = bertc_itensor_new(g->step, 1, &n);        /* (n) nsp: next_sentence_label */
    int32_t *work = bertc_arena_alloc(g->step, sizeof(int32_t) * (size_t)(2 * S));
    *tokens = *masked = 0;
    for (int64_t j = 0; j < n; j++) {
        int64_t l, at = j * S;
        /* held-out row r is masked (and paired) from seed + r at every
         * evaluation; the k-th training row drawn in the run from (seed, k),
         * so one process and several ranks mask it alike (train.h) */
        Rng fixed = eval ? bertc_rng_seed(p->seed + (uint64_t)idx[j])
                         : bertc_rng_seed((p->seed ^ 0x632BE59BD9B4E019ull) *
                                              0x9E3779B97F4A7C15ull +
                                          (uint64_t)(p->position + j));
        Rng *rng = &fixed;
        memset(types.data + at, 0, sizeof(int32_t) * (size_t)S);
        int rc = p->o->objective == PT_MLM_NSP
                     ? nsp_row(p, idx[j], ids.data + at, types.data + at, &l, &next.data[j], rng,
                               err)
                     : bertc_pretrain_row(&p->corpus, idx[j], S, p->base.tok.pad_id,
                                          ids.data + at, &l, err);
        if (rc != 0)
            return -1;
        for (int64_t t = 0; t < S; t++) {
            mask.data[at + t] = t < l;
            labels.data[at + t] = -100;
        }
        if (p->o->objective == PT_SPAN)
            span_row(p, ids.data + at, l, labels.data + at, spans.data + at, rng, g->step);
        else
            bertc_pretrain_mask_row(&p->mm, ids.data + at, l, labels.data + at, rng, work);
        for (int64_t t = 0; t < l; t++)
            *masked += labels.data[at + t] != -100;
        *tokens += l;
    }
    if (*masked == 0)   /* a loss needs one target: the first real token of the first row */
        for (int64_t t = 1; t + 1 < S && *masked == 0; t++)
            if (mask.data[t + 1]) {
                labels.data[t] = ids.data[t];
                ids.data[t] = p->base.tok.mask_id;
                spans.data[t] = 1;
                *masked = 1;
            }
    bertc_batch_put_ids(b, "input_ids", ids);
    bertc_batch_put_ids(b, "attention_mask", mask);
    bertc_batch_put_ids(b, "labels", labels);
    if (p->o->objective == PT_MLM_NSP) {
        bertc_batch_put_ids(b, "token_type_ids", types);
        bertc_batch_put_ids(b, "next_sentence_label", next);
    }
    if (p->o->objective == PT_SPAN)
        bertc_batch_put_ids(b, "mask_labels", spans);
    return 0;
}

static void batch_position(void *ctx, int64_t first)
{
    ((Pretrain *)ctx)->position = first;
}

static int train_batch(void *ctx, const int64_t *idx, int64_t n, Graph *g, Batch *b,
                       int64_t *tokens, BertcError *err)
{
    int64_t masked;
    return make_rows(ctx, idx, n, g, b, false, tokens, &masked, err);
}

/* The masked-LM loss is a mean over the labelled tokens: gradient
 * accumulation weighs each micro-batch by their number. */
static int64_t labelled_tokens(void *ctx, const Batch *b)
{
    (void)ctx;
    const BatchItem *labels = bertc_batch_find(b, "labels");
    int64_t n = 0;
    for (int64_t i = 0; labels && i < labels->ids.numel; i++)
        n += labels->ids.data[i] != -100;
    return n;
}

/* ---- evaluation: the held-out perplexity ---------------------------------- */

/* Sum over the labelled positions of -log softmax(logits)[label], in
 * double, and their count: the masked-LM cross-entropy of one batch. */
static void masked_ce(const Var *logits, const ITensor *labels, double *sum, int64_t *count)
{
    int64_t V = logits->value.shape[logits->value.ndim - 1];
    for (int64_t i = 0; i < labels->numel; i++) {
        if (labels->data[i] == -100)
            continue;
        const float *z = logits->value.data + i * V;
        double m = z[0], s = 0;
        for (int64_t v = 1; v < V; v++)
            m = z[v] > m ? z[v] : m;
        for (int64_t v = 0; v < V; v++)
            s += exp((double)z[v] - m);
        *sum += m + log(s) - (double)z[labels->data[i]];
        (*count)++;
    }
}

/* The next-sentence predictions of one batch that are right. */
static int64_t nsp_correct(const Var *logits, const ITensor *next)
{
    int64_t right = 0;
    for (int64_t j = 0; j < next->numel; j++)
        right += (logits->value.data[2 * j + 1] > logits->value.data[2 * j]) == next->data[j];
    return right;
}

static int evaluate(void *ctx, Model *m, Graph *g, double *metric, double *loss, BertcError *err)
{
    Pretrain *p = ctx;
    double sum = 0;
    int64_t count = 0, right = 0;
    const char *logits_name = p->o->objective == PT_MLM       ? "logits"
                              : p->o->objective == PT_MLM_NSP ? "prediction_logits"
                                                              : "mlm_logits";
    for (int64_t first = 0; first < p->n_eval; first += EVAL_BATCH) {
        int64_t n = p->n_eval - first < EVAL_BATCH ? p->n_eval - first : EVAL_BATCH;
        int64_t idx[EVAL_BATCH], tokens, masked;
        for (int64_t j = 0; j < n; j++)
            idx[j] = p->n_train + first + j;
        Batch b;
        Outputs out;
        bertc_ag_graph_reset(g);
        bertc_batch_init(&b, "held-out rows");
        bertc_outputs_init(&out);
        /* masked LM: the loss alone, from the head on the masked rows only */
        out.loss_only = p->o->objective == PT_MLM;
        if (make_rows(p, idx, n, g, &b, true, &tokens, &masked, err) != 0 ||
            bertc_model_forward(m, g, &b, &out, err) != 0)
            return -1;
        const Var *mean = bertc_outputs_get(&out, "loss");
        if (out.loss_only) {   /* the mean over the batch's masked tokens */
            if (!mean)
                return bertc_errorf(err, "pretraining: the model gave no loss");
            sum += (double)mean->value.data[0] * (double)masked;
            count += masked;
            continue;
        }
        const Var *logits = bertc_outputs_get(&out, logits_name);
        ITensor labels, next;
        int64_t shape[2] = {n, p->max_len};
        if (!logits || bertc_batch_ids(&b, "labels", 2, shape, &labels, err) != 0)
            return logits ? -1 : bertc_errorf(err, "pretraining: the model gave no '%s'",
                                              logits_name);
        masked_ce(logits, &labels, &sum, &count);
        const Var *nsp = bertc_outputs_get(&out, "seq_relationship_logits");
        if (nsp && bertc_batch_ids(&b, "next_sentence_label", 1, &n, &next, err) == 0)
            right += nsp_correct(nsp, &next);
    }
    *loss = count ? sum / (double)count : NAN;
    *metric = exp(*loss);
    if (p->n_evals < TRAIN_MAX_POINTS) {
        p->eval_ppl[p->n_evals] = *metric;
        p->eval_nsp[p->n_evals] = p->n_eval ? (double)right / (double)p->n_eval : NAN;
        p->n_evals++;
    }
    return 0;
}

static void example_name(void *ctx, int64_t idx, char *buf, size_t len)
{
    const Pretrain *p = ctx;
    snprintf(buf, len, "%s row %lld (tokens %lld..%lld of the stream)", p->o->corpus,
             (long long)idx, (long long)(idx * (p->max_len - 2)),
             (long long)((idx + 1) * (p->max_len - 2) - 1));
}

/* ---- the run ------------------------------------------------------------- */

/* The corpus's rows: the cache opened (tokenising when needed), the last
 * eval_rows held out. */
static int open_corpus(Pretrain *p, PretrainResult *res, BertcError *err)
{
    const PretrainOptions *o = p->o;
    char cache[BERTC_PATH_MAX];
    if (o->cache)
        snprintf(cache, sizeof cache, "%s", o->cache);
    else if (bertc_path_join(cache, o->out, "corpus.tokens", "--out", err) != 0)
        return -1;
    if (!o->train.quiet && p->writer)
        bertc_train_note(o->note, o->note_user, "reading %s (token cache %s)", o->corpus,
                         cache);
    bool rebuilt;
    if (bertc_pretrain_corpus_open(&p->corpus, o->corpus, &p->base.tok, cache, &rebuilt,
                                   err) != 0)
        return -1;
    res->cache_reused = !rebuilt;
    res->n_tokens = p->corpus.n_tokens;
    res->n_docs = p->corpus.n_docs;
    if (p->corpus.n_tokens == 0)
        return bertc_errorf(err, "%s: no text to pretrain on (every line is empty)", o->corpus);
    p->n_rows = bertc_pretrain_rows(&p->corpus, p->max_len);
    int64_t held = o->eval_rows >= 0 ? o->eval_rows : p->n_rows / 20;
    if (o->eval_rows < 0 && held > EVAL_MAX_ROWS)
        held = EVAL_MAX_ROWS;
    if (o->eval_rows < 0 && held < 1 && p->n_rows >= 2)
        held = 1;
    if (held >= p->n_rows)
        return bertc_errorf(err, "--eval-rows %lld leaves no training row of the %lld rows of "
                            "%lld tokens that %s makes", (long long)held, (long long)p->n_rows,
                            (long long)p->max_len, o->corpus);
    p->n_eval = held;
    p->n_train = p->n_rows - held;
    if (!o->train.quiet && p->writer)
        bertc_train_note(o->note, o->note_user, "%s: %lld tokens in %lld documents%s: %lld "
                         "rows of %lld tokens, %lld held out", o->corpus,
                         (long long)p->corpus.n_tokens, (long long)p->corpus.n_docs,
                         rebuilt ? "" : " (cached)", (long long)p->n_rows,
                         (long long)p->max_len, (long long)p->n_eval);
    return 0;
}

/* What --resume must find the same beside the engine's own fields. */
typedef struct TaskFields {
    char text[5][32];
    StMetadata meta[5];
} TaskFields;

static int train_options(Pretrain *p, const char *checkpoint, TaskFields *f, TrainOptions *opt,
                         BertcError *err)
{
    const PretrainOptions *o = p->o;
    *opt = o->train;
    int64_t per_step = opt->batch_size * (opt->grad_accum ? opt->grad_accum : 1) *
                       (opt->collective ? opt->collective->ranks : 1);   /* every rank's */
    if (!opt->steps)
        opt->steps = (p->n_train + per_step - 1) / per_step;
    if (opt->steps > TRAIN_MAX_STEPS)
        return bertc_errorf(err, "pretraining: %lld steps is more than %lld",
                            (long long)opt->steps, TRAIN_MAX_STEPS);
    if (opt->eval_every < 0)
        opt->eval_every = p->n_eval == 0 ? 0 : opt->steps >= 10 ? opt->steps / 10 : 1;
    if (opt->checkpoint_every < 0)
        opt->checkpoint_every = opt->eval_every ? opt->eval_every : opt->steps;
    if (!opt->checkpoint)
        opt->checkpoint = checkpoint;
    snprintf(f->text[0], 32, "%lld", (long long)p->max_len);
    snprintf(f->text[1], 32, "%s%s", objective_name[o->objective],
             o->whole_word_mask ? "+wwm" : "");
    snprintf(f->text[2], 32, "%.17g", o->mlm_probability);
    snprintf(f->text[3], 32, "%lld", (long long)p->corpus.n_tokens);
    snprintf(f->text[4], 32, "%lld", (long long)p->n_eval);
    static const char *const keys[5] = {"max_len", "objective", "mlm_probability",
                                        "corpus_tokens", "eval_rows"};
    for (int i = 0; i < 5; i++)
        f->meta[i] = (StMetadata){keys[i], f->text[i]};
    opt->task_fields = f->meta;
    opt->n_task_fields = 5;
    p->seed = opt->seed;
    return 0;
}

/* log.jsonl: one line an evaluation. */
static int write_log(const Pretrain *p, const char *dir, bool resume, const TrainResult *res,
                     BertcError *err)
{
    char path[BERTC_PATH_MAX];
    if (bertc_path_join(path, dir, "log.jsonl", "--out", err) != 0)
        return -1;
    FILE *log = resume ? bertc_open_append(path, err) : bertc_open_write(path, err);
    if (!log)
        return -1;
    for (int i = 0, e = 0; i < res->n_points && e < p->n_evals; i++) {
        const TrainPoint *pt = &res->points[i];
        if (isnan(pt->metric))
            continue;
        fprintf(log, "{\"step\": %lld, \"train_loss\": %.6g, \"eval_loss\": %.6g, "
                "\"perplexity\": %.6g", (long long)pt->step,
                isnan(pt->train_loss) ? 0.0 : pt->train_loss, pt->eval_loss, p->eval_ppl[e]);
        if (p->o->objective == PT_MLM_NSP)
            fprintf(log, ", \"nsp_accuracy\": %.6g", p->eval_nsp[e]);
        fputs("}\n", log);
        e++;
    }
    if (fclose(log) != 0)
        return bertc_errorf(err, "%s: write failed", path);
    return 0;
}

static int write_outputs(Pretrain *p, const TrainResult *res, bool done, BertcError *err)
{
    const char *dir = p->out.dir;
    char path[BERTC_PATH_MAX];
    if (write_log(p, dir, p->o->train.resume, res, err) != 0 ||
        bertc_path_join(path, dir, "loss.svg", "--out", err) != 0)
        return -1;
    if (res->n_points &&
        bertc_svg_training_curve(path, res, "bertc pretrain", "perplexity", err) != 0)
        return -1;
    return done ? bertc_model_dir_save(dir, &p->m, &p->base.tok, err) : 0;
}

static int prepare(Pretrain *p, PretrainResult *res, BertcError *err)
{
    const PretrainOptions *o = p->o;
    FinetuneOptions fo = bertc_finetune_defaults();
    fo.model = o->model;
    fo.config_file = o->config_file;
    fo.config = o->config;
    fo.vocab = o->vocab;
    if ((o->train.checkpoint && bertc_check_replaceable(o->train.checkpoint, err) != 0) ||
        bertc_finetune_out_plan(&p->out, o->out, o->model, o->out_mode, o->train.resume,
                                err) != 0 ||
        bertc_finetune_open_base(&fo, &p->base, err) != 0 || build_model(p, err) != 0)
        return -1;
    vocab_tables(p);
    snprintf(res->dir, sizeof res->dir, "%s", p->out.dir);
    if (!p->writer)   /* a data-parallel rank > 0: rank 0 makes --out and the cache first */
        return bertc_train_barrier(&o->train, err) != 0 ||
                       bertc_train_barrier(&o->train, err) != 0 || open_corpus(p, res, err) != 0
                   ? -1
                   : 0;
    return bertc_train_barrier(&o->train, err) != 0 ||   /* every rank has planned --out */
                   bertc_finetune_out_make(&p->out, o->train.resume, err) != 0 ||
                   open_corpus(p, res, err) != 0 || bertc_train_barrier(&o->train, err) != 0
               ? -1
               : 0;
}

static int run(Pretrain *p, PretrainResult *res, BertcError *err)
{
    const PretrainOptions *o = p->o;
    char checkpoint[BERTC_PATH_MAX];
    TaskFields fields;
    TrainOptions opt;
    if (prepare(p, res, err) != 0 ||
        bertc_path_join(checkpoint, p->out.dir, "checkpoint.safetensors", "--out", err) != 0 ||
        train_options(p, checkpoint, &fields, &opt, err) != 0)
        return -1;
    res->n_train = p->n_train;
    res->n_eval = p->n_eval;
    res->max_len = p->max_len;
    res->n_parameters = bertc_registry_count(p->m.reg);
    TrainTask task = {.n_train = p->n_train, .make_batch = train_batch,
                      .evaluate = p->n_eval ? evaluate : NULL, .metric_name = "perplexity",
                      .ctx = p, .example_name = example_name, .loss_items = labelled_tokens,
                      .batch_position = batch_position};
    int rc = bertc_train_run(&p->m, &task, &opt, &res->train, err);
    bool done = rc == 0 && res->train.steps_done == opt.steps;
    res->perplexity = p->n_evals ? p->eval_ppl[p->n_evals - 1] : NAN;
    if (p->stuck_rows && p->writer)
        bertc_train_note(o->note, o->note_user, "span masking gave up on %lld rows (left "
                         "unmasked)", (long long)p->stuck_rows);
    if (p->writer && (rc == 0 || res->train.interrupted)) {
        BertcError out_err;
        int out_rc = write_outputs(p, &res->train, done, &out_err) != 0 ||
                     (done && bertc_finetune_out_commit(&p->out, &out_err) != 0);
        if (out_rc && rc == 0)
            *err = out_err;
        rc = rc || out_rc ? -1 : 0;
    }
    res->kept = rc == 0 && done;
    return rc;
}

int bertc_pretrain(const PretrainOptions *o, PretrainResult *res, BertcError *err)
{
    memset(res, 0, sizeof *res);
    res->perplexity = NAN;
    if (check_options(o, err) != 0)
        return -1;
    Pretrain p = {.o = o, .arena = bertc_arena_create("pretrain", 1 << 20),
                  .writer = bertc_train_is_writer(&o->train)};
    p.corpus.fd = -1;
    int rc = run(&p, res, err);
    bertc_pretrain_corpus_close(&p.corpus);
    bertc_finetune_close_base(&p.base);
    bertc_arena_destroy(p.arena);
    return rc;
}
