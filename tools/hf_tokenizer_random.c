/* tools/hf_tokenizer_random.c — encodes the random cases that
 * tools/hf_tokenizer_random.js wrote, with bertc, one JSON line per case,
 * for that script to compare with Hugging Face's answers
 * (tools/hf_tokenizer_fixtures.sh --random N builds and runs both).
 *
 *     hf_tokenizer_random VOCAB uncased|cased CASES.bin > bertc.jsonl
 *
 * CASES.bin holds, per case: int32 len_a, the bytes of A, int32 len_b (-1:
 * no B), the bytes of B, int32 max_len, uint8 pad (little-endian). */
#include "zoo/zoo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool read_all(FILE *fp, void *p, size_t n) { return fread(p, 1, n, fp) == n; }

/* A length-prefixed text (length -1: none) into a malloc'd buffer. */
static bool read_text(FILE *fp, char **s, int32_t *len)
{
    *s = NULL;
    if (!read_all(fp, len, 4))
        return false;
    if (*len < 0)
        return true;
    *s = malloc((size_t)*len + 1);
    return *s && read_all(fp, *s, (size_t)*len);
}

static void print_ints(const char *key, const int32_t *v, int32_t n)
{
    printf("\"%s\":[", key);
    for (int32_t i = 0; i < n; i++)
        printf("%s%d", i ? "," : "", v[i]);
    printf("]");
}

static void print_encoding(const Encoding *e)
{
    printf("{");
    print_ints("ids", e->input_ids, e->S);
    printf(",");
    print_ints("types", e->token_type_ids, e->S);
    printf(",\"offsets\":[");
    for (int32_t i = 0; i < e->S; i++)
        printf("%s[%d,%d]", i ? "," : "", e->start[i], e->end[i]);
    printf("]}\n");
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: hf_tokenizer_random VOCAB uncased|cased CASES.bin\n");
        return 2;
    }
    Arena *vocab = bertc_arena_create("vocab", 1 << 20), *work = bertc_arena_create("work", 1 << 20);
    Tokenizer t;
    BertcError err = {{0}};
    FILE *fp = fopen(argv[3], "rb");
    if (bertc_tokenizer_load(&t, vocab, argv[1], &err) != 0 || !fp) {
        fprintf(stderr, "hf_tokenizer_random: %s\n", fp ? err.msg : "cannot open the cases");
        return 1;
    }
    t.do_lower_case = strcmp(argv[2], "uncased") == 0;
    char *a, *b;
    int32_t len_a, len_b, max_len;
    uint8_t pad;
    while (read_text(fp, &a, &len_a) && read_text(fp, &b, &len_b) &&
           read_all(fp, &max_len, 4) && read_all(fp, &pad, 1)) {
        Encoding e;
        if (bertc_tokenizer_encode(&t, work, a, (size_t)len_a, b, b ? (size_t)len_b : 0, max_len,
                             pad, &e, &err) == 0)
            print_encoding(&e);
        else
            printf("{\"error\":\"%s\"}\n", err.msg);
        free(a);
        free(b);
        bertc_arena_reset(work);
    }
    fclose(fp);
    bertc_arena_destroy(work);
    bertc_arena_destroy(vocab);
    return 0;
}
