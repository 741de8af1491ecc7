/* test/test_json.c — the strict JSON parser (nn/json.h): valid documents,
 * every error class with its position, depth limit, duplicate keys, unicode,
 * numbers, accessors and the string quoter. */
#include <criterion/criterion.h>

#include "nn/json.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static Arena *arena;

static void setup(void) { arena = bertc_arena_create("test_json", 1 << 16); }
static void teardown(void) { bertc_arena_destroy(arena); }

TestSuite(json, .init = setup, .fini = teardown);

static const JsonValue *parse_ok(const char *text)
{
    BertcError err = {{0}};
    JsonDoc *doc = NULL;
    int rc = bertc_json_parse(arena, "t.json", text, strlen(text), &doc, &err);
    cr_assert_eq(rc, 0, "parsing %s failed: %s", text, err.msg);
    return doc->root;
}

/* Parse text[0..len) expecting failure with every `want` substring in the message. */
static void parse_fails_n(const char *text, size_t len, const char *want1, const char *want2)
{
    BertcError err = {{0}};
    JsonDoc *doc = NULL;
    int rc = bertc_json_parse(arena, "t.json", text, len, &doc, &err);
    cr_assert_neq(rc, 0, "parsing \"%.60s\" should fail (wanted \"%s\")", text, want1);
    cr_expect(strstr(err.msg, want1), "message \"%s\" lacks \"%s\"", err.msg, want1);
    if (want2)
        cr_expect(strstr(err.msg, want2), "message \"%s\" lacks \"%s\"", err.msg, want2);
}

static void parse_fails(const char *text, const char *want1, const char *want2)
{
    parse_fails_n(text, strlen(text), want1, want2);
}

/* ------------------------------------------------------------------------ */
/* Valid documents                                                           */
/* ------------------------------------------------------------------------ */

Test(json, object_keeps_key_order_and_finds_keys)
{
    const JsonValue *r = parse_ok(" {\"b\": 1, \"a\": [true, false, null], \"c\": {\"d\": \"x\"}}\n");
    cr_assert_eq(r->type, JSON_OBJECT);
    cr_assert_eq(r->length, 3);
    cr_expect_str_eq(bertc_json_key(bertc_json_at(r, 0), NULL), "b");
    cr_expect_str_eq(bertc_json_key(bertc_json_at(r, 1), NULL), "a");
    cr_expect_str_eq(bertc_json_key(bertc_json_at(r, 2), NULL), "c");
    const JsonValue *a = bertc_json_get(r, "a");
    cr_assert_not_null(a);
    cr_expect_eq(a->type, JSON_ARRAY);
    cr_expect_eq(a->length, 3);
    cr_expect(bertc_json_at(a, 0)->boolean);
    cr_expect_eq(bertc_json_at(a, 1)->type, JSON_BOOL);
    cr_expect_not(bertc_json_at(a, 1)->boolean);
    cr_expect_eq(bertc_json_at(a, 2)->type, JSON_NULL);
    cr_expect_null(bertc_json_at(a, 3));
    cr_expect_null(bertc_json_get(r, "z"));
    cr_expect_null(bertc_json_get(a, "b"));
    cr_expect_str_eq(bertc_json_string(bertc_json_get(bertc_json_get(r, "c"), "d")), "x");
    cr_expect_eq(bertc_json_parent(bertc_json_get(r, "b")), r);
    cr_expect_eq(bertc_json_index(bertc_json_get(r, "c")), 2);
    cr_expect_null(bertc_json_parent(r));
}

Test(json, top_level_scalars_and_empty_containers)
{
    cr_expect_eq(parse_ok("null")->type, JSON_NULL);
    cr_expect_eq(parse_ok("\t\r\n 7 ")->integer, 7);
    cr_expect_str_eq(bertc_json_string(parse_ok("\"s\"")), "s");
    cr_expect_eq(parse_ok("[]")->length, 0);
    cr_expect_eq(parse_ok("{}")->length, 0);
    cr_expect_eq(parse_ok("[[], {}]")->length, 2);
}

