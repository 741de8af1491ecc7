/* test/test_config_write.c — bert_config_format writes every key the reader
 * reads: for each architecture, a config with non-default values survives a
 * write -> read round trip field for field. */
#include "test/test_util.h"
#include "nn/config.h"
#include "zoo/zoo.h"

#include <criterion/criterion.h>
#include <string.h>

static BertConfig unusual(BertArch arch)
{
    BertConfig c = bert_config_default(arch);
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
    c.pad_token_id = 1;
    c.num_labels = 5;
    c.problem_type = PROBLEM_MULTI_LABEL;
    c.context_vocab_size = 9;
    c.pooler_type = POOLER_FIRST_TOKEN;
    c.ff_size = 64;
    c.heads = 4;
    c.inter_layers = 2;
    c.inter_layer_norm_eps = 2e-6f;
    c.pe_max_len = 99;
    c.query_len = 12;
    c.conv_filters = 16;
    c.num_question_types = 4;
    c.attention_temperature = 3.5f;
    c.query_loss_divisor = 2.5f;
    c.sep_token_id = 102 % 321;
    c.mask_token_id = 103 % 321;
    c.cls_token_id = 101 % 321;
    c.unk_token_id = 100 % 321;
    c.sbo_dim_ffn = 40;
    c.sbo_max_span_length = 4;
    c.sbo_layer_norm_eps = 3e-5f;
    c.masking = (SpanMaskingConfig){true, 1234567890123ull, 0.3, 0.25, 7, 2, {5, 6}};
    return c;
}

/* Fields each architecture actually reads back (the others keep defaults). */
static void expect_same(const BertConfig *a, const BertConfig *b)
{
    cr_expect_eq(a->arch, b->arch);
    cr_expect_eq(a->vocab_size, b->vocab_size);
    cr_expect_eq(a->hidden_size, b->hidden_size);
    cr_expect_eq(a->num_hidden_layers, b->num_hidden_layers);
    cr_expect_eq(a->intermediate_size, b->intermediate_size);
    cr_expect_eq(a->hidden_act, b->hidden_act);
    cr_expect_eq(a->hidden_dropout_prob, b->hidden_dropout_prob);
    cr_expect_eq(a->initializer_range, b->initializer_range);
    cr_expect_eq(a->layer_norm_eps, b->layer_norm_eps, "%g vs %g", (double)a->layer_norm_eps,
                 (double)b->layer_norm_eps);
    cr_expect_eq(a->num_labels, b->num_labels);
    cr_expect_eq(a->problem_type, b->problem_type);
    cr_expect_eq(a->sep_token_id, b->sep_token_id);
    switch (a->arch) {
    case ARCH_CGBERT:
    case ARCH_QACGBERT:
        cr_expect_eq(a->context_vocab_size, b->context_vocab_size);
        cr_expect_eq(a->pooler_type, b->pooler_type);
        break;
    case ARCH_SUMMARIZER:
        cr_expect_eq(a->ff_size, b->ff_size);
        cr_expect_eq(a->inter_layer_norm_eps, b->inter_layer_norm_eps);
        cr_expect_eq(a->pe_max_len, b->pe_max_len);
        break;
    case ARCH_QACONV:
        cr_expect_eq(a->query_len, b->query_len);
        cr_expect_eq(a->attention_temperature, b->attention_temperature);
        cr_expect_eq(a->query_loss_divisor, b->query_loss_divisor);
        break;
    case ARCH_SPANBERT:
        cr_expect_eq(a->sbo_dim_ffn, b->sbo_dim_ffn);
        cr_expect_eq(a->sbo_layer_norm_eps, b->sbo_layer_norm_eps);
        cr_expect_eq(a->masking.seed, b->masking.seed);
        cr_expect_eq(a->masking.masking_budget, b->masking.masking_budget);
        cr_expect_eq(a->masking.n_special_token_ids, b->masking.n_special_token_ids);
        cr_expect_eq(a->masking.special_token_ids[1], b->masking.special_token_ids[1]);
        break;
    default:
        break;
    }
}

