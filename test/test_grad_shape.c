/* test/test_grad_shape.c — finite-difference gradient tests for reshape,
 * permute/transpose, concat, slice and split, and value checks that each puts
 * every element where PyTorch would. */
#include "test/test_util.h"

#include <criterion/criterion.h>
#include <stdio.h>

TEST_SUITE_WITH_GRAPH(grad_shape, 31);

static void expect_shape(const char *op, const Var *v, int ndim, const int64_t *shape)
{
    char got[SHAPE_STR_LEN], want[SHAPE_STR_LEN];
    cr_assert(bertc_shape_equal(v->value.ndim, v->value.shape, ndim, shape),
              "%s: output shape %s, expected %s", op,
              bertc_shape_str(got, sizeof got, v->value.ndim, v->value.shape),
              bertc_shape_str(want, sizeof want, ndim, shape));
}

static void expect_value(const char *op, int64_t i, float got, float want)
{
    /* pure data movement: the values must be bit-identical */
    cr_assert(got == want, "%s: value at flat index %lld: got %.8g, expected %.8g", op,
              (long long)i, (double)got, (double)want);
}

/* ------------------------------------------------------------------------ */
/* reshape                                                                   */
/* ------------------------------------------------------------------------ */

typedef struct ReshapeArgs {
    int ndim;
    int64_t shape[4];
} ReshapeArgs;

/* gradcheck's random output weights make the gradient of every element
 * different, so a reshape backward that moved entries around would fail. */
static Var *f_reshape(Graph *g, Var **x, void *u)
{
    const ReshapeArgs *r = u;
    return bertc_ag_reshape(g, x[0], r->ndim, r->shape);
}

Test(grad_shape, reshape)
{
    int64_t s[3] = {2, 3, 4};
    Var *in[1] = {test_param(params, 3, s, &rng, -1, 1)};
    ReshapeArgs flat = {2, {6, 4}}, infer = {3, {4, -1, 2}}, last = {2, {3, -1}};
    test_gradcheck("reshape (6,4)", graph, f_reshape, in, 1, &flat);
    test_gradcheck("reshape (4,-1,2)", graph, f_reshape, in, 1, &infer);
    test_gradcheck("reshape (3,-1)", graph, f_reshape, in, 1, &last);
}

Test(grad_shape, reshape_values)
{
    int64_t s[3] = {2, 3, 4};
    Var *a = test_param(params, 3, s, &rng, -1, 1);
    int64_t target[3] = {4, -1, 2}, want[3] = {4, 3, 2};
    Var *r = bertc_ag_reshape(graph, a, 3, target);
    expect_shape("reshape (4,-1,2)", r, 3, want);
    cr_assert(r->value.data == a->value.data, "reshape: the result must share storage");
}

/* ------------------------------------------------------------------------ */
/* permute / transpose                                                       */
/* ------------------------------------------------------------------------ */

static Var *f_permute(Graph *g, Var **x, void *u) { return bertc_ag_permute(g, x[0], u); }

/* attention's (B, S, nh, d) -> (B, nh, S, d), and a cyclic 3-D one */
static const int perm4[4] = {0, 2, 1, 3};
static const int perm3[3] = {2, 0, 1};

Test(grad_shape, permute)
{
    int64_t s4[4] = {2, 3, 4, 5}, s3[3] = {2, 3, 4};
    Var *a4[1] = {test_param(params, 4, s4, &rng, -1, 1)};
    Var *a3[1] = {test_param(params, 3, s3, &rng, -1, 1)};
    test_gradcheck("permute {0,2,1,3}", graph, f_permute, a4, 1, (void *)perm4);
    test_gradcheck("permute {2,0,1}", graph, f_permute, a3, 1, (void *)perm3);
}

/* torch.permute: out.shape[d] = a.shape[perm[d]], and the element at output
 * coordinates c is a's element at coordinates c' with c'[perm[d]] = c[d]. */
