/* test/test_cli.c — the `bertc` command as a user runs it: tokenize,
 * attention on every architecture, `bertc train` from another directory, and
 * one-line errors with a non-zero exit that name the file and the fix. */
#include "test/test_util.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* Runs the shell command CMD; returns the exit code and leaves its
 * stdout+stderr in *text (static buffer). */
static int run_logged(const char *cmd, const char **text)
{
    static char log[16384];
    *text = log;
    return test_shell(cmd, TEST_STDOUT_AND_STDERR, log, sizeof log);
}

/* Runs `ENV bertc ARGS` (ENV: "" or variable assignments) from the
 * repository root, as the other tests do. */
static int bertc_env(const char *env, const char *args, const char **text)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s %s %s", env, BERTC_CLI, args);
    return run_logged(cmd, text);
}

static int bertc(const char *args, const char **text) { return bertc_env("", args, text); }

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

/* `bertc attention` on a fixture with the tiny vocabulary, drawing into svg:
 * flags, then the texts. Returns the exit code, the output in *log. */
static int attention(const char *fixture, const char *svg, const char *flags,
                     const char *texts, const char **log)
{
    char vocab[300], args[2048];
    write_tiny_vocab(vocab, sizeof vocab);
    snprintf(args, sizeof args,
             "attention --config test/data/zoo/%s/config.json --weights "
             "test/data/zoo/%s/weights.safetensors --vocab %s --output %s %s %s", fixture,
             fixture, vocab, svg, flags, texts);
    return bertc(args, log);
}

static void draw(const char *fixture, const char *extra)
{
    char svg[400];
    snprintf(svg, sizeof svg, "%s/%s.svg", out_dir, fixture);
    const char *log;
    int rc = attention(fixture, svg, extra, "'the cat sat on the mat.' 'a dog ran.'", &log);
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
    cr_assert(strstr(log, "unknown command 'frobnicate'") && !strchr(strchr(log, '\n') + 1, '\n'),
              "not one line: %s", log);
    char args[600];
    snprintf(args, sizeof args, "init --config examples/configs/bert-base-uncased.json "
             "--output %s/no/such/dir/w.safetensors", out_dir);
    cr_assert_eq(bertc(args, &log), 1, "%s", log);
    cr_assert(strstr(log, "no/such/dir/w.safetensors: cannot write it") &&
              !strchr(strchr(log, '\n') + 1, '\n'),
              "not one line naming the path asked for: %s", log);
    cr_assert_eq(bertc("train no-such-example", &log), 2);
    cr_assert(strstr(log, "no example 'no-such-example'"), "%s", log);
    cr_assert_neq(bertc("summary --config test/data/bad/truncated.safetensors", &log), 0);
}

/* Every float of every tensor of file `got` within 1e-4 max|ref| + 1e-6 of
 * the same tensor of `want` (float rounding of another SIMD path). */
static void expect_outputs_close(const char *want, const char *got)
{
    SafeTensors *a, *b;
    BertcError err;
    cr_assert_eq(bertc_st_open_file(NULL, want, &a, &err), 0, "%s", err.msg);
    cr_assert_eq(bertc_st_open_file(NULL, got, &b, &err), 0, "%s", err.msg);
    cr_assert_eq(a->n_tensors, b->n_tensors, "%s and %s hold different tensors", want, got);
    for (size_t i = 0; i < a->n_tensors; i++) {
        const StTensorInfo *ta = &a->tensors[i], *tb = bertc_st_find(b, ta->name);
        if (ta->dtype != ST_F32)
            continue;
        cr_assert(tb && tb->numel == ta->numel, "%s: '%s' missing or resized", got, ta->name);
        float *x = malloc(sizeof(float) * (size_t)ta->numel);
        float *y = malloc(sizeof(float) * (size_t)ta->numel);
        cr_assert_eq(bertc_st_read_f32(a, ta, x, (size_t)ta->numel, &err), 0, "%s", err.msg);
        cr_assert_eq(bertc_st_read_f32(b, tb, y, (size_t)tb->numel, &err), 0, "%s", err.msg);
        float max = 0.0f;
        for (int64_t k = 0; k < ta->numel; k++)
            max = fabsf(x[k]) > max ? fabsf(x[k]) : max;
        for (int64_t k = 0; k < ta->numel; k++)
            cr_assert(fabsf(x[k] - y[k]) <= 1e-4f * max + 1e-6f, "%s: '%s'[%lld] = %.9g, the "
                      "default path gave %.9g", got, ta->name, (long long)k, y[k], x[k]);
        free(x), free(y);
    }
    bertc_st_close(a);
    bertc_st_close(b);
}

