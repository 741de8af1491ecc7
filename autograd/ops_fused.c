/* autograd/ops_fused.c — two pairs of BERT-layer ops done in one pass
 * (SPEC §6.1, zoo/bert.c layer_forward):
 *
 *   add_layernorm(a, b) = LayerNorm(a + b)    the residual and its LayerNorm
 *   bias_act(h, bias)   = act(h + bias)       the intermediate Dense's bias and
 *                                             its activation (h = x W^T, no bias)
 *
 * Each works one row (or row segment) at a time, so the row is still in L1
 * when its second step reads it, and it calls the same row kernels as the
 * unfused ops on the same float values: the results are those of
 * ag_layernorm(ag_add(a, b)) and act(ag_linear(x, W, bias)) to the bit, up
 * to the scalar/SIMD split at the end of a row of odd length. */
#include "autograd/ops_internal.h"

#include <string.h>

/* Elements below which a fused op runs on the caller, as the row kernels do
 * (tensor/kernels_dispatch.c PARALLEL_MIN). */
#define FUSED_PARALLEL_MIN 32768

static int64_t last_dim(const Var *a) { return a->value.ndim ? a->value.shape[a->value.ndim - 1] : 1; }

static void run_rows(int64_t units, int64_t elements,
                     void (*fn)(void *ctx, int64_t begin, int64_t end), void *ctx)
{
    if (elements < FUSED_PARALLEL_MIN)
        fn(ctx, 0, units);
    else
        parallel_for(units, fn, ctx);
}

/* ------------------------------------------------------------------------ */
/* add_layernorm: y = LayerNorm(a + b)                                       */
/* ------------------------------------------------------------------------ */

/* One call's rows: a, b, s, y are (rows, H); gamma, beta (H) or NULL; mean,
 * rstd (rows) or NULL. s may be y (inference: the sum is normalised in place). */
typedef struct AddLnJob {
    float *s, *y, *mean, *rstd;
    const float *a, *b, *gamma, *beta;
    int64_t H;
    float eps;
} AddLnJob;

/* Row by row: s = a + b, then the LayerNorm kernel on that row while it is hot. */
static void add_layernorm_rows(void *ctx, int64_t begin, int64_t end)
{
    const AddLnJob *j = ctx;
    int64_t H = j->H;
    for (int64_t r = begin; r < end; r++) {
        const float *a = j->a + r * H, *b = j->b + r * H;
        float *s = j->s + r * H;
        for (int64_t i = 0; i < H; i++)
            s[i] = a[i] + b[i];
        kernel_layernorm_rows(j->y + r * H, j->mean ? j->mean + r : NULL,
                              j->rstd ? j->rstd + r : NULL, s, j->gamma, j->beta, 1, H, j->eps);
    }
}

/* a, b (..., H) of one shape; gamma, beta (H) or NULL -> (..., H). The backward
 * keeps s = a + b (..., H) and the row statistics, as ag_layernorm keeps its
 * input; without a tape the sum is written into the output and normalised there. */
Var *ag_add_layernorm(Graph *g, Var *a, Var *b, Var *gamma, Var *beta, float eps)
{
    if (!shape_equal(a->value.ndim, a->value.shape, b->value.ndim, b->value.shape))
        ag_shape_error("add_layernorm", "a and b must have the same shape", a, b);
    int64_t H = last_dim(a), rows = a->value.numel / (H ? H : 1);
    if ((gamma && gamma->value.numel != H) || (beta && beta->value.numel != H))
        ag_shape_error("add_layernorm", "gamma/beta must have the size of the last dim", a,
                       gamma ? gamma : beta);
    Var *in[4] = {a, b, gamma, beta};
    Var *out = ag_result(g, a->value.ndim, a->value.shape, in, 4);
    AddLnJob j = {.y = out->value.data, .s = out->value.data, .a = a->value.data,
                  .b = b->value.data, .gamma = gamma ? gamma->value.data : NULL,
                  .beta = beta ? beta->value.data : NULL, .H = H, .eps = eps};
    if (out->requires_grad) {
        size_t n_rows = (size_t)(rows ? rows : 1);
        j.s = arena_alloc(g->step, sizeof(float) * (size_t)(a->value.numel ? a->value.numel : 1));
        j.mean = arena_alloc(g->step, 2 * sizeof(float) * n_rows);
        j.rstd = j.mean + n_rows;
    }
    run_rows(rows, a->value.numel, add_layernorm_rows, &j);
    Node *node = ag_record(g, OP_ADD_LAYERNORM, out, in, 4);
    if (node) {
        node->saved[0] = j.s;
        node->saved[1] = j.mean;   /* mean (rows) then rstd (rows) */
    }
    return out;
}

