/* autograd/ops_matmul.c — matrix products on the GEMM of tensor/.
 *
 * For C = op(A) op(B) with upstream gradient dC (M, N):
 *   d op(A) = dC op(B)^T      (M, K)
 *   d op(B) = op(A)^T dC      (K, N)
 * and when A itself is stored transposed, dA is the transpose of d op(A). Each
 * case below is one GEMM call that accumulates (beta = 1) into the gradient,
 * or writes it (beta = 0) when it is the first to arrive (bertc_ag_grad_full). */
#include "autograd/ops_internal.h"

#include <string.h>

/* The matrix dims of a matmul, read off its inputs. */
typedef struct MatmulDims {
    int64_t batch, M, N, K;
    bool b_shared;        /* b is 2-D and used by every batch entry */
} MatmulDims;

static MatmulDims matmul_dims(Var *a, Var *b, bool trans_a, bool trans_b)
{
    const Tensor *A = &a->value, *B = &b->value;
    if (A->ndim < 2 || B->ndim < 2)
        bertc_ag_shape_error("matmul", "both inputs need at least 2 dims", a, b);
    MatmulDims d;
    int64_t a_rows = A->shape[A->ndim - 2], a_cols = A->shape[A->ndim - 1];
    int64_t b_rows = B->shape[B->ndim - 2], b_cols = B->shape[B->ndim - 1];
    d.M = trans_a ? a_cols : a_rows;
    d.K = trans_a ? a_rows : a_cols;
    d.N = trans_b ? b_rows : b_cols;
    int64_t k_b = trans_b ? b_cols : b_rows;
    if (k_b != d.K)
        bertc_ag_shape_error("matmul", "inner dimensions differ", a, b);
    d.batch = bertc_shape_numel(A->ndim - 2, A->shape);
    d.b_shared = B->ndim == 2;
    if (!d.b_shared && !bertc_shape_equal(A->ndim - 2, A->shape, B->ndim - 2, B->shape))
        bertc_ag_shape_error("matmul", "batch dimensions differ (b may also be 2-D)", a, b);
    return d;
}

Var *bertc_ag_matmul(Graph *g, Var *a, Var *b, bool trans_a, bool trans_b)
{
    MatmulDims d = matmul_dims(a, b, trans_a, trans_b);
    int64_t shape[TENSOR_MAX_DIMS];
    int ndim = a->value.ndim;
    memcpy(shape, a->value.shape, sizeof(int64_t) * (size_t)ndim);
    shape[ndim - 2] = d.M;
    shape[ndim - 1] = d.N;
    Var *in[2] = {a, b};
    Var *out = bertc_ag_result(g, ndim, shape, in, 2);
    int64_t lda = trans_a ? d.M : d.K, ldb = trans_b ? d.K : d.N;
    if (d.b_shared && !trans_a)   /* one big GEMM: (batch*M, K) x (K, N) */
        bertc_gemm(false, trans_b, d.batch * d.M, d.N, d.K, 1.0f, a->value.data, lda,
             b->value.data, ldb, 0.0f, out->value.data, d.N);
    else
        bertc_gemm_batched(trans_a, trans_b, d.batch, d.M, d.N, d.K, 1.0f, a->value.data, lda,
                     d.M * d.K, b->value.data, ldb, d.b_shared ? 0 : d.K * d.N, 0.0f,
                     out->value.data, d.N, d.M * d.N);
    Node *node = bertc_ag_record(g, OP_MATMUL, out, in, 2);
    if (node)
        node->attr.matmul = (MatmulAttrs){.trans_a = trans_a, .trans_b = trans_b};
    return out;
}

