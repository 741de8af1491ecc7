/* autograd/ops_elementwise.c — add, sub, mul, div with broadcasting; scale.
 *
 * Broadcasting (NumPy/PyTorch rules): out has the broadcast shape of a and b;
 * an input dimension of size 1 is read with stride 0. In the backward, the
 * same stride-0 reads become sums: every output element that read a[i] sends
 * its gradient back to a[i], which is exactly "sum over the broadcast dims". */
#include "autograd/ops_internal.h"

typedef enum { BIN_ADD, BIN_SUB, BIN_MUL, BIN_DIV } BinaryKind;

static const OpId binary_op_ids[] = {OP_ADD, OP_SUB, OP_MUL, OP_DIV};
static const char *const binary_names[] = {"add", "sub", "mul", "div"};

/* Strides of a and b over the output shape, so that out[row, j] reads
 * a[a_off + j * a_inner] and b[b_off + j * b_inner]. */
typedef struct Broadcast {
    int ndim;
    int64_t shape[TENSOR_MAX_DIMS];
    int64_t a_stride[TENSOR_MAX_DIMS], b_stride[TENSOR_MAX_DIMS];
    int64_t rows, n;     /* out viewed as (rows, n), n = last dim */
} Broadcast;

static Broadcast broadcast_plan(const Tensor *a, const Tensor *b, const Tensor *out)
{
    Broadcast bc;
    bc.ndim = out->ndim;
    for (int i = 0; i < out->ndim; i++)
        bc.shape[i] = out->shape[i];
    bertc_shape_broadcast_strides(a->ndim, a->shape, out->ndim, bc.a_stride);
    bertc_shape_broadcast_strides(b->ndim, b->shape, out->ndim, bc.b_stride);
    bc.n = out->ndim ? out->shape[out->ndim - 1] : 1;
    bc.rows = bc.n ? out->numel / bc.n : 0;
    return bc;
}

/* Offsets of row `row` (a flat index over all dims but the last) in a and b. */
static void broadcast_row(const Broadcast *bc, int64_t row, int64_t *a_off, int64_t *b_off)
{
    int64_t oa = 0, ob = 0;
    for (int d = bc->ndim - 2; d >= 0; d--) {
        int64_t i = row % bc->shape[d];
        row /= bc->shape[d];
        oa += i * bc->a_stride[d];
        ob += i * bc->b_stride[d];
    }
    *a_off = oa;
    *b_off = ob;
}

static int64_t inner_stride(const int64_t *strides, int ndim)
{
    return ndim ? strides[ndim - 1] : 0;
}

static Var *binary(Graph *g, BinaryKind kind, Var *a, Var *b)
{
    int ndim;
    int64_t shape[TENSOR_MAX_DIMS];
    if (!bertc_shape_broadcast(a->value.ndim, a->value.shape, b->value.ndim, b->value.shape,
                         &ndim, shape))
        bertc_ag_shape_error(binary_names[kind], "shapes do not broadcast", a, b);
    Var *in[2] = {a, b};
    Var *out = bertc_ag_result(g, ndim, shape, in, 2);
    Broadcast bc = broadcast_plan(&a->value, &b->value, &out->value);
    int64_t sa = inner_stride(bc.a_stride, ndim), sb = inner_stride(bc.b_stride, ndim);
    const float *x = a->value.data, *y = b->value.data;
    for (int64_t r = 0; r < bc.rows; r++) {
        int64_t oa, ob;
        broadcast_row(&bc, r, &oa, &ob);
        float *o = out->value.data + r * bc.n;
        for (int64_t j = 0; j < bc.n; j++) {
            float u = x[oa + j * sa], v = y[ob + j * sb];
            switch (kind) {
            case BIN_ADD: o[j] = u + v; break;
            case BIN_SUB: o[j] = u - v; break;
            case BIN_MUL: o[j] = u * v; break;
            case BIN_DIV: o[j] = u / v; break;
            }
        }
    }
    bertc_ag_record(g, binary_op_ids[kind], out, in, 2);
    return out;
}

/* The gradient buffer of an input x of a binary op with output `out`. An input
 * of out's size is read once per output element, so its gradient is stored
 * whole (bertc_ag_grad_full); a broadcast one sums over the broadcast dims and must
 * start from zeros (bertc_ag_grad), so it always accumulates. */
static float *binary_grad(Graph *g, Var *x, const Var *out, bool *accumulate)
{
    if (!x->requires_grad)
        return NULL;
    if (x->value.numel == out->value.numel)
        return bertc_ag_grad_full(g, x, accumulate);
    *accumulate = true;
    return bertc_ag_grad(g, x);
}

