/*
 * nn/json.h — a strict RFC 8259 JSON parser into a read-only tree, the
 * accessors config.json and safetensors headers need, and a string quoter for
 * writers.
 *
 *     Arena *a = arena_create("json", 0);
 *     BertcError err;
 *     JsonDoc *doc;
 *     const char *text = "{\"hidden_size\": 768, \"hidden_act\": \"gelu\"}";
 *     if (json_parse(a, "config.json", text, strlen(text), &doc, &err) != 0) {
 *         fprintf(stderr, "%s\n", err.msg);  // "config.json: line 1, col 17 (byte 16): ..."
 *         return 1;
 *     }
 *     int64_t H;
 *     const char *act;
 *     if (json_get_int(doc->root, "hidden_size", &H, &err) != 0 ||
 *         json_get_string(doc->root, "hidden_act", &act, &err) != 0)
 *         fprintf(stderr, "%s\n", err.msg); // config.json: key "hidden_size" (line 1, col 17): ...
 *     arena_destroy(a);                      // frees the whole tree
 *
 * Strictness: exactly RFC 8259. No comments, no trailing commas, no NaN or
 * Infinity, no leading '+' or zeros, no byte order mark, no raw control
 * characters in strings, no invalid UTF-8 anywhere, no lone surrogate escapes,
 * no duplicate keys in one object (an error naming the key and both places),
 * no number beyond the range of a double. Nesting deeper than JSON_MAX_DEPTH
 * is an error (the parser recurses, one level per array or object).
 *
 * Memory: json_parse first validates the whole text without allocating,
 * counting values and string bytes, then takes exactly what the tree needs
 * from the arena in a handful of blocks: about 120 bytes per value plus the
 * decoded strings, so memory is bounded by a constant times the input size.
 * The tree does not point into the input text; the text may be freed after
 * json_parse returns.
 *
 * Error messages name the document, the line and column (1-based, columns in
 * bytes), the byte offset (0-based) and what was expected.
 */
#ifndef BERTC_NN_JSON_H
#define BERTC_NN_JSON_H

#include "tensor/tensor.h"

#define JSON_MAX_DEPTH 64

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

struct JsonValue {
    JsonType type;
    bool boolean;          /* JSON_BOOL */
    /* JSON_NUMBER: `number` always holds the value (correctly rounded by
     * strtod). is_int is true when the literal has no fraction and no exponent
     * and fits int64; then `integer` is exact. 1.0 and 1e3 are not integers
     * (as in Python's json module and serde). */
    bool is_int;
    int64_t integer;
    double number;
    const char *string;    /* JSON_STRING: decoded UTF-8, NUL-terminated; may
                              contain "\u0000", so use `length` */
    size_t length;         /* string bytes, or number of array elements or
                              object members */
    JsonValue **items;     /* JSON_ARRAY elements / JSON_OBJECT member values,
                              in document order */
    JsonValue **by_key;    /* JSON_OBJECT: members sorted by key (for lookup) */
    const char *key;       /* member name when the parent is an object, else NULL */
    size_t key_length;
    size_t index;          /* position in the parent */
    const JsonValue *parent;
    const JsonDoc *doc;
    size_t offset;         /* byte offset of the value's first byte */
    uint32_t line, col;    /* 1-based; col counts bytes */
};

struct JsonDoc {
    const char *name;      /* for messages: a file name, "header of x.safetensors" */
    JsonValue *root;
    size_t bytes;          /* arena bytes the tree took */
};

/* Parse text[0..length) (need not be NUL-terminated). On success *out points
 * to a document allocated in `arena` and 0 is returned; otherwise -1 and err
 * says where and what was expected. `name` is copied. */
int json_parse(Arena *arena, const char *name, const char *text, size_t length,
               JsonDoc **out, BertcError *err);

const char *json_type_name(JsonType type);   /* "null", "a string", "an object", ... */

/* Lookup. json_get returns NULL when obj is not an object or has no such key
 * (O(log n)); json_at returns NULL when arr is not an array or i is out of
 * range. */
const JsonValue *json_get(const JsonValue *obj, const char *key);
const JsonValue *json_at(const JsonValue *arr, size_t i);

/* The path of a value from the root, e.g. masking.special_token_ids[2]
 * (the root itself is "(root)"). Always NUL-terminated; returns buf. */
char *json_path(const JsonValue *v, char *buf, size_t cap);
#define JSON_PATH_LEN 256

/* Typed reads of one value. On a type mismatch they return -1 with a message
 * naming the document, the value's path, its line and column, what was
 * expected and what was found. */
int json_as_int(const JsonValue *v, int64_t *out, BertcError *err);
int json_as_double(const JsonValue *v, double *out, BertcError *err);  /* any number */
/* json_as_string (and json_get_string, json_opt_string) refuse a string
 * holding a NUL ("\u0000"): as a C string it would compare equal to its
 * prefix. */
int json_as_string(const JsonValue *v, const char **out, BertcError *err);
int json_as_bool(const JsonValue *v, bool *out, BertcError *err);

/* Typed reads of a required member: a missing key is an error naming the full
 * path of the key. */
int json_get_int(const JsonValue *obj, const char *key, int64_t *out, BertcError *err);
int json_get_double(const JsonValue *obj, const char *key, double *out, BertcError *err);
int json_get_string(const JsonValue *obj, const char *key, const char **out,
                    BertcError *err);
int json_get_bool(const JsonValue *obj, const char *key, bool *out, BertcError *err);

/* Typed reads of an optional member: a missing key (or, for these, a JSON
 * null) leaves the default in *out; a present key of the wrong type is an
 * error. */
int json_opt_int(const JsonValue *obj, const char *key, int64_t def, int64_t *out,
                 BertcError *err);
int json_opt_double(const JsonValue *obj, const char *key, double def, double *out,
                    BertcError *err);
int json_opt_string(const JsonValue *obj, const char *key, const char *def,
                    const char **out, BertcError *err);
int json_opt_bool(const JsonValue *obj, const char *key, bool def, bool *out,
                  BertcError *err);

/* Error helper for callers that validate further: formats
 * "<doc>: key <path> (line L, col C): <message>" into err. Returns -1. */
int json_errorf(BertcError *err, const JsonValue *v, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ------------------------------------------------------------------------ */
/* Writing                                                                   */
/* ------------------------------------------------------------------------ */

/* True when s[0..len) is valid UTF-8 (RFC 3629: no overlongs, no surrogates,
 * nothing above U+10FFFF). */
bool json_utf8_valid(const char *s, size_t len);

/* Write s[0..len) (valid UTF-8) as a JSON string literal with its quotes into
 * dst, snprintf-style: writes at most cap bytes including a terminating NUL
 * and returns the length of the full literal (excluding the NUL). '"', '\\'
 * and control characters are escaped (\n, \t, ... or \u00XX); other bytes are
 * copied. Call with dst = NULL, cap = 0 to measure. */
size_t json_quote(char *dst, size_t cap, const char *s, size_t len);

#endif /* BERTC_NN_JSON_H */
