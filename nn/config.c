/* nn/config.c — config.json -> BertConfig. Each architecture's keys are one
 * table (key, field, kind, required, allowed range); the defaults live in
 * bert_config_default only. */
#include "nn/config.h"

#include "nn/json.h"
#include "tensor/format_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

static const char *const arch_names[ARCH_COUNT] = {
    [ARCH_BERT_MODEL] = "BertModel",
    [ARCH_BERT_SEQCLS] = "BertForSequenceClassification",
    [ARCH_BERT_MLM] = "BertForMaskedLM",
    [ARCH_CGBERT] = "CGBertForSequenceClassification",
    [ARCH_QACGBERT] = "QACGBertForSequenceClassification",
    [ARCH_SUMMARIZER] = "Summarizer",
    [ARCH_QACONV] = "QAConvModelV2",
    [ARCH_SPANBERT] = "SpanBertForPreTraining",
};

const char *bert_arch_name(BertArch arch) { return arch_names[arch]; }

const char *bert_act_name(BertAct act)
{
    static const char *const names[] = {"gelu", "gelu_new", "relu"};
    return names[act];
}

BertConfig bert_config_default(BertArch arch)
{
    return (BertConfig){
        .arch = arch,
        /* bert-base-uncased and transformers' BertConfig defaults */
        .vocab_size = 30522, .hidden_size = 768, .num_hidden_layers = 12,
        .num_attention_heads = 12, .intermediate_size = 3072, .hidden_act = ACT_GELU,
        .hidden_dropout_prob = 0.1f, .attention_probs_dropout_prob = 0.1f,
        .max_position_embeddings = 512, .type_vocab_size = 2, .initializer_range = 0.02f,
        .layer_norm_eps = 1e-12f, .pad_token_id = 0, .num_labels = 2,
        .problem_type = PROBLEM_UNSET,
        /* SPEC §5 model defaults */
        .context_vocab_size = 8, .pooler_type = POOLER_ATTENTION_GATE,
        .inter_layer_norm_eps = 1e-6f, .pe_max_len = 5000,
        .query_len = 50, .conv_filters = 1024, .num_question_types = 6,
        .attention_temperature = 10.0f, .query_loss_divisor = 5.0f,
        .sep_token_id = -1, .mask_token_id = -1, .cls_token_id = -1, .unk_token_id = -1,
        .sbo_dim_ffn = 3072, .sbo_max_span_length = 10, .sbo_layer_norm_eps = 1e-5f,
        .masking = {.masking_budget = 0.15, .span_probability = 0.2,
                    .max_span_length_cap = 10},
    };
}

/* ------------------------------------------------------------------------ */
/* Field tables                                                              */
/* ------------------------------------------------------------------------ */

typedef enum Kind { K_INT, K_FLOAT, K_DOUBLE, K_U64 } Kind;

typedef enum Range {
    R_POSITIVE,      /* ints >= 1, floats > 0 */
    R_NONNEG,        /* >= 0 */
    R_PROB,          /* 0 <= p <= 1 */
    R_PROB_POSITIVE, /* 0 < p <= 1 */
    R_TOKEN_ID,      /* 0 <= id < vocab_size */
    R_LAYERS,        /* 1 <= n <= CONFIG_MAX_LAYERS */
    R_LAYERS_OR_0    /* 0 <= n <= CONFIG_MAX_LAYERS */
} Range;

typedef struct Field {
    const char *key;
    size_t offset;   /* into the struct being filled */
    Kind kind;
    bool required;
    Range range;
} Field;

#define REQ true
#define OPT false
#define AT(member) offsetof(BertConfig, member)

