/* cli/text_input.c — the texts of `bertc predict` and `bertc embed`: the
 * positional arguments, or --input FILE (- or /dev/stdin: standard input)
 * as plain text, one text a line, or as a table (TSV, CSV, JSONL: a
 * "text" column and, for pairs, a "text_pair" one). docs/predict.md has
 * the rules:
 *  - every positional is one text; with --pair (and for question
 *    answering, whose inputs are pairs) they come two by two, TEXT TEXT_PAIR;
 *  - a TAB in a plain-text line is text (white space to the tokenizer),
 *    except with --pair, where the first one separates TEXT and TEXT_PAIR;
 *  - a blank line is an input too, whose result is blank (cli_text_blank),
 *    so that output line k answers input line k. */
#include "cli/cli.h"
#include "zoo/train/dataset.h"

#include <stdio.h>
#include <string.h>

/* The help of the table flags predict and embed share. */
const char cli_help_input_format[] = "how --input is read (default: by its name; standard "
                                     "input: text)";
const char cli_help_text_column[] = "a table's column of the text (default: text, else "
                                    "sentence, sentence1, question)";
const char cli_help_text_pair_column[] = "a table's column of the pair (default: text_pair, "
                                         "sentence2 or context, when the table has one)";

/* Removes the NUL bytes of text[0..*len) in place: Hugging Face's
 * BertNormalizer (clean_text) drops U+0000 before anything else, so the
 * tokens are the same, and the text after a NUL stays part of its line
 * instead of ending it for the strlen of every later step. */
static void drop_nuls(char *text, size_t *len)
{
    size_t k = 0;
    for (size_t i = 0; i < *len; i++)
        if (text[i] != '\0')
            text[k++] = text[i];
    text[k] = '\0';
    *len = k;
}

/* The first line of text[0..len) (no NUL) that is not valid UTF-8, or 0. */
static int invalid_utf8_line(const char *text, size_t len)
{
    int no = 1;
    for (const char *line = text; line < text + len; no++) {
        const char *nl = memchr(line, '\n', (size_t)(text + len - line));
        const char *stop = nl ? nl : text + len;
        if (!bertc_utf8_valid(line, (size_t)(stop - line)))
            return no;
        line = stop + 1;
    }
    return 0;
}

/* "-" and /dev/stdin: standard input, so that bertc sits in a pipe. */
bool cli_is_stdin(const char *path)
{
    return strcmp(path, "-") == 0 || strcmp(path, "/dev/stdin") == 0;
}

#define INPUT_MAX ((size_t)1 << 30)

/* All of standard input into an arena of its own (*file, for the caller
 * to destroy), at most INPUT_MAX bytes, as bertc_read_file reads a file. */
static int read_stdin(Arena **file, char **text, size_t *len, BertcError *err)
{
    size_t cap = 1 << 16, n = 0;
    char *buf = bertc_sys_alloc(cap);
    for (;;) {
        if (!buf)
            return bertc_errorf(err, "standard input: out of memory after %zu bytes", n);
        if (n == cap) {
            if (cap >= INPUT_MAX) {
                bertc_sys_free(buf);
                return bertc_errorf(err, "standard input: more than %zu bytes (an --input "
                                    "holds at most 1 GiB)", INPUT_MAX);
            }
            char *bigger = bertc_sys_alloc(cap * 2);
            if (bigger)
                memcpy(bigger, buf, n);
            bertc_sys_free(buf);
            buf = bigger;
            cap *= 2;
            continue;
        }
        size_t got = fread(buf + n, 1, cap - n, stdin);
        n += got;
        if (got == 0) {
            if (ferror(stdin)) {
                bertc_sys_free(buf);
                return bertc_errorf(err, "standard input: read failed");
            }
            break;
        }
    }
    *file = bertc_arena_create("stdin", n + 1);
    *text = bertc_arena_alloc(*file, n + 1);
    memcpy(*text, buf, n);
    bertc_sys_free(buf);
    *len = n;
    return 0;
}

/* The bytes of path (or standard input), without a UTF-8 byte order mark,
 * NUL-terminated, in arena. */
static int read_input(const char *path, Arena *arena, char **out, size_t *out_len,
                      BertcError *err)
{
    Arena *file = NULL;
    char *text;
    size_t len;
    int rc = cli_is_stdin(path)
                 ? read_stdin(&file, &text, &len, err)
                 : bertc_read_file(path, INPUT_MAX, "an --input file", &file, &text, &len, err);
    if (rc != 0) {
        if (file)
            bertc_arena_destroy(file);
        return -1;
    }
    size_t bom = bertc_utf8_bom(text, len);   /* Notepad's and Excel's files start with one */
    len -= bom;
    *out = bertc_arena_alloc(arena, len + 1);
    memcpy(*out, text + bom, len);
    (*out)[len] = '\0';
    bertc_arena_destroy(file);
    *out_len = len;
    return 0;
}

