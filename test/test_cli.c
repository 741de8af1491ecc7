/* test/test_cli.c — the `bertc` command as a user runs it: tokenize,
 * attention on every architecture, `bertc train` from another directory, and
 * one-line errors with a non-zero exit that name the file and the fix. */
#include "test/test_util.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char out_dir[256];

static void setup(void)
{
    snprintf(out_dir, sizeof out_dir, "/tmp/bertc_cli_%d", (int)getpid());
    char cmd[300];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", out_dir);
    cr_assert_eq(system(cmd), 0);
}

static void teardown(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", out_dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(cli, .init = setup, .fini = teardown);

/* Runs the shell command CMD, stdout+stderr into out_dir/log; returns the
 * exit code and leaves the log in *text (static buffer). */
static int run_logged(const char *cmd, const char **text)
{
    static char log[16384];
    char full[8192], path[300];
    snprintf(path, sizeof path, "%s/log", out_dir);
    snprintf(full, sizeof full, "%s > %s 2>&1", cmd, path);
    int status = system(full);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(log, 1, sizeof log - 1, f) : 0;
    if (f)
        fclose(f);
    log[n] = '\0';
    *text = log;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Runs `bertc ARGS` from the repository root, as the other tests do. */
static int bertc(const char *args, const char **text)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s %s", BERTC_CLI, args);
    return run_logged(cmd, text);
}

/* Runs `PROGRAM ARGS` (PROGRAM relative to the repository root) with
 * out_dir, outside the tree, as the working directory and BERTC_DATA_DIR
 * set to DATA_DIR, or unset when it is NULL. */
static int run_elsewhere(const char *program, const char *data_dir, const char *args,
                         const char **text)
{
    char root[1024], env[1200], cmd[4096];
    cr_assert(getcwd(root, sizeof root), "getcwd failed");
    if (data_dir)
        snprintf(env, sizeof env, "export BERTC_DATA_DIR='%s'", data_dir);
    else
        snprintf(env, sizeof env, "unset BERTC_DATA_DIR");
    snprintf(cmd, sizeof cmd, "cd %s && %s && %s/%s %s", out_dir, env, root, program, args);
    return run_logged(cmd, text);
}

Test(cli, tokenize_prints_ids)
{
    const char *log;
    int rc = bertc("tokenize --vocab data/bert-base-uncased-vocab.txt 'Hello, world!'", &log);
    cr_assert_eq(rc, 0, "%s", log);
    cr_assert(strstr(log, "101") && strstr(log, "7592") && strstr(log, "2088") &&
              strstr(log, "102"), "ids of [CLS] hello world [SEP] missing:\n%s", log);
}

/* A tiny vocabulary whose ids fit every fixture model (vocab 90 and up). */
static void write_tiny_vocab(char *path, size_t len)
{
    static const char *const tokens[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the",
                                         "cat", "sat", "on", "mat", "a", "dog", ".", "ran"};
    snprintf(path, len, "%s/vocab.txt", out_dir);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    for (size_t i = 0; i < sizeof tokens / sizeof tokens[0]; i++)
        fprintf(f, "%s\n", tokens[i]);
    fclose(f);
}

static void draw(const char *fixture, const char *extra)
{
    char vocab[300], args[2048], svg[400];
    write_tiny_vocab(vocab, sizeof vocab);
    snprintf(svg, sizeof svg, "%s/%s.svg", out_dir, fixture);
    snprintf(args, sizeof args,
             "attention --config test/data/zoo/%s/config.json --weights "
             "test/data/zoo/%s/weights.safetensors --vocab %s --output %s %s "
             "'the cat sat on the mat.' 'a dog ran.'", fixture, fixture, vocab, svg, extra);
    const char *log;
    int rc = bertc(args, &log);
    cr_assert_eq(rc, 0, "%s: %s", fixture, log);
    FILE *f = fopen(svg, "r");
    cr_assert(f, "%s: no %s", fixture, svg);
    char head[8] = "";
    cr_assert(fread(head, 1, 4, f) == 4 && strncmp(head, "<svg", 4) == 0, "%s: not an SVG",
              fixture);
    fclose(f);
}

Test(cli, attention_on_every_architecture)
{
    draw("bert_seqcls_single", "");
    draw("bert_mlm", "--layer 0");
    draw("cgbert_gate", "--context 3");
    draw("qacgbert_gate", "--map quasi_attention_prob");
    draw("bertsum_a", "");
    draw("qaconv_given", "");
    draw("spanbert_a", "");
}

Test(cli, errors_are_one_line_and_non_zero)
{
    const char *log;
    cr_assert_eq(bertc("run --config test/data/zoo/bert_model/config.json --weights "
                       "/nonexistent.safetensors --inputs x --output y", &log), 1);
    cr_assert(strstr(log, "/nonexistent.safetensors") && !strchr(strchr(log, '\n') + 1, '\n'),
              "not one line naming the file: %s", log);
    cr_assert_eq(bertc("frobnicate", &log), 2);
    cr_assert(strstr(log, "unknown command 'frobnicate'"), "%s", log);
    cr_assert_eq(bertc("train no-such-example", &log), 2);
    cr_assert(strstr(log, "no example 'no-such-example'"), "%s", log);
    cr_assert_neq(bertc("summary --config test/data/bad/truncated.safetensors", &log), 0);
}

/* `bertc train` finds the example's data next to the binary (here the source
 * tree above BUILD), whatever the working directory. */
Test(cli, train_runs_from_another_directory)
{
    const char *log;
    char args[512], model[400];
    snprintf(args, sizeof args, "train topics --steps 2 --eval-every 1 --out %s/t --quiet",
             out_dir);
    int rc = run_elsewhere(BERTC_CLI, NULL, args, &log);
    cr_assert_eq(rc, 0, "bertc train topics from %s: rc %d: %s", out_dir, rc, log);
    snprintf(model, sizeof model, "%s/t/model.safetensors", out_dir);
    cr_assert_eq(access(model, R_OK), 0, "no %s after bertc train: %s", model, log);
}

/* A missing data file: the error names the full path tried and the fix,
 * both for an example run directly from elsewhere and for a user's
 * BERTC_DATA_DIR (which bertc train must not override). */
Test(cli, missing_data_names_the_path)
{
    const char *log;
    char root[1024], cwd[1024], tried[1200], args[512];
    cr_assert(getcwd(root, sizeof root) && chdir(out_dir) == 0 && getcwd(cwd, sizeof cwd) &&
              chdir(root) == 0, "cannot resolve %s", out_dir);   /* as the example's getcwd */
    snprintf(args, sizeof args, "--steps 2 --out %s/t --quiet", out_dir);
    cr_assert_eq(run_elsewhere(BERTC_EXAMPLES_DIR "/topics", NULL, args, &log), 1, "%s", log);
    snprintf(tried, sizeof tried, "%s/data/bert-base-uncased-vocab.txt: cannot open", cwd);
    cr_assert(strstr(log, tried) && strstr(log, "BERTC_DATA_DIR") &&
              strstr(log, "repository root"), "expected '%s' and the fix, got: %s", tried, log);

    snprintf(args, sizeof args, "train topics --steps 2 --out %s/t --quiet", out_dir);
    cr_assert_eq(run_elsewhere(BERTC_CLI, "/nonexistent", args, &log), 1, "%s", log);
    cr_assert(strstr(log, "/nonexistent/data/bert-base-uncased-vocab.txt: cannot open") &&
              strstr(log, "BERTC_DATA_DIR=/nonexistent"), "user's BERTC_DATA_DIR: %s", log);
}
