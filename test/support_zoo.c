/* test/support_zoo.c — the zoo suites' shared steps: a model from a fixture
 * config and weights, a forward that must pass or must fail naming given
 * substrings, and the list of fixture directories. See test_util.h. */
#include "test/test_util.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void test_model_build(Model *m, Arena *arena, const char *config_path, BertConfig *cfg)
{
    BertConfig local;
    BertConfig *c = cfg ? cfg : &local;
    BertcError err;
    cr_assert_eq(bertc_bert_config_read(config_path, c, &err), 0, "%s: %s", config_path, err.msg);
    cr_assert_eq(bertc_model_build(m, arena, c, &err), 0, "building %s: %s", config_path, err.msg);
}

void test_model_load(Model *m, const char *weights_path)
{
    BertcError err;
    cr_assert_eq(bertc_model_load(m, weights_path, false, &err), 0, "%s: %s", weights_path, err.msg);
}

void test_forward_ok(Model *m, Graph *g, const Batch *batch, Outputs *out)
{
    BertcError err;
    bertc_outputs_init(out);
    cr_assert_eq(bertc_model_forward(m, g, batch, out, &err), 0, "forward failed: %s", err.msg);
}

void test_forward_fails(Model *m, Graph *g, const Batch *batch, const char *a, const char *b,
                        const char *c)
{
    Outputs out;
    bertc_outputs_init(&out);
    BertcError err;
    cr_assert_neq(bertc_model_forward(m, g, batch, &out, &err), 0,
                  "forward accepted the batch; expected an error with '%s'/'%s'/'%s'", a, b,
                  c ? c : "");
    cr_assert(strstr(err.msg, a) && strstr(err.msg, b) && (!c || strstr(err.msg, c)),
              "message lacks '%s'/'%s'/'%s': %s", a, b, c ? c : "", err.msg);
}

size_t test_zoo_cases(TestName **cases) { return test_list_dir(TEST_ZOO_DIR, 64, cases); }

/* ---- small models built in code ----------------------------------------- */

BertConfig test_bert_config(TestBertSize size)
{
    BertConfig c;
    BertcError err;
    cr_assert_eq(bertc_model_config_default(&c, size.arch, &err), 0, "%s", err.msg);
    c.vocab_size = size.vocab_size;
    c.hidden_size = size.hidden_size;
    c.num_hidden_layers = size.num_hidden_layers;
    c.num_attention_heads = size.num_attention_heads;
    c.intermediate_size = size.intermediate_size;
    c.max_position_embeddings = size.max_position_embeddings;
    if (size.num_labels > 0) {
        c.num_labels = size.num_labels;
        c.problem_type = PROBLEM_SINGLE_LABEL;
    }
    return c;
}

void test_model_from_config(Model *m, Arena *arena, const BertConfig *cfg)
{
    BertcError err;
    cr_assert_eq(bertc_model_build(m, arena, cfg, &err), 0, "building the %s: %s",
                 cfg->architecture, err.msg);
}

void test_model_init_weights(Model *m, uint64_t seed)
{
    Rng r = bertc_rng_seed(seed);
    bertc_registry_init_weights(m->reg, &r, 0.02f);
}

Model test_tiny_classifier(Arena *arena, int S)
{
    BertConfig c = test_bert_config((TestBertSize){
        .arch = "BertForSequenceClassification", .vocab_size = 16, .hidden_size = 8, .num_hidden_layers = 1,
        .num_attention_heads = 2, .intermediate_size = 16, .max_position_embeddings = S,
        .num_labels = 2});
    Model m;
    test_model_from_config(&m, arena, &c);
    test_model_init_weights(&m, 3);
    return m;
}

/* ---- checkpoint generations --------------------------------------------- */

void test_train_state_init(TestTrainState *t, TestBertSize size)
{
    BertConfig c = test_bert_config(size);
    t->arena = bertc_arena_create("ckpt", 1 << 20);
    test_model_from_config(&t->m, t->arena, &c);
    bertc_optimizer_init(&t->o, t->m.reg, bertc_optimizer_defaults(OPT_ADAMW, 1e-3));
}

void test_expect_same_weights(const Registry *a, const Registry *b, const char *when)
{
    for (int i = 0; i < a->n_params; i++)
        cr_assert_eq(memcmp(a->params[i].var->value.data, b->params[i].var->value.data,
                            sizeof(float) * (size_t)a->params[i].var->value.numel), 0,
                     "%s differs %s", a->params[i].name, when);
}

void test_fill_generation(TestTrainState *t, int64_t k)
{
    Registry *r = t->m.reg;
    Optimizer *o = &t->o;
    for (int i = 0; i < r->n_params; i++) {
        const Tensor *v = &r->params[i].var->value;
        for (int64_t j = 0; j < v->numel; j++) {
            v->data[j] = (float)k + (float)i / 1024.0f;
            if (o->state1[i])
                o->state1[i][j] = -(float)k;
            if (o->state2[i])
                o->state2[i][j] = (float)k;
        }
    }
    o->step = k;
    t->rng.state = 1000 + (uint64_t)k;
}

int64_t test_load_generation(TestTrainState *t, const char *path)
{
    Registry *r = t->m.reg;
    Optimizer *o = &t->o;
    BertcError err = {{0}};
    int64_t step = -1;
    test_fill_generation(t, -1);
    cr_assert_eq(bertc_checkpoint_load(path, r, o, &t->rng, &step, NULL, &err), 0,
                 "%s does not load: %s", path, err.msg);
    cr_assert_eq(o->step, step, "optimizer step %lld but train step %lld", (long long)o->step,
                 (long long)step);
    cr_assert_eq(t->rng.state, 1000 + (uint64_t)step, "RNG state of another generation");
    for (int i = 0; i < r->n_params; i++) {
        const Tensor *v = &r->params[i].var->value;
        float want = (float)step + (float)i / 1024.0f;
        for (int64_t j = 0; j < v->numel; j++)
            cr_assert(v->data[j] == want && o->state1[i][j] == -(float)step &&
                          o->state2[i][j] == (float)step,
                      "'%s'[%lld] = %g (moments %g, %g) in a checkpoint of step %lld",
                      r->params[i].name, (long long)j, v->data[j], o->state1[i][j],
                      o->state2[i][j], (long long)step);
    }
    return step;
}

void *test_tensor_bytes(const SafeTensors *st, const StTensorInfo *ti)
{
    size_t bytes = (size_t)(ti->end - ti->begin);
    void *buf = malloc(bytes + 8);
    BertcError err;
    cr_assert_not_null(buf);
    cr_assert_eq(st->source.read(st->source.ctx, st->data_start + ti->begin, buf, bytes, &err),
                 0, "%s: %s", ti->name, err.msg);
    return buf;
}

void test_config_set(BertConfig *cfg, const char *key, double value)
{
    BertcError err;
    cr_assert_eq(bertc_model_config_set(cfg, key, value, &err), 0, "%s", err.msg);
}

void test_config_special_ids(BertConfig *cfg, int n, const int32_t *ids)
{
    SpanBertKeys k = bertc_spanbert_keys(cfg);
    k.masking.special_token_ids.n = n;
    memcpy(k.masking.special_token_ids.ids, ids, sizeof(int32_t) * (size_t)n);
    memcpy(cfg->model.bytes, &k, sizeof k);
}

BertConfig test_config_default(const char *architecture)
{
    BertConfig c;
    BertcError err;
    cr_assert_eq(bertc_model_config_default(&c, architecture, &err), 0, "%s", err.msg);
    return c;
}
