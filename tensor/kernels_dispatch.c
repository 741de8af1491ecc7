/* tensor/kernels_dispatch.c — the public row kernels: each runs the row
 * kernels of the active path's row of the ISA table (tensor/isa.c: scalar,
 * AVX-512, AVX2 or NEON).
 *
 * Softmax, LayerNorm (forward) and GELU split their rows (GELU: blocks of
 * GELU_BLOCK elements) over the threads with bertc_parallel_for when there is
 * enough work. Rows are independent and block edges fall at the same places
 * whatever the thread count, so the result is bitwise the same with 1 or many
 * threads. LayerNorm's backward sums dgamma/dbeta over the rows and stays on
 * one thread. Dropout splits into blocks the same way; each block computes
 * where it stands in the random stream (see DropoutJob). */
#include "tensor/isa_internal.h"

#define PARALLEL_MIN 32768    /* elements below which a kernel runs on the caller */
#define GELU_BLOCK 1024       /* elements per GELU work unit (a multiple of every SIMD width) */

/* The active path's table, from its row of the ISA table (tensor/isa.c). */
static const RowKernels *active_rows(void)
{
    return bertc_isa_active()->rows;
}

typedef enum { K_SOFTMAX, K_SOFTMAX_BW, K_LAYERNORM, K_GELU, K_GELU_BW, K_GELU_TANH,
               K_GELU_TANH_BW } KernelKind;

/* One call's arguments; each unit of [begin, end) is a row (softmax,
 * LayerNorm) or a GELU_BLOCK-element block (GELU). */
typedef struct RowJob {
    KernelKind kind;
    const RowKernels *k;
    float *y, *mean, *rstd;
    const float *x, *dy, *gamma, *beta;
    int64_t rows, n;
    float eps;
    bool accumulate;       /* backward kernels: add into dx (in y) or write it */
} RowJob;

static void row_job_range(void *ctx, int64_t begin, int64_t end)
{
    const RowJob *j = ctx;
    int64_t off = begin * j->n, rows = end - begin;
    int64_t e0 = begin * GELU_BLOCK, e1 = end * GELU_BLOCK < j->n ? end * GELU_BLOCK : j->n;
    switch (j->kind) {
    case K_SOFTMAX: j->k->softmax_rows(j->y + off, j->x + off, rows, j->n); break;
    case K_SOFTMAX_BW:
        j->k->softmax_rows_backward(j->y + off, j->x + off, j->dy + off, rows, j->n,
                                    j->accumulate);
        break;
    case K_LAYERNORM:
        j->k->layernorm_rows(j->y + off, j->mean ? j->mean + begin : NULL,
                             j->rstd ? j->rstd + begin : NULL, j->x + off, j->gamma, j->beta,
                             rows, j->n, j->eps);
        break;
    case K_GELU: j->k->gelu(j->y + e0, j->x + e0, e1 - e0); break;
    case K_GELU_BW:
        j->k->gelu_backward(j->y + e0, j->x + e0, j->dy + e0, e1 - e0, j->accumulate);
        break;
    case K_GELU_TANH: j->k->gelu_tanh(j->y + e0, j->x + e0, e1 - e0); break;
    case K_GELU_TANH_BW:
        j->k->gelu_tanh_backward(j->y + e0, j->x + e0, j->dy + e0, e1 - e0, j->accumulate);
        break;
    }
}

/* Run job over `units` units: on the threads if the kernel touches enough
 * elements, else on the caller. */
static void row_job_run(RowJob *j, int64_t units, int64_t elements)
{
    j->k = active_rows();
    if (elements < PARALLEL_MIN)
        row_job_range(j, 0, units);
    else
        bertc_parallel_for(units, row_job_range, j);
}

static void elementwise_run(KernelKind kind, float *y, const float *x, const float *dy,
                            int64_t n, bool accumulate)
{
    RowJob j = {.kind = kind, .y = y, .x = x, .dy = dy, .n = n, .accumulate = accumulate};
    row_job_run(&j, (n + GELU_BLOCK - 1) / GELU_BLOCK, n);
}

const RowKernels *bertc_row_kernels(CpuIsa isa)
{
    return bertc_isa_path(isa)->rows;
}

/* These run on the caller's thread: their callers split the work. */
void bertc_kernel_adam(float *p, const float *g, float *m, float *v, int64_t n, const AdamStep *s)
{
    active_rows()->adam(p, g, m, v, n, s);
}

void bertc_expf_n(float *y, const float *x, int64_t n)
{
    active_rows()->expf_n(y, x, n);
}

void bertc_tanhf_n(float *y, const float *x, int64_t n)
{
    active_rows()->tanhf_n(y, x, n);
}

void bertc_erff_n(float *y, const float *x, int64_t n)
{
    active_rows()->erff_n(y, x, n);
}

void bertc_normal_cdf_n(float *y, const float *x, int64_t n)
{
    active_rows()->normal_cdf_n(y, x, n);
}

void bertc_kernel_softmax_rows(float *y, const float *x, int64_t rows, int64_t n)
{
    RowJob j = {.kind = K_SOFTMAX, .y = y, .x = x, .rows = rows, .n = n};
    row_job_run(&j, rows, rows * n);
}

/* dx rides in y, y in x: the job's fields are generic. */
void bertc_kernel_softmax_rows_backward(float *dx, const float *y, const float *dy,
                                  int64_t rows, int64_t n, bool accumulate)
{
    RowJob j = {.kind = K_SOFTMAX_BW, .y = dx, .x = y, .dy = dy, .rows = rows, .n = n,
                .accumulate = accumulate};
    row_job_run(&j, rows, rows * n);
}

