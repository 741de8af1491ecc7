/* zoo/train/finetune_out.c — where a fine-tuning run (bertc_finetune)
 * writes, so that a model already in --out is never lost (docs/finetune.md,
 * "The output directory").
 *
 * A run writes into --out itself when --out is new or empty (nothing there
 * to lose), and when --resume continues a run whose checkpoint is in --out.
 * Otherwise --out holds something (a model, a finished run; --force,
 * FINETUNE_OUT_SWAP, is asked for, unless --out is the --model being
 * fine-tuned) and the run writes into
 * the sibling directory OUT.bertc-staging instead: its model at each better
 * evaluation, the checkpoint, trainer_state.json, log.jsonl, loss.svg. Only a
 * run that ends with a kept model (every step done, or a plateau) swaps it in:
 *
 *     rename(OUT, OUT.bertc-old); rename(OUT.bertc-staging, OUT);
 *     the other files of OUT.bertc-old move into OUT; OUT.bertc-old is removed
 *
 * with SIGINT and SIGTERM held back for the two renames. A run that ends any
 * other way (Ctrl-C, a non-finite loss, an error, --stop-after) leaves OUT
 * exactly as it was; its checkpoint stays in the staging directory, where
 * --resume continues it. A crash between the two renames leaves the old
 * model in OUT.bertc-old and the new one in OUT.bertc-staging: the next run
 * refuses to start until one of them is put back. FINETUNE_OUT_IN_PLACE (the
 * examples) writes into --out whatever it holds. */
#define _XOPEN_SOURCE 700   /* realpath (XSI), beside the build's _POSIX_C_SOURCE */
#include "zoo/train/finetune_internal.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* What a run writes into its directory (bertc_model_dir_save's four files,
 * then finetune's own); nothing else there is ever removed or replaced. */
static const char *const run_files[] = {
    "config.json", "model.safetensors", "vocab.txt", "tokenizer_config.json",
    "log.jsonl", "loss.svg", "checkpoint.safetensors", "trainer_state.json"};
#define N_RUN_FILES ((int)(sizeof run_files / sizeof run_files[0]))

static bool is_run_file(const char *name)
{
    for (int i = 0; i < N_RUN_FILES; i++)
        if (strcmp(name, run_files[i]) == 0)
            return true;
    return false;
}

/* a, then b (BERTC_PATH_MAX bytes), or an error naming --out. */
static int concat(char *buf, const char *a, const char *b, BertcError *err)
{
    int n = snprintf(buf, BERTC_PATH_MAX, "%s%s", a, b);
    if (n < 0 || n >= BERTC_PATH_MAX)
        return bertc_errorf(err, "--out %s: the path is too long", a);
    return 0;
}

static bool exists(const char *path)
{
    struct stat st;
    return bertc_link_stat(path, &st) == 0;
}

/* --out as one path (realpath when it exists, so that "m", "./m/" and a link
 * to m name one directory), and the staging and old paths beside it. */
static int resolve(FinetuneOut *o, const char *out, BertcError *err)
{
    char *real = realpath(out, NULL);
    int n = snprintf(o->target, BERTC_PATH_MAX, "%s", real ? real : out);
    free(real);
    if (n < 0 || n >= BERTC_PATH_MAX)
        return bertc_errorf(err, "--out %s: the path is too long", out);
    while (n > 1 && o->target[n - 1] == '/')   /* "m/" -> "m" */
        o->target[--n] = '\0';
    if (n == 0 || strcmp(o->target, "/") == 0)
        return bertc_errorf(err, "--out '%s': give a directory other than the root", out);
    return concat(o->staging, o->target, ".bertc-staging", err) ||
                   concat(o->old, o->target, ".bertc-old", err)
               ? -1
               : 0;
}

/* A file the run reads or writes in its directory that is not a regular
 * file (a FIFO would block, a directory cannot be replaced): refused now,
 * before anything is written. */
static int check_run_files(const FinetuneOut *o, bool resume, BertcError *err)
{
    char path[BERTC_PATH_MAX];
    for (int i = 0; i < N_RUN_FILES; i++) {
        struct stat st;
        if (bertc_path_join(path, o->dir, run_files[i], "--out", err) != 0)
            return -1;
        if (stat(path, &st) != 0 || S_ISREG(st.st_mode))
            continue;
        const char *kind = S_ISDIR(st.st_mode)    ? "a directory"
                           : S_ISFIFO(st.st_mode) ? "a FIFO"
                                                  : "a special file";
        return bertc_errorf(err, "%s is %s, not a regular file: bertc finetune writes it%s; "
                            "move it away", path, kind, resume ? " (and --resume reads it)" : "");
    }
    return 0;
}

/* The swap's parent must let us rename --out and its staging directory. */
static int check_parent(const FinetuneOut *o, BertcError *err)
{
    char parent[BERTC_PATH_MAX];
    snprintf(parent, sizeof parent, "%s", o->target);
    char *slash = strrchr(parent, '/');
    if (!slash)
        snprintf(parent, sizeof parent, ".");
    else
        slash[slash == parent] = '\0';   /* "/m" -> "/" */
    if (access(parent, W_OK | X_OK) != 0)
        return bertc_errorf(err, "--out %s is not empty, so the new model is written beside it "
                            "in %s to be swapped in at the end, but %s is not writable: %s",
                            o->out, o->staging, parent, strerror(errno));
    return 0;
}

