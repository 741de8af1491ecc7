/* cli/evaluate.c — `bertc evaluate`: a fine-tuned model directory scored on a
 * labelled file by bertc_evaluate (zoo/train/finetune.h), which is the
 * evaluation of a `bertc finetune` run's held-out rows: the same readers,
 * columns, length and metrics. Printed as text (the metrics, the confusion
 * matrix with the labels as row (true) and column (predicted) headers, each
 * class's precision, recall, F1 and support) or as one JSON object. Exit 2
 * for a bad flag, 1 for bad data or a model that cannot be scored. */
#include "cli/cli.h"
#include "zoo/train/finetune.h"

#include <math.h>
#include <string.h>

static const CliOption evaluate_options[] = {
    {"--model", "DIR", NULL, "the fine-tuned model directory (config.json with its labels, "
                             "model.safetensors, vocab.txt)"},
    {"--data", "FILE", NULL, "labelled rows: .csv, .tsv or .jsonl with a header / keys, as "
                             "bertc finetune reads them; token-cls also CoNLL (.conll, .txt)"},
    {"--format", "text|json", "text", "text tables, or one JSON object"},
    {"--text-column", "NAME", "text", "column of the text ('sentence' if there is no 'text'; "
                                      "token-cls: 'tokens'; qa: 'question')"},
    {"--text-pair-column", "NAME", NULL, "column of the second text of a pair (qa: 'context')"},
    {"--label-column", "NAME", "label", "column of the label (token-cls: 'tags'; qa: "
                                        "'answers.text')"},
    {"--max-len", "N", NULL, "tokens a row is truncated to [default: as bertc finetune, the "
                             "model's model_max_length up to 512]"},
    {"--batch-size", "N", "32", "rows a forward (32: bertc finetune's evaluation)"},
    {"--stride", "N", NULL, "seq-cls, multi-label, regression: read a row longer than "
                            "--max-len whole, in windows sharing N tokens, scored by their "
                            "mean logits (as finetune --stride evaluates)"},
    {"--aggregate", "mean|max|first", "mean", "with --stride: a row's logits from its "
                                              "windows' (their mean, each label's maximum, "
                                              "the first window's)"},
    {"--threads", "N", NULL, "worker threads"},
};

const CliCommand cli_cmd_evaluate = {
    .name = "evaluate",
    .summary = "score a fine-tuned model on a labelled file: metrics, confusion matrix, per-class "
               "F1",
    .usage = "--model DIR --data FILE [--format text|json] [options]",
    .description = "Scores every row of FILE exactly as bertc finetune scores its held-out rows "
                   "(the task is the model's: accuracy and macro-F1; micro-F1; Pearson and MSE; "
                   "entity F1; SQuAD F1 and exact match), with the loss, and for classification "
                   "the confusion matrix (rows: true label, columns: predicted) and each "
                   "class's precision, recall, F1 and support. Labels are the model's "
                   "(config.json id2label); a label it does not have is an error naming the "
                   "file's line. On the --eval file of a run, the metric and loss are those of "
                   "the kept model's evaluation in log.jsonl. Longer rows are truncated to "
                   "--max-len, as fine-tuning's evaluation does, with one warning, or read "
                   "whole in windows with --stride (as finetune --stride trains and scores). "
                   "See docs/finetune.md.",
    .options = evaluate_options,
    .n_options = (int)(sizeof evaluate_options / sizeof evaluate_options[0]),
    .example = "bertc evaluate --model reviews-model --data test.csv --format json",
};

/* ---- text ---------------------------------------------------------------- */

static int label_width(const EvaluateResult *r, int least)
{
    int w = least;
    for (int c = 0; c < r->C; c++) {
        int n = (int)strlen(r->per_class[c].label);
        w = n > w ? n : w;
    }
    return w;
}

