/* cli/finetune.c — `bertc finetune`: labelled texts in a CSV, TSV or JSONL
 * file (zoo/train/dataset.h) -> a trained BertForSequenceClassification (token-cls:
 * BertForTokenClassification, cli/finetune_tokens.c; qa:
 * BertForQuestionAnswering, cli/finetune_qa.c) saved as a Hugging Face model
 * directory (bertc_model_dir_save).
 *
 *   1. the model: a pretrained --model DIR of any BERT head (its encoder is
 *      loaded, the new head initialised as from_pretrained does, the keys
 *      it initialised listed), or --config + --vocab from scratch;
 *   2. the data: the label set of the training rows (sorted), rows shuffled
 *      with --seed and 10 % held out unless --eval is given;
 *   3. the engine of zoo/train/train.h (AdamW, warmup, progress bar, checkpoint,
 *      --resume, Ctrl-C saves), evaluating every --eval-every steps;
 *   4. OUT/ holds the best evaluation's model (config.json with
 *      id2label/label2id, model.safetensors, vocab.txt,
 *      tokenizer_config.json), log.jsonl (one line per evaluation),
 *      loss.svg, checkpoint.safetensors and trainer_state.json (the best
 *      metric, for --resume). An OUT that held something before is only
 *      replaced when the run ends with a kept model (cli/finetune_out.c).
 * A plateau of --patience evaluations without a better metric ends the run.
 * Everything that can be refused is refused before anything is written
 * (prepare, train_options). */
#include "zoo/train/finetune_internal.h"
#include "zoo/pictures/svg.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const CliOption finetune_options[] = {
    {"--model", "DIR", NULL, "pretrained model directory (config.json, model.safetensors, "
                             "vocab.txt); its encoder is loaded, the new head initialised"},
    {"--config", "C.json", NULL, "train from scratch with this config (needs --vocab)"},
    {"--vocab", "V.txt", NULL, "WordPiece vocabulary for --config"},
    {"--train", "FILE", NULL, "training data: .csv, .tsv or .jsonl with a header / keys; "
                              "token-cls also CoNLL columns (.conll, .txt)"},
    {"--eval", "FILE", NULL, "held-out data (default: 10 % of --train, after shuffling)"},
    {"--task", "TASK", "seq-cls", "seq-cls, multi-label (labels 'a|b'), regression, token-cls, "
                                  "qa or mlm (no labels)"},
    {"--out", "DIR", NULL, "output model directory (created; one holding anything needs "
                           "--force, or is the --model; see --force)"},
    {"--text-column", "NAME", "text", "column of the text ('sentence' if there is no 'text'; "
                                      "token-cls: 'tokens', a list of words; qa: 'question')"},
    {"--text-pair-column", "NAME", NULL, "column of the second text of a pair (qa: 'context')"},
    {"--label-column", "NAME", "label", "column of the label (token-cls: 'tags', a list; qa: "
                                        "'answers.text', with answers.answer_start)"},
    {"--steps", "N", NULL, "optimizer steps (default: --epochs over the training rows)"},
    {"--epochs", "N", "3", "passes over the training rows, when --steps is not given"},
    {"--batch-size", "N", "16", "examples a step"},
    {"--lr", "X", NULL, "peak learning rate [default: 5e-5 with --model, 5e-4 from scratch]"},
    {"--max-len", "N", "128", "tokens an example is truncated to (qa: a window's tokens)"},
    {"--doc-stride", "N", NULL, "qa: context tokens two windows of a long context share "
                                "[default: min(128, max-len / 2), capped to fit], as run_qa"},
    {"--seed", "S", "42", "shuffling, the held-out split, the new head's init, dropout"},
    {"--eval-every", "N", NULL, "steps between evaluations [default: a tenth of the run]"},
    {"--patience", "N", "0", "stop after N evaluations in a row without a better metric "
                             "(0: never; the best model is kept either way)"},
    {"--force", NULL, NULL, "train into a non-empty --out: the new model is written beside it "
                            "(OUT.bertc-staging) and replaces its model files only when the run "
                            "ends with a kept model; Ctrl-C or an error leaves --out as it was"},
    {"--resume", NULL, NULL, "continue the run whose checkpoint is in OUT.bertc-staging, else "
                             "in OUT/checkpoint.safetensors"},
    {"--stop-after", "N", NULL, "stop after N steps as a kill would (to try --resume)"},
    {"--nan-policy", "stop|skip", "stop", "a step with a non-finite loss or gradient: stop the "
                                          "run (the kept model stays), or skip the step"},
    {"--threads", "N", NULL, "worker threads"},
    {"--quiet", NULL, NULL, "no progress bar"},
};

