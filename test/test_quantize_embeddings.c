/* test/test_quantize_embeddings.c — int8 word embeddings (`bertc quantize
 * --embeddings`, docs/quantization.md): the lookup of an int8 table is the
 * lookup of a float table holding q * scale, bit for bit, through a whole
 * forward; the file holds bertc_quantize_rows of the float table per token
 * and the loader keeps exactly those bytes and scales (no float copy); a
 * hand-checked row; the fine-tuned fixture's logits keep cosine >= 0.99;
 * damaged files, tied tables, gradients and bad const entries are one-line
 * errors naming the tensor. The exported firmware: test/test_export_c.c. */
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
#define WORD "bert.embeddings.word_embeddings.weight"

static char tmp[128];
static char log_text[4096];
static Arena *arena;

static void setup(void)
{
    test_scratch_make(tmp, sizeof tmp, "quantize_emb");
    arena = bertc_arena_create("quantize_embeddings", 1 << 20);
}

static void teardown(void)
{
    test_scratch_remove(tmp);
    bertc_arena_destroy(arena);
}

TestSuite(quantize_embeddings, .init = setup, .fini = teardown);

static bool one_line(const char *s)
{
    const char *nl = strchr(s, '\n');
    return !nl || nl[1] == '\0';
}

/* `bertc quantize --model src --out tmp/name flags`; returns the out path. */
static const char *quantize_dir(const char *src, const char *name, const char *flags)
{
    static char out[256];
    char cmd[768];
    snprintf(out, sizeof out, "%s/%s", tmp, name);
    snprintf(cmd, sizeof cmd, "%s quantize --model %s --out %s %s", BERTC_CLI, src, out, flags);
    int rc = test_shell(cmd, TEST_STDOUT_AND_STDERR, log_text, sizeof log_text);
    cr_assert_eq(rc, 0, "bertc quantize %s %s failed (%d): %s", src, flags, rc, log_text);
    return out;
}

static void open_dir(const char *dir, Model *m)
{
    ModelDir d;
    BertcError err;
    cr_assert_eq(bertc_model_dir_open(&d, arena, dir, &err), 0, "%s: %s", dir, err.msg);
    *m = d.model;
}

static Param *word_table(Model *m)
{
    int i = bertc_registry_find(m->reg, WORD);
    cr_assert_geq(i, 0, "the model has no '%s'", WORD);
    return &m->reg->params[i];
}

static SafeTensors *open_weights(const char *dir)
{
    return test_open_weights(dir);
}

/* The file's int8 rows and row scales of WORD (V, H). */
static void read_table(SafeTensors *st, int64_t V, int64_t H, int8_t *q, float *scale)
{
    BertcError err;
    const StTensorInfo *t = bertc_st_find(st, WORD), *s = bertc_st_find(st, WORD "_scale");
    cr_assert(t && s, "the file lacks '%s' or its scales", WORD);
    cr_assert_eq(t->dtype, ST_I8, "'%s' is %s in the file, I8 expected", WORD,
                 bertc_st_dtype_name(t->dtype));
    cr_assert_eq(bertc_st_read_i8(st, t, q, (size_t)(V * H), &err), 0, "%s", err.msg);
    cr_assert_eq(bertc_st_read_f32(st, s, scale, (size_t)V, &err), 0, "%s", err.msg);
}

/* ---- the file and the loaded model ---------------------------------------- */

/* The file holds bertc_quantize_rows of the float table, per token; the
 * loaded model holds those bytes and scales, and no float values. */
