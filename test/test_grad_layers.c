/* test/test_grad_layers.c — dropout and conv1d: finite-difference gradient
 * tests (gradcheck re-seeds the graph RNG before every evaluation, so a
 * dropout mask repeats across them), dropout's statistics and determinism, and
 * conv1d against a naive direct convolution with zero padding (k-1)/2. */
#include "test/test_util.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

TEST_SUITE_WITH_GRAPH(grad_layers, 71);

/* ------------------------------------------------------------------------ */
/* dropout                                                                   */
/* ------------------------------------------------------------------------ */

#define DROP_P 0.3f

static Var *f_dropout(Graph *g, Var **x, void *u) { (void)u; return bertc_ag_dropout(g, x[0], DROP_P); }

Test(grad_layers, dropout)
{
    int64_t s[2] = {4, 6};
    Var *in[1] = {test_param(params, 2, s, &rng, -1, 1)};
    bertc_ag_set_training(graph, true);
    test_gradcheck("dropout p = 0.3", graph, f_dropout, in, 1, NULL);
}

Test(grad_layers, dropout_eval_is_identity)
{
    int64_t s[2] = {4, 6};
    Var *x = test_param(params, 2, s, &rng, -1, 1);
    bertc_ag_set_training(graph, false);
    Var *y = bertc_ag_dropout(graph, x, DROP_P);
    for (int64_t i = 0; i < x->value.numel; i++)
        cr_assert(y->value.data[i] == x->value.data[i],
                  "dropout (eval): value at flat index %lld: got %.8g, expected %.8g",
                  (long long)i, (double)y->value.data[i], (double)x->value.data[i]);
    float seed[24];
    test_fill_uniform(seed, 24, &rng, -1, 1);
    bertc_ag_zero_grad(x);
    bertc_ag_backward_seeded(graph, y, seed);
    for (int64_t i = 0; i < x->value.numel; i++)
        cr_assert(x->grad[i] == seed[i],
                  "dropout (eval): gradient at flat index %lld: got %.8g, expected %.8g",
                  (long long)i, (double)x->grad[i], (double)seed[i]);
}

/* n elements uniform in [0.5, 1.5) (never 0, so a dropped one is obvious),
 * through dropout on a fresh training graph seeded with `seed`. */
static Var *dropout_on_fresh_graph(Graph **g, uint64_t seed, int64_t n)
{
    *g = bertc_ag_graph_create(1 << 20, seed);
    bertc_ag_set_training(*g, true);
    int64_t s[1] = {n};
    Var *x = bertc_ag_tensor(*g, 1, s, false);
    Rng r = bertc_rng_seed(5);
    test_fill_uniform(x->value.data, n, &r, 0.5f, 1.5f);
    Var *y = bertc_ag_dropout(*g, x, DROP_P);
    cr_assert(y != x, "dropout (training) returned its input unchanged");
    return y;
}

Test(grad_layers, dropout_same_seed_same_mask)
{
    Graph *g1, *g2, *g3;
    const int64_t n = 1000;
    Var *y1 = dropout_on_fresh_graph(&g1, 42, n), *y2 = dropout_on_fresh_graph(&g2, 42, n);
    Var *y3 = dropout_on_fresh_graph(&g3, 43, n);
    cr_assert(memcmp(y1->value.data, y2->value.data, sizeof(float) * (size_t)n) == 0,
              "dropout: two graphs seeded 42 drew different masks");
    cr_assert(memcmp(y1->value.data, y3->value.data, sizeof(float) * (size_t)n) != 0,
              "dropout: seeds 42 and 43 drew the same 1000-element mask");
    bertc_ag_graph_destroy(g1);
    bertc_ag_graph_destroy(g2);
    bertc_ag_graph_destroy(g3);
}

/* Over 10^5 elements the dropped fraction has standard deviation
 * sqrt(p (1-p) / n) = 0.00145; 0.01 is ~7 of them. Every survivor is exactly
 * x / (1 - p) up to float rounding. */
