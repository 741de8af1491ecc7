/* zoo/train/dataset.c — CSV (RFC 4180), TSV and JSONL text into a table of cells
 * under a header (zoo/train/dataset.h), and the sorted label set of a column.
 * Parsing is from memory; zoo/train/dataset_file.c reads the file. */
#include "zoo/train/dataset.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The most cells (rows x columns) a table may hold: 1 GiB of pointers. */
#define DATASET_MAX_CELLS (1LL << 27)

typedef struct Parser {
    Dataset *d;
    Arena *arena;
    const char *text;
    size_t len, pos;
    int64_t line;                          /* of text[pos], 1-based */
    const int64_t *line_of;                /* SQuAD: line k of text is the file's line_of[k - 1] */
    int64_t cap;                           /* rows d->cells has room for */
    bool named;                            /* no header line: the columns were given */
    int n_fields;                          /* of the record being read */
    const char *fields[DATASET_MAX_COLUMNS];
} Parser;

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

DatasetFormat bertc_dataset_guess_format(const char *name, const char *text, size_t len)
{
    if (name && (ends_with(name, ".csv") || ends_with(name, ".CSV")))
        return DATASET_CSV;
    if (name && (ends_with(name, ".tsv") || ends_with(name, ".TSV")))
        return DATASET_TSV;
    if (name && (ends_with(name, ".jsonl") || ends_with(name, ".json")))
        return DATASET_JSONL;
    if (name && (ends_with(name, ".conll") || ends_with(name, ".CONLL")))
        return DATASET_CONLL;
    size_t i = bertc_utf8_bom(text, len);
    while (i < len && (text[i] == ' ' || text[i] == '\n' || text[i] == '\r'))
        i++;
    if (len - i >= 10 && memcmp(text + i, "-DOCSTART-", 10) == 0)
        return DATASET_CONLL;
    if (i < len && text[i] == '{')
        return DATASET_JSONL;
    for (; i < len && text[i] != '\n'; i++)
        if (text[i] == '\t')
            return DATASET_TSV;
    return DATASET_CSV;
}

/* ---- cells ------------------------------------------------------------- */

/* Field k's column: its header name, or its number when the header has
 * none for it (the header itself, or a row with more fields than it). */
static const char *column_name(const Parser *p, int k, char *buf, size_t cap)
{
    if (p->d->columns && k < p->d->n_columns)
        return p->d->columns[k];
    snprintf(buf, cap, p->d->columns ? "%d, past the header" : "%d of the header", k + 1);
    return buf;
}

/* A cell's bytes: valid UTF-8 without NUL. */
static int check_cell(const Parser *p, int64_t line, int k, const char *s, size_t n,
                      BertcError *err)
{
    char buf[32];
    if (memchr(s, '\0', n))
        return bertc_errorf(err, "%s:%lld: a NUL byte in column '%.60s'", p->d->name,
                            (long long)line, column_name(p, k, buf, sizeof buf));
    if (!bertc_utf8_valid(s, n))
        return bertc_errorf(err, "%s:%lld: invalid UTF-8 in column '%.60s'", p->d->name,
                            (long long)line, column_name(p, k, buf, sizeof buf));
    return 0;
}

static char *copy(Arena *a, const char *s, size_t n)
{
    char *c = bertc_arena_alloc(a, n + 1);
    memcpy(c, s, n);
    c[n] = '\0';
    return c;
}

/* Room for one more row: the arrays double (the old ones stay in the arena:
 * at most twice the final size in all). */
static int grow(Parser *p, BertcError *err)
{
    Dataset *d = p->d;
    if (d->n_rows < p->cap)
        return 0;
    int64_t cap = p->cap ? 2 * p->cap : 64;
    if (cap * d->n_columns > DATASET_MAX_CELLS)
        return bertc_errorf(err, "%s: more than %lld cells (rows x columns): split the file",
                            d->name, DATASET_MAX_CELLS);
    const char **cells = bertc_arena_alloc(p->arena, sizeof *cells * (size_t)(cap * d->n_columns));
    int64_t *line = bertc_arena_alloc(p->arena, sizeof *line * (size_t)cap);
    if (d->n_rows) {
        memcpy(cells, d->cells, sizeof *cells * (size_t)(d->n_rows * d->n_columns));
        memcpy(line, d->line, sizeof *line * (size_t)d->n_rows);
    }
    d->cells = cells;
    d->line = line;
    p->cap = cap;
    return 0;
}

