/* nn/config_bert.c — the keys every BERT config.json shares: transformers'
 * BertConfig and the PretrainedConfig keys BERT models use (token ids,
 * num_labels, id2label/label2id, problem_type), read, checked and written. */
#include "nn/config.h"
#include "tensor/format_internal.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define AT(member) offsetof(BertConfig, member)

/* vocab_size first: the token ids after it are checked against it. */
static const ConfigKey bert_keys[] = {
    {.key = "vocab_size", .offset = AT(vocab_size), .kind = CONFIG_INT, .required = true,
     .range = RANGE_POSITIVE},
    {.key = "hidden_size", .offset = AT(hidden_size), .kind = CONFIG_INT, .required = true,
     .range = RANGE_POSITIVE},
    {.key = "num_hidden_layers", .offset = AT(num_hidden_layers), .kind = CONFIG_INT,
     .required = true, .range = RANGE_LAYERS},
    {.key = "num_attention_heads", .offset = AT(num_attention_heads), .kind = CONFIG_INT,
     .required = true, .range = RANGE_POSITIVE},
    {.key = "intermediate_size", .offset = AT(intermediate_size), .kind = CONFIG_INT,
     .required = true, .range = RANGE_POSITIVE},
    {.key = "hidden_dropout_prob", .offset = AT(hidden_dropout_prob), .kind = CONFIG_FLOAT,
     .range = RANGE_PROB},
    {.key = "attention_probs_dropout_prob", .offset = AT(attention_probs_dropout_prob),
     .kind = CONFIG_FLOAT, .range = RANGE_PROB},
    {.key = "max_position_embeddings", .offset = AT(max_position_embeddings),
     .kind = CONFIG_INT, .required = true, .range = RANGE_POSITIVE},
    {.key = "type_vocab_size", .offset = AT(type_vocab_size), .kind = CONFIG_INT,
     .range = RANGE_POSITIVE},
    {.key = "initializer_range", .offset = AT(initializer_range), .kind = CONFIG_FLOAT,
     .range = RANGE_NONNEG},
    {.key = "layer_norm_eps", .offset = AT(layer_norm_eps), .kind = CONFIG_FLOAT,
     .range = RANGE_NONNEG},
    {.key = "pad_token_id", .offset = AT(pad_token_id), .kind = CONFIG_INT,
     .range = RANGE_TOKEN_ID},
    {.key = "sep_token_id", .offset = AT(sep_token_id), .kind = CONFIG_INT,
     .range = RANGE_TOKEN_ID},
    {.key = "mask_token_id", .offset = AT(mask_token_id), .kind = CONFIG_INT,
     .range = RANGE_TOKEN_ID},
    {.key = "cls_token_id", .offset = AT(cls_token_id), .kind = CONFIG_INT,
     .range = RANGE_TOKEN_ID},
    {.key = "unk_token_id", .offset = AT(unk_token_id), .kind = CONFIG_INT,
     .range = RANGE_TOKEN_ID},
};

#define N_BERT_KEYS ((int)(sizeof bert_keys / sizeof bert_keys[0]))

/* ------------------------------------------------------------------------ */
/* Reading                                                                   */
/* ------------------------------------------------------------------------ */

static int read_arch(const JsonValue *root, BertConfig *cfg, BertcError *err)
{
    const JsonValue *a = bertc_json_get(root, "architectures");
    const char *name;
    if (!a)
        return bertc_json_get_string(root, "architectures", &name, err); /* "missing key ..." */
    if (a->type != JSON_ARRAY || a->length == 0)
        return bertc_json_errorf(err, a, "must be a non-empty array, the architecture's name "
                                 "first");
    if (bertc_json_as_string(bertc_json_at(a, 0), &name, err) != 0)
        return -1;
    if (strlen(name) >= sizeof cfg->architecture)
        return bertc_json_errorf(err, bertc_json_at(a, 0), "unknown architecture \"%.60s...\" (%zu bytes)",
                           name, strlen(name));
    snprintf(cfg->architecture, sizeof cfg->architecture, "%s", name);
    return 0;
}

