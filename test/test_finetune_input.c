/* test/test_finetune_input.c — what `bertc finetune` reads from its data
 * files at the edges of the valid: regression labels that underflow (kept)
 * or do not fit a float32 (refused, naming the row), a loss that overflows
 * (refused naming the row), SQuAD v2.0's unanswerable questions (trained on
 * the [CLS], as Hugging Face's run_qa) and SQuAD errors naming the line of
 * the question in the file. */
#include "test/test_util.h"
#include "cli/finetune.h"
#include "zoo/dataset.h"

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
    return finetune_add_rows(data, 0, &d, 0, -1, 1, err);
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
