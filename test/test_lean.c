/* test/test_lean.c — lean inference (bertc_ag_set_lean, zoo/models/bert_inference.c):
 *  - on every fixture of test/data/zoo, every output a lean forward keeps
 *    equals the normal no_grad forward's: bit for bit on the scalar path
 *    and where the architecture ignores lean (CGBERT, QACGBERT), within
 *    2e-6 max|ref| on the SIMD paths; and PyTorch's expected values within
 *    SPEC §6. The plain BERT encoders keep no hidden_states.{i} and no
 *    attention maps;
 *  - the row-attention kernel against attention_scores + softmax +
 *    attention_context on random shapes, padded keys and nearly empty rows;
 *  - the step arena of a lean forward stays under the bound the layout in
 *    zoo/models/bert_inference.c gives, float32 and int8;
 *  - lean with a tape, or attention_rows on inputs that need a gradient, is a
 *    one-line error. */
#include "test/test_util.h"
#include "zoo/zoo.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- every fixture: lean against no_grad and against PyTorch ------------ */

typedef struct Fixture {
    Arena *arena;
    Model model;
    Batch batch;
    SafeTensors *expected;
} Fixture;

static void fixture_open(Fixture *f, const char *name)
{
    char path[512];
    BertcError err;
    SafeTensors *st;
    f->arena = bertc_arena_create("params", 1 << 16);
    snprintf(path, sizeof path, "%s/%s/config.json", TEST_ZOO_DIR, name);
    test_model_build(&f->model, f->arena, path, NULL);
    snprintf(path, sizeof path, "%s/%s/weights.safetensors", TEST_ZOO_DIR, name);
    test_model_load(&f->model, path);
    snprintf(path, sizeof path, "%s/%s/inputs.safetensors", TEST_ZOO_DIR, name);
    cr_assert_eq(bertc_st_open_file(NULL, path, &st, &err), 0, "%s", err.msg);
    bertc_batch_init(&f->batch, "inputs.safetensors");
    cr_assert_eq(bertc_batch_from_safetensors(&f->batch, st, f->arena, &err), 0, "%s", err.msg);
    bertc_st_close(st);
    snprintf(path, sizeof path, "%s/%s/expected.safetensors", TEST_ZOO_DIR, name);
    cr_assert_eq(bertc_st_open_file(NULL, path, &f->expected, &err), 0, "%s", err.msg);
}

static void fixture_close(Fixture *f)
{
    bertc_st_close(f->expected);
    bertc_arena_destroy(f->arena);
}

/* An eval, no_grad graph, lean or not. */
static Graph *inference_graph(bool lean)
{
    Graph *g = bertc_ag_graph_create(1 << 16, 1);
    bertc_ag_set_training(g, false);
    bertc_ag_set_no_grad(g, true);
    bertc_ag_set_lean(g, lean);
    return g;
}

static bool is_kept_only_without_lean(const char *name)
{
    return strncmp(name, "hidden_states.", 14) == 0 || strncmp(name, "layers.", 7) == 0;
}

/* max |got - ref| <= rtol max|ref| + atol over the tensor; names the worst index. */
static void expect_close(const char *c, const char *name, const float *got, const float *ref,
                         int64_t n, double rtol, double atol, const char *against)
{
    double max_ref = 0, max_err = 0;
    int64_t worst = 0;
    for (int64_t i = 0; i < n; i++) {
        max_ref = fmax(max_ref, fabs(ref[i]));
        double e = fabs((double)got[i] - ref[i]);
        if (isnan(e) && !(isnan(got[i]) && isnan(ref[i])))
            e = INFINITY;
        if (e > max_err)
            max_err = e, worst = i;
    }
    double allowed = rtol * max_ref + atol;
    cr_expect(max_err <= allowed, "%s: '%s' lean differs from %s by %.3g at flat index %lld "
              "(lean %.9g, %s %.9g), allowed %.3g", c, name, against, max_err, (long long)worst,
              (double)got[worst], against, (double)ref[worst], allowed);
}

