/* test/test_quantize.c — int8 models (docs/quantization.md): what
 * `bertc quantize` writes is what the loader reads (the same int8 values and
 * scales, the same forward as quantising in memory); a quantised model's
 * last hidden state stays close to float32's (a committed fine-tuned
 * fixture and, when present, the real checkpoints of ../shared/real); a
 * damaged int8 file is one error naming the tensor; training, gradients and
 * saving are refused. The CLI's own checks: test/test_cli_quantize.c. */
#include "test/test_util.h"
#include "zoo/zoo.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FIXTURE "test/data/finetuned"
#define REAL_DIR "../shared/real"

static char tmp[128];
static Arena *arena;

static void setup(void)
{
    test_scratch_make(tmp, sizeof tmp, "quantize");
    arena = bertc_arena_create("quantize", 1 << 20);
}

static void teardown(void)
{
    test_scratch_remove(tmp);
    bertc_arena_destroy(arena);
}

TestSuite(quantize, .init = setup, .fini = teardown);

/* `bertc quantize --model src --out tmp/name`; returns the out path. */
static const char *quantize_dir(const char *src, const char *name)
{
    static char out[256];
    char cmd[768], log[2048];
    snprintf(out, sizeof out, "%s/%s", tmp, name);
    snprintf(cmd, sizeof cmd, "%s quantize --model %s --out %s", BERTC_CLI, src, out);
    int rc = test_shell(cmd, TEST_STDOUT_AND_STDERR, log, sizeof log);
    cr_assert_eq(rc, 0, "bertc quantize %s failed (%d): %s", src, rc, log);
    return out;
}

static void open_dir(const char *dir, Model *m)
{
    ModelDir d;
    BertcError err;
    cr_assert_eq(bertc_model_dir_open(&d, arena, dir, &err), 0, "%s: %s", dir, err.msg);
    *m = d.model;
}

static int open_dir_fails(const char *dir, BertcError *err)
{
    ModelDir d;
    return bertc_model_dir_open(&d, arena, dir, err);
}

static SafeTensors *open_weights(const char *dir)
{
    return test_open_weights(dir);
}

/* ---- the round trip ------------------------------------------------------ */

/* The file's I8 values and F32 scales of every planned weight are
 * bertc_quantize_rows of the float32 weight; everything else is the float32
 * tensor itself, bit for bit. */
Test(quantize, the_file_holds_the_quantised_rows_and_the_rest_unchanged)
{
    Model fp;
    open_dir(FIXTURE, &fp);
    const char *out = quantize_dir(FIXTURE, "q");
    SafeTensors *st = open_weights(out);
    Registry *r = fp.reg;
    bool chosen[256];
    BertcError err;
    cr_assert_lt(r->n_params, 256);
    int n = bertc_registry_int8_plan(r, NULL, 0, chosen, &err);
    cr_assert_eq(n, 12, "2 layers x 6 Linears should be planned, got %d", n);
    for (int i = 0; i < r->n_params; i++) {
        const Tensor *W = &r->params[i].var->value;
        const StTensorInfo *t = bertc_st_find(st, r->params[i].name);
        cr_assert(t, "'%s' is not in the quantised file", r->params[i].name);
        size_t count = (size_t)W->numel;
        if (!chosen[i]) {
            float *got = bertc_arena_alloc(arena, sizeof(float) * count);
            cr_assert_eq(bertc_st_read_f32(st, t, got, count, &err), 0, "%s", err.msg);
            cr_expect_eq(memcmp(got, W->data, sizeof(float) * count), 0,
                         "'%s' changed although it stays float32", t->name);
            continue;
        }
        int64_t rows = W->shape[0], cols = W->shape[1];
        int8_t *want = bertc_arena_alloc(arena, count), *got = bertc_arena_alloc(arena, count);
        float *want_s = bertc_arena_alloc(arena, sizeof(float) * (size_t)rows);
        float *got_s = bertc_arena_alloc(arena, sizeof(float) * (size_t)rows);
        bertc_quantize_rows(W->data, rows, cols, cols, want, want_s);
        char name[300];
        snprintf(name, sizeof name, "%s_scale", t->name);
        const StTensorInfo *s = bertc_st_find(st, name);
        cr_assert(s, "'%s' has no '%s'", t->name, name);
        cr_assert_eq(bertc_st_read_i8(st, t, got, count, &err), 0, "%s", err.msg);
        cr_assert_eq(bertc_st_read_f32(st, s, got_s, (size_t)rows, &err), 0, "%s", err.msg);
        cr_expect_eq(memcmp(got, want, count), 0, "'%s': the int8 values differ", t->name);
        cr_expect_eq(memcmp(got_s, want_s, sizeof(float) * (size_t)rows), 0,
                     "'%s': the scales differ", name);
    }
    bertc_st_close(st);
}

