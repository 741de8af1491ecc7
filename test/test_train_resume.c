/* test/test_train_resume.c — what makes a resume exact and a run stoppable:
 *   - the checkpoint records the run's settings and --resume with another
 *     one is refused naming the field and both values (an old checkpoint
 *     without them too);
 *   - SIGINT/SIGTERM finish the step, save and end the run with the signal
 *     (the library), the example exits 130/143 and --resume continues to
 *     the same weights as an uninterrupted run (a real signal to a real
 *     example);
 *   - the checkpoint path and --out are checked before the first step;
 *   - numeric flags are strict: bertc_train_parse_flags, bertc init --seed, and
 *     the bertc_parse_* helpers under them. */
#include "test/test_util.h"
#include "zoo/train/train.h"

#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define S 6
#define N_TRAIN 40

static int batches_made;
static int raise_at = -1, raise_sig;   /* make_batch raises raise_sig at that call */

static int make_batch(void *ctx, const int64_t *idx, int64_t n, Graph *g, Batch *b,
                      int64_t *tokens, BertcError *err)
{
    (void)ctx;
    (void)err;
    if (batches_made++ == raise_at)
        raise(raise_sig);
    int64_t bs[2] = {n, S}, bl[1] = {n};
    ITensor ids = bertc_itensor_new(g->step, 2, bs), labels = bertc_itensor_new(g->step, 1, bl);
    for (int64_t j = 0; j < n; j++) {
        for (int t = 0; t < S; t++)
            ids.data[j * S + t] = (int32_t)(5 + (idx[j] * 7 + t) % 9);
        labels.data[j] = (int32_t)(idx[j] % 2);
    }
    bertc_batch_put_ids(b, "input_ids", ids);
    bertc_batch_put_ids(b, "labels", labels);
    *tokens = n * S;
    return 0;
}

static char path[128];

static TrainOptions options(void)
{
    TrainOptions o = bertc_train_defaults();
    o.steps = 12;
    o.batch_size = 8;
    o.quiet = true;
    o.checkpoint = path;
    snprintf(path, sizeof path, "/tmp/bertc_resume_%d.safetensors", (int)getpid());
    return o;
}

static TrainTask task(void)
{
    return (TrainTask){.n_train = N_TRAIN, .make_batch = make_batch, .metric_name = "acc"};
}

/* Train opt from a fresh model; returns bertc_train_run's result code. */
static int train(Arena **a, Model *m, const TrainOptions *o, TrainResult *res, BertcError *err)
{
    *a = bertc_arena_create("params", 1 << 16);
    *m = test_tiny_classifier(*a, S);
    TrainTask t = task();
    batches_made = 0;
    return bertc_train_run(m, &t, o, res, err);
}

/* A run stopped after step 4 with its checkpoint there; returns its options
 * set to resume it. */
static TrainOptions stopped_after_step_4(void)
{
    Arena *a;
    Model m;
    TrainResult res;
    BertcError err = {{0}};
    TrainOptions o = options();
    o.stop_after = 4;
    o.checkpoint_every = 4;
    cr_assert_eq(train(&a, &m, &o, &res, &err), 0, "%s", err.msg);
    bertc_arena_destroy(a);
    o.resume = true;
    o.stop_after = 0;
    return o;
}

/* Resuming a stopped run with the changed setting `change` applied. */
static void expect_refused(void (*change)(TrainOptions *), const char *says)
{
    Arena *a;
    Model m;
    TrainResult res;
    BertcError err = {{0}};
    TrainOptions o = stopped_after_step_4();
    change(&o);
    cr_expect_neq(train(&a, &m, &o, &res, &err), 0, "a resume that should say \"%s\" ran",
                  says);
    cr_expect(strstr(err.msg, path) && strstr(err.msg, says), "\"%s\" does not name the file "
              "and say \"%s\"", err.msg, says);
    cr_expect_eq(batches_made, 0, "a step ran before the refusal");
    bertc_arena_destroy(a);
    remove(path);
}

static void batch16(TrainOptions *o) { o->batch_size = 16; }
static void seed9(TrainOptions *o) { o->seed = 9; }
static void steps20(TrainOptions *o) { o->steps = 20; }
static void lr(TrainOptions *o) { o->lr = 5e-4; }
static void warmup(TrainOptions *o) { o->warmup = 0.25; }
static void decay(TrainOptions *o) { o->weight_decay = 0.1; }
static void clip(TrainOptions *o) { o->clip_norm = 0.5f; }