int cli_read_lines(const char *path, bool split_tab, Arena *arena, CliText **out, int *n_out,
                   BertcError *err)
{
    char *copy;
    size_t len;
    if (read_input(path, arena, &copy, &len, err) != 0)
        return -1;
    drop_nuls(copy, &len);
    int bad = invalid_utf8_line(copy, len);
    if (bad)
        return bertc_errorf(err, "%s:%d: not valid UTF-8 text",
                            cli_is_stdin(path) ? "standard input" : path, bad);
    int n = 0;
    for (size_t i = 0; i < len; i++)
        n += copy[i] == '\n';
    n += len > 0 && copy[len - 1] != '\n';
    if (n > INT32_MAX / 2)
        return bertc_errorf(err, "%s: more than %d lines", path, INT32_MAX / 2);
    CliText *t = bertc_arena_alloc(arena, sizeof *t * (size_t)(n > 0 ? n : 1));
    char *line = copy;
    for (int k = 0; k < n; k++) {
        char *nl = memchr(line, '\n', (size_t)(copy + len - line));
        char *stop = nl ? nl : copy + len;
        *stop = '\0';
        if (stop > line && stop[-1] == '\r')
            stop[-1] = '\0';
        char *tab = split_tab ? strchr(line, '\t') : NULL;
        if (tab)
            *tab = '\0';
        t[k] = (CliText){.text = line, .pair = tab ? tab + 1 : NULL, .line = k + 1};
        line = stop + 1;
    }
    *out = t;
    *n_out = n;
    return 0;
}

static bool only_space(const char *s)
{
    for (; s && *s; s++)
        if (*s != ' ' && *s != '\t' && *s != '\r' && *s != '\n')
            return false;
    return true;
}

bool cli_text_blank(const CliText *t) { return only_space(t->text) && only_space(t->pair); }

int cli_text_number(const CliText *t, int index) { return t->line > 0 ? t->line : index + 1; }

/* ---- tables: TSV, CSV, JSONL ---------------------------------------------- */

/* --input-format, else the file's name: .tsv, .csv, .jsonl/.json are
 * tables; anything else (and standard input) is plain text. */
static int input_format(const CliInputs *in, const char *path, bool *table,
                        DatasetFormat *format, BertcError *err)
{
    static const struct {
        const char *name, *suffix;
        DatasetFormat format;
    } formats[] = {{"tsv", ".tsv", DATASET_TSV},
                   {"csv", ".csv", DATASET_CSV},
                   {"jsonl", ".jsonl", DATASET_JSONL},
                   {"jsonl", ".json", DATASET_JSONL}};
    size_t n = strlen(path);
    *table = false;
    if (in->format && strcmp(in->format, "text") == 0)
        return 0;
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
        size_t k = strlen(formats[i].suffix);
        bool named = in->format ? strcmp(in->format, formats[i].name) == 0
                                : !cli_is_stdin(path) && n > k &&
                                      strcmp(path + n - k, formats[i].suffix) == 0;
        if (named) {
            *table = true;
            *format = formats[i].format;
            return 0;
        }
    }
    if (!in->format)
        return 0;
    char shown[BERTC_SHOWN];
    return bertc_errorf(err, "--input-format '%s': expected text, tsv, csv or jsonl",
                        bertc_shown(in->format, shown));
}

/* The column of the text (given, else the first of the usual names) and of
 * its pair (given, else the first usual one the header has, else -1). */
static int table_columns(const Dataset *d, const CliInputs *in, int *text, int *pair,
                         BertcError *err)
{
    static const char *const texts[] = {"text", "sentence", "sentence1", "question"};
    static const char *const qa_texts[] = {"question", "text"};
    static const char *const pairs[] = {"text_pair", "sentence2", "context"};
    static const char *const qa_pairs[] = {"context", "text_pair"};
    *text = in->text_column ? bertc_dataset_column(d, in->text_column, err)
            : in->qa        ? bertc_dataset_column_of(d, qa_texts, 2, err)
                            : bertc_dataset_column_of(d, texts, 4, err);
    if (*text < 0)
        return -1;
    if (in->pair_column) {
        *pair = bertc_dataset_column(d, in->pair_column, err);
        return *pair < 0 ? -1 : 0;
    }
    *pair = -1;
    const char *const *names = in->qa ? qa_pairs : pairs;
    int n_names = in->qa ? 2 : 3;
    for (int i = 0; i < d->n_columns && *pair < 0; i++)
        for (int k = 0; k < n_names; k++)
            if (strcmp(d->columns[i], names[k]) == 0 && i != *text)
                *pair = i;
    return 0;
}