static const Field bert_fields[] = {
    {"vocab_size", AT(vocab_size), K_INT, REQ, R_POSITIVE},
    {"hidden_size", AT(hidden_size), K_INT, REQ, R_POSITIVE},
    {"num_hidden_layers", AT(num_hidden_layers), K_INT, REQ, R_LAYERS},
    {"num_attention_heads", AT(num_attention_heads), K_INT, REQ, R_POSITIVE},
    {"intermediate_size", AT(intermediate_size), K_INT, REQ, R_POSITIVE},
    {"hidden_dropout_prob", AT(hidden_dropout_prob), K_FLOAT, OPT, R_PROB},
    {"attention_probs_dropout_prob", AT(attention_probs_dropout_prob), K_FLOAT, OPT, R_PROB},
    {"max_position_embeddings", AT(max_position_embeddings), K_INT, REQ, R_POSITIVE},
    {"type_vocab_size", AT(type_vocab_size), K_INT, OPT, R_POSITIVE},
    {"initializer_range", AT(initializer_range), K_FLOAT, OPT, R_NONNEG},
    {"layer_norm_eps", AT(layer_norm_eps), K_FLOAT, OPT, R_NONNEG},
    {"pad_token_id", AT(pad_token_id), K_INT, OPT, R_TOKEN_ID},
    {"sep_token_id", AT(sep_token_id), K_INT, OPT, R_TOKEN_ID},
    {"mask_token_id", AT(mask_token_id), K_INT, OPT, R_TOKEN_ID},
    {"cls_token_id", AT(cls_token_id), K_INT, OPT, R_TOKEN_ID},
    {"unk_token_id", AT(unk_token_id), K_INT, OPT, R_TOKEN_ID},
};

static const Field cgbert_fields[] = {
    {"context_vocab_size", AT(context_vocab_size), K_INT, OPT, R_POSITIVE},
};

static const Field summarizer_fields[] = {
    {"ff_size", AT(ff_size), K_INT, REQ, R_POSITIVE},
    {"heads", AT(heads), K_INT, REQ, R_POSITIVE},
    {"inter_layers", AT(inter_layers), K_INT, REQ, R_LAYERS_OR_0},
    {"inter_layer_norm_eps", AT(inter_layer_norm_eps), K_FLOAT, OPT, R_NONNEG},
    {"pe_max_len", AT(pe_max_len), K_INT, OPT, R_POSITIVE},
};

static const Field qaconv_fields[] = {
    {"sep_token_id", AT(sep_token_id), K_INT, REQ, R_TOKEN_ID},
    {"query_len", AT(query_len), K_INT, OPT, R_POSITIVE},
    {"conv_filters", AT(conv_filters), K_INT, OPT, R_POSITIVE},
    {"num_question_types", AT(num_question_types), K_INT, OPT, R_POSITIVE},
    {"attention_temperature", AT(attention_temperature), K_FLOAT, OPT, R_POSITIVE},
    {"query_loss_divisor", AT(query_loss_divisor), K_FLOAT, OPT, R_POSITIVE},
};

static const Field spanbert_fields[] = {
    {"mask_token_id", AT(mask_token_id), K_INT, REQ, R_TOKEN_ID},
    {"cls_token_id", AT(cls_token_id), K_INT, REQ, R_TOKEN_ID},
    {"sep_token_id", AT(sep_token_id), K_INT, REQ, R_TOKEN_ID},
    {"unk_token_id", AT(unk_token_id), K_INT, REQ, R_TOKEN_ID},
    {"sbo_dim_ffn", AT(sbo_dim_ffn), K_INT, OPT, R_POSITIVE},
    {"sbo_layer_norm_eps", AT(sbo_layer_norm_eps), K_FLOAT, OPT, R_NONNEG},
    {"sbo_max_span_length", AT(sbo_max_span_length), K_INT, OPT, R_POSITIVE},
};

#define MASK_AT(member) offsetof(SpanMaskingConfig, member)
static const Field masking_fields[] = {
    {"seed", MASK_AT(seed), K_U64, REQ, R_NONNEG},
    {"masking_budget", MASK_AT(masking_budget), K_DOUBLE, OPT, R_PROB},
    {"span_probability", MASK_AT(span_probability), K_DOUBLE, OPT, R_PROB_POSITIVE},
    {"max_span_length_cap", MASK_AT(max_span_length_cap), K_INT, OPT, R_POSITIVE},
};

#define COUNT(table) (sizeof table / sizeof table[0])

/* ------------------------------------------------------------------------ */
/* Reading one field                                                         */
/* ------------------------------------------------------------------------ */

/* The integers [*lo, *hi] a range allows. */
static void int_bounds(Range range, int vocab, int64_t *lo, int64_t *hi)
{
    *lo = range == R_POSITIVE || range == R_LAYERS ? 1 : 0;
    *hi = range == R_TOKEN_ID                            ? (int64_t)vocab - 1
        : range == R_LAYERS || range == R_LAYERS_OR_0 ? CONFIG_MAX_LAYERS
                                                        : INT32_MAX;
}

