/* cli/predict.c — bertc predict: one result per input, for the task the
 * model's architecture declares (ModelArch.task). Each task
 * reads its outputs, turns them into labels, entities, spans or tokens with
 * the library's pipeline steps, and prints them as TSV or JSONL
 * (cli/predict_print.c). docs/predict.md shows each format. */
#include "cli/predict.h"

#include <string.h>

static const CliOption predict_options[] = {
    {"--model", "DIR", NULL, "a model directory: config.json, model.safetensors, vocab.txt, "
     "tokenizer_config.json"},
    {"--config", "C.json", NULL, "instead of --model: config.json (with --weights, --vocab)"},
    {"--weights", "W.safetensors", NULL, "instead of --model: the weights"},
    {"--vocab", "V.txt", NULL, "instead of --model: the vocabulary"},
    {"--input", "FILE", NULL, "the inputs: plain text, one a line (a TAB is text, unless "
     "--pair), or a .tsv/.csv/.jsonl table with a text (and text_pair) column; - reads "
     "standard input"},
    {"--input-format", "text|tsv|csv|jsonl", NULL, cli_help_input_format},
    {"--text-column", "NAME", NULL, cli_help_text_column},
    {"--text-pair-column", "NAME", NULL, cli_help_text_pair_column},
    {"--pair", NULL, NULL, "inputs are pairs: positionals two by two (TEXT TEXT_PAIR ...), "
     "a plain-text line TEXT<TAB>TEXT_PAIR (question answering: always)"},
    {"--format", "tsv|jsonl", "tsv", "the output lines (docs/predict.md)"},
    {"--top-k", "K", NULL, "classification: the K best labels; fill-mask: tokens per [MASK] "
     "(default 5); summarization: sentences kept (default 3)"},
    {"--max-len", "N", NULL, "tokens per input (default: model_max_length); longer inputs are "
     "truncated with a warning (question answering: the window)"},
    {"--batch-size", "N", "8", "sequences per forward, of nearly one length and at most 1,024 "
     "tokens in all (the inputs are sorted by length; the output keeps their order)"},
    {"--threads", "N", NULL, "worker threads (default: BERTC_THREADS, else the cores)"},
    {"--context", "N", NULL, "CGBERT/QACGBERT: the context (aspect or target) id of every input"},
    {"--stride", "N", NULL, "classification: read a text longer than --max-len whole, in "
     "windows sharing N tokens; question answering: tokens two windows of a long context "
     "share (default: min(128, window / 2), HF's doc_stride)"},
    {"--aggregate", "mean|max|first", "mean", "classification with --stride: the text's "
     "logits from its windows' (their mean, their maximum, the first window's)"},
    {"--stats", NULL, NULL, "print inputs, tokens, padding and tokens/s on stderr"},
};

const CliCommand cli_cmd_predict = {
    .name = "predict",
    .summary = "classify texts, tag entities, answer questions, fill [MASK], summarize",
    .usage = "(--model DIR | --config C.json --weights W.safetensors --vocab V.txt) "
             "[--input FILE] [--format tsv|jsonl] [--top-k K] [--pair] [TEXT ...]",
    .description = "The task comes from the model's outputs: sequence classification "
                   "(label, score; long texts truncated, or in windows with --stride), token "
                   "classification (entities with character spans, HF's "
                   "aggregation_strategy=\"simple\"), question answering (QUESTION CONTEXT "
                   "pairs; long contexts in windows), fill-mask (tokens for each [MASK]), "
                   "extractive summarization (BertSum: the best sentences of each text). One "
                   "result per input, in input order; a blank input gives a blank result.",
    .options = predict_options,
    .n_options = sizeof predict_options / sizeof predict_options[0],
    .max_positional = CLI_MAX_POSITIONAL,
    .positional = "TEXT ...",
    .example = "bertc predict --model my-classifier --format jsonl \"a text to classify\" "
               "\"and another\"",
};

