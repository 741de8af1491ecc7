/* test/test_zoo_sizes.c — sizes that come from input: an input with a
 * dimension of size 0 (a batch of 0 sequences, sequences of 0 tokens, 0
 * sentences, ...) is a one-line error naming the tensor and its shape, for
 * every input of every architecture (one parameterised test per directory
 * of test/data/zoo/, as test_zoo_random_batch.c). */
#include "test/test_util.h"
#include "zoo/zoo.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <string.h>

ParameterizedTestParameters(zoo_sizes, empty_inputs_are_errors)
{
    TestName *cases;
    size_t n = test_zoo_cases(&cases);
    return cr_make_param_array(TestName, cases, n);
}

/* The batch with input k's dimension d set to 0 (the data is not read). */
static Batch with_empty_dim(const Batch *full, int k, int d)
{
    Batch b = *full;
    BatchItem *it = &b.items[k];
    if (it->is_int)
        it->ids.shape[d] = 0, it->ids.numel = 0;
    else
        it->f32.shape[d] = 0, it->f32.numel = 0;
    return b;
}

ParameterizedTest(TestName *zc, zoo_sizes, empty_inputs_are_errors)
{
    char config[512];
    snprintf(config, sizeof config, "%s/%s/config.json", TEST_ZOO_DIR, zc->name);
    Arena *params = arena_create("params", 1 << 16);
    Model m;
    test_model_build(&m, params, config, NULL);
    Rng rng = rng_seed(0);
    registry_init_weights(m.reg, &rng, 0.02f);
    /* the batch lives in its own graph's step arena: g is reset after each try */
    Graph *g = ag_graph_create(1 << 16, 1), *holder = ag_graph_create(1 << 16, 1);
    ag_set_training(g, false);
    Batch full;
    BertcError err;
    cr_assert_eq(model_random_batch(&m, holder, 2, 16, true, &rng, &full, &err), 0, "%s: %s",
                 zc->name, err.msg);
    for (int k = 0; k < full.n; k++) {
        const BatchItem *it = &full.items[k];
        int ndim = it->is_int ? it->ids.ndim : it->f32.ndim;
        for (int d = 0; d < ndim; d++) {
            Batch b = with_empty_dim(&full, k, d);
            Outputs out;
            outputs_init(&out);
            err.msg[0] = '\0';
            int rc = model_forward(&m, g, &b, &out, &err);
            cr_expect_neq(rc, 0, "%s: '%s' with dimension %d of size 0 was accepted",
                          zc->name, it->name, d);
            cr_expect(strstr(err.msg, "of size 0") && strstr(err.msg, "random batch"),
                      "%s: '%s' dim %d: message \"%s\" does not name an empty dimension",
                      zc->name, it->name, d, err.msg);
            ag_graph_reset(g);
        }
    }
    ag_graph_destroy(g);
    ag_graph_destroy(holder);
    arena_destroy(params);
}
