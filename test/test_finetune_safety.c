/* test/test_finetune_safety.c — `bertc finetune` never loses a good model and
 * checks what it is given before it touches memory or files (issue 24).
 *
 * A model directory that --out already holds (or that is the --model being
 * fine-tuned in place) stays byte for byte as it was when the run ends
 * without a kept model: Ctrl-C before the first evaluation, a non-finite
 * loss after one, --stop-after. A run that ends with a kept model swaps it
 * in and keeps the directory's other files; --resume continues a staged run
 * exactly. A non-empty --out needs --force. Before anything is written:
 * a trainer_state.json that is a FIFO or a directory, a --resume with
 * another --max-len, a --max-len beyond the model's positions and --epochs
 * of too many steps are refused; a --batch-size above the data is capped
 * without growing memory; the non-finite-loss hint names a flag finetune
 * takes. */
#include "test/test_util.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define VOCAB "data/bert-base-uncased-vocab.txt"

static char dir[128], cfg[256], data[256], model[256];   /* dir + a name */

/* 72 short labelled rows and a 1-layer H = 32 config over bert-base's vocabulary. */
static void setup(void)
{
    test_scratch_make(dir, sizeof dir, "finetune_safety");
    snprintf(cfg, sizeof cfg, "%s/config.json", dir);
    snprintf(data, sizeof data, "%s/d.csv", dir);
    snprintf(model, sizeof model, "%s/model", dir);
    FILE *f = fopen(cfg, "w");
    cr_assert(f);
    fputs("{\"architectures\": [\"BertModel\"], \"vocab_size\": 30522, \"hidden_size\": 32, "
          "\"num_hidden_layers\": 1, \"num_attention_heads\": 2, \"intermediate_size\": 64, "
          "\"max_position_embeddings\": 64}\n", f);
    fclose(f);
    f = fopen(data, "w");
    cr_assert(f);
    static const char *const words[] = {"good", "bad", "great", "awful", "fine", "poor"};
    fputs("text,label\n", f);
    for (int i = 0; i < 72; i++)
        fprintf(f, "a %s film number %d,%s\n", words[i % 6], i, i % 2 ? "neg" : "pos");
    fclose(f);
}

static void teardown(void)
{
    test_scratch_remove(dir);
}

TestSuite(finetune_safety, .init = setup, .fini = teardown, .timeout = 240);

static char log_text[16384];

