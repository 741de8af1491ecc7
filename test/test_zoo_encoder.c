/* test/test_zoo_encoder.c — the BERT encoder shared by every model
 * (zoo/models/bert.c) as the models use it.
 *
 * zoo_spelling: weight files that spell parameters otherwise
 * (LoadOptions.renames, bertc_model_load_options): HF's legacy LayerNorm
 * gamma/beta load for every BERT (as from_pretrained renames them), CGBERT's
 * BERTLayerNorm loads HF's weight/bias, renames combine (the "bert." prefix
 * dropped and gamma for weight), an unknown name is still not taken for a
 * parameter, and a file holding two spellings of one parameter is refused.
 *
 * zoo_encoder_hooks: CGBERT and QACGBERT through the hooks. In no_grad mode
 * the encoder releases each layer's temporaries (CGBERT's deep context D
 * among them) after copying the layer's output and every map of the
 * attention hook down, so the outputs must be those of the recorded
 * forward, to the bit, in the same order.
 *
 * zoo_encoder_switch: the same for every fixture of test/data/zoo. Under
 * no_grad bertc_bert_model_forward hands the encoder to
 * zoo/models/bert_inference.c (its one switch); what it computes must be the
 * taped forward of zoo/models/bert.c, bit for bit. */
#include "test/test_util.h"
#include "zoo/zoo.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define SEQCLS_CASE "test/data/zoo/bert_seqcls_single/"
#define CG_CASE "test/data/zoo/cgbert_gate/"

static Arena *arena;
static Graph *graph;

static void setup(void)
{
    test_open(&arena, &graph);
    bertc_ag_set_training(graph, false);
}

static void teardown(void) { test_close(arena, graph); }

TestSuite(zoo_spelling, .init = setup, .fini = teardown);
TestSuite(zoo_encoder_hooks, .init = setup, .fini = teardown);

/* A file key rewritten: the new name (in the arena), or the key itself. */
typedef const char *(*KeyRewrite)(Arena *a, const char *key);

/* key with its suffix `from` written `to` (NULL if it does not end so). */
static const char *with_suffix(Arena *a, const char *key, const char *from, const char *to)
{
    size_t n = strlen(key), f = strlen(from);
    if (n < f || strcmp(key + n - f, from) != 0)
        return NULL;
    size_t len = n - f + strlen(to) + 1;
    char *out = bertc_arena_alloc(a, len);
    snprintf(out, len, "%.*s%s", (int)(n - f), key, to);
    return out;
}

static const char *to_gamma_beta(Arena *a, const char *key)
{
    const char *g = with_suffix(a, key, "LayerNorm.weight", "LayerNorm.gamma");
    const char *b = with_suffix(a, key, "LayerNorm.bias", "LayerNorm.beta");
    return g ? g : b ? b : key;
}

static const char *to_weight_bias(Arena *a, const char *key)
{
    const char *w = with_suffix(a, key, "LayerNorm.gamma", "LayerNorm.weight");
    const char *b = with_suffix(a, key, "LayerNorm.beta", "LayerNorm.bias");
    return w ? w : b ? b : key;
}

/* gamma/beta and the "bert." prefix dropped: a bare BertModel's file. */
static const char *to_bare_gamma_beta(Arena *a, const char *key)
{
    const char *name = to_gamma_beta(a, key);
    return strncmp(name, "bert.", 5) == 0 ? name + 5 : name;
}

/* Writes src's tensors to a temporary file under rewrite's names (every key
 * when rewrite is NULL), plus, when extra_as is given, a second copy of the
 * tensor extra_from under the name extra_as. Returns the path and, in
 * *renamed, how many keys the rewrite changed. */
