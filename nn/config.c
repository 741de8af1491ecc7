/* nn/config.c — the common keys of config.json, and the key tables the
 * architectures' own keys are read, checked and written with. One table is
 * the one list of a set of keys: reading, checking values set in code and
 * writing all walk it, so what is written is what is read. */
#include "nn/config.h"

#include "tensor/format_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *bertc_bert_act_name(BertAct act)
{
    static const char *const names[] = {"gelu", "gelu_new", "relu"};
    return names[act];
}

const char *bertc_problem_type_name(ProblemType p)
{
    static const char *const names[] = {NULL, "regression", "single_label_classification",
                                        "multi_label_classification"};
    return names[p];
}

ProblemType bertc_problem_type(const BertConfig *cfg, bool int_labels)
{
    if (cfg->problem_type != PROBLEM_UNSET)
        return cfg->problem_type;
    if (cfg->num_labels == 1)
        return PROBLEM_REGRESSION;
    return int_labels ? PROBLEM_SINGLE_LABEL : PROBLEM_MULTI_LABEL;
}

BertConfig bertc_bert_config_default(const char *architecture)
{
    BertConfig c = {
        /* bert-base-uncased and transformers' BertConfig defaults */
        .vocab_size = 30522, .hidden_size = 768, .num_hidden_layers = 12,
        .num_attention_heads = 12, .intermediate_size = 3072, .hidden_act = ACT_GELU,
        .hidden_dropout_prob = 0.1f, .attention_probs_dropout_prob = 0.1f,
        .max_position_embeddings = 512, .type_vocab_size = 2, .initializer_range = 0.02f,
        .layer_norm_eps = 1e-12f, .classifier_dropout = -1.0f, .pad_token_id = 0,
        .sep_token_id = -1, .mask_token_id = -1, .cls_token_id = -1, .unk_token_id = -1,
        .num_labels = 2, .problem_type = PROBLEM_UNSET, .add_pooling_layer = true,
    };
    snprintf(c.architecture, sizeof c.architecture, "%s", architecture ? architecture : "");
    return c;
}

const char *bertc_bert_config_label_text(const BertConfig *cfg, size_t *bytes)
{
    const char *base = cfg->label_spill ? cfg->label_spill : cfg->label_names;
    size_t n = 0;
    for (int i = 0; i < cfg->n_label_names; i++)
        n += strlen(base + n) + 1;
    *bytes = n;
    return cfg->n_label_names > 0 ? base : NULL;
}

const char *bertc_bert_config_label(const BertConfig *cfg, int i)
{
    if (i < 0 || i >= cfg->n_label_names)
        return NULL;
    const char *s = cfg->label_spill ? cfg->label_spill : cfg->label_names;
    for (int k = 0; k < i; k++)
        s += strlen(s) + 1;
    return s;
}

void bertc_bert_config_free(BertConfig *cfg)
{
    if (!cfg->label_spill)
        return;
#if !defined(BERTC_FREESTANDING)
    if (cfg->label_heap)
        free((void *)cfg->label_spill);
#endif
    cfg->label_spill = NULL;
    cfg->label_heap = false;
    cfg->n_label_names = 0;
}

int bertc_bert_config_set_labels_by(BertConfig *cfg, int n, BertLabelFn name, void *ctx,
                                    BertcError *err)
{
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += strlen(name(ctx, i)) + 1;
    char *to = cfg->label_names;
    if (total > sizeof cfg->label_names) {
#if defined(BERTC_FREESTANDING)
        return bertc_errorf(err, "config: id2label: %d label names of %zu bytes in all; a "
                            "FREESTANDING build (no heap) holds %d", n, total,
                            CONFIG_LABEL_BYTES);
#else
        to = malloc(total);
        if (!to)
            return bertc_errorf(err, "config: id2label: out of memory for %d label names of "
                                "%zu bytes", n, total);
#endif
    }
    char *spilled = to == cfg->label_names ? NULL : to;
    size_t at = 0;
    for (int i = 0; i < n; i++) {   /* a name may be in the spill freed below */
        const char *s = name(ctx, i);
        size_t len = strlen(s) + 1;
        memmove(to + at, s, len);
        at += len;
    }
    bertc_bert_config_free(cfg);
    cfg->label_spill = spilled;
    cfg->label_heap = spilled != NULL;
    cfg->n_label_names = n;
    return 0;
}

static const char *name_at(void *names, int i) { return ((const char *const *)names)[i]; }