static int read_table(const char *path, DatasetFormat format, const CliInputs *in, Arena *arena,
                      CliText **out, int *n_out, BertcError *err)
{
    const char *name = cli_is_stdin(path) ? "standard input" : path;
    Dataset d;
    char *text;
    size_t len;
    if (read_input(path, arena, &text, &len, err) != 0 ||
        bertc_dataset_parse(&d, arena, name, format, text, len, err) != 0)
        return -1;
    int tc, pc;
    if (table_columns(&d, in, &tc, &pc, err) != 0)
        return -1;
    if (d.n_rows > INT32_MAX / 2)
        return bertc_errorf(err, "%s: more than %d rows", name, INT32_MAX / 2);
    CliText *t = bertc_arena_alloc(arena, sizeof *t * (size_t)(d.n_rows > 0 ? d.n_rows : 1));
    for (int64_t r = 0; r < d.n_rows; r++) {
        const char *s = bertc_dataset_cell(&d, r, tc);
        if (!s)
            return bertc_errorf(err, "%s:%lld: no '%s'", name, (long long)d.line[r],
                                d.columns[tc]);
        t[r] = (CliText){.text = s, .pair = pc >= 0 ? bertc_dataset_cell(&d, r, pc) : NULL,
                         .line = (int)d.line[r]};
    }
    *out = t;
    *n_out = (int)d.n_rows;
    return 0;
}

/* ---- the inputs ---------------------------------------------------------- */

/* Each positional is UTF-8, as cli_read_lines checks each line. */
static int check_utf8_args(const CliArgs *a, bool pairs, BertcError *err)
{
    for (int i = 0; i < a->n_pos; i++) {
        if (bertc_utf8_valid(a->pos[i], strlen(a->pos[i])))
            continue;
        if (pairs)
            return bertc_errorf(err, "%s %d: not valid UTF-8 text",
                                i % 2 == 0 ? "TEXT" : "TEXT_PAIR", i / 2 + 1);
        return bertc_errorf(err, "text %d: not valid UTF-8 text", i + 1);
    }
    return 0;
}

static int positional_texts(const CliCommand *c, const CliArgs *a, const CliInputs *in,
                            Arena *arena, CliText **texts, int *n, BertcError *err)
{
    if (a->n_pos == 0) {
        bertc_errorf(err, "no text: give %s or --input FILE", c->positional);
        return USAGE_ERROR;
    }
    if (in->pairs && a->n_pos % 2 != 0) {
        bertc_errorf(err, "%s: %d texts given, but they come in twos (TEXT TEXT_PAIR "
                            "...)", in->qa ? "question answering reads QUESTION CONTEXT pairs"
                                           : "--pair",
                            a->n_pos);
        return USAGE_ERROR;
    }
    if (check_utf8_args(a, in->pairs, err) != 0)
        return -1;
    int step = in->pairs ? 2 : 1;
    *n = a->n_pos / step;
    CliText *t = bertc_arena_alloc(arena, sizeof *t * (size_t)*n);
    for (int i = 0; i < *n; i++)
        t[i] = (CliText){.text = a->pos[i * step],
                         .pair = in->pairs ? a->pos[i * step + 1] : NULL};
    *texts = t;
    return 0;
}

int cli_texts(const CliCommand *c, const CliArgs *a, const CliInputs *in, Arena *arena,
              CliText **texts, int *n, BertcError *err)
{
    if (!cli_given(c, a, "--input"))
        return positional_texts(c, a, in, arena, texts, n, err);
    if (a->n_pos > 0) {
        bertc_errorf(err, "--input and the text '%s': give one or the other", a->pos[0]);
        return USAGE_ERROR;
    }
    const char *input = cli_value(c, a, "--input");
    const char *path = cli_is_stdin(input) ? "standard input" : input;   /* in messages */
    bool table;
    DatasetFormat format;
    if (input_format(in, input, &table, &format, err) != 0)
        return -1;
    if (!table && (in->text_column || in->pair_column)) {
        bertc_errorf(err, "--%s: %s is read as plain text, one text a line; give "
                            "--input-format tsv, csv or jsonl for a table",
                            in->text_column ? "text-column" : "text-pair-column", path);
        return USAGE_ERROR;
    }
    if ((table ? read_table(input, format, in, arena, texts, n, err)
               : cli_read_lines(input, in->pairs, arena, texts, n, err)) != 0)
        return -1;
    int blank = 0;
    for (int i = 0; i < *n; i++)
        blank += cli_text_blank(&(*texts)[i]);
    if (blank == *n)
        return bertc_errorf(err, "%s: no text (%s)", path,
                            *n == 0 ? "it is empty" : "every line is blank");
    return 0;
}