Test(quantize_embeddings, the_file_and_the_loaded_model_hold_the_rows_quantised_per_token)
{
    Model fp, q;
    open_dir(FIXTURE, &fp);
    const char *out = quantize_dir(FIXTURE, "q", "--embeddings");
    cr_expect(strstr(log_text, "12 Linear weights and the word embeddings"), "%s", log_text);
    open_dir(out, &q);
    const Tensor *E = &word_table(&fp)->var->value;
    int64_t V = E->shape[0], H = E->shape[1];
    int8_t *want = bertc_arena_alloc(arena, (size_t)(V * H));
    int8_t *got = bertc_arena_alloc(arena, (size_t)(V * H));
    float *want_s = bertc_arena_alloc(arena, sizeof(float) * (size_t)V);
    float *got_s = bertc_arena_alloc(arena, sizeof(float) * (size_t)V);
    bertc_quantize_rows(E->data, V, H, H, want, want_s);
    SafeTensors *st = open_weights(out);
    read_table(st, V, H, got, got_s);
    bertc_st_close(st);
    cr_expect_eq(memcmp(got, want, (size_t)(V * H)), 0, "'%s': the file's int8 rows differ",
                 WORD);
    cr_expect_eq(memcmp(got_s, want_s, sizeof(float) * (size_t)V), 0,
                 "'%s_scale': the file's scales differ", WORD);
    const Param *p = word_table(&q);
    cr_assert(p->int8 && p->var->value.data == NULL && p->var->qrows && p->var->qrow_scale,
              "'%s' is not held as int8 rows without float values", WORD);
    cr_expect_eq(memcmp(p->var->qrows, want, (size_t)(V * H)), 0, "loaded rows differ");
    cr_expect_eq(memcmp(p->var->qrow_scale, want_s, sizeof(float) * (size_t)V), 0,
                 "loaded scales differ");
    cr_expect_eq(q.reg->n_int8, 13, "%d int8 tensors, 12 Linear + 1 table expected",
                 q.reg->n_int8);
    const Param *pos = &q.reg->params[bertc_registry_find(q.reg,
                                      "bert.embeddings.position_embeddings.weight")];
    cr_expect(!pos->int8 && pos->var->value.data, "the position table is not float32");
    char config[300], text[8192];
    snprintf(config, sizeof config, "%s/config.json", out);
    test_read_text(config, text, sizeof text);
    cr_expect(strstr(text, "\"embeddings\": {") && strstr(text, "int8 per-row symmetric") &&
              strstr(text, "\"bert.embeddings.word_embeddings\""),
              "config.json does not record the int8 embeddings: %s", text);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "%s summary --model %s", BERTC_CLI, out);
    cr_assert_eq(test_shell(cmd, TEST_STDOUT_AND_STDERR, log_text, sizeof log_text), 0, "%s",
                 log_text);
    cr_expect(strstr(log_text, "12 Linear weights int8 with one scale per output channel, the "
                     "word embeddings int8 with one scale per token"),
              "bertc summary does not say what is int8: %s", log_text);
}

/* A row checked by hand: max |x| = 1.27 -> scale 1.27 / 127 = 0.01,
 * q = round(x / 0.01) = [50, -127, 0, ...]; its lookup is q * scale. */
Test(quantize_embeddings, a_hand_checked_row)
{
    Model m;
    open_dir(FIXTURE, &m);
    Param *p = word_table(&m);
    int64_t H = p->var->value.shape[1], id = 5;
    float *row = p->var->value.data + id * H;
    memset(row, 0, sizeof(float) * (size_t)H);
    row[0] = 0.5f;
    row[1] = -1.27f;
    bool *chosen = bertc_arena_calloc(arena, (size_t)m.reg->n_params, sizeof *chosen);
    BertcError err;
    cr_assert_eq(bertc_registry_int8_plan_embeddings(m.reg, chosen, &err), 1, "%s", err.msg);
    cr_assert_eq(bertc_registry_quantize(m.reg, chosen, arena), 1);
    const int8_t *q = p->var->qrows + id * H;
    float scale = p->var->qrow_scale[id];
    cr_expect(q[0] == 50 && q[1] == -127, "q = [%d, %d, ...], [50, -127, ...] expected", q[0],
              q[1]);
    for (int64_t h = 2; h < H; h++)
        cr_expect_eq(q[h], 0, "q[%lld] = %d, 0 expected", (long long)h, q[h]);
    cr_expect(fabsf(scale - 0.01f) <= 1e-9f, "scale %.9g, 0.01 expected", (double)scale);
    Graph *g = bertc_ag_graph_create(1 << 16, 0);
    bertc_ag_set_no_grad(g, true);
    int32_t ids_data[1] = {(int32_t)id};
    int64_t ids_shape[1] = {1};
    ITensor ids = bertc_itensor_view(ids_data, 1, ids_shape);
    Var *y = bertc_ag_embedding(g, p->var, &ids, 0);
    cr_expect(y->value.data[0] == 50.0f * scale && y->value.data[1] == -127.0f * scale,
              "lookup [%.9g, %.9g], q * scale expected", (double)y->value.data[0],
              (double)y->value.data[1]);
    bertc_ag_graph_destroy(g);
}

