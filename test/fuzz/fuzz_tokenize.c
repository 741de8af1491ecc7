/* test/fuzz/fuzz_tokenize.c — libFuzzer target: arbitrary bytes through
 * bertc_tokenizer_encode with the real bert-base-uncased vocabulary (run from the
 * repository root). Byte 0 picks max_len (0..31), padding, whether the
 * rest is split into a pair at byte 1's fraction of it, and do_lower_case. An encoding must be
 * well formed: S within max_len (exactly max_len when padding), ids in the
 * vocabulary, 0/1 masks and types, offsets inside their text and in its
 * order. One text at max_len >= 2 also goes through bertc_tokenizer_encode_ids
 * (a work buffer of exactly bertc_tokenizer_work_bytes()), which must give
 * the same input_ids or the same error. */
#include "zoo/zoo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VOCAB "data/bert-base-uncased-vocab.txt"

static Arena *vocab_arena, *work;
static Tokenizer tok;
static void *ids_work;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    BertcError err;
    vocab_arena = bertc_arena_create("vocab", 1 << 20);
    work = bertc_arena_create("fuzz_tokenize", 1 << 20);
    ids_work = malloc(bertc_tokenizer_work_bytes());
    if (bertc_tokenizer_load(&tok, vocab_arena, VOCAB, &err) != 0) {
        fprintf(stderr, "%s (run from the repository root)\n", err.msg);
        exit(1);
    }
    return 0;
}

static void fail(const char *what, int32_t i)
{
    fprintf(stderr, "malformed encoding: %s at token %d\n", what, i);
    abort();
}

/* The tokens of one text, [first, first + n), follow it in order: neither
 * start nor end ever goes back (tokenizers' alignments are in text order). */
static void check_order(const Encoding *e, int32_t first, int32_t n)
{
    for (int32_t i = first + 1; i < first + n; i++)
        if (e->start[i] < e->start[i - 1] || e->end[i] < e->end[i - 1] ||
            e->byte_start[i] < e->byte_start[i - 1])
            fail("offsets out of text order", i);
}

static void check(const Encoding *e, int32_t max_len, bool pad, size_t len_a, size_t len_b)
{
    if (max_len > 0 && (e->S > max_len || (pad && e->S != max_len)))
        fail("S against max_len", e->S);
    for (int32_t i = 0; i < e->S; i++) {
        if (e->input_ids[i] < 0 || e->input_ids[i] >= tok.V)
            fail("id outside the vocabulary", i);
        if ((e->attention_mask[i] | e->token_type_ids[i]) & ~1)
            fail("mask or type not 0/1", i);
        size_t len = e->token_type_ids[i] ? len_b : len_a;
        if (e->start[i] < 0 || e->start[i] > e->end[i] || e->byte_start[i] < 0 ||
            e->byte_start[i] > e->byte_end[i] || (size_t)e->byte_end[i] > len)
            fail("offsets", i);
    }
    check_order(e, 1, e->n_a);
    check_order(e, e->n_a + 2, e->n_b);
}

/* encode_ids agrees with encode (rc, and e or err.msg, its result). */
static void check_ids(const char *text, size_t len, int32_t max_len, int rc, const Encoding *e,
                      const BertcError *err)
{
    int32_t ids[32], n;
    BertcError ids_err = {{0}};
    int ids_rc = bertc_tokenizer_encode_ids(&tok, ids_work, bertc_tokenizer_work_bytes(), text,
                                            len, max_len, ids, &n, &ids_err);
    if (ids_rc != rc || (rc != 0 && strcmp(ids_err.msg, err->msg) != 0))
        fail("encode_ids' error differs from encode's", 0);
    if (rc == 0 && n != e->S)
        fail("encode_ids' length differs from encode's", n);
    for (int32_t i = 0; rc == 0 && i < n; i++)
        if (ids[i] != e->input_ids[i])
            fail("encode_ids' id differs from encode's", i);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    int32_t max_len = data[0] & 31;
    bool pad = data[0] & 32, pair = data[0] & 64;
    tok.do_lower_case = !(data[0] & 128);
    const char *text = (const char *)data + 2;
    size_t n = size - 2, len_a = pair ? n * data[1] / 255 : n, len_b = n - len_a;
    Encoding e;
    BertcError err = {{0}};
    int rc = bertc_tokenizer_encode(&tok, work, text, len_a, pair ? text + len_a : NULL, len_b,
                                    max_len, pad, &e, &err);
    if (rc == 0)
        check(&e, max_len, pad, len_a, pair ? len_b : 0);
    else if (!err.msg[0])
        abort();
    if (!pair && !pad && max_len >= 2)
        check_ids(text, len_a, max_len, rc, &e, &err);
    bertc_arena_reset(work);
    return 0;
}