/* a + b and a - b hand dy to a unchanged: an a of out's size without a
 * gradient yet takes dy itself as its gradient (bertc_ag_grad_share), no copy.
 * Not when a is also b, whose share must then be added to it. */
static bool binary_share_a(BinaryKind kind, Var *a, const Var *b, Var *out)
{
    return (kind == BIN_ADD || kind == BIN_SUB) && a != b && a->requires_grad &&
           a->value.numel == out->value.numel && bertc_ag_grad_share(a, out->grad);
}

/* d(a+b) = (dy, dy); d(a-b) = (dy, -dy); d(ab) = (dy b, dy a);
 * d(a/b) = (dy / b, -dy a / b^2). Gradients of broadcast inputs are summed by
 * accumulating through their stride-0 offsets. When a is b (x * x), a's
 * gradient is stored first and b's then adds to it, element by element. */
static void binary_backward(Graph *g, Node *node, BinaryKind kind)
{
    Var *a = node->in[0], *b = node->in[1], *out = node->out;
    bool acc_a, acc_b;
    float *da = binary_share_a(kind, a, b, out) ? NULL : binary_grad(g, a, out, &acc_a);
    float *db = binary_grad(g, b, out, &acc_b);
    if (!da && !db)
        return;
    Broadcast bc = broadcast_plan(&a->value, &b->value, &out->value);
    int64_t sa = inner_stride(bc.a_stride, bc.ndim), sb = inner_stride(bc.b_stride, bc.ndim);
    const float *x = a->value.data, *y = b->value.data, *dy = out->grad;
    for (int64_t r = 0; r < bc.rows; r++) {
        int64_t oa, ob;
        broadcast_row(&bc, r, &oa, &ob);
        const float *gr = dy + r * bc.n;
        for (int64_t j = 0; j < bc.n; j++) {
            int64_t ia = oa + j * sa, ib = ob + j * sb;
            float gj = gr[j], ga = 0.0f, gb = 0.0f;   /* this element's share of da, db */
            switch (kind) {
            case BIN_ADD: ga = gj; gb = gj; break;
            case BIN_SUB: ga = gj; gb = -gj; break;
            case BIN_MUL: ga = gj * y[ib]; gb = gj * x[ia]; break;
            case BIN_DIV: ga = gj / y[ib]; gb = -(gj * x[ia] / (y[ib] * y[ib])); break;
            }
            if (da)
                da[ia] = (acc_a ? da[ia] : 0.0f) + ga;
            if (db)
                db[ib] = (acc_b ? db[ib] : 0.0f) + gb;
        }
    }
}

Var *bertc_ag_add(Graph *g, Var *a, Var *b) { return binary(g, BIN_ADD, a, b); }
Var *bertc_ag_sub(Graph *g, Var *a, Var *b) { return binary(g, BIN_SUB, a, b); }
Var *bertc_ag_mul(Graph *g, Var *a, Var *b) { return binary(g, BIN_MUL, a, b); }
Var *bertc_ag_div(Graph *g, Var *a, Var *b) { return binary(g, BIN_DIV, a, b); }

void bertc_add_backward(Graph *g, Node *node) { binary_backward(g, node, BIN_ADD); }
void bertc_sub_backward(Graph *g, Node *node) { binary_backward(g, node, BIN_SUB); }
void bertc_mul_backward(Graph *g, Node *node) { binary_backward(g, node, BIN_MUL); }
void bertc_div_backward(Graph *g, Node *node) { binary_backward(g, node, BIN_DIV); }

/* y = s * a;  da += s * dy */
Var *bertc_ag_scale(Graph *g, Var *a, float s)
{
    Var *out = bertc_ag_result(g, a->value.ndim, a->value.shape, &a, 1);
    for (int64_t i = 0; i < a->value.numel; i++)
        out->value.data[i] = s * a->value.data[i];
    Node *node = bertc_ag_record(g, OP_SCALE, out, &a, 1);
    if (node)
        node->attr.scale.s = s;
    return out;
}

void bertc_scale_backward(Graph *g, Node *node)
{
    Var *a = node->in[0];
    if (!a->requires_grad)
        return;
    bool accumulate;
    float *da = bertc_ag_grad_full(g, a, &accumulate), s = node->attr.scale.s;
    const float *dy = node->out->grad;
    for (int64_t i = 0; i < a->value.numel; i++)
        da[i] = (accumulate ? da[i] : 0.0f) + s * dy[i];
}
