/* test/test_kernels_threads.c — the row kernels split their work over the
 * threads (tensor/kernels_dispatch.c); the results are bitwise those of one
 * thread, on sizes past the threshold with ragged edges (rows and GELU
 * blocks that do not divide evenly). */
#include "test/test_util.h"

#include <criterion/criterion.h>
#include <string.h>

enum { ROWS = 301, N = 173, E = ROWS * N };

static float x[E], dy[E], g[N], b[N], one[E], many[E], mean1[ROWS], rstd1[ROWS], mean2[ROWS],
    rstd2[ROWS];

static void fill(void)
{
    Rng rng = bertc_rng_seed(5);
    test_fill_uniform(x, E, &rng, -4, 4);
    test_fill_uniform(dy, E, &rng, -1, 1);
    test_fill_uniform(g, N, &rng, 0.5f, 1.5f);
    test_fill_uniform(b, N, &rng, -0.5f, 0.5f);
}

static void expect_bitwise(const char *what, const float *a, const float *c, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        cr_assert(memcmp(&a[i], &c[i], sizeof(float)) == 0,
                  "%s at flat index %lld: 1 thread %.9g, 2 threads %.9g", what, (long long)i,
                  (double)a[i], (double)c[i]);
}

/* run(out) once on 1 thread into `one` and once on 2 into `many`. */
#define BOTH(stmt_one, stmt_many)                                                           \
    do {                                                                                    \
        bertc_threads_set_count(1);                                                               \
        stmt_one;                                                                           \
        bertc_threads_set_count(2);                                                               \
        stmt_many;                                                                          \
    } while (0)

Test(kernels_threads, softmax_layernorm_gelu_match_one_thread)
{
    int saved = bertc_threads_count();
    fill();
    BOTH(bertc_kernel_softmax_rows(one, x, ROWS, N), bertc_kernel_softmax_rows(many, x, ROWS, N));
    expect_bitwise("softmax", one, many, E);
    memset(one, 0, sizeof one);
    memset(many, 0, sizeof many);
    BOTH(bertc_kernel_softmax_rows_backward(one, x, dy, ROWS, N, true),
         bertc_kernel_softmax_rows_backward(many, x, dy, ROWS, N, true));
    expect_bitwise("softmax backward", one, many, E);
    BOTH(bertc_kernel_layernorm_rows(one, mean1, rstd1, x, g, b, ROWS, N, 1e-12f),
         bertc_kernel_layernorm_rows(many, mean2, rstd2, x, g, b, ROWS, N, 1e-12f));
    expect_bitwise("layernorm", one, many, E);
    expect_bitwise("layernorm mean", mean1, mean2, ROWS);
    expect_bitwise("layernorm rstd", rstd1, rstd2, ROWS);
    BOTH(bertc_kernel_gelu(one, x, E), bertc_kernel_gelu(many, x, E));
    expect_bitwise("gelu", one, many, E);
    BOTH(bertc_kernel_gelu_tanh(one, x, E), bertc_kernel_gelu_tanh(many, x, E));
    expect_bitwise("gelu_tanh", one, many, E);
    memset(one, 0, sizeof one);
    memset(many, 0, sizeof many);
    BOTH(bertc_kernel_gelu_backward(one, x, dy, E, true), bertc_kernel_gelu_backward(many, x, dy, E, true));
    expect_bitwise("gelu backward", one, many, E);
    bertc_threads_set_count(saved);
}
