/* zoo/text/tokenizer_file.c — reading vocab.txt from a path (bare-metal builds
 * leave this file out and call bertc_tokenizer_parse on text they hold). */
#include "zoo/text/tokenizer.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* bert-base-uncased's vocab is 231 KB; anything past this is not a vocab. */
#define VOCAB_MAX_BYTES (64L << 20)

/* The file is read whole into a scratch arena (bertc_read_file: a FIFO or a
 * file too big for memory is an error); bertc_tokenizer_parse copies what it keeps
 * into `a`. */
int bertc_tokenizer_load(Tokenizer *t, Arena *a, const char *path, BertcError *err)
{
    Arena *scratch;
    char *text;
    size_t n;
    int rc = bertc_read_file(path, VOCAB_MAX_BYTES, "a vocab.txt", &scratch, &text, &n, err);
    if (rc == 0)
        rc = bertc_tokenizer_parse(t, a, path, text, n, err);
    bertc_arena_destroy(scratch);
    return rc;
}
