/* test/test_config.c — config.json -> BertConfig (nn/config.h): every
 * architecture's keys and defaults from test/data/config/, and one error per
 * rule, each naming its key. */
#include <criterion/criterion.h>

#include "test/test_util.h"
#include "zoo/zoo.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define CONFIG_DIR "test/data/config/"

TestSuite(config);

static BertConfig read_ok(const char *path)
{
    BertConfig cfg;
    BertcError err;
    cr_assert_eq(bertc_bert_config_read(path, &cfg, &err), 0, "%s", err.msg);
    return cfg;
}

/* A small valid BertModel config with `extra` spliced in before the end. */
static int parse_with(const char *extra, BertConfig *cfg, BertcError *err)
{
    char text[2048];
    snprintf(text, sizeof text,
             "{\"architectures\": [\"BertModel\"], \"vocab_size\": 100, \"hidden_size\": 32,\n"
             " \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"intermediate_size\": 37,\n"
             " \"max_position_embeddings\": 64%s}", extra);
    return bertc_bert_config_parse(NULL, "c.json", text, strlen(text), cfg, err);
}

/* The config with `extra` must fail with both substrings in the message. */
static void fails_with(const char *extra, const char *want1, const char *want2)
{
    BertConfig cfg;
    BertcError err = {{0}};
    cr_assert_neq(parse_with(extra, &cfg, &err), 0, "config with %s should fail", extra);
    cr_expect(strstr(err.msg, want1), "message \"%s\" lacks \"%s\"", err.msg, want1);
    if (want2)
        cr_expect(strstr(err.msg, want2), "message \"%s\" lacks \"%s\"", err.msg, want2);
}

/* A whole config text must fail with the substring. */
static void text_fails(const char *text, const char *want)
{
    BertConfig cfg;
    BertcError err = {{0}};
    cr_assert_neq(bertc_bert_config_parse(NULL, "c.json", text, strlen(text), &cfg, &err), 0,
                  "config %s should fail", text);
    cr_expect(strstr(err.msg, want), "message \"%s\" lacks \"%s\"", err.msg, want);
}

/* ------------------------------------------------------------------------ */
/* Good configs                                                              */
/* ------------------------------------------------------------------------ */

Test(config, bert_base_uncased)
{
    BertConfig c = read_ok(CONFIG_DIR "bert_base_uncased.json");
    cr_expect_str_eq(c.architecture, "BertForMaskedLM");
    cr_expect_str_eq(c.architecture, "BertForMaskedLM");
    cr_expect_eq(c.vocab_size, 30522);
    cr_expect_eq(c.hidden_size, 768);
    cr_expect_eq(c.num_hidden_layers, 12);
    cr_expect_eq(c.num_attention_heads, 12);
    cr_expect_eq(c.intermediate_size, 3072);
    cr_expect_eq(c.hidden_act, ACT_GELU);
    cr_expect_eq(c.hidden_dropout_prob, 0.1f);
    cr_expect_eq(c.attention_probs_dropout_prob, 0.1f);
    cr_expect_eq(c.max_position_embeddings, 512);
    cr_expect_eq(c.type_vocab_size, 2);
    cr_expect_eq(c.initializer_range, 0.02f);
    cr_expect_eq(c.layer_norm_eps, 1e-12f);
    cr_expect_eq(c.pad_token_id, 0);
    cr_expect_eq(c.num_labels, 2);
    cr_expect_eq(c.problem_type, PROBLEM_UNSET);
    cr_expect_eq(c.sep_token_id, -1, "absent token ids are -1");
}

Test(config, hf_defaults_fill_missing_optional_keys)
{
    BertConfig c = read_ok(CONFIG_DIR "seqcls_minimal.json");
    cr_expect_str_eq(c.architecture, "BertForSequenceClassification");
    cr_expect_eq(c.hidden_act, ACT_GELU);
    cr_expect_eq(c.layer_norm_eps, 1e-12f);
    cr_expect_eq(c.type_vocab_size, 2);
    cr_expect_eq(c.initializer_range, 0.02f);
    cr_expect_eq(c.hidden_dropout_prob, 0.1f);
    cr_expect_eq(c.pad_token_id, 0);
    cr_expect_eq(c.num_labels, 3, "num_labels from id2label");
    cr_expect_eq(c.problem_type, PROBLEM_SINGLE_LABEL);
    cr_expect_eq(c.intermediate_size, 37);
}

