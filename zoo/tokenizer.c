/* zoo/tokenizer.c — text to WordPiece ids and offsets, as Hugging Face
 * BertTokenizerFast (tokenizers: the added-token split, BertNormalizer,
 * BertPreTokenizer, WordPiece, BertProcessing, utils/truncation.rs).
 * The Unicode work of one word is in zoo/tokenizer_text.c, the vocab in
 * zoo/tokenizer_vocab.c; the whole pipeline is described in zoo/zoo.h and
 * docs/tokenizer.md. */
#include "zoo/tokenizer_internal.h"

#include <string.h>

/* What a piece is to the pair truncation of tokenizers (encoded_of_pair). */
typedef enum { PIECE_CONT, PIECE_WORD_START, PIECE_SPECIAL } PieceKind;

/* One wordpiece of a text, with its span in the original text. */
typedef struct Piece {
    int32_t id;
    int32_t start, end, bstart, bend;
    PieceKind kind;
} Piece;

/* A text decoded into code points, and the buffers tokenizing it uses. */
typedef struct Work {
    const char *s;
    int32_t n;              /* code points */
    uint32_t *cps;          /* (n) */
    int32_t *bpos;          /* (n + 1) byte offset of each code point */
    NormChar *raw;          /* (W) the current word, cleaned: W = longest word */
    NormChar *tmp, *norm;   /* (UC_EXPAND_MAX * W) */
    int32_t raw_n;
    Piece *pieces;          /* (UC_EXPAND_MAX * n) */
    int32_t n_pieces;
} Work;

/* ------------------------------------------------------------------------ */
/* WordpieceTokenizer.tokenize: greedy longest-match-first                   */
/* ------------------------------------------------------------------------ */

/* A piece of normalised chars [0, n) spans the original text from its first
 * char's start to its last char's end (tokenizers' expand_alignments). */
static void push_piece(Work *w, int32_t id, const NormChar *c, int32_t n, PieceKind kind)
{
    Piece p = {id, c[0].start, c[n - 1].end, c[0].bstart, c[n - 1].bend, kind};
    w->pieces[w->n_pieces++] = p;
}

/* The id of chars [0, n), "##"-prefixed when it continues a word, or -1. */
static int32_t lookup_chars(const Tokenizer *t, const NormChar *c, int32_t n, bool cont)
{
    char buf[2 + 4 * TOKENIZER_MAX_WORD_CHARS];
    size_t len = 0;
    if (cont) {
        buf[len++] = '#';
        buf[len++] = '#';
    }
    for (int32_t i = 0; i < n; i++)
        len += (size_t)bertc_utf8_encode(c[i].cp, buf + len);
    return bertc_tokenizer_id(t, buf, len);
}

/* One word of the basic tokenizer -> its pieces, or one [UNK] for all of it
 * when it is longer than max_input_chars_per_word or some suffix has no match. */
static void wordpiece(const Tokenizer *t, Work *w, const NormChar *c, int32_t n)
{
    int32_t first = w->n_pieces;
    for (int32_t start = 0; start < n && n <= TOKENIZER_MAX_WORD_CHARS;) {
        int32_t end = n - start < t->max_chars ? n : start + t->max_chars;
        int32_t id = -1;
        while (end > start && (id = lookup_chars(t, c + start, end - start, start > 0)) < 0)
            end--;
        if (id < 0)
            break;
        push_piece(w, id, c + start, end - start, start == 0 ? PIECE_WORD_START : PIECE_CONT);
        start = end;
        if (start == n)
            return;
    }
    w->n_pieces = first;
    push_piece(w, t->unk_id, c, n, PIECE_WORD_START);
}

/* ------------------------------------------------------------------------ */
/* BertNormalizer and BertPreTokenizer                                       */
/* ------------------------------------------------------------------------ */

/* The end of the word: strip accents + lowercase when t->do_lower_case
 * (tokenizer_text.c), then BertPreTokenizer's split (every punctuation
 * character is a word of its own), then WordPiece on each part. A word left
 * empty (only marks) vanishes: it has no characters to make a token of. */
static void flush_word(const Tokenizer *t, Work *w)
{
    int32_t m = bertc_basic_normalize_word(w->raw, w->raw_n, t->do_lower_case, w->tmp, w->norm);
    w->raw_n = 0;
    int32_t b = 0;
    for (int32_t i = 0; i < m; i++) {
        if (!(bertc_uc_flags(w->norm[i].cp) & UC_PUNCT))
            continue;
        if (i > b)
            wordpiece(t, w, w->norm + b, i - b);
        wordpiece(t, w, w->norm + i, 1);
        b = i + 1;
    }
    if (m > b)
        wordpiece(t, w, w->norm + b, m - b);
}

static void push_raw(Work *w, int32_t i)
{
    NormChar c = {w->cps[i], i, i + 1, w->bpos[i], w->bpos[i + 1]};
    w->raw[w->raw_n++] = c;
}

/* The special token written at code point i (the added-token split of
 * tokenizers runs on the original text before anything else: "[CLS]" is
 * one token anywhere, even inside a word, "[cls]" is not): its id and
 * length, or 0. */
