/* test/support_zoo.c — the zoo suites' shared steps: a model from a fixture
 * config and weights, a forward that must pass or must fail naming given
 * substrings, and the list of fixture directories. See test_util.h. */
#include "test/test_util.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

void test_model_build(Model *m, Arena *arena, const char *config_path, BertConfig *cfg)
{
    BertConfig local;
    BertConfig *c = cfg ? cfg : &local;
    BertcError err;
    cr_assert_eq(bert_config_read(config_path, c, &err), 0, "%s: %s", config_path, err.msg);
    cr_assert_eq(model_build(m, arena, c, &err), 0, "building %s: %s", config_path, err.msg);
}

void test_model_load(Model *m, const char *weights_path)
{
    BertcError err;
    cr_assert_eq(model_load(m, weights_path, false, &err), 0, "%s: %s", weights_path, err.msg);
}

void test_forward_ok(Model *m, Graph *g, const Batch *batch, Outputs *out)
{
    BertcError err;
    outputs_init(out);
    cr_assert_eq(model_forward(m, g, batch, out, &err), 0, "forward failed: %s", err.msg);
}

void test_forward_fails(Model *m, Graph *g, const Batch *batch, const char *a, const char *b,
                        const char *c)
{
    Outputs out;
    outputs_init(&out);
    BertcError err;
    cr_assert_neq(model_forward(m, g, batch, &out, &err), 0,
                  "forward accepted the batch; expected an error with '%s'/'%s'/'%s'", a, b,
                  c ? c : "");
    cr_assert(strstr(err.msg, a) && strstr(err.msg, b) && (!c || strstr(err.msg, c)),
              "message lacks '%s'/'%s'/'%s': %s", a, b, c ? c : "", err.msg);
}

size_t test_zoo_cases(TestName **cases) { return test_list_dir(TEST_ZOO_DIR, 64, cases); }
