/* zoo/text/tokenizer_text.c — the Unicode side of HF tokenizers' BertNormalizer
 * (tokenizers/src/normalizers/bert.rs): the table look-ups,
 * strip_accents (NFD = full canonical decomposition + canonical ordering,
 * then drop Mn) and lowercase of single characters, both only when
 * do_lower_case. */
#include "zoo/text/tokenizer_internal.h"

/* ------------------------------------------------------------------------ */
/* Table look-ups (all tables sorted by code point)                          */
/* ------------------------------------------------------------------------ */

unsigned bertc_uc_flags(uint32_t cp)
{
    int lo = 0, hi = bertc_uc_class_n - 1;        /* the last run with first <= cp */
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (bertc_uc_class[mid].first <= cp)
            lo = mid;
        else
            hi = mid - 1;
    }
    return bertc_uc_class[lo].flags;
}

static const UcMulti *multi_find(const UcMulti *t, int n, uint32_t cp)
{
    int lo = 0, hi = n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (t[mid].cp == cp)
            return &t[mid];
        if (t[mid].cp < cp)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return NULL;
}

/* Rust char::to_lowercase of one code point: writes 1-3 code points. */
static int lower_one(uint32_t cp, uint32_t *out)
{
    const UcMulti *m = multi_find(bertc_uc_lower_multi, bertc_uc_lower_multi_n, cp);
    if (m) {
        for (int k = 0; k < m->n; k++)
            out[k] = m->seq[k];
        return m->n;
    }
    int lo = 0, hi = bertc_uc_lower_n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        const UcLowerRun *r = &bertc_uc_lower[mid];
        if (cp < r->first) {
            hi = mid - 1;
        } else if (cp > r->last) {
            lo = mid + 1;
        } else {
            out[0] = (cp - r->first) % r->stride == 0 ? (uint32_t)((int32_t)cp + r->delta) : cp;
            return 1;
        }
    }
    out[0] = cp;
    return 1;
}

static int ccc_of(uint32_t cp)
{
    int lo = 0, hi = bertc_uc_ccc_n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (cp < bertc_uc_ccc[mid].first)
            hi = mid - 1;
        else if (cp > bertc_uc_ccc[mid].last)
            lo = mid + 1;
        else
            return bertc_uc_ccc[mid].ccc;
    }
    return 0;
}

/* NFD of one code point: Hangul syllables by the arithmetic of Unicode §3.12
 * (LV or LVT jamo), everything else from the generated table. */
static int decompose_one(uint32_t cp, uint32_t *out)
{
    enum { S_BASE = 0xAC00, L_BASE = 0x1100, V_BASE = 0x1161, T_BASE = 0x11A7,
           V_COUNT = 21, T_COUNT = 28, N_COUNT = V_COUNT * T_COUNT, S_COUNT = 11172 };
    if (cp >= S_BASE && cp < S_BASE + S_COUNT) {
        uint32_t s = cp - S_BASE;
        out[0] = L_BASE + s / N_COUNT;
        out[1] = V_BASE + (s % N_COUNT) / T_COUNT;
        if (s % T_COUNT == 0)
            return 2;
        out[2] = T_BASE + s % T_COUNT;
        return 3;
    }
    const UcMulti *m = multi_find(bertc_uc_decomp, bertc_uc_decomp_n, cp);
    if (!m) {
        out[0] = cp;
        return 1;
    }
    for (int k = 0; k < m->n; k++)
        out[k] = m->seq[k];
    return m->n;
}

bool bertc_uc_nfd_starter(uint32_t cp)
{
    uint32_t dec[UC_SEQ_MAX];
    decompose_one(cp, dec);
    return ccc_of(dec[0]) == 0;
}

/* ------------------------------------------------------------------------ */
/* BertNormalizer: strip_accents (NFD, drop Mn), then lowercase, streamed    */
/* ------------------------------------------------------------------------ */

/* The canonical ordering step of NFD: a stable sort by combining class of
 * every maximal run of characters whose class is not 0 (seg holds at most
 * one such run, after at most one starter). */
static void canonical_order(SegChar *w, int32_t n)
{
    for (int32_t i = 1; i < n; i++) {
        SegChar x = w[i];
        if (x.ccc == 0)
            continue;
        int32_t j = i;
        while (j > 0 && w[j - 1].ccc > x.ccc) {
            w[j] = w[j - 1];
            j--;
        }
        w[j] = x;
    }
}

