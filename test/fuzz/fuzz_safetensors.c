/* test/fuzz/fuzz_safetensors.c — libFuzzer target: any bytes as a
 * safetensors file (bertc_st_open_memory), then every tensor read as float32,
 * as int32 and as int8. A bad file must be an error with a message, never a crash,
 * a sanitizer report or an allocation beyond what the file's size allows.
 *
 *     make fuzz FUZZ_SECONDS=60        (all targets; see the Makefile) */
#include "nn/safetensors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An error must say something, and name the file. */
static void check_message(const BertcError *err)
{
    if (!strstr(err->msg, "fuzz.safetensors")) {
        fprintf(stderr, "error without the file's name: \"%s\"\n", err->msg);
        abort();
    }
}

static void read_all(const SafeTensors *st, size_t file_size)
{
    for (size_t i = 0; i < st->n_tensors; i++) {
        const StTensorInfo *t = &st->tensors[i];
        if (bertc_st_find(st, t->name) != t) {
            fprintf(stderr, "bertc_st_find(\"%s\") does not find its own entry\n", t->name);
            abort();
        }
        /* Every element takes at least one byte of the file. */
        if ((uint64_t)t->numel > file_size || t->end > st->data_length) {
            fprintf(stderr, "'%s': %lld elements, bytes [%llu, %llu) in a %zu-byte file\n",
                    t->name, (long long)t->numel, (unsigned long long)t->begin,
                    (unsigned long long)t->end, file_size);
            abort();
        }
        size_t n = (size_t)t->numel;
        float *f = malloc(sizeof(float) * (n ? n : 1));
        int32_t *ids = malloc(sizeof(int32_t) * (n ? n : 1));
        int8_t *q = malloc(n ? n : 1);
        BertcError err = {{0}};
        if (bertc_st_read_f32(st, t, f, n, &err) != 0)
            check_message(&err);
        if (bertc_st_read_i32(st, t, ids, n, &err) != 0)
            check_message(&err);
        if (bertc_st_read_i8(st, t, q, n, &err) != 0)
            check_message(&err);
        free(q);
        free(f);
        free(ids);
    }
    for (size_t i = 0; i < st->n_metadata; i++)
        if (bertc_st_metadata_get(st, st->metadata[i].key) == NULL)
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    SafeTensors *st;
    BertcError err = {{0}};
    if (bertc_st_open_memory(NULL, "fuzz.safetensors", data, size, &st, &err) != 0) {
        check_message(&err);
        return 0;
    }
    read_all(st, size);
    bertc_st_close(st);
    return 0;
}