static void check_permute_values(const char *op, Var *a, const int *perm, Var *out)
{
    int nd = a->value.ndim;
    int64_t shape[TENSOR_MAX_DIMS], c[TENSOR_MAX_DIMS], src[TENSOR_MAX_DIMS];
    for (int d = 0; d < nd; d++)
        shape[d] = a->value.shape[perm[d]];
    expect_shape(op, out, nd, shape);
    for (int64_t i = 0; i < out->value.numel; i++) {
        test_unflatten(i, nd, shape, c);
        for (int d = 0; d < nd; d++)
            src[perm[d]] = c[d];
        expect_value(op, i, out->value.data[i],
                     a->value.data[test_flatten(nd, a->value.shape, src)]);
    }
}

Test(grad_shape, permute_values)
{
    int64_t s4[4] = {2, 3, 4, 5}, s3[3] = {2, 3, 4};
    Var *a4 = test_param(params, 4, s4, &rng, -1, 1), *a3 = test_param(params, 3, s3, &rng, -1, 1);
    check_permute_values("permute {0,2,1,3}", a4, perm4, bertc_ag_permute(graph, a4, perm4));
    check_permute_values("permute {2,0,1}", a3, perm3, bertc_ag_permute(graph, a3, perm3));
    /* one element by hand: a4[1][2][3][4] lands at out[1][3][2][4] */
    Var *p = bertc_ag_permute(graph, a4, perm4);
    expect_value("permute {0,2,1,3} a[1][2][3][4]", ((1 * 4 + 3) * 3 + 2) * 5 + 4,
                 p->value.data[((1 * 4 + 3) * 3 + 2) * 5 + 4],
                 a4->value.data[((1 * 3 + 2) * 4 + 3) * 5 + 4]);
}

typedef struct TransposeArgs {
    int dim0, dim1;
} TransposeArgs;

static Var *f_transpose(Graph *g, Var **x, void *u)
{
    const TransposeArgs *t = u;
    return bertc_ag_transpose(g, x[0], t->dim0, t->dim1);
}

Test(grad_shape, transpose)
{
    int64_t s[3] = {2, 3, 4};
    Var *in[1] = {test_param(params, 3, s, &rng, -1, 1)};
    TransposeArgs last2 = {-2, -1}, outer = {0, 2};
    test_gradcheck("transpose(-2, -1)", graph, f_transpose, in, 1, &last2);
    test_gradcheck("transpose(0, 2)", graph, f_transpose, in, 1, &outer);
    const int perm[3] = {0, 2, 1};
    check_permute_values("transpose(-2, -1)", in[0], perm, bertc_ag_transpose(graph, in[0], -2, -1));
}

/* ------------------------------------------------------------------------ */
/* concat                                                                    */
/* ------------------------------------------------------------------------ */

static Var *f_concat(Graph *g, Var **x, void *u) { return bertc_ag_concat(g, x, 3, *(const int *)u); }

/* Three inputs of sizes 1, 3, 2 along dim; (2, 3, 4) elsewhere. */
static void make_concat_inputs(int dim, Var **in)
{
    static const int64_t sizes[3] = {1, 3, 2};
    for (int k = 0; k < 3; k++) {
        int64_t s[3] = {2, 3, 4};
        s[dim] = sizes[k];
        in[k] = test_param(params, 3, s, &rng, -1, 1);
    }
}

Test(grad_shape, concat)
{
    for (int dim = 0; dim < 3; dim++) {
        Var *in[3];
        make_concat_inputs(dim, in);
        char op[32];
        snprintf(op, sizeof op, "concat dim %d", dim);
        test_gradcheck(op, graph, f_concat, in, 3, &dim);
    }
}

/* out along dim = in[0] then in[1] then in[2]: element c of the output comes
 * from the input whose range along dim holds c[dim]. */
Test(grad_shape, concat_values)
{
    for (int dim = 0; dim < 3; dim++) {
        Var *in[3];
        make_concat_inputs(dim, in);
        Var *out = bertc_ag_concat(graph, in, 3, dim);
        int64_t shape[3] = {2, 3, 4}, c[3];
        shape[dim] = 1 + 3 + 2;
        char op[32];
        snprintf(op, sizeof op, "concat dim %d", dim);
        expect_shape(op, out, 3, shape);
        for (int64_t i = 0; i < out->value.numel; i++) {
            test_unflatten(i, 3, shape, c);
            int k = 0;
            while (c[dim] >= in[k]->value.shape[dim])
                c[dim] -= in[k++]->value.shape[dim];
            expect_value(op, i, out->value.data[i],
                         in[k]->value.data[test_flatten(3, in[k]->value.shape, c)]);
        }
        bertc_ag_graph_reset(graph);
    }
}

