/* test/test_quantize_bf16.c — bf16 models (`bertc quantize --dtype bf16`,
 * docs/quantization.md): the file stores the planned Linear weights as BF16,
 * rounded as bertc_bf16_from_f32 rounds, and everything else as it was; the
 * loaded model multiplies them with the bf16 GEMM (bertc_bgemm_reference on
 * the file's values, bit for bit) in a no-grad pass and with float32 in a
 * gradient pass; its last hidden state stays within cosine 0.999 of
 * float32's; packing in memory is loading the written directory; a model
 * fine-tuned from it is float32; the flag's mistakes are one line. The
 * bf16 GEMM itself: test/test_bgemm.c. */
#include "test/test_util.h"
#include "zoo/zoo.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIXTURE "test/data/finetuned"
#define QUERY "bert.encoder.layer.0.attention.self.query.weight"

static char tmp[128];
static Arena *arena;

static void setup(void)
{
    test_scratch_make(tmp, sizeof tmp, "quantize_bf16");
    arena = bertc_arena_create("quantize_bf16", 1 << 20);
}

static void teardown(void)
{
    test_scratch_remove(tmp);
    bertc_arena_destroy(arena);
}

TestSuite(quantize_bf16, .init = setup, .fini = teardown);

/* `bertc quantize --dtype bf16 --model src --out tmp/name`; the out path. */
static const char *bf16_dir(const char *src, const char *name)
{
    static char out[256];
    char cmd[768], log[2048];
    snprintf(out, sizeof out, "%s/%s", tmp, name);
    snprintf(cmd, sizeof cmd, "%s quantize --dtype bf16 --model %s --out %s", BERTC_CLI, src, out);
    int rc = test_shell(cmd, TEST_STDOUT_AND_STDERR, log, sizeof log);
    cr_assert_eq(rc, 0, "bertc quantize --dtype bf16 %s failed (%d): %s", src, rc, log);
    cr_expect(strstr(log, "stored 12 Linear weights as bf16"), "the summary line: %s", log);
    return out;
}

static void open_dir(const char *dir, Model *m)
{
    ModelDir d;
    BertcError err;
    cr_assert_eq(bertc_model_dir_open(&d, arena, dir, &err), 0, "%s: %s", dir, err.msg);
    *m = d.model;
}

/* The BF16 bits of tensor t: read widened to float32 (exact: a bf16 is the
 * upper half of a float32), then the upper halves. */
static uint16_t *bf16_bits(const SafeTensors *st, const StTensorInfo *t, size_t count)
{
    cr_assert_eq(t->dtype, ST_BF16, "'%s' is %s, not BF16", t->name,
                 bertc_st_dtype_name(t->dtype));
    float *wide = bertc_arena_alloc(arena, sizeof(float) * count);
    BertcError err;
    cr_assert_eq(bertc_st_read_f32(st, t, wide, count, &err), 0, "%s", err.msg);
    uint16_t *bits = bertc_arena_alloc(arena, sizeof(uint16_t) * count);
    for (size_t k = 0; k < count; k++) {
        uint32_t u;
        memcpy(&u, &wide[k], sizeof u);
        cr_assert_eq(u & 0xFFFFu, 0u, "'%s'[%zu] widened has low bits", t->name, k);
        bits[k] = (uint16_t)(u >> 16);
    }
    return bits;
}

/* ---- the file -------------------------------------------------------------- */

