/* test/test_examples.c — every example program runs to completion with a
 * couple of steps (a smoke test: the full runs and their metrics are in
 * docs/examples.md) and leaves its checkpoint in --out. */
#include "test/test_util.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_EXAMPLES 32

ParameterizedTestParameters(examples, smoke)
{
    TestName *list;
    size_t n = test_list_dir(BERTC_EXAMPLES_DIR, MAX_EXAMPLES, &list);
    return cr_make_param_array(TestName, list, n);
}

ParameterizedTest(TestName *ex, examples, smoke, .timeout = 300)
{
    char out[512], cmd[2048], checkpoint[600];
    snprintf(out, sizeof out, "/tmp/bertc_example_%d_%s", (int)getpid(), ex->name);
    snprintf(cmd, sizeof cmd, "%s/%s --steps 2 --eval-every 1 --out %s --quiet > %s.log 2>&1",
             BERTC_EXAMPLES_DIR, ex->name, out, out);
    int status = system(cmd);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "%s exited with status %d; its output is in %s.log", ex->name,
              WIFEXITED(status) ? WEXITSTATUS(status) : -1, out);
    snprintf(checkpoint, sizeof checkpoint, "%s/checkpoint.safetensors", out);
    cr_assert_eq(access(checkpoint, F_OK), 0, "%s wrote no %s", ex->name, checkpoint);
    snprintf(cmd, sizeof cmd, "rm -rf %s %s.log", out, out);
    cr_assert_eq(system(cmd), 0);
}

/* A real kill: start the topics example, SIGKILL it once its first periodic
 * checkpoint exists (before it can finish), resume it, and compare the final
 * weights byte for byte with an uninterrupted run. */
Test(examples, killed_run_resumes_to_identical_weights, .timeout = 300)
{
    char a[256], b[256], model_a[300], model_b[300];
    snprintf(a, sizeof a, "/tmp/bertc_kill_%d_a", (int)getpid());
    snprintf(b, sizeof b, "/tmp/bertc_kill_%d_b", (int)getpid());
    snprintf(model_a, sizeof model_a, "%s/model.safetensors", a);
    snprintf(model_b, sizeof model_b, "%s/model.safetensors", b);
    cr_assert_eq(test_topics_run((TestTopics){.out = a, .steps = 30, .checkpoint_every = 5}), 0,
                 "the uninterrupted run failed");

    pid_t pid = test_topics_start((TestTopics){.out = b, .steps = 30, .checkpoint_every = 5});
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    cr_assert(WIFSIGNALED(status), "the run finished before it could be killed");
    cr_assert_neq(access(model_b, F_OK), 0, "the killed run had already saved its model");

    cr_assert_eq(test_topics_run((TestTopics){.out = b, .steps = 30, .checkpoint_every = 5,
                                              .extra = "--resume"}),
                 0, "the resumed run failed");
    cr_assert(test_same_file(model_a, model_b),
              "the resumed run's weights differ from the uninterrupted run's");
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s %s", a, b);
    cr_assert_eq(system(cmd), 0);
}

/* `env ENV PROGRAM ARGS` with stdout dropped; its stderr (one line expected)
 * into err. Returns the exit code. */
static int run_env(const char *env, const char *program, const char *args, char *err,
                   size_t cap)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "env %s %s %s", env, program, args);
    return test_shell(cmd, TEST_STDERR, err, cap);
}

ParameterizedTestParameters(examples, env_checked_like_bertc)
{
    TestName *list;
    size_t n = test_list_dir(BERTC_EXAMPLES_DIR, MAX_EXAMPLES, &list);
    return cr_make_param_array(TestName, list, n);
}

/* A bad BERTC_THREADS or BERTC_ISA stops an example before any work, with
 * the line `bertc` prints (after the program's name) and exit 2. */
ParameterizedTest(TestName *ex, examples, env_checked_like_bertc, .timeout = 60)
{
    static const char *const envs[] = {"BERTC_THREADS=0", "BERTC_THREADS=4x",
                                       "BERTC_THREADS=65", "BERTC_THREADS=-1", "BERTC_THREADS=+2",
                                       "BERTC_ISA=bogus", "BERTC_ISA=neon BERTC_THREADS=2"};
    char program[600], want[1400], got[1400], cli[600], args[600];
    snprintf(program, sizeof program, "%s/%s", BERTC_EXAMPLES_DIR, ex->name);
    snprintf(args, sizeof args, "--steps 1 --out /tmp/bertc_env_%d_%s", (int)getpid(),
             ex->name);
    for (size_t i = 0; i < sizeof envs / sizeof envs[0]; i++) {
        int cli_rc = run_env(envs[i], BERTC_CLI, "summary --config x.json", cli, sizeof cli);
        cr_assert_eq(cli_rc, 2, "%s bertc: exit %d: %s", envs[i], cli_rc, cli);
        cr_assert(strncmp(cli, "bertc: ", 7) == 0, "%s", cli);
        snprintf(want, sizeof want, "%s: %s", ex->name, cli + 7);
        int rc = run_env(envs[i], program, args, got, sizeof got);
        cr_expect_eq(rc, 2, "%s %s: exit %d (bertc exits 2): %s", envs[i], ex->name, rc, got);
        cr_expect_str_eq(got, want, "%s %s: the example and bertc disagree", envs[i],
                         ex->name);
    }
}

/* make demo's output is a model directory a user runs as it is (issue #29:
 * it lacked vocab.txt and its labels came out LABEL_0): bertc predict
 * --model on it prints one of the topic names. */
Test(examples, the_demo_writes_a_model_directory_predict_runs, .timeout = 300)
{
    char out[256], cmd[1024], text[4096];
    snprintf(out, sizeof out, "/tmp/bertc_demo_dir_%d", (int)getpid());
    cr_assert_eq(test_topics_run((TestTopics){.out = out, .steps = 20, .checkpoint_every = 10}),
                 0, "the topics example failed");
    snprintf(cmd, sizeof cmd, "%s predict --model %s 'the court ruled on the appeal'", BERTC_CLI,
             out);
    cr_assert_eq(test_shell(cmd, TEST_STDOUT_AND_STDERR, text, sizeof text), 0, "%s", text);
    cr_expect(strncmp(text, "computers\t", 10) == 0 || strncmp(text, "food\t", 5) == 0 ||
                  strncmp(text, "law\t", 4) == 0 || strncmp(text, "science\t", 8) == 0,
              "predict on the demo's directory: %s", text);
    snprintf(cmd, sizeof cmd, "rm -rf %s", out);
    cr_assert_eq(system(cmd), 0);
}