/* ---- the results of a chunk of inputs -------------------------------------- */

/* Inputs are run CHUNK_INPUTS at a time: each chunk's sequences sorted by
 * length into batches (cli/text_batches.c), its results kept here by input
 * and printed in input order once the chunk is done. */
#define CHUNK_INPUTS 1024

typedef struct Chunk {
    PredictRun *r;
    const CliText *t;       /* the chunk's inputs */
    int first, n;           /* their indices [first, first + n) among all */
    Arena *arena;           /* the results', for the chunk */
    /* classification: the aggregated logits of each input (n, C), and the
     * windows that went into them */
    float *logits;
    int *windows, C;
    /* token classification */
    Entity **ents;
    int *n_ents;
    /* fill-mask */
    PredictMask **masks;
    int *n_masks;
} Chunk;

const Encoding *predict_batch_encoding(const PredictRun *r, const Batch *b, int i,
                                       BertcError *err)
{
    if (i < b->n_enc)
        return &b->enc[i];
    bertc_errorf(err, "%s (%s): its batch_from_text keeps no encodings (bertc_text_batch_put), "
                 "so bertc predict cannot place its tokens in the text", r->cm->name,
                 r->cm->model->arch->name);
    return NULL;
}

static Var *need_output(const PredictRun *r, const Outputs *out, const char *name, int ndim,
                        BertcError *err)
{
    Var *v = bertc_outputs_get(out, name);
    if (!v || v->value.ndim != ndim) {
        bertc_errorf(err, "%s (%s) gave no %dD output '%s'", r->cm->name,
                     r->cm->model->arch->name, ndim, name);
        return NULL;
    }
    return v;
}

static Var *class_logits(const PredictRun *r, const Outputs *out, int ndim, BertcError *err)
{
    Var *logits = need_output(r, out, "logits", ndim, err);
    if (logits && logits->value.shape[ndim - 1] > r->n_labels) {
        bertc_errorf(err, "%s: logits have %d classes, the config %d labels", r->cm->name,
                     (int)logits->value.shape[ndim - 1], r->n_labels);
        return NULL;
    }
    return logits;
}

/* ---- sequence classification ---------------------------------------------- */

/* Window s's logits into its input's: the first window's, or their running
 * sum (mean) or maximum (max). */
static int seq_cls_row(void *ctx, const CliSeq *s, const Batch *b, const Outputs *out, int row,
                       Graph *g, BertcError *err)
{
    (void)b, (void)g;
    Chunk *ch = ctx;
    Var *v = class_logits(ch->r, out, 2, err);
    if (!v)
        return -1;
    int C = (int)v->value.shape[1];
    ch->C = C;
    const float *z = v->value.data + (int64_t)row * C;
    float *acc = ch->logits + (int64_t)s->input * ch->r->n_labels;
    bertc_windows_add(ch->r->aggregate, acc, z, C, ch->windows[s->input]++, s->window);
    return 0;
}

static void seq_cls_print(Chunk *ch, int i)
{
    float *acc = ch->logits + (int64_t)i * ch->r->n_labels;
    bertc_windows_finish(ch->r->aggregate, acc, ch->C, ch->windows[i]);
    predict_print_classes(ch->r, &ch->t[i], ch->first + i, acc, ch->C);
}

/* ---- token classification ------------------------------------------------- */

