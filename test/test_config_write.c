/* test/test_config_write.c — bertc_bert_config_format writes every key the reader
 * reads: for each architecture, a config with non-default values survives a
 * write -> read round trip field for field. */
#include "test/test_util.h"
#include "zoo/zoo.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* A value of key k other than its default, still in its range. */
static double unusual_value(const ConfigKey *k, double def)
{
    switch (k->kind) {
    case CONFIG_FLOAT:
    case CONFIG_DOUBLE:
        return k->range == RANGE_PROB || k->range == RANGE_PROB_POSITIVE ? def * 0.5 + 0.125
                                                                           : def * 1.5 + 1e-7;
    case CONFIG_U64: return 1234567890123.0;
    case CONFIG_CHOICE: return def == 0 ? 1 : 0;
    case CONFIG_OBJECT: return 1;
    case CONFIG_TOKEN_IDS: return 0;
    case CONFIG_INT: break;
    }
    return k->range == RANGE_TOKEN_ID ? 7 : k->range == RANGE_LAYERS_OR_0 ? 2 : def + 3;
}

/* Every common key and every key of the architecture away from its default:
 * a head count that divides 48, token ids within 321. */
static BertConfig unusual(const ModelArch *arch)
{
    BertConfig c;
    BertcError err;
    cr_assert_eq(bertc_model_config_default(&c, arch->name, &err), 0, "%s", err.msg);
    c.vocab_size = 321;
    c.hidden_size = 48;
    c.num_hidden_layers = 3;
    c.num_attention_heads = 6;
    c.intermediate_size = 100;
    c.hidden_act = ACT_GELU_TANH;
    c.hidden_dropout_prob = 0.25f;
    c.attention_probs_dropout_prob = 0.15f;
    c.max_position_embeddings = 77;
    c.type_vocab_size = 3;
    c.initializer_range = 0.037f;
    c.layer_norm_eps = 1e-7f;
    c.classifier_dropout = 0.375f;
    c.pad_token_id = 1;
    c.sep_token_id = 102;
    c.mask_token_id = 103;
    c.cls_token_id = 101;
    c.unk_token_id = 100;
    c.num_labels = 3;
    c.problem_type = PROBLEM_MULTI_LABEL;
    c.add_pooling_layer = false;
    const char *labels[] = {"NEG", "NEU \"quoted\"", "POS"};
    cr_assert_eq(bertc_bert_config_set_labels(&c, labels, 3, &err), 0, "%s", err.msg);
    for (int i = 0; i < arch->n_keys; i++) {
        const ConfigKey *k = &arch->keys[i];
        if (k->kind == CONFIG_TOKEN_IDS) {
            test_config_special_ids(&c, 2, (const int32_t[]){5, 6});
            continue;
        }
        double v = unusual_value(k, bertc_config_key_value(k, c.model.bytes));
        if (strcmp(k->key, "heads") == 0)
            v = 4;   /* divides hidden_size 48 */
        if (strcmp(k->key, "query_len") == 0)
            v = 12;  /* within max_position_embeddings */
        test_config_set(&c, k->key, v);
    }
    cr_assert_eq(bertc_bert_config_check(&c, &err), 0, "%s: %s", arch->name, err.msg);
    return c;
}

