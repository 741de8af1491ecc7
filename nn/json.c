/* nn/json.c — strict RFC 8259 parser (two passes: validate and count, then
 * build into exactly-sized arena blocks), accessors and a string quoter. */
#include "nn/json.h"

#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* UTF-8                                                                     */
/* ------------------------------------------------------------------------ */

/* Length of the well-formed UTF-8 sequence at s (avail bytes left), or 0 when
 * it is malformed (RFC 3629 table 3-7: no overlongs, no surrogates, <= U+10FFFF). */
static size_t utf8_seq_len(const unsigned char *s, size_t avail)
{
    unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    size_t n;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) n = 2;
    else if (c == 0xE0) { n = 3; lo = 0xA0; }
    else if (c >= 0xE1 && c <= 0xEC) n = 3;
    else if (c == 0xED) { n = 3; hi = 0x9F; }
    else if (c >= 0xEE && c <= 0xEF) n = 3;
    else if (c == 0xF0) { n = 4; lo = 0x90; }
    else if (c >= 0xF1 && c <= 0xF3) n = 4;
    else if (c == 0xF4) { n = 4; hi = 0x8F; }
    else return 0;
    if (avail < n || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    return n;
}

bool json_utf8_valid(const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < len;) {
        size_t n = utf8_seq_len(u + i, len - i);
        if (n == 0)
            return false;
        i += n;
    }
    return true;
}

static size_t utf8_encode(uint32_t cp, char out[4])
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* ------------------------------------------------------------------------ */
/* The parser                                                                */
/* ------------------------------------------------------------------------ */

/* Pass 1 (build == false) validates and counts; pass 2 builds. Both passes run
 * the same code, so they cannot disagree about what the text contains. */
typedef struct Parser {
    const char *text;
    size_t len, pos;
    size_t line, line_start;   /* for line:col of the current position */
    int depth;
    bool build;
    BertcError *err;
    const JsonDoc *doc;
    /* pass 1 counts */
    size_t n_values, n_members, string_bytes, max_number_len;
    /* pass 2 storage */
    JsonValue *values;
    size_t values_used;
    JsonValue **stack;         /* children of the containers being parsed */
    size_t stack_top;
    JsonValue **items;         /* finished children, one run per container */
    size_t items_used;
    JsonValue **by_key;        /* sorted member runs, one per object */
    size_t by_key_used;
    char *strings;
    size_t strings_used;
    char *numbuf;
} Parser;

static int parse_value(Parser *p, JsonValue **out);

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
    return bertc_errorf(p->err, "%s: line %zu, col %zu (byte %zu): %s", p->doc->name,
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

static JsonValue *new_value(Parser *p, JsonType type)
{
    if (!p->build) {
        p->n_values++;
        return NULL;
    }
    JsonValue *v = &p->values[p->values_used++];
    memset(v, 0, sizeof *v);
    v->type = type;
    v->doc = p->doc;
    v->offset = p->pos;
    v->line = (uint32_t)p->line;
    v->col = (uint32_t)(p->pos - p->line_start + 1);
    return v;
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
        *n = utf8_encode(cp, out);
        return 0;
    }
    char b[16];
    return perr(p, p->pos + 1, "invalid escape: expected one of \\\" \\\\ \\/ \\b \\f "
                "\\n \\r \\t \\uXXXX, found %s", found(p, p->pos + 1, b));
}

/* p->pos is at the opening quote. Pass 1 counts the decoded bytes; pass 2
 * writes them (NUL-terminated) into the string block. */
static int parse_string(Parser *p, const char **out, size_t *out_len)
{
    size_t start = p->pos++;
    char *dst = p->build ? p->strings + p->strings_used : NULL;
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
            k = utf8_seq_len(s, p->len - p->pos);
            if (k == 0)
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
        p->strings_used += n + 1;
        *out = dst;
        *out_len = n;
    } else {
        p->string_bytes += n + 1;
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
    v->number = strtod(p->numbuf, NULL);
    if (isinf(v->number))
        return perr(p, start, "number %.*s is out of the range of a double", (int)(n > 40 ? 40 : n),
                    p->text + start);
    return 0;
}

static int parse_number(Parser *p, JsonValue **out)
{
    size_t start = p->pos;
    char b[16];
    JsonValue *v = new_value(p, JSON_NUMBER);
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
    if (!p->build) {
        if (n > p->max_number_len)
            p->max_number_len = n;
        return 0;
    }
    v->is_int = integral && literal_int64(p->text + start, n, &v->integer);
    *out = v;
    return number_value(p, v, start, n);
}

/* --- arrays and objects ---------------------------------------------------- */

