/* zoo/models/model_dir_file.c — a Hugging Face model directory as one unit:
 * config.json, model.safetensors, vocab.txt and tokenizer_config.json, read
 * as from_pretrained and AutoTokenizer do, and written so that both read
 * them back. */
#include "zoo/zoo.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define TOKENIZER_CONFIG_MAX_BYTES (1L << 20)

#define WHAT "the model directory"

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* The special token a tokenizer_config.json names (cls_token: "[CLS]"), a
 * string or HF's AddedToken object {"content": "[CLS]", ...}: its id in the
 * vocab, which must have it. */
static int special_token(const JsonValue *root, const char *key, const Tokenizer *tok,
                         int32_t *id, BertcError *err)
{
    const JsonValue *v = bertc_json_get(root, key);
    if (!v || v->type == JSON_NULL)
        return 0;
    if (v->type == JSON_OBJECT)
        v = bertc_json_get(v, "content");
    const char *s;
    if (!v || bertc_json_as_string(v, &s, err) != 0)
        return v ? -1 : bertc_json_errorf(err, bertc_json_get(root, key), "must be a token "
                                          "string or {\"content\": ...}");
    int32_t found = bertc_tokenizer_id(tok, s, strlen(s));
    if (found < 0)
        return bertc_json_errorf(err, v, "%s \"%.40s\" is not in %s", key, s, tok->name);
    *id = found;
    return 0;
}

/* HF writes model_max_length 1e30 (int(1e30)) when it is unbounded. */
static int max_length(const JsonValue *root, int32_t *out, BertcError *err)
{
    const JsonValue *v = bertc_json_get(root, "model_max_length");
    if (!v || v->type == JSON_NULL)
        return 0;
    double x;
    if (bertc_json_as_double(v, &x, err) != 0)
        return -1;
    if (!(x >= 1))
        return bertc_json_errorf(err, v, "must be a positive number of tokens, found %g", x);
    *out = x > INT32_MAX ? INT32_MAX : (int32_t)x;
    return 0;
}

/* do_lower_case, strip_accents (null: as do_lower_case, the only rule
 * bertc's tokenizer has), the special tokens, model_max_length. */
static int read_tokenizer_config(const char *path, ModelDir *d, BertcError *err)
{
    Arena *a;
    char *text;
    size_t n;
    JsonDoc *doc;
    int rc = bertc_read_file(path, TOKENIZER_CONFIG_MAX_BYTES, "a tokenizer_config.json", &a,
                             &text, &n, err);
    if (rc == 0)
        rc = bertc_json_parse(a, path, text, n, &doc, err);
    if (rc == 0 && doc->root->type != JSON_OBJECT)
        rc = bertc_json_errorf(err, doc->root, "must hold a JSON object");
    bool lower = d->tok.do_lower_case;
    if (rc == 0)
        rc = bertc_json_opt_bool(doc->root, "do_lower_case", lower, &lower, err);
    const JsonValue *strip = rc == 0 ? bertc_json_get(doc->root, "strip_accents") : NULL;
    if (strip && strip->type != JSON_NULL && !(strip->type == JSON_BOOL && strip->boolean == lower))
        rc = bertc_json_errorf(err, strip, "strip_accents must be null or equal do_lower_case "
                               "(%s): bertc strips accents exactly when it lowercases",
                               lower ? "true" : "false");
    Tokenizer *t = &d->tok;
    if (rc == 0)
        rc = special_token(doc->root, "cls_token", t, &t->cls_id, err) ||
             special_token(doc->root, "sep_token", t, &t->sep_id, err) ||
             special_token(doc->root, "pad_token", t, &t->pad_id, err) ||
             special_token(doc->root, "unk_token", t, &t->unk_id, err) ||
             special_token(doc->root, "mask_token", t, &t->mask_id, err) ||
             max_length(doc->root, &d->model_max_length, err) ? -1 : 0;
    t->do_lower_case = lower;
    bertc_arena_destroy(a);
    return rc;
}