int bertc_bert_config_set_labels(BertConfig *cfg, const char *const *names, int n, BertcError *err)
{
    return bertc_bert_config_set_labels_by(cfg, n, name_at, (void *)names, err);
}

/* ------------------------------------------------------------------------ */
/* One key                                                                   */
/* ------------------------------------------------------------------------ */

void *bertc_config_key_ptr(void *base, const ConfigKey *k) { return (char *)base + k->offset; }

const void *bertc_config_key_cptr(const void *base, const ConfigKey *k)
{
    return (const char *)base + k->offset;
}

/* The integers [*lo, *hi] a range allows. */
static void int_bounds(ConfigRange range, int vocab, int64_t *lo, int64_t *hi)
{
    *lo = range == RANGE_POSITIVE || range == RANGE_LAYERS ? 1 : 0;
    *hi = range == RANGE_TOKEN_ID ? (int64_t)vocab - 1 : INT32_MAX;
}

static bool real_ok(double x, ConfigRange range)
{
    return range == RANGE_POSITIVE ? x > 0
         : range == RANGE_NONNEG   ? x >= 0
         : range == RANGE_PROB     ? x >= 0 && x <= 1
         : /* RANGE_PROB_POSITIVE */ x > 0 && x <= 1;
}

static const char *const real_want[] = {"> 0", ">= 0", "in [0, 1]", "in (0, 1]"};

/* The key's name inside its object: "seed" for "masking.seed". */
static const char *leaf(const ConfigKey *k)
{
    const char *dot = strchr(k->key, '.');
    return dot ? dot + 1 : k->key;
}

static int check_int(const JsonValue *v, int64_t x, ConfigRange range, int vocab,
                     BertcError *err)
{
    int64_t lo, hi;
    int_bounds(range, vocab, &lo, &hi);
    if (x >= lo && x <= hi)
        return 0;
    if (range == RANGE_TOKEN_ID)
        return bertc_json_errorf(err, v, "token id %lld is outside [0, vocab_size %d)", (long long)x,
                           vocab);
    return bertc_json_errorf(err, v, "must be an integer in [%lld, %lld], found %lld", (long long)lo,
                       (long long)hi, (long long)x);
}

static int read_real(const JsonValue *v, const ConfigKey *k, void *dst, BertcError *err)
{
    double x;
    if (bertc_json_as_double(v, &x, err) != 0)
        return -1;
    /* a float key is checked as the float it becomes: 1e306 would be inf,
     * and 1e-50 would be 0, which a "> 0" key must not be */
    if (k->kind == CONFIG_FLOAT && !isfinite((float)x))
        return bertc_json_errorf(err, v, "%.17g is outside the float32 range", x);
    double kept = k->kind == CONFIG_FLOAT ? (double)(float)x : x;
    if (!real_ok(kept, k->range))
        return bertc_json_errorf(err, v, "must be %s, found %.17g", real_want[k->range], x);
    if (k->kind == CONFIG_FLOAT) {
        float f = (float)x;
        memcpy(dst, &f, sizeof f);
    } else {
        memcpy(dst, &x, sizeof x);
    }
    return 0;
}

static int read_choice(const JsonValue *v, const ConfigKey *k, void *dst, BertcError *err)
{
    const char *s;
    if (bertc_json_as_string(v, &s, err) != 0)
        return -1;
    char listing[256];
    size_t at = 0;
    listing[0] = '\0';
    for (int i = 0; k->choices[i]; i++) {
        if (strcmp(s, k->choices[i]) == 0) {
            memcpy(dst, &i, sizeof i);
            return 0;
        }
        bool last = !k->choices[i + 1];
        at += (size_t)snprintf(listing + at, at < sizeof listing ? sizeof listing - at : 0,
                               "%s%s", i == 0 ? "" : last ? " or " : ", ", k->choices[i]);
        if (at >= sizeof listing)
            at = sizeof listing - 1;
    }
    return bertc_json_errorf(err, v, "unknown %s \"%.40s\" (expected %s)", leaf(k), s, listing);
}

