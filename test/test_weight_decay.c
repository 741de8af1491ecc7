/* test/test_weight_decay.c — AdamW's parameter groups: the training engine
 * decays the weights of two or more dimensions and leaves the vectors (every
 * bias, LayerNorm's weight and bias) alone, as Hugging Face's Trainer does
 * (get_decay_parameter_names); the bare optimizer keeps torch.optim's rule,
 * every parameter decays. */
#include "test/test_util.h"
#include "zoo/train/train.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#define S 6

/* One AdamW step with no gradient: Adam's own update is 0/(0 + eps) = 0, so
 * what moves is the decoupled decay alone, p *= 1 - lr wd. */
static void step_without_gradients(bool no_decay_vectors, float *weight, float *bias,
                                   float *ln_weight)
{
    Arena *a = bertc_arena_create("params", 1 << 16);
    Registry *r = bertc_registry_create(a, "M");
    Linear lin;
    LayerNorm ln;
    bertc_linear_init(&lin, r, "lin", 3, 2, true);
    bertc_layernorm_init(&ln, r, "ln", 2, 1e-5f);
    Rng rng = bertc_rng_seed(1);
    bertc_registry_init_weights(r, &rng, 0.02f);
    lin.bias->value.data[0] = 0.5f;
    lin.weight->value.data[0] = 0.5f;
    OptimizerConfig c = bertc_optimizer_defaults(OPT_ADAMW, 0.1);
    c.weight_decay = 0.5;
    c.no_decay_vectors = no_decay_vectors;
    Optimizer o;
    bertc_optimizer_init(&o, r, c);
    bertc_optimizer_step(&o, 0.1);
    *weight = lin.weight->value.data[0];
    *bias = lin.bias->value.data[0];
    *ln_weight = ln.weight->value.data[0];
    bertc_arena_destroy(a);
}

Test(weight_decay, torch_optim_decays_every_parameter)
{
    float w, b, g;
    step_without_gradients(false, &w, &b, &g);
    cr_expect_float_eq(w, 0.5f * 0.95f, 1e-7f, "Linear weight: expected %g, got %g", 0.475, w);
    cr_expect_float_eq(b, 0.5f * 0.95f, 1e-7f, "Linear bias: expected %g, got %g", 0.475, b);
    cr_expect_float_eq(g, 0.95f, 1e-7f, "LayerNorm weight: expected 0.95, got %g", g);
}

Test(weight_decay, hf_groups_leave_biases_and_layernorm_alone)
{
    float w, b, g;
    step_without_gradients(true, &w, &b, &g);
    cr_expect_float_eq(w, 0.5f * 0.95f, 1e-7f, "Linear weight: expected %g, got %g", 0.475, w);
    cr_expect_float_eq(b, 0.5f, 0.0f, "Linear bias decayed: expected 0.5, got %g", b);
    cr_expect_float_eq(g, 1.0f, 0.0f, "LayerNorm weight decayed: expected 1, got %g", g);
}

/* ---- the engine ------------------------------------------------------------ */

static int random_batch(void *ctx, const int64_t *idx, int64_t n, Graph *g, Batch *b,
                        int64_t *tokens, BertcError *err)
{
    (void)ctx;
    (void)err;
    int64_t shape[2] = {n, S}, lshape[1] = {n};
    ITensor ids = bertc_itensor_new(g->step, 2, shape), mask = bertc_itensor_new(g->step, 2, shape);
    ITensor labels = bertc_itensor_new(g->step, 1, lshape);
    for (int64_t j = 0; j < n; j++) {
        Rng r = bertc_rng_seed(100 + (uint64_t)idx[j]);
        for (int t = 0; t < S; t++) {
            ids.data[j * S + t] = (int32_t)bertc_rng_randint(&r, 1, 15);
            mask.data[j * S + t] = 1;
        }
        labels.data[j] = (int32_t)(idx[j] % 2);
    }
    bertc_batch_put_ids(b, "input_ids", ids);
    bertc_batch_put_ids(b, "attention_mask", mask);
    bertc_batch_put_ids(b, "labels", labels);
    *tokens = n * S;
    return 0;
}

/* One engine step at lr 0.01 with a weight decay of 50: a decayed
 * parameter is halved (1 - lr wd = 0.5) before Adam moves it, and Adam's
 * first step moves each element by at most lr (|g| / (|g| + eps)). So a
 * LayerNorm weight (initialised to 1) ends within lr of 1 when it is not
 * decayed and near 0.5 when it is; a 2-D weight ends within lr of half its
 * start. */
Test(weight_decay, the_engine_decays_matrices_not_vectors)
{
    Arena *a = bertc_arena_create("params", 1 << 16);
    Model m = test_tiny_classifier(a, S);
    const Registry *r = m.reg;
    float **before = bertc_arena_alloc(a, sizeof *before * (size_t)r->n_params);
    for (int i = 0; i < r->n_params; i++) {
        const Tensor *v = &r->params[i].var->value;
        before[i] = bertc_arena_alloc(a, sizeof(float) * (size_t)v->numel);
        memcpy(before[i], v->data, sizeof(float) * (size_t)v->numel);
    }
    TrainTask task = {.n_train = 8, .make_batch = random_batch, .metric_name = "accuracy"};
    TrainOptions o = bertc_train_defaults();
    o.steps = 1;
    o.batch_size = 4;
    o.lr = 0.01;
    o.warmup = 0;
    o.weight_decay = 50;
    o.quiet = true;
    o.catch_signals = false;
    TrainResult res;
    BertcError err = {{0}};
    cr_assert_eq(bertc_train_run(&m, &task, &o, &res, &err), 0, "%s", err.msg);
    int n_vectors = 0, n_matrices = 0;
    for (int i = 0; i < r->n_params; i++) {
        const Param *p = &r->params[i];
        if (p->alias_of >= 0 || p->buffer)
            continue;
        const Tensor *v = &p->var->value;
        double keep = v->ndim < 2 ? 1.0 : 1.0 - o.lr * o.weight_decay;
        n_vectors += v->ndim < 2;
        n_matrices += v->ndim >= 2;
        for (int64_t k = 0; k < v->numel; k++) {
            double expected = keep * before[i][k], got = v->data[k];
            cr_assert(fabs(got - expected) <= o.lr * (1 + 1e-4),
                      "'%s'[%lld]: %s, so expected %g within lr %g, got %g (started at %g)",
                      p->name, (long long)k, v->ndim < 2 ? "a vector: no decay" : "decayed",
                      expected, o.lr, got, (double)before[i][k]);
        }
    }
    cr_expect(n_vectors > 0 && n_matrices > 0, "%d vectors, %d matrices checked", n_vectors,
              n_matrices);
    bertc_arena_destroy(a);
}