Test(config, cgbert_and_qacgbert)
{
    BertConfig c = read_ok(CONFIG_DIR "cgbert.json");
    cr_expect_str_eq(c.architecture, "CGBertForSequenceClassification");
    cr_expect_eq(bertc_model_config_get(&c, "pooler_type"), 1 /* first_token */);
    cr_expect_eq(bertc_model_config_get(&c, "context_vocab_size"), 8, "default");
    cr_expect_eq(c.num_labels, 3);
    cr_expect_eq(c.problem_type, PROBLEM_UNSET, "null problem_type");
    cr_expect_eq(c.hidden_dropout_prob, 0.0f);
    BertConfig q = read_ok(CONFIG_DIR "qacgbert.json");
    cr_expect_str_eq(q.architecture, "QACGBertForSequenceClassification");
    cr_expect_eq(bertc_model_config_get(&q, "pooler_type"), 0 /* attention_gate */, "default");
    cr_expect_eq(bertc_model_config_get(&q, "context_vocab_size"), 5);
}

Test(config, summarizer)
{
    BertConfig c = read_ok(CONFIG_DIR "summarizer.json");
    cr_expect_str_eq(c.architecture, "Summarizer");
    cr_expect_eq(bertc_model_config_get(&c, "ff_size"), 64);
    cr_expect_eq(bertc_model_config_get(&c, "heads"), 4);
    cr_expect_eq(bertc_model_config_get(&c, "inter_layers"), 2);
    cr_expect_eq(bertc_model_config_get(&c, "pe_max_len"), 5000);
    cr_expect_eq(bertc_model_config_get(&c, "inter_layer_norm_eps"), 1e-6f, "default");
}

Test(config, qaconv)
{
    BertConfig c = read_ok(CONFIG_DIR "qaconv.json");
    cr_expect_str_eq(c.architecture, "QAConvModelV2");
    cr_expect_eq(c.sep_token_id, 102);
    cr_expect_eq(bertc_model_config_get(&c, "query_len"), 8);
    cr_expect_eq(bertc_model_config_get(&c, "conv_filters"), 16);
    cr_expect_eq(bertc_model_config_get(&c, "num_question_types"), 6, "default");
    cr_expect_eq(bertc_model_config_get(&c, "attention_temperature"), 10.0f, "an integer is a valid float");
    cr_expect_eq(bertc_model_config_get(&c, "query_loss_divisor"), 5.0f);
}

Test(config, spanbert_with_masking)
{
    BertConfig c = read_ok(CONFIG_DIR "spanbert.json");
    cr_expect_str_eq(c.architecture, "SpanBertForPreTraining");
    cr_expect_eq(c.hidden_act, ACT_GELU_TANH);
    cr_expect_eq(c.mask_token_id, 103);
    cr_expect_eq(c.cls_token_id, 101);
    cr_expect_eq(c.sep_token_id, 102);
    cr_expect_eq(c.unk_token_id, 100);
    cr_expect_eq(bertc_model_config_get(&c, "sbo_dim_ffn"), 64, "defaults to intermediate_size");
    cr_expect_eq(bertc_model_config_get(&c, "sbo_layer_norm_eps"), 1e-5f);
    cr_expect_eq(bertc_model_config_get(&c, "sbo_max_span_length"), 30);
    cr_expect(bertc_model_config_get(&c, "masking"));
    cr_expect_eq(bertc_model_config_get(&c, "masking.seed"), 1234);
    cr_expect_eq(bertc_model_config_get(&c, "masking.masking_budget"), 0.25);
    cr_expect_eq(bertc_model_config_get(&c, "masking.span_probability"), 0.2, "default");
    cr_expect_eq(bertc_model_config_get(&c, "masking.max_span_length_cap"), 10, "default");
    ConfigTokenIds special = bertc_spanbert_keys(&c).masking.special_token_ids;
    cr_assert_eq(special.n, 5);
    cr_expect_eq(special.ids[4], 103);
}

