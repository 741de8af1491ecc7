/* test/test_zoo_naive.c — BERTC_NAIVE=1 (bertc_naive, nn/attention.c) takes
 * the unfused ops and gives the fused path's numbers.
 *
 * For every fixture of test/data/zoo/, the forward (eval mode) with its
 * labels runs twice, fused and naive: every output, the loss and every
 * parameter gradient must agree within max|naive - fused| <= 1e-5 max|fused|
 * + 1e-6 (the fused ops sum in another order; the two paths are the same
 * maths). The training path (Outputs.loss_only, where BertForMaskedLM's loss
 * is the fused linear + cross-entropy) is compared the same way. A second
 * test checks that the naive tape really holds no fused node and the fused
 * one does. */
#include "test/test_util.h"
#include "zoo/zoo.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAIVE_RTOL 1e-5
#define NAIVE_ATOL 1e-6

ParameterizedTestParameters(zoo_naive, same_numbers)
{
    TestName *cases;
    size_t n = test_zoo_cases(&cases);
    return cr_make_param_array(TestName, cases, n);
}

typedef struct Case {
    Arena *arena;
    Graph *graph;
    Model model;
    Batch batch;
} Case;

static void case_open(Case *c, const char *name)
{
    char path[512];
    BertcError err;
    c->arena = bertc_arena_create("naive", 1 << 20);
    c->graph = bertc_ag_graph_create(1 << 20, 7);
    bertc_ag_set_training(c->graph, false);
    snprintf(path, sizeof path, "%s/%s/config.json", TEST_ZOO_DIR, name);
    test_model_build(&c->model, c->arena, path, NULL);
    snprintf(path, sizeof path, "%s/%s/weights.safetensors", TEST_ZOO_DIR, name);
    test_model_load(&c->model, path);
    snprintf(path, sizeof path, "%s/%s/inputs.safetensors", TEST_ZOO_DIR, name);
    SafeTensors *st;
    cr_assert_eq(bertc_st_open_file(NULL, path, &st, &err), 0, "%s", err.msg);
    bertc_batch_init(&c->batch, "inputs.safetensors");
    cr_assert_eq(bertc_batch_from_safetensors(&c->batch, st, c->arena, &err), 0, "%s", err.msg);
    bertc_st_close(st);
}

static void case_close(Case *c)
{
    bertc_set_naive(false);
    bertc_ag_graph_destroy(c->graph);
    bertc_arena_destroy(c->arena);
}

/* What one run leaves: its float outputs and the parameter gradients,
 * copied out of the step arena. */
typedef struct Run {
    int n;
    const char *names[256];
    const float *data[256];
    int64_t numel[256];
} Run;

static void keep(Run *r, Arena *a, const char *name, const float *data, int64_t numel)
{
    cr_assert_lt(r->n, 256, "too many tensors");
    float *copy = bertc_arena_alloc(a, sizeof(float) * (size_t)(numel ? numel : 1));
    memcpy(copy, data, sizeof(float) * (size_t)numel);
    size_t len = strlen(name) + 1;
    char *name_copy = bertc_arena_alloc(a, len);
    memcpy(name_copy, name, len);
    r->names[r->n] = name_copy;
    r->data[r->n] = copy;
    r->numel[r->n++] = numel;
}

static void run_once(Case *c, bool naive, bool loss_only, Run *r)
{
    Outputs out;
    BertcError err;
    Registry *reg = c->model.reg;
    bertc_set_naive(naive);
    bertc_ag_graph_reset(c->graph);
    bertc_registry_zero_grad(reg);
    bertc_outputs_init(&out);
    out.loss_only = loss_only;
    cr_assert_eq(bertc_model_forward(&c->model, c->graph, &c->batch, &out, &err), 0, "%s",
                 err.msg);
    r->n = 0;
    for (int i = 0; i < out.n; i++)
        if (out.items[i].var)
            keep(r, c->arena, out.items[i].name, out.items[i].var->value.data,
                 out.items[i].var->value.numel);
    Var *loss = bertc_outputs_get(&out, "loss");
    if (!loss)
        return;
    bertc_ag_backward(c->graph, loss);
    for (int i = 0; i < reg->n_params; i++) {
        const Var *v = reg->params[i].var;
        if (reg->params[i].alias_of >= 0 || !v->grad)
            continue;
        char name[300];
        snprintf(name, sizeof name, "grad.%s", reg->params[i].name);
        keep(r, c->arena, name, v->grad, v->value.numel);
    }
}