/* Every common field, and every key of the architecture. */
static void expect_same(const ModelArch *arch, const BertConfig *a, const BertConfig *b)
{
    cr_expect_str_eq(a->architecture, b->architecture);
    cr_expect_eq(a->vocab_size, b->vocab_size);
    cr_expect_eq(a->hidden_size, b->hidden_size);
    cr_expect_eq(a->num_hidden_layers, b->num_hidden_layers);
    cr_expect_eq(a->intermediate_size, b->intermediate_size);
    cr_expect_eq(a->hidden_act, b->hidden_act);
    cr_expect_eq(a->hidden_dropout_prob, b->hidden_dropout_prob);
    cr_expect_eq(a->type_vocab_size, b->type_vocab_size);
    cr_expect_eq(a->initializer_range, b->initializer_range);
    cr_expect_eq(a->layer_norm_eps, b->layer_norm_eps, "%g vs %g", (double)a->layer_norm_eps,
                 (double)b->layer_norm_eps);
    cr_expect_eq(a->classifier_dropout, b->classifier_dropout);
    cr_expect_eq(a->num_labels, b->num_labels);
    cr_expect_eq(a->problem_type, b->problem_type);
    cr_expect_eq(a->add_pooling_layer, b->add_pooling_layer);
    cr_expect_eq(a->sep_token_id, b->sep_token_id);
    cr_expect_eq(a->unk_token_id, b->unk_token_id);
    cr_assert_eq(a->n_label_names, b->n_label_names);
    for (int i = 0; i < a->n_label_names; i++)
        cr_expect_str_eq(bertc_bert_config_label(a, i), bertc_bert_config_label(b, i));
    for (int i = 0; i < arch->n_keys; i++) {
        const ConfigKey *k = &arch->keys[i];
        cr_expect_eq(bertc_config_key_value(k, a->model.bytes), bertc_config_key_value(k, b->model.bytes),
                     "%s: %s is %g written, %g read", arch->name, k->key,
                     bertc_config_key_value(k, a->model.bytes), bertc_config_key_value(k, b->model.bytes));
    }
    cr_expect_eq(memcmp(a->model.bytes, b->model.bytes, sizeof a->model.bytes), 0,
                 "%s: the model keys differ after the round trip", arch->name);
}

Test(config_write, round_trip_every_architecture)
{
    for (int i = 0; bertc_zoo_arch_at(i); i++) {
        const ModelArch *arch = bertc_zoo_arch_at(i);
        BertConfig in = unusual(arch), out;
        char text[16384];
        size_t n;
        BertcError err;
        cr_assert_eq(bertc_bert_config_format(&in, text, sizeof text, &n, &err), 0, "%s", err.msg);
        cr_assert_eq(bertc_bert_config_parse(NULL, "written", text, n, &out, &err), 0,
                     "%s reads back with an error: %s\n%s", in.architecture, err.msg, text);
        expect_same(arch, &in, &out);
    }
}

Test(config_write, too_small_a_buffer_is_an_error)
{
    BertConfig c = test_config_default("BertModel");
    char text[64];
    size_t n;
    BertcError err;
    cr_assert_neq(bertc_bert_config_format(&c, text, sizeof text, &n, &err), 0);
    cr_assert(strstr(err.msg, "do not fit"), "%s", err.msg);
}

/* A config whose keys are each in range but whose model could never be
 * allocated is refused before anything is (the fuzzer's finding): by
 * bertc_model_size, which bertc_model_build runs first, naming the keys. */
Test(config_write, impossible_model_size_is_refused)
{
    const char *text = "{\"architectures\": [\"BertModel\"], \"vocab_size\": 2000000000, "
                       "\"hidden_size\": 2000000000, \"num_hidden_layers\": 2, "
                       "\"num_attention_heads\": 1, \"intermediate_size\": 8, "
                       "\"max_position_embeddings\": 8}";
    BertConfig cfg;
    BertcError err;
    double floats;
    cr_assert_eq(bertc_bert_config_parse(NULL, "huge.json", text, strlen(text), &cfg, &err), 0,
                 "%s", err.msg);
    cr_assert_neq(bertc_model_size(&cfg, &floats, &err), 0);
    cr_assert(strstr(err.msg, "config: ") && strstr(err.msg, "more than bertc's limit") &&
              strstr(err.msg, "vocab_size 2000000000"), "%s", err.msg);
    bertc_model_config_error(&err, "huge.json");
    cr_assert(strstr(err.msg, "huge.json: BertModel"), "%s", err.msg);
    BertConfig base = test_config_default("BertModel");
    char ok[4096];
    size_t n;
    cr_assert_eq(bertc_bert_config_format(&base, ok, sizeof ok, &n, &err), 0, "%s", err.msg);
    cr_assert_eq(bertc_bert_config_parse(NULL, "base.json", ok, n, &cfg, &err), 0, "%s", err.msg);
    cr_assert_eq(bertc_model_size(&cfg, &floats, &err), 0, "bert-base must stay allowed: %s",
                 err.msg);
    cr_expect_eq(floats, 109482240.0, "bert-base-uncased has 109482240 parameters, not %.0f",
                 floats);
}