Test(train_resume, a_different_setting_is_refused_naming_it)
{
    expect_refused(batch16, "resuming with batch_size 16, but the checkpoint was made with 8");
    expect_refused(seed9, "resuming with seed 9, but the checkpoint was made with 42");
    expect_refused(steps20, "resuming with steps 20, but the checkpoint was made with 12");
    expect_refused(lr, "resuming with lr 0.0005, but the checkpoint was made with 0.001");
    expect_refused(warmup, "resuming with warmup 0.25, but the checkpoint was made with 0.1");
    expect_refused(decay, "weight_decay 0.1, but the checkpoint was made with 0.01");
    expect_refused(clip, "resuming with clip_norm 0.5, but the checkpoint was made with 1");
}

Test(train_resume, the_model_config_and_the_data_size_are_recorded)
{
    Model m;
    TrainResult res;
    BertcError err = {{0}};
    TrainOptions o = stopped_after_step_4();
    Arena *a = bertc_arena_create("params", 1 << 16);
    m = test_tiny_classifier(a, S);
    TrainTask t = task();
    t.n_train = N_TRAIN - 1;
    cr_expect_neq(bertc_train_run(&m, &t, &o, &res, &err), 0);
    cr_expect(strstr(err.msg, "n_train 39, but the checkpoint was made with 40"), "%s", err.msg);
    bertc_arena_destroy(a);
    /* the same run with another dropout: another config */
    a = bertc_arena_create("params", 1 << 16);
    BertConfig c = test_tiny_classifier(a, S).cfg;
    c.hidden_dropout_prob = 0.2f;
    test_model_from_config(&m, a, &c);
    t.n_train = N_TRAIN;
    cr_expect_neq(bertc_train_run(&m, &t, &o, &res, &err), 0);
    cr_expect(strstr(err.msg, "resuming with config_crc32 "), "%s", err.msg);
    bertc_arena_destroy(a);
    remove(path);
}

Test(train_resume, a_checkpoint_without_the_record_is_refused)
{
    Arena *a;
    Model m;
    BertcError err = {{0}};
    TrainOptions o = options();
    a = bertc_arena_create("params", 1 << 16);
    m = test_tiny_classifier(a, S);
    Optimizer opt;
    bertc_optimizer_init(&opt, m.reg, bertc_optimizer_defaults(OPT_ADAMW, o.lr));
    Rng rng = bertc_rng_seed(1);
    /* what bertc wrote before checkpoints recorded their run */
    cr_assert_eq(bertc_checkpoint_save(path, m.reg, &opt, &rng, 0, NULL, &err), 0, "%s", err.msg);
    bertc_arena_destroy(a);
    o.resume = true;
    TrainResult res;
    cr_expect_neq(train(&a, &m, &o, &res, &err), 0);
    cr_expect(strstr(err.msg, "does not record its seed") && strstr(err.msg, path), "%s",
              err.msg);
    bertc_arena_destroy(a);
    remove(path);
}

/* A signal raised inside step 5 (the library test of the signal path): the
 * step completes, the checkpoint is of step 6, bertc_train_run says so, and a
 * resume ends bit-identical to a run never stopped. */
static void signal_stops_after_the_step(int sig)
{
    Arena *a, *b;
    Model ma, mb;
    TrainResult res;
    BertcError err = {{0}};
    TrainOptions o = options();
    raise_at = -1;
    struct sigaction before, now;   /* SIG_DFL, or SIG_IGN under a background shell */
    sigaction(sig, NULL, &before);
    cr_assert_eq(train(&a, &ma, &o, &res, &err), 0, "%s", err.msg);
    remove(path);
    sigaction(sig, NULL, &now);
    cr_expect(now.sa_handler == before.sa_handler, "a run that ended normally left its handler");

    raise_at = 5;
    raise_sig = sig;
    cr_assert_neq(train(&b, &mb, &o, &res, &err), 0, "the run went on after the signal");
    raise_at = -1;
    cr_expect_eq(res.interrupted, sig);
    cr_expect_eq(bertc_train_stop_signal(), sig);
    cr_expect_eq(res.steps_done, 6);
    cr_expect_eq(batches_made, 6, "%d steps ran", batches_made);
    cr_expect(strstr(err.msg, sig == SIGINT ? "stopped by SIGINT after step 6 of 12"
                                            : "stopped by SIGTERM after step 6 of 12") &&
                  strstr(err.msg, path) && strstr(err.msg, "--resume"), "%s", err.msg);
    bertc_arena_destroy(b);
    /* after a stop the handler stays, so a second signal cannot kill the
     * program on its way to exit(128 + sig); after a run that ends normally
     * the default action is back (checked above) */
    sigaction(sig, NULL, &now);
    cr_expect(now.sa_handler != SIG_DFL, "a second signal would kill the stopped program");

    o.resume = true;
    cr_assert_eq(train(&b, &mb, &o, &res, &err), 0, "%s", err.msg);
    cr_expect_eq(batches_made, 6, "the resumed run made %d batches, not the last 6",
                 batches_made);
    test_expect_same_weights(ma.reg, mb.reg, "after the stop and resume");
    bertc_arena_destroy(a);
    bertc_arena_destroy(b);
    remove(path);
}

