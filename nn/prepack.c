/* nn/prepack.c — Linear weights laid out once for the GEMM, for inference
 * (and, for a bf16 model, once for the bf16 GEMM).
 *
 * y = x W^T: W (out, in) is op(B) = W^T (in, out) of the GEMM, which packs it
 * into NR-column micro-panels on every call (tensor/gemm.c). For BERT-base at
 * batch 1 x 128 that packing is ~19% of a forward: each weight is read once
 * per forward, by a strided transposing gather. Packing it once, in place,
 * leaves the micro-kernel streaming panels already in its order. */
#include "nn/nn.h"

#include <string.h>

/* Is parameter i a Linear weight that can be packed in place of itself? */
static bool packable(const Registry *r, int i)
{
    const Param *p = &r->params[i];
    if (!p->linear_weight || p->int8 || p->buffer || p->alias_of >= 0 || p->var->packed)
        return false;
    for (int j = 0; j < r->n_params; j++)   /* tied: another name reads it plainly */
        if (r->params[j].alias_of == i)
            return false;
    const Tensor *W = &p->var->value;       /* (out, in) */
    return bertc_gemm_packed_b_floats(W->shape[1], W->shape[0]) == (size_t)W->numel &&
           (uintptr_t)W->data % 64 == 0;
}

int bertc_registry_prepack(Registry *r, Arena *scratch)
{
    int packed = 0;
    for (int i = 0; i < r->n_params; i++) {
        if (!packable(r, i))
            continue;
        Param *p = &r->params[i];
        Tensor *W = &p->var->value;
        int64_t out = W->shape[0], in = W->shape[1];
        if (!p->packing)
            p->packing = bertc_arena_alloc(r->arena, sizeof *p->packing);
        ArenaMark mark = bertc_arena_mark(scratch);
        float *plain = bertc_arena_alloc(scratch, sizeof(float) * (size_t)W->numel);
        memcpy(plain, W->data, sizeof(float) * (size_t)W->numel);
        /* op(B) = W^T is (K, N) = (in, out); W is B with trans_b, row stride in */
        bertc_gemm_pack_b(true, in, out, plain, in, W->data, p->packing);
        bertc_arena_release(scratch, mark);
        p->var->packed = p->packing;
        packed++;
    }
    r->n_packed += packed;
    return packed;
}

void bertc_registry_unpack(Registry *r, Arena *scratch)
{
    for (int i = 0; i < r->n_params; i++) {
        Param *p = &r->params[i];
        if (!p->var->packed)
            continue;
        Tensor *W = &p->var->value;
        ArenaMark mark = bertc_arena_mark(scratch);
        float *packed = bertc_arena_alloc(scratch, sizeof(float) * (size_t)W->numel);
        memcpy(packed, W->data, sizeof(float) * (size_t)W->numel);
        GemmPackedB from = *p->packing;
        from.data = packed;
        bertc_gemm_unpack_b(&from, true, W->data, W->shape[1]);
        bertc_arena_release(scratch, mark);
        p->var->packed = NULL;
    }
    r->n_packed = 0;
}

int bertc_registry_pack_bf16(Registry *r, const bool *chosen)
{
    int packed = 0;
    for (int i = 0; i < r->n_params; i++) {
        Param *p = &r->params[i];
        if (!chosen[i] || !p->linear_weight || p->int8 || p->alias_of >= 0 || p->var->bpacked)
            continue;
        const Tensor *W = &p->var->value;   /* (out, in) */
        int64_t out = W->shape[0], in = W->shape[1];
        Bf16PackedB *pb = bertc_arena_alloc(r->arena, sizeof *pb);
        void *mem = bertc_arena_alloc(r->arena, bertc_bgemm_packed_bytes(out, in));
        bertc_bgemm_pack_b_f32(W->data, out, in, mem, pb);   /* rounds to nearest even */
        p->var->bpacked = pb;
        packed++;
    }
    r->n_bf16 += packed;
    return packed;
}

int bertc_registry_pack_bf16_file(Registry *r, const SafeTensors *st)
{
    bool *chosen = bertc_arena_calloc(r->arena, (size_t)(r->n_params ? r->n_params : 1),
                                      sizeof *chosen);
    for (int i = 0; i < r->n_params; i++) {
        const StTensorInfo *t = bertc_st_find(st, r->params[i].name);
        chosen[i] = t && t->dtype == ST_BF16;
    }
    return bertc_registry_pack_bf16(r, chosen);
}

void bertc_registry_require_unpacked(const Registry *r, const char *what)
{
    if (r->n_int8 > 0)
        bertc_fatal("%s: the model holds %d int8 Linear weights (a quantised model, for "
                    "inference only); use the float32 model it was quantised from", what,
                    r->n_int8);
    if (r->n_packed > 0)
        bertc_fatal("%s: %d Linear weights are pre-packed for inference (bertc_registry_prepack) "
                    "and hold no plain values; call bertc_registry_unpack first", what, r->n_packed);
}
