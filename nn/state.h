/* nn/state.h — a model's parameters to and from safetensors files, and
 * training checkpoints. Part of the nn layer (included by nn/nn.h). */
#ifndef BERTC_NN_STATE_H
#define BERTC_NN_STATE_H

#include "nn/nn.h"
#include "nn/safetensors.h"

typedef struct LoadOptions {
    /* Keep parameters missing from the file at their init (one warning lists
     * them), as HF does for a fresh classification head. Default: error. */
    bool init_missing;
    /* Optional other spelling of a parameter name in files (e.g. CGBERT's
     * original-repo names): write it into alt and return true. */
    bool (*rename)(const char *name, char *alt, size_t len);
    /* Do not warn about keys the model does not use (checkpoints carry
     * optimizer state beside the weights). */
    bool quiet_unused;
} LoadOptions;

/* Load every parameter of r by name. opts may be NULL (strict). A NaN or an
 * infinity in a parameter is an error naming it and the element (a weight
 * file that holds one can only give NaN outputs). */
int registry_load(Registry *r, const SafeTensors *st, const LoadOptions *opts, BertcError *err);
int registry_load_file(Registry *r, const char *path, const LoadOptions *opts, BertcError *err);
/* Every parameter, buffer and tied alias under its name (a state_dict), F32,
 * written atomically. */
int registry_save_file(const Registry *r, const char *path, BertcError *err);

/* Model + optimizer state + optimizer step + RNG state + training step in one
 * safetensors file, written atomically (temporary file, fsync, rename).
 * Loading restores all of them, so a resumed run continues bit-for-bit. */
int checkpoint_save(const char *path, const Registry *r, const Optimizer *o, const Rng *rng,
                    int64_t step, BertcError *err);
int checkpoint_load(const char *path, Registry *r, Optimizer *o, Rng *rng, int64_t *step,
                    BertcError *err);

#endif
