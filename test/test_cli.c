/* test/test_cli.c — the `bertc` command as a user runs it: tokenize,
 * attention on every architecture, and one-line errors with a non-zero exit. */
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

/* Runs `bertc ARGS`, stdout+stderr into out_dir/log; returns the exit code
 * and leaves the log in *text (static buffer). */
static int bertc(const char *args, const char **text)
{
    static char log[16384];
    char cmd[4096], path[300];
    snprintf(path, sizeof path, "%s/log", out_dir);
    snprintf(cmd, sizeof cmd, "%s %s > %s 2>&1", BERTC_CLI, args, path);
    int status = system(cmd);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(log, 1, sizeof log - 1, f) : 0;
    if (f)
        fclose(f);
    log[n] = '\0';
    *text = log;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

Test(cli, tokenize_prints_ids)
{
    const char *log;
    int rc = bertc("tokenize --vocab data/bert-base-uncased-vocab.txt 'Hello, world!'", &log);
    cr_assert_eq(rc, 0, "%s", log);
    cr_assert(strstr(log, "101") && strstr(log, "7592") && strstr(log, "2088") &&
              strstr(log, "102"), "ids of [CLS] hello world [SEP] missing:\n%s", log);
}

/* --cased keeps "Héllo" as H ##é ##llo (ids 7 9 11 of the cased test vocab,
 * offsets 0-1 1-2 2-5); without it the word is lowercased and stripped to
 * "hello" (id 6). */
Test(cli, tokenize_cased_keeps_case_and_accents)
{
    const char *log;
    int rc = bertc("tokenize --vocab test/data/tokenizer/cased-vocab.txt --cased 'Héllo'", &log);
    cr_assert_eq(rc, 0, "%s", log);
    cr_assert(strstr(log, "    1      7  H ") && strstr(log, "    2      9  ##é ") &&
              strstr(log, "    3     11  ##llo "), "H ##é ##llo (7 9 11) missing:\n%s", log);
    cr_assert(!strstr(log, "  hello "), "--cased still lowercased:\n%s", log);
    rc = bertc("tokenize --vocab test/data/tokenizer/cased-vocab.txt 'Héllo'", &log);
    cr_assert_eq(rc, 0, "%s", log);
    cr_assert(strstr(log, "    1      6  hello "), "uncased 'Héllo' should be hello (6):\n%s",
              log);
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
