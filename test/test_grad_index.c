/* test/test_grad_index.c — finite-difference gradient tests for embedding,
 * index_select, gather and masked_fill, with value checks of the PyTorch
 * semantics (torch.nn.Embedding(padding_idx), torch.index_select,
 * torch.gather, Tensor.masked_fill). Integer inputs live in static arrays and
 * reach the checked functions through the `user` pointer. */
#include "test/test_util.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>

TEST_SUITE_WITH_GRAPH(grad_index, 47);

static void expect_value(const char *op, int64_t i, float got, float want)
{
    /* lookups move data: bit-identical */
    cr_assert(got == want, "%s: value at flat index %lld: got %.8g, expected %.8g", op,
              (long long)i, (double)got, (double)want);
}

/* ------------------------------------------------------------------------ */
/* embedding                                                                 */
/* ------------------------------------------------------------------------ */

/* ids (2, 4) into a (6, 3) table: id 1 three times, id 3 twice, id 4 never */
static int32_t ids_data[8] = {1, 3, 1, 0, 5, 3, 1, 2};

typedef struct EmbArgs {
    ITensor ids;
    int padding_idx;
} EmbArgs;

static Var *f_embedding(Graph *g, Var **x, void *u)
{
    const EmbArgs *e = u;
    return bertc_ag_embedding(g, x[0], &e->ids, e->padding_idx);
}

Test(grad_index, embedding_repeated_ids)
{
    int64_t ts[2] = {6, 3}, is[2] = {2, 4};
    EmbArgs e = {bertc_itensor_view(ids_data, 2, is), -1};
    Var *in[1] = {test_param(params, 2, ts, &rng, -1, 1)};
    test_gradcheck("embedding", graph, f_embedding, in, 1, &e);
}

/* With padding_idx = 3 the forward still reads row 3, but its gradient is
 * exactly 0 (so finite differences, which see the row, cannot check it):
 * compare the backward with the sum of the upstream rows by hand instead. */
Test(grad_index, embedding_padding_idx)
{
    int64_t ts[2] = {6, 3}, is[2] = {2, 4};
    const int64_t V = 6, H = 3;
    EmbArgs e = {bertc_itensor_view(ids_data, 2, is), 3};
    Var *table = test_param(params, 2, ts, &rng, -1, 1);
    Var *out = bertc_ag_embedding(graph, table, &e.ids, e.padding_idx);
    float seed[24];
    test_fill_uniform(seed, 24, &rng, -1, 1);
    bertc_ag_zero_grad(table);
    bertc_ag_backward_seeded(graph, out, seed);
    for (int64_t v = 0; v < V; v++)
        for (int64_t h = 0; h < H; h++) {
            double want = 0.0;
            for (int i = 0; i < 8; i++)
                if (ids_data[i] == v && v != e.padding_idx)
                    want += seed[i * H + h];
            double got = table->grad[v * H + h];
            if (v == e.padding_idx)
                cr_assert(got == 0.0,
                          "embedding: padding row %lld, column %lld has gradient %.8g, "
                          "expected exactly 0",
                          (long long)v, (long long)h, got);
            else
                cr_assert(fabs(got - want) <= 1e-6 + 1e-6 * fabs(want),
                          "embedding: gradient of table row %lld, column %lld (flat %lld): "
                          "got %.8g, expected %.8g",
                          (long long)v, (long long)h, (long long)(v * H + h), got, want);
        }
    /* and the forward reads the padding row like any other */
    for (int64_t i = 0; i < out->value.numel; i++)
        expect_value("embedding", i, out->value.data[i],
                     table->value.data[ids_data[i / H] * H + i % H]);
}

/* ------------------------------------------------------------------------ */
/* index_select                                                              */
/* ------------------------------------------------------------------------ */

typedef struct SelectArgs {
    int dim;
    ITensor idx;
} SelectArgs;

static Var *f_index_select(Graph *g, Var **x, void *u)
{
    const SelectArgs *s = u;
    return bertc_ag_index_select(g, x[0], s->dim, &s->idx);
}

