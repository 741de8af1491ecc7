/* nn/checkpoint.c — reading a training checkpoint from an open safetensors,
 * and the checks that keep a bad one from being resumed or written
 * (writing and opening files: nn/state_file.c).
 *
 * A checkpoint is a safetensors file with
 *   __metadata__  format = "bertc-checkpoint", optimizer = "sgd"|"adam"|"adamw",
 *                 and the caller's run fields (CheckpointRun: seed,
 *                 batch_size, ... for the training engine)
 *   <param>                         F32, each parameter (tied aliases once)
 *   optimizer.exp_avg.<param>       F32, Adam's first moment m
 *   optimizer.exp_avg_sq.<param>    F32, Adam's second moment v (>= 0)
 *   optimizer.momentum_buffer.<p>   F32, SGD's momentum buffer
 *   optimizer.step, train.step      I64 [1]
 *   rng.state                       I64 [1], SplitMix64's 64 state bits
 *
 * What loading checks, each failure one message naming the file and the key:
 * the format and the optimizer kind; every run field present and equal; the
 * counters present as one I64 each, 0 <= train.step <= max_step and
 * 0 <= optimizer.step <= train.step (a skipped step advances the run but not
 * the optimizer); every weight and moment finite, every v >= 0 (its square
 * root divides the update); and no tensor but
 * those above, each F32 as written (a tensor the model does not know, or a
 * moment stored as I32, is another model's checkpoint or an edited one, not
 * something to resume silently). A checkpoint read from a file must also
 * carry the data section's CRC-32 (bertc_checkpoint_require_crc): every one bertc
 * writes has it, so a file without it was made or edited by another tool and
 * a flipped bit in it would go unseen. */
#include "nn/state.h"
#include "tensor/format_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

const char *const bertc_checkpoint_counter_names[3] = {"optimizer.step", "rng.state",
                                                 "train.step"};

const char *bertc_checkpoint_state1_prefix(OptimizerKind kind)
{
    return kind == OPT_SGD ? "optimizer.momentum_buffer." : "optimizer.exp_avg.";
}

const char *bertc_checkpoint_optimizer_name(OptimizerKind kind)
{
    return kind == OPT_SGD ? "sgd" : kind == OPT_ADAM ? "adam" : "adamw";
}

/* "'name'[i, j] = nan" style check of one tensor's values: finite, and >= 0
 * when nonneg. Returns false and fills buf for the first that is not. */
static bool values_ok(const char *name, const Tensor *shape_of, const float *x, bool nonneg,
                      char *buf, size_t len)
{
    for (int64_t k = 0; k < shape_of->numel; k++) {
        if (isfinite(x[k]) && (!nonneg || x[k] >= 0))
            continue;
        char at[SHAPE_STR_LEN];
        snprintf(buf, len, "'%s'%s is %g%s", name,
                 bertc_index_str(at, sizeof at, shape_of->ndim, shape_of->shape, k), x[k],
                 isfinite(x[k]) ? " (a second moment must be >= 0)" : "");
        return false;
    }
    return true;
}

bool bertc_checkpoint_first_bad_value(const Registry *r, const Optimizer *o, char *buf, size_t len)
{
    for (int i = 0; i < r->n_params; i++) {
        const Param *p = &r->params[i];
        const Tensor *v = &p->var->value;
        char name[600];
        if (p->alias_of >= 0)
            continue;
        if (!values_ok(p->name, v, v->data, false, buf, len))
            return true;
        snprintf(name, sizeof name, "%s%s", bertc_checkpoint_state1_prefix(o->cfg.kind), p->name);
        if (o->state1[i] && !values_ok(name, v, o->state1[i], false, buf, len))
            return true;
        snprintf(name, sizeof name, "%s%s", CHECKPOINT_STATE2_PREFIX, p->name);
        if (o->state2[i] && !values_ok(name, v, o->state2[i], true, buf, len))
            return true;
    }
    return false;
}