static void expect_same(const char *c, const char *path, const Run *fused, const Run *naive)
{
    cr_assert_eq(naive->n, fused->n, "%s (%s): naive left %d tensors, fused %d", c, path,
                 naive->n, fused->n);
    for (int t = 0; t < fused->n; t++) {
        cr_assert_str_eq(naive->names[t], fused->names[t], "%s (%s): tensor %d", c, path, t);
        cr_assert_eq(naive->numel[t], fused->numel[t], "%s (%s): %s sizes differ", c, path,
                     fused->names[t]);
        double max_ref = 0, max_err = 0;
        int64_t worst = 0;
        for (int64_t k = 0; k < fused->numel[t]; k++) {
            double ref = fused->data[t][k], e = fabs(naive->data[t][k] - ref);
            if (isinf(ref) && naive->data[t][k] == ref)
                continue;
            max_ref = fmax(max_ref, fabs(ref));
            e = isnan(e) ? INFINITY : e;
            if (e > max_err) {
                max_err = e;
                worst = k;
            }
        }
        double allowed = NAIVE_RTOL * max_ref + NAIVE_ATOL;
        cr_expect(max_err <= allowed, "%s (%s): '%s' max |naive - fused| %.3g at %lld (naive "
                  "%.8g, fused %.8g), allowed %.3g", c, path, fused->names[t], max_err,
                  (long long)worst, (double)naive->data[t][worst], (double)fused->data[t][worst],
                  allowed);
    }
}

ParameterizedTest(TestName *t, zoo_naive, same_numbers)
{
    Case c;
    case_open(&c, t->name);
    static Run fused, naive;
    for (int loss_only = 0; loss_only < 2; loss_only++) {
        const char *path = loss_only ? "training, loss only" : "all outputs";
        run_once(&c, false, loss_only, &fused);
        run_once(&c, true, loss_only, &naive);
        cr_assert_gt(fused.n, 0, "%s: no outputs", t->name);
        expect_same(t->name, path, &fused, &naive);
    }
    case_close(&c);
}

/* The nodes of each op on the tape of one forward. */
static void count_ops(const Graph *g, int64_t counts[OP_COUNT])
{
    memset(counts, 0, sizeof(int64_t) * OP_COUNT);
    for (const Node *n = g->tail; n; n = n->prev)
        counts[n->op]++;
}

/* BertForMaskedLM in training: 2 layers, so 2 attention_scores, 2
 * attention_context, 4 add_layernorm and 1 linear_cross_entropy fused;
 * naive has none of them and a matmul pair, a softmax and layernorms. */
Test(zoo_naive, takes_the_unfused_ops)
{
    Case c;
    case_open(&c, "bert_mlm");
    int64_t fused[OP_COUNT], naive[OP_COUNT];
    Run r;
    run_once(&c, false, true, &r);
    count_ops(c.graph, fused);
    int64_t fused_nodes = c.graph->n_nodes;
    run_once(&c, true, true, &r);
    count_ops(c.graph, naive);
    cr_expect_eq(fused[OP_ATTENTION_SCORES], 2, "fused: %lld attention_scores nodes",
                 (long long)fused[OP_ATTENTION_SCORES]);
    cr_expect_eq(fused[OP_ADD_LAYERNORM], 4, "fused: %lld add_layernorm nodes",
                 (long long)fused[OP_ADD_LAYERNORM]);
    cr_expect_eq(fused[OP_LINEAR_CROSS_ENTROPY], 1, "fused: %lld linear_cross_entropy nodes",
                 (long long)fused[OP_LINEAR_CROSS_ENTROPY]);
    cr_expect_eq(naive[OP_ATTENTION_SCORES] + naive[OP_ATTENTION_CONTEXT] +
                     naive[OP_ADD_LAYERNORM] + naive[OP_LINEAR_CROSS_ENTROPY], 0,
                 "naive still records fused nodes");
    cr_expect_eq(naive[OP_MATMUL] - fused[OP_MATMUL], 4, "naive: %lld matmuls more, want 2 "
                 "a layer", (long long)(naive[OP_MATMUL] - fused[OP_MATMUL]));
    cr_expect_eq(naive[OP_CROSS_ENTROPY], 1, "naive: the MLM loss is not a cross_entropy");
    cr_expect_eq(naive[OP_LAYERNORM] - fused[OP_LAYERNORM], 4, "naive: %lld layernorms more",
                 (long long)(naive[OP_LAYERNORM] - fused[OP_LAYERNORM]));
    cr_expect_gt(c.graph->n_nodes, fused_nodes, "naive tape %lld nodes, fused %lld",
                 (long long)c.graph->n_nodes, (long long)fused_nodes);
    case_close(&c);
}

/* bertc_naive() reads BERTC_NAIVE once; "0" and "" mean fused. Criterion
 * runs each test in a fresh process, where nothing has read it yet. */
Test(zoo_naive, reads_the_environment_once)
{
    setenv("BERTC_NAIVE", "1", 1);
    cr_expect(bertc_naive(), "BERTC_NAIVE=1 read as fused");
    setenv("BERTC_NAIVE", "0", 1);
    cr_expect(bertc_naive(), "BERTC_NAIVE was read again: a change mid-run would mix paths");
    bertc_set_naive(false);
    cr_expect(!bertc_naive(), "bertc_set_naive(false) did not override the environment");
}

Test(zoo_naive, zero_means_fused)
{
    setenv("BERTC_NAIVE", "0", 1);
    cr_expect(!bertc_naive(), "BERTC_NAIVE=0 read as naive");
}