/* a (4, 5, 3); along dim 0 pick {2, 0, 2, 3}, along dim 1 {4, 1, 1, 0, 4, 2},
 * along the last dim {2, 2, 0} */
static int32_t sel0[4] = {2, 0, 2, 3}, sel1[6] = {4, 1, 1, 0, 4, 2}, sel2[3] = {2, 2, 0};

static SelectArgs select_args(int k)
{
    int64_t n0[1] = {4}, n1[1] = {6}, n2[1] = {3};
    switch (k) {
    case 0: return (SelectArgs){0, bertc_itensor_view(sel0, 1, n0)};
    case 1: return (SelectArgs){1, bertc_itensor_view(sel1, 1, n1)};
    default: return (SelectArgs){-1, bertc_itensor_view(sel2, 1, n2)};
    }
}

Test(grad_index, index_select)
{
    int64_t s[3] = {4, 5, 3};
    Var *in[1] = {test_param(params, 3, s, &rng, -1, 1)};
    for (int k = 0; k < 3; k++) {
        SelectArgs a = select_args(k);
        char op[32];
        snprintf(op, sizeof op, "index_select dim %d", a.dim);
        test_gradcheck(op, graph, f_index_select, in, 1, &a);
    }
}

/* out[.., j, ..] = a[.., idx[j], ..] along dim */
Test(grad_index, index_select_values)
{
    int64_t s[3] = {4, 5, 3}, c[3];
    Var *a = test_param(params, 3, s, &rng, -1, 1);
    for (int k = 0; k < 3; k++) {
        SelectArgs sa = select_args(k);
        int dim = sa.dim < 0 ? 2 : sa.dim;
        Var *out = bertc_ag_index_select(graph, a, sa.dim, &sa.idx);
        int64_t shape[3] = {4, 5, 3};
        shape[dim] = sa.idx.numel;
        char op[32];
        snprintf(op, sizeof op, "index_select dim %d", dim);
        cr_assert(bertc_shape_equal(out->value.ndim, out->value.shape, 3, shape),
                  "%s: wrong output shape", op);
        for (int64_t i = 0; i < out->value.numel; i++) {
            test_unflatten(i, 3, shape, c);
            c[dim] = sa.idx.data[c[dim]];
            expect_value(op, i, out->value.data[i], a->value.data[test_flatten(3, s, c)]);
        }
    }
}

/* ------------------------------------------------------------------------ */
/* gather                                                                    */
/* ------------------------------------------------------------------------ */

typedef struct GatherArgs {
    int dim;
    ITensor idx;
} GatherArgs;

static Var *f_gather(Graph *g, Var **x, void *u)
{
    const GatherArgs *ga = u;
    return bertc_ag_gather(g, x[0], ga->dim, &ga->idx);
}

/* a (3, 4, 5). The index may be smaller than a outside dim (torch allows
 * idx.size(d) <= a.size(d)) and longer along dim, with repeats. */
static int32_t gidx[3][84];
static const int64_t gshape[3][3] = {{4, 3, 5}, {2, 6, 4}, {3, 4, 7}};

static GatherArgs gather_args(int k)
{
    static const int64_t a_shape[3] = {3, 4, 5};
    int dim = k == 2 ? -1 : k;
    GatherArgs ga = {dim, bertc_itensor_view(gidx[k], 3, gshape[k])};
    for (int64_t i = 0; i < ga.idx.numel; i++)
        gidx[k][i] = (int32_t)bertc_rng_randint(&rng, 0, a_shape[k] - 1);
    return ga;
}

Test(grad_index, gather)
{
    int64_t s[3] = {3, 4, 5};
    Var *in[1] = {test_param(params, 3, s, &rng, -1, 1)};
    for (int k = 0; k < 3; k++) {
        GatherArgs ga = gather_args(k);
        char op[32];
        snprintf(op, sizeof op, "gather dim %d", ga.dim);
        test_gradcheck(op, graph, f_gather, in, 1, &ga);
    }
}