Test(quantize_bf16, the_file_holds_the_rounded_linear_weights_and_the_rest_unchanged)
{
    Model fp;
    open_dir(FIXTURE, &fp);
    const char *out = bf16_dir(FIXTURE, "b");
    SafeTensors *st = test_open_weights(out);
    Registry *r = fp.reg;
    bool chosen[256];
    BertcError err;
    cr_assert_lt(r->n_params, 256);
    cr_assert_eq(bertc_registry_int8_plan(r, NULL, 0, chosen, &err), 12);
    int n_bf16 = 0;
    for (int i = 0; i < r->n_params; i++) {
        const Tensor *W = &r->params[i].var->value;
        const StTensorInfo *t = bertc_st_find(st, r->params[i].name);
        cr_assert(t, "'%s' is not in the bf16 file", r->params[i].name);
        size_t count = (size_t)W->numel;
        if (!chosen[i]) {
            float *got = bertc_arena_alloc(arena, sizeof(float) * count);
            cr_expect_eq(t->dtype, ST_F32, "'%s' should stay F32", t->name);
            cr_assert_eq(bertc_st_read_f32(st, t, got, count, &err), 0, "%s", err.msg);
            cr_expect_eq(memcmp(got, W->data, sizeof(float) * count), 0,
                         "'%s' changed although it stays float32", t->name);
            continue;
        }
        const uint16_t *bits = bf16_bits(st, t, count);
        for (size_t k = 0; k < count; k++)
            cr_assert_eq(bits[k], bertc_bf16_from_f32(W->data[k]),
                         "'%s'[%zu]: BF16 %04x in the file, %04x is %.9g rounded", t->name, k,
                         bits[k], bertc_bf16_from_f32(W->data[k]), (double)W->data[k]);
        n_bf16++;
    }
    cr_expect_eq(n_bf16, 12);
    bertc_st_close(st);
    BertConfig cfg;
    char path[300];
    snprintf(path, sizeof path, "%s/config.json", out);
    cr_assert_eq(bertc_bert_config_read(path, &cfg, &err), 0, "%s", err.msg);
    cr_expect(cfg.bf16 && !cfg.int8_dynamic, "config.json does not say bertc_bf16");
    bertc_bert_config_free(&cfg);
}

/* ---- the loaded model ------------------------------------------------------ */

/* Every BF16 weight is packed, and bertc_ag_linear without gradients is the
 * bf16 GEMM's oracle on the file's bits; with gradients it is float32 on the
 * same (widened) values, so the two differ. */
Test(quantize_bf16, a_no_grad_linear_is_the_bf16_gemm_on_the_files_values)
{
    const char *out = bf16_dir(FIXTURE, "b");
    Model m;
    open_dir(out, &m);
    cr_assert_eq(m.reg->n_bf16, 12, "%d weights packed for bf16, 12 expected", m.reg->n_bf16);
    SafeTensors *st = test_open_weights(out);
    Rng rng = bertc_rng_seed(5);
    int checked = 0, differ = 0;
    for (int i = 0; i < m.reg->n_params; i++) {
        Var *w = m.reg->params[i].var;
        if (!w->bpacked)
            continue;
        int64_t N = w->value.shape[0], K = w->value.shape[1], M = 5;
        const uint16_t *bits = bf16_bits(st, bertc_st_find(st, m.reg->params[i].name),
                                         (size_t)(N * K));
        for (int64_t k = 0; k < N * K; k++)
            cr_assert_eq(w->value.data[k], bertc_bf16_to_f32(bits[k]),
                         "'%s': the float32 value is not the file's bf16 widened",
                         m.reg->params[i].name);
        Graph *g = bertc_ag_graph_create(1 << 20, 0);
        int64_t xs[2] = {M, K};
        float *x = bertc_arena_alloc(arena, sizeof(float) * (size_t)(M * K));
        test_fill_uniform(x, M * K, &rng, -2.0f, 2.0f);
        float *want = bertc_arena_alloc(arena, sizeof(float) * (size_t)(M * N));
        bertc_bgemm_reference(M, x, K, bits, N, K, NULL, want, N);
        bertc_ag_set_no_grad(g, true);
        Var *xv = bertc_ag_tensor(g, 2, xs, false);
        memcpy(xv->value.data, x, sizeof(float) * (size_t)(M * K));
        Var *y = bertc_ag_linear(g, xv, w, NULL);
        cr_expect_eq(memcmp(y->value.data, want, sizeof(float) * (size_t)(M * N)), 0,
                     "'%s': the no-grad linear is not the bf16 GEMM", m.reg->params[i].name);
        bertc_ag_set_no_grad(g, false);
        Var *xg = bertc_ag_tensor(g, 2, xs, true);
        memcpy(xg->value.data, x, sizeof(float) * (size_t)(M * K));
        Var *yg = bertc_ag_linear(g, xg, w, NULL);
        differ += memcmp(yg->value.data, want, sizeof(float) * (size_t)(M * N)) != 0;
        bertc_ag_graph_destroy(g);
        checked++;
    }
    cr_expect_eq(checked, 12);
    cr_expect_eq(differ, 12, "a gradient pass should run float32 (its activations are not "
                             "rounded): only %d of 12 differ from the bf16 GEMM", differ);
    bertc_st_close(st);
}

