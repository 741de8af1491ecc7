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