int bertc_model_dir_open(ModelDir *d, Arena *arena, const char *dir, BertcError *err)
{
    char config[BERTC_PATH_MAX], weights[BERTC_PATH_MAX], vocab[BERTC_PATH_MAX],
        tokenizer[BERTC_PATH_MAX];
    memset(d, 0, sizeof *d);
    if (bertc_path_check_dir(dir, WHAT, err) != 0 ||
        bertc_path_join(config, dir, "config.json", WHAT, err) != 0 ||
        bertc_path_join(weights, dir, "model.safetensors", WHAT, err) != 0 ||
        bertc_path_join(vocab, dir, "vocab.txt", WHAT, err) != 0 ||
        bertc_path_join(tokenizer, dir, "tokenizer_config.json", WHAT, err) != 0)
        return -1;
    memcpy(d->dir, dir, strlen(dir) + 1);
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return bertc_errorf(err, "%s: not a model directory (%s)", dir,
                            errno ? strerror(errno) : "not a directory");
    if (!exists(config))
        return bertc_errorf(err, "%s: no config.json in the model directory", dir);
    if (bertc_model_open(&d->model, arena, config, exists(weights) ? weights : NULL, err) != 0)
        return -1;
    d->has_weights = exists(weights);
    d->model_max_length = d->model.cfg.max_position_embeddings;
    if (!exists(vocab))
        return 0;
    if (bertc_tokenizer_load(&d->tok, arena, vocab, err) != 0)
        return -1;
    d->has_tokenizer = true;
    if (exists(tokenizer) && read_tokenizer_config(tokenizer, d, err) != 0)
        return -1;
    if (d->model_max_length > d->model.cfg.max_position_embeddings)
        d->model_max_length = d->model.cfg.max_position_embeddings;
    return 0;
}

/* ---- writing ------------------------------------------------------------ */

static int write_vocab(const char *path, const Tokenizer *tok, BertcError *err)
{
    FILE *fp = bertc_open_write(path, err);
    if (!fp)
        return -1;
    bool ok = true;
    for (int32_t id = 0; id < tok->V && ok; id++)
        ok = fprintf(fp, "%s\n", bertc_tokenizer_token(tok, id)) > 0;
    if (fclose(fp) != 0 || !ok)
        return bertc_errorf(err, "%s: write failed: %s", path, strerror(errno));
    return 0;
}

/* What AutoTokenizer needs to rebuild the tokenizer from vocab.txt; the
 * special tokens as JSON strings (bertc_json_quote: a token holding '"',
 * '\\' or a control character stays readable). */
static int write_tokenizer_config(const char *path, const Tokenizer *tok, int32_t max_len,
                                  BertcError *err)
{
    static const char *const keys[] = {"cls_token", "sep_token", "pad_token", "unk_token",
                                       "mask_token"};
    const int32_t ids[] = {tok->cls_id, tok->sep_id, tok->pad_id, tok->unk_id, tok->mask_id};
    char head[256];
    int n = snprintf(head, sizeof head,
                     "{\n  \"tokenizer_class\": \"BertTokenizer\",\n  \"do_lower_case\": %s,\n"
                     "  \"strip_accents\": null,\n  \"tokenize_chinese_chars\": true,\n"
                     "  \"model_max_length\": %d", tok->do_lower_case ? "true" : "false",
                     (int)max_len);
    size_t cap = (size_t)n + 4;
    for (int i = 0; i < 5; i++) {
        const char *s = bertc_tokenizer_token(tok, ids[i]);
        cap += strlen(keys[i]) + 8 + bertc_json_quote(NULL, 0, s, strlen(s));
    }
    char *text = malloc(cap);
    if (!text)
        return bertc_errorf(err, "%s: out of memory for %zu bytes", path, cap);
    size_t len = (size_t)n;
    memcpy(text, head, len);
    for (int i = 0; i < 5; i++) {
        const char *s = bertc_tokenizer_token(tok, ids[i]);
        len += (size_t)snprintf(text + len, cap - len, ",\n  \"%s\": ", keys[i]);
        len += bertc_json_quote(text + len, cap - len, s, strlen(s));
    }
    len += (size_t)snprintf(text + len, cap - len, "\n}\n");
    int rc = bertc_write_file(path, text, len, err);
    free(text);
    return rc;
}

int bertc_model_dir_save(const char *dir, const Model *m, const Tokenizer *tok, BertcError *err)
{
    char path[BERTC_PATH_MAX];
    if (bertc_path_check_dir(dir, WHAT, err) != 0)
        return -1;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return bertc_errorf(err, "%s: cannot create the model directory: %s", dir,
                            strerror(errno));
    if (bertc_path_join(path, dir, "config.json", WHAT, err) != 0 ||
        bertc_bert_config_write(path, &m->cfg, err) != 0 ||
        bertc_path_join(path, dir, "model.safetensors", WHAT, err) != 0 ||
        bertc_registry_save_file(m->reg, path, err) != 0)
        return -1;
    if (!tok)
        return 0;
    if (bertc_path_join(path, dir, "vocab.txt", WHAT, err) != 0 ||
        write_vocab(path, tok, err) != 0 ||
        bertc_path_join(path, dir, "tokenizer_config.json", WHAT, err) != 0)
        return -1;
    return write_tokenizer_config(path, tok, m->cfg.max_position_embeddings, err);
}
