/* zoo/text/tokenizer.c — text to WordPiece ids and offsets, as Hugging Face
 * BertTokenizerFast (tokenizers: the added-token split, BertNormalizer,
 * BertPreTokenizer, WordPiece, BertProcessing, utils/truncation.rs).
 * The Unicode work of one word is in zoo/text/tokenizer_text.c, the vocab in
 * zoo/text/tokenizer_vocab.c; the whole pipeline is described in
 * zoo/text/tokenizer.h and docs/tokenizer.md.
 *
 * One loop, a character at a time, serves both encoders:
 *
 *   bytes -> tokenize_text: special tokens, clean_text, CJK, whitespace
 *         -> Normalizer (tokenizer_text.c): NFD, drop Mn, lowercase
 *         -> take_char: punctuation split into pre-tokens (<= 100 chars kept)
 *         -> wordpiece -> push: Piece with offsets, or id only
 *
 * bertc_tokenizer_encode keeps every piece with its offsets, in an arena
 * sized by the text; bertc_tokenizer_encode_ids keeps the ids of the first
 * max_len - 2 in the caller's array and stops there, in a fixed buffer. */
#include "zoo/text/tokenizer_internal.h"

#include <string.h>

/* What a piece is to the pair truncation of tokenizers (encoded_of_pair). */
typedef enum { PIECE_CONT, PIECE_WORD_START, PIECE_SPECIAL } PieceKind;

/* One wordpiece of a text, with its span in the original text. */
typedef struct Piece {
    int32_t id;
    int32_t start, end, bstart, bend;
    PieceKind kind;
} Piece;

/* One text on its way from bytes to pieces, one character at a time. Its
 * memory does not grow with the text: the normaliser's run of marks, the
 * current pre-token (at most TOKENIZER_MAX_WORD_CHARS characters: a longer
 * one is an [UNK] whatever it holds) and the pieces. With spans (at and
 * pieces) it keeps every piece and its offsets (bertc_tokenizer_encode);
 * without (ids), only the first cap ids (bertc_tokenizer_encode_ids). */
typedef struct Stream {
    const Tokenizer *t;
    const char *s;
    size_t len;
    Normalizer norm;        /* strip_accents + lowercase of the current word */
    uint32_t *cp;           /* (TOKENIZER_MAX_WORD_CHARS) the current pre-token */
    NormChar *at;           /* (TOKENIZER_MAX_WORD_CHARS) its spans, or NULL: ids only */
    int32_t word_n;         /* characters in cp */
    bool too_long;          /* more than TOKENIZER_MAX_WORD_CHARS: one [UNK] */
    Piece *pieces;          /* (cap) the pieces, or NULL: ids only */
    int32_t *ids;           /* (cap) ids only: the pieces' ids */
    int32_t n_pieces, cap;  /* n_pieces may pass cap: pieces past it are not kept */
} Stream;

static void push(Stream *w, Piece p)
{
    if (w->n_pieces < w->cap) {
        if (w->pieces)
            w->pieces[w->n_pieces] = p;
        else
            w->ids[w->n_pieces] = p.id;
    }
    w->n_pieces++;
}

/* ------------------------------------------------------------------------ */
/* WordpieceTokenizer.tokenize: greedy longest-match-first                   */
/* ------------------------------------------------------------------------ */

/* A piece of the pre-token's chars [from, to) spans the original text from
 * its first char's start to its last char's end (tokenizers'
 * expand_alignments). */
static void push_piece(Stream *w, int32_t id, int32_t from, int32_t to, PieceKind kind)
{
    const NormChar none = {0};
    const NormChar *a = w->at ? &w->at[from] : &none, *b = w->at ? &w->at[to - 1] : &none;
    push(w, (Piece){.id = id, .start = a->start, .end = b->end, .bstart = a->bstart,
                    .bend = b->bend, .kind = kind});
}

/* The id of chars cp[0, n), "##"-prefixed when it continues a word, or -1. */
static int32_t lookup_chars(const Tokenizer *t, const uint32_t *cp, int32_t n, bool cont)
{
    char buf[2 + 4 * TOKENIZER_MAX_WORD_CHARS];
    size_t len = 0;
    if (cont) {
        buf[len++] = '#';
        buf[len++] = '#';
    }
    for (int32_t i = 0; i < n; i++)
        len += (size_t)bertc_utf8_encode(cp[i], buf + len);
    return bertc_tokenizer_id(t, buf, len);
}

