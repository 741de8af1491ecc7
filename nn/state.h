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

/* The tensors of a file being written (state_file.c): an StEntry array and
 * one buffer for names built from a prefix ("grad.", "optimizer.exp_avg.").
 * Used by the savers here and by `bertc run` (zoo/run.c). */
typedef struct EntryList {
    StEntry *entries;
    size_t n, cap;
    char *names;
    size_t names_used, names_cap;
} EntryList;

/* Room for `entries` tensors and `name_bytes` of built names; on failure the
 * list is still safe to pass to entry_list_free. */
int entry_list_reserve(EntryList *l, size_t entries, size_t name_bytes, BertcError *err);
void entry_list_free(EntryList *l);
/* prefix + name, stored in the list's buffer. */
const char *entry_list_name(EntryList *l, const char *prefix, const char *name);
void entry_list_add(EntryList *l, StEntry e);
/* An F32 entry shaped like shape_of but holding data (e.g. a gradient). */
void entry_list_add_f32(EntryList *l, const char *name, const Tensor *shape_of,
                        const float *data);

#endif