/* More than 64 layers (HF sets no ceiling): 100 narrow layers are a model
 * like any other; a count whose layers' records alone could not fit in
 * memory is refused before any of them is registered, naming the key,
 * num_hidden_layers or an architecture's own (the Summarizer's
 * inter_layers). */
Test(config_write, layer_counts_are_bounded_by_memory_only)
{
    BertConfig cfg = test_config_default("BertForSequenceClassification");
    cfg.vocab_size = 20, cfg.hidden_size = 4, cfg.num_attention_heads = 1;
    cfg.intermediate_size = 4, cfg.max_position_embeddings = 8, cfg.num_hidden_layers = 100;
    BertcError err;
    double floats;
    cr_assert_eq(bertc_model_size(&cfg, &floats, &err), 0, "100 layers: %s", err.msg);
    Arena *a = bertc_arena_create("layers", 1 << 20);
    Model m;
    test_model_from_config(&m, a, &cfg);
    cr_expect_eq(bertc_registry_find(m.reg, "bert.encoder.layer.99.output.dense.weight") >= 0,
                 true, "no layer 99");
    cr_expect_eq(bertc_registry_find(m.reg, "bert.encoder.layer.100.output.dense.weight"), -1);
    bertc_arena_destroy(a);
    cfg.num_hidden_layers = INT32_MAX;
    cr_assert_neq(bertc_model_size(&cfg, &floats, &err), 0);
    cr_expect(strstr(err.msg, "config: num_hidden_layers 2147483647 needs") &&
              strstr(err.msg, "lower num_hidden_layers"), "%s", err.msg);
    BertConfig sum = test_config_default("Summarizer");
    sum.vocab_size = 20, sum.hidden_size = 4, sum.num_attention_heads = 1;
    sum.intermediate_size = 4, sum.max_position_embeddings = 8, sum.num_hidden_layers = 1;
    test_config_set(&sum, "heads", 1);
    test_config_set(&sum, "ff_size", 4);
    test_config_set(&sum, "inter_layers", 100);
    cr_assert_eq(bertc_model_size(&sum, &floats, &err), 0, "100 inter_layers: %s", err.msg);
    test_config_set(&sum, "inter_layers", INT32_MAX);
    cr_assert_neq(bertc_model_size(&sum, &floats, &err), 0);
    cr_expect(strstr(err.msg, "config: inter_layers 2147483647 needs"), "%s", err.msg);
}

/* Found by fuzzing: a float key beyond float32's range became inf and could
 * not be written back as JSON; a tiny "> 0" key rounded to 0. */
Test(config_write, float_keys_must_fit_float32)
{
    const char *huge = "{\"architectures\": [\"BertModel\"], \"vocab_size\": 10, "
                       "\"hidden_size\": 4, \"num_hidden_layers\": 1, \"num_attention_heads\": 1,"
                       " \"intermediate_size\": 8, \"max_position_embeddings\": 8, "
                       "\"layer_norm_eps\": 1e306}";
    BertConfig cfg;
    BertcError err;
    cr_assert_neq(bertc_bert_config_parse(NULL, "huge_eps.json", huge, strlen(huge), &cfg, &err), 0);
    cr_assert(strstr(err.msg, "layer_norm_eps") && strstr(err.msg, "float32"), "%s", err.msg);
    const char *tiny = "{\"architectures\": [\"QAConvModelV2\"], \"vocab_size\": 10, "
                       "\"hidden_size\": 4, \"num_hidden_layers\": 1, \"num_attention_heads\": 1,"
                       " \"intermediate_size\": 8, \"max_position_embeddings\": 8, "
                       "\"sep_token_id\": 2, \"attention_temperature\": 1e-50}";
    cr_assert_neq(bertc_bert_config_parse(NULL, "tiny.json", tiny, strlen(tiny), &cfg, &err), 0);
    cr_assert(strstr(err.msg, "attention_temperature") && strstr(err.msg, "> 0"), "%s", err.msg);
}