Test(json, many_keys_lookup)
{
    char text[8192];
    size_t n = 0;
    n += (size_t)snprintf(text + n, sizeof text - n, "{");
    for (int i = 0; i < 300; i++)
        n += (size_t)snprintf(text + n, sizeof text - n, "%s\"k%d\": %d", i ? "," : "", 299 - i, i);
    snprintf(text + n, sizeof text - n, "}");
    const JsonValue *r = parse_ok(text);
    for (int i = 0; i < 300; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%d", i);
        const JsonValue *v = bertc_json_get(r, key);
        cr_assert_not_null(v, "key %s not found", key);
        cr_expect_eq(v->integer, 299 - i, "key %s: expected %d, got %lld", key, 299 - i,
                     (long long)v->integer);
    }
}

Test(json, positions_are_recorded)
{
    const JsonValue *r = parse_ok("{\n  \"a\": [1,\n    22]\n}");
    const JsonValue *v = bertc_json_at(bertc_json_get(r, "a"), 1);
    uint32_t line, col;
    bertc_json_line_col(v, &line, &col);
    cr_expect_eq(line, 3);
    cr_expect_eq(col, 5);
    cr_expect_eq(v->offset, 17);
}

/* The densest texts of each shape, parsed into a fresh arena: the arena
 * (everything bertc_json_parse took, its high-water mark) stays within
 * JSON_BYTES_PER_INPUT_BYTE per input byte plus a constant. */
static void expect_bounded(const char *what, const char *unit, const char *last)
{
    static char text[300001];
    size_t n = 0, u = strlen(unit);
    text[n++] = what[0];
    while (n + u + 8 < sizeof text) {
        memcpy(text + n, unit, u);
        n += u;
    }
    memcpy(text + n, last, strlen(last));
    n += strlen(last);
    /* object members need distinct names: number them in place */
    for (size_t i = 0, k = 0; what[0] == '{' && i + 3 < n; i++)
        if (text[i] == '"' && text[i + 1] == 'a') {
            text[i + 1] = (char)('a' + k % 26);
            text[i + 2] = (char)('a' + k / 26 % 26);
            text[i + 3] = (char)('a' + k / 676 % 26);
            i += 3;
            k++;
        }
    Arena *a = bertc_arena_create("bounded", 4096);
    BertcError err;
    JsonDoc *doc;
    int rc = bertc_json_parse(a, what, text, n, &doc, &err);
    cr_expect(rc == 0 || strstr(err.msg, "duplicate key"), "%s: %s", what, err.msg);
    size_t used = bertc_arena_high_water(a);
    cr_expect_leq(used, JSON_BYTES_PER_INPUT_BYTE * n + 65536,
                  "%s: %zu bytes of arena for %zu input bytes (%.1f a byte)", what, used, n,
                  (double)used / (double)n);
    bertc_arena_destroy(a);
}

Test(json, memory_is_bounded_by_input_size)
{
    expect_bounded("[0,0,...]", "0,", "0]");
    expect_bounded("[[],[],...]", "[],", "[]]");
    expect_bounded("[\"\",\"\",...]", "\"\",", "\"\"]");
    expect_bounded("[{},{},...]", "{},", "{}]");
    expect_bounded("{\"aaa\":0,...}", "\"aaa\":0,", "\"zzzz\":0}");
    /* offsets are 32-bit: a longer text is refused before it is read */
    BertcError err;
    JsonDoc *doc;
    cr_expect_neq(bertc_json_parse(arena, "huge", "", (size_t)JSON_MAX_BYTES + 1, &doc, &err), 0);
    cr_expect(strstr(err.msg, "huge: 1073741825 bytes of JSON; bertc reads at most"), "%s",
              err.msg);
}

/* ------------------------------------------------------------------------ */
/* Numbers                                                                   */
/* ------------------------------------------------------------------------ */

Test(json, integers_exact_at_int64_extremes)
{
    const JsonValue *r = parse_ok("[9223372036854775807, -9223372036854775808, 0, -0, 42]");
    cr_expect(bertc_json_at(r, 0)->is_int);
    cr_expect_eq(bertc_json_at(r, 0)->integer, INT64_MAX);
    cr_expect(bertc_json_at(r, 1)->is_int);
    cr_expect_eq(bertc_json_at(r, 1)->integer, INT64_MIN);
    cr_expect_eq(bertc_json_at(r, 2)->integer, 0);
    cr_expect(bertc_json_at(r, 3)->is_int);
    cr_expect(signbit(bertc_json_number(bertc_json_at(r, 3))), "-0 keeps its sign as a double");
    cr_expect_eq(bertc_json_number(bertc_json_at(r, 4)), 42.0);
}

