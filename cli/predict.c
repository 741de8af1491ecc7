/* cli/predict.c — bertc predict: one result per input, for the task the
 * model's architecture declares (ModelArch.task). Each task
 * reads its outputs, turns them into labels, entities, spans or tokens with
 * the library's pipeline steps, and prints them as TSV or JSONL
 * (cli/predict_print.c). docs/predict.md shows each format. */
#include "cli/predict.h"

#include <math.h>
#include <string.h>

static const CliOption predict_options[] = {
    {"--model", "DIR", NULL, "a model directory: config.json, model.safetensors, vocab.txt, "
     "tokenizer_config.json"},
    {"--config", "C.json", NULL, "instead of --model: config.json (with --weights, --vocab)"},
    {"--weights", "W.safetensors", NULL, "instead of --model: the weights"},
    {"--vocab", "V.txt", NULL, "instead of --model: the vocabulary"},
    {"--input", "FILE", NULL, "one input a line: TEXT, or TEXT<TAB>TEXT_PAIR (a question "
     "and its context for question answering); - reads standard input"},
    {"--format", "tsv|jsonl", "tsv", "the output lines (docs/predict.md)"},
    {"--top-k", "K", NULL, "classification: the K best labels; fill-mask: tokens per [MASK] "
     "(default 5); summarization: sentences kept (default 3)"},
    {"--max-len", "N", NULL, "tokens per input (default: model_max_length); longer inputs are "
     "truncated with a warning (question answering: the window)"},
    {"--batch-size", "N", "8", "inputs per forward"},
    {"--threads", "N", NULL, "worker threads (default: BERTC_THREADS, else the cores)"},
    {"--context", "N", NULL, "CGBERT/QACGBERT: the context (aspect or target) id of every input"},
    {"--stride", "N", NULL, "question answering: tokens two windows of a long context share "
     "(default: min(128, window / 2), HF's doc_stride)"},
};

const CliCommand cli_cmd_predict = {
    .name = "predict",
    .summary = "classify texts, tag entities, answer questions, fill [MASK], summarize",
    .usage = "(--model DIR | --config C.json --weights W.safetensors --vocab V.txt) "
             "[--input FILE] [--format tsv|jsonl] [--top-k K] [TEXT [TEXT_PAIR]]",
    .description = "The task comes from the model's outputs: sequence classification "
                   "(label, score), token classification (entities with character spans, "
                   "HF's aggregation_strategy=\"simple\"), question answering (TEXT is the "
                   "question, TEXT_PAIR the context; long contexts in windows), fill-mask "
                   "(tokens for each [MASK]), extractive summarization (BertSum: the best "
                   "sentences of each text).",
    .options = predict_options,
    .n_options = sizeof predict_options / sizeof predict_options[0],
    .max_positional = 2,
    .positional = "TEXT [TEXT_PAIR]",
    .example = "bertc predict --model my-classifier --format jsonl \"a text to classify\"",
};

/* ---- batches of inputs ---------------------------------------------------- */

/* Runs the model on inputs [0, n) through its batch_from_text, which
 * tokenizes each input once and keeps the encodings in b->enc (NULL for an
 * architecture that builds its batch otherwise); warns about every input
 * the limit truncated. */
static int forward_texts(const PredictRun *r, Graph *g, const CliText *t, int first, int n,
                         Batch *b, Outputs *out, BertcError *err)
{
    TextExample *ex = bertc_arena_calloc(g->step, (size_t)n, sizeof *ex);
    for (int i = 0; i < n; i++)
        ex[i] = (TextExample){.text = t[i].text, .text_pair = t[i].pair,
                              .context_id = r->context};
    bertc_batch_init(b, "the texts");
    bertc_outputs_init(out);
    Model *m = r->cm->model;
    if (bertc_model_batch_from_text(m, r->cm->tok, ex, n, r->max_len, g, b, err) != 0) {
        if (r->context >= 0) {   /* the flag the value came from */
            char msg[BERTC_ERROR_LEN];
            snprintf(msg, sizeof msg, "%s", err->msg);
            bertc_errorf(err, "--context %d: %s", r->context, msg);
        }
        return -1;
    }
    for (int i = 0; i < b->n_enc && i < n; i++)
        if (b->enc[i].untruncated > r->max_len)
            cli_warn_truncated("predict", &t[i], first + i, b->enc[i].untruncated, r->max_len);
    return cli_forward(m, g, b, out, err);
}

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

