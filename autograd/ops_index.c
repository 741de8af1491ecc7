/* autograd/ops_index.c — embedding lookup, index_select, gather, masked_fill.
 * The integer inputs are copied into the step arena, so the caller may reuse
 * its buffers before backward. */
#include "autograd/ops_internal.h"

#include <string.h>

static int32_t *copy_indices(Graph *g, const ITensor *t)
{
    int32_t *copy = bertc_arena_alloc(g->step, sizeof(int32_t) * (size_t)(t->numel ? t->numel : 1));
    memcpy(copy, t->data, sizeof(int32_t) * (size_t)t->numel);
    return copy;
}

static void check_index(const char *op, int64_t value, int64_t limit, int64_t at)
{
    if (value < 0 || value >= limit)
        bertc_fatal("%s: index %lld at position %lld is outside [0, %lld)", op,
                    (long long)value, (long long)at, (long long)limit);
}

/* The rows of an int8 table (V, H) (a quantised model's word embeddings):
 * out[i, :] = q[ids[i], :] * scale[ids[i]], the int8 value converted exactly
 * and one float multiply, so each element is the float a table of the
 * dequantised values would hold. Only the looked-up rows are dequantised.
 * Inference only: the int8 table has no float values to learn. */
static Var *embedding_int8(Var *out, const Var *table, const ITensor *ids)
{
    if (out->requires_grad)
        bertc_fatal("embedding: table '%s' is int8 (a quantised model is for inference only) "
                    "and has no gradient; train or fine-tune the float32 model, then quantise it",
                    table->name ? table->name : "?");
    int64_t V = table->value.shape[0], H = table->value.shape[1];
    for (int64_t i = 0; i < ids->numel; i++) {
        check_index("embedding", ids->data[i], V, i);
        const int8_t *q = table->qrows + (int64_t)ids->data[i] * H;
        float scale = table->qrow_scale[ids->data[i]], *y = out->value.data + i * H;
        for (int64_t h = 0; h < H; h++)
            y[h] = (float)q[h] * scale;
    }
    return out;   /* nothing to record: no gradient flows into it */
}

/* embedding: table (V, H), ids (...) -> out (..., H), out[i] = table[ids[i]]. */
Var *bertc_ag_embedding(Graph *g, Var *table, const ITensor *ids, int padding_idx)
{
    if (table->value.ndim != 2)
        bertc_ag_shape_error("embedding", "the table must be (V, H)", table, NULL);
    if (ids->ndim + 1 > TENSOR_MAX_DIMS)
        bertc_fatal("embedding: ids have too many dims (%d)", ids->ndim);
    int64_t V = table->value.shape[0], H = table->value.shape[1];
    int64_t shape[TENSOR_MAX_DIMS];
    memcpy(shape, ids->shape, sizeof(int64_t) * (size_t)ids->ndim);
    shape[ids->ndim] = H;
    Var *out = bertc_ag_result(g, ids->ndim + 1, shape, &table, 1);
    if (table->qrows)
        return embedding_int8(out, table, ids);
    for (int64_t i = 0; i < ids->numel; i++) {
        check_index("embedding", ids->data[i], V, i);
        memcpy(out->value.data + i * H, table->value.data + (int64_t)ids->data[i] * H,
               sizeof(float) * (size_t)H);
    }
    Node *node = bertc_ag_record(g, OP_EMBEDDING, out, &table, 1);
    if (node) {
        node->attr.embedding = (EmbeddingAttrs){.ids = copy_indices(g, ids),
                                                .n_ids = ids->numel,
                                                .padding_idx = padding_idx};
    }
    return out;
}

/* dtable[ids[i]] += dout[i], except for the padding row, which never learns
 * (torch.nn.Embedding(padding_idx=...)). Repeated ids accumulate. */
