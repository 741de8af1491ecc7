/* zoo/model_file.c — loading a model's weights from a path (bare-metal builds
 * leave this file out and call registry_load on st_open_memory's SafeTensors). */
#include "zoo/zoo.h"

int model_load(Model *m, const char *path, bool init_missing, BertcError *err)
{
    LoadOptions opts = model_load_options(m, init_missing);
    return registry_load_file(m->reg, path, &opts, err);
}
