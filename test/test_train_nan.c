/* test/test_train_nan.c — a training step whose loss or gradient is not
 * finite never reaches the weights: with the default policy the run stops
 * with an error naming the first bad tensor, with TRAIN_NAN_SKIP the step is
 * dropped with a warning naming it and the run goes on. */
#include "test/test_util.h"
#include "zoo/train/train.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#define S 6
#define N_TRAIN 32
#define TOKEN 5             /* every example is made of this token */

static int make_batch(void *ctx, const int64_t *idx, int64_t n, Graph *g, Batch *b,
                      int64_t *tokens, BertcError *err)
{
    (void)ctx;
    (void)err;
    int64_t bs[2] = {n, S}, bl[1] = {n};
    ITensor ids = bertc_itensor_new(g->step, 2, bs), labels = bertc_itensor_new(g->step, 1, bl);
    for (int64_t j = 0; j < n; j++) {
        for (int t = 0; t < S; t++)
            ids.data[j * S + t] = TOKEN;
        labels.data[j] = (int32_t)(idx[j] % 2);
    }
    bertc_batch_put_ids(b, "input_ids", ids);
    bertc_batch_put_ids(b, "labels", labels);
    *tokens = n * S;
    return 0;
}

static TrainOptions options(TrainNanPolicy policy)
{
    TrainOptions o = bertc_train_defaults();
    o.steps = 4;
    o.batch_size = 8;
    o.quiet = true;
    o.nan_policy = policy;
    return o;
}

static const TrainTask task = {.n_train = N_TRAIN, .make_batch = make_batch};

/* Warnings are counted and the last one kept. */
static int n_warnings;
static char last_warning[BERTC_ERROR_LEN];

static void count_warning(const char *msg, void *user)
{
    (void)user;
    n_warnings++;
    snprintf(last_warning, sizeof last_warning, "%s", msg);
}

static void setup(void) { bertc_set_warn_hook(count_warning, NULL); }

TestSuite(train_nan, .init = setup);

/* Every parameter's bytes, to compare after a run. */
static float *snapshot(const Registry *r, Arena *a)
{
    int64_t n = 0;
    for (int i = 0; i < r->n_params; i++)
        n += r->params[i].var->value.numel;
    float *copy = bertc_arena_alloc(a, sizeof(float) * (size_t)n), *at = copy;
    for (int i = 0; i < r->n_params; i++) {
        const Tensor *v = &r->params[i].var->value;
        memcpy(at, v->data, sizeof(float) * (size_t)v->numel);
        at += v->numel;
    }
    return copy;
}

static void expect_unchanged(const Registry *r, const float *copy)
{
    for (int i = 0; i < r->n_params; i++) {
        const Tensor *v = &r->params[i].var->value;
        cr_expect_eq(memcmp(copy, v->data, sizeof(float) * (size_t)v->numel), 0,
                     "'%s' changed although every step was rejected", r->params[i].name);
        copy += v->numel;
    }
}

static void expect_all_finite(const Registry *r)
{
    for (int i = 0; i < r->n_params; i++) {
        const Tensor *v = &r->params[i].var->value;
        for (int64_t k = 0; k < v->numel; k++)
            cr_assert(isfinite(v->data[k]), "'%s'[%lld] = %g", r->params[i].name,
                      (long long)k, v->data[k]);
    }
}

/* The word-embedding row of TOKEN set to NaN: every forward's loss is NaN. */
static void poison_embedding_row(Model *m)
{
    int w = bertc_registry_find(m->reg, "bert.embeddings.word_embeddings.weight");
    cr_assert_geq(w, 0, "no word embeddings");
    Tensor *e = &m->reg->params[w].var->value;
    for (int64_t h = 0; h < e->shape[1]; h++)
        e->data[TOKEN * e->shape[1] + h] = NAN;
}

Test(train_nan, nan_embedding_row_stops_the_run_naming_it)
{
    Arena *a = bertc_arena_create("nan", 1 << 16);
    Model m = test_tiny_classifier(a, S);
    poison_embedding_row(&m);
    float *before = snapshot(m.reg, a);
    TrainOptions o = options(TRAIN_NAN_STOP);
    TrainResult res;
    BertcError err = {{0}};
    cr_assert_neq(bertc_train_run(&m, &task, &o, &res, &err), 0, "a NaN loss must stop the run");
    cr_expect(strstr(err.msg, "training: step 0: the loss is nan (parameter "
                              "'bert.embeddings.word_embeddings.weight'[5, 0] = nan)"),
              "%s", err.msg);
    cr_expect(strstr(err.msg, "stopping before it reaches the weights"), "%s", err.msg);
    expect_unchanged(m.reg, before);
    bertc_arena_destroy(a);
}

