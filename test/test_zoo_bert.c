/* test/test_zoo_bert.c — wrong inputs to the BERT models are errors that
 * name the tensor and the limit, never a crash; bertc summary's tree. */
#include "test/test_util.h"
#include "zoo/zoo.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define CASE "test/data/zoo/bert_seqcls_single/"

static Arena *arena;
static Graph *graph;
static Model model;
static Batch batch;
static ITensor ids, mask, types, labels;

/* The fixture's config (V = 120, max_position_embeddings 40, 3 labels) and
 * a valid (2, 8) batch that each test then breaks in one way. */
static void setup(void)
{
    test_open(&arena, &graph);
    bertc_ag_set_training(graph, false);
    test_model_build(&model, arena, CASE "config.json", NULL);
    int64_t bs[2] = {2, 8}, b[1] = {2};
    ids = bertc_itensor_new(arena, 2, bs);
    mask = bertc_itensor_new(arena, 2, bs);
    types = bertc_itensor_new(arena, 2, bs);
    labels = bertc_itensor_new(arena, 1, b);
    for (int i = 0; i < 16; i++) {
        ids.data[i] = 5 + i;
        mask.data[i] = 1;
    }
    bertc_batch_init(&batch, "inputs.safetensors");
    bertc_batch_put_ids(&batch, "input_ids", ids);
    bertc_batch_put_ids(&batch, "attention_mask", mask);
    bertc_batch_put_ids(&batch, "token_type_ids", types);
    bertc_batch_put_ids(&batch, "labels", labels);
}

static void teardown(void) { test_close(arena, graph); }

TestSuite(zoo_bert, .init = setup, .fini = teardown);

static void expect_error(const char *a, const char *b, const char *c)
{
    test_forward_fails(&model, graph, &batch, a, b, c);
}

Test(zoo_bert, valid_batch_runs)
{
    Outputs out;
    test_forward_ok(&model, graph, &batch, &out);
    cr_assert(bertc_outputs_get(&out, "loss") && bertc_outputs_get(&out, "logits"));
}

Test(zoo_bert, missing_input_names_it)
{
    batch.n = 0;
    bertc_batch_put_ids(&batch, "attention_mask", mask);
    expect_error("missing input tensor", "'input_ids'", "inputs.safetensors");
}

Test(zoo_bert, float_ids_are_rejected)
{
    int64_t bs[2] = {2, 8};
    bertc_batch_put_f32(&batch, "input_ids", bertc_tensor_new(arena, 2, bs));
    expect_error("'input_ids'", "integers", NULL);
}

Test(zoo_bert, sequence_longer_than_positions)
{
    int64_t bs[2] = {1, 41};
    bertc_batch_put_ids(&batch, "input_ids", bertc_itensor_new(arena, 2, bs));
    expect_error("length 41", "max_position_embeddings 40", "'input_ids'");
}

Test(zoo_bert, id_outside_vocabulary)
{
    ids.data[11] = 120;
    expect_error("'input_ids'[1, 3] = 120", "vocab_size 120", NULL);
}

Test(zoo_bert, negative_id)
{
    ids.data[2] = -1;
    expect_error("'input_ids'[0, 2] = -1", "below 0", NULL);
}

Test(zoo_bert, mask_shape_must_match)
{
    int64_t bs[2] = {2, 7};
    bertc_batch_put_ids(&batch, "attention_mask", bertc_itensor_new(arena, 2, bs));
    expect_error("'attention_mask'", "[2, 8]", "[2, 7]");
}

Test(zoo_bert, token_type_outside_type_vocab)
{
    types.data[0] = 2;
    expect_error("'token_type_ids'[0, 0] = 2", "type_vocab_size 2", NULL);
}

Test(zoo_bert, label_outside_classes)
{
    labels.data[1] = 3;
    expect_error("'labels'[1] = 3", "num_labels 3", NULL);
}

Test(zoo_bert, summary_tree_matches_hf_layout)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    bertc_registry_print(model.reg, f);
    fclose(f);
    const char *lines[] = {
        "BertForSequenceClassification(  # 23,491 params\n",
        "  (bert): BertModel(  # 23,392 params\n",
        "      (word_embeddings): Embedding(120, 32, padding_idx=0)  # 3,840 params\n",
        "      (LayerNorm): LayerNorm((32,), eps=1e-12, elementwise_affine=True)",
        "        (0): BertLayer(",
        "            (self): BertSelfAttention(",
        "              (query): Linear(in_features=32, out_features=32, bias=True)  # 1,056",
        "            (intermediate_act_fn): GELUActivation()\n",
        "      (activation): Tanh()\n",
        "  (classifier): Linear(in_features=32, out_features=3, bias=True)  # 99 params\n",
        "Total parameters: 23,491\n"};
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        cr_expect(strstr(text, lines[i]), "summary lacks \"%s\":\n%s", lines[i], text);
    free(text);
}