static bool same_bits(const Var *a, const Var *b)
{
    return a->value.numel == b->value.numel &&
           memcmp(a->value.data, b->value.data, sizeof(float) * (size_t)a->value.numel) == 0;
}

/* The fixture's expected tensor `name` within SPEC §6, if the fixture has it. */
static void expect_pytorch(const char *c, const Fixture *f, const char *name, const Var *got)
{
    const StTensorInfo *t = bertc_st_find(f->expected, name);
    if (!t || t->dtype == ST_I64 || t->dtype == ST_I32)
        return;
    cr_assert_eq(t->numel, got->value.numel, "%s: '%s' has %lld elements, PyTorch %lld", c, name,
                 (long long)got->value.numel, (long long)t->numel);
    float *ref = malloc(sizeof(float) * (size_t)(t->numel ? t->numel : 1));
    BertcError err;
    cr_assert_eq(bertc_st_read_f32(f->expected, t, ref, (size_t)t->numel, &err), 0, "%s", err.msg);
    expect_close(c, name, got->value.data, ref, t->numel, 1e-4, 1e-6, "PyTorch");
    free(ref);
}

/* The lean forward of fixture c against the normal no_grad one: outputs
 * that only the normal forward keeps must be gone (unless lean does not
 * apply: an encoder with hooks, then every output is bit for bit); every
 * other float output within rtol max|ref| (rtol 0: bit for bit) and within
 * SPEC §6 of PyTorch's expected values. */
static void compare_fixture(const char *c, double rtol)
{
    Fixture f;
    fixture_open(&f, c);
    Graph *gp = inference_graph(false), *gl = inference_graph(true);
    Outputs plain, lean;
    BertcError err;
    bertc_outputs_init(&plain);
    bertc_outputs_init(&lean);
    cr_assert_eq(bertc_model_forward(&f.model, gp, &f.batch, &plain, &err), 0, "%s", err.msg);
    cr_assert_eq(bertc_model_forward(&f.model, gl, &f.batch, &lean, &err), 0, "%s: lean: %s", c,
                 err.msg);
    bool ignored = bertc_outputs_get(&lean, "hidden_states.1") != NULL;
    int compared = 0;
    for (int i = 0; i < plain.n; i++) {
        const OutputItem *p = &plain.items[i];
        Var *l = bertc_outputs_get(&lean, p->name);
        if (!p->var)
            continue;   /* integer outputs: not touched by the encoder's numerics */
        if (is_kept_only_without_lean(p->name) && !ignored) {
            cr_expect(!l, "%s: lean still keeps '%s'", c, p->name);
            continue;
        }
        cr_assert(l, "%s: lean lost the output '%s'", c, p->name);
        cr_assert_eq(l->value.numel, p->var->value.numel, "%s: '%s' changed size", c, p->name);
        if (ignored || rtol == 0.0)
            cr_expect(same_bits(l, p->var), "%s: '%s' is not bit for bit the no_grad value%s", c,
                      p->name, ignored ? " though lean does not apply" : "");
        else
            expect_close(c, p->name, l->value.data, p->var->value.data, l->value.numel, rtol,
                         0.0, "no_grad");
        expect_pytorch(c, &f, p->name, l);
        compared++;
    }
    cr_expect_gt(compared, 0, "%s: no output compared", c);
    bertc_ag_graph_destroy(gp);
    bertc_ag_graph_destroy(gl);
    fixture_close(&f);
}

ParameterizedTestParameters(lean, every_fixture_keeps_its_outputs)
{
    TestName *cases;
    size_t n = test_zoo_cases(&cases);
    return cr_make_param_array(TestName, cases, n);
}

/* On the active path the normal forward's GEMMs fuse multiply-adds (AVX2,
 * AVX-512) where the lean attention rounds each product: they differ by
 * float rounding, up to 1.1e-6 max|ref| measured on AVX-512 (bert_nsp's
 * logits). AVX2's GEMM tiles sum in another order, and BertSum's scaled
 * positional encodings (bertsum_pe_scaled: logits ~8x larger) let the
 * softmax amplify that: 7.5e-6 measured on its attention probabilities
 * (and `make valgrind`, which has no AVX-512, runs this path). */
