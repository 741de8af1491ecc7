/* test/test_finetune_lib.c — fine-tuning as a library call (zoo/train/finetune.h),
 * without the CLI: a tiny BERT from a config in memory learns a two-word
 * cue from a table in memory, its result and its model directory are what
 * the header says, and the saved model, opened as any model directory is,
 * classifies a new sentence; bad options are one-line errors; the output
 * modes; a table without a header and a split of its rows (dataset.h); and
 * the engine's final checkpoint coming before the final evaluation. */
#include "test/test_util.h"
#include "zoo/train/finetune.h"
#include "zoo/train/pipeline.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define VOCAB "data/bert-base-uncased-vocab.txt"
#define N_ROWS 48   /* 40 train, 8 held out */

static char dir[256];
static Arena *arena;

static void setup(void)
{
    test_scratch_make(dir, sizeof dir, "finetune_lib");
    arena = bertc_arena_create("test", 1 << 20);
}

static void teardown(void)
{
    bertc_arena_destroy(arena);
    test_scratch_remove(dir);
}

TestSuite(finetune_lib, .init = setup, .fini = teardown, .timeout = 240);

/* "label<TAB>text" rows: "pos" when the text says great, "neg" when awful,
 * among filler words, alternating. */
static void cue_table(Dataset *d)
{
    static const char *const fillers[] = {"the movie", "this film", "the show", "that play"};
    static const char *const names[2] = {"label", "text"};
    char *text = bertc_arena_alloc(arena, 64 * N_ROWS);
    size_t n = 0;
    for (int i = 0; i < N_ROWS; i++)
        n += (size_t)snprintf(text + n, 64, "%s\t%s was %s %d\n", i % 2 ? "pos" : "neg",
                              fillers[i / 2 % 4], i % 2 ? "great" : "awful", i);
    BertcError err;
    cr_assert_eq(bertc_dataset_parse_columns(d, arena, "cue.tsv", DATASET_TSV, names, 2, text, n,
                                             &err),
                 0, "%s", err.msg);
    cr_assert_eq(d->n_rows, N_ROWS);
}

/* 1 layer, H = 32 over bert-base's vocabulary: trains in a second. */
static BertConfig tiny_config(void)
{
    BertConfig c = bertc_bert_config_default("BertForSequenceClassification");
    c.hidden_size = 32;
    c.num_hidden_layers = 1;
    c.num_attention_heads = 2;
    c.intermediate_size = 64;
    c.max_position_embeddings = 32;
    return c;
}

static char notes[512];

static void keep_note(void *user, const char *msg)
{
    (void)user;
    snprintf(notes, sizeof notes, "%s", msg);
}

static FinetuneOptions options(const BertConfig *cfg, const Dataset *train, const Dataset *eval,
                               const char *out)
{
    FinetuneOptions o = bertc_finetune_defaults();
    o.config = cfg;
    o.vocab = VOCAB;
    o.train_data = train;
    o.eval_data = eval;
    o.out = out;
    o.train.quiet = true;
    o.note = keep_note;
    return o;
}

/* The saved directory opened as any model is: the class of one sentence. */
static const char *classify(const char *model_dir, const char *text)
{
    static ModelDir d;
    BertcError err;
    cr_assert_eq(bertc_model_dir_open(&d, arena, model_dir, &err), 0, "%s", err.msg);
    Graph *g = bertc_ag_graph_create(1 << 16, 0);
    bertc_ag_set_training(g, false);
    TextExample ex = {.text = text, .context_id = -1};
    Batch b;
    Outputs out;
    bertc_batch_init(&b, "sentence");
    bertc_outputs_init(&out);
    cr_assert_eq(bertc_model_batch_from_text(&d.model, &d.tok, &ex, 1, 0, g, &b, &err), 0, "%s",
                 err.msg);
    cr_assert_eq(bertc_model_forward(&d.model, g, &b, &out, &err), 0, "%s", err.msg);
    const float *z = bertc_outputs_get(&out, "logits")->value.data;
    int best = z[1] > z[0];
    bertc_ag_graph_destroy(g);
    return bertc_bert_config_label(&d.model.cfg, best);
}