Test(config, defaults_function)
{
    BertConfig d = test_config_default("BertForSequenceClassification");
    cr_expect_str_eq(d.architecture, "BertForSequenceClassification");
    cr_expect_eq(d.vocab_size, 30522);
    cr_expect_eq(d.num_labels, 2);
    cr_expect(isnan(bertc_model_config_get(&d, "query_len")), "BERT has no query_len");
    BertConfig q = test_config_default("QAConvModelV2");
    cr_expect_eq(bertc_model_config_get(&q, "query_len"), 50);
    cr_expect_eq(bertc_model_config_get(&q, "conv_filters"), 1024);
    BertConfig s = test_config_default("SpanBertForPreTraining");
    cr_expect_eq(bertc_model_config_get(&s, "masking.masking_budget"), 0.15);
    cr_expect_eq(bertc_model_config_get(&s, "sbo_dim_ffn"), 3072, "intermediate_size");
    BertcError err;
    cr_expect_neq(bertc_model_config_set(&q, "ff_size", 3, &err), 0);
    cr_expect(strstr(err.msg, "QAConvModelV2 has no key \"ff_size\""), "%s", err.msg);
    cr_expect_neq(bertc_model_config_default(&q, "GPT2LMHeadModel", &err), 0);
    cr_expect(strstr(err.msg, "unknown architecture \"GPT2LMHeadModel\""), "%s", err.msg);
    cr_expect_str_eq(bertc_bert_act_name(ACT_GELU_TANH), "gelu_new");
}

Test(config, unknown_keys_ignored_and_model_keys_scoped)
{
    BertConfig c;
    BertcError err;
    /* Keys of other architectures are not read for a BertModel. */
    cr_assert_eq(parse_with(", \"ff_size\": \"x\", \"pooler_type\": 7, \"foo\": {\"bar\": [1]}",
                            &c, &err), 0, "%s", err.msg);
    cr_expect_str_eq(c.architecture, "BertModel");
}

/* ------------------------------------------------------------------------ */
/* Errors, each naming the key                                               */
/* ------------------------------------------------------------------------ */

Test(config, missing_required_key_from_file)
{
    BertConfig c;
    BertcError err;
    cr_assert_neq(bertc_bert_config_read(CONFIG_DIR "bad_missing_hidden_size.json", &c, &err), 0);
    cr_expect_str_eq(err.msg, CONFIG_DIR "bad_missing_hidden_size.json: missing key \"hidden_size\"");
}

Test(config, syntax_error_from_file)
{
    BertConfig c;
    BertcError err;
    cr_assert_neq(bertc_bert_config_read(CONFIG_DIR "bad_syntax.json", &c, &err), 0);
    cr_expect(strstr(err.msg, CONFIG_DIR "bad_syntax.json: line 5, col 3 (byte 79): expected ',' or '}'"),
              "%s", err.msg);
    cr_assert_neq(bertc_bert_config_read(CONFIG_DIR "nope.json", &c, &err), 0);
    cr_expect(strstr(err.msg, "nope.json: cannot open"), "%s", err.msg);
}

Test(config, wrong_types_name_the_key)
{
    text_fails("{\"architectures\": [\"BertModel\"], \"vocab_size\": \"100\"}",
               "vocab_size (line 1, col 48): expected an integer (no fraction or exponent), found a string");
    fails_with(", \"hidden_dropout_prob\": \"0.1\"", "hidden_dropout_prob", "expected a number");
    fails_with(", \"hidden_act\": 3", "hidden_act", "expected a string");
    fails_with(", \"type_vocab_size\": 2.0", "type_vocab_size", "written with a fraction");
    fails_with(", \"id2label\": [\"a\"]", "id2label", "must be an object");
    text_fails("[1]", "config.json must hold a JSON object");
    text_fails("{\"vocab_size\": 3}", "missing key \"architectures\"");
    text_fails("{\"architectures\": []}", "architectures (line 1, col 19): must be a non-empty");
}