const CliCommand cli_cmd_finetune = {
    .name = "finetune",
    .summary = "train a classifier, tagger, QA or masked-LM model on your own CSV, TSV or JSONL",
    .usage = "(--model DIR | --config C.json --vocab V.txt) --train FILE [--eval FILE] "
             "--task seq-cls|multi-label|regression|token-cls|qa|mlm --out DIR [options]",
    .description = "Builds the label set from the training rows, trains with AdamW, "
                   "evaluates (accuracy and macro-F1; micro-F1; Pearson and MSE), keeps the "
                   "best model in OUT as a Hugging Face directory, writes OUT/log.jsonl and "
                   "OUT/loss.svg. token-cls reads JSONL \"tokens\"/\"tags\" lists or CoNLL "
                   "columns (.conll, .txt: word first, tag last) and "
                   "scores entity F1; qa reads SQuAD-style JSONL (question, context, "
                   "answers.text, answers.answer_start) and scores SQuAD F1 and exact match; "
                   "mlm masks 15 % of the tokens of unlabelled text and scores perplexity. "
                   "See docs/finetune.md.",
    .options = finetune_options,
    .n_options = (int)(sizeof finetune_options / sizeof finetune_options[0]),
    .example = "bertc finetune --config cfg.json --vocab vocab.txt --train reviews.csv "
               "--task seq-cls --out model --epochs 5",
};

/* The flags as numbers and names. */
typedef struct FinetuneArgs {
    const char *model, *config, *vocab, *train, *eval, *out;
    const char *text_col, *pair_col, *label_col;
    FinetuneKind kind;
    int64_t steps, epochs, batch_size, max_len, eval_every, patience, stop_after;
    int64_t doc_stride;       /* -1: the default */
    double lr;
    uint64_t seed;
    TrainNanPolicy nan_policy;
    bool resume, quiet, force, max_len_given;
} FinetuneArgs;

static const char *value(const CliArgs *a, const char *name)
{
    return cli_value(&cli_cmd_finetune, a, name);
}

static int count_flag(const CliArgs *a, const char *name, int64_t min, int64_t *out,
                      BertcError *err)
{
    const char *v = value(a, name);
    char shown[BERTC_SHOWN];
    if (v && !bertc_parse_i64(v, min, TRAIN_MAX_STEPS, out))
        return bertc_errorf(err, "%s needs a whole number from %lld to %lld, got '%s'", name,
                            (long long)min, TRAIN_MAX_STEPS, bertc_shown(v, shown));
    return 0;
}

static int parse_task(const char *task, FinetuneKind *kind, BertcError *err)
{
    char shown[BERTC_SHOWN];
    if (strcmp(task, "seq-cls") == 0)
        *kind = FT_SEQ_CLS;
    else if (strcmp(task, "multi-label") == 0)
        *kind = FT_MULTI_LABEL;
    else if (strcmp(task, "regression") == 0)
        *kind = FT_REGRESSION;
    else if (strcmp(task, "token-cls") == 0)
        *kind = FT_TOKEN_CLS;
    else if (strcmp(task, "qa") == 0)
        *kind = FT_QA;
    else if (strcmp(task, "mlm") == 0)
        *kind = FT_MLM;
    else
        return bertc_errorf(err, "--task must be seq-cls, multi-label, regression, token-cls, "
                            "qa or mlm, got '%s'", bertc_shown(task, shown));
    return 0;
}