int bertc_checkpoint_check_counters(const char *file, int64_t step, int64_t opt_step,
                              int64_t max_step, BertcError *err)
{
    if (step < 0 || (max_step >= 0 && step > max_step))
        return bertc_errorf(err, "%s: 'train.step' is %" PRId64 ", outside 0..%" PRId64
                            " (the run's steps)", file, step, max_step >= 0 ? max_step : INT64_MAX);
    if (opt_step < 0 || opt_step > step)
        return bertc_errorf(err, "%s: 'optimizer.step' is %" PRId64 " but 'train.step' is %"
                            PRId64 ": the optimizer takes at most one step per training step",
                            file, opt_step, step);
    return 0;
}

static int check_fields(const SafeTensors *st, const CheckpointRun *run, BertcError *err)
{
    for (size_t i = 0; run && i < run->n_fields; i++) {
        const StMetadata *f = &run->fields[i];
        const char *had = bertc_st_metadata_get(st, f->key);
        if (!had)
            return bertc_errorf(err, "%s: the checkpoint does not record its %s (made by an "
                                "older bertc?), so resuming it cannot be exact; remove it to "
                                "start afresh", st->name, f->key);
        if (strcmp(had, f->value) != 0)
            return bertc_errorf(err, "%s: resuming with %s %s, but the checkpoint was made "
                                "with %s; use the same setting or remove it to start afresh",
                                st->name, f->key, f->value, had);
    }
    return 0;
}

static int check_kind(const SafeTensors *st, const Optimizer *o, BertcError *err)
{
    const char *format = bertc_st_metadata_get(st, "format");
    if (!format || strcmp(format, "bertc-checkpoint") != 0)
        return bertc_errorf(err, "%s: not a bertc checkpoint (__metadata__ format is '%s', "
                            "expected 'bertc-checkpoint')", st->name, format ? format : "(none)");
    const char *kind = bertc_st_metadata_get(st, "optimizer");
    const char *want = bertc_checkpoint_optimizer_name(o->cfg.kind);
    if (!kind || strcmp(kind, want) != 0)
        return bertc_errorf(err, "%s: checkpoint optimizer is '%s', this run uses '%s'",
                            st->name, kind ? kind : "(none)", want);
    return 0;
}

