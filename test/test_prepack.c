/* test/test_prepack.c — bertc_registry_prepack (nn/prepack.c): BERT's Linear
 * weights laid out once for the GEMM give bit for bit the outputs of the
 * plain weights, on every ISA path; unpacking restores the exact values; and
 * while packed, what needs plain values (a gradient, an optimizer step,
 * saving) stops with a message that says what to do.
 *
 * The model is a random BertModel with H = 96 and I = 192: multiples of 48,
 * so every encoder weight packs in place with AVX-512 (NR 48), AVX2 (16) and
 * the portable kernel (8). */
#include "test/test_util.h"
#include "zoo/zoo.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

static Arena *arena;
static Model model;

static void setup(void)
{
    arena = bertc_arena_create("params", 1 << 16);
    BertConfig cfg = test_config_default("BertModel");
    cfg.vocab_size = 200;
    cfg.hidden_size = 96;
    cfg.num_attention_heads = 2;
    cfg.intermediate_size = 192;
    cfg.num_hidden_layers = 2;
    cfg.max_position_embeddings = 32;
    BertcError err;
    cr_assert_eq(bertc_model_build(&model, arena, &cfg, &err), 0, "%s", err.msg);
    Rng rng = bertc_rng_seed(3);
    bertc_registry_init_weights(model.reg, &rng, 0.5f);   /* large: differences would show */
}

static void teardown(void) { bertc_arena_destroy(arena); }

TestSuite(prepack, .init = setup, .fini = teardown);

/* A batch of 2 x 11 random ids, the second row padded after 7 tokens. */
static void make_batch(Graph *g, Batch *b)
{
    int64_t shape[2] = {2, 11};
    ITensor ids = bertc_itensor_new(g->step, 2, shape), mask = bertc_itensor_new(g->step, 2, shape);
    Rng rng = bertc_rng_seed(4);
    for (int64_t i = 0; i < ids.numel; i++) {
        ids.data[i] = (int32_t)bertc_rng_randint(&rng, 1, 199);
        mask.data[i] = i < 11 + 7;
    }
    bertc_batch_init(b, "test");
    bertc_batch_put_ids(b, "input_ids", ids);
    bertc_batch_put_ids(b, "attention_mask", mask);
}

/* last_hidden_state and pooler_output of a no_grad forward, copied out. */
static float *inference(Graph *g, int64_t *n)
{
    Batch b;
    Outputs out;
    BertcError err;
    bertc_ag_graph_reset(g);
    make_batch(g, &b);
    bertc_outputs_init(&out);
    cr_assert_eq(bertc_model_forward(&model, g, &b, &out, &err), 0, "%s", err.msg);
    Var *h = bertc_outputs_get(&out, "last_hidden_state"), *p = bertc_outputs_get(&out, "pooler_output");
    cr_assert(h && p, "missing outputs");
    *n = h->value.numel + p->value.numel;
    float *copy = malloc(sizeof(float) * (size_t)*n);
    memcpy(copy, h->value.data, sizeof(float) * (size_t)h->value.numel);
    memcpy(copy + h->value.numel, p->value.data, sizeof(float) * (size_t)p->value.numel);
    return copy;
}

/* Every parameter's values, concatenated. */
static float *snapshot(const Registry *r, int64_t *n)
{
    *n = 0;
    for (int i = 0; i < r->n_params; i++)
        *n += r->params[i].var->value.numel;
    float *all = malloc(sizeof(float) * (size_t)*n), *at = all;
    for (int i = 0; i < r->n_params; i++) {
        const Tensor *t = &r->params[i].var->value;
        memcpy(at, t->data, sizeof(float) * (size_t)t->numel);
        at += t->numel;
    }
    return all;
}

static void expect_same_bits(const float *want, const float *got, int64_t n, const char *what)
{
    for (int64_t i = 0; i < n; i++)
        if (memcmp(&want[i], &got[i], sizeof(float)) != 0)
            cr_assert_fail("%s, isa %s: element %lld expected %.9g, actual %.9g", what,
                           bertc_cpu_isa_name(bertc_cpu_isa()), (long long)i, want[i], got[i]);
}

Test(prepack, outputs_and_weights_bit_for_bit_on_every_isa)
{
    CpuIsa saved = bertc_cpu_isa();
    Graph *g = bertc_ag_graph_create(1 << 16, 1);
    bertc_ag_set_training(g, false);
    bertc_ag_set_no_grad(g, true);
    int64_t n_w, n_out;
    float *weights = snapshot(model.reg, &n_w);
    for (int isa = ISA_SCALAR; isa < ISA_COUNT; isa++) {
        if (!bertc_cpu_isa_supported((CpuIsa)isa))
            continue;
        bertc_cpu_set_isa((CpuIsa)isa);
        float *plain = inference(g, &n_out);
        int packed = bertc_registry_prepack(model.reg, g->step);
        /* 2 layers x (Q, K, V, attention output, intermediate, output) + pooler */
        cr_assert_eq(packed, 13, "isa %s: %d weights packed, expected 13",
                     bertc_cpu_isa_name(bertc_cpu_isa()), packed);
        cr_assert_eq(bertc_registry_prepack(model.reg, g->step), 0, "packed twice");
        float *fast = inference(g, &n_out);
        expect_same_bits(plain, fast, n_out, "forward with pre-packed weights");
        bertc_registry_unpack(model.reg, g->step);
        float *back = snapshot(model.reg, &n_w);
        expect_same_bits(weights, back, n_w, "weights after bertc_registry_unpack");
        free(plain), free(fast), free(back);
    }
    bertc_cpu_set_isa(saved);
    free(weights);
    bertc_ag_graph_destroy(g);
}

/* bertc_model_forward guards the forward: the misuse is its error, not an abort. */
static int forward_with_grad(Graph *g, BertcError *err)
{
    Batch b;
    Outputs out;
    bertc_ag_set_no_grad(g, false);
    make_batch(g, &b);
    bertc_outputs_init(&out);
    return bertc_model_forward(&model, g, &b, &out, err);
}

static void save_weights(void *ctx)
{
    BertcError err;
    bertc_registry_save_file(model.reg, (const char *)ctx, &err);
}

Test(prepack, gradient_and_saving_refused_while_packed)
{
    Graph *g = bertc_ag_graph_create(1 << 16, 1);
    cr_assert_gt(bertc_registry_prepack(model.reg, g->step), 0);
    BertcError err;
    cr_assert_eq(forward_with_grad(g, &err), -1,
                 "a gradient-recording forward ran on pre-packed weights");
    cr_assert(strstr(err.msg, "pre-packed") && strstr(err.msg, "bertc_registry_unpack") &&
              strstr(err.msg, "encoder.layer.0.attention.self.query.weight"),
              "the message does not name the weight and the remedy: %s", err.msg);
    char msg[BERTC_ERROR_LEN];
    cr_assert(test_catch_fatal(save_weights, "/tmp/bertc_prepack_never_written", msg,
                               sizeof msg), "saving pre-packed weights did not stop");
    cr_assert(strstr(msg, "bertc_registry_save_file") && strstr(msg, "bertc_registry_unpack"),
              "the message does not say what to do: %s", msg);
    bertc_registry_unpack(model.reg, g->step);
    bertc_ag_graph_destroy(g);
}
