/* zoo/train/out_dir.c — whether a run may write its model directory into
 * --out: `bertc finetune` and `bertc quantize` ask before they write
 * anything (zoo/train/train.h). */
#include "zoo/train/train.h"

#include <string.h>
#include <sys/stat.h>

static int found(const char *name, void *ctx)
{
    (void)name, (void)ctx;
    return 1;
}

/* Anything in dir but "." and ".."? (A directory that cannot be read counts
 * as not empty: nothing is known to be safe to replace in it.) */
static bool dir_empty(const char *dir)
{
    BertcError err;
    return bertc_dir_each(dir, found, NULL, &err) == 0;
}

int bertc_train_check_out_empty(const char *out, bool force, const char *force_does,
                                bool *nonempty, BertcError *err)
{
    struct stat st;
    bool full = stat(out, &st) == 0 && (!S_ISDIR(st.st_mode) || !dir_empty(out));
    if (nonempty)
        *nonempty = full;
    if (full && !S_ISDIR(st.st_mode))
        return bertc_errorf(err, "--out %s exists and is not a directory", out);
    if (full && !force)
        return bertc_errorf(err, "--out %s exists and is not empty: give a new directory, or "
                            "--force %s", out, force_does);
    return 0;
}
