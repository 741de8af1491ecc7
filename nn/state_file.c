/* nn/state_file.c — a registry's parameters to and from safetensors files,
 * and training checkpoints (model + optimizer state + step + RNG) written
 * atomically, refused when a value is not finite. Bare-metal builds leave
 * this file out and call bertc_registry_load (nn/state.c) or bertc_checkpoint_load_st
 * (nn/checkpoint.c) on a SafeTensors opened with bertc_st_open_memory. */
#include "nn/state.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

int bertc_registry_load_file(Registry *r, const char *path, const LoadOptions *opts, BertcError *err)
{
    SafeTensors *st;
    if (bertc_st_open_file(NULL, path, &st, err) != 0)
        return -1;
    int rc = bertc_registry_load(r, st, opts, err);
    bertc_st_close(st);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Saving                                                                    */
/* ------------------------------------------------------------------------ */

int bertc_entry_list_reserve(EntryList *l, size_t entries, size_t name_bytes, BertcError *err)
{
    l->entries = bertc_sys_alloc(sizeof(StEntry) * (entries ? entries : 1));
    l->names = bertc_sys_alloc(name_bytes ? name_bytes : 1);
    l->cap = entries;
    l->names_cap = name_bytes;
    l->n = l->names_used = 0;
    if (!l->entries || !l->names)
        return bertc_errorf(err, "out of memory preparing %zu tensors to write", entries);
    return 0;
}

void bertc_entry_list_free(EntryList *l)
{
    bertc_sys_free(l->entries);
    bertc_sys_free(l->names);
}

const char *bertc_entry_list_name(EntryList *l, const char *prefix, const char *name)
{
    char *dst = l->names + l->names_used;
    int n = snprintf(dst, l->names_cap - l->names_used, "%s%s", prefix, name);
    l->names_used += (size_t)n + 1;
    return dst;
}

void bertc_entry_list_add(EntryList *l, StEntry e)
{
    l->entries[l->n++] = e;
}

void bertc_entry_list_add_f32(EntryList *l, const char *name, const Tensor *shape_of,
                        const float *data)
{
    StEntry e = bertc_st_entry_tensor(name, shape_of);
    e.f32 = data;
    bertc_entry_list_add(l, e);
}

/* Every parameter and buffer under its own name; tied aliases too when asked
 * (torch's state_dict() holds both names of a tied weight). */
static void add_params(EntryList *l, const Registry *r, bool aliases)
{
    for (int i = 0; i < r->n_params; i++) {
        const Param *p = &r->params[i];
        if (p->alias_of < 0 || aliases)
            bertc_entry_list_add_f32(l, p->name, &p->var->value, p->var->value.data);
    }
}

static size_t names_bytes(const Registry *r, size_t per_name_extra)
{
    size_t n = 0;
    for (int i = 0; i < r->n_params; i++)
        n += strlen(r->params[i].name) + 1 + per_name_extra;
    return n;
}

int bertc_registry_save_file(const Registry *r, const char *path, BertcError *err)
{
    bertc_registry_require_unpacked(r, "bertc_registry_save_file");
    EntryList l;
    if (bertc_entry_list_reserve(&l, (size_t)r->n_params, 1, err) != 0) {
        bertc_entry_list_free(&l);
        return -1;
    }
    add_params(&l, r, true);
    StMetadata meta[1] = {{"format", "pt"}};
    int rc = bertc_st_write_file(path, l.entries, l.n, meta, 1, err);
    bertc_entry_list_free(&l);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Checkpoints                                                               */
/* ------------------------------------------------------------------------ */

/* The checkpoint's entries: parameters, optimizer state, the three counters
 * (I64 [1]; the RNG state's 64 bits stored as an int64 with the same bits). */
static void add_checkpoint(EntryList *l, const Registry *r, const Optimizer *o,
                           const int64_t *counters)
{
    static const int64_t one[1] = {1};
    add_params(l, r, false);
    for (int i = 0; i < r->n_params; i++) {
        const Tensor *shape_of = &r->params[i].var->value;
        const char *prefix1 = bertc_checkpoint_state1_prefix(o->cfg.kind);
        if (o->state1[i])
            bertc_entry_list_add_f32(l, bertc_entry_list_name(l, prefix1, r->params[i].name), shape_of,
                               o->state1[i]);
        if (o->state2[i])
            bertc_entry_list_add_f32(l, bertc_entry_list_name(l, CHECKPOINT_STATE2_PREFIX,
                                                  r->params[i].name), shape_of, o->state2[i]);
    }
    for (int k = 0; k < 3; k++) {
        StEntry e = {.name = bertc_checkpoint_counter_names[k], .dtype = ST_I64, .ndim = 1, .shape = one,
                     .i64 = &counters[k]};
        bertc_entry_list_add(l, e);
    }
}

/* Never write what bertc_checkpoint_load would refuse: a NaN that reached the
 * weights or the moments must not replace the last good checkpoint. */
static int check_saveable(const char *path, const Registry *r, const Optimizer *o,
                          int64_t step, const CheckpointRun *run, BertcError *err)
{
    char bad[BERTC_ERROR_LEN / 2];
    if (bertc_checkpoint_first_bad_value(r, o, bad, sizeof bad))
        return bertc_errorf(err, "%s: not saved (the last good checkpoint stays): %s",
                            path, bad);
    return bertc_checkpoint_check_counters(path, step, o->step, run ? run->max_step : -1, err);
}

static int save_entries(const char *path, const EntryList *l, const Optimizer *o,
                        const CheckpointRun *run, BertcError *err)
{
    size_t n_fields = run ? run->n_fields : 0;
    StMetadata *meta = bertc_sys_alloc((n_fields + 2) * sizeof *meta);
    if (!meta)
        return bertc_errorf(err, "%s: out of memory for its metadata", path);
    meta[0] = (StMetadata){"format", "bertc-checkpoint"};
    meta[1] = (StMetadata){"optimizer", bertc_checkpoint_optimizer_name(o->cfg.kind)};
    for (size_t i = 0; i < n_fields; i++)
        meta[2 + i] = run->fields[i];
    int rc = bertc_st_write_file(path, l->entries, l->n, meta, n_fields + 2, err);
    bertc_sys_free(meta);
    return rc;
}

int bertc_checkpoint_save(const char *path, const Registry *r, const Optimizer *o, const Rng *rng,
                    int64_t step, const CheckpointRun *run, BertcError *err)
{
    bertc_registry_require_unpacked(r, "bertc_checkpoint_save");
    if (check_saveable(path, r, o, step, run, err) != 0)
        return -1;
    EntryList l;
    size_t n = 3 * (size_t)r->n_params + 3;
    if (bertc_entry_list_reserve(&l, n, names_bytes(r, 32) * 2 + 64, err) != 0) {
        bertc_entry_list_free(&l);
        return -1;
    }
    int64_t counters[3] = {o->step, (int64_t)rng->state, step};
    add_checkpoint(&l, r, o, counters);
    int rc = save_entries(path, &l, o, run, err);
    bertc_entry_list_free(&l);
    return rc;
}

int bertc_checkpoint_load(const char *path, Registry *r, Optimizer *o, Rng *rng, int64_t *step,
                    const CheckpointRun *run, BertcError *err)
{
    SafeTensors *st;
    if (bertc_st_open_file(NULL, path, &st, err) != 0)
        return -1;
    int rc = bertc_checkpoint_require_crc(st, err) != 0
                 ? -1
                 : bertc_checkpoint_load_st(st, r, o, rng, step, run, err);
    bertc_st_close(st);
    return rc;
}