ParameterizedTest(TestName *zc, lean, every_fixture_keeps_its_outputs)
{
    compare_fixture(zc->name, bertc_cpu_isa() == ISA_AVX2 ? 1e-5 : 2e-6);
}

ParameterizedTestParameters(lean, scalar_path_is_bit_for_bit)
{
    TestName *cases;
    size_t n = test_zoo_cases(&cases);
    return cr_make_param_array(TestName, cases, n);
}

/* On the scalar path (the embedded targets') the GEMM sums each dot product
 * in k order with separate multiplies and adds, as the row kernel does, and
 * the softmax is the same kernel: lean is the normal forward bit for bit. */
ParameterizedTest(TestName *zc, lean, scalar_path_is_bit_for_bit)
{
    bertc_cpu_set_isa(ISA_SCALAR);
    compare_fixture(zc->name, 0.0);
}

/* ---- the row kernel against the three ops it replaces ------------------- */

typedef struct AttnCase {
    int64_t B, S, H, nh;
    float pad;        /* the additive value of a padded key */
} AttnCase;

/* Entry b keeps its first S - b keys (entry B-1 of S = B keeps only one: a
 * row whose softmax is all on one key), the rest padded. */
static Var *padding_mask(Graph *g, const AttnCase *c)
{
    int64_t shape[4] = {c->B, 1, 1, c->S};
    Var *m = bertc_ag_tensor(g, 4, shape, false);
    for (int64_t b = 0; b < c->B; b++)
        for (int64_t t = 0; t < c->S; t++)
            m->value.data[b * c->S + t] = t < c->S - b ? 0.0f : c->pad;
    return m;
}

static Var *random_heads(Graph *g, const AttnCase *c, Rng *rng)
{
    int64_t shape[3] = {c->B, c->S, c->H};
    Var *x = bertc_ag_tensor(g, 3, shape, false);
    test_fill_uniform(x->value.data, x->value.numel, rng, -2.0f, 2.0f);
    return x;
}

/* A block of query rows [1, 1 + n) of every sequence against all S keys (as
 * the lean encoder asks) gives those rows of the whole context, bit for bit. */
static void expect_block_of_rows(Graph *g, const AttnCase *c, Var *q, Var *k, Var *v, Var *mask,
                                 float alpha, const Var *whole)
{
    int64_t i0 = c->S > 1 ? 1 : 0, n = c->S - i0 < 3 ? c->S - i0 : 3;
    int64_t shape[3] = {c->B, n, c->H};
    Var *qb = bertc_ag_tensor(g, 3, shape, false);
    for (int64_t b = 0; b < c->B; b++)
        memcpy(qb->value.data + b * n * c->H, q->value.data + (b * c->S + i0) * c->H,
               sizeof(float) * (size_t)(n * c->H));
    Var *block = bertc_ag_attention_rows(g, qb, k, v, c->nh, alpha, mask, false);
    cr_assert_eq(block->value.shape[1], n, "the block's context has %lld rows, not %lld",
                 (long long)block->value.shape[1], (long long)n);
    for (int64_t b = 0; b < c->B; b++)
        cr_expect_eq(memcmp(block->value.data + b * n * c->H,
                            whole->value.data + (b * c->S + i0) * c->H,
                            sizeof(float) * (size_t)(n * c->H)), 0,
                     "B %lld S %lld: rows [%lld, %lld) of entry %lld differ from the whole "
                     "context's", (long long)c->B, (long long)c->S, (long long)i0,
                     (long long)(i0 + n), (long long)b);
}