Test(train_nan, nan_embedding_row_skips_every_step)
{
    Arena *a = bertc_arena_create("nan", 1 << 16);
    Model m = test_tiny_classifier(a, S);
    poison_embedding_row(&m);
    float *before = snapshot(m.reg, a);
    TrainOptions o = options(TRAIN_NAN_SKIP);
    TrainResult res;
    BertcError err = {{0}};
    n_warnings = 0;
    cr_assert_eq(bertc_train_run(&m, &task, &o, &res, &err), 0, "%s", err.msg);
    cr_expect_eq(res.skipped_steps, o.steps, "%lld of %lld steps skipped",
                 (long long)res.skipped_steps, (long long)o.steps);
    cr_expect_eq(n_warnings, o.steps, "one warning per skipped step, got %d", n_warnings);
    cr_expect(strstr(last_warning, "step 3: the loss is nan") &&
              strstr(last_warning, "word_embeddings") && strstr(last_warning, "skipped"),
              "%s", last_warning);
    expect_unchanged(m.reg, before);
    bertc_arena_destroy(a);
}

/* A gradient the first backward adds to: a NaN left in it makes that step's
 * gradient NaN while its loss is finite. (bertc_ag_grad allocates the buffer if no
 * backward has yet; a parameter's lives in its persistent arena.) */
static void poison_classifier_grad(Model *m)
{
    int c = bertc_registry_find(m->reg, "classifier.weight");
    cr_assert_geq(c, 0, "no classifier");
    Graph *g = bertc_ag_graph_create(1 << 12, 0);
    bertc_ag_grad(g, m->reg->params[c].var)[3] = NAN;
    bertc_ag_graph_destroy(g);
}

Test(train_nan, nan_gradient_stops_the_run_naming_it)
{
    Arena *a = bertc_arena_create("nan", 1 << 16);
    Model m = test_tiny_classifier(a, S);
    poison_classifier_grad(&m);
    float *before = snapshot(m.reg, a);
    TrainOptions o = options(TRAIN_NAN_STOP);
    TrainResult res;
    BertcError err = {{0}};
    cr_assert_neq(bertc_train_run(&m, &task, &o, &res, &err), 0, "a NaN gradient must stop the run");
    cr_expect(strstr(err.msg, "training: step 0: gradient of 'classifier.weight'[0, 3] = nan"),
              "%s", err.msg);
    expect_unchanged(m.reg, before);
    bertc_arena_destroy(a);
}

Test(train_nan, nan_gradient_step_is_skipped_and_the_run_goes_on)
{
    Arena *a = bertc_arena_create("nan", 1 << 16);
    Model m = test_tiny_classifier(a, S);
    poison_classifier_grad(&m);
    TrainOptions o = options(TRAIN_NAN_SKIP);
    TrainResult res;
    BertcError err = {{0}};
    n_warnings = 0;
    cr_assert_eq(bertc_train_run(&m, &task, &o, &res, &err), 0, "%s", err.msg);
    cr_expect_eq(res.skipped_steps, 1, "%lld steps skipped", (long long)res.skipped_steps);
    cr_expect_eq(n_warnings, 1);
    cr_expect(strstr(last_warning, "step 0: gradient of 'classifier.weight'[0, 3] = nan"),
              "%s", last_warning);
    cr_expect_eq(res.steps_done, o.steps);
    expect_all_finite(m.reg);
    bertc_arena_destroy(a);
}

Test(train_nan, nan_policy_flag)
{
    TrainOptions o = bertc_train_defaults();
    BertcError err = {{0}};
    cr_expect_eq(o.nan_policy, TRAIN_NAN_STOP, "stop is the default");
    char *skip[] = {"prog", "--nan-policy", "skip"};
    cr_assert_eq(bertc_train_parse_flags(3, skip, &o, NULL, &err), 0, "%s", err.msg);
    cr_expect_eq(o.nan_policy, TRAIN_NAN_SKIP);
    char *bad[] = {"prog", "--nan-policy", "ignore"};
    cr_expect_neq(bertc_train_parse_flags(3, bad, &o, NULL, &err), 0);
    cr_expect(strstr(err.msg, "--nan-policy needs stop or skip, got 'ignore'"), "%s", err.msg);
}