/* ---- outputs --------------------------------------------------------------- */

/* The fixture's inputs through m; a copy of output `name`. */
static float *output_of(Model *m, const char *name, int64_t *n)
{
    SafeTensors *st;
    BertcError err;
    cr_assert_eq(bertc_st_open_file(arena, FIXTURE "/inputs.safetensors", &st, &err), 0, "%s",
                 err.msg);
    Batch b;
    bertc_batch_init(&b, "inputs.safetensors");
    cr_assert_eq(bertc_batch_from_safetensors(&b, st, arena, &err), 0, "%s", err.msg);
    Graph *g = bertc_ag_graph_create(1 << 20, 0);
    bertc_ag_set_no_grad(g, true);
    bertc_ag_set_training(g, false);
    Outputs out;
    bertc_outputs_init(&out);
    test_forward_ok(m, g, &b, &out);
    Var *v = bertc_outputs_get(&out, name);
    cr_assert(v, "the model gave no '%s'", name);
    *n = v->value.numel;
    float *copy = bertc_arena_alloc(arena, sizeof(float) * (size_t)*n);
    memcpy(copy, v->value.data, sizeof(float) * (size_t)*n);
    bertc_ag_graph_destroy(g);
    return copy;
}

static void expect_same(const char *what, const float *a, const float *b, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], sizeof(float)) != 0) {
            cr_expect_fail("%s[%lld]: int8 table %.9g, dequantised float table %.9g", what,
                           (long long)i, (double)a[i], (double)b[i]);
            return;
        }
}

/* The model with int8 embeddings against the same int8 model whose float
 * table holds q * scale (float): the same bits, logits and hidden states. */
Test(quantize_embeddings, the_int8_table_is_its_dequantised_float_table_bit_for_bit)
{
    Model q8, ref;
    open_dir(quantize_dir(FIXTURE, "emb", "--embeddings"), &q8);
    open_dir(quantize_dir(FIXTURE, "lin", ""), &ref);
    const Var *t = word_table(&q8)->var;
    Tensor *E = &word_table(&ref)->var->value;
    int64_t V = E->shape[0], H = E->shape[1];
    int64_t n_a, n_b;
    float *before = output_of(&ref, "logits", &n_b);
    for (int64_t v = 0; v < V; v++)
        for (int64_t h = 0; h < H; h++)
            E->data[v * H + h] = (float)t->qrows[v * H + h] * t->qrow_scale[v];
    static const char *const names[] = {"logits", "last_hidden_state", "pooler_output"};
    for (int k = 0; k < 3; k++) {
        float *a = output_of(&q8, names[k], &n_a), *b = output_of(&ref, names[k], &n_b);
        cr_assert_eq(n_a, n_b);
        expect_same(names[k], a, b, n_a);
    }
    float *after = output_of(&ref, "logits", &n_b);
    cr_expect_neq(memcmp(before, after, sizeof(float) * (size_t)n_b), 0,
                  "the dequantised table gave the float table's logits: nothing was rounded");
}

/* The committed fine-tuned fixture: logits of int8 Linears + int8
 * embeddings against float32. */