/* The last hidden state of one seeded random batch (B, S). */
static float *hidden_of(Model *m, Graph *g, int64_t B, int64_t S, int64_t *n)
{
    Batch batch;
    Outputs out;
    Rng rng = bertc_rng_seed(3);
    BertcError err;
    bertc_ag_graph_reset(g);
    cr_assert_eq(bertc_model_random_batch(m, g, B, S, false, &rng, &batch, &err), 0, "%s",
                 err.msg);
    bertc_outputs_init(&out);
    test_forward_ok(m, g, &batch, &out);
    Var *h = bertc_outputs_get(&out, "last_hidden_state");
    char name[64];
    snprintf(name, sizeof name, "hidden_states.%d", m->cfg.num_hidden_layers);
    h = h ? h : bertc_outputs_get(&out, name);
    cr_assert(h, "the model has no last hidden state");
    *n = h->value.numel;
    float *copy = bertc_arena_alloc(arena, sizeof(float) * (size_t)*n);
    memcpy(copy, h->value.data, sizeof(float) * (size_t)*n);
    return copy;
}

static Graph *inference_graph(void)
{
    Graph *g = bertc_ag_graph_create(1 << 20, 0);
    bertc_ag_set_no_grad(g, true);
    bertc_ag_set_training(g, false);
    return g;
}

Test(quantize_bf16, the_fine_tuned_fixture_keeps_cosine_0999_to_fp32)
{
    Model fp, b;
    open_dir(FIXTURE, &fp);
    open_dir(bf16_dir(FIXTURE, "b"), &b);
    Graph *g = inference_graph();
    int64_t n_fp, n_b;
    float *x = hidden_of(&fp, g, 2, 16, &n_fp), *y = hidden_of(&b, g, 2, 16, &n_b);
    cr_assert_eq(n_fp, n_b);
    cr_expect_neq(memcmp(x, y, sizeof(float) * (size_t)n_fp), 0,
                  "the bf16 model gives float32's exact outputs: bf16 did not run");
    double c = test_cosine(x, y, n_fp);
    cr_log_info("last hidden state cosine bf16 vs float32 %.8f", c);
    cr_expect_geq(c, 0.999, "last hidden state cosine %.6f to float32, below 0.999", c);
    bertc_ag_graph_destroy(g);
}

/* Packing in memory (bench/forward --bf16) is loading the written
 * directory: the same forward, bit for bit. */
Test(quantize_bf16, in_memory_is_the_same_model_as_the_written_one)
{
    Model mem, file;
    open_dir(FIXTURE, &mem);
    open_dir(bf16_dir(FIXTURE, "b"), &file);
    bool chosen[256];
    BertcError err;
    cr_assert_eq(bertc_registry_int8_plan(mem.reg, NULL, 0, chosen, &err), 12);
    cr_assert_eq(bertc_registry_pack_bf16(mem.reg, chosen), 12);
    Graph *g = inference_graph();
    int64_t n_a, n_b;
    float *a = hidden_of(&mem, g, 2, 12, &n_a), *b = hidden_of(&file, g, 2, 12, &n_b);
    cr_expect_eq(memcmp(a, b, sizeof(float) * (size_t)n_a), 0,
                 "the written bf16 model and the one packed in memory differ");
    bertc_ag_graph_destroy(g);
}

