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

/* The part of tokenizer_load that allocates, run under bertc_try while the
 * file is open, so that running out of memory still closes it. */
typedef struct VocabRead {
    Tokenizer *t;
    Arena *a, *scratch;
    FILE *fp;
    const char *path;
    size_t n;
} VocabRead;

static int read_vocab(void *ctx, BertcError *err)
{
    VocabRead *v = ctx;
    /* The file's bytes live in a scratch arena; tokenizer_parse copies them. */
    v->scratch = arena_create("vocab file", v->n + 64);
    char *text = arena_alloc(v->scratch, v->n + 1);
    if (fread(text, 1, v->n, v->fp) != v->n)
        return bertc_errorf(err, "%s: short read: %s", v->path, strerror(errno));
    return tokenizer_parse(v->t, v->a, v->path, text, v->n, err);
}

int tokenizer_load(Tokenizer *t, Arena *a, const char *path, BertcError *err)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return bertc_errorf(err, "%s: cannot open: %s", path, strerror(errno));
    VocabRead v = {.t = t, .a = a, .fp = fp, .path = path};
    int rc = file_size(fp, path, &v.n, err) == 0 ? bertc_try(read_vocab, &v, err) : -1;
    fclose(fp);
    arena_destroy(v.scratch);
    return rc;
}
