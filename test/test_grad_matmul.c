/* test/test_grad_matmul.c — finite-difference gradient tests for matmul (2-D
 * in the four transpose combinations, batched 3-D and 4-D, batched with a
 * shared 2-D b) and linear, plus value checks against a naive triple loop in
 * double. Shapes are odd and non-square (M = 3, K = 5, N = 4) so that a
 * swapped dimension or leading stride cannot go unnoticed. */
#include "test/test_util.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>

TEST_SUITE_WITH_GRAPH(grad_matmul, 23);

typedef struct Trans {
    bool a, b;
} Trans;

static Var *f_matmul(Graph *g, Var **x, void *u)
{
    const Trans *t = u;
    return bertc_ag_matmul(g, x[0], x[1], t->a, t->b);
}

static Var *f_linear(Graph *g, Var **x, void *u) { (void)u; return bertc_ag_linear(g, x[0], x[1], x[2]); }
static Var *f_linear_nobias(Graph *g, Var **x, void *u)
{
    (void)u;
    return bertc_ag_linear(g, x[0], x[1], NULL);
}

/* a's and b's storage shapes for op(a) (batch..., M, K), op(b) (K, N): the
 * last two dims swap when the operand is transposed. */
static Var *operand(int nbatch, const int64_t *batch, int64_t rows, int64_t cols, bool trans)
{
    int64_t s[TENSOR_MAX_DIMS];
    for (int d = 0; d < nbatch; d++)
        s[d] = batch[d];
    s[nbatch] = trans ? cols : rows;
    s[nbatch + 1] = trans ? rows : cols;
    return test_param(params, nbatch + 2, s, &rng, -1, 1);
}

static const char *trans_name(Trans t)
{
    static const char *names[4] = {"NN", "NT", "TN", "TT"};
    return names[(t.a ? 2 : 0) + (t.b ? 1 : 0)];
}

static const Trans all_trans[4] = {{false, false}, {false, true}, {true, false}, {true, true}};

/* op(a) (batch..., M, K) times op(b) (batch_b..., K, N); nbatch_b is 0 for a
 * shared 2-D b. */
static void check_matmul(const char *what, int nbatch, const int64_t *batch, int nbatch_b,
                         int64_t M, int64_t K, int64_t N, Trans t)
{
    Var *in[2] = {operand(nbatch, batch, M, K, t.a), operand(nbatch_b, batch, K, N, t.b)};
    char op[64];
    snprintf(op, sizeof op, "matmul %s %s", what, trans_name(t));
    test_gradcheck(op, graph, f_matmul, in, 2, &t);
}

Test(grad_matmul, matmul_2d_all_transposes)
{
    for (int k = 0; k < 4; k++)
        check_matmul("2-D (3,5)x(5,4)", 0, NULL, 0, 3, 5, 4, all_trans[k]);
}

Test(grad_matmul, matmul_batched_3d)
{
    int64_t batch[1] = {2};
    for (int k = 0; k < 4; k++)
        check_matmul("3-D (2,3,5)x(2,5,4)", 1, batch, 1, 3, 5, 4, all_trans[k]);
}

/* Attention shapes (B, nh, S, d): scores = Q K^T (NT), context = P V (NN), and
 * the transposed-a cases. */
Test(grad_matmul, matmul_batched_4d_attention)
{
    int64_t batch[2] = {2, 3};
    for (int k = 0; k < 4; k++)
        check_matmul("4-D (2,3,4,3)x(2,3,3,5)", 2, batch, 2, 4, 3, 5, all_trans[k]);
}

/* b (K, N) shared by every batch entry: its gradient sums over the batch. The
 * forward takes a different GEMM path for trans_a false and true. */
Test(grad_matmul, matmul_shared_b)
{
    int64_t batch3[1] = {3}, batch4[2] = {2, 2};
    for (int k = 0; k < 4; k++) {
        check_matmul("3-D a, shared 2-D b", 1, batch3, 0, 3, 5, 4, all_trans[k]);
        check_matmul("4-D a, shared 2-D b", 2, batch4, 0, 3, 5, 4, all_trans[k]);
    }
}

static void check_linear(int ndim, const int64_t *xshape, bool bias)
{
    int64_t n_in = xshape[ndim - 1], n_out = 3;
    int64_t ws[2] = {n_out, n_in}, bs[1] = {n_out};
    Var *in[3] = {test_param(params, ndim, xshape, &rng, -1, 1),
                  test_param(params, 2, ws, &rng, -1, 1),
                  bias ? test_param(params, 1, bs, &rng, -1, 1) : NULL};
    char op[64];
    snprintf(op, sizeof op, "linear %d-D x, %s", ndim, bias ? "bias" : "no bias");
    test_gradcheck(op, graph, bias ? f_linear : f_linear_nobias, in, bias ? 3 : 2, NULL);
}

