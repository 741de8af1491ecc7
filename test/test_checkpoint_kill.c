/* test/test_checkpoint_kill.c — SIGKILL during checkpoint writes never loses
 * the last good checkpoint.
 *
 * A child process resumes from the checkpoint (as --resume does) and writes
 * checkpoints of generation k = step + 1, step + 2, ... in a tight loop; the
 * parent kills it with SIGKILL at a random moment, 60 times over. After each
 * kill the checkpoint at the path must load, hold one whole generation
 * (every weight, moment and counter of the same k: no mix of two writes) and
 * be no older than the last generation seen before (nothing lost). A kill
 * that lands mid-write leaves the writer's "<path>.tmp.<pid>.<random>"
 * behind; the test counts those, so it proves kills hit the write window,
 * not only the gaps between writes, and checks that the next save removes
 * every one of them. A damaged checkpoint (truncated anywhere, or with a
 * flipped byte in its header or its data) is refused with a message naming
 * the file. */
#include "test/test_util.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define KILLS 60

/* A 2-layer BERT with a 2000-token vocabulary: a checkpoint of ~1.7 MB. */
static void trainer_init(TestTrainState *t)
{
    test_train_state_init(t, (TestBertSize){.arch = "BertModel", .vocab_size = 2000,
                                            .hidden_size = 64, .num_hidden_layers = 2,
                                            .num_attention_heads = 4, .intermediate_size = 128,
                                            .max_position_embeddings = 32});
}

/* Writes generation k (test_fill_generation) to path; in a child, exit 3 on failure. */
static void save(TestTrainState *t, const char *path, int64_t k)
{
    BertcError err;
    test_fill_generation(t, k);
    if (bertc_checkpoint_save(path, t->m.reg, &t->o, &t->rng, k, NULL, &err) != 0) {
        fprintf(stderr, "%s\n", err.msg);
        _exit(3);
    }
}

/* The child: say it runs (one byte on `ready`), then write generations
 * until killed (or 10000). */
static _Noreturn void writer(TestTrainState *t, const char *path, int64_t from, int ready)
{
    if (write(ready, "r", 1) != 1)
        _exit(4);
    for (int64_t k = from + 1; k <= from + 10000; k++)
        save(t, path, k);
    _exit(0);
}

static double seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Temporaries of path in its directory whose name starts "<base>.tmp.<pid>."
 * (pid 0: any writer's). */
static int count_temps(const char *path, int pid)
{
    const char *base = strrchr(path, '/') + 1;
    char prefix[256];
    if (pid)
        snprintf(prefix, sizeof prefix, "%s.tmp.%d.", base, pid);
    else
        snprintf(prefix, sizeof prefix, "%s.tmp.", base);
    DIR *d = opendir("/tmp");
    cr_assert_not_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return n;
}

Test(checkpoint_kill, sigkill_never_loses_the_last_checkpoint, .timeout = 300)
{
    TestTrainState t;
    trainer_init(&t);
    char path[128];
    snprintf(path, sizeof path, "/tmp/bertc_kill_%d.safetensors", (int)getpid());
    double t0 = seconds();
    save(&t, path, 0);
    double write_time = seconds() - t0;
    Rng rng = bertc_rng_seed(9);
    int64_t last = 0;
    int mid_write = 0, advanced = 0;
    for (int kill_no = 0; kill_no < KILLS; kill_no++) {
        int ready[2];
        cr_assert_eq(pipe(ready), 0);
        pid_t pid = fork();
        cr_assert_geq(pid, 0, "fork failed");
        if (pid == 0)
            writer(&t, path, last, ready[1]);
        /* the delay counts from the moment the writer runs: on a busy
         * machine the child may wait a while to be scheduled at all */
        char byte;
        cr_assert_eq(read(ready[0], &byte, 1), 1, "kill %d: the writer did not start", kill_no);
        close(ready[0]);
        close(ready[1]);
        /* anywhere in the first few writes, so kills land in every phase */
        double delay = bertc_rng_uniform(&rng) * 4.0 * write_time;
        struct timespec ts = {(time_t)delay, (long)((delay - (double)(time_t)delay) * 1e9)};
        nanosleep(&ts, NULL);
        kill(pid, SIGKILL);
        int status;
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
                  "kill %d: the writer ended by itself (status %d)", kill_no, status);
        mid_write += count_temps(path, (int)pid);
        int64_t step = test_load_generation(&t, path);
        cr_assert_geq(step, last, "kill %d: the checkpoint went back from step %lld to %lld",
                      kill_no, (long long)last, (long long)step);
        advanced += step > last;
        last = step;
    }
    cr_log_info("%d kills, %d mid-write, %d after new checkpoints, last step %lld, one write "
                "%.1f ms", KILLS, mid_write, advanced, (long long)last, 1e3 * write_time);
    cr_expect_geq(mid_write, KILLS / 6, "only %d of %d kills landed during a write", mid_write,
                  KILLS);
    cr_expect_geq(advanced, KILLS / 6, "only %d of %d runs got a checkpoint written", advanced,
                  KILLS);
    /* the killed writers' temporaries: each next writer removed the ones
     * before it; one more save removes the last */
    save(&t, path, last + 1);
    cr_expect_eq(count_temps(path, 0), 0, "a save left stale temporaries of %s behind", path);
    remove(path);
    bertc_arena_destroy(t.arena);
}