static int parse_args(const CliArgs *a, FinetuneArgs *f, BertcError *err)
{
    *f = (FinetuneArgs){.model = value(a, "--model"), .config = value(a, "--config"),
                        .vocab = value(a, "--vocab"), .train = value(a, "--train"),
                        .eval = value(a, "--eval"), .out = value(a, "--out"),
                        .text_col = value(a, "--text-column"),
                        .pair_col = value(a, "--text-pair-column"),
                        .label_col = value(a, "--label-column"),
                        .resume = cli_given(&cli_cmd_finetune, a, "--resume"),
                        .quiet = cli_given(&cli_cmd_finetune, a, "--quiet"),
                        .force = cli_given(&cli_cmd_finetune, a, "--force"),
                        .max_len_given = cli_given(&cli_cmd_finetune, a, "--max-len")};
    if (parse_task(value(a, "--task"), &f->kind, err) != 0)
        return -1;
    if (f->kind == FT_TOKEN_CLS && !cli_given(&cli_cmd_finetune, a, "--text-column"))
        f->text_col = "tokens";
    if (f->kind == FT_TOKEN_CLS && !cli_given(&cli_cmd_finetune, a, "--label-column"))
        f->label_col = "tags";
    if (f->kind == FT_QA && !cli_given(&cli_cmd_finetune, a, "--text-column"))
        f->text_col = "question";
    if (f->kind == FT_QA && !cli_given(&cli_cmd_finetune, a, "--text-pair-column"))
        f->pair_col = "context";
    if (f->kind == FT_QA && !cli_given(&cli_cmd_finetune, a, "--label-column"))
        f->label_col = "answers.text";
    if (!f->train || !f->out)
        return bertc_errorf(err, "%s is required (see bertc finetune --help)",
                            f->train ? "--out" : "--train");
    if (!f->model == !f->config)
        return bertc_errorf(err, "give either --model DIR or --config C.json with --vocab");
    if (f->config && !f->vocab)
        return bertc_errorf(err, "--config needs --vocab V.txt (the tokenizer's vocabulary)");
    if (f->model && f->vocab)
        return bertc_errorf(err, "--vocab goes with --config; --model DIR has its vocab.txt");
    if (cli_given(&cli_cmd_finetune, a, "--steps") && cli_given(&cli_cmd_finetune, a, "--epochs"))
        return bertc_errorf(err, "give --steps or --epochs, not both");
    const char *lr = value(a, "--lr"), *seed = value(a, "--seed");
    char shown[BERTC_SHOWN];
    f->lr = f->model ? 5e-5 : 5e-4;
    if (lr && !(bertc_parse_f64(lr, &f->lr) && f->lr > 0))
        return bertc_errorf(err, "--lr needs a number > 0, got '%s'", bertc_shown(lr, shown));
    if (!bertc_parse_u64(seed, &f->seed))
        return bertc_errorf(err, "--seed needs a whole number >= 0, got '%s'",
                            bertc_shown(seed, shown));
    if (count_flag(a, "--steps", 1, &f->steps, err) || count_flag(a, "--epochs", 1, &f->epochs, err) ||
        count_flag(a, "--batch-size", 1, &f->batch_size, err) ||
        count_flag(a, "--max-len", 3, &f->max_len, err) ||
        count_flag(a, "--eval-every", 1, &f->eval_every, err) ||
        count_flag(a, "--patience", 0, &f->patience, err) ||
        count_flag(a, "--stop-after", 1, &f->stop_after, err))
        return -1;
    f->doc_stride = -1;
    if (count_flag(a, "--doc-stride", 0, &f->doc_stride, err))
        return -1;
    if (f->doc_stride >= 0 && f->kind != FT_QA)
        return bertc_errorf(err, "--doc-stride goes with --task qa");
    if (f->batch_size > TRAIN_MAX_BATCH)
        return bertc_errorf(err, "--batch-size must be at most %d", TRAIN_MAX_BATCH);
    const char *nan = value(a, "--nan-policy");
    if (strcmp(nan, "stop") != 0 && strcmp(nan, "skip") != 0)
        return bertc_errorf(err, "--nan-policy needs stop or skip, got '%s'",
                            bertc_shown(nan, shown));
    f->nan_policy = strcmp(nan, "skip") == 0 ? TRAIN_NAN_SKIP : TRAIN_NAN_STOP;
    return cli_apply_threads(&cli_cmd_finetune, a, err);
}

/* ---- the base model and its tokenizer ----------------------------------- */

typedef struct Base {
    BertConfig cfg;
    Tokenizer tok;
    char weights[BERTC_PATH_MAX];   /* "" from scratch */
    Arena *arena;             /* what --model DIR opened */
} Base;

static bool is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* --model DIR: its config, tokenizer (tokenizer_config.json applied) and
 * weights; --config + --vocab: those. */
static int open_base(const FinetuneArgs *f, Base *b, BertcError *err)
{
    b->weights[0] = '\0';
    b->arena = bertc_arena_create("base model", 1 << 20);
    if (f->config)
        return bertc_bert_config_read(f->config, &b->cfg, err) != 0 ||
                       bertc_tokenizer_load(&b->tok, b->arena, f->vocab, err) != 0
                   ? -1
                   : 0;
    ModelDir *d = bertc_arena_alloc(b->arena, sizeof *d);
    if (bertc_model_dir_open(d, b->arena, f->model, err) != 0)
        return -1;
    if (!d->has_tokenizer)
        return bertc_errorf(err, "%s: no vocab.txt in the model directory (finetune needs the "
                            "tokenizer)", f->model);
    b->cfg = d->model.cfg;
    b->tok = d->tok;
    if (d->has_weights)
        return bertc_path_join(b->weights, f->model, "model.safetensors", "--model", err);
    return 0;
}

/* The base config as BertForSequenceClassification with the task's labels:
 * num_labels, problem_type, id2label, a pooler (the head reads it). */
