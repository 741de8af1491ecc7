/* test/test_checkpoint_safety.c — a good checkpoint is never lost or
 * replaced by a bad one, and a bad one is never resumed:
 *   - every open/write/fchmod/fsync/close/rename of the atomic save fails in
 *     turn (EIO), or the writer is SIGKILLed right there: the checkpoint at
 *     the path always loads whole (the old one until the rename), and the
 *     temporaries are gone (at once on failure, at the next save after a kill);
 *   - a save with a NaN weight, an infinite moment or a negative second
 *     moment is refused naming the tensor, and the last good file stays;
 *   - the path being a symbolic link, a directory or a FIFO is refused;
 *     stale temporaries of dead writers are removed, live ones are not;
 *   - loading refuses out-of-range counters, a missing or malformed RNG
 *     state, non-finite values, negative second moments, another format and
 *     run fields that differ or are missing, each naming the file and key. */
#include "test/test_util.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct Ckpt {
    TestTrainState s;
    char dir[128], path[192];
} Ckpt;

/* A 1-layer BERT with a 2000-token vocabulary: about 800 KB, so the save
 * makes a dozen write() calls through its 64 KB buffer. */
static void ckpt_init(Ckpt *t)
{
    test_train_state_init(&t->s, (TestBertSize){.arch = "BertModel", .vocab_size = 2000,
                                                 .hidden_size = 32, .num_hidden_layers = 1,
                                                 .num_attention_heads = 2,
                                                 .intermediate_size = 64,
                                                 .max_position_embeddings = 16});
    snprintf(t->dir, sizeof t->dir, "/tmp/bertc_ckpt_safety_%d", (int)getpid());
    mkdir(t->dir, 0755);
    snprintf(t->path, sizeof t->path, "%s/checkpoint.safetensors", t->dir);
}

static void ckpt_close(Ckpt *t)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", t->dir);
    cr_assert_eq(system(cmd), 0);
    bertc_arena_destroy(t->s.arena);
}

/* Generation k (test_fill_generation). */
static void fill(Ckpt *t, int64_t k) { test_fill_generation(&t->s, k); }

static int save(Ckpt *t, int64_t k, BertcError *err)
{
    fill(t, k);
    return bertc_checkpoint_save(t->path, t->s.m.reg, &t->s.o, &t->s.rng, k, NULL, err);
}

/* Loads path; asserts it is one whole generation and returns it. */
static int64_t generation(Ckpt *t, const char *path)
{
    return test_load_generation(&t->s, path);
}

/* Files in t->dir other than the checkpoint (temporaries); the first name
 * into first (may be NULL). */
static int others(const Ckpt *t, char *first, size_t len)
{
    DIR *d = opendir(t->dir);
    cr_assert_not_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
            !strcmp(e->d_name, "checkpoint.safetensors"))
            continue;
        if (n++ == 0 && first)
            snprintf(first, len, "%s/%s", t->dir, e->d_name);
    }
    closedir(d);
    return n;
}

static void expect_one_line(const char *msg)
{
    cr_expect(msg[0] && !strchr(msg, '\n'), "not one line: \"%s\"", msg);
}

Test(checkpoint_safety, every_failing_call_of_the_save_keeps_the_old_checkpoint)
{
    Ckpt t;
    ckpt_init(&t);
    BertcError err;
    int points = 0;
    for (int n = 1; n < 200; n++) {
        cr_assert_eq(save(&t, 1, &err), 0, "%s", err.msg);
        err.msg[0] = '\0';
        test_io_arm(n, false);
        int rc = save(&t, 2, &err);
        test_io_disarm();
        const char *hit = test_io_hit();
        if (!hit)
            break;
        points++;
        /* the rename is the commit point: before it the old file is there,
         * after it (a failed directory fsync) the new one, and the error
         * says which ("written, but") */
        int64_t want = rc == 0 || strstr(err.msg, "written, but") ? 2 : 1;
        cr_assert_eq(generation(&t, t.path), want, "%s #%d failed (\"%s\"): wrong generation",
                     hit, n, err.msg);
        cr_assert_eq(others(&t, NULL, 0), 0, "%s #%d failed: a temporary was left", hit, n);
        if (rc != 0) {
            cr_expect(strstr(err.msg, t.path), "\"%s\" does not name the file", err.msg);
            expect_one_line(err.msg);
        }
    }
    cr_log_info("the save made %d failable calls", points);
    cr_expect_geq(points, 12, "only %d calls: did the wrappers see the writes?", points);
    ckpt_close(&t);
}

