/* test/test_train_hostile.c — hostile inputs to checkpoints and to the
 * examples' flags, each a class found by attacking `bertc train` and the
 * example programs:
 *   - a checkpoint holding a tensor this model and optimizer never write, a
 *     moment or weight in another dtype, or no checksum, is refused naming
 *     the tensor or key (it used to resume silently, with the extra tensor
 *     ignored and an I32 moment read as numbers);
 *   - an error message quoting a value with a newline is still one line;
 *   - a long --out (1,200 bytes) gets every file under its own name (the
 *     files used to be written under truncated names, "checkpoint.saf",
 *     exit 0), and one too long for a directory is refused naming --out;
 *   - a file-size limit (ulimit -f) makes the save fail with one line, the
 *     old checkpoint kept (SIGXFSZ used to kill the program mid-write);
 *   - a hostile data file (a NUL byte, too few or too many rows, invalid
 *     UTF-8) is one line naming the file (and line), never silently cut;
 *   - --checkpoint naming a file the example writes into --out (the model,
 *     a picture) is refused: the two writes used to replace each other;
 *   - SIGINT / SIGTERM while an example loads its data exits 130 / 143 with
 *     one line (it used to die of the signal);
 *   - a directory where the old write probe's fixed name was does not make a
 *     writable --out look unwritable. */
#include "test/test_util.h"
#include "zoo/train/train.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* A one-layer BertModel with AdamW and its RNG (TestTrainState), a good
 * checkpoint of it and the path of a damaged copy. */
typedef struct Small {
    TestTrainState state;
    char dir[128], good[192], bad[192];
} Small;

static void small_init(Small *t)
{
    test_train_state_init(&t->state, (TestBertSize){.arch = "BertModel", .vocab_size = 50,
                                                    .hidden_size = 8, .num_hidden_layers = 1,
                                                    .num_attention_heads = 2,
                                                    .intermediate_size = 16,
                                                    .max_position_embeddings = 8});
    t->state.rng = bertc_rng_seed(1);
    BertcError err;
    snprintf(t->dir, sizeof t->dir, "/tmp/bertc_hostile_%d", (int)getpid());
    mkdir(t->dir, 0755);
    snprintf(t->good, sizeof t->good, "%s/good.safetensors", t->dir);
    snprintf(t->bad, sizeof t->bad, "%s/bad.safetensors", t->dir);
    cr_assert_eq(bertc_checkpoint_save(t->good, t->state.m.reg, &t->state.o, &t->state.rng, 0, NULL,
                                 &err), 0, "%s",
                 err.msg);
}

static void small_close(Small *t)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", t->dir);
    cr_assert_eq(system(cmd), 0);
    bertc_arena_destroy(t->state.arena);
}

/* The good checkpoint rewritten to t->bad: tensor `retype` (if any) stored
 * as I64 (the float bits read as integers), `extra` (if any) added as an F32 [2], and the
 * checksum kept (bertc_st_write_file) or left out (bertc_st_write_buffer). */
static void rewrite(Small *t, const char *retype, const char *extra, bool checksum)
{
    SafeTensors *st;
    BertcError err;
    cr_assert_eq(bertc_st_open_file(NULL, t->good, &st, &err), 0, "%s", err.msg);
    StEntry *e = calloc(st->n_tensors + 1, sizeof *e);
    void **bufs = calloc(st->n_tensors + 1, sizeof *bufs);
    size_t n = 0;
    for (size_t i = 0; i < st->n_tensors; i++, n++) {
        const StTensorInfo *ti = &st->tensors[i];
        bufs[n] = test_tensor_bytes(st, ti);
        e[n] = (StEntry){.name = ti->name, .dtype = ti->dtype, .ndim = ti->ndim,
                         .shape = ti->shape};
        if (ti->dtype == ST_I64)
            e[n].i64 = bufs[n];
        else if (retype && !strcmp(ti->name, retype))
            e[n].dtype = ST_I64, e[n].i32 = bufs[n];   /* the float bits as integers */
        else
            e[n].f32 = bufs[n];
    }
    static const int64_t two[1] = {2};
    static const float zeros[2] = {0, 0};
    if (extra)
        e[n++] = (StEntry){.name = extra, .dtype = ST_F32, .ndim = 1, .shape = two,
                           .f32 = zeros};
    StMetadata meta[2] = {{"format", "bertc-checkpoint"}, {"optimizer", "adamw"}};
    if (checksum) {
        cr_assert_eq(bertc_st_write_file(t->bad, e, n, meta, 2, &err), 0, "%s", err.msg);
    } else {
        size_t size;
        cr_assert_eq(bertc_st_write_buffer(e, n, meta, 2, NULL, 0, &size, &err), 0, "%s", err.msg);
        void *buf = malloc(size);
        cr_assert_eq(bertc_st_write_buffer(e, n, meta, 2, buf, size, &size, &err), 0, "%s", err.msg);
        FILE *f = fopen(t->bad, "wb");
        cr_assert(f && fwrite(buf, 1, size, f) == size);
        fclose(f);
        free(buf);
    }
    for (size_t i = 0; i < n; i++)
        if (i < st->n_tensors)
            free(bufs[i]);
    free(bufs);
    free(e);
    bertc_st_close(st);
}