static int head_config(const Base *b, const FinetuneData *data, BertConfig *cfg, BertcError *err)
{
    BertConfig fresh;
    if (bertc_model_config_default(&fresh, "BertForSequenceClassification", err) != 0)
        return -1;
    *cfg = b->cfg;   /* keep the encoder's keys; take the head's name and own keys */
    memcpy(cfg->architecture, fresh.architecture, sizeof cfg->architecture);
    cfg->model = fresh.model;
    cfg->add_pooling_layer = true;
    cfg->n_label_names = 0;   /* the base's names stay the base's (b frees them) */
    cfg->label_spill = NULL;
    cfg->label_heap = false;
    if (data->kind == FT_MLM) {   /* no pooler, as HF's BertForMaskedLM */
        snprintf(cfg->architecture, sizeof cfg->architecture, "BertForMaskedLM");
        cfg->add_pooling_layer = false;
        cfg->problem_type = PROBLEM_UNSET;
    } else if (data->kind == FT_QA) {   /* no pooler, as HF's span head */
        snprintf(cfg->architecture, sizeof cfg->architecture, "BertForQuestionAnswering");
        cfg->add_pooling_layer = false;
        cfg->num_labels = 2;
        cfg->problem_type = PROBLEM_UNSET;
    } else if (data->kind == FT_TOKEN_CLS) {   /* no pooler, as HF's token classifier */
        snprintf(cfg->architecture, sizeof cfg->architecture, "BertForTokenClassification");
        cfg->add_pooling_layer = false;
        cfg->num_labels = data->labels.n;
        cfg->problem_type = PROBLEM_UNSET;
        if (bertc_bert_config_set_labels(cfg, data->labels.names, data->labels.n, err) != 0)
            return -1;
    } else if (data->kind == FT_REGRESSION) {
        cfg->num_labels = 1;
        cfg->problem_type = PROBLEM_REGRESSION;
    } else {
        cfg->num_labels = data->labels.n;
        cfg->problem_type = data->kind == FT_SEQ_CLS ? PROBLEM_SINGLE_LABEL : PROBLEM_MULTI_LABEL;
        if (bertc_bert_config_set_labels(cfg, data->labels.names, data->labels.n, err) != 0)
            return -1;
    }
    if (b->tok.V > cfg->vocab_size)
        return bertc_errorf(err, "%s has %d tokens but the config's vocab_size is %d",
                            b->tok.name, (int)b->tok.V, cfg->vocab_size);
    if (!b->weights[0] && b->tok.V < cfg->vocab_size)   /* rows no token could ever reach */
        return bertc_errorf(err, "%s has %d tokens but the config's vocab_size is %d: set "
                            "vocab_size to %d for a model trained from scratch", b->tok.name,
                            (int)b->tok.V, cfg->vocab_size, (int)b->tok.V);
    return 0;
}

/* Build, draw the init (seed), load the encoder from the base weights. */
static int build_model(const Base *b, const BertConfig *cfg, uint64_t seed, Model *m,
                       Arena *arena, BertcError *err)
{
    if (cfg->int8_dynamic)
        return bertc_errorf(err, "%s: the model is quantised to int8 (its config.json has a "
                            "quantization_config), which is for inference only: fine-tune its "
                            "float32 original", b->weights[0] ? b->weights : "--model");
    if (bertc_model_build(m, arena, cfg, err) != 0)
        return -1;
    Rng init = bertc_rng_seed(seed);
    bertc_registry_init_weights(m->reg, &init, cfg->initializer_range);
    if (!b->weights[0])
        return 0;
    /* the missing keys (the new head) are listed by the loader's warning */
    return bertc_model_load(m, b->weights, true, err);
}

/* ---- the data ----------------------------------------------------------- */

typedef struct Columns {
    int text, pair, label;
} Columns;

static int find_columns(const FinetuneArgs *f, const Dataset *d, Columns *c, BertcError *err)
{
    const char *text[2] = {f->text_col, "sentence"};
    /* the default "text" falls back to "sentence" (GLUE's files) */
    int n = strcmp(f->text_col, "text") == 0 ? 2 : 1;
    c->pair = c->label = -1;
    if ((c->text = bertc_dataset_column_of(d, text, n, err)) < 0 ||
        (f->kind != FT_MLM && (c->label = bertc_dataset_column(d, f->label_col, err)) < 0))
        return -1;
    if (f->pair_col && (c->pair = bertc_dataset_column(d, f->pair_col, err)) < 0)
        return -1;
    return 0;
}

/* token-cls: the words of the examples in the order `order`. */
static void shuffle_words(FinetuneData *data, const int64_t *order, Arena *arena)
{
    int64_t n = data->n, W = data->word_off[n];
    int64_t *off = bertc_arena_alloc(arena, sizeof *off * (size_t)(n + 1));
    int32_t *cp = bertc_arena_alloc(arena, sizeof *cp * (size_t)W);
    int32_t *tag = bertc_arena_alloc(arena, sizeof *tag * (size_t)W);
    off[0] = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t from = data->word_off[order[i]], nw = data->word_off[order[i] + 1] - from;
        memcpy(cp + off[i], data->word_cp + from, sizeof *cp * (size_t)nw);
        memcpy(tag + off[i], data->word_tag + from, sizeof *tag * (size_t)nw);
        off[i + 1] = off[i] + nw;
    }
    data->word_off = off;
    data->word_cp = cp;
    data->word_tag = tag;
}

/* Train rows, then eval rows: shuffled with the seed and split 90/10 when
 * there is no eval file. */
static void shuffle_split(FinetuneData *data, uint64_t seed, bool has_eval, Arena *arena)
{
    if (has_eval)
        return;   /* the engine shuffles the training rows every epoch */
    int64_t n = data->n, C = data->kind == FT_MULTI_LABEL ? data->labels.n : 1;
    int64_t *order = bertc_arena_alloc(arena, sizeof *order * (size_t)n);
    bertc_train_epoch_order(order, n, seed, -1);
    TextExample *ex = bertc_arena_alloc(arena, sizeof *ex * (size_t)n);
    int32_t *label = bertc_arena_alloc(arena, sizeof *label * (size_t)n);
    float *target = bertc_arena_alloc(arena, sizeof *target * (size_t)(n * C));
    for (int64_t i = 0; i < n; i++) {
        ex[i] = data->ex[order[i]];
        label[i] = data->label[order[i]];
        memcpy(target + i * C, data->target + order[i] * C, sizeof *target * (size_t)C);
    }
    const char **origin = bertc_arena_alloc(arena, sizeof *origin * (size_t)n);
    for (int64_t i = 0; i < n; i++)
        origin[i] = data->origin[order[i]];
    data->origin = origin;
    const char **answers = bertc_arena_alloc(arena, sizeof *answers * (size_t)n);
    int32_t *span = bertc_arena_alloc(arena, sizeof *span * (size_t)(2 * n));
    for (int64_t i = 0; i < n; i++) {
        answers[i] = data->answers[order[i]];
        span[2 * i] = data->span[2 * order[i]];
        span[2 * i + 1] = data->span[2 * order[i] + 1];
    }
    data->answers = answers;
    data->span = span;
    data->ex = ex;
    data->label = label;
    data->target = target;
    data->n_train = n - n / 10;
    if (data->kind == FT_TOKEN_CLS)
        shuffle_words(data, order, arena);
}

