/* test/portable/t_model.c — a tiny BertForSequenceClassification (H = 32,
 * 2 layers, 4 heads, V = 120, 3 labels; test/data/zoo/bert_seqcls_single)
 * run from memory: config.json text, weights and inputs as safetensors
 * bytes linked into the program (tools/embed_files.py), one fixed arena.
 * Its outputs must match PyTorch's (the fixture's expected.safetensors) within
 * SPEC §6's tolerance, max|x - ref| <= 1e-4 max|ref| + 1e-6 per tensor. The
 * logits are printed so `make cross-test` can compare targets with the host. */
#include "test/portable/portable.h"

#include <math.h>
#include <time.h>

/* Generated from the fixture by tools/embed_files.py (see the Makefile). */
extern const unsigned char tiny_config[], tiny_weights[], tiny_inputs[], tiny_expected[];
extern const unsigned long tiny_config_len, tiny_weights_len, tiny_inputs_len,
    tiny_expected_len;

#define STEP_BYTES (768u << 10)

/* One output against its PyTorch value. */
static void expect_output(const Outputs *out, const SafeTensors *want, const char *name,
                          Arena *a)
{
    Var *v = bertc_outputs_get(out, name);
    Tensor ref;
    BertcError err;
    if (!pt_check(v && bertc_st_load_tensor(want, name, a, &ref, &err) == 0, "output %s: %s", name,
                  v ? err.msg : "missing"))
        return;
    if (!pt_check(ref.numel == v->value.numel, "%s: %lld values, PyTorch %lld", name,
                  (long long)v->value.numel, (long long)ref.numel))
        return;
    double max_ref = 0.0, max_diff = 0.0;
    for (int64_t i = 0; i < ref.numel; i++) {
        max_ref = fmax(max_ref, fabs((double)ref.data[i]));
        max_diff = fmax(max_diff, fabs((double)v->value.data[i] - (double)ref.data[i]));
    }
    pt_check(max_diff <= 1e-4 * max_ref + 1e-6, "%s: max|x - ref| = %.3g > %.3g", name, max_diff,
             1e-4 * max_ref + 1e-6);
    pt_print("model %s: max|x - PyTorch| = %.3g (max|ref| %.3g)", name, max_diff, max_ref);
}

void test_model(void)
{
    Arena *a = pt_arena();
    BertcError err;
    BertConfig cfg;
    Model m;
    SafeTensors *weights, *inputs, *expected;
    if (!pt_check(bertc_bert_config_parse(a, "config.json", (const char *)tiny_config,
                                    tiny_config_len, &cfg, &err) == 0 &&
                      bertc_model_build(&m, a, &cfg, &err) == 0,
                  "config: %s", err.msg))
        return;
    size_t model_bytes = bertc_arena_used(a);
    LoadOptions opts = bertc_model_load_options(&m, false);
    if (!pt_check(bertc_st_open_memory(a, "weights", tiny_weights, tiny_weights_len, &weights, &err) ==
                          0 &&
                      bertc_registry_load(m.reg, weights, &opts, &err) == 0,
                  "weights: %s", err.msg))
        return;
    Batch in;
    bertc_batch_init(&in, "inputs");
    if (!pt_check(bertc_st_open_memory(a, "inputs", tiny_inputs, tiny_inputs_len, &inputs, &err) == 0 &&
                      bertc_batch_from_safetensors(&in, inputs, a, &err) == 0,
                  "inputs: %s", err.msg))
        return;
    size_t before_forward = bertc_arena_used(a);

    Arena step;
    bertc_arena_init_fixed(&step, "step", bertc_arena_alloc(a, STEP_BYTES), STEP_BYTES);
    Graph g;
    bertc_ag_graph_init(&g, &step, 0);
    bertc_ag_set_training(&g, false);
    bertc_ag_set_no_grad(&g, true);
    static Outputs out; /* 512 named slots: too big for a small stack */
    bertc_outputs_init(&out);
    clock_t t0 = clock();
    int rc = bertc_model_forward(&m, &g, &in, &out, &err);
    clock_t t1 = clock();
    if (!pt_check(rc == 0, "forward: %s", err.msg))
        return;

    Var *logits = bertc_outputs_get(&out, "logits");
    for (int64_t b = 0; b < logits->value.shape[0]; b++) {
        const float *l = logits->value.data + b * logits->value.shape[1];
        pt_print("logits[%lld] = %.9g %.9g %.9g", (long long)b, (double)l[0], (double)l[1],
                 (double)l[2]);
    }
    pt_check(bertc_st_open_memory(a, "expected", tiny_expected, tiny_expected_len, &expected, &err) == 0,
             "expected: %s", err.msg);
    expect_output(&out, expected, "logits", a);
    expect_output(&out, expected, "loss", a);
    expect_output(&out, expected, "pooler_output", a);
    expect_output(&out, expected, "last_hidden_state", a);
    pt_print("memory: model %zu bytes (parameters), weights and inputs "
             "bookkeeping %zu, forward step high-water %zu; GEMM packs in the arena",
             model_bytes, before_forward - model_bytes, bertc_arena_high_water(&step));
    pt_print("forward: %.1f ms (clock())", 1000.0 * (double)(t1 - t0) / CLOCKS_PER_SEC);
}
