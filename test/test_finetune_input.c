/* test/test_finetune_input.c — what `bertc finetune` reads from its data
 * files at the edges of the valid: regression labels that underflow (kept)
 * or do not fit a float32 (refused, naming the row), a loss that overflows
 * (refused naming the row), SQuAD v2.0's unanswerable questions (trained on
 * the [CLS], as Hugging Face's run_qa) and SQuAD errors naming the line of
 * the question in the file. */
#include "test/test_util.h"
#include "zoo/train/finetune_internal.h"
#include "zoo/train/dataset.h"

#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VOCAB "data/bert-base-uncased-vocab.txt"

static char dir[128];

static void setup(void) { test_scratch_make(dir, sizeof dir, "finetune_input"); }
static void teardown(void) { test_scratch_remove(dir); }

TestSuite(finetune_input, .init = setup, .fini = teardown, .timeout = 240);

/* The regression rows of a CSV as FinetuneData (targets in *target). */
static int regression_rows(Arena *a, const char *csv, FinetuneData *data, BertcError *err)
{
    Dataset d;
    cr_assert_eq(bertc_dataset_parse(&d, a, "r.csv", DATASET_CSV, csv, strlen(csv), err), 0,
                 "%s", err->msg);
    *data = (FinetuneData){.kind = FT_REGRESSION, .n = d.n_rows, .labels = {.n = 1}};
    data->ex = bertc_arena_alloc(a, sizeof *data->ex * (size_t)d.n_rows);
    data->target = bertc_arena_alloc(a, sizeof(float) * (size_t)d.n_rows);
    return bertc_finetune_add_rows(data, 0, &d, 0, -1, 1, err);
}

Test(finetune_input, regression_labels_that_underflow_are_kept)
{
    Arena *a = bertc_arena_create("rows", 1 << 16);
    FinetuneData data;
    BertcError err;
    cr_assert_eq(regression_rows(a, "text,label\nx,1e-310\ny,-1e-400\nz,3.4e38\n", &data, &err),
                 0, "%s", err.msg);
    /* float32 rounds the subnormal double to 0, as torch.tensor([1e-310]) does */
    cr_expect(data.target[0] == 0.0f && data.target[1] == 0.0f, "%g %g", data.target[0],
              data.target[1]);
    cr_expect(data.target[2] > 3.3e38f && isfinite(data.target[2]), "%g", data.target[2]);
    bertc_arena_destroy(a);
}

Test(finetune_input, regression_labels_past_float32_are_refused_naming_the_row)
{
    Arena *a = bertc_arena_create("rows", 1 << 16);
    FinetuneData data;
    BertcError err;
    cr_assert_neq(regression_rows(a, "text,label\nx,0.5\n\ny,-1e39\n", &data, &err), 0);
    cr_expect(strstr(err.msg, "r.csv:4: a regression label must be a finite float32"),
              "%s", err.msg);
    cr_expect(strstr(err.msg, "'-1e39'"), "%s", err.msg);
    bertc_arena_destroy(a);
}

/* Runs `bertc finetune` on data written to dir/name with a 1-layer BERT of
 * H = 32; returns the exit status, the output in *log. */