/* bertc finetune with the data, the flags after it; returns the exit code. */
static int finetune(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int finetune(const char *fmt, ...)
{
    char flags[2048], cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(flags, sizeof flags, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "timeout 120 %s finetune --train %s --max-len 16 --batch-size 8 "
             "--threads 2 %s", BERTC_CLI, data, flags);
    return test_shell(cmd, TEST_STDOUT_AND_STDERR, log_text, sizeof log_text);
}

/* A trained model directory at `model` (10 steps from scratch). */
static void make_model(void)
{
    int rc = finetune("--config %s --vocab " VOCAB " --out %s --steps 10 --quiet", cfg, model);
    cr_assert_eq(rc, 0, "the first model: %s", log_text);
}

/* Everything in a directory, in name order: each entry's name, kind and,
 * for a file, its bytes; two snapshots are equal when nothing changed. */
typedef struct Snapshot {
    char *bytes;
    size_t n;
} Snapshot;

static void put(Snapshot *s, const void *p, size_t n)
{
    s->bytes = realloc(s->bytes, s->n + n);
    cr_assert(s->bytes);
    memcpy(s->bytes + s->n, p, n);
    s->n += n;
}

static Snapshot snapshot(const char *path)
{
    Snapshot s = {0};
    struct dirent **names;
    int n = scandir(path, &names, NULL, alphasort);
    cr_assert_geq(n, 0, "%s: cannot list", path);
    for (int i = 0; i < n; i++) {
        char file[512];
        struct stat st;
        snprintf(file, sizeof file, "%s/%s", path, names[i]->d_name);
        cr_assert_eq(lstat(file, &st), 0);
        put(&s, names[i]->d_name, strlen(names[i]->d_name) + 1);
        char kind = S_ISREG(st.st_mode) ? 'f' : S_ISDIR(st.st_mode) ? 'd' : 'o';
        put(&s, &kind, 1);
        FILE *f = kind == 'f' ? fopen(file, "rb") : NULL;
        char buf[65536];
        for (size_t got; f && (got = fread(buf, 1, sizeof buf, f)) > 0;)
            put(&s, buf, got);
        if (f)
            fclose(f);
        free(names[i]);
    }
    free(names);
    return s;
}

static void expect_unchanged(Snapshot before, const char *path, const char *what)
{
    Snapshot after = snapshot(path);
    cr_expect(after.n == before.n && memcmp(after.bytes, before.bytes, after.n) == 0,
              "%s: %s changed (%zu bytes of names and contents before, %zu after)\n%s", what,
              path, before.n, after.n, log_text);
    free(after.bytes);
    free(before.bytes);
}

static bool exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static int count_lines(const char *text)
{
    int lines = 0;
    for (const char *c = text; *c; c++)
        lines += *c == '\n';
    return lines;
}

static void expect_in_log(const char *want)
{
    cr_expect(strstr(log_text, want), "expected '%s' in:\n%s", want, log_text);
}

/* ---- a model in --out is never lost ------------------------------------- */

/* Runs `argv` (bertc finetune ...) with its stderr in `err_log`; the child's
 * address space is capped at as_limit bytes (0: no cap). */
static pid_t spawn(char *const argv[], const char *err_log, rlim_t as_limit)
{
    pid_t pid = fork();
    cr_assert_geq(pid, 0, "fork failed");
    if (pid == 0) {
        struct rlimit lim = {as_limit, as_limit};
        if ((as_limit && setrlimit(RLIMIT_AS, &lim) != 0) || !freopen(err_log, "w", stderr) ||
            !freopen("/dev/null", "w", stdout))
            _exit(126);
        execv(argv[0], argv);
        _exit(127);
    }
    return pid;
}

/* Ctrl-C during the first steps of a run fine-tuning `model` in place (its
 * only evaluation would be at the end): the checkpoint is saved, the exit
 * status is 130, and the model directory is byte for byte what it was. */
Test(finetune_safety, a_sigint_before_the_first_evaluation_leaves_the_model_as_it_was)
{
    make_model();
    Snapshot before = snapshot(model);
    char err_log[400];
    snprintf(err_log, sizeof err_log, "%s/err.log", dir);
    char *argv[] = {BERTC_CLI, "finetune", "--model", model, "--out", model, "--train", data,
                    "--max-len", "16", "--batch-size", "8", "--steps", "4000", "--eval-every",
                    "4000", "--threads", "2", NULL};
    pid_t pid = spawn(argv, err_log, 0);
    /* the progress lines (stderr is not a terminal): one every 200 steps */
    struct timespec pause = {0, 2000000};
    for (int i = 0; i < 60000 && !strstr(log_text, "step "); i++) {
        nanosleep(&pause, NULL);
        test_read_text(err_log, log_text, sizeof log_text);
    }
    cr_assert(strstr(log_text, "step "), "no progress line in 120 s:\n%s", log_text);
    cr_assert(!strstr(log_text, "eval at"), "the run evaluated already:\n%s", log_text);
    kill(pid, SIGINT);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    test_read_text(err_log, log_text, sizeof log_text);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 130, "exit status %d:\n%s",
              WIFEXITED(status) ? WEXITSTATUS(status) : -1, log_text);
    expect_in_log("stopped by SIGINT");
    expect_in_log("is as it was (this run kept no model)");
    remove(err_log);
    expect_unchanged(before, model, "Ctrl-C before an evaluation");
}

/* A learning rate of 1e30: the evaluation after step 1 (weights still
 * finite) is the run's best, then step 2's loss is NaN and the run stops.
 * The model being fine-tuned in place, and a --force'd --out, keep theirs. */