/* An optional string key that must be one of names[0..n); *out = values[i]. */
static int read_named(const JsonValue *obj, const char *key, const char *const *names,
                      const int *values, size_t n, const char *listing, int *out,
                      BertcError *err)
{
    const char *s = NULL;
    if (bertc_json_opt_string(obj, key, NULL, &s, err) != 0)
        return -1;
    if (!s)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = values[i];
            return 0;
        }
    return bertc_json_errorf(err, bertc_json_get(obj, key), "unknown %s \"%.40s\" (expected %s)", key, s,
                       listing);
}

static int read_strings(const JsonValue *root, BertConfig *cfg, BertcError *err)
{
    static const char *const acts[] = {"gelu", "gelu_new", "gelu_pytorch_tanh", "relu"};
    static const int act_values[] = {ACT_GELU, ACT_GELU_TANH, ACT_GELU_TANH, ACT_RELU};
    static const int problem_values[] = {PROBLEM_REGRESSION, PROBLEM_SINGLE_LABEL,
                                         PROBLEM_MULTI_LABEL};
    const char *problems[3];
    for (int i = 0; i < 3; i++)
        problems[i] = bertc_problem_type_name((ProblemType)problem_values[i]);
    int act = (int)cfg->hidden_act, problem = (int)cfg->problem_type;
    if (read_named(root, "hidden_act", acts, act_values, 4,
                   "gelu, gelu_new, gelu_pytorch_tanh or relu", &act, err) != 0 ||
        read_named(root, "problem_type", problems, problem_values, 3,
                   "regression, single_label_classification or multi_label_classification",
                   &problem, err) != 0)
        return -1;
    cfg->hidden_act = (BertAct)act;
    cfg->problem_type = (ProblemType)problem;
    return 0;
}

/* id2label's entry for id i: its key written as a number ("7"). */
static const JsonValue *id2label_entry(const JsonValue *map, int i)
{
    char key[16];
    snprintf(key, sizeof key, "%d", i);
    return bertc_json_get(map, key);
}

static const char *id2label_name(void *map, int i)
{
    return bertc_json_string(id2label_entry(map, i));
}

/* id2label {"0": "NEG", "1": "POS"}: every index 0..n-1 once, names strings;
 * as many as the file holds (the JSON parser refuses a key given twice, so
 * n keys that are the ids 0..n-1 are each of them once). */
static int read_id2label(const JsonValue *map, BertConfig *cfg, BertcError *err)
{
    int n = (int)map->length;
    for (int i = 0; i < n; i++) {
        const JsonValue *v = bertc_json_at(map, (size_t)i);
        size_t klen;
        const char *key = bertc_json_key(v, &klen);
        int64_t id;
        char digits[24];
        const char *s;
        snprintf(digits, sizeof digits, "%.*s", (int)(klen < 23 ? klen : 23), key);
        if (!bertc_parse_i64(digits, 0, n - 1, &id) || klen >= 23 ||
            id2label_entry(map, (int)id) != v)
            return bertc_json_errorf(err, v, "id2label keys must be the label ids 0..%d, each "
                                     "once; found \"%.30s\"", n - 1, digits);
        if (bertc_json_as_string(v, &s, err) != 0)
            return -1;
    }
    if (bertc_bert_config_set_labels_by(cfg, n, id2label_name, (void *)map, err) != 0) {
        BertcError inner = *err;
        return bertc_json_errorf(err, map, "%s", inner.msg + (strncmp(inner.msg, "config: ", 8)
                                                              ? 0 : 8));
    }
    return 0;
}

/* Whether label i's name comes again at a later id. HF builds label2id as
 * {name: id for id, name in id2label.items()}, so a name given twice maps
 * to its last id and label2id has one entry per distinct name. (Quadratic
 * in the labels: a few thousand at most in practice.) */
