/* test/test_train_engine.c — the training engine on a task a 1-layer BERT can
 * learn in a second: does the sequence contain token 7? (balanced, so the
 * majority baseline is 50%), and an interrupted run resumed from its
 * checkpoint ends with bit-identical weights. */
#include "test/test_util.h"
#include "zoo/train/train.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#define S 12
#define N_TRAIN 512
#define N_EVAL 200

typedef struct Toy {
    int32_t ids[N_TRAIN + N_EVAL][S];
    int32_t len[N_TRAIN + N_EVAL];
    int32_t label[N_TRAIN + N_EVAL];
} Toy;

static Toy toy;

static void make_toy(void)
{
    Rng r = bertc_rng_seed(5);
    for (int i = 0; i < N_TRAIN + N_EVAL; i++) {
        int n = (int)bertc_rng_randint(&r, 6, S);
        toy.len[i] = n;
        toy.label[i] = (int32_t)bertc_rng_randint(&r, 0, 1);
        for (int t = 0; t < S; t++) {
            int32_t id = 0;
            while (t < n && (id < 3 || id == 7))
                id = (int32_t)bertc_rng_randint(&r, 3, 29);
            toy.ids[i][t] = id;
        }
        if (toy.label[i])
            toy.ids[i][bertc_rng_randint(&r, 0, n - 1)] = 7;
    }
}

/* examples idx[0..n-1] (offset into the toy set) as a batch */
static void fill(const int64_t *idx, int64_t n, int64_t offset, Graph *g, Batch *b)
{
    int64_t bs[2] = {n, S}, bl[1] = {n};
    ITensor ids = bertc_itensor_new(g->step, 2, bs), mask = bertc_itensor_new(g->step, 2, bs);
    ITensor labels = bertc_itensor_new(g->step, 1, bl);
    for (int64_t j = 0; j < n; j++) {
        int64_t e = offset + idx[j];
        for (int t = 0; t < S; t++) {
            ids.data[j * S + t] = toy.ids[e][t];
            mask.data[j * S + t] = t < toy.len[e];
        }
        labels.data[j] = toy.label[e];
    }
    bertc_batch_put_ids(b, "input_ids", ids);
    bertc_batch_put_ids(b, "attention_mask", mask);
    bertc_batch_put_ids(b, "labels", labels);
}

static int make_batch(void *ctx, const int64_t *idx, int64_t n, Graph *g, Batch *b,
                      int64_t *tokens, BertcError *err)
{
    (void)ctx;
    (void)err;
    fill(idx, n, 0, g, b);
    *tokens = n * S;
    return 0;
}

static int evaluate(void *ctx, Model *m, Graph *g, double *metric, double *loss, BertcError *err)
{
    (void)ctx;
    int64_t idx[N_EVAL];
    for (int64_t i = 0; i < N_EVAL; i++)
        idx[i] = i;
    Batch b;
    bertc_batch_init(&b, "eval");
    fill(idx, N_EVAL, N_TRAIN, g, &b);
    Outputs out;
    bertc_outputs_init(&out);
    if (bertc_model_forward(m, g, &b, &out, err) != 0)
        return -1;
    const float *logits = bertc_outputs_get(&out, "logits")->value.data;
    int correct = 0;
    for (int i = 0; i < N_EVAL; i++)
        correct += (logits[2 * i + 1] > logits[2 * i]) == toy.label[N_TRAIN + i];
    *metric = (double)correct / N_EVAL;
    *loss = bertc_outputs_get(&out, "loss")->value.data[0];
    return 0;
}

static void build(Model *m, Arena *a)
{
    BertConfig c = test_bert_config((TestBertSize){
        .arch = "BertForSequenceClassification", .vocab_size = 30, .hidden_size = 32, .num_hidden_layers = 1,
        .num_attention_heads = 4, .intermediate_size = 64, .max_position_embeddings = S,
        .num_labels = 2});
    c.hidden_dropout_prob = 0.1f;
    c.attention_probs_dropout_prob = 0.1f;
    test_model_from_config(m, a, &c);
    test_model_init_weights(m, 1);
}

static TrainTask task(void)
{
    TrainTask t = {.n_train = N_TRAIN, .make_batch = make_batch, .evaluate = evaluate,
                   .metric_name = "accuracy"};
    return t;
}

static TrainOptions options(void)
{
    TrainOptions o = bertc_train_defaults();
    o.steps = 160;
    o.batch_size = 32;
    o.lr = 3e-3;
    o.quiet = true;
    return o;
}

/* Every test starts from the toy set and a freshly initialised model. */
static Arena *params;
static Model model;

static void setup(void)
{
    make_toy();
    params = bertc_arena_create("params", 1 << 16);
    build(&model, params);
}