Test(checkpoint_safety, a_kill_at_every_call_of_the_save_keeps_a_whole_checkpoint,
     .timeout = 120)
{
    Ckpt t;
    ckpt_init(&t);
    BertcError err;
    int kills = 0, stale = 0;
    for (int n = 1; n < 200; n++) {
        /* this save also removes the temporary the last killed writer left */
        cr_assert_eq(save(&t, 1, &err), 0, "%s", err.msg);
        cr_assert_eq(others(&t, NULL, 0), 0, "a stale temporary survived the next save");
        pid_t pid = fork();
        cr_assert_geq(pid, 0);
        if (pid == 0) {
            test_io_arm(n, true);
            int rc = save(&t, 2, &err);
            _exit(rc == 0 ? 0 : 3);
        }
        int status;
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        if (WIFEXITED(status)) {
            cr_assert_eq(WEXITSTATUS(status), 0, "the unkilled save failed");
            cr_assert_eq(generation(&t, t.path), 2);
            break;
        }
        cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
        kills++;
        int64_t g = generation(&t, t.path);
        cr_assert(g == 1 || g == 2, "kill at call %d: generation %lld", n, (long long)g);
        char tmp[512];
        if (others(&t, tmp, sizeof tmp)) {
            stale++;
            /* readable by others only once complete (after the fchmod) */
            struct stat sb, whole;
            cr_assert(stat(tmp, &sb) == 0 && stat(t.path, &whole) == 0);
            cr_expect((sb.st_mode & 0777) == 0600 || sb.st_size == whole.st_size,
                      "%s: mode %o with %lld of %lld bytes", tmp, (unsigned)(sb.st_mode & 0777),
                      (long long)sb.st_size, (long long)whole.st_size);
        }
    }
    cr_log_info("%d kills, %d left a temporary", kills, stale);
    cr_expect_geq(kills, 12);
    cr_expect_geq(stale, 10, "only %d kills left a temporary: were they mid-write?", stale);
    ckpt_close(&t);
}

/* A bad value reaches a weight or a moment: the save is refused naming it,
 * and the previous checkpoint stays. */
static void expect_refused(Ckpt *t, float *where, float value, const char *names)
{
    BertcError err = {{0}};
    cr_assert_eq(save(t, 1, &err), 0, "%s", err.msg);
    fill(t, 2);
    *where = value;
    cr_expect_neq(bertc_checkpoint_save(t->path, t->s.m.reg, &t->s.o, &t->s.rng, 2, NULL, &err), 0,
                  "a checkpoint with %s = %g was written", names, value);
    cr_expect(strstr(err.msg, names) && strstr(err.msg, t->path),
              "\"%s\" names neither %s nor the file", err.msg, names);
    expect_one_line(err.msg);
    cr_expect_eq(generation(t, t->path), 1, "the good checkpoint was replaced");
    cr_expect_eq(others(t, NULL, 0), 0);
}

