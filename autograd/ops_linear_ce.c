/* autograd/ops_linear_ce.c — the MLM decoder and its loss as one op:
 *
 *   loss = CE(x w^T + bias, target)       x (N, H), w (V, H), bias (V), target (N)
 *
 * the same value as bertc_ag_cross_entropy(bertc_ag_linear(x, w, bias), target) without
 * ever holding the (N, V) logits: for a 30522-word vocabulary they and their
 * gradient are most of a small model's training memory. Rows are taken a
 * chunk at a time, and only rows whose target is not ignore_index (they alone
 * reach the loss). For a chunk of R counted rows, with n counted rows in all:
 *
 *   z  = x_c w^T + bias                       (R, V) scratch, reused by every chunk
 *   e  = exp(z - max_j z),  S = sum_j e       per row; e is written over z
 *   loss_i = max_j z_i + log(S_i) - z_i[t_i]  summed in double
 *   dz = (e / S - onehot(t)) / n = s e - onehot(t) / n,   s_i = 1 / (n S_i)
 *
 * dz itself is never written: its row scale s and its one-hot fold into
 * (R, H)-sized work around the two GEMMs that read e,
 *
 *   dx_c = dz w = s (e w) - w[t] / n                                  (R, H)
 *   [dw | dbias] += dz^T [x_c | 1]                                    (V, H+1)
 *                 = e^T (s [x_c | 1]) - onehot(t)^T [x_c | 1] / n
 *
 * (the bias is the weight of an input column of ones, so one GEMM gives
 * both). A row of z is thus passed over twice by the row code (bias add with
 * the max; exp with the sum) and read by the GEMMs, never zeroed or scaled.
 *
 * In mixed precision both gradient products read e in bf16: the row pass
 * writes bf16(e) once, beside e, and the products read that copy (as rows
 * for dx, transposed for dw) instead of each converting the (R, V) floats
 * again: the same bits, half the bytes read, for R x V bf16 more scratch.
 *
 * The gradients are computed in the forward, while e is at hand, and kept
 * (dx for the n counted rows, [dw | dbias]: the size of the inputs, not of
 * the logits); the backward only scales them by the upstream gradient. In
 * no_grad mode only the loss is computed. */
#include "autograd/ops_internal.h"

#include <math.h>
#include <string.h>

/* At most this many rows per chunk, the chunks of one call equal in size:
 * the scratch is at most LCE_CHUNK x V floats, and no thin last chunk makes
 * dw's rank-m update re-read all of dw for a few rows. */
#define LCE_CHUNK 256

/* What the backward needs: the gradients for an upstream gradient of 1. */
typedef struct LceGrads {
    const int32_t *rows;  /* (n) the counted rows of x */
    int64_t n;
    float *dx;            /* (n, H): the gradient of those rows, or NULL */
    float *dwb;           /* (V, Ha): [dw | dbias], Ha = H + 1 with a bias, else H; or NULL */
} LceGrads;

/* One call's inputs and one chunk's scratch. */
typedef struct Lce {
    const float *w, *bias;  /* (V, H), (V) or NULL */
    int64_t H, V, Ha;       /* Ha = H + 1 with a bias (the column of ones), else H */
    float inv_n;            /* 1 / n */
    bool bf16;              /* the graph's mixed precision (bertc_ag_set_bf16) */
    float *xa;              /* (R, Ha): [x_c | 1] */
    float *xs;              /* (R, Ha): s [x_c | 1] */
    float *z;               /* (R, V): logits in, e out */
    uint16_t *e16;          /* bf16: rows_pad(R) rows of bf16(e), e16_cols each, or NULL */
    int64_t e16_cols;       /* bertc_gemm_bf16_a_cols(V) */
    int32_t *t;             /* (R) targets */
    double *loss;           /* (R) per-row loss */
    float *s;               /* (R) per-row scale 1 / (n S) */
} Lce;

/* One row of z: the bias added in the max pass, then e = exp(z - max) and
 * S = sum e in one pass. bertc_expf (inside bertc_kernel_exp_sum) gives the same
 * bits on every target; S is summed in double, as a float sum of 30522
 * terms would lose digits of log(S), i.e. of the loss. */
static void lce_rows(void *ctx, int64_t begin, int64_t end)
{
    const Lce *c = ctx;
    for (int64_t r = begin; r < end; r++) {
        float *z = c->z + r * c->V;
        float max = bertc_kernel_add_max(z, c->bias, c->V), zt = z[c->t[r]];
        double sum = bertc_kernel_exp_sum(z, z, max, c->V);
        c->loss[r] = (double)max + log(sum) - (double)zt;
        c->s[r] = (float)(1.0 / sum) * c->inv_n;
        if (c->e16)
            bertc_bf16_convert_row(z, c->V, c->e16_cols, c->e16 + r * c->e16_cols);
    }
}