void bertc_embedding_backward(Graph *g, Node *node)
{
    Var *table = node->in[0];
    if (!table->requires_grad)
        return;
    const int32_t *ids = node->attr.embedding.ids;
    int64_t n = node->attr.embedding.n_ids, padding_idx = node->attr.embedding.padding_idx,
            H = table->value.shape[1];
    float *dt = bertc_ag_grad(g, table);
    for (int64_t i = 0; i < n; i++)
        if (ids[i] != padding_idx)
            bertc_kernel_add_inplace(dt + (int64_t)ids[i] * H, node->out->grad + i * H, H);
}

/* index_select: out = a with dim restricted to the entries idx (1-D).
 * View a as (outer, a.shape[dim], inner). */
Var *bertc_ag_index_select(Graph *g, Var *a, int dim, const ITensor *idx)
{
    int nd = a->value.ndim;
    dim = bertc_ag_norm_dim("index_select", dim, nd);
    if (idx->ndim != 1)
        bertc_fatal("index_select: idx must be 1-D, got %d dims", idx->ndim);
    int64_t shape[TENSOR_MAX_DIMS];
    memcpy(shape, a->value.shape, sizeof(int64_t) * (size_t)nd);
    shape[dim] = idx->numel;
    Var *out = bertc_ag_result(g, nd, shape, &a, 1);
    int64_t outer = bertc_shape_numel(dim, a->value.shape);
    int64_t inner = bertc_shape_numel(nd - dim - 1, a->value.shape + dim + 1);
    int64_t n_src = a->value.shape[dim], n_idx = idx->numel;
    for (int64_t k = 0; k < n_idx; k++)
        check_index("index_select", idx->data[k], n_src, k);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t k = 0; k < n_idx; k++)
            memcpy(out->value.data + (o * n_idx + k) * inner,
                   a->value.data + (o * n_src + idx->data[k]) * inner,
                   sizeof(float) * (size_t)inner);
    Node *node = bertc_ag_record(g, OP_INDEX_SELECT, out, &a, 1);
    if (node) {
        node->attr.index = (IndexAttrs){.idx = copy_indices(g, idx), .dim = dim};
    }
    return out;
}

void bertc_index_select_backward(Graph *g, Node *node)
{
    Var *a = node->in[0];
    if (!a->requires_grad)
        return;
    int dim = node->attr.index.dim, nd = a->value.ndim;
    const int32_t *idx = node->attr.index.idx;
    int64_t outer = bertc_shape_numel(dim, a->value.shape);
    int64_t inner = bertc_shape_numel(nd - dim - 1, a->value.shape + dim + 1);
    int64_t n_src = a->value.shape[dim], n_idx = node->out->value.shape[dim];
    float *da = bertc_ag_grad(g, a);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t k = 0; k < n_idx; k++)
            bertc_kernel_add_inplace(da + (o * n_src + idx[k]) * inner,
                               node->out->grad + (o * n_idx + k) * inner, inner);
}

/* Offset in a of the element that gather reads for flat index i of idx:
 * idx's own coordinates, except along dim where the coordinate is idx[i]. */
static int64_t gather_offset(const Tensor *a, const int64_t *idx_shape, int dim,
                             int64_t i, int32_t target)
{
    int64_t offset = 0, stride = 1;
    for (int d = a->ndim - 1; d >= 0; d--) {
        int64_t coord = i % idx_shape[d];
        i /= idx_shape[d];
        offset += (d == dim ? target : coord) * stride;
        stride *= a->shape[d];
    }
    return offset;
}

