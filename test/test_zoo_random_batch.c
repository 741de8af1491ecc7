/* test/test_zoo_random_batch.c — bertc_model_random_batch fits every
 * architecture: for each config of test/data/zoo/ (one parameterised test
 * per directory, as test_zoo_parity.c), a random B = 2, S = 16 batch runs
 * an eval forward without error, and in training mode gives a finite loss
 * (BertModel, which has none: mean(last_hidden_state^2), as bench/train)
 * whose backward leaves finite gradients. */
#include "test/test_util.h"
#include "zoo/zoo.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define B 2
#define S 16

ParameterizedTestParameters(zoo_random_batch, forward_and_loss)
{
    TestName *cases;
    size_t n = test_zoo_cases(&cases);
    return cr_make_param_array(TestName, cases, n);
}

/* An eval forward of a batch without labels. */
static void check_forward(const char *c, Model *m, Graph *g, Rng *rng)
{
    Batch batch;
    Outputs out;
    BertcError err;
    bertc_ag_graph_reset(g);
    bertc_ag_set_training(g, false);
    cr_assert_eq(bertc_model_random_batch(m, g, B, S, false, rng, &batch, &err), 0, "%s: %s", c,
                 err.msg);
    bertc_outputs_init(&out);
    cr_assert_eq(bertc_model_forward(m, g, &batch, &out, &err), 0, "%s: forward: %s", c, err.msg);
    cr_assert_gt(out.n, 0, "%s: the forward put no output", c);
}

/* Every parameter gradient the backward wrote is finite. */
static void check_grads(const char *c, const Registry *r)
{
    for (int i = 0; i < r->n_params; i++) {
        const Var *v = r->params[i].var;
        if (r->params[i].alias_of >= 0 || !v->grad)
            continue;
        for (int64_t j = 0; j < v->value.numel; j++)
            cr_assert(isfinite(v->grad[j]), "%s: grad of '%s'[%lld] = %g", c,
                      r->params[i].name, (long long)j, (double)v->grad[j]);
    }
}

/* A training forward of a labelled batch (loss_only, as the engine), then
 * the backward. */
static void check_training(const char *c, Model *m, Graph *g, Rng *rng)
{
    Batch batch;
    Outputs out;
    BertcError err;
    bertc_ag_graph_reset(g);
    bertc_ag_set_training(g, true);
    cr_assert_eq(bertc_model_random_batch(m, g, B, S, true, rng, &batch, &err), 0, "%s: %s", c,
                 err.msg);
    bertc_outputs_init(&out);
    out.loss_only = true;
    cr_assert_eq(bertc_model_forward(m, g, &batch, &out, &err), 0, "%s: forward: %s", c, err.msg);
    Var *loss = bertc_model_step_loss(g, &out);
    cr_assert_not_null(loss, "%s: a labelled random batch gave no loss", c);
    cr_assert(isfinite(loss->value.data[0]), "%s: loss = %g", c, (double)loss->value.data[0]);
    bertc_registry_zero_grad(m->reg);
    bertc_ag_backward(g, loss);
    check_grads(c, m->reg);
}

ParameterizedTest(TestName *zc, zoo_random_batch, forward_and_loss)
{
    char config[512];
    snprintf(config, sizeof config, "%s/%s/config.json", TEST_ZOO_DIR, zc->name);
    BertConfig cfg;
    Arena *params = bertc_arena_create("params", 1 << 16);
    Model m;
    test_model_build(&m, params, config, &cfg);
    Rng rng = bertc_rng_seed(0);
    bertc_registry_init_weights(m.reg, &rng, cfg.initializer_range);
    Graph *g = bertc_ag_graph_create(1 << 16, 1);
    check_forward(zc->name, &m, g, &rng);
    check_training(zc->name, &m, g, &rng);
    bertc_ag_graph_destroy(g);
    bertc_arena_destroy(params);
}

/* The ids of a random batch are real tokens: past the special tokens of a
 * small vocabulary (SpanBERT's own masking.special_token_ids too, which its
 * random batch passes), in [1000, V) for a BERT-base-sized one. */
Test(zoo_random_batch, ids_skip_the_special_tokens)
{
    BertConfig cfg = test_config_default("SpanBertForPreTraining");
    cr_assert_eq(bertc_random_first_token(&cfg), 1000, "vocab_size %d", cfg.vocab_size);
    cfg.vocab_size = 120;
    cr_assert_eq(bertc_random_first_token(&cfg), 1, "pad_token_id 0 only");
    cfg.sep_token_id = 2;
    test_config_special_ids(&cfg, 1, (const int32_t[]){5});
    cr_assert_eq(bertc_random_first_token(&cfg), 3, "the common specials 0 and 2");
    ConfigTokenIds more = bertc_spanbert_keys(&cfg).masking.special_token_ids;
    cr_assert_eq(bertc_random_first_token_past(&cfg, &more), 6, "specials 0, 2 and 5");
    /* SpanBERT's random batch: every masked token is a word past its own
     * specials (ids 0..4 and 40 of a vocabulary of 120) */
    cr_assert_eq(bertc_bert_config_read("test/data/zoo/spanbert_a/config.json", &cfg, NULL), 0);
    test_config_special_ids(&cfg, 1, (const int32_t[]){40});
    Arena *params = bertc_arena_create("params", 1 << 20);
    Model m;
    test_model_from_config(&m, params, &cfg);
    Graph *g = bertc_ag_graph_create(1 << 16, 1);
    Rng rng = bertc_rng_seed(3);
    Batch b;
    cr_assert_eq(bertc_model_random_batch(&m, g, 4, 12, true, &rng, &b, NULL), 0);
    const BatchItem *labels = bertc_batch_find(&b, "labels");
    cr_assert(labels);
    int64_t words = 0;
    for (int64_t i = 0; i < labels->ids.numel; i++) {
        int32_t y = labels->ids.data[i];
        cr_expect(y == -100 || y > 40, "labels[%lld] = %d: a special token drawn as a word",
                  (long long)i, (int)y);
        words += y > 40;
    }
    cr_expect_gt(words, 0, "no masked word to check");
    bertc_ag_graph_destroy(g);
    bertc_arena_destroy(params);
}