Test(grad_layers, dropout_fraction_and_scale)
{
    Graph *g;
    const int64_t n = 100000;
    Var *y = dropout_on_fresh_graph(&g, 9, n);
    Rng r = bertc_rng_seed(5);
    int64_t dropped = 0;
    for (int64_t i = 0; i < n; i++) {
        float x = 0.5f + (float)bertc_rng_uniform(&r);
        if (y->value.data[i] == 0.0f) {
            dropped++;
            continue;
        }
        double want = (double)x / (1.0 - (double)DROP_P);
        cr_assert(fabs(y->value.data[i] - want) <= 1e-6 * want,
                  "dropout: survivor at flat index %lld: got %.8g, expected x / (1 - p) = %.8g",
                  (long long)i, (double)y->value.data[i], want);
    }
    double fraction = (double)dropped / (double)n;
    cr_assert(fabs(fraction - DROP_P) <= 0.01,
              "dropout: dropped fraction %.5f of %lld elements, expected %.2f +- 0.01",
              fraction, (long long)n, (double)DROP_P);
    bertc_ag_graph_destroy(g);
}

/* ------------------------------------------------------------------------ */
/* conv1d                                                                    */
/* ------------------------------------------------------------------------ */

enum { CONV_B = 2, CONV_CIN = 3, CONV_COUT = 4, CONV_L = 7 };

static Var *f_conv1d(Graph *g, Var **x, void *u) { (void)u; return bertc_ag_conv1d(g, x[0], x[1], x[2]); }
static Var *f_conv1d_nobias(Graph *g, Var **x, void *u)
{
    (void)u;
    return bertc_ag_conv1d(g, x[0], x[1], NULL);
}

/* x (B, Cin, L), w (Cout, Cin, k), bias (Cout) */
static void conv_inputs(int64_t k, Var **in)
{
    int64_t xs[3] = {CONV_B, CONV_CIN, CONV_L}, ws[3] = {CONV_COUT, CONV_CIN, k};
    int64_t bs[1] = {CONV_COUT};
    in[0] = test_param(params, 3, xs, &rng, -1, 1);
    in[1] = test_param(params, 3, ws, &rng, -1, 1);
    in[2] = test_param(params, 1, bs, &rng, -1, 1);
}

Test(grad_layers, conv1d)
{
    static const int64_t ks[3] = {1, 3, 5};
    for (int i = 0; i < 3; i++)
        for (int bias = 1; bias >= 0; bias--) {
            Var *in[3];
            conv_inputs(ks[i], in);
            char op[48];
            snprintf(op, sizeof op, "conv1d k = %lld %s", (long long)ks[i],
                     bias ? "with bias" : "without bias");
            test_gradcheck(op, graph, bias ? f_conv1d : f_conv1d_nobias, in, bias ? 3 : 2, NULL);
        }
}

/* out[b][o][l] = bias[o] + sum_c sum_t w[o][c][t] x[b][c][l + t - P], with
 * x = 0 outside [0, L) and P = (k - 1) / 2, accumulated in double. */
Test(grad_layers, conv1d_values)
{
    static const int64_t ks[4] = {1, 3, 5, 7};
    for (int i = 0; i < 4; i++) {
        int64_t k = ks[i], P = (k - 1) / 2;
        Var *in[3];
        conv_inputs(k, in);
        const float *x = in[0]->value.data, *w = in[1]->value.data, *bias = in[2]->value.data;
        Var *y = bertc_ag_conv1d(graph, in[0], in[1], in[2]);
        int64_t want_shape[3] = {CONV_B, CONV_COUT, CONV_L};
        cr_assert(bertc_shape_equal(y->value.ndim, y->value.shape, 3, want_shape),
                  "conv1d k = %lld: the output must be (B, Cout, L)", (long long)k);
        for (int64_t b = 0; b < CONV_B; b++)
            for (int64_t o = 0; o < CONV_COUT; o++)
                for (int64_t l = 0; l < CONV_L; l++) {
                    double want = bias[o];
                    for (int64_t c = 0; c < CONV_CIN; c++)
                        for (int64_t t = 0; t < k; t++) {
                            int64_t src = l + t - P;
                            if (src >= 0 && src < CONV_L)
                                want += (double)w[(o * CONV_CIN + c) * k + t] *
                                        x[(b * CONV_CIN + c) * CONV_L + src];
                        }
                    int64_t at = (b * CONV_COUT + o) * CONV_L + l;
                    double got = y->value.data[at];
                    cr_assert(fabs(got - want) <= 1e-5 + 1e-5 * fabs(want),
                              "conv1d k = %lld: value at flat index %lld (b %lld, o %lld, "
                              "l %lld): got %.8g, expected %.8g",
                              (long long)k, (long long)at, (long long)b, (long long)o,
                              (long long)l, got, want);
                }
        bertc_ag_graph_reset(graph);
    }
}