Test(quantize_embeddings, the_fine_tuned_fixture_keeps_logits_cosine_099_to_fp32)
{
    Model fp, q8;
    open_dir(FIXTURE, &fp);
    open_dir(quantize_dir(FIXTURE, "emb", "--embeddings"), &q8);
    int64_t n_a, n_b;
    float *a = output_of(&fp, "logits", &n_a), *b = output_of(&q8, "logits", &n_b);
    cr_assert_eq(n_a, n_b);
    cr_expect_neq(memcmp(a, b, sizeof(float) * (size_t)n_a), 0,
                  "the int8 model gives float32's exact logits: int8 did not run");
    double c = test_cosine(a, b, n_a);
    cr_log_info("logits cosine int8 (with embeddings) vs float32 %.8f", c);
    cr_expect_geq(c, 0.99, "logits cosine %.6f to float32, below 0.99", c);
}

/* ---- refusals ------------------------------------------------------------- */

static Var *refused_table;

/* ctx: the graph, made and destroyed by the caller (the op's fatal error
 * jumps out of here, past any destroy) */
static void gradient_lookup(void *ctx)
{
    Graph *g = ctx;
    int32_t ids_data[2] = {1, 2};
    int64_t ids_shape[1] = {2};
    ITensor ids = bertc_itensor_view(ids_data, 1, ids_shape);
    bertc_ag_embedding(g, refused_table, &ids, 0);
}

Test(quantize_embeddings, a_gradient_through_the_int8_table_is_refused)
{
    Model q8;
    open_dir(quantize_dir(FIXTURE, "emb", "--embeddings"), &q8);
    refused_table = word_table(&q8)->var;
    char msg[BERTC_ERROR_LEN];
    Graph *g = bertc_ag_graph_create(1 << 16, 0);
    bool stopped = test_catch_fatal(gradient_lookup, g, msg, sizeof msg);
    bertc_ag_graph_destroy(g);
    cr_assert(stopped, "a lookup that records a gradient through the int8 table did not stop");
    cr_expect(strstr(msg, WORD) && strstr(msg, "int8") && one_line(msg), "%s", msg);
}

static Model tied_model;

static void quantize_tied_table(void *ctx)
{
    (void)ctx;
    bool *chosen = bertc_arena_calloc(arena, (size_t)tied_model.reg->n_params, sizeof *chosen);
    chosen[bertc_registry_find(tied_model.reg, WORD)] = true;
    bertc_registry_quantize(tied_model.reg, chosen, arena);
}

/* In memory: the plan refuses a tied table, and quantising it anyway (API
 * misuse) stops with a message instead of leaving the decoder without values. */
Test(quantize_embeddings, a_tied_table_is_refused_by_the_plan_and_the_quantiser)
{
    BertcError err;
    cr_assert_eq(bertc_model_open(&tied_model, arena, "test/data/zoo/bert_mlm/config.json",
                                  "test/data/zoo/bert_mlm/weights.safetensors", &err), 0, "%s",
                 err.msg);
    bool *chosen = bertc_arena_calloc(arena, (size_t)tied_model.reg->n_params, sizeof *chosen);
    cr_expect_lt(bertc_registry_int8_plan_embeddings(tied_model.reg, chosen, &err), 0,
                 "the plan chose a tied table");
    cr_expect(strstr(err.msg, WORD) && strstr(err.msg, "tied"), "%s", err.msg);
    char msg[BERTC_ERROR_LEN];
    cr_assert(test_catch_fatal(quantize_tied_table, NULL, msg, sizeof msg),
              "quantising a tied table did not stop");
    cr_expect(strstr(msg, WORD) && strstr(msg, "cls.predictions.decoder.weight"), "%s", msg);
}

/* An MLM model's decoder is the word-embedding table: --embeddings refuses. */
Test(quantize_embeddings, tied_word_embeddings_are_refused_in_one_line)
{
    char dir[256], cmd[900];
    snprintf(dir, sizeof dir, "%s/mlm", tmp);
    snprintf(cmd, sizeof cmd, "mkdir -p %s && cp test/data/zoo/bert_mlm/config.json %s/ && "
             "cp test/data/zoo/bert_mlm/weights.safetensors %s/model.safetensors", dir, dir, dir);
    cr_assert_eq(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s quantize --model %s --out %s/mlm8 --embeddings", BERTC_CLI,
             dir, tmp);
    int rc = test_shell(cmd, TEST_STDERR, log_text, sizeof log_text);
    cr_expect_neq(rc, 0, "tied word embeddings were quantised");
    cr_expect(strstr(log_text, WORD) && strstr(log_text, "cls.predictions.decoder.weight") &&
              strstr(log_text, "tied") && one_line(log_text), "%s", log_text);
}

