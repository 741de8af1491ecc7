/* zoo/train/dataset_squad.c — the official SQuAD JSON file (v1.1 and v2.0:
 * {"data": [{"paragraphs": [{"context": ..., "qas": [{"id", "question",
 * "answers": [{"text", "answer_start"}], "is_impossible"}]}]}]}) as the
 * flat rows Hugging Face's `datasets` gives for it: one row per question,
 * columns id, question, context, answers.text, answers.answer_start (lists;
 * empty for an unanswerable v2.0 question). The rows are written as JSONL
 * text, which the JSONL reader of zoo/train/dataset.c then reads. */
#include "zoo/train/dataset.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* A growing text in the arena, and the line in the SQuAD file of each row
 * written (its question's), counted forward from the last one: questions
 * come in the order of the file, so finding all their lines reads the file
 * once. */
typedef struct Text {
    Arena *arena;
    char *buf;
    size_t len, cap;
    const char *source;       /* the SQuAD file's text (JsonDoc.text) */
    size_t at;                /* source offset whose line is `line` */
    int64_t line;
    int64_t *lines;           /* (n_rows) */
    int64_t n_rows, cap_rows;
} Text;

/* Records the source line of the row about to be written: that of v. */
static void put_line_of(Text *t, const JsonValue *v)
{
    for (; t->at < v->offset; t->at++)
        t->line += t->source[t->at] == '\n';
    if (t->n_rows == t->cap_rows) {
        int64_t cap = t->cap_rows ? 2 * t->cap_rows : 256;
        int64_t *grown = bertc_arena_alloc(t->arena, sizeof *grown * (size_t)cap);
        if (t->n_rows)
            memcpy(grown, t->lines, sizeof *grown * (size_t)t->n_rows);
        t->lines = grown;
        t->cap_rows = cap;
    }
    t->lines[t->n_rows++] = t->line;
}

static void put_bytes(Text *t, const char *s, size_t n)
{
    if (t->len + n + 1 > t->cap) {
        size_t cap = (t->cap ? t->cap * 2 : 4096) + n;
        char *grown = bertc_arena_alloc(t->arena, cap);
        if (t->len)
            memcpy(grown, t->buf, t->len);
        t->buf = grown;
        t->cap = cap;
    }
    memcpy(t->buf + t->len, s, n);
    t->len += n;
    t->buf[t->len] = '\0';
}

static void put_str(Text *t, const char *s) { put_bytes(t, s, strlen(s)); }

/* A JSON string literal of a string value. */
static void put_quoted(Text *t, const JsonValue *v)
{
    size_t q = bertc_json_quote(NULL, 0, bertc_json_string(v), v->length);
    char *lit = bertc_arena_alloc(t->arena, q + 1);
    bertc_json_quote(lit, q + 1, bertc_json_string(v), v->length);
    put_bytes(t, lit, q);
}

/* "train-v1.1.json:1234: SQuAD: ..." naming where v is. */
static int where(BertcError *err, const char *name, const JsonValue *v, const char *what)
{
    uint32_t line, col;
    bertc_json_line_col(v, &line, &col);
    return bertc_errorf(err, "%s:%u: SQuAD: %s", name, (unsigned)line, what);
}

/* The string member key of obj, or an error naming it. */
static int string_member(const char *name, const JsonValue *obj, const char *key,
                         const JsonValue **out, BertcError *err)
{
    char what[96];
    *out = bertc_json_get(obj, key);
    if (*out && (*out)->type == JSON_STRING)
        return 0;
    snprintf(what, sizeof what, "needs a string \"%s\"", key);
    return where(err, name, obj, what);
}

/* "answers": {"text": [...], "answer_start": [...]} of one question. */
static int put_answers(Text *t, const char *name, const JsonValue *qa, BertcError *err)
{
    const JsonValue *answers = bertc_json_get(qa, "answers");
    uint32_t n = answers && answers->type == JSON_ARRAY ? answers->length : 0;
    if (answers && answers->type != JSON_ARRAY)
        return where(err, name, answers, "\"answers\" must be a list");
    put_str(t, ", \"answers\": {\"text\": [");
    for (uint32_t i = 0; i < n; i++) {
        const JsonValue *text;
        if (string_member(name, bertc_json_at(answers, i), "text", &text, err) != 0)
            return -1;
        put_str(t, i ? ", " : "");
        put_quoted(t, text);
    }
    put_str(t, "], \"answer_start\": [");
    for (uint32_t i = 0; i < n; i++) {
        const JsonValue *a = bertc_json_at(answers, i);
        const JsonValue *start = bertc_json_get(a, "answer_start");
        double x = start && start->type == JSON_NUMBER ? bertc_json_number(start) : -1;
        if (!(x >= 0 && x == floor(x) && x < 2147483648.0))
            return where(err, name, a, "an answer needs a whole \"answer_start\" >= 0");
        char num[32];
        snprintf(num, sizeof num, "%s%lld", i ? ", " : "", (long long)x);
        put_str(t, num);
    }
    put_str(t, "]}");
    return 0;
}

static int put_question(Text *t, const char *name, const JsonValue *qa,
                        const JsonValue *context, BertcError *err)
{
    const JsonValue *question, *id = bertc_json_get(qa, "id");
    if (qa->type != JSON_OBJECT)
        return where(err, name, qa, "a \"qas\" entry must be an object");
    if (string_member(name, qa, "question", &question, err) != 0)
        return -1;
    put_line_of(t, qa);
    put_str(t, "{\"id\": ");
    if (id && id->type == JSON_STRING)
        put_quoted(t, id);
    else
        put_str(t, "\"\"");
    put_str(t, ", \"question\": ");
    put_quoted(t, question);
    put_str(t, ", \"context\": ");
    put_quoted(t, context);
    if (put_answers(t, name, qa, err) != 0)
        return -1;
    put_str(t, "}\n");
    return 0;
}

static int put_paragraph(Text *t, const char *name, const JsonValue *p, BertcError *err)
{
    const JsonValue *context, *qas = bertc_json_get(p, "qas");
    if (p->type != JSON_OBJECT || string_member(name, p, "context", &context, err) != 0)
        return p->type != JSON_OBJECT ? where(err, name, p, "a paragraph must be an object")
                                      : -1;
    if (!qas || qas->type != JSON_ARRAY)
        return where(err, name, p, "a paragraph needs a list \"qas\"");
    for (uint32_t i = 0; i < qas->length; i++)
        if (put_question(t, name, bertc_json_at(qas, i), context, err) != 0)
            return -1;
    return 0;
}

bool bertc_squad_is_squad(const JsonValue *root)
{
    const JsonValue *data = bertc_json_get(root, "data");
    const JsonValue *first = data && data->type == JSON_ARRAY ? bertc_json_at(data, 0) : NULL;
    return root->type == JSON_OBJECT && first && bertc_json_get(first, "paragraphs");
}

int bertc_squad_to_jsonl(Arena *arena, const JsonDoc *doc, char **text, size_t *len,
                         int64_t **lines, BertcError *err)
{
    const char *name = doc->name;
    Text t = {.arena = arena, .source = doc->text, .line = 1};
    const JsonValue *data = bertc_json_get(doc->root, "data");
    for (uint32_t a = 0; a < data->length; a++) {
        const JsonValue *paragraphs = bertc_json_get(bertc_json_at(data, a), "paragraphs");
        if (!paragraphs || paragraphs->type != JSON_ARRAY)
            return where(err, name, bertc_json_at(data, a),
                         "an article needs a list \"paragraphs\"");
        for (uint32_t p = 0; p < paragraphs->length; p++)
            if (put_paragraph(&t, name, bertc_json_at(paragraphs, p), err) != 0)
                return -1;
    }
    if (t.len == 0)
        return bertc_errorf(err, "%s: SQuAD: no questions in \"data\"", name);
    *text = t.buf;
    *len = t.len;
    *lines = t.lines;
    return 0;
}