Test(lean, attention_rows_is_scores_softmax_context)
{
    static const AttnCase cases[] = {
        {1, 1, 4, 1, -10000.0f},      {2, 5, 12, 3, -3.40282347e38f}, {3, 3, 8, 2, -10000.0f},
        {1, 32, 64, 4, -3.40282347e38f}, {2, 33, 48, 4, -10000.0f},   {2, 17, 96, 6, 0.0f},
    };
    Graph *g = inference_graph(false);
    Rng rng = bertc_rng_seed(7);
    for (size_t n = 0; n < sizeof cases / sizeof *cases; n++) {
        const AttnCase *c = &cases[n];
        char what[96];
        snprintf(what, sizeof what, "B %lld S %lld H %lld nh %lld pad %g", (long long)c->B,
                 (long long)c->S, (long long)c->H, (long long)c->nh, (double)c->pad);
        Var *q = random_heads(g, c, &rng), *k = random_heads(g, c, &rng);
        Var *v = random_heads(g, c, &rng), *mask = padding_mask(g, c);
        float alpha = 1.0f / sqrtf((float)(c->H / c->nh));
        Var *probs = bertc_ag_softmax(g, bertc_ag_attention_scores(g, q, k, c->nh, alpha, mask));
        Var *want = bertc_ag_attention_context(g, probs, v);
        Var *got = bertc_ag_attention_rows(g, q, k, v, c->nh, alpha, mask, false);
        cr_assert(got != q, "%s: a new result was asked for", what);
        expect_close(what, "context", got->value.data, want->value.data, got->value.numel, 1e-6,
                     0.0, "scores + softmax + context");
        expect_block_of_rows(g, c, q, k, v, mask, alpha, got);
        Var *over = bertc_ag_attention_rows(g, q, k, v, c->nh, alpha, mask, true);
        cr_assert(over == q, "%s: over_q did not return q", what);
        cr_expect(same_bits(over, got), "%s: the context written over q differs", what);
        bertc_ag_graph_reset(g);
    }
    bertc_ag_graph_destroy(g);
}

/* attention_heads (no_grad inference that keeps no maps) is the three ops bit
 * for bit, on every path this CPU has, with 1 and 2 threads: the same GEMM,
 * mask and softmax calls, only its scores' buffer differs. */
Test(lean, attention_heads_is_scores_softmax_context_bitwise)
{
    static const AttnCase cases[] = {
        {1, 1, 4, 1, -10000.0f},    {2, 5, 12, 3, -3.40282347e38f}, {3, 33, 48, 4, -10000.0f},
        {2, 128, 768, 12, -3.40282347e38f}, {5, 17, 96, 6, 0.0f},
    };
    CpuIsa orig = bertc_cpu_isa();
    int threads = bertc_threads_count();
    Graph *g = inference_graph(false);
    Rng rng = bertc_rng_seed(8);
    for (int isa = 0; isa < ISA_COUNT; isa++) {
        if (!bertc_cpu_isa_supported((CpuIsa)isa))
            continue;
        bertc_cpu_set_isa((CpuIsa)isa);
        for (size_t n = 0; n < sizeof cases / sizeof *cases; n++)
            for (int t = 1; t <= 2; t++) {
                const AttnCase *c = &cases[n];
                bertc_threads_set_count(t);
                Var *q = random_heads(g, c, &rng), *k = random_heads(g, c, &rng);
                Var *v = random_heads(g, c, &rng), *mask = padding_mask(g, c);
                float alpha = 1.0f / sqrtf((float)(c->H / c->nh));
                Var *p = bertc_ag_softmax(g, bertc_ag_attention_scores(g, q, k, c->nh, alpha, mask));
                Var *want = bertc_ag_attention_context(g, p, v);
                Var *got = bertc_ag_attention_heads(g, q, k, v, c->nh, alpha, mask);
                cr_expect(same_bits(got, want), "[%s] %d threads, B %lld S %lld H %lld nh %lld: "
                          "attention_heads differs from scores + softmax + context",
                          bertc_cpu_isa_name((CpuIsa)isa), t, (long long)c->B, (long long)c->S,
                          (long long)c->H, (long long)c->nh);
                bertc_ag_graph_reset(g);
            }
    }
    bertc_cpu_set_isa(orig);
    bertc_threads_set_count(threads);
    bertc_ag_graph_destroy(g);
}

