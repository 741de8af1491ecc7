/* test/fuzz/fuzz_model.c — libFuzzer target: config -> model build ->
 * forward. The bytes are decoded into a config.json of edge values:
 *
 *   byte 0          the architecture (mod 8); bit 7: also a training step
 *                   (dropout on, the loss's backward)
 *   byte 1          B = 1 + bit 0, S = 1 + (bits 1..4 mod 12), bit 7: labels
 *   one byte a key  for each of int_keys, float_keys, then hidden_act,
 *                   problem_type, pooler_type and the masking block:
 *                   bit 7 set (or the byte missing) leaves the key out,
 *                   else the low bits pick a value from the key's edge table
 *                   (0, 1, 2, ..., 2^31 - 1, -1, 2^31, 1e14; 1e-45, 3.4e38, ...)
 *
 * The text goes through bertc_bert_config_parse (the JSON parser and every key's
 * range), bertc_model_size (each architecture's dry-run build and the total), and
 * a config that passes and is small (FUZZ_MAX_FLOATS, so the run stays
 * within -malloc_limit_mb) is built, initialised and run forward in eval mode
 * on bertc_model_random_batch of B x S (and, with bit 7 of byte 0, a training
 * forward and the backward of bertc_model_step_loss). Errors are fine; an abort from deep inside
 * an op (bertc_fatal) means a size the config checks let through. */
#include "zoo/zoo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_MAX_FLOATS 2e5

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const int_keys[] = {
    "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
    "intermediate_size", "max_position_embeddings", "type_vocab_size", "num_labels",
    "pad_token_id", "sep_token_id", "mask_token_id", "cls_token_id", "unk_token_id",
    "context_vocab_size", "ff_size", "heads", "inter_layers", "pe_max_len", "query_len",
    "conv_filters", "num_question_types", "sbo_dim_ffn", "sbo_max_span_length",
};
static const char *const int_edges[] = {
    "0", "1", "2", "3", "4", "5", "6", "8", "12", "16", "30", "64", "1024", "1025", "65536",
    "2147483647", "-1", "2147483648", "100000000000000", "7", "9", "10", "11", "64",
};

static const char *const float_keys[] = {
    "hidden_dropout_prob", "attention_probs_dropout_prob", "initializer_range",
    "layer_norm_eps", "inter_layer_norm_eps", "attention_temperature", "query_loss_divisor",
    "sbo_layer_norm_eps",
};
static const char *const float_edges[] = {
    "0", "1e-12", "0.1", "0.5", "1", "10", "1e-45", "3.4e38", "-1", "1e39", "1e-320", "2",
    "0.02", "1e-5",
};

static const char *const acts[] = {"\"gelu\"", "\"gelu_new\"", "\"relu\"", "\"swish\""};
static const char *const problems[] = {"\"regression\"", "\"single_label_classification\"",
                                       "\"multi_label_classification\"", "null"};
static const char *const poolers[] = {"\"attention_gate\"", "\"first_token\"", "\"mean\""};
static const char *const masking[] = {
    "{\"seed\": 1}",
    "{\"seed\": 7, \"masking_budget\": 1, \"span_probability\": 1, \"max_span_length_cap\": 1}",
    "{\"seed\": 3, \"masking_budget\": 0, \"special_token_ids\": [0, 1]}",
    "{\"seed\": 5, \"masking_budget\": 0.5, \"max_span_length_cap\": 2147483647}",
    "{\"seed\": 9, \"masking_budget\": 1, \"special_token_ids\": [2147483647]}",
    "{}",
};

#define COUNT(a) (sizeof a / sizeof a[0])

typedef struct Reader {
    const uint8_t *data;
    size_t size, at;
} Reader;

/* The next byte, or 0x80 ("leave the key out") past the end. */
static int next(Reader *r) { return r->at < r->size ? r->data[r->at++] : 0x80; }

