/* nn/state.h — a model's parameters to and from safetensors files, and
 * training checkpoints. Part of the nn layer (included by nn/nn.h). */
#ifndef BERTC_NN_STATE_H
#define BERTC_NN_STATE_H

#include "nn/nn.h"
#include "nn/safetensors.h"

/* Another spelling of a parameter name in files: write it into alt and
 * return true, or return false when `name` has none. */
typedef bool (*NameRename)(const char *name, char *alt, size_t len);

#define LOAD_RENAMES_MAX 4

typedef struct LoadOptions {
    /* Keep parameters missing from the file at their init (one warning lists
     * them), as HF does for a fresh classification head. Default: error. */
    bool init_missing;
    /* Other spellings (NULL entries are skipped): a parameter is looked for
     * under its own name and under every name that a combination of these
     * writes, applied in this order (e.g. the "bert." prefix dropped and
     * LayerNorm "gamma" for "weight"). A file holding two spellings of one
     * parameter is refused: which one would load is a guess. */
    NameRename renames[LOAD_RENAMES_MAX];
    /* Do not warn about keys the model does not use (checkpoints carry
     * optimizer state beside the weights). */
    bool quiet_unused;
} LoadOptions;

/* Load every parameter of r by name. opts may be NULL (strict). A NaN or an
 * infinity in a parameter is an error naming it and the element (a weight
 * file that holds one can only give NaN outputs). */
int bertc_registry_load(Registry *r, const SafeTensors *st, const LoadOptions *opts, BertcError *err);
/* nn/state_int8.c, for bertc_registry_load: parameter i, an int8 Linear
 * weight (Param.int8), from entry t (I8) and its "<name>_scale" (F32), checked
 * and packed for bertc_qgemm. */
int bertc_registry_load_int8(Registry *r, int i, const SafeTensors *st, const StTensorInfo *t,
                             BertcError *err);
/* Whether key is the "<name>_scale" entry of an int8 parameter of r. */
bool bertc_registry_int8_scale_key(const Registry *r, const char *key);
/* A bf16 model (`bertc quantize --dtype bf16`, config.json's quant_method
 * bertc_bf16; nn/prepack.c): bertc_registry_pack_bf16 (nn/nn.h) on every
 * Linear weight the file st stores as BF16 (already loaded into its float32
 * value, exactly: a bf16 widens without rounding). Returns how many. */
int bertc_registry_pack_bf16_file(Registry *r, const SafeTensors *st);
int bertc_registry_load_file(Registry *r, const char *path, const LoadOptions *opts, BertcError *err);
/* Every parameter, buffer and tied alias under its name (a state_dict), F32,
 * written atomically. */
int bertc_registry_save_file(const Registry *r, const char *path, BertcError *err);

/* Training checkpoints: model + optimizer state + optimizer step + RNG state +
 * training step in one safetensors file (the layout: nn/checkpoint.c),
 * written atomically (bertc_st_write_file). Loading restores all of them, so a
 * resumed run continues bit-for-bit.
 *
 * CheckpointRun (may be NULL: none) is what a resumed run must share with
 * the run that wrote the file: key/value strings stored in __metadata__ by
 * bertc_checkpoint_save and compared whole by bertc_checkpoint_load, and the largest
 * training step the run can have reached (max_step < 0: no bound). */
typedef struct CheckpointRun {
    const StMetadata *fields;
    size_t n_fields;
    int64_t max_step;
} CheckpointRun;

/* Refuses (error naming the first bad tensor and element, nothing written,
 * an existing file at path untouched) when a weight or optimizer state is
 * not finite, a second moment is negative, or the counters are out of range
 * (bertc_checkpoint_check_counters). */
int bertc_checkpoint_save(const char *path, const Registry *r, const Optimizer *o, const Rng *rng,
                    int64_t step, const CheckpointRun *run, BertcError *err);
/* Validates everything before using it (nn/checkpoint.c lists the checks);
 * a failure is one message naming the file and the key. On failure the
 * registry and optimizer may hold part of the file: do not train on. */
int bertc_checkpoint_load(const char *path, Registry *r, Optimizer *o, Rng *rng, int64_t *step,
                    const CheckpointRun *run, BertcError *err);
/* A checkpoint file must carry its data CRC-32 (ST_CRC32_KEY): an error
 * naming the file when it does not. bertc_checkpoint_load and --resume call it;
 * bertc_checkpoint_load_st does not (a port's memory source, the fuzzer). */
int bertc_checkpoint_require_crc(const SafeTensors *st, BertcError *err);
/* The same from an open file (nn/checkpoint.c; what a port without a file
 * system, and the fuzzer, call). */
int bertc_checkpoint_load_st(const SafeTensors *st, Registry *r, Optimizer *o, Rng *rng,
                       int64_t *step, const CheckpointRun *run, BertcError *err);

/* The pieces both directions share (nn/checkpoint.c): tensor name prefixes,
 * the optimizer's name in __metadata__, the counter rule 0 <= opt_step <=
 * step <= max_step (max_step < 0: unbounded; `file` names the checkpoint in
 * the message), and the first non-finite weight or moment or negative
 * second moment, described into buf ("'name'[i, j] is nan"). */
#define CHECKPOINT_STATE2_PREFIX "optimizer.exp_avg_sq."
/* The three I64 [1] counters, in this order: "optimizer.step", "rng.state",
 * "train.step". */
extern const char *const bertc_checkpoint_counter_names[3];
const char *bertc_checkpoint_state1_prefix(OptimizerKind kind);
const char *bertc_checkpoint_optimizer_name(OptimizerKind kind);
int bertc_checkpoint_check_counters(const char *file, int64_t step, int64_t opt_step,
                              int64_t max_step, BertcError *err);
bool bertc_checkpoint_first_bad_value(const Registry *r, const Optimizer *o, char *buf, size_t len);

/* The tensors of a file being written (state_file.c): an StEntry array and
 * one buffer for names built from a prefix ("grad.", "optimizer.exp_avg.").
 * Used by the savers here and by `bertc run` (zoo/models/run.c). */
typedef struct EntryList {
    StEntry *entries;
    size_t n, cap;
    char *names;
    size_t names_used, names_cap;
} EntryList;

/* Room for `entries` tensors and `name_bytes` of built names; on failure the
 * list is still safe to pass to bertc_entry_list_free. */
int bertc_entry_list_reserve(EntryList *l, size_t entries, size_t name_bytes, BertcError *err);
void bertc_entry_list_free(EntryList *l);
/* prefix + name, stored in the list's buffer. */
const char *bertc_entry_list_name(EntryList *l, const char *prefix, const char *name);
void bertc_entry_list_add(EntryList *l, StEntry e);
/* An F32 entry shaped like shape_of but holding data (e.g. a gradient). */
void bertc_entry_list_add_f32(EntryList *l, const char *name, const Tensor *shape_of,
                        const float *data);

#endif