static int n_warnings;
static void count_warning(const char *msg, void *user)
{
    (void)msg;
    (void)user;
    n_warnings++;
}

/* HF's base_model_prefix rule: a BertModel loads the bert.* weights of a
 * checkpoint with a classification head (warning once about classifier.*). */
Test(zoo_bert, base_model_loads_a_checkpoint_with_heads)
{
    BertConfig cfg;
    BertcError err;
    cr_assert_eq(bertc_bert_config_read(CASE "config.json", &cfg, &err), 0, "%s", err.msg);
    snprintf(cfg.architecture, sizeof cfg.architecture, "BertModel");
    Model base;
    cr_assert_eq(bertc_model_build(&base, arena, &cfg, &err), 0, "%s", err.msg);
    n_warnings = 0;
    BertcWarnHook old = bertc_set_warn_hook(count_warning, NULL);
    int rc = bertc_model_load(&base, CASE "weights.safetensors", false, &err);
    bertc_set_warn_hook(old, NULL);
    cr_assert_eq(rc, 0, "%s", err.msg);
    cr_assert_eq(n_warnings, 1, "expected one warning (unused classifier.*)");
    test_model_load(&model, CASE "weights.safetensors");
    int i = bertc_registry_find(base.reg, "embeddings.word_embeddings.weight");
    int j = bertc_registry_find(model.reg, "bert.embeddings.word_embeddings.weight");
    cr_assert_eq(memcmp(base.reg->params[i].var->value.data, model.reg->params[j].var->value.data,
                        sizeof(float) * 120 * 32), 0, "the word embeddings differ");
}

/* The weights of `fixture` without its pooler.* tensors, at path. */
static void write_without_pooler(const char *fixture, const char *path)
{
    char from[256];
    BertcError err;
    SafeTensors *st;
    snprintf(from, sizeof from, "test/data/zoo/%s/weights.safetensors", fixture);
    cr_assert_eq(bertc_st_open_file(arena, from, &st, &err), 0, "%s", err.msg);
    StEntry *kept = bertc_arena_alloc(arena, sizeof(StEntry) * st->n_tensors);
    size_t n = 0;
    for (size_t i = 0; i < st->n_tensors; i++) {
        const char *name = st->tensors[i].name;
        if (strstr(name, "pooler."))
            continue;
        Tensor *t = bertc_arena_alloc(arena, sizeof *t);
        cr_assert_eq(bertc_st_load_tensor(st, name, arena, t, &err), 0, "%s", err.msg);
        kept[n++] = bertc_st_entry_tensor(name, t);
    }
    cr_assert_lt(n, st->n_tensors, "%s has no pooler to leave out", fixture);
    cr_assert_eq(bertc_st_write_file(path, kept, n, NULL, 0, &err), 0, "%s", err.msg);
}

/* HF saves BertModel with add_pooling_layer=False without pooler.*: such a
 * file opens as a BertModel without its pooler (no pooler_output), and the
 * same hidden states; a classifier, which needs the pooler, names it. */
Test(zoo_bert, weights_without_a_pooler)
{
    char path[128];
    BertcError err;
    snprintf(path, sizeof path, "/tmp/bertc_no_pooler_%d.safetensors", (int)getpid());
    write_without_pooler("bert_model", path);
    Model m;
    cr_assert_eq(bertc_model_open(&m, arena, "test/data/zoo/bert_model/config.json", path, &err), 0,
                 "%s", err.msg);
    cr_expect(!m.cfg.add_pooling_layer);
    Outputs out;
    bertc_outputs_init(&out);
    Batch in;
    bertc_batch_init(&in, "batch");
    int64_t bs[2] = {1, 4};
    int32_t tokens[4] = {2, 7, 9, 3};
    bertc_batch_put_ids(&in, "input_ids", bertc_itensor_view(tokens, 2, bs));
    test_forward_ok(&m, graph, &in, &out);
    cr_expect_eq(bertc_outputs_get(&out, "pooler_output"), NULL);
    cr_expect(bertc_outputs_get(&out, "last_hidden_state"));

    write_without_pooler("bert_seqcls_single", path);
    cr_assert_neq(bertc_model_open(&m, arena, "test/data/zoo/bert_seqcls_single/config.json", path,
                             &err), 0);
    cr_expect(strstr(err.msg, "bert.pooler.dense.weight"), "%s", err.msg);
    unlink(path);
}