static void expect_refused(Small *t, const char *says)
{
    BertcError err = {{0}};
    int64_t step;
    cr_expect_neq(bertc_checkpoint_load(t->bad, t->state.m.reg, &t->state.o, &t->state.rng, &step, NULL, &err), 0,
                  "a checkpoint that should say \"%s\" loaded", says);
    cr_expect(strstr(err.msg, t->bad) && strstr(err.msg, says) && !strchr(err.msg, '\n'),
              "\"%s\" is not one line naming the file and saying \"%s\"", err.msg, says);
}

/* The demo's output after the warnings of loading the pretrained model
 * (the keys it initialised and those it did not use, as from_pretrained's):
 * what must then be one line. */
static const char *after_warnings(const char *out)
{
    while (strncmp(out, "bertc: warning: ", 16) == 0 && strchr(out, '\n'))
        out = strchr(out, '\n') + 1;
    return out;
}

Test(train_hostile, a_checkpoint_entry_this_model_never_writes_is_refused)
{
    Small t;
    small_init(&t);
    BertcError err;
    int64_t step;
    rewrite(&t, NULL, NULL, true);
    cr_assert_eq(bertc_checkpoint_load(t.bad, t.state.m.reg, &t.state.o, &t.state.rng, &step, NULL,
                                 &err), 0, "the unchanged copy does not load: %s", err.msg);
    rewrite(&t, NULL, "pooler.extra.weight", true);
    expect_refused(&t, "unexpected tensor 'pooler.extra.weight'");
    rewrite(&t, NULL, "optimizer.exp_avg.no.such.param", true);
    expect_refused(&t, "unexpected tensor 'optimizer.exp_avg.no.such.param'");
    rewrite(&t, NULL, "optimizer.momentum_buffer.embeddings.LayerNorm.weight", true);
    expect_refused(&t, "unexpected tensor 'optimizer.momentum_buffer.");
    rewrite(&t, "optimizer.exp_avg_sq.embeddings.LayerNorm.weight", NULL, true);
    expect_refused(&t, "'optimizer.exp_avg_sq.embeddings.LayerNorm.weight' is I64");
    rewrite(&t, "embeddings.LayerNorm.bias", NULL, true);
    expect_refused(&t, "'embeddings.LayerNorm.bias' is I64");
    small_close(&t);
}

Test(train_hostile, a_checkpoint_without_its_checksum_is_refused)
{
    Small t;
    small_init(&t);
    rewrite(&t, NULL, NULL, false);
    expect_refused(&t, "no 'bertc.crc32' checksum");
    small_close(&t);
}

Test(train_hostile, an_error_quoting_a_newline_is_one_line)
{
    BertcError err;
    bertc_errorf(&err, "--steps needs a number, got '%s'", "1\n2\r\x1b[2J");
    cr_expect_str_eq(err.msg, "--steps needs a number, got '1\\n2\\r\\x1b[2J'");
    TrainOptions opt = bertc_train_defaults();
    char *argv[] = {"x", "--lr", "1\nfoo"};
    cr_expect_neq(bertc_train_parse_flags(3, argv, &opt, NULL, &err), 0);
    cr_expect(!strchr(err.msg, '\n'), "not one line: \"%s\"", err.msg);
}

