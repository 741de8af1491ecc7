/* test/test_files.c — paths that name something other than a regular file (a
 * FIFO, a directory, a device) are refused with one line naming the path,
 * before anything can block on them: by every library reader and writer, by
 * every path flag of the `bertc` command and by the examples' data files and
 * checkpoints. A FIFO with no writer blocks a plain fopen forever, so each
 * test has a timeout and each command runs under `timeout 5`: a hang is a
 * failure, not a stuck test run. */
#include "test/test_util.h"
#include "zoo/pictures/svg.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static char dir[256], fifo[300], subdir[300];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/bertc_files_%d", (int)getpid());
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    snprintf(subdir, sizeof subdir, "%s/subdir", dir);
    cr_assert_eq(mkdir(dir, 0700), 0);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    cr_assert_eq(mkdir(subdir, 0700), 0);
}

static void teardown(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(files, .init = setup, .fini = teardown, .timeout = 60);

typedef struct Kind {
    const char *path, *what;
} Kind;

/* The three kinds every reader is tried on. */
static Kind kinds[3];

static void fill_kinds(void)
{
    kinds[0] = (Kind){fifo, "(a FIFO)"};
    kinds[1] = (Kind){subdir, "(a directory)"};
    kinds[2] = (Kind){"/dev/zero", "(a character device)"};
}

static void expect_refused(int rc, const BertcError *err, const Kind *k, const char *reader)
{
    cr_expect_neq(rc, 0, "%s accepted %s", reader, k->path);
    cr_expect(strstr(err->msg, k->path) && strstr(err->msg, "not a regular file") &&
                  strstr(err->msg, k->what),
              "%s on %s: want \"%s: not a regular file %s\", got \"%s\"", reader, k->path,
              k->path, k->what, err->msg);
}

Test(files, library_readers_refuse_non_regular_files, .timeout = 20)
{
    fill_kinds();
    Arena *a = bertc_arena_create("files", 1 << 16);
    BertConfig cfg;
    BertcError err;
    cr_assert_eq(bertc_bert_config_read("test/data/zoo/bert_model/config.json", &cfg, &err), 0,
                 "%s", err.msg);
    Model m;
    cr_assert_eq(bertc_model_build(&m, a, &cfg, &err), 0, "%s", err.msg);
    Optimizer opt;
    bertc_optimizer_init(&opt, m.reg, bertc_optimizer_defaults(OPT_ADAMW, 1e-3f));
    for (int i = 0; i < 3; i++) {
        const Kind *k = &kinds[i];
        SafeTensors *st;
        BertConfig c;
        Tokenizer t;
        Rng rng = bertc_rng_seed(1);
        int64_t step;
        memset(&err, 0, sizeof err);
        expect_refused(bertc_st_open_file(NULL, k->path, &st, &err), &err, k, "bertc_st_open_file");
        expect_refused(bertc_bert_config_read(k->path, &c, &err), &err, k, "bertc_bert_config_read");
        expect_refused(bertc_tokenizer_load(&t, a, k->path, &err), &err, k, "bertc_tokenizer_load");
        expect_refused(bertc_model_load(&m, k->path, false, &err), &err, k, "bertc_model_load");
        expect_refused(bertc_checkpoint_load(k->path, m.reg, &opt, &rng, &step, NULL, &err), &err, k,
                       "bertc_checkpoint_load");
        FILE *f = bertc_open_read(k->path, NULL, &err);
        expect_refused(f ? 0 : -1, &err, k, "bertc_open_read");
    }
    bertc_arena_destroy(a);
}

/* A Unix socket cannot even be opened (ENXIO); it gets the same message. */
Test(files, a_socket_is_not_a_regular_file, .timeout = 20)
{
    char path[320];
    snprintf(path, sizeof path, "%s/sock", dir);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    cr_assert_lt(strlen(path), sizeof addr.sun_path);
    memcpy(addr.sun_path, path, strlen(path) + 1);
    cr_assert(fd >= 0 && bind(fd, (struct sockaddr *)&addr, sizeof addr) == 0);
    Kind k = {path, "(a socket)"};
    BertcError err = {{0}};
    BertConfig cfg;
    expect_refused(bertc_bert_config_read(path, &cfg, &err), &err, &k, "bertc_bert_config_read");
    FILE *f = bertc_open_write(path, &err);
    expect_refused(f ? 0 : -1, &err, &k, "bertc_open_write");
    close(fd);
}

/* A FIFO nobody reads blocks fopen(path, "w") as surely as one nobody
 * writes blocks a reader. */
Test(files, writers_refuse_a_fifo_or_a_directory, .timeout = 20)
{
    fill_kinds();
    BertcError err;
    float probs[4] = {0.5f, 0.5f, 0.5f, 0.5f};
    const char *tokens[2] = {"a", "b"};
    BertConfig cfg;
    cr_assert_eq(bertc_bert_config_read("test/data/zoo/bert_model/config.json", &cfg, &err), 0,
                 "%s", err.msg);
    for (int i = 0; i < 2; i++) {
        expect_refused(bertc_svg_attention(kinds[i].path, probs, 1, 2, tokens, "t", &err), &err,
                       &kinds[i], "bertc_svg_attention");
        expect_refused(bertc_bert_config_write(kinds[i].path, &cfg, &err), &err, &kinds[i],
                       "bertc_bert_config_write");
    }
    FILE *f = bertc_open_write("/dev/null", &err);
    cr_expect(f, "/dev/null is a fine place to write: %s", err.msg);
    if (f)
        fclose(f);
    /* The atomic writer renames its temporary file over the path: never over
     * a FIFO or a directory (nor a device: not tried here, as a regression
     * would replace the machine's /dev/zero). */
    int64_t shape[1] = {1};
    float one = 1.0f;
    StEntry e = {.name = "x", .dtype = ST_F32, .ndim = 1, .shape = shape, .f32 = &one};
    for (int i = 0; i < 2; i++)
        expect_refused(bertc_st_write_file(kinds[i].path, &e, 1, NULL, 0, &err), &err, &kinds[i],
                       "bertc_st_write_file");
    struct stat sb;
    cr_expect(stat(fifo, &sb) == 0 && S_ISFIFO(sb.st_mode), "the FIFO was replaced");
}

/* `timeout 5 CMD`, its stderr into the log; the exit code (124: it hung). */
static int run(const char *cmd, char *log, size_t cap)
{
    char full[4096];
    snprintf(full, sizeof full, "timeout 5 %s < /dev/null", cmd);
    return test_shell(full, TEST_STDERR, log, cap);
}

/* CMD (with %s where the path goes) fails at once with one line naming it. */
static void expect_cli_refuses(const char *fmt, const Kind *k)
{
    char cmd[2048], log[4096];
    snprintf(cmd, sizeof cmd, fmt, k->path);
    int rc = run(cmd, log, sizeof log);
    cr_expect(rc != 0 && rc != 124, "%s: exit %d (124: it hung)", cmd, rc);
    char *nl = strchr(log, '\n');
    cr_expect(strstr(log, k->path) && strstr(log, "not a regular file") && nl && !nl[1],
              "%s: want one line naming %s as not a regular file, got: %s", cmd, k->path, log);
}

/* The first `word` in s (room for 1200 bytes) replaced by `with`. */
static void replace(char *s, const char *word, const char *with)
{
    char *at = strstr(s, word), rest[1200];
    if (!at)
        return;
    snprintf(rest, sizeof rest, "%s", at + strlen(word));
    snprintf(at, 1200 - (size_t)(at - s), "%s%s", with, rest);
}

#define ZOO "test/data/zoo/bert_seqcls_single/"
#define VOCAB "data/bert-base-uncased-vocab.txt"

Test(files, every_cli_path_flag_refuses_non_regular_files, .timeout = 120)
{
    fill_kinds();
    char out[400], fmt[1200], vocab[400];
    snprintf(out, sizeof out, "%s/out.safetensors", dir);
    snprintf(vocab, sizeof vocab, "%s/vocab.txt", dir);   /* ids below the tiny model's V */
    FILE *v = fopen(vocab, "w");
    cr_assert(v);
    fputs("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhello\n", v);
    fclose(v);
    const char *const commands[] = {
        "run --config %s --weights " ZOO "weights.safetensors --inputs " ZOO
        "inputs.safetensors --output OUT",
        "run --config " ZOO "config.json --weights %s --inputs " ZOO
        "inputs.safetensors --output OUT",
        "run --config " ZOO "config.json --weights " ZOO "weights.safetensors --inputs %s "
        "--output OUT",
        "init --config %s --output OUT",
        "summary --config %s",
        "tokenize --vocab %s hello",
        "attention --config %s --weights " ZOO "weights.safetensors --vocab VOCAB"
        " --output OUT hello",
        "attention --config " ZOO "config.json --weights %s --vocab VOCAB"
        " --output OUT hello",
        "attention --config " ZOO "config.json --weights " ZOO "weights.safetensors --vocab %s"
        " --output OUT hello",
    };
    for (size_t c = 0; c < sizeof commands / sizeof commands[0]; c++)
        for (int i = 0; i < 3; i++) {
            snprintf(fmt, sizeof fmt, "%s %s", BERTC_CLI, commands[c]);
            replace(fmt, "OUT", out);
            replace(fmt, "VOCAB", vocab);
            expect_cli_refuses(fmt, &kinds[i]);
        }
    /* /dev/stdin: here a pipe (a FIFO), which would wait for its writer */
    char cmd[1200], log[1024];
    snprintf(cmd, sizeof cmd, "printf '{}' | timeout 5 %s summary --config /dev/stdin "
             "> /dev/null 2> %s/log; echo $? >> %s/log", BERTC_CLI, dir, dir);
    cr_assert_eq(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s/log", dir);
    FILE *l = fopen(cmd, "r");
    size_t n = l ? fread(log, 1, sizeof log - 1, l) : 0;
    log[n] = '\0';
    if (l)
        fclose(l);
    cr_expect(strstr(log, "/dev/stdin: not a regular file (a FIFO)") && strstr(log, "\n1\n"),
              "want exit 1 and /dev/stdin named as a FIFO, got: %s", log);
    /* the picture itself: --output a FIFO or a directory */
    for (int i = 0; i < 2; i++) {
        snprintf(fmt, sizeof fmt, "%s attention --config " ZOO "config.json --weights " ZOO
                 "weights.safetensors --vocab %s --output %%s hello", BERTC_CLI, vocab);
        expect_cli_refuses(fmt, &kinds[i]);
    }
}

/* The examples' data files (BERTC_DATA_DIR/data/...) and --resume's
 * checkpoint. */
Test(files, examples_refuse_non_regular_data_and_checkpoints, .timeout = 120)
{
    fill_kinds();
    char root[1024], cmd[3000], data[400], tsv[500], vocab[500], fmt[3100];
    cr_assert(getcwd(root, sizeof root));
    snprintf(data, sizeof data, "%s/data", dir);
    snprintf(tsv, sizeof tsv, "%s/topics.tsv", data);
    snprintf(vocab, sizeof vocab, "%s/bert-base-uncased-vocab.txt", data);
    cr_assert_eq(mkdir(data, 0700), 0);
    char real_vocab[1100];
    snprintf(real_vocab, sizeof real_vocab, "%s/" VOCAB, root);
    cr_assert_eq(symlink(real_vocab, vocab), 0);
    cr_assert_eq(mkfifo(tsv, 0600), 0);
    Kind data_fifo = {tsv, "(a FIFO)"};
    snprintf(cmd, sizeof cmd, "env BERTC_DATA_DIR=%s %s/topics --steps 1 --out %s/o", dir,
             BERTC_EXAMPLES_DIR, dir);
    snprintf(fmt, sizeof fmt, "%s%s", cmd, "%.0s");
    expect_cli_refuses(fmt, &data_fifo);
    for (int i = 0; i < 3; i++) {
        snprintf(fmt, sizeof fmt, "%s/topics --steps 1 --out %s/o --resume --checkpoint %%s",
                 BERTC_EXAMPLES_DIR, dir);
        expect_cli_refuses(fmt, &kinds[i]);
    }
}