int bertc_finetune_out_plan(FinetuneOut *o, const char *out, const char *model,
                            FinetuneOutMode mode, bool resume, BertcError *err)
{
    char checkpoint[BERTC_PATH_MAX];
    *o = (FinetuneOut){.out = out};
    if (resolve(o, out, err) != 0 ||
        bertc_path_join(checkpoint, o->target, "checkpoint.safetensors", "--out", err) != 0)
        return -1;
    if (exists(o->old))
        return bertc_errorf(err, "%s is left from a swap into --out %s that did not finish: it "
                            "holds the model --out had before, and %s the new one; rename the "
                            "one to keep to %s and remove the other", o->old, out, o->staging,
                            out);
    bool staging = exists(o->staging);
    if (mode == FINETUNE_OUT_IN_PLACE) {   /* only refused: an --out that is a file */
        if (bertc_train_check_out_empty(out, true, "", NULL, err) != 0)
            return -1;
    } else if (resume && staging) {
        o->staged = true;
    } else if (!(resume && exists(checkpoint))) {   /* else: continue the run in --out */
        bool nonempty;
        bool in_place = model && bertc_same_file(model, out);
        const char *force_does = exists(checkpoint)
                                     ? "(its model files are replaced only once this run has "
                                       "kept a model), or --resume to continue the run whose "
                                       "checkpoint is there"
                                     : "(its model files are replaced only once this run has "
                                       "kept a model)";
        bool force = mode == FINETUNE_OUT_SWAP || in_place;
        if (bertc_train_check_out_empty(out, force, force_does, &nonempty, err) != 0)
            return -1;
        o->staged = nonempty || staging;
    }
    o->dir = o->staged ? o->staging : out;
    if (o->staged && check_parent(o, err) != 0)
        return -1;
    return check_run_files(o, resume, err);
}

int bertc_finetune_out_make(FinetuneOut *o, bool resume, BertcError *err)
{
    char path[BERTC_PATH_MAX];
    /* a new run in an old staging directory: what the last run left there
     * (its checkpoint, above all) must not be taken for this run's */
    for (int i = 0; o->staged && !resume && i < N_RUN_FILES; i++) {
        if (bertc_path_join(path, o->staging, run_files[i], "--out", err) != 0)
            return -1;
        if (unlink(path) != 0 && errno != ENOENT)
            return bertc_errorf(err, "%s: cannot remove what an earlier run left: %s", path,
                                strerror(errno));
    }
    if (bertc_train_check_out_dir(o->dir, err) != 0)
        return -1;
    o->made = true;
    return 0;
}

/* ---- the swap ------------------------------------------------------------ */

static volatile sig_atomic_t held_signal;

static void hold_signal(int sig)
{
    held_signal = sig;
}

/* One entry of the old directory: a run file goes; anything else (a
 * README, whatever the run does not write) moves into the new one. */
static int carry_one(const char *name, void *ctx)
{
    const FinetuneOut *o = ctx;
    char from[BERTC_PATH_MAX], to[BERTC_PATH_MAX];
    BertcError err;
    if (bertc_path_join(from, o->old, name, "--out", &err) != 0 ||
        bertc_path_join(to, o->target, name, "--out", &err) != 0)
        return 0;   /* left where it is: the warning below names the place */
    if (is_run_file(name))
        unlink(from);
    else if (!exists(to))
        rename(from, to);
    return 0;
}

/* The other files of the old directory move into the new one, its run
 * files go; then it goes. What cannot be moved stays there (rmdir fails),
 * and a warning names it. */
static void carry_over(const FinetuneOut *o)
{
    BertcError err;
    if (bertc_dir_each(o->old, carry_one, (void *)o, &err) != 0 || rmdir(o->old) != 0)
        bertc_warn("the new model is in %s; some of what was there before is left in %s", o->out,
                   o->old);
}

int bertc_finetune_out_commit(FinetuneOut *o, BertcError *err)
{
    if (!o->staged)
        return 0;
    struct sigaction hold = {.sa_handler = hold_signal}, was_int, was_term;
    sigemptyset(&hold.sa_mask);
    held_signal = 0;
    sigaction(SIGINT, &hold, &was_int);
    sigaction(SIGTERM, &hold, &was_term);
    bool had = exists(o->target);
    int rc = 0;
    if (had && rename(o->target, o->old) != 0) {
        rc = bertc_errorf(err, "cannot move --out %s aside to %s (%s): it is as it was, and the "
                          "new model is in %s", o->out, o->old, strerror(errno), o->staging);
    } else if (rename(o->staging, o->target) != 0) {
        int e = errno;
        if (had)
            rename(o->old, o->target);
        rc = bertc_errorf(err, "cannot rename %s to --out %s (%s): --out is as it was, and the "
                          "new model is in %s", o->staging, o->out, strerror(e), o->staging);
    }
    sigaction(SIGINT, &was_int, NULL);
    sigaction(SIGTERM, &was_term, NULL);
    o->kept = rc == 0;
    if (rc == 0 && had)
        carry_over(o);
    if (held_signal)   /* the swap is whole: now stop, as the signal asked */
        raise(held_signal);
    return rc;
}