Test(config, values_out_of_range_name_the_key)
{
    text_fails("{\"architectures\": [\"BertModel\"], \"vocab_size\": 0}",
               "vocab_size (line 1, col 48): must be an integer in [1, 2147483647], found 0");
    fails_with(", \"type_vocab_size\": -1", "type_vocab_size", "found -1");
    fails_with(", \"hidden_dropout_prob\": 1.5", "hidden_dropout_prob", "must be in [0, 1]");
    fails_with(", \"layer_norm_eps\": -1e-12", "layer_norm_eps", "must be >= 0");
    fails_with(", \"pad_token_id\": 100", "pad_token_id", "outside [0, vocab_size 100)");
    fails_with(", \"type_vocab_size\": 3000000000", "type_vocab_size", "2147483647");
}

Test(config, heads_must_divide_hidden_size_and_keys_are_unique)
{
    text_fails("{\"architectures\": [\"BertModel\"], \"vocab_size\": 100, \"hidden_size\": 30,"
               " \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"intermediate_size\": 37,"
               " \"max_position_embeddings\": 64}",
               "num_attention_heads (line 1, col 119): hidden_size 30 is not a multiple of "
               "num_attention_heads 4");
    fails_with(", \"architectures\": [\"BertModel\"]", "duplicate key \"architectures\"", NULL);
}

Test(config, unknown_names)
{
    text_fails("{\"architectures\": [\"GPT2LMHeadModel\"]}",
               "architectures[0] (line 1, col 20): unknown architecture \"GPT2LMHeadModel\"");
    fails_with(", \"hidden_act\": \"swish\"", "unknown hidden_act \"swish\"", "gelu, gelu_new");
    fails_with(", \"problem_type\": \"ranking\"", "unknown problem_type \"ranking\"", NULL);
}

/* An enum string is compared whole: "\u0000" and what follows it count. */
Test(config, enum_strings_with_a_nul_do_not_match)
{
    text_fails("{\"architectures\": [\"BertModel\\u0000junk\"]}",
               "architectures[0] (line 1, col 20): the string holds a NUL character");
    fails_with(", \"hidden_act\": \"gelu\\u0000x\"", "hidden_act (line", "NUL character");
    fails_with(", \"problem_type\": \"regression\\u0000\"", "problem_type (line",
               "NUL character");
}

Test(config, num_labels_and_id2label_must_agree)
{
    BertConfig c;
    BertcError err;
    cr_assert_eq(parse_with(", \"num_labels\": 4", &c, &err), 0, "%s", err.msg);
    cr_expect_eq(c.num_labels, 4);
    cr_assert_eq(parse_with(", \"num_labels\": 2, \"id2label\": {\"0\": \"a\", \"1\": \"b\"}",
                            &c, &err), 0, "%s", err.msg);
    fails_with(", \"num_labels\": 3, \"id2label\": {\"0\": \"a\", \"1\": \"b\"}",
               "num_labels 3 disagrees with id2label, which has 2 entries", NULL);
    fails_with(", \"num_labels\": 0", "num_labels", "found 0");
}

/* Configs for one architecture: `keys` spliced into a valid small base. */
static void arch_fails(const char *arch, const char *keys, const char *want)
{
    char text[2048];
    snprintf(text, sizeof text,
             "{\"architectures\": [\"%s\"], \"vocab_size\": 200, \"hidden_size\": 32,"
             " \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"intermediate_size\": 64,"
             " \"max_position_embeddings\": 64%s}", arch, keys);
    text_fails(text, want);
}

Test(config, model_keys_are_checked)
{
    arch_fails("Summarizer", ", \"heads\": 4, \"inter_layers\": 2", "missing key \"ff_size\"");
    arch_fails("Summarizer", ", \"ff_size\": 64, \"heads\": 5, \"inter_layers\": 2",
               "hidden_size 32 is not a multiple of heads 5");
    arch_fails("QAConvModelV2", "", "missing key \"sep_token_id\"");
    arch_fails("QAConvModelV2", ", \"sep_token_id\": 1, \"attention_temperature\": 0",
               "attention_temperature (line 1, col 226): must be > 0");
    arch_fails("CGBertForSequenceClassification", ", \"pooler_type\": \"mean\"",
               "unknown pooler_type \"mean\" (expected attention_gate or first_token)");
    arch_fails("SpanBertForPreTraining", ", \"mask_token_id\": 4, \"cls_token_id\": 1, "
               "\"sep_token_id\": 2", "missing key \"unk_token_id\"");
}

