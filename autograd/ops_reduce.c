/* autograd/ops_reduce.c — sum and mean over a dim (or all dims), softmax and
 * log_softmax over the last dim, and fused LayerNorm. */
#include "autograd/ops_internal.h"

#include <string.h>

/* The shape after reducing `dim` (AG_ALL_DIMS: a scalar of shape []). */
static int reduced_shape(const Tensor *t, int dim, bool keepdim, int64_t *shape)
{
    if (dim == AG_ALL_DIMS)
        return 0;
    int nd = 0;
    for (int d = 0; d < t->ndim; d++) {
        if (d != dim)
            shape[nd++] = t->shape[d];
        else if (keepdim)
            shape[nd++] = 1;
    }
    return nd;
}

/* View `a` as (outer, n, inner) around the reduced dim; sums go in double. */
static Var *reduce(Graph *g, OpId op, Var *a, int dim, bool keepdim)
{
    const char *name = bertc_ag_op_table[op].name;
    if (dim != AG_ALL_DIMS)
        dim = bertc_ag_norm_dim(name, dim, a->value.ndim);
    int64_t shape[TENSOR_MAX_DIMS];
    int nd = reduced_shape(&a->value, dim, keepdim, shape);
    Var *out = bertc_ag_result(g, nd, shape, &a, 1);
    int64_t outer = 1, n = a->value.numel, inner = 1;
    if (dim != AG_ALL_DIMS) {
        outer = bertc_shape_numel(dim, a->value.shape);
        n = a->value.shape[dim];
        inner = bertc_shape_numel(a->value.ndim - dim - 1, a->value.shape + dim + 1);
    }
    double scale = op == OP_MEAN ? 1.0 / (double)(n ? n : 1) : 1.0;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            double acc = 0.0;
            for (int64_t k = 0; k < n; k++)
                acc += a->value.data[(o * n + k) * inner + i];
            out->value.data[o * inner + i] = (float)(acc * scale);
        }
    Node *node = bertc_ag_record(g, op, out, &a, 1);
    if (node)
        node->attr.reduce = (ReduceAttrs){.outer = outer, .n = n, .inner = inner,
                                          .scale = (float)scale};
    return out;
}

/* Every input element of a reduced group receives the group's gradient
 * (times 1/n for the mean): every element of da is stored once. */
static void reduce_backward(Graph *g, Node *node)
{
    Var *a = node->in[0];
    if (!a->requires_grad)
        return;
    const ReduceAttrs *at = &node->attr.reduce;
    int64_t outer = at->outer, n = at->n, inner = at->inner;
    bool accumulate;
    float scale = at->scale, *da = bertc_ag_grad_full(g, a, &accumulate);
    const float *dy = node->out->grad;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t k = 0; k < n; k++)
            for (int64_t i = 0; i < inner; i++) {
                float *d = &da[(o * n + k) * inner + i];
                *d = (accumulate ? *d : 0.0f) + scale * dy[o * inner + i];
            }
}

Var *bertc_ag_sum(Graph *g, Var *a, int dim, bool keepdim) { return reduce(g, OP_SUM, a, dim, keepdim); }
Var *bertc_ag_mean(Graph *g, Var *a, int dim, bool keepdim) { return reduce(g, OP_MEAN, a, dim, keepdim); }
void bertc_sum_backward(Graph *g, Node *node) { reduce_backward(g, node); }
void bertc_mean_backward(Graph *g, Node *node) { reduce_backward(g, node); }

static int64_t last_dim(const Var *a) { return a->value.ndim ? a->value.shape[a->value.ndim - 1] : 1; }

Var *bertc_ag_softmax(Graph *g, Var *a)
{
    int64_t n = last_dim(a);
    Var *out = bertc_ag_result(g, a->value.ndim, a->value.shape, &a, 1);
    bertc_kernel_softmax_rows(out->value.data, a->value.data, a->value.numel / (n ? n : 1), n);
    bertc_ag_record(g, OP_SOFTMAX, out, &a, 1);
    return out;
}

