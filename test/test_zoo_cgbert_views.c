/* test/test_zoo_cgbert_views.c — what CGBERT and QACGBERT show a learner
 * and the original code's choices (zoo/models/cgbert.c, zoo/models/qacgbert.c):
 *   - every output is declared (OutputSpec) with its exact shape, and every
 *     declared output is put, on both pooler types;
 *   - (their values against PyTorch are the parity fixtures cgbert_views,
 *     qacgbert_views, cgbert_original, qacgbert_paper in test_zoo_parity);
 *   - lambda_init "original" draws the gates with std 0.01 from the same
 *     stream, every other parameter unchanged;
 *   - context_dropout_prob: training mode against PyTorch with p = 1 (the
 *     dropout's place: C_Q and C_K, before the quasi scores and the gates), no
 *     random draw at p = 0 (the default training path is unchanged), and the
 *     draws C_Q and C_K take at p > 0;
 *   - the keys are read, range-checked and written back. */
#include "test/test_util.h"
#include "zoo/zoo.h"
#include "zoo/models/cgbert_internal.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define ZOO "test/data/zoo/"

static Arena *arena;
static Graph *graph;

static void setup(void)
{
    test_open(&arena, &graph);
    bertc_ag_set_training(graph, false);
}

static void teardown(void) { test_close(arena, graph); }

TestSuite(zoo_cgbert_views, .init = setup, .fini = teardown);

/* The model of a fixture directory, its weights loaded, and its inputs. */
static void open_case(const char *dir, Model *m, BertConfig *cfg, Batch *in)
{
    char path[256];
    BertcError err;
    snprintf(path, sizeof path, ZOO "%s/config.json", dir);
    test_model_build(m, arena, path, cfg);
    snprintf(path, sizeof path, ZOO "%s/weights.safetensors", dir);
    test_model_load(m, path);
    snprintf(path, sizeof path, ZOO "%s/inputs.safetensors", dir);
    SafeTensors *st;
    cr_assert_eq(bertc_st_open_file(arena, path, &st, &err), 0, "%s", err.msg);
    bertc_batch_init(in, path);
    cr_assert_eq(bertc_batch_from_safetensors(in, st, arena, &err), 0, "%s", err.msg);
}

static const Tensor *output(const Outputs *out, const char *name)
{
    Var *v = bertc_outputs_get(out, name);
    cr_assert(v, "no output '%s'", name);
    return &v->value;
}

/* ---- declared shapes ----------------------------------------------------- */

/* The size a declared dimension name stands for, -1 if unknown. */
static int64_t dim_of(const char *name, size_t len, const BertConfig *cfg, int64_t B, int64_t S)
{
    int64_t H = cfg->hidden_size, nh = cfg->num_attention_heads;
    const struct {
        const char *name;
        int64_t size;
    } dims[] = {{"B", B}, {"S", S}, {"H", H}, {"nh", nh}, {"d", H / nh}, {"1", 1},
                {"num_labels", cfg->num_labels}};
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
        if (strlen(dims[i].name) == len && strncmp(dims[i].name, name, len) == 0)
            return dims[i].size;
    return -1;
}

/* "(B, nh, S, d)" -> shape, its ndim returned; "()" -> 0; -1 on a name
 * this test does not know (the failure shows the text). */
static int declared_shape(const char *text, const BertConfig *cfg, int64_t B, int64_t S,
                          int64_t *shape)
{
    const char *p = text + 1;
    int ndim = 0;
    while (*p && *p != ')') {
        size_t len = strcspn(p, ",)");
        int64_t size = dim_of(p, len, cfg, B, S);
        if (size < 0 || ndim == 4)
            return -1;
        shape[ndim++] = size;
        p += len;
        p += strspn(p, ", ");
    }
    return ndim;
}

