/* test/test_zoo_heads.c — the Hugging Face BERT heads (zoo/models/bert_*.c): wrong
 * labels and positions are one-line errors naming the tensor, the losses
 * that need two inputs refuse one alone, the classifier_dropout rule, the
 * heads without a pooler, and HF's "bert." prefix rule for their checkpoints.
 * Their values are checked against PyTorch by test_zoo_parity.c. */
#include "test/test_util.h"
#include "zoo/zoo.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <math.h>
#include <string.h>

#define ZOO "test/data/zoo/"
#define B 2
#define S 8

static Arena *arena;
static Graph *graph;
static Model model;
static Batch batch;

static void setup(void)
{
    test_open(&arena, &graph);
    bertc_ag_set_training(graph, false);
}

static void teardown(void) { test_close(arena, graph); }

TestSuite(zoo_heads, .init = setup, .fini = teardown);

/* The fixture's model and a valid (B, S) batch of input_ids, attention_mask
 * and token_type_ids that each test then adds to. */
static void open_case(const char *config)
{
    test_model_build(&model, arena, config, NULL);
    int64_t bs[2] = {B, S};
    ITensor ids = bertc_itensor_new(arena, 2, bs), mask = bertc_itensor_new(arena, 2, bs);
    for (int i = 0; i < B * S; i++) {
        ids.data[i] = 5 + i;
        mask.data[i] = 1;
    }
    bertc_batch_init(&batch, "inputs.safetensors");
    bertc_batch_put_ids(&batch, "input_ids", ids);
    bertc_batch_put_ids(&batch, "attention_mask", mask);
    bertc_batch_put_ids(&batch, "token_type_ids", bertc_itensor_new(arena, 2, bs));
}

/* An integer input of the given shape holding `values` (repeated). */
static void put(const char *name, int ndim, const int64_t *shape, const int32_t *values, int n)
{
    ITensor t = bertc_itensor_new(arena, ndim, shape);
    for (int64_t i = 0; i < t.numel; i++)
        t.data[i] = values[i % n];
    bertc_batch_put_ids(&batch, name, t);
}

static const int64_t b1[1] = {B}, bs2[2] = {B, S};

static Var *forward_loss(void)
{
    Outputs out;
    test_forward_ok(&model, graph, &batch, &out);
    return bertc_outputs_get(&out, "loss");
}

/* ---- BertForTokenClassification ---------------------------------------- */

Test(zoo_heads, token_labels_are_classes_or_ignored)
{
    open_case(ZOO "bert_tokcls/config.json");          /* num_labels 5 */
    const int32_t ok[] = {-100, 0, 4, 2};
    put("labels", 2, bs2, ok, 4);
    cr_assert(forward_loss(), "labels with -100 gave no loss");
    batch.n--;
    const int32_t bad[] = {-100, 0, 4, 2, 1, 5};
    put("labels", 2, bs2, bad, 6);
    test_forward_fails(&model, graph, &batch, "'labels'[0, 5] = 5", "num_labels 5", NULL);
    batch.n--;
    put("labels", 1, b1, ok + 1, 1);
    test_forward_fails(&model, graph, &batch, "'labels'", "[2, 8]", NULL);
}

/* ---- BertForQuestionAnswering ------------------------------------------ */

Test(zoo_heads, qa_needs_both_positions)
{
    open_case(ZOO "bert_qa/config.json");
    const int32_t start[] = {1, 3};
    put("start_positions", 1, b1, start, 2);
    test_forward_fails(&model, graph, &batch, "'start_positions' is given without",
                       "'end_positions'", NULL);
    batch.n--;
    put("end_positions", 1, b1, start, 2);
    test_forward_fails(&model, graph, &batch, "'end_positions' is given without",
                       "'start_positions'", NULL);
    put("start_positions", 1, b1, start, 2);
    cr_assert(forward_loss());
}

/* -log softmax(z)[t] of one row of S logits. */
static double row_ce(const float *z, int t)
{
    double m = z[0], sum = 0;
    for (int i = 1; i < S; i++)
        m = z[i] > m ? z[i] : m;
    for (int i = 0; i < S; i++)
        sum += exp(z[i] - m);
    return m + log(sum) - z[t];
}

/* HF clamps positions into [0, S] and ignores S: an end past the sequence
 * leaves its row out of the end CE, a negative start counts as 0. */
Test(zoo_heads, qa_clamps_and_ignores_positions)
{
    open_case(ZOO "bert_qa/config.json");
    test_model_load(&model, ZOO "bert_qa/weights.safetensors");
    const int32_t start[] = {-2, 3}, end[] = {1000, 4};
    put("start_positions", 1, b1, start, 2);
    put("end_positions", 1, b1, end, 2);
    Outputs out;
    test_forward_ok(&model, graph, &batch, &out);
    const float *s = bertc_outputs_get(&out, "start_logits")->value.data;
    const float *e = bertc_outputs_get(&out, "end_logits")->value.data;
    double want = ((row_ce(s, 0) + row_ce(s + S, 3)) / 2 + row_ce(e + S, 4)) / 2;
    double got = bertc_outputs_get(&out, "loss")->value.data[0];
    cr_expect(fabs(got - want) <= 1e-5 * fabs(want), "loss %.8g, by hand %.8g", got, want);
}