static int token_cls_row(void *ctx, const CliSeq *s, const Batch *b, const Outputs *out, int row,
                         Graph *g, BertcError *err)
{
    (void)b, (void)g;
    Chunk *ch = ctx;
    Var *logits = class_logits(ch->r, out, 3, err);
    if (!logits)
        return -1;
    int64_t S = logits->value.shape[1];
    int C = (int)logits->value.shape[2];
    const Encoding *e = &s->enc;
    TokenTag *tags = bertc_arena_alloc(g->step, sizeof *tags * (size_t)(e->n_a + 1));
    float p[C];
    for (int k = 0; k < e->n_a; k++) {   /* text A's tokens: 1 .. n_a (0 is [CLS]) */
        int pos = 1 + k;
        bertc_softmax(logits->value.data + ((int64_t)row * S + pos) * C, C, p);
        int best;
        bertc_top_k(p, C, 1, &best);
        tags[k] = (TokenTag){.label = best, .score = p[best], .start = e->start[pos],
                             .end = e->end[pos], .byte_start = e->byte_start[pos],
                             .byte_end = e->byte_end[pos]};
    }
    Entity *ents = bertc_arena_alloc(ch->arena, sizeof *ents * (size_t)(e->n_a + 1));
    ch->n_ents[s->input] = bertc_group_entities(tags, e->n_a, ch->r->labels, ents);
    ch->ents[s->input] = ents;
    return 0;
}

/* ---- fill-mask -------------------------------------------------------------- */

static int fill_mask_row(void *ctx, const CliSeq *s, const Batch *b, const Outputs *out,
                         int row, Graph *g, BertcError *err)
{
    (void)b;
    Chunk *ch = ctx;
    const PredictRun *r = ch->r;
    Var *logits = bertc_outputs_get(out, "logits");
    if (!logits)
        logits = bertc_outputs_get(out, "prediction_logits");
    if (!logits || logits->value.ndim != 3)
        return bertc_errorf(err, "%s gave no (B, S, V) logits", r->cm->name);
    int64_t S = logits->value.shape[1], V = logits->value.shape[2];
    const Encoding *e = &s->enc;
    int k = r->top_k > 0 ? r->top_k : 5;
    k = k < V ? k : (int)V;
    PredictMask *masks = bertc_arena_alloc(ch->arena, sizeof *masks * (size_t)e->S);
    float *p = bertc_arena_alloc(g->step, sizeof(float) * (size_t)V);
    int n_masks = 0;
    /* the [MASK]s of TEXT (positions 1 .. n_a); the sequences print TEXT */
    for (int32_t pos = 1; pos < 1 + e->n_a; pos++) {
        if (e->input_ids[pos] != r->cm->tok->mask_id)
            continue;
        PredictMask *mk = &masks[n_masks++];
        mk->byte_start = e->byte_start[pos];
        mk->byte_end = e->byte_end[pos];
        bertc_softmax(logits->value.data + ((int64_t)row * S + pos) * V, (int)V, p);
        mk->ids = bertc_arena_alloc(ch->arena, sizeof(int) * (size_t)k);
        mk->k = bertc_top_k(p, (int)V, k, mk->ids);
        mk->score = bertc_arena_alloc(ch->arena, sizeof(float) * (size_t)k);
        for (int j = 0; j < mk->k; j++)
            mk->score[j] = p[mk->ids[j]];
    }
    if (n_masks == 0)
        return bertc_errorf(err, "input %d has no [MASK] token to fill (fill-mask model %s)",
                            cli_text_number(&ch->t[s->input], ch->first + s->input),
                            r->cm->model->arch->name);
    ch->masks[s->input] = masks;
    ch->n_masks[s->input] = n_masks;
    return 0;
}

/* ---- the tasks that run through cli_run_texts ------------------------------- */

static CliSeqRow task_row(ModelTask task)
{
    return task == MODEL_TASK_SEQ_CLS     ? seq_cls_row
           : task == MODEL_TASK_TOKEN_CLS ? token_cls_row
                                          : fill_mask_row;
}

static void print_result(Chunk *ch, int i)
{
    const PredictRun *r = ch->r;
    const CliText *t = &ch->t[i];
    int index = ch->first + i;
    if (cli_text_blank(t))
        predict_print_blank(r, t, index);
    else if (r->task == MODEL_TASK_SEQ_CLS)
        seq_cls_print(ch, i);
    else if (r->task == MODEL_TASK_TOKEN_CLS)
        predict_print_entities(r, t, index, ch->ents[i], ch->n_ents[i]);
    else
        predict_print_masks(r, t, index, ch->masks[i], ch->n_masks[i]);
}