static int read_token_ids(const JsonValue *v, void *dst, int vocab, BertcError *err)
{
    if (v->type != JSON_ARRAY || v->length > CONFIG_MAX_TOKEN_IDS)
        return bertc_json_errorf(err, v, "must be an array of at most %d token ids",
                           CONFIG_MAX_TOKEN_IDS);
    ConfigTokenIds ids = {.n = (int)v->length};
    for (size_t i = 0; i < v->length; i++) {
        int64_t id;
        if (bertc_json_as_int(bertc_json_at(v, i), &id, err) != 0 ||
            check_int(bertc_json_at(v, i), id, RANGE_TOKEN_ID, vocab, err) != 0)
            return -1;
        ids.ids[i] = (int32_t)id;
    }
    memcpy(dst, &ids, sizeof ids);
    return 0;
}

/* v (not null) into the key's spot. */
static int read_value(const JsonValue *v, const ConfigKey *k, void *dst, int vocab,
                      BertcError *err)
{
    int64_t x;
    switch (k->kind) {
    case CONFIG_FLOAT:
    case CONFIG_DOUBLE: return read_real(v, k, dst, err);
    case CONFIG_CHOICE: return read_choice(v, k, dst, err);
    case CONFIG_TOKEN_IDS: return read_token_ids(v, dst, vocab, err);
    case CONFIG_OBJECT: return 0;
    case CONFIG_U64:
        if (bertc_json_as_int(v, &x, err) != 0)
            return -1;
        if (x < 0)
            return bertc_json_errorf(err, v, "must be a non-negative integer, found %lld",
                               (long long)x);
        uint64_t u = (uint64_t)x;
        memcpy(dst, &u, sizeof u);
        return 0;
    case CONFIG_INT: break;
    }
    if (bertc_json_as_int(v, &x, err) != 0 || check_int(v, x, k->range, vocab, err) != 0)
        return -1;
    int i = (int)x;
    memcpy(dst, &i, sizeof i);
    return 0;
}

/* The object that holds key k ("masking" for "masking.seed"), or NULL when
 * that object is absent (or null). */
static const JsonValue *parent_of(const JsonValue *root, const ConfigKey *k)
{
    const char *dot = strchr(k->key, '.');
    if (!dot)
        return root;
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)(dot - k->key), k->key);
    const JsonValue *obj = bertc_json_get(root, name);
    return obj && obj->type == JSON_OBJECT ? obj : NULL;
}

static int read_key(const JsonValue *root, const ConfigKey *k, void *base, int vocab,
                    BertcError *err)
{
    const JsonValue *obj = parent_of(root, k);
    if (!obj)
        return 0;
    const JsonValue *v = bertc_json_get(obj, leaf(k));
    if (k->kind == CONFIG_OBJECT) {
        if (v && v->type != JSON_NULL && v->type != JSON_OBJECT)
            return bertc_json_errorf(err, v, "must be an object {\"...\": ..., ...}, found %s",
                               bertc_json_type_name(v->type));
        bool present = v && v->type == JSON_OBJECT;
        memcpy(bertc_config_key_ptr(base, k), &present, sizeof present);
        return 0;
    }
    if (!v || v->type == JSON_NULL) {
        if (!k->required)
            return 0;
        int64_t unused;
        return bertc_json_get_int(obj, leaf(k), &unused, err); /* "missing key ..." */
    }
    return read_value(v, k, bertc_config_key_ptr(base, k), vocab, err);
}

int bertc_config_read_keys(const JsonValue *root, const ConfigKey *keys, int n, void *base,
                     const BertConfig *cfg, BertcError *err)
{
    for (int i = 0; i < n; i++)
        if (read_key(root, &keys[i], base, cfg->vocab_size, err) != 0)
            return -1;
    return 0;
}

/* A common int key by name, for default_from. */
static int common_int(const BertConfig *cfg, const char *key)
{
    if (strcmp(key, "intermediate_size") == 0)
        return cfg->intermediate_size;
    if (strcmp(key, "hidden_size") == 0)
        return cfg->hidden_size;
    if (strcmp(key, "num_hidden_layers") == 0)
        return cfg->num_hidden_layers;
    return 0;
}

void bertc_config_default_keys(const ConfigKey *keys, int n, void *base, const BertConfig *cfg)
{
    for (int i = 0; i < n; i++) {
        const ConfigKey *k = &keys[i];
        double v = k->default_from ? common_int(cfg, k->default_from) : k->default_value;
        void *dst = bertc_config_key_ptr(base, k);
        switch (k->kind) {
        case CONFIG_TOKEN_IDS: memset(dst, 0, sizeof(ConfigTokenIds)); break;
        case CONFIG_OBJECT: memset(dst, 0, sizeof(bool)); break;
        default: {
            BertcError unused;
            bertc_config_set_key(k, base, v, NULL, &unused);
        }
        }
    }
}

