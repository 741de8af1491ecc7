/* test/test_evaluate.c — `bertc evaluate` as a user runs it: a tiny BERT
 * fine-tuned for a few steps with a held-out file, then that file scored by
 * `bertc evaluate --model OUT`: its metric and loss are those of the kept
 * model's evaluation in OUT/log.jsonl (the run's own numbers, to the six
 * digits the log keeps); the confusion matrix sums to the rows and its
 * diagonal is the accuracy; the JSON and the text say the same; a label the
 * model does not have is a one-line error naming the file's line; flags
 * that do not fit exit 2. */
#include "test/test_util.h"
#include "zoo/train/dataset.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VOCAB "data/bert-base-uncased-vocab.txt"
/* finetune's flags for every run: --max-len 16 is given to evaluate too */
#define RUN_FLAGS "--max-len 16 --batch-size 16 --lr 1e-2 --steps 24 --eval-every 6 --seed 3 " \
                  "--quiet --threads 2"

static char dir[256];

static void setup(void)
{
    test_scratch_make(dir, sizeof dir, "evaluate");
}

static void teardown(void)
{
    test_scratch_remove(dir);
}

TestSuite(evaluate, .init = setup, .fini = teardown, .timeout = 240);

static uint32_t lcg(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

/* n rows "text,label" of three topics (a row's words mostly its topic's;
 * every 7th row of the held-out file carries another topic's label, so no
 * model gets them all), or with numbers: the share of "good" words. */
static void write_rows(const char *path, int n, uint32_t seed, bool regression, bool flip)
{
    static const char *const words[3][5] = {{"great", "good", "lovely", "fine", "happy"},
                                            {"bad", "awful", "poor", "sad", "ugly"},
                                            {"table", "chair", "door", "window", "paper"}};
    static const char *const labels[3] = {"pos", "neg", "neu"};
    FILE *f = fopen(path, "w");
    cr_assert(f, "%s: cannot write", path);
    fputs("text,label\n", f);
    for (int i = 0; i < n; i++) {
        int topic = (int)(lcg(&seed) % 3), len = 2 + (int)(lcg(&seed) % 6), good = 0;
        fputc('"', f);
        for (int w = 0; w < len; w++) {
            int t = lcg(&seed) % 4 == 0 ? 2 : topic;
            good += t == 0;
            fprintf(f, "%s%s", w ? " " : "", words[t][lcg(&seed) % 5]);
        }
        if (regression)
            fprintf(f, "\",%.3f\n", (double)good / len);
        else
            fprintf(f, "\",%s\n", labels[(topic + (flip && i % 7 == 3)) % 3]);
    }
    fclose(f);
}

/* Fine-tunes a 1-layer BERT of H = 32 on dir/TRAIN, held out dir/HELD,
 * into dir/out, with --task TASK (NULL: the default) and FLAGS; its output
 * into log. */
static void finetune_with(const char *task, const char *train, const char *held,
                          const char *flags, char *log, size_t cap)
{
    char cmd[4096], cfg[300], task_flag[64] = "";
    snprintf(cfg, sizeof cfg, "%s/config.json", dir);
    test_write_text(cfg, "{\"architectures\": [\"BertForSequenceClassification\"], "
                         "\"vocab_size\": 30522, \"hidden_size\": 32, \"num_hidden_layers\": 1, "
                         "\"num_attention_heads\": 2, \"intermediate_size\": 64, "
                         "\"max_position_embeddings\": 64}\n");
    if (task)
        snprintf(task_flag, sizeof task_flag, "--task %s ", task);
    snprintf(cmd, sizeof cmd, "%s finetune --config %s --vocab " VOCAB " --train %s/%s "
             "--eval %s/%s %s--out %s/out %s", BERTC_CLI, cfg, dir, train, dir, held, task_flag,
             dir, flags);
    cr_assert_eq(test_shell(cmd, TEST_STDOUT_AND_STDERR, log, cap), 0, "%s\n%s", cmd, log);
}

static void finetune_on(const char *task, const char *train, const char *held)
{
    char log[16384];
    finetune_with(task, train, held, RUN_FLAGS, log, sizeof log);
}

static void finetune(const char *task)
{
    finetune_on(task, "train.csv", "held.csv");
}

/* bertc evaluate --model dir/out --data dir/FILE ARGS: exit status, stdout
 * into out, stderr into errs. */
static int evaluate(const char *file, const char *args, char *out, size_t cap, char *errs,
                    size_t errs_cap)
{
    char cmd[4096], path[400];
    snprintf(path, sizeof path, "%s/evaluate.out", dir);
    snprintf(cmd, sizeof cmd, "{ %s evaluate --model %s/out --data %s/%s %s > %s; }", BERTC_CLI,
             dir, dir, file, args, path);
    int rc = test_shell(cmd, TEST_STDERR, errs, errs_cap);
    test_read_text(path, out, cap);
    return rc;
}

/* The log.jsonl line of the kept model ("best": true) as a JSON object. */
static const JsonValue *best_record(Arena *a)
{
    char path[400], text[16384];
    snprintf(path, sizeof path, "%s/out/log.jsonl", dir);
    test_read_text(path, text, sizeof text);
    for (char *line = text, *next; *line; line = next) {
        next = strchr(line, '\n');
        cr_assert(next, "log.jsonl: a line without its newline: %s", line);
        *next++ = '\0';
        if (!strstr(line, "\"best\": true"))
            continue;
        JsonDoc *doc;
        BertcError err;
        cr_assert_eq(bertc_json_parse(a, "log.jsonl", line, strlen(line), &doc, &err), 0, "%s",
                     err.msg);
        return doc->root;
    }
    cr_assert_fail("log.jsonl has no \"best\": true line:\n%s", text);
    return NULL;
}

static const JsonValue *parse(Arena *a, const char *text)
{
    JsonDoc *doc;
    BertcError err;
    cr_assert_eq(bertc_json_parse(a, "evaluate --format json", text, strlen(text), &doc, &err), 0,
                 "%s in:\n%s", err.msg, text);
    return doc->root;
}

static double number(const JsonValue *obj, const char *key)
{
    const JsonValue *v = bertc_json_get(obj, key);
    cr_assert(v && v->type == JSON_NUMBER, "no number '%s'", key);
    return bertc_json_number(v);
}

/* log.jsonl writes %.6g: equal when |ours - logged| is at most half a unit
 * of the logged value's sixth significant digit. */
static void expect_logged(const char *what, double ours, double logged)
{
    double unit = logged == 0 ? 1e-6 : pow(10, floor(log10(fabs(logged))) - 5);
    cr_assert(fabs(ours - logged) <= 0.5 * unit * (1 + 1e-9),
              "%s: bertc evaluate %.17g, log.jsonl's kept evaluation %.17g (|diff| %.3g > %.3g)",
              what, ours, logged, fabs(ours - logged), 0.5 * unit);
}

static void write_data(bool regression)
{
    char path[400];
    snprintf(path, sizeof path, "%s/train.csv", dir);
    write_rows(path, 120, 1, regression, false);
    snprintf(path, sizeof path, "%s/held.csv", dir);
    write_rows(path, 45, 2, regression, true);
}

Test(evaluate, the_held_out_file_of_a_run_scores_as_its_kept_evaluation_logged)
{
    write_data(false);
    finetune("seq-cls");
    static char out[65536], errs[4096];
    cr_assert_eq(evaluate("held.csv", "--max-len 16 --format json", out, sizeof out, errs,
                          sizeof errs), 0, "%s", errs);
    cr_assert_str_empty(errs, "nothing on stderr expected, got: %s", errs);
    Arena *a = bertc_arena_create("evaluate test", 1 << 16);
    const JsonValue *best = best_record(a), *ours = parse(a, out);
    const JsonValue *metric = bertc_json_get(ours, "metric");
    cr_assert(metric, "no \"metric\" in %s", out);
    const char *name;
    BertcError err;
    cr_assert_eq(bertc_json_get_string(metric, "name", &name, &err), 0, "%s", err.msg);
    cr_assert_str_eq(name, "accuracy");
    expect_logged("accuracy", number(metric, "value"), number(best, "accuracy"));
    expect_logged("macro_f1", number(bertc_json_get(ours, "metrics"), "macro_f1"),
                  number(best, "macro_f1"));
    expect_logged("loss", number(ours, "loss"), number(best, "eval_loss"));
    cr_assert_eq((int64_t)number(ours, "n"), 45);
    bertc_arena_destroy(a);
}

Test(evaluate, the_confusion_matrix_holds_every_row_and_its_diagonal_is_the_accuracy)
{
    write_data(false);
    finetune("seq-cls");
    static char out[65536], errs[4096];
    cr_assert_eq(evaluate("held.csv", "--max-len 16 --format json", out, sizeof out, errs,
                          sizeof errs), 0, "%s", errs);
    Arena *a = bertc_arena_create("evaluate test", 1 << 16);
    const JsonValue *root = parse(a, out), *conf = bertc_json_get(root, "confusion");
    cr_assert(conf, "no confusion in %s", out);
    const JsonValue *labels = bertc_json_get(conf, "labels");
    const JsonValue *matrix = bertc_json_get(conf, "matrix");
    const JsonValue *per = bertc_json_get(root, "per_class");
    cr_assert(labels && matrix && per && labels->length == 3 && matrix->length == 3 &&
              per->length == 3, "three labels, a 3x3 matrix and three classes: %s", out);
    const char *want[3] = {"neg", "neu", "pos"};   /* the model's ids: sorted, as trained */
    int64_t total = 0, diagonal = 0;
    for (size_t t = 0; t < 3; t++) {
        const JsonValue *row = bertc_json_at(matrix, t);
        cr_assert_str_eq(bertc_json_string(bertc_json_at(labels, t)), want[t]);
        int64_t sum = 0;
        for (size_t p = 0; p < 3; p++)
            sum += bertc_json_at(row, p)->integer;
        const JsonValue *k = bertc_json_at(per, t);
        cr_assert_eq((int64_t)number(k, "support"), sum, "class %s: support %g, its row sums "
                     "to %lld", want[t], number(k, "support"), (long long)sum);
        double tp = (double)bertc_json_at(row, t)->integer;
        cr_assert_float_eq(number(k, "recall"), sum ? tp / (double)sum : 0.0, 1e-12);
        total += sum;
        diagonal += bertc_json_at(row, t)->integer;
    }
    cr_assert_eq(total, 45, "the matrix holds %lld counts, not the 45 rows", (long long)total);
    double accuracy = number(bertc_json_get(root, "metric"), "value");
    cr_assert(fabs((double)diagonal / 45.0 - accuracy) <= 1e-12,
              "diagonal %lld / 45 = %.17g, accuracy %.17g", (long long)diagonal,
              (double)diagonal / 45.0, accuracy);
    cr_assert(accuracy < 1.0, "the flipped labels should cost some accuracy: %s", out);
    bertc_arena_destroy(a);
}

/* The text's value on the line starting with `key`. */
static double text_value(const char *text, const char *key)
{
    char want[64];
    snprintf(want, sizeof want, "\n%s ", key);
    const char *at = strstr(text, want);
    cr_assert(at, "no line '%s' in:\n%s", key, text);
    return strtod(at + strlen(want), NULL);
}

Test(evaluate, the_text_says_what_the_json_says)
{
    write_data(false);
    finetune("seq-cls");
    static char text[65536], json[65536], errs[4096];
    cr_assert_eq(evaluate("held.csv", "--max-len 16", text, sizeof text, errs, sizeof errs), 0,
                 "%s", errs);
    cr_assert_eq(evaluate("held.csv", "--max-len 16 --format json", json, sizeof json, errs,
                          sizeof errs), 0, "%s", errs);
    cr_assert_eq(strchr(json, '\n'), json + strlen(json) - 1, "one JSON line:\n%s", json);
    Arena *a = bertc_arena_create("evaluate test", 1 << 16);
    const JsonValue *root = parse(a, json);
    cr_assert_float_eq(text_value(text, "accuracy"), number(bertc_json_get(root, "metric"),
                                                            "value"), 5e-7);
    cr_assert_float_eq(text_value(text, "macro_f1"),
                       number(bertc_json_get(root, "metrics"), "macro_f1"), 5e-7);
    cr_assert_float_eq(text_value(text, "loss"), number(root, "loss"), 5e-7);
    cr_assert_eq(text_value(text, "n"), 45);
    /* the matrix's rows: a label, then its three counts as the JSON has them */
    const JsonValue *matrix = bertc_json_get(bertc_json_get(root, "confusion"), "matrix");
    const char *names[3] = {"neg", "neu", "pos"};
    const char *table = strstr(text, "confusion matrix");
    cr_assert(table, "no confusion matrix in:\n%s", text);
    for (int t = 0; t < 3; t++) {
        char want[64];
        snprintf(want, sizeof want, "\n%s ", names[t]);
        const char *row = strstr(table, want);
        cr_assert(row, "no row %s in:\n%s", names[t], table);
        long long k[3];
        cr_assert_eq(sscanf(row + strlen(want), "%lld %lld %lld", &k[0], &k[1], &k[2]), 3);
        for (int p = 0; p < 3; p++)
            cr_assert_eq(k[p], bertc_json_at(bertc_json_at(matrix, (size_t)t), (size_t)p)->integer,
                         "row %s column %d: text %lld, JSON %lld", names[t], p, k[p],
                         (long long)bertc_json_at(bertc_json_at(matrix, (size_t)t),
                                                  (size_t)p)->integer);
    }
    bertc_arena_destroy(a);
}

Test(evaluate, a_label_the_model_does_not_have_is_a_one_line_error_naming_its_line)
{
    write_data(false);
    finetune("seq-cls");
    char path[400], out[4096], errs[4096], want[600];
    snprintf(path, sizeof path, "%s/odd.csv", dir);
    test_write_text(path, "text,label\ngreat good,pos\nsad day,neg\nthe door,zebra\n");
    int rc = evaluate("odd.csv", "", out, sizeof out, errs, sizeof errs);
    snprintf(want, sizeof want, "bertc evaluate: %s:4: a label the model does not have: 'zebra'\n",
             path);
    cr_assert_eq(rc, 1, "exit %d, expected 1: %s", rc, errs);
    cr_assert_str_eq(errs, want);
    cr_assert_str_empty(out, "nothing on stdout expected, got: %s", out);

    test_write_text(path, "text,category\ngreat,pos\n");
    rc = evaluate("odd.csv", "", out, sizeof out, errs, sizeof errs);
    cr_assert_eq(rc, 1, "exit %d: %s", rc, errs);
    cr_assert(strstr(errs, "no column 'label'") && strchr(errs, '\n') == errs + strlen(errs) - 1,
              "one line naming the missing column: %s", errs);
    test_write_text(path, "text,label\n");
    rc = evaluate("odd.csv", "", out, sizeof out, errs, sizeof errs);
    cr_assert_eq(rc, 1, "no rows: exit %d: %s", rc, errs);
    cr_assert(strstr(errs, "a header and no rows"), "%s", errs);
}

Test(evaluate, flags_that_do_not_fit_exit_2)
{
    char cmd[600], errs[4096];
    snprintf(cmd, sizeof cmd, "%s evaluate --model %s", BERTC_CLI, dir);
    cr_assert_eq(test_shell(cmd, TEST_STDERR, errs, sizeof errs), 2, "no --data: %s", errs);
    cr_assert(strstr(errs, "--data is required"), "%s", errs);
    snprintf(cmd, sizeof cmd, "%s evaluate --data %s/x.csv", BERTC_CLI, dir);
    cr_assert_eq(test_shell(cmd, TEST_STDERR, errs, sizeof errs), 2, "no --model: %s", errs);
    snprintf(cmd, sizeof cmd, "%s evaluate --model %s --data x.csv --format xml", BERTC_CLI, dir);
    cr_assert_eq(test_shell(cmd, TEST_STDERR, errs, sizeof errs), 2, "--format xml: %s", errs);
    snprintf(cmd, sizeof cmd, "%s evaluate --model %s --data x.csv --batch-size 0", BERTC_CLI,
             dir);
    cr_assert_eq(test_shell(cmd, TEST_STDERR, errs, sizeof errs), 2, "--batch-size 0: %s", errs);
    snprintf(cmd, sizeof cmd, "%s evaluate --model %s/none --data x.csv", BERTC_CLI, dir);
    cr_assert_eq(test_shell(cmd, TEST_STDERR, errs, sizeof errs), 1, "no model: %s", errs);
}

Test(evaluate, a_regression_model_scores_its_pearson_and_mse_as_logged)
{
    write_data(true);
    finetune("regression");
    static char out[65536], errs[4096];
    cr_assert_eq(evaluate("held.csv", "--max-len 16 --format json", out, sizeof out, errs,
                          sizeof errs), 0, "%s", errs);
    Arena *a = bertc_arena_create("evaluate test", 1 << 16);
    const JsonValue *best = best_record(a), *ours = parse(a, out);
    const char *task;
    BertcError err;
    cr_assert_eq(bertc_json_get_string(ours, "task", &task, &err), 0, "%s", err.msg);
    cr_assert_str_eq(task, "regression");
    expect_logged("pearson", number(bertc_json_get(ours, "metric"), "value"),
                  number(best, "pearson"));
    expect_logged("mse", number(bertc_json_get(ours, "metrics"), "mse"), number(best, "mse"));
    expect_logged("loss", number(ours, "loss"), number(best, "eval_loss"));
    cr_assert_null(bertc_json_get(ours, "confusion"), "regression has no confusion matrix");
    bertc_arena_destroy(a);
}

Test(evaluate, a_long_row_is_truncated_with_one_warning)
{
    write_data(false);
    finetune("seq-cls");
    char path[400], out[8192], errs[4096];
    snprintf(path, sizeof path, "%s/long.csv", dir);
    test_write_text(path, "text,label\n"
                          "good good good good good good good good good good good good good,pos\n"
                          "sad,neg\n"
                          "door door door door door door door door door door door door door,neu\n");
    cr_assert_eq(evaluate("long.csv", "--max-len 8", out, sizeof out, errs, sizeof errs), 0,
                 "%s", errs);
    cr_assert(strstr(errs, "warning: 2 of 3 rows are longer than 8 tokens"), "%s", errs);
    cr_assert_eq(strchr(errs, '\n'), errs + strlen(errs) - 1, "one warning line: %s", errs);
}

/* A model's id2label need not be sorted: its labels are looked up one by one. */
Test(evaluate, labels_in_the_models_order_are_found)
{
    const char *names[3] = {"pos", "neg", "neu"};
    LabelSet s = {.n = 3, .names = names, .unsorted = true};
    for (int i = 0; i < 3; i++)
        cr_assert_eq(bertc_label_set_id(&s, names[i], strlen(names[i])), i, "%s", names[i]);
    cr_assert_eq(bertc_label_set_id(&s, "ne", 2), -1, "a prefix is not a label");
    cr_assert_eq(bertc_label_set_id(&s, "zebra", 5), -1);
}

/* dir/train.jsonl and dir/held.jsonl: sentences of names (B-PER) among
 * other words (O), as "tokens"/"tags" lists. */
static void write_tagged(const char *name, int n, uint32_t seed)
{
    static const char *const names[4] = {"alice", "bob", "carol", "dave"};
    static const char *const words[6] = {"went", "to", "the", "shop", "saw", "cat"};
    char path[400], tokens[512], tags[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    cr_assert(f, "%s: cannot write", path);
    for (int i = 0; i < n; i++) {
        int len = 3 + (int)(lcg(&seed) % 5);
        size_t a = 0, b = 0;
        for (int w = 0; w < len; w++) {
            bool person = lcg(&seed) % 10 < 3;
            a += (size_t)snprintf(tokens + a, sizeof tokens - a, "%s\"%s\"", w ? ", " : "",
                                  person ? names[lcg(&seed) % 4] : words[lcg(&seed) % 6]);
            b += (size_t)snprintf(tags + b, sizeof tags - b, "%s\"%s\"", w ? ", " : "",
                                  person ? "B-PER" : "O");
        }
        fprintf(f, "{\"tokens\": [%s], \"tags\": [%s]}\n", tokens, tags);
    }
    fclose(f);
}

/* Token classification scores its entity F1 as logged, and its word-level
 * confusion matrix holds every word; multi-label its micro-F1, with a
 * per-class table and no matrix. */
Test(evaluate, token_classification_and_multi_label_score_as_logged)
{
    static char out[65536], errs[4096];
    write_tagged("train.jsonl", 100, 4);
    write_tagged("held.jsonl", 30, 5);
    finetune_on("token-cls", "train.jsonl", "held.jsonl");
    cr_assert_eq(evaluate("held.jsonl", "--max-len 16 --format json", out, sizeof out, errs,
                          sizeof errs), 0, "%s", errs);
    Arena *a = bertc_arena_create("evaluate test", 1 << 16);
    const JsonValue *best = best_record(a), *ours = parse(a, out);
    expect_logged("entity_f1", number(bertc_json_get(ours, "metric"), "value"),
                  number(best, "entity_f1"));
    expect_logged("loss", number(ours, "loss"), number(best, "eval_loss"));
    const JsonValue *matrix = bertc_json_get(bertc_json_get(ours, "confusion"), "matrix");
    cr_assert(matrix && matrix->length == 2, "a 2x2 matrix of B-PER and O: %s", out);
    int64_t words = 0;
    for (size_t t = 0; t < 2; t++)
        for (size_t p = 0; p < 2; p++)
            words += bertc_json_at(bertc_json_at(matrix, t), p)->integer;
    cr_assert_eq((int64_t)number(ours, "n"), 30);
    cr_assert(words >= 90, "the matrix counts words (3 or more a sentence), got %lld",
              (long long)words);
    bertc_arena_destroy(a);

    /* multi-label: "pos" when a good word, "quick" when a fast one */
    FILE *f[2];
    for (int k = 0; k < 2; k++) {
        char path[400];
        snprintf(path, sizeof path, "%s/%s", dir, k ? "ml_held.csv" : "ml_train.csv");
        cr_assert(f[k] = fopen(path, "w"));
        fputs("text,label\n", f[k]);
    }
    uint32_t seed = 6;
    for (int i = 0; i < 130; i++) {
        bool good = lcg(&seed) % 2, fast = lcg(&seed) % 2;
        fprintf(f[i >= 100], "%s %s the,%s%s%s\n", good ? "good" : "door", fast ? "fast" : "slow",
                good ? "pos" : "", good && fast ? "|" : "", fast ? "quick" : "");
    }
    fclose(f[0]);
    fclose(f[1]);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s/out", dir);   /* the token model's */
    cr_assert_eq(system(cmd), 0);
    finetune_on("multi-label", "ml_train.csv", "ml_held.csv");
    cr_assert_eq(evaluate("ml_held.csv", "--max-len 16 --format json", out, sizeof out, errs,
                          sizeof errs), 0, "%s", errs);
    a = bertc_arena_create("evaluate test", 1 << 16);
    best = best_record(a);
    ours = parse(a, out);
    expect_logged("micro_f1", number(bertc_json_get(ours, "metric"), "value"),
                  number(best, "micro_f1"));
    expect_logged("loss", number(ours, "loss"), number(best, "eval_loss"));
    cr_assert_null(bertc_json_get(ours, "confusion"), "multi-label has no confusion matrix");
    const JsonValue *per = bertc_json_get(ours, "per_class");
    cr_assert(per && per->length == 2, "two classes: %s", out);
    bertc_arena_destroy(a);
}

/* The share of dir/held.csv's rows whose label `bertc predict --max-len 6
 * --stride 2 --aggregate RULE` gives (a TSV line per row, the label first). */
static double predict_accuracy(const char *rule)
{
    static char pred[65536], gold[65536];
    char cmd[2048], log[4096];
    snprintf(cmd, sizeof cmd, "{ %s predict --model %s/out --max-len 6 --stride 2 --aggregate %s "
             "--input %s/held.csv > %s/pred.tsv; }", BERTC_CLI, dir, rule, dir, dir);
    cr_assert_eq(test_shell(cmd, TEST_STDERR, log, sizeof log), 0, "%s", log);
    snprintf(cmd, sizeof cmd, "%s/pred.tsv", dir);
    test_read_text(cmd, pred, sizeof pred);
    snprintf(cmd, sizeof cmd, "%s/held.csv", dir);
    test_read_text(cmd, gold, sizeof gold);
    int n = 0, right = 0;
    const char *p = pred, *g = strchr(gold, '\n') + 1;   /* the header */
    for (; *p && *g; n++) {
        const char *end = strchr(g, '\n');
        const char *label = strstr(g, "\",") + 1;   /* "words",label */
        cr_assert(end && label > g && label < end, "held.csv line %d", n + 2);
        size_t len = (size_t)(end - label - 1);
        right += !strncmp(p, label + 1, len) && p[len] == '\t';
        p = strchr(p, '\n') + 1;
        g = end + 1;
    }
    cr_assert_eq(n, 45, "45 predictions: %s", pred);
    return (double)right / n;
}

/* --stride: finetune trains on the windows of texts longer than --max-len
 * and scores a held-out row by its windows' mean logits; bertc evaluate
 * --stride gives the kept evaluation's numbers, and its accuracy is that of
 * `bertc predict --stride` (the same windows, --aggregate mean) on the file. */
Test(evaluate, windows_of_long_rows_score_as_finetune_and_predict_read_them)
{
    write_data(false);
    char log[16384];
    /* [CLS] 4 words [SEP]: rows of 5 to 7 words are read in 2 windows */
    finetune_with(NULL, "train.csv", "held.csv",
                  "--max-len 6 --stride 2 --batch-size 16 --lr 1e-2 --steps 24 --eval-every 6 "
                  "--seed 3 --quiet --threads 2", log, sizeof log);
    cr_expect(strstr(log, "training texts are longer than --max-len 6 tokens") &&
              strstr(log, "read whole, in windows"), "the windows' note: %s", log);
    static char out[65536], errs[4096];
    cr_assert_eq(evaluate("held.csv", "--max-len 6 --stride 2 --format json", out, sizeof out,
                          errs, sizeof errs), 0, "%s", errs);
    cr_expect_str_empty(errs, "nothing is truncated with --stride: %s", errs);
    Arena *a = bertc_arena_create("evaluate test", 1 << 16);
    const JsonValue *best = best_record(a), *ours = parse(a, out);
    double accuracy = number(bertc_json_get(ours, "metric"), "value");
    expect_logged("accuracy", accuracy, number(best, "accuracy"));
    expect_logged("loss", number(ours, "loss"), number(best, "eval_loss"));
    /* without --stride the rows are cut: another evaluation, and a warning */
    cr_assert_eq(evaluate("held.csv", "--max-len 6 --format json", out, sizeof out, errs,
                          sizeof errs), 0, "%s", errs);
    cr_expect(strstr(errs, "rows are longer than 6 tokens"), "%s", errs);
    cr_expect(number(parse(a, out), "loss") != number(best, "eval_loss"), "truncation differs");
    /* predict --stride: the same labels, with each --aggregate */
    cr_expect_eq(predict_accuracy("mean"), accuracy, "--aggregate mean");
    const char *rules[] = {"max", "first"};
    for (int i = 0; i < 2; i++) {
        char args[64];
        snprintf(args, sizeof args, "--max-len 6 --stride 2 --aggregate %s --format json",
                 rules[i]);
        cr_assert_eq(evaluate("held.csv", args, out, sizeof out, errs, sizeof errs), 0, "%s",
                     errs);
        double got = number(bertc_json_get(parse(a, out), "metric"), "value");
        cr_expect_eq(predict_accuracy(rules[i]), got, "--aggregate %s: predict and evaluate",
                     rules[i]);
    }
    bertc_arena_destroy(a);
}
