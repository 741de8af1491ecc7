/* autograd/ops_shape.c — reshape, permute/transpose, concat, slice/split.
 * reshape is a view (shares storage); the others copy into a new contiguous
 * tensor, and their backward moves each gradient entry back where it came
 * from. */
#include "autograd/ops_internal.h"

#include <string.h>

/* reshape: same data, new shape. One entry of `shape` may be -1 (inferred). */
Var *bertc_ag_reshape(Graph *g, Var *a, int ndim, const int64_t *shape)
{
    int64_t resolved[TENSOR_MAX_DIMS], known = 1;
    int infer = -1;
    if (ndim < 0 || ndim > TENSOR_MAX_DIMS)
        bertc_fatal("reshape: %d dims (at most %d)", ndim, TENSOR_MAX_DIMS);
    for (int i = 0; i < ndim; i++) {
        resolved[i] = shape[i];
        if (shape[i] == -1 && infer < 0)
            infer = i;
        else
            known *= shape[i];
    }
    if (infer >= 0)
        resolved[infer] = known ? a->value.numel / known : 0;
    if (bertc_shape_numel(ndim, resolved) != a->value.numel) {
        char s[SHAPE_STR_LEN];
        bertc_fatal("reshape: cannot view %lld elements as %s", (long long)a->value.numel,
                    bertc_shape_str(s, sizeof s, ndim, resolved));
    }
    Var *out = bertc_arena_calloc(g->step, 1, sizeof *out);
    out->value = bertc_tensor_view(a->value.data, ndim, resolved);
    out->requires_grad = a->requires_grad && !g->no_grad;
    bertc_ag_record(g, OP_RESHAPE, out, &a, 1);
    return out;
}

/* The gradient of a view is the view of the gradient: out's (contiguous,
 * same numel) gradient buffer becomes a's when a has none yet, no copy. */
void bertc_reshape_backward(Graph *g, Node *node)
{
    Var *a = node->in[0];
    if (a->requires_grad && !bertc_ag_grad_share(a, node->out->grad))
        bertc_kernel_add_inplace(bertc_ag_grad(g, a), node->out->grad, a->value.numel);
}

/* Walk every element of the permuted output in order; src follows the
 * matching element of the input. Forward: out = in. Backward: the
 * output-ordered gradient goes back into the input order, in_data += out_data,
 * or in_data = out_data when !accumulate (every element is stored once). */
static void permute_walk(const Tensor *in, const int *perm, float *out_data,
                         float *in_data, bool backward, bool accumulate)
{
    int nd = in->ndim;
    int64_t in_stride[TENSOR_MAX_DIMS], stride = 1, out_shape[TENSOR_MAX_DIMS];
    int64_t step[TENSOR_MAX_DIMS], idx[TENSOR_MAX_DIMS] = {0};
    for (int d = nd - 1; d >= 0; d--) {
        in_stride[d] = stride;
        stride *= in->shape[d];
    }
    for (int d = 0; d < nd; d++) {
        out_shape[d] = in->shape[perm[d]];
        step[d] = in_stride[perm[d]];
    }
    int64_t src = 0;
    for (int64_t i = 0; i < in->numel; i++) {
        if (backward)
            in_data[src] = (accumulate ? in_data[src] : 0.0f) + out_data[i];
        else
            out_data[i] = in_data[src];
        /* odometer increment over the output dims */
        for (int d = nd - 1; d >= 0; d--) {
            src += step[d];
            if (++idx[d] < out_shape[d])
                break;
            src -= step[d] * out_shape[d];
            idx[d] = 0;
        }
    }
}

Var *bertc_ag_permute(Graph *g, Var *a, const int *perm)
{
    int nd = a->value.ndim;
    int64_t shape[TENSOR_MAX_DIMS] = {0};
    bool seen[TENSOR_MAX_DIMS] = {false};
    for (int d = 0; d < nd; d++) {
        if (perm[d] < 0 || perm[d] >= nd || seen[perm[d]])
            bertc_ag_shape_error("permute", "perm is not a permutation of the dims", a, NULL);
        seen[perm[d]] = true;
        shape[d] = a->value.shape[perm[d]];
    }
    Var *out = bertc_ag_result(g, nd, shape, &a, 1);
    permute_walk(&a->value, perm, out->value.data, a->value.data, false, false);
    Node *node = bertc_ag_record(g, OP_PERMUTE, out, &a, 1);
    for (int d = 0; node && d < nd; d++)
        node->attr.permute.perm[d] = perm[d];
    return out;
}

void bertc_permute_backward(Graph *g, Node *node)
{
    Var *a = node->in[0];
    if (!a->requires_grad)
        return;
    const int *perm = node->attr.permute.perm;
    bool accumulate;
    float *da = bertc_ag_grad_full(g, a, &accumulate);
    permute_walk(&a->value, perm, node->out->grad, da, true, accumulate);
}

Var *bertc_ag_transpose(Graph *g, Var *a, int dim0, int dim1)
{
    int nd = a->value.ndim, perm[TENSOR_MAX_DIMS];
    dim0 = bertc_ag_norm_dim("transpose", dim0, nd);
    dim1 = bertc_ag_norm_dim("transpose", dim1, nd);
    for (int d = 0; d < nd; d++)
        perm[d] = d;
    perm[dim0] = dim1;
    perm[dim1] = dim0;
    return bertc_ag_permute(g, a, perm);
}

