/*
 * nn/json.h — a strict RFC 8259 JSON parser into a read-only tree, the
 * accessors config.json and safetensors headers need, and a string quoter for
 * writers.
 *
 *     Arena *a = bertc_arena_create("json", 0);
 *     BertcError err;
 *     JsonDoc *doc;
 *     const char *text = "{\"hidden_size\": 768, \"hidden_act\": \"gelu\"}";
 *     if (bertc_json_parse(a, "config.json", text, strlen(text), &doc, &err) != 0) {
 *         fprintf(stderr, "%s\n", err.msg);  // "config.json: line 1, col 17 (byte 16): ..."
 *         return 1;
 *     }
 *     int64_t H;
 *     const char *act;
 *     if (bertc_json_get_int(doc->root, "hidden_size", &H, &err) != 0 ||
 *         bertc_json_get_string(doc->root, "hidden_act", &act, &err) != 0)
 *         fprintf(stderr, "%s\n", err.msg); // config.json: key "hidden_size" (line 1, col 17): ...
 *     bertc_arena_destroy(a);                      // frees the whole tree
 *
 * Strictness: exactly RFC 8259. No comments, no trailing commas, no NaN or
 * Infinity, no leading '+' or zeros, no byte order mark, no raw control
 * characters in strings, no invalid UTF-8 anywhere, no lone surrogate escapes,
 * no duplicate keys in one object (an error naming the key and both places),
 * no number beyond the range of a double. Nesting deeper than JSON_MAX_DEPTH
 * is an error (the parser recurses, one level per array or object).
 *
 * Memory: bertc_json_parse first validates the whole text without allocating,
 * counting values, containers, members and string bytes; a second pass
 * records each container's size; then the tree is built into exactly-sized
 * arena blocks, each container's children in one contiguous run (no pointer
 * arrays, no growing). Per input byte, at most JSON_BYTES_PER_INPUT_BYTE of
 * arena: the worst input is a flat array of one-digit numbers ("0,", two
 * bytes a value) at 32 bytes a value = 16, plus 1 for the copy of the text,
 * plus the pool of strings and names (at most 1 + 4/5: "\"\":0," is a 5-byte
 * member with a 4-byte length), the sorted member runs (4/5) and the
 * container sizes (4/3 for "[],"), which the densest inputs do not reach at
 * the same time. So a 30 MB safetensors header of [0,0,...] takes about
 * 510 MB, not gigabytes. Texts longer than JSON_MAX_BYTES (1 GiB) are
 * refused: offsets into the text and into the string pool (up to 1.8 bytes a
 * text byte) are 32-bit.
 * The tree does not point into the input text; the text may be freed after
 * bertc_json_parse returns.
 *
 * Error messages name the document, the line and column (1-based, columns in
 * bytes), the byte offset (0-based) and what was expected.
 */
#ifndef BERTC_NN_JSON_H
#define BERTC_NN_JSON_H

#include "tensor/tensor.h"

#define JSON_MAX_DEPTH 64
#define JSON_BYTES_PER_INPUT_BYTE 18   /* the arena bertc_json_parse takes, at most, per text byte */

typedef enum JsonType {
    JSON_NULL,
    JSON_BOOL,
    JSON_NUMBER,
    JSON_STRING,
    JSON_ARRAY,
    JSON_OBJECT
} JsonType;

typedef struct JsonDoc JsonDoc;
typedef struct JsonValue JsonValue;

#define JSON_NONE UINT32_MAX       /* no parent (the root), no key (not a member) */
#define JSON_MAX_BYTES (1u << 30)  /* longest text: offsets and indices are 32-bit */

/* One value: 32 bytes. Read a value's type, length, boolean and integer
 * here; its string, children, key, parent, number, line and column through
 * the functions below. */
struct JsonValue {
    uint8_t type;          /* a JsonType */
    bool boolean;          /* JSON_BOOL */
    /* JSON_NUMBER: is_int is true when the literal has no fraction and no
     * exponent and fits int64; then `integer` is exact. 1.0 and 1e3 are not
     * integers (as in Python's json module and serde). bertc_json_number gives the
     * value as a double (correctly rounded by strtod) either way. */
    bool is_int;
    bool negative_zero;    /* the literal -0: an integer 0 whose double is -0.0 */
    uint32_t length;       /* string bytes, array elements or object members */
    uint32_t self;         /* index in the document's value array */
    uint32_t parent;       /* index of the parent, JSON_NONE for the root */
    uint32_t key;          /* member name (offset in the string pool), or JSON_NONE */
    uint32_t offset;       /* byte offset of the value's first byte */
    union {
        int64_t integer;   /* JSON_NUMBER with is_int */
        double number;     /* JSON_NUMBER without */
        uint32_t string;   /* JSON_STRING: offset in the pool (bertc_json_string) */
        struct {
            uint32_t first;    /* containers: index of the first child */
            uint32_t sorted;   /* objects: offset of the members sorted by key */
        };
    };
};