static int read_counter(const SafeTensors *st, const char *name, int64_t *out, BertcError *err)
{
    const StTensorInfo *t = bertc_st_find(st, name);
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

/* The parameter a checkpoint entry belongs to: name itself, or name after
 * one of the optimizer's prefixes when the optimizer keeps that state. */
static bool known_entry(const char *name, const Registry *r, const Optimizer *o)
{
    const char *prefix[2] = {bertc_checkpoint_state1_prefix(o->cfg.kind), CHECKPOINT_STATE2_PREFIX};
    for (int k = 0; k < 2; k++) {
        size_t n = strlen(prefix[k]);
        if (strncmp(name, prefix[k], n) != 0)
            continue;
        int i = bertc_registry_find(r, name + n);
        float *const *state = k == 0 ? o->state1 : o->state2;
        return i >= 0 && r->params[i].alias_of < 0 && state[i];
    }
    int i = bertc_registry_find(r, name);
    return i >= 0 && r->params[i].alias_of < 0;
}

int bertc_checkpoint_require_crc(const SafeTensors *st, BertcError *err)
{
    if (!bertc_st_metadata_get(st, ST_CRC32_KEY))
        return bertc_errorf(err, "%s: the checkpoint has no '%s' checksum in its "
                            "__metadata__ (bertc writes one into every checkpoint), so damage "
                            "cannot be detected; remove it to start afresh", st->name,
                            ST_CRC32_KEY);
    return 0;
}

/* Every entry one this model and optimizer write, F32 (the counters are
 * checked by read_counter). */
static int check_entries(const SafeTensors *st, const Registry *r, const Optimizer *o,
                         BertcError *err)
{
    for (size_t k = 0; k < st->n_tensors; k++) {
        const StTensorInfo *t = &st->tensors[k];
        if (!strcmp(t->name, bertc_checkpoint_counter_names[0]) ||
            !strcmp(t->name, bertc_checkpoint_counter_names[1]) ||
            !strcmp(t->name, bertc_checkpoint_counter_names[2]))
            continue;
        if (!known_entry(t->name, r, o))
            return bertc_errorf(err, "%s: unexpected tensor '%s': a checkpoint of this model "
                                "holds only its parameters, their %s optimizer state and the "
                                "counters (another model's checkpoint?)", st->name, t->name,
                                bertc_checkpoint_optimizer_name(o->cfg.kind));
        if (t->dtype != ST_F32)
            return bertc_errorf(err, "%s: tensor '%s' is %s; a checkpoint stores F32", st->name,
                                t->name, bertc_st_dtype_name(t->dtype));
    }
    return 0;
}

static int load_state(const SafeTensors *st, const char *prefix, const Param *p, float *dst,
                      bool nonneg, BertcError *err)
{
    char name[600];
    snprintf(name, sizeof name, "%s%s", prefix, p->name);
    const StTensorInfo *t = bertc_st_find(st, name);
    if (!t)
        return bertc_errorf(err, "%s: checkpoint has no optimizer state '%s'", st->name, name);
    const Tensor *v = &p->var->value;
    if (!bertc_shape_equal(v->ndim, v->shape, t->ndim, t->shape)) {
        char a[SHAPE_STR_LEN], b[SHAPE_STR_LEN];
        return bertc_errorf(err, "%s: '%s' has shape %s, the model needs %s", st->name, name,
                            bertc_shape_str(a, sizeof a, t->ndim, t->shape),
                            bertc_shape_str(b, sizeof b, v->ndim, v->shape));
    }
    if (bertc_st_read_f32(st, t, dst, (size_t)v->numel, err) != 0)
        return -1;
    char bad[BERTC_ERROR_LEN / 2];
    if (!values_ok(name, v, dst, nonneg, bad, sizeof bad))
        return bertc_errorf(err, "%s: %s: not a valid optimizer state", st->name, bad);
    return 0;
}

int bertc_checkpoint_load_st(const SafeTensors *st, Registry *r, Optimizer *o, Rng *rng,
                       int64_t *step, const CheckpointRun *run, BertcError *err)
{
    bertc_registry_require_unpacked(r, "bertc_checkpoint_load");
    int64_t counters[3];
    if (check_kind(st, o, err) != 0 || check_fields(st, run, err) != 0 ||
        check_entries(st, r, o, err) != 0 ||
        read_counter(st, bertc_checkpoint_counter_names[0], &counters[0], err) != 0 ||
        read_counter(st, bertc_checkpoint_counter_names[1], &counters[1], err) != 0 ||
        read_counter(st, bertc_checkpoint_counter_names[2], &counters[2], err) != 0 ||
        bertc_checkpoint_check_counters(st->name, counters[2], counters[0], run ? run->max_step : -1,
                                  err) != 0)
        return -1;
    LoadOptions opts = {.quiet_unused = true};
    if (bertc_registry_load(r, st, &opts, err) != 0)
        return -1;
    for (int i = 0; i < r->n_params; i++) {
        const Param *p = &r->params[i];
        if (p->alias_of >= 0)
            continue;
        if (o->state1[i] && load_state(st, bertc_checkpoint_state1_prefix(o->cfg.kind), p,
                                       o->state1[i], false, err) != 0)
            return -1;
        if (o->state2[i] &&
            load_state(st, CHECKPOINT_STATE2_PREFIX, p, o->state2[i], true, err) != 0)
            return -1;
    }
    o->step = counters[0];
    rng->state = (uint64_t)counters[1];
    *step = counters[2];
    return 0;
}