/* The loaded model holds every planned weight as int8 (no float values)
 * and its linear is the int8 GEMM's oracle on the file's own values. */
Test(quantize, the_loaded_weights_are_the_files_int8_values_and_scales)
{
    const char *out = quantize_dir(FIXTURE, "q");
    Model q;
    open_dir(out, &q);
    cr_assert_eq(q.reg->n_int8, 12, "%d int8 weights loaded, 12 expected", q.reg->n_int8);
    SafeTensors *st = open_weights(out);
    Graph *g = bertc_ag_graph_create(1 << 20, 0);
    bertc_ag_set_no_grad(g, true);
    Rng rng = bertc_rng_seed(5);
    BertcError err;
    int checked = 0;
    for (int i = 0; i < q.reg->n_params; i++) {
        const Param *p = &q.reg->params[i];
        if (!p->int8)
            continue;
        cr_assert(p->var->value.data == NULL && p->var->qpacked,
                  "'%s' is int8 but holds float values or no packing", p->name);
        int64_t N = p->var->value.shape[0], K = p->var->value.shape[1], M = 5;
        int8_t *qw = bertc_arena_alloc(arena, (size_t)(N * K));
        float *sw = bertc_arena_alloc(arena, sizeof(float) * (size_t)N);
        char name[300];
        snprintf(name, sizeof name, "%s_scale", p->name);
        cr_assert_eq(bertc_st_read_i8(st, bertc_st_find(st, p->name), qw, (size_t)(N * K), &err),
                     0, "%s", err.msg);
        cr_assert_eq(bertc_st_read_f32(st, bertc_st_find(st, name), sw, (size_t)N, &err), 0,
                     "%s", err.msg);
        int64_t xs[2] = {M, K};
        Var *x = bertc_ag_tensor(g, 2, xs, false);
        test_fill_uniform(x->value.data, M * K, &rng, -2.0f, 2.0f);
        Var *y = bertc_ag_linear(g, x, p->var, NULL);
        float *want = bertc_arena_alloc(arena, sizeof(float) * (size_t)(M * N));
        bertc_qgemm_reference(M, x->value.data, K, qw, sw, N, K, NULL, want, N);
        cr_expect_eq(memcmp(y->value.data, want, sizeof(float) * (size_t)(M * N)), 0,
                     "'%s': the loaded int8 linear differs from the file's values", p->name);
        checked++;
    }
    cr_expect_eq(checked, 12);
    bertc_st_close(st);
    bertc_ag_graph_destroy(g);
}

/* ---- outputs against float32 --------------------------------------------- */

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
    char name[64];
    snprintf(name, sizeof name, "hidden_states.%d", m->cfg.num_hidden_layers);
    Var *h = bertc_outputs_get(&out, "last_hidden_state");
    h = h ? h : bertc_outputs_get(&out, name);
    cr_assert(h, "the model has no last hidden state");
    *n = h->value.numel;
    float *copy = bertc_arena_alloc(arena, sizeof(float) * (size_t)*n);
    memcpy(copy, h->value.data, sizeof(float) * (size_t)*n);
    return copy;
}