/* With ds the LayerNorm gradient of s = a + b (kernel_layernorm_rows_backward):
 *   da += ds,  db += ds,  dgamma += sum_rows dy xhat,  dbeta += sum_rows dy.
 * ds is one row of scratch, added to both inputs before the next row. One
 * thread, as ag_layernorm's backward: dgamma and dbeta sum over the rows. */
void add_layernorm_backward(Graph *g, Node *node)
{
    Var *a = node->in[0], *b = node->in[1], *gamma = node->in[2], *beta = node->in[3];
    int64_t H = last_dim(a), rows = a->value.numel / (H ? H : 1);
    const float *s = node->saved[0], *mean = node->saved[1], *rstd = mean + (rows ? rows : 1);
    const float *dy = node->out->grad;
    float *da = a->requires_grad ? ag_grad(g, a) : NULL;
    float *db = b->requires_grad ? ag_grad(g, b) : NULL;
    float *dgamma = gamma && gamma->requires_grad ? ag_grad(g, gamma) : NULL;
    float *dbeta = beta && beta->requires_grad ? ag_grad(g, beta) : NULL;
    ArenaMark mark = arena_mark(g->step);
    float *ds = da || db ? arena_alloc(g->step, sizeof(float) * (size_t)(H ? H : 1)) : NULL;
    for (int64_t r = 0; r < rows; r++) {
        if (ds)
            memset(ds, 0, sizeof(float) * (size_t)H);
        kernel_layernorm_rows_backward(ds, dgamma, dbeta, dy + r * H, s + r * H, mean + r,
                                       rstd + r, gamma ? gamma->value.data : NULL, 1, H);
        if (da)
            kernel_add_inplace(da + r * H, ds, H);
        if (db)
            kernel_add_inplace(db + r * H, ds, H);
    }
    arena_release(g->step, mark);
}

/* ------------------------------------------------------------------------ */
/* bias_act: y = act(h + bias)                                               */
/* ------------------------------------------------------------------------ */

/* The backward works on column blocks of BIAS_ACT_BLOCK (a multiple of every
 * SIMD width): each block sums its own dbias columns over the rows in row
 * order, so blocks run on any thread and the sum is the same bits. */
#define BIAS_ACT_BLOCK 512

/* h, y, dh, dy are (rows, n); bias, dbias (n). */
typedef struct BiasActJob {
    AgAct act;
    float *y, *dh, *dbias;
    const float *h, *bias, *dy;
    int64_t rows, n;
} BiasActJob;

/* y = act(x) for n floats; y may alias x. */
static void act_forward(AgAct act, float *y, const float *x, int64_t n)
{
    switch (act) {
    case AG_ACT_GELU: kernel_gelu(y, x, n); break;
    case AG_ACT_GELU_TANH: kernel_gelu_tanh(y, x, n); break;
    case AG_ACT_RELU:
        for (int64_t i = 0; i < n; i++)
            y[i] = x[i] > 0.0f ? x[i] : 0.0f;
        break;
    }
}

