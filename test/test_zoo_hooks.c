/* test/test_zoo_hooks.c — the BERT encoder's hooks as CGBERT and QACGBERT
 * use them: in no_grad mode the encoder releases each layer's temporaries
 * (CGBERT's deep context D among them) after copying the layer's output and
 * every map of the attention hook down, so the outputs must be those of the
 * recorded forward, to the bit, in the same order. */
#include "test/test_util.h"
#include "zoo/zoo.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

static Arena *arena;
static Graph *graph;

static void setup(void)
{
    test_open(&arena, &graph);
    ag_set_training(graph, false);
}

static void teardown(void) { test_close(arena, graph); }

TestSuite(zoo_hooks, .init = setup, .fini = teardown);

static void expect_no_grad_outputs_exact(const char *case_dir, int n_outputs)
{
    char path[256];
    BertcError err;
    Model m;
    snprintf(path, sizeof path, "%sconfig.json", case_dir);
    test_model_build(&m, arena, path, NULL);
    snprintf(path, sizeof path, "%sweights.safetensors", case_dir);
    test_model_load(&m, path);
    snprintf(path, sizeof path, "%sinputs.safetensors", case_dir);
    SafeTensors *st;
    cr_assert_eq(st_open_file(NULL, path, &st, &err), 0, "%s", err.msg);
    Batch in;
    batch_init(&in, "inputs");
    cr_assert_eq(batch_from_safetensors(&in, st, arena, &err), 0, "%s", err.msg);
    Graph *fast_graph = ag_graph_create(1 << 16, 1);
    ag_set_training(fast_graph, false);
    ag_set_no_grad(fast_graph, true);
    Outputs keep, fast;
    test_forward_ok(&m, graph, &in, &keep);
    test_forward_ok(&m, fast_graph, &in, &fast);
    cr_assert_eq(keep.n, n_outputs, "%s: %d outputs", case_dir, keep.n);
    cr_assert_eq(fast.n, keep.n, "%s: %d outputs in no_grad, %d with grad", case_dir, fast.n,
                 keep.n);
    for (int i = 0; i < keep.n; i++) {
        const Var *a = keep.items[i].var, *b = fast.items[i].var;
        cr_assert_str_eq(fast.items[i].name, keep.items[i].name, "output %d", i);
        cr_assert_eq(a->value.numel, b->value.numel, "%s: sizes differ", keep.items[i].name);
        for (int64_t k = 0; k < a->value.numel; k++)
            cr_assert(a->value.data[k] == b->value.data[k],
                      "%s%s[%lld]: %.8g with grad, %.8g in no_grad", case_dir,
                      keep.items[i].name, (long long)k, (double)a->value.data[k],
                      (double)b->value.data[k]);
    }
    ag_graph_destroy(fast_graph);
    st_close(st);
}

/* hidden_states.0..2, L = 2 layers x maps, pooled_output, logits, loss */
Test(zoo_hooks, cgbert_no_grad_release_keeps_every_map)
{
    expect_no_grad_outputs_exact("test/data/zoo/cgbert_gate/", 3 + 2 * 3 + 3);
}

Test(zoo_hooks, qacgbert_no_grad_release_keeps_every_map)
{
    expect_no_grad_outputs_exact("test/data/zoo/qacgbert_gate/", 3 + 2 * 6 + 3);
}