/* SPEC §2: BERTC_ISA forces a path. `bertc run --stats` names the path it
 * ran; every path this CPU has gives the default path's outputs within float
 * rounding; a name no path has, or one the CPU lacks, is a one-line error. */
Test(cli, bertc_isa_forces_the_path)
{
    const char *F = "test/data/zoo/bert_seqcls_single", *log;
    char args[2048], want[400];
    snprintf(want, sizeof want, "%s/default.safetensors", out_dir);
    snprintf(args, sizeof args, "run --config %s/config.json --weights %s/weights.safetensors "
             "--inputs %s/inputs.safetensors --output %s --stats", F, F, F, want);
    cr_assert_eq(bertc(args, &log), 0, "%s", log);
    for (int isa = ISA_SCALAR; isa < ISA_COUNT; isa++) {
        const char *name = bertc_cpu_isa_name((CpuIsa)isa);
        char env[64], got[400], path_line[64];
        snprintf(env, sizeof env, "BERTC_ISA=%s", name);
        snprintf(got, sizeof got, "%s/%s.safetensors", out_dir, name);
        snprintf(args, sizeof args, "run --config %s/config.json --weights "
                 "%s/weights.safetensors --inputs %s/inputs.safetensors --output %s --stats",
                 F, F, F, got);
        int rc = bertc_env(env, args, &log);
        /* The child may see more of the CPU than this process (under valgrind,
         * which hides AVX-512 from the tests but not from the untraced CLI):
         * a path this process lacks may run; one it has must. */
        if (rc != 0) {
            cr_assert(!bertc_cpu_isa_supported((CpuIsa)isa) && rc == 2 && strstr(log, env) &&
                      strstr(log, "cannot run") && !strchr(strchr(log, '\n') + 1, '\n'),
                      "%s: rc %d, not the one-line refusal of a path the CPU lacks:\n%s", env,
                      rc, log);
            continue;
        }
        snprintf(path_line, sizeof path_line, "path: %s,", name);
        cr_assert(rc == 0 && strstr(log, path_line), "%s: rc %d, no '%s' in:\n%s", env, rc,
                  path_line, log);
        expect_outputs_close(want, got);
    }
    cr_assert_eq(bertc_env("BERTC_ISA=avx9000", args, &log), 2, "%s", log);
    cr_assert(strstr(log, "BERTC_ISA=avx9000") && strstr(log, "expected one of"), "%s", log);
    static const char *const bad_threads[] = {"BERTC_THREADS=abc", "BERTC_THREADS=0",
                                              "BERTC_THREADS=65"};
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(bertc_env(bad_threads[i], args, &log), 2, "%s: %s", bad_threads[i], log);
        cr_assert(strstr(log, bad_threads[i]) && strstr(log, "from 1 to 64"), "%s", log);
    }
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
    snprintf(tried, sizeof tried, "%s/data/topics.tsv: cannot open", cwd);
    cr_assert(strstr(log, tried) && strstr(log, "BERTC_DATA_DIR") &&
              strstr(log, "repository root"), "expected '%s' and the fix, got: %s", tried, log);

    snprintf(args, sizeof args, "train topics --steps 2 --out %s/t --quiet", out_dir);
    cr_assert_eq(run_elsewhere(BERTC_CLI, "/nonexistent", args, &log), 1, "%s", log);
    cr_assert(strstr(log, "/nonexistent/data/topics.tsv: cannot open") &&
              strstr(log, "BERTC_DATA_DIR=/nonexistent"), "user's BERTC_DATA_DIR: %s", log);
}

/* `bertc attention ARGS` on a fixture with the tiny vocabulary: the exit code
 * and a check that stderr is one line holding `want`. */
static void attention_fails(const char *fixture, const char *flags, int want_rc,
                            const char *want)
{
    char svg[300];
    snprintf(svg, sizeof svg, "%s/a.svg", out_dir);
    const char *log;
    int rc = attention(fixture, svg, flags, "'the cat sat on the mat.'", &log);
    cr_expect_eq(rc, want_rc, "%s %s: exit %d, want %d: %s", fixture, flags, rc, want_rc, log);
    const char *nl = strchr(log, '\n');
    cr_expect(strstr(log, want) && nl && !nl[1], "%s %s: want one line with \"%s\", got: %s",
              fixture, flags, want, log);
}