/* ------------------------------------------------------------------------ */
/* Values set in code                                                        */
/* ------------------------------------------------------------------------ */

double bertc_config_key_value(const ConfigKey *k, const void *base)
{
    const void *p = bertc_config_key_cptr(base, k);
    int i;
    float f;
    double d;
    uint64_t u;
    bool b;
    switch (k->kind) {
    case CONFIG_FLOAT: memcpy(&f, p, sizeof f); return f;
    case CONFIG_DOUBLE: memcpy(&d, p, sizeof d); return d;
    case CONFIG_U64: memcpy(&u, p, sizeof u); return (double)u;
    case CONFIG_OBJECT: memcpy(&b, p, sizeof b); return b;
    case CONFIG_TOKEN_IDS: memcpy(&i, p, sizeof i); return i;   /* the count */
    case CONFIG_INT:
    case CONFIG_CHOICE: break;
    }
    memcpy(&i, p, sizeof i);
    return i;
}

const ConfigKey *bertc_config_find_key(const ConfigKey *keys, int n, const char *key)
{
    for (int i = 0; i < n; i++)
        if (strcmp(keys[i].key, key) == 0)
            return &keys[i];
    return NULL;
}

/* The value x of key k in range (vocab: for token ids; < 0 when not known). */
static int check_number(const ConfigKey *k, double x, int vocab, BertcError *err)
{
    if (k->kind == CONFIG_FLOAT || k->kind == CONFIG_DOUBLE) {
        if (isfinite(x) && real_ok(x, k->range))
            return 0;
        return bertc_errorf(err, "config: %s = %g must be finite and %s", k->key, x,
                            real_want[k->range]);
    }
    if (k->kind == CONFIG_OBJECT || k->kind == CONFIG_TOKEN_IDS)
        return 0;
    if (k->kind == CONFIG_U64)
        return x >= 0 && x < 18446744073709551616.0 ? 0
             : bertc_errorf(err, "config: %s = %g is not a 64-bit seed", k->key, x);
    if (k->kind == CONFIG_CHOICE) {
        int n = 0;
        while (k->choices[n])
            n++;
        return x >= 0 && x < n && x == floor(x)
                   ? 0 : bertc_errorf(err, "config: %s = %g is not one of its %d choices",
                                      k->key, x, n);
    }
    int64_t lo, hi;
    int_bounds(k->range, vocab, &lo, &hi);
    if (k->range == RANGE_TOKEN_ID && vocab < 0)
        hi = INT32_MAX;
    if ((x >= (double)lo && x <= (double)hi && x == floor(x)) ||
        (k->range == RANGE_TOKEN_ID && !k->required && x == -1))
        return 0;
    return bertc_errorf(err, "config: %s = %g is outside [%lld, %lld]", k->key, x,
                        (long long)lo, (long long)hi);
}

int bertc_config_set_key(const ConfigKey *k, void *base, double value, const BertConfig *cfg,
                   BertcError *err)
{
    if (cfg && check_number(k, value, cfg->vocab_size, err) != 0)
        return -1;
    void *dst = bertc_config_key_ptr(base, k);
    int i = (int)value;
    float f = (float)value;
    uint64_t u = (uint64_t)value;
    bool b = value != 0;
    switch (k->kind) {
    case CONFIG_FLOAT: memcpy(dst, &f, sizeof f); break;
    case CONFIG_DOUBLE: memcpy(dst, &value, sizeof value); break;
    case CONFIG_U64: memcpy(dst, &u, sizeof u); break;
    case CONFIG_OBJECT: memcpy(dst, &b, sizeof b); break;
    case CONFIG_TOKEN_IDS:
        return bertc_errorf(err, "config: %s is a list of token ids, not a number", k->key);
    case CONFIG_INT:
    case CONFIG_CHOICE: memcpy(dst, &i, sizeof i); break;
    }
    return 0;
}

/* Whether the object holding k is present ("masking" for "masking.seed"). */
static bool object_present(const ConfigKey *keys, int n, const void *base, const ConfigKey *k)
{
    const char *dot = strchr(k->key, '.');
    if (!dot)
        return true;
    for (int i = 0; i < n; i++)
        if (keys[i].kind == CONFIG_OBJECT && strlen(keys[i].key) == (size_t)(dot - k->key) &&
            strncmp(keys[i].key, k->key, (size_t)(dot - k->key)) == 0)
            return bertc_config_key_value(&keys[i], base) != 0;
    return true;
}