/* dx += dy act'(x) for n floats. ReLU' is 0 at x == 0, as PyTorch. */
static void act_backward(AgAct act, float *dx, const float *x, const float *dy, int64_t n)
{
    switch (act) {
    case AG_ACT_GELU: kernel_gelu_backward(dx, x, dy, n); break;
    case AG_ACT_GELU_TANH: kernel_gelu_tanh_backward(dx, x, dy, n); break;
    case AG_ACT_RELU:
        for (int64_t i = 0; i < n; i++)
            dx[i] += x[i] > 0.0f ? dy[i] : 0.0f;
        break;
    }
}

/* Row by row: y = h + bias, then the activation in place while y is hot. */
static void bias_act_rows(void *ctx, int64_t begin, int64_t end)
{
    const BiasActJob *j = ctx;
    int64_t n = j->n;
    for (int64_t r = begin; r < end; r++) {
        const float *h = j->h + r * n;
        float *y = j->y + r * n;
        for (int64_t i = 0; i < n; i++)
            y[i] = h[i] + j->bias[i];
        act_forward(j->act, y, y, n);
    }
}

/* h (..., n), bias (n) -> (..., n). The backward recomputes h + bias from h,
 * which the tape keeps anyway, so nothing extra is saved. */
Var *ag_bias_act(Graph *g, Var *h, Var *bias, AgAct act)
{
    int64_t n = last_dim(h);
    if (bias->value.ndim != 1 || bias->value.shape[0] != n)
        ag_shape_error("bias_act", "bias must be (n), n the last dim of h", h, bias);
    Var *in[2] = {h, bias};
    Var *out = ag_result(g, h->value.ndim, h->value.shape, in, 2);
    BiasActJob j = {.act = act, .y = out->value.data, .h = h->value.data,
                    .bias = bias->value.data, .rows = h->value.numel / (n ? n : 1), .n = n};
    run_rows(j.rows, h->value.numel, bias_act_rows, &j);
    Node *node = ag_record(g, OP_BIAS_ACT, out, in, 2);
    if (node)
        node->iattr[0] = act;
    return out;
}

/* Column blocks [begin, end): for each row, z = h + bias on the block's
 * columns, d = dy act'(z), then dh += d and dbias += d (rows in order). */
static void bias_act_backward_blocks(void *ctx, int64_t begin, int64_t end)
{
    const BiasActJob *j = ctx;
    float z[BIAS_ACT_BLOCK], d[BIAS_ACT_BLOCK];
    for (int64_t blk = begin; blk < end; blk++) {
        int64_t c0 = blk * BIAS_ACT_BLOCK;
        int64_t w = j->n - c0 < BIAS_ACT_BLOCK ? j->n - c0 : BIAS_ACT_BLOCK;
        for (int64_t r = 0; r < j->rows; r++) {
            int64_t off = r * j->n + c0;
            for (int64_t i = 0; i < w; i++)
                z[i] = j->h[off + i] + j->bias[c0 + i];
            memset(d, 0, sizeof(float) * (size_t)w);
            act_backward(j->act, d, z, j->dy + off, w);
            if (j->dh)
                kernel_add_inplace(j->dh + off, d, w);
            if (j->dbias)
                kernel_add_inplace(j->dbias + c0, d, w);
        }
    }
}

/* dh += dy act'(h + bias);  dbias += sum over rows of dy act'(h + bias):
 * the GELU derivative and linear_backward's bias sum in one pass. */
void bias_act_backward(Graph *g, Node *node)
{
    Var *h = node->in[0], *bias = node->in[1];
    int64_t n = last_dim(h);
    BiasActJob j = {.act = (AgAct)node->iattr[0], .h = h->value.data,
                    .bias = bias->value.data, .dy = node->out->grad,
                    .dh = h->requires_grad ? ag_grad(g, h) : NULL,
                    .dbias = bias->requires_grad ? ag_grad(g, bias) : NULL,
                    .rows = h->value.numel / (n ? n : 1), .n = n};
    run_rows((n + BIAS_ACT_BLOCK - 1) / BIAS_ACT_BLOCK, h->value.numel,
             bias_act_backward_blocks, &j);
}