Test(train_resume, sigint_finishes_the_step_saves_and_resumes_exactly)
{
    signal_stops_after_the_step(SIGINT);
}

Test(train_resume, sigterm_finishes_the_step_saves_and_resumes_exactly)
{
    signal_stops_after_the_step(SIGTERM);
}

Test(train_resume, an_unwritable_checkpoint_path_fails_before_the_first_step)
{
    char file[128], under[200];
    snprintf(file, sizeof file, "/tmp/bertc_resume_file_%d", (int)getpid());
    FILE *f = fopen(file, "w");
    fclose(f);
    snprintf(under, sizeof under, "%s/ckpt/checkpoint.safetensors", file);
    Arena *a;
    Model m;
    TrainResult res;
    BertcError err = {{0}};
    TrainOptions o = options();
    o.checkpoint = under;
    cr_expect_neq(train(&a, &m, &o, &res, &err), 0);
    cr_expect_eq(batches_made, 0, "%d steps ran before the path was found bad", batches_made);
    cr_expect(strstr(err.msg, file) && !strchr(err.msg, '\n'), "%s", err.msg);
    bertc_arena_destroy(a);
    cr_expect_neq(bertc_train_check_out_dir(file, &err), 0, "a regular file taken as --out");
    cr_expect(strstr(err.msg, file), "%s", err.msg);
    /* a directory where the checkpoint should be */
    char dir[128];
    snprintf(dir, sizeof dir, "/tmp/bertc_resume_dir_%d", (int)getpid());
    cr_assert_eq(bertc_train_make_dirs(dir, &err), 0, "%s", err.msg);
    o.checkpoint = dir;
    cr_expect_neq(train(&a, &m, &o, &res, &err), 0);
    cr_expect_eq(batches_made, 0);
    cr_expect(strstr(err.msg, "not a regular file (a directory)"), "%s", err.msg);
    bertc_arena_destroy(a);
    rmdir(dir);
    remove(file);
}

Test(train_resume, options_out_of_range_are_refused)
{
    TrainOptions bad[5];
    const char *says[5] = {"learning rate is nan", "learning rate is -0.001", "warmup is 2",
                           "batch size is 2097152", "steps is 0"};
    for (int i = 0; i < 5; i++) {
        bad[i] = options();
        bad[i].checkpoint = NULL;
    }
    bad[0].lr = NAN;
    bad[1].lr = -1e-3;
    bad[2].warmup = 2;
    bad[3].batch_size = 2 * TRAIN_MAX_BATCH;
    bad[4].steps = 0;
    for (int i = 0; i < 5; i++) {
        Arena *a;
        Model m;
        TrainResult res;
        BertcError err = {{0}};
        cr_expect_neq(train(&a, &m, &bad[i], &res, &err), 0, "case %d ran", i);
        cr_expect(strstr(err.msg, says[i]), "\"%s\" does not say \"%s\"", err.msg, says[i]);
        bertc_arena_destroy(a);
    }
}

/* ---- strict numeric flags ---------------------------------------------- */

static void expect_flag_refused(const char *flag, const char *value, const char *says)
{
    TrainOptions o = bertc_train_defaults();
    char *argv[] = {"prog", (char *)flag, (char *)value};
    BertcError err = {{0}};
    cr_expect_neq(bertc_train_parse_flags(3, argv, &o, NULL, &err), 0, "%s '%s' was accepted", flag,
                  value);
    char want[200];
    snprintf(want, sizeof want, "%s %s", flag, says);
    cr_expect(strstr(err.msg, want) && strstr(err.msg, value), "%s '%s': \"%s\"", flag, value,
              err.msg);
}