/* ---- damaged files --------------------------------------------------------- */

typedef TestTensors Tensors;

static Tensors *read_all(const char *dir)
{
    return test_read_tensors(arena, dir);
}

static StEntry *entry(Tensors *t, const char *name)
{
    return test_tensor_entry(t, name);
}

/* A copy of src (config, and vocab when it has one) in tmp/name with
 * weights t; opening it must fail with one line holding a and b. */
static void expect_refused(const char *src, const char *name, Tensors *t, const char *a,
                           const char *b)
{
    char dir[256], cmd[1800], path[300];
    snprintf(dir, sizeof dir, "%s/%s", tmp, name);
    snprintf(cmd, sizeof cmd, "mkdir -p %s && cp %s/config.json %s/ && "
             "{ [ ! -f %s/vocab.txt ] || cp %s/vocab.txt %s/; }", dir, src, dir, src, src, dir);
    cr_assert_eq(system(cmd), 0);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    BertcError err;
    cr_assert_eq(bertc_st_write_file(path, t->e, t->n, NULL, 0, &err), 0, "%s", err.msg);
    ModelDir d;
    cr_assert_neq(bertc_model_dir_open(&d, arena, dir, &err), 0, "the damaged model %s opened",
                  name);
    cr_expect(strstr(err.msg, a) && strstr(err.msg, b) && one_line(err.msg),
              "%s: the message lacks '%s' or '%s' (or is not one line): %s", name, a, b,
              err.msg);
}

Test(quantize_embeddings, damaged_int8_tables_are_one_line_errors_naming_the_tensor)
{
    const char *q = quantize_dir(FIXTURE, "emb", "--embeddings");
    Tensors *t = read_all(q);
    *entry(t, WORD "_scale") = t->e[--t->n];   /* the scales removed */
    expect_refused(q, "no_scale", t, WORD "_scale", "missing");

    t = read_all(q);
    int64_t *shape = (int64_t *)entry(t, WORD "_scale")->shape;
    shape[0] -= 1;   /* V - 1 scales */
    expect_refused(q, "short_scale", t, WORD "_scale", "must be F32 [473]");

    t = read_all(q);
    StEntry *s = entry(t, WORD "_scale");
    s->dtype = ST_I8;   /* scales as int8 */
    s->i8 = bertc_arena_calloc(arena, 473, 1);
    s->f32 = NULL;
    expect_refused(q, "i8_scale", t, WORD "_scale", "is I8");

    t = read_all(q);
    ((float *)entry(t, WORD "_scale")->f32)[7] = 0.0f;
    expect_refused(q, "zero_scale", t, WORD "_scale", "[7] is 0");

    t = read_all(q);
    ((int8_t *)entry(t, WORD)->i8)[16 * 3 + 2] = -128;
    expect_refused(q, "minus128", t, WORD, "[3, 2] is -128");

    t = read_all(q);
    shape = (int64_t *)entry(t, WORD)->shape;
    shape[0] = 473 * 2;   /* the same bytes as (946, 8) */
    shape[1] = 8;
    expect_refused(q, "bad_shape", t, WORD, "[946, 8]");
}

/* An MLM model whose file holds its (tied) word embeddings as I8: the
 * loader refuses, naming the table and the name tied to it. */