/* float32 model dir vs its quantised copy: the cosine of their last hidden
 * states; *same is whether the copy changed the outputs at all. */
static double cosine_to_fp32(const char *src, const char *name, bool *same)
{
    Model fp, q;
    open_dir(src, &fp);
    open_dir(quantize_dir(src, name), &q);
    cr_assert_gt(q.reg->n_int8, 0, "%s: nothing was quantised", src);
    Graph *g = bertc_ag_graph_create(1 << 20, 0);
    bertc_ag_set_no_grad(g, true);
    bertc_ag_set_training(g, false);
    int64_t S = fp.cfg.max_position_embeddings < 16 ? fp.cfg.max_position_embeddings : 16;
    int64_t n_fp, n_q;
    float *a = hidden_of(&fp, g, 2, S, &n_fp), *b = hidden_of(&q, g, 2, S, &n_q);
    cr_assert_eq(n_fp, n_q);
    *same = memcmp(a, b, sizeof(float) * (size_t)n_fp) == 0;
    bertc_ag_graph_destroy(g);
    double c = test_cosine(a, b, n_fp);
    cr_log_info("%s: last hidden state cosine int8 vs float32 %.8f", src, c);
    return c;
}

Test(quantize, the_fine_tuned_fixture_keeps_cosine_099_to_fp32)
{
    bool same;
    double c = cosine_to_fp32(FIXTURE, "q", &same);
    cr_expect(!same, "the int8 model gives float32's exact outputs: int8 did not run");
    cr_expect_geq(c, 0.99, "last hidden state cosine %.6f to float32, below 0.99", c);
}

static void real_case(const char *name)
{
    char hf[256];
    const char *real = getenv("BERTC_REAL_DIR");   /* for a worktree beside ../shared */
    snprintf(hf, sizeof hf, "%s/%s/hf", real ? real : REAL_DIR, name);
    struct stat sb;
    if (stat(hf, &sb) != 0)
        cr_skip_test("%s is absent (the real checkpoints are not part of the project)", hf);
    bool same;
    double c = cosine_to_fp32(hf, name, &same);
    cr_expect(!same, "%s: the int8 model gives float32's exact outputs", name);
    cr_expect_geq(c, 0.99, "%s: last hidden state cosine %.6f to float32, below 0.99", name, c);
}

Test(quantize, real_squad_pt_keeps_cosine_099) { real_case("ort_bert_squad_pt_tiny"); }
Test(quantize, real_mrpc_tf_keeps_cosine_099) { real_case("ort_bert_mrpc_tf_tiny"); }

/* Quantising in memory (bench/forward --int8) is loading the quantised
 * directory: the same forward, bit for bit. */
Test(quantize, in_memory_is_the_same_model_as_the_written_one)
{
    Model mem, file;
    open_dir(FIXTURE, &mem);
    open_dir(quantize_dir(FIXTURE, "q"), &file);
    bool chosen[256];
    BertcError err;
    cr_assert_eq(bertc_registry_int8_plan(mem.reg, NULL, 0, chosen, &err), 12);
    Graph *g = bertc_ag_graph_create(1 << 20, 0);
    bertc_ag_set_no_grad(g, true);
    bertc_ag_set_training(g, false);
    cr_assert_eq(bertc_registry_quantize(mem.reg, chosen, g->step), 12);
    int64_t n_a, n_b;
    float *a = hidden_of(&mem, g, 2, 12, &n_a), *b = hidden_of(&file, g, 2, 12, &n_b);
    cr_expect_eq(memcmp(a, b, sizeof(float) * (size_t)n_a), 0,
                 "the written int8 model and the one quantised in memory differ");
    bertc_ag_graph_destroy(g);
}

/* ---- damaged files -------------------------------------------------------- */

