/* zoo/text/vocab_train.c — a WordPiece vocabulary from a corpus, by the algorithm
 * of Hugging Face tokenizers' WordPieceTrainer (models/wordpiece/trainer.rs,
 * which runs the BpeTrainer of models/bpe/trainer.rs with the continuing
 * prefix "##") with the defaults of BertWordPieceTokenizer.train.
 *
 *  1. Words: the corpus through bertc's own BertNormalizer and
 *     BertPreTokenizer (clean_text, CJK split, whitespace split, accent
 *     stripping + lowercasing, punctuation split: the same functions
 *     zoo/text/tokenizer.c uses), counted. Special tokens written in the corpus
 *     are not treated specially, as in tokenizers' train().
 *  2. The vocabulary starts with [PAD] [UNK] [CLS] [SEP] [MASK], then the
 *     alphabet: every character of the words (the limit_alphabet most
 *     frequent when there are more) in code-point order.
 *  3. Each word becomes its characters, the first as is, the others as
 *     "##c"; a "##c" not yet in the vocabulary is appended.
 *  4. Merges: while the vocabulary is smaller than vocab_size, the adjacent
 *     pair seen most often (weighted by word counts; ties: the smaller
 *     (left id, right id)) with count >= min_frequency becomes one symbol
 *     (the right part loses its "##"); a new string is appended.
 *
 * Deliberate differences from tokenizers, both where it has no fixed order:
 * step 3 walks the words in byte order (tokenizers walks a hash map, so the
 * ids of the "##c" tokens, and through them which of two equally frequent
 * pairs merges first, vary from run to run there), and limit_alphabet drops
 * the rarest characters with ties broken by code point. tokenizers also
 * merges a pair only in the words its heap entry recorded (a pair that
 * appears in new words after its entry was made merges there later, as a
 * second merge to the same token); here a merge applies to every word. */
#include "zoo/text/tokenizer_internal.h"

#include <stdlib.h>
#include <string.h>

#define CORPUS_MAX_BYTES ((size_t)1 << 31)

static const char *const specials[5] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};

/* ------------------------------------------------------------------------ */
/* Growing arrays and a string -> int64 map (open addressing)                 */
/* ------------------------------------------------------------------------ */

static void *grow(void *p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return p;
    size_t c = *cap ? *cap : 16;
    while (c < need)
        c *= 2;
    void *q = realloc(p, c * elem);
    if (!q)
        bertc_fatal("vocab_train: out of memory (%zu bytes)", c * elem);
    *cap = c;
    return q;
}

typedef struct StrMap {
    char **key;          /* (cap) NULL = empty */
    int64_t *val;        /* (cap) */
    size_t cap, n;       /* cap a power of two */
} StrMap;

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;   /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

static size_t strmap_slot(const StrMap *m, const char *k)
{
    size_t i = (size_t)hash_str(k) & (m->cap - 1);
    while (m->key[i] && strcmp(m->key[i], k) != 0)
        i = (i + 1) & (m->cap - 1);
    return i;
}

static void strmap_rehash(StrMap *m)
{
    StrMap old = *m;
    m->cap = old.cap ? old.cap * 2 : 1024;
    m->key = calloc(m->cap, sizeof *m->key);
    m->val = calloc(m->cap, sizeof *m->val);
    if (!m->key || !m->val)
        bertc_fatal("vocab_train: out of memory");
    for (size_t i = 0; i < old.cap; i++)
        if (old.key[i]) {
            size_t j = strmap_slot(m, old.key[i]);
            m->key[j] = old.key[i];
            m->val[j] = old.val[i];
        }
    free(old.key);
    free(old.val);
}

/* The value slot of k, inserted with value `init` when absent. */
static int64_t *strmap_at(StrMap *m, const char *k, int64_t init, bool *added)
{
    if (2 * (m->n + 1) > m->cap)
        strmap_rehash(m);
    size_t i = strmap_slot(m, k);
    *added = m->key[i] == NULL;
    if (*added) {
        m->key[i] = strdup(k);
        if (!m->key[i])
            bertc_fatal("vocab_train: out of memory");
        m->val[i] = init;
        m->n++;
    }
    return &m->val[i];
}

static const int64_t *strmap_get(const StrMap *m, const char *k)
{
    if (m->cap == 0)
        return NULL;
    size_t i = strmap_slot(m, k);
    return m->key[i] ? &m->val[i] : NULL;
}

static void strmap_free(StrMap *m)
{
    for (size_t i = 0; i < m->cap; i++)
        free(m->key[i]);
    free(m->key);
    free(m->val);
    memset(m, 0, sizeof *m);
}

