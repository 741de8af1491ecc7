/* test/test_train_ranks.c — data-parallel training (zoo/train/train.h,
 * TrainCollective) without MPI: two processes of this test (fork) joined by
 * pipes, rank 1 sending its doubles to rank 0, which adds them (its own
 * first) and sends the sum back, as cli/mpi.c's reduce-then-broadcast does.
 *
 *   - 2 ranks of batch 8 train as 1 process of batch 16 (to float32
 *     rounding: a rank's gradient is summed whole, not row by row);
 *   - every rank ends with the same bits; rank 0 alone evaluates;
 *   - a two-rank run stopped and resumed on two ranks ends bit-identical to
 *     one that was not; --resume with another number of ranks is refused,
 *     naming both;
 *   - a rank whose loss is not finite stops both (no rank left waiting);
 *   - a collective that does not add up (rank >= ranks, no sum) is refused.
 *
 * The toy task is test_train_engine.c's (does the sequence hold token 7?),
 * without dropout, so that the batches decide everything. */
#include "test/test_util.h"
#include "zoo/train/train.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define S 12
#define N_TRAIN 256
#define N_EVAL 64

#define POISON_TOKEN 2   /* the toy never uses it */
static bool poisoned;     /* build(): POISON_TOKEN's embedding row is NaN */

static int32_t toy_ids[N_TRAIN + N_EVAL][S], toy_len[N_TRAIN + N_EVAL],
    toy_label[N_TRAIN + N_EVAL];

static void make_toy(void)
{
    Rng r = bertc_rng_seed(11);
    for (int i = 0; i < N_TRAIN + N_EVAL; i++) {
        int n = (int)bertc_rng_randint(&r, 6, S);
        toy_len[i] = n;
        toy_label[i] = (int32_t)bertc_rng_randint(&r, 0, 1);
        for (int t = 0; t < S; t++) {
            int32_t id = 0;
            while (t < n && (id < 3 || id == 7))
                id = (int32_t)bertc_rng_randint(&r, 3, 29);
            toy_ids[i][t] = id;
        }
        if (toy_label[i])
            toy_ids[i][bertc_rng_randint(&r, 0, n - 1)] = 7;
    }
}

/* What a task of this test counts: evaluations run here, and the example
 * that makes a loss non-finite (-1: none). */
typedef struct ToyCtx {
    int evaluations;
    int64_t poison;
} ToyCtx;

static void fill(const int64_t *idx, int64_t n, int64_t offset, Graph *g, Batch *b,
                 const ToyCtx *c)
{
    int64_t bs[2] = {n, S}, bl[1] = {n};
    ITensor ids = bertc_itensor_new(g->step, 2, bs), mask = bertc_itensor_new(g->step, 2, bs);
    ITensor labels = bertc_itensor_new(g->step, 1, bl);
    for (int64_t j = 0; j < n; j++) {
        int64_t e = offset + idx[j];
        for (int t = 0; t < S; t++) {
            ids.data[j * S + t] = toy_ids[e][t];
            mask.data[j * S + t] = t < toy_len[e];
        }
        labels.data[j] = toy_label[e];
        if (c && e == c->poison)
            ids.data[j * S] = POISON_TOKEN;   /* its embedding is NaN (poisoned) */
    }
    bertc_batch_put_ids(b, "input_ids", ids);
    bertc_batch_put_ids(b, "attention_mask", mask);
    bertc_batch_put_ids(b, "labels", labels);
}

static int make_batch(void *ctx, const int64_t *idx, int64_t n, Graph *g, Batch *b,
                      int64_t *tokens, BertcError *err)
{
    (void)err;
    fill(idx, n, 0, g, b, ctx);
    *tokens = n * S;
    return 0;
}

static int evaluate(void *ctx, Model *m, Graph *g, double *metric, double *loss, BertcError *err)
{
    ((ToyCtx *)ctx)->evaluations++;
    int64_t idx[N_EVAL];
    for (int64_t i = 0; i < N_EVAL; i++)
        idx[i] = i;
    Batch b;
    bertc_batch_init(&b, "eval");
    fill(idx, N_EVAL, N_TRAIN, g, &b, NULL);
    Outputs out;
    bertc_outputs_init(&out);
    if (bertc_model_forward(m, g, &b, &out, err) != 0)
        return -1;
    *metric = 0.5;
    *loss = bertc_outputs_get(&out, "loss")->value.data[0];
    return 0;
}

