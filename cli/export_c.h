/* cli/export_c.h — what `bertc export-c` (cli/export_c.c) hands its writer
 * (cli/export_c_write.c). */
#ifndef BERTC_CLI_EXPORT_C_H
#define BERTC_CLI_EXPORT_C_H

#include "cli/cli.h"

#define EXPORT_MAX_PARAMS 4096

typedef struct Export {
    CliModel cm;
    ConstModelData d;                 /* pointing at the loaded model (host memory) */
    ConstParam params[EXPORT_MAX_PARAMS];
    const char *int8_names[EXPORT_MAX_PARAMS];
    Arena *config_arena;              /* holds config.json's text (d.config_json) */
    size_t arena_bytes;               /* measured: MODEL_ARENA_BYTES, the sum of: */
    size_t model_bytes, step_bytes, tokenizer_bytes;   /* and d.pack_bytes */
    int n_labels;                     /* C of the logits */
} Export;

/* model_data.c, model.h and model.c into dir (created if missing). */
int write_sources(const Export *x, const char *dir, BertcError *err);

#endif