/* A tensor viewed around `dim` as (outer, shape[dim], inner). */
static void split_around(const Tensor *t, int dim, int64_t *outer, int64_t *inner)
{
    *outer = bertc_shape_numel(dim, t->shape);
    *inner = bertc_shape_numel(t->ndim - dim - 1, t->shape + dim + 1);
}

Var *bertc_ag_concat(Graph *g, Var **xs, int n, int dim)
{
    if (n < 1)
        bertc_fatal("concat: needs at least one input");
    int nd = xs[0]->value.ndim;
    dim = bertc_ag_norm_dim("concat", dim, nd);
    int64_t shape[TENSOR_MAX_DIMS];
    memcpy(shape, xs[0]->value.shape, sizeof(int64_t) * (size_t)nd);
    shape[dim] = 0;
    for (int i = 0; i < n; i++) {
        const Tensor *t = &xs[i]->value;
        bool ok = t->ndim == nd;
        for (int d = 0; ok && d < nd; d++)
            ok = d == dim || t->shape[d] == xs[0]->value.shape[d];
        if (!ok)
            bertc_ag_shape_error("concat", "inputs differ outside the concat dim", xs[0], xs[i]);
        shape[dim] += t->shape[dim];
    }
    Var *out = bertc_ag_result(g, nd, shape, xs, n);
    int64_t outer, inner;
    split_around(&out->value, dim, &outer, &inner);
    int64_t out_row = shape[dim] * inner, offset = 0;
    for (int i = 0; i < n; i++) {
        int64_t piece = xs[i]->value.shape[dim] * inner;
        for (int64_t o = 0; o < outer; o++)
            memcpy(out->value.data + o * out_row + offset, xs[i]->value.data + o * piece,
                   sizeof(float) * (size_t)piece);
        offset += piece;
    }
    Node *node = bertc_ag_record(g, OP_CONCAT, out, xs, n);
    if (node)
        node->attr.concat.dim = dim;
    return out;
}

/* Input i's gradient is its piece of every out row: all of it, so a new one is
 * copied rather than added to zeros. An input given twice gets its second
 * piece added to the first. */
void bertc_concat_backward(Graph *g, Node *node)
{
    int dim = node->attr.concat.dim;
    int64_t outer, inner;
    split_around(&node->out->value, dim, &outer, &inner);
    int64_t out_row = node->out->value.shape[dim] * inner, offset = 0;
    for (int i = 0; i < node->n_in; i++) {
        Var *x = node->in[i];
        int64_t piece = x->value.shape[dim] * inner;
        if (x->requires_grad) {
            bool accumulate;
            float *dx = bertc_ag_grad_full(g, x, &accumulate);
            for (int64_t o = 0; o < outer; o++) {
                const float *dy = node->out->grad + o * out_row + offset;
                if (accumulate)
                    bertc_kernel_add_inplace(dx + o * piece, dy, piece);
                else
                    memcpy(dx + o * piece, dy, sizeof(float) * (size_t)piece);
            }
        }
        offset += piece;
    }
}

Var *bertc_ag_slice(Graph *g, Var *a, int dim, int64_t start, int64_t end)
{
    int nd = a->value.ndim;
    dim = bertc_ag_norm_dim("slice", dim, nd);
    if (start < 0 || end > a->value.shape[dim] || start > end) {
        char s[SHAPE_STR_LEN];
        bertc_fatal("slice: [%lld, %lld) is outside dim %d of shape %s", (long long)start,
                    (long long)end, dim, bertc_shape_str(s, sizeof s, nd, a->value.shape));
    }
    int64_t shape[TENSOR_MAX_DIMS];
    memcpy(shape, a->value.shape, sizeof(int64_t) * (size_t)nd);
    shape[dim] = end - start;
    Var *out = bertc_ag_result(g, nd, shape, &a, 1);
    int64_t outer, inner;
    split_around(&a->value, dim, &outer, &inner);
    int64_t in_row = a->value.shape[dim] * inner, piece = (end - start) * inner;
    for (int64_t o = 0; o < outer; o++)
        memcpy(out->value.data + o * piece, a->value.data + o * in_row + start * inner,
               sizeof(float) * (size_t)piece);
    Node *node = bertc_ag_record(g, OP_SLICE, out, &a, 1);
    if (node)
        node->attr.slice = (SliceAttrs){.dim = dim, .start = start};
    return out;
}

void bertc_slice_backward(Graph *g, Node *node)
{
    Var *a = node->in[0];
    if (!a->requires_grad)
        return;
    int dim = node->attr.slice.dim;
    int64_t start = node->attr.slice.start, outer, inner;
    split_around(&a->value, dim, &outer, &inner);
    int64_t in_row = a->value.shape[dim] * inner;
    int64_t piece = node->out->value.shape[dim] * inner;
    float *da = bertc_ag_grad(g, a);
    for (int64_t o = 0; o < outer; o++)
        bertc_kernel_add_inplace(da + o * in_row + start * inner, node->out->grad + o * piece, piece);
}

void bertc_ag_split(Graph *g, Var *a, int dim, int n, const int64_t *sizes, Var **out)
{
    dim = bertc_ag_norm_dim("split", dim, a->value.ndim);
    int64_t total = 0;
    for (int i = 0; i < n; i++)
        total += sizes[i];
    if (total != a->value.shape[dim])
        bertc_ag_shape_error("split", "the sizes do not add up to the split dim", a, NULL);
    int64_t start = 0;
    for (int i = 0; i < n; i++) {
        out[i] = bertc_ag_slice(g, a, dim, start, start + sizes[i]);
        start += sizes[i];
    }
}