/* dx_c = s (e w) - w[t] / n for the chunk's m rows; dx is (m, H). */
static void chunk_dx(const Lce *c, int64_t m, float *dx)
{
    int64_t H = c->H;
    if (c->e16)
        bertc_gemm_bf16_rows(false, m, H, c->V, c->e16, c->e16_cols, c->w, H, 0.0f, dx, H);
    else
        bertc_ag_product(false, false, false, m, H, c->V, c->z, c->V, c->w, H, 0.0f, dx, H);
    for (int64_t r = 0; r < m; r++) {
        float *d = dx + r * H;
        const float *wt = c->w + (int64_t)c->t[r] * H;
        for (int64_t h = 0; h < H; h++)
            d[h] = c->s[r] * d[h] - c->inv_n * wt[h];
    }
}

/* [dw | dbias] = e^T (s [x_c | 1]) - onehot(t)^T [x_c | 1] / n + beta [dw | dbias]
 * for the chunk's m rows; dwb is (V, Ha). beta = 0 for the first chunk: dwb
 * needs no zeroing. */
static void chunk_dwb(const Lce *c, int64_t m, float beta, float *dwb)
{
    int64_t Ha = c->Ha;
    for (int64_t r = 0; r < m; r++)
        for (int64_t h = 0; h < Ha; h++)
            c->xs[r * Ha + h] = c->s[r] * c->xa[r * Ha + h];
    if (c->e16)
        bertc_gemm_bf16_rows_t(false, c->V, Ha, m, c->e16, c->e16_cols, c->xs, Ha, beta, dwb,
                               Ha);
    else
        bertc_ag_product(false, true, false, c->V, Ha, m, c->z, c->V, c->xs, Ha, beta, dwb, Ha);
    for (int64_t r = 0; r < m; r++)
        bertc_kernel_axpy(dwb + (int64_t)c->t[r] * Ha, -c->inv_n, c->xa + r * Ha, Ha);
}

static void check_shapes(Var *x, Var *w, Var *bias, const ITensor *target)
{
    const Tensor *X = &x->value, *W = &w->value;
    if (X->ndim != 2 || W->ndim != 2 || X->shape[1] != W->shape[1])
        bertc_ag_shape_error("linear_cross_entropy", "x (N, H) needs w (V, H)", x, w);
    if (bias && (bias->value.ndim != 1 || bias->value.shape[0] != W->shape[0]))
        bertc_ag_shape_error("linear_cross_entropy", "bias must be (V)", bias, w);
    if (target->ndim != 1 || target->shape[0] != X->shape[0]) {
        char s[SHAPE_STR_LEN], t[SHAPE_STR_LEN];
        bertc_fatal("linear_cross_entropy: x %s needs target (N), got %s",
                    bertc_shape_str(s, sizeof s, X->ndim, X->shape),
                    bertc_shape_str(t, sizeof t, target->ndim, target->shape));
    }
}

/* The rows whose target is not ignore_index, into rows (N); returns their
 * count n. */
static int64_t counted_rows(int32_t *rows, const ITensor *target, int ignore_index, int64_t V)
{
    int64_t n = 0;
    for (int64_t i = 0; i < target->shape[0]; i++) {
        int32_t t = target->data[i];
        if (t == ignore_index)
            continue;
        if (t < 0 || t >= V)
            bertc_fatal("linear_cross_entropy: target %d at row %lld is outside [0, %lld)", (int)t,
                        (long long)i, (long long)V);
        rows[n++] = (int32_t)i;
    }
    return n;
}

/* The chunk scratch for chunks of R rows; with grad in mixed precision,
 * also the bf16 copy of e that both gradient products read. */
static void alloc_scratch(Lce *c, Arena *a, int64_t R, bool grad)
{
    c->xa = bertc_arena_alloc(a, sizeof(float) * (size_t)(R * c->Ha));
    c->xs = bertc_arena_alloc(a, sizeof(float) * (size_t)(R * c->Ha));
    c->z = bertc_arena_alloc(a, sizeof(float) * (size_t)(R * c->V));
    c->e16 = NULL;
    if (c->bf16 && grad) {
        c->e16_cols = bertc_gemm_bf16_a_cols(c->V);
        c->e16 = bertc_arena_alloc(a, sizeof(uint16_t) *
                                          (size_t)(bertc_gemm_bf16_rows_pad(R) * c->e16_cols));
    }
    c->t = bertc_arena_alloc(a, sizeof(int32_t) * (size_t)R);
    c->loss = bertc_arena_alloc(a, sizeof(double) * (size_t)R);
    c->s = bertc_arena_alloc(a, sizeof(float) * (size_t)R);
}

/* The chunk of the m counted rows from the r0-th on: gathers [x_c | 1] and
 * t, computes e and the loss, then the gradients that k asks for. Returns
 * the chunk's summed loss. */