/* ---- sequence classification ---------------------------------------------- */

static int seq_cls_batch(PredictRun *r, Graph *g, const CliText *t, int first, int n,
                         BertcError *err)
{
    Batch b;
    Outputs out;
    if (forward_texts(r, g, t, first, n, &b, &out, err) != 0)
        return -1;
    Var *logits = need_output(r, &out, "logits", 2, err);
    if (!logits)
        return -1;
    int C = (int)logits->value.shape[1];
    if (C > r->n_labels)
        return bertc_errorf(err, "%s: logits have %d classes, the config %d labels",
                            r->cm->name, C, r->n_labels);
    for (int i = 0; i < n; i++)
        predict_print_classes(r, &t[i], logits->value.data + (int64_t)i * C, C);
    return 0;
}

/* ---- token classification ------------------------------------------------- */

static int token_cls_batch(PredictRun *r, Graph *g, const CliText *t, int first, int n,
                           BertcError *err)
{
    Batch b;
    Outputs out;
    if (forward_texts(r, g, t, first, n, &b, &out, err) != 0)
        return -1;
    Var *logits = need_output(r, &out, "logits", 3, err);
    if (!logits)
        return -1;
    int64_t S = logits->value.shape[1];
    int C = (int)logits->value.shape[2];
    if (C > r->n_labels)
        return bertc_errorf(err, "%s: logits have %d classes, the config %d labels",
                            r->cm->name, C, r->n_labels);
    for (int i = 0; i < n; i++) {
        const Encoding *e = predict_batch_encoding(r, &b, i, err);
        if (!e)
            return -1;
        TokenTag *tags = bertc_arena_alloc(g->step, sizeof *tags * (size_t)(e->n_a + 1));
        float p[C];
        for (int k = 0; k < e->n_a; k++) {   /* text A's tokens: 1 .. n_a (0 is [CLS]) */
            int pos = 1 + k;
            bertc_softmax(logits->value.data + ((int64_t)i * S + pos) * C, C, p);
            int best;
            bertc_top_k(p, C, 1, &best);
            tags[k] = (TokenTag){.label = best, .score = p[best], .start = e->start[pos],
                                 .end = e->end[pos], .byte_start = e->byte_start[pos],
                                 .byte_end = e->byte_end[pos]};
        }
        Entity *ents = bertc_arena_alloc(g->step, sizeof *ents * (size_t)(e->n_a + 1));
        int n_ents = bertc_group_entities(tags, e->n_a, r->labels, ents);
        predict_print_entities(r, &t[i], first + i, ents, n_ents);
    }
    return 0;
}

/* ---- fill-mask -------------------------------------------------------------- */

