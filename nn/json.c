/* nn/json.c — strict RFC 8259 parser (two passes: validate and count, then
 * build into exactly-sized arena blocks), accessors and a string quoter. */
#include "nn/json.h"
#include "tensor/format_internal.h"

#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* The parser                                                                */
/* ------------------------------------------------------------------------ */

/* Three passes run the same code over the text, so they cannot disagree
 * about what it contains. PASS_COUNT validates it and counts the values,
 * containers, members and string bytes; PASS_SIZE records each container's
 * number of children; PASS_BUILD fills the tree into blocks of exactly that
 * size, reserving the run of a container's children when it opens (so the
 * children of each container are contiguous and need no pointer array). */
typedef enum Pass { PASS_COUNT, PASS_SIZE, PASS_BUILD } Pass;

typedef struct Parser {
    const char *text;
    size_t len, pos;
    size_t line, line_start;   /* for line:col of the current position */
    int depth;
    Pass pass;
    BertcError *err;
    const char *name;          /* the document, for messages */
    /* PASS_COUNT */
    size_t n_values, n_members, pool_bytes, max_number_len;
    /* every pass: containers seen so far, in document order */
    size_t containers;
    /* PASS_SIZE fills, PASS_BUILD reads: children of container c */
    uint32_t *sizes;
    /* PASS_BUILD storage */
    JsonValue *values;
    size_t values_used;
    uint32_t *sorted;          /* each object's member indices, sorted by key */
    size_t sorted_used;
    char *pool;                /* strings and member names */
    size_t pool_used;
    char *numbuf;
} Parser;

static int parse_value(Parser *p, JsonValue *v);