/* name's layer-pattern ("layers.{l}.x", "hidden_states.{i}") for a put name. */
static const OutputSpec *spec_of(const ModelArch *arch, const char *name)
{
    for (int i = 0; bertc_model_output(arch, i); i++) {
        const OutputSpec *o = bertc_model_output(arch, i);
        const char *brace = strchr(o->name, '{');
        if (!brace) {
            if (strcmp(o->name, name) == 0)
                return o;
            continue;
        }
        size_t head = (size_t)(brace - o->name);
        const char *rest = name + head;
        if (strncmp(o->name, name, head) != 0 || *rest < '0' || *rest > '9')
            continue;
        rest += strspn(rest, "0123456789");
        if (strcmp(rest, brace + 3) == 0)
            return o;
    }
    return NULL;
}

/* Every output put has its declared shape, and every declared output (each
 * layer's, each hidden state) is put. */
static void expect_declared_outputs(const char *dir)
{
    Model m;
    BertConfig cfg;
    Batch in;
    Outputs out;
    open_case(dir, &m, &cfg, &in);
    test_forward_ok(&m, graph, &in, &out);
    const BatchItem *ids = bertc_batch_find(&in, "input_ids");
    int64_t B = ids->ids.shape[0], S = ids->ids.shape[1];
    for (int i = 0; i < out.n; i++) {
        const char *name = out.items[i].name;
        const Tensor *v = &out.items[i].var->value;
        const OutputSpec *o = spec_of(m.arch, name);
        cr_assert(o, "%s: '%s' is put but not declared", dir, name);
        int64_t want[4];
        int ndim = declared_shape(o->shape, &cfg, B, S, want);
        cr_assert(ndim >= 0, "%s: '%s' declares %s, a shape this test cannot read", dir, name,
                  o->shape);
        char got[SHAPE_STR_LEN];
        bertc_shape_str(got, sizeof got, v->ndim, v->shape);
        cr_expect(bertc_shape_equal(v->ndim, v->shape, ndim, want), "%s: '%s' has shape %s, "
                  "declared %s", dir, name, got, o->shape);
    }
    int L = cfg.num_hidden_layers, expected = 0;
    for (int i = 0; bertc_model_output(m.arch, i); i++) {
        const char *name = bertc_model_output(m.arch, i)->name;
        expected += strstr(name, "{l}") ? L : strstr(name, "{i}") ? L + 1 : 1;
    }
    cr_expect_eq(out.n, expected, "%s: %d outputs put, %d declared", dir, out.n, expected);
}

Test(zoo_cgbert_views, cgbert_puts_every_declared_output_with_its_shape)
{
    expect_declared_outputs("cgbert_views");
    expect_declared_outputs("cgbert_original");    /* first_token pooler */
}

Test(zoo_cgbert_views, qacgbert_puts_every_declared_output_with_its_shape)
{
    expect_declared_outputs("qacgbert_views");
    expect_declared_outputs("qacgbert_paper");     /* first_token pooler, alpha, beta, gamma */
}


/* ---- lambda_init ----------------------------------------------------------- */

static bool is_gate_weight(const char *name)
{
    static const char *const gates[] = {".lambda_Qc.weight", ".lambda_Q.weight",
                                        ".lambda_Kc.weight", ".lambda_K.weight"};
    size_t n = strlen(name);
    for (int i = 0; i < 4; i++)
        if (n > strlen(gates[i]) && strcmp(name + n - strlen(gates[i]), gates[i]) == 0)
            return true;
    return false;
}

/* The same config and seed with lambda_init "original": the gates' weights
 * are the default's times 0.01 / initializer_range (the same normal draws),
 * every other parameter is bit for bit the default's, and the gates' sample
 * std is near 0.01, not initializer_range. */
