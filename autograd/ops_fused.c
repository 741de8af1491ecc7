/* autograd/ops_fused.c — the residual Add & Norm of the BERT layer (SPEC §6.1,
 * zoo/models/bert.c bertc_bert_layer_forward) as one op:
 *
 *   add_layernorm(a, b) = LayerNorm(a + b)
 *
 * It works one row at a time, so the sum is still in L1 when the LayerNorm
 * reads it, and it calls the same row kernels as bertc_ag_layernorm on the same
 * float sums: its values are those of bertc_ag_layernorm(bertc_ag_add(a, b)) to the bit,
 * its gradients to float rounding. Against those two ops it runs 1.5-2x
 * faster and never allocates the (..., H) gradient of the sum. (Bias + GELU
 * after a bias-free GEMM was fused the same way and did not pay; see git log.) */
#include "autograd/ops_internal.h"

/* Elements below which the rows run on the caller, as the row kernels do
 * (tensor/kernels_dispatch.c PARALLEL_MIN). */
#define ADD_LN_PARALLEL_MIN 32768

static int64_t last_dim(const Var *a) { return a->value.ndim ? a->value.shape[a->value.ndim - 1] : 1; }

/* y = x + z for n floats; y is neither x nor z. The blocks of 16 have a fixed
 * trip count over restrict pointers, which -O2's cheap vectorizer (GCC >= 12)
 * turns into SIMD adds; a plain loop of unknown length stays scalar there (as
 * bertc_kernel_add_inplace does) and costs as much as the fusion saves. */
static void add_n(float *restrict y, const float *restrict x, const float *restrict z,
                  int64_t n)
{
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int k = 0; k < 16; k++)
            y[i + k] = x[i + k] + z[i + k];
    for (; i < n; i++)
        y[i] = x[i] + z[i];
}

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
        float *s = j->s + r * H;
        add_n(s, j->a + r * H, j->b + r * H, H);
        bertc_kernel_layernorm_rows(j->y + r * H, j->mean ? j->mean + r : NULL,
                              j->rstd ? j->rstd + r : NULL, s, j->gamma, j->beta, 1, H, j->eps);
    }
}

/* a, b (..., H) of one shape; gamma, beta (H) or NULL -> (..., H). The backward
 * keeps s = a + b (..., H) and the row statistics, as bertc_ag_layernorm keeps its
 * input; without a tape the sum is written into the output and normalised there. */
Var *bertc_ag_add_layernorm(Graph *g, Var *a, Var *b, Var *gamma, Var *beta, float eps)
{
    if (!bertc_shape_equal(a->value.ndim, a->value.shape, b->value.ndim, b->value.shape))
        bertc_ag_shape_error("add_layernorm", "a and b must have the same shape", a, b);
    int64_t H = last_dim(a), rows = a->value.numel / (H ? H : 1);
    if ((gamma && gamma->value.numel != H) || (beta && beta->value.numel != H))
        bertc_ag_shape_error("add_layernorm", "gamma/beta must have the size of the last dim", a,
                       gamma ? gamma : beta);
    Var *in[4] = {a, b, gamma, beta};
    Var *out = bertc_ag_result(g, a->value.ndim, a->value.shape, in, 4);
    AddLnJob j = {.y = out->value.data, .s = out->value.data, .a = a->value.data,
                  .b = b->value.data, .gamma = gamma ? gamma->value.data : NULL,
                  .beta = beta ? beta->value.data : NULL, .H = H, .eps = eps};
    if (out->requires_grad) {
        size_t n_rows = (size_t)(rows ? rows : 1);
        j.s = bertc_arena_alloc(g->step, sizeof(float) * (size_t)(a->value.numel ? a->value.numel : 1));
        j.mean = bertc_arena_alloc(g->step, 2 * sizeof(float) * n_rows);
        j.rstd = j.mean + n_rows;
    }
    if (a->value.numel < ADD_LN_PARALLEL_MIN)
        add_layernorm_rows(&j, 0, rows);
    else   /* rows are independent: the same bits on any number of threads */
        bertc_parallel_for(rows, add_layernorm_rows, &j);
    Node *node = bertc_ag_record(g, OP_ADD_LAYERNORM, out, in, 4);
    if (node)
        node->attr.add_layernorm = (AddLayerNormAttrs){.s = j.s, .mean = j.mean, .rstd = j.rstd};
    return out;
}

/* With ds the LayerNorm gradient of s = a + b (bertc_kernel_layernorm_rows_backward):
 *   da += ds,  db += ds,  dgamma += sum_rows dy xhat,  dbeta += sum_rows dy.
 * The kernel adds ds straight into da (or writes it, into a fresh buffer from
 * bertc_ag_grad_full), and again, without dgamma and dbeta, into db: a second SIMD
 * pass over the row costs less than keeping ds and adding it to both. One
 * thread, as bertc_ag_layernorm's backward: dgamma and dbeta sum over the rows. */
void bertc_add_layernorm_backward(Graph *g, Node *node)
{
    Var *a = node->in[0], *b = node->in[1], *gamma = node->in[2], *beta = node->in[3];
    int64_t H = last_dim(a), rows = a->value.numel / (H ? H : 1);
    const AddLayerNormAttrs *at = &node->attr.add_layernorm;
    const float *s = at->s, *mean = at->mean, *rstd = at->rstd;
    const float *dy = node->out->grad, *gm = gamma ? gamma->value.data : NULL;
    bool acc_a = true, acc_b = true;   /* false: a fresh buffer, written */
    float *da = a->requires_grad ? bertc_ag_grad_full(g, a, &acc_a) : NULL;
    float *db = b->requires_grad ? bertc_ag_grad_full(g, b, &acc_b) : NULL;   /* b == a: adds */
    float *dgamma = gamma && gamma->requires_grad ? bertc_ag_grad(g, gamma) : NULL;
    float *dbeta = beta && beta->requires_grad ? bertc_ag_grad(g, beta) : NULL;
    for (int64_t r = 0; r < rows; r++) {
        int64_t off = r * H;
        bertc_kernel_layernorm_rows_backward(da ? da + off : NULL, dgamma, dbeta, dy + off, s + off,
                                       mean + r, rstd + r, gm, 1, H, acc_a);
        if (db)
            bertc_kernel_layernorm_rows_backward(db + off, NULL, NULL, dy + off, s + off, mean + r,
                                           rstd + r, gm, 1, H, acc_b);
    }
}