Test(json, integers_beyond_int64_are_doubles)
{
    const JsonValue *r = parse_ok("[9223372036854775808, -9223372036854775809]");
    cr_expect_not(bertc_json_at(r, 0)->is_int);
    cr_expect_eq(bertc_json_number(bertc_json_at(r, 0)), 9223372036854775808.0);
    cr_expect_not(bertc_json_at(r, 1)->is_int);
    BertcError err;
    int64_t x;
    cr_expect_neq(bertc_json_as_int(bertc_json_at(r, 0), &x, &err), 0);
    cr_expect(strstr(err.msg, "outside the int64 range"), "%s", err.msg);
}

Test(json, fractions_and_exponents)
{
    const JsonValue *r = parse_ok("[0.1, 1e3, 1E+2, -2.5e-3, 1.0, 1e-400, 123456789012345678901234567890]");
    cr_expect_eq(bertc_json_number(bertc_json_at(r, 0)), 0.1);
    cr_expect_not(bertc_json_at(r, 0)->is_int);
    cr_expect_eq(bertc_json_number(bertc_json_at(r, 1)), 1000.0);
    cr_expect_not(bertc_json_at(r, 1)->is_int, "1e3 is not an integer literal");
    cr_expect_eq(bertc_json_number(bertc_json_at(r, 2)), 100.0);
    cr_expect_eq(bertc_json_number(bertc_json_at(r, 3)), -2.5e-3);
    cr_expect_not(bertc_json_at(r, 4)->is_int, "1.0 is not an integer literal");
    cr_expect_eq(bertc_json_number(bertc_json_at(r, 5)), 0.0, "underflow rounds to zero");
    cr_expect_eq(bertc_json_number(bertc_json_at(r, 6)), 123456789012345678901234567890.0);
}

Test(json, bad_numbers)
{
    parse_fails("[01]", "leading zeros", "byte 1");
    parse_fails("[-]", "expected a digit", "byte 2");
    parse_fails("[1.]", "after the decimal point", "byte 3");
    parse_fails("[1e]", "in the exponent", "byte 3");
    parse_fails("[+1]", "expected a JSON value", "'+'");
    parse_fails("[.5]", "expected a JSON value", "'.'");
    parse_fails("[1e400]", "out of the range of a double", "byte 1");
    parse_fails("[NaN]", "expected a JSON value", "found 'N'");
    parse_fails("[Infinity]", "expected a JSON value", NULL);
}

/* ------------------------------------------------------------------------ */
/* Strings and unicode                                                       */
/* ------------------------------------------------------------------------ */

Test(json, escapes_decode)
{
    const JsonValue *v = parse_ok("\"a\\\"b\\\\c\\/d\\be\\ff\\ng\\rh\\ti\"");
    cr_expect_str_eq(bertc_json_string(v), "a\"b\\c/d\be\ff\ng\rh\ti");
}

Test(json, unicode_escapes_to_utf8)
{
    const JsonValue *r = parse_ok("[\"\\u00e9\", \"\\u20AC\", \"\\ud83d\\ude00\", \"caf\xc3\xa9\", "
                                  "\"\\u0041\"]");
    cr_expect_str_eq(bertc_json_string(bertc_json_at(r, 0)), "\xc3\xa9");
    cr_expect_str_eq(bertc_json_string(bertc_json_at(r, 1)), "\xe2\x82\xac");
    cr_expect_str_eq(bertc_json_string(bertc_json_at(r, 2)), "\xf0\x9f\x98\x80", "surrogate pair -> U+1F600");
    cr_expect_eq(bertc_json_at(r, 2)->length, 4);
    cr_expect_str_eq(bertc_json_string(bertc_json_at(r, 3)), "caf\xc3\xa9");
    cr_expect_str_eq(bertc_json_string(bertc_json_at(r, 4)), "A");
}