/* The record just read (p->fields) as the header or the next row. */
static int store(Parser *p, int64_t line, BertcError *err)
{
    Dataset *d = p->d;
    if (!d->columns) {
        d->n_columns = p->n_fields;
        d->columns = bertc_arena_alloc(p->arena, sizeof(char *) * (size_t)p->n_fields);
        memcpy(d->columns, p->fields, sizeof(char *) * (size_t)p->n_fields);
        return 0;
    }
    if (p->n_fields != d->n_columns)
        return bertc_errorf(err, "%s:%lld: %d field%s, the %s has %d", d->name,
                            (long long)line, p->n_fields, p->n_fields == 1 ? "" : "s",
                            p->named ? "table" : "header", d->n_columns);
    if (grow(p, err) != 0)
        return -1;
    memcpy(d->cells + d->n_rows * d->n_columns, p->fields, sizeof(char *) * (size_t)p->n_fields);
    d->line[d->n_rows++] = line;
    return 0;
}

static int add_field(Parser *p, int64_t line, const char *s, size_t n, BertcError *err)
{
    if (p->n_fields == DATASET_MAX_COLUMNS)
        return bertc_errorf(err, "%s:%lld: more than %d fields", p->d->name, (long long)line,
                            DATASET_MAX_COLUMNS);
    if (check_cell(p, line, p->n_fields, s, n, err) != 0)
        return -1;
    p->fields[p->n_fields++] = copy(p->arena, s, n);
    return 0;
}

/* At a record's end: "\n", "\r\n" or the end of the text. */
static bool at_record_end(const Parser *p, size_t i)
{
    return i >= p->len || p->text[i] == '\n' ||
           (p->text[i] == '\r' && i + 1 < p->len && p->text[i + 1] == '\n');
}

static void skip_record_end(Parser *p)
{
    if (p->pos < p->len && p->text[p->pos] == '\r')
        p->pos++;
    if (p->pos < p->len && p->text[p->pos] == '\n') {
        p->pos++;
        p->line++;
    }
}

/* ---- CSV and TSV ------------------------------------------------------- */

/* "..." with "" for a quote, from p->pos (the opening quote). */
static int quoted_field(Parser *p, int64_t line, BertcError *err)
{
    const char *t = p->text;
    int64_t opened = p->line;
    size_t n = 0, start = ++p->pos;
    for (;;) {
        const char *q = memchr(t + p->pos, '"', p->len - p->pos);
        if (!q)
            return bertc_errorf(err, "%s:%lld: unterminated quoted field (it opens on this "
                                "line and the file ends inside it)", p->d->name,
                                (long long)opened);
        for (const char *c = t + p->pos; c < q; c++)
            p->line += *c == '\n';
        p->pos = (size_t)(q - t) + 1;
        if (p->pos < p->len && t[p->pos] == '"') {   /* "" */
            p->pos++;
            continue;
        }
        break;
    }
    /* unescape t[start .. pos-1): every "" becomes " */
    char *out = bertc_arena_alloc(p->arena, p->pos - start);
    for (size_t i = start; i < p->pos - 1; i++) {
        out[n++] = t[i];
        if (t[i] == '"')
            i++;
    }
    if (p->pos < p->len && t[p->pos] != ',' && !at_record_end(p, p->pos))
        return bertc_errorf(err, "%s:%lld: '%c' after a closing quote (a field that starts with "
                            "'\"' must end with '\"')", p->d->name, (long long)p->line,
                            t[p->pos] >= ' ' && t[p->pos] < 127 ? t[p->pos] : '?');
    if (p->n_fields == DATASET_MAX_COLUMNS)
        return bertc_errorf(err, "%s:%lld: more than %d fields", p->d->name, (long long)line,
                            DATASET_MAX_COLUMNS);
    if (check_cell(p, line, p->n_fields, out, n, err) != 0)
        return -1;
    out[n] = '\0';
    p->fields[p->n_fields++] = out;
    return 0;
}