void bertc_softmax_backward(Graph *g, Node *node)
{
    Var *a = node->in[0];
    int64_t n = last_dim(a);
    if (!a->requires_grad)
        return;
    bool accumulate;
    float *dx = bertc_ag_grad_full(g, a, &accumulate);
    bertc_kernel_softmax_rows_backward(dx, node->out->value.data, node->out->grad,
                                 a->value.numel / (n ? n : 1), n, accumulate);
}

Var *bertc_ag_log_softmax(Graph *g, Var *a)
{
    int64_t n = last_dim(a);
    Var *out = bertc_ag_result(g, a->value.ndim, a->value.shape, &a, 1);
    bertc_kernel_log_softmax_rows(out->value.data, a->value.data, a->value.numel / (n ? n : 1), n);
    bertc_ag_record(g, OP_LOG_SOFTMAX, out, &a, 1);
    return out;
}

void bertc_log_softmax_backward(Graph *g, Node *node)
{
    Var *a = node->in[0];
    int64_t n = last_dim(a);
    if (!a->requires_grad)
        return;
    bool accumulate;
    float *dx = bertc_ag_grad_full(g, a, &accumulate);
    bertc_kernel_log_softmax_rows_backward(dx, node->out->value.data, node->out->grad,
                                     a->value.numel / (n ? n : 1), n, accumulate);
}

/* LayerNorm over the last dim (H). The per-row mean and 1/std are saved for
 * the backward, which is fused into one kernel (tensor/kernels.c). */
Var *bertc_ag_layernorm(Graph *g, Var *x, Var *gamma, Var *beta, float eps)
{
    int64_t H = last_dim(x), rows = x->value.numel / (H ? H : 1);
    if ((gamma && gamma->value.numel != H) || (beta && beta->value.numel != H))
        bertc_ag_shape_error("layernorm", "gamma/beta must have the size of the last dim", x,
                       gamma ? gamma : beta);
    Var *in[3] = {x, gamma, beta};
    Var *out = bertc_ag_result(g, x->value.ndim, x->value.shape, in, 3);
    float *mean = bertc_arena_alloc(g->step, sizeof(float) * (size_t)(rows ? rows : 1));
    float *rstd = bertc_arena_alloc(g->step, sizeof(float) * (size_t)(rows ? rows : 1));
    bertc_kernel_layernorm_rows(out->value.data, mean, rstd, x->value.data,
                          gamma ? gamma->value.data : NULL, beta ? beta->value.data : NULL,
                          rows, H, eps);
    Node *node = bertc_ag_record(g, OP_LAYERNORM, out, in, 3);
    if (node)
        node->attr.layernorm = (LayerNormAttrs){.mean = mean, .rstd = rstd};
    return out;
}

/* dgamma and dbeta sum over the rows and always accumulate; dx is stored
 * whole, so a new one is written (fetched last, in case x is also gamma). */
void bertc_layernorm_backward(Graph *g, Node *node)
{
    Var *x = node->in[0], *gamma = node->in[1], *beta = node->in[2];
    int64_t H = last_dim(x), rows = x->value.numel / (H ? H : 1);
    float *dgamma = gamma && gamma->requires_grad ? bertc_ag_grad(g, gamma) : NULL;
    float *dbeta = beta && beta->requires_grad ? bertc_ag_grad(g, beta) : NULL;
    bool dx_accumulate = true;
    float *dx = x->requires_grad ? bertc_ag_grad_full(g, x, &dx_accumulate) : NULL;
    bertc_kernel_layernorm_rows_backward(dx, dgamma, dbeta, node->out->grad, x->value.data,
                                   node->attr.layernorm.mean, node->attr.layernorm.rstd,
                                   gamma ? gamma->value.data : NULL, rows, H, dx_accumulate);
}
