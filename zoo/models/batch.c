/* zoo/models/batch.c — named inputs (Batch) and named outputs (Outputs), with the
 * input checks every model shares. */
#include "zoo/zoo.h"
#include "tensor/format_internal.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

void bertc_batch_init(Batch *b, const char *source)
{
    memset(b, 0, sizeof *b);
    b->source = source;
}

static BatchItem *batch_slot(Batch *b, const char *name)
{
    for (int i = 0; i < b->n; i++)
        if (strcmp(b->items[i].name, name) == 0)
            return &b->items[i];
    if (b->n == BATCH_MAX)
        bertc_fatal("batch: more than %d inputs", BATCH_MAX);
    BatchItem *it = &b->items[b->n++];
    memset(it, 0, sizeof *it);
    it->name = name;
    return it;
}

void bertc_batch_put_ids(Batch *b, const char *name, ITensor t)
{
    BatchItem *it = batch_slot(b, name);
    it->is_int = true;
    it->ids = t;
}

void bertc_batch_put_f32(Batch *b, const char *name, Tensor t)
{
    BatchItem *it = batch_slot(b, name);
    it->is_int = false;
    it->f32 = t;
}

static bool is_float_dtype(StDtype d)
{
    return d == ST_F32 || d == ST_F16 || d == ST_BF16 || d == ST_F64;
}

/* The names are copied: the batch outlives the open file. */
int bertc_batch_from_safetensors(Batch *b, const SafeTensors *st, Arena *arena, BertcError *err)
{
    if ((size_t)b->n + st->n_tensors > BATCH_MAX)
        return bertc_errorf(err, "%s: %zu tensors, more than the %d inputs a batch holds",
                            st->name, st->n_tensors, BATCH_MAX);
    for (size_t i = 0; i < st->n_tensors; i++) {
        const StTensorInfo *t = &st->tensors[i];
        size_t len = strlen(t->name) + 1;
        char *name = bertc_arena_alloc(arena, len);
        memcpy(name, t->name, len);
        if (is_float_dtype(t->dtype)) {
            Tensor x;
            if (bertc_st_load_tensor(st, t->name, arena, &x, err) != 0)
                return -1;
            bertc_batch_put_f32(b, name, x);
        } else {
            ITensor x;
            if (bertc_st_load_itensor(st, t->name, arena, &x, err) != 0)
                return -1;
            bertc_batch_put_ids(b, name, x);
        }
    }
    return 0;
}

static bool was_looked_up(const BatchLookups *l, const char *name)
{
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->names[i], name) == 0)
            return true;
    return false;
}

/* Records `name` once in the batch's lookup log, if it keeps one. */
static void note_lookup(BatchLookups *l, const char *name)
{
    if (!l || was_looked_up(l, name))
        return;
    if (l->n == BATCH_LOOKUPS_MAX)
        l->overflow = true;
    else
        l->names[l->n++] = name;
}

const BatchItem *bertc_batch_find(const Batch *b, const char *name)
{
    note_lookup(b->lookups, name);
    for (int i = 0; i < b->n; i++)
        if (strcmp(b->items[i].name, name) == 0)
            return &b->items[i];
    return NULL;
}

/* "[B, S] = [2, 16]"-style text of the expected shape (-1 prints as "*"). */
static void expected_str(char *buf, size_t len, int ndim, const int64_t *shape)
{
    size_t pos = (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < ndim && pos < len; i++) {
        if (shape[i] < 0)
            pos += (size_t)snprintf(buf + pos, len - pos, i ? ", *" : "*");
        else
            pos += (size_t)snprintf(buf + pos, len - pos, i ? ", %lld" : "%lld",
                                    (long long)shape[i]);
    }
    if (pos < len)
        snprintf(buf + pos, len - pos, "]");
}

/* An empty input (B = 0 sequences, S = 0 tokens, N = 0 sentences, ...) has
 * nothing to compute and every model's shapes assume at least one: it is an
 * error before anything is allocated for it, for every input of every model. */
static int check_not_empty(const Batch *b, const char *name, int got_ndim, const int64_t *got,
                           BertcError *err)
{
    for (int i = 0; i < got_ndim; i++)
        if (got[i] == 0) {
            char have[SHAPE_STR_LEN];
            return bertc_errorf(err, "%s: '%s' has shape %s, with a dimension of size 0; "
                                "every input needs at least one row of each size (batch, "
                                "sequence length, ...)", b->source, name,
                                bertc_shape_str(have, sizeof have, got_ndim, got));
        }
    return 0;
}

static int check_shape(const Batch *b, const char *name, int ndim, const int64_t *shape,
                       int got_ndim, const int64_t *got, BertcError *err)
{
    if (check_not_empty(b, name, got_ndim, got, err) != 0)
        return -1;
    bool ok = got_ndim == ndim;
    for (int i = 0; ok && i < ndim; i++)
        ok = shape[i] < 0 || shape[i] == got[i];
    if (ok)
        return 0;
    char want[SHAPE_STR_LEN], have[SHAPE_STR_LEN];
    expected_str(want, sizeof want, ndim, shape);
    return bertc_errorf(err, "%s: '%s' must have shape %s, got %s", b->source, name, want,
                        bertc_shape_str(have, sizeof have, got_ndim, got));
}

int bertc_batch_ids(const Batch *b, const char *name, int ndim, const int64_t *shape, ITensor *out,
              BertcError *err)
{
    const BatchItem *it = bertc_batch_find(b, name);
    if (!it)
        return bertc_errorf(err, "%s: missing input tensor '%s'", b->source, name);
    if (!it->is_int)
        return bertc_errorf(err, "%s: '%s' must hold integers (I64 or I32), got floats",
                            b->source, name);
    if (check_shape(b, name, ndim, shape, it->ids.ndim, it->ids.shape, err) != 0)
        return -1;
    *out = it->ids;
    return 0;
}