Test(finetune_lib, a_table_in_memory_trains_a_model_directory_that_classifies)
{
    Dataset all;
    cue_table(&all);
    Dataset train = bertc_dataset_rows(&all, 0, 40), eval = bertc_dataset_rows(&all, 40, 8);
    BertConfig cfg = tiny_config();
    char out[512];
    snprintf(out, sizeof out, "%s/model", dir);
    FinetuneOptions o = options(&cfg, &train, &eval, out);
    o.train.steps = 60;
    o.train.batch_size = 64;   /* more than the 40 rows: capped, with a note */
    o.train.lr = 1e-3;
    o.train.eval_every = 20;
    FinetuneResult r;
    BertcError err;
    cr_assert_eq(bertc_finetune(&o, &r, &err), 0, "%s", err.msg);

    cr_expect_str_eq(notes, "--batch-size 64 is more than the 40 training rows: batches of 40");
    cr_expect_eq(r.batch_size, 40);
    cr_expect(r.kept && !r.out_untouched, "kept %d, out untouched %d", r.kept, r.out_untouched);
    cr_expect_str_eq(r.dir, out);
    cr_expect(r.n_train == 40 && r.n_eval == 8 && r.steps == 60 && r.train.steps_done == 60,
              "%lld train, %lld held out, %lld of %lld steps", (long long)r.n_train,
              (long long)r.n_eval, (long long)r.train.steps_done, (long long)r.steps);
    cr_expect_str_eq(r.metric_name, "accuracy");
    cr_expect_float_eq(r.baseline, 0.5, 1e-12, "majority baseline %g of 4 pos, 4 neg",
                       r.baseline);
    cr_expect_geq(r.best_metric, 0.875, "held-out accuracy %g on a two-word cue", r.best_metric);
    cr_expect_gt(r.n_parameters, 30522 * 32, "%lld parameters", (long long)r.n_parameters);

    /* the model directory, the log of 3 evaluations and the trainer state */
    static const char *const files[] = {"config.json", "model.safetensors", "vocab.txt",
                                        "tokenizer_config.json", "log.jsonl", "loss.svg",
                                        "checkpoint.safetensors", "trainer_state.json"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[600];
        snprintf(path, sizeof path, "%s/%s", out, files[i]);
        cr_expect_eq(access(path, R_OK), 0, "no %s", path);
    }
    char path[600], text[4096];
    snprintf(path, sizeof path, "%s/log.jsonl", out);
    test_read_text(path, text, sizeof text);
    int lines = 0;
    for (const char *c = text; *c; c++)
        lines += *c == '\n';
    cr_expect_eq(lines, 3, "log.jsonl:\n%s", text);
    cr_expect(strstr(text, "\"best\": true"), "no best evaluation in:\n%s", text);
    cr_expect_str_eq(classify(out, "the opera was great"), "pos");
    cr_expect_str_eq(classify(out, "the opera was awful"), "neg");
}

Test(finetune_lib, bad_options_are_one_line_errors_and_write_nothing)
{
    Dataset all;
    cue_table(&all);
    BertConfig cfg = tiny_config();
    char out[512];
    snprintf(out, sizeof out, "%s/none", dir);
    struct {
        FinetuneOptions o;
        const char *says;
    } cases[6];
    for (int i = 0; i < 6; i++)
        cases[i].o = options(&cfg, &all, NULL, out);
    cases[0].o.config = NULL;
    cases[0].says = "give one of model (a directory), config_file or config, not 0";
    cases[1].o.model = "somewhere";
    cases[1].says = "give one of model (a directory), config_file or config, not 2";
    cases[2].o.vocab = NULL;
    cases[2].says = "a config needs a vocab";
    cases[3].o.train_file = "t.csv";
    cases[3].says = "give the training rows as train_file or train_data";
    cases[4].o.out = NULL;
    cases[4].says = "out (the model directory) is required";
    cases[5].o.label_column = "category";
    cases[5].says = "cue.tsv: no column 'category' in the header (it has 'label', 'text')";
    for (int i = 0; i < 6; i++) {
        FinetuneResult r;
        BertcError err;
        cr_expect_eq(bertc_finetune(&cases[i].o, &r, &err), -1, "case %d ran", i);
        cr_expect(strstr(err.msg, cases[i].says) && !strchr(err.msg, '\n'),
                  "case %d: \"%s\" does not say \"%s\" in one line", i, err.msg, cases[i].says);
        cr_expect(!r.kept && r.dir[0] == '\0', "case %d: kept %d, dir '%s'", i, r.kept, r.dir);
    }
    cr_expect_neq(access(out, F_OK), 0, "%s was made", out);
}