Test(train_flags, numbers_are_parsed_strictly)
{
    const char *bad_lr[] = {"nan", "inf", "-inf", "1e999", "0", "-1e-3", "1e-3x", " 1e-3",
                            "+1e-3", "", "0x", "1e-3 "};
    for (size_t i = 0; i < sizeof bad_lr / sizeof bad_lr[0]; i++)
        expect_flag_refused("--lr", bad_lr[i], "needs a finite number > 0");
    const char *bad_seed[] = {"-1", "+5", " 5", "5 ", "18446744073709551616", "1e3", "12abc",
                              "", "0x10", "99999999999999999999999"};
    for (size_t i = 0; i < sizeof bad_seed / sizeof bad_seed[0]; i++)
        expect_flag_refused("--seed", bad_seed[i], "needs a whole number from 0 to "
                                                   "18446744073709551615");
    const char *counts[] = {"--steps", "--batch-size", "--eval-every", "--checkpoint-every"};
    const char *bad_count[] = {"-1", "1.5", "10x", "+3", " 3", "", "9223372036854775808",
                               "2000000000"};
    for (size_t f = 0; f < 4; f++)
        for (size_t i = 0; i < sizeof bad_count / sizeof bad_count[0]; i++)
            expect_flag_refused(counts[f], bad_count[i], "needs a whole number from");
    expect_flag_refused("--steps", "0", "needs a whole number from 1 to 1000000000");
    expect_flag_refused("--batch-size", "0", "needs a whole number from 1 to 1048576");
    expect_flag_refused("--batch-size", "1048577", "needs a whole number from 1 to 1048576");

    TrainOptions o = bertc_train_defaults();
    char *good[] = {"prog", "--seed", "18446744073709551615", "--lr", "5e-4", "--steps",
                    "1000000000", "--batch-size", "1048576", "--eval-every", "0",
                    "--checkpoint-every", "7"};
    BertcError err = {{0}};
    cr_assert_eq(bertc_train_parse_flags(13, good, &o, NULL, &err), 0, "%s", err.msg);
    cr_expect(o.seed == UINT64_MAX && o.lr == 5e-4 && o.steps == 1000000000 &&
              o.batch_size == 1048576 && o.checkpoint_every == 7);
}

Test(train_flags, the_parsers)
{
    int64_t i = 7;
    uint64_t u = 7;
    double d = 7;
    cr_expect(bertc_parse_i64("-9223372036854775808", INT64_MIN, INT64_MAX, &i) &&
              i == INT64_MIN);
    cr_expect(!bertc_parse_i64("9223372036854775808", INT64_MIN, INT64_MAX, &i));
    cr_expect(!bertc_parse_i64("-0x1", INT64_MIN, INT64_MAX, &i) && i == INT64_MIN);
    cr_expect(!bertc_parse_i64("-", INT64_MIN, INT64_MAX, &i));
    cr_expect(bertc_parse_i64("007", 0, 10, &i) && i == 7);
    cr_expect(!bertc_parse_i64("11", 0, 10, &i) && i == 7);
    cr_expect(bertc_parse_u64("18446744073709551615", &u) && u == UINT64_MAX);
    cr_expect(!bertc_parse_u64("-0", &u) && !bertc_parse_u64(NULL, &u));
    cr_expect(bertc_parse_f64(".5", &d) && d == 0.5);
    cr_expect(bertc_parse_f64("1e-400", &d) && d == 0, "underflow to 0 is a number");
    cr_expect(bertc_parse_f64("1e-310", &d) && d > 0 && d < DBL_MIN,
              "a subnormal result (strtod's ERANGE) is a number");
    cr_expect(bertc_parse_f64("-4.9e-324", &d) && d < 0, "the smallest subnormal");
    cr_expect(!bertc_parse_f64("1e309", &d) && !bertc_parse_f64("-1e400", &d), "overflow");
    cr_expect(!bertc_parse_f64("nan", &d) && !bertc_parse_f64("Infinity", &d) &&
              !bertc_parse_f64("\t1", &d) && !bertc_parse_f64("1\n", &d));
}

Test(train_flags, bertc_init_seed_is_strict)
{
    const char *bad[] = {"-1", "+1", "18446744073709551616", "1x", "' 1'", "''"};
    char cmd[1024], out[4096], weights[128];
    snprintf(weights, sizeof weights, "/tmp/bertc_init_%d.safetensors", (int)getpid());
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(cmd, sizeof cmd, "%s init --config test/data/zoo/bert_model/config.json "
                 "--output %s --seed %s", BERTC_CLI, weights, bad[i]);
        cr_expect_eq(test_shell(cmd, TEST_STDOUT_AND_STDERR, out, sizeof out), 2,
                     "--seed %s accepted: %s", bad[i], out);
        cr_expect(strstr(out, "--seed needs a whole number from 0 to 18446744073709551615") &&
                  strchr(out, '\n') == out + strlen(out) - 1, "--seed %s: \"%s\"", bad[i], out);
        cr_expect_neq(access(weights, F_OK), 0, "--seed %s wrote weights", bad[i]);
    }
    snprintf(cmd, sizeof cmd, "%s init --config test/data/zoo/bert_model/config.json "
             "--output %s --seed 18446744073709551615", BERTC_CLI, weights);
    cr_expect_eq(test_shell(cmd, TEST_STDOUT_AND_STDERR, out, sizeof out), 0, "%s", out);
    remove(weights);
}