Test(quantize_embeddings, int8_word_embeddings_of_a_tied_model_are_refused_on_load)
{
    char dir[256], cmd[900];
    snprintf(dir, sizeof dir, "%s/mlm", tmp);
    snprintf(cmd, sizeof cmd, "mkdir -p %s && cp test/data/zoo/bert_mlm/config.json %s/ && "
             "cp test/data/zoo/bert_mlm/weights.safetensors %s/model.safetensors", dir, dir, dir);
    cr_assert_eq(system(cmd), 0);
    const char *q = quantize_dir(dir, "mlm8", "");
    Tensors *t = read_all(q);
    StEntry *w = entry(t, WORD);
    int64_t V = w->shape[0], H = w->shape[1];
    w->dtype = ST_I8;
    w->i8 = bertc_arena_calloc(arena, (size_t)(V * H), 1);
    w->f32 = NULL;
    float *scale = bertc_arena_alloc(arena, sizeof(float) * (size_t)V);
    for (int64_t v = 0; v < V; v++)
        scale[v] = 1.0f;
    cr_assert_lt(t->n, 64);
    snprintf(t->names[t->n], sizeof t->names[t->n], "%s_scale", WORD);
    t->shapes[t->n][0] = V;
    t->e[t->n] = (StEntry){.name = t->names[t->n], .dtype = ST_F32, .ndim = 1,
                           .shape = t->shapes[t->n], .f32 = scale};
    t->n++;
    expect_refused(q, "mlm_i8_table", t, WORD, "ties it to 'cls.predictions.decoder.weight'");
}

/* ---- const data (bertc export-c) ------------------------------------------- */

Test(quantize_embeddings, bind_const_checks_the_int8_table_entry)
{
    BertConfig cfg;
    BertcError err;
    cr_assert_eq(bertc_bert_config_read(FIXTURE "/config.json", &cfg, &err), 0, "%s", err.msg);
    static const char *const int8_names[1] = {WORD};
    Model m;
    ConstBuild cb = {.arch = bertc_zoo_arch(cfg.architecture), .int8_names = int8_names, .n_int8 = 1};
    cr_assert_eq(bertc_model_build_const(&m, arena, &cfg, &cb, &err), 0, "%s", err.msg);
    const Registry *r = m.reg;
    int w = bertc_registry_find(r, WORD);
    cr_assert(w >= 0 && r->params[w].int8, "'%s' is not int8 in the const build", WORD);
    ConstParam *t = bertc_arena_calloc(arena, (size_t)r->n_params, sizeof *t);
    float *ones = bertc_arena_alloc(arena, sizeof(float) * (1 << 14));
    for (int k = 0; k < 1 << 14; k++)
        ones[k] = 1.0f;
    int8_t *rows = bertc_arena_calloc(arena, 473 * 16, 1);
    for (int i = 0; i < r->n_params; i++)
        t[i] = (ConstParam){.name = r->params[i].name, .numel = r->params[i].var->value.numel,
                            .values = ones};
    t[w] = (ConstParam){.name = WORD, .numel = 473 * 16, .qdata = rows, .scale = ones};

    t[w].numel -= 1;
    cr_expect_neq(bertc_registry_bind_const(m.reg, t, r->n_params, &err), 0);
    cr_expect(strstr(err.msg, WORD) && strstr(err.msg, "7567 int8 values"), "%s", err.msg);
    t[w].numel += 1;
    t[w].scale = (const float *)((const char *)ones + 2);
    cr_expect_neq(bertc_registry_bind_const(m.reg, t, r->n_params, &err), 0);
    cr_expect(strstr(err.msg, WORD) && strstr(err.msg, "aligned"), "%s", err.msg);
    t[w].scale = ones;
    t[w].col_sum = (const int32_t *)ones;   /* a packed Linear's entry */
    cr_expect_neq(bertc_registry_bind_const(m.reg, t, r->n_params, &err), 0);
    cr_expect(strstr(err.msg, WORD) && strstr(err.msg, "int8 rows"), "%s", err.msg);
    t[w].col_sum = NULL;
    cr_assert_eq(bertc_registry_bind_const(m.reg, t, r->n_params, &err), 0, "%s", err.msg);
    cr_expect(r->params[w].var->qrows == rows && r->params[w].var->qrow_scale == ones,
              "the int8 table is not read in place");
}
