/*
 * zoo/tokenizer_internal.h — what the tokenizer's files share and nobody
 * else needs: the generated Unicode tables (zoo/unicode_tables.c, written by
 * tools/gen_unicode_tables.py from what HF tokenizers answers for every code
 * point), strict UTF-8, and the per-word part of HF's BertNormalizer
 * (zoo/tokenizer_text.c).
 */
#ifndef BERTC_ZOO_TOKENIZER_INTERNAL_H
#define BERTC_ZOO_TOKENIZER_INTERNAL_H

#include "zoo/zoo.h"

/* Code-point classes, as HF tokenizers' BertNormalizer and BertPreTokenizer
 * see them; the values are the generator's UC_* flags. */
enum {
    UC_CONTROL = 1,    /* clean_text removes it: U+0000, U+FFFD, Cc Cf Co (not \t \n \r) */
    UC_SPACE = 2,      /* clean_text makes it ' ': \t \n \r and White_Space */
    UC_PUNCT = 4,      /* BertPreTokenizer isolates it: ASCII punctuation or P* */
    UC_MN = 8,         /* nonspacing mark: strip_accents drops it after NFD */
    UC_CJK = 32        /* handle_chinese_chars: a word of its own */
};

typedef struct UcClassRun { uint32_t first; uint8_t flags; } UcClassRun;
typedef struct UcLowerRun { uint32_t first, last; uint8_t stride; int32_t delta; } UcLowerRun;
typedef struct UcCccRun { uint32_t first, last; uint8_t ccc; } UcCccRun;
/* A code point and the sequence it becomes (NFD, or a multi-char lower). */
#define UC_SEQ_MAX 4
typedef struct UcMulti { uint32_t cp; uint8_t n; uint32_t seq[UC_SEQ_MAX]; } UcMulti;

extern const char bertc_uc_unicode_version[];
extern const UcClassRun bertc_uc_class[];
extern const int bertc_uc_class_n;
extern const UcLowerRun bertc_uc_lower[];
extern const int bertc_uc_lower_n;
extern const UcMulti bertc_uc_lower_multi[];
extern const int bertc_uc_lower_multi_n;
extern const UcCccRun bertc_uc_ccc[];
extern const int bertc_uc_ccc_n;
extern const UcMulti bertc_uc_decomp[];
extern const int bertc_uc_decomp_n;

unsigned bertc_uc_flags(uint32_t cp);

/* Strict UTF-8, as Python's decoder: no overlong forms, no surrogates,
 * nothing past U+10FFFF. Returns the sequence's length (1-4) and sets *cp,
 * or 0 when the bytes at s[i] do not start a valid sequence. */
int bertc_utf8_decode(const uint8_t *s, size_t len, size_t i, uint32_t *cp);
/* Writes cp as UTF-8 into out (4 bytes room) and returns the length. */
int bertc_utf8_encode(uint32_t cp, char *out);

/* One character on its way through normalisation, with the span of the
 * ORIGINAL text it came from: code points [start, end), bytes [bstart, bend)
 * (tokenizers' NormalizedString alignment of that character). */
typedef struct NormChar {
    uint32_t cp;
    int32_t start, end;
    int32_t bstart, bend;
} NormChar;

/* Longest output of NFD, drop Mn, then lowercase for one input code point
 * (the generator checks it); word buffers hold UC_EXPAND_MAX per raw char. */
#define UC_EXPAND_MAX 4

/* BertNormalizer's strip_accents and lowercase on one word (already
 * cleaned, no spaces, no CJK): with lower, NFD then drop Mn, then
 * lowercase one character at a time; without it (lowercase=False,
 * strip_accents=None) the characters are copied as they are.
 * raw (n) -> out, returns the count. A character made by decomposition or
 * lowercasing has the span of its source; a dropped one leaves no trace.
 * out must hold UC_EXPAND_MAX * n; tmp the same. */
int bertc_basic_normalize_word(const NormChar *raw, int n, bool lower, NormChar *tmp, NormChar *out);

#endif /* BERTC_ZOO_TOKENIZER_INTERNAL_H */