static void build(Model *m, Arena *a)
{
    BertConfig c = test_bert_config((TestBertSize){
        .arch = "BertForSequenceClassification", .vocab_size = 30, .hidden_size = 32,
        .num_hidden_layers = 1, .num_attention_heads = 4, .intermediate_size = 64,
        .max_position_embeddings = S, .num_labels = 2});
    c.hidden_dropout_prob = 0.0f;
    c.attention_probs_dropout_prob = 0.0f;
    test_model_from_config(m, a, &c);
    test_model_init_weights(m, 3);
    if (!poisoned)
        return;
    Tensor *e = &m->reg->params[bertc_registry_find(m->reg,
                                    "bert.embeddings.word_embeddings.weight")].var->value;
    for (int64_t h = 0; h < e->shape[1]; h++)
        e->data[POISON_TOKEN * e->shape[1] + h] = NAN;
}

static TrainOptions options(int64_t batch_size)
{
    TrainOptions o = bertc_train_defaults();
    o.steps = 12;
    o.batch_size = batch_size;
    o.lr = 3e-3;
    o.eval_every = 4;
    o.quiet = true;
    o.catch_signals = false;
    return o;
}

/* ---- two ranks over pipes ------------------------------------------------- */

typedef struct PipeRanks {
    int rank;
    int up[2];     /* rank 1 -> rank 0 */
    int down[2];   /* rank 0 -> rank 1 */
} PipeRanks;

static bool move_all(int fd, void *buf, size_t n, bool writing)
{
    char *p = buf;
    while (n > 0) {
        ssize_t k = writing ? write(fd, p, n) : read(fd, p, n);
        if (k <= 0)
            return false;
        p += k;
        n -= (size_t)k;
    }
    return true;
}

static int pipe_sum(void *ctx, double *x, int64_t n, BertcError *err)
{
    PipeRanks *pr = ctx;
    size_t bytes = sizeof(double) * (size_t)n;
    if (pr->rank == 1) {
        if (!move_all(pr->up[1], x, bytes, true) || !move_all(pr->down[0], x, bytes, false))
            return bertc_errorf(err, "rank 1: rank 0 is gone");
        return 0;
    }
    double *other = malloc(bytes);
    bool ok = other && move_all(pr->up[0], other, bytes, false);
    for (int64_t i = 0; ok && i < n; i++)
        x[i] += other[i];
    free(other);
    if (!ok || !move_all(pr->down[1], x, bytes, true))
        return bertc_errorf(err, "rank 0: rank 1 is gone");
    return 0;
}

/* The weights of a finished run, every parameter end to end. */
static float *weights_of(const Registry *reg, int64_t *n)
{
    *n = 0;
    for (int i = 0; i < reg->n_params; i++)
        if (reg->params[i].alias_of < 0)
            *n += reg->params[i].var->value.numel;
    float *w = malloc(sizeof(float) * (size_t)*n), *at = w;
    for (int i = 0; i < reg->n_params; i++) {
        const Param *p = &reg->params[i];
        if (p->alias_of >= 0)
            continue;
        memcpy(at, p->var->value.data, sizeof(float) * (size_t)p->var->value.numel);
        at += p->var->value.numel;
    }
    return w;
}

/* What each rank of a two-rank run reports. */
typedef struct RankRun {
    int rc;
    int evaluations;
    char msg[BERTC_ERROR_LEN];
    int64_t steps_done;
} RankRun;

/* Rank `rank` of a run with options o (collective filled in here). */
static void one_rank(PipeRanks *pr, TrainOptions o, ToyCtx *ctx, Model *m, RankRun *out)
{
    TrainCollective co = {.rank = pr->rank, .ranks = 2, .sum = pipe_sum, .ctx = pr};
    o.collective = &co;
    TrainTask t = {.n_train = N_TRAIN, .make_batch = make_batch, .evaluate = evaluate,
                   .metric_name = "accuracy", .ctx = ctx};
    TrainResult res;
    BertcError err = {{0}};
    out->rc = bertc_train_run(m, &t, &o, &res, &err);
    out->evaluations = ctx->evaluations;
    out->steps_done = res.steps_done;
    snprintf(out->msg, sizeof out->msg, "%s", err.msg);
}

/* Runs o on two ranks: rank 1 in a child process, rank 0 here, into m.
 * *r1 gets rank 1's report and w1 its final weights (n floats), through a
 * third pipe. */