/* The pre-token -> its pieces, or one [UNK] for all of it when it is longer
 * than max_input_chars_per_word or some suffix has no match. */
static void wordpiece(Stream *w)
{
    const Tokenizer *t = w->t;
    int32_t n = w->word_n, first = w->n_pieces;
    for (int32_t start = 0; start < n && !w->too_long;) {
        int32_t end = n - start < t->max_chars ? n : start + t->max_chars;
        int32_t id = -1;
        while (end > start && (id = lookup_chars(t, w->cp + start, end - start, start > 0)) < 0)
            end--;
        if (id < 0)
            break;
        push_piece(w, id, start, end, start == 0 ? PIECE_WORD_START : PIECE_CONT);
        start = end;
        if (start == n)
            return;
    }
    w->n_pieces = first;
    push_piece(w, t->unk_id, 0, n, PIECE_WORD_START);
}

/* ------------------------------------------------------------------------ */
/* BertPreTokenizer: every punctuation character is a word of its own        */
/* ------------------------------------------------------------------------ */

static void end_pretoken(Stream *w)
{
    if (w->word_n > 0 || w->too_long)
        wordpiece(w);
    w->word_n = 0;
    w->too_long = false;
}

/* A character past TOKENIZER_MAX_WORD_CHARS makes the word one [UNK], which
 * spans to it: it takes the last slot's span. */
static void word_push(Stream *w, const NormChar *c)
{
    if (w->word_n == TOKENIZER_MAX_WORD_CHARS) {
        w->too_long = true;
        if (w->at)
            w->at[w->word_n - 1] = *c;
        return;
    }
    w->cp[w->word_n] = c->cp;
    if (w->at)
        w->at[w->word_n] = *c;
    w->word_n++;
}

/* The normaliser's output, one character at a time (Normalizer.emit). */
static void take_char(void *ctx, const NormChar *c)
{
    Stream *w = ctx;
    bool punct = (bertc_uc_flags(c->cp) & UC_PUNCT) != 0;
    if (punct)
        end_pretoken(w);
    word_push(w, c);
    if (punct)
        end_pretoken(w);
}

static void mark_too_long(void *ctx)
{
    ((Stream *)ctx)->too_long = true;
}

/* ------------------------------------------------------------------------ */
/* The added-token split and BertNormalizer's clean_text, CJK and spaces     */
/* ------------------------------------------------------------------------ */

/* The special token written at byte i (the added-token split of tokenizers
 * runs on the original text before anything else: "[CLS]" is one token
 * anywhere, even inside a word, "[cls]" is not): its id and length (bytes
 * and code points: the names are ASCII), or 0. */
static int32_t special_at(const Stream *w, size_t i, int32_t *id)
{
    static const char *names[5] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
    const Tokenizer *t = w->t;
    const int32_t ids[5] = {t->pad_id, t->unk_id, t->cls_id, t->sep_id, t->mask_id};
    if (w->s[i] != '[')
        return 0;
    for (int k = 0; k < 5; k++) {
        size_t len = strlen(names[k]);
        if (i + len <= w->len && memcmp(w->s + i, names[k], len) == 0) {
            *id = ids[k];
            return (int32_t)len;
        }
    }
    return 0;
}

/* clean_text removes U+0000, U+FFFD and controls before anything else
 * looks at the text (so U+0085, a control that Unicode calls a space,
 * never splits a word). */
static bool is_removed(unsigned flags)
{
    return (flags & UC_CONTROL) != 0;
}

/* The end of a word (whitespace, a CJK ideograph, a special token, the end
 * of the text): what the normaliser holds, then the last pre-token. A word
 * left empty (only marks) vanishes: it has no characters to make a token of. */
static void end_word(Stream *w)
{
    bertc_normalizer_end_word(&w->norm);
    end_pretoken(w);
}

/* One character of the text at byte *i, code point *ci (the text is valid
 * UTF-8: scan_text checked it). A removed character is gone: it splits
 * nothing and no token's offsets cover it (tokenizers drops its alignment),
 * so "e\u200b" is 'e' at (0, 1). Whitespace (mapped to ' ') ends a word; a
 * CJK ideograph (handle_chinese_chars puts ' ' around it) is one. */