static bool label_repeated_later(const BertConfig *c, int i)
{
    const char *name = bertc_bert_config_label(c, i);
    for (int j = i + 1; j < c->n_label_names; j++)
        if (strcmp(name, bertc_bert_config_label(c, j)) == 0)
            return true;
    return false;
}

static int distinct_labels(const BertConfig *c)
{
    int n = 0;
    for (int i = 0; i < c->n_label_names; i++)
        n += !label_repeated_later(c, i);
    return n;
}

/* label2id, when given, must be id2label's inverse (HF writes both). */
static int check_label2id(const JsonValue *root, const BertConfig *cfg, BertcError *err)
{
    const JsonValue *map = bertc_json_get(root, "label2id");
    if (!map || map->type == JSON_NULL)
        return 0;
    if (map->type != JSON_OBJECT)
        return bertc_json_errorf(err, map, "must be an object {\"label\": 0, ...}, found %s",
                           bertc_json_type_name(map->type));
    if (cfg->n_label_names == 0 || (int)map->length != distinct_labels(cfg))
        return bertc_json_errorf(err, map, "has %u entries; it must be the inverse of id2label "
                           "(%d distinct labels)", (unsigned)map->length, distinct_labels(cfg));
    for (size_t i = 0; i < map->length; i++) {
        const JsonValue *v = bertc_json_at(map, i);
        size_t klen;
        const char *name = bertc_json_key(v, &klen);
        int64_t id;
        if (bertc_json_as_int(v, &id, err) != 0)
            return -1;
        const char *want = bertc_bert_config_label(cfg, (int)(id >= 0 && id < INT32_MAX ? id : -1));
        if (!want || strlen(want) != klen || memcmp(want, name, klen) != 0)
            return bertc_json_errorf(err, v, "label2id[\"%.*s\"] = %lld is not what id2label says "
                               "(%s)", (int)(klen < 40 ? klen : 40), name, (long long)id,
                               want ? want : "no such id");
    }
    return 0;
}

/* num_labels, else len(id2label), else 2; both present must agree. */
static int read_num_labels(const JsonValue *root, BertConfig *cfg, BertcError *err)
{
    const JsonValue *id2label = bertc_json_get(root, "id2label");
    if (id2label && id2label->type != JSON_NULL && id2label->type != JSON_OBJECT)
        return bertc_json_errorf(err, id2label, "must be an object {\"0\": \"label\", ...}, found %s",
                           bertc_json_type_name(id2label->type));
    const ConfigKey k = {.key = "num_labels", .offset = AT(num_labels), .kind = CONFIG_INT,
                         .range = RANGE_POSITIVE};
    bool has_map = id2label && id2label->type == JSON_OBJECT;
    const JsonValue *num = bertc_json_get(root, "num_labels");
    bool has_num = num && num->type != JSON_NULL;
    if (has_map && id2label->length == 0)
        return bertc_json_errorf(err, id2label, "id2label is empty; a classifier needs labels");
    if (has_map)
        cfg->num_labels = (int)id2label->length;
    if (bertc_config_read_keys(root, &k, 1, cfg, cfg, err) != 0)
        return -1;
    if (has_map && has_num && (size_t)cfg->num_labels != id2label->length)
        return bertc_json_errorf(err, num, "num_labels %d disagrees with id2label, which has %u "
                           "entries", cfg->num_labels, (unsigned)id2label->length);
    if (has_map && read_id2label(id2label, cfg, err) != 0)
        return -1;
    return check_label2id(root, cfg, err);
}

static int read_optional_real(const JsonValue *root, const char *key, float *out,
                              BertcError *err)
{
    const JsonValue *v = bertc_json_get(root, key);
    if (!v || v->type == JSON_NULL)
        return 0;
    double x;
    if (bertc_json_as_double(v, &x, err) != 0)
        return -1;
    if (!(x >= 0 && x <= 1))
        return bertc_json_errorf(err, v, "must be in [0, 1] or null, found %.17g", x);
    *out = (float)x;
    return 0;
}

