/* zoo/tokenizer_text.c — the Unicode side of HF tokenizers' BertNormalizer
 * (tokenizers/src/normalizers/bert.rs): strict UTF-8, the table look-ups,
 * strip_accents (NFD = full canonical decomposition + canonical ordering,
 * then drop Mn) and lowercase of single characters, both only when
 * do_lower_case. */
#include "zoo/tokenizer_internal.h"

/* ------------------------------------------------------------------------ */
/* UTF-8                                                                     */
/* ------------------------------------------------------------------------ */

static bool cont(const uint8_t *s, size_t len, size_t i)
{
    return i < len && (s[i] & 0xC0) == 0x80;
}

int bertc_utf8_decode(const uint8_t *s, size_t len, size_t i, uint32_t *cp)
{
    uint8_t b = s[i];
    if (b < 0x80) {
        *cp = b;
        return 1;
    }
    /* The second byte's allowed range excludes overlong forms (E0, F0),
     * surrogates (ED) and code points past U+10FFFF (F4). */
    int n = b >= 0xC2 && b <= 0xDF ? 2 : b >= 0xE0 && b <= 0xEF ? 3 : b >= 0xF0 && b <= 0xF4 ? 4 : 0;
    if (n == 0 || !cont(s, len, i + 1))
        return 0;
    uint8_t b1 = s[i + 1];
    if ((b == 0xE0 && b1 < 0xA0) || (b == 0xED && b1 > 0x9F) || (b == 0xF0 && b1 < 0x90) ||
        (b == 0xF4 && b1 > 0x8F))
        return 0;
    uint32_t c = b & (0xFF >> (n + 1));
    for (int k = 1; k < n; k++) {
        if (!cont(s, len, i + (size_t)k))
            return 0;
        c = (c << 6) | (s[i + (size_t)k] & 0x3F);
    }
    *cp = c;
    return n;
}

int bertc_utf8_encode(uint32_t cp, char *out)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    int n = cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    static const uint8_t lead[5] = {0, 0, 0xC0, 0xE0, 0xF0};
    for (int k = n - 1; k > 0; k--) {
        out[k] = (char)(0x80 | (cp & 0x3F));
        cp >>= 6;
    }
    out[0] = (char)(lead[n] | cp);
    return n;
}

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

/* ------------------------------------------------------------------------ */
/* BertNormalizer: strip_accents (NFD, drop Mn), then lowercase              */
/* ------------------------------------------------------------------------ */

/* Until align_nfd hands out the spans, the start of a decomposed character
 * says whether it takes its source's place (the first of a decomposition)
 * or is inserted after it (the others). */
enum { NFD_TAKES_PLACE = 0, NFD_INSERTED = -1 };

/* NFD of each character, before canonical ordering. */
static int decompose(const NormChar *raw, int n, NormChar *out)
{
    int m = 0;
    for (int i = 0; i < n; i++) {
        uint32_t dec[UC_SEQ_MAX];
        int nd = decompose_one(raw[i].cp, dec);
        for (int d = 0; d < nd; d++) {
            NormChar c = {dec[d], d == 0 ? NFD_TAKES_PLACE : NFD_INSERTED, 0, 0, 0};
            out[m++] = c;
        }
    }
    return m;
}

/* The canonical ordering step of NFD: a stable sort by combining class of
 * every maximal run of characters whose class is not 0. */
static void canonical_order(NormChar *w, int n)
{
    for (int i = 1; i < n; i++) {
        int c = ccc_of(w[i].cp);
        if (c == 0)
            continue;
        NormChar x = w[i];
        int j = i;
        while (j > 0 && ccc_of(w[j - 1].cp) > c) {
            w[j] = w[j - 1];
            j--;
        }
        w[j] = x;
    }
}

/* The alignments tokenizers' transform gives the (reordered) NFD: each
 * character that takes a place gets the span of the next original
 * character in order, each inserted one the span of the character before
 * it. So reordering moves characters, not spans: in "İ\U0001D16D" the
 * inserted dot of 'İ' and the mark after it trade places, and the mark
 * keeps its own span. */
static void align_nfd(const NormChar *raw, NormChar *w, int m)
{
    int next = 0;
    for (int k = 0; k < m; k++) {
        /* (An inserted character is never first: it follows its own
         * decomposition's first, whose class is not higher.) */
        const NormChar *src = w[k].start == NFD_TAKES_PLACE ? &raw[next++]
                              : k > 0                         ? &w[k - 1]
                                                              : &raw[next];
        uint32_t cp = w[k].cp;
        w[k] = *src;
        w[k].cp = cp;
    }
}

/* Drop Mn; a dropped character's span goes with it (NormalizedString::filter
 * keeps the alignments of the characters it keeps, and only those). */
static int drop_mn(const NormChar *in, int n, NormChar *out)
{
    int m = 0;
    for (int i = 0; i < n; i++)
        if (!(bertc_uc_flags(in[i].cp) & UC_MN))
            out[m++] = in[i];
    return m;
}

/* Lowercase one character at a time (Rust char::to_lowercase, which has no
 * word-final sigma: 'Σ' is always 'σ'); extra characters ('İ' would give
 * two, but NFD has already made it 'I' + a dropped dot) share the span. */
static int lowercase(const NormChar *in, int n, NormChar *out)
{
    int m = 0;
    for (int i = 0; i < n; i++) {
        uint32_t low[UC_SEQ_MAX];
        int nl = lower_one(in[i].cp, low);
        for (int k = 0; k < nl; k++) {
            out[m] = in[i];
            out[m++].cp = low[k];
        }
    }
    return m;
}

int bertc_basic_normalize_word(const NormChar *raw, int n, bool lower, NormChar *tmp, NormChar *out)
{
    if (!lower) {
        for (int i = 0; i < n; i++)
            out[i] = raw[i];
        return n;
    }
    int m = decompose(raw, n, out);
    canonical_order(out, m);
    align_nfd(raw, out, m);
    m = drop_mn(out, m, tmp);
    return lowercase(tmp, m, out);
}
