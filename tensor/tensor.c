/* tensor/tensor.c — shapes, broadcasting and tensor construction. */
#include "tensor/tensor.h"
#include "tensor/format_internal.h"

#include <stdio.h>
#include <string.h>

int64_t bertc_shape_numel(int ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int i = 0; i < ndim; i++)
        n *= shape[i];
    return n;
}

bool bertc_shape_equal(int ndim_a, const int64_t *a, int ndim_b, const int64_t *b)
{
    if (ndim_a != ndim_b)
        return false;
    for (int i = 0; i < ndim_a; i++)
        if (a[i] != b[i])
            return false;
    return true;
}

char *bertc_shape_str(char *buf, size_t len, int ndim, const int64_t *shape)
{
    size_t pos = 0;
    pos += (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < ndim && pos < len; i++)
        pos += (size_t)snprintf(buf + pos, len - pos, i ? ", %lld" : "%lld",
                                (long long)shape[i]);
    if (pos < len)
        snprintf(buf + pos, len - pos, "]");
    return buf;
}

char *bertc_index_str(char *buf, size_t len, int ndim, const int64_t *shape, int64_t k)
{
    int64_t idx[TENSOR_MAX_DIMS];
    for (int d = ndim - 1; d >= 0; d--) {   /* the last dimension varies fastest */
        idx[d] = shape[d] ? k % shape[d] : 0;
        k = shape[d] ? k / shape[d] : 0;
    }
    return bertc_shape_str(buf, len, ndim, idx);
}

/* Broadcasting aligns the shapes at their last dimension; a missing or size-1
 * dimension stretches to match the other. */
bool bertc_shape_broadcast(int ndim_a, const int64_t *a, int ndim_b, const int64_t *b,
                     int *ndim_out, int64_t *out)
{
    int n = ndim_a > ndim_b ? ndim_a : ndim_b;
    for (int i = 0; i < n; i++) {
        int ia = ndim_a - n + i, ib = ndim_b - n + i;
        int64_t da = ia >= 0 ? a[ia] : 1;
        int64_t db = ib >= 0 ? b[ib] : 1;
        if (da != db && da != 1 && db != 1)
            return false;
        out[i] = da == 1 ? db : da;
    }
    *ndim_out = n;
    return true;
}

void bertc_shape_broadcast_strides(int ndim, const int64_t *shape, int out_ndim,
                             int64_t *strides)
{
    int64_t stride = 1;
    for (int i = out_ndim - 1; i >= 0; i--) {
        int src = ndim - out_ndim + i;
        int64_t d = src >= 0 ? shape[src] : 1;
        strides[i] = d == 1 ? 0 : stride; /* a size-1 dim repeats its one entry */
        stride *= d;
    }
}

static void check_shape(int ndim, const int64_t *shape)
{
    if (ndim < 0 || ndim > TENSOR_MAX_DIMS)
        bertc_fatal("tensor: %d dimensions (at most %d)", ndim, TENSOR_MAX_DIMS);
    for (int i = 0; i < ndim; i++)
        if (shape[i] < 0) {
            char s[SHAPE_STR_LEN];
            bertc_fatal("tensor: negative dimension in shape %s",
                        bertc_shape_str(s, sizeof s, ndim, shape));
        }
    /* the element count, and its bytes as float64 (the widest element), must
     * fit int64: bertc_shape_numel multiplies without checking (a product that
     * wraps would allocate a small buffer for a huge shape). A shape with a
     * 0 anywhere is empty, whatever its other dimensions. */
    for (int i = 0; i < ndim; i++)
        if (shape[i] == 0)
            return;
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) {
        if (n > INT64_MAX / 8 / shape[i]) {
            char s[SHAPE_STR_LEN];
            bertc_fatal("tensor: the element count of shape %s overflows int64",
                        bertc_shape_str(s, sizeof s, ndim, shape));
        }
        n *= shape[i];
    }
}

Tensor bertc_tensor_view(float *data, int ndim, const int64_t *shape)
{
    check_shape(ndim, shape);
    Tensor t;
    memset(&t, 0, sizeof t);
    t.data = data;
    t.ndim = ndim;
    for (int i = 0; i < ndim; i++)
        t.shape[i] = shape[i];
    t.numel = bertc_shape_numel(ndim, shape);
    return t;
}

Tensor bertc_tensor_empty(Arena *a, int ndim, const int64_t *shape)
{
    Tensor t = bertc_tensor_view(NULL, ndim, shape);
    t.data = bertc_arena_alloc(a, (size_t)t.numel * sizeof(float));
    return t;
}

Tensor bertc_tensor_new(Arena *a, int ndim, const int64_t *shape)
{
    Tensor t = bertc_tensor_view(NULL, ndim, shape);
    t.data = bertc_arena_calloc(a, (size_t)t.numel, sizeof(float));
    return t;
}

ITensor bertc_itensor_view(int32_t *data, int ndim, const int64_t *shape)
{
    check_shape(ndim, shape);
    ITensor t;
    memset(&t, 0, sizeof t);
    t.data = data;
    t.ndim = ndim;
    for (int i = 0; i < ndim; i++)
        t.shape[i] = shape[i];
    t.numel = bertc_shape_numel(ndim, shape);
    return t;
}

ITensor bertc_itensor_new(Arena *a, int ndim, const int64_t *shape)
{
    ITensor t = bertc_itensor_view(NULL, ndim, shape);
    t.data = bertc_arena_calloc(a, (size_t)t.numel, sizeof(int32_t));
    return t;
}

bool bertc_tensor_same_shape(const Tensor *a, const Tensor *b)
{
    return bertc_shape_equal(a->ndim, a->shape, b->ndim, b->shape);
}
