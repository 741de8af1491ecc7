/* autograd/ops_layers.c — dropout and conv1d. */
#include "autograd/ops_internal.h"

#include <string.h>

/* Inverted dropout. In training each element survives with probability 1-p
 * (one uniform draw from g->rng per element, in order) and is scaled by
 * 1/(1-p), so eval needs no rescaling; in eval it is the identity. */
Var *bertc_ag_dropout(Graph *g, Var *a, float p)
{
    if (p < 0.0f || p > 1.0f)
        bertc_fatal("dropout: p = %g is outside [0, 1]", (double)p);
    if (!g->training || p == 0.0f)
        return a;
    Var *out = bertc_ag_result(g, a->value.ndim, a->value.shape, &a, 1);
    uint8_t *keep = bertc_arena_alloc(g->step, (size_t)(a->value.numel ? a->value.numel : 1));
    float scale = p < 1.0f ? 1.0f / (1.0f - p) : 0.0f;
    /* keep[i] = bertc_rng_uniform(&g->rng) >= p for i = 0..n-1, in integers and on
     * every thread; then the generator moves on by the n draws it made. */
    int64_t n = a->value.numel;
    bertc_kernel_dropout(a->value.data, out->value.data, keep, n, g->rng.state,
                   bertc_rng_uniform_threshold((double)p), scale);
    g->rng.state += (uint64_t)n * RNG_GAMMA;
    Node *node = bertc_ag_record(g, OP_DROPOUT, out, &a, 1);
    if (node)
        node->attr.dropout = (DropoutAttrs){.keep = keep, .scale = scale};
    return out;
}

void bertc_dropout_backward(Graph *g, Node *node)
{
    Var *a = node->in[0];
    if (!a->requires_grad)
        return;
    const uint8_t *keep = node->attr.dropout.keep;
    float scale = node->attr.dropout.scale, *da = bertc_ag_grad(g, a);
    bertc_kernel_dropout_backward(keep, node->out->grad, scale, da, a->value.numel);
}

/* conv1d as im2col + GEMM. With padding P = (k-1)/2 and Lout = L + 2P - k + 1:
 *   cols[b] (Cin*k, Lout):  cols[b][c*k + t][l] = x[b][c][l + t - P]  (0 outside)
 *   out[b]  (Cout, Lout) = w (Cout, Cin*k) . cols[b] + bias[:, None]
 * The columns are kept for the backward (they are dW's right operand). */
typedef struct ConvDims {
    int64_t B, Cin, L, Cout, k, P, Lout;
} ConvDims;

static ConvDims conv_dims(Var *x, Var *w)
{
    if (x->value.ndim != 3 || w->value.ndim != 3 || x->value.shape[1] != w->value.shape[1])
        bertc_ag_shape_error("conv1d", "x must be (B, Cin, L) and weight (Cout, Cin, k)", x, w);
    ConvDims d;
    d.B = x->value.shape[0];
    d.Cin = x->value.shape[1];
    d.L = x->value.shape[2];
    d.Cout = w->value.shape[0];
    d.k = w->value.shape[2];
    d.P = (d.k - 1) / 2;
    d.Lout = d.L + 2 * d.P - d.k + 1;
    if (d.Lout < 1)
        bertc_ag_shape_error("conv1d", "the kernel is longer than the padded input", x, w);
    return d;
}

static void im2col(const ConvDims *d, const float *x, float *cols)
{
    for (int64_t c = 0; c < d->Cin; c++)
        for (int64_t t = 0; t < d->k; t++) {
            float *row = cols + (c * d->k + t) * d->Lout;
            for (int64_t l = 0; l < d->Lout; l++) {
                int64_t src = l + t - d->P;
                row[l] = src >= 0 && src < d->L ? x[c * d->L + src] : 0.0f;
            }
        }
}

/* The adjoint of im2col: every column entry sends its gradient back to the
 * input position it was copied from. */
static void col2im_add(const ConvDims *d, const float *dcols, float *dx)
{
    for (int64_t c = 0; c < d->Cin; c++)
        for (int64_t t = 0; t < d->k; t++) {
            const float *row = dcols + (c * d->k + t) * d->Lout;
            for (int64_t l = 0; l < d->Lout; l++) {
                int64_t src = l + t - d->P;
                if (src >= 0 && src < d->L)
                    dx[c * d->L + src] += row[l];
            }
        }
}

Var *bertc_ag_conv1d(Graph *g, Var *x, Var *w, Var *bias)
{
    ConvDims d = conv_dims(x, w);
    if (bias && (bias->value.ndim != 1 || bias->value.shape[0] != d.Cout))
        bertc_ag_shape_error("conv1d", "bias must be (Cout)", bias, w);
    int64_t shape[3] = {d.B, d.Cout, d.Lout}, ck = d.Cin * d.k;
    Var *in[3] = {x, w, bias};
    Var *out = bertc_ag_result(g, 3, shape, in, bias ? 3 : 2);
    float *cols = bertc_arena_alloc(g->step, sizeof(float) * (size_t)(d.B * ck * d.Lout));
    for (int64_t b = 0; b < d.B; b++) {
        float *cb = cols + b * ck * d.Lout, *ob = out->value.data + b * d.Cout * d.Lout;
        im2col(&d, x->value.data + b * d.Cin * d.L, cb);
        bertc_gemm(false, false, d.Cout, d.Lout, ck, 1.0f, w->value.data, ck, cb, d.Lout, 0.0f, ob,
             d.Lout);
        for (int64_t o = 0; bias && o < d.Cout; o++)
            for (int64_t l = 0; l < d.Lout; l++)
                ob[o * d.Lout + l] += bias->value.data[o];
    }
    Node *node = bertc_ag_record(g, OP_CONV1D, out, in, bias ? 3 : 2);
    if (node)
        node->attr.conv1d.cols = cols;
    return out;
}

/* dw += dout[b] cols[b]^T;  dcols = w^T dout[b] then col2im into dx;
 * dbias += sum over b and l of dout. */
void bertc_conv1d_backward(Graph *g, Node *node)
{
    Var *x = node->in[0], *w = node->in[1], *bias = node->n_in > 2 ? node->in[2] : NULL;
    ConvDims d = conv_dims(x, w);
    int64_t ck = d.Cin * d.k;
    const float *cols = node->attr.conv1d.cols;
    float *dcols = x->requires_grad
                       ? bertc_arena_alloc(g->step, sizeof(float) * (size_t)(ck * d.Lout))
                       : NULL;
    for (int64_t b = 0; b < d.B; b++) {
        const float *dout = node->out->grad + b * d.Cout * d.Lout;
        if (w->requires_grad)
            bertc_gemm(false, true, d.Cout, ck, d.Lout, 1.0f, dout, d.Lout,
                 cols + b * ck * d.Lout, d.Lout, 1.0f, bertc_ag_grad(g, w), ck);
        if (x->requires_grad) {
            bertc_gemm(true, false, ck, d.Lout, d.Cout, 1.0f, w->value.data, ck, dout, d.Lout,
                 0.0f, dcols, d.Lout);
            col2im_add(&d, dcols, bertc_ag_grad(g, x) + b * d.Cin * d.L);
        }
        if (bias && bias->requires_grad) {
            float *db = bertc_ag_grad(g, bias);
            for (int64_t o = 0; o < d.Cout; o++)
                for (int64_t l = 0; l < d.Lout; l++)
                    db[o] += dout[o * d.Lout + l];
        }
    }
}