/* ---- the step arena of one lean forward --------------------------------- */

typedef struct LeanSize {
    int H, I;
    bool int8;
} LeanSize;

enum { LEAN_S = 32, LEAN_L = 2, LEAN_NH = 4, LEAN_V = 1000 };

/* The high-water of one forward of a B = 1, S = LEAN_S text in a fixed arena
 * (as on the target), lean or not. */
static size_t forward_high_water(Model *m, bool lean, float *logits)
{
    size_t cap = 4 << 20;
    void *buf = aligned_alloc(64, cap);
    Arena step;
    bertc_arena_init_fixed(&step, "step", buf, cap);
    Graph g;
    bertc_ag_graph_init(&g, &step, 0);
    bertc_ag_set_training(&g, false);
    bertc_ag_set_no_grad(&g, true);
    bertc_ag_set_lean(&g, lean);
    Arena *inputs = bertc_arena_create("inputs", 1 << 12);
    int64_t shape[2] = {1, LEAN_S};
    ITensor ids = bertc_itensor_new(inputs, 2, shape);
    for (int64_t t = 0; t < LEAN_S; t++)
        ids.data[t] = (int32_t)((t * 37 + 11) % LEAN_V);
    Batch b;
    bertc_batch_init(&b, "a text");
    bertc_batch_put_ids(&b, "input_ids", ids);
    static Outputs out;
    bertc_outputs_init(&out);
    BertcError err;
    cr_assert_eq(bertc_model_forward(m, &g, &b, &out, &err), 0, "%s", err.msg);
    Var *l = bertc_outputs_get(&out, "logits");
    cr_assert(l && l->value.numel == 4, "no (1, 4) logits");
    memcpy(logits, l->value.data, 4 * sizeof(float));
    size_t hw = bertc_arena_high_water(&step);
    bertc_arena_destroy(inputs);
    free(buf);
    return hw;
}

static void build_classifier(Model *m, Arena *arena, const LeanSize *s)
{
    BertConfig c = test_bert_config((TestBertSize){
        .arch = "BertForSequenceClassification", .vocab_size = LEAN_V, .hidden_size = s->H,
        .num_hidden_layers = LEAN_L, .num_attention_heads = LEAN_NH, .intermediate_size = s->I,
        .max_position_embeddings = LEAN_S, .num_labels = 4});
    test_model_from_config(m, arena, &c);
    test_model_init_weights(m, 5);
    if (s->int8) {
        bool chosen[256];
        BertcError err;
        cr_assert_gt(bertc_registry_int8_plan(m->reg, NULL, 0, chosen, &err), 0, "%s", err.msg);
        Arena *scratch = bertc_arena_create("quantize", 1 << 16);
        bertc_registry_quantize(m->reg, chosen, scratch);
        bertc_arena_destroy(scratch);
    }
}

/* The bound, from zoo/models/bert_inference.c's layout (B = 1, R = LEAN_ROWS = 8 rows per
 * step): the hidden buffer X and the larger of attention's K, V (2 S H) and
 * one block's Q and A (2 R H), or one FFN block's F and O (R (I + H)), in
 * floats; plus 4 KiB for what every forward holds besides: the ids, the
 * additive mask (S floats), the scores rows (nh S floats), the pooled and
 * classifier rows and some forty 64-byte-aligned Var and Outputs headers. */
enum { LEAN_R = 8 };

static size_t lean_bound(const LeanSize *s)
{
    size_t SH = (size_t)LEAN_S * (size_t)s->H, RH = (size_t)LEAN_R * (size_t)s->H;
    size_t attention = 2 * SH + 2 * RH, ffn = (size_t)LEAN_R * (size_t)s->I + RH;
    return sizeof(float) * (SH + (attention > ffn ? attention : ffn)) + 4096;
}