/* ---- a real signal to a real example ----------------------------------- */

static void run_topics(const char *out, const char *extra)
{
    cr_assert_eq(test_topics_run((TestTopics){.out = out, .steps = 24, .checkpoint_every = 3,
                                              .extra = extra}),
                 0, "topics %s failed", extra);
}

/* Starts topics into dir b, sends sig (twice: the second lands while the
 * first is being handled) once its first checkpoint exists; returns the
 * exit status and the child's stderr in log. */
static int stop_topics(const char *b, int sig, char *log, size_t len)
{
    char logpath[300];
    snprintf(logpath, sizeof logpath, "%s.log", b);
    pid_t pid = test_topics_start(
        (TestTopics){.out = b, .steps = 24, .checkpoint_every = 3, .log = logpath});
    struct timespec pause = {0, 2000000};   /* 2 ms */
    kill(pid, sig);
    nanosleep(&pause, NULL);
    kill(pid, sig);
    int status;
    waitpid(pid, &status, 0);
    test_read_text(logpath, log, len);
    remove(logpath);
    cr_assert(WIFEXITED(status), "the example died of signal %d instead of saving",
              WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    return WEXITSTATUS(status);
}

Test(train_signals, sigint_to_an_example_exits_130_and_resume_is_exact, .timeout = 300)
{
    char a[128], b[128], model_a[200], model_b[200], log[4096];
    snprintf(a, sizeof a, "/tmp/bertc_sig_%d_a", (int)getpid());
    snprintf(b, sizeof b, "/tmp/bertc_sig_%d_b", (int)getpid());
    snprintf(model_a, sizeof model_a, "%s/model.safetensors", a);
    snprintf(model_b, sizeof model_b, "%s/model.safetensors", b);
    run_topics(a, "");
    int code = stop_topics(b, SIGINT, log, sizeof log);
    cr_assert_eq(code, 130, "exit status %d after SIGINT: %s", code, log);
    cr_expect(strstr(log, "stopped by SIGINT after step") && strstr(log, "--resume"), "%s", log);
    cr_assert_neq(access(model_b, F_OK), 0, "the stopped run went on to save its model");
    run_topics(b, "--resume");
    cr_assert(test_same_file(model_a, model_b), "the resumed run's weights differ from the "
              "uninterrupted run's");
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s %s", a, b);
    cr_assert_eq(system(cmd), 0);
}

Test(train_signals, sigterm_to_an_example_exits_143_with_a_checkpoint, .timeout = 300)
{
    char b[128], log[4096], ckpt[200];
    snprintf(b, sizeof b, "/tmp/bertc_sig_%d_t", (int)getpid());
    snprintf(ckpt, sizeof ckpt, "%s/checkpoint.safetensors", b);
    int code = stop_topics(b, SIGTERM, log, sizeof log);
    cr_assert_eq(code, 143, "exit status %d after SIGTERM: %s", code, log);
    cr_expect(strstr(log, "stopped by SIGTERM after step"), "%s", log);
    SafeTensors *st;
    BertcError err;
    cr_assert_eq(bertc_st_open_file(NULL, ckpt, &st, &err), 0, "%s", err.msg);
    bertc_st_close(st);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", b);
    cr_assert_eq(system(cmd), 0);
}

Test(train_signals, an_unwritable_out_fails_before_the_data_is_read)
{
    char file[128], cmd[1024], out[4096];
    snprintf(file, sizeof file, "/tmp/bertc_out_file_%d", (int)getpid());
    FILE *f = fopen(file, "w");
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s/topics --steps 2 --out %s/sub --quiet", BERTC_EXAMPLES_DIR,
             file);
    cr_expect_eq(test_shell(cmd, TEST_STDOUT_AND_STDERR, out, sizeof out), 1, "%s", out);
    cr_expect(strstr(out, file) && !strstr(out, "bertc demo:"), "%s", out);
    remove(file);
}