/* HF's quantization_config: only bertc's own int8 and bf16 schemes are read (the
 * weights of any other, bitsandbytes or GPTQ, are not in a layout bertc
 * reads); its other fields describe the scheme for people. */
static int read_quantization(const JsonValue *root, BertConfig *cfg, BertcError *err)
{
    const JsonValue *q = bertc_json_get(root, "quantization_config");
    if (!q || q->type == JSON_NULL)
        return 0;
    if (q->type != JSON_OBJECT)
        return bertc_json_errorf(err, q, "quantization_config must be an object, found %s",
                                 bertc_json_type_name(q->type));
    const char *method;
    if (bertc_json_get_string(q, "quant_method", &method, err) != 0)
        return -1;
    if (strcmp(method, CONFIG_QUANT_METHOD_BF16) == 0) {
        cfg->bf16 = true;
        return 0;
    }
    if (strcmp(method, CONFIG_QUANT_METHOD) != 0)
        return bertc_json_errorf(err, bertc_json_get(q, "quant_method"), "quant_method \"%.40s\" "
                                 "is not one bertc reads (\"" CONFIG_QUANT_METHOD "\" or \""
                                 CONFIG_QUANT_METHOD_BF16 "\", written by bertc quantize)",
                                 method);
    cfg->int8_dynamic = true;
    return 0;
}