static int32_t special_at(const Tokenizer *t, const Work *w, int32_t i, int32_t *id)
{
    static const char *names[5] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
    const int32_t ids[5] = {t->pad_id, t->unk_id, t->cls_id, t->sep_id, t->mask_id};
    if (w->cps[i] != '[')
        return 0;
    for (int k = 0; k < 5; k++) {
        int32_t len = (int32_t)strlen(names[k]);
        if (i + len <= w->n && memcmp(w->s + w->bpos[i], names[k], (size_t)len) == 0) {
            *id = ids[k];
            return len;
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

/* A kept character that ends the current word: whitespace (mapped to ' ' by
 * clean_text) or a CJK ideograph (handle_chinese_chars puts ' ' around it). */
static bool ends_word(unsigned flags)
{
    return !is_removed(flags) && (flags & (UC_SPACE | UC_CJK));
}

/* clean_text, handle_chinese_chars and the whitespace split in one pass. A
 * removed character is gone: it splits nothing and no token's offsets cover
 * it (tokenizers drops its alignment), so "e\u200b" is 'e' at (0, 1). */
static void tokenize_text(const Tokenizer *t, Work *w)
{
    for (int32_t i = 0; i < w->n;) {
        int32_t id, len = special_at(t, w, i, &id);
        uint32_t cp = w->cps[i];
        unsigned f = bertc_uc_flags(cp);
        if (len > 0 || ends_word(f))
            flush_word(t, w);
        if (len > 0) {
            NormChar c = {'[', i, i + len, w->bpos[i], w->bpos[i + len]};
            push_piece(w, id, &c, 1, PIECE_SPECIAL);
            i += len;
            continue;
        }
        if (!is_removed(f) && !(f & UC_SPACE)) {
            push_raw(w, i);
            if (f & UC_CJK)
                flush_word(t, w);
        }
        i++;
    }
    flush_word(t, w);
}

/* ------------------------------------------------------------------------ */
/* Decoding and buffers                                                      */
/* ------------------------------------------------------------------------ */

/* An upper bound on the code points of one word (ended by ends_word, and
 * by special tokens, which only shorten words), to size the word buffers. */
static int32_t longest_word(const Work *w)
{
    int32_t best = 0, run = 0;
    for (int32_t i = 0; i < w->n; i++) {
        run = ends_word(bertc_uc_flags(w->cps[i])) ? 0 : run + 1;
        best = run > best ? run : best;
    }
    return best > 0 ? best : 1;
}

static int decode_text(Work *w, Arena *a, const char *what, const char *s, size_t len,
                       BertcError *err)
{
    if (len > INT32_MAX / (4 * UC_EXPAND_MAX))
        return bertc_errorf(err, "%s: %zu bytes, more than a text may have", what, len);
    memset(w, 0, sizeof *w);
    w->s = s;
    w->cps = bertc_arena_alloc(a, (len + 1) * sizeof *w->cps);
    w->bpos = bertc_arena_alloc(a, (len + 1) * sizeof *w->bpos);
    for (size_t i = 0; i < len;) {
        int k = bertc_utf8_decode((const uint8_t *)s, len, i, &w->cps[w->n]);
        if (k == 0)
            return bertc_errorf(err, "%s: invalid UTF-8 at byte %zu (0x%02x)", what, i,
                                (uint8_t)s[i]);
        w->bpos[w->n++] = (int32_t)i;
        i += (size_t)k;
    }
    w->bpos[w->n] = (int32_t)len;
    int32_t W = longest_word(w);
    w->raw = bertc_arena_alloc(a, (size_t)W * sizeof *w->raw);
    w->tmp = bertc_arena_alloc(a, (size_t)W * UC_EXPAND_MAX * sizeof *w->tmp);
    w->norm = bertc_arena_alloc(a, (size_t)W * UC_EXPAND_MAX * sizeof *w->norm);
    w->pieces = bertc_arena_alloc(a, ((size_t)w->n * UC_EXPAND_MAX + 1) * sizeof *w->pieces);
    return 0;
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
static int32_t encoded_of_pair(const Work *w, int32_t max_len)
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
static void assemble(const Tokenizer *t, const Work *A, const Work *B, Encoding *e)
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

typedef struct EncodeCall {
    const Tokenizer *t;
    Arena *a;
    const char *text_a, *text_b;
    size_t len_a, len_b;
    int32_t max_len;
    bool pad;
    Encoding *out;
} EncodeCall;

static int encode(const Tokenizer *t, Arena *a, const char *text_a, size_t len_a,
                  const char *text_b, size_t len_b, int32_t max_len, bool pad, Encoding *out,
                  BertcError *err)
{
    Work A, B;
    bool pair = text_b != NULL;
    memset(out, 0, sizeof *out);
    if (decode_text(&A, a, pair ? "text A" : "text", text_a, len_a, err) != 0 ||
        (pair && decode_text(&B, a, "text B", text_b, len_b, err) != 0))
        return -1;
    tokenize_text(t, &A);
    out->n_a = A.n_pieces;
    if (pair) {
        tokenize_text(t, &B);
        out->n_b = B.n_pieces;
    }
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

static int encode_call(void *ctx, BertcError *err)
{
    const EncodeCall *c = ctx;
    return encode(c->t, c->a, c->text_a, c->len_a, c->text_b, c->len_b, c->max_len, c->pad,
                  c->out, err);
}

/* Under bertc_try: a text too long for the memory it needs (~290 bytes a
 * byte, zoo.h) is an error, not an abort. */
int bertc_tokenizer_encode(const Tokenizer *t, Arena *a, const char *text_a, size_t len_a,
                     const char *text_b, size_t len_b, int32_t max_len, bool pad,
                     Encoding *out, BertcError *err)
{
    EncodeCall c = {t, a, text_a, text_b, len_a, len_b, max_len, pad, out};
    return bertc_try(encode_call, &c, err);
}