/* ------------------------------------------------------------------------ */
/* 1. Words: BertNormalizer + BertPreTokenizer, as zoo/text/tokenizer.c            */
/* ------------------------------------------------------------------------ */

typedef struct Words {
    StrMap count;                 /* word -> occurrences */
    NormChar *raw, *tmp, *norm;   /* the current word: raw (cap), tmp and norm (4 cap) */
    size_t raw_n, raw_cap, norm_cap;
    char *buf;                    /* one word's UTF-8 */
    size_t buf_cap;
    bool lower;
} Words;

static void count_piece(Words *w, const NormChar *c, int n)
{
    w->buf = grow(w->buf, &w->buf_cap, 4 * (size_t)n + 1, 1);
    size_t len = 0;
    for (int i = 0; i < n; i++)
        len += (size_t)bertc_utf8_encode(c[i].cp, w->buf + len);
    w->buf[len] = '\0';
    bool added;
    (*strmap_at(&w->count, w->buf, 0, &added))++;
}

/* The end of a whitespace word: strip accents + lowercase, then every
 * punctuation character is a word of its own (tokenizer.c: flush_word). */
static void flush_word(Words *w)
{
    if (w->raw_n == 0)
        return;
    size_t need = UC_EXPAND_MAX * w->raw_n, tmp_cap = w->norm_cap;
    w->tmp = grow(w->tmp, &tmp_cap, need, sizeof *w->tmp);   /* tmp and norm: one capacity */
    w->norm = grow(w->norm, &w->norm_cap, need, sizeof *w->norm);
    int m = bertc_basic_normalize_word(w->raw, (int)w->raw_n, w->lower, w->tmp, w->norm);
    w->raw_n = 0;
    int b = 0;
    for (int i = 0; i < m; i++) {
        if (!(bertc_uc_flags(w->norm[i].cp) & UC_PUNCT))
            continue;
        if (i > b)
            count_piece(w, w->norm + b, i - b);
        count_piece(w, w->norm + i, 1);
        b = i + 1;
    }
    if (m > b)
        count_piece(w, w->norm + b, m - b);
}

static void push_raw(Words *w, uint32_t cp)
{
    w->raw = grow(w->raw, &w->raw_cap, w->raw_n + 1, sizeof *w->raw);
    NormChar c = {cp, 0, 1, 0, 1};
    w->raw[w->raw_n++] = c;
}

/* clean_text (controls removed, spaces split), handle_chinese_chars (a CJK
 * ideograph is a word), then flush_word on each word. */
static int count_words(Words *w, const char *name, const char *s, size_t len, BertcError *err)
{
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        int k = bertc_utf8_decode((const uint8_t *)s, len, i, &cp);
        if (k == 0)
            return bertc_errorf(err, "%s: invalid UTF-8 at byte %zu (0x%02x)", name, i,
                                (uint8_t)s[i]);
        i += (size_t)k;
        unsigned f = bertc_uc_flags(cp);
        if (f & UC_CONTROL)
            continue;
        if (f & (UC_SPACE | UC_CJK))
            flush_word(w);
        if (f & UC_SPACE)
            continue;
        push_raw(w, cp);
        if (f & UC_CJK)
            flush_word(w);
    }
    flush_word(w);
    return 0;
}

static void words_free(Words *w)
{
    strmap_free(&w->count);
    free(w->raw);
    free(w->tmp);
    free(w->norm);
    free(w->buf);
}

/* ------------------------------------------------------------------------ */
/* 2-3. The vocabulary, the alphabet and the words as symbol ids              */
/* ------------------------------------------------------------------------ */

typedef struct Vocab {
    char **tok;            /* (n) id -> token */
    size_t n, cap;
    StrMap id;             /* token -> id */
} Vocab;

/* The id of token s, appended when new. */
static int32_t vocab_add(Vocab *v, const char *s)
{
    bool added;
    int64_t *id = strmap_at(&v->id, s, (int64_t)v->n, &added);
    if (added) {
        v->tok = grow(v->tok, &v->cap, v->n + 1, sizeof *v->tok);
        v->tok[v->n++] = v->id.key[strmap_slot(&v->id, s)];
    }
    return (int32_t)*id;
}

typedef struct Sym {       /* the corpus's words as symbols */
    int32_t *ids;          /* all words' symbols, word i at [start[i], start[i] + len[i]) */
    int32_t *start, *len;
    int64_t *count;
    size_t n_words;
} Sym;