Test(lean, one_forward_stays_under_the_layout_bound)
{
    static const LeanSize sizes[] = {
        {64, 128, false}, {48, 96, false}, {64, 256, false},
        {64, 128, true},  {48, 96, true},  {64, 256, true},
    };
    for (size_t n = 0; n < sizeof sizes / sizeof *sizes; n++) {
        const LeanSize *s = &sizes[n];
        Arena *arena = bertc_arena_create("params", 1 << 16);
        Model m;
        build_classifier(&m, arena, s);
        float plain_logits[4], lean_logits[4];
        size_t plain = forward_high_water(&m, false, plain_logits);
        size_t lean = forward_high_water(&m, true, lean_logits);
        size_t bound = lean_bound(s);
        cr_log_info("H %d I %d S %d L %d nh %d %s: step high-water %zu B no_grad, %zu B lean "
                    "(bound %zu B)", s->H, s->I, LEAN_S, LEAN_L, LEAN_NH,
                    s->int8 ? "int8" : "fp32", plain, lean, bound);
        cr_expect_leq(lean, bound, "H %d I %d %s: lean forward used %zu B of step arena, the "
                      "layout allows %zu B", s->H, s->I, s->int8 ? "int8" : "fp32", lean, bound);
        expect_close("high-water model", "logits", lean_logits, plain_logits, 4, 1e-6, 0.0,
                     "no_grad");
        bertc_arena_destroy(arena);
    }
}

/* ---- misuse ------------------------------------------------------------- */

Test(lean, with_a_tape_is_a_one_line_error)
{
    Fixture f;
    fixture_open(&f, "bert_seqcls_single");
    Graph *g = inference_graph(true);
    bertc_ag_set_no_grad(g, false);
    Outputs out;
    BertcError err;
    bertc_outputs_init(&out);
    cr_assert_neq(bertc_model_forward(&f.model, g, &f.batch, &out, &err), 0,
                  "a lean forward recorded a tape");
    cr_expect(strstr(err.msg, "lean") && strstr(err.msg, "no_grad") && !strchr(err.msg, '\n'),
              "message: %s", err.msg);
    bertc_ag_graph_destroy(g);
    fixture_close(&f);
}

Test(lean, with_dropout_is_a_one_line_error)
{
    Fixture f;
    fixture_open(&f, "bert_seqcls_single");
    Graph *g = inference_graph(true);
    bertc_ag_set_training(g, true);
    Outputs out;
    BertcError err;
    bertc_outputs_init(&out);
    cr_assert_neq(bertc_model_forward(&f.model, g, &f.batch, &out, &err), 0,
                  "a lean forward ran in training mode");
    cr_expect(strstr(err.msg, "lean") && strstr(err.msg, "training") && !strchr(err.msg, '\n'),
              "message: %s", err.msg);
    bertc_ag_graph_destroy(g);
    fixture_close(&f);
}

typedef struct RowsCall {
    Graph *g;
    Var *q, *k, *v;
} RowsCall;

static void rows_call(void *ctx)
{
    RowsCall *c = ctx;
    bertc_ag_attention_rows(c->g, c->q, c->k, c->v, 2, 0.5f, NULL, false);
}

Test(lean, attention_rows_refuses_inputs_that_need_a_gradient)
{
    Arena *params;
    Graph *g;
    test_open(&params, &g);
    Rng rng = bertc_rng_seed(3);
    int64_t shape[3] = {1, 3, 4};
    RowsCall c = {g, test_param(params, 3, shape, &rng, -1, 1),
                  test_param(params, 3, shape, &rng, -1, 1),
                  test_param(params, 3, shape, &rng, -1, 1)};
    char msg[512];
    cr_assert(test_catch_fatal(rows_call, &c, msg, sizeof msg),
              "attention_rows accepted inputs that need a gradient");
    cr_expect(strstr(msg, "attention_rows") && strstr(msg, "no_grad") && !strchr(msg, '\n'),
              "message: %s", msg);
    bertc_ag_set_no_grad(g, true);   /* the same inputs under no_grad: fine */
    cr_expect(!test_catch_fatal(rows_call, &c, msg, sizeof msg), "under no_grad: %s", msg);
    test_close(params, g);
}
