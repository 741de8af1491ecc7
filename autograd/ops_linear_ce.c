/* autograd/ops_linear_ce.c — the MLM decoder and its loss as one op:
 *
 *   loss = CE(x w^T + bias, target)       x (N, H), w (V, H), bias (V), target (N)
 *
 * the same value as ag_cross_entropy(ag_linear(x, w, bias), target) without
 * ever holding the (N, V) logits: for a 30522-word vocabulary they and their
 * gradient are most of a small model's training memory. Rows are taken a
 * chunk at a time, and only rows whose target is not ignore_index (they alone
 * reach the loss). For a chunk of R counted rows:
 *
 *   z  = x_c w^T + bias                       (R, V) scratch, reused by every chunk
 *   loss_i = logsumexp(z_i) - z_i[t_i]        summed in double
 *   dz = (softmax(z) - onehot(t)) / n         written over z, n = counted rows
 *   dx_c = dz w;  dw += dz^T x_c;  dbias += sum_rows dz
 *
 * The gradients are computed in the forward, while z is at hand, and kept
 * (dx (N, H), dw (V, H), dbias (V): the size of the inputs, not of the
 * logits); the backward only scales them by the upstream gradient. In
 * no_grad mode only the loss is computed. */
#include "autograd/ops_internal.h"

#include <math.h>
#include <string.h>

/* At most this many rows per chunk, the chunks of one call equal in size:
 * the scratch is at most LCE_CHUNK x V floats, and no thin last chunk makes
 * dw's rank-m update re-read all of dw for a few rows. */
#define LCE_CHUNK 256

typedef struct LceRows {
    float *z;             /* (R, V): logits in, dz out (when grad) */
    const int32_t *t;     /* (R) targets */
    double *loss;         /* (R) per-row loss */
    int64_t V;
    float inv_n;
    bool grad;
} LceRows;

/* One row: logsumexp with bertc_expf (the same bits on every target), the
 * exponentials summed in double; then, for the gradient, the softmax minus
 * the one-hot, divided by the number of counted rows. */
static void lce_rows(void *ctx, int64_t begin, int64_t end)
{
    const LceRows *c = ctx;
    for (int64_t r = begin; r < end; r++) {
        float *z = c->z + r * c->V, zt = z[c->t[r]], max = z[0];
        for (int64_t j = 1; j < c->V; j++)
            max = z[j] > max ? z[j] : max;
        for (int64_t j = 0; j < c->V; j++)
            z[j] -= max;
        bertc_expf_n(z, z, c->V);
        double sum = 0.0;
        for (int64_t j = 0; j < c->V; j++)
            sum += z[j];
        c->loss[r] = (double)max + log(sum) - (double)zt;
        if (!c->grad)
            continue;
        float scale = (float)(1.0 / sum) * c->inv_n;
        for (int64_t j = 0; j < c->V; j++)
            z[j] *= scale;
        z[c->t[r]] -= c->inv_n;
    }
}

static void check_shapes(Var *x, Var *w, Var *bias, const ITensor *target)
{
    const Tensor *X = &x->value, *W = &w->value;
    if (X->ndim != 2 || W->ndim != 2 || X->shape[1] != W->shape[1])
        ag_shape_error("linear_cross_entropy", "x (N, H) needs w (V, H)", x, w);
    if (bias && (bias->value.ndim != 1 || bias->value.shape[0] != W->shape[0]))
        ag_shape_error("linear_cross_entropy", "bias must be (V)", bias, w);
    if (target->ndim != 1 || target->shape[0] != X->shape[0]) {
        char s[SHAPE_STR_LEN], t[SHAPE_STR_LEN];
        bertc_fatal("linear_cross_entropy: x %s needs target (N), got %s",
                    shape_str(s, sizeof s, X->ndim, X->shape),
                    shape_str(t, sizeof t, target->ndim, target->shape));
    }
}