static bool real_ok(double x, Range range)
{
    return range == R_POSITIVE ? x > 0
         : range == R_NONNEG   ? x >= 0
         : range == R_PROB     ? x >= 0 && x <= 1
         : /* R_PROB_POSITIVE */ x > 0 && x <= 1;
}

static const char *const real_want[] = {"> 0", ">= 0", "in [0, 1]", "in (0, 1]"};

static int check_int(const JsonValue *v, int64_t x, Range range, int vocab, BertcError *err)
{
    int64_t lo, hi;
    int_bounds(range, vocab, &lo, &hi);
    if (x >= lo && x <= hi)
        return 0;
    if (range == R_TOKEN_ID)
        return json_errorf(err, v, "token id %" PRId64 " is outside [0, vocab_size %d)", x,
                           vocab);
    return json_errorf(err, v, "must be an integer in [%" PRId64 ", %" PRId64 "], found %"
                       PRId64, lo, hi, x);
}

static int check_real(const JsonValue *v, double x, Range range, BertcError *err)
{
    if (real_ok(x, range))
        return 0;
    return json_errorf(err, v, "must be %s, found %.17g", real_want[range], x);
}

/* Reads obj[f->key] into the struct at base; absent (or null) optional keys
 * keep the value already there (the default). */
static int read_field(const JsonValue *obj, const Field *f, void *base, int vocab,
                      BertcError *err)
{
    const JsonValue *v = json_get(obj, f->key);
    if (!v || v->type == JSON_NULL) {
        if (!f->required)
            return 0;
        int64_t unused;
        return json_get_int(obj, f->key, &unused, err); /* "missing key ..." */
    }
    char *dst = (char *)base + f->offset;
    if (f->kind == K_FLOAT || f->kind == K_DOUBLE) {
        double x;
        if (json_as_double(v, &x, err) != 0)
            return -1;
        /* a float field is checked as the float it becomes: 1e306 would be
         * inf, and 1e-50 would be 0, which a "> 0" key must not be */
        if (f->kind == K_FLOAT && !isfinite((float)x))
            return json_errorf(err, v, "%.17g is outside the float32 range", x);
        if (check_real(v, f->kind == K_FLOAT ? (double)(float)x : x, f->range, err) != 0)
            return -1;
        if (f->kind == K_FLOAT)
            *(float *)dst = (float)x;
        else
            *(double *)dst = x;
        return 0;
    }
    int64_t x;
    if (json_as_int(v, &x, err) != 0)
        return -1;
    if (f->kind == K_U64) {
        if (x < 0)
            return json_errorf(err, v, "must be a non-negative integer, found %" PRId64, x);
        *(uint64_t *)dst = (uint64_t)x;
        return 0;
    }
    if (check_int(v, x, f->range, vocab, err) != 0)
        return -1;
    *(int *)dst = (int)x;
    return 0;
}

static int read_fields(const JsonValue *obj, const Field *fields, size_t n, void *base,
                       int vocab, BertcError *err)
{
    for (size_t i = 0; i < n; i++)
        if (read_field(obj, &fields[i], base, vocab, err) != 0)
            return -1;
    return 0;
}

/* An optional string key that must be one of names[0..n); *out = its index. */
static int read_choice(const JsonValue *obj, const char *key, const char *const *names,
                       const int *values, size_t n, const char *listing, int *out,
                       BertcError *err)
{
    const char *s = NULL;
    if (json_opt_string(obj, key, NULL, &s, err) != 0)
        return -1;
    if (!s)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = values[i];
            return 0;
        }
    return json_errorf(err, json_get(obj, key), "unknown %s \"%.40s\" (expected %s)", key, s,
                       listing);
}

/* ------------------------------------------------------------------------ */
/* Keys with special rules                                                   */
/* ------------------------------------------------------------------------ */

static int read_arch(const JsonValue *root, BertConfig *cfg, BertcError *err)
{
    const JsonValue *a = json_get(root, "architectures");
    const char *name;
    if (!a)
        return json_get_string(root, "architectures", &name, err); /* "missing key ..." */
    if (a->type != JSON_ARRAY || a->length == 0)
        return json_errorf(err, a, "must be a non-empty array like [\"BertModel\"]");
    if (json_as_string(json_at(a, 0), &name, err) != 0)
        return -1;
    for (int i = 0; i < ARCH_COUNT; i++)
        if (strcmp(name, arch_names[i]) == 0) {
            cfg->arch = (BertArch)i;
            return 0;
        }
    return json_errorf(err, json_at(a, 0), "unknown architecture \"%.60s\" (expected BertModel, "
                       "BertForSequenceClassification, BertForMaskedLM, "
                       "CGBertForSequenceClassification, QACGBertForSequenceClassification, "
                       "Summarizer, QAConvModelV2 or SpanBertForPreTraining)", name);
}