Test(checkpoint_safety, non_finite_state_is_never_saved_over_a_good_checkpoint)
{
    Ckpt t;
    ckpt_init(&t);
    int w = bertc_registry_find(t.s.m.reg, "encoder.layer.0.attention.self.query.weight");
    cr_assert_geq(w, 0);
    expect_refused(&t, &t.s.m.reg->params[w].var->value.data[33], NAN,
                   "'encoder.layer.0.attention.self.query.weight'[1, 1] is nan");
    expect_refused(&t, &t.s.o.state1[w][0], INFINITY,
                   "'optimizer.exp_avg.encoder.layer.0.attention.self.query.weight'[0, 0] is inf");
    expect_refused(&t, &t.s.o.state2[w][2], -0.5f,
                   "'optimizer.exp_avg_sq.encoder.layer.0.attention.self.query.weight'[0, 2] "
                   "is -0.5 (a second moment must be >= 0)");
    ckpt_close(&t);
}

Test(checkpoint_safety, a_target_that_is_not_a_regular_file_is_refused)
{
    Ckpt t;
    ckpt_init(&t);
    char victim[256], cmd[512];
    BertcError err = {{0}};
    snprintf(victim, sizeof victim, "%s/victim", t.dir);
    FILE *f = fopen(victim, "w");
    fputs("keep me", f);
    fclose(f);
    cr_assert_eq(symlink(victim, t.path), 0);
    cr_expect_neq(save(&t, 1, &err), 0, "a save followed a symbolic link");
    cr_expect(strstr(err.msg, t.path) && strstr(err.msg, "symbolic link"), "%s", err.msg);
    f = fopen(victim, "r");
    char text[16] = "";
    cr_expect(fgets(text, sizeof text, f) && !strcmp(text, "keep me"), "the link's target "
              "was written");
    fclose(f);
    unlink(t.path);
    cr_assert_eq(mkdir(t.path, 0755), 0);
    cr_expect_neq(save(&t, 1, &err), 0);
    cr_expect(strstr(err.msg, "not a regular file (a directory)"), "%s", err.msg);
    rmdir(t.path);
    cr_assert_eq(mkfifo(t.path, 0600), 0);
    cr_expect_neq(save(&t, 1, &err), 0);   /* must not block on the FIFO either */
    cr_expect(strstr(err.msg, "not a regular file (a FIFO)"), "%s", err.msg);
    expect_one_line(err.msg);
    unlink(t.path);
    unlink(victim);
    snprintf(cmd, sizeof cmd, "%s/", t.dir);
    cr_expect_neq(bertc_st_check_writable(cmd, &err), 0, "a directory path passed as a file");
    cr_expect(strstr(err.msg, "not a file name"), "%s", err.msg);
    cr_expect_neq(bertc_st_check_writable("", &err), 0, "an empty path passed");
    ckpt_close(&t);
}

static void touch(const char *dir, const char *name)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    cr_assert_not_null(f, "%s", p);
    fclose(f);
}

static bool present(const char *dir, const char *name)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return access(p, F_OK) == 0;
}

Test(checkpoint_safety, stale_temporaries_of_dead_writers_are_removed)
{
    Ckpt t;
    ckpt_init(&t);
    pid_t dead = fork();
    if (dead == 0)
        _exit(0);
    waitpid(dead, NULL, 0);
    pid_t alive = fork();
    if (alive == 0) {
        pause();
        _exit(0);
    }
    char dead_new[96], dead_old[96], own[96], live[96];
    snprintf(dead_new, sizeof dead_new, "checkpoint.safetensors.tmp.%d.Ab3dE6gH9jK1", (int)dead);
    snprintf(dead_old, sizeof dead_old, "checkpoint.safetensors.tmp.%d", (int)dead);
    snprintf(own, sizeof own, "checkpoint.safetensors.tmp.%d.zzzzzzzzzzzz", (int)getpid());
    snprintf(live, sizeof live, "checkpoint.safetensors.tmp.%d.Ab3dE6gH9jK1", (int)alive);
    const char *keep[] = {live, "checkpoint.safetensors.tmp.notes",
                          "other.safetensors.tmp.1.Ab3dE6gH9jK1"};
    touch(t.dir, dead_new);
    touch(t.dir, dead_old);
    touch(t.dir, own);
    for (int i = 0; i < 3; i++)
        touch(t.dir, keep[i]);
    BertcError err;
    cr_assert_eq(save(&t, 1, &err), 0, "%s", err.msg);
    cr_expect(!present(t.dir, dead_new) && !present(t.dir, dead_old),
              "a dead writer's temporary survived the save");
    cr_expect(!present(t.dir, own), "a temporary with this process's pid (a reused pid) "
              "survived");
    for (int i = 0; i < 3; i++)
        cr_expect(present(t.dir, keep[i]), "%s was removed", keep[i]);
    kill(alive, SIGKILL);
    waitpid(alive, NULL, 0);
    ckpt_close(&t);
}

