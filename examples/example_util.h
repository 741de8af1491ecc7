/* examples/example_util.h — what the training examples share: the standard
 * flags, building a model with the examples' init, a pass over held-out rows
 * in batches, argmax and reading a whole file. Static inline functions in a
 * header (inline: an example need not use them all), so each example stays
 * one .c file and one binary, as bench/bench_util.h does for the benches.
 *
 * The examples name their data files relative to the repository root
 * ("data/topics.tsv"). BERTC_DATA_DIR, when set, is that root: the directory
 * holding data/ (`bertc train` sets it to the source tree or to the installed
 * PREFIX/share/bertc). Unset, the names are relative to the working
 * directory. Output paths (--out) always are.
 *
 * An example's make_batch (TrainTask) takes row numbers of its whole data
 * set, so the same function fills training batches (rows 0..n_train-1) and
 * held-out ones (rows n_train..):
 *
 *     HeldOut h = held_out(d->n_train, d->n - d->n_train, 64, "eval");
 *     while (held_out_next(&h, make_batch, d, m, g, err))
 *         ... score bertc_outputs_get(&h.out, "logits") for rows h.row .. h.row + h.n - 1 ...
 *     if (h.failed)
 *         return -1; */
#ifndef BERTC_EXAMPLE_UTIL_H
#define BERTC_EXAMPLE_UTIL_H

#include "zoo/train/train.h"

#include <assert.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HELD_OUT_MAX 64   /* the largest evaluation batch */
#define EXAMPLE_DATA_FILES 4   /* data files an example may name */

/* The path to read the data file `rel` ("data/topics.tsv") from:
 * "$BERTC_DATA_DIR/rel" when BERTC_DATA_DIR is set, else rel. Each name is
 * resolved once and kept for the run, so the pointer stays valid and can be
 * passed around and printed. */
static inline const char *example_data_path(const char *rel)
{
    static struct { const char *rel; char path[BERTC_PATH_MAX]; } known[EXAMPLE_DATA_FILES];
    static int n_known;
    for (int i = 0; i < n_known; i++)
        if (!strcmp(known[i].rel, rel))
            return known[i].path;
    assert(n_known < EXAMPLE_DATA_FILES);
    const char *root = getenv("BERTC_DATA_DIR");
    if (!root || !*root || bertc_path_join(known[n_known].path, root, rel, "BERTC_DATA_DIR",
                                           NULL) != 0)   /* too long: example_need_data says so */
        snprintf(known[n_known].path, BERTC_PATH_MAX, "%s", rel);
    known[n_known].rel = rel;
    return known[n_known++].path;
}

/* 0 when the data file `rel` can be read; else -1, err naming the full path
 * tried and the two ways to point the example at its data. */
static inline int example_need_data(const char *rel, BertcError *err)
{
    const char *path = example_data_path(rel);
    const char *root = getenv("BERTC_DATA_DIR");
    char joined[BERTC_PATH_MAX];
    if (root && *root && bertc_path_join(joined, root, rel, "BERTC_DATA_DIR", err) != 0)
        return -1;
    BertcError why;
    FILE *f = bertc_open_read(path, NULL, &why);
    if (f) {
        fclose(f);
        return 0;
    }
    if (access(path, F_OK) == 0)   /* there, but not a readable file: say why */
        return bertc_errorf(err, "%s", why.msg);
    if (root && *root)
        return bertc_errorf(err, "%s: cannot open; BERTC_DATA_DIR=%s must be the directory "
                            "holding data/ (the bertc repository root, or PREFIX/share/bertc)",
                            path, root);
    char cwd[BERTC_PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))   /* rel is relative: name the directory it was tried in */
        snprintf(cwd, sizeof cwd, ".");
    return bertc_errorf(err, "%s/%s: cannot open; run from the bertc repository root, or set "
                        "BERTC_DATA_DIR to the directory holding data/", cwd, path);
}

/* An example's main: BERTC_ISA and BERTC_THREADS checked exactly as `bertc`
 * checks them (exit 2), then run(argc, argv, err); an error is one line
 * "NAME: message" and exit 1. */

/* --checkpoint naming a file that an example writes into OUT besides the
 * checkpoint (the model, a picture, another phase's checkpoint) is refused:
 * the two writes would replace each other and the checkpoint be lost. The
 * directories are compared by device and inode, so "OUT/../OUT/x" is seen. */