static const char *rewritten_file(const char *src, KeyRewrite rewrite, const char *extra_from,
                                  const char *extra_as, size_t *renamed)
{
    BertcError err;
    SafeTensors *st;
    cr_assert_eq(bertc_st_open_file(NULL, src, &st, &err), 0, "%s", err.msg);
    size_t n = st->n_tensors;
    StEntry *e = bertc_arena_alloc(arena, sizeof(StEntry) * (n + 1));
    Tensor *t = bertc_arena_alloc(arena, sizeof(Tensor) * (n + 1));
    *renamed = 0;
    for (size_t i = 0; i < n; i++) {
        const char *key = st->tensors[i].name;
        cr_assert_eq(bertc_st_load_tensor(st, key, arena, &t[i], &err), 0, "%s", err.msg);
        const char *name = rewrite ? rewrite(arena, key) : key;
        *renamed += strcmp(name, key) != 0;
        size_t len = strlen(name) + 1;
        char *copy = bertc_arena_alloc(arena, len);
        memcpy(copy, name, len);
        e[i] = bertc_st_entry_tensor(copy, &t[i]);
    }
    if (extra_as) {
        cr_assert_eq(bertc_st_load_tensor(st, extra_from, arena, &t[n], &err), 0, "%s", err.msg);
        e[n] = bertc_st_entry_tensor(extra_as, &t[n]);
        n++;
    }
    bertc_st_close(st);
    static char path[128];
    snprintf(path, sizeof path, "/tmp/bertc_spelling_%d.safetensors", (int)getpid());
    cr_assert_eq(bertc_st_write_file(path, e, n, NULL, 0, &err), 0, "%s", err.msg);
    return path;
}

/* bertc_model_load of `path` into a fresh model of the case's config; the file is
 * removed. Returns bertc_model_load's code, the message in err. */
static int load_rewritten(Model *m, const char *config, const char *path, BertcError *err)
{
    test_model_build(m, arena, config, NULL);
    int rc = bertc_model_load(m, path, false, err);
    remove(path);
    return rc;
}

static Var *logits_of(Model *m, const char *case_dir)
{
    BertcError err;
    char path[256];
    snprintf(path, sizeof path, "%sinputs.safetensors", case_dir);
    SafeTensors *st;
    cr_assert_eq(bertc_st_open_file(NULL, path, &st, &err), 0, "%s", err.msg);
    Batch in;
    bertc_batch_init(&in, "inputs");
    cr_assert_eq(bertc_batch_from_safetensors(&in, st, graph->step, &err), 0, "%s", err.msg);
    Outputs out;
    test_forward_ok(m, graph, &in, &out);
    bertc_st_close(st);
    Var *logits = bertc_outputs_get(&out, "logits");
    cr_assert(logits, "no logits");
    return logits;
}

/* Loads the case's fixture into *want and its weights with every key
 * rewritten into *got: they must load and be the same. Returns how many keys
 * the rewrite changed. */
static size_t expect_loads_as_fixture(const char *case_dir, KeyRewrite rewrite, Model *want,
                                      Model *got)
{
    BertcError err;
    size_t renamed;
    char weights[256], config[256];
    snprintf(weights, sizeof weights, "%sweights.safetensors", case_dir);
    snprintf(config, sizeof config, "%sconfig.json", case_dir);
    test_model_build(want, arena, config, NULL);
    test_model_load(want, weights);
    const char *path = rewritten_file(weights, rewrite, NULL, NULL, &renamed);
    cr_assert_eq(load_rewritten(got, config, path, &err), 0, "%s with renamed keys: %s",
                 case_dir, err.msg);
    cr_assert_eq(want->reg->n_params, got->reg->n_params);
    test_expect_same_weights(want->reg, got->reg, "after loading the renamed keys");
    return renamed;
}

Test(zoo_spelling, seqcls_checkpoint_with_gamma_beta_gives_identical_logits)
{
    Model want, got;
    size_t renamed = expect_loads_as_fixture(SEQCLS_CASE, to_gamma_beta, &want, &got);
    cr_assert_gt(renamed, 4, "the fixture has only %zu LayerNorm keys", renamed);
    Var *a = logits_of(&want, SEQCLS_CASE), *b = logits_of(&got, SEQCLS_CASE);
    cr_assert_eq(memcmp(a->value.data, b->value.data, sizeof(float) * (size_t)a->value.numel),
                 0, "logits differ after loading gamma/beta names");
}

