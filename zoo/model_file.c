/* zoo/model_file.c — loading a model's weights from a path (bare-metal builds
 * leave this file out and call bertc_registry_load on bertc_st_open_memory's SafeTensors). */
#include "zoo/zoo.h"

#include <string.h>

int bertc_model_load(Model *m, const char *path, bool init_missing, BertcError *err)
{
    LoadOptions opts = bertc_model_load_options(m, init_missing);
    return bertc_registry_load_file(m->reg, path, &opts, err);
}

/* Whether the weights file holds a pooler ("pooler.dense.weight" under any
 * prefix: "bert.", "backbone.", none). */
static int has_pooler(const char *path, bool *has, BertcError *err)
{
    static const char suffix[] = "pooler.dense.weight";
    SafeTensors *st;
    if (bertc_st_open_file(NULL, path, &st, err) != 0)
        return -1;
    *has = false;
    for (size_t i = 0; i < st->n_tensors; i++) {
        size_t n = strlen(st->tensors[i].name);
        if (n >= sizeof suffix - 1 &&
            strcmp(st->tensors[i].name + n - (sizeof suffix - 1), suffix) == 0)
            *has = true;
    }
    bertc_st_close(st);
    return 0;
}

int bertc_model_open(Model *m, Arena *arena, const char *config_path, const char *weights_path,
               BertcError *err)
{
    BertConfig cfg;
    if (bertc_bert_config_read(config_path, &cfg, err) != 0)
        return -1;
    if (weights_path && cfg.add_pooling_layer) {
        bool pooler;
        if (has_pooler(weights_path, &pooler, err) != 0)
            return -1;
        cfg.add_pooling_layer = pooler;
    }
    if (bertc_model_build(m, arena, &cfg, err) != 0) {
        bertc_model_config_error(err, config_path);
        return -1;
    }
    return weights_path ? bertc_model_load(m, weights_path, false, err) : 0;
}
