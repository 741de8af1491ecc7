/* test/test_zoo_sizes.c — sizes that come from input: an input with a
 * dimension of size 0 (a batch of 0 sequences, sequences of 0 tokens, 0
 * sentences, ...) is a one-line error naming the tensor and its shape, for
 * every input of every architecture (one parameterised test per directory
 * of test/data/zoo/, as test_zoo_random_batch.c). */
#include "test/test_util.h"
#include "zoo/zoo.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

ParameterizedTestParameters(zoo_sizes, empty_inputs_are_errors)
{
    TestName *cases;
    size_t n = test_zoo_cases(&cases);
    return cr_make_param_array(TestName, cases, n);
}

/* The batch with input k's dimension d set to 0 (the data is not read). */
static Batch with_empty_dim(const Batch *full, int k, int d)
{
    Batch b = *full;
    BatchItem *it = &b.items[k];
    if (it->is_int)
        it->ids.shape[d] = 0, it->ids.numel = 0;
    else
        it->f32.shape[d] = 0, it->f32.numel = 0;
    return b;
}

ParameterizedTest(TestName *zc, zoo_sizes, empty_inputs_are_errors)
{
    char config[512];
    snprintf(config, sizeof config, "%s/%s/config.json", TEST_ZOO_DIR, zc->name);
    Arena *params = bertc_arena_create("params", 1 << 16);
    Model m;
    test_model_build(&m, params, config, NULL);
    Rng rng = bertc_rng_seed(0);
    bertc_registry_init_weights(m.reg, &rng, 0.02f);
    /* the batch lives in its own graph's step arena: g is reset after each try */
    Graph *g = bertc_ag_graph_create(1 << 16, 1), *holder = bertc_ag_graph_create(1 << 16, 1);
    bertc_ag_set_training(g, false);
    Batch full;
    BertcError err;
    cr_assert_eq(bertc_model_random_batch(&m, holder, 2, 16, true, &rng, &full, &err), 0, "%s: %s",
                 zc->name, err.msg);
    for (int k = 0; k < full.n; k++) {
        const BatchItem *it = &full.items[k];
        int ndim = it->is_int ? it->ids.ndim : it->f32.ndim;
        for (int d = 0; d < ndim; d++) {
            Batch b = with_empty_dim(&full, k, d);
            Outputs out;
            bertc_outputs_init(&out);
            err.msg[0] = '\0';
            int rc = bertc_model_forward(&m, g, &b, &out, &err);
            cr_expect_neq(rc, 0, "%s: '%s' with dimension %d of size 0 was accepted",
                          zc->name, it->name, d);
            cr_expect(strstr(err.msg, "of size 0") && strstr(err.msg, "random batch"),
                      "%s: '%s' dim %d: message \"%s\" does not name an empty dimension",
                      zc->name, it->name, d, err.msg);
            bertc_ag_graph_reset(g);
        }
    }
    bertc_ag_graph_destroy(g);
    bertc_ag_graph_destroy(holder);
    bertc_arena_destroy(params);
}

/* ------------------------------------------------------------------------ */
/* Sizes that come from the config                                           */
/* ------------------------------------------------------------------------ */

ParameterizedTestParameters(zoo_sizes, model_size_counts_the_built_model)
{
    TestName *cases;
    size_t n = test_zoo_cases(&cases);
    return cr_make_param_array(TestName, cases, n);
}

/* bertc_model_size's dry run counts exactly the elements the real build allocates
 * for its parameters and buffers (tied names counted once). */
ParameterizedTest(TestName *zc, zoo_sizes, model_size_counts_the_built_model)
{
    char config[512];
    snprintf(config, sizeof config, "%s/%s/config.json", TEST_ZOO_DIR, zc->name);
    Arena *params = bertc_arena_create("params", 1 << 16);
    Model m;
    BertConfig cfg;
    test_model_build(&m, params, config, &cfg);
    double built = 0, counted = 0;
    for (int i = 0; i < m.reg->n_params; i++)
        if (m.reg->params[i].alias_of < 0)
            built += (double)m.reg->params[i].var->value.numel;
    BertcError err;
    cr_assert_eq(bertc_model_size(&cfg, &counted, &err), 0, "%s: %s", zc->name, err.msg);
    cr_expect_eq(counted, built, "%s: bertc_model_size %.0f, the built model %.0f", zc->name, counted,
                 built);
    bertc_arena_destroy(params);
}

typedef struct SizeCase {
    char arch[40];
    char keys[160];     /* spliced into a small valid config of arch */
    char want[100];     /* what the message must name */
} SizeCase;

/* Each key alone makes a model beyond MODEL_MAX_FLOATS (hidden_size 32, or
 * 65536 where the key multiplies it). */