static double lce_chunk(Lce *c, const LceGrads *k, const Var *x, const ITensor *target,
                        int64_t r0, int64_t m)
{
    int64_t H = c->H, Ha = c->Ha;
    const int32_t *rows = k->rows + r0;
    for (int64_t r = 0; r < m; r++) {
        memcpy(c->xa + r * Ha, x->value.data + (int64_t)rows[r] * H, sizeof(float) * (size_t)H);
        if (Ha > H)
            c->xa[r * Ha + H] = 1.0f;
        c->t[r] = target->data[rows[r]];
    }
    bertc_ag_product(c->bf16, false, true, m, c->V, H, c->xa, Ha, c->w, H, 0.0f, c->z, c->V);
    bertc_parallel_for(m, lce_rows, c);
    if (c->e16)   /* the rows past m that the product's last row tile reads */
        memset(c->e16 + m * c->e16_cols, 0,
               sizeof(uint16_t) * (size_t)((bertc_gemm_bf16_rows_pad(m) - m) * c->e16_cols));
    double total = 0.0;
    for (int64_t r = 0; r < m; r++)
        total += c->loss[r];
    if (k->dx)
        chunk_dx(c, m, k->dx + r0 * H);
    if (k->dwb)
        chunk_dwb(c, m, r0 == 0 ? 0.0f : 1.0f, k->dwb);
    return total;
}

Var *bertc_ag_linear_cross_entropy(Graph *g, Var *x, Var *w, Var *bias, const ITensor *target,
                             int ignore_index)
{
    check_shapes(x, w, bias, target);
    int64_t N = x->value.shape[0], H = x->value.shape[1], V = w->value.shape[0];
    int32_t *rows = bertc_arena_alloc(g->step, sizeof(int32_t) * (size_t)(N ? N : 1));
    int64_t n = counted_rows(rows, target, ignore_index, V);
    Var *in[3] = {x, w, bias};
    Var *out = bertc_ag_result(g, 0, NULL, in, bias ? 3 : 2);
    bool grad = out->requires_grad && n > 0;
    Lce c = {.w = w->value.data, .bias = bias ? bias->value.data : NULL, .H = H, .V = V,
             .Ha = bias ? H + 1 : H, .inv_n = 1.0f / (float)n, .bf16 = g->bf16};
    /* Kept for the backward, each written in full by the chunks (no zeroing):
     * dx (n, H) and [dw | dbias] (V, Ha). Everything after the mark is scratch. */
    LceGrads *k = bertc_arena_alloc(g->step, sizeof *k);
    bool gwb = grad && (w->requires_grad || (bias && bias->requires_grad));
    bool gx = grad && x->requires_grad;
    *k = (LceGrads){.rows = rows, .n = n,
                    .dx = gx ? bertc_arena_alloc(g->step, sizeof(float) * (size_t)(n * H)) : NULL,
                    .dwb = gwb ? bertc_arena_alloc(g->step, sizeof(float) * (size_t)(V * c.Ha)) : NULL};
    ArenaMark mark = bertc_arena_mark(g->step);
    int64_t chunks = (n + LCE_CHUNK - 1) / LCE_CHUNK, R = chunks ? (n + chunks - 1) / chunks : 1;
    alloc_scratch(&c, g->step, R, grad);
    double total = 0.0;
    for (int64_t r0 = 0; r0 < n; r0 += R)
        total += lce_chunk(&c, k, x, target, r0, n - r0 < R ? n - r0 : R);
    bertc_arena_release(g->step, mark);
    out->value.data[0] = (float)(total / (double)n);   /* no counted row: 0/0 = NaN, as CE */
    Node *node = bertc_ag_record(g, OP_LINEAR_CROSS_ENTROPY, out, in, bias ? 3 : 2);
    if (node)
        node->attr.linear_ce.grads = k;
    return out;
}

/* The gradients were computed by the forward for an upstream gradient of 1:
 * scale them by dy and accumulate; dx into the counted rows of x's gradient,
 * [dw | dbias] row by row into w's and bias's. With no counted row there is
 * nothing to add. */
void bertc_linear_cross_entropy_backward(Graph *g, Node *node)
{
    Var *x = node->in[0], *w = node->in[1], *bias = node->n_in > 2 ? node->in[2] : NULL;
    const LceGrads *k = node->attr.linear_ce.grads;
    int64_t H = x->value.shape[1], V = w->value.shape[0], Ha = bias ? H + 1 : H;
    float dy = node->out->grad[0];
    float *gx = x->requires_grad ? bertc_ag_grad(g, x) : NULL;
    float *gw = w->requires_grad ? bertc_ag_grad(g, w) : NULL;
    float *gb = bias && bias->requires_grad ? bertc_ag_grad(g, bias) : NULL;
    for (int64_t i = 0; gx && i < k->n; i++)
        bertc_kernel_axpy(gx + (int64_t)k->rows[i] * H, dy, k->dx + i * H, H);
    for (int64_t v = 0; k->dwb && v < V; v++) {
        if (gw)
            bertc_kernel_axpy(gw + v * H, dy, k->dwb + v * Ha, H);
        if (gb)
            gb[v] += dy * k->dwb[v * Ha + H];
    }
}
