/* zoo/tokenizer_file.c — reading vocab.txt from a path (bare-metal builds
 * leave this file out and call tokenizer_parse on text they hold). */
#include "zoo/zoo.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* bert-base-uncased's vocab is 231 KB; anything past this is not a vocab. */
#define VOCAB_MAX_BYTES (64L << 20)

int tokenizer_load(Tokenizer *t, Arena *a, const char *path, BertcError *err)
{
    uint64_t size = 0;
    FILE *fp = bertc_open_read(path, &size, err);
    if (!fp)
        return -1;
    if (size > VOCAB_MAX_BYTES) {
        fclose(fp);
        return bertc_errorf(err, "%s: %" PRIu64 " bytes, more than the %ld a vocab.txt may "
                            "have", path, size, VOCAB_MAX_BYTES);
    }
    size_t n = (size_t)size;
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
