/* test/test_zoo_fast_paths.c — the paths taken for speed and memory give the
 * results of the plain ones, on the BertForMaskedLM fixture:
 *  - training (Outputs.loss_only): the LM head on the labelled rows only and
 *    the fused decoder + CE give the loss and every parameter gradient of the
 *    full (B, S, V) logits path;
 *  - inference (no_grad): the per-layer arena release gives the same hidden
 *    states and attention maps, bit for bit, as a forward that keeps every
 *    activation. */
#include "test/test_util.h"
#include "zoo/zoo.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define CASE "test/data/zoo/bert_mlm/"

static Arena *arena;
static Graph *graph;
static Model model;
static Batch batch;

static void setup(void)
{
    test_open(&arena, &graph);
    bertc_ag_set_training(graph, false);
    test_model_build(&model, arena, CASE "config.json", NULL);
    test_model_load(&model, CASE "weights.safetensors");
    BertcError err;
    SafeTensors *st;
    cr_assert_eq(bertc_st_open_file(NULL, CASE "inputs.safetensors", &st, &err), 0, "%s", err.msg);
    bertc_batch_init(&batch, "inputs.safetensors");
    cr_assert_eq(bertc_batch_from_safetensors(&batch, st, arena, &err), 0, "%s", err.msg);
    bertc_st_close(st);
}

static void teardown(void) { test_close(arena, graph); }

TestSuite(zoo_fast_paths, .init = setup, .fini = teardown);

/* Forward + backward; returns the loss and leaves the gradients in place. */
static float loss_and_grads(bool loss_only)
{
    Outputs out;
    BertcError err;
    bertc_ag_graph_reset(graph);
    bertc_registry_zero_grad(model.reg);
    bertc_outputs_init(&out);
    out.loss_only = loss_only;
    cr_assert_eq(bertc_model_forward(&model, graph, &batch, &out, &err), 0, "%s", err.msg);
    Var *loss = bertc_outputs_get(&out, "loss");
    cr_assert_not_null(loss, "no loss");
    cr_assert(!loss_only || !bertc_outputs_get(&out, "logits"), "loss_only still stored the logits");
    bertc_ag_backward(graph, loss);
    return loss->value.data[0];
}

Test(zoo_fast_paths, mlm_loss_only_matches_the_full_logits)
{
    Registry *r = model.reg;
    float want_loss = loss_and_grads(false);
    float **want = bertc_arena_alloc(arena, sizeof(float *) * (size_t)r->n_params);
    for (int i = 0; i < r->n_params; i++) {
        const Var *v = r->params[i].var;
        want[i] = NULL;
        if (r->params[i].alias_of >= 0 || !v->grad)
            continue;
        want[i] = bertc_arena_alloc(arena, sizeof(float) * (size_t)v->value.numel);
        memcpy(want[i], v->grad, sizeof(float) * (size_t)v->value.numel);
    }
    float loss = loss_and_grads(true);
    cr_assert(fabsf(loss - want_loss) <= 1e-6f * fabsf(want_loss), "loss %.8g, full path %.8g",
              (double)loss, (double)want_loss);
    for (int i = 0; i < r->n_params; i++) {
        const Var *v = r->params[i].var;
        if (!want[i])
            continue;
        double max_ref = 0.0;
        for (int64_t k = 0; k < v->value.numel; k++)
            max_ref = fmax(max_ref, fabs(want[i][k]));
        for (int64_t k = 0; k < v->value.numel; k++) {
            double got = v->grad ? v->grad[k] : 0.0;
            cr_assert(fabs(got - want[i][k]) <= 1e-5 * max_ref + 1e-7,
                      "grad.%s[%lld]: loss_only %.8g, full path %.8g", r->params[i].name,
                      (long long)k, got, (double)want[i][k]);
        }
    }
}

Test(zoo_fast_paths, inference_release_keeps_outputs_exact)
{
    static const char *names[] = {"hidden_states.1", "hidden_states.2", "last_hidden_state",
                                  "layers.0.attention_probs", "layers.1.attention_probs"};
    Outputs keep, fast;
    BertcError err;
    Graph *g2 = bertc_ag_graph_create(1 << 16, 1);
    bertc_ag_set_training(g2, false);
    bertc_outputs_init(&keep);
    bertc_outputs_init(&fast);
    cr_assert_eq(bertc_model_forward(&model, graph, &batch, &keep, &err), 0, "%s", err.msg);
    bertc_ag_set_no_grad(g2, true);
    cr_assert_eq(bertc_model_forward(&model, g2, &batch, &fast, &err), 0, "%s", err.msg);
    for (size_t n = 0; n < sizeof names / sizeof *names; n++) {
        Var *a = bertc_outputs_get(&keep, names[n]), *b = bertc_outputs_get(&fast, names[n]);
        cr_assert(a && b, "output %s missing", names[n]);
        cr_assert_eq(a->value.numel, b->value.numel, "%s: sizes differ", names[n]);
        for (int64_t k = 0; k < a->value.numel; k++)
            cr_assert(a->value.data[k] == b->value.data[k], "%s[%lld]: %.8g with grad, %.8g in "
                      "no_grad", names[n], (long long)k, (double)a->value.data[k],
                      (double)b->value.data[k]);
    }
    bertc_ag_graph_destroy(g2);
}