/* FINETUNE_OUT_NEW refuses a directory holding something; FINETUNE_OUT_SWAP
 * writes beside it and swaps the model in; FINETUNE_OUT_IN_PLACE (the
 * examples) writes into it. The file that was there stays in both. */
Test(finetune_lib, the_output_modes)
{
    Dataset all;
    cue_table(&all);
    BertConfig cfg = tiny_config();
    char out[512], keep[600], model[600], staging[600];
    snprintf(out, sizeof out, "%s/full", dir);
    snprintf(keep, sizeof keep, "%s/notes.txt", out);
    snprintf(model, sizeof model, "%s/model.safetensors", out);
    snprintf(staging, sizeof staging, "%s.bertc-staging", out);
    cr_assert_eq(mkdir(out, 0755), 0);
    FILE *f = fopen(keep, "w");
    cr_assert(f);
    fputs("mine\n", f);
    fclose(f);
    {
        FinetuneOptions o = options(&cfg, &all, NULL, out);
        o.train.steps = 2;
        FinetuneResult r;
        BertcError err;
        cr_expect_eq(bertc_finetune(&o, &r, &err), -1);
        cr_expect(strstr(err.msg, "exists and is not empty") && strstr(err.msg, "--force"), "%s",
                  err.msg);
        cr_expect_neq(access(model, F_OK), 0, "FINETUNE_OUT_NEW wrote a model");

        o.out_mode = FINETUNE_OUT_SWAP;
        cr_expect_eq(bertc_finetune(&o, &r, &err), 0, "%s", err.msg);
        cr_expect(r.kept && strcmp(r.dir, staging) == 0, "kept %d, written in %s", r.kept, r.dir);
        cr_expect_eq(access(model, F_OK), 0, "the swap left no model in %s", out);
        cr_expect_neq(access(staging, F_OK), 0, "%s is left", staging);

        cr_assert_eq(remove(model), 0);
        o.out_mode = FINETUNE_OUT_IN_PLACE;
        cr_expect_eq(bertc_finetune(&o, &r, &err), 0, "%s", err.msg);
        cr_expect(r.kept && strcmp(r.dir, out) == 0, "kept %d, written in %s", r.kept, r.dir);
        cr_expect_eq(access(model, F_OK), 0, "FINETUNE_OUT_IN_PLACE wrote no model");
    }
    char text[64];
    test_read_text(keep, text, sizeof text);
    cr_expect_str_eq(text, "mine\n");
}

/* A table without a header line (bertc_dataset_parse_columns) and its rows
 * as tables of their own (bertc_dataset_rows), lines kept. */