/* token-cls: the words of a '|'-joined column, over all rows. */
static int64_t count_words(const Dataset *d, int column)
{
    int64_t W = 0;
    for (int64_t i = 0; i < d->n_rows; i++) {
        const char *c = bertc_dataset_cell(d, i, column);
        for (W += c && *c ? 1 : 0; c && *c; c++)
            W += *c == '|';
    }
    return W;
}

static void alloc_rows(FinetuneData *data, int64_t n, int64_t W, Arena *arena)
{
    data->word_off = bertc_arena_calloc(arena, (size_t)n + 1, sizeof *data->word_off);
    data->word_cp = bertc_arena_alloc(arena, sizeof(int32_t) * (size_t)(W + 1));
    data->word_tag = bertc_arena_alloc(arena, sizeof(int32_t) * (size_t)(W + 1));
    data->pred_tag = bertc_arena_alloc(arena, sizeof(int32_t) * (size_t)(W + 1));
    data->answers = bertc_arena_calloc(arena, (size_t)n, sizeof *data->answers);
    data->span = bertc_arena_calloc(arena, 2 * (size_t)n, sizeof *data->span);
    int64_t C = data->labels.n;
    data->n = n;
    data->ex = bertc_arena_alloc(arena, sizeof *data->ex * (size_t)n);
    data->origin = bertc_arena_alloc(arena, sizeof *data->origin * (size_t)n);
    data->label = bertc_arena_calloc(arena, (size_t)n, sizeof *data->label);
    data->target = bertc_arena_calloc(arena, (size_t)(n * C), sizeof *data->target);
    data->pred_class = bertc_arena_alloc(arena, sizeof(int32_t) * (size_t)n);
    data->pred_value = bertc_arena_alloc(arena, sizeof(float) * (size_t)n);
    data->pred_set = bertc_arena_alloc(arena, (size_t)(n * C));
    data->gold_set = bertc_arena_alloc(arena, (size_t)(n * C));
}

/* "train.csv:7" for rows first.. of data, from d's lines. */
static void name_rows(FinetuneData *data, int64_t first, const Dataset *d, Arena *arena)
{
    for (int64_t i = 0; i < d->n_rows; i++) {
        int n = snprintf(NULL, 0, "%s:%lld", d->name, (long long)d->line[i]);
        char *s = bertc_arena_alloc(arena, (size_t)n + 1);
        snprintf(s, (size_t)n + 1, "%s:%lld", d->name, (long long)d->line[i]);
        data->origin[first + i] = s;
    }
}

/* qa: question, context, answers.text and (beside it) answers.answer_start. */
static int qa_columns(const FinetuneArgs *f, const Dataset *d, int *col, BertcError *err)
{
    char start[300];
    const char *dot = strrchr(f->label_col, '.');
    snprintf(start, sizeof start, "%.*sanswer_start", dot ? (int)(dot - f->label_col + 1) : 0,
             f->label_col);
    const char *names[4] = {f->text_col, f->pair_col, f->label_col, start};
    for (int k = 0; k < 4; k++)
        if ((col[k] = bertc_dataset_column(d, names[k], err)) < 0)
            return -1;
    return 0;
}

static int qa_rows(const FinetuneArgs *f, FinetuneData *data, const Dataset *train,
                   const Dataset *eval, BertcError *err)
{
    int col[4];
    if (qa_columns(f, train, col, err) != 0 || finetune_qa_rows(data, 0, train, col, err) != 0)
        return -1;
    return eval && (qa_columns(f, eval, col, err) != 0 ||
                    finetune_qa_rows(data, train->n_rows, eval, col, err) != 0)
               ? -1
               : 0;
}

/* A data file; token-cls reads a .txt file as CoNLL columns. */
static int read_data(const FinetuneArgs *f, Dataset *d, Arena *arena, const char *path,
                     BertcError *err)
{
    size_t n = strlen(path);
    if (f->kind == FT_TOKEN_CLS && n >= 4 && strcmp(path + n - 4, ".txt") == 0)
        return bertc_dataset_read_format(d, arena, path, DATASET_CONLL, err);
    return bertc_dataset_read(d, arena, path, err);
}