Test(finetune_safety, a_non_finite_loss_after_an_evaluation_leaves_the_model_as_it_was)
{
    make_model();
    Snapshot before = snapshot(model);
    int rc = finetune("--model %s --out %s --steps 10 --eval-every 1 --lr 1e30", model, model);
    cr_expect_eq(rc, 1, "%s", log_text);
    expect_in_log("eval at step 1");
    expect_in_log("the loss is");
    expect_in_log("is as it was (this run kept no model)");
    expect_unchanged(before, model, "a non-finite loss");

    char out[400];
    snprintf(out, sizeof out, "%s/other", dir);
    cr_assert_eq(finetune("--config %s --vocab " VOCAB " --out %s --steps 5 --quiet", cfg, out),
                 0, "%s", log_text);
    before = snapshot(out);
    rc = finetune("--model %s --out %s --force --steps 10 --eval-every 1 --lr 1e30 --quiet",
                  model, out);
    cr_expect_eq(rc, 1, "%s", log_text);
    expect_unchanged(before, out, "a non-finite loss with --force");
}

/* The hint of a non-finite loss names --nan-policy, which finetune takes. */
Test(finetune_safety, the_nan_policy_hint_names_a_flag_finetune_takes)
{
    char out[400];
    snprintf(out, sizeof out, "%s/nan", dir);
    int rc = finetune("--config %s --vocab " VOCAB " --out %s --steps 10 --eval-every 1 "
                      "--lr 1e30 --quiet", cfg, out);
    cr_expect_eq(rc, 1, "%s", log_text);
    expect_in_log("(--nan-policy skip skips such steps)");
    rc = finetune("--config %s --vocab " VOCAB " --out %s2 --steps 10 --eval-every 1 --lr 1e30 "
                  "--quiet --nan-policy skip", cfg, out);
    cr_expect_eq(rc, 0, "--nan-policy skip: %s", log_text);
    expect_in_log("step skipped");
    cr_expect_eq(finetune("--help"), 0);
    expect_in_log("--nan-policy stop|skip");
}

/* A non-empty --out without --force: one line naming --out and --force,
 * nothing written, no staging directory. */
Test(finetune_safety, a_non_empty_out_is_refused_without_force)
{
    make_model();
    Snapshot before = snapshot(model);
    int rc = finetune("--config %s --vocab " VOCAB " --out %s --steps 5 --quiet", cfg, model);
    cr_expect_eq(rc, 1, "%s", log_text);
    expect_in_log("--out ");
    expect_in_log("exists and is not empty");
    expect_in_log("--force");
    expect_in_log("or --resume to continue the run whose checkpoint is there");
    cr_expect(strchr(log_text, '\n') == log_text + strlen(log_text) - 1, "not one line:\n%s",
              log_text);
    expect_unchanged(before, model, "a refused --out");
    char staging[300];
    snprintf(staging, sizeof staging, "%s.bertc-staging", model);
    cr_expect(!exists(staging), "%s was made", staging);
}

/* A swap cut short by a crash (the old model in model.bertc-old): no run
 * starts until one of the two models is put back. */
Test(finetune_safety, a_swap_left_half_done_is_refused)
{
    make_model();
    char old[400];
    snprintf(old, sizeof old, "%s.bertc-old", model);
    cr_assert_eq(mkdir(old, 0755), 0);
    Snapshot before = snapshot(model);
    int rc = finetune("--config %s --vocab " VOCAB " --out %s --force --steps 5 --quiet", cfg,
                      model);
    cr_expect_eq(rc, 1, "%s", log_text);
    expect_in_log("is left from a swap into --out");
    expect_unchanged(before, model, "a half-done swap");
}

/* --force with a run that ends: the new model replaces the old (another seed,
 * other weights), the directory's other files stay, and neither the
 * staging nor the old directory is left behind. */
Test(finetune_safety, force_swaps_in_a_kept_model_and_keeps_other_files)
{
    make_model();
    char readme[400], weights[400], old_weights[400], path[900];
    snprintf(readme, sizeof readme, "%s/README.md", model);
    FILE *f = fopen(readme, "w");
    cr_assert(f);
    fputs("my notes\n", f);
    fclose(f);
    snprintf(weights, sizeof weights, "%s/model.safetensors", model);
    snprintf(old_weights, sizeof old_weights, "%s/old.safetensors", dir);
    snprintf(path, sizeof path, "cp %s %s", weights, old_weights);
    cr_assert_eq(system(path), 0);
    int rc = finetune("--config %s --vocab " VOCAB " --out %s --force --steps 10 --eval-every 5 "
                      "--seed 7 --quiet", cfg, model);
    cr_assert_eq(rc, 0, "%s", log_text);
    cr_expect(!test_same_file(weights, old_weights), "the old weights are still there");
    char text[64];
    test_read_text(readme, text, sizeof text);
    cr_expect_str_eq(text, "my notes\n", "README.md was not kept");
    snprintf(path, sizeof path, "%s.bertc-staging", model);
    cr_expect(!exists(path), "%s is left", path);
    snprintf(path, sizeof path, "%s.bertc-old", model);
    cr_expect(!exists(path), "%s is left", path);
    snprintf(path, sizeof path, "%s/log.jsonl", model);
    test_read_text(path, log_text, sizeof log_text);
    cr_expect_eq(count_lines(log_text), 2, "log.jsonl holds this run's evaluations (5, 10):\n%s",
                 log_text);
}