static int read_strings(const JsonValue *root, BertConfig *cfg, BertcError *err)
{
    static const char *const acts[] = {"gelu", "gelu_new", "gelu_pytorch_tanh", "relu"};
    static const int act_values[] = {ACT_GELU, ACT_GELU_TANH, ACT_GELU_TANH, ACT_RELU};
    static const char *const problems[] = {"regression", "single_label_classification",
                                           "multi_label_classification"};
    static const int problem_values[] = {PROBLEM_REGRESSION, PROBLEM_SINGLE_LABEL,
                                         PROBLEM_MULTI_LABEL};
    int act = (int)cfg->hidden_act, problem = (int)cfg->problem_type;
    if (read_choice(root, "hidden_act", acts, act_values, 4,
                    "gelu, gelu_new, gelu_pytorch_tanh or relu", &act, err) != 0 ||
        read_choice(root, "problem_type", problems, problem_values, 3,
                    "regression, single_label_classification or multi_label_classification",
                    &problem, err) != 0)
        return -1;
    cfg->hidden_act = (BertAct)act;
    cfg->problem_type = (ProblemType)problem;
    return 0;
}

/* num_labels, else len(id2label), else 2; both present must agree. */
static int read_num_labels(const JsonValue *root, BertConfig *cfg, BertcError *err)
{
    const JsonValue *id2label = json_get(root, "id2label");
    if (id2label && id2label->type != JSON_NULL && id2label->type != JSON_OBJECT)
        return json_errorf(err, id2label, "must be an object {\"0\": \"label\", ...}, found %s",
                           json_type_name(id2label->type));
    const Field f = {"num_labels", AT(num_labels), K_INT, OPT, R_POSITIVE};
    bool has_map = id2label && id2label->type == JSON_OBJECT;
    bool has_num = json_get(root, "num_labels") && json_get(root, "num_labels")->type != JSON_NULL;
    if (has_map)
        cfg->num_labels = (int)id2label->length;
    if (read_field(root, &f, cfg, cfg->vocab_size, err) != 0)
        return -1;
    if (has_map && has_num && (size_t)cfg->num_labels != id2label->length)
        return json_errorf(err, json_get(root, "num_labels"), "num_labels %d disagrees with "
                           "id2label, which has %u entries", cfg->num_labels,
                           (unsigned)id2label->length);
    if (has_map && id2label->length == 0)
        return json_errorf(err, id2label, "id2label is empty; a classifier needs labels");
    /* bert_seqcls's MSE compares one score per sequence with labels (B) */
    if (cfg->arch == ARCH_BERT_SEQCLS && cfg->problem_type == PROBLEM_REGRESSION &&
        cfg->num_labels != 1)
        return json_errorf(err, json_get(root, "problem_type"), "regression needs num_labels "
                           "1 (one score per sequence), found num_labels %d; set num_labels "
                           "to 1 or choose another problem_type", cfg->num_labels);
    return 0;
}

static int read_masking(const JsonValue *root, BertConfig *cfg, BertcError *err)
{
    const JsonValue *m = json_get(root, "masking");
    if (!m || m->type == JSON_NULL)
        return 0;
    if (m->type != JSON_OBJECT)
        return json_errorf(err, m, "must be an object {\"seed\": ..., ...}, found %s",
                           json_type_name(m->type));
    SpanMaskingConfig *mc = &cfg->masking;
    mc->present = true;
    if (read_fields(m, masking_fields, COUNT(masking_fields), mc, cfg->vocab_size, err) != 0)
        return -1;
    const JsonValue *ids = json_get(m, "special_token_ids");
    if (!ids || ids->type == JSON_NULL)
        return 0;
    if (ids->type != JSON_ARRAY || ids->length > CONFIG_MAX_SPECIAL_IDS)
        return json_errorf(err, ids, "must be an array of at most %d token ids",
                           CONFIG_MAX_SPECIAL_IDS);
    for (size_t i = 0; i < ids->length; i++) {
        int64_t id;
        if (json_as_int(json_at(ids, i), &id, err) != 0 ||
            check_int(json_at(ids, i), id, R_TOKEN_ID, cfg->vocab_size, err) != 0)
            return -1;
        mc->special_token_ids[i] = (int32_t)id;
    }
    mc->n_special_token_ids = (int)ids->length;
    return 0;
}