static int load_data(const FinetuneArgs *f, FinetuneData *data, Arena *arena, BertcError *err)
{
    Dataset train, eval;
    Columns ct, ce;
    if (read_data(f, &train, arena, f->train, err) != 0 ||
        find_columns(f, &train, &ct, err) != 0)
        return -1;
    data->kind = f->kind;
    data->name = f->train;
    data->seed = f->seed;
    if (f->kind == FT_REGRESSION || f->kind == FT_QA || f->kind == FT_MLM)
        data->labels = (LabelSet){.n = 1};
    else if (bertc_label_set_build(&data->labels, arena, &train, ct.label,
                                   f->kind == FT_MULTI_LABEL || f->kind == FT_TOKEN_CLS, err) != 0)
        return -1;
    if (f->kind == FT_SEQ_CLS && data->labels.n < 2)
        return bertc_errorf(err, "%s: one label ('%s') in column '%s': a classifier needs two "
                            "or more", f->train, data->labels.names[0], f->label_col);
    int64_t n_eval = 0;
    if (f->eval) {
        if (read_data(f, &eval, arena, f->eval, err) != 0 ||
            find_columns(f, &eval, &ce, err) != 0)
            return -1;
        n_eval = eval.n_rows;
    }
    bool tokens = f->kind == FT_TOKEN_CLS;
    int64_t W = tokens ? count_words(&train, ct.text) + (f->eval ? count_words(&eval, ce.text) : 0)
                       : 0;
    alloc_rows(data, train.n_rows + n_eval, W, arena);
    data->n_train = train.n_rows;
    name_rows(data, 0, &train, arena);
    if (f->eval)
        name_rows(data, train.n_rows, &eval, arena);
    if (f->kind == FT_QA)
        return qa_rows(f, data, &train, f->eval ? &eval : NULL, err) != 0 ? -1
               : (shuffle_split(data, f->seed, f->eval != NULL, arena), 0);
    if (tokens ? finetune_token_rows(data, 0, &train, ct.text, ct.label, arena, err) != 0 ||
                     (f->eval && finetune_token_rows(data, train.n_rows, &eval, ce.text, ce.label,
                                                     arena, err) != 0)
               : finetune_add_rows(data, 0, &train, ct.text, ct.pair, ct.label, err) != 0 ||
                     (f->eval && finetune_add_rows(data, train.n_rows, &eval, ce.text, ce.pair,
                                                   ce.label, err) != 0))
        return -1;
    shuffle_split(data, f->seed, f->eval != NULL, arena);
    if (data->n_train < 1)
        return bertc_errorf(err, "%s: too few rows to train on", f->train);
    return 0;
}

/* ---- the run ------------------------------------------------------------ */

/* trainer_state.json: the best metric and the plateau so far, so that a
 * resumed run keeps the model it saved unless it beats it. */
static int read_state(const char *path, FinetuneData *data, BertcError *err)
{
    Arena *a;
    char *text;
    size_t n;
    JsonDoc *doc;
    int64_t bad = 0;
    int rc = bertc_read_file(path, 1 << 16, "a trainer_state.json", &a, &text, &n, err);
    if (rc == 0)
        rc = bertc_json_parse(a, path, text, n, &doc, err);
    if (rc == 0)
        rc = bertc_json_get_double(doc->root, "best_metric", &data->best, err) ||
             bertc_json_get_int(doc->root, "bad_evals", &bad, err);
    data->bad_evals = bad;
    /* -1e308 (write_state): no evaluation kept a model yet */
    data->saved = rc == 0 && data->best > -1e308;
    if (!data->saved)
        data->best = -INFINITY;
    if (a)
        bertc_arena_destroy(a);
    return rc == 0 ? 0 : -1;
}

static int write_state(const char *path, const FinetuneData *data, BertcError *err)
{
    FILE *fp = bertc_open_write(path, err);
    if (!fp)
        return -1;
    const char *metric = finetune_metric_name(data->kind);
    fprintf(fp, "{\"best_metric\": %.17g, \"bad_evals\": %lld, \"metric\": ",
            isfinite(data->best) ? data->best : -1e308, (long long)data->bad_evals);
    cli_json_string(fp, metric, strlen(metric));
    fputs("}\n", fp);
    return fclose(fp) == 0 ? 0 : bertc_errorf(err, "%s: write failed", path);
}

/* The batch size, capped at the training examples (a bigger batch would
 * only repeat them: memory for nothing), and the steps of --epochs, which
 * must be a number of steps the engine takes. */
static int run_size(const FinetuneArgs *f, const FinetuneData *data, TrainOptions *opt,
                    BertcError *err)
{
    int64_t n = data->kind == FT_QA ? data->n_feat_train : data->n_train;   /* qa: windows */
    const char *what = data->kind == FT_QA ? "training windows" : "training rows";
    opt->batch_size = f->batch_size;
    if (n < 1)
        return 0;   /* the engine refuses a task without examples */
    if (f->batch_size > n) {
        fprintf(stderr, "bertc finetune: note: --batch-size %lld is more than the %lld %s: "
                "batches of %lld\n", (long long)f->batch_size, (long long)n, what, (long long)n);
        opt->batch_size = n;
    }
    int64_t per_epoch = (n + opt->batch_size - 1) / opt->batch_size;
    opt->steps = f->steps;
    if (!f->steps && f->epochs > TRAIN_MAX_STEPS / per_epoch)
        return bertc_errorf(err, "--epochs %lld over %lld %s in batches of %lld is more than "
                            "%lld steps; give fewer --epochs", (long long)f->epochs,
                            (long long)n, what, (long long)opt->batch_size, TRAIN_MAX_STEPS);
    if (!f->steps)
        opt->steps = f->epochs * per_epoch;
    return 0;
}