static int run_chunk(PredictRun *r, const CliText *t, int first, int n, BertcError *err)
{
    Chunk ch = {.r = r, .t = t, .first = first, .n = n,
                .arena = bertc_arena_create("predict's results", 1 << 16)};
    ch.logits = bertc_arena_calloc(ch.arena, (size_t)n * (size_t)r->n_labels, sizeof(float));
    ch.windows = bertc_arena_calloc(ch.arena, (size_t)n, sizeof(int));
    ch.ents = bertc_arena_calloc(ch.arena, (size_t)n, sizeof *ch.ents);
    ch.n_ents = bertc_arena_calloc(ch.arena, (size_t)n, sizeof(int));
    ch.masks = bertc_arena_calloc(ch.arena, (size_t)n, sizeof *ch.masks);
    ch.n_masks = bertc_arena_calloc(ch.arena, (size_t)n, sizeof(int));
    CliSeqPlan plan = {.max_len = r->max_len, .stride = r->stride, .batch_size = r->batch_size,
                       .context = r->context};
    int rc = cli_run_texts(r->cm, &plan, t, first, n, task_row(r->task), &ch, &r->stats, err);
    for (int i = 0; rc == 0 && i < n; i++)
        print_result(&ch, i);
    bertc_arena_destroy(ch.arena);
    return rc;
}

static int run_sequences(PredictRun *r, const CliText *texts, int n, BertcError *err)
{
    for (int i = 0; i < n; i += CHUNK_INPUTS) {
        int k = n - i < CHUNK_INPUTS ? n - i : CHUNK_INPUTS;
        if (run_chunk(r, texts + i, i, k, err) != 0)
            return -1;
        fflush(stdout);
    }
    return 0;
}

/* ---- extractive summarization (BertSum) ------------------------------------ */

#define MAX_SENTENCES 512

static int summarize_one(PredictRun *r, Graph *g, const CliText *t, int index, BertcError *err)
{
    int32_t start[MAX_SENTENCES], end[MAX_SENTENCES];
    int n = bertc_split_sentences(t->text, strlen(t->text), start, end, MAX_SENTENCES);
    if (n == 0)
        return bertc_errorf(err, "%s: no sentence to score", predict_input_name(t, index));
    const char **sents = bertc_arena_alloc(g->step, sizeof *sents * (size_t)n);
    for (int k = 0; k < n; k++) {
        char *s = bertc_arena_alloc(g->step, (size_t)(end[k] - start[k]) + 1);
        memcpy(s, t->text + start[k], (size_t)(end[k] - start[k]));
        s[end[k] - start[k]] = '\0';
        sents[k] = s;
    }
    TextExample ex = {.text = sents[0], .sentences = sents, .n_sentences = n, .context_id = -1};
    Batch b;
    Outputs out;
    bertc_batch_init(&b, "the text");
    bertc_outputs_init(&out);
    out.final_only = true;
    Model *m = r->cm->model;
    if (bertc_model_batch_from_text(m, r->cm->tok, &ex, 1, r->max_len, g, &b, err) != 0 ||
        cli_forward(m, g, &b, &out, err) != 0)
        return -1;
    Var *scores = need_output(r, &out, "sent_scores", 2, err);
    const BatchItem *mask_cls = bertc_batch_find(&b, "mask_cls");
    if (!scores || !mask_cls)
        return scores ? bertc_errorf(err, "%s read no mask_cls", r->cm->name) : -1;
    int kept = 0;
    for (int64_t k = 0; k < mask_cls->ids.shape[1]; k++)
        kept += mask_cls->ids.data[k] != 0;
    if (kept < n)
        fprintf(stderr, "bertc predict: warning: %s has %d sentences, the model scored the "
                "first %d (--max-len %d)\n", predict_input_name(t, index), n, kept,
                (int)r->max_len);
    predict_print_sentences(r, t, index, sents, scores->value.data, kept);
    return 0;
}