static void two_ranks(TrainOptions o, int64_t poison, Model *m, RankRun *r0, RankRun *r1,
                      float **w1)
{
    PipeRanks pr;
    int result[2];
    cr_assert(pipe(pr.up) == 0 && pipe(pr.down) == 0 && pipe(result) == 0);
    fflush(NULL);
    pid_t child = fork();
    cr_assert(child >= 0);
    if (child == 0) {   /* rank 1: its own model, the same seed */
        Arena *a = bertc_arena_create("rank1", 1 << 16);
        Model m1;
        build(&m1, a);
        ToyCtx ctx = {.poison = poison};
        pr.rank = 1;
        RankRun r;
        one_rank(&pr, o, &ctx, &m1, &r);
        int64_t n;
        float *w = weights_of(m1.reg, &n);
        bool ok = move_all(result[1], &r, sizeof r, true) &&
                  move_all(result[1], w, sizeof(float) * (size_t)n, true);
        _exit(ok ? 0 : 1);
    }
    ToyCtx ctx = {.poison = poison};
    pr.rank = 0;
    one_rank(&pr, o, &ctx, m, r0);
    int64_t n;
    free(weights_of(m->reg, &n));
    *w1 = malloc(sizeof(float) * (size_t)n);
    cr_assert(move_all(result[0], r1, sizeof *r1, false), "rank 1 sent no report");
    cr_assert(move_all(result[0], *w1, sizeof(float) * (size_t)n, false));
    int status;
    waitpid(child, &status, 0);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "rank 1 failed");
    for (int i = 0; i < 2; i++) {
        close(pr.up[i]);
        close(pr.down[i]);
        close(result[i]);
    }
}

static Arena *params;

static void setup(void)
{
    make_toy();
    bertc_threads_set_count(1);   /* no worker threads across the fork */
    params = bertc_arena_create("params", 1 << 16);
}

static void teardown(void) { bertc_arena_destroy(params); }

TestSuite(train_ranks, .init = setup, .fini = teardown);

static double max_abs_diff(const float *a, const float *b, int64_t n)
{
    double worst = 0;
    for (int64_t i = 0; i < n; i++)
        worst = fmax(worst, fabs((double)a[i] - (double)b[i]));
    return worst;
}

Test(train_ranks, two_ranks_of_batch_8_train_as_one_process_of_batch_16)
{
    Model one, two;
    build(&one, params);
    build(&two, params);
    TrainOptions o = options(16);
    TrainTask t = {.n_train = N_TRAIN, .make_batch = make_batch, .evaluate = evaluate,
                   .metric_name = "accuracy", .ctx = &(ToyCtx){.poison = -1}};
    TrainResult res;
    BertcError err;
    cr_assert_eq(bertc_train_run(&one, &t, &o, &res, &err), 0, "%s", err.msg);

    RankRun r0, r1;
    float *w1;
    two_ranks(options(8), -1, &two, &r0, &r1, &w1);
    cr_assert_eq(r0.rc, 0, "rank 0: %s", r0.msg);
    cr_assert_eq(r1.rc, 0, "rank 1: %s", r1.msg);
    int64_t n;
    float *w_one = weights_of(one.reg, &n), *w0 = weights_of(two.reg, &n);
    cr_assert_eq(memcmp(w0, w1, sizeof(float) * (size_t)n), 0,
                 "the two ranks ended with different weights");
    double d = max_abs_diff(w_one, w0, n);
    /* 12 AdamW steps at lr 3e-3 move weights by ~0.03; the sums' order
     * changes the last bits of the gradients only */
    cr_assert_lt(d, 1e-6, "2 ranks x 8 against 1 x 16: max |diff| %g", d);
    cr_assert_eq(r0.evaluations, 3, "rank 0 evaluated %d times", r0.evaluations);
    cr_assert_eq(r1.evaluations, 0, "rank 1 evaluated %d times", r1.evaluations);
    free(w_one);
    free(w0);
    free(w1);
}