/* --force and --stop-after: --out untouched, the run's checkpoint in the
 * staging directory; --resume finishes it there and swaps in the same
 * model as a run never stopped. */
Test(finetune_safety, a_staged_run_stopped_and_resumed_ends_as_one_never_stopped)
{
    char straight[400], a[500], b[500];
    snprintf(straight, sizeof straight, "%s/straight", dir);
    const char *flags = "--steps 40 --eval-every 10 --quiet";
    cr_assert_eq(finetune("--config %s --vocab " VOCAB " --out %s %s", cfg, straight, flags), 0,
                 "%s", log_text);
    make_model();
    Snapshot before = snapshot(model);
    int rc = finetune("--config %s --vocab " VOCAB " --out %s --force %s --stop-after 15", cfg,
                      model, flags);
    cr_assert_eq(rc, 0, "%s", log_text);
    expect_in_log("is as it was (this run kept no model)");
    expect_in_log("stopped after step 15 of 40 (--stop-after); the checkpoint in");
    expect_in_log("holds step 10: --resume continues from there");
    expect_unchanged(before, model, "--stop-after");
    rc = finetune("--config %s --vocab " VOCAB " --out %s %s --resume", cfg, model, flags);
    cr_assert_eq(rc, 0, "%s", log_text);
    expect_in_log("saved ");
    snprintf(a, sizeof a, "%s/model.safetensors", straight);
    snprintf(b, sizeof b, "%s/model.safetensors", model);
    cr_expect(test_same_file(a, b), "the resumed run kept other weights than the straight one");
    snprintf(a, sizeof a, "%s/log.jsonl", model);
    test_read_text(a, log_text, sizeof log_text);
    cr_expect_eq(count_lines(log_text), 4, "log.jsonl: the evaluations at 10, 20, 30 and 40:\n%s",
                 log_text);
}

/* ---- checked before anything is written ---------------------------------- */

/* A run stopped at step 15 of 40 in a new --out: its checkpoint is there. */
static void stopped_run(const char *out)
{
    int rc = finetune("--config %s --vocab " VOCAB " --out %s --steps 40 --eval-every 10 --quiet "
                      "--stop-after 15", cfg, out);
    cr_assert_eq(rc, 0, "%s", log_text);
}

Test(finetune_safety, a_trainer_state_that_is_not_a_file_is_refused_before_anything_is_written)
{
    char out[400], state[500];
    snprintf(out, sizeof out, "%s/run", dir);
    snprintf(state, sizeof state, "%s/trainer_state.json", out);
    stopped_run(out);
    const char *kinds[] = {"a FIFO", "a directory"};
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(remove(state), 0);
        cr_assert_eq(k == 0 ? mkfifo(state, 0644) : mkdir(state, 0755), 0);
        Snapshot before = snapshot(out);
        time_t start = time(NULL);
        int rc = finetune("--config %s --vocab " VOCAB " --out %s --steps 40 --eval-every 10 "
                          "--quiet --resume", cfg, out);
        cr_expect_eq(rc, 1, "%s: %s", kinds[k], log_text);
        cr_expect(time(NULL) - start < 60, "%s: it hung", kinds[k]);
        expect_in_log("trainer_state.json is ");
        expect_in_log(kinds[k]);
        expect_unchanged(before, out, kinds[k]);
    }
}