static int run_example(const char *args, char *out, size_t len)
{
    char log[128];
    snprintf(log, sizeof log, "/tmp/bertc_hostile_%d.log", (int)getpid());
    size_t cap = strlen(args) + 512;
    char *cmd = malloc(cap);
    cr_assert(cmd);
    snprintf(cmd, cap, "%s/topics --quiet --steps 1 %s > %s 2>&1", BERTC_EXAMPLES_DIR, args,
             log);
    int status = system(cmd);
    free(cmd);
    FILE *f = fopen(log, "r");
    size_t n = f ? fread(out, 1, len - 1, f) : 0;
    if (f)
        fclose(f);
    out[n] = '\0';
    remove(log);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

Test(train_hostile, a_long_out_gets_every_file_under_its_own_name, .timeout = 120)
{
    char root[128], out[8192], cmd[512];
    snprintf(root, sizeof root, "/tmp/bertc_hostile_long_%d", (int)getpid());
    char *dir = test_long_dir(root, 1200, true);
    char *args = malloc(strlen(dir) + 16);
    sprintf(args, "--out %s", dir);
    cr_expect_eq(run_example(args, out, sizeof out), 0, "%s", out);
    /* the demo's model directory (bertc_finetune) and its two pictures */
    static const char *const files[] = {"checkpoint.safetensors", "config.json",
                                        "model.safetensors", "loss.svg", "attention.svg",
                                        "vocab.txt", "tokenizer_config.json", "log.jsonl",
                                        "trainer_state.json"};
    for (int i = 0; i < 9; i++) {
        char path[BERTC_PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        cr_expect_eq(access(path, R_OK), 0, "no %s in the 1,200-byte --out", files[i]);
    }
    /* and the model from scratch in OUT/scratch: the same files but attention.svg */
    snprintf(cmd, sizeof cmd, "find %s -type f -not -path '*/scratch/*' | wc -l | grep -qx 9 && "
             "find %s -type f -path '*/scratch/*' | wc -l | grep -qx 8", root, root);
    cr_expect_eq(system(cmd), 0, "files under other names in %s", root);
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    cr_assert_eq(system(cmd), 0);
    free(args);
    free(dir);
}

Test(train_hostile, an_out_too_long_for_a_directory_is_refused_naming_out, .timeout = 120)
{
    char root[128], out[8192], cmd[256];
    snprintf(root, sizeof root, "/tmp/bertc_hostile_long_%d", (int)getpid());
    size_t lengths[] = {BERTC_PATH_MAX - BERTC_PATH_DIR_ROOM, BERTC_PATH_MAX + 100};
    for (int i = 0; i < 2; i++) {
        char *dir = test_long_dir(root, lengths[i], false);
        char *args = malloc(strlen(dir) + 16);
        sprintf(args, "--out %s", dir);
        cr_expect_eq(run_example(args, out, sizeof out), 1, "%s", out);
        cr_expect(strstr(out, "--out: the directory path is") &&
                  strchr(out, '\n') == out + strlen(out) - 1, "%s", out);
        free(args);
        free(dir);
    }
    snprintf(cmd, sizeof cmd, "test ! -e %s", root);
    cr_expect_eq(system(cmd), 0, "something was written under %s", root);
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    cr_assert_eq(system(cmd), 0);
}

Test(train_hostile, a_directory_named_like_the_write_probe_does_not_block_out)
{
    char dir[128], probe[192], cmd[256];
    snprintf(dir, sizeof dir, "/tmp/bertc_hostile_probe_%d", (int)getpid());
    snprintf(probe, sizeof probe, "%s/.bertc-write-check", dir);
    mkdir(dir, 0755);
    cr_assert_eq(mkdir(probe, 0755), 0);
    BertcError err;
    cr_expect_eq(bertc_train_check_out_dir(dir, &err), 0, "%s", err.msg);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

/* ulimit -f below the checkpoint's size: the save fails with EFBIG and says
 * so in one line (exit 1); SIGXFSZ used to kill the example mid-write. The
 * file that was there stays. */
Test(train_hostile, a_file_size_limit_is_a_failed_save_not_a_kill, .timeout = 120)
{
    char dir[128], ckpt[192], args[400], out[4096], cmd[300];
    snprintf(dir, sizeof dir, "/tmp/bertc_hostile_fsize_%d", (int)getpid());
    snprintf(ckpt, sizeof ckpt, "%s/checkpoint.safetensors", dir);
    mkdir(dir, 0755);
    FILE *f = fopen(ckpt, "w");
    cr_assert(f);
    fputs("the previous checkpoint", f);
    fclose(f);
    snprintf(args, sizeof args, "--out %s", dir);
    char log[128];
    snprintf(log, sizeof log, "/tmp/bertc_hostile_fsize_%d.log", (int)getpid());
    char full[1024];
    snprintf(full, sizeof full, "ulimit -f 2000; %s/topics --quiet --steps 1 %s > /dev/null 2> %s",
             BERTC_EXAMPLES_DIR, args, log);
    int status = system(full);
    f = fopen(log, "r");
    size_t n = f ? fread(out, 1, sizeof out - 1, f) : 0;
    if (f)
        fclose(f);
    out[n] = '\0';
    remove(log);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 1, "status %d: %s", status, out);
    const char *error = after_warnings(out);
    cr_expect(strstr(error, ckpt) && strstr(error, "File too large") &&
              strchr(error, '\n') == error + strlen(error) - 1, "%s", out);
    char kept[64] = "";
    f = fopen(ckpt, "r");
    cr_assert(f && fgets(kept, sizeof kept, f));
    fclose(f);
    cr_expect_str_eq(kept, "the previous checkpoint");
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

/* topics with BERTC_DATA_DIR at a directory whose data/topics.tsv holds
 * `content` (len bytes) and whose vocabulary is the real one; the exit status,
 * stderr in out. */
static int topics_on_data(const char *content, size_t len, char *out, size_t cap)
{
    char root[128], cmd[1536], log[160], cwd[512];
    cr_assert(getcwd(cwd, sizeof cwd));
    snprintf(root, sizeof root, "/tmp/bertc_hostile_data_%d", (int)getpid());
    snprintf(cmd, sizeof cmd, "mkdir -p %s/data && ln -sf %s/data/bert-base-uncased-vocab.txt "
             "%s/data/pretrained %s/data/", root, cwd, cwd, root);
    cr_assert_eq(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s/data/topics.tsv", root);
    FILE *f = fopen(cmd, "wb");
    cr_assert(f && fwrite(content, 1, len, f) == len);
    fclose(f);
    snprintf(log, sizeof log, "%s.log", root);
    snprintf(cmd, sizeof cmd, "BERTC_DATA_DIR=%s %s/topics --quiet --steps 1 --out %s/out "
             "> /dev/null 2> %s", root, BERTC_EXAMPLES_DIR, root, log);
    int status = system(cmd);
    f = fopen(log, "r");
    size_t n = f ? fread(out, 1, cap - 1, f) : 0;
    if (f)
        fclose(f);
    out[n] = '\0';
    remove(log);
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    cr_assert_eq(system(cmd), 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Hostile data files: a NUL byte used to end the file silently, a file of
 * one example or of none was "the task has 0 training examples" without the
 * file's name, an invalid UTF-8 text "text: invalid UTF-8 at byte 0" without
 * file or line, and rows past the 4096 the demo holds were dropped. */
Test(train_hostile, a_hostile_data_file_is_one_line_naming_it, .timeout = 120)
{
    static const char nul[] = "computers\tone\0two\nfood\tthree\nlaw\tfour\n";
    static const char one[] = "computers\ta single example\n";
    static const char utf[] = "food\tfine\ncomputers\tnot \xff utf-8\n";
    struct {
        const char *text;
        size_t len;
        const char *says;
    } cases[] = {
        {nul, sizeof nul - 1, "topics.tsv: NUL byte at byte 13"},
        {one, sizeof one - 1, "topics.tsv: 1 examples; at least 2"},
        {"", 0, "topics.tsv: 0 examples; at least 2"},
        {utf, sizeof utf - 1, "topics.tsv:2: "},
    };
    char out[4096];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_expect_eq(topics_on_data(cases[i].text, cases[i].len, out, sizeof out), 1, "%s", out);
        cr_expect(strstr(out, cases[i].says) && strchr(out, '\n') == out + strlen(out) - 1,
                  "case %zu: \"%s\" does not say \"%s\" in one line", i, out, cases[i].says);
    }
    size_t cap = 5000 * 16, len = 0;
    char *many = malloc(cap);
    for (int k = 0; k < 4097; k++)
        len += (size_t)snprintf(many + len, cap - len, "law\tcase %d\n", k);
    cr_expect_eq(topics_on_data(many, len, out, sizeof out), 1, "%s", out);
    cr_expect(strstr(out, "topics.tsv: more than 4096 examples"), "%s", out);
    free(many);
}

/* `bertc train NAME` with a NAME that is no example: one line (the list of
 * examples used to be a second line) and exit 2; "", "." and ".." named the
 * examples directory itself and ended in "cannot run". */
Test(train_hostile, bertc_train_with_a_bad_name_is_one_line)
{
    const char *names[] = {"", "''", ".", "..", "no-such", "../bertc", "topics/"};
    char cmd[512], out[4096], log[128];
    snprintf(log, sizeof log, "/tmp/bertc_hostile_train_%d.log", (int)getpid());
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(cmd, sizeof cmd, "%s train %s > %s 2>&1", BERTC_CLI, names[i], log);
        int status = system(cmd);
        FILE *f = fopen(log, "r");
        size_t n = f ? fread(out, 1, sizeof out - 1, f) : 0;
        if (f)
            fclose(f);
        out[n] = '\0';
        cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 2, "train %s: %s", names[i], out);
        cr_expect((strstr(out, "no example") || strstr(out, "usage: bertc train")) &&
                  strstr(out, "(examples: ") && strchr(out, '\n') == out + strlen(out) - 1,
                  "train %s: \"%s\"", names[i], out);
    }
    remove(log);
}

/* --checkpoint naming a file the example also writes into --out: the final
 * model.safetensors (or a picture) used to replace the checkpoint, so that
 * --resume then found "not a bertc checkpoint". */
Test(train_hostile, a_checkpoint_named_like_an_output_file_is_refused, .timeout = 120)
{
    char dir[128], args[800], out[4096], cmd[256];
    snprintf(dir, sizeof dir, "/tmp/bertc_hostile_same_%d", (int)getpid());
    const char *names[] = {"model.safetensors", "loss.svg", "../%s/config.json"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char name[200];
        snprintf(name, sizeof name, names[i], strrchr(dir, '/') + 1);
        snprintf(args, sizeof args, "--out %s --checkpoint %s/%s", dir, dir, name);
        cr_expect_eq(run_example(args, out, sizeof out), 1, "%s: %s", args, out);
        cr_expect(strstr(out, "the example writes into --out") &&
                  strchr(out, '\n') == out + strlen(out) - 1, "%s: \"%s\"", args, out);
    }
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

/* SIGINT or SIGTERM while an example loads its data (before bertc_train_run): it
 * used to die of the signal; now it exits 130 / 143 with one line. */
static void signal_while_loading(int sig, int want)
{
    char log[128], dir[128];
    snprintf(log, sizeof log, "/tmp/bertc_hostile_sig_%d.log", (int)getpid());
    snprintf(dir, sizeof dir, "/tmp/bertc_hostile_sig_%d", (int)getpid());
    pid_t pid = fork();
    if (pid == 0) {
        char exe[300];
        snprintf(exe, sizeof exe, "%s/topics", BERTC_EXAMPLES_DIR);
        if (!freopen(log, "w", stderr) || !freopen("/dev/null", "w", stdout))
            _exit(126);
        execl(exe, exe, "--steps", "2", "--out", dir, "--quiet", (char *)NULL);
        _exit(127);
    }
    struct timespec pause = {0, 150000000};   /* 150 ms: past main, before step 1 */
    nanosleep(&pause, NULL);
    kill(pid, sig);
    int status;
    waitpid(pid, &status, 0);
    char out[4096];
    FILE *f = fopen(log, "r");
    size_t n = f ? fread(out, 1, sizeof out - 1, f) : 0;
    if (f)
        fclose(f);
    out[n] = '\0';
    remove(log);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == want, "status %d (%s %d): %s",
              status, WIFSIGNALED(status) ? "killed by signal" : "exit",
              WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status), out);
    const char *error = after_warnings(out);
    cr_expect(strstr(error, "stopped by SIG") && strchr(error, '\n') == error + strlen(error) - 1,
              "%s", out);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

Test(train_hostile, sigint_while_loading_data_exits_130, .timeout = 120)
{
    signal_while_loading(SIGINT, 130);
}

Test(train_hostile, sigterm_while_loading_data_exits_143, .timeout = 120)
{
    signal_while_loading(SIGTERM, 143);
}
