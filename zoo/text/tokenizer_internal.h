/*
 * zoo/text/tokenizer_internal.h — what the tokenizer's files share and nobody
 * else needs: the generated Unicode tables (zoo/text/unicode_tables.c, written by
 * tools/gen_unicode_tables.py from what HF tokenizers answers for every code
 * point), strict UTF-8, and the per-word part of HF's BertNormalizer
 * (zoo/text/tokenizer_text.c).
 */
#ifndef BERTC_ZOO_TOKENIZER_INTERNAL_H
#define BERTC_ZOO_TOKENIZER_INTERNAL_H

#include "zoo/text/tokenizer.h"

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

/* NFD of cp begins with a starter (canonical combining class 0): the
 * canonical ordering never moves a character across it. */
bool bertc_uc_nfd_starter(uint32_t cp);

/* One character of NFD waiting for the canonical ordering, and whether it
 * takes its source's place (the first of a decomposition) or is inserted
 * after it (the others): align_nfd's two cases. */
typedef struct SegChar {
    uint32_t cp;
    uint8_t ccc;       /* canonical combining class */
    bool inserted;
} SegChar;

/* BertNormalizer's strip_accents and lowercase, streamed: raw characters of
 * one word in (already cleaned: no controls, spaces or CJK), normalised
 * characters out, one at a time, through emit. When lower (do_lower_case):
 * NFD, drop Mn, then lowercase one character at a time; otherwise each
 * character is handed on as it is (lowercase=False, strip_accents=None).
 *
 * Only the canonical ordering needs memory: the NFD characters since the
 * last starter (seg, cap of them), sorted when the next starter or the end
 * of the word comes. With spans (src not NULL) every character carries the
 * span of the original text it came from, as tokenizers' alignments do; src
 * holds the raw characters whose place-taking NFD character is in seg, and
 * cap must hold the longest run (NORMALIZER_CAP). Without spans (ids only),
 * a nonspacing mark that is not a starter is dropped at once (the stable
 * sort orders the kept ones the same without it; a mark of class 0 still
 * ends the run) and, with cap at least TOKENIZER_MAX_WORD_CHARS + 1, a run
 * that does not fit is not kept: after its starter come more than
 * TOKENIZER_MAX_WORD_CHARS characters, none of them punctuation (no
 * character of nonzero class is, nor lowercases to one:
 * test/test_tokenizer_ids.c tries every such code point), so the word they
 * are in is one [UNK] and too_long says so instead. */
typedef struct Normalizer {
    bool lower;
    SegChar *seg;            /* (cap) NFD characters since the last starter */
    NormChar *src;           /* (cap) their sources' spans, or NULL: ids only */
    int32_t n, n_src, cap;
    bool overflow;           /* ids only: seg ran over, its marks are not kept */
    NormChar last;           /* the span last handed out (inserted characters take it) */
    bool has_last;
    void (*emit)(void *ctx, const NormChar *c);
    void (*too_long)(void *ctx);   /* ids only: > TOKENIZER_MAX_WORD_CHARS non-punctuation */
    void *ctx;
} Normalizer;

/* The longest NFD run a Normalizer with spans may meet, for raw characters
 * that are at most run_chars non-starters (bertc_uc_nfd_starter false) after
 * a starter. */
#define NORMALIZER_CAP(run_chars) (UC_SEQ_MAX * ((run_chars) + 1))

void bertc_normalizer_push(Normalizer *z, const NormChar *raw);
/* Hands out what the word still holds; the next push starts a new word. */
void bertc_normalizer_end_word(Normalizer *z);

/* bertc_normalizer_* on a whole word: raw (n) -> out, returns the count.
 * A character made by decomposition or lowercasing has the span of its
 * source; a dropped one leaves no trace. out must hold UC_EXPAND_MAX * n
 * NormChars; tmp is scratch of the same size. */
int bertc_basic_normalize_word(const NormChar *raw, int n, bool lower, void *tmp, NormChar *out);

#endif /* BERTC_ZOO_TOKENIZER_INTERNAL_H */