Test(json, nul_escape_keeps_length)
{
    const JsonValue *v = parse_ok("\"a\\u0000b\"");
    cr_expect_eq(v->length, 3);
    cr_expect_eq(memcmp(bertc_json_string(v), "a\0b", 4), 0);
}

Test(json, a_string_with_a_nul_is_not_a_c_string)
{
    const JsonValue *v = parse_ok("{\"act\": \"gelu\\u0000x\"}");
    const char *s = NULL;
    BertcError err = {{0}};
    cr_expect_neq(bertc_json_get_string(v, "act", &s, &err), 0, "\"gelu\\u0000x\" read as \"%s\"",
                  s ? s : "");
    cr_expect(strstr(err.msg, "act (line") && strstr(err.msg, "NUL character") &&
                  strstr(err.msg, "at byte 4"), "%s", err.msg);
    cr_expect_eq(bertc_json_get_string(parse_ok("{\"act\": \"gelu\"}"), "act", &s, &err), 0);
}

Test(json, bad_surrogates)
{
    parse_fails("\"\\ud83d\"", "high surrogate \\uD83D is not followed", "byte 1");
    parse_fails("\"\\ud83d\\u0041\"", "not followed by a low surrogate", NULL);
    parse_fails("\"\\ude00\"", "lone low surrogate", "byte 1");
    parse_fails("\"\\u12G4\"", "expected 4 hex digits", "byte 5");
}

Test(json, bad_strings)
{
    parse_fails("\"abc", "unterminated string", "byte 0");
    parse_fails("\"a\tb\"", "raw control character 0x09", "byte 2");
    parse_fails("\"\\x\"", "invalid escape", "byte 2");
    parse_fails("\"\xc0\x80\"", "invalid UTF-8 byte 0xC0", "byte 1");       /* overlong NUL */
    parse_fails("\"\xed\xa0\x80\"", "invalid UTF-8 byte 0xED", NULL);       /* encoded surrogate */
    parse_fails("\"\xf4\x90\x80\x80\"", "invalid UTF-8 byte 0xF4", NULL);   /* > U+10FFFF */
    parse_fails("\"\xe2\x82\"", "invalid UTF-8", NULL);                     /* truncated */
    parse_fails("\"\x80\"", "invalid UTF-8 byte 0x80", NULL);               /* lone continuation */
    parse_fails("\"\xf5\x80\x80\x80\"", "invalid UTF-8 byte 0xF5", NULL);
    parse_fails_n("\"a\0b\"", 5, "raw control character 0x00", "byte 2");
}

Test(json, utf8_validator)
{
    cr_expect(bertc_utf8_valid("caf\xc3\xa9 \xf0\x9f\x98\x80", 10));
    cr_expect(bertc_utf8_valid("", 0));
    cr_expect_not(bertc_utf8_valid("\xc3", 1));
    cr_expect_not(bertc_utf8_valid("\xe0\x80\x80", 3));
    cr_expect_not(bertc_utf8_valid("\xff", 1));
}

/* ------------------------------------------------------------------------ */
/* Structure errors, each with a position                                    */
/* ------------------------------------------------------------------------ */

Test(json, structure_errors_name_the_position)
{
    parse_fails("", "expected a JSON value", "end of input");
    parse_fails("   ", "line 1, col 4 (byte 3)", "end of input");
    parse_fails("{\"a\" 1}", "expected ':'", "byte 5");
    parse_fails("{\"a\": 1 \"b\": 2}", "expected ',' or '}'", "byte 8");
    parse_fails("{a: 1}", "member name in double quotes", "byte 1");
    parse_fails("[1 2]", "expected ',' or ']'", "byte 3");
    parse_fails("[1,]", "trailing comma before ']'", "byte 3");
    parse_fails("{\"a\": 1,}", "trailing comma before '}'", "byte 8");
    parse_fails("[1", "expected ',' or ']'", "end of input");
    parse_fails("{\"a\": 1} x", "after the end of the JSON value", "byte 9");
    parse_fails("[tru]", "expected 'true'", "byte 1");
    parse_fails("// c\n{}", "expected a JSON value", "'/'");
    parse_fails("\xef\xbb\xbf{}", "byte order mark", NULL);
    parse_fails("{\n  \"a\": [1,\n   ]\n}", "line 3, col 4 (byte 16)", "trailing comma");
    parse_fails("[\x01]", "byte 0x01", NULL);
}