/* One record of fields separated by sep; CSV (quotes) when quoting. */
static int separated_record(Parser *p, char sep, bool quoting, BertcError *err)
{
    int64_t line = p->line;
    p->n_fields = 0;
    for (;;) {
        if (quoting && p->pos < p->len && p->text[p->pos] == '"') {
            if (quoted_field(p, line, err) != 0)
                return -1;
        } else {
            size_t i = p->pos;
            while (!at_record_end(p, i) && p->text[i] != sep)
                i++;
            if (add_field(p, line, p->text + p->pos, i - p->pos, err) != 0)
                return -1;
            p->pos = i;
        }
        if (p->pos < p->len && p->text[p->pos] == sep) {
            p->pos++;
            continue;
        }
        skip_record_end(p);
        return store(p, line, err);
    }
}

static int parse_separated(Parser *p, char sep, bool quoting, BertcError *err)
{
    while (p->pos < p->len) {
        if (at_record_end(p, p->pos)) {   /* an empty line */
            skip_record_end(p);
            continue;
        }
        if (separated_record(p, sep, quoting, err) != 0)
            return -1;
    }
    return 0;
}

/* ---- JSONL -------------------------------------------------------------- */

/* A number's literal as written ("0.25", "-3e2"). */
static const char *number_text(Parser *p, const JsonDoc *doc, const JsonValue *v)
{
    const char *s = doc->text + v->offset;
    size_t n = strspn(s, "+-.eE0123456789");
    return copy(p->arena, s, n);
}

/* A list element as text: a string's bytes or a number's literal. */
static const char *element_text(Parser *p, const JsonDoc *doc, const JsonValue *e, size_t *len)
{
    if (e->type == JSON_NUMBER) {
        const char *s = number_text(p, doc, e);
        *len = strlen(s);
        return s;
    }
    *len = e->length;
    return e->type == JSON_STRING ? bertc_json_string(e) : NULL;
}

/* ["a", "b"] -> "a|b"; [12, 40] -> "12|40". */
static int joined_list(Parser *p, int64_t line, const char *col, const JsonDoc *doc,
                       const JsonValue *v, const char **out, BertcError *err)
{
    size_t total = 1, len;
    for (uint32_t i = 0; i < v->length; i++) {
        const char *s = element_text(p, doc, bertc_json_at(v, i), &len);
        if (!s || memchr(s, '|', len) || memchr(s, '\0', len))
            return bertc_errorf(err, "%s:%lld: column '%.60s' must be a list of strings "
                                "without '|' or numbers (element %u)", p->d->name,
                                (long long)line, col, (unsigned)i);
        total += len + 1;
    }
    char *s = bertc_arena_alloc(p->arena, total);
    size_t n = 0;
    for (uint32_t i = 0; i < v->length; i++) {
        const char *e = element_text(p, doc, bertc_json_at(v, i), &len);
        if (i)
            s[n++] = '|';
        memcpy(s + n, e, len);
        n += len;
    }
    s[n] = '\0';
    *out = s;
    return 0;
}

/* Column "answers.text": the top-level key if there is one, else member
 * "text" of the object "answers" (one level, as SQuAD's files nest). */
static const JsonValue *json_column(const JsonValue *root, const char *col)
{
    const JsonValue *v = bertc_json_get(root, col);
    const char *dot = strchr(col, '.');
    if (v || !dot)
        return v;
    char outer[256];
    size_t n = (size_t)(dot - col);
    if (n >= sizeof outer)
        return NULL;
    memcpy(outer, col, n);
    outer[n] = '\0';
    const JsonValue *o = bertc_json_get(root, outer);
    return o && o->type == JSON_OBJECT ? bertc_json_get(o, dot + 1) : NULL;
}

static int json_cell(Parser *p, int64_t line, int k, const JsonDoc *doc, const char **out,
                     BertcError *err)
{
    const char *col = p->d->columns[k];
    const JsonValue *v = json_column(doc->root, col);
    *out = NULL;
    if (!v || v->type == JSON_NULL)
        return 0;
    switch (v->type) {
    case JSON_STRING:
        if (check_cell(p, line, k, bertc_json_string(v), v->length, err) != 0)
            return -1;
        *out = copy(p->arena, bertc_json_string(v), v->length);
        return 0;
    case JSON_NUMBER:
        *out = number_text(p, doc, v);
        return 0;
    case JSON_BOOL:
        *out = v->boolean ? "true" : "false";
        return 0;
    case JSON_ARRAY:
        return joined_list(p, line, col, doc, v, out, err);
    default:
        return bertc_errorf(err, "%s:%lld: column '%.60s' is an object; give a string, a "
                            "number or a list of strings", p->d->name, (long long)line, col);
    }
}

