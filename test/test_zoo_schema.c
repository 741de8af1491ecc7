/* test/test_zoo_schema.c — what each architecture declares (ModelArch
 * inputs, outputs, keys, batch_from_text) is what it does: on every fixture
 * of test/data/zoo/, the forward reads only declared inputs and puts only
 * declared outputs, and raw text becomes a batch the forward accepts. A
 * declaration that drifts from the code fails here. */
#include "test/test_util.h"
#include "zoo/zoo.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <string.h>

ParameterizedTestParameters(zoo_schema, declared)
{
    TestName *cases;
    size_t n = test_zoo_cases(&cases);
    return cr_make_param_array(TestName, cases, n);
}

static const InputSpec *declared_input(const ModelArch *arch, const char *name)
{
    for (int i = 0; bertc_model_input(arch, i); i++)
        if (strcmp(bertc_model_input(arch, i)->name, name) == 0)
            return bertc_model_input(arch, i);
    return NULL;
}

static void load_case(const char *c, Arena *arena, Model *m)
{
    char path[512];
    BertConfig cfg;
    BertcError err;
    snprintf(path, sizeof path, "%s/%s/config.json", TEST_ZOO_DIR, c);
    cr_assert_eq(bertc_bert_config_read(path, &cfg, &err), 0, "%s", err.msg);
    test_model_from_config(m, arena, &cfg);
    snprintf(path, sizeof path, "%s/%s/weights.safetensors", TEST_ZOO_DIR, c);
    test_model_load(m, path);
}

/* The fixture's own inputs: every one declared, with the declared type;
 * every output of the forward declared. */
static void check_fixture(const char *c, Model *m)
{
    char path[512];
    BertcError err;
    snprintf(path, sizeof path, "%s/%s/inputs.safetensors", TEST_ZOO_DIR, c);
    SafeTensors *st;
    Arena *files = bertc_arena_create("inputs", 1 << 16);
    cr_assert_eq(bertc_st_open_file(files, path, &st, &err), 0, "%s", err.msg);
    Graph *g = bertc_ag_graph_create(1 << 20, 0);
    bertc_ag_set_training(g, false);
    Batch in;
    bertc_batch_init(&in, path);
    cr_assert_eq(bertc_batch_from_safetensors(&in, st, g->step, &err), 0, "%s", err.msg);
    for (int i = 0; i < in.n; i++) {
        const InputSpec *spec = declared_input(m->arch, in.items[i].name);
        cr_expect(spec, "%s: %s reads '%s', which it does not declare", c, m->arch->name,
                  in.items[i].name);
        if (spec && spec->type != INPUT_IDS_OR_FLOAT)
            cr_expect_eq(in.items[i].is_int, spec->type == INPUT_IDS,
                         "%s: '%s' is declared %s", c, in.items[i].name,
                         spec->type == INPUT_IDS ? "integer" : "float");
    }
    Outputs out;
    bertc_outputs_init(&out);
    test_forward_ok(m, g, &in, &out);
    for (int i = 0; i < out.n; i++)
        cr_expect(bertc_model_output_named(m->arch, out.items[i].name),
                  "%s: %s puts '%s', which it does not declare", c, m->arch->name,
                  out.items[i].name);
    bertc_ag_graph_destroy(g);
    bertc_st_close(st);
    bertc_arena_destroy(files);
}

/* A random batch has every required input, and only declared ones. */
static void check_random_batch(const char *c, Model *m)
{
    Graph *g = bertc_ag_graph_create(1 << 20, 0);
    Rng rng = bertc_rng_seed(5);
    Batch in;
    BertcError err;
    bertc_batch_init(&in, "random");
    cr_assert_eq(bertc_model_random_batch(m, g, 2, 12, true, &rng, &in, &err), 0, "%s", err.msg);
    for (int i = 0; bertc_model_input(m->arch, i); i++)
        if (bertc_model_input(m->arch, i)->required)
            cr_expect(bertc_batch_find(&in, bertc_model_input(m->arch, i)->name),
                      "%s: the random batch lacks required '%s'", c, bertc_model_input(m->arch, i)->name);
    for (int i = 0; i < in.n; i++)
        cr_expect(declared_input(m->arch, in.items[i].name), "%s: random '%s' is undeclared", c,
                  in.items[i].name);
    bertc_ag_graph_destroy(g);
}

/* Raw text through batch_from_text and the forward. */
static void check_text(const char *c, Model *m)
{
    static const char vocab[] = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\ncat\nsat\non\nmat\n"
                                "a\ndog\n.\nran\n";
    static const char *const sentences[] = {"the cat sat.", "a dog ran on the mat."};
    Arena *a = bertc_arena_create("tokenizer", 1 << 16);
    Tokenizer tok;
    BertcError err;
    cr_assert_eq(bertc_tokenizer_parse(&tok, a, "vocab", vocab, strlen(vocab), &err), 0, "%s",
                 err.msg);
    TextExample ex[2] = {
        {.text = "the cat sat on the mat.", .text_pair = "a dog ran.", .context_id = 1},
        {.text = "a dog ran.", .sentences = sentences, .n_sentences = 2, .context_id = 0},
    };
    Graph *g = bertc_ag_graph_create(1 << 20, 0);
    bertc_ag_set_training(g, false);
    Batch in;
    Outputs out;
    bertc_batch_init(&in, "text");
    bertc_outputs_init(&out);
    cr_assert(m->arch->batch_from_text, "%s: %s has no batch_from_text", c, m->arch->name);
    cr_assert_eq(bertc_model_batch_from_text(m, &tok, ex, 2, 0, g, &in, &err), 0, "%s: %s", c,
                 err.msg);
    test_forward_ok(m, g, &in, &out);
    cr_expect_eq(bertc_outputs_get(&out, "loss"), NULL, "%s: text has no labels", c);
    bertc_ag_graph_destroy(g);
    bertc_arena_destroy(a);
}

ParameterizedTest(TestName *t, zoo_schema, declared)
{
    Arena *arena = bertc_arena_create("params", 1 << 20);
    Model m;
    load_case(t->name, arena, &m);
    check_fixture(t->name, &m);
    check_random_batch(t->name, &m);
    check_text(t->name, &m);
    bertc_arena_destroy(arena);
}

/* Every architecture of the table is complete: a name, a summary, a loss
 * in words, its functions, and a first input naming the token ids. */
Test(zoo_schema, every_architecture_is_complete)
{
    int n = 0;
    for (int i = 0; bertc_zoo_arch_at(i); i++, n++) {
        const ModelArch *a = bertc_zoo_arch_at(i);
        cr_expect(a->name && a->summary && a->loss, "architecture %d lacks a description", i);
        cr_expect(a->build && a->forward && a->random_batch && a->batch_from_text,
                  "%s lacks a function", a->name);
        cr_expect(bertc_model_input(a, 0) && bertc_model_input(a, 0)->required, "%s: no token input",
                  a->name);
        cr_expect_eq(bertc_zoo_arch(a->name), a, "%s is not found by its name", a->name);
        for (int k = 0; k < a->n_keys; k++)
            cr_expect(a->keys[k].doc, "%s: key %s has no doc", a->name, a->keys[k].key);
    }
    cr_expect_geq(n, 8);
}