typedef TestTensors Tensors;

static Tensors *read_all(const char *dir)
{
    return test_read_tensors(arena, dir);
}

static StEntry *entry(Tensors *t, const char *name)
{
    return test_tensor_entry(t, name);
}

/* A copy of the quantised fixture in tmp/name with weights t. */
static const char *write_damaged(const char *src, const char *name, Tensors *t)
{
    static char dir[256];
    char cmd[700], path[300];
    snprintf(dir, sizeof dir, "%s/%s", tmp, name);
    snprintf(cmd, sizeof cmd, "mkdir -p %s && cp %s/config.json %s/vocab.txt %s/", dir, src,
             src, dir);
    cr_assert_eq(system(cmd), 0);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    BertcError err;
    cr_assert_eq(bertc_st_write_file(path, t->e, t->n, NULL, 0, &err), 0, "%s", err.msg);
    return dir;
}

#define QUERY "bert.encoder.layer.0.attention.self.query.weight"

/* The damaged copy must fail to open with a message holding a and b. */
static void expect_refused(const char *dir, const char *a, const char *b)
{
    BertcError err;
    cr_assert_neq(open_dir_fails(dir, &err), 0, "the damaged model %s opened", dir);
    cr_expect(strstr(err.msg, a) && strstr(err.msg, b) && !strchr(err.msg, '\n'),
              "the message lacks '%s' or '%s' (or is not one line): %s", a, b, err.msg);
}

Test(quantize, an_int8_weight_of_the_wrong_shape_is_refused)
{
    const char *q = quantize_dir(FIXTURE, "q");
    Tensors *t = read_all(q);
    StEntry *w = entry(t, QUERY);
    ((int64_t *)w->shape)[0] = 8;   /* (16, 16) -> (8, 32): the same bytes */
    ((int64_t *)w->shape)[1] = 32;
    expect_refused(write_damaged(q, "bad_shape", t), QUERY, "[8, 32]");
}

Test(quantize, a_missing_weight_scale_is_refused)
{
    const char *q = quantize_dir(FIXTURE, "q");
    Tensors *t = read_all(q);
    *entry(t, QUERY "_scale") = t->e[--t->n];
    expect_refused(write_damaged(q, "no_scale", t), QUERY "_scale", "missing");
}

Test(quantize, nan_and_negative_scales_are_refused)
{
    const char *q = quantize_dir(FIXTURE, "q");
    Tensors *t = read_all(q);
    ((float *)entry(t, QUERY "_scale")->f32)[3] = NAN;
    expect_refused(write_damaged(q, "nan_scale", t), QUERY "_scale", "[3] is nan");
    t = read_all(q);
    ((float *)entry(t, QUERY "_scale")->f32)[0] = -0.5f;
    expect_refused(write_damaged(q, "negative_scale", t), QUERY "_scale", "finite and positive");
}

Test(quantize, minus_128_is_refused)
{
    const char *q = quantize_dir(FIXTURE, "q");
    Tensors *t = read_all(q);
    ((int8_t *)entry(t, QUERY)->i8)[17] = -128;
    expect_refused(write_damaged(q, "minus128", t), QUERY, "[1, 1] is -128");
}

/* An I8 tensor where the model reads float32 (an embedding). */
Test(quantize, an_int8_tensor_where_float32_is_expected_is_refused)
{
    const char *q = quantize_dir(FIXTURE, "q");
    Tensors *t = read_all(q);
    StEntry *emb = entry(t, "bert.embeddings.position_embeddings.weight");
    int64_t n = bertc_shape_numel(emb->ndim, emb->shape);
    int8_t *bytes = bertc_arena_calloc(arena, (size_t)n, 1);
    emb->dtype = ST_I8;
    emb->f32 = NULL;
    emb->i8 = bytes;
    expect_refused(write_damaged(q, "i8_embedding", t), "position_embeddings", "float32");
}