Test(finetune_safety, resume_with_another_max_len_is_refused)
{
    char out[400];
    snprintf(out, sizeof out, "%s/run", dir);
    stopped_run(out);
    Snapshot before = snapshot(out);
    /* finetune() gives --max-len 16; this one is the last given */
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "timeout 120 %s finetune --train %s --max-len 12 --batch-size 8 "
             "--config %s --vocab " VOCAB " --out %s --steps 40 --eval-every 10 --quiet "
             "--resume", BERTC_CLI, data, cfg, out);
    int rc = test_shell(cmd, TEST_STDOUT_AND_STDERR, log_text, sizeof log_text);
    cr_expect_eq(rc, 1, "%s", log_text);
    expect_in_log("resuming with max_len 12, but the checkpoint was made with 16");
    expect_unchanged(before, out, "--resume with another --max-len");
}

/* --max-len beyond max_position_embeddings is refused, naming both (the
 * default, 128, is lowered to the 64 positions). */
Test(finetune_safety, a_max_len_beyond_the_positions_is_refused)
{
    char cmd[2048], out[300];
    snprintf(out, sizeof out, "%s/long", dir);
    snprintf(cmd, sizeof cmd, "timeout 120 %s finetune --train %s --config %s --vocab " VOCAB
             " --out %s --steps 1 --quiet --max-len 1000000000", BERTC_CLI, data, cfg, out);
    int rc = test_shell(cmd, TEST_STDOUT_AND_STDERR, log_text, sizeof log_text);
    cr_expect_eq(rc, 1, "%s", log_text);
    expect_in_log("--max-len 1000000000 is more than the model's max_position_embeddings (64)");
    cr_expect(!exists(out), "%s was made", out);
}

Test(finetune_safety, too_many_epochs_are_reported_as_epochs)
{
    char out[400];
    snprintf(out, sizeof out, "%s/epochs", dir);
    int rc = finetune("--config %s --vocab " VOCAB " --out %s --epochs 1000000000 --quiet", cfg,
                      out);
    cr_expect_eq(rc, 1, "%s", log_text);
    expect_in_log("--epochs 1000000000 over 65 training rows in batches of 8 is more than "
                  "1000000000 steps");
    cr_expect(!exists(out), "%s was made", out);
}

/* --batch-size 1048576 on 65 training rows: batches of 65, with a note,
 * in the memory of a small run (it once grew to all free memory first). */
Test(finetune_safety, a_batch_size_above_the_data_is_capped_before_memory_grows)
{
    char out[400], err_log[300];
    snprintf(out, sizeof out, "%s/big", dir);
    snprintf(err_log, sizeof err_log, "%s/err.log", dir);
    char *argv[] = {BERTC_CLI, "finetune", "--config", cfg, "--vocab", VOCAB, "--train", data,
                    "--out", out, "--max-len", "16", "--steps", "2", "--quiet",
                    "--batch-size", "1048576", NULL};
#if defined(__SANITIZE_ADDRESS__)
    rlim_t cap = 0;   /* ASan reserves terabytes of address space for its shadow */
#else
    rlim_t cap = (rlim_t)2 << 30;
#endif
    pid_t pid = spawn(argv, err_log, cap);
    int status;
    struct rusage use;   /* of the children waited for: the one child of this test */
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert_eq(getrusage(RUSAGE_CHILDREN, &use), 0);
    test_read_text(err_log, log_text, sizeof log_text);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s", log_text);
    expect_in_log("--batch-size 1048576 is more than the 65 training rows: batches of 65");
    cr_expect_lt(use.ru_maxrss, 1L << 20, "the run grew to %ld KiB", use.ru_maxrss);
}

/* --stop-after before the first evaluation: the run says that it wrote no
 * checkpoint, rather than pointing --resume at one (issue #29). */
Test(finetune_safety, stop_after_before_the_first_checkpoint_says_so)
{
    char out[400];
    snprintf(out, sizeof out, "%s/early", dir);
    int rc = finetune("--config %s --vocab " VOCAB " --out %s --steps 40 --eval-every 10 "
                      "--stop-after 3 --quiet", cfg, out);
    cr_assert_eq(rc, 0, "%s", log_text);
    expect_in_log("stopped after step 3 of 40 (--stop-after) before the first checkpoint");
    cr_expect(!strstr(log_text, "-inf") && !strstr(log_text, "saved "),
              "reports a metric or files it did not write: %s", log_text);
}