static int divides(const JsonValue *root, const char *size_key, int size, const char *heads_key,
                   int heads, BertcError *err)
{
    if (size % heads == 0)
        return 0;
    return json_errorf(err, json_get(root, heads_key), "%s %d is not a multiple of %s %d "
                       "(each head gets %s / %s dims)", size_key, size, heads_key, heads,
                       size_key, heads_key);
}

static int read_model_keys(const JsonValue *root, BertConfig *cfg, BertcError *err)
{
    static const char *const poolers[] = {"attention_gate", "first_token"};
    static const int pooler_values[] = {POOLER_ATTENTION_GATE, POOLER_FIRST_TOKEN};
    int V = cfg->vocab_size, pooler = (int)cfg->pooler_type;
    switch (cfg->arch) {
    case ARCH_CGBERT:
    case ARCH_QACGBERT:
        if (read_fields(root, cgbert_fields, COUNT(cgbert_fields), cfg, V, err) != 0 ||
            read_choice(root, "pooler_type", poolers, pooler_values, 2,
                        "attention_gate or first_token", &pooler, err) != 0)
            return -1;
        cfg->pooler_type = (PoolerType)pooler;
        return 0;
    case ARCH_SUMMARIZER:
        if (read_fields(root, summarizer_fields, COUNT(summarizer_fields), cfg, V, err) != 0)
            return -1;
        return divides(root, "hidden_size", cfg->hidden_size, "heads", cfg->heads, err);
    case ARCH_QACONV:
        if (read_fields(root, qaconv_fields, COUNT(qaconv_fields), cfg, V, err) != 0)
            return -1;
        if (cfg->query_len > cfg->max_position_embeddings)
            return json_errorf(err, json_get(root, "query_len") ? json_get(root, "query_len")
                                                                 : root,
                               "query_len %d is longer than max_position_embeddings %d, so no "
                               "input can hold the question", cfg->query_len,
                               cfg->max_position_embeddings);
        return 0;
    case ARCH_SPANBERT:
        cfg->sbo_dim_ffn = cfg->intermediate_size;
        if (read_fields(root, spanbert_fields, COUNT(spanbert_fields), cfg, V, err) != 0)
            return -1;
        return read_masking(root, cfg, err);
    default:
        return 0;
    }
}

/* ------------------------------------------------------------------------ */
/* The same rules on a BertConfig made in code                               */
/* ------------------------------------------------------------------------ */

static int check_value(const Field *f, const void *base, int vocab, const char *prefix,
                       BertcError *err)
{
    const char *p = (const char *)base + f->offset;
    if (f->kind == K_U64)
        return 0;
    if (f->kind == K_INT) {
        int x = *(const int *)p;
        int64_t lo, hi;
        int_bounds(f->range, vocab, &lo, &hi);
        if ((x >= lo && x <= hi) || (f->range == R_TOKEN_ID && !f->required && x == -1))
            return 0;
        return bertc_errorf(err, "config: %s%s = %d is outside [%" PRId64 ", %" PRId64 "]",
                            prefix, f->key, x, lo, hi);
    }
    double x = f->kind == K_FLOAT ? (double)*(const float *)p : *(const double *)p;
    if (isfinite(x) && real_ok(x, f->range))
        return 0;
    return bertc_errorf(err, "config: %s%s = %g must be finite and %s", prefix, f->key, x,
                        real_want[f->range]);
}

static int check_values(const Field *fields, size_t n, const void *base, int vocab,
                        const char *prefix, BertcError *err)
{
    for (size_t i = 0; i < n; i++)
        if (check_value(&fields[i], base, vocab, prefix, err) != 0)
            return -1;
    return 0;
}