static const SizeCase too_big[] = {
    {"BertModel", ", \"vocab_size\": 2000000000", "vocab_size 2000000000"},
    {"BertModel", ", \"type_vocab_size\": 2000000000", "type_vocab_size 2000000000"},
    {"BertModel", ", \"max_position_embeddings\": 2000000000", "max_position_embeddings"},
    {"BertModel", ", \"intermediate_size\": 2000000000", "intermediate_size 2000000000"},
    {"BertForSequenceClassification", ", \"num_labels\": 2000000000", "num_labels 2000000000"},
    {"CGBertForSequenceClassification", ", \"context_vocab_size\": 2000000000",
     "context_vocab_size 2000000000"},
    {"QACGBertForSequenceClassification", ", \"num_labels\": 2000000000", "num_labels"},
    {"Summarizer", ", \"ff_size\": 2000000000, \"heads\": 4, \"inter_layers\": 2",
     "ff_size 2000000000"},
    {"Summarizer", ", \"ff_size\": 8, \"heads\": 4, \"inter_layers\": 2, \"pe_max_len\": "
     "2000000000", "pe_max_len 2000000000"},
    {"QAConvModelV2", ", \"sep_token_id\": 3, \"conv_filters\": 2000000000",
     "conv_filters 2000000000"},
    {"QAConvModelV2", ", \"sep_token_id\": 3, \"num_question_types\": 2000000000",
     "num_question_types 2000000000"},
    {"QAConvModelV2", ", \"sep_token_id\": 3, \"hidden_size\": 65536, \"query_len\": 60, "
     "\"max_position_embeddings\": 64", "query_len 60"},
    {"SpanBertForPreTraining", ", \"mask_token_id\": 4, \"cls_token_id\": 1, \"sep_token_id\": "
     "2, \"unk_token_id\": 3, \"sbo_dim_ffn\": 2000000000", "sbo_dim_ffn 2000000000"},
    {"SpanBertForPreTraining", ", \"mask_token_id\": 4, \"cls_token_id\": 1, \"sep_token_id\": "
     "2, \"unk_token_id\": 3, \"sbo_max_span_length\": 2000000000", "sbo_max_span_length"},
};

/* The config of c: its architecture and keys, then the small sizes it does
 * not give (a later duplicate of a key is an error: the case's keys come
 * first); its text in text (4096 bytes). */
static BertConfig case_config(const SizeCase *c, char *text)
{
    snprintf(text, 4096, "{\"architectures\": [\"%s\"]%s", c->arch, c->keys);
    static const char *const base[] = {
        "\"vocab_size\": 100", "\"hidden_size\": 32", "\"num_hidden_layers\": 2",
        "\"num_attention_heads\": 4", "\"intermediate_size\": 37",
        "\"max_position_embeddings\": 64"};
    for (size_t k = 0; k < sizeof base / sizeof base[0]; k++) {
        char key[40];
        snprintf(key, sizeof key, "%.*s", (int)(strchr(base[k], ':') - base[k]), base[k]);
        if (!strstr(c->keys, key))
            snprintf(text + strlen(text), 4096 - strlen(text), ", %s", base[k]);
    }
    snprintf(text + strlen(text), 4096 - strlen(text), "}");
    BertConfig cfg;
    BertcError err;
    cr_assert_eq(bertc_bert_config_parse(NULL, "c.json", text, strlen(text), &cfg, &err), 0,
                 "%s: %s", text, err.msg);
    return cfg;
}

/* Refused by bertc_model_build (and bertc_model_size) before anything of that size is
 * allocated, naming the key; `bertc summary` says so in one line with the
 * file's name. */
Test(zoo_sizes, every_size_key_is_bounded_by_the_total)
{
    for (size_t i = 0; i < sizeof too_big / sizeof too_big[0]; i++) {
        const SizeCase *c = &too_big[i];
        char text[4096];
        BertConfig cfg = case_config(c, text);
        BertcError err;
        Arena *a = bertc_arena_create("params", 1 << 16);
        Model m;
        err.msg[0] = '\0';
        cr_expect_neq(bertc_model_build(&m, a, &cfg, &err), 0, "%s was built", text);
        cr_expect(strstr(err.msg, c->want) && strstr(err.msg, "more than bertc's limit"),
                  "%s: message \"%s\" lacks \"%s\"", text, err.msg, c->want);
        cr_expect_lt(bertc_arena_high_water(a), (size_t)1 << 20, "%s: %zu bytes allocated", text,
                     bertc_arena_high_water(a));
        bertc_arena_destroy(a);
    }
}

/* Sizes under bertc's limit but over the memory free (here a limit of 64 MiB
 * more than the test holds): the build stopped with the arena's "arena
 * 'params': out of memory: 122 MiB more would ...; use a smaller batch or
 * shorter sequences", naming neither the parameter nor the key. It now names
 * the largest parameter, its shape and the key that sized it first. */
static const SizeCase no_room[] = {
    {"Summarizer", ", \"ff_size\": 8, \"heads\": 4, \"inter_layers\": 1, \"pe_max_len\": "
     "1000000", "'encoder.pos_emb.pe' [1, 1000000, 32], sized by pe_max_len 1000000"},
    {"CGBertForSequenceClassification", ", \"context_vocab_size\": 1000000",
     "'bert.context_embeddings.weight' [1000000, 32], sized by context_vocab_size 1000000"},
    {"BertModel", ", \"vocab_size\": 1000000",
     "'embeddings.word_embeddings.weight' [1000000, 32], sized by vocab_size 1000000"},
    {"BertModel", ", \"intermediate_size\": 1000000", "sized by intermediate_size 1000000"},
    {"BertModel", ", \"max_position_embeddings\": 1000000",
     "sized by max_position_embeddings 1000000"},
};