void bertc_kernel_log_softmax_rows(float *y, const float *x, int64_t rows, int64_t n)
{
    active_rows()->log_softmax_rows(y, x, rows, n);
}

void bertc_kernel_log_softmax_rows_backward(float *dx, const float *y, const float *dy,
                                      int64_t rows, int64_t n, bool accumulate)
{
    active_rows()->log_softmax_rows_backward(dx, y, dy, rows, n, accumulate);
}

/* These too run on the caller's thread. */
void bertc_kernel_add_inplace(float *y, const float *x, int64_t n)
{
    active_rows()->add_inplace(y, x, n);
}

void bertc_kernel_axpy(float *y, float a, const float *x, int64_t n)
{
    active_rows()->axpy(y, a, x, n);
}

float bertc_kernel_add_max(float *y, const float *b, int64_t n)
{
    return active_rows()->add_max(y, b, n);
}

double bertc_kernel_exp_sum(float *y, const float *x, float shift, int64_t n)
{
    return active_rows()->exp_sum(y, x, shift, n);
}

void bertc_kernel_layernorm_rows(float *y, float *mean, float *rstd, const float *x,
                           const float *gamma, const float *beta,
                           int64_t rows, int64_t n, float eps)
{
    RowJob j = {.kind = K_LAYERNORM, .y = y, .mean = mean, .rstd = rstd, .x = x,
                .gamma = gamma, .beta = beta, .rows = rows, .n = n, .eps = eps};
    row_job_run(&j, rows, rows * n);
}

void bertc_kernel_layernorm_rows_backward(float *dx, float *dgamma, float *dbeta,
                                    const float *dy, const float *x,
                                    const float *mean, const float *rstd,
                                    const float *gamma, int64_t rows, int64_t n,
                                    bool dx_accumulate)
{
    active_rows()->layernorm_rows_backward(dx, dgamma, dbeta, dy, x, mean, rstd,
                                                    gamma, rows, n, dx_accumulate);
}

void bertc_kernel_gelu(float *y, const float *x, int64_t n)
{
    elementwise_run(K_GELU, y, x, NULL, n, false);
}

void bertc_kernel_gelu_backward(float *dx, const float *x, const float *dy, int64_t n,
                          bool accumulate)
{
    elementwise_run(K_GELU_BW, dx, x, dy, n, accumulate);
}

void bertc_kernel_gelu_tanh(float *y, const float *x, int64_t n)
{
    elementwise_run(K_GELU_TANH, y, x, NULL, n, false);
}

void bertc_kernel_gelu_tanh_backward(float *dx, const float *x, const float *dy, int64_t n,
                               bool accumulate)
{
    elementwise_run(K_GELU_TANH_BW, dx, x, dy, n, accumulate);
}

/* Dropout's arguments. Work unit u is the block of elements
 * [u DROPOUT_BLOCK, (u+1) DROPOUT_BLOCK); its first draw is draw number
 * u DROPOUT_BLOCK of the stream, so a block starts its own state there and
 * every element gets the same draw whichever thread runs it. */
typedef struct DropoutJob {
    const RowKernels *k;
    const float *a, *dy;
    float *out, *da;
    uint8_t *keep;
    const uint8_t *keep_in;
    int64_t n;
    uint64_t state, threshold;
    float scale;
} DropoutJob;

#define DROPOUT_BLOCK 4096 /* elements per work unit (a multiple of every SIMD width) */

static void dropout_range(void *ctx, int64_t begin, int64_t end)
{
    const DropoutJob *j = ctx;
    int64_t e0 = begin * DROPOUT_BLOCK;
    int64_t e1 = end * DROPOUT_BLOCK < j->n ? end * DROPOUT_BLOCK : j->n;
    uint64_t state = j->state + (uint64_t)e0 * RNG_GAMMA; /* draws 0..e0-1 skipped */
    j->k->dropout(j->a + e0, j->out + e0, j->keep + e0, e1 - e0, state, j->threshold,
                  j->scale);
}

static void dropout_backward_range(void *ctx, int64_t begin, int64_t end)
{
    const DropoutJob *j = ctx;
    int64_t e0 = begin * DROPOUT_BLOCK;
    int64_t e1 = end * DROPOUT_BLOCK < j->n ? end * DROPOUT_BLOCK : j->n;
    j->k->dropout_backward(j->keep_in + e0, j->dy + e0, j->scale, j->da + e0, e1 - e0);
}

/* fn over the blocks of j: on the threads if there are enough elements. */
static void dropout_run(DropoutJob *j, void (*fn)(void *ctx, int64_t begin, int64_t end))
{
    int64_t blocks = (j->n + DROPOUT_BLOCK - 1) / DROPOUT_BLOCK;
    j->k = active_rows();
    if (j->n < PARALLEL_MIN)
        fn(j, 0, blocks);
    else
        bertc_parallel_for(blocks, fn, j);
}

void bertc_kernel_dropout(const float *a, float *out, uint8_t *keep, int64_t n, uint64_t state,
                    uint64_t threshold, float scale)
{
    DropoutJob j = {.a = a, .out = out, .keep = keep, .n = n, .state = state,
                    .threshold = threshold, .scale = scale};
    dropout_run(&j, dropout_range);
}

void bertc_kernel_dropout_backward(const uint8_t *keep, const float *dy, float scale, float *da,
                             int64_t n)
{
    DropoutJob j = {.keep_in = keep, .dy = dy, .scale = scale, .da = da, .n = n};
    dropout_run(&j, dropout_backward_range);
}