/* gather (torch.gather): out has idx's shape; along dim it reads a at idx. */
Var *bertc_ag_gather(Graph *g, Var *a, int dim, const ITensor *idx)
{
    int nd = a->value.ndim;
    dim = bertc_ag_norm_dim("gather", dim, nd);
    bool ok = idx->ndim == nd;
    for (int d = 0; ok && d < nd; d++)
        ok = d == dim || idx->shape[d] <= a->value.shape[d];
    if (!ok) {
        char s[SHAPE_STR_LEN], t[SHAPE_STR_LEN];
        bertc_fatal("gather: index shape %s does not fit input shape %s along dim %d",
                    bertc_shape_str(s, sizeof s, idx->ndim, idx->shape),
                    bertc_shape_str(t, sizeof t, nd, a->value.shape), dim);
    }
    Var *out = bertc_ag_result(g, nd, idx->shape, &a, 1);
    for (int64_t i = 0; i < idx->numel; i++) {
        check_index("gather", idx->data[i], a->value.shape[dim], i);
        out->value.data[i] = a->value.data[gather_offset(&a->value, idx->shape, dim, i,
                                                         idx->data[i])];
    }
    Node *node = bertc_ag_record(g, OP_GATHER, out, &a, 1);
    if (node) {
        node->attr.index = (IndexAttrs){.idx = copy_indices(g, idx), .dim = dim};
    }
    return out;
}

void bertc_gather_backward(Graph *g, Node *node)
{
    Var *a = node->in[0];
    if (!a->requires_grad)
        return;
    const int32_t *idx = node->attr.index.idx;
    const Tensor *out = &node->out->value;
    float *da = bertc_ag_grad(g, a);
    for (int64_t i = 0; i < out->numel; i++)
        da[gather_offset(&a->value, out->shape, node->attr.index.dim, i, idx[i])] +=
            node->out->grad[i];
}

/* masked_fill: out = value where mask != 0, else a. mask broadcasts to a.
 * The mask offset of each element is found with broadcast strides. */
static int64_t mask_offset(const Tensor *a, const int64_t *mask_stride, int64_t i)
{
    int64_t offset = 0;
    for (int d = a->ndim - 1; d >= 0; d--) {
        offset += (i % a->shape[d]) * mask_stride[d];
        i /= a->shape[d];
    }
    return offset;
}

Var *bertc_ag_masked_fill(Graph *g, Var *a, const ITensor *mask, float value)
{
    int ndim;
    int64_t shape[TENSOR_MAX_DIMS], mstride[TENSOR_MAX_DIMS];
    if (!bertc_shape_broadcast(a->value.ndim, a->value.shape, mask->ndim, mask->shape, &ndim,
                         shape) ||
        !bertc_shape_equal(ndim, shape, a->value.ndim, a->value.shape)) {
        char s[SHAPE_STR_LEN], t[SHAPE_STR_LEN];
        bertc_fatal("masked_fill: mask shape %s does not broadcast to input shape %s",
                    bertc_shape_str(s, sizeof s, mask->ndim, mask->shape),
                    bertc_shape_str(t, sizeof t, a->value.ndim, a->value.shape));
    }
    bertc_shape_broadcast_strides(mask->ndim, mask->shape, ndim, mstride);
    Var *out = bertc_ag_result(g, ndim, shape, &a, 1);
    int32_t *m = copy_indices(g, mask);
    for (int64_t i = 0; i < a->value.numel; i++)
        out->value.data[i] = m[mask_offset(&a->value, mstride, i)] ? value : a->value.data[i];
    Node *node = bertc_ag_record(g, OP_MASKED_FILL, out, &a, 1);
    if (node) {
        node->attr.masked_fill.mask = m;
        memcpy(node->attr.masked_fill.mask_strides, mstride, sizeof(int64_t) * (size_t)ndim);
    }
    return out;
}

/* Filled positions no longer depend on a: their gradient is 0. */
void bertc_masked_fill_backward(Graph *g, Node *node)
{
    Var *a = node->in[0];
    if (!a->requires_grad)
        return;
    const int32_t *m = node->attr.masked_fill.mask;
    float *da = bertc_ag_grad(g, a);
    for (int64_t i = 0; i < a->value.numel; i++)
        if (!m[mask_offset(&a->value, node->attr.masked_fill.mask_strides, i)])
            da[i] += node->out->grad[i];
}