static void take_raw(Stream *w, size_t *i, int32_t *ci)
{
    uint32_t cp;
    int k = bertc_utf8_decode((const uint8_t *)w->s, w->len, *i, &cp);
    NormChar c = {cp, *ci, *ci + 1, (int32_t)*i, (int32_t)(*i + (size_t)k)};
    *i += (size_t)k;
    (*ci)++;
    unsigned f = bertc_uc_flags(cp);
    if (is_removed(f))
        return;
    if (f & (UC_SPACE | UC_CJK))
        end_word(w);
    if (f & UC_SPACE)
        return;
    bertc_normalizer_push(&w->norm, &c);
    if (f & UC_CJK)
        end_word(w);
}

/* The whole pipeline, streamed. It stops once cap pieces are final: a
 * piece is, once the pre-token that made it is over, and every pre-token
 * ends inside the call that adds its pieces. */
static void tokenize_text(Stream *w)
{
    size_t i = 0;
    int32_t ci = 0;
    while (i < w->len && w->n_pieces < w->cap) {
        int32_t id, n = special_at(w, i, &id);
        if (n == 0) {
            take_raw(w, &i, &ci);
            continue;
        }
        end_word(w);
        push(w, (Piece){.id = id, .start = ci, .end = ci + n, .bstart = (int32_t)i,
                        .bend = (int32_t)i + n, .kind = PIECE_SPECIAL});
        i += (size_t)n;
        ci += n;
    }
    end_word(w);
}

/* Strict UTF-8 over the whole text, before any of it is tokenized: the
 * error names the first bad byte however far into the text it is. With
 * size: the code points and the longest run of non-starters the normaliser
 * may have to hold (a removed character neither ends a run nor joins it). */
typedef struct TextSize { int32_t n, run; } TextSize;

static int scan_text(const char *what, const char *s, size_t len, TextSize *size,
                     BertcError *err)
{
    if (len > INT32_MAX / (4 * UC_EXPAND_MAX))
        return bertc_errorf(err, "%s: %zu bytes, more than a text may have", what, len);
    int32_t run = 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        int k = bertc_utf8_decode((const uint8_t *)s, len, i, &cp);
        if (k == 0)
            return bertc_errorf(err, "%s: invalid UTF-8 at byte %zu (0x%02x)", what, i,
                                (uint8_t)s[i]);
        i += (size_t)k;
        if (!size)
            continue;
        if (!is_removed(bertc_uc_flags(cp)))
            run = bertc_uc_nfd_starter(cp) ? 0 : run + 1;
        size->run = run > size->run ? run : size->run;
        size->n++;
    }
    return 0;
}

/* A stream with spans that keeps every piece: at most UC_EXPAND_MAX a code
 * point (a special token is fewer). */
static void stream_alloc(Stream *w, Arena *a, const Tokenizer *t, const char *s, size_t len,
                         TextSize size)
{
    int32_t run_cap = NORMALIZER_CAP(size.run), cap = UC_EXPAND_MAX * size.n + 1;
    *w = (Stream){
        .t = t, .s = s, .len = len,
        .norm = {.lower = t->do_lower_case, .cap = run_cap, .emit = take_char,
                 .too_long = mark_too_long, .ctx = w,
                 .seg = bertc_arena_alloc(a, (size_t)run_cap * sizeof(SegChar)),
                 .src = bertc_arena_alloc(a, (size_t)run_cap * sizeof(NormChar))},
        .cp = bertc_arena_alloc(a, TOKENIZER_MAX_WORD_CHARS * sizeof(uint32_t)),
        .at = bertc_arena_alloc(a, TOKENIZER_MAX_WORD_CHARS * sizeof(NormChar)),
        .pieces = bertc_arena_alloc(a, (size_t)cap * sizeof(Piece)),
        .cap = cap};
}

/* ------------------------------------------------------------------------ */
/* Encoding: special tokens, truncation, padding                             */
/* ------------------------------------------------------------------------ */

/* How many of w's pieces tokenizers 0.23 keeps of one text of a pair
 * truncated to max_len before LongestFirst sees it: it encodes the words
 * (pre-tokens) and the special tokens written in the text in order,
 * counting every piece, and stops after the first WORD that brings the
 * count to max_len or more (a special token never stops it). Found by
 * experiment with the npm package; the fixtures hold such cases. */