/* Two renames combined: the "bert." prefix dropped (as in a bare
 * BertModel's file) and gamma/beta. */
Test(zoo_spelling, renames_combine_prefix_and_gamma)
{
    Model want, got;
    size_t renamed = expect_loads_as_fixture(SEQCLS_CASE, to_bare_gamma_beta, &want, &got);
    cr_assert_gt(renamed, 4, "renamed %zu keys", renamed);
}

Test(zoo_spelling, cgbert_loads_layernorm_weight_bias)
{
    Model want, got;
    size_t renamed = expect_loads_as_fixture(CG_CASE, to_weight_bias, &want, &got);
    /* embeddings + L = 2 layers x 2 LayerNorms, each {gamma, beta} */
    cr_assert_eq(renamed, 2 * (1 + 2 * 2), "renamed %zu keys", renamed);
}

/* A name that is no spelling of the parameter is not taken for it: the
 * parameter is missing, as before. */
static const char *to_alpha(Arena *a, const char *key)
{
    const char *name = with_suffix(a, key, "bert.embeddings.LayerNorm.weight",
                                   "bert.embeddings.LayerNorm.alpha");
    return name ? name : key;
}

static const char *classifier_gamma(Arena *a, const char *key)
{
    const char *name = with_suffix(a, key, "classifier.weight", "classifier.gamma");
    return name ? name : key;
}

Test(zoo_spelling, unknown_names_are_still_refused)
{
    BertcError err;
    size_t renamed;
    Model m;
    const char *path = rewritten_file(SEQCLS_CASE "weights.safetensors", to_alpha, NULL, NULL,
                                      &renamed);
    cr_assert_eq(renamed, 1);
    cr_assert_neq(load_rewritten(&m, SEQCLS_CASE "config.json", path, &err), 0,
                  "LayerNorm.alpha was taken for LayerNorm.weight");
    cr_expect(strstr(err.msg, "missing parameter 'bert.embeddings.LayerNorm.weight'"), "%s",
              err.msg);
    /* gamma is a LayerNorm's other name only */
    path = rewritten_file(SEQCLS_CASE "weights.safetensors", classifier_gamma, NULL, NULL,
                          &renamed);
    cr_assert_eq(renamed, 1);
    cr_assert_neq(load_rewritten(&m, SEQCLS_CASE "config.json", path, &err), 0,
                  "classifier.gamma was taken for classifier.weight");
    cr_expect(strstr(err.msg, "missing parameter 'classifier.weight'"), "%s", err.msg);
}

/* Both spellings of one parameter: which would load is a guess, so the file
 * is refused naming both keys. */
static void expect_ambiguous(const char *case_dir, const char *key, const char *other)
{
    BertcError err;
    size_t renamed;
    Model m;
    char weights[256], config[256];
    snprintf(weights, sizeof weights, "%sweights.safetensors", case_dir);
    snprintf(config, sizeof config, "%sconfig.json", case_dir);
    const char *path = rewritten_file(weights, NULL, key, other, &renamed);
    cr_assert_neq(load_rewritten(&m, config, path, &err), 0, "'%s' and '%s' both loaded", key,
                  other);
    cr_expect(strstr(err.msg, key) && strstr(err.msg, other) &&
                  strstr(err.msg, "two spellings"),
              "message does not name both: %s", err.msg);
}