static int fill_mask_batch(PredictRun *r, Graph *g, const CliText *t, int first, int n,
                           BertcError *err)
{
    Batch b;
    Outputs out;
    if (forward_texts(r, g, t, first, n, &b, &out, err) != 0)
        return -1;
    Var *logits = bertc_outputs_get(&out, "logits");
    if (!logits)
        logits = bertc_outputs_get(&out, "prediction_logits");
    if (!logits || logits->value.ndim != 3)
        return bertc_errorf(err, "%s gave no (B, S, V) logits", r->cm->name);
    int64_t S = logits->value.shape[1], V = logits->value.shape[2];
    const Tokenizer *tok = r->cm->tok;
    for (int i = 0; i < n; i++) {
        const Encoding *e = predict_batch_encoding(r, &b, i, err);
        if (!e)
            return -1;
        PredictMask *masks = bertc_arena_alloc(g->step, sizeof *masks * (size_t)e->S);
        int n_masks = 0;
        /* the [MASK]s of TEXT (positions 1 .. n_a); the sequences print TEXT */
        for (int32_t pos = 1; pos < 1 + e->n_a; pos++) {
            if (e->input_ids[pos] != tok->mask_id)
                continue;
            PredictMask *mk = &masks[n_masks++];
            mk->byte_start = e->byte_start[pos];
            mk->byte_end = e->byte_end[pos];
            mk->p = bertc_arena_alloc(g->step, sizeof(float) * (size_t)V);
            bertc_softmax(logits->value.data + ((int64_t)i * S + pos) * V, (int)V, mk->p);
            int k = r->top_k > 0 ? r->top_k : 5;
            k = k < V ? k : (int)V;
            mk->ids = bertc_arena_alloc(g->step, sizeof(int) * (size_t)k);
            mk->k = bertc_top_k(mk->p, (int)V, k, mk->ids);
        }
        if (n_masks == 0)
            return bertc_errorf(err, "%s has no [MASK] token to fill (fill-mask model %s)",
                                predict_input_name(&t[i], first + i),
                                r->cm->model->arch->name);
        predict_print_masks(r, &t[i], masks, n_masks);
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
    predict_print_sentences(r, t, sents, scores->value.data, kept);
    return 0;
}

/* ---- the driver ------------------------------------------------------------ */

typedef int (*BatchFn)(PredictRun *r, Graph *g, const CliText *t, int first, int n,
                       BertcError *err);

static int run_batches(PredictRun *r, const CliText *texts, int n, BatchFn fn, int batch_size,
                       BertcError *err)
{
    Graph *g = bertc_ag_graph_create(1 << 20, 0);
    bertc_ag_set_training(g, false);
    bertc_ag_set_no_grad(g, true);
    int rc = 0;
    for (int i = 0; rc == 0 && i < n; i += batch_size) {
        int k = n - i < batch_size ? n - i : batch_size;
        rc = fn(r, g, texts + i, i, k, err);
        bertc_ag_graph_reset(g);
    }
    bertc_ag_graph_destroy(g);
    return rc;
}

static int summarize_batch(PredictRun *r, Graph *g, const CliText *t, int first, int n,
                           BertcError *err)
{
    for (int i = 0; i < n; i++)
        if (summarize_one(r, g, &t[i], first + i, err) != 0)
            return -1;
    return 0;
}

static int run_task(PredictRun *r, const CliText *texts, int n, BertcError *err)
{
    switch (r->task) {
    case MODEL_TASK_SEQ_CLS:
        return run_batches(r, texts, n, seq_cls_batch, r->batch_size, err);
    case MODEL_TASK_TOKEN_CLS:
        return run_batches(r, texts, n, token_cls_batch, r->batch_size, err);
    case MODEL_TASK_MASKED_LM:
        return run_batches(r, texts, n, fill_mask_batch, r->batch_size, err);
    case MODEL_TASK_SUMMARIZATION:
        return run_batches(r, texts, n, summarize_batch, 1, err);
    case MODEL_TASK_QA_SPAN:
        return run_batches(r, texts, n, predict_qa_batch, 1, err);
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
    if (cli_parse_int("--batch-size", cli_value(c, a, "--batch-size"), 1, 4096, &r->batch_size,
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
    if (cli_texts(c, a, arena, true, &texts, &n, err) != 0 ||
        cli_model_open(c, a, arena, &cm, err) != 0 ||
        cli_model_max_len(c, a, &cm, texts, n, &r.max_len, err) != 0)
        return -1;
    r.task = cm.model->arch->task;
    if (r.context >= 0 && !bertc_model_reads_input(cm.model->arch, "context_ids"))
        return bertc_errorf(err, "--context: %s (%s) takes no context id", cm.name,
                            cm.model->arch->name);
    if (r.context < 0 && bertc_model_reads_input(cm.model->arch, "context_ids"))
        return bertc_errorf(err, "%s (%s) classifies a text in a context: give --context N "
                            "(N in [0, context_vocab_size))", cm.name, cm.model->arch->name);
    if (r.stride >= 0 && r.task != MODEL_TASK_QA_SPAN)
        return bertc_errorf(err, "--stride: %s is not a question-answering model", cm.name);
    label_names(&r, arena);
    return run_task(&r, texts, n, err);
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