/* What --resume must find the same beside the engine's own fields: the
 * examples' length and (qa) the windows' stride. */
typedef struct TaskFields {
    char text[2][32];
    StMetadata meta[2];
} TaskFields;

/* The run's settings (opt->task_fields point into *fields). */
static int train_options(const FinetuneArgs *f, const FinetuneData *data, const char *checkpoint,
                         TaskFields *fields, TrainOptions *opt, BertcError *err)
{
    *opt = bertc_train_defaults();
    if (run_size(f, data, opt, err) != 0)
        return -1;
    opt->lr = f->lr;
    opt->warmup = 0.1;
    opt->weight_decay = 0.01;
    opt->seed = f->seed;
    opt->eval_every = f->eval_every ? f->eval_every : (opt->steps >= 10 ? opt->steps / 10 : 1);
    opt->checkpoint = checkpoint;
    opt->checkpoint_every = opt->eval_every;
    opt->stop_after = f->stop_after;
    opt->resume = f->resume;
    opt->quiet = f->quiet;
    opt->nan_policy = f->nan_policy;
    snprintf(fields->text[0], sizeof fields->text[0], "%d", (int)data->max_len);
    snprintf(fields->text[1], sizeof fields->text[1], "%d", (int)data->doc_stride);
    fields->meta[0] = (StMetadata){"max_len", fields->text[0]};
    fields->meta[1] = (StMetadata){"doc_stride", fields->text[1]};
    opt->task_fields = fields->meta;
    opt->n_task_fields = data->kind == FT_QA ? 2 : 1;
    return 0;
}

/* log.jsonl (appended to on --resume), trainer_state.json, loss.svg and,
 * when the run is done and no evaluation saved one, the final model. A run
 * cut short (Ctrl-C, --stop-after) writes no model that was never
 * evaluated: its checkpoint holds the weights. */
static int write_outputs(const FinetuneArgs *f, const char *dir, FinetuneData *data,
                         const Model *m, const TrainResult *res, bool done, BertcError *err)
{
    char path[BERTC_PATH_MAX];
    if (bertc_path_join(path, dir, "log.jsonl", "--out", err) != 0)
        return -1;
    FILE *log = f->resume ? bertc_open_append(path, err) : bertc_open_write(path, err);
    if (!log)
        return -1;
    finetune_write_log(data, res, log);
    if (fclose(log) != 0)
        return bertc_errorf(err, "%s: write failed", path);
    if (bertc_path_join(path, dir, "trainer_state.json", "--out", err) != 0 ||
        write_state(path, data, err) != 0 ||
        bertc_path_join(path, dir, "loss.svg", "--out", err) != 0)
        return -1;
    if (res->n_points && bertc_svg_loss_curve(path, res, "bertc finetune", err) != 0)
        return -1;
    if (done && !data->saved && bertc_model_dir_save(dir, m, data->tok, err) != 0)
        return -1;
    return 0;
}

static void report(const FinetuneOut *o, const FinetuneData *data, const TrainResult *res,
                   const TrainOptions *opt)
{
    double base = finetune_majority_baseline(data);
    if (res->steps_done < opt->steps && !res->stopped_early) {   /* --stop-after */
        printf("stopped after step %lld of %lld (--stop-after); the checkpoint is in %s: "
               "--resume continues the run\n", (long long)res->steps_done,
               (long long)opt->steps, o->dir);
        return;
    }
    printf("trained %lld steps%s in %.0f s (%.0f tokens/s); %lld train, %lld held-out rows\n",
           (long long)res->steps_done, res->stopped_early ? " (stopped early: plateau)" : "",
           res->seconds, res->tokens_per_second, (long long)data->n_train,
           (long long)(data->n - data->n_train));
    if (data->n > data->n_train)
        printf("best held-out %s %.4f", finetune_metric_name(data->kind),
               data->kind == FT_MLM ? -data->best : data->best);
    if (!isnan(base))
        printf(" (majority-class baseline %.4f)", base);
    printf("%ssaved %s (config.json, model.safetensors, vocab.txt, tokenizer_config.json, "
           "log.jsonl, loss.svg)\n", data->n > data->n_train ? "\n" : "", o->out);
}

/* The examples' length: --max-len, at most max_position_embeddings (the
 * default is lowered to it; a --max-len given above it is refused); refused
 * in one line naming what set it when that leaves no room for the special
 * tokens of the rows (3 when they have a pair); qa's --doc-stride as given. */