static int check_model_values(const BertConfig *c, BertcError *err)
{
    int V = c->vocab_size;
    const SpanMaskingConfig *m = &c->masking;
    switch (c->arch) {
    case ARCH_CGBERT:
    case ARCH_QACGBERT:
        return check_values(cgbert_fields, COUNT(cgbert_fields), c, V, "", err);
    case ARCH_SUMMARIZER:
        if (check_values(summarizer_fields, COUNT(summarizer_fields), c, V, "", err) != 0)
            return -1;
        if (c->hidden_size % c->heads != 0)
            return bertc_errorf(err, "config: hidden_size %d is not a multiple of heads %d",
                                c->hidden_size, c->heads);
        return 0;
    case ARCH_QACONV:
        if (check_values(qaconv_fields, COUNT(qaconv_fields), c, V, "", err) != 0)
            return -1;
        if (c->query_len > c->max_position_embeddings)
            return bertc_errorf(err, "config: query_len %d is longer than "
                                "max_position_embeddings %d, so no input can hold the question",
                                c->query_len, c->max_position_embeddings);
        return 0;
    case ARCH_SPANBERT:
        if (check_values(spanbert_fields, COUNT(spanbert_fields), c, V, "", err) != 0 ||
            (m->present && check_values(masking_fields, COUNT(masking_fields), m, V,
                                        "masking.", err) != 0))
            return -1;
        if (m->n_special_token_ids < 0 || m->n_special_token_ids > CONFIG_MAX_SPECIAL_IDS)
            return bertc_errorf(err, "config: masking.special_token_ids has %d entries (at "
                                "most %d)", m->n_special_token_ids, CONFIG_MAX_SPECIAL_IDS);
        for (int i = 0; i < m->n_special_token_ids; i++)
            if (m->special_token_ids[i] < 0 || m->special_token_ids[i] >= V)
                return bertc_errorf(err, "config: masking.special_token_ids[%d] = %d is "
                                    "outside [0, vocab_size %d)", i,
                                    (int)m->special_token_ids[i], V);
        return 0;
    default:
        return 0;
    }
}

int bert_config_check(const BertConfig *c, BertcError *err)
{
    if ((unsigned)c->arch >= ARCH_COUNT || (unsigned)c->hidden_act > ACT_RELU ||
        (unsigned)c->problem_type > PROBLEM_MULTI_LABEL ||
        (unsigned)c->pooler_type > POOLER_FIRST_TOKEN)
        return bertc_errorf(err, "config: architecture %d, hidden_act %d, problem_type %d or "
                            "pooler_type %d is not one of the known values", (int)c->arch,
                            (int)c->hidden_act, (int)c->problem_type, (int)c->pooler_type);
    const Field num_labels = {"num_labels", AT(num_labels), K_INT, REQ, R_POSITIVE};
    if (check_value(&bert_fields[0], c, 0, "", err) != 0 ||
        check_values(bert_fields, COUNT(bert_fields), c, c->vocab_size, "", err) != 0 ||
        check_value(&num_labels, c, 0, "", err) != 0)
        return -1;
    if (c->hidden_size % c->num_attention_heads != 0)
        return bertc_errorf(err, "config: hidden_size %d is not a multiple of "
                            "num_attention_heads %d", c->hidden_size, c->num_attention_heads);
    return check_model_values(c, err);
}

/* ------------------------------------------------------------------------ */
/* Entry points                                                              */
/* ------------------------------------------------------------------------ */

static int read_config(const JsonValue *root, BertConfig *out, BertcError *err)
{
    if (root->type != JSON_OBJECT)
        return json_errorf(err, root, "config.json must hold a JSON object, found %s",
                           json_type_name(root->type));
    BertConfig cfg = bert_config_default(ARCH_BERT_MODEL);
    const Field *vocab_size = &bert_fields[0]; /* token ids are checked against it */
    if (read_arch(root, &cfg, err) != 0 || read_field(root, vocab_size, &cfg, 0, err) != 0 ||
        read_fields(root, bert_fields, COUNT(bert_fields), &cfg, cfg.vocab_size, err) != 0 ||
        divides(root, "hidden_size", cfg.hidden_size, "num_attention_heads",
                cfg.num_attention_heads, err) != 0 ||
        read_strings(root, &cfg, err) != 0 || read_num_labels(root, &cfg, err) != 0 ||
        read_model_keys(root, &cfg, err) != 0)
        return -1;
    *out = cfg;
    return 0;
}