Test(zoo_sizes, sizes_over_the_memory_free_name_the_largest_parameter)
{
    for (size_t i = 0; i < sizeof no_room / sizeof no_room[0]; i++) {
        char text[4096];
        BertConfig cfg = case_config(&no_room[i], text);
        Arena *a = bertc_arena_create("params", 1 << 16);
        bertc_arena_set_memory_limit(bertc_arena_memory_total() + (64 << 20));
        Model m;
        BertcError err = {{0}};
        int rc = bertc_model_build(&m, a, &cfg, &err);
        bertc_arena_set_memory_limit(0);
        cr_expect_neq(rc, 0, "%s was built", text);
        cr_expect(strstr(err.msg, no_room[i].want) && strstr(err.msg, "of memory free") &&
                      !strchr(err.msg, '\n'),
                  "%s: message \"%s\" lacks \"%s\"", text, err.msg, no_room[i].want);
        bertc_arena_destroy(a);
    }
}

/* A config changed in code goes through the same rules. */
Test(zoo_sizes, configs_made_in_code_are_checked)
{
    static const struct {
        int field;
        char want[80];
    } cases[] = {{0, "config: hidden_size = 0"}, {1, "hidden_size 768, num_hidden_layers 5000: lower these keys"},
                 {2, "config: layer_norm_eps = nan"},
                 {3, "config: query_len 100 is longer than max_position_embeddings 64"},
                 {4, "config: masking.special_token_ids[0] = 99999"},
                 {5, "config: hidden_size 768 is not a multiple of num_attention_heads 5"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        BertConfig cfg = test_config_default("BertModel");
        switch (cases[i].field) {
        case 0: cfg.hidden_size = 0; break;
        case 1: cfg.num_hidden_layers = 5000; break;
        case 2: cfg.layer_norm_eps = NAN; break;
        case 3:
            cfg = test_config_default("QAConvModelV2");
            cfg.sep_token_id = 102;
            cfg.max_position_embeddings = 64;
            test_config_set(&cfg, "query_len", 100);
            break;
        case 4:
            cfg = test_config_default("SpanBertForPreTraining");
            cfg.mask_token_id = cfg.cls_token_id = cfg.sep_token_id = cfg.unk_token_id = 1;
            test_config_set(&cfg, "masking", true);
            test_config_special_ids(&cfg, 1, (const int32_t[]){99999});
            break;
        default: cfg.num_attention_heads = 5; break;
        }
        Arena *a = bertc_arena_create("params", 1 << 16);
        Model m;
        BertcError err = {{0}};
        cr_expect_neq(bertc_model_build(&m, a, &cfg, &err), 0, "case %zu was built", i);
        cr_expect(strstr(err.msg, cases[i].want), "case %zu: message \"%s\" lacks \"%s\"", i,
                  err.msg, cases[i].want);
        bertc_arena_destroy(a);
    }
}

/* An empty input whose other dimension is huge ([2^62, 0]: 0 bytes of data,
 * a valid safetensors entry) loads and is refused as empty, not taken for
 * an element count that overflows. */
Test(zoo_sizes, empty_input_with_a_huge_dimension)
{
    const char *header = "{\"input_ids\": {\"dtype\": \"I64\", \"shape\": [4611686018427387904, "
                         "0], \"data_offsets\": [0, 0]}}";
    size_t n = strlen(header);
    char file[256];
    for (int i = 0; i < 8; i++)
        file[i] = (char)((uint64_t)n >> (8 * i));
    memcpy(file + 8, header, n);
    Arena *a = bertc_arena_create("inputs", 1 << 16);
    SafeTensors *st;
    BertcError err = {{0}};
    cr_assert_eq(bertc_st_open_memory(a, "in.safetensors", file, 8 + n, &st, &err), 0, "%s", err.msg);
    Batch batch;
    bertc_batch_init(&batch, "in.safetensors");
    cr_assert_eq(bertc_batch_from_safetensors(&batch, st, a, &err), 0, "%s", err.msg);
    Arena *params = bertc_arena_create("params", 1 << 16);
    Model m;
    test_model_build(&m, params, TEST_ZOO_DIR "/bert_model/config.json", NULL);
    Graph *g = bertc_ag_graph_create(1 << 16, 1);
    Outputs out;
    bertc_outputs_init(&out);
    cr_expect_neq(bertc_model_forward(&m, g, &batch, &out, &err), 0);
    cr_expect(strstr(err.msg, "'input_ids' has shape [4611686018427387904, 0], with a "
                              "dimension of size 0"), "%s", err.msg);
    bertc_ag_graph_destroy(g);
    bertc_arena_destroy(params);
    bertc_st_close(st);
    bertc_arena_destroy(a);
}