/* The first object's keys, in the order written; an object's members
 * become columns "key.member" (one level). */
static int json_header(Parser *p, const JsonValue *root, const char *name, BertcError *err)
{
    Dataset *d = p->d;
    int n = 0;
    for (uint32_t i = 0; i < root->length; i++) {
        const JsonValue *v = bertc_json_at(root, i);
        n += v->type == JSON_OBJECT ? (int)v->length : 1;
    }
    if (n == 0 || n > DATASET_MAX_COLUMNS)
        return bertc_errorf(err, "%s: the first object must have 1 to %d keys", name,
                            DATASET_MAX_COLUMNS);
    d->columns = bertc_arena_alloc(p->arena, sizeof(char *) * (size_t)n);
    for (uint32_t i = 0; i < root->length; i++) {
        size_t len, sub;
        const JsonValue *v = bertc_json_at(root, i);
        const char *key = bertc_json_key(v, &len);
        if (v->type != JSON_OBJECT) {
            d->columns[d->n_columns++] = copy(p->arena, key, len);
            continue;
        }
        for (uint32_t j = 0; j < v->length; j++) {
            const char *member = bertc_json_key(bertc_json_at(v, j), &sub);
            char *c = bertc_arena_alloc(p->arena, len + sub + 2);
            memcpy(c, key, len);
            c[len] = '.';
            memcpy(c + len + 1, member, sub + 1);
            d->columns[d->n_columns++] = c;
        }
    }
    return 0;
}

static int json_line(Parser *p, Arena *scratch, size_t end, BertcError *err)
{
    char name[600];
    JsonDoc *doc;
    size_t n = end > p->pos && p->text[end - 1] == '\r' ? end - 1 - p->pos : end - p->pos;
    int64_t line = p->line_of ? p->line_of[p->line - 1] : p->line;
    snprintf(name, sizeof name, "%s:%lld", p->d->name, (long long)line);
    bertc_arena_reset(scratch);
    if (bertc_json_parse(scratch, name, p->text + p->pos, n, &doc, err) != 0)
        return -1;
    if (doc->root->type != JSON_OBJECT)
        return bertc_errorf(err, "%s: a JSONL line must be an object {...}, found %s", name,
                            bertc_json_type_name(doc->root->type));
    if (!p->d->columns && json_header(p, doc->root, name, err) != 0)
        return -1;
    if (grow(p, err) != 0)
        return -1;
    const char **row = p->d->cells + p->d->n_rows * p->d->n_columns;
    for (int k = 0; k < p->d->n_columns; k++)
        if (json_cell(p, line, k, doc, &row[k], err) != 0)
            return -1;
    p->d->line[p->d->n_rows++] = line;
    return 0;
}

static int parse_jsonl(Parser *p, BertcError *err)
{
    Arena *scratch = bertc_arena_create("jsonl line", 1 << 16);
    int rc = 0;
    while (rc == 0 && p->pos < p->len) {
        const char *nl = memchr(p->text + p->pos, '\n', p->len - p->pos);
        size_t end = nl ? (size_t)(nl - p->text) : p->len;
        size_t i = p->pos;
        while (i < end && (p->text[i] == ' ' || p->text[i] == '\t' || p->text[i] == '\r'))
            i++;
        if (i < end)
            rc = json_line(p, scratch, end, err);
        p->pos = end;
        skip_record_end(p);
    }
    bertc_arena_destroy(scratch);
    return rc;
}

/* ---- CoNLL ------------------------------------------------------------ */

/* The end of the line at i: its '\n' or the text's end. */
static size_t line_end(const Parser *p, size_t i)
{
    const char *nl = memchr(p->text + i, '\n', p->len - i);
    return nl ? (size_t)(nl - p->text) : p->len;
}