void bertc_matmul_backward(Graph *g, Node *node)
{
    Var *a = node->in[0], *b = node->in[1];
    bool trans_a = node->attr.matmul.trans_a, trans_b = node->attr.matmul.trans_b;
    MatmulDims d = matmul_dims(a, b, trans_a, trans_b);
    int64_t lda = trans_a ? d.M : d.K, ldb = trans_b ? d.K : d.N;
    int64_t sa = d.M * d.K, sb = d.b_shared ? 0 : d.K * d.N, sc = d.M * d.N;
    const float *A = a->value.data, *B = b->value.data, *dC = node->out->grad;
    bool accumulate;
    if (a->requires_grad) {
        float *dA = bertc_ag_grad_full(g, a, &accumulate);
        float beta = accumulate ? 1.0f : 0.0f;
        if (!trans_a) /* dA (M,K) += dC op(B)^T */
            bertc_gemm_batched(false, !trans_b, d.batch, d.M, d.K, d.N, 1.0f, dC, d.N, sc, B,
                         ldb, sb, beta, dA, d.K, sa);
        else          /* dA (K,M) += op(B) dC^T */
            bertc_gemm_batched(trans_b, true, d.batch, d.K, d.M, d.N, 1.0f, B, ldb, sb, dC, d.N,
                         sc, beta, dA, d.M, sa);
    }
    if (b->requires_grad) {
        float *dB = bertc_ag_grad_full(g, b, &accumulate);
        /* A shared b sums the contributions of every batch entry: the GEMMs
         * below write them all into the same dB, one after another, so only
         * the first may overwrite it. */
        for (int64_t i = 0; i < d.batch; i++) {
            const float *Ai = A + i * sa, *dCi = dC + i * sc;
            float *dBi = dB + i * sb;
            float beta = accumulate || (d.b_shared && i > 0) ? 1.0f : 0.0f;
            if (!trans_b) /* dB (K,N) += op(A)^T dC */
                bertc_gemm(!trans_a, false, d.K, d.N, d.M, 1.0f, Ai, lda, dCi, d.N, beta, dBi, d.N);
            else          /* dB (N,K) += dC^T op(A) */
                bertc_gemm(true, trans_a, d.N, d.K, d.M, 1.0f, dCi, d.N, Ai, lda, beta, dBi, d.K);
        }
    }
}

/* An int8 weight has no float values to differentiate through. */
static void refuse_int8_grad(const Var *out, const Var *w)
{
    if (out->requires_grad)
        bertc_fatal("linear: weight '%s' is int8 (a quantised model is for inference only) and "
                    "has no gradient; train or fine-tune the float32 model, then quantise it",
                    w->name ? w->name : "?");
}

typedef void (*RowAct)(float *y, const float *x, int64_t n);

/* One product of bertc_qgemm_many: out = act(x w^T + bias), act NULL: none. */
static QgemmProduct int8_product(Var *out, Var *w, Var *bias, RowAct act)
{
    refuse_int8_grad(out, w);
    return (QgemmProduct){.pb = w->qpacked, .bias = bias ? bias->value.data : NULL,
                          .C = out->value.data, .ldc = w->value.shape[0], .act = act};
}

/* y = act(x w^T + bias) with w int8 (tensor/tensor.h, bertc_qgemm): x is
 * quantised per row on the fly, the bias added in the GEMM's store, act
 * (NULL: none) applied to each work item's part of y after its tiles.
 * Inference only. */
static Var *linear_int8(Var *out, Var **in, int n_in, RowAct act)
{
    Var *x = in[0], *w = in[1], *bias = n_in > 2 ? in[2] : NULL;
    QgemmProduct p = int8_product(out, w, bias, act);
    int64_t n_in_f = w->value.shape[1];
    bertc_qgemm_many(x->value.numel / (n_in_f ? n_in_f : 1), x->value.data, n_in_f, &p, 1);
    return out;   /* nothing to record: no gradient flows through it */
}

/* y = x w^T + bias with w bf16 (tensor/tensor.h, bertc_bgemm): x rounded to
 * bf16 per row, float32 sums, the bias added in the GEMM's store. A pass
 * that records gradients uses the float32 weight instead (below). */
static Var *linear_bf16(Var *out, Var **in, int n_in)
{
    Var *x = in[0], *w = in[1], *bias = n_in > 2 ? in[2] : NULL;
    int64_t n_in_f = w->value.shape[1], n_out = w->value.shape[0];
    int64_t rows = x->value.numel / (n_in_f ? n_in_f : 1);
    bertc_bgemm(rows, x->value.data, n_in_f, w->bpacked, bias ? bias->value.data : NULL,
                out->value.data, n_out);
    return out;
}