static inline int example_check_checkpoint(const char *path, const char *out, BertcError *err)
{
    static const char *const written[] = {"model.safetensors", "config.json", "loss.svg",
                                          "attention.svg", "quasi_attention.svg",
                                          "pretrain.safetensors", "scratch.safetensors",
                                          "vocab.txt", "tokenizer_config.json", "log.jsonl",
                                          "trainer_state.json"};
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    char dir[BERTC_PATH_MAX];
    size_t n = slash ? (size_t)(slash - path) : 1;
    if (n >= sizeof dir)
        return 0;   /* bertc_st_check_writable refuses it */
    memcpy(dir, slash ? (n ? path : "/") : ".", n ? n : 1);
    dir[n ? n : 1] = '\0';
    struct stat a, b;
    if (stat(dir, &a) != 0 || stat(out, &b) != 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino)
        return 0;
    for (size_t i = 0; i < sizeof written / sizeof written[0]; i++)
        if (!strcmp(base, written[i]))
            return bertc_errorf(err, "--checkpoint %s is the %s the example writes into --out "
                                "%s; the two would replace each other: give the checkpoint "
                                "another name", path, written[i], out);
    return 0;
}

/* The standard training flags (zoo/train/train.h) onto the example's defaults;
 * the checkpoint defaults to OUT/checkpoint.safetensors, written into
 * `checkpoint` (BERTC_PATH_MAX bytes, as every OUT/NAME path of the
 * examples, built by bertc_path_join). An OUT too long for a directory
 * (bertc_path_check_dir) is refused naming --out. OUT is created and checked
 * writable here, before any data is read or any step is trained. */
static inline int example_flags(int argc, char **argv, TrainOptions *opt, const char **out,
                                char checkpoint[BERTC_PATH_MAX], BertcError *err)
{
    if (bertc_train_parse_flags(argc, argv, opt, out, err) != 0 ||
        bertc_path_check_dir(*out, "--out", err) != 0 ||
        bertc_path_join(checkpoint, *out, "checkpoint.safetensors", "--out", err) != 0)
        return -1;
    if (bertc_train_check_out_dir(*out, err) != 0 ||
        (opt->checkpoint && example_check_checkpoint(opt->checkpoint, *out, err) != 0))
        return -1;
    if (!opt->checkpoint)
        opt->checkpoint = checkpoint;
    return 0;
}

/* main()'s exit status after a failed run: 128 + the signal when SIGINT or
 * SIGTERM stopped the training (130, 143: the run saved its checkpoint
 * first, see zoo/train/train.h), else 1. */
static inline int example_exit_status(void)
{
    int sig = bertc_train_stop_signal();
    return sig ? 128 + sig : 1;
}

/* SIGINT or SIGTERM outside bertc_train_run (loading the data, between two
 * phases, writing the pictures): nothing is due to be saved (bertc_train_run saved
 * at its end), so end at once, with one line and the status a shell expects
 * of a program stopped by that signal (130, 143), not by dying of it. During
 * bertc_train_run its own handlers take over (finish the step, save) and put this
 * one back afterwards. Only async-signal-safe calls here. */
static const char *example_name = "example";

static inline void example_stop_now(int sig)
{
    const char *what = sig == SIGINT ? ": stopped by SIGINT" : ": stopped by SIGTERM";
    const char *rest = " outside training (any checkpoint written stays)\n";
    ssize_t ignored = write(STDERR_FILENO, example_name, strlen(example_name));
    ignored = write(STDERR_FILENO, what, strlen(what));
    ignored = write(STDERR_FILENO, rest, strlen(rest));
    (void)ignored;
    _exit(128 + sig);
}

/* Install example_stop_now for SIGINT and SIGTERM, except for a signal the
 * program was started with ignored (a background job, nohup): that stays
 * ignored. */
static inline void example_catch_signals(void)
{
    int sigs[2] = {SIGINT, SIGTERM};
    for (int i = 0; i < 2; i++) {
        struct sigaction old, sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = example_stop_now;
        sigemptyset(&sa.sa_mask);
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
            sigaction(sigs[i], &sa, NULL);
    }
}

/* The whole main of an example: BERTC_ISA/BERTC_THREADS checked as bertc
 * checks them (exit 2), then run() under a guard (bertc_catch_begin), so
 * that even a failure the library meets outside its own entry points is one
 * line, not an abort (exit 1, or 128 + the signal that stopped training). */
static inline int example_main(const char *name, int argc, char **argv,
                               int (*run)(int, char **, BertcError *))
{
    /* static: bertc_fatal writes it after the setjmp, and a local so written
     * would be indeterminate after the jump (C11 7.13.2.1) */
    static BertcError err;
    /* a file-size limit (ulimit -f) reached while saving must be a failed
     * write (EFBIG: one line, the old checkpoint kept), not SIGXFSZ's kill */
    signal(SIGXFSZ, SIG_IGN);
    example_name = name;
    example_catch_signals();
    if (bertc_check_env(&err) != 0) {
        fprintf(stderr, "%s: %s\n", name, err.msg);
        return 2;
    }
    BertcCatch guard;
    bertc_catch_begin(&guard, &err);
    if (setjmp(guard.env) != 0) {
        fprintf(stderr, "%s: %s\n", name, err.msg);
        return example_exit_status();
    }
    int rc = run(argc, argv, &err);
    bertc_catch_end(&guard);
    if (rc != 0) {
        fprintf(stderr, "%s: %s\n", name, err.msg);
        return example_exit_status();
    }
    return 0;
}