Test(zoo_heads, qa_needs_two_labels)
{
    BertConfig cfg;
    BertcError err;
    cr_assert_eq(bertc_bert_config_read(ZOO "bert_qa/config.json", &cfg, &err), 0, "%s", err.msg);
    cfg.num_labels = 3;
    cr_assert_neq(bertc_model_build(&model, arena, &cfg, &err), 0);
    cr_assert(strstr(err.msg, "num_labels 2") && strstr(err.msg, "num_labels 3"), "%s",
              err.msg);
}

/* ---- BertForNextSentencePrediction and BertForPreTraining ----------------- */

Test(zoo_heads, nsp_labels_are_0_or_1)
{
    open_case(ZOO "bert_nsp/config.json");
    const int32_t bad[] = {1, 2};
    put("labels", 1, b1, bad, 2);
    test_forward_fails(&model, graph, &batch, "'labels'[1] = 2", "next-sentence classes 2",
                       NULL);
}

Test(zoo_heads, pretraining_needs_both_labels)
{
    open_case(ZOO "bert_pretraining/config.json");
    const int32_t mlm[] = {-100, 7}, nsp[] = {0, 1}, bad[] = {0, 3};
    put("labels", 2, bs2, mlm, 2);
    test_forward_fails(&model, graph, &batch, "'labels' is given without",
                       "'next_sentence_label'", NULL);
    batch.n--;
    put("next_sentence_label", 1, b1, nsp, 2);
    test_forward_fails(&model, graph, &batch, "'next_sentence_label' is given without",
                       "'labels'", NULL);
    put("labels", 2, bs2, mlm, 2);
    cr_assert(forward_loss());
    batch.n -= 2;
    put("next_sentence_label", 1, b1, bad, 2);
    put("labels", 2, bs2, mlm, 2);
    test_forward_fails(&model, graph, &batch, "'next_sentence_label'[1] = 3", "classes 2",
                       NULL);
}

/* ---- the classifier_dropout rule ------------------------------------------ */

/* The printed module tree of a config.json text. */
static void tree_of(const char *json, char *buf, size_t cap)
{
    BertConfig cfg;
    BertcError err;
    cr_assert_eq(bertc_bert_config_parse(NULL, "config.json", json, strlen(json), &cfg, &err), 0,
                 "%s", err.msg);
    cr_assert_eq(bertc_model_build(&model, arena, &cfg, &err), 0, "%s", err.msg);
    FILE *f = fmemopen(buf, cap, "w");
    bertc_registry_print(model.reg, f);
    fclose(f);
}

#define SMALL "\"vocab_size\": 50, \"hidden_size\": 8, \"num_hidden_layers\": 1, " \
              "\"num_attention_heads\": 2, \"intermediate_size\": 16, "           \
              "\"max_position_embeddings\": 16, \"hidden_dropout_prob\": 0.125"

Test(zoo_heads, classifier_dropout_else_hidden_dropout)
{
    static char tree[16384];
    const char *archs[] = {"BertForSequenceClassification", "BertForTokenClassification"};
    for (int i = 0; i < 2; i++) {
        char json[512];
        snprintf(json, sizeof json, "{\"architectures\": [\"%s\"], " SMALL
                 ", \"classifier_dropout\": 0.375}", archs[i]);
        tree_of(json, tree, sizeof tree);
        cr_expect(strstr(tree, "(dropout): Dropout(p=0.375"), "%s:\n%s", archs[i], tree);
        snprintf(json, sizeof json, "{\"architectures\": [\"%s\"], " SMALL
                 ", \"classifier_dropout\": null}", archs[i]);
        tree_of(json, tree, sizeof tree);
        cr_expect(!strstr(tree, "p=0.375") && strstr(tree, "(dropout): Dropout(p=0.125"),
                  "%s:\n%s", archs[i], tree);
    }
}

/* ---- no pooler, and the "bert." prefix ----------------------------------- */

Test(zoo_heads, heads_without_pooler_register_none)
{
    const char *none[] = {ZOO "bert_tokcls/config.json", ZOO "bert_qa/config.json",
                          ZOO "bert_model_no_pooler/config.json", ZOO "bert_mlm/config.json"};
    for (int i = 0; i < 4; i++) {
        test_model_build(&model, arena, none[i], NULL);
        for (int p = 0; p < model.reg->n_params; p++)
            cr_expect(!strstr(model.reg->params[p].name, "pooler"), "%s registers '%s'",
                      none[i], model.reg->params[p].name);
    }
    test_model_build(&model, arena, ZOO "bert_model/config.json", NULL);
    cr_expect(bertc_registry_find(model.reg, "pooler.dense.weight") >= 0);
}

/* A head loads a bare BertModel checkpoint ("embeddings..." for
 * "bert.embeddings..."), its own head then at init; and a BertModel loads the
 * "bert.*" weights of a head's checkpoint. */
