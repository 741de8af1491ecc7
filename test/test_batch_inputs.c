/* test/test_batch_inputs.c — an input the model does not read (a misspelled
 * 'attention_masks', a stray 'masking.lengthz') is an error naming it and the
 * inputs the model does read, for every architecture, from the library and
 * from `bertc run` (which then writes no output file). */
#include "test/test_util.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

TestSuite(inputs);

/* The fixture's own inputs plus `extra` (a copy of its first tensor). */
static void fixture_batch(const char *dir, Arena *a, Batch *b, const char *extra)
{
    char *path = bertc_arena_alloc(a, 600);   /* the batch's source: it must outlive this call */
    snprintf(path, 600, "%s/inputs.safetensors", dir);
    SafeTensors *st;
    BertcError err;
    cr_assert_eq(bertc_st_open_file(a, path, &st, &err), 0, "%s", err.msg);
    bertc_batch_init(b, path);
    cr_assert_eq(bertc_batch_from_safetensors(b, st, a, &err), 0, "%s", err.msg);
    if (extra) {
        const BatchItem first = b->items[0];
        if (first.is_int)
            bertc_batch_put_ids(b, extra, first.ids);
        else
            bertc_batch_put_f32(b, extra, first.f32);
    }
}

ParameterizedTestParameters(inputs, unread_input_is_an_error)
{
    TestName *cases;
    size_t n = test_zoo_cases(&cases);
    return cr_make_param_array(TestName, cases, n);
}

ParameterizedTest(TestName *c, inputs, unread_input_is_an_error, .timeout = 60)
{
    char dir[600], config[700];
    snprintf(dir, sizeof dir, "%s/%s", TEST_ZOO_DIR, c->name);
    snprintf(config, sizeof config, "%s/config.json", dir);
    Arena *a = bertc_arena_create("inputs", 1 << 16);
    Graph *g = bertc_ag_graph_create(1 << 20, 0);
    bertc_ag_set_training(g, false);
    bertc_ag_set_no_grad(g, true);
    Model m;
    BertConfig cfg;
    test_model_build(&m, a, config, &cfg);
    Batch b;
    Outputs out;
    fixture_batch(dir, a, &b, NULL);
    test_forward_ok(&m, g, &b, &out);   /* the fixture as it is reads fine */
    bertc_ag_graph_reset(g);
    fixture_batch(dir, a, &b, "attention_masks");
    const char *reads = strcmp(cfg.architecture, "Summarizer") == 0 ? "it reads src, " : "it reads input_ids, ";
    test_forward_fails(&m, g, &b, "reads no input 'attention_masks'", reads, m.arch->name);
    bertc_ag_graph_destroy(g);
    bertc_arena_destroy(a);
}

/* SpanBERT's masking.* inputs are read too, so a misspelled one is caught. */
Test(inputs, spanbert_masking_inputs_are_checked, .timeout = 60)
{
    const char *dir = TEST_ZOO_DIR "/spanbert_a";
    Arena *a = bertc_arena_create("inputs", 1 << 16);
    Graph *g = bertc_ag_graph_create(1 << 20, 0);
    bertc_ag_set_no_grad(g, true);
    bertc_ag_set_training(g, false);
    Model m;
    test_model_build(&m, a, TEST_ZOO_DIR "/spanbert_a/config.json", NULL);
    Batch b;
    fixture_batch(dir, a, &b, NULL);
    cr_assert(bertc_batch_find(&b, "masking.lengths"), "the fixture has masking.* inputs");
    fixture_batch(dir, a, &b, "masking.lengthz");
    test_forward_fails(&m, g, &b, "reads no input 'masking.lengthz'", "masking.lengths",
                       "masking.token_kinds");
    bertc_ag_graph_destroy(g);
    bertc_arena_destroy(a);
}

/* `bertc run` with a misspelled input: one line, exit 1, no output file. */
Test(inputs, bertc_run_refuses_an_unread_input, .timeout = 60)
{
    char inputs[300], output[300], cmd[2000], text[1024];
    snprintf(inputs, sizeof inputs, "/tmp/bertc_inputs_%d.safetensors", (int)getpid());
    snprintf(output, sizeof output, "/tmp/bertc_outputs_%d.safetensors", (int)getpid());
    Arena *a = bertc_arena_create("inputs", 1 << 16);
    Batch b;
    fixture_batch(TEST_ZOO_DIR "/bert_seqcls_single", a, &b, NULL);
    const BatchItem *mask = bertc_batch_find(&b, "attention_mask");
    cr_assert(mask);
    StEntry e[BATCH_MAX];
    int n = 0;
    for (int i = 0; i < b.n; i++) {
        const char *name = b.items[i].name;
        e[n] = bertc_st_entry_itensor(mask == &b.items[i] ? "attention_masks" : name, &b.items[i].ids);
        n++;
    }
    BertcError err;
    cr_assert_eq(bertc_st_write_file(inputs, e, (size_t)n, NULL, 0, &err), 0, "%s", err.msg);
    snprintf(cmd, sizeof cmd, "%s run --config %s/bert_seqcls_single/config.json --weights "
             "%s/bert_seqcls_single/weights.safetensors --inputs %s --output %s",
             BERTC_CLI, TEST_ZOO_DIR, TEST_ZOO_DIR, inputs, output);
    int rc = test_shell(cmd, TEST_STDERR, text, sizeof text);
    cr_expect_eq(rc, 1, "exit status %d: %s", rc, text);
    char *nl = strchr(text, '\n');
    cr_expect(strstr(text, "reads no input 'attention_masks'") &&
                  strstr(text, "attention_mask,") && nl && !nl[1],
              "want one line naming 'attention_masks' and listing attention_mask: %s", text);
    cr_expect_neq(access(output, F_OK), 0, "%s was written", output);
    remove(inputs);
    remove(output);
    bertc_arena_destroy(a);
}
