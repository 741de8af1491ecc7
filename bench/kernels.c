/* bench/kernels.c — ns per element of each row kernel on every path this CPU
 * runs, and the speedup over the scalar reference measured in the same run.
 * Sizes are BERT-base's: GELU on (128, 3072), LayerNorm on (128, 768),
 * softmax on attention scores (12 * 128, 128), the MLM loss's exp_sum on 8
 * rows of the 30522-word vocabulary, AdamW on 128 * 3072 parameters. */
#include "tensor/kernels_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define T 128
#define H 768
#define FF 3072
#define NH 12
#define V 30522
#define MAX_ELEMS (T * FF)

typedef struct Bench {
    float *x, *y, *dy, *dx, *g, *b, *dg, *db, *mean, *rstd, *v;
} Bench;

static Bench bb;

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void run_gelu(void) { bertc_kernel_gelu(bb.y, bb.x, T * FF); }
static void run_gelu_bw(void) { bertc_kernel_gelu_backward(bb.dx, bb.x, bb.dy, T * FF, true); }
static void run_gelu_tanh(void) { bertc_kernel_gelu_tanh(bb.y, bb.x, T * FF); }
static void run_gelu_tanh_bw(void)
{
    bertc_kernel_gelu_tanh_backward(bb.dx, bb.x, bb.dy, T * FF, true);
}
static void run_softmax(void) { bertc_kernel_softmax_rows(bb.y, bb.x, NH * T, T); }
static void run_softmax_bw(void)
{
    bertc_kernel_softmax_rows_backward(bb.dx, bb.y, bb.dy, NH * T, T, true);
}
static void run_log_softmax(void) { bertc_kernel_log_softmax_rows(bb.y, bb.x, NH * T, T); }
static void run_log_softmax_bw(void)
{
    bertc_kernel_log_softmax_rows_backward(bb.dx, bb.y, bb.dy, NH * T, T, true);
}
static void run_layernorm(void)
{
    bertc_kernel_layernorm_rows(bb.y, bb.mean, bb.rstd, bb.x, bb.g, bb.b, T, H, 1e-12f);
}
static void run_layernorm_bw(void)
{
    bertc_kernel_layernorm_rows_backward(bb.dx, bb.dg, bb.db, bb.dy, bb.x, bb.mean, bb.rstd, bb.g,
                                   T, H, true);
}

static double exp_sum_sink;
static void run_exp_sum(void)
{
    for (int r = 0; r < 8; r++)
        exp_sum_sink += bertc_kernel_exp_sum(bb.y + r * V, bb.x + r * V, 3.0f, V);
}
/* p in y, gradient in dy, moments in dx and v (v >= 0) */
static void run_adam(void)
{
    AdamStep s = {.b1 = 0.9f, .one_minus_b1 = 0.1f, .b2 = 0.999f, .one_minus_b2 = 1e-3f,
                  .neg_step = -1e-4f, .bc2_sqrt = 0.3f, .eps = 1e-8f, .decay = 0.99999f,
                  .decoupled = true};
    bertc_kernel_adam(bb.y, bb.dy, bb.dx, bb.v, MAX_ELEMS, &s);
}

typedef struct Kernel {
    const char *name;
    void (*run)(void);
    int64_t elems;
} Kernel;

static const Kernel kernels[] = {
    {"gelu", run_gelu, T * FF},
    {"gelu_backward", run_gelu_bw, T * FF},
    {"gelu_tanh", run_gelu_tanh, T * FF},
    {"gelu_tanh_backward", run_gelu_tanh_bw, T * FF},
    {"softmax_rows", run_softmax, NH * T * T},
    {"softmax_rows_backward", run_softmax_bw, NH * T * T},
    {"log_softmax_rows", run_log_softmax, NH * T * T},
    {"log_softmax_rows_backward", run_log_softmax_bw, NH * T * T},
    {"layernorm_rows", run_layernorm, T * H},
    {"layernorm_rows_backward", run_layernorm_bw, T * H},
    {"exp_sum", run_exp_sum, 8 * V},
    {"adam", run_adam, MAX_ELEMS},
};

/* Best of 7 timed runs (after one warm-up), in ns per element. */
static double ns_per_elem(const Kernel *k)
{
    double best = 1e30;
    k->run();
    for (int rep = 0; rep < 7; rep++) {
        double t0 = now_ns();
        k->run();
        double t = now_ns() - t0;
        best = t < best ? t : best;
    }
    return best / (double)k->elems;
}

static float *alloc_fill(Rng *rng, float lo, float hi)
{
    float *p = malloc(MAX_ELEMS * sizeof *p);
    if (!p) {
        fprintf(stderr, "bench/kernels: out of memory\n");
        exit(1);
    }
    for (int64_t i = 0; i < MAX_ELEMS; i++)
        p[i] = lo + (hi - lo) * (float)bertc_rng_uniform(rng);
    return p;
}

int main(void)
{
    Rng rng = bertc_rng_seed(1);
    float **all[] = {&bb.x, &bb.y, &bb.dy, &bb.dx, &bb.g, &bb.b, &bb.dg, &bb.db, &bb.mean,
                     &bb.rstd};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        *all[i] = alloc_fill(&rng, -3.0f, 3.0f);
    bb.v = alloc_fill(&rng, 0.0f, 3.0f); /* Adam's second moments are >= 0 */
    printf("%-27s %10s", "kernel (ns/element)", "scalar");
    for (int p = 0; p < ISA_COUNT; p++)
        if (p != ISA_SCALAR && bertc_cpu_isa_supported((CpuIsa)p))
            printf(" %10s %8s", bertc_cpu_isa_name((CpuIsa)p), "speedup");
    printf("\n");
    for (size_t k = 0; k < sizeof kernels / sizeof kernels[0]; k++) {
        bertc_cpu_set_isa(ISA_SCALAR);
        double base = ns_per_elem(&kernels[k]);
        printf("%-27s %10.3f", kernels[k].name, base);
        for (int p = 0; p < ISA_COUNT; p++) {
            if (p == ISA_SCALAR || !bertc_cpu_isa_supported((CpuIsa)p))
                continue;
            bertc_cpu_set_isa((CpuIsa)p);
            double t = ns_per_elem(&kernels[k]);
            printf(" %10.3f %7.1fx", t, base / t);
        }
        printf("\n");
    }
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        free(*all[i]);
    free(bb.v);
    return 0;
}