static void expect_original_lambda_init(const char *arch_case)
{
    char path[256];
    snprintf(path, sizeof path, ZOO "%s/config.json", arch_case);
    BertConfig cfg;
    Model base, original;
    test_model_build(&base, arena, path, &cfg);
    cr_assert_eq(bertc_cg_keys_of(&cfg).lambda_init, LAMBDA_INIT_RANGE, "%s: the default", path);
    test_config_set(&cfg, "lambda_init", LAMBDA_INIT_ORIGINAL);
    test_model_from_config(&original, arena, &cfg);
    test_model_init_weights(&base, 7);          /* initializer_range 0.02 */
    test_model_init_weights(&original, 7);
    cr_assert_eq(base.reg->n_params, original.reg->n_params);
    double ratio = CG_ORIGINAL_LAMBDA_STD / 0.02, sum2 = 0;
    int64_t n = 0;
    for (int i = 0; i < base.reg->n_params; i++) {
        const Param *a = &base.reg->params[i], *b = &original.reg->params[i];
        const Tensor *x = &a->var->value, *y = &b->var->value;
        if (!is_gate_weight(a->name)) {
            cr_expect_eq(memcmp(x->data, y->data, sizeof(float) * (size_t)x->numel), 0,
                         "%s: '%s' changed with lambda_init", arch_case, a->name);
            continue;
        }
        for (int64_t k = 0; k < x->numel; k++) {
            double want = x->data[k] * ratio;
            cr_expect(fabs(y->data[k] - want) <= 1e-6 * fabs(want) + 1e-12,
                      "%s: '%s'[%lld] = %.9g, the default's %.9g times %g", arch_case, a->name,
                      (long long)k, (double)y->data[k], (double)x->data[k], ratio);
            sum2 += (double)y->data[k] * y->data[k];
        }
        n += x->numel;
    }
    /* 4 gates x d x L = 4 x 8 x 2 = 64 draws of N(0, 0.01): the sample std is
     * within 0.01 (1 ± 0.4), and N(0, 0.02)'s would not be */
    cr_assert(n >= 64, "%s: %lld gate weights", arch_case, (long long)n);
    double std = sqrt(sum2 / (double)n);
    cr_expect(std > 0.006 && std < 0.014, "%s: gate weights' std %.4g, want about 0.01",
              arch_case, std);
}

Test(zoo_cgbert_views, cgbert_lambda_init_original_draws_gates_with_std_0_01)
{
    expect_original_lambda_init("cgbert_gate");
}

Test(zoo_cgbert_views, qacgbert_lambda_init_original_draws_gates_with_std_0_01)
{
    expect_original_lambda_init("qacgbert_gate");
}

/* ---- context_dropout_prob ---------------------------------------------------- */

/* |got − ref| <= 1e-4 max|ref| + 1e-6 over the tensor (SPEC §6). */
static void expect_close(const char *what, const float *got, const SafeTensors *want,
                         const char *name, int64_t numel)
{
    const StTensorInfo *info = bertc_st_find(want, name);
    cr_assert(info, "expected_train.safetensors has no '%s'", name);
    cr_assert_eq(info->numel, numel, "'%s': %lld values, PyTorch %lld", name, (long long)numel,
                 (long long)info->numel);
    float *ref = bertc_arena_alloc(arena, sizeof(float) * (size_t)(numel ? numel : 1));
    BertcError err;
    cr_assert_eq(bertc_st_read_f32(want, info, ref, (size_t)numel, &err), 0, "%s", err.msg);
    double max_ref = 0, max_err = 0;
    int64_t worst = 0;
    for (int64_t i = 0; i < numel; i++) {
        max_ref = fmax(max_ref, fabs(ref[i]));
        double e = fabs((double)got[i] - ref[i]);
        if (!(e <= max_err)) {
            max_err = isnan(e) ? INFINITY : e;
            worst = i;
        }
    }
    cr_expect(max_err <= 1e-4 * max_ref + 1e-6, "%s '%s': max error %.3g at %lld (bertc %.8g, "
              "PyTorch %.8g)", what, name, max_err, (long long)worst, (double)got[worst],
              (double)ref[worst]);
}

/* Training mode, every dropout 0 but context_dropout_prob = 1: C_Q = C_K = 0,
 * so the quasi scores are 1/2 at real keys, the gates see only their biases
 * and Q, K, and Wcq, Wck get no gradient. Every output and every gradient
 * against PyTorch's training forward (tools/fixtures_cgbert.py). */