int bertc_bert_config_read_common(const JsonValue *root, BertConfig *out, BertcError *err)
{
    if (root->type != JSON_OBJECT)
        return bertc_json_errorf(err, root, "config.json must hold a JSON object, found %s",
                           bertc_json_type_name(root->type));
    BertConfig cfg = bertc_bert_config_default(NULL);
    cfg.vocab_size = 0;
    if (read_arch(root, &cfg, err) != 0 ||
        bertc_config_read_keys(root, bert_keys, 1, &cfg, &cfg, err) != 0 ||
        bertc_config_read_keys(root, bert_keys, N_BERT_KEYS, &cfg, &cfg, err) != 0)
        return -1;
    if (cfg.hidden_size % cfg.num_attention_heads != 0)
        return bertc_json_errorf(err, bertc_json_get(root, "num_attention_heads"), "hidden_size %d is not "
                           "a multiple of num_attention_heads %d (each head gets hidden_size / "
                           "num_attention_heads dims)", cfg.hidden_size,
                           cfg.num_attention_heads);
    bool pooler = true;
    if (read_strings(root, &cfg, err) != 0 || read_num_labels(root, &cfg, err) != 0 ||
        read_optional_real(root, "classifier_dropout", &cfg.classifier_dropout, err) != 0 ||
        bertc_json_opt_bool(root, "add_pooling_layer", true, &pooler, err) != 0 ||
        read_quantization(root, &cfg, err) != 0) {
        bertc_bert_config_free(&cfg);   /* id2label's names, when they were read */
        return -1;
    }
    cfg.add_pooling_layer = pooler;
    *out = cfg;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Checking a config made in code                                            */
/* ------------------------------------------------------------------------ */

int bertc_bert_config_check_common(const BertConfig *c, BertcError *err)
{
    if ((unsigned)c->hidden_act > ACT_RELU || (unsigned)c->problem_type > PROBLEM_MULTI_LABEL)
        return bertc_errorf(err, "config: hidden_act %d or problem_type %d is not one of the "
                            "known values", (int)c->hidden_act, (int)c->problem_type);
    const ConfigKey num_labels = {.key = "num_labels", .offset = AT(num_labels),
                                  .kind = CONFIG_INT, .required = true, .range = RANGE_POSITIVE};
    if (bertc_config_check_keys(bert_keys, 1, c, c, err) != 0 ||
        bertc_config_check_keys(bert_keys, N_BERT_KEYS, c, c, err) != 0 ||
        bertc_config_check_keys(&num_labels, 1, c, c, err) != 0)
        return -1;
    if (c->hidden_size % c->num_attention_heads != 0)
        return bertc_errorf(err, "config: hidden_size %d is not a multiple of "
                            "num_attention_heads %d", c->hidden_size, c->num_attention_heads);
    if (c->classifier_dropout > 1 || isnan(c->classifier_dropout))
        return bertc_errorf(err, "config: classifier_dropout = %g must be in [0, 1] (or "
                            "negative for null)", (double)c->classifier_dropout);
    if (c->n_label_names != 0 && c->n_label_names != c->num_labels)
        return bertc_errorf(err, "config: id2label has %d names for num_labels %d",
                            c->n_label_names, c->num_labels);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Writing                                                                   */
/* ------------------------------------------------------------------------ */

static void append(char *buf, size_t cap, size_t *len, const char *s)
{
    size_t n = strlen(s);
    if (*len < cap)
        memcpy(buf + *len, s, *len + n < cap ? n + 1 : cap - *len);
    *len += n;
}

/* A JSON string (quoted, escaped) appended. */
static void append_quoted(char *buf, size_t cap, size_t *len, const char *s)
{
    size_t n = bertc_json_quote(NULL, 0, s, strlen(s));
    if (*len < cap)
        bertc_json_quote(buf + *len, cap - *len, s, strlen(s));
    *len += n;
}

static void format_labels(const BertConfig *c, char *buf, size_t cap, size_t *len)
{
    char line[64];
    append(buf, cap, len, ",\n  \"id2label\": {");
    for (int i = 0; i < c->n_label_names; i++) {
        snprintf(line, sizeof line, "%s\"%d\": ", i ? ", " : "", i);
        append(buf, cap, len, line);
        append_quoted(buf, cap, len, bertc_bert_config_label(c, i));
    }
    append(buf, cap, len, "},\n  \"label2id\": {");
    for (int i = 0, written = 0; i < c->n_label_names; i++) {
        if (label_repeated_later(c, i))
            continue;
        append(buf, cap, len, written++ ? ", " : "");
        append_quoted(buf, cap, len, bertc_bert_config_label(c, i));
        snprintf(line, sizeof line, ": %d", i);
        append(buf, cap, len, line);
    }
    append(buf, cap, len, "}");
}

void bertc_bert_config_format_common(const BertConfig *c, char *buf, size_t cap, size_t *len)
{
    char line[256];
    append(buf, cap, len, "{\n  \"architectures\": [");
    append_quoted(buf, cap, len, c->architecture);
    snprintf(line, sizeof line, "],\n  \"model_type\": \"bert\",\n  \"hidden_act\": \"%s\",\n"
             "  \"num_labels\": %d", bertc_bert_act_name(c->hidden_act), c->num_labels);
    append(buf, cap, len, line);
    if (c->problem_type != PROBLEM_UNSET) {
        snprintf(line, sizeof line, ",\n  \"problem_type\": \"%s\"", bertc_problem_type_name(c->problem_type));
        append(buf, cap, len, line);
    }
    if (c->classifier_dropout >= 0) {
        snprintf(line, sizeof line, ",\n  \"classifier_dropout\": %.9g",
                 (double)c->classifier_dropout);
        append(buf, cap, len, line);
    }
    if (!c->add_pooling_layer)
        append(buf, cap, len, ",\n  \"add_pooling_layer\": false");
    if (c->int8_dynamic)
        append(buf, cap, len, ",\n  \"quantization_config\": {\"quant_method\": \""
               CONFIG_QUANT_METHOD "\"}");
    else if (c->bf16)
        append(buf, cap, len, ",\n  \"quantization_config\": {\"quant_method\": \""
               CONFIG_QUANT_METHOD_BF16 "\"}");
    if (c->n_label_names > 0)
        format_labels(c, buf, cap, len);
    bertc_config_format_keys(bert_keys, N_BERT_KEYS, c, buf, cap, len);
}