/* id2label with many long names: 300 labels of 24 characters (7,500 bytes
 * of names, past the 4,096 a config holds in itself) are written, read back
 * equal with their label2id, and kept by the model built from them after
 * the config that read them is freed. They used to be refused, on writing
 * and on reading, by a 4,096-byte cap on all names together. */
Test(config_write, three_hundred_long_label_names_round_trip)
{
    enum { N = 300 };
    static char text[N][40];
    const char *names[N];
    for (int i = 0; i < N; i++) {
        snprintf(text[i], sizeof text[i], "label-%03d-abcdefghijklmn", i);
        names[i] = text[i];
    }
    cr_assert_eq(strlen(names[0]), 24);
    BertConfig in = test_config_default("BertForSequenceClassification"), out;
    in.vocab_size = 40, in.hidden_size = 8, in.num_hidden_layers = 1;
    in.num_attention_heads = 2, in.intermediate_size = 16, in.max_position_embeddings = 16;
    in.num_labels = N;
    BertcError err;
    cr_assert_eq(bertc_bert_config_set_labels(&in, names, N, &err), 0, "%s", err.msg);
    char path[128];
    snprintf(path, sizeof path, "/tmp/bertc_many_labels_%d.json", (int)getpid());
    cr_assert_eq(bertc_bert_config_write(path, &in, &err), 0, "%s", err.msg);
    cr_assert_eq(bertc_bert_config_read(path, &out, &err), 0, "%s", err.msg);
    remove(path);
    cr_assert_eq(out.n_label_names, N);
    for (int i = 0; i < N; i++)
        cr_expect_str_eq(bertc_bert_config_label(&out, i), names[i], "label %d", i);
    Arena *a = bertc_arena_create("labels", 1 << 20);
    Model m;
    test_model_from_config(&m, a, &out);
    bertc_bert_config_free(&out);
    bertc_bert_config_free(&in);
    cr_expect_eq(out.n_label_names, 0, "freed, the config has no names left");
    for (int i = 0; i < N; i++)
        cr_expect_str_eq(bertc_bert_config_label(&m.cfg, i), names[i], "the model's label %d", i);
    bertc_arena_destroy(a);
}

/* id2label may name a label twice (HF accepts it); label2id then has one
 * entry per distinct name, its last id, as HF's {name: id} dict does. The
 * written config used to repeat the key in label2id, which no JSON reader
 * of bertc's (duplicate keys are an error) could read back (fuzz_config). */
Test(config_write, a_label_named_twice_writes_label2id_once)
{
    const char *names[3] = {"neg", "neu", "neu"};
    BertConfig in = test_config_default("BertForSequenceClassification"), out;
    in.vocab_size = 40, in.hidden_size = 8, in.num_hidden_layers = 1;
    in.num_attention_heads = 2, in.intermediate_size = 16, in.max_position_embeddings = 16;
    in.num_labels = 3;
    BertcError err;
    cr_assert_eq(bertc_bert_config_set_labels(&in, names, 3, &err), 0, "%s", err.msg);
    char path[128];
    snprintf(path, sizeof path, "/tmp/bertc_twice_label_%d.json", (int)getpid());
    cr_assert_eq(bertc_bert_config_write(path, &in, &err), 0, "%s", err.msg);
    cr_assert_eq(bertc_bert_config_read(path, &out, &err), 0, "%s", err.msg);
    FILE *f = fopen(path, "r");
    char text[4096];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    remove(path);
    cr_expect(strstr(text, "\"label2id\": {\"neg\": 0, \"neu\": 2}"), "%s", text);
    cr_assert_eq(out.n_label_names, 3);
    for (int i = 0; i < 3; i++)
        cr_expect_str_eq(bertc_bert_config_label(&out, i), names[i], "label %d", i);
    bertc_bert_config_free(&out);
    bertc_bert_config_free(&in);
}
