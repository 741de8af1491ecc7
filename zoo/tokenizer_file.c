/* zoo/tokenizer_file.c — reading vocab.txt from a path (bare-metal builds
 * leave this file out and call tokenizer_parse on text they hold). */
#include "zoo/zoo.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* bert-base-uncased's vocab is 231 KB; anything past this is not a vocab. */
#define VOCAB_MAX_BYTES (64L << 20)

static int file_size(FILE *fp, const char *path, size_t *out, BertcError *err)
{
    long n = fseek(fp, 0, SEEK_END) == 0 ? ftell(fp) : -1;
    if (n < 0 || fseek(fp, 0, SEEK_SET) != 0)
        return bertc_errorf(err, "%s: cannot find the file size: %s", path, strerror(errno));
    if (n > VOCAB_MAX_BYTES)
        return bertc_errorf(err, "%s: %ld bytes, more than the %ld a vocab.txt may have", path,
                            n, VOCAB_MAX_BYTES);
    *out = (size_t)n;
    return 0;
}

int tokenizer_load(Tokenizer *t, Arena *a, const char *path, BertcError *err)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return bertc_errorf(err, "%s: cannot open: %s", path, strerror(errno));
    size_t n = 0;
    if (file_size(fp, path, &n, err) != 0) {
        fclose(fp);
        return -1;
    }
    /* The file's bytes live in a scratch arena; tokenizer_parse copies them. */
    Arena *scratch = arena_create("vocab file", n + 64);
    char *text = arena_alloc(scratch, n + 1);
    int rc = fread(text, 1, n, fp) == n
                 ? tokenizer_parse(t, a, path, text, n, err)
                 : bertc_errorf(err, "%s: short read: %s", path, strerror(errno));
    fclose(fp);
    arena_destroy(scratch);
    return rc;
}