Test(grad_matmul, linear)
{
    int64_t x2[2] = {4, 5}, x3[3] = {2, 3, 5};
    check_linear(2, x2, true);
    check_linear(2, x2, false);
    check_linear(3, x3, true);
    check_linear(3, x3, false);
}

/* ------------------------------------------------------------------------ */
/* Values against a naive triple loop in double                             */
/* ------------------------------------------------------------------------ */

/* op(X)[i][j] for X stored (rows, cols) = op(X) or its transpose. */
static double op_at(const float *x, bool trans, int64_t i, int64_t j, int64_t op_cols,
                    int64_t op_rows)
{
    return trans ? x[j * op_rows + i] : x[i * op_cols + j];
}

static void expect_close(const char *op, const float *got, const double *want, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        cr_assert(fabs(got[i] - want[i]) <= 1e-5 + 1e-5 * fabs(want[i]),
                  "%s: value at flat index %lld: got %.8g, expected %.8g", op, (long long)i,
                  (double)got[i], want[i]);
}

/* batch entries of a (batch, ., .) times b (batch or shared, ., .) */
static void check_matmul_values(int64_t batch, bool b_shared, int64_t M, int64_t K, int64_t N,
                                Trans t)
{
    int64_t sa[3] = {batch, t.a ? K : M, t.a ? M : K};
    int64_t sb[3] = {batch, t.b ? N : K, t.b ? K : N};
    Var *a = test_param(params, 3, sa, &rng, -1, 1);
    Var *b = b_shared ? test_param(params, 2, sb + 1, &rng, -1, 1)
                      : test_param(params, 3, sb, &rng, -1, 1);
    Var *c = bertc_ag_matmul(graph, a, b, t.a, t.b);
    cr_assert(c->value.ndim == 3 && c->value.shape[0] == batch && c->value.shape[1] == M &&
                  c->value.shape[2] == N,
              "matmul %s: wrong output shape", trans_name(t));
    double want[64];
    cr_assert(batch * M * N <= 64);
    for (int64_t p = 0; p < batch; p++) {
        const float *A = a->value.data + p * M * K;
        const float *B = b->value.data + (b_shared ? 0 : p * K * N);
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double acc = 0.0;
                for (int64_t k = 0; k < K; k++)
                    acc += op_at(A, t.a, i, k, K, M) * op_at(B, t.b, k, j, N, K);
                want[(p * M + i) * N + j] = acc;
            }
    }
    char op[64];
    snprintf(op, sizeof op, "matmul %s%s", trans_name(t), b_shared ? " shared b" : "");
    expect_close(op, c->value.data, want, batch * M * N);
}

Test(grad_matmul, matmul_values)
{
    for (int k = 0; k < 4; k++) {
        check_matmul_values(1, false, 3, 5, 4, all_trans[k]);
        check_matmul_values(2, false, 3, 5, 4, all_trans[k]);
        check_matmul_values(2, true, 3, 5, 4, all_trans[k]);
    }
}

/* A hand-computed product: [[1,2],[3,4],[5,6]] x [[1,0,-1],[2,1,0]]. */
Test(grad_matmul, matmul_by_hand)
{
    int64_t sa[2] = {3, 2}, sb[2] = {2, 3};
    Var *a = bertc_ag_tensor(graph, 2, sa, false), *b = bertc_ag_tensor(graph, 2, sb, false);
    const float av[6] = {1, 2, 3, 4, 5, 6}, bv[6] = {1, 0, -1, 2, 1, 0};
    for (int i = 0; i < 6; i++) {
        a->value.data[i] = av[i];
        b->value.data[i] = bv[i];
    }
    Var *c = bertc_ag_matmul(graph, a, b, false, false);
    const double want[9] = {5, 2, -1, 11, 4, -3, 17, 6, -5};
    expect_close("matmul by hand", c->value.data, want, 9);
}

/* linear = x w^T + bias, against the same naive loop. */
Test(grad_matmul, linear_values)
{
    int64_t xs[3] = {2, 3, 5}, ws[2] = {4, 5}, bs[1] = {4};
    Var *x = test_param(params, 3, xs, &rng, -1, 1), *w = test_param(params, 2, ws, &rng, -1, 1);
    Var *bias = test_param(params, 1, bs, &rng, -1, 1);
    Var *y = bertc_ag_linear(graph, x, w, bias);
    cr_assert(y->value.ndim == 3 && y->value.shape[2] == 4, "linear: wrong output shape");
    double want[24];
    for (int64_t r = 0; r < 6; r++)
        for (int64_t o = 0; o < 4; o++) {
            double acc = bias->value.data[o];
            for (int64_t i = 0; i < 5; i++)
                acc += (double)x->value.data[r * 5 + i] * w->value.data[o * 5 + i];
            want[r * 4 + o] = acc;
        }
    expect_close("linear", y->value.data, want, 24);
}