Test(checkpoint_safety, the_saved_file_has_a_normal_mode)
{
    Ckpt t;
    ckpt_init(&t);
    BertcError err;
    mode_t old = umask(022);
    cr_assert_eq(save(&t, 1, &err), 0, "%s", err.msg);
    struct stat sb;
    cr_assert_eq(stat(t.path, &sb), 0);
    cr_expect_eq(sb.st_mode & 0777, 0644, "a new checkpoint has mode %o, not 0644",
                 (unsigned)(sb.st_mode & 0777));
    chmod(t.path, 0640);
    cr_assert_eq(save(&t, 2, &err), 0, "%s", err.msg);
    cr_assert_eq(stat(t.path, &sb), 0);
    cr_expect_eq(sb.st_mode & 0777, 0640, "the replaced file's mode %o was not kept",
                 (unsigned)(sb.st_mode & 0777));
    umask(old);
    ckpt_close(&t);
}

/* ---- loading ----------------------------------------------------------- */

/* The good checkpoint's tensors, copied raw, with one change: a tensor
 * dropped or replaced, metadata changed. */
typedef struct Mutation {
    const char *tensor;                /* the tensor to change (or NULL) */
    bool drop;                         /* leave it out */
    int64_t i64;                       /* new value of an I64 counter */
    bool as_f32;                       /* write the counter as F32 */
    int64_t element;                   /* for an F32 tensor: element to set to f32 */
    float f32;
    const char *meta_key, *meta_value; /* set (value NULL: remove) a metadata key */
} Mutation;

static void mutate(const char *good, const char *bad, const Mutation *mu)
{
    SafeTensors *st;
    BertcError err;
    cr_assert_eq(bertc_st_open_file(NULL, good, &st, &err), 0, "%s", err.msg);
    StEntry *e = calloc(st->n_tensors, sizeof *e);
    void **bufs = calloc(st->n_tensors, sizeof *bufs);
    size_t n = 0;
    for (size_t i = 0; i < st->n_tensors; i++) {
        const StTensorInfo *ti = &st->tensors[i];
        bool hit = mu->tensor && !strcmp(ti->name, mu->tensor);
        if (hit && mu->drop)
            continue;
        bufs[n] = test_tensor_bytes(st, ti);
        e[n] = (StEntry){.name = ti->name, .dtype = ti->dtype, .ndim = ti->ndim,
                         .shape = ti->shape};
        if (ti->dtype == ST_I64) {
            e[n].i64 = bufs[n];
            if (hit && mu->as_f32) {
                float *f = bufs[n];
                f[0] = 1.0f;
                e[n].dtype = ST_F32;
                e[n].f32 = f;
                e[n].i64 = NULL;
            } else if (hit) {
                ((int64_t *)bufs[n])[0] = mu->i64;
            }
        } else {
            e[n].f32 = bufs[n];
            if (hit)
                ((float *)bufs[n])[mu->element] = mu->f32;
        }
        n++;
    }
    StMetadata meta[16];
    size_t n_meta = 0;
    for (size_t i = 0; i < st->n_metadata; i++)
        if (!mu->meta_key || strcmp(st->metadata[i].key, mu->meta_key) != 0)
            meta[n_meta++] = st->metadata[i];
    if (mu->meta_key && mu->meta_value)
        meta[n_meta++] = (StMetadata){mu->meta_key, mu->meta_value};
    cr_assert_eq(bertc_st_write_file(bad, e, n, meta, n_meta, &err), 0, "%s", err.msg);
    for (size_t i = 0; i < n; i++)
        free(bufs[i]);
    free(bufs);
    free(e);
    bertc_st_close(st);
}