Test(zoo_spelling, both_spellings_of_one_parameter_are_refused)
{
    expect_ambiguous(SEQCLS_CASE, "bert.encoder.layer.0.output.LayerNorm.weight",
                     "bert.encoder.layer.0.output.LayerNorm.gamma");
    expect_ambiguous(SEQCLS_CASE, "bert.pooler.dense.weight", "pooler.dense.weight");
    expect_ambiguous(CG_CASE, "bert.embeddings.LayerNorm.gamma",
                     "bert.embeddings.LayerNorm.weight");
    expect_ambiguous(CG_CASE, "bert.encoder.layer.1.attention.self.Wq.weight",
                     "bert.encoder.layer.1.attention.self.query.weight");
}

/* The rename functions themselves: both ways, only a LayerNorm's leaf. */
Test(zoo_spelling, layernorm_rename_both_ways)
{
    char alt[128];
    cr_assert(bertc_bert_layernorm_rename("a.LayerNorm.weight", alt, sizeof alt));
    cr_expect_str_eq(alt, "a.LayerNorm.gamma");
    cr_assert(bertc_bert_layernorm_rename("a.LayerNorm.beta", alt, sizeof alt));
    cr_expect_str_eq(alt, "a.LayerNorm.bias");
    cr_expect(!bertc_bert_layernorm_rename("a.xLayerNorm.weight", alt, sizeof alt));
    cr_expect(!bertc_bert_layernorm_rename("a.LayerNorm.weights", alt, sizeof alt));
    cr_expect(!bertc_bert_layernorm_rename("a.dense.weight", alt, sizeof alt));
    cr_expect(!bertc_bert_layernorm_rename("a.LayerNorm.weight", alt, 8), "a too short buffer");
}

/* ---- the hooks ----------------------------------------------------------- */

/* A fixture case's model (config.json, weights.safetensors) and its
 * inputs.safetensors as *in; the returned file holds the batch's tensors
 * until the caller closes it. */
static SafeTensors *open_case(const char *case_dir, Model *m, Batch *in)
{
    char path[512];
    BertcError err;
    snprintf(path, sizeof path, "%sconfig.json", case_dir);
    test_model_build(m, arena, path, NULL);
    snprintf(path, sizeof path, "%sweights.safetensors", case_dir);
    test_model_load(m, path);
    snprintf(path, sizeof path, "%sinputs.safetensors", case_dir);
    SafeTensors *st;
    cr_assert_eq(bertc_st_open_file(NULL, path, &st, &err), 0, "%s", err.msg);
    bertc_batch_init(in, "inputs");
    cr_assert_eq(bertc_batch_from_safetensors(in, st, arena, &err), 0, "%s", err.msg);
    return st;
}

/* An inference graph: no tape, no dropout. */
static Graph *no_grad_graph(void)
{
    Graph *g = bertc_ag_graph_create(1 << 16, 1);
    bertc_ag_set_training(g, false);
    bertc_ag_set_no_grad(g, true);
    return g;
}

static void expect_no_grad_outputs_exact(const char *case_dir, int n_outputs)
{
    Model m;
    Batch in;
    SafeTensors *st = open_case(case_dir, &m, &in);
    Graph *fast_graph = no_grad_graph();
    Outputs keep, fast;
    test_forward_ok(&m, graph, &in, &keep);
    test_forward_ok(&m, fast_graph, &in, &fast);
    if (n_outputs >= 0)
        cr_assert_eq(keep.n, n_outputs, "%s: %d outputs", case_dir, keep.n);
    cr_assert_eq(fast.n, keep.n, "%s: %d outputs in no_grad, %d with grad", case_dir, fast.n,
                 keep.n);
    for (int i = 0; i < keep.n; i++) {
        const Var *a = keep.items[i].var, *b = fast.items[i].var;
        cr_assert_str_eq(fast.items[i].name, keep.items[i].name, "output %d", i);
        cr_assert_eq(!a, !b, "%s%s: float in one forward only", case_dir, keep.items[i].name);
        if (!a)
            continue;   /* an integer output: not the encoder's numerics */
        cr_assert(bertc_shape_equal(a->value.ndim, a->value.shape, b->value.ndim, b->value.shape),
                  "%s: shapes differ in no_grad", keep.items[i].name);
        for (int64_t k = 0; k < a->value.numel; k++)
            cr_assert(a->value.data[k] == b->value.data[k],
                      "%s%s[%lld]: %.8g with grad, %.8g in no_grad", case_dir,
                      keep.items[i].name, (long long)k, (double)a->value.data[k],
                      (double)b->value.data[k]);
    }
    bertc_ag_graph_destroy(fast_graph);
    bertc_st_close(st);
}