/* A line of only spaces, TABs and '\r', or a "-DOCSTART-" line: both end a
 * sentence and are no token. */
static bool conll_break(const Parser *p, size_t i, size_t end)
{
    while (i < end && (p->text[i] == ' ' || p->text[i] == '\t' || p->text[i] == '\r'))
        i++;
    return i == end || (end - i >= 10 && memcmp(p->text + i, "-DOCSTART-", 10) == 0);
}

/* One token line text[i..end): the first field (the word) and the last (the
 * tag) appended to the '|'-joined cells at w and t. */
static int conll_token(Parser *p, size_t i, size_t end, char *w, size_t *nw, char *t, size_t *nt,
                       BertcError *err)
{
    const char *s = p->text, *field[2] = {NULL, NULL};
    size_t len[2] = {0, 0};
    int n = 0;
    while (end > i && s[end - 1] == '\r')
        end--;
    while (i < end) {
        while (i < end && (s[i] == ' ' || s[i] == '\t'))
            i++;
        size_t start = i;
        while (i < end && s[i] != ' ' && s[i] != '\t')
            i++;
        if (i == start)
            break;
        int k = n++ == 0 ? 0 : 1;
        field[k] = s + start;
        len[k] = i - start;
    }
    if (n < 2)
        return bertc_errorf(err, "%s:%lld: one column ('%.*s'): a CoNLL line is the word, "
                            "any other columns, and the tag, separated by spaces or TABs",
                            p->d->name, (long long)p->line, (int)(len[0] > 40 ? 40 : len[0]),
                            field[0]);
    char *out[2] = {w, t};
    size_t *at[2] = {nw, nt};
    for (int k = 0; k < 2; k++) {
        if (memchr(field[k], '|', len[k]))
            return bertc_errorf(err, "%s:%lld: a '|' in the %s '%.*s' (bertc joins a sentence's "
                                "%ss with '|')", p->d->name, (long long)p->line,
                                k ? "tag" : "word", (int)(len[k] > 40 ? 40 : len[k]), field[k],
                                k ? "tag" : "word");
        if (check_cell(p, p->line, k, field[k], len[k], err) != 0)
            return -1;
        if (*at[k])
            out[k][(*at[k])++] = '|';
        memcpy(out[k] + *at[k], field[k], len[k]);
        *at[k] += len[k];
        out[k][*at[k]] = '\0';
    }
    return 0;
}

/* The sentence of token lines from p->pos to the next break: one row. */
static int conll_sentence(Parser *p, BertcError *err)
{
    size_t end = p->pos;
    while (end < p->len && !conll_break(p, end, line_end(p, end)))
        end = line_end(p, end) + 1;
    end = end > p->len ? p->len : end;
    char *w = bertc_arena_alloc(p->arena, end - p->pos + 1);
    char *t = bertc_arena_alloc(p->arena, end - p->pos + 1);
    size_t nw = 0, nt = 0;
    int64_t first = p->line;
    while (p->pos < end) {
        size_t e = line_end(p, p->pos);
        if (conll_token(p, p->pos, e, w, &nw, t, &nt, err) != 0)
            return -1;
        p->pos = e;
        skip_record_end(p);
    }
    if (grow(p, err) != 0)
        return -1;
    p->d->cells[p->d->n_rows * 2] = w;
    p->d->cells[p->d->n_rows * 2 + 1] = t;
    p->d->line[p->d->n_rows++] = first;
    return 0;
}

static int parse_conll(Parser *p, BertcError *err)
{
    static const char *columns[2] = {"tokens", "tags"};
    p->d->columns = columns;
    p->d->n_columns = 2;
    while (p->pos < p->len) {
        size_t e = line_end(p, p->pos);
        if (conll_break(p, p->pos, e)) {
            p->pos = e;
            skip_record_end(p);
            continue;
        }
        if (conll_sentence(p, err) != 0)
            return -1;
    }
    return 0;
}

/* ---- the table ---------------------------------------------------------- */

/* A .json file that is one SQuAD document ({"data": [{"paragraphs": ...}]})
 * becomes its JSONL rows (zoo/train/dataset_squad.c) in *squad; any other text
 * is left as it is (a JSONL file does not parse as one JSON value). */
