/* nn/registry_const.c — a model whose weights are read in place from const
 * memory (flash on a microcontroller): each parameter's data pointer is the
 * caller's, nothing is copied (docs/embedded.md, `bertc export-c`).
 *
 * The registry is built with const_data set (bertc_model_build_const), so
 * bertc_nn_param gives every parameter a shape and no data; this file points
 * them at a table of ConstParam entries, one per parameter, after checking
 * that each fits: the element count, the alignment, and for an int8 Linear
 * weight that it was packed for the int8 path that will run it. Int8 word
 * embeddings are rows and row scales as the file holds them: no path. */
#include "nn/nn.h"
#include "tensor/format_internal.h"

#include <stdint.h>
#include <string.h>

static const ConstParam *entry(const ConstParam *table, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (table[i].name && strcmp(table[i].name, name) == 0)
            return &table[i];
    return NULL;
}

static bool aligned(const void *p, uintptr_t to)
{
    return ((uintptr_t)p & (to - 1)) == 0;
}

static int bind_float(Param *p, const ConstParam *e, BertcError *err)
{
    Tensor *v = &p->var->value;
    if (!e->values)
        return bertc_errorf(err, "const weights: '%s' is float32 in the model but its entry "
                            "has no values (int8 entry for a float32 parameter?)", p->name);
    if (e->numel != v->numel)
        return bertc_errorf(err, "const weights: '%s' has %lld values, the model needs %lld",
                            p->name, (long long)e->numel, (long long)v->numel);
    if (!aligned(e->values, 4))
        return bertc_errorf(err, "const weights: '%s' is not 4-byte aligned", p->name);
    v->data = (float *)e->values;   /* read only: the model never writes its weights */
    return 0;
}

/* n_pad: N rounded up to nr, as bertc_qgemm_pack_b pads. */
static int bind_int8(Registry *r, Param *p, const ConstParam *e, BertcError *err)
{
    const Tensor *v = &p->var->value;
    int64_t N = v->shape[0], K = v->shape[1];
    if (!e->qdata || !e->col_sum || !e->scale)
        return bertc_errorf(err, "const weights: '%s' is int8 in the model but its entry has "
                            "no packed data, col_sum and scale", p->name);
    if (e->numel != N * K || e->nr <= 0 || e->k_pad < K || e->k_pad % 4 != 0)
        return bertc_errorf(err, "const weights: '%s' entry (%lld values, nr %d, k_pad %lld) "
                            "does not fit the model's (%lld, %lld) weight", p->name,
                            (long long)e->numel, e->nr, (long long)e->k_pad, (long long)N,
                            (long long)K);
    if (!bertc_qgemm_same_layout((QgemmIsa)e->isa, bertc_qgemm_isa()))
        return bertc_errorf(err, "const weights: '%s' was packed for the %s int8 path but %s "
                            "is active (export for it, or bertc_qgemm_set_isa)", p->name,
                            bertc_qgemm_isa_name((QgemmIsa)e->isa),
                            bertc_qgemm_isa_name(bertc_qgemm_isa()));
    if (!aligned(e->qdata, 16) || !aligned(e->col_sum, 16) || !aligned(e->scale, 16))
        return bertc_errorf(err, "const weights: '%s' packed parts are not 16-byte aligned",
                            p->name);
    QuantPackedB *pb = bertc_arena_alloc(r->arena, sizeof *pb);
    *pb = (QuantPackedB){.N = N, .K = K, .k_pad = e->k_pad, .nr = e->nr, .isa = e->isa,
                         .data = (int8_t *)e->qdata, .col_sum = (int32_t *)e->col_sum,
                         .scale = (float *)e->scale};   /* read only, as above */
    p->qpacking = pb;
    p->var->qpacked = pb;
    r->n_int8++;
    return 0;
}

/* Int8 word embeddings (V, H): V * H bytes of rows, V row scales. */
static int bind_rows(Registry *r, Param *p, const ConstParam *e, BertcError *err)
{
    const Tensor *v = &p->var->value;
    int64_t V = v->shape[0], H = v->shape[1];
    if (!e->qdata || !e->scale || e->col_sum)
        return bertc_errorf(err, "const weights: '%s' is int8 word embeddings in the model but "
                            "its entry is not int8 rows and row scales (qdata and scale, no "
                            "col_sum)", p->name);
    if (e->numel != V * H)
        return bertc_errorf(err, "const weights: '%s' has %lld int8 values, the model's (%lld, "
                            "%lld) table needs %lld", p->name, (long long)e->numel, (long long)V,
                            (long long)H, (long long)(V * H));
    if (!aligned(e->scale, 4))
        return bertc_errorf(err, "const weights: '%s' row scales are not 4-byte aligned",
                            p->name);
    p->var->qrows = e->qdata;   /* read only, as above */
    p->var->qrow_scale = e->scale;
    r->n_int8++;
    return 0;
}

static int bind(Registry *r, Param *p, const ConstParam *e, BertcError *err)
{
    if (!p->int8)
        return bind_float(p, e, err);
    return p->linear_weight ? bind_int8(r, p, e, err) : bind_rows(r, p, e, err);
}

int bertc_registry_bind_const(Registry *r, const ConstParam *table, int n, BertcError *err)
{
    if (!r->const_data)
        return bertc_errorf(err, "const weights: the model was not built for them "
                            "(bertc_model_build_const)");
    for (int i = 0; i < r->n_params; i++) {
        Param *p = &r->params[i];
        if (p->alias_of >= 0)
            continue;   /* shares its owner's Var */
        const ConstParam *e = entry(table, n, p->name);
        if (!e)
            return bertc_errorf(err, "const weights: no entry for '%s'", p->name);
        if (bind(r, p, e, err) != 0)
            return -1;
    }
    return 0;
}