Test(cli, attention_numbers_are_strict)
{
    const char *bad[] = {"1x", "", "-1", "0x1", " 1", "+1", "2147483648", "1.0"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char flags[64], want[96];
        snprintf(flags, sizeof flags, "--layer '%s'", bad[i]);
        snprintf(want, sizeof want, "--layer needs a whole number from 0 to 2147483647, "
                 "got '%s'", bad[i]);
        attention_fails("bert_seqcls_single", flags, 2, want);
        snprintf(flags, sizeof flags, "--context '%s'", bad[i]);
        snprintf(want, sizeof want, "--context needs a whole number from 0 to 2147483647, "
                 "got '%s'", bad[i]);
        attention_fails("cgbert_gate", flags, 2, want);
    }
    attention_fails("bert_seqcls_single", "--layer 2", 1,
                    "--layer 2: BertForSequenceClassification has layers 0..1");
    attention_fails("cgbert_gate", "--context 8", 1,
                    "--context 8: CGBertForSequenceClassification needs a context id in [0, 8)");
    attention_fails("bert_seqcls_single", "--context 0", 1,
                    "--context 0: BertForSequenceClassification takes no context id");
}

/* Hidden states (B, S, H) are not drawn (a gate such as lambda_q is drawn as
 * bars: test/test_explain.c). */
Test(cli, attention_refuses_a_map_that_is_not_square)
{
    attention_fails("cgbert_gate", "--map hidden_states.0", 1,
                    "'hidden_states.0' has shape (B, S, H): bertc attention draws");
    attention_fails("cgbert_gate", "--map nonesuch", 1, "has no output 'layers.1.nonesuch'");
}

/* An argument echoed in an error keeps the error on one line: a newline in
 * it is shown as \n. */
Test(cli, errors_echo_arguments_on_one_line)
{
    attention_fails("bert_seqcls_single", "--layer '1\n2'", 2, "got '1\\n2'");
    attention_fails("bert_seqcls_single", "'--x\ny'", 2, "unknown option '--x\\ny'");
    const char *log;
    cr_expect_eq(bertc("run '--x\ny'", &log), 2);
    const char *nl = strchr(log, '\n');
    cr_expect(strstr(log, "unknown option '--x\\ny'") && nl && !nl[1], "%s", log);
    cr_expect_eq(bertc("tokenize --vocab data/bert-base-uncased-vocab.txt --max-len +5 hi", &log),
                 2);
    cr_expect(strstr(log, "--max-len needs a count from 1 to 1048576, got '+5'"), "%s", log);
    cr_expect_eq(bertc("run --threads ' 2' --config c --weights w --inputs i --output o", &log),
                 2);
    cr_expect(strstr(log, "--threads needs a count from 1 to 64, got ' 2'"), "%s", log);
    cr_expect_eq(bertc("'frob\nnicate'", &log), 2);
    nl = strchr(log, '\n');
    cr_expect(strstr(log, "unknown command 'frob\\nnicate'") && nl && !nl[1], "%s", log);
}

/* `bertc run --output W` with W the --weights file replaced the model's
 * weights with its outputs (exit 0); init over its own config and attention
 * over its weights alike. Each is refused, naming both flags, and the file
 * is left as it was (the test works on copies). */
Test(cli, output_over_an_input_is_refused)
{
    char w[300], c[300], args[2000], cmd[1000];
    const char *log;
    snprintf(w, sizeof w, "%s/w.safetensors", out_dir);
    snprintf(c, sizeof c, "%s/config.json", out_dir);
    snprintf(cmd, sizeof cmd, "cp test/data/zoo/bert_model/weights.safetensors %s && "
             "cp test/data/zoo/bert_model/config.json %s", w, c);
    cr_assert_eq(system(cmd), 0);
    snprintf(args, sizeof args, "run --config %s --weights %s --inputs "
             "test/data/zoo/bert_model/inputs.safetensors --output %s/../%s/w.safetensors", c, w,
             out_dir, strrchr(out_dir, '/') + 1);
    cr_assert_eq(bertc(args, &log), 1, "%s", log);
    cr_assert(strstr(log, "--output") && strstr(log, "is the file given to --weights") &&
              !strchr(strchr(log, '\n') + 1, '\n'), "%s", log);
    snprintf(args, sizeof args, "init --config %s --output %s", c, c);
    cr_assert_eq(bertc(args, &log), 1, "%s", log);
    cr_assert(strstr(log, "is the file given to --config"), "%s", log);
    snprintf(args, sizeof args, "attention --config %s --weights %s --vocab %s --output %s "
             "hello", c, w, w, w);
    cr_assert_eq(bertc(args, &log), 1, "%s", log);
    cr_assert(strstr(log, "is the file given to --weights"), "%s", log);
    snprintf(cmd, sizeof cmd, "cmp -s test/data/zoo/bert_model/weights.safetensors %s && "
             "cmp -s test/data/zoo/bert_model/config.json %s", w, c);
    cr_assert_eq(system(cmd), 0, "a file given as an input was changed");
}