/* ---- the driver ------------------------------------------------------------ */

typedef int (*InputFn)(PredictRun *r, Graph *g, const CliText *t, int index, BertcError *err);

/* The tasks that read one input at a time (its sentences, its windows). */
static int run_each(PredictRun *r, const CliText *texts, int n, InputFn fn, BertcError *err)
{
    Graph *g = bertc_ag_graph_create(1 << 20, 0);
    bertc_ag_set_training(g, false);
    bertc_ag_set_no_grad(g, true);
    int rc = 0;
    for (int i = 0; rc == 0 && i < n; i++) {
        if (cli_text_blank(&texts[i]))
            predict_print_blank(r, &texts[i], i);
        else
            rc = fn(r, g, &texts[i], i, err);
        bertc_ag_graph_reset(g);
    }
    bertc_ag_graph_destroy(g);
    return rc;
}

static int run_task(PredictRun *r, const CliText *texts, int n, BertcError *err)
{
    switch (r->task) {
    case MODEL_TASK_SEQ_CLS:
    case MODEL_TASK_TOKEN_CLS:
    case MODEL_TASK_MASKED_LM:
        return run_sequences(r, texts, n, err);
    case MODEL_TASK_SUMMARIZATION:
        return run_each(r, texts, n, summarize_one, err);
    case MODEL_TASK_QA_SPAN:
        return run_each(r, texts, n, predict_qa_one, err);
    case MODEL_TASK_ENCODER:
    case MODEL_TASK_MULTIPLE_CHOICE:   /* the choices are not one text */
    case MODEL_TASK_PRETRAINING:       /* its forward masks the text itself */
        break;
    }
    const Model *m = r->cm->model;
    return bertc_errorf(err, "%s: bertc predict has no task for %s (its outputs are not "
                        "classification, token, question-answering, fill-mask or summary "
                        "scores)%s", r->cm->name, m->arch->name,
                        bertc_model_output(m->arch, 0) &&
                        !strcmp(bertc_model_output(m->arch, 0)->name, "last_hidden_state")
                            ? "; for sentence vectors use bertc embed" : "");
}

/* id2label's names, else HF's LABEL_i. */
static void label_names(PredictRun *r, Arena *arena)
{
    const BertConfig *cfg = &r->cm->model->cfg;
    r->n_labels = cfg->num_labels > 0 ? cfg->num_labels : 1;
    r->labels = bertc_arena_alloc(arena, sizeof *r->labels * (size_t)r->n_labels);
    for (int i = 0; i < r->n_labels; i++) {
        const char *name = bertc_bert_config_label(cfg, i);
        if (!name) {
            char *s = bertc_arena_alloc(arena, 24);
            snprintf(s, 24, "LABEL_%d", i);
            name = s;
        }
        r->labels[i] = name;
    }
}

static int parse_run(const CliArgs *a, PredictRun *r, BertcError *err)
{
    const CliCommand *c = &cli_cmd_predict;
    const char *format = cli_value(c, a, "--format");
    char shown[BERTC_SHOWN];
    if (strcmp(format, "tsv") != 0 && strcmp(format, "jsonl") != 0)
        return bertc_errorf(err, "--format '%s': expected tsv or jsonl", bertc_shown(format, shown));
    r->jsonl = !strcmp(format, "jsonl");
    r->top_k = r->context = r->stride = -1;
    if (cli_aggregate(c, a, &r->aggregate, err) != 0 ||
        cli_parse_int("--batch-size", cli_value(c, a, "--batch-size"), 1, 4096, &r->batch_size,
                      err) != 0 ||
        (cli_given(c, a, "--top-k") &&
         cli_parse_int("--top-k", cli_value(c, a, "--top-k"), 1, 1 << 20, &r->top_k, err) != 0) ||
        (cli_given(c, a, "--context") &&
         cli_parse_int("--context", cli_value(c, a, "--context"), 0, 1 << 30, &r->context,
                       err) != 0) ||
        (cli_given(c, a, "--stride") &&
         cli_parse_int("--stride", cli_value(c, a, "--stride"), 0, 1 << 20, &r->stride, err) != 0))
        return -1;
    return cli_apply_threads(c, a, err);
}