int bert_config_parse(Arena *scratch, const char *name, const char *text, size_t length,
                      BertConfig *cfg, BertcError *err)
{
    Arena *a = scratch ? scratch : arena_create("config", length * 4 + 4096);
    JsonDoc *doc;
    int rc = json_parse(a, name, text, length, &doc, err);
    if (rc == 0)
        rc = read_config(doc->root, cfg, err);
    if (!scratch)
        arena_destroy(a);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Writing: the same field tables, so what is written is what is read        */
/* ------------------------------------------------------------------------ */

/* Appends to a fixed buffer; remembers overflow instead of failing midway. */
typedef struct Out {
    char *buf;
    size_t cap, len;
} Out;

static void put(Out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(Out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(o->len < o->cap ? o->buf + o->len : NULL,
                      o->len < o->cap ? o->cap - o->len : 0, fmt, ap);
    va_end(ap);
    o->len += n > 0 ? (size_t)n : 0;
}

/* One "key": value line per field; token ids of -1 (absent) are left out.
 * Floats are printed with 9 significant digits so they read back exactly. */
static void put_fields(Out *o, const Field *fields, size_t n, const void *base)
{
    for (size_t i = 0; i < n; i++) {
        const char *p = (const char *)base + fields[i].offset;
        switch (fields[i].kind) {
        case K_INT:
            if (fields[i].range == R_TOKEN_ID && *(const int *)p < 0)
                continue;
            put(o, ",\n  \"%s\": %d", fields[i].key, *(const int *)p);
            break;
        case K_FLOAT: put(o, ",\n  \"%s\": %.9g", fields[i].key, (double)*(const float *)p); break;
        case K_DOUBLE: put(o, ",\n  \"%s\": %.17g", fields[i].key, *(const double *)p); break;
        case K_U64: put(o, ",\n  \"%s\": %" PRIu64, fields[i].key, *(const uint64_t *)p); break;
        }
    }
}

static void put_masking(Out *o, const SpanMaskingConfig *m)
{
    put(o, ",\n  \"masking\": {\"seed\": %" PRIu64 ", \"masking_budget\": %.17g, "
           "\"span_probability\": %.17g, \"max_span_length_cap\": %d, \"special_token_ids\": [",
        m->seed, m->masking_budget, m->span_probability, m->max_span_length_cap);
    for (int i = 0; i < m->n_special_token_ids; i++)
        put(o, i ? ", %d" : "%d", (int)m->special_token_ids[i]);
    put(o, "]}");
}

static void put_model_keys(Out *o, const BertConfig *c)
{
    switch (c->arch) {
    case ARCH_CGBERT:
    case ARCH_QACGBERT:
        put_fields(o, cgbert_fields, COUNT(cgbert_fields), c);
        put(o, ",\n  \"pooler_type\": \"%s\"",
            c->pooler_type == POOLER_FIRST_TOKEN ? "first_token" : "attention_gate");
        break;
    case ARCH_SUMMARIZER: put_fields(o, summarizer_fields, COUNT(summarizer_fields), c); break;
    case ARCH_QACONV: put_fields(o, qaconv_fields + 1, COUNT(qaconv_fields) - 1, c); break;
    case ARCH_SPANBERT:
        put_fields(o, spanbert_fields + 4, COUNT(spanbert_fields) - 4, c);
        if (c->masking.present)
            put_masking(o, &c->masking);
        break;
    default: break;
    }
}

int bert_config_format(const BertConfig *c, char *buf, size_t cap, size_t *len, BertcError *err)
{
    static const char *const problems[] = {NULL, "regression", "single_label_classification",
                                           "multi_label_classification"};
    Out o = {buf, cap, 0};
    put(&o, "{\n  \"architectures\": [\"%s\"],\n  \"model_type\": \"bert\",\n"
            "  \"hidden_act\": \"%s\",\n  \"num_labels\": %d",
        bert_arch_name(c->arch), bert_act_name(c->hidden_act), c->num_labels);
    if (c->problem_type != PROBLEM_UNSET)
        put(&o, ",\n  \"problem_type\": \"%s\"", problems[c->problem_type]);
    /* token ids are written once, by the shared table (QAConv and SpanBERT
     * repeat some of them in their own tables for the "required" rule) */
    put_fields(&o, bert_fields, COUNT(bert_fields), c);
    put_model_keys(&o, c);
    put(&o, "\n}\n");
    *len = o.len;
    if (o.len >= cap)
        return bertc_errorf(err, "config.json: %zu bytes do not fit in a buffer of %zu", o.len,
                            cap);
    return 0;
}