Test(json, depth_limit)
{
    char ok[2 * JSON_MAX_DEPTH + 1], deep[2 * JSON_MAX_DEPTH + 3];
    memset(ok, '[', JSON_MAX_DEPTH);
    memset(ok + JSON_MAX_DEPTH, ']', JSON_MAX_DEPTH);
    ok[2 * JSON_MAX_DEPTH] = '\0';
    parse_ok(ok);
    memset(deep, '[', JSON_MAX_DEPTH + 1);
    memset(deep + JSON_MAX_DEPTH + 1, ']', JSON_MAX_DEPTH + 1);
    deep[2 * JSON_MAX_DEPTH + 2] = '\0';
    parse_fails(deep, "nesting deeper than 64", "byte 64");
}

Test(json, depth_limit_on_hostile_input)
{
    static char text[100000];
    memset(text, '[', sizeof text);
    parse_fails_n(text, sizeof text, "nesting deeper than 64", NULL);
    memset(text, '{', sizeof text);
    parse_fails_n(text, sizeof text, "member name in double quotes", NULL);
    for (size_t i = 0; i + 5 <= sizeof text; i += 5)
        memcpy(text + i, "{\"a\":", 5);
    parse_fails_n(text, sizeof text, "nesting deeper than 64", NULL);
}

Test(json, duplicate_keys_are_rejected)
{
    parse_fails("{\"a\": 1, \"b\": 2, \"a\": 3}", "duplicate key \"a\"", "first defined at line 1, col 7");
    parse_fails("{\"x\": {\"k\": 1, \"k\": 1}}", "duplicate key \"k\"", "byte 20");
    /* same text after unescaping is the same key */
    parse_fails("{\"\\u0041\": 1, \"A\": 2}", "duplicate key \"A\"", NULL);
    parse_ok("{\"a\": {\"a\": 1}, \"b\": {\"a\": 2}}");
}

/* ------------------------------------------------------------------------ */
/* Accessors                                                                 */
/* ------------------------------------------------------------------------ */

static const char *cfg_text =
    "{\"hidden_size\": 768, \"eps\": 1e-12, \"act\": \"gelu\", \"flag\": true,\n"
    " \"masking\": {\"seed\": \"x\", \"ids\": [1, 2.5]}, \"nothing\": null, \"odd.key\": {\"q\": 1}}";

Test(json, typed_getters)
{
    const JsonValue *r = parse_ok(cfg_text);
    BertcError err;
    int64_t i = 0;
    double d = 0;
    const char *s = NULL;
    bool b = false;
    cr_expect_eq(bertc_json_get_int(r, "hidden_size", &i, &err), 0);
    cr_expect_eq(i, 768);
    cr_expect_eq(bertc_json_get_double(r, "eps", &d, &err), 0);
    cr_expect_eq(d, 1e-12);
    cr_expect_eq(bertc_json_get_double(r, "hidden_size", &d, &err), 0, "ints are numbers too");
    cr_expect_eq(d, 768.0);
    cr_expect_eq(bertc_json_get_string(r, "act", &s, &err), 0);
    cr_expect_str_eq(s, "gelu");
    cr_expect_eq(bertc_json_get_bool(r, "flag", &b, &err), 0);
    cr_expect(b);
}

Test(json, getter_errors_name_the_key_path)
{
    const JsonValue *r = parse_ok(cfg_text);
    const JsonValue *m = bertc_json_get(r, "masking");
    BertcError err;
    int64_t i;
    const char *s;
    cr_expect_neq(bertc_json_get_int(r, "vocab_size", &i, &err), 0);
    cr_expect(strstr(err.msg, "t.json: missing key \"vocab_size\""), "%s", err.msg);
    cr_expect_neq(bertc_json_get_int(m, "budget", &i, &err), 0);
    cr_expect(strstr(err.msg, "missing key \"masking.budget\""), "%s", err.msg);
    cr_expect_neq(bertc_json_get_int(m, "seed", &i, &err), 0);
    cr_expect(strstr(err.msg, "masking.seed (line 2, col 22): expected an integer"), "%s",
              err.msg);
    cr_expect(strstr(err.msg, "found a string"), "%s", err.msg);
    cr_expect_neq(bertc_json_as_int(bertc_json_at(bertc_json_get(m, "ids"), 1), &i, &err), 0);
    cr_expect(strstr(err.msg, "masking.ids[1]"), "%s", err.msg);
    cr_expect(strstr(err.msg, "found the number 2.5"), "%s", err.msg);
    cr_expect_neq(bertc_json_get_string(r, "hidden_size", &s, &err), 0);
    cr_expect(strstr(err.msg, "hidden_size (line 1, col 17): expected a string, found the number 768"),
              "%s", err.msg);
    cr_expect_neq(bertc_json_get_int(bertc_json_get(r, "odd.key"), "q2", &i, &err), 0);
    cr_expect(strstr(err.msg, "[\"odd.key\"].q2"), "%s", err.msg);
}