/* Copies the first n bytes of src (with byte `flip` inverted when >= 0). */
static void damaged_copy(const char *src, const char *dst, long n, long flip)
{
    FILE *in = fopen(src, "rb"), *out = fopen(dst, "wb");
    cr_assert(in && out, "cannot copy %s to %s", src, dst);
    for (long i = 0; i < n; i++) {
        int c = fgetc(in);
        cr_assert_neq(c, EOF, "%s is shorter than %ld bytes", src, n);
        fputc(i == flip ? c ^ 0xFF : c, out);
    }
    fclose(in);
    fclose(out);
}

Test(checkpoint_kill, damaged_checkpoints_are_refused_by_name)
{
    TestTrainState t;
    trainer_init(&t);
    char path[128], bad[160];
    snprintf(path, sizeof path, "/tmp/bertc_damaged_%d.safetensors", (int)getpid());
    snprintf(bad, sizeof bad, "/tmp/bertc_damaged_%d_cut.safetensors", (int)getpid());
    save(&t, path, 7);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    uint8_t field[8];
    fseek(f, 0, SEEK_SET);
    cr_assert_eq(fread(field, 1, 8, f), 8u);
    fclose(f);
    long header = 0;
    for (int i = 7; i >= 0; i--)
        header = header << 8 | field[i];
    /* cut in the length field, the header and at eight places of the data;
     * then single flipped bytes inside the header's JSON */
    long cuts[12] = {0, 5, 8 + header / 2, 8 + header};
    for (int i = 4; i < 12; i++)
        cuts[i] = 8 + header + (size - 8 - header) * (i - 3) / 9;
    for (int i = 0; i < 12; i++) {
        damaged_copy(path, bad, cuts[i], -1);
        BertcError err = {{0}};
        int64_t step;
        cr_expect_neq(bertc_checkpoint_load(bad, t.m.reg, &t.o, &t.rng, &step, NULL, &err), 0,
                      "a checkpoint cut at byte %ld of %ld loaded", cuts[i], size);
        cr_expect(strstr(err.msg, bad), "cut at %ld: \"%s\" does not name the file", cuts[i],
                  err.msg);
    }
    static const char *const breaks[] = {"\"dtype\"", "\"data_offsets\"", "\"F32\"", "[",
                                         "train.step"};
    char *text = malloc((size_t)header + 1);
    f = fopen(path, "rb");
    fseek(f, 8, SEEK_SET);
    cr_assert_eq(fread(text, 1, (size_t)header, f), (size_t)header);
    fclose(f);
    text[header] = '\0';
    for (size_t i = 0; i < sizeof breaks / sizeof breaks[0]; i++) {
        long at = 8 + (long)(strstr(text, breaks[i]) - text) + 1;
        damaged_copy(path, bad, size, at);
        BertcError err = {{0}};
        int64_t step;
        cr_expect_neq(bertc_checkpoint_load(bad, t.m.reg, &t.o, &t.rng, &step, NULL, &err), 0,
                      "a checkpoint with byte %ld flipped (in %s) loaded", at, breaks[i]);
        cr_expect(strstr(err.msg, bad), "\"%s\" does not name the file", err.msg);
    }
    free(text);
    /* a flipped byte in the data (weights, moments, counters): the header is
     * intact, so only the data section's CRC-32 can tell */
    for (int i = 0; i < 8; i++) {
        long at = 8 + header + (size - 8 - header) * i / 8;
        damaged_copy(path, bad, size, at);
        BertcError err = {{0}};
        int64_t step;
        cr_expect_neq(bertc_checkpoint_load(bad, t.m.reg, &t.o, &t.rng, &step, NULL, &err), 0,
                      "a checkpoint with data byte %ld flipped loaded", at);
        cr_expect(strstr(err.msg, bad) && strstr(err.msg, "data section checksum mismatch"),
                  "data byte %ld flipped: \"%s\" does not name the file and the checksum",
                  at, err.msg);
    }
    remove(bad);
    remove(path);
    bertc_arena_destroy(t.arena);
}