/* The alignment tokenizers' transform gives the (reordered) NFD: each
 * character that takes a place gets the span of the next original
 * character in order, each inserted one the span of the character before
 * it. So reordering moves characters, not spans: in "İ\U0001D16D" the
 * inserted dot of 'İ' and the mark after it trade places, and the mark
 * keeps its own span. (An inserted character is never a word's first: it
 * follows its own decomposition's first, whose class is not higher.) */
static NormChar align_nfd(Normalizer *z, const SegChar *c, int32_t *next)
{
    NormChar span = {0};
    if (z->src)
        span = !c->inserted ? z->src[(*next)++] : z->has_last ? z->last : z->src[*next];
    z->last = span;
    z->has_last = true;
    span.cp = c->cp;
    return span;
}

/* Drop Mn (NormalizedString::filter keeps the alignments of the characters
 * it keeps, and only those), then lowercase one character at a time (Rust
 * char::to_lowercase, which has no word-final sigma: 'Σ' is always 'σ');
 * extra characters ('İ' would give two, but NFD has already made it 'I' +
 * a dropped dot) share the span. */
static void strip_and_lower(const Normalizer *z, NormChar c)
{
    if (bertc_uc_flags(c.cp) & UC_MN)
        return;
    uint32_t low[UC_SEQ_MAX];
    int nl = lower_one(c.cp, low);
    for (int k = 0; k < nl; k++) {
        c.cp = low[k];
        z->emit(z->ctx, &c);
    }
}

/* The run in seg is complete: order it, align it, hand it on. A run that
 * ran over (ids only) hands on its starter, if it has one (only seg[0] can
 * be), and says the rest is too long. */
static void flush_run(Normalizer *z)
{
    int32_t next = 0;
    if (z->overflow) {
        if (z->n > 0 && z->seg[0].ccc == 0)
            strip_and_lower(z, align_nfd(z, &z->seg[0], &next));
        z->too_long(z->ctx);
    } else {
        canonical_order(z->seg, z->n);
        for (int32_t k = 0; k < z->n; k++)
            strip_and_lower(z, align_nfd(z, &z->seg[k], &next));
    }
    z->n = z->n_src = 0;
    z->overflow = false;
}

static void append(Normalizer *z, uint32_t cp, int ccc, bool inserted, const NormChar *raw)
{
    if (z->n == z->cap) {
        z->overflow = true;
        return;
    }
    z->seg[z->n++] = (SegChar){.cp = cp, .ccc = (uint8_t)ccc, .inserted = inserted};
    if (z->src && !inserted)
        z->src[z->n_src++] = *raw;
}

void bertc_normalizer_push(Normalizer *z, const NormChar *raw)
{
    if (!z->lower) {
        z->emit(z->ctx, raw);
        return;
    }
    uint32_t dec[UC_SEQ_MAX];
    int nd = decompose_one(raw->cp, dec);
    for (int d = 0; d < nd; d++) {
        int ccc = ccc_of(dec[d]);
        if (ccc == 0)
            flush_run(z);
        else if (!z->src && (bertc_uc_flags(dec[d]) & UC_MN))
            continue;
        append(z, dec[d], ccc, d > 0, raw);
    }
}

void bertc_normalizer_end_word(Normalizer *z)
{
    flush_run(z);
    z->has_last = false;
}

/* ------------------------------------------------------------------------ */
/* The same on a whole word (zoo/text/vocab_train.c)                              */
/* ------------------------------------------------------------------------ */

typedef struct Collect { NormChar *out; int m; } Collect;

static void collect(void *ctx, const NormChar *c)
{
    Collect *k = ctx;
    k->out[k->m++] = *c;
}

/* tmp (UC_EXPAND_MAX * n NormChars) holds the sources' spans (n) and the
 * run (at most UC_SEQ_MAX * n SegChars, in the 3n NormChars left). */
_Static_assert(UC_SEQ_MAX * sizeof(SegChar) <= (UC_EXPAND_MAX - 1) * sizeof(NormChar),
               "the run of bertc_basic_normalize_word fits in tmp");
int bertc_basic_normalize_word(const NormChar *raw, int n, bool lower, void *tmp, NormChar *out)
{
    Collect k = {.out = out};
    Normalizer z = {.lower = lower, .src = tmp, .seg = (SegChar *)((NormChar *)tmp + n),
                    .cap = UC_SEQ_MAX * n, .emit = collect, .ctx = &k};
    for (int i = 0; i < n; i++)
        bertc_normalizer_push(&z, &raw[i]);
    bertc_normalizer_end_word(&z);
    return k.m;
}
