/* test/test_model_surface.c — hostile inputs and weights for the zoo's
 * models, each a fixture of test/data/zoo/ with one thing changed: every
 * one is an error naming the tensor, never a NaN loss, a read past a tensor
 * or an abort. */
#include "test/test_util.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static Arena *arena;
static Graph *graph;
static Model model;
static BertConfig cfg;
static Batch batch;

static void setup(void)
{
    arena = bertc_arena_create("surface", 1 << 16);
    graph = bertc_ag_graph_create(1 << 20, 0);
    bertc_ag_set_training(graph, false);
    bertc_ag_set_no_grad(graph, true);
}

static void teardown(void)
{
    bertc_ag_graph_destroy(graph);
    bertc_arena_destroy(arena);
}

TestSuite(model_surface, .init = setup, .fini = teardown);

/* The model and inputs of fixture `name` (weights loaded when `weights`). */
static void open_case(const char *name, bool weights)
{
    char *path = bertc_arena_alloc(arena, 600);   /* the batch's source outlives this call */
    snprintf(path, 600, "%s/%s/config.json", TEST_ZOO_DIR, name);
    test_model_build(&model, arena, path, &cfg);
    if (weights) {
        char w[600];
        snprintf(w, sizeof w, "%s/%s/weights.safetensors", TEST_ZOO_DIR, name);
        test_model_load(&model, w);
    }
    snprintf(path, 600, "%s/%s/inputs.safetensors", TEST_ZOO_DIR, name);
    SafeTensors *st;
    BertcError err;
    cr_assert_eq(bertc_st_open_file(arena, path, &st, &err), 0, "%s", err.msg);
    bertc_batch_init(&batch, path);
    cr_assert_eq(bertc_batch_from_safetensors(&batch, st, arena, &err), 0, "%s", err.msg);
}

static BatchItem *item(const char *name)
{
    BatchItem *it = (BatchItem *)bertc_batch_find(&batch, name);
    cr_assert(it, "the fixture has no input '%s'", name);
    return it;
}

/* Float labels: a NaN or infinite target (regression, multi-label) or a
 * multi-label target outside [0, 1] made a NaN or meaningless loss. */
Test(model_surface, float_labels_must_be_finite)
{
    open_case("bert_seqcls_regression", false);
    item("labels")->f32.data[1] = INFINITY;
    test_forward_fails(&model, graph, &batch, "'labels'[1] = inf", "not a finite number", NULL);
}

Test(model_surface, multi_label_targets_are_probabilities)
{
    open_case("bert_seqcls_multi", false);
    item("labels")->f32.data[0] = NAN;
    test_forward_fails(&model, graph, &batch, "'labels'[0, 0] = nan", "not a finite", NULL);
    item("labels")->f32.data[0] = 2.0f;
    test_forward_fails(&model, graph, &batch, "'labels'[0, 0] = 2", "outside [0, 1]", NULL);
    item("labels")->f32.data[0] = 0.25f;   /* a soft label is fine */
    Outputs out;
    test_forward_ok(&model, graph, &batch, &out);
}

/* fixture `name`'s weights with `extra` added (or in place of the tensor of
 * its name), written to `out`. */
static void weights_plus(const char *name, StEntry extra, const char *out)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s/weights.safetensors", TEST_ZOO_DIR, name);
    SafeTensors *st;
    BertcError err;
    cr_assert_eq(bertc_st_open_file(arena, path, &st, &err), 0, "%s", err.msg);
    StEntry *entries = bertc_arena_alloc(arena, sizeof *entries * (st->n_tensors + 1));
    Tensor *values = bertc_arena_alloc(arena, sizeof *values * st->n_tensors);
    size_t n = 0;
    for (size_t i = 0; i < st->n_tensors; i++) {
        if (strcmp(st->tensors[i].name, extra.name) == 0)
            continue;
        cr_assert_eq(bertc_st_load_tensor(st, st->tensors[i].name, arena, &values[i], &err), 0,
                     "%s", err.msg);
        entries[n++] = bertc_st_entry_tensor(st->tensors[i].name, &values[i]);
    }
    entries[n++] = extra;
    cr_assert_eq(bertc_st_write_file(out, entries, n, NULL, 0, &err), 0, "%s", err.msg);
    bertc_st_close(st);
}

/* A tied alias (cls.predictions.decoder.weight) beside its owner, with a
 * shape other than the owner's, was skipped as if it were absent. */
Test(model_surface, tied_alias_of_another_shape_is_an_error)
{
    open_case("bert_mlm", false);
    int64_t shape[2] = {3, 3};
    Tensor alias = bertc_tensor_new(arena, 2, shape);
    char dir[256], path[300];
    test_scratch_make(dir, sizeof dir, "surface_alias");
    snprintf(path, sizeof path, "%s/weights.safetensors", dir);
    weights_plus("bert_mlm", bertc_st_entry_tensor("cls.predictions.decoder.weight", &alias), path);
    BertcError err;
    cr_assert_neq(bertc_model_load(&model, path, false, &err), 0, "the [3, 3] alias was accepted");
    cr_assert(strstr(err.msg, "'cls.predictions.decoder.weight' has shape [3, 3]") &&
              strstr(err.msg, "[120, 32]"), "%s", err.msg);
    test_scratch_remove(dir);
}

/* problem_type regression with num_labels 3 passed the config and failed
 * only in the forward, as "config: ..." without the file's name. */
Test(model_surface, regression_with_several_labels_names_the_config)
{
    const char *text = "{\"architectures\": [\"BertForSequenceClassification\"], "
                       "\"vocab_size\": 100, \"hidden_size\": 32, \"num_hidden_layers\": 1, "
                       "\"num_attention_heads\": 4, \"intermediate_size\": 37, "
                       "\"max_position_embeddings\": 64, "
                       "\"num_labels\": 3, \"problem_type\": \"regression\"}";
    BertConfig c;
    BertcError err;
    cr_assert_neq(bertc_bert_config_parse(NULL, "c.json", text, strlen(text), &c, &err), 0,
                  "regression with num_labels 3 was accepted");
    cr_assert(strstr(err.msg, "c.json: problem_type") && strstr(err.msg, "num_labels 3"), "%s",
              err.msg);
}
