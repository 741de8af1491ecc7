/* test/fuzz/fuzz_vocab.c — libFuzzer target: any bytes as vocab.txt
 * (bertc_tokenizer_parse). A vocabulary that loads must map every id back to
 * itself, and must tokenize its own text (capped) into valid ids. */
#include "zoo/zoo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static Arena *arena;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_ids(const Tokenizer *t)
{
    for (int32_t id = 0; id < t->V; id++) {
        const char *tok = bertc_tokenizer_token(t, id);
        if (!tok || bertc_tokenizer_id(t, tok, strlen(tok)) != id) {
            fprintf(stderr, "id %d (\"%s\") does not map back to itself\n", id,
                    tok ? tok : "(null)");
            abort();
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!arena)
        arena = bertc_arena_create("fuzz_vocab", 1 << 20);
    Tokenizer t;
    BertcError err = {{0}};
    const char *text = (const char *)data;
    if (bertc_tokenizer_parse(&t, arena, "fuzz.txt", text, size, &err) == 0) {
        check_ids(&t);
        Encoding e;
        size_t n = size < 512 ? size : 512;
        if (bertc_tokenizer_encode(&t, arena, text, n, NULL, 0, 0, false, &e, &err) == 0)
            for (int32_t i = 0; i < e.S; i++)
                if (e.input_ids[i] < 0 || e.input_ids[i] >= t.V)
                    abort();
    } else if (!strstr(err.msg, "fuzz.txt")) {
        fprintf(stderr, "error without the file's name: \"%s\"\n", err.msg);
        abort();
    }
    bertc_arena_reset(arena);
    return 0;
}