Test(train_ranks, a_two_rank_run_resumed_on_two_ranks_ends_bit_identical)
{
    char path_a[128], path_b[128];
    snprintf(path_a, sizeof path_a, "/tmp/bertc_ranks_%d_a.safetensors", (int)getpid());
    snprintf(path_b, sizeof path_b, "/tmp/bertc_ranks_%d_b.safetensors", (int)getpid());
    Model whole, cut, resumed;
    build(&whole, params);
    build(&cut, params);
    build(&resumed, params);
    RankRun r0, r1;
    float *w1;
    TrainOptions o = options(8);
    o.checkpoint = path_a;
    two_ranks(o, -1, &whole, &r0, &r1, &w1);
    cr_assert_eq(r0.rc, 0, "%s", r0.msg);
    free(w1);

    o.checkpoint = path_b;
    o.checkpoint_every = 4;
    o.stop_after = 6;   /* "killed" after step 6; the checkpoint holds step 4 */
    two_ranks(o, -1, &cut, &r0, &r1, &w1);
    cr_assert_eq(r0.rc, 0, "%s", r0.msg);
    cr_assert_eq(r0.steps_done, 6);
    free(w1);
    o.stop_after = 0;
    o.resume = true;
    two_ranks(o, -1, &resumed, &r0, &r1, &w1);
    cr_assert_eq(r0.rc, 0, "rank 0: %s", r0.msg);
    cr_assert_eq(r1.rc, 0, "rank 1: %s", r1.msg);
    test_expect_same_weights(whole.reg, resumed.reg, "after resuming on two ranks");
    free(w1);

    /* one process on the two-rank checkpoint: refused, naming both */
    Model solo;
    build(&solo, params);
    TrainTask t = {.n_train = N_TRAIN, .make_batch = make_batch, .evaluate = evaluate,
                   .metric_name = "accuracy", .ctx = &(ToyCtx){.poison = -1}};
    TrainResult res;
    BertcError err = {{0}};
    cr_assert_eq(bertc_train_run(&solo, &t, &o, &res, &err), -1, "resumed on one process");
    cr_assert(strstr(err.msg, "ranks 1") && strstr(err.msg, "made with 2"), "%s", err.msg);
    remove(path_a);
    remove(path_b);
}

Test(train_ranks, two_ranks_refuse_a_checkpoint_of_one_process)
{
    char path[128];
    snprintf(path, sizeof path, "/tmp/bertc_ranks_%d_solo.safetensors", (int)getpid());
    Model solo, pair;
    build(&solo, params);
    build(&pair, params);
    TrainOptions o = options(8);
    o.checkpoint = path;
    o.checkpoint_every = 4;
    o.stop_after = 5;
    TrainTask t = {.n_train = N_TRAIN, .make_batch = make_batch, .evaluate = evaluate,
                   .metric_name = "accuracy", .ctx = &(ToyCtx){.poison = -1}};
    TrainResult res;
    BertcError err;
    cr_assert_eq(bertc_train_run(&solo, &t, &o, &res, &err), 0, "%s", err.msg);
    o.stop_after = 0;
    o.resume = true;
    RankRun r0, r1;
    float *w1;
    two_ranks(o, -1, &pair, &r0, &r1, &w1);
    free(w1);
    cr_assert_eq(r0.rc, -1, "rank 0 resumed a one-process checkpoint");
    cr_assert_eq(r1.rc, -1, "rank 1 resumed a one-process checkpoint");
    cr_assert(strstr(r0.msg, "ranks 2") && strstr(r0.msg, "one process"), "%s", r0.msg);
    remove(path);
}

/* Example 40 makes rank 1's loss non-finite at the step that reads it: both
 * ranks stop there with an error, rank 0 naming rank 1's. */
Test(train_ranks, a_non_finite_loss_on_one_rank_stops_both)
{
    poisoned = true;
    Model m;
    build(&m, params);
    RankRun r0, r1;
    float *w1;
    TrainOptions o = options(8);
    o.steps = 40;   /* 640 examples: every one is read twice and more */
    two_ranks(o, 40, &m, &r0, &r1, &w1);
    free(w1);
    cr_assert_eq(r0.rc, -1, "rank 0 trained on");
    cr_assert_eq(r1.rc, -1, "rank 1 trained on");
    cr_assert(strstr(r0.msg, "not finite") || strstr(r0.msg, "nan") || strstr(r0.msg, "inf"),
              "%s", r0.msg);
}

Test(train_ranks, a_collective_that_does_not_add_up_is_refused)
{
    Model m;
    build(&m, params);
    TrainOptions o = options(8);
    TrainCollective bad_rank = {.rank = 2, .ranks = 2, .sum = pipe_sum};
    TrainCollective no_sum = {.rank = 0, .ranks = 2};
    TrainTask t = {.n_train = N_TRAIN, .make_batch = make_batch, .metric_name = "accuracy",
                   .ctx = &(ToyCtx){.poison = -1}};
    TrainResult res;
    BertcError err;
    o.collective = &bad_rank;
    cr_assert_eq(bertc_train_run(&m, &t, &o, &res, &err), -1);
    cr_assert(strstr(err.msg, "rank 2 of 2"), "%s", err.msg);
    o.collective = &no_sum;
    cr_assert_eq(bertc_train_run(&m, &t, &o, &res, &err), -1);
    cr_assert(strstr(err.msg, "no sum"), "%s", err.msg);
}