Test(json, optional_getters_use_defaults)
{
    const JsonValue *r = parse_ok(cfg_text);
    BertcError err;
    int64_t i;
    double d;
    const char *s;
    bool b;
    cr_expect_eq(bertc_json_opt_int(r, "absent", 5, &i, &err), 0);
    cr_expect_eq(i, 5);
    cr_expect_eq(bertc_json_opt_int(r, "nothing", 6, &i, &err), 0, "null means default");
    cr_expect_eq(i, 6);
    cr_expect_eq(bertc_json_opt_double(r, "absent", 0.5, &d, &err), 0);
    cr_expect_eq(d, 0.5);
    cr_expect_eq(bertc_json_opt_string(r, "nothing", "dflt", &s, &err), 0);
    cr_expect_str_eq(s, "dflt");
    cr_expect_eq(bertc_json_opt_bool(r, "absent", true, &b, &err), 0);
    cr_expect(b);
    cr_expect_neq(bertc_json_opt_bool(r, "act", false, &b, &err), 0, "wrong type is an error");
    cr_expect(strstr(err.msg, "act (line 1, col 43): expected true or false"), "%s", err.msg);
}

Test(json, paths)
{
    const JsonValue *r = parse_ok("[{\"a\": [0, {\"b c\": 1}]}]");
    char buf[JSON_PATH_LEN];
    const JsonValue *v = bertc_json_get(bertc_json_at(bertc_json_get(bertc_json_at(r, 0), "a"), 1), "b c");
    cr_expect_str_eq(bertc_json_path(v, buf, sizeof buf), "[0].a[1][\"b c\"]");
    cr_expect_str_eq(bertc_json_path(r, buf, sizeof buf), "(root)");
    char tiny[8];
    cr_expect_str_eq(bertc_json_path(v, tiny, sizeof tiny), "[0]....");
}

/* ------------------------------------------------------------------------ */
/* Writing                                                                   */
/* ------------------------------------------------------------------------ */

Test(json, quote_escapes_and_measures)
{
    const char s[] = "a\"b\\c\n\x01\xc3\xa9";
    size_t need = bertc_json_quote(NULL, 0, s, sizeof s - 1);
    char buf[64];
    cr_assert_eq(bertc_json_quote(buf, sizeof buf, s, sizeof s - 1), need);
    cr_expect_str_eq(buf, "\"a\\\"b\\\\c\\n\\u0001\xc3\xa9\"");
    cr_expect_eq(strlen(buf), need);
    char small[5];
    cr_expect_eq(bertc_json_quote(small, sizeof small, s, sizeof s - 1), need);
    cr_expect_str_eq(small, "\"a\\\"", "truncated like snprintf");
}

Test(json, quote_round_trips_through_the_parser)
{
    char s[256];
    for (int i = 0; i < 255; i++)
        s[i] = (char)(i < 127 ? i + 1 : 'x'); /* every ASCII byte incl. controls */
    s[255] = '\0';
    char buf[2048];
    size_t n = bertc_json_quote(buf, sizeof buf, s, 255);
    BertcError err;
    JsonDoc *doc;
    cr_assert_eq(bertc_json_parse(arena, "q", buf, n, &doc, &err), 0, "%s", err.msg);
    cr_expect_eq(doc->root->length, 255);
    cr_expect_eq(memcmp(bertc_json_string(doc->root), s, 255), 0);
}