static int check_token_ids(const ConfigKey *k, const void *base, int vocab, BertcError *err)
{
    ConfigTokenIds ids;
    memcpy(&ids, bertc_config_key_cptr(base, k), sizeof ids);
    if (ids.n < 0 || ids.n > CONFIG_MAX_TOKEN_IDS)
        return bertc_errorf(err, "config: %s has %d entries (at most %d)", k->key, ids.n,
                            CONFIG_MAX_TOKEN_IDS);
    for (int i = 0; i < ids.n; i++)
        if (ids.ids[i] < 0 || ids.ids[i] >= vocab)
            return bertc_errorf(err, "config: %s[%d] = %d is outside [0, vocab_size %d)",
                                k->key, i, (int)ids.ids[i], vocab);
    return 0;
}

int bertc_config_check_keys(const ConfigKey *keys, int n, const void *base, const BertConfig *cfg,
                      BertcError *err)
{
    for (int i = 0; i < n; i++) {
        const ConfigKey *k = &keys[i];
        if (!object_present(keys, n, base, k))
            continue;
        int rc = k->kind == CONFIG_TOKEN_IDS
                     ? check_token_ids(k, base, cfg->vocab_size, err)
                     : check_number(k, bertc_config_key_value(k, base), cfg->vocab_size, err);
        if (rc != 0)
            return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Writing                                                                   */
/* ------------------------------------------------------------------------ */

static void put(char *buf, size_t cap, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void put(char *buf, size_t cap, size_t *len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(*len < cap ? buf + *len : NULL, *len < cap ? cap - *len : 0, fmt, ap);
    va_end(ap);
    *len += n > 0 ? (size_t)n : 0;
}

/* "value" of one key (not an object); floats with 9 significant digits so
 * they read back exactly. */
static void put_value(const ConfigKey *k, const void *base, char *buf, size_t cap, size_t *len)
{
    double x = bertc_config_key_value(k, base);
    ConfigTokenIds ids;
    switch (k->kind) {
    case CONFIG_FLOAT: put(buf, cap, len, "%.9g", x); break;
    case CONFIG_DOUBLE: put(buf, cap, len, "%.17g", x); break;
    case CONFIG_U64: {
        uint64_t u;
        memcpy(&u, bertc_config_key_cptr(base, k), sizeof u);
        put(buf, cap, len, "%llu", (unsigned long long)u);
        break;
    }
    case CONFIG_CHOICE: put(buf, cap, len, "\"%s\"", k->choices[(int)x]); break;
    case CONFIG_TOKEN_IDS:
        memcpy(&ids, bertc_config_key_cptr(base, k), sizeof ids);
        put(buf, cap, len, "[");
        for (int i = 0; i < ids.n; i++)
            put(buf, cap, len, i ? ", %d" : "%d", (int)ids.ids[i]);
        put(buf, cap, len, "]");
        break;
    case CONFIG_INT:
    case CONFIG_OBJECT: put(buf, cap, len, "%d", (int)x); break;
    }
}

void bertc_config_format_keys(const ConfigKey *keys, int n, const void *base, char *buf, size_t cap,
                        size_t *len)
{
    for (int i = 0; i < n; i++) {
        const ConfigKey *k = &keys[i];
        if (k->kind == CONFIG_OBJECT) {
            if (bertc_config_key_value(k, base) == 0)
                continue;
            put(buf, cap, len, ",\n  \"%s\": {", k->key);
            size_t klen = strlen(k->key);
            int members = 0;
            for (int j = i + 1; j < n; j++) {
                if (strncmp(keys[j].key, k->key, klen) != 0 || keys[j].key[klen] != '.')
                    continue;
                put(buf, cap, len, "%s\"%s\": ", members++ ? ", " : "", leaf(&keys[j]));
                put_value(&keys[j], base, buf, cap, len);
            }
            put(buf, cap, len, "}");
            continue;
        }
        if (strchr(k->key, '.'))
            continue;   /* written inside its object */
        if (k->range == RANGE_TOKEN_ID && k->kind == CONFIG_INT && bertc_config_key_value(k, base) < 0)
            continue;   /* an absent token id */
        put(buf, cap, len, ",\n  \"%s\": ", k->key);
        put_value(k, base, buf, cap, len);
    }
}
