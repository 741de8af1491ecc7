/* zoo/text/tokenizer_vocab.c — vocab.txt into a token -> id hash table (HF
 * tokenization_bert.py load_vocab: id = line number - 1, one token a line),
 * stricter than HF: a duplicate token or a blank line is an error, not a
 * silent overwrite. */
#include "zoo/text/tokenizer_internal.h"

#include <string.h>

/* FNV-1a, 32 bits. */
static uint32_t hash_bytes(const char *s, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)s[i]) * 16777619u;
    return h;
}

/* The slot holding `token`, or the empty slot where it would go. */
static uint32_t slot_of(const Tokenizer *t, const char *token, size_t len)
{
    uint32_t i = hash_bytes(token, len) & t->slot_mask;
    for (;; i = (i + 1) & t->slot_mask) {
        int32_t s = t->slots[i];
        if (s == 0)
            return i;
        const char *tok = t->text + t->offset[s - 1];
        if (strncmp(tok, token, len) == 0 && tok[len] == '\0')
            return i;
    }
}

int32_t bertc_tokenizer_id(const Tokenizer *t, const char *token, size_t len)
{
    return t->slots[slot_of(t, token, len)] - 1;
}

const char *bertc_tokenizer_token(const Tokenizer *t, int32_t id)
{
    return id >= 0 && id < t->V ? t->text + t->offset[id] : NULL;
}

/* Counts the lines (tokens) of the text. */
static int32_t count_lines(const char *text, size_t len)
{
    int32_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += text[i] == '\n';
    return n + (text[len - 1] != '\n');
}

/* Checks one line (bytes [b, e) of the copy, line end excluded): not empty,
 * no NUL, valid UTF-8. Returns its length in code points, or -1. */
static int32_t check_line(const Tokenizer *t, const char *s, size_t b, size_t e, int32_t line,
                          BertcError *err)
{
    if (b == e)
        return bertc_errorf(err, "%s:%d: empty line (a vocab has one token a line)", t->name,
                            (int)line);
    int32_t chars = 0;
    for (size_t i = b; i < e; chars++) {
        uint32_t cp;
        int n = bertc_utf8_decode((const uint8_t *)s, e, i, &cp);
        if (n == 0)
            return bertc_errorf(err, "%s:%d: invalid UTF-8 at byte %zu of the file", t->name,
                                (int)line, i);
        if (cp == 0)
            return bertc_errorf(err, "%s:%d: NUL byte at byte %zu of the file", t->name, (int)line, i);
        i += (size_t)n;
    }
    return chars;
}

/* Adds token `id` (already NUL-terminated in the copy) to the hash table. */
static int insert(Tokenizer *t, int32_t *slots, int32_t id, size_t len, BertcError *err)
{
    const char *tok = t->text + t->offset[id];
    uint32_t i = slot_of(t, tok, len);
    if (slots[i] != 0)
        return bertc_errorf(err, "%s:%d: duplicate token '%s' (first on line %d)", t->name,
                            (int)(id + 1), tok, (int)slots[i]);
    slots[i] = id + 1;
    return 0;
}

/* Splits the copy into NUL-terminated lines, checking and indexing each. A
 * UTF-8 byte order mark before the first is not part of its token (HF
 * tokenizers drop it); offsets stay the file's. */
static int index_lines(Tokenizer *t, char *s, size_t len, uint32_t *offset, int32_t *slots,
                       BertcError *err)
{
    size_t b = bertc_utf8_bom(s, len);
    for (int32_t id = 0; id < t->V; id++) {
        size_t e = b;
        while (e < len && s[e] != '\n')
            e++;
        size_t next = e + 1;
        if (e > b && s[e - 1] == '\r')
            e--;                                   /* "\r\n" line end */
        int32_t chars = check_line(t, s, b, e, id + 1, err);
        if (chars < 0)
            return -1;
        s[e] = '\0';
        offset[id] = (uint32_t)b;
        if (insert(t, slots, id, e - b, err) != 0)
            return -1;
        if (chars > t->max_chars)
            t->max_chars = chars;
        b = next;
    }
    return 0;
}

/* The special tokens encode() needs, looked up once. */
static int find_specials(Tokenizer *t, BertcError *err)
{
    static const char *names[5] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
    int32_t *ids[5] = {&t->pad_id, &t->unk_id, &t->cls_id, &t->sep_id, &t->mask_id};
    for (int k = 0; k < 5; k++) {
        *ids[k] = bertc_tokenizer_id(t, names[k], strlen(names[k]));
        if (*ids[k] < 0)
            return bertc_errorf(err, "%s: the vocabulary has no %s token", t->name, names[k]);
    }
    return 0;
}

int bertc_tokenizer_parse(Tokenizer *t, Arena *a, const char *name, const char *text, size_t len,
                    BertcError *err)
{
    memset(t, 0, sizeof *t);
    size_t name_len = strlen(name);
    char *name_copy = bertc_arena_alloc(a, name_len + 1);
    memcpy(name_copy, name, name_len + 1);
    t->name = name_copy;
    t->do_lower_case = true;                       /* bert-base-uncased */
    if (len == 0)
        return bertc_errorf(err, "%s: empty file (a vocab has one token a line)", name);
    if (len > INT32_MAX / 2)
        return bertc_errorf(err, "%s: %zu bytes, more than a vocab may have", name, len);
    t->V = count_lines(text, len);
    uint32_t cap = 1;
    while (cap < 2 * (uint32_t)t->V)
        cap *= 2;                                  /* load factor <= 1/2 */
    char *copy = bertc_arena_alloc(a, len + 1);
    memcpy(copy, text, len);
    copy[len] = '\0';
    uint32_t *offset = bertc_arena_alloc(a, (size_t)t->V * sizeof *offset);
    int32_t *slots = bertc_arena_calloc(a, cap, sizeof *slots);
    t->text = copy;
    t->offset = offset;
    t->slots = slots;
    t->slot_mask = cap - 1;
    if (index_lines(t, copy, len, offset, slots, err) != 0)
        return -1;
    return find_specials(t, err);
}