int bertc_batch_f32(const Batch *b, const char *name, int ndim, const int64_t *shape, Tensor *out,
              BertcError *err)
{
    const BatchItem *it = bertc_batch_find(b, name);
    if (!it)
        return bertc_errorf(err, "%s: missing input tensor '%s'", b->source, name);
    if (it->is_int)
        return bertc_errorf(err, "%s: '%s' must hold floats (F32), got integers", b->source,
                            name);
    if (check_shape(b, name, ndim, shape, it->f32.ndim, it->f32.shape, err) != 0)
        return -1;
    *out = it->f32;
    return 0;
}

int bertc_batch_check_range(const Batch *b, const char *name, const ITensor *t, int64_t lo,
                      int64_t hi, const char *limit_name, BertcError *err)
{
    for (int64_t i = 0; i < t->numel; i++) {
        int64_t v = t->data[i];
        if (v >= lo && v < hi)
            continue;
        char at[SHAPE_STR_LEN];
        bertc_index_str(at, sizeof at, t->ndim, t->shape, i);
        if (v < lo)
            return bertc_errorf(err, "%s: '%s'%s = %lld is below %lld", b->source, name, at,
                                (long long)v, (long long)lo);
        return bertc_errorf(err, "%s: '%s'%s = %lld is >= %s %lld", b->source, name, at,
                            (long long)v, limit_name, (long long)hi);
    }
    return 0;
}

int bertc_batch_check_binary(const Batch *b, const char *name, const ITensor *t, BertcError *err)
{
    for (int64_t i = 0; i < t->numel; i++) {
        if (t->data[i] == 0 || t->data[i] == 1)
            continue;
        char at[SHAPE_STR_LEN];
        bertc_index_str(at, sizeof at, t->ndim, t->shape, i);
        return bertc_errorf(err, "%s: '%s'%s = %d is neither 0 nor 1", b->source, name, at,
                            (int)t->data[i]);
    }
    return 0;
}

int bertc_batch_check_real(const Batch *b, const char *name, const Tensor *t, double lo, double hi,
                     BertcError *err)
{
    for (int64_t i = 0; i < t->numel; i++) {
        float v = t->data[i];
        if (isfinite(v) && v >= lo && v <= hi)
            continue;
        char at[SHAPE_STR_LEN];
        bertc_index_str(at, sizeof at, t->ndim, t->shape, i);
        if (!isfinite(v))
            return bertc_errorf(err, "%s: '%s'%s = %g is not a finite number", b->source, name,
                                at, v);
        return bertc_errorf(err, "%s: '%s'%s = %g is outside [%g, %g]", b->source, name, at, v,
                            lo, hi);
    }
    return 0;
}

int bertc_batch_check_all_read(const Batch *b, const char *model, BertcError *err)
{
    const BatchLookups *l = b->lookups;
    if (!l || l->overflow)
        return 0;
    for (int i = 0; i < b->n; i++) {
        if (was_looked_up(l, b->items[i].name))
            continue;
        char reads[BERTC_ERROR_LEN / 2] = "";
        size_t pos = 0;
        for (int k = 0; k < l->n && pos < sizeof reads; k++)
            pos += (size_t)snprintf(reads + pos, sizeof reads - pos, "%s%s", k ? ", " : "",
                                    l->names[k]);
        return bertc_errorf(err, "%s: %s reads no input '%s' (a misspelling?); it reads %s",
                            b->source, model, b->items[i].name, l->n ? reads : "nothing");
    }
    return 0;
}

/* ------------------------------------------------------------------------ */

void bertc_outputs_init(Outputs *o)
{
    o->n = 0;
    o->cap = 0;
    o->items = NULL;
    o->loss_only = false;
    o->final_only = false;
}

/* The table doubles in the step arena (the old copy stays there until the
 * step ends): a model of any depth has room for all its outputs. */
static void outputs_grow(Outputs *o, Graph *g)
{
    int cap = o->cap ? 2 * o->cap : 64;
    OutputItem *items = bertc_arena_alloc(g->step, sizeof *items * (size_t)cap);
    if (o->n)
        memcpy(items, o->items, sizeof *items * (size_t)o->n);
    o->items = items;
    o->cap = cap;
}

static OutputItem *output_slot(Outputs *o, Graph *g, const char *fmt, va_list ap)
{
    if (o->n == o->cap)
        outputs_grow(o, g);
    char buf[256];
    vsnprintf(buf, sizeof buf, fmt, ap);
    size_t n = strlen(buf) + 1;
    char *name = bertc_arena_alloc(g->step, n);
    memcpy(name, buf, n);
    OutputItem *it = &o->items[o->n++];
    memset(it, 0, sizeof *it);
    it->name = name;
    return it;
}

void bertc_outputs_put(Outputs *o, Graph *g, Var *v, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    OutputItem *it = output_slot(o, g, fmt, ap);
    va_end(ap);
    it->var = v;
}

void bertc_outputs_put_ids(Outputs *o, Graph *g, ITensor t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    OutputItem *it = output_slot(o, g, fmt, ap);
    va_end(ap);
    it->ids = t;
    it->is_int = true;
}

Var *bertc_outputs_get(const Outputs *o, const char *name)
{
    for (int i = 0; i < o->n; i++)
        if (!o->items[i].is_int && strcmp(o->items[i].name, name) == 0)
            return o->items[i].var;
    return NULL;
}
