/* nn/state_int8.c — the int8 weights of a quantised model, from an open
 * safetensors (the format: docs/quantization.md).
 *
 * A Linear weight "X.weight" (out, in) is stored I8, its per-output-channel
 * scales "X.weight_scale" F32 (out): W[j, k] ~ q[j, k] * scale[j]. Both are
 * checked (dtype, shape, q in [-127, 127], scales finite and positive) and
 * packed at once for the int8 GEMM (tensor/tensor.h, bertc_qgemm_pack_b):
 * the model keeps the packed bytes and never a float32 copy of the weight.
 *
 * Word embeddings "E.weight" (V, H) are stored the same way, one scale per
 * row (token): E[v, h] ~ q[v, h] * scale[v]. They pass the same checks and
 * are kept as they are (V x H bytes and V floats): the embedding lookup
 * dequantises the rows it reads (bertc_ag_embedding). */
#include "nn/state.h"
#include "tensor/format_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define SCALE_SUFFIX "_scale"

/* "X.weight" -> "X.weight_scale"; false if it does not fit. */
static bool scale_name(const char *weight, char *buf, size_t cap)
{
    return (size_t)snprintf(buf, cap, "%s" SCALE_SUFFIX, weight) < cap;
}

bool bertc_registry_int8_scale_key(const Registry *r, const char *key)
{
    size_t n = strlen(key), s = sizeof SCALE_SUFFIX - 1;
    if (n <= s || strcmp(key + n - s, SCALE_SUFFIX) != 0)
        return false;
    for (int i = 0; i < r->n_params; i++) {
        const char *name = r->params[i].name;
        if (r->params[i].int8 && strlen(name) == n - s && strncmp(name, key, n - s) == 0)
            return true;
    }
    return false;
}

static int check_weight(const Registry *r, int i, const SafeTensors *st, const StTensorInfo *t,
                        BertcError *err)
{
    const Param *p = &r->params[i];
    const Tensor *v = &p->var->value;
    char want[SHAPE_STR_LEN], got[SHAPE_STR_LEN];
    if (t->dtype != ST_I8)
        return bertc_errorf(err, "%s: '%s' is %s in the file, but the model's config.json "
                            "(quantization_config) makes this %s int8: it must be I8",
                            st->name, t->name, bertc_st_dtype_name(t->dtype),
                            p->linear_weight ? "Linear weight" : "embedding table");
    if (!bertc_shape_equal(v->ndim, v->shape, t->ndim, t->shape))
        return bertc_errorf(err, "%s: int8 weight '%s' has shape %s in the file but the model "
                            "needs %s", st->name, t->name,
                            bertc_shape_str(got, sizeof got, t->ndim, t->shape),
                            bertc_shape_str(want, sizeof want, v->ndim, v->shape));
    for (int j = 0; j < r->n_params; j++)
        if (r->params[j].alias_of == i)
            return bertc_errorf(err, "%s: '%s' is int8 but the model ties it to '%s': a tied "
                                "weight stays float32", st->name, t->name, r->params[j].name);
    return 0;
}

/* The scales entry of weight t: F32 (out), every value finite and > 0. */
static int read_scales(const SafeTensors *st, const StTensorInfo *t, int64_t out, float *scale,
                       BertcError *err)
{
    char name[600];
    const StTensorInfo *s = scale_name(t->name, name, sizeof name) ? bertc_st_find(st, name) : NULL;
    if (!s)
        return bertc_errorf(err, "%s: int8 weight '%s' has no scales: '%s' (F32 [%lld]) is "
                            "missing", st->name, t->name, name, (long long)out);
    if (s->dtype != ST_F32 || s->ndim != 1 || s->shape[0] != out) {
        char got[SHAPE_STR_LEN];
        return bertc_errorf(err, "%s: '%s' is %s %s in the file; the scales of '%s' must be "
                            "F32 [%lld]", st->name, name, bertc_st_dtype_name(s->dtype),
                            bertc_shape_str(got, sizeof got, s->ndim, s->shape), t->name,
                            (long long)out);
    }
    if (bertc_st_read_f32(st, s, scale, (size_t)out, err) != 0)
        return -1;
    for (int64_t j = 0; j < out; j++)
        if (!(isfinite(scale[j]) && scale[j] > 0.0f))
            return bertc_errorf(err, "%s: '%s'[%lld] is %g: the scales of an int8 weight must "
                                "be finite and positive", st->name, name, (long long)j,
                                (double)scale[j]);
    return 0;
}