Test(config, masking_block_is_checked)
{
    const char *ids = ", \"mask_token_id\": 4, \"cls_token_id\": 1, \"sep_token_id\": 2, "
                      "\"unk_token_id\": 3";
    char keys[512];
    snprintf(keys, sizeof keys, "%s, \"masking\": {\"masking_budget\": 0.2}", ids);
    arch_fails("SpanBertForPreTraining", keys, "missing key \"masking.seed\"");
    snprintf(keys, sizeof keys, "%s, \"masking\": {\"seed\": 1, \"span_probability\": 0}", ids);
    arch_fails("SpanBertForPreTraining", keys, "masking.span_probability");
    snprintf(keys, sizeof keys, "%s, \"masking\": {\"seed\": 1, \"special_token_ids\": [1, 999]}",
             ids);
    arch_fails("SpanBertForPreTraining", keys,
               "masking.special_token_ids[1] (line 1, col 316): token id 999 is outside");
    snprintf(keys, sizeof keys, "%s, \"masking\": [1]", ids);
    arch_fails("SpanBertForPreTraining", keys, "masking (line 1, col 279): must be an object");
    snprintf(keys, sizeof keys, "%s, \"masking\": {\"seed\": -5}", ids);
    arch_fails("SpanBertForPreTraining", keys, "masking.seed");
}

/* The layer counts are whole numbers as any size (HF sets no ceiling: memory
 * does, bertc_model_size, test_config_write.c), and QAConv's question must
 * fit in max_position_embeddings; each error names its key. */
Test(config, layer_counts_and_query_len_are_bounded)
{
    text_fails("{\"architectures\": [\"BertModel\"], \"vocab_size\": 100, \"hidden_size\": 8,"
               " \"num_hidden_layers\": 2147483648, \"num_attention_heads\": 4,"
               " \"intermediate_size\": 37, \"max_position_embeddings\": 64}",
               "num_hidden_layers (line 1, col 92): must be an integer in [1, 2147483647], "
               "found 2147483648");
    arch_fails("Summarizer", ", \"ff_size\": 64, \"heads\": 4, \"inter_layers\": -1",
               "inter_layers (line 1, col 222): must be an integer in [0, 2147483647], found -1");
    arch_fails("QAConvModelV2", ", \"sep_token_id\": 1, \"query_len\": 65",
               "c.json: query_len 65 is longer than max_position_embeddings 64");
    text_fails("{\"architectures\": [\"QAConvModelV2\"], \"vocab_size\": 100,"
               " \"hidden_size\": 8, \"num_hidden_layers\": 1, \"num_attention_heads\": 4,"
               " \"intermediate_size\": 37, \"max_position_embeddings\": 40,"
               " \"sep_token_id\": 1}",
               "c.json: query_len 50 is longer than max_position_embeddings 40");
}

/* HF's id2label and label2id: the names by id, read and checked. */
Test(config, id2label_names_and_label2id)
{
    BertConfig c;
    BertcError err;
    cr_assert_eq(parse_with(", \"id2label\": {\"1\": \"POS\", \"0\": \"NEG\"}, "
                            "\"label2id\": {\"NEG\": 0, \"POS\": 1}", &c, &err), 0, "%s",
                 err.msg);
    cr_assert_eq(c.num_labels, 2);
    cr_expect_str_eq(bertc_bert_config_label(&c, 0), "NEG");
    cr_expect_str_eq(bertc_bert_config_label(&c, 1), "POS");
    cr_expect_eq(bertc_bert_config_label(&c, 2), NULL);
    fails_with(", \"id2label\": {\"0\": \"NEG\", \"2\": \"POS\"}", "id2label keys must be the "
               "label ids 0..1", "\"2\"");
    fails_with(", \"id2label\": {\"0\": \"NEG\", \"0\": \"POS\"}", "duplicate key \"0\"", NULL);
    fails_with(", \"id2label\": {\"0\": \"NEG\", \"1\": 7}", "id2label", NULL);
    fails_with(", \"id2label\": {\"0\": \"NEG\", \"1\": \"POS\"}, "
               "\"label2id\": {\"NEG\": 1, \"POS\": 0}", "label2id[\"NEG\"] = 1", "POS");
    fails_with(", \"id2label\": {\"0\": \"NEG\", \"1\": \"POS\"}, \"label2id\": {\"NEG\": 0}",
               "inverse of id2label", NULL);
    fails_with(", \"label2id\": [1]", "label2id", "must be an object");
}