Test(zoo_cgbert_views, qacgbert_context_dropout_in_training_matches_the_original)
{
    Model m;
    BertConfig cfg;
    Batch in;
    Outputs out;
    BertcError err;
    open_case("qacgbert_context_dropout", &m, &cfg, &in);
    cr_assert_eq(bertc_cg_keys_of(&cfg).context_dropout_prob, 1.0f);
    bertc_ag_set_training(graph, true);
    bertc_registry_zero_grad(m.reg);
    test_forward_ok(&m, graph, &in, &out);
    cr_assert_eq(bertc_model_backward(graph, bertc_outputs_get(&out, "loss"), &err), 0, "%s",
                 err.msg);
    SafeTensors *want;
    cr_assert_eq(bertc_st_open_file(arena, ZOO "qacgbert_context_dropout/expected_train.safetensors",
                                    &want, &err), 0, "%s", err.msg);
    for (size_t i = 0; i < want->n_tensors; i++) {
        const char *name = want->tensors[i].name;
        if (strncmp(name, "grad.", 5) != 0) {
            const Tensor *v = output(&out, name);
            expect_close("training", v->data, want, name, v->numel);
            continue;
        }
        int p = bertc_registry_find(m.reg, name + 5);
        cr_assert(p >= 0, "no parameter '%s'", name + 5);
        const Var *v = m.reg->params[p].var;
        float *zeros = bertc_arena_calloc(arena, (size_t)v->value.numel, sizeof(float));
        expect_close("training", v->grad ? v->grad : zeros, want, name, v->value.numel);
    }
    /* the point of the case: the context's query is gone */
    const Tensor *cq = output(&out, "layers.1.context_q");
    for (int64_t k = 0; k < cq->numel; k++)
        cr_assert_eq(cq->data[k], 0.0f, "context_q[%lld] = %g after dropout p = 1", (long long)k,
                     (double)cq->data[k]);
}

/* The draws a training forward takes from the graph's generator, with the
 * given context_dropout_prob and every other dropout 0. */
static uint64_t draws(float p, Outputs *out)
{
    Model m;
    BertConfig cfg;
    Batch in;
    open_case("qacgbert_views", &m, &cfg, &in);
    cfg.hidden_dropout_prob = cfg.attention_probs_dropout_prob = 0.0f;
    test_config_set(&cfg, "context_dropout_prob", p);
    test_model_from_config(&m, arena, &cfg);
    test_model_load(&m, ZOO "qacgbert_views/weights.safetensors");
    bertc_ag_set_training(graph, true);
    uint64_t before = graph->rng.state;
    test_forward_ok(&m, graph, &in, out);
    /* each draw adds RNG_GAMMA (odd) mod 2^64: multiply by its inverse */
    uint64_t inverse = RNG_GAMMA;
    for (int i = 0; i < 6; i++)
        inverse *= 2 - RNG_GAMMA * inverse;
    return (graph->rng.state - before) * inverse;
}

/* p = 0 (the default) draws nothing, so a default training run is the one it
 * was before the key; p = 0.5 draws one number per element of C_Q and of
 * C_K, B·nh·S·d each, in every layer, and changes the outputs. */
Test(zoo_cgbert_views, qacgbert_context_dropout_draws_only_for_c_q_and_c_k)
{
    Outputs none, half;
    cr_expect_eq(draws(0.0f, &none), 0, "context_dropout_prob 0 drew random numbers");
    const Tensor *cq = output(&none, "layers.0.context_q");
    uint64_t n = draws(0.5f, &half), want = 2 * (uint64_t)cq->numel * 2;   /* L = 2 */
    cr_expect_eq(n, want, "context_dropout_prob 0.5 drew %llu numbers, C_Q and C_K have %llu",
                 (unsigned long long)n, (unsigned long long)want);
    const Tensor *a = output(&none, "logits"), *b = output(&half, "logits");
    cr_expect_neq(memcmp(a->data, b->data, sizeof(float) * (size_t)a->numel), 0,
                  "the dropout on C_Q, C_K changed no logit");
}

