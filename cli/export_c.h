/* cli/export_c.h — what `bertc export-c` (cli/export_c.c) hands its writer
 * (cli/export_c_write.c). */
#ifndef BERTC_CLI_EXPORT_C_H
#define BERTC_CLI_EXPORT_C_H

#include "cli/cli.h"

#define EXPORT_MAX_PARAMS 4096

typedef struct Export {
    CliModel cm;
    ConstModelData d;                 /* pointing at the loaded model (host memory) */
    BertConfig config;                /* d.config: the model's, int8_dynamic as exported */
    ConstParam params[EXPORT_MAX_PARAMS];
    const char *int8_names[EXPORT_MAX_PARAMS];
    QgemmIsa target_isa;              /* --int8-path (d.int8_isa is the host's until written) */
    size_t arena_bytes;               /* measured: MODEL_ARENA_BYTES, the sum of: */
    size_t pack_bytes, model_bytes, step_bytes;
    size_t forward_bytes, text_bytes, tokenizer_bytes, scratch_bytes;   /* step = their max */
    int n_labels;                     /* C of the logits */
} Export;

/* model_data.c, model.h and model.c into dir (created if missing). */
int write_sources(const Export *x, const char *dir, BertcError *err);

#endif