static size_t put_key(char *buf, size_t at, size_t cap, Reader *r, const char *key,
                      const char *const *values, size_t n)
{
    int b = next(r);
    if (b & 0x80 || at >= cap)
        return at;
    return at + (size_t)snprintf(buf + at, cap - at, ", \"%s\": %s", key, values[b % n]);
}

static size_t config_text(Reader *r, char *buf, size_t cap)
{
    static const char *const archs[] = {
        "BertModel", "BertForSequenceClassification", "BertForMaskedLM",
        "CGBertForSequenceClassification", "QACGBertForSequenceClassification", "Summarizer",
        "QAConvModelV2", "SpanBertForPreTraining"};
    size_t at = (size_t)snprintf(buf, cap, "{\"architectures\": [\"%s\"]",
                                 archs[(r->data[0] & 0x7F) % COUNT(archs)]);
    for (size_t i = 0; i < COUNT(int_keys); i++)
        at = put_key(buf, at, cap, r, int_keys[i], int_edges, COUNT(int_edges));
    for (size_t i = 0; i < COUNT(float_keys); i++)
        at = put_key(buf, at, cap, r, float_keys[i], float_edges, COUNT(float_edges));
    at = put_key(buf, at, cap, r, "hidden_act", acts, COUNT(acts));
    at = put_key(buf, at, cap, r, "problem_type", problems, COUNT(problems));
    at = put_key(buf, at, cap, r, "pooler_type", poolers, COUNT(poolers));
    at = put_key(buf, at, cap, r, "masking", masking, COUNT(masking));
    if (at < cap)
        at += (size_t)snprintf(buf + at, cap - at, "}");
    return at < cap ? at : cap - 1;
}

static Graph *graph;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    setenv("BERTC_THREADS", "1", 0);
    /* within -malloc_limit_mb: a config too big for this (65,536 layers'
     * records) is refused by bertc_model_size, as one too big for a machine */
    bertc_arena_set_memory_limit(192u << 20);
    graph = bertc_ag_graph_create(1 << 20, 0);
    return 0;
}

/* One forward of a random batch; in training mode, then the backward. */
static void step(Model *m, int64_t B, int64_t S, bool labels, bool training, Rng *rng)
{
    bertc_ag_graph_reset(graph);
    bertc_ag_set_training(graph, training);
    Batch batch;
    Outputs out;
    BertcError err;
    bertc_outputs_init(&out);
    out.loss_only = training;
    if (bertc_model_random_batch(m, graph, B, S, labels || training, rng, &batch, &err) != 0 ||
        bertc_model_forward(m, graph, &batch, &out, &err) != 0 || !training)
        return;
    Var *loss = bertc_model_step_loss(graph, &out);
    if (loss) {
        bertc_registry_zero_grad(m->reg);
        bertc_ag_backward(graph, loss);
    }
}

static void run(const BertConfig *cfg, int64_t B, int64_t S, bool labels, bool training)
{
    Arena *params = bertc_arena_create("params", 1 << 16);
    Model m;
    BertcError err;
    if (bertc_model_build(&m, params, cfg, &err) != 0) {
        fprintf(stderr, "bertc_model_size passed but bertc_model_build failed: %s\n", err.msg);
        abort();
    }
    Rng rng = bertc_rng_seed(1);
    bertc_registry_init_weights(m.reg, &rng, 0.02f);
    step(&m, B, S, labels, false, &rng);
    if (training)
        step(&m, B, S, labels, true, &rng);
    bertc_arena_destroy(params);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    Reader r = {data, size, 2};
    static char text[8192];
    size_t len = config_text(&r, text, sizeof text);
    BertConfig cfg;
    BertcError err;
    double floats;
    if (bertc_bert_config_parse(NULL, "c.json", text, len, &cfg, &err) != 0 ||
        bertc_model_size(&cfg, &floats, &err) != 0 || floats > FUZZ_MAX_FLOATS)
        return 0;
    run(&cfg, 1 + (data[1] & 1), 1 + (data[1] >> 1 & 15) % 12, data[1] & 0x80, data[0] & 0x80);
    return 0;
}