static void print_confusion(const EvaluateResult *r, FILE *out)
{
    int w = label_width(r, 10), cell = 6;
    for (int c = 0; c < r->C; c++) {   /* a column is as wide as its label or its counts */
        int n = (int)strlen(r->per_class[c].label);
        cell = n > cell ? n : cell;
    }
    fprintf(out, "\nconfusion matrix%s (rows: true label, columns: predicted)\n",
            r->task == FT_TOKEN_CLS ? " of the words' tags" : "");
    fprintf(out, "%-*s", w, "");
    for (int c = 0; c < r->C; c++)
        fprintf(out, " %*s", cell, r->per_class[c].label);
    fputc('\n', out);
    for (int t = 0; t < r->C; t++) {
        fprintf(out, "%-*s", w, r->per_class[t].label);
        for (int p = 0; p < r->C; p++)
            fprintf(out, " %*lld", cell, (long long)r->confusion[t * r->C + p]);
        fputc('\n', out);
    }
}

static void print_text(const EvaluateResult *r, const char *model, const char *data, FILE *out)
{
    const char *rows = r->task == FT_TOKEN_CLS ? "sentences" : r->task == FT_QA ? "questions"
                                                                                : "rows";
    fprintf(out, "%s on %s: %s, %lld %s (max-len %d)\n", model, data,
            bertc_finetune_task_name(r->task), (long long)r->n, rows, (int)r->max_len);
    fprintf(out, "%-12s %.6f\n", r->metric_name, r->metric);
    if (r->metric2_name)
        fprintf(out, "%-12s %.6f\n", r->metric2_name, r->metric2);
    fprintf(out, "%-12s %.6f\n", "loss", r->loss);
    fprintf(out, "%-12s %lld\n", "n", (long long)r->n);
    if (r->confusion)
        print_confusion(r, out);
    if (!r->per_class)
        return;
    int w = label_width(r, 10);
    fprintf(out, "\n%-*s %9s %9s %9s %9s\n", w, "label", "precision", "recall", "f1", "support");
    for (int c = 0; c < r->C; c++) {
        const EvaluateClass *k = &r->per_class[c];
        fprintf(out, "%-*s %9.4f %9.4f %9.4f %9lld\n", w, k->label, k->precision, k->recall,
                k->f1, (long long)k->support);
    }
}

/* ---- json ---------------------------------------------------------------- */

/* A number with every digit a double has; NaN (no value) as null. */
static void json_number(FILE *out, double x)
{
    if (isfinite(x))
        fprintf(out, "%.17g", x);
    else
        fputs("null", out);
}

static void json_key(FILE *out, const char *key)
{
    cli_json_string(out, key, strlen(key));
    fputs(": ", out);
}

static void json_tables(const EvaluateResult *r, FILE *out)
{
    if (r->confusion) {
        fputs(", \"confusion\": {\"labels\": [", out);
        for (int c = 0; c < r->C; c++) {
            fputs(c ? ", " : "", out);
            cli_json_string(out, r->per_class[c].label, strlen(r->per_class[c].label));
        }
        fputs("], \"matrix\": [", out);
        for (int t = 0; t < r->C; t++) {
            fputs(t ? ", [" : "[", out);
            for (int p = 0; p < r->C; p++)
                fprintf(out, "%s%lld", p ? ", " : "", (long long)r->confusion[t * r->C + p]);
            fputs("]", out);
        }
        fputs("]}", out);
    }
    if (!r->per_class)
        return;
    fputs(", \"per_class\": [", out);
    for (int c = 0; c < r->C; c++) {
        const EvaluateClass *k = &r->per_class[c];
        fputs(c ? ", {\"label\": " : "{\"label\": ", out);
        cli_json_string(out, k->label, strlen(k->label));
        fputs(", \"precision\": ", out);
        json_number(out, k->precision);
        fputs(", \"recall\": ", out);
        json_number(out, k->recall);
        fputs(", \"f1\": ", out);
        json_number(out, k->f1);
        fprintf(out, ", \"support\": %lld}", (long long)k->support);
    }
    fputs("]", out);
}