Test(config_write, round_trip_every_architecture)
{
    for (int arch = 0; arch < ARCH_COUNT; arch++) {
        BertConfig in = unusual((BertArch)arch), out;
        char text[8192];
        size_t n;
        BertcError err;
        cr_assert_eq(bert_config_format(&in, text, sizeof text, &n, &err), 0, "%s", err.msg);
        cr_assert_eq(bert_config_parse(NULL, "written", text, n, &out, &err), 0,
                     "%s reads back with an error: %s\n%s", bert_arch_name(in.arch), err.msg, text);
        expect_same(&in, &out);
    }
}

Test(config_write, too_small_a_buffer_is_an_error)
{
    BertConfig c = bert_config_default(ARCH_BERT_MODEL);
    char text[64];
    size_t n;
    BertcError err;
    cr_assert_neq(bert_config_format(&c, text, sizeof text, &n, &err), 0);
    cr_assert(strstr(err.msg, "do not fit"), "%s", err.msg);
}

/* A config whose keys are each in range but whose model could never be
 * allocated is refused before anything is (the fuzzer's finding): by
 * model_size, which model_build runs first, naming the keys. */
Test(config_write, impossible_model_size_is_refused)
{
    const char *text = "{\"architectures\": [\"BertModel\"], \"vocab_size\": 2000000000, "
                       "\"hidden_size\": 2000000000, \"num_hidden_layers\": 2, "
                       "\"num_attention_heads\": 1, \"intermediate_size\": 8, "
                       "\"max_position_embeddings\": 8}";
    BertConfig cfg;
    BertcError err;
    double floats;
    cr_assert_eq(bert_config_parse(NULL, "huge.json", text, strlen(text), &cfg, &err), 0,
                 "%s", err.msg);
    cr_assert_neq(model_size(&cfg, &floats, &err), 0);
    cr_assert(strstr(err.msg, "config: ") && strstr(err.msg, "more than bertc's limit") &&
              strstr(err.msg, "vocab_size 2000000000"), "%s", err.msg);
    model_config_error(&err, "huge.json");
    cr_assert(strstr(err.msg, "huge.json: BertModel"), "%s", err.msg);
    BertConfig base = bert_config_default(ARCH_BERT_MODEL);
    char ok[4096];
    size_t n;
    cr_assert_eq(bert_config_format(&base, ok, sizeof ok, &n, &err), 0, "%s", err.msg);
    cr_assert_eq(bert_config_parse(NULL, "base.json", ok, n, &cfg, &err), 0, "%s", err.msg);
    cr_assert_eq(model_size(&cfg, &floats, &err), 0, "bert-base must stay allowed: %s",
                 err.msg);
    cr_expect_eq(floats, 109482240.0, "bert-base-uncased has 109482240 parameters, not %.0f",
                 floats);
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
    cr_assert_neq(bert_config_parse(NULL, "huge_eps.json", huge, strlen(huge), &cfg, &err), 0);
    cr_assert(strstr(err.msg, "layer_norm_eps") && strstr(err.msg, "float32"), "%s", err.msg);
    const char *tiny = "{\"architectures\": [\"QAConvModelV2\"], \"vocab_size\": 10, "
                       "\"hidden_size\": 4, \"num_hidden_layers\": 1, \"num_attention_heads\": 1,"
                       " \"intermediate_size\": 8, \"max_position_embeddings\": 8, "
                       "\"sep_token_id\": 2, \"attention_temperature\": 1e-50}";
    cr_assert_neq(bert_config_parse(NULL, "tiny.json", tiny, strlen(tiny), &cfg, &err), 0);
    cr_assert(strstr(err.msg, "attention_temperature") && strstr(err.msg, "> 0"), "%s", err.msg);
}