Test(zoo_heads, heads_load_base_checkpoints_and_back)
{
    BertcError err;
    test_model_build(&model, arena, ZOO "bert_qa/config.json", NULL);
    cr_assert_eq(bertc_model_load(&model, ZOO "bert_model_no_pooler/weights.safetensors", true, &err),
                 0, "%s", err.msg);
    Model base;
    test_model_build(&base, arena, ZOO "bert_model_no_pooler/config.json", NULL);
    test_model_load(&base, ZOO "bert_model_no_pooler/weights.safetensors");
    int q = bertc_registry_find(model.reg, "bert.encoder.layer.1.output.dense.weight");
    int b = bertc_registry_find(base.reg, "encoder.layer.1.output.dense.weight");
    cr_assert(q >= 0 && b >= 0);
    const Tensor *x = &model.reg->params[q].var->value, *y = &base.reg->params[b].var->value;
    cr_expect_eq(memcmp(x->data, y->data, sizeof(float) * (size_t)x->numel), 0);

    test_model_build(&base, arena, ZOO "bert_model_no_pooler/config.json", NULL);
    test_model_load(&base, ZOO "bert_tokcls/weights.safetensors");
}

/* ---- BertForMultipleChoice ------------------------------------------------- */

/* (B, C, S) inputs: shapes and values are checked with their own indices
 * before the rows are flattened; labels are choices. */
Test(zoo_heads, multiple_choice_inputs_and_labels)
{
    test_model_build(&model, arena, ZOO "bert_multiple_choice/config.json", NULL);
    int64_t bcs[3] = {B, 3, S}, wrong[3] = {B, 2, S};
    const int32_t ids[] = {5, 6, 7}, ones[] = {1}, bad_mask[] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 2};
    const int32_t label[] = {2, 0}, bad_label[] = {0, 3};
    bertc_batch_init(&batch, "inputs.safetensors");
    put("input_ids", 3, bcs, ids, 3);
    put("attention_mask", 3, bcs, ones, 1);
    put("labels", 1, b1, label, 2);
    Outputs out;
    test_forward_ok(&model, graph, &batch, &out);
    Var *logits = bertc_outputs_get(&out, "logits");
    cr_assert(logits && logits->value.ndim == 2 && logits->value.shape[0] == B &&
              logits->value.shape[1] == 3 && bertc_outputs_get(&out, "loss"));
    batch.n--;
    put("labels", 1, b1, bad_label, 2);
    test_forward_fails(&model, graph, &batch, "'labels'[1] = 3", "num_choices 3", NULL);
    batch.n -= 2;
    put("attention_mask", 3, bcs, bad_mask, 10);
    put("labels", 1, b1, label, 2);
    test_forward_fails(&model, graph, &batch, "'attention_mask'[0, 1, 1] = 2", "neither", NULL);
    batch.n -= 2;
    put("attention_mask", 3, wrong, ones, 1);
    test_forward_fails(&model, graph, &batch, "'attention_mask'", "[2, 2, 8]", NULL);
    batch.n = 0;
    put("input_ids", 2, bs2, ids, 3);
    test_forward_fails(&model, graph, &batch, "'input_ids'", "[2, 8]", NULL);
    int64_t none[3] = {B, 0, S};
    batch.n = 0;
    put("input_ids", 3, none, ids, 3);
    test_forward_fails(&model, graph, &batch, "'input_ids' has shape [2, 0, 8]", "size 0", NULL);
}

/* ---- the config keys the heads read ------------------------------------------ */

/* add_pooling_layer false and classifier_dropout survive bertc_bert_config_format;
 * their defaults (true, unset) are not written. (test_config.c checks how
 * they are read and refused.) */
Test(zoo_heads, head_config_keys_round_trip)
{
    const char *json = "{\"architectures\": [\"BertModel\"], " SMALL
                       ", \"add_pooling_layer\": false, \"classifier_dropout\": 0.25}";
    BertConfig cfg, back;
    BertcError err;
    char text[4096];
    size_t n;
    cr_assert_eq(bertc_bert_config_parse(NULL, "config.json", json, strlen(json), &cfg, &err), 0,
                 "%s", err.msg);
    cr_expect(!cfg.add_pooling_layer && cfg.classifier_dropout == 0.25f);
    cr_assert_eq(bertc_bert_config_format(&cfg, text, sizeof text, &n, &err), 0, "%s", err.msg);
    cr_assert_eq(bertc_bert_config_parse(NULL, "written", text, n, &back, &err), 0, "%s", err.msg);
    cr_expect(!back.add_pooling_layer && back.classifier_dropout == 0.25f, "%s", text);
    cfg = bertc_bert_config_default("BertModel");
    cr_assert_eq(bertc_bert_config_format(&cfg, text, sizeof text, &n, &err), 0, "%s", err.msg);
    cr_expect(!strstr(text, "add_pooling_layer") && !strstr(text, "classifier_dropout"), "%s",
              text);
}