/* A vocabulary larger than the model's vocab_size gave "sentence: 'input_ids'
 * ... >= vocab_size", naming neither file: the error now names the vocab. */
Test(cli, attention_names_the_vocab_when_ids_exceed_the_model)
{
    char vocab[300], args[2048];
    snprintf(vocab, sizeof vocab, "%s/big_vocab.txt", out_dir);
    FILE *f = fopen(vocab, "w");
    cr_assert(f);
    fprintf(f, "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n");
    for (int i = 0; i < 200; i++)
        fprintf(f, "w%d\n", i);
    fprintf(f, "hello\n");
    fclose(f);
    snprintf(args, sizeof args, "attention --config test/data/zoo/bert_model/config.json "
             "--weights test/data/zoo/bert_model/weights.safetensors --vocab %s --output "
             "%s/a.svg hello", vocab, out_dir);
    const char *log;
    cr_assert_eq(bertc(args, &log), 1, "%s", log);
    const char *nl = strchr(log, '\n');
    cr_assert(strstr(log, vocab) && strstr(log, "206 tokens") && strstr(log, "vocab_size 120") &&
                  strstr(log, "'hello' (id 205)") && nl && !nl[1],
              "not one line naming the vocab, both sizes and the token: %s", log);
}

/* A model of 1 position gave the tokenizer's "max_len 1 leaves no room for
 * the 2 special tokens", naming neither the config nor its key. */
Test(cli, attention_on_a_model_too_short_names_the_config)
{
    char config[300], weights[300], vocab[300], args[2048], cmd[1200];
    snprintf(config, sizeof config, "%s/short.json", out_dir);
    snprintf(weights, sizeof weights, "%s/short.safetensors", out_dir);
    snprintf(cmd, sizeof cmd, "sed 's/\"max_position_embeddings\": 40/"
             "\"max_position_embeddings\": 1/' test/data/zoo/bert_model/config.json > %s",
             config);
    cr_assert_eq(system(cmd), 0);
    const char *log;
    snprintf(args, sizeof args, "init --config %s --output %s", config, weights);
    cr_assert_eq(bertc(args, &log), 0, "%s", log);
    write_tiny_vocab(vocab, sizeof vocab);
    snprintf(args, sizeof args, "attention --config %s --weights %s --vocab %s --output %s/a.svg "
             "'the cat'", config, weights, vocab, out_dir);
    cr_assert_eq(bertc(args, &log), 1, "%s", log);
    const char *nl = strchr(log, '\n');
    cr_assert(strstr(log, config) && strstr(log, "max_position_embeddings 1") && nl && !nl[1],
              "not one line naming the config and key: %s", log);
}

/* True when log is exactly one line (one '\n', at its end). */
static bool one_line(const char *log)
{
    const char *nl = strchr(log, '\n');
    return nl && !nl[1];
}

/* A newline that reaches a message through a path, an environment variable
 * or an example's flag (not only through bertc's own flags) is escaped at
 * the one place every message is made (bertc_errorf), so the error stays one
 * line; `bertc train` with an unknown example lists the examples on the same
 * line. */
Test(cli, user_text_in_any_message_stays_on_one_line)
{
    const char *log;
    cr_expect_eq(bertc("summary --config '/nonexistent/a\nb.json'", &log), 1);
    cr_expect(one_line(log) && strstr(log, "a\\nb.json"), "%s", log);
    cr_expect_eq(bertc_env("BERTC_ISA='avx2\n'", "summary --config c", &log), 2);
    cr_expect(one_line(log) && strstr(log, "BERTC_ISA=avx2\\n"), "%s", log);
    cr_expect_eq(bertc("train topics --steps '1\n2' --quiet", &log), 1);
    cr_expect(one_line(log) && strstr(log, "got '1\\n2'"), "%s", log);
    cr_expect_eq(bertc("train no-such-example", &log), 2);
    cr_expect(one_line(log) && strstr(log, "(examples:") && strstr(log, "topics"), "%s", log);
    cr_expect_eq(bertc("train", &log), 2);
    cr_expect(one_line(log) && strstr(log, "usage: bertc train NAME"), "%s", log);
}