Test(finetune_lib, a_table_without_a_header_and_its_rows)
{
    static const char *const names[2] = {"label", "text"};
    const char *text = "a\tone\n\nb\ttwo\nc\tthree\n";
    Dataset d;
    BertcError err;
    cr_assert_eq(bertc_dataset_parse_columns(&d, arena, "x.tsv", DATASET_TSV, names, 2, text,
                                             strlen(text), &err),
                 0, "%s", err.msg);
    cr_assert_eq(d.n_rows, 3);
    cr_expect_str_eq(bertc_dataset_cell(&d, 0, 1), "one");
    cr_expect_eq(d.line[2], 4);
    Dataset tail = bertc_dataset_rows(&d, 1, 5);   /* clamped: rows 1 and 2 */
    cr_assert_eq(tail.n_rows, 2);
    cr_expect_str_eq(bertc_dataset_cell(&tail, 0, 0), "b");
    cr_expect_eq(tail.line[0], 3);
    cr_expect_str_eq(tail.name, "x.tsv");
    cr_expect_eq(bertc_dataset_rows(&d, 7, 2).n_rows, 0);

    cr_expect_eq(bertc_dataset_parse_columns(&d, arena, "e.tsv", DATASET_TSV, names, 2, "", 0,
                                             &err),
                 0, "an empty text is a table of no rows: %s", err.msg);
    cr_expect_eq(d.n_rows, 0);
    cr_expect_neq(bertc_dataset_parse_columns(&d, arena, "y.tsv", DATASET_TSV, names, 2,
                                              "a\tone\nb\n", 8, &err),
                  0);
    cr_expect_str_eq(err.msg, "y.tsv:2: 1 field, the table has 2");
    cr_expect_neq(bertc_dataset_parse_columns(&d, arena, "z.jsonl", DATASET_JSONL, names, 2,
                                              "{}", 2, &err),
                  0);
    cr_expect_str_eq(err.msg, "z.jsonl: only a CSV or TSV table comes without a header");
}

/* ---- the engine: the final checkpoint, then the final evaluation ---------- */

static int tiny_batch(void *ctx, const int64_t *idx, int64_t n, Graph *g, Batch *b,
                      int64_t *tokens, BertcError *err)
{
    (void)ctx;
    (void)err;
    int64_t shape[2] = {n, 4};
    ITensor ids = bertc_itensor_new(g->step, 2, shape), mask = bertc_itensor_new(g->step, 2, shape);
    ITensor labels = bertc_itensor_new(g->step, 1, &n);
    for (int64_t j = 0; j < n; j++) {
        for (int t = 0; t < 4; t++) {
            ids.data[j * 4 + t] = (int32_t)((idx[j] + t) % 16);
            mask.data[j * 4 + t] = 1;
        }
        labels.data[j] = (int32_t)(idx[j] % 2);
    }
    bertc_batch_put_ids(b, "input_ids", ids);
    bertc_batch_put_ids(b, "attention_mask", mask);
    bertc_batch_put_ids(b, "labels", labels);
    *tokens = 4 * n;
    return 0;
}

/* An evaluation that fails, as saving a best model to a full disk does. */
static int failing_eval(void *ctx, Model *m, Graph *g, double *metric, double *loss,
                        BertcError *err)
{
    (void)ctx;
    (void)m;
    (void)g;
    *metric = *loss = NAN;
    return bertc_errorf(err, "the disk is full");
}

Test(finetune_lib, a_failed_final_evaluation_keeps_the_final_checkpoint)
{
    Model m = test_tiny_classifier(arena, 4);
    char checkpoint[600];
    snprintf(checkpoint, sizeof checkpoint, "%s/ckpt.safetensors", dir);
    TrainTask task = {.n_train = 8, .make_batch = tiny_batch, .evaluate = failing_eval,
                      .metric_name = "accuracy"};
    TrainOptions opt = bertc_train_defaults();
    opt.steps = 3;
    opt.batch_size = 4;
    opt.quiet = true;
    opt.checkpoint = checkpoint;   /* checkpoint_every 0: only the final one */
    TrainResult res;
    BertcError err;
    cr_assert_eq(bertc_train_run(&m, &task, &opt, &res, &err), -1);
    cr_expect_str_eq(err.msg, "the disk is full");
    SafeTensors *st;
    cr_assert_eq(bertc_st_open_file(NULL, checkpoint, &st, &err), 0,
                 "no final checkpoint before the failed evaluation: %s", err.msg);
    bertc_st_close(st);
}