/* ------------------------------------------------------------------------ */
/* slice / split                                                             */
/* ------------------------------------------------------------------------ */

typedef struct SliceArgs {
    int dim;
    int64_t start, end;
} SliceArgs;

static Var *f_slice(Graph *g, Var **x, void *u)
{
    const SliceArgs *s = u;
    return bertc_ag_slice(g, x[0], s->dim, s->start, s->end);
}

/* interior ranges of a (5, 6, 7), along dims 0, 1 and the last (as -1) */
static const SliceArgs slices[3] = {{0, 1, 4}, {1, 2, 5}, {-1, 3, 6}};

Test(grad_shape, slice)
{
    int64_t s[3] = {5, 6, 7};
    Var *in[1] = {test_param(params, 3, s, &rng, -1, 1)};
    for (int k = 0; k < 3; k++) {
        char op[48];
        snprintf(op, sizeof op, "slice dim %d [%lld, %lld)", slices[k].dim,
                 (long long)slices[k].start, (long long)slices[k].end);
        test_gradcheck(op, graph, f_slice, in, 1, (void *)&slices[k]);
    }
}

Test(grad_shape, slice_values)
{
    int64_t s[3] = {5, 6, 7}, c[3];
    Var *a = test_param(params, 3, s, &rng, -1, 1);
    for (int k = 0; k < 3; k++) {
        int dim = slices[k].dim < 0 ? 2 : slices[k].dim;
        Var *out = bertc_ag_slice(graph, a, slices[k].dim, slices[k].start, slices[k].end);
        int64_t shape[3] = {5, 6, 7};
        shape[dim] = slices[k].end - slices[k].start;
        char op[32];
        snprintf(op, sizeof op, "slice dim %d", dim);
        expect_shape(op, out, 3, shape);
        for (int64_t i = 0; i < out->value.numel; i++) {
            test_unflatten(i, 3, shape, c);
            c[dim] += slices[k].start;
            expect_value(op, i, out->value.data[i], a->value.data[test_flatten(3, s, c)]);
        }
    }
}

/* split (3, 6, 2) along dim 1 into sizes {2, 3, 1}; the checked function
 * returns piece `which`, so the other pieces' entries must get no gradient. */
static const int64_t split_sizes[3] = {2, 3, 1};

static Var *f_split_piece(Graph *g, Var **x, void *u)
{
    Var *pieces[3];
    bertc_ag_split(g, x[0], 1, 3, split_sizes, pieces);
    return pieces[*(const int *)u];
}

Test(grad_shape, split)
{
    int64_t s[3] = {3, 6, 2};
    Var *in[1] = {test_param(params, 3, s, &rng, -1, 1)};
    for (int which = 0; which < 3; which++) {
        char op[32];
        snprintf(op, sizeof op, "split piece %d", which);
        test_gradcheck(op, graph, f_split_piece, in, 1, &which);
    }
}

Test(grad_shape, split_values)
{
    int64_t s[3] = {3, 6, 2}, c[3];
    Var *a = test_param(params, 3, s, &rng, -1, 1), *pieces[3];
    bertc_ag_split(graph, a, -2, 3, split_sizes, pieces);
    int64_t start = 0;
    for (int k = 0; k < 3; k++) {
        int64_t shape[3] = {3, split_sizes[k], 2};
        char op[32];
        snprintf(op, sizeof op, "split piece %d", k);
        expect_shape(op, pieces[k], 3, shape);
        for (int64_t i = 0; i < pieces[k]->value.numel; i++) {
            test_unflatten(i, 3, shape, c);
            c[1] += start;
            expect_value(op, i, pieces[k]->value.data[i], a->value.data[test_flatten(3, s, c)]);
        }
        start += split_sizes[k];
    }
}
