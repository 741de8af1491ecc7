/* nn/state_file.c — a registry's parameters to and from safetensors files,
 * and training checkpoints (model + optimizer state + step + RNG) written
 * atomically. Bare-metal builds leave this file out and call registry_load
 * on a SafeTensors opened with st_open_memory (nn/state.c). */
#include "nn/state.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

int registry_load_file(Registry *r, const char *path, const LoadOptions *opts, BertcError *err)
{
    SafeTensors *st;
    if (st_open_file(NULL, path, &st, err) != 0)
        return -1;
    int rc = registry_load(r, st, opts, err);
    st_close(st);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Saving                                                                    */
/* ------------------------------------------------------------------------ */

int entry_list_reserve(EntryList *l, size_t entries, size_t name_bytes, BertcError *err)
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

void entry_list_free(EntryList *l)
{
    bertc_sys_free(l->entries);
    bertc_sys_free(l->names);
}

const char *entry_list_name(EntryList *l, const char *prefix, const char *name)
{
    char *dst = l->names + l->names_used;
    int n = snprintf(dst, l->names_cap - l->names_used, "%s%s", prefix, name);
    l->names_used += (size_t)n + 1;
    return dst;
}

void entry_list_add(EntryList *l, StEntry e)
{
    l->entries[l->n++] = e;
}

void entry_list_add_f32(EntryList *l, const char *name, const Tensor *shape_of,
                        const float *data)
{
    StEntry e = st_entry_tensor(name, shape_of);
    e.f32 = data;
    entry_list_add(l, e);
}

/* Every parameter and buffer under its own name; tied aliases too when asked
 * (torch's state_dict() holds both names of a tied weight). */
static void add_params(EntryList *l, const Registry *r, bool aliases)
{
    for (int i = 0; i < r->n_params; i++) {
        const Param *p = &r->params[i];
        if (p->alias_of < 0 || aliases)
            entry_list_add_f32(l, p->name, &p->var->value, p->var->value.data);
    }
}

static size_t names_bytes(const Registry *r, size_t per_name_extra)
{
    size_t n = 0;
    for (int i = 0; i < r->n_params; i++)
        n += strlen(r->params[i].name) + 1 + per_name_extra;
    return n;
}

int registry_save_file(const Registry *r, const char *path, BertcError *err)
{
    registry_require_unpacked(r, "registry_save_file");
    EntryList l;
    if (entry_list_reserve(&l, (size_t)r->n_params, 1, err) != 0) {
        entry_list_free(&l);
        return -1;
    }
    add_params(&l, r, true);
    StMetadata meta[1] = {{"format", "pt"}};
    int rc = st_write_file(path, l.entries, l.n, meta, 1, err);
    entry_list_free(&l);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Checkpoints                                                               */
/* ------------------------------------------------------------------------ */

static const char *state1_prefix(OptimizerKind kind)
{
    return kind == OPT_SGD ? "optimizer.momentum_buffer." : "optimizer.exp_avg.";
}

#define STATE2_PREFIX "optimizer.exp_avg_sq."

int checkpoint_save(const char *path, const Registry *r, const Optimizer *o, const Rng *rng,
                    int64_t step, BertcError *err)
{
    registry_require_unpacked(r, "checkpoint_save");
    EntryList l;
    size_t n = 3 * (size_t)r->n_params + 3;
    if (entry_list_reserve(&l, n, names_bytes(r, 32) * 2 + 64, err) != 0) {
        entry_list_free(&l);
        return -1;
    }
    add_params(&l, r, false);
    for (int i = 0; i < r->n_params; i++) {
        const Tensor *shape_of = &r->params[i].var->value;
        if (o->state1[i])
            entry_list_add_f32(&l, entry_list_name(&l, state1_prefix(o->cfg.kind), r->params[i].name),
                            shape_of, o->state1[i]);
        if (o->state2[i])
            entry_list_add_f32(&l, entry_list_name(&l, STATE2_PREFIX, r->params[i].name), shape_of,
                            o->state2[i]);
    }
    /* Counters as I64 [1]; the RNG state's 64 bits are stored as a signed
     * int64 with the same bits. */
    static const int64_t one[1] = {1};
    int64_t counters[3] = {o->step, (int64_t)rng->state, step};
    const char *counter_names[3] = {"optimizer.step", "rng.state", "train.step"};
    for (int k = 0; k < 3; k++) {
        StEntry e = {.name = counter_names[k], .dtype = ST_I64, .ndim = 1, .shape = one,
                     .i64 = &counters[k]};
        entry_list_add(&l, e);
    }
    StMetadata meta[2] = {{"format", "bertc-checkpoint"},
                          {"optimizer", o->cfg.kind == OPT_SGD    ? "sgd"
                                        : o->cfg.kind == OPT_ADAM ? "adam"
                                                                  : "adamw"}};
    int rc = st_write_file(path, l.entries, l.n, meta, 2, err);
    entry_list_free(&l);
    return rc;
}

static int read_counter(const SafeTensors *st, const char *name, int64_t *out, BertcError *err)
{
    const StTensorInfo *t = st_find(st, name);
    if (!t || t->dtype != ST_I64 || t->numel != 1)
        return bertc_errorf(err, "%s: checkpoint counter '%s' is missing or not one I64",
                            st->name, name);
    /* the raw 8 bytes, so the full unsigned RNG state survives */
    uint8_t b[8];
    if (st->source.read(st->source.ctx, st->data_start + t->begin, b, 8, err) != 0)
        return -1;
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | b[i];
    *out = (int64_t)v;
    return 0;
}

static int load_state(const SafeTensors *st, const char *prefix, const Param *p, float *dst,
                      BertcError *err)
{
    char name[600];
    snprintf(name, sizeof name, "%s%s", prefix, p->name);
    const StTensorInfo *t = st_find(st, name);
    if (!t)
        return bertc_errorf(err, "%s: checkpoint has no optimizer state '%s'", st->name, name);
    const Tensor *v = &p->var->value;
    if (!shape_equal(v->ndim, v->shape, t->ndim, t->shape)) {
        char a[SHAPE_STR_LEN], b[SHAPE_STR_LEN];
        return bertc_errorf(err, "%s: '%s' has shape %s, the model needs %s", st->name, name,
                            shape_str(a, sizeof a, t->ndim, t->shape),
                            shape_str(b, sizeof b, v->ndim, v->shape));
    }
    return st_read_f32(st, t, dst, (size_t)v->numel, err);
}

int checkpoint_load(const char *path, Registry *r, Optimizer *o, Rng *rng, int64_t *step,
                    BertcError *err)
{
    registry_require_unpacked(r, "checkpoint_load");
    SafeTensors *st;
    if (st_open_file(NULL, path, &st, err) != 0)
        return -1;
    const char *kind = st_metadata_get(st, "optimizer");
    const char *want = o->cfg.kind == OPT_SGD ? "sgd" : o->cfg.kind == OPT_ADAM ? "adam" : "adamw";
    int rc = -1;
    int64_t counters[3];
    if (!kind || strcmp(kind, want) != 0) {
        bertc_errorf(err, "%s: checkpoint optimizer is '%s', this run uses '%s'", path,
                     kind ? kind : "(none)", want);
        goto done;
    }
    LoadOptions opts = {.quiet_unused = true};
    if (registry_load(r, st, &opts, err) != 0)
        goto done;
    for (int i = 0; i < r->n_params; i++) {
        if (o->state1[i] &&
            load_state(st, state1_prefix(o->cfg.kind), &r->params[i], o->state1[i], err) != 0)
            goto done;
        if (o->state2[i] && load_state(st, STATE2_PREFIX, &r->params[i], o->state2[i], err) != 0)
            goto done;
    }
    if (read_counter(st, "optimizer.step", &counters[0], err) != 0 ||
        read_counter(st, "rng.state", &counters[1], err) != 0 ||
        read_counter(st, "train.step", &counters[2], err) != 0)
        goto done;
    o->step = counters[0];
    rng->state = (uint64_t)counters[1];
    *step = counters[2];
    rc = 0;
done:
    st_close(st);
    return rc;
}