static void expect_load_refused(Ckpt *t, const Mutation *mu, const CheckpointRun *run,
                                const char *says)
{
    char bad[256];
    snprintf(bad, sizeof bad, "%s/bad.safetensors", t->dir);
    mutate(t->path, bad, mu);
    BertcError err = {{0}};
    int64_t step;
    cr_expect_neq(bertc_checkpoint_load(bad, t->s.m.reg, &t->s.o, &t->s.rng, &step, run, &err), 0,
                  "a checkpoint that should say \"%s\" loaded", says);
    cr_expect(strstr(err.msg, bad) && strstr(err.msg, says), "\"%s\" does not name the file "
              "and say \"%s\"", err.msg, says);
    expect_one_line(err.msg);
}

Test(checkpoint_safety, bad_counters_and_values_are_refused_on_load)
{
    Ckpt t;
    ckpt_init(&t);
    BertcError err;
    StMetadata fields[2] = {{"batch_size", "8"}, {"seed", "42"}};
    CheckpointRun run = {fields, 2, 10};
    fill(&t, 5);
    cr_assert_eq(bertc_checkpoint_save(t.path, t.s.m.reg, &t.s.o, &t.s.rng, 5, &run, &err), 0, "%s",
                 err.msg);
    int64_t step;
    cr_assert_eq(bertc_checkpoint_load(t.path, t.s.m.reg, &t.s.o, &t.s.rng, &step, &run, &err), 0,
                 "%s", err.msg);
    const char *q = "encoder.layer.0.attention.self.query.weight";
    char m1[128], v[128];
    snprintf(m1, sizeof m1, "optimizer.exp_avg.%s", q);
    snprintf(v, sizeof v, "optimizer.exp_avg_sq.%s", q);
    struct {
        Mutation mu;
        const char *says;
    } cases[] = {
        {{.tensor = "train.step", .i64 = -1}, "'train.step' is -1, outside 0..10"},
        {{.tensor = "train.step", .i64 = 11}, "'train.step' is 11, outside 0..10"},
        {{.tensor = "optimizer.step", .i64 = 6}, "'optimizer.step' is 6 but 'train.step' is 5"},
        {{.tensor = "optimizer.step", .i64 = -3}, "'optimizer.step' is -3"},
        {{.tensor = "rng.state", .drop = true}, "'rng.state' is missing or not one I64"},
        {{.tensor = "rng.state", .as_f32 = true}, "'rng.state' is missing or not one I64"},
        {{.tensor = q, .element = 3, .f32 = NAN}, "'encoder.layer.0.attention.self.query."
                                                   "weight'[0, 3] is nan"},
        {{.tensor = m1, .element = 0, .f32 = -INFINITY}, "[0, 0] is -inf"},
        {{.tensor = v, .element = 1, .f32 = -1e-3f}, "a second moment must be >= 0"},
        {{.tensor = v, .drop = true}, "no optimizer state 'optimizer.exp_avg_sq."},
        {{.meta_key = "batch_size", .meta_value = "16"},
         "resuming with batch_size 8, but the checkpoint was made with 16"},
        {{.meta_key = "seed"}, "does not record its seed"},
        {{.meta_key = "format", .meta_value = "pt"}, "not a bertc checkpoint"},
        {{.meta_key = "optimizer", .meta_value = "sgd"}, "checkpoint optimizer is 'sgd'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_load_refused(&t, &cases[i].mu, &run, cases[i].says);
    ckpt_close(&t);
}