struct JsonDoc {
    const char *name;      /* for messages: a file name, "header of x.safetensors" */
    JsonValue *root;       /* the values follow this header in one block */
    size_t bytes;          /* arena bytes the tree took */
    const char *text;      /* a copy of the text (line and column for messages) */
    const char *pool;      /* strings and member names, NUL-terminated */
    const uint32_t *sorted;
};

/* Parse text[0..length) (need not be NUL-terminated). On success *out points
 * to a document allocated in `arena` and 0 is returned; otherwise -1 and err
 * says where and what was expected. `name` is copied. */
int bertc_json_parse(Arena *arena, const char *name, const char *text, size_t length,
               JsonDoc **out, BertcError *err);

const char *bertc_json_type_name(JsonType type);   /* "null", "a string", "an object", ... */

/* Lookup. bertc_json_get returns NULL when obj is not an object or has no such key
 * (O(log n)); bertc_json_at returns element i of an array or member i (in
 * document order) of an object, NULL when out of range. */
const JsonValue *bertc_json_get(const JsonValue *obj, const char *key);
const JsonValue *bertc_json_at(const JsonValue *v, size_t i);

/* A JSON_STRING's decoded UTF-8, NUL-terminated (it may contain "\u0000",
 * so use v->length); NULL for other types. */
const char *bertc_json_string(const JsonValue *v);
/* The member name of v (NUL-terminated, *len its bytes), or NULL (*len = 0)
 * when v is not an object member. len may be NULL. */
const char *bertc_json_key(const JsonValue *v, size_t *len);
const JsonValue *bertc_json_parent(const JsonValue *v);   /* NULL for the root */
size_t bertc_json_index(const JsonValue *v);              /* position in the parent */
double bertc_json_number(const JsonValue *v);             /* a JSON_NUMBER as a double */
const char *bertc_json_doc_name(const JsonValue *v);
/* 1-based line and column (in bytes) of the value's first byte. */
void bertc_json_line_col(const JsonValue *v, uint32_t *line, uint32_t *col);

/* The path of a value from the root, e.g. masking.special_token_ids[2]
 * (the root itself is "(root)"). Always NUL-terminated; returns buf. */
char *bertc_json_path(const JsonValue *v, char *buf, size_t cap);
#define JSON_PATH_LEN 256

/* Typed reads of one value. On a type mismatch they return -1 with a message
 * naming the document, the value's path, its line and column, what was
 * expected and what was found. */
int bertc_json_as_int(const JsonValue *v, int64_t *out, BertcError *err);
int bertc_json_as_double(const JsonValue *v, double *out, BertcError *err);  /* any number */
/* bertc_json_as_string (and bertc_json_get_string, bertc_json_opt_string) refuse a string
 * holding a NUL ("\u0000"): as a C string it would compare equal to its
 * prefix. */
int bertc_json_as_string(const JsonValue *v, const char **out, BertcError *err);
int bertc_json_as_bool(const JsonValue *v, bool *out, BertcError *err);

/* Typed reads of a required member: a missing key is an error naming the full
 * path of the key. */
int bertc_json_get_int(const JsonValue *obj, const char *key, int64_t *out, BertcError *err);
int bertc_json_get_double(const JsonValue *obj, const char *key, double *out, BertcError *err);
int bertc_json_get_string(const JsonValue *obj, const char *key, const char **out,
                    BertcError *err);
int bertc_json_get_bool(const JsonValue *obj, const char *key, bool *out, BertcError *err);

/* Typed reads of an optional member: a missing key (or, for these, a JSON
 * null) leaves the default in *out; a present key of the wrong type is an
 * error. */
int bertc_json_opt_int(const JsonValue *obj, const char *key, int64_t def, int64_t *out,
                 BertcError *err);
int bertc_json_opt_double(const JsonValue *obj, const char *key, double def, double *out,
                    BertcError *err);
int bertc_json_opt_string(const JsonValue *obj, const char *key, const char *def,
                    const char **out, BertcError *err);
int bertc_json_opt_bool(const JsonValue *obj, const char *key, bool def, bool *out,
                  BertcError *err);

/* Error helper for callers that validate further: formats
 * "<doc>: key <path> (line L, col C): <message>" into err. Returns -1. */
int bertc_json_errorf(BertcError *err, const JsonValue *v, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ------------------------------------------------------------------------ */
/* Writing                                                                   */
/* ------------------------------------------------------------------------ */

/* Write s[0..len) (valid UTF-8) as a JSON string literal with its quotes into
 * dst, snprintf-style: writes at most cap bytes including a terminating NUL
 * and returns the length of the full literal (excluding the NUL). '"', '\\'
 * and control characters are escaped (\n, \t, ... or \u00XX); other bytes are
 * copied. Call with dst = NULL, cap = 0 to measure. */
size_t bertc_json_quote(char *dst, size_t cap, const char *s, size_t len);

#endif /* BERTC_NN_JSON_H */