static int squad_file(const char *name, const char *text, size_t len, Arena **squad,
                      const char **out, size_t *out_len, const int64_t **line_of,
                      BertcError *err)
{
    size_t i = 0;
    while (i < len && (text[i] == ' ' || text[i] == '\n' || text[i] == '\r' || text[i] == '\t'))
        i++;
    if (i == len || text[i] != '{')
        return 0;
    *squad = bertc_arena_create("squad", len * 2 + 4096);
    JsonDoc *doc;
    BertcError not_one_value;
    if (bertc_json_parse(*squad, name, text, len, &doc, &not_one_value) != 0 ||
        !bertc_squad_is_squad(doc->root))
        return 0;
    char *rows;
    int64_t *lines;
    if (bertc_squad_to_jsonl(*squad, doc, &rows, out_len, &lines, err) != 0)
        return -1;
    *out = rows;
    *line_of = lines;
    return 0;
}

/* text as a table; columns given: the names of a table without a header
 * line (CSV or TSV), else the header's. */
static int parse(Dataset *d, Arena *arena, const char *name, DatasetFormat format,
                 const char *const *columns, int n_columns, const char *text, size_t len,
                 BertcError *err)
{
    *d = (Dataset){.name = copy(arena, name, strlen(name)), .format = format};
    if (columns) {
        if (format != DATASET_CSV && format != DATASET_TSV)
            return bertc_errorf(err, "%s: only a CSV or TSV table comes without a header",
                                name);
        if (n_columns < 1 || n_columns > DATASET_MAX_COLUMNS)
            return bertc_errorf(err, "%s: %d columns named; a table has 1 to %d", name,
                                n_columns, DATASET_MAX_COLUMNS);
        const char **names = bertc_arena_alloc(arena, sizeof *names * (size_t)n_columns);
        for (int k = 0; k < n_columns; k++)
            names[k] = copy(arena, columns[k], strlen(columns[k]));
        d->columns = names;
        d->n_columns = n_columns;
    }
    size_t bom = bertc_utf8_bom(text, len);   /* Excel's "CSV UTF-8" starts with one */
    text += bom;
    len -= bom;
    Parser *p = malloc(sizeof *p);
    if (!p)
        return bertc_errorf(err, "%s: out of memory", name);
    *p = (Parser){.d = d, .arena = arena, .text = text, .len = len, .line = 1,
                  .named = columns != NULL};
    Arena *squad = NULL;
    if (format == DATASET_JSONL && squad_file(name, text, len, &squad, &p->text, &p->len,
                                              &p->line_of, err) != 0) {
        free(p);
        bertc_arena_destroy(squad);
        return -1;
    }
    int rc = format == DATASET_JSONL   ? parse_jsonl(p, err)
             : format == DATASET_CONLL ? parse_conll(p, err)
             : parse_separated(p, format == DATASET_TSV ? '\t' : ',', format == DATASET_CSV, err);
    free(p);
    bertc_arena_destroy(squad);
    if (rc == 0 && columns)
        return 0;   /* no header to miss; how many rows are enough is the caller's */
    if (rc == 0 && !d->columns)
        rc = bertc_errorf(err, "%s: empty: the first line must be a header of column names",
                          name);
    if (rc == 0 && d->n_rows == 0 && format == DATASET_CONLL)
        rc = bertc_errorf(err, "%s: no sentences (CoNLL: a token a line, a blank line between "
                          "sentences)", name);
    else if (rc == 0 && d->n_rows == 0)
        rc = bertc_errorf(err, "%s: a header and no rows", name);
    return rc;
}

int bertc_dataset_parse(Dataset *d, Arena *arena, const char *name, DatasetFormat format,
                        const char *text, size_t len, BertcError *err)
{
    return parse(d, arena, name, format, NULL, 0, text, len, err);
}

int bertc_dataset_parse_columns(Dataset *d, Arena *arena, const char *name, DatasetFormat format,
                                const char *const *columns, int n_columns, const char *text,
                                size_t len, BertcError *err)
{
    return parse(d, arena, name, format, columns, n_columns, text, len, err);
}

