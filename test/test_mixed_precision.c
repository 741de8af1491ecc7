/* test/test_mixed_precision.c — a graph in mixed precision (bertc_ag_set_bf16).
 *
 * linear's forward and both products of its backward must be exactly
 * bertc_gemm_bf16 on the float32 values (plus the float32 bias), so the
 * gradients of a bf16 step are what the definition says, bit for bit;
 * linear_cross_entropy's loss and gradients must be close to the float32
 * ones, and the parameters and gradients stay float32 buffers the
 * optimizer reads as before. */
#include "test/test_util.h"
#include "tensor/kernels.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

TEST_SUITE_WITH_GRAPH(mixed_precision, 31);

static void assert_same(const char *what, const float *got, const float *want, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (memcmp(&got[i], &want[i], sizeof(float)) != 0)
            cr_assert_fail("%s[%lld] = %.9g, want %.9g", what, (long long)i, got[i], want[i]);
}

Test(mixed_precision, linear_forward_and_backward_are_the_bf16_products)
{
    const int64_t rows = 37, n_in = 70, n_out = 53;
    Var *x = test_param(params, 2, (int64_t[]){rows, n_in}, &rng, -1, 1);
    Var *w = test_param(params, 2, (int64_t[]){n_out, n_in}, &rng, -1, 1);
    Var *b = test_param(params, 1, (int64_t[]){n_out}, &rng, -1, 1);
    float *dy = malloc(sizeof(float) * (size_t)(rows * n_out));
    float *want_y = malloc(sizeof(float) * (size_t)(rows * n_out));
    float *want_dx = malloc(sizeof(float) * (size_t)(rows * n_in));
    float *want_dw = calloc((size_t)(n_out * n_in), sizeof(float));
    cr_assert(dy && want_y && want_dx && want_dw);
    test_fill_uniform(dy, rows * n_out, &rng, -1, 1);

    bertc_gemm_bf16(false, true, rows, n_out, n_in, x->value.data, n_in, w->value.data, n_in,
                    0.0f, want_y, n_out);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < n_out; j++)
            want_y[r * n_out + j] += b->value.data[j];
    bertc_gemm_bf16(false, false, rows, n_in, n_out, dy, n_out, w->value.data, n_in, 0.0f,
                    want_dx, n_in);
    bertc_gemm_bf16(true, false, n_out, n_in, rows, dy, n_out, x->value.data, n_in, 1.0f,
                    want_dw, n_in);

    cr_assert(!bertc_ag_set_bf16(graph, true), "a new graph is float32");
    Var *y = bertc_ag_linear(graph, x, w, b);
    assert_same("y", y->value.data, want_y, rows * n_out);
    bertc_ag_backward_seeded(graph, y, dy);
    assert_same("dx", x->grad, want_dx, rows * n_in);
    assert_same("dw", w->grad, want_dw, n_out * n_in);
    for (int64_t j = 0; j < n_out; j++) {   /* the bias gradient is a float32 sum */
        float s = 0.0f;
        for (int64_t r = 0; r < rows; r++)
            s += dy[r * n_out + j];
        cr_assert_float_eq(b->grad[j], s, 1e-5f);
    }
    cr_assert(bertc_ag_set_bf16(graph, false));
    free(dy), free(want_y), free(want_dx), free(want_dw);
}

/* Loss and gradients of linear_cross_entropy over V classes, float32 or
 * bf16, into loss and the gradient copies. */
static void lce(bool bf16, Var *x, Var *w, Var *b, const ITensor *t, float *loss, float *gx,
                float *gw)
{
    bertc_ag_graph_reset(graph);
    memset(x->grad, 0, sizeof(float) * (size_t)x->value.numel);
    memset(w->grad, 0, sizeof(float) * (size_t)w->value.numel);
    memset(b->grad, 0, sizeof(float) * (size_t)b->value.numel);
    bertc_ag_set_bf16(graph, bf16);
    Var *l = bertc_ag_linear_cross_entropy(graph, x, w, b, t, -100);
    bertc_ag_backward(graph, l);
    *loss = l->value.data[0];
    memcpy(gx, x->grad, sizeof(float) * (size_t)x->value.numel);
    memcpy(gw, w->grad, sizeof(float) * (size_t)w->value.numel);
    bertc_ag_set_bf16(graph, false);
}

Test(mixed_precision, linear_cross_entropy_is_close_to_float32)
{
    const int64_t N = 24, H = 64, V = 300;
    Var *x = test_param(params, 2, (int64_t[]){N, H}, &rng, -1, 1);
    Var *w = test_param(params, 2, (int64_t[]){V, H}, &rng, -0.3f, 0.3f);
    Var *b = test_param(params, 1, (int64_t[]){V}, &rng, -0.1f, 0.1f);
    int32_t tgt[24];
    for (int i = 0; i < N; i++)
        tgt[i] = i % 5 == 0 ? -100 : (int32_t)(i * 37 % V);
    ITensor t = {.ndim = 1, .shape = {N}, .numel = N, .data = tgt};
    /* Gradients exist only once a backward ran; one float32 pass makes them. */
    float l32, l16;
    float *gx32 = malloc(sizeof(float) * N * H), *gx16 = malloc(sizeof(float) * N * H);
    float *gw32 = malloc(sizeof(float) * V * H), *gw16 = malloc(sizeof(float) * V * H);
    cr_assert(gx32 && gx16 && gw32 && gw16);
    bertc_ag_graph_reset(graph);
    bertc_ag_backward(graph, bertc_ag_linear_cross_entropy(graph, x, w, b, &t, -100));
    lce(false, x, w, b, &t, &l32, gx32, gw32);
    lce(true, x, w, b, &t, &l16, gx16, gw16);
    cr_assert(fabsf(l16 - l32) < 1e-2f * fabsf(l32), "loss %g (bf16) vs %g", l16, l32);
    cr_assert(l16 != l32, "bf16 products should move the loss a little");
    double num = 0.0, den = 0.0;
    for (int64_t i = 0; i < V * H; i++)
        num += (gw16[i] - gw32[i]) * (double)(gw16[i] - gw32[i]), den += gw32[i] * (double)gw32[i];
    cr_assert(sqrt(num / den) < 2e-2, "dw relative error %g", sqrt(num / den));
    num = den = 0.0;
    for (int64_t i = 0; i < N * H; i++)
        num += (gx16[i] - gx32[i]) * (double)(gx16[i] - gx32[i]), den += gx32[i] * (double)gx32[i];
    cr_assert(sqrt(num / den) < 2e-2, "dx relative error %g", sqrt(num / den));
    free(gx32), free(gx16), free(gw32), free(gw16);
}