/* hidden_states.0..2, L = 2 layers x maps, pooled_output, pooler_weights,
 * logits, loss; the maps of every shape (B, nh, S, S), (B, nh, S, 1),
 * (B, nh, S, d) and (B, S, H) survive the release. */
Test(zoo_encoder_hooks, cgbert_no_grad_release_keeps_every_map)
{
    expect_no_grad_outputs_exact("test/data/zoo/cgbert_gate/", 3 + 2 * 8 + 4);
}

Test(zoo_encoder_hooks, qacgbert_no_grad_release_keeps_every_map)
{
    expect_no_grad_outputs_exact("test/data/zoo/qacgbert_gate/", 3 + 2 * 10 + 4);
}

/* Outputs.final_only (predict, embed, benchmarks): a no_grad forward then
 * puts no "layers.{l}.*" map, and every other output is the full forward's,
 * bit for bit; the graph's flag is the caller's again afterwards. */
static void expect_final_only_outputs(const char *case_dir)
{
    BertcError err;
    Model m;
    Batch in;
    SafeTensors *st = open_case(case_dir, &m, &in);
    Graph *g = no_grad_graph();
    Outputs all, final;
    test_forward_ok(&m, g, &in, &all);
    bertc_outputs_init(&final);
    final.final_only = true;
    cr_assert_eq(bertc_model_forward(&m, g, &in, &final, &err), 0, "%s", err.msg);
    cr_expect(!g->final_only, "bertc_model_forward left the graph's final_only set");
    int maps = 0;
    for (int i = 0; i < all.n; i++) {
        const char *name = all.items[i].name;
        bool is_map = strncmp(name, "layers.", 7) == 0;
        maps += is_map;
        const Var *b = bertc_outputs_get(&final, name), *a = all.items[i].var;
        cr_assert_eq(b == NULL, is_map, "%s%s: %s with final_only", case_dir, name,
                     b ? "put" : "missing");
        for (int64_t k = 0; a && b && k < a->value.numel; k++)
            cr_assert(a->value.data[k] == b->value.data[k], "%s%s[%lld]: %.8g, %.8g with "
                      "final_only", case_dir, name, (long long)k, (double)a->value.data[k],
                      (double)b->value.data[k]);
    }
    cr_expect_gt(maps, 0, "%s: the full forward put no map to leave out", case_dir);
    cr_expect_eq(final.n, all.n - maps, "%s: %d outputs with final_only, %d without maps",
                 case_dir, final.n, all.n - maps);
    bertc_ag_graph_destroy(g);
    bertc_st_close(st);
}

Test(zoo_encoder_hooks, final_only_leaves_out_the_maps_and_nothing_else)
{
    expect_final_only_outputs("test/data/zoo/bert_seqcls_single/");
    expect_final_only_outputs("test/data/zoo/qacgbert_gate/");
}

ParameterizedTestParameters(zoo_encoder_switch, no_grad_is_the_taped_forward)
{
    TestName *cases;
    size_t n = test_zoo_cases(&cases);
    return cr_make_param_array(TestName, cases, n);
}

ParameterizedTest(TestName *zc, zoo_encoder_switch, no_grad_is_the_taped_forward,
                  .init = setup, .fini = teardown)
{
    char dir[320];
    snprintf(dir, sizeof dir, "%s/%s/", TEST_ZOO_DIR, zc->name);
    expect_no_grad_outputs_exact(dir, -1);
}