static int max_len(const FinetuneArgs *f, const BertConfig *cfg, FinetuneData *data,
                   Arena *arena, BertcError *err)
{
    int64_t positions = cfg->max_position_embeddings;
    if (f->max_len_given && f->max_len > positions)
        return bertc_errorf(err, "--max-len %lld is more than the model's "
                            "max_position_embeddings (%lld)", (long long)f->max_len,
                            (long long)positions);
    MaxLen m = {.n = (int32_t)f->max_len, .key = "--max-len"};
    if (positions < f->max_len) {
        const char *config = f->config;
        if (!config) {
            size_t n = strlen(f->model) + sizeof "/config.json";
            char *path = bertc_arena_alloc(arena, n);
            snprintf(path, n, "%s/config.json", f->model);
            config = path;
        }
        m = (MaxLen){.n = (int32_t)positions, .key = "max_position_embeddings", .file = config};
    }
    int specials = 2;
    for (int64_t i = 0; i < data->n; i++)
        if (data->ex[i].text_pair)
            specials = 3;
    data->max_len = m.n;
    data->doc_stride = (int32_t)f->doc_stride;
    return bertc_max_len_room(&m, specials, err);
}

/* What is checked before anything is written (with train_options, the
 * run's size): the base model, the data, the head, --max-len, --out
 * (finetune_out_plan), trainer_state.json, the qa windows. */
static int prepare(const FinetuneArgs *f, Base *base, FinetuneData *data, Model *m,
                   FinetuneOut *o, Arena *arena, BertcError *err)
{
    BertConfig cfg = {0};
    char state[BERTC_PATH_MAX];
    int rc = open_base(f, base, err) != 0 || load_data(f, data, arena, err) != 0 ||
             head_config(base, data, &cfg, err) != 0 || max_len(f, &cfg, data, arena, err) != 0 ||
             build_model(base, &cfg, f->seed, m, arena, err) != 0 ||
             finetune_out_plan(o, f->out, f->model, f->force, f->resume, err) != 0 ||
             bertc_path_join(state, o->dir, "trainer_state.json", "--out", err) != 0 ||
             (f->resume && is_file(state) && read_state(state, data, err) != 0);
    bertc_bert_config_free(&cfg);   /* the model keeps its own copy of the label names */
    if (rc)
        return -1;
    data->out = o->dir;
    data->tok = &base->tok;
    data->model = m;
    return data->kind == FT_QA ? finetune_qa_windows(data, arena, err) : 0;
}

static int train(const FinetuneArgs *f, Arena *arena, FinetuneOut *o, BertcError *err)
{
    Base base = {0};
    FinetuneData *data = bertc_arena_calloc(arena, 1, sizeof *data);
    Model m;
    TrainResult res;
    TrainOptions opt;
    char checkpoint[BERTC_PATH_MAX];
    TaskFields fields;
    *data = (FinetuneData){.patience = f->patience, .best = -INFINITY, .best_eval = -1};
    int rc = prepare(f, &base, data, &m, o, arena, err) != 0;
    if (rc == 0) {
        rc = bertc_path_join(checkpoint, o->dir, "checkpoint.safetensors", "--out", err) != 0 ||
             train_options(f, data, checkpoint, &fields, &opt, err) != 0 ||
             finetune_out_make(o, f->resume, err) != 0;
    }
    if (rc == 0) {
        TrainTask task = finetune_task(data);
        int run = bertc_train_run(&m, &task, &opt, &res, err);
        /* done: every step, or a plateau; anything else keeps no model */
        bool done = run == 0 && (res.stopped_early || res.steps_done == opt.steps);
        if (run == 0 || res.interrupted) {
            BertcError out_err;
            rc = write_outputs(f, o->dir, data, &m, &res, done, &out_err) != 0 ||
                 (done && finetune_out_commit(o, &out_err) != 0);
            if (rc && run == 0)
                *err = out_err;
        }
        rc = rc || run != 0;
        if (rc == 0)
            report(o, data, &res, &opt);
    }
    if (base.arena)
        bertc_arena_destroy(base.arena);
    bertc_bert_config_free(&base.cfg);
    return rc ? -1 : 0;
}

int cmd_finetune(int argc, char **argv)
{
    CliArgs a;
    FinetuneArgs f;
    BertcError err;
    if (cli_parse(&cli_cmd_finetune, argc, argv, &a, &err) != 0) {
        fprintf(stderr, "bertc finetune: %s\n", err.msg);
        return 2;
    }
    if (a.help) {
        cli_print_help(&cli_cmd_finetune, stdout);
        return 0;
    }
    if (parse_args(&a, &f, &err) != 0) {
        fprintf(stderr, "bertc finetune: %s\n", err.msg);
        return 2;
    }
    Arena *arena = bertc_arena_create("finetune", 1 << 20);
    FinetuneOut out = {0};
    int rc = train(&f, arena, &out, &err);
    bertc_arena_destroy(arena);
    if (rc != 0)
        fprintf(stderr, "bertc finetune: %s\n", err.msg);
    finetune_out_note(&out, stderr);
    if (rc == 0)
        return 0;
    return bertc_train_stop_signal() ? 128 + bertc_train_stop_signal() : 1;
}