Dataset bertc_dataset_rows(const Dataset *d, int64_t first, int64_t n)
{
    Dataset rows = *d;
    first = first < 0 ? 0 : first > d->n_rows ? d->n_rows : first;
    rows.n_rows = n < 0 ? 0 : n > d->n_rows - first ? d->n_rows - first : n;
    rows.cells = d->cells ? d->cells + first * d->n_columns : NULL;
    rows.line = d->line ? d->line + first : NULL;
    return rows;
}

static void list_columns(const Dataset *d, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int k = 0; k < d->n_columns && n + 4 < cap; k++) {
        int w = snprintf(buf + n, cap - n, "%s'%s'", k ? ", " : "", d->columns[k]);
        n = w < 0 ? n : n + (size_t)w;
    }
}

int bertc_dataset_column_of(const Dataset *d, const char *const *names, int n, BertcError *err)
{
    for (int i = 0; i < n; i++)
        for (int k = 0; k < d->n_columns; k++)
            if (strcmp(d->columns[k], names[i]) == 0)
                return k;
    char have[200], want[140];
    list_columns(d, have, sizeof have);
    snprintf(want, sizeof want, n > 1 ? "'%.60s' or '%.60s'" : "'%.60s'", names[0],
             n > 1 ? names[1] : "");
    bertc_errorf(err, "%s: no column %s in the header (it has %s)", d->name, want, have);
    return -1;
}

int bertc_dataset_column(const Dataset *d, const char *name, BertcError *err)
{
    return bertc_dataset_column_of(d, &name, 1, err);
}

/* ---- label sets ------------------------------------------------------- */

static int by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int bertc_label_set_id(const LabelSet *s, const char *name, size_t len)
{
    for (int i = 0; s->unsorted && i < s->n; i++)
        if (strncmp(s->names[i], name, len) == 0 && s->names[i][len] == '\0')
            return i;
    if (s->unsorted)
        return -1;
    int lo = 0, hi = s->n - 1;
    while (lo <= hi) {   /* binary search of the sorted names */
        int mid = (lo + hi) / 2;
        int c = strncmp(s->names[mid], name, len);
        if (c == 0 && s->names[mid][len] != '\0')
            c = 1;
        if (c == 0)
            return mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

/* Adds one name to the unsorted list names[0..*n) unless it is there. */
static int add_label(const Dataset *d, int64_t row, const char *s, size_t len, const char **names,
                     int *n, Arena *arena, BertcError *err)
{
    if (len == 0)
        return bertc_errorf(err, "%s:%lld: an empty label", d->name, (long long)d->line[row]);
    for (int i = 0; i < *n; i++)
        if (strncmp(names[i], s, len) == 0 && names[i][len] == '\0')
            return 0;
    if (*n == LABELS_MAX)
        return bertc_errorf(err, "%s:%lld: more than %d distinct labels", d->name,
                            (long long)d->line[row], LABELS_MAX);
    names[(*n)++] = copy(arena, s, len);
    return 0;
}

int bertc_label_set_build(LabelSet *s, Arena *arena, const Dataset *d, int column, bool multi,
                          BertcError *err)
{
    const char **names = bertc_arena_alloc(arena, sizeof(char *) * LABELS_MAX);
    int n = 0;
    for (int64_t i = 0; i < d->n_rows; i++) {
        const char *cell = bertc_dataset_cell(d, i, column);
        if (!cell)
            return bertc_errorf(err, "%s:%lld: no '%s'", d->name, (long long)d->line[i],
                                d->columns[column]);
        if (!multi) {
            if (add_label(d, i, cell, strlen(cell), names, &n, arena, err) != 0)
                return -1;
            continue;
        }
        for (const char *c = cell; *cell;) {   /* "a|b|c"; "" is no label */
            const char *bar = strchr(c, '|');
            size_t len = bar ? (size_t)(bar - c) : strlen(c);
            if (add_label(d, i, c, len, names, &n, arena, err) != 0)
                return -1;
            if (!bar)
                break;
            c = bar + 1;
        }
    }
    qsort(names, (size_t)n, sizeof *names, by_name);
    *s = (LabelSet){.n = n, .names = names};
    if (n == 0)
        return bertc_errorf(err, "%s: no labels in column '%s'", d->name, d->columns[column]);
    return 0;
}