static void print_json(const EvaluateResult *r, FILE *out)
{
    fputs("{\"task\": ", out);
    const char *task = bertc_finetune_task_name(r->task);
    cli_json_string(out, task, strlen(task));
    fprintf(out, ", \"n\": %lld, \"max_len\": %d, \"truncated\": %lld, \"metric\": {\"name\": ",
            (long long)r->n, (int)r->max_len, (long long)r->truncated);
    cli_json_string(out, r->metric_name, strlen(r->metric_name));
    fputs(", \"value\": ", out);
    json_number(out, r->metric);
    fputs("}, \"metrics\": {", out);
    json_key(out, r->metric_name);
    json_number(out, r->metric);
    if (r->metric2_name) {
        fputs(", ", out);
        json_key(out, r->metric2_name);
        json_number(out, r->metric2);
    }
    fputs("}, \"loss\": ", out);
    json_number(out, r->loss);
    json_tables(r, out);
    fputs("}\n", out);
}

/* ---- the command ---------------------------------------------------------- */

/* The flags as EvaluateOptions; *json: --format json. */
static int parse_args(const CliCommand *c, const CliArgs *a, EvaluateOptions *o, bool *json,
                      BertcError *err)
{
    const char *format = cli_value(c, a, "--format");
    char shown[BERTC_SHOWN];
    if (strcmp(format, "text") != 0 && strcmp(format, "json") != 0)
        return bertc_errorf(err, "--format needs text or json, got '%s'",
                            bertc_shown(format, shown));
    *json = strcmp(format, "json") == 0;
    o->model = cli_value(c, a, "--model");
    o->data_file = cli_value(c, a, "--data");
    o->text_column = cli_given(c, a, "--text-column") ? cli_value(c, a, "--text-column") : NULL;
    o->text_pair_column = cli_value(c, a, "--text-pair-column");
    o->label_column = cli_given(c, a, "--label-column") ? cli_value(c, a, "--label-column")
                                                        : NULL;
    int max_len = 0, batch = 32, stride = -1;
    if ((cli_given(c, a, "--max-len") &&
         cli_parse_int("--max-len", cli_value(c, a, "--max-len"), 3, CLI_MAX_LEN, &max_len,
                       err) != 0) ||
        (cli_given(c, a, "--stride") &&
         cli_parse_int("--stride", cli_value(c, a, "--stride"), 0, CLI_MAX_LEN, &stride,
                       err) != 0) ||
        cli_parse_int("--batch-size", cli_value(c, a, "--batch-size"), 1, TRAIN_MAX_BATCH, &batch,
                      err) != 0)
        return -1;
    o->max_len = max_len;
    o->batch_size = batch;
    o->stride = stride;
    if (cli_aggregate(c, a, &o->aggregate, err) != 0)
        return -1;
    return cli_apply_threads(c, a, err);
}

int cmd_evaluate(int argc, char **argv)
{
    const CliCommand *c = &cli_cmd_evaluate;
    CliArgs a;
    int rc = cli_start(c, argc, argv, &a);
    if (rc >= 0)
        return rc;
    if (!cli_given(c, &a, "--model"))
        return cli_required(c, "--model");
    if (!cli_given(c, &a, "--data"))
        return cli_required(c, "--data");
    EvaluateOptions o = {0};
    bool json = false;
    BertcError err;
    if (parse_args(c, &a, &o, &json, &err) != 0) {
        fprintf(stderr, "bertc evaluate: %s\n", err.msg);
        return 2;
    }
    EvaluateResult r;
    if (bertc_evaluate(&o, &r, &err) != 0) {
        fprintf(stderr, "bertc evaluate: %s\n", err.msg);
        return 1;
    }
    if (r.truncated)
        fprintf(stderr, "bertc evaluate: warning: %lld of %lld rows are longer than %d tokens "
                "and were truncated to it, as bertc finetune's evaluation truncates them "
                "(--max-len; --stride N reads them whole, in windows, as finetune --stride "
                "does)\n", (long long)r.truncated, (long long)r.n, (int)r.max_len);
    if (json)
        print_json(&r, stdout);
    else
        print_text(&r, o.model, o.data_file, stdout);
    bertc_evaluate_free(&r);
    return fflush(stdout) == 0 ? 0 : 1;
}