void bertc_ag_product(bool bf16, bool trans_a, bool trans_b, int64_t M, int64_t N,
                      int64_t K, const float *A, int64_t lda, const float *B, int64_t ldb,
                      float beta, float *C, int64_t ldc)
{
    if (bf16)
        bertc_gemm_bf16(trans_a, trans_b, M, N, K, A, lda, B, ldb, beta, C, ldc);
    else
        bertc_gemm(trans_a, trans_b, M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc);
}

/* linear: x (..., in), w (out, in), bias (out) -> y (..., out) = x w^T + bias,
 * the layout of torch.nn.Linear. x is viewed as (rows, in). */
/* The checked shapes of a linear and its (..., out) result. */
static Var *linear_result(Graph *g, Var *x, Var *w, Var *bias)
{
    const Tensor *X = &x->value, *W = &w->value;
    if (W->ndim != 2 || X->ndim < 1 || X->shape[X->ndim - 1] != W->shape[1])
        bertc_ag_shape_error("linear", "x (..., in) needs weight (out, in)", x, w);
    int64_t n_out = W->shape[0];
    if (bias && (bias->value.ndim != 1 || bias->value.shape[0] != n_out))
        bertc_ag_shape_error("linear", "bias must be (out)", bias, w);
    int64_t shape[TENSOR_MAX_DIMS];
    memcpy(shape, X->shape, sizeof(int64_t) * (size_t)X->ndim);
    shape[X->ndim - 1] = n_out;
    Var *in[3] = {x, w, bias};
    return bertc_ag_result(g, X->ndim, shape, in, bias ? 3 : 2);
}

Var *bertc_ag_linear(Graph *g, Var *x, Var *w, Var *bias)
{
    const Tensor *X = &x->value, *W = &w->value;
    Var *out = linear_result(g, x, w, bias);
    int64_t n_in = W->shape[1], n_out = W->shape[0], rows = X->numel / (n_in ? n_in : 1);
    Var *in[3] = {x, w, bias};
    float *y = out->value.data;
    if (w->qpacked)
        return linear_int8(out, in, bias ? 3 : 2, NULL);
    if (w->bpacked && !out->requires_grad)
        return linear_bf16(out, in, bias ? 3 : 2);
    if (w->packed && out->requires_grad)
        bertc_fatal("linear: weight '%s' is pre-packed for inference (bertc_registry_prepack) and "
                    "has no gradient; call bertc_registry_unpack before training or a gradient pass",
                    w->name ? w->name : "?");
    if (w->packed)   /* the same sums as bertc_gemm on W, without packing W again */
        bertc_gemm_prepacked(false, rows, 1.0f, X->data, n_in, w->packed, 0.0f, y, n_out);
    else
        bertc_ag_product(g->bf16, false, true, rows, n_out, n_in, X->data, n_in, W->data, n_in,
                         0.0f, y, n_out);
    if (bias)
        for (int64_t r = 0; r < rows; r++)
            bertc_kernel_add_inplace(y + r * n_out, bias->value.data, n_out);
    bertc_ag_record(g, OP_LINEAR, out, in, bias ? 3 : 2);
    return out;
}

Var *bertc_ag_act(Graph *g, AgAct act, Var *x)
{
    switch (act) {
    case AG_ACT_GELU_TANH: return bertc_ag_gelu_tanh(g, x);
    case AG_ACT_RELU: return bertc_ag_relu(g, x);
    case AG_ACT_GELU: break;
    }
    return bertc_ag_gelu(g, x);
}

/* The row kernel an int8 GEMM applies for act; NULL: act runs as its own op. */
static RowAct act_kernel(AgAct act)
{
    switch (act) {
    case AG_ACT_GELU: return bertc_kernel_gelu;
    case AG_ACT_GELU_TANH: return bertc_kernel_gelu_tanh;
    case AG_ACT_RELU: break;
    }
    return NULL;
}

Var *bertc_ag_linear_act(Graph *g, Var *x, Var *w, Var *bias, AgAct act)
{
    if (!w->qpacked || !act_kernel(act))
        return bertc_ag_act(g, act, bertc_ag_linear(g, x, w, bias));
    Var *out = linear_result(g, x, w, bias);
    Var *in[3] = {x, w, bias};
    return linear_int8(out, in, bias ? 3 : 2, act_kernel(act));
}

