/* zoo/models/model_file.c — loading a model's weights from a path (bare-metal builds
 * leave this file out and call bertc_registry_load on bertc_st_open_memory's SafeTensors). */
#include "zoo/zoo.h"

#include <string.h>

int bertc_model_load(Model *m, const char *path, bool init_missing, BertcError *err)
{
    LoadOptions opts = bertc_model_load_options(m, init_missing);
    return bertc_registry_load_file(m->reg, path, &opts, err);
}

/* Whether the weights hold a pooler ("pooler.dense.weight" under any
 * prefix: "bert.", "backbone.", none). */
static bool has_pooler(const SafeTensors *st)
{
    static const char suffix[] = "pooler.dense.weight";
    for (size_t i = 0; i < st->n_tensors; i++) {
        size_t n = strlen(st->tensors[i].name);
        if (n >= sizeof suffix - 1 &&
            strcmp(st->tensors[i].name + n - (sizeof suffix - 1), suffix) == 0)
            return true;
    }
    return false;
}

/* A quantised model's int8 weights: the names of the file's I8 entries
 * (copied into arena: the model keeps them). The loader then checks each
 * one (a Linear weight with its F32 scales). */
static int int8_weights(const SafeTensors *st, Arena *arena, const char ***out)
{
    int n = 0;
    for (size_t i = 0; i < st->n_tensors; i++)
        n += st->tensors[i].dtype == ST_I8;
    const char **names = bertc_arena_alloc(arena, sizeof *names * (size_t)(n ? n : 1));
    n = 0;
    for (size_t i = 0; i < st->n_tensors; i++) {
        if (st->tensors[i].dtype != ST_I8)
            continue;
        size_t len = strlen(st->tensors[i].name) + 1;
        char *copy = bertc_arena_alloc(arena, len);
        memcpy(copy, st->tensors[i].name, len);
        names[n++] = copy;
    }
    *out = names;
    return n;
}

/* The weights file is opened (and its CRC checked) once: its header decides
 * the pooler, then the same SafeTensors fills the built model. */
int bertc_model_open(Model *m, Arena *arena, const char *config_path, const char *weights_path,
                     BertcError *err)
{
    BertConfig cfg;
    SafeTensors *st = NULL;
    if (bertc_bert_config_read(config_path, &cfg, err) != 0)
        return -1;
    if (weights_path && bertc_st_open_file(NULL, weights_path, &st, err) != 0) {
        bertc_bert_config_free(&cfg);
        return -1;
    }
    if (st && cfg.add_pooling_layer)
        cfg.add_pooling_layer = has_pooler(st);
    const char **int8 = NULL;
    int n_int8 = st && cfg.int8_dynamic ? int8_weights(st, arena, &int8) : 0;
    int rc = bertc_model_build_int8(m, arena, &cfg, int8, n_int8, err);
    bertc_bert_config_free(&cfg);   /* the model keeps its own copy of the label names */
    if (rc != 0)
        bertc_model_config_error(err, config_path);
    if (rc == 0 && st) {
        LoadOptions opts = bertc_model_load_options(m, false);
        rc = bertc_registry_load(m->reg, st, &opts, err);
        if (rc == 0 && m->cfg.bf16)
            bertc_registry_pack_bf16_file(m->reg, st);
    }
    if (st)
        bertc_st_close(st);
    return rc;
}