static int32_t encoded_of_pair(const Stream *w, int32_t max_len)
{
    bool in_word = false;
    for (int32_t i = 0; i < w->n_pieces; i++) {
        PieceKind k = w->pieces[i].kind;
        if (k != PIECE_CONT) {
            if (in_word && i >= max_len)
                return i;
            in_word = k == PIECE_WORD_START;
        }
    }
    return w->n_pieces;
}

/* tokenizers' truncate_encodings, strategy LongestFirst, with room for
 * T = max_len - specials tokens. One text keeps its first T (none, if T is
 * 0: the fast tokenizer does not refuse). A pair (na, nb: the pieces
 * encoded_of_pair keeps): both are kept when they fit; else the shorter,
 * n1, is kept whole if the longer still gets at least as many
 * (n2 = max(n1, T - n1)); else both are cut to T / 2, the longer getting
 * the odd one (text B on a tie). The slow tokenizer instead drops one
 * token at a time from the longer text, which can end differently
 * (docs/tokenizer.md). */
static int truncate_longest_first(int32_t *na, int32_t *nb, bool pair, int32_t max_len,
                                  BertcError *err)
{
    int32_t special = pair ? 3 : 2;
    if (max_len < special)
        return bertc_errorf(err, "max_len %d leaves no room for the %d special tokens",
                            (int)max_len, (int)special);
    int32_t T = max_len - special;
    if (*na + *nb <= T)
        return 0;
    if (!pair) {
        *na = T;
        return 0;
    }
    bool swap = *na > *nb;
    int32_t n1 = swap ? *nb : *na, n2 = swap ? *na : *nb;
    n2 = n1 > T ? n1 : (n1 > T - n1 ? n1 : T - n1);
    if (n1 + n2 > T) {
        n1 = T / 2;
        n2 = n1 + T % 2;
    }
    *na = swap ? n2 : n1;
    *nb = swap ? n1 : n2;
    return 0;
}

static void put(Encoding *e, int32_t i, int32_t id, int32_t type, int32_t mask, const Piece *p)
{
    e->input_ids[i] = id;
    e->token_type_ids[i] = type;
    e->attention_mask[i] = mask;
    e->start[i] = p ? p->start : 0;
    e->end[i] = p ? p->end : 0;
    e->byte_start[i] = p ? p->bstart : 0;
    e->byte_end[i] = p ? p->bend : 0;
}

static void alloc_encoding(Encoding *e, Arena *a, int32_t S)
{
    int32_t **arrays[7] = {&e->input_ids, &e->token_type_ids, &e->attention_mask, &e->start,
                           &e->end, &e->byte_start, &e->byte_end};
    e->S = S;
    for (int k = 0; k < 7; k++)
        *arrays[k] = bertc_arena_alloc(a, ((size_t)S + 1) * sizeof(int32_t));
}

/* build_inputs_with_special_tokens + create_token_type_ids_from_sequences,
 * then [PAD] up to S. */
static void assemble(const Tokenizer *t, const Stream *A, const Stream *B, Encoding *e)
{
    int32_t i = 0;
    put(e, i++, t->cls_id, 0, 1, NULL);
    for (int32_t k = 0; k < e->n_a; k++)
        put(e, i++, A->pieces[k].id, 0, 1, &A->pieces[k]);
    put(e, i++, t->sep_id, 0, 1, NULL);
    if (B) {
        for (int32_t k = 0; k < e->n_b; k++)
            put(e, i++, B->pieces[k].id, 1, 1, &B->pieces[k]);
        put(e, i++, t->sep_id, 1, 1, NULL);
    }
    while (i < e->S)
        put(e, i++, t->pad_id, 0, 0, NULL);
}