static void teardown(void) { bertc_arena_destroy(params); }

TestSuite(train_engine, .init = setup, .fini = teardown);

Test(train_engine, learns_the_toy_task)
{
    TrainTask t = task();
    TrainOptions o = options();
    o.eval_every = 80;
    TrainResult res;
    BertcError err;
    cr_assert_eq(bertc_train_run(&model, &t, &o, &res, &err), 0, "%s", err.msg);
    cr_assert_eq(res.n_points, 2, "%d curve points", res.n_points);
    cr_assert_gt(res.final_metric, 0.9, "accuracy %.3f after %lld steps (baseline 0.5)",
                 res.final_metric, (long long)o.steps);
    cr_assert_lt(res.final_eval_loss, 0.4, "eval loss %.3f", res.final_eval_loss);
}

Test(train_engine, killed_and_resumed_run_ends_bit_identical)
{
    char path_a[128], path_b[128];
    snprintf(path_a, sizeof path_a, "/tmp/bertc_train_%d_a.safetensors", (int)getpid());
    snprintf(path_b, sizeof path_b, "/tmp/bertc_train_%d_b.safetensors", (int)getpid());
    TrainTask t = task();
    TrainResult res;
    BertcError err;
    Arena *b = bertc_arena_create("b", 1 << 16);
    Model mb, mc;
    TrainOptions o = options();
    o.steps = 40;
    o.checkpoint = path_a;
    cr_assert_eq(bertc_train_run(&model, &t, &o, &res, &err), 0, "%s", err.msg);

    build(&mb, b);
    o.checkpoint = path_b;
    o.checkpoint_every = 10;
    o.stop_after = 23;         /* "killed" after step 23; the last checkpoint is 20 */
    cr_assert_eq(bertc_train_run(&mb, &t, &o, &res, &err), 0, "%s", err.msg);
    cr_assert_eq(res.steps_done, 23);

    Arena *c = bertc_arena_create("c", 1 << 16);
    build(&mc, c);
    o.stop_after = 0;
    o.resume = true;
    cr_assert_eq(bertc_train_run(&mc, &t, &o, &res, &err), 0, "%s", err.msg);
    test_expect_same_weights(model.reg, mc.reg, "after resuming");
    remove(path_a);
    remove(path_b);
    bertc_arena_destroy(b);
    bertc_arena_destroy(c);
}

/* bertc_train_run of 2 steps of batch_size with `headroom` bytes more than bertc
 * holds now: it fails with an error naming the step arena and saying `says`. */
static void expect_out_of_memory(TrainTask *t, int64_t batch_size, size_t headroom,
                                 const char *says)
{
    TrainOptions o = options();
    o.steps = 2;
    o.batch_size = batch_size;
    TrainResult res;
    BertcError err = {{0}};
    bertc_arena_set_memory_limit(bertc_arena_memory_total() + headroom);
    int rc = bertc_train_run(&model, t, &o, &res, &err);
    bertc_arena_set_memory_limit(0);
    cr_assert_eq(rc, -1, "batches of %lld past the memory limit trained", (long long)batch_size);
    cr_assert(strstr(err.msg, "arena 'step'") && strstr(err.msg, says), "the message: %s",
              err.msg);
}

/* A batch whose step needs more memory than bertc may use: bertc_train_run
 * returns an error naming the arena (it ran under a guard), and the model
 * trains on afterwards with a batch that fits. */
Test(train_engine, a_batch_too_big_for_memory_is_an_error)
{
    TrainTask t = task();
    /* 4096 x 12 tokens: the attention alone is 9 MB */
    expect_out_of_memory(&t, 4096, 4 << 20, "smaller batch");
    TrainOptions o = options();
    o.steps = 2;
    o.batch_size = 8;
    TrainResult res;
    BertcError err = {{0}};
    cr_assert_eq(bertc_train_run(&model, &t, &o, &res, &err), 0, "%s", err.msg);
}

/* A task whose examples are big (1 MiB of scratch each while batching):
 * the memory runs out in make_batch, outside bertc_model_forward, and bertc_train_run
 * still returns the error. */
static int make_big_batch(void *ctx, const int64_t *idx, int64_t n, Graph *g, Batch *b,
                          int64_t *tokens, BertcError *err)
{
    memset(bertc_arena_alloc(g->step, (size_t)n << 20), 0, (size_t)n << 20);
    return make_batch(ctx, idx, n, g, b, tokens, err);
}

Test(train_engine, examples_too_big_for_memory_are_an_error)
{
    TrainTask t = task();
    t.make_batch = make_big_batch;
    expect_out_of_memory(&t, 64, 16 << 20, "out of memory");
}