/* Build the model of `cfg` in `arena`, its weights drawn as every example
 * draws them: seed 7, normal(0, initializer_range). */
static inline int example_model(Model *m, Arena *arena, const BertConfig *cfg, BertcError *err)
{
    if (bertc_model_build(m, arena, cfg, err) != 0)
        return -1;
    Rng init = bertc_rng_seed(7);
    bertc_registry_init_weights(m->reg, &init, cfg->initializer_range);
    return 0;
}

/* One pass over the held-out rows first .. first + n_eval - 1, at most
 * `size` rows a forward pass. */
typedef struct HeldOut {
    int64_t first, n_eval, size;
    const char *name;                 /* the batches' source, for errors */
    int64_t row, n;                   /* this batch: rows row .. row + n - 1 */
    int64_t idx[HELD_OUT_MAX];
    Batch batch;
    Outputs out;
    bool failed;
} HeldOut;

static inline HeldOut held_out(int64_t first, int64_t n_eval, int64_t size, const char *name)
{
    assert(size > 0 && size <= HELD_OUT_MAX);
    return (HeldOut){.first = first, .n_eval = n_eval, .size = size, .name = name,
                     .row = first, .n = 0};
}

/* The next batch: made by make_batch (as in training) in a fresh step of g
 * and run forward into h->out. false when every row is done, or on an
 * error (h->failed, err set). */
static inline bool held_out_next(HeldOut *h,
                                 int (*make_batch)(void *, const int64_t *, int64_t, Graph *,
                                                   Batch *, int64_t *, BertcError *),
                                 void *data, Model *m, Graph *g, BertcError *err)
{
    h->row += h->n;
    int64_t left = h->first + h->n_eval - h->row, tokens;
    if (left <= 0)
        return false;
    h->n = left < h->size ? left : h->size;
    for (int64_t j = 0; j < h->n; j++)
        h->idx[j] = h->row + j;
    bertc_ag_graph_reset(g);
    bertc_batch_init(&h->batch, h->name);
    bertc_outputs_init(&h->out);
    h->failed = make_batch(data, h->idx, h->n, g, &h->batch, &tokens, err) != 0 ||
                bertc_model_forward(m, g, &h->batch, &h->out, err) != 0;
    return !h->failed;
}

/* The index of the largest of x[0..n-1] (the first, on ties). */
static inline int64_t example_argmax(const float *x, int64_t n)
{
    int64_t best = 0;
    for (int64_t k = 1; k < n; k++)
        if (x[k] > x[best])
            best = k;
    return best;
}

/* A whole file, NUL-terminated (free it); NULL with err set if it cannot be
 * read (not a regular file, a read error, out of memory) or holds a NUL. */
static inline char *example_read_file(const char *path, size_t *len, BertcError *err)
{
    uint64_t n = 0;
    FILE *f = bertc_open_read(path, &n, err);
    if (!f)
        return NULL;
    char *buf = n < SIZE_MAX ? malloc((size_t)n + 1) : NULL;
    if (!buf)
        bertc_errorf(err, "%s: out of memory for its %" PRIu64 " bytes", path, n);
    else if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
        bertc_errorf(err, "%s: short read", path);
        free(buf);
        buf = NULL;
    }
    fclose(f);
    /* the examples split the text with string functions: a NUL byte would
     * silently end the file there */
    const char *nul = buf ? memchr(buf, '\0', (size_t)n) : NULL;
    if (nul) {
        bertc_errorf(err, "%s: NUL byte at byte %zu; a text data file has none", path,
                     (size_t)(nul - buf));
        free(buf);
        return NULL;
    }
    if (buf) {
        buf[n] = '\0';
        *len = (size_t)n;
    }
    return buf;
}

/* err (set by a failed bertc_tokenizer_encode of line `line` of `path`) with the
 * place in front, so the message names the file. */
static inline int example_line_error(const char *path, int64_t line, BertcError *err)
{
    BertcError inner = *err;
    return bertc_errorf(err, "%s:%lld: %s", path, (long long)line, inner.msg);
}

/* A data set of n rows of which 4/5 train and the rest are held out needs
 * at least 2, and fits in max: else an error naming the file. */
static inline int example_check_rows(const char *path, int64_t n, int64_t max, bool more,
                                     BertcError *err)
{
    if (more)
        return bertc_errorf(err, "%s: more than %lld examples; the example takes at most "
                            "%lld (cut the file)", path, (long long)max, (long long)max);
    if (n < 2)
        return bertc_errorf(err, "%s: %lld examples; at least 2 are needed (4/5 to train, "
                            "the rest held out)", path, (long long)n);
    return 0;
}

#endif