static int encode(const Tokenizer *t, Arena *a, const char *text_a, size_t len_a,
                  const char *text_b, size_t len_b, int32_t max_len, bool pad, Encoding *out,
                  BertcError *err)
{
    Stream A, B;
    TextSize size_a = {0}, size_b = {0};
    bool pair = text_b != NULL;
    memset(out, 0, sizeof *out);
    if (scan_text(pair ? "text A" : "text", text_a, len_a, &size_a, err) != 0 ||
        (pair && scan_text("text B", text_b, len_b, &size_b, err) != 0))
        return -1;
    stream_alloc(&A, a, t, text_a, len_a, size_a);
    tokenize_text(&A);
    out->n_a = A.n_pieces;
    if (pair) {
        stream_alloc(&B, a, t, text_b, len_b, size_b);
        tokenize_text(&B);
        out->n_b = B.n_pieces;
    }
    out->untruncated = out->n_a + out->n_b + (pair ? 3 : 2);
    if (max_len < 0)
        return bertc_errorf(err, "max_len must be >= 0 (0: no truncation), got %d", (int)max_len);
    if (pair && max_len > 0) {
        out->n_a = encoded_of_pair(&A, max_len);
        out->n_b = encoded_of_pair(&B, max_len);
    }
    if (max_len > 0 && truncate_longest_first(&out->n_a, &out->n_b, pair, max_len, err) != 0)
        return -1;
    int32_t S = out->n_a + out->n_b + (pair ? 3 : 2);
    alloc_encoding(out, a, pad && max_len > S ? max_len : S);
    assemble(t, &A, pair ? &B : NULL, out);
    return 0;
}

/* A text too long for the memory it needs (~104 bytes a byte,
 * zoo/text/tokenizer.h) is an error, not an abort. */
int bertc_tokenizer_encode(const Tokenizer *t, Arena *a, const char *text_a, size_t len_a,
                     const char *text_b, size_t len_b, int32_t max_len, bool pad,
                     Encoding *out, BertcError *err)
{
    BertcCatch guard;
    bertc_catch_begin(&guard, err);
    if (setjmp(guard.env) != 0)
        return -1;   /* out of memory: err says so */
    int rc = encode(t, a, text_a, len_a, text_b, len_b, max_len, pad, out, err);
    bertc_catch_end(&guard);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* One text's ids, truncated, in a fixed work buffer                         */
/* ------------------------------------------------------------------------ */

/* The run a Normalizer without spans keeps: one more character than a
 * word may have. When a character comes after a full run, the run holds at
 * most one starter (seg[0]), so with that character more than
 * TOKENIZER_MAX_WORD_CHARS marks follow it: a word too long. */
enum { IDS_RUN_CAP = TOKENIZER_MAX_WORD_CHARS + 1 };

typedef struct IdsWork {
    Stream w;
    SegChar run[IDS_RUN_CAP];
    uint32_t cp[TOKENIZER_MAX_WORD_CHARS];
} IdsWork;

/* The work and room to align it wherever the caller's buffer starts. */
size_t bertc_tokenizer_work_bytes(void)
{
    return sizeof(IdsWork) + _Alignof(IdsWork) - 1;
}

int bertc_tokenizer_encode_ids(const Tokenizer *t, void *work, size_t work_bytes,
                               const char *text, size_t len, int32_t max_len,
                               int32_t *input_ids, int32_t *n_tokens, BertcError *err)
{
    if (work_bytes < bertc_tokenizer_work_bytes())
        return bertc_errorf(err, "tokenizer: a work buffer of %zu bytes is below the %zu "
                            "bertc_tokenizer_work_bytes() gives", work_bytes,
                            bertc_tokenizer_work_bytes());
    if (max_len < 2)
        return bertc_errorf(err, "max_len %d leaves no room for the 2 special tokens",
                            (int)max_len);
    if (scan_text("text", text, len, NULL, err) != 0)
        return -1;
    uintptr_t align = _Alignof(IdsWork);
    IdsWork *k = (IdsWork *)(((uintptr_t)work + align - 1) & ~(align - 1));
    Stream *w = &k->w;
    *w = (Stream){
        .t = t, .s = text, .len = len,
        .norm = {.lower = t->do_lower_case, .seg = k->run, .cap = IDS_RUN_CAP,
                 .emit = take_char, .too_long = mark_too_long, .ctx = w},
        .cp = k->cp, .ids = input_ids + 1, .cap = max_len - 2};
    tokenize_text(w);
    int32_t n = w->n_pieces < w->cap ? w->n_pieces : w->cap;
    input_ids[0] = t->cls_id;
    input_ids[n + 1] = t->sep_id;
    *n_tokens = n + 2;
    return 0;
}
