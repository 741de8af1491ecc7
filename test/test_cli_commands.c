/* test/test_cli_commands.c — the discoverable `bertc` (issue #15) as a user
 * drives it: `bertc help [CMD]` and `CMD --help` for every command (every
 * option and default of its table), --version, the nearest command for a
 * typo, --flag=value on every command, --model DIR, `bertc show` against
 * numbers known by construction, and `bertc encode` then `bertc run` on every
 * fixture architecture against the same text run in this process. */
#include "cli/cli.h"
#include "test/test_util.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[256];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/bertc_cli_cmds_%d", (int)getpid());
    char cmd[300];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", dir);
    cr_assert_eq(system(cmd), 0);
}

static void teardown(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(cli_commands, .init = setup, .fini = teardown);

/* `bertc ARGS` from the repository root: exit code, stdout+stderr in *log
 * (or, with capture TEST_STDERR, stderr only). */
static int bertc_capture(const char *args, TestCapture capture, const char **log)
{
    static char text[65536];
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "%s %s", BERTC_CLI, args);
    *log = text;
    return test_shell(cmd, capture, text, sizeof text);
}

static int bertc(const char *args, const char **log)
{
    return bertc_capture(args, TEST_STDOUT_AND_STDERR, log);
}

/* `bertc ARGS` with stdout alone into *out (malloc'd); returns the exit code. */
static int bertc_stdout(const char *args, char **out)
{
    char cmd[4096], path[300];
    snprintf(path, sizeof path, "%s/stdout", dir);
    snprintf(cmd, sizeof cmd, "%s %s > %s 2>/dev/null", BERTC_CLI, args, path);
    int status = system(cmd);
    *out = calloc(1, 65536);
    test_read_text(path, *out, 65536);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static bool one_line(const char *log)
{
    const char *nl = strchr(log, '\n');
    return nl && !nl[1];
}

static const CliCommand *const tables[] = {
    &cli_cmd_run, &cli_cmd_init, &cli_cmd_summary, &cli_cmd_tokenize, &cli_cmd_attention,
    &cli_cmd_show, &cli_cmd_encode, &cli_cmd_finetune,
};
#define N_TABLES (sizeof tables / sizeof tables[0])

/* `bertc CMD --help` prints every option of CMD's table with its default and
 * the example, on stdout with exit 0; `bertc help CMD` prints the same. */
Test(cli_commands, help_of_every_command_lists_its_options)
{
    for (size_t i = 0; i < N_TABLES; i++) {
        const CliCommand *c = tables[i];
        char args[128], *help, *via_help;
        snprintf(args, sizeof args, "%s --help", c->name);
        cr_assert_eq(bertc_stdout(args, &help), 0, "bertc %s", args);
        snprintf(args, sizeof args, "help %s", c->name);
        cr_assert_eq(bertc_stdout(args, &via_help), 0, "bertc %s", args);
        cr_expect_str_eq(help, via_help, "bertc help %s differs from bertc %s --help", c->name,
                         c->name);
        char usage[64];
        snprintf(usage, sizeof usage, "usage: bertc %s ", c->name);
        cr_expect(strstr(help, usage) && strstr(help, "example:") && strstr(help, c->example),
                  "%s --help lacks its usage or example:\n%s", c->name, help);
        for (int k = 0; k < c->n_options; k++) {
            const CliOption *o = &c->options[k];
            char def[128];
            snprintf(def, sizeof def, "[default: %s]", o->def ? o->def : "");
            cr_expect(strstr(help, o->name) && (!o->def || strstr(help, def)),
                      "bertc %s --help lacks %s or its default %s:\n%s", c->name, o->name,
                      o->def ? o->def : "-", help);
        }
        free(help);
        free(via_help);
    }
}

/* `bertc help`, `bertc --help` and `bertc -h` list every command with its
 * summary, on stdout, exit 0; `bertc train --help` its flags and the examples. */
Test(cli_commands, help_lists_every_command)
{
    char *list, *other;
    cr_assert_eq(bertc_stdout("help", &list), 0);
    for (size_t i = 0; i < N_TABLES; i++)
        cr_expect(strstr(list, tables[i]->name) && strstr(list, tables[i]->summary),
                  "bertc help lacks %s:\n%s", tables[i]->name, list);
    cr_expect(strstr(list, "  train ") && strstr(list, "  version "), "%s", list);
    cr_assert_eq(bertc_stdout("--help", &other), 0);
    cr_expect_str_eq(list, other);
    free(other);
    cr_assert_eq(bertc_stdout("-h", &other), 0);
    cr_expect_str_eq(list, other);
    free(other);
    free(list);
    cr_assert_eq(bertc_stdout("train --help", &list), 0);
    cr_expect(strstr(list, "--steps N") && strstr(list, "--resume") && strstr(list, "--out DIR") &&
              strstr(list, " topics") && strstr(list, " spanbert"), "%s", list);
    cr_assert_eq(bertc_stdout("help train", &other), 0);
    cr_expect_str_eq(list, other);
    free(other);
    free(list);
}

Test(cli_commands, version_names_the_version_and_the_simd_paths)
{
    char *a, *b, want[64];
    cr_assert_eq(bertc_stdout("--version", &a), 0);
    cr_assert_eq(bertc_stdout("version", &b), 0);
    cr_expect_str_eq(a, b);
    snprintf(want, sizeof want, "bertc %s (SIMD path: ", BERTC_VERSION);
    cr_expect(strstr(a, want) && one_line(a), "%s", a);
    bool named = false;
    for (int isa = ISA_SCALAR; isa < ISA_COUNT; isa++)
        named |= strstr(a, bertc_cpu_isa_name((CpuIsa)isa)) != NULL;
    cr_expect(named, "no SIMD path in: %s", a);
    /* The child's own detection: under valgrind this process sees no VNNI
     * while the untraced child does, so any path's name counts. */
    bool int8_named = false;
    for (int isa = QGEMM_ISA_SCALAR; isa < QGEMM_ISA_COUNT; isa++) {
        snprintf(want, sizeof want, "int8 path: %s,", bertc_qgemm_isa_name((QgemmIsa)isa));
        int8_named |= strstr(a, want) != NULL;
    }
    cr_expect(int8_named, "no int8 path in: %s", a);
    bool bf16_named = false;
    for (int isa = BGEMM_ISA_SCALAR; isa < BGEMM_ISA_COUNT; isa++) {
        snprintf(want, sizeof want, "bf16 path: %s)", bertc_bgemm_isa_name((BgemmIsa)isa));
        bf16_named |= strstr(a, want) != NULL;
    }
    cr_expect(bf16_named, "no bf16 path in: %s", a);
    free(a);
    free(b);
}

/* A typo names the nearest command, on one line, exit 2. */
Test(cli_commands, unknown_command_names_the_nearest)
{
    static const char *const typed[][2] = {
        {"tokenise", "tokenize"}, {"shwo", "show"}, {"encoed", "encode"}, {"hlep", "help"},
        {"summery", "summary"}, {"atention", "attention"},
    };
    for (size_t i = 0; i < sizeof typed / sizeof typed[0]; i++) {
        const char *log;
        char want[96];
        cr_expect_eq(bertc(typed[i][0], &log), 2, "%s", log);
        snprintf(want, sizeof want, "unknown command '%s' (the nearest is '%s';", typed[i][0],
                 typed[i][1]);
        cr_expect(one_line(log) && strstr(log, want), "want \"%s\", got: %s", want, log);
    }
    const char *log;
    cr_expect_eq(bertc("help frobnicate", &log), 2);
    cr_expect(one_line(log) && strstr(log, "unknown command 'frobnicate'"), "%s", log);
}

#define ZOO "test/data/zoo/"

/* The tiny vocabulary of test_cli.c: ids below every fixture's vocab_size. */
static void write_vocab(char *path, size_t len)
{
    snprintf(path, len, "%s/vocab.txt", dir);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fputs("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\ncat\nsat\non\nmat\na\ndog\n.\nran\n", f);
    fclose(f);
}

/* Each command given --flag=value does what --flag value does: the same
 * bytes written, the same text printed. */
Test(cli_commands, flag_equals_value_on_every_command)
{
    char vocab[300], args[2][2048], *out[2];
    write_vocab(vocab, sizeof vocab);
    const char *F = ZOO "bert_seqcls_single";
    for (int eq = 0; eq < 2; eq++) {
        const char *s = eq ? "=" : " ";
        snprintf(args[eq], sizeof args[eq], "run --config%s%s/config.json --weights%s%s/"
                 "weights.safetensors --inputs%s%s/inputs.safetensors --output%s%s/run%d.st "
                 "--threads%s1", s, F, s, F, s, F, s, dir, eq, s);
        cr_assert_eq(bertc_stdout(args[eq], &out[eq]), 0, "bertc %s", args[eq]);
        free(out[eq]);
        snprintf(args[eq], sizeof args[eq], "init --config%s%s/config.json --output%s%s/init%d.st "
                 "--seed%s7", s, F, s, dir, eq, s);
        cr_assert_eq(bertc_stdout(args[eq], &out[eq]), 0, "bertc %s", args[eq]);
        free(out[eq]);
        snprintf(args[eq], sizeof args[eq], "encode --config%s%s/config.json --vocab%s%s "
                 "--max-len%s6 --output%s%s/enc%d.st 'the cat sat on the mat.'", s, F, s, vocab,
                 s, s, dir, eq);
        cr_assert_eq(bertc_stdout(args[eq], &out[eq]), 0, "bertc %s", args[eq]);
        free(out[eq]);
        snprintf(args[eq], sizeof args[eq], "attention --config%s%s/config.json --weights%s%s/"
                 "weights.safetensors --vocab%s%s --layer%s0 --output%s%s/a%d.svg 'the cat'", s,
                 F, s, F, s, vocab, s, s, dir, eq);
        cr_assert_eq(bertc_stdout(args[eq], &out[eq]), 0, "bertc %s", args[eq]);
        free(out[eq]);
    }
    static const char *const same[] = {"run", "init", "enc", "a"};
    static const char *const ext[] = {"st", "st", "st", "svg"};
    for (int i = 0; i < 4; i++) {
        char a[400], b[400];
        snprintf(a, sizeof a, "%s/%s0.%s", dir, same[i], ext[i]);
        snprintf(b, sizeof b, "%s/%s1.%s", dir, same[i], ext[i]);
        cr_expect(test_same_file(a, b), "--flag=value wrote another %s than --flag value", b);
    }
    static const char *const printing[][2] = {
        {"summary --config " ZOO "bert_qa/config.json",
         "summary --config=" ZOO "bert_qa/config.json"},
        {"tokenize --vocab data/bert-base-uncased-vocab.txt --max-len 8 'Hello, world!'",
         "tokenize --vocab=data/bert-base-uncased-vocab.txt --max-len=8 'Hello, world!'"},
        {"show " ZOO "bert_qa/inputs.safetensors --values 3",
         "show " ZOO "bert_qa/inputs.safetensors --values=3"},
    };
    for (size_t i = 0; i < sizeof printing / sizeof printing[0]; i++) {
        cr_assert_eq(bertc_stdout(printing[i][0], &out[0]), 0, "%s", printing[i][0]);
        cr_assert_eq(bertc_stdout(printing[i][1], &out[1]), 0, "%s", printing[i][1]);
        cr_expect(out[0][0] && strcmp(out[0], out[1]) == 0, "%s and %s differ:\n%s\n---\n%s",
                  printing[i][0], printing[i][1], out[0], out[1]);
        free(out[0]);
        free(out[1]);
    }
}

/* Usage errors: one line naming the flag, exit 2. */
Test(cli_commands, usage_errors_name_the_flag)
{
    static const char *const cases[][2] = {
        {"run --config c.json --weights w --output o", "--inputs is required"},
        {"run --thread 2", "unknown option '--thread' (did you mean --threads?"},
        {"run --grad=yes", "--grad takes no value (got 'yes')"},
        {"run --inputs", "--inputs needs a value (I.safetensors)"},
        {"run --model m --config c.json --inputs i --output o", "--model and --config"},
        {"summary --model m --config c.json", "--model and --config"},
        {"attention --model m --weights w.st hi", "--model and --weights"},
        {"summary", "--model DIR or --config C.json is required"},
        {"encode --config c.json --output o.st", "--vocab is required with --config"},
        {"encode --config c.json --vocab v.txt", "--output is required"},
        {"show", "FILE.safetensors is required"},
        {"show a.st b.st", "unexpected argument 'b.st' (bertc show takes FILE.safetensors)"},
        {"show a.st --values -1", "--values needs a count from 0 to 2147483647, got '-1'"},
        {"init --config c.json --output o --seed=x", "--seed needs a whole number"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *log;
        cr_expect_eq(bertc(cases[i][0], &log), 2, "bertc %s: %s", cases[i][0], log);
        cr_expect(one_line(log) && strstr(log, cases[i][1]), "bertc %s: want one line with "
                  "\"%s\", got: %s", cases[i][0], cases[i][1], log);
    }
}

/* A model directory made of a fixture's files and the tiny vocabulary. */
static void make_model_dir(const char *fixture, char *md, size_t len)
{
    char vocab[300], cmd[2400];
    write_vocab(vocab, sizeof vocab);
    snprintf(md, len, "%s/%s", dir, fixture);
    snprintf(cmd, sizeof cmd, "mkdir -p %s && cp " ZOO "%s/config.json %s/ && cp " ZOO
             "%s/weights.safetensors %s/model.safetensors && cp %s %s/vocab.txt", md, fixture,
             md, fixture, md, vocab, md);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
}

/* --model DIR gives what --config/--weights/--vocab give, on run, summary,
 * encode and attention. */
Test(cli_commands, model_dir_is_the_files_it_holds)
{
    char md[400], vocab[300], args[2048], a[600], b[600];
    make_model_dir("cgbert_gate", md, sizeof md);
    write_vocab(vocab, sizeof vocab);
    const char *F = ZOO "cgbert_gate", *log;
    char *x, *y;
    snprintf(args, sizeof args, "encode --model %s --context 3 --output %s/m_in.st 'the cat' "
             "'a dog'", md, dir);
    cr_assert_eq(bertc(args, &log), 0, "%s", log);
    snprintf(args, sizeof args, "encode --config %s/config.json --vocab %s --context 3 "
             "--output %s/f_in.st 'the cat' 'a dog'", F, vocab, dir);
    cr_assert_eq(bertc(args, &log), 0, "%s", log);
    snprintf(a, sizeof a, "%s/m_in.st", dir);
    snprintf(b, sizeof b, "%s/f_in.st", dir);
    cr_expect(test_same_file(a, b), "encode --model and --config/--vocab differ");
    snprintf(args, sizeof args, "run --model %s --inputs %s --output %s/m_out.st", md, a, dir);
    cr_assert_eq(bertc(args, &log), 0, "%s", log);
    snprintf(args, sizeof args, "run --config %s/config.json --weights %s/weights.safetensors "
             "--inputs %s --output %s/f_out.st", F, F, a, dir);
    cr_assert_eq(bertc(args, &log), 0, "%s", log);
    snprintf(a, sizeof a, "%s/m_out.st", dir);
    snprintf(b, sizeof b, "%s/f_out.st", dir);
    cr_expect(test_same_file(a, b), "run --model and --config/--weights differ");
    snprintf(args, sizeof args, "summary --model %s", md);
    cr_assert_eq(bertc_stdout(args, &x), 0);
    snprintf(args, sizeof args, "summary --config %s/config.json", F);
    cr_assert_eq(bertc_stdout(args, &y), 0);
    cr_expect(strstr(x, "Total parameters") && strcmp(x, y) == 0, "%s\n---\n%s", x, y);
    free(x);
    free(y);
    snprintf(args, sizeof args, "attention --model %s --context 2 --output %s/a.svg 'the cat'",
             md, dir);
    cr_assert_eq(bertc(args, &log), 0, "%s", log);
    snprintf(args, sizeof args, "attention --model %s --output %s/model.safetensors 'the cat'",
             md, md);   /* the picture over the directory's weights */
    cr_expect_eq(bertc(args, &log), 1, "%s", log);
    cr_expect(one_line(log) && strstr(log, "is the file given to --model"), "%s", log);
    snprintf(a, sizeof a, "%s/model.safetensors", md);
    snprintf(b, sizeof b, "%s/weights.safetensors", F);
    cr_expect(test_same_file(a, b), "attention replaced %s", a);
    snprintf(args, sizeof args, "run --model %s/nowhere --inputs %s/f_in.st --output %s/o.st",
             dir, dir, dir);
    cr_expect_eq(bertc(args, &log), 1, "%s", log);
    cr_expect(one_line(log) && strstr(log, "nowhere/config.json"), "%s", log);
}

/* ---- bertc show --------------------------------------------------------- */

/* A safetensors file of known values: F32 {1, 2, NaN, inf, 3, -inf} (2, 3)
 * and I64 {-5, 2^40} (2), with one metadata key. */
static void write_known(const char *path)
{
    float f[6] = {1.0f, 2.0f, NAN, INFINITY, 3.0f, -INFINITY};
    int64_t i[2] = {-5, (int64_t)1 << 40};
    int64_t fs[2] = {2, 3}, is[1] = {2};
    StEntry e[2] = {{.name = "w", .dtype = ST_F32, .ndim = 2, .shape = fs, .f32 = f},
                    {.name = "ids", .dtype = ST_I64, .ndim = 1, .shape = is, .i64 = i}};
    StMetadata meta[1] = {{"note", "known values"}};
    BertcError err;
    cr_assert_eq(bertc_st_write_file(path, e, 2, meta, 1, &err), 0, "%s", err.msg);
}

/* The statistics are over the finite values 1, 2, 3: mean 2, population std
 * sqrt(2/3) = 0.816496581; one NaN, two infinities; integers exact. */
Test(cli_commands, show_prints_known_numbers)
{
    char path[300], args[400];
    snprintf(path, sizeof path, "%s/known.safetensors", dir);
    write_known(path);
    snprintf(args, sizeof args, "show %s", path);
    char *out;
    cr_assert_eq(bertc_stdout(args, &out), 0);
    const char *want[] = {
        "  note: known values\n",
        "w  F32 [2, 3]  (6 values)\n  first 6: 1, 2, nan, inf, 3, -inf\n"
        "  min 1  max 3  mean 2  std 0.816496581  nan 1  inf 2\n",
        "ids  I64 [2]  (2 values)\n  first 2: -5, 1099511627776\n"
        "  min -5  max 1099511627776  mean 5.49755814e+11",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_expect(strstr(out, want[i]), "bertc show lacks \"%s\":\n%s", want[i], out);
    free(out);
    snprintf(args, sizeof args, "show %s --values 1", path);
    cr_assert_eq(bertc_stdout(args, &out), 0);
    cr_expect(strstr(out, "  first 1: 1\n") && !strstr(out, "first 6"), "%s", out);
    free(out);
}

/* Raw safetensors bytes (header JSON padded to 8, then data) into path. */
static void write_raw(const char *path, const char *header, const uint8_t *data, size_t n)
{
    char padded[512];
    size_t len = strlen(header), plen = (len + 7) / 8 * 8;
    memset(padded, ' ', plen);
    memcpy(padded, header, len);
    uint8_t lenbytes[8] = {0};
    for (int i = 0; i < 8; i++)
        lenbytes[i] = (uint8_t)(plen >> (8 * i));
    FILE *f = fopen(path, "wb");
    cr_assert(f);
    fwrite(lenbytes, 1, 8, f);
    fwrite(padded, 1, plen, f);
    fwrite(data, 1, n, f);
    fclose(f);
}

/* Dtypes bertc never writes: F16 {1, -2, inf}, BF16 {1.5}, U8 {0, 255},
 * I32 {-7}. */
Test(cli_commands, show_decodes_every_dtype)
{
    char path[300], args[400], *out;
    snprintf(path, sizeof path, "%s/raw.safetensors", dir);
    const uint8_t data[] = {0x00, 0x3c, 0x00, 0xc0, 0x00, 0x7c,   /* F16 */
                            0xc0, 0x3f,                           /* BF16 1.5 */
                            0x00, 0xff,                           /* U8 */
                            0xf9, 0xff, 0xff, 0xff};              /* I32 -7 */
    write_raw(path, "{\"h\":{\"dtype\":\"F16\",\"shape\":[3],\"data_offsets\":[0,6]},"
              "\"b\":{\"dtype\":\"BF16\",\"shape\":[1],\"data_offsets\":[6,8]},"
              "\"u\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[8,10]},"
              "\"i\":{\"dtype\":\"I32\",\"shape\":[],\"data_offsets\":[10,14]}}", data,
              sizeof data);
    snprintf(args, sizeof args, "show %s", path);
    cr_assert_eq(bertc_stdout(args, &out), 0, "%s", out);
    const char *want[] = {"h  F16 [3]  (3 values)\n  first 3: 1, -2, inf\n  min -2  max 1",
                          "b  BF16 [1]  (1 values)\n  first 1: 1.5\n",
                          "u  U8 [2]  (2 values)\n  first 2: 0, 255\n  min 0  max 255",
                          "i  I32 []  (1 values)\n  first 1: -7\n"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_expect(strstr(out, want[i]), "bertc show lacks \"%s\":\n%s", want[i], out);
    free(out);
}

/* On a fixture's outputs: each F32 tensor's first value as this process
 * reads it (%.9g), and a file that is not safetensors is one line naming it. */
Test(cli_commands, show_matches_the_file_and_names_a_bad_one)
{
    const char *path = ZOO "bert_qa/expected.safetensors";
    char args[400], *out;
    snprintf(args, sizeof args, "show %s --values 1", path);
    cr_assert_eq(bertc_stdout(args, &out), 0);
    SafeTensors *st;
    BertcError err;
    cr_assert_eq(bertc_st_open_file(NULL, path, &st, &err), 0, "%s", err.msg);
    for (size_t i = 0; i < st->n_tensors; i++) {
        const StTensorInfo *t = &st->tensors[i];
        if (t->dtype != ST_F32)
            continue;
        float *x = malloc(sizeof(float) * (size_t)t->numel);
        cr_assert_eq(bertc_st_read_f32(st, t, x, (size_t)t->numel, &err), 0, "%s", err.msg);
        char want[256];
        snprintf(want, sizeof want, "%s  F32 ", t->name);
        const char *at = strstr(out, want);
        snprintf(want, sizeof want, "  first 1: %.9g\n", x[0]);
        cr_expect(at && strstr(at, want) == strchr(at, '\n') + 1, "%s: want \"%s\" in:\n%s",
                  t->name, want, at ? at : out);
        free(x);
    }
    bertc_st_close(st);
    free(out);
    const char *log;
    cr_expect_eq(bertc("show " ZOO "bert_qa/config.json", &log), 1);
    cr_expect(one_line(log) && strstr(log, "bert_qa/config.json: "), "%s", log);
}

/* ---- bertc encode -> bertc run ------------------------------------------ */

/* Every output of `got` (a bertc run file) equals the one this process
 * computes from the same text, within float rounding. */
static void expect_same_outputs(const char *fixture, const Outputs *want, const char *got)
{
    SafeTensors *st;
    BertcError err;
    cr_assert_eq(bertc_st_open_file(NULL, got, &st, &err), 0, "%s", err.msg);
    cr_expect_eq((int)st->n_tensors, want->n, "%s: %zu outputs, want %d", fixture,
                 st->n_tensors, want->n);
    for (int i = 0; i < want->n; i++) {
        const OutputItem *it = &want->items[i];
        const StTensorInfo *t = bertc_st_find(st, it->name);
        cr_assert(t, "%s: no '%s' in %s", fixture, it->name, got);
        float *x = malloc(sizeof(float) * (size_t)t->numel);
        cr_assert_eq(bertc_st_read_f32(st, t, x, (size_t)t->numel, &err), 0, "%s", err.msg);
        int64_t n = it->is_int ? it->ids.numel : it->var->value.numel;
        cr_assert_eq(t->numel, n, "%s: '%s' has %lld values, want %lld", fixture, it->name,
                     (long long)t->numel, (long long)n);
        float max = 0.0f;
        for (int64_t k = 0; !it->is_int && k < n; k++)
            max = fmaxf(max, fabsf(it->var->value.data[k]));
        for (int64_t k = 0; k < n; k++) {
            float w = it->is_int ? (float)it->ids.data[k] : it->var->value.data[k];
            cr_assert(fabsf(x[k] - w) <= 1e-4f * max + 1e-6f, "%s: '%s'[%lld] = %.9g, want %.9g",
                      fixture, it->name, (long long)k, x[k], w);
        }
        free(x);
    }
    bertc_st_close(st);
}

/* The fixture's model on the two texts, in this process. */
static void forward_here(const char *fixture, const char *vocab, Arena *arena, Graph *g,
                         Outputs *out)
{
    char config[300], weights[300];
    snprintf(config, sizeof config, ZOO "%s/config.json", fixture);
    snprintf(weights, sizeof weights, ZOO "%s/weights.safetensors", fixture);
    Model *m = bertc_arena_alloc(arena, sizeof *m);
    Tokenizer *tok = bertc_arena_alloc(arena, sizeof *tok);
    BertcError err;
    cr_assert_eq(bertc_model_open(m, arena, config, weights, &err), 0, "%s", err.msg);
    cr_assert_eq(bertc_tokenizer_load(tok, arena, vocab, &err), 0, "%s", err.msg);
    bool context = false;
    for (int i = 0; bertc_model_input(m->arch, i); i++)
        context |= strcmp(bertc_model_input(m->arch, i)->name, "context_ids") == 0;
    TextExample ex = {.text = "the cat sat on the mat.", .text_pair = "a dog ran.",
                      .context_id = context ? 0 : -1};
    Batch b;
    bertc_batch_init(&b, "text");
    bertc_ag_set_training(g, false);
    bertc_ag_set_no_grad(g, true);
    bertc_outputs_init(out);
    cr_assert_eq(bertc_model_batch_from_text(m, tok, &ex, 1, 0, g, &b, &err), 0, "%s: %s",
                 fixture, err.msg);
    cr_assert_eq(bertc_model_forward(m, g, &b, out, &err), 0, "%s: %s", fixture, err.msg);
}

Test(cli_commands, encode_then_run_on_every_fixture_architecture, .timeout = 120)
{
    char vocab[300];
    write_vocab(vocab, sizeof vocab);
    DIR *d = opendir(ZOO);
    cr_assert(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char args[4096], in[600], got[600];
        const char *log;
        snprintf(in, sizeof in, "%s/%s_in.st", dir, e->d_name);
        snprintf(got, sizeof got, "%s/%s_out.st", dir, e->d_name);
        snprintf(args, sizeof args, "encode --config " ZOO "%s/config.json --vocab %s --output "
                 "%s 'the cat sat on the mat.' 'a dog ran.'", e->d_name, vocab, in);
        cr_assert_eq(bertc(args, &log), 0, "%s: %s", e->d_name, log);
        snprintf(args, sizeof args, "run --config " ZOO "%s/config.json --weights " ZOO
                 "%s/weights.safetensors --inputs %s --output %s", e->d_name, e->d_name, in, got);
        cr_assert_eq(bertc(args, &log), 0, "%s: %s", e->d_name, log);
        Arena *arena = bertc_arena_create("model", 1 << 20);
        Graph *g = bertc_ag_graph_create(1 << 20, 0);
        Outputs out;
        forward_here(e->d_name, vocab, arena, g, &out);
        expect_same_outputs(e->d_name, &out, got);
        bertc_ag_graph_destroy(g);
        bertc_arena_destroy(arena);
        n++;
    }
    closedir(d);
    cr_expect_geq(n, 20, "only %d fixtures in " ZOO, n);
}

/* --input FILE: a TAB starts the pair; a line longer than --max-len is
 * truncated, with one warning line for the run naming FILE:LINE of the
 * first; a short one gets none; an
 * empty line is an error naming it. */
Test(cli_commands, encode_input_file_warns_on_truncation)
{
    char vocab[300], input[300], args[2048], out[300];
    write_vocab(vocab, sizeof vocab);
    snprintf(input, sizeof input, "%s/texts.txt", dir);
    snprintf(out, sizeof out, "%s/in.st", dir);
    FILE *f = fopen(input, "w");
    cr_assert(f);
    fputs("the cat\ta dog\nthe cat sat on the mat on the mat\n", f);
    fclose(f);
    snprintf(args, sizeof args, "encode --config " ZOO "bert_seqcls_single/config.json --vocab "
             "%s --input %s --max-len 7 --output %s", vocab, input, out);
    const char *log;
    cr_assert_eq(bertc_capture(args, TEST_STDERR, &log), 0, "%s", log);
    char want[600];
    snprintf(want, sizeof want, "bertc encode: warning: 1 of 2 texts are longer than 7 tokens "
             "and were truncated to it (the first %s:2, 11 tokens; the longest 11)", input);
    cr_expect(one_line(log) && strstr(log, want), "want only \"%s\", got: %s", want, log);
    SafeTensors *st;
    BertcError err;
    ITensor ids, types;
    Arena *arena = bertc_arena_create("t", 1 << 16);
    cr_assert_eq(bertc_st_open_file(NULL, out, &st, &err), 0, "%s", err.msg);
    cr_assert_eq(bertc_st_load_itensor(st, "input_ids", arena, &ids, &err), 0, "%s", err.msg);
    cr_assert_eq(bertc_st_load_itensor(st, "token_type_ids", arena, &types, &err), 0, "%s",
                 err.msg);
    /* [CLS] the cat [SEP] a dog [SEP] / [CLS] the cat sat on the [SEP] */
    static const int32_t want_ids[] = {2, 5, 6, 3, 10, 11, 3, 2, 5, 6, 7, 8, 5, 3};
    static const int32_t want_types[] = {0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0};
    cr_assert_eq(ids.numel, 14, "input_ids: %lld values", (long long)ids.numel);
    for (int k = 0; k < 14; k++)
        cr_expect(ids.data[k] == want_ids[k] && types.data[k] == want_types[k],
                  "[%d]: id %d type %d, want %d %d", k, ids.data[k], types.data[k], want_ids[k],
                  want_types[k]);
    bertc_st_close(st);
    bertc_arena_destroy(arena);
    f = fopen(input, "w");
    fputs("the cat\n\na dog\n", f);
    fclose(f);
    cr_expect_eq(bertc(args, &log), 1, "%s", log);
    snprintf(want, sizeof want, "%s:2: an empty line", input);
    cr_expect(one_line(log) && strstr(log, want), "%s", log);
}

/* A config of 100 layers (more than the 64 bertc used to cap them at; HF
 * sets no ceiling) is summarised, initialised, encoded for and run; one
 * whose layers could not fit in memory is one line naming
 * num_hidden_layers. */
Test(cli_commands, a_hundred_layers_summarise_init_and_run)
{
    char vocab[300], cfg[300], huge[300], args[4096];
    write_vocab(vocab, sizeof vocab);
    snprintf(cfg, sizeof cfg, "%s/deep.json", dir);
    snprintf(huge, sizeof huge, "%s/huge.json", dir);
    const char *fmt = "{\"architectures\": [\"BertForSequenceClassification\"], \"vocab_size\": "
                      "14, \"hidden_size\": 4, \"num_hidden_layers\": %ld, "
                      "\"num_attention_heads\": 1, \"intermediate_size\": 4, "
                      "\"max_position_embeddings\": 16}";
    FILE *f = fopen(cfg, "w");
    cr_assert(f);
    fprintf(f, fmt, 100L);
    fclose(f);
    f = fopen(huge, "w");
    cr_assert(f);
    fprintf(f, fmt, 2147483647L);
    fclose(f);
    const char *log;
    snprintf(args, sizeof args, "summary --config %s > %s/summary.txt && grep -q "
             "'^        (99): BertLayer' %s/summary.txt", cfg, dir, dir);
    cr_assert_eq(bertc(args, &log), 0, "no layer 99 in the summary: %s", log);
    snprintf(args, sizeof args, "init --config %s --output %s/deep.st --seed 3 && %s encode "
             "--config %s --vocab %s --max-len 6 --output %s/deep_in.st 'the cat sat' && %s run "
             "--config %s --weights %s/deep.st --inputs %s/deep_in.st --output %s/deep_out.st",
             cfg, dir, BERTC_CLI, cfg, vocab, dir, BERTC_CLI, cfg, dir, dir, dir);
    cr_assert_eq(bertc(args, &log), 0, "%s", log);
    snprintf(args, sizeof args, "summary --config %s", huge);
    cr_assert_eq(bertc(args, &log), 1, "%s", log);
    cr_expect(one_line(log) && strstr(log, "num_hidden_layers 2147483647 needs") &&
              strstr(log, "lower num_hidden_layers"), "%s", log);
}