static void push_child(Parser *p, JsonValue *parent, JsonValue *child, size_t index)
{
    if (!p->build)
        return;
    child->parent = parent;
    child->index = index;
    p->stack[p->stack_top++] = child;
}

/* Move the last `count` pushed children into the parent's items. */
static void pop_children(Parser *p, JsonValue *parent, size_t count)
{
    if (!p->build)
        return;
    parent->items = p->items + p->items_used;
    parent->length = count;
    memcpy(parent->items, p->stack + p->stack_top - count, count * sizeof *parent->items);
    p->items_used += count;
    p->stack_top -= count;
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

static int parse_array(Parser *p, JsonValue **out)
{
    JsonValue *v = new_value(p, JSON_ARRAY);
    if (enter(p) != 0)
        return -1;
    size_t count = 0;
    bool closed = peek(p) == ']';
    if (closed)
        p->pos++;
    while (!closed) {
        JsonValue *child = NULL;
        if (parse_value(p, &child) != 0)
            return -1;
        push_child(p, v, child, count++);
        if (next_or_close(p, ']', "an array element", &closed) != 0)
            return -1;
    }
    p->depth--;
    pop_children(p, v, count);
    *out = v;
    return 0;
}

static int member(Parser *p, JsonValue *obj, size_t index)
{
    char b[16];
    if (peek(p) != '"')
        return perr(p, p->pos, "expected a member name in double quotes, found %s",
                    found(p, p->pos, b));
    const char *key = NULL;
    size_t key_len = 0;
    if (parse_string(p, &key, &key_len) != 0)
        return -1;
    skip_ws(p);
    if (peek(p) != ':')
        return perr(p, p->pos, "expected ':' after the member name, found %s",
                    found(p, p->pos, b));
    p->pos++;
    skip_ws(p);
    JsonValue *child = NULL;
    if (parse_value(p, &child) != 0)
        return -1;
    if (p->build) {
        child->key = key;
        child->key_length = key_len;
    } else {
        p->n_members++;
    }
    push_child(p, obj, child, index);
    return 0;
}

static int key_cmp(const JsonValue *a, const JsonValue *b)
{
    size_t n = a->key_length < b->key_length ? a->key_length : b->key_length;
    int c = memcmp(a->key, b->key, n);
    if (c != 0)
        return c;
    return (a->key_length > b->key_length) - (a->key_length < b->key_length);
}

/* Sort by key, ties by position, so duplicates sit side by side, first first. */
static int member_cmp(const void *pa, const void *pb)
{
    const JsonValue *a = *(JsonValue *const *)pa, *b = *(JsonValue *const *)pb;
    int c = key_cmp(a, b);
    return c ? c : (a->offset > b->offset) - (a->offset < b->offset);
}

/* Quote a key for a message, shortened with "..." when long. */
static const char *short_quote(char *buf, size_t cap, const char *s, size_t len)
{
    if (json_quote(buf, cap, s, len) >= cap && cap > 4)
        memcpy(buf + cap - 4, "...", 4);
    return buf;
}

static int index_members(Parser *p, JsonValue *obj)
{
    if (!p->build)
        return 0;
    obj->by_key = p->by_key + p->by_key_used;
    p->by_key_used += obj->length;
    memcpy(obj->by_key, obj->items, obj->length * sizeof *obj->items);
    qsort(obj->by_key, obj->length, sizeof *obj->by_key, member_cmp);
    for (size_t i = 1; i < obj->length; i++) {
        const JsonValue *first = obj->by_key[i - 1], *again = obj->by_key[i];
        if (key_cmp(first, again) == 0) {
            char q[96];
            return perr(p, again->offset, "duplicate key %s (first defined at line %u, col %u)",
                        short_quote(q, sizeof q, again->key, again->key_length),
                        (unsigned)first->line, (unsigned)first->col);
        }
    }
    return 0;
}

static int parse_object(Parser *p, JsonValue **out)
{
    JsonValue *v = new_value(p, JSON_OBJECT);
    if (enter(p) != 0)
        return -1;
    size_t count = 0;
    bool closed = peek(p) == '}';
    if (closed)
        p->pos++;
    while (!closed) {
        if (member(p, v, count++) != 0 ||
            next_or_close(p, '}', "an object member", &closed) != 0)
            return -1;
    }
    p->depth--;
    pop_children(p, v, count);
    *out = v;
    return index_members(p, v);
}

static int parse_literal(Parser *p, JsonValue **out, JsonType type, bool b, const char *word)
{
    JsonValue *v = new_value(p, type);
    if (expect_word(p, word) != 0)
        return -1;
    if (v)
        v->boolean = b;
    *out = v;
    return 0;
}

static int parse_value(Parser *p, JsonValue **out)
{
    char b[16];
    int c = peek(p);
    switch (c) {
    case '{': return parse_object(p, out);
    case '[': return parse_array(p, out);
    case 't': return parse_literal(p, out, JSON_BOOL, true, "true");
    case 'f': return parse_literal(p, out, JSON_BOOL, false, "false");
    case 'n': return parse_literal(p, out, JSON_NULL, false, "null");
    case '"': {
        JsonValue *v = new_value(p, JSON_STRING);
        *out = v;
        return v ? parse_string(p, &v->string, &v->length) : parse_string(p, NULL, NULL);
    }
    default:
        if (c == '-' || (c >= '0' && c <= '9'))
            return parse_number(p, out);
        return perr(p, p->pos, "expected a JSON value (object, array, string, number, "
                    "true, false or null), found %s", found(p, p->pos, b));
    }
}

/* One whole pass over the text: a single value surrounded by whitespace. */
static int parse_document(Parser *p, JsonValue **root)
{
    char b[16];
    p->pos = 0;
    p->line = 1;
    p->line_start = 0;
    p->depth = 0;
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

/* Allocate the blocks pass 2 fills, sized by the counts of pass 1. */
static void allocate_blocks(Parser *p, Arena *arena)
{
    size_t nv = p->n_values;
    p->values = arena_alloc(arena, nv * sizeof *p->values);
    p->stack = arena_alloc(arena, nv * sizeof *p->stack);
    p->items = arena_alloc(arena, nv * sizeof *p->items);
    p->by_key = arena_alloc(arena, (p->n_members + 1) * sizeof *p->by_key);
    p->strings = arena_alloc(arena, p->string_bytes + 1);
    p->numbuf = arena_alloc(arena, p->max_number_len + 1);
    p->build = true;
}

int json_parse(Arena *arena, const char *name, const char *text, size_t length,
               JsonDoc **out, BertcError *err)
{
    size_t used_before = arena_used(arena);
    size_t name_len = strlen(name);
    JsonDoc *doc = arena_alloc(arena, sizeof *doc + name_len + 1);
    char *name_copy = (char *)(doc + 1);
    memcpy(name_copy, name, name_len + 1);
    doc->name = name_copy;
    doc->root = NULL;
    Parser p = {.text = text, .len = length, .err = err, .doc = doc};
    JsonValue *root = NULL;
    if (parse_document(&p, &root) != 0)
        return -1;
    allocate_blocks(&p, arena);
    if (parse_document(&p, &root) != 0)
        return -1;
    doc->root = root;
    doc->bytes = arena_used(arena) - used_before;
    *out = doc;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Accessors                                                                 */
/* ------------------------------------------------------------------------ */

const char *json_type_name(JsonType type)
{
    static const char *const names[] = {"null", "a boolean", "a number",
                                        "a string", "an array", "an object"};
    return names[type];
}

const JsonValue *json_get(const JsonValue *obj, const char *key)
{
    if (!obj || obj->type != JSON_OBJECT)
        return NULL;
    JsonValue probe = {.key = key, .key_length = strlen(key)};
    size_t lo = 0, hi = obj->length;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = key_cmp(obj->by_key[mid], &probe);
        if (c == 0)
            return obj->by_key[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

const JsonValue *json_at(const JsonValue *arr, size_t i)
{
    if (!arr || arr->type != JSON_ARRAY || i >= arr->length)
        return NULL;
    return arr->items[i];
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
    if (!v->key)
        return (size_t)snprintf(dst, room, "[%zu]", v->index);
    if (plain_key(v->key, v->key_length))
        return (size_t)snprintf(dst, room, "%s%.*s", first ? "" : ".", (int)v->key_length,
                                v->key);
    size_t n = (size_t)snprintf(dst, room, "[");
    n += json_quote(room > n ? dst + n : NULL, room > n ? room - n : 0, v->key, v->key_length);
    return n + (size_t)snprintf(room > n ? dst + n : NULL, room > n ? room - n : 0, "]");
}

char *json_path(const JsonValue *v, char *buf, size_t cap)
{
    const JsonValue *chain[JSON_MAX_DEPTH + 2];
    size_t n = 0;
    for (const JsonValue *x = v; x && x->parent; x = x->parent)
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

int json_errorf(BertcError *err, const JsonValue *v, const char *fmt, ...)
{
    char what[BERTC_ERROR_LEN], path[JSON_PATH_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return bertc_errorf(err, "%s: %s (line %u, col %u): %s", v->doc->name,
                        json_path(v, path, sizeof path), (unsigned)v->line,
                        (unsigned)v->col, what);
}

static int type_error(BertcError *err, const JsonValue *v, const char *expected)
{
    if (v->type == JSON_NUMBER && v->number == trunc(v->number))
        return json_errorf(err, v, "expected %s, found the number %.17g written with a "
                           "fraction or exponent", expected, v->number);
    if (v->type == JSON_NUMBER)
        return json_errorf(err, v, "expected %s, found the number %.17g", expected, v->number);
    return json_errorf(err, v, "expected %s, found %s", expected, json_type_name(v->type));
}

int json_as_int(const JsonValue *v, int64_t *out, BertcError *err)
{
    if (v->type == JSON_NUMBER && !v->is_int && v->number == trunc(v->number) &&
        fabs(v->number) >= 9.2e18)
        return json_errorf(err, v, "integer %.17g is outside the int64 range", v->number);
    if (v->type != JSON_NUMBER || !v->is_int)
        return type_error(err, v, "an integer (no fraction or exponent)");
    *out = v->integer;
    return 0;
}

int json_as_double(const JsonValue *v, double *out, BertcError *err)
{
    if (v->type != JSON_NUMBER)
        return type_error(err, v, "a number");
    *out = v->number;
    return 0;
}

/* The string as a C string. A "\u0000" inside would cut it short, so that
 * "gelu\u0000x" compared as "gelu": such a string is refused here, the one
 * place a C string is taken (a caller that wants the bytes reads v->string
 * with v->length). */
int json_as_string(const JsonValue *v, const char **out, BertcError *err)
{
    if (v->type != JSON_STRING)
        return type_error(err, v, "a string");
    size_t nul = strlen(v->string);
    if (nul != v->length)
        return json_errorf(err, v, "the string holds a NUL character (\\u0000) at byte %zu; "
                           "remove it", nul);
    *out = v->string;
    return 0;
}

int json_as_bool(const JsonValue *v, bool *out, BertcError *err)
{
    if (v->type != JSON_BOOL)
        return type_error(err, v, "true or false");
    *out = v->boolean;
    return 0;
}

/* The member, or NULL after filling err with "missing key <path>". */
static const JsonValue *required(const JsonValue *obj, const char *key, BertcError *err)
{
    const JsonValue *v = json_get(obj, key);
    if (v)
        return v;
    if (!obj->parent) {
        bertc_errorf(err, "%s: missing key \"%s\"", obj->doc->name, key);
    } else {
        char path[JSON_PATH_LEN];
        bertc_errorf(err, "%s: missing key \"%s.%s\" (in the object at line %u, col %u)",
                     obj->doc->name, json_path(obj, path, sizeof path), key,
                     (unsigned)obj->line, (unsigned)obj->col);
    }
    return NULL;
}

int json_get_int(const JsonValue *obj, const char *key, int64_t *out, BertcError *err)
{
    const JsonValue *v = required(obj, key, err);
    return v ? json_as_int(v, out, err) : -1;
}

int json_get_double(const JsonValue *obj, const char *key, double *out, BertcError *err)
{
    const JsonValue *v = required(obj, key, err);
    return v ? json_as_double(v, out, err) : -1;
}

int json_get_string(const JsonValue *obj, const char *key, const char **out, BertcError *err)
{
    const JsonValue *v = required(obj, key, err);
    return v ? json_as_string(v, out, err) : -1;
}

int json_get_bool(const JsonValue *obj, const char *key, bool *out, BertcError *err)
{
    const JsonValue *v = required(obj, key, err);
    return v ? json_as_bool(v, out, err) : -1;
}

/* The member, or NULL when it is absent or null (then the default applies). */
static const JsonValue *optional(const JsonValue *obj, const char *key)
{
    const JsonValue *v = json_get(obj, key);
    return v && v->type != JSON_NULL ? v : NULL;
}

int json_opt_int(const JsonValue *obj, const char *key, int64_t def, int64_t *out,
                 BertcError *err)
{
    const JsonValue *v = optional(obj, key);
    *out = def;
    return v ? json_as_int(v, out, err) : 0;
}

int json_opt_double(const JsonValue *obj, const char *key, double def, double *out,
                    BertcError *err)
{
    const JsonValue *v = optional(obj, key);
    *out = def;
    return v ? json_as_double(v, out, err) : 0;
}

int json_opt_string(const JsonValue *obj, const char *key, const char *def,
                    const char **out, BertcError *err)
{
    const JsonValue *v = optional(obj, key);
    *out = def;
    return v ? json_as_string(v, out, err) : 0;
}

int json_opt_bool(const JsonValue *obj, const char *key, bool def, bool *out,
                  BertcError *err)
{
    const JsonValue *v = optional(obj, key);
    *out = def;
    return v ? json_as_bool(v, out, err) : 0;
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

size_t json_quote(char *dst, size_t cap, const char *s, size_t len)
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