/* torch.gather: out[c] = a[c with c[dim] replaced by idx[c]] */
Test(grad_index, gather_values)
{
    int64_t s[3] = {3, 4, 5}, c[3];
    Var *a = test_param(params, 3, s, &rng, -1, 1);
    for (int k = 0; k < 3; k++) {
        GatherArgs ga = gather_args(k);
        Var *out = bertc_ag_gather(graph, a, ga.dim, &ga.idx);
        char op[32];
        snprintf(op, sizeof op, "gather dim %d", k);
        cr_assert(bertc_shape_equal(out->value.ndim, out->value.shape, 3, gshape[k]),
                  "%s: the output must have the index's shape", op);
        for (int64_t i = 0; i < out->value.numel; i++) {
            test_unflatten(i, 3, gshape[k], c);
            c[k] = ga.idx.data[i];
            expect_value(op, i, out->value.data[i], a->value.data[test_flatten(3, s, c)]);
        }
    }
    /* by hand: a (2, 2) = [[1, 2], [3, 4]], gather(dim 1, [[0, 0], [1, 0]]) =
     * [[1, 1], [4, 3]] (the example of the torch.gather documentation) */
    int64_t s2[2] = {2, 2};
    Var *m = bertc_ag_tensor(graph, 2, s2, false);
    for (int i = 0; i < 4; i++)
        m->value.data[i] = (float)(i + 1);
    int32_t id[4] = {0, 0, 1, 0};
    ITensor it = bertc_itensor_view(id, 2, s2);
    Var *out = bertc_ag_gather(graph, m, 1, &it);
    const float want[4] = {1, 1, 4, 3};
    for (int i = 0; i < 4; i++)
        expect_value("gather by hand", i, out->value.data[i], want[i]);
}

/* ------------------------------------------------------------------------ */
/* masked_fill                                                               */
/* ------------------------------------------------------------------------ */

/* An attention-style mask (B=2, 1, 1, S=4) over scores (2, 3, 4, 4): key
 * positions 1 and 3 of batch 0 and position 0 of batch 1 are masked. */
static int32_t mask_data[8] = {0, 1, 0, 1, 1, 0, 0, 0};
#define FILL_VALUE (-10000.0f)

static Var *f_masked_fill(Graph *g, Var **x, void *u)
{
    return bertc_ag_masked_fill(g, x[0], u, FILL_VALUE);
}

static bool masked_at(int64_t i)
{
    /* a (2,3,4,4): batch b = i / 48, key position j = i % 4 */
    return mask_data[(i / 48) * 4 + i % 4] != 0;
}

Test(grad_index, masked_fill)
{
    int64_t s[4] = {2, 3, 4, 4}, ms[4] = {2, 1, 1, 4};
    ITensor mask = bertc_itensor_view(mask_data, 4, ms);
    Var *in[1] = {test_param(params, 4, s, &rng, -1, 1)};
    test_gradcheck("masked_fill", graph, f_masked_fill, in, 1, &mask);
    /* the filled positions get exactly zero gradient, the others dy */
    Var *out = bertc_ag_masked_fill(graph, in[0], &mask, FILL_VALUE);
    float seed[96];
    test_fill_uniform(seed, 96, &rng, 0.5f, 1.5f);
    bertc_ag_zero_grad(in[0]);
    bertc_ag_backward_seeded(graph, out, seed);
    for (int64_t i = 0; i < 96; i++) {
        float want = masked_at(i) ? 0.0f : seed[i];
        cr_assert(in[0]->grad[i] == want,
                  "masked_fill: gradient at flat index %lld (%s): got %.8g, expected %.8g",
                  (long long)i, masked_at(i) ? "filled" : "kept", (double)in[0]->grad[i],
                  (double)want);
        expect_value("masked_fill", i, out->value.data[i],
                     masked_at(i) ? FILL_VALUE : in[0]->value.data[i]);
    }
}