static int perr(Parser *p, size_t pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int perr(Parser *p, size_t pos, const char *fmt, ...)
{
    char what[BERTC_ERROR_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    size_t col = pos >= p->line_start ? pos - p->line_start + 1 : 1;
    return bertc_errorf(p->err, "%s: line %zu, col %zu (byte %zu): %s", p->name,
                        p->line, col, pos, what);
}

/* "end of input", "'x'" or "byte 0xC3", for "found ..." in messages. */
static const char *found(const Parser *p, size_t pos, char buf[16])
{
    if (pos >= p->len)
        return "end of input";
    unsigned char c = (unsigned char)p->text[pos];
    if (c >= 0x21 && c < 0x7F)
        snprintf(buf, 16, "'%c'", c);
    else
        snprintf(buf, 16, "byte 0x%02X", c);
    return buf;
}

static int peek(const Parser *p) { return p->pos < p->len ? (unsigned char)p->text[p->pos] : -1; }

static void skip_ws(Parser *p)
{
    while (p->pos < p->len) {
        char c = p->text[p->pos];
        if (c == '\n') {
            p->line++;
            p->line_start = p->pos + 1;
        } else if (c != ' ' && c != '\t' && c != '\r') {
            return;
        }
        p->pos++;
    }
}

/* The value in slot v (NULL before PASS_BUILD) starts at the current
 * position; its parent has set self, parent and key. */
static void start_value(Parser *p, JsonValue *v, JsonType type)
{
    if (p->pass == PASS_COUNT)
        p->n_values++;
    if (!v)
        return;
    v->type = (uint8_t)type;
    v->offset = (uint32_t)p->pos;
}

static int expect_word(Parser *p, const char *word)
{
    size_t n = strlen(word);
    if (p->len - p->pos < n || memcmp(p->text + p->pos, word, n) != 0)
        return perr(p, p->pos, "expected '%s'", word);
    p->pos += n;
    return 0;
}

/* --- strings -------------------------------------------------------------- */

static int hex4(Parser *p, size_t at, uint32_t *out)
{
    uint32_t v = 0;
    for (size_t i = 0; i < 4; i++) {
        int c = at + i < p->len ? (unsigned char)p->text[at + i] : -1;
        int d = c >= '0' && c <= '9' ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) {
            char b[16];
            return perr(p, at + i, "expected 4 hex digits after \\u, found %s",
                        found(p, at + i, b));
        }
        v = v * 16 + (uint32_t)d;
    }
    *out = v;
    return 0;
}

/* p->pos is at the backslash of "\uXXXX"; reads one code point, combining a
 * surrogate pair. */
static int unicode_escape(Parser *p, uint32_t *cp)
{
    size_t start = p->pos;
    if (hex4(p, p->pos + 2, cp) != 0)
        return -1;
    p->pos += 6;
    if (*cp >= 0xDC00 && *cp <= 0xDFFF)
        return perr(p, start, "lone low surrogate \\u%04X (it must follow a high "
                    "surrogate \\uD800-\\uDBFF)", (unsigned)*cp);
    if (*cp < 0xD800 || *cp > 0xDBFF)
        return 0;
    uint32_t low;
    if (p->len - p->pos < 6 || p->text[p->pos] != '\\' || p->text[p->pos + 1] != 'u' ||
        hex4(p, p->pos + 2, &low) != 0 || low < 0xDC00 || low > 0xDFFF)
        return perr(p, start, "high surrogate \\u%04X is not followed by a low "
                    "surrogate \\uDC00-\\uDFFF", (unsigned)*cp);
    p->pos += 6;
    *cp = 0x10000 + ((*cp - 0xD800) << 10) + (low - 0xDC00);
    return 0;
}

static int escape(Parser *p, char out[4], size_t *n)
{
    char c = p->pos + 1 < p->len ? p->text[p->pos + 1] : 0;
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    const char *hit = c ? strchr(from, c) : NULL;
    if (hit) {
        out[0] = to[hit - from];
        *n = 1;
        p->pos += 2;
        return 0;
    }
    if (c == 'u') {
        uint32_t cp;
        if (unicode_escape(p, &cp) != 0)
            return -1;
        *n = (size_t)bertc_utf8_encode(cp, out);
        return 0;
    }
    char b[16];
    return perr(p, p->pos + 1, "invalid escape: expected one of \\\" \\\\ \\/ \\b \\f "
                "\\n \\r \\t \\uXXXX, found %s", found(p, p->pos + 1, b));
}

/* p->pos is at the opening quote. PASS_COUNT counts the decoded bytes;
 * PASS_BUILD writes them (NUL-terminated) into the pool: *out gets their
 * offset in it. */
static int parse_string(Parser *p, uint32_t *out, uint32_t *out_len)
{
    size_t start = p->pos++;
    char *dst = p->pass == PASS_BUILD ? p->pool + p->pool_used : NULL;
    size_t n = 0;
    for (;;) {
        if (p->pos >= p->len)
            return perr(p, start, "unterminated string (no closing '\"' before end of input)");
        const unsigned char *s = (const unsigned char *)p->text + p->pos;
        char tmp[4];
        size_t k = 0;
        if (*s == '"') {
            p->pos++;
            break;
        } else if (*s == '\\') {
            if (escape(p, tmp, &k) != 0)
                return -1;
        } else if (*s < 0x20) {
            return perr(p, p->pos, "raw control character 0x%02X in a string "
                        "(write it as \\u%04X)", *s, *s);
        } else {
            uint32_t cp;
            int seq = bertc_utf8_decode((const uint8_t *)p->text, p->len, p->pos, &cp);
            k = (size_t)seq;
            if (seq == 0)
                return perr(p, p->pos, "invalid UTF-8 byte 0x%02X in a string", *s);
            memcpy(tmp, s, k);
            p->pos += k;
        }
        if (dst)
            memcpy(dst + n, tmp, k);
        n += k;
    }
    if (dst) {
        dst[n] = '\0';
        *out = (uint32_t)p->pool_used;
        *out_len = (uint32_t)n;
        p->pool_used += n + 1;
    } else if (p->pass == PASS_COUNT) {
        p->pool_bytes += n + 1;
    }
    return 0;
}

/* --- numbers -------------------------------------------------------------- */

static size_t skip_digits(Parser *p)
{
    size_t start = p->pos;
    while (p->pos < p->len && p->text[p->pos] >= '0' && p->text[p->pos] <= '9')
        p->pos++;
    return p->pos - start;
}

/* Exact int64 of an integer literal; false when it does not fit. */
static bool literal_int64(const char *s, size_t n, int64_t *out)
{
    bool neg = s[0] == '-';
    uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX, v = 0;
    for (size_t i = neg; i < n; i++) {
        uint64_t d = (uint64_t)(s[i] - '0');
        if (v > (limit - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return true;
}

/* strtod on a NUL-terminated copy, with '.' replaced by the locale's decimal
 * point so a program that called setlocale still parses JSON correctly. */
static int number_value(Parser *p, JsonValue *v, size_t start, size_t n)
{
    memcpy(p->numbuf, p->text + start, n);
    p->numbuf[n] = '\0';
    char *dot = strchr(p->numbuf, '.');
    if (dot)
        *dot = localeconv()->decimal_point[0];
    double x = strtod(p->numbuf, NULL);
    if (!v->is_int)
        v->number = x;
    if (isinf(x))
        return perr(p, start, "number %.*s is out of the range of a double", (int)(n > 40 ? 40 : n),
                    p->text + start);
    return 0;
}

static int parse_number(Parser *p, JsonValue *v)
{
    size_t start = p->pos;
    char b[16];
    start_value(p, v, JSON_NUMBER);
    if (peek(p) == '-')
        p->pos++;
    size_t int_digits = skip_digits(p);
    if (int_digits == 0)
        return perr(p, p->pos, "expected a digit, found %s", found(p, p->pos, b));
    if (int_digits > 1 && p->text[p->pos - int_digits] == '0')
        return perr(p, p->pos - int_digits, "leading zeros are not allowed in numbers");
    bool integral = true;
    if (peek(p) == '.') {
        p->pos++;
        integral = false;
        if (skip_digits(p) == 0)
            return perr(p, p->pos, "expected a digit after the decimal point, found %s",
                        found(p, p->pos, b));
    }
    if (peek(p) == 'e' || peek(p) == 'E') {
        p->pos++;
        integral = false;
        if (peek(p) == '+' || peek(p) == '-')
            p->pos++;
        if (skip_digits(p) == 0)
            return perr(p, p->pos, "expected a digit in the exponent, found %s",
                        found(p, p->pos, b));
    }
    size_t n = p->pos - start;
    if (n > p->max_number_len)
        p->max_number_len = n;
    if (!v)
        return 0;
    v->is_int = integral && literal_int64(p->text + start, n, &v->integer);
    v->negative_zero = v->is_int && v->integer == 0 && p->text[start] == '-';
    return number_value(p, v, start, n);
}

/* --- arrays and objects ---------------------------------------------------- */

/* A container opens: PASS_BUILD reserves the run of its children (their
 * count from PASS_SIZE) and returns its first slot; other passes NULL. */
static JsonValue *open_container(Parser *p, JsonValue *v, size_t c)
{
    if (p->pass != PASS_BUILD)
        return NULL;
    JsonValue *first = p->values + p->values_used;
    v->length = p->sizes[c];
    v->first = (uint32_t)p->values_used;
    for (uint32_t k = 0; k < v->length; k++) {
        memset(&first[k], 0, sizeof first[k]);
        first[k].self = (uint32_t)(p->values_used + k);
        first[k].parent = v->self;
        first[k].key = JSON_NONE;
    }
    p->values_used += v->length;
    return first;
}

static void close_container(Parser *p, size_t c, size_t count)
{
    if (p->pass == PASS_SIZE)
        p->sizes[c] = (uint32_t)count;
}

static int enter(Parser *p)
{
    if (++p->depth > JSON_MAX_DEPTH)
        return perr(p, p->pos, "nesting deeper than %d arrays/objects", JSON_MAX_DEPTH);
    p->pos++;
    skip_ws(p);
    return 0;
}

/* After a member or element: ',' (then skip to the next one) or the closer. */
static int next_or_close(Parser *p, char closer, const char *what, bool *closed)
{
    char b[16];
    skip_ws(p);
    int c = peek(p);
    if (c == closer) {
        p->pos++;
        *closed = true;
        return 0;
    }
    if (c != ',')
        return perr(p, p->pos, "expected ',' or '%c' after %s, found %s", closer, what,
                    found(p, p->pos, b));
    p->pos++;
    skip_ws(p);
    if (peek(p) == closer)
        return perr(p, p->pos, "trailing comma before '%c'", closer);
    *closed = false;
    return 0;
}

static int parse_array(Parser *p, JsonValue *v)
{
    start_value(p, v, JSON_ARRAY);
    size_t c = p->containers++;
    JsonValue *child = open_container(p, v, c);
    if (enter(p) != 0)
        return -1;
    size_t count = 0;
    bool closed = peek(p) == ']';
    if (closed)
        p->pos++;
    while (!closed) {
        if (parse_value(p, child ? child + count : NULL) != 0)
            return -1;
        count++;
        if (next_or_close(p, ']', "an array element", &closed) != 0)
            return -1;
    }
    p->depth--;
    close_container(p, c, count);
    return 0;
}

/* A member name is stored in the pool after its length (4 bytes, unaligned):
 * child->key is the offset of its first byte. */
static int member(Parser *p, JsonValue *child)
{
    char b[16];
    if (peek(p) != '"')
        return perr(p, p->pos, "expected a member name in double quotes, found %s",
                    found(p, p->pos, b));
    size_t prefix = p->pool_used;
    uint32_t key = 0, key_len = 0;
    if (p->pass == PASS_BUILD)
        p->pool_used += sizeof key_len;
    else if (p->pass == PASS_COUNT)
        p->pool_bytes += sizeof key_len;
    if (parse_string(p, &key, &key_len) != 0)
        return -1;
    if (child) {
        memcpy(p->pool + prefix, &key_len, sizeof key_len);
        child->key = key;
    }
    skip_ws(p);
    if (peek(p) != ':')
        return perr(p, p->pos, "expected ':' after the member name, found %s",
                    found(p, p->pos, b));
    p->pos++;
    skip_ws(p);
    if (p->pass == PASS_COUNT)
        p->n_members++;
    return parse_value(p, child);
}

/* ---- member names ---------------------------------------------------------- */

static const JsonValue *values_of(const JsonValue *v) { return v - v->self; }

/* The document a value belongs to: its header sits right before the values
 * (bertc_json_parse allocates them as one block). */
static const JsonDoc *doc_of(const JsonValue *v)
{
    return (const JsonDoc *)(const void *)((const char *)values_of(v) - sizeof(JsonDoc));
}

static const char *key_bytes(const char *pool, const JsonValue *v, size_t *len)
{
    uint32_t n;
    memcpy(&n, pool + v->key - sizeof n, sizeof n);
    *len = n;
    return pool + v->key;
}

static int bytes_cmp(const char *a, size_t na, const char *b, size_t nb)
{
    int c = memcmp(a, b, na < nb ? na : nb);
    return c ? c : (na > nb) - (na < nb);
}

/* Member i before member j: by key, ties by position, so duplicates sit side
 * by side, first first. */
static bool member_less(const char *pool, const JsonValue *values, uint32_t i, uint32_t j)
{
    size_t ni, nj;
    const char *ki = key_bytes(pool, &values[i], &ni), *kj = key_bytes(pool, &values[j], &nj);
    int c = bytes_cmp(ki, ni, kj, nj);
    return c ? c < 0 : i < j;
}

/* Heapsort of member indices (qsort has no context argument, and this must
 * not allocate: the sorted runs are part of the tree). */
static void sift_down(const char *pool, const JsonValue *values, uint32_t *a, size_t root,
                      size_t n)
{
    for (size_t child; (child = 2 * root + 1) < n; root = child) {
        if (child + 1 < n && member_less(pool, values, a[child], a[child + 1]))
            child++;
        if (!member_less(pool, values, a[root], a[child]))
            return;
        uint32_t t = a[root];
        a[root] = a[child];
        a[child] = t;
    }
}

static void sort_members(const char *pool, const JsonValue *values, uint32_t *a, size_t n)
{
    for (size_t i = n / 2; i-- > 0;)
        sift_down(pool, values, a, i, n);
    for (size_t end = n; end-- > 1;) {
        uint32_t t = a[0];
        a[0] = a[end];
        a[end] = t;
        sift_down(pool, values, a, 0, end);
    }
}

/* Quote a key for a message, shortened with "..." when long. */
static const char *short_quote(char *buf, size_t cap, const char *s, size_t len)
{
    if (bertc_json_quote(buf, cap, s, len) >= cap && cap > 4)
        memcpy(buf + cap - 4, "...", 4);
    return buf;
}

/* Line and column (1-based, columns in bytes) of byte `offset` of text. */
static void line_col(const char *text, size_t offset, uint32_t *line, uint32_t *col)
{
    size_t l = 1, start = 0;
    for (size_t i = 0; i < offset; i++)
        if (text[i] == '\n') {
            l++;
            start = i + 1;
        }
    *line = (uint32_t)l;
    *col = (uint32_t)(offset - start + 1);
}

static int index_members(Parser *p, JsonValue *obj)
{
    if (p->pass != PASS_BUILD)
        return 0;
    uint32_t *run = p->sorted + p->sorted_used;
    obj->sorted = (uint32_t)p->sorted_used;
    p->sorted_used += obj->length;
    for (uint32_t k = 0; k < obj->length; k++)
        run[k] = obj->first + k;
    sort_members(p->pool, p->values, run, obj->length);
    for (size_t i = 1; i < obj->length; i++) {
        const JsonValue *first = &p->values[run[i - 1]], *again = &p->values[run[i]];
        size_t n1, n2;
        const char *k1 = key_bytes(p->pool, first, &n1), *k2 = key_bytes(p->pool, again, &n2);
        if (bytes_cmp(k1, n1, k2, n2) == 0) {
            char q[96];
            uint32_t line, col;
            line_col(p->text, first->offset, &line, &col);
            return perr(p, again->offset, "duplicate key %s (first defined at line %u, col %u)",
                        short_quote(q, sizeof q, k2, n2), (unsigned)line, (unsigned)col);
        }
    }
    return 0;
}

static int parse_object(Parser *p, JsonValue *v)
{
    start_value(p, v, JSON_OBJECT);
    size_t c = p->containers++;
    JsonValue *child = open_container(p, v, c);
    if (enter(p) != 0)
        return -1;
    size_t count = 0;
    bool closed = peek(p) == '}';
    if (closed)
        p->pos++;
    while (!closed) {
        if (member(p, child ? child + count : NULL) != 0)
            return -1;
        count++;
        if (next_or_close(p, '}', "an object member", &closed) != 0)
            return -1;
    }
    p->depth--;
    close_container(p, c, count);
    return v ? index_members(p, v) : 0;
}

static int parse_literal(Parser *p, JsonValue *v, JsonType type, bool b, const char *word)
{
    start_value(p, v, type);
    if (expect_word(p, word) != 0)
        return -1;
    if (v)
        v->boolean = b;
    return 0;
}

/* v: the slot to fill (PASS_BUILD), else NULL. */
static int parse_value(Parser *p, JsonValue *v)
{
    char b[16];
    int c = peek(p);
    switch (c) {
    case '{': return parse_object(p, v);
    case '[': return parse_array(p, v);
    case 't': return parse_literal(p, v, JSON_BOOL, true, "true");
    case 'f': return parse_literal(p, v, JSON_BOOL, false, "false");
    case 'n': return parse_literal(p, v, JSON_NULL, false, "null");
    case '"': {
        start_value(p, v, JSON_STRING);
        uint32_t unused_at, unused_len;
        return parse_string(p, v ? &v->string : &unused_at, v ? &v->length : &unused_len);
    }
    default:
        if (c == '-' || (c >= '0' && c <= '9'))
            return parse_number(p, v);
        return perr(p, p->pos, "expected a JSON value (object, array, string, number, "
                    "true, false or null), found %s", found(p, p->pos, b));
    }
}

/* One whole pass over the text: a single value surrounded by whitespace. */
static int parse_document(Parser *p, Pass pass, JsonValue *root)
{
    char b[16];
    p->pass = pass;
    p->pos = 0;
    p->line = 1;
    p->line_start = 0;
    p->depth = 0;
    p->containers = 0;
    if (p->len >= 3 && memcmp(p->text, "\xEF\xBB\xBF", 3) == 0)
        return perr(p, 0, "the text starts with a UTF-8 byte order mark; remove it");
    skip_ws(p);
    if (parse_value(p, root) != 0)
        return -1;
    skip_ws(p);
    if (p->pos != p->len)
        return perr(p, p->pos, "unexpected %s after the end of the JSON value",
                    found(p, p->pos, b));
    return 0;
}

_Static_assert(sizeof(JsonDoc) % _Alignof(JsonValue) == 0,
               "the values follow the JsonDoc header in one block");

/* The document header and its values in one block (doc_of relies on it),
 * then the pool, the sorted member runs and a copy of the text (for the
 * line and column of a value in messages), sized by PASS_COUNT. */
static JsonDoc *allocate_doc(Parser *p, Arena *arena, const char *name)
{
    size_t name_len = strlen(name);
    JsonDoc *doc = bertc_arena_alloc(arena, sizeof *doc + p->n_values * sizeof(JsonValue));
    p->values = (JsonValue *)(void *)(doc + 1);
    p->pool = bertc_arena_alloc(arena, p->pool_bytes + 1);
    p->sorted = bertc_arena_alloc(arena, (p->n_members + 1) * sizeof *p->sorted);
    p->numbuf = bertc_arena_alloc(arena, p->max_number_len + 1);
    char *copy = bertc_arena_alloc(arena, p->len + name_len + 2);
    memcpy(copy, p->text, p->len);
    copy[p->len] = '\0';
    memcpy(copy + p->len + 1, name, name_len + 1);
    doc->name = copy + p->len + 1;
    doc->text = copy;
    doc->pool = p->pool;
    doc->sorted = p->sorted;
    doc->root = p->values;
    memset(doc->root, 0, sizeof *doc->root);
    doc->root->parent = doc->root->key = JSON_NONE;
    p->values_used = 1;
    return doc;
}

int bertc_json_parse(Arena *arena, const char *name, const char *text, size_t length,
               JsonDoc **out, BertcError *err)
{
    size_t used_before = bertc_arena_used(arena);
    Parser p = {.text = text, .len = length, .err = err, .name = name};
    /* offsets, lengths and indices are 32-bit; a value takes >= 1 byte */
    if (length > JSON_MAX_BYTES)
        return bertc_errorf(err, "%s: %zu bytes of JSON; bertc reads at most %u", name,
                            length, (unsigned)JSON_MAX_BYTES);
    if (parse_document(&p, PASS_COUNT, NULL) != 0)
        return -1;
    p.sizes = bertc_arena_alloc(arena, (p.containers + 1) * sizeof *p.sizes);
    if (parse_document(&p, PASS_SIZE, NULL) != 0)
        return -1;
    JsonDoc *doc = allocate_doc(&p, arena, name);
    if (parse_document(&p, PASS_BUILD, doc->root) != 0)
        return -1;
    doc->bytes = bertc_arena_used(arena) - used_before;
    *out = doc;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Accessors                                                                 */
/* ------------------------------------------------------------------------ */

const char *bertc_json_type_name(JsonType type)
{
    static const char *const names[] = {"null", "a boolean", "a number",
                                        "a string", "an array", "an object"};
    return names[type];
}

const JsonValue *bertc_json_get(const JsonValue *obj, const char *key)
{
    if (!obj || obj->type != JSON_OBJECT)
        return NULL;
    const JsonDoc *doc = doc_of(obj);
    const JsonValue *values = values_of(obj);
    const uint32_t *run = doc->sorted + obj->sorted;
    size_t lo = 0, hi = obj->length, want = strlen(key);
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2, n;
        const char *k = key_bytes(doc->pool, &values[run[mid]], &n);
        int c = bytes_cmp(k, n, key, want);
        if (c == 0)
            return &values[run[mid]];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

const JsonValue *bertc_json_at(const JsonValue *v, size_t i)
{
    if (!v || (v->type != JSON_ARRAY && v->type != JSON_OBJECT) || i >= v->length)
        return NULL;
    return &values_of(v)[v->first + i];
}

const char *bertc_json_string(const JsonValue *v)
{
    return v && v->type == JSON_STRING ? doc_of(v)->pool + v->string : NULL;
}

const char *bertc_json_key(const JsonValue *v, size_t *len)
{
    size_t n = 0;
    const char *k = v && v->key != JSON_NONE ? key_bytes(doc_of(v)->pool, v, &n) : NULL;
    if (len)
        *len = n;
    return k;
}

const JsonValue *bertc_json_parent(const JsonValue *v)
{
    return v->parent == JSON_NONE ? NULL : &values_of(v)[v->parent];
}

size_t bertc_json_index(const JsonValue *v)
{
    const JsonValue *parent = bertc_json_parent(v);
    return parent ? v->self - parent->first : 0;
}

double bertc_json_number(const JsonValue *v)
{
    if (!v->is_int)
        return v->number;
    return v->negative_zero ? -0.0 : (double)v->integer;
}

const char *bertc_json_doc_name(const JsonValue *v) { return doc_of(v)->name; }

void bertc_json_line_col(const JsonValue *v, uint32_t *line, uint32_t *col)
{
    line_col(doc_of(v)->text, v->offset, line, col);
}

/* A key is written bare when it is plain (letters, digits, _ - and not
 * empty), else quoted: config["odd.key"]. */
static bool plain_key(const char *k, size_t n)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = k[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-'))
            return false;
    }
    return true;
}

static size_t path_segment(char *buf, size_t cap, size_t at, const JsonValue *v, bool first)
{
    size_t room = at < cap ? cap - at : 0;
    char *dst = room ? buf + at : NULL;
    size_t key_len;
    const char *key = bertc_json_key(v, &key_len);
    if (!key)
        return (size_t)snprintf(dst, room, "[%zu]", bertc_json_index(v));
    if (plain_key(key, key_len))
        return (size_t)snprintf(dst, room, "%s%.*s", first ? "" : ".", (int)key_len, key);
    size_t n = (size_t)snprintf(dst, room, "[");
    n += bertc_json_quote(room > n ? dst + n : NULL, room > n ? room - n : 0, key, key_len);
    return n + (size_t)snprintf(room > n ? dst + n : NULL, room > n ? room - n : 0, "]");
}

char *bertc_json_path(const JsonValue *v, char *buf, size_t cap)
{
    const JsonValue *chain[JSON_MAX_DEPTH + 2];
    size_t n = 0;
    for (const JsonValue *x = v; x && bertc_json_parent(x); x = bertc_json_parent(x))
        chain[n++] = x;
    if (cap == 0)
        return buf;
    if (n == 0) {
        snprintf(buf, cap, "(root)");
        return buf;
    }
    buf[0] = '\0';
    size_t at = 0;
    for (size_t i = n; i-- > 0;)
        at += path_segment(buf, cap, at, chain[i], i == n - 1);
    if (at >= cap && cap > 4)
        memcpy(buf + cap - 4, "...", 4);
    return buf;
}

int bertc_json_errorf(BertcError *err, const JsonValue *v, const char *fmt, ...)
{
    char what[BERTC_ERROR_LEN], path[JSON_PATH_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    uint32_t line, col;
    bertc_json_line_col(v, &line, &col);
    return bertc_errorf(err, "%s: %s (line %u, col %u): %s", bertc_json_doc_name(v),
                        bertc_json_path(v, path, sizeof path), (unsigned)line, (unsigned)col, what);
}

static int type_error(BertcError *err, const JsonValue *v, const char *expected)
{
    double x = v->type == JSON_NUMBER ? bertc_json_number(v) : 0;
    if (v->type == JSON_NUMBER && !v->is_int && x == trunc(x))
        return bertc_json_errorf(err, v, "expected %s, found the number %.17g written with a "
                           "fraction or exponent", expected, x);
    if (v->type == JSON_NUMBER)
        return bertc_json_errorf(err, v, "expected %s, found the number %.17g", expected, x);
    return bertc_json_errorf(err, v, "expected %s, found %s", expected, bertc_json_type_name(v->type));
}

int bertc_json_as_int(const JsonValue *v, int64_t *out, BertcError *err)
{
    if (v->type == JSON_NUMBER && !v->is_int && v->number == trunc(v->number) &&
        fabs(v->number) >= 9.2e18)
        return bertc_json_errorf(err, v, "integer %.17g is outside the int64 range", v->number);
    if (v->type != JSON_NUMBER || !v->is_int)
        return type_error(err, v, "an integer (no fraction or exponent)");
    *out = v->integer;
    return 0;
}

int bertc_json_as_double(const JsonValue *v, double *out, BertcError *err)
{
    if (v->type != JSON_NUMBER)
        return type_error(err, v, "a number");
    *out = bertc_json_number(v);
    return 0;
}

/* The string as a C string. A "\u0000" inside would cut it short, so that
 * "gelu\u0000x" compared as "gelu": such a string is refused here, the one
 * place a C string is taken (a caller that wants the bytes reads v->string
 * with v->length). */
int bertc_json_as_string(const JsonValue *v, const char **out, BertcError *err)
{
    if (v->type != JSON_STRING)
        return type_error(err, v, "a string");
    const char *text = bertc_json_string(v);
    size_t nul = strlen(text);
    if (nul != v->length)
        return bertc_json_errorf(err, v, "the string holds a NUL character (\\u0000) at byte %zu; "
                           "remove it", nul);
    *out = text;
    return 0;
}

int bertc_json_as_bool(const JsonValue *v, bool *out, BertcError *err)
{
    if (v->type != JSON_BOOL)
        return type_error(err, v, "true or false");
    *out = v->boolean;
    return 0;
}

/* The member, or NULL after filling err with "missing key <path>". */
static const JsonValue *required(const JsonValue *obj, const char *key, BertcError *err)
{
    const JsonValue *v = bertc_json_get(obj, key);
    if (v)
        return v;
    if (!bertc_json_parent(obj)) {
        bertc_errorf(err, "%s: missing key \"%s\"", bertc_json_doc_name(obj), key);
    } else {
        char path[JSON_PATH_LEN];
        uint32_t line, col;
        bertc_json_line_col(obj, &line, &col);
        bertc_errorf(err, "%s: missing key \"%s.%s\" (in the object at line %u, col %u)",
                     bertc_json_doc_name(obj), bertc_json_path(obj, path, sizeof path), key,
                     (unsigned)line, (unsigned)col);
    }
    return NULL;
}

int bertc_json_get_int(const JsonValue *obj, const char *key, int64_t *out, BertcError *err)
{
    const JsonValue *v = required(obj, key, err);
    return v ? bertc_json_as_int(v, out, err) : -1;
}

int bertc_json_get_double(const JsonValue *obj, const char *key, double *out, BertcError *err)
{
    const JsonValue *v = required(obj, key, err);
    return v ? bertc_json_as_double(v, out, err) : -1;
}

int bertc_json_get_string(const JsonValue *obj, const char *key, const char **out, BertcError *err)
{
    const JsonValue *v = required(obj, key, err);
    return v ? bertc_json_as_string(v, out, err) : -1;
}

int bertc_json_get_bool(const JsonValue *obj, const char *key, bool *out, BertcError *err)
{
    const JsonValue *v = required(obj, key, err);
    return v ? bertc_json_as_bool(v, out, err) : -1;
}

/* The member, or NULL when it is absent or null (then the default applies). */
static const JsonValue *optional(const JsonValue *obj, const char *key)
{
    const JsonValue *v = bertc_json_get(obj, key);
    return v && v->type != JSON_NULL ? v : NULL;
}

int bertc_json_opt_int(const JsonValue *obj, const char *key, int64_t def, int64_t *out,
                 BertcError *err)
{
    const JsonValue *v = optional(obj, key);
    *out = def;
    return v ? bertc_json_as_int(v, out, err) : 0;
}

int bertc_json_opt_double(const JsonValue *obj, const char *key, double def, double *out,
                    BertcError *err)
{
    const JsonValue *v = optional(obj, key);
    *out = def;
    return v ? bertc_json_as_double(v, out, err) : 0;
}

int bertc_json_opt_string(const JsonValue *obj, const char *key, const char *def,
                    const char **out, BertcError *err)
{
    const JsonValue *v = optional(obj, key);
    *out = def;
    return v ? bertc_json_as_string(v, out, err) : 0;
}

int bertc_json_opt_bool(const JsonValue *obj, const char *key, bool def, bool *out,
                  BertcError *err)
{
    const JsonValue *v = optional(obj, key);
    *out = def;
    return v ? bertc_json_as_bool(v, out, err) : 0;
}

/* ------------------------------------------------------------------------ */
/* Writing                                                                   */
/* ------------------------------------------------------------------------ */

/* The escape for byte c ("\\n", "\\u001f", ...) in esc, or 0 if c is copied. */
static size_t escape_of(unsigned char c, char esc[8])
{
    static const char from[] = "\"\\\b\f\n\r\t", to[] = "\"\\bfnrt";
    const char *hit = c ? memchr(from, c, sizeof from - 1) : NULL;
    if (hit) {
        esc[0] = '\\';
        esc[1] = to[hit - from];
        return 2;
    }
    if (c < 0x20)
        return (size_t)snprintf(esc, 8, "\\u%04x", c);
    return 0;
}

size_t bertc_json_quote(char *dst, size_t cap, const char *s, size_t len)
{
    size_t n = 0;
    char esc[8];
    for (size_t i = 0; i <= len + 1; i++) {
        const char *piece = esc;
        size_t k = 0;
        if (i == 0 || i == len + 1) {
            esc[0] = '"';
            k = 1;
        } else {
            k = escape_of((unsigned char)s[i - 1], esc);
            if (k == 0) {
                piece = s + i - 1;
                k = 1;
            }
        }
        for (size_t j = 0; j < k; j++, n++)
            if (n + 1 < cap)
                dst[n] = piece[j];
    }
    if (cap)
        dst[n < cap ? n : cap - 1] = '\0';
    return n;
}