Var *ag_linear_cross_entropy(Graph *g, Var *x, Var *w, Var *bias, const ITensor *target,
                             int ignore_index)
{
    check_shapes(x, w, bias, target);
    int64_t N = x->value.shape[0], H = x->value.shape[1], V = w->value.shape[0];
    int32_t *rows = arena_alloc(g->step, sizeof(int32_t) * (size_t)(N ? N : 1));
    int64_t n = 0;
    for (int64_t i = 0; i < N; i++) {
        int32_t t = target->data[i];
        if (t == ignore_index)
            continue;
        if (t < 0 || t >= V)
            bertc_fatal("linear_cross_entropy: target %d at row %lld is outside [0, %lld)", t,
                        (long long)i, (long long)V);
        rows[n++] = (int32_t)i;
    }
    Var *in[3] = {x, w, bias};
    Var *out = ag_result(g, 0, NULL, in, bias ? 3 : 2);
    bool grad = out->requires_grad;
    /* Kept for the backward: dx (N, H), and dw (V, H) followed by dbias (V) in
     * one block. Everything allocated after the mark is scratch. */
    bool gw = grad && w->requires_grad, gb = grad && bias && bias->requires_grad;
    float *dx = grad && x->requires_grad ? arena_calloc(g->step, (size_t)(N * H), sizeof(float)) : NULL;
    float *dwb = gw || gb ? arena_calloc(g->step, (size_t)(V * (H + 1)), sizeof(float)) : NULL;
    float *dw = gw ? dwb : NULL, *db = gb ? dwb + V * H : NULL;
    ArenaMark mark = arena_mark(g->step);
    int64_t chunks = (n + LCE_CHUNK - 1) / LCE_CHUNK, R = chunks ? (n + chunks - 1) / chunks : 1;
    float *xc = arena_alloc(g->step, sizeof(float) * (size_t)(R * H));
    float *dxc = arena_alloc(g->step, sizeof(float) * (size_t)(R * H));
    int32_t *tc = arena_alloc(g->step, sizeof(int32_t) * (size_t)R);
    double *loss = arena_alloc(g->step, sizeof(double) * (size_t)R), total = 0.0;
    LceRows c = {arena_alloc(g->step, sizeof(float) * (size_t)(R * V)), tc, loss, V,
                 1.0f / (float)n, grad};
    for (int64_t r0 = 0; r0 < n; r0 += R) {
        int64_t m = n - r0 < R ? n - r0 : R;
        for (int64_t r = 0; r < m; r++) {
            memcpy(xc + r * H, x->value.data + (int64_t)rows[r0 + r] * H, sizeof(float) * (size_t)H);
            tc[r] = target->data[rows[r0 + r]];
        }
        gemm(false, true, m, V, H, 1.0f, xc, H, w->value.data, H, 0.0f, c.z, V);
        if (bias)
            for (int64_t r = 0; r < m; r++)
                kernel_add_inplace(c.z + r * V, bias->value.data, V);
        parallel_for(m, lce_rows, &c);
        for (int64_t r = 0; r < m; r++)
            total += loss[r];
        if (dx) {
            gemm(false, false, m, H, V, 1.0f, c.z, V, w->value.data, H, 0.0f, dxc, H);
            for (int64_t r = 0; r < m; r++)
                memcpy(dx + (int64_t)rows[r0 + r] * H, dxc + r * H, sizeof(float) * (size_t)H);
        }
        if (dw)
            gemm(true, false, V, H, m, 1.0f, c.z, V, xc, H, 1.0f, dw, H);
        for (int64_t r = 0; db && r < m; r++)
            kernel_add_inplace(db, c.z + r * V, V);
    }
    arena_release(g->step, mark);
    out->value.data[0] = (float)(total / (double)n);   /* no counted row: 0/0 = NaN, as CE */
    Node *node = ag_record(g, OP_LINEAR_CROSS_ENTROPY, out, in, bias ? 3 : 2);
    if (node) {
        node->saved[0] = dx;
        node->saved[1] = dwb;
    }
    return out;
}

/* The gradients were computed by the forward for an upstream gradient of 1:
 * scale them by dy and accumulate. */
void linear_cross_entropy_backward(Graph *g, Node *node)
{
    Var *x = node->in[0], *w = node->in[1], *bias = node->n_in > 2 ? node->in[2] : NULL;
    int64_t H = x->value.shape[1], V = w->value.shape[0];
    float dy = node->out->grad[0];
    const float *dx = node->saved[0], *dwb = node->saved[1];
    if (dx)
        kernel_axpy(ag_grad(g, x), dy, dx, x->value.numel);
    if (w->requires_grad)
        kernel_axpy(ag_grad(g, w), dy, dwb, V * H);
    if (bias && bias->requires_grad)
        kernel_axpy(ag_grad(g, bias), dy, dwb + V * H, V);
}
