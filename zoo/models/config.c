/* zoo/models/config.c — config.json as a whole: the common keys nn/ reads
 * (nn/config.h) and the keys the architecture declares (ModelArch.keys),
 * stored in cfg->model. */
#include "zoo/zoo.h"
#include "tensor/format_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* "BertModel, BertForSequenceClassification, ... or SpanBertForPreTraining" */
static void arch_listing(char *buf, size_t cap)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; bertc_zoo_arch_at(i) && at < cap; i++)
        at += (size_t)snprintf(buf + at, cap - at, "%s%s", i == 0 ? "" : bertc_zoo_arch_at(i + 1) ? ", "
                                                                                       : " or ",
                               bertc_zoo_arch_at(i)->name);
}

static const ModelArch *arch_of(const BertConfig *cfg, BertcError *err)
{
    const ModelArch *arch = bertc_zoo_arch(cfg->architecture);
    if (!arch) {
        char known[1024];
        arch_listing(known, sizeof known);
        bertc_errorf(err, "config: unknown architecture \"%.60s\" (expected %s)",
                     cfg->architecture, known);
    }
    return arch;
}

int bertc_model_config_default(BertConfig *cfg, const char *architecture, BertcError *err)
{
    *cfg = bertc_bert_config_default(architecture);
    const ModelArch *arch = arch_of(cfg, err);
    if (!arch)
        return -1;
    bertc_config_default_keys(arch->keys, arch->n_keys, cfg->model.bytes, cfg);
    return 0;
}

void bertc_model_keys(const BertConfig *cfg, void *keys, size_t bytes)
{
    memcpy(keys, cfg->model.bytes, bytes < sizeof cfg->model.bytes ? bytes
                                                                   : sizeof cfg->model.bytes);
}

static const ConfigKey *find_key(const BertConfig *cfg, const char *key, BertcError *err)
{
    const ModelArch *arch = arch_of(cfg, err);
    if (!arch)
        return NULL;
    const ConfigKey *k = bertc_config_find_key(arch->keys, arch->n_keys, key);
    if (!k) {
        char known[512];
        size_t at = 0;
        known[0] = '\0';
        for (int i = 0; i < arch->n_keys && at < sizeof known; i++)
            at += (size_t)snprintf(known + at, sizeof known - at, "%s%s", i ? ", " : "",
                                   arch->keys[i].key);
        bertc_errorf(err, "config: %s has no key \"%.60s\" (its own keys: %s)", arch->name, key,
                     arch->n_keys ? known : "none");
    }
    return k;
}

int bertc_model_config_set(BertConfig *cfg, const char *key, double value, BertcError *err)
{
    const ConfigKey *k = find_key(cfg, key, err);
    if (!k)
        return -1;
    return bertc_config_set_key(k, cfg->model.bytes, value, cfg, err);
}

double bertc_model_config_get(const BertConfig *cfg, const char *key)
{
    BertcError unused;
    const ConfigKey *k = find_key(cfg, key, &unused);
    return k ? bertc_config_key_value(k, cfg->model.bytes) : NAN;
}

ConfigTokenIds bertc_model_config_token_ids(const BertConfig *cfg, const char *key)
{
    ConfigTokenIds ids = {0};
    const ModelArch *arch = bertc_zoo_arch(cfg->architecture);
    const ConfigKey *k = arch ? bertc_config_find_key(arch->keys, arch->n_keys, key) : NULL;
    if (k && k->kind == CONFIG_TOKEN_IDS)
        memcpy(&ids, bertc_config_key_cptr(cfg->model.bytes, k), sizeof ids);
    return ids;
}

/* ------------------------------------------------------------------------ */
/* Reading, checking, writing                                                */
/* ------------------------------------------------------------------------ */

/* An architecture nobody knows is named before any other key is read; the
 * message points at the name in the file. */
static int check_arch_name(const JsonValue *root, BertcError *err)
{
    const JsonValue *name = bertc_json_at(bertc_json_get(root, "architectures"), 0);
    if (!name || name->type != JSON_STRING || bertc_zoo_arch(bertc_json_string(name)))
        return 0;   /* absent or malformed: bertc_bert_config_read_common says so */
    char known[1024];
    arch_listing(known, sizeof known);
    return bertc_json_errorf(err, name, "unknown architecture \"%.60s\" (expected %s)",
                       bertc_json_string(name), known);
}

/* The architecture's keys of a config whose common keys are read. */
static int read_arch_keys(const JsonValue *root, BertConfig *cfg, BertcError *err)
{
    const ModelArch *arch = arch_of(cfg, err);
    if (!arch)
        return -1;
    bertc_config_default_keys(arch->keys, arch->n_keys, cfg->model.bytes, cfg);
    if (bertc_config_read_keys(root, arch->keys, arch->n_keys, cfg->model.bytes, cfg, err) != 0)
        return -1;
    if (arch->check_config && arch->check_config(cfg, err) != 0) {
        char msg[BERTC_ERROR_LEN];
        snprintf(msg, sizeof msg, "%s", err->msg + (strncmp(err->msg, "config: ", 8) ? 0 : 8));
        return bertc_errorf(err, "%s: %s", bertc_json_doc_name(root), msg);
    }
    return 0;
}

static int read_config(const JsonValue *root, BertConfig *out, BertcError *err)
{
    BertConfig cfg;
    if (check_arch_name(root, err) != 0 || bertc_bert_config_read_common(root, &cfg, err) != 0)
        return -1;
    if (read_arch_keys(root, &cfg, err) != 0) {
        bertc_bert_config_free(&cfg);
        return -1;
    }
    *out = cfg;
    return 0;
}

int bertc_bert_config_parse(Arena *scratch, const char *name, const char *text, size_t length,
                      BertConfig *cfg, BertcError *err)
{
    Arena *a = scratch ? scratch : bertc_arena_create("config", length * 4 + 4096);
    JsonDoc *doc;
    int rc = bertc_json_parse(a, name, text, length, &doc, err);
    if (rc == 0)
        rc = read_config(doc->root, cfg, err);
    if (!scratch)
        bertc_arena_destroy(a);
    return rc;
}

int bertc_bert_config_check(const BertConfig *cfg, BertcError *err)
{
    const ModelArch *arch = arch_of(cfg, err);
    return arch ? bertc_bert_config_check_as(arch, cfg, err) : -1;
}

int bertc_bert_config_check_as(const ModelArch *arch, const BertConfig *cfg, BertcError *err)
{
    if (bertc_bert_config_check_common(cfg, err) != 0 ||
        bertc_config_check_keys(arch->keys, arch->n_keys, cfg->model.bytes, cfg, err) != 0)
        return -1;
    return arch->check_config ? arch->check_config(cfg, err) : 0;
}

int bertc_bert_config_format(const BertConfig *cfg, char *buf, size_t cap, size_t *len,
                       BertcError *err)
{
    const ModelArch *arch = arch_of(cfg, err);
    if (!arch)
        return -1;
    size_t n = 0;
    bertc_bert_config_format_common(cfg, buf, cap, &n);
    bertc_config_format_keys(arch->keys, arch->n_keys, cfg->model.bytes, buf, cap, &n);
    if (n < cap)
        snprintf(buf + n, cap - n, "\n}\n");
    n += 3;
    *len = n;
    if (n >= cap)
        return bertc_errorf(err, "config.json: %zu bytes do not fit in a buffer of %zu", n, cap);
    return 0;
}