/* int8 weights in a model whose config has no quantization_config. */
Test(quantize, int8_weights_without_quantization_config_are_refused)
{
    const char *q = quantize_dir(FIXTURE, "q");
    char cmd[700];
    snprintf(cmd, sizeof cmd, "mkdir -p %s/plain && cp %s/config.json %s/plain/ && "
             "cp %s/model.safetensors %s/vocab.txt %s/plain/", tmp, FIXTURE, tmp, q, q, tmp);
    cr_assert_eq(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s/plain", tmp);
    expect_refused(cmd, QUERY, "quantization_config");
}

Test(quantize, another_quant_method_is_refused)
{
    const char *q = quantize_dir(FIXTURE, "q");
    char cmd[900];
    snprintf(cmd, sizeof cmd, "mkdir -p %s/bnb && cp %s/model.safetensors %s/bnb/ && "
             "sed 's/bertc_dynamic_int8/bitsandbytes/' %s/config.json > %s/bnb/config.json", tmp,
             q, tmp, q, tmp);
    cr_assert_eq(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s/bnb", tmp);
    expect_refused(cmd, "bitsandbytes", "bertc_dynamic_int8");
}

/* ---- inference only -------------------------------------------------------- */

static Model refused_model;

/* ctx: the graph, made and destroyed by the caller (the op's fatal error
 * jumps out of here, past any destroy) */
static void gradient_pass(void *ctx)
{
    Graph *g = ctx;
    int64_t xs[2] = {2, 16};
    Var *x = bertc_ag_tensor(g, 2, xs, true);
    int i = bertc_registry_find(refused_model.reg, QUERY);
    bertc_ag_linear(g, x, refused_model.reg->params[i].var, NULL);
}

static void save_weights(void *ctx)
{
    BertcError err;
    bertc_registry_save_file(refused_model.reg, ctx, &err);
}

static void optimizer_step(void *ctx)
{
    (void)ctx;
    Optimizer o;
    bertc_optimizer_init(&o, refused_model.reg, bertc_optimizer_defaults(OPT_ADAMW, 1e-3));
    bertc_optimizer_step(&o, 1e-3);
}

Test(quantize, gradients_training_and_saving_as_fp32_are_refused)
{
    open_dir(quantize_dir(FIXTURE, "q"), &refused_model);
    char msg[BERTC_ERROR_LEN], path[300];
    Graph *g = bertc_ag_graph_create(1 << 16, 0);
    bool stopped = test_catch_fatal(gradient_pass, g, msg, sizeof msg);
    bertc_ag_graph_destroy(g);
    cr_assert(stopped, "a gradient pass through an int8 weight did not stop");
    cr_expect(strstr(msg, QUERY) && strstr(msg, "int8"), "the message: %s", msg);
    snprintf(path, sizeof path, "%s/never.safetensors", tmp);
    cr_assert(test_catch_fatal(save_weights, path, msg, sizeof msg),
              "saving an int8 model as float32 did not stop");
    cr_expect(strstr(msg, "int8") && strstr(msg, "bertc_registry_save_file"), "%s", msg);
    cr_expect_neq(access(path, F_OK), 0, "%s was written", path);
    cr_assert(test_catch_fatal(optimizer_step, NULL, msg, sizeof msg),
              "an optimizer step on an int8 model did not stop");
    cr_expect(strstr(msg, "int8"), "%s", msg);
}

/* ---- the pieces: safetensors I8, quantization_config ----------------------- */

Test(quantize, i8_tensors_are_written_and_read_as_themselves_only)
{
    static const int8_t q[6] = {-127, -1, 0, 1, 64, 127};
    static const float f[2] = {0.5f, 2.0f};
    int64_t qs[2] = {2, 3}, fs[1] = {2};
    StEntry e[2] = {{.name = "w", .dtype = ST_I8, .ndim = 2, .shape = qs, .i8 = q},
                    {.name = "w_scale", .dtype = ST_F32, .ndim = 1, .shape = fs, .f32 = f}};
    static uint8_t buf[1024];
    size_t size;
    BertcError err;
    cr_assert_eq(bertc_st_write_buffer(e, 2, NULL, 0, buf, sizeof buf, &size, &err), 0, "%s",
                 err.msg);
    SafeTensors *st;
    cr_assert_eq(bertc_st_open_memory(NULL, "q.safetensors", buf, size, &st, &err), 0, "%s",
                 err.msg);
    const StTensorInfo *w = bertc_st_find(st, "w"), *s = bertc_st_find(st, "w_scale");
    cr_assert(w && s && w->dtype == ST_I8 && w->end - w->begin == 6);
    int8_t got[6];
    cr_assert_eq(bertc_st_read_i8(st, w, got, 6, &err), 0, "%s", err.msg);
    cr_expect_eq(memcmp(got, q, 6), 0, "the int8 values changed on the way");
    float as_float[6];
    int32_t as_int[6];
    cr_expect_neq(bertc_st_read_f32(st, w, as_float, 6, &err), 0, "I8 was read as float32");
    cr_expect(strstr(err.msg, "\"w\"") && strstr(err.msg, "I8"), "%s", err.msg);
    cr_expect_neq(bertc_st_read_i32(st, w, as_int, 6, &err), 0, "I8 was read as int32");
    cr_expect_neq(bertc_st_read_i8(st, s, got, 2, &err), 0, "F32 was read as int8");
    cr_expect(strstr(err.msg, "w_scale") && strstr(err.msg, "F32") && strstr(err.msg, "I8"),
              "%s", err.msg);
    cr_expect_neq(bertc_st_read_i8(st, w, got, 5, &err), 0, "a count mismatch was accepted");
    bertc_st_close(st);
}

/* config.json text with `extra` as its last key: parsed, or the error. */
static int parse_config(const char *extra, BertConfig *cfg, BertcError *err)
{
    char text[1024];
    snprintf(text, sizeof text, "{\"architectures\": [\"BertModel\"], \"vocab_size\": 30, "
             "\"hidden_size\": 8, \"num_hidden_layers\": 1, \"num_attention_heads\": 2, "
             "\"intermediate_size\": 16, \"max_position_embeddings\": 16, "
             "\"type_vocab_size\": 2%s}", extra);
    return bertc_bert_config_parse(NULL, "config.json", text, strlen(text), cfg, err);
}

Test(quantize, quantization_config_is_read_checked_and_written_back)
{
    BertConfig cfg;
    BertcError err;
    cr_assert_eq(parse_config("", &cfg, &err), 0, "%s", err.msg);
    cr_expect(!cfg.int8_dynamic, "a config without quantization_config is int8");
    cr_assert_eq(parse_config(", \"quantization_config\": {\"quant_method\": "
                              "\"bertc_dynamic_int8\", \"modules\": [\"a\"]}", &cfg, &err), 0,
                 "%s", err.msg);
    cr_expect(cfg.int8_dynamic);
    char text[8192];
    size_t len;
    cr_assert_eq(bertc_bert_config_format(&cfg, text, sizeof text, &len, &err), 0, "%s", err.msg);
    BertConfig back;
    cr_assert_eq(bertc_bert_config_parse(NULL, "back", text, len, &back, &err), 0, "%s", err.msg);
    cr_expect(back.int8_dynamic, "the written config lost its quantization_config: %s", text);
    cr_expect_neq(parse_config(", \"quantization_config\": \"int8\"", &cfg, &err), 0);
    cr_expect(strstr(err.msg, "quantization_config") && strstr(err.msg, "object"), "%s", err.msg);
    cr_expect_neq(parse_config(", \"quantization_config\": {\"bits\": 8}", &cfg, &err), 0);
    cr_expect(strstr(err.msg, "quant_method"), "%s", err.msg);
}
