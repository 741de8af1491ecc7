/* test/test_zoo_outputs.c — the intermediates BertSum and QAConv name for
 * learners have exactly their declared shapes (another tool draws them by
 * shape), and are there in the number the config says.
 *
 * On every Summarizer and QAConvModelV2 fixture of test/data/zoo/, each
 * output the forward puts is matched to its OutputSpec and the spec's shape
 * string is resolved: B and S from the token ids, N from clss, H =
 * hidden_size, nh = num_attention_heads, any other name a key of the
 * architecture ("heads", "conv_filters", "num_question_types"). Their
 * values against PyTorch are test/test_zoo_parity.c (expected.safetensors
 * holds them). */
#include "test/test_util.h"
#include "zoo/zoo.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

ParameterizedTestParameters(zoo_outputs, declared_shapes)
{
    TestName *cases;
    size_t n = test_zoo_cases(&cases);
    return cr_make_param_array(TestName, cases, n);
}

typedef struct Dims {
    int64_t B, S, N;
    const BertConfig *cfg;
} Dims;

static int64_t resolve(const char *c, const char *sym, const Dims *d)
{
    if (sym[0] >= '0' && sym[0] <= '9')
        return strtoll(sym, NULL, 10);
    if (strcmp(sym, "B") == 0)
        return d->B;
    if (strcmp(sym, "S") == 0)
        return d->S;
    if (strcmp(sym, "N") == 0)
        return d->N;
    if (strcmp(sym, "H") == 0)
        return d->cfg->hidden_size;
    if (strcmp(sym, "nh") == 0)
        return d->cfg->num_attention_heads;
    double v = bertc_model_config_get(d->cfg, sym);
    cr_assert(!isnan(v), "%s: the shape symbol '%s' is no dimension and no key", c, sym);
    return (int64_t)v;
}

/* "(B, heads, N, N)" -> dims; returns the rank ("()" is 0). */
static int parse_shape(const char *c, const char *shape, const Dims *d, int64_t *out)
{
    int n = 0;
    const char *p = shape + 1;
    cr_assert_eq(shape[0], '(', "%s: shape '%s'", c, shape);
    while (*p && *p != ')') {
        char sym[64];
        size_t len = strcspn(p, ",)");
        cr_assert_lt(len, sizeof sym, "%s: shape '%s'", c, shape);
        memcpy(sym, p, len);
        sym[len] = '\0';
        cr_assert_lt(n, 8, "%s: shape '%s'", c, shape);
        out[n++] = resolve(c, sym, d);
        p += len;
        if (*p == ',')
            p++;
        while (*p == ' ')
            p++;
    }
    return n;
}

static void check_shape(const char *c, const char *name, const Var *v, const OutputSpec *spec,
                        const Dims *d)
{
    int64_t want[8];
    int rank = parse_shape(c, spec->shape, d, want);
    char got_s[128], want_s[128];
    bertc_shape_str(got_s, sizeof got_s, v->value.ndim, v->value.shape);
    bertc_shape_str(want_s, sizeof want_s, rank, want);
    cr_expect(bertc_shape_equal(v->value.ndim, v->value.shape, rank, want),
              "%s: '%s' is %s, declared %s = %s", c, name, got_s, spec->shape, want_s);
}

/* How many outputs named like pattern were put. */
static int count(const Outputs *o, const char *pattern)
{
    int n = 0;
    for (int i = 0; i < o->n; i++)
        n += bertc_output_name_matches(pattern, o->items[i].name);
    return n;
}

static void expect_intermediates(const char *c, const Model *m, const Outputs *o)
{
    if (strcmp(m->arch->name, "Summarizer") == 0) {
        bool classifier = bertc_model_config_get(&m->cfg, "encoder") == 1;
        int L = classifier ? 0 : (int)bertc_model_config_get(&m->cfg, "inter_layers");
        cr_expect_eq(count(o, "inter.{l}.attention_probs"), L, "%s: %d inter-sentence maps, "
                     "want one per inter layer (%d)", c, count(o, "inter.{l}.attention_probs"), L);
        cr_expect_eq(count(o, "inter_hidden_states.{i}"), classifier ? 0 : L + 1,
                     "%s: %d inter_hidden_states, want h^0 .. h^L", c,
                     count(o, "inter_hidden_states.{i}"));
    } else {
        static const char *const names[] = {"query_vector", "conv_output1", "conv_output3",
                                            "conv_output5", "attention_rate"};
        for (size_t i = 0; i < sizeof names / sizeof *names; i++)
            cr_expect_eq(count(o, names[i]), 1, "%s: no '%s'", c, names[i]);
    }
}

ParameterizedTest(TestName *t, zoo_outputs, declared_shapes)
{
    if (strncmp(t->name, "bertsum_", 8) != 0 && strncmp(t->name, "qaconv_", 7) != 0)
        return;   /* the other architectures' shapes use B·C, n_masked: their own suites */
    char path[512];
    BertcError err;
    Arena *arena = bertc_arena_create("outputs", 1 << 20);
    Graph *g = bertc_ag_graph_create(1 << 20, 0);
    bertc_ag_set_training(g, false);
    Model m;
    snprintf(path, sizeof path, "%s/%s/config.json", TEST_ZOO_DIR, t->name);
    test_model_build(&m, arena, path, NULL);
    snprintf(path, sizeof path, "%s/%s/weights.safetensors", TEST_ZOO_DIR, t->name);
    test_model_load(&m, path);
    snprintf(path, sizeof path, "%s/%s/inputs.safetensors", TEST_ZOO_DIR, t->name);
    SafeTensors *st;
    cr_assert_eq(bertc_st_open_file(NULL, path, &st, &err), 0, "%s", err.msg);
    Batch in;
    bertc_batch_init(&in, path);
    cr_assert_eq(bertc_batch_from_safetensors(&in, st, arena, &err), 0, "%s", err.msg);
    bertc_st_close(st);
    Outputs out;
    test_forward_ok(&m, g, &in, &out);
    const BatchItem *ids = bertc_batch_find(&in, bertc_model_input(m.arch, 0)->name);
    const BatchItem *clss = bertc_batch_find(&in, "clss");
    Dims d = {.B = ids->ids.shape[0], .S = ids->ids.shape[1],
              .N = clss ? clss->ids.shape[1] : -1, .cfg = &m.cfg};
    for (int i = 0; i < out.n; i++) {
        const OutputSpec *spec = bertc_model_output_named(m.arch, out.items[i].name);
        cr_expect(spec, "%s: '%s' is not declared", t->name, out.items[i].name);
        if (spec && out.items[i].var)
            check_shape(t->name, out.items[i].name, out.items[i].var, spec, &d);
    }
    expect_intermediates(t->name, &m, &out);
    bertc_ag_graph_destroy(g);
    bertc_arena_destroy(arena);
}