typedef struct Char { uint32_t cp; int64_t count; } Char;

static int by_count_then_cp(const void *a, const void *b)
{
    const Char *x = a, *y = b;
    if (x->count != y->count)
        return x->count < y->count ? -1 : 1;
    return x->cp < y->cp ? -1 : x->cp > y->cp;
}

static int by_cp(const void *a, const void *b)
{
    const Char *x = a, *y = b;
    return x->cp < y->cp ? -1 : x->cp > y->cp;
}

static int by_string(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every character of the words with its weighted count; the limit most
 * frequent kept; appended to v in code-point order. */
static void add_alphabet(Vocab *v, char **word, const int64_t *count, size_t n, int32_t limit)
{
    Char *ch = NULL;
    size_t n_ch = 0, cap = 0;
    StrMap where = {0};
    for (size_t i = 0; i < n; i++) {
        const uint8_t *s = (const uint8_t *)word[i];
        size_t len = strlen(word[i]);
        for (size_t j = 0; j < len;) {
            uint32_t cp;
            int k = bertc_utf8_decode(s, len, j, &cp);
            char key[8] = {0};
            memcpy(key, s + j, (size_t)k);
            j += (size_t)k;
            bool added;
            int64_t *at = strmap_at(&where, key, (int64_t)n_ch, &added);
            if (added) {
                ch = grow(ch, &cap, n_ch + 1, sizeof *ch);
                ch[n_ch++] = (Char){cp, 0};
            }
            ch[*at].count += count[i];
        }
    }
    if (limit > 0 && n_ch > (size_t)limit) {
        qsort(ch, n_ch, sizeof *ch, by_count_then_cp);
        memmove(ch, ch + (n_ch - (size_t)limit), (size_t)limit * sizeof *ch);
        n_ch = (size_t)limit;
    }
    qsort(ch, n_ch, sizeof *ch, by_cp);
    for (size_t i = 0; i < n_ch; i++) {
        char s[5] = {0};
        bertc_utf8_encode(ch[i].cp, s);
        vocab_add(v, s);
    }
    free(ch);
    strmap_free(&where);
}

/* Each word as the ids of its characters ("##c" after the first), in the
 * order of `word`; characters left out of the alphabet are skipped. */
static void symbolize(Vocab *v, char **word, const int64_t *count, size_t n, Sym *sym)
{
    size_t total = 0, cap = 0;
    sym->start = calloc(n + 1, sizeof *sym->start);
    sym->len = calloc(n + 1, sizeof *sym->len);
    sym->count = calloc(n + 1, sizeof *sym->count);
    if (!sym->start || !sym->len || !sym->count)
        bertc_fatal("vocab_train: out of memory");
    for (size_t i = 0; i < n; i++) {
        const uint8_t *s = (const uint8_t *)word[i];
        size_t len = strlen(word[i]);
        sym->start[i] = (int32_t)total;
        sym->count[i] = count[i];
        for (size_t j = 0; j < len;) {
            uint32_t cp;
            char key[8] = {'#', '#'};
            int k = bertc_utf8_decode(s, len, j, &cp);
            memcpy(key + 2, s + j, (size_t)k);
            key[2 + k] = '\0';
            bool first = j == 0;
            j += (size_t)k;
            if (!strmap_get(&v->id, key + 2))
                continue;
            sym->ids = grow(sym->ids, &cap, total + 1, sizeof *sym->ids);
            sym->ids[total++] = vocab_add(v, first ? key + 2 : key);
            sym->len[i]++;
        }
    }
    sym->n_words = n;
}

/* ------------------------------------------------------------------------ */
/* 4. Merges                                                                  */
/* ------------------------------------------------------------------------ */

typedef struct PairMap {   /* (left, right) -> count, open addressing */
    uint64_t *key;         /* (cap) left << 32 | right, plus 1; 0 = empty */
    int64_t *count;
    size_t cap, n;
} PairMap;

static size_t pair_slot(const PairMap *p, uint64_t k)
{
    size_t i = (size_t)((k * 0x9E3779B97F4A7C15ull) >> 17) & (p->cap - 1);
    while (p->key[i] && p->key[i] != k)
        i = (i + 1) & (p->cap - 1);
    return i;
}

static void pair_add(PairMap *p, int32_t a, int32_t b, int64_t delta)
{
    if (2 * (p->n + 1) > p->cap) {
        PairMap old = *p;
        p->cap = old.cap ? old.cap * 2 : 4096;
        p->key = calloc(p->cap, sizeof *p->key);
        p->count = calloc(p->cap, sizeof *p->count);
        if (!p->key || !p->count)
            bertc_fatal("vocab_train: out of memory");
        for (size_t i = 0; i < old.cap; i++)
            if (old.key[i]) {
                size_t j = pair_slot(p, old.key[i]);
                p->key[j] = old.key[i];
                p->count[j] = old.count[i];
            }
        free(old.key);
        free(old.count);
    }
    uint64_t k = ((uint64_t)(uint32_t)a << 32 | (uint32_t)b) + 1;
    size_t i = pair_slot(p, k);
    if (!p->key[i]) {
        p->key[i] = k;
        p->n++;
    }
    p->count[i] += delta;
}

/* Every adjacent pair of word i, counted `sign` times its occurrences. */
static void count_word_pairs(PairMap *p, const Sym *s, size_t i, int64_t sign)
{
    const int32_t *w = s->ids + s->start[i];
    for (int32_t j = 0; j + 1 < s->len[i]; j++)
        pair_add(p, w[j], w[j + 1], sign * s->count[i]);
}

/* The pair to merge: the highest count, ties to the smaller (a, b); false
 * when none reaches max(1, min_frequency). */
static bool best_pair(const PairMap *p, int64_t min_frequency, int32_t *a, int32_t *b)
{
    uint64_t best = 0;
    int64_t best_count = 0;
    for (size_t i = 0; i < p->cap; i++) {
        if (!p->key[i] || p->count[i] <= 0 || p->count[i] < best_count)
            continue;
        if (p->count[i] > best_count || p->key[i] < best) {
            best = p->key[i];
            best_count = p->count[i];
        }
    }
    if (best_count < 1 || best_count < min_frequency)
        return false;
    *a = (int32_t)((best - 1) >> 32);
    *b = (int32_t)((best - 1) & 0xffffffffu);
    return true;
}

/* Left to right, each (a, b) not overlapping an earlier one becomes id. */
static void merge_word(Sym *s, size_t i, int32_t a, int32_t b, int32_t id, PairMap *p)
{
    int32_t *w = s->ids + s->start[i], n = s->len[i], m = 0;
    bool has = false;
    for (int32_t j = 0; j + 1 < n && !has; j++)
        has = w[j] == a && w[j + 1] == b;
    if (!has)
        return;
    count_word_pairs(p, s, i, -1);
    for (int32_t j = 0; j < n; j++) {
        if (j + 1 < n && w[j] == a && w[j + 1] == b) {
            w[m++] = id;
            j++;
        } else {
            w[m++] = w[j];
        }
    }
    s->len[i] = m;
    count_word_pairs(p, s, i, +1);
}

/* "a" + "##b" -> "ab", "##a" + "##b" -> "##ab". */
static int32_t merged_token(Vocab *v, int32_t a, int32_t b)
{
    const char *x = v->tok[a], *y = v->tok[b];
    if (strncmp(y, "##", 2) == 0)
        y += 2;
    size_t nx = strlen(x), ny = strlen(y);
    char *s = malloc(nx + ny + 1);
    if (!s)
        bertc_fatal("vocab_train: out of memory");
    memcpy(s, x, nx);
    memcpy(s + nx, y, ny + 1);
    int32_t id = vocab_add(v, s);
    free(s);
    return id;
}

static void merge_until(Vocab *v, Sym *s, const BertcVocabTrainOptions *opt)
{
    PairMap p = {0};
    for (size_t i = 0; i < s->n_words; i++)
        count_word_pairs(&p, s, i, +1);
    int32_t a, b;
    while (v->n < (size_t)opt->vocab_size && best_pair(&p, opt->min_frequency, &a, &b)) {
        int32_t id = merged_token(v, a, b);
        for (size_t i = 0; i < s->n_words; i++)
            merge_word(s, i, a, b, id, &p);
    }
    free(p.key);
    free(p.count);
}

/* ------------------------------------------------------------------------ */
/* The API                                                                    */
/* ------------------------------------------------------------------------ */

BertcVocabTrainOptions bertc_vocab_train_defaults(void)
{
    return (BertcVocabTrainOptions){
        .vocab_size = 30000,
        .min_frequency = 2,
        .limit_alphabet = 1000,
        .lowercase = true,
    };
}

/* The vocabulary's text: one token a line. */
static char *vocab_text(const Vocab *v, size_t *len)
{
    size_t n = 0;
    for (size_t i = 0; i < v->n; i++)
        n += strlen(v->tok[i]) + 1;
    char *text = malloc(n + 1), *at = text;
    if (!text)
        bertc_fatal("vocab_train: out of memory");
    for (size_t i = 0; i < v->n; i++) {
        size_t k = strlen(v->tok[i]);
        memcpy(at, v->tok[i], k);
        at[k] = '\n';
        at += k + 1;
    }
    *at = '\0';
    *len = n;
    return text;
}

/* Steps 2-4 on the counted words. */
static int train_words(Words *w, const BertcVocabTrainOptions *opt, char **out, size_t *out_len,
                       BertcError *err)
{
    size_t n = w->count.n, k = 0;
    char **word = malloc((n + 1) * sizeof *word);
    int64_t *count = malloc((n + 1) * sizeof *count);
    if (!word || !count)
        bertc_fatal("vocab_train: out of memory");
    for (size_t i = 0; i < w->count.cap; i++)
        if (w->count.key[i])
            word[k++] = w->count.key[i];
    qsort(word, n, sizeof *word, by_string);
    for (size_t i = 0; i < n; i++)
        count[i] = *strmap_get(&w->count, word[i]);
    Vocab v = {0};
    for (int i = 0; i < 5; i++)
        vocab_add(&v, specials[i]);
    add_alphabet(&v, word, count, n, opt->limit_alphabet);
    Sym s = {0};
    symbolize(&v, word, count, n, &s);
    int rc = 0;
    if (v.n > (size_t)opt->vocab_size)
        rc = bertc_errorf(err, "vocabulary size %d is below the %zu tokens the 5 special "
                          "tokens and the corpus's characters (with their ## forms) need",
                          (int)opt->vocab_size, v.n);
    else
        merge_until(&v, &s, opt);
    if (rc == 0)
        *out = vocab_text(&v, out_len);
    free(s.ids);
    free(s.start);
    free(s.len);
    free(s.count);
    free(v.tok);
    strmap_free(&v.id);
    free(word);
    free(count);
    return rc;
}

static int check_options(const BertcVocabTrainOptions *opt, BertcError *err)
{
    if (opt->vocab_size < 6)
        return bertc_errorf(err, "vocabulary size %d: it must be at least 6 (5 special tokens "
                            "and one character)", (int)opt->vocab_size);
    if (opt->min_frequency < 0 || opt->limit_alphabet < 0)
        return bertc_errorf(err, "min_frequency %lld and limit_alphabet %d must be >= 0",
                            (long long)opt->min_frequency, (int)opt->limit_alphabet);
    return 0;
}

int bertc_vocab_train_texts(const char *const *texts, const size_t *lens, const char *const *names,
                            int n, const BertcVocabTrainOptions *opt, char **vocab, size_t *len,
                            BertcError *err)
{
    *vocab = NULL;
    *len = 0;
    if (check_options(opt, err) != 0)
        return -1;
    Words w = {.lower = opt->lowercase};
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++)
        rc = count_words(&w, names[i], texts[i], lens[i], err);
    if (rc == 0 && w.count.n == 0 && n == 1)
        rc = bertc_errorf(err, "%s: no words to learn a vocabulary from", names[0]);
    else if (rc == 0 && w.count.n == 0)
        rc = bertc_errorf(err, "the %d corpus files (%s, ...) have no words to learn a "
                          "vocabulary from", n, n > 0 ? names[0] : "none");
    if (rc == 0)
        rc = train_words(&w, opt, vocab, len, err);
    words_free(&w);
    return rc;
}

int bertc_vocab_train(const char *const *paths, int n, const BertcVocabTrainOptions *opt,
                      char **vocab, size_t *len, BertcError *err)
{
    Arena **arenas = calloc((size_t)n + 1, sizeof *arenas);
    char **texts = calloc((size_t)n + 1, sizeof *texts);
    size_t *lens = calloc((size_t)n + 1, sizeof *lens);
    if (!arenas || !texts || !lens)
        bertc_fatal("vocab_train: out of memory");
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        rc = bertc_read_file(paths[i], CORPUS_MAX_BYTES, "a corpus file", &arenas[i], &texts[i],
                             &lens[i], err);
        if (rc == 0 && lens[i] == 0)
            rc = bertc_errorf(err, "%s: empty corpus file", paths[i]);
    }
    if (rc == 0)
        rc = bertc_vocab_train_texts((const char *const *)texts, lens, paths, n, opt, vocab, len,
                                     err);
    for (int i = 0; i < n; i++)
        if (arenas[i])
            bertc_arena_destroy(arenas[i]);
    free(arenas);
    free(texts);
    free(lens);
    return rc;
}
