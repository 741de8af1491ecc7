/* cli/text_model.c — what `bertc predict` and `bertc embed` share: the
 * model from --model DIR or --config/--weights/--vocab, the texts from
 * positionals or --input FILE, whole-number flags, and the truncation
 * warning. */
#include "cli/cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_parse_int(const char *flag, const char *value, long lo, long hi, int *out,
                  BertcError *err)
{
    char shown[BERTC_SHOWN];
    char *end;
    errno = 0;
    long v = strtol(value, &end, 10);
    if (end == value || *end != '\0' || errno != 0 || v < lo || v > hi)
        return bertc_errorf(err, "%s '%s': expected a whole number in [%ld, %ld]", flag,
                            bertc_shown(value, shown), lo, hi);
    *out = (int)v;
    return 0;
}

/* cli_open_text_model with trained weights required. */
int cli_model_open(const CliCommand *c, const CliArgs *a, Arena *arena, CliModel *cm,
                   BertcError *err)
{
    CliTextModel t;
    if (cli_open_text_model(c, a, true, arena, &t, err) != 0)
        return -1;
    cm->model = t.model;
    cm->tok = t.tok;
    cm->max_len = t.max_len;
    cm->positions = t.positions;
    cm->name = cli_given(c, a, "--model") ? cli_value(c, a, "--model")
                                          : cli_value(c, a, "--config");
    return 0;
}

int cli_max_len(const CliCommand *c, const CliArgs *a, const MaxLen *dflt,
                const MaxLen *positions, int specials, int32_t *out, BertcError *err)
{
    MaxLen m = *dflt;
    const char *given = cli_value(c, a, "--max-len");
    char shown[BERTC_SHOWN];
    if (given) {
        m = (MaxLen){.key = "--max-len"};
        if (cli_parse_max_len(given, &m.n, err) != 0)
            return -1;
        if (m.n > positions->n)
            return bertc_errorf(err, "--max-len %d is more than the model's %d positions "
                                "(max_position_embeddings in %s)", (int)m.n, (int)positions->n,
                                bertc_shown(positions->file, shown));
    }
    if (bertc_max_len_room(&m, specials, err) != 0)
        return -1;
    *out = m.n;
    return 0;
}

int cli_model_max_len(const CliCommand *c, const CliArgs *a, const CliModel *cm,
                      const CliText *texts, int n, int32_t *max_len, BertcError *err)
{
    int specials = 2;
    for (int i = 0; i < n; i++)
        if (texts[i].pair)
            specials = 3;
    return cli_max_len(c, a, &cm->max_len, &cm->positions, specials, max_len, err);
}

int cli_forward(Model *m, Graph *g, const Batch *b, Outputs *out, BertcError *err)
{
    if (bertc_model_forward(m, g, b, out, err) != 0)
        return -1;
    return bertc_outputs_check_finite(m, b, out, err);
}

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

int cli_read_lines(const char *path, Arena *arena, CliText **out, int *n_out, BertcError *err)
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
    char *copy = bertc_arena_alloc(arena, len + 1);
    memcpy(copy, text + bom, len);
    bertc_arena_destroy(file);
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
        char *tab = strchr(line, '\t');
        if (tab)
            *tab = '\0';
        t[k] = (CliText){.text = line, .pair = tab ? tab + 1 : NULL, .line = k + 1};
        line = stop + 1;
    }
    *out = t;
    *n_out = n;
    return 0;
}

/* Each positional is UTF-8, as cli_read_lines checks each line. */
static int check_utf8_args(const CliArgs *a, bool pairs, BertcError *err)
{
    for (int i = 0; i < a->n_pos; i++) {
        if (bertc_utf8_valid(a->pos[i], strlen(a->pos[i])))
            continue;
        if (pairs)
            return bertc_errorf(err, "%s: not valid UTF-8 text", i == 0 ? "TEXT" : "TEXT_PAIR");
        return bertc_errorf(err, "text %d: not valid UTF-8 text", i + 1);
    }
    return 0;
}

int cli_texts(const CliCommand *c, const CliArgs *a, Arena *arena, bool pairs, CliText **texts,
              int *n, BertcError *err)
{
    if (!cli_given(c, a, "--input")) {
        if (a->n_pos == 0)
            return bertc_errorf(err, "no text: give %s or --input FILE", c->positional);
        if (check_utf8_args(a, pairs, err) != 0)
            return -1;
        CliText *t = bertc_arena_alloc(arena, sizeof *t * (size_t)a->n_pos);
        if (pairs) {   /* TEXT [TEXT_PAIR]: one input */
            t[0] = (CliText){.text = a->pos[0], .pair = a->n_pos > 1 ? a->pos[1] : NULL};
            *n = 1;
        } else {       /* TEXT ...: one input each */
            for (int i = 0; i < a->n_pos; i++)
                t[i] = (CliText){.text = a->pos[i], .line = 0};
            *n = a->n_pos;
        }
        *texts = t;
        return 0;
    }
    if (a->n_pos > 0)
        return bertc_errorf(err, "--input and the text '%s': give one or the other", a->pos[0]);
    const char *input = cli_value(c, a, "--input");
    const char *path = cli_is_stdin(input) ? "standard input" : input;   /* in messages */
    CliText *lines;
    int n_lines, k = 0;
    if (cli_read_lines(input, arena, &lines, &n_lines, err) != 0)
        return -1;
    for (int i = 0; i < n_lines; i++)   /* blank lines are skipped, their numbers kept */
        if (lines[i].text[0] != '\0' || lines[i].pair)
            lines[k++] = lines[i];
    *texts = lines;
    *n = k;
    if (*n == 0)
        return bertc_errorf(err, "%s: no text (every line is empty)", path);
    for (int i = 0; i < *n; i++)
        if ((*texts)[i].pair && !pairs)
            return bertc_errorf(err, "%s:%d: a tab, but bertc %s takes one text a line", path,
                                (*texts)[i].line, c->name);
    return 0;
}

void cli_warn_truncated(const char *command, const CliText *t, int index, int32_t tokens,
                        int32_t max_len)
{
    if (t->line > 0)
        fprintf(stderr, "bertc %s: warning: line %d is %d tokens, truncated to %d (--max-len)\n",
                command, t->line, (int)tokens, (int)max_len);
    else
        fprintf(stderr, "bertc %s: warning: text %d is %d tokens, truncated to %d (--max-len)\n",
                command, index + 1, (int)tokens, (int)max_len);
}