/* Can bertc_qgemm_many run these n products of one x? */
static bool int8_shared(int n, Var *const *w)
{
    if (n < 1 || n > QGEMM_PRODUCTS_MAX)
        return false;
    for (int i = 0; i < n; i++)
        if (!w[i]->qpacked || w[i]->value.ndim != 2 || w[i]->value.shape[1] != w[0]->value.shape[1])
            return false;
    return true;
}

void bertc_ag_linears(Graph *g, Var *x, int n, Var *const *w, Var *const *bias, Var **out)
{
    if (!int8_shared(n, w)) {
        for (int i = 0; i < n; i++)
            out[i] = bertc_ag_linear(g, x, w[i], bias[i]);
        return;
    }
    QgemmProduct p[QGEMM_PRODUCTS_MAX];
    for (int i = 0; i < n; i++) {
        out[i] = linear_result(g, x, w[i], bias[i]);
        p[i] = int8_product(out[i], w[i], bias[i], NULL);
    }
    int64_t n_in = w[0]->value.shape[1];
    bertc_qgemm_many(x->value.numel / (n_in ? n_in : 1), x->value.data, n_in, p, n);
}

/* Both products of a mixed-precision backward from one bf16 copy of dy
 * (the rows layout of bertc_gemm_bf16_rows, in the step arena until both
 * are done): dy is read and rounded once, not once per product. */
static void linear_backward_bf16(Graph *g, const float *dy, int64_t rows, int64_t n_in,
                                 int64_t n_out, const float *x, const float *w, float *dx,
                                 float dx_beta, float *dw)
{
    ArenaMark mark = bertc_arena_mark(g->step);
    int64_t cols = bertc_gemm_bf16_a_cols(n_out);
    uint16_t *dy16 = bertc_arena_alloc(
        g->step, sizeof(uint16_t) * (size_t)(bertc_gemm_bf16_rows_pad(rows) * cols));
    bertc_gemm_bf16_round_rows(rows, n_out, dy, n_out, dy16);
    bertc_gemm_bf16_rows(false, rows, n_in, n_out, dy16, cols, w, n_in, dx_beta, dx, n_in);
    bertc_gemm_bf16_rows_t(false, n_out, n_in, rows, dy16, cols, x, n_in, 1.0f, dw, n_in);
    bertc_arena_release(g->step, mark);
}

/* dx += dy w;  dw += dy^T x;  dbias += sum over rows of dy.
 * dx (rows, in) is written (beta = 0) when it is the first gradient x gets. */
void bertc_linear_backward(Graph *g, Node *node)
{
    Var *x = node->in[0], *w = node->in[1], *bias = node->n_in > 2 ? node->in[2] : NULL;
    int64_t n_in = w->value.shape[1], n_out = w->value.shape[0];
    int64_t rows = x->value.numel / (n_in ? n_in : 1);
    const float *dy = node->out->grad;
    if (g->bf16 && x->requires_grad && w->requires_grad) {
        bool accumulate;
        float *dx = bertc_ag_grad_full(g, x, &accumulate);
        linear_backward_bf16(g, dy, rows, n_in, n_out, x->value.data, w->value.data, dx,
                             accumulate ? 1.0f : 0.0f, bertc_ag_grad(g, w));
    } else {
        if (x->requires_grad) {
            bool accumulate;
            float *dx = bertc_ag_grad_full(g, x, &accumulate);
            bertc_ag_product(g->bf16, false, false, rows, n_in, n_out, dy, n_out,
                             w->value.data, n_in, accumulate ? 1.0f : 0.0f, dx, n_in);
        }
        if (w->requires_grad)
            bertc_ag_product(g->bf16, true, false, n_out, n_in, rows, dy, n_out,
                             x->value.data, n_in, 1.0f, bertc_ag_grad(g, w), n_in);
    }
    if (bias && bias->requires_grad) {
        float *db = bertc_ag_grad(g, bias);
        for (int64_t r = 0; r < rows; r++)
            bertc_kernel_add_inplace(db, dy + r * n_out, n_out);
    }
}