/* The oracle of linear_cross_entropy's gradients in mixed precision, as
 * autograd/ops_linear_ce.c defines them for one chunk of counted rows: the
 * three products by bertc_gemm_bf16 on the float32 values (e included),
 * the row scale s and the one-hot term in float32. The op reads e through
 * a bf16 copy it makes once; the bits must be these. */
static void lce_bf16_oracle(const Var *x, const Var *w, const Var *b, const int32_t *tgt,
                            int64_t N, float *gx, float *gw, float *gb)
{
    int64_t H = x->value.shape[1], V = w->value.shape[0], Ha = H + 1, n = 0;
    int32_t rows[64];
    for (int64_t i = 0; i < N; i++)
        if (tgt[i] != -100)
            rows[n++] = (int32_t)i;
    float inv_n = 1.0f / (float)n;
    float *xa = malloc(sizeof(float) * (size_t)(n * Ha));
    float *xs = malloc(sizeof(float) * (size_t)(n * Ha));
    float *z = malloc(sizeof(float) * (size_t)(n * V)), *s = malloc(sizeof(float) * (size_t)n);
    float *dx = malloc(sizeof(float) * (size_t)(n * H));
    float *dwb = malloc(sizeof(float) * (size_t)(V * Ha));
    cr_assert(xa && xs && z && s && dx && dwb);
    for (int64_t r = 0; r < n; r++) {
        memcpy(xa + r * Ha, x->value.data + rows[r] * H, sizeof(float) * (size_t)H);
        xa[r * Ha + H] = 1.0f;
    }
    bertc_gemm_bf16(false, true, n, V, H, xa, Ha, w->value.data, H, 0.0f, z, V);
    for (int64_t r = 0; r < n; r++) {
        float max = bertc_kernel_add_max(z + r * V, b->value.data, V);
        double sum = bertc_kernel_exp_sum(z + r * V, z + r * V, max, V);
        s[r] = (float)(1.0 / sum) * inv_n;
    }
    bertc_gemm_bf16(false, false, n, H, V, z, V, w->value.data, H, 0.0f, dx, H);
    memset(gx, 0, sizeof(float) * (size_t)(N * H));
    for (int64_t r = 0; r < n; r++)
        for (int64_t h = 0; h < H; h++)
            gx[rows[r] * H + h] =
                s[r] * dx[r * H + h] - inv_n * w->value.data[tgt[rows[r]] * H + h];
    for (int64_t r = 0; r < n; r++)
        for (int64_t h = 0; h < Ha; h++)
            xs[r * Ha + h] = s[r] * xa[r * Ha + h];
    bertc_gemm_bf16(true, false, V, Ha, n, z, V, xs, Ha, 0.0f, dwb, Ha);
    for (int64_t r = 0; r < n; r++)
        bertc_kernel_axpy(dwb + (int64_t)tgt[rows[r]] * Ha, -inv_n, xa + r * Ha, Ha);
    for (int64_t v = 0; v < V; v++) {
        memcpy(gw + v * H, dwb + v * Ha, sizeof(float) * (size_t)H);
        gb[v] = dwb[v * Ha + H];
    }
    free(xa), free(xs), free(z), free(s), free(dx), free(dwb);
}

Test(mixed_precision, linear_cross_entropy_gradients_are_the_bf16_products)
{
    const int64_t N = 40, H = 24, V = 203;
    Var *x = test_param(params, 2, (int64_t[]){N, H}, &rng, -1, 1);
    Var *w = test_param(params, 2, (int64_t[]){V, H}, &rng, -0.5f, 0.5f);
    Var *b = test_param(params, 1, (int64_t[]){V}, &rng, -0.1f, 0.1f);
    int32_t tgt[40];
    for (int i = 0; i < N; i++)
        tgt[i] = i % 6 == 1 ? -100 : (int32_t)(i * 53 % V);
    ITensor t = {.ndim = 1, .shape = {N}, .numel = N, .data = tgt};
    float *gx = malloc(sizeof(float) * N * H), *gw = malloc(sizeof(float) * V * H);
    float *ox = malloc(sizeof(float) * N * H), *ow = malloc(sizeof(float) * V * H);
    float *ob = malloc(sizeof(float) * V);
    cr_assert(gx && gw && ox && ow && ob);
    bertc_ag_graph_reset(graph);
    bertc_ag_backward(graph, bertc_ag_linear_cross_entropy(graph, x, w, b, &t, -100));
    float loss;
    lce(true, x, w, b, &t, &loss, gx, gw);
    lce_bf16_oracle(x, w, b, tgt, N, ox, ow, ob);
    assert_same("dx", gx, ox, N * H);
    assert_same("dw", gw, ow, V * H);
    assert_same("dbias", b->grad, ob, V);
    free(gx), free(gw), free(ox), free(ow), free(ob);
}