/* classifier_dropout: null means hidden_dropout_prob (stored as < 0);
 * otherwise a probability. problem_type likewise null or one of three. */
Test(config, classifier_dropout_and_problem_type)
{
    BertConfig c;
    BertcError err;
    cr_assert_eq(parse_with(", \"classifier_dropout\": null", &c, &err), 0, "%s", err.msg);
    cr_expect_lt(c.classifier_dropout, 0.0f);
    cr_assert_eq(parse_with(", \"classifier_dropout\": 0.25", &c, &err), 0, "%s", err.msg);
    cr_expect_eq(c.classifier_dropout, 0.25f);
    fails_with(", \"classifier_dropout\": 1.5", "classifier_dropout", "[0, 1]");
    fails_with(", \"classifier_dropout\": \"x\"", "classifier_dropout", NULL);
    cr_assert_eq(parse_with(", \"problem_type\": null", &c, &err), 0, "%s", err.msg);
    cr_expect_eq(c.problem_type, PROBLEM_UNSET);
    fails_with(", \"problem_type\": \"ranking\"", "unknown problem_type \"ranking\"", NULL);
}

/* add_pooling_layer (bertc's key for HF's constructor argument): a bool. */
Test(config, add_pooling_layer)
{
    BertConfig c;
    BertcError err;
    cr_assert_eq(parse_with("", &c, &err), 0, "%s", err.msg);
    cr_expect(c.add_pooling_layer, "default true");
    cr_assert_eq(parse_with(", \"add_pooling_layer\": false", &c, &err), 0, "%s", err.msg);
    cr_expect(!c.add_pooling_layer);
    fails_with(", \"add_pooling_layer\": 0", "add_pooling_layer", NULL);
}

/* The one problem-type rule (nn/config.h, bertc_problem_type) that the
 * sequence classifier's loss, its random labels and `bertc predict` share:
 * the config's problem_type wins; unset, one label is regression and
 * several single-label (integer labels) or multi-label (float labels). Each
 * named type's config.json spelling reads back as that type. */
Test(config, problem_type_resolves_one_way)
{
    static const struct {
        ProblemType set;
        int num_labels;
        bool int_labels;
        ProblemType want;
    } rules[] = {
        {PROBLEM_UNSET, 1, true, PROBLEM_REGRESSION},
        {PROBLEM_UNSET, 1, false, PROBLEM_REGRESSION},
        {PROBLEM_UNSET, 3, true, PROBLEM_SINGLE_LABEL},
        {PROBLEM_UNSET, 3, false, PROBLEM_MULTI_LABEL},
        {PROBLEM_MULTI_LABEL, 3, true, PROBLEM_MULTI_LABEL},
        {PROBLEM_SINGLE_LABEL, 1, false, PROBLEM_SINGLE_LABEL},
        {PROBLEM_REGRESSION, 1, true, PROBLEM_REGRESSION},
    };
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        BertConfig c = bertc_bert_config_default("BertForSequenceClassification");
        c.problem_type = rules[i].set;
        c.num_labels = rules[i].num_labels;
        cr_expect_eq(bertc_problem_type(&c, rules[i].int_labels), rules[i].want,
                     "rule %zu: problem_type %d, %d labels, %s labels gave %d, want %d", i,
                     (int)rules[i].set, rules[i].num_labels,
                     rules[i].int_labels ? "integer" : "float",
                     (int)bertc_problem_type(&c, rules[i].int_labels), (int)rules[i].want);
    }
    cr_expect_null(bertc_problem_type_name(PROBLEM_UNSET));
    for (ProblemType p = PROBLEM_REGRESSION; p <= PROBLEM_MULTI_LABEL; p++) {
        char extra[96];
        BertConfig c;
        BertcError err;
        snprintf(extra, sizeof extra, ", \"problem_type\": \"%s\"", bertc_problem_type_name(p));
        cr_assert_eq(parse_with(extra, &c, &err), 0, "%s: %s", extra, err.msg);
        cr_expect_eq(c.problem_type, p, "%s read back as %d", extra, (int)c.problem_type);
    }
}