/* Eval mode ignores it: qacgbert_paper (p = 0.1) matches PyTorch's eval
 * forward in test_zoo_parity; here the same weights give the same logits at
 * p = 0 and p = 0.9. */
Test(zoo_cgbert_views, qacgbert_context_dropout_is_off_in_eval)
{
    Model m;
    BertConfig cfg;
    Batch in;
    Outputs a, b;
    open_case("qacgbert_views", &m, &cfg, &in);
    test_forward_ok(&m, graph, &in, &a);
    test_config_set(&cfg, "context_dropout_prob", 0.9);
    test_model_from_config(&m, arena, &cfg);
    test_model_load(&m, ZOO "qacgbert_views/weights.safetensors");
    test_forward_ok(&m, graph, &in, &b);
    const Tensor *x = output(&a, "logits"), *y = output(&b, "logits");
    cr_expect_eq(memcmp(x->data, y->data, sizeof(float) * (size_t)x->numel), 0,
                 "context_dropout_prob changed the eval logits");
}

/* ---- the keys in config.json -------------------------------------------- */

/* qacgbert_paper's keys are read; written back they read the same. */
Test(zoo_cgbert_views, qacgbert_keys_round_trip_through_config_json)
{
    BertConfig cfg, again;
    BertcError err;
    cr_assert_eq(bertc_bert_config_read(ZOO "qacgbert_paper/config.json", &cfg, &err), 0, "%s",
                 err.msg);
    CgKeys k = bertc_cg_keys_of(&cfg);
    cr_expect(k.quasi_scale == 0.5f && k.lambda_q_scale == 0.75f && k.lambda_k_scale == 1.25f,
              "alpha %g beta %g gamma %g", (double)k.quasi_scale, (double)k.lambda_q_scale,
              (double)k.lambda_k_scale);
    cr_expect(k.context_dropout_prob == 0.1f && k.lambda_init == LAMBDA_INIT_ORIGINAL &&
              k.pooler_type == POOLER_FIRST_TOKEN, "context_dropout_prob %g lambda_init %d",
              (double)k.context_dropout_prob, k.lambda_init);
    char path[128];
    snprintf(path, sizeof path, "/tmp/bertc_cg_keys_%d.json", (int)getpid());
    cr_assert_eq(bertc_bert_config_write(path, &cfg, &err), 0, "%s", err.msg);
    int rc = bertc_bert_config_read(path, &again, &err);
    remove(path);
    cr_assert_eq(rc, 0, "%s", err.msg);
    CgKeys k2 = bertc_cg_keys_of(&again);
    cr_expect_eq(memcmp(&k, &k2, sizeof k), 0, "the keys changed through config.json");
}

/* A key out of range or an unknown choice: an error naming the key. */
Test(zoo_cgbert_views, bad_option_values_name_the_key)
{
    static const char *const cases[][3] = {
        {"\"lambda_init\": \"xavier\"", "lambda_init", "xavier"},
        {"\"context_dropout_prob\": 1.5", "context_dropout_prob", "1.5"},
        {"\"quasi_scale\": -1", "quasi_scale", "-1"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[1024], path[128];
        snprintf(text, sizeof text,
                 "{\"architectures\": [\"QACGBertForSequenceClassification\"], "
                 "\"vocab_size\": 50, \"hidden_size\": 8, \"num_hidden_layers\": 1, "
                 "\"num_attention_heads\": 2, \"intermediate_size\": 16, "
                 "\"max_position_embeddings\": 16, %s}", cases[i][0]);
        snprintf(path, sizeof path, "/tmp/bertc_cg_bad_%d.json", (int)getpid());
        FILE *f = fopen(path, "w");
        cr_assert(f);
        fputs(text, f);
        fclose(f);
        BertConfig cfg;
        BertcError err;
        int rc = bertc_bert_config_read(path, &cfg, &err);
        remove(path);
        cr_expect_neq(rc, 0, "accepted %s", cases[i][0]);
        cr_expect(strstr(err.msg, cases[i][1]) && strstr(err.msg, cases[i][2]),
                  "%s: message '%s'", cases[i][0], err.msg);
    }
}