/* The model's flags against its task: --context for a model that reads
 * one, --stride where windows are read. */
static int check_task_flags(const PredictRun *r, BertcError *err)
{
    const CliModel *cm = r->cm;
    if (r->context >= 0 && !bertc_model_reads_input(cm->model->arch, "context_ids"))
        return bertc_errorf(err, "--context: %s (%s) takes no context id", cm->name,
                            cm->model->arch->name);
    if (r->context < 0 && bertc_model_reads_input(cm->model->arch, "context_ids"))
        return bertc_errorf(err, "%s (%s) classifies a text in a context: give --context N "
                            "(N in [0, context_vocab_size))", cm->name, cm->model->arch->name);
    if (r->stride >= 0 && r->task != MODEL_TASK_QA_SPAN && r->task != MODEL_TASK_SEQ_CLS)
        return bertc_errorf(err, "--stride: %s (%s) is not a classification or "
                            "question-answering model; its inputs are truncated to --max-len",
                            cm->name, cm->model->arch->name);
    return 0;
}

static int predict(const CliArgs *a, Arena *arena, BertcError *err)
{
    const CliCommand *c = &cli_cmd_predict;
    CliModel cm;
    PredictRun r = {.cm = &cm};
    CliText *texts;
    int n;
    CliModelFiles flags;   /* --model or --config, not both: the flags alone */
    if (parse_run(a, &r, err) != 0 || cli_model_files(c, a, &flags, err) != 0)
        return USAGE_ERROR;   /* a flag's value: exit status 2, as a bad flag */
    if (cli_model_open(c, a, arena, &cm, err) != 0)
        return -1;
    r.task = cm.model->arch->task;
    CliInputs in = {.pairs = cli_given(c, a, "--pair") || r.task == MODEL_TASK_QA_SPAN,
                    .qa = r.task == MODEL_TASK_QA_SPAN,
                    .format = cli_value(c, a, "--input-format"),
                    .text_column = cli_value(c, a, "--text-column"),
                    .pair_column = cli_value(c, a, "--text-pair-column")};
    if (check_task_flags(&r, err) != 0)
        return -1;
    int rc = cli_texts(c, a, &in, arena, &texts, &n, err);
    if (rc != 0)
        return rc;
    if (cli_model_max_len(c, a, &cm, texts, n, &r.max_len, err) != 0)
        return -1;
    label_names(&r, arena);
    cli_model_prepack(&cm);
    rc = run_task(&r, texts, n, err);
    cli_warn_truncation("predict", &r.stats, r.max_len, r.task == MODEL_TASK_SEQ_CLS);
    if (rc == 0 && cli_given(c, a, "--stats"))
        cli_print_stats("predict", &r.stats);
    return rc;
}

int cmd_predict(int argc, char **argv)
{
    CliArgs a;
    BertcError err;
    if (cli_parse(&cli_cmd_predict, argc, argv, &a, &err) != 0) {
        fprintf(stderr, "bertc predict: %s\n", err.msg);
        return 2;
    }
    if (a.help) {
        cli_print_help(&cli_cmd_predict, stdout);
        return 0;
    }
    Arena *arena = bertc_arena_create("predict", 1 << 20);
    int rc = predict(&a, arena, &err);
    bertc_arena_destroy(arena);
    fflush(stdout);
    if (rc != 0) {
        fprintf(stderr, "bertc predict: %s\n", err.msg);
        return rc == USAGE_ERROR ? 2 : 1;
    }
    return 0;
}