static int finetune_on(const char *name, const char *data, const char *task, const char *extra,
                       const char **log)
{
    static char out[16384];
    char path[300], cfg[300], cmd[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(cfg, sizeof cfg, "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fputs(data, f);
    fclose(f);
    f = fopen(cfg, "w");
    cr_assert(f);
    fputs("{\"architectures\": [\"BertForSequenceClassification\"], \"vocab_size\": 30522, "
          "\"hidden_size\": 32, \"num_hidden_layers\": 1, \"num_attention_heads\": 2, "
          "\"intermediate_size\": 64, \"max_position_embeddings\": 64}\n", f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s finetune --config %s --vocab " VOCAB " --train %s --task %s "
             "--out %s/out --quiet --max-len 16 --threads 1 %s", BERTC_CLI, cfg, path, task, dir,
             extra);
    *log = out;
    return test_shell(cmd, TEST_STDOUT_AND_STDERR, out, sizeof out);
}

static void expect_one_line_error(int rc, const char *log, const char *want)
{
    cr_assert_neq(rc, 0, "expected a failure with '%s', got success:\n%s", want, log);
    cr_assert(strstr(log, want), "expected '%s' in:\n%s", want, log);
    cr_assert(strchr(log, '\n') == log + strlen(log) - 1, "not one line:\n%s", log);
}

/* A float32 target of 1e30 squares past FLT_MAX: the step's mean squared
 * error is inf, and the message names the row whose loss alone is. */
Test(finetune_input, a_loss_that_overflows_names_the_row)
{
    const char *rows = "text,label\nsmall,0.1\nbig,0.9\ntiny,0.05\nhuge,1e30\nmid,0.5\n"
                       "large,0.8\nlittle,0.2\nvast,0.95\n";
    const char *log;
    char want[300];
    int rc = finetune_on("r.csv", rows, "regression", "--batch-size 8 --steps 2", &log);
    snprintf(want, sizeof want, "the example at %s/r.csv:5 alone gives a non-finite loss", dir);
    expect_one_line_error(rc, log, want);
    cr_expect(strstr(log, "step 0: the loss is inf"), "%s", log);
}

/* ---- SQuAD v2.0 ---------------------------------------------------------- */

/* A SQuAD v2.0 file: q1 answerable (line 3), q2 without answers (line 5),
 * q3 answerable (line 7). */
static const char squad_v2[] =
    "{\"version\": \"v2.0\", \"data\": [{\"title\": \"T\", \"paragraphs\": [\n"
    " {\"context\": \"we know that she lives in Paris Nord now.\", \"qas\": [\n"
    "  {\"id\": \"q1\", \"question\": \"Where does she live?\",\n"
    "   \"answers\": [{\"text\": \"Paris Nord\", \"answer_start\": 26}]},\n"
    "  {\"id\": \"q2\", \"question\": \"Who is she?\", \"answers\": [],\n"
    "   \"is_impossible\": true},\n"
    "  {\"id\": \"q3\", \"question\": \"When?\", \"answers\": [{\"text\": \"now\", "
    "\"answer_start\": %d}]}]}]}]}\n";

/* The rows of squad_v2 (q3's answer_start given) as qa data, all held out
 * (n_train 0), with windows of max_len and stride. */
static int squad_rows(Arena *a, int q3_start, const Tokenizer *tok, int32_t max_len,
                      int32_t stride, FinetuneData *data, BertcError *err)
{
    char text[1024];
    snprintf(text, sizeof text, squad_v2, q3_start);
    Dataset *d = bertc_arena_alloc(a, sizeof *d);
    cr_assert_eq(bertc_dataset_parse(d, a, "v2.json", DATASET_JSONL, text, strlen(text), err), 0,
                 "%s", err->msg);
    static const char *const names[4] = {"question", "context", "answers.text",
                                         "answers.answer_start"};
    int col[4];
    for (int k = 0; k < 4; k++)
        cr_assert_geq(col[k] = bertc_dataset_column(d, names[k], err), 0, "%s", err->msg);
    *data = (FinetuneData){.kind = FT_QA, .n = d->n_rows, .tok = tok, .max_len = max_len,
                           .doc_stride = stride, .name = "v2.json"};
    data->ex = bertc_arena_alloc(a, sizeof(TextExample) * (size_t)d->n_rows);
    data->answers = bertc_arena_alloc(a, sizeof(char *) * (size_t)d->n_rows);
    data->span = bertc_arena_alloc(a, sizeof(int32_t) * 2 * (size_t)d->n_rows);
    return bertc_finetune_qa_rows(data, 0, d, col, err);
}

/* Feature f's batch of one: its positions and its window's encoding. */
static void feature(FinetuneData *data, Graph *g, int64_t f, int32_t *s, int32_t *e,
                    Encoding **enc)
{
    Batch b;
    int64_t tokens;
    BertcError err;
    Model m = {.cfg = bertc_bert_config_default("BertForQuestionAnswering")};
    bertc_ag_graph_reset(g);
    bertc_batch_init(&b, "q");
    cr_assert_eq(bertc_finetune_qa_batch(data, &m, &f, 1, g, &b, enc, &tokens, &err), 0, "%s",
                 err.msg);
    *s = bertc_batch_find(&b, "start_positions")->ids.data[0];
    *e = bertc_batch_find(&b, "end_positions")->ids.data[0];
}

/* run_qa's prepare_train_features: a question without answers is labelled
 * start = end = the [CLS] (0) in every window; it used to be refused ("the
 * first answer needs a text"). */
Test(finetune_input, squad_v2_unanswerable_questions_train_on_the_cls)
{
    Arena *a = bertc_arena_create("qa", 1 << 20);
    Tokenizer tok;
    BertcError err;
    FinetuneData data;
    cr_assert_eq(bertc_tokenizer_load(&tok, a, VOCAB, &err), 0, "%s", err.msg);
    cr_assert_eq(squad_rows(a, 37, &tok, 12, 1, &data, &err), 0, "%s", err.msg);
    cr_assert(data.qa_negative, "an unanswerable question marks the data as v2.0");
    cr_assert(data.span[2] == -1 && data.span[3] == -1, "q2's span [%d, %d)", data.span[2],
              data.span[3]);
    cr_assert_str_eq(data.answers[1], "");
    cr_assert_eq(bertc_finetune_qa_windows(&data, a, &err), 0, "%s", err.msg);
    Graph *g = bertc_ag_graph_create(1 << 16, 0);
    int answered[3] = {0, 0, 0};
    for (int64_t f = 0; f < data.n_feat; f++) {
        int32_t s, e;
        Encoding *enc;
        feature(&data, g, f, &s, &e, &enc);
        int64_t r = data.feat_row[f];
        if (r == 1)
            cr_expect(s == 0 && e == 0, "q2 window %d: positions %d %d, expected the [CLS]",
                      data.feat_win[f], s, e);
        answered[r] += s > 0;
    }
    cr_expect(answered[0] == 1 && answered[2] == 1 && answered[1] == 0,
              "windows holding an answer: q1 %d, q2 %d, q3 %d", answered[0], answered[1],
              answered[2]);
    bertc_ag_graph_destroy(g);
    bertc_arena_destroy(a);
}

/* postprocess_qa_predictions with version_2_with_negative: the answer is ""
 * when the [CLS] (start + end logit) beats the best span; the SQuAD v2.0
 * score of "" against no gold answer is 1. */
Test(finetune_input, squad_v2_evaluation_answers_nothing_when_the_cls_wins)
{
    Arena *a = bertc_arena_create("qa", 1 << 20);
    Tokenizer tok;
    BertcError err;
    FinetuneData data;
    cr_assert_eq(bertc_tokenizer_load(&tok, a, VOCAB, &err), 0, "%s", err.msg);
    cr_assert_eq(squad_rows(a, 37, &tok, 0, -1, &data, &err), 0, "%s", err.msg);
    cr_assert_eq(bertc_finetune_qa_windows(&data, a, &err), 0, "%s", err.msg);
    cr_assert_eq(data.n_feat, 3, "one window a question");
    Graph *g = bertc_ag_graph_create(1 << 16, 0);
    bertc_finetune_qa_begin_eval(&data);
    /* q1: its gold span (context tokens 6, 7: "paris nord") scores 2 + 2,
     * the [CLS] 1 + 1: the span wins. q2 and q3: the [CLS] 5 + 5 wins. */
    for (int64_t f = 0; f < 3; f++) {
        int32_t s, e;
        Encoding *enc;
        feature(&data, g, f, &s, &e, &enc);
        float sl[64] = {0}, el[64] = {0};
        cr_assert_leq(enc->S, 64);
        int32_t ctx = 2 + enc->n_a;
        sl[0] = el[0] = f == 0 ? 1.0f : 5.0f;
        sl[ctx + 6] = el[ctx + 7] = 2.0f;
        bertc_finetune_qa_predict(&data, sl, el, enc->S, &f, 1, enc);
    }
    bertc_finetune_qa_end_eval(&data);
    /* q1 right (1), q2 "" against no answer (1), q3 "" against "now" (0) */
    cr_expect(fabs(data.qa_em - 2.0) < 1e-9, "EM sum %g, expected 2", data.qa_em);
    cr_expect(fabs(data.qa_f1 - 2.0) < 1e-9, "F1 sum %g, expected 2", data.qa_f1);
    bertc_ag_graph_destroy(g);
    bertc_arena_destroy(a);
}

/* An error about a question of a SQuAD file names the file's line of the
 * question (q3: line 7), not the row's number (3). */
Test(finetune_input, squad_errors_name_the_line_of_the_question)
{
    Arena *a = bertc_arena_create("qa", 1 << 20);
    Tokenizer tok;
    BertcError err;
    FinetuneData data;
    cr_assert_eq(bertc_tokenizer_load(&tok, a, VOCAB, &err), 0, "%s", err.msg);
    cr_assert_neq(squad_rows(a, 5, &tok, 0, -1, &data, &err), 0);
    cr_expect(strstr(err.msg, "v2.json:7: answer_start 5 does not point at the answer 'now'"),
              "%s", err.msg);
    bertc_arena_destroy(a);
}

/* End to end: `bertc finetune --task qa` on a SQuAD v2.0 file trains. */
Test(finetune_input, finetune_reads_a_squad_v2_file)
{
    char text[1024];
    snprintf(text, sizeof text, squad_v2, 37);
    const char *log;
    int rc = finetune_on("v2.json", text, "qa", "--steps 2 --batch-size 2", &log);
    cr_expect_eq(rc, 0, "%s", log);
}