/* ---- the writer and the command --------------------------------------------- */

/* A BF16 entry written from floats reads back as their rounding. */
Test(quantize_bf16, bf16_entries_are_written_rounded_to_nearest_even)
{
    float v[6] = {1.0f, 1.00390625f /* 1 + 2^-8: a tie, to even */, 1.01171875f /* tie, up */,
                  -3.14159265f, 1e-40f /* denormal: zero */, INFINITY};
    int64_t shape[1] = {6};
    StEntry e = {.name = "w", .dtype = ST_BF16, .ndim = 1, .shape = shape, .f32 = v};
    size_t size;
    BertcError err;
    cr_assert_eq(bertc_st_write_buffer(&e, 1, NULL, 0, NULL, 0, &size, &err), 0, "%s", err.msg);
    void *buf = bertc_arena_alloc(arena, size);
    cr_assert_eq(bertc_st_write_buffer(&e, 1, NULL, 0, buf, size, &size, &err), 0, "%s",
                 err.msg);
    SafeTensors *st;
    cr_assert_eq(bertc_st_open_memory(arena, "w.safetensors", buf, size, &st, &err), 0, "%s",
                 err.msg);
    const uint16_t *bits = bf16_bits(st, bertc_st_find(st, "w"), 6);
    uint16_t want[6] = {0x3F80, 0x3F80, 0x3F82, 0xC049, 0x0000, 0x7F80};
    for (int k = 0; k < 6; k++)
        cr_expect_eq(bits[k], want[k], "value %d (%.9g): BF16 %04x, expected %04x", k,
                     (double)v[k], bits[k], want[k]);
    bertc_st_close(st);
}

static void expect_usage_error(const char *flags, const char *needle)
{
    char cmd[700], log[2048];
    snprintf(cmd, sizeof cmd, "%s quantize --model %s --out %s/never %s", BERTC_CLI, FIXTURE,
             tmp, flags);
    int rc = test_shell(cmd, TEST_STDERR, log, sizeof log);
    cr_expect_eq(rc, 2, "%s: exit %d, expected 2 (%s)", flags, rc, log);
    cr_expect(strstr(log, needle) && strchr(log, '\n') == log + strlen(log) - 1,
              "%s: not one line naming '%s': %s", flags, needle, log);
}

Test(quantize_bf16, the_flags_mistakes_are_one_line)
{
    expect_usage_error("--dtype fp8", "--dtype fp8");
    expect_usage_error("--dtype bf16 --embeddings", "--embeddings");
}

Test(quantize_bf16, a_bf16_model_is_not_quantised_again)
{
    const char *b = bf16_dir(FIXTURE, "b");
    char cmd[700], log[2048];
    snprintf(cmd, sizeof cmd, "%s quantize --model %s --out %s/again", BERTC_CLI, b, tmp);
    int rc = test_shell(cmd, TEST_STDERR, log, sizeof log);
    cr_expect_neq(rc, 0, "quantising a bf16 model again succeeded");
    cr_expect(strstr(log, "already quantised"), "%s", log);
}

Test(quantize_bf16, summary_names_the_bf16_weights_and_the_path)
{
    const char *b = bf16_dir(FIXTURE, "b");
    char cmd[700], log[8192], want[128];
    snprintf(cmd, sizeof cmd, "%s summary --model %s", BERTC_CLI, b);
    cr_assert_eq(test_shell(cmd, TEST_STDOUT_AND_STDERR, log, sizeof log), 0, "%s", log);
    snprintf(want, sizeof want, "Quantised: bf16 (bertc_bf16): 12 Linear weights bf16, run by "
             "the bf16 GEMM (%s path)", bertc_bgemm_isa_name(bertc_bgemm_isa()));
    cr_expect(strstr(log, want), "summary lacks '%s': %s", want, log);
}