/* q (rows, cols): bertc's int8 weights are symmetric, in [-127, 127] (the
 * int8 GEMM's SIMD paths rely on it: -128 never occurs). */
static int64_t first_out_of_range(const int8_t *q, int64_t n)
{
    for (int64_t k = 0; k < n; k++)
        if (q[k] == -128)
            return k;
    return -1;
}

static int check_range(const SafeTensors *st, const StTensorInfo *t, const int8_t *q,
                       int64_t rows, int64_t cols, BertcError *err)
{
    int64_t bad = first_out_of_range(q, rows * cols);
    if (bad < 0)
        return 0;
    return bertc_errorf(err, "%s: '%s'[%lld, %lld] is -128: bertc's int8 weights are "
                        "symmetric, in [-127, 127]", st->name, t->name,
                        (long long)(bad / cols), (long long)(bad % cols));
}

/* Word embeddings (V, H): the file's int8 rows and scales, checked, kept in
 * the params arena for the lookup (Var.qrows, Var.qrow_scale). */
static int load_rows(Registry *r, Param *p, const SafeTensors *st, const StTensorInfo *t,
                     BertcError *err)
{
    int64_t V = t->shape[0], H = t->shape[1];
    ArenaMark mark = bertc_arena_mark(r->arena);
    int8_t *q = bertc_arena_alloc(r->arena, (size_t)(V * H));
    float *scale = bertc_arena_alloc(r->arena, sizeof(float) * (size_t)V);
    int rc = read_scales(st, t, V, scale, err);
    if (rc == 0)
        rc = bertc_st_read_i8(st, t, q, (size_t)(V * H), err);
    if (rc == 0)
        rc = check_range(st, t, q, V, H, err);
    if (rc != 0) {
        bertc_arena_release(r->arena, mark);
        return -1;
    }
    p->var->qrows = q;
    p->var->qrow_scale = scale;
    r->n_int8++;
    return 0;
}

/* A Linear weight (out, in): checked and packed for bertc_qgemm. */
static int load_packed(Registry *r, Param *p, const SafeTensors *st, const StTensorInfo *t,
                       BertcError *err)
{
    int64_t out = t->shape[0], in = t->shape[1];
    QuantPackedB *pb = bertc_arena_alloc(r->arena, sizeof *pb);
    void *packed = bertc_arena_alloc(r->arena, bertc_qgemm_packed_bytes(out, in));
    /* The file's bytes pass through scratch above a mark of the params
     * arena, released once packed: one weight's int8 at a time. */
    ArenaMark mark = bertc_arena_mark(r->arena);
    int8_t *q = bertc_arena_alloc(r->arena, (size_t)(out * in));
    float *scale = bertc_arena_alloc(r->arena, sizeof(float) * (size_t)out);
    int rc = read_scales(st, t, out, scale, err);
    if (rc == 0)
        rc = bertc_st_read_i8(st, t, q, (size_t)(out * in), err);
    if (rc == 0)
        rc = check_range(st, t, q, out, in, err);
    if (rc == 0) {
        bertc_qgemm_pack_b(q, scale, out, in, packed, pb);
        p->qpacking = pb;
        p->var->qpacked = pb;
        r->n_int8++;
    }
    bertc_arena_release(r->arena, mark);
    return rc;
}

int bertc_registry_load_int8(Registry *r, int i, const SafeTensors *st, const StTensorInfo *t,
                             BertcError *err)
{
    Param *p = &r->params[i];
    if (check_weight(r, i, st, t, err) != 0)
        return -1;
    return p->linear_weight ? load_packed(r, p, st, t, err) : load_rows(r, p, st, t, err);
}
