/* test/test_utf8.c — the one UTF-8 codec of tensor/utf8.c: every code point
 * round-trips, RFC 3629's ill-formed sequences are refused, and the
 * readers built on it (the JSON parser, the tokenizer, the validator of
 * whole strings) agree byte string for byte string on what is valid. */
#include "nn/json.h"
#include "zoo/text/tokenizer.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

Test(utf8, every_code_point_round_trips)
{
    for (uint32_t cp = 0; cp <= 0x10FFFF; cp++) {
        if (cp >= 0xD800 && cp <= 0xDFFF)   /* surrogates are no characters */
            continue;
        char buf[4];
        int n = bertc_utf8_encode(cp, buf);
        int want = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
        uint32_t back = 0xFFFFFFFF;
        int m = bertc_utf8_decode((const uint8_t *)buf, (size_t)n, 0, &back);
        if (n != want || m != n || back != cp)
            cr_assert_fail("U+%04X: encoded in %d bytes (want %d), decoded %d bytes as U+%04X",
                           (unsigned)cp, n, want, m, (unsigned)back);
    }
}

/* Byte strings and whether they are valid UTF-8. */
static const struct {
    const char *bytes;
    bool valid;
} cases[] = {
    {"caf\xc3\xa9", true},
    {"\xf0\x9f\x98\x80", true},            /* U+1F600 */
    {"\xf4\x8f\xbf\xbf", true},            /* U+10FFFF, the last */
    {"\xed\x9f\xbf", true},                /* U+D7FF, below the surrogates */
    {"\xc3", false},                       /* cut short */
    {"\xe2\x82", false},
    {"\xc0\xaf", false},                   /* overlong '/' */
    {"\xc1\xbf", false},
    {"\xe0\x80\xaf", false},               /* overlong, 3 bytes */
    {"\xf0\x80\x80\xaf", false},           /* overlong, 4 bytes */
    {"\xed\xa0\x80", false},               /* U+D800, a surrogate */
    {"\xf4\x90\x80\x80", false},           /* U+110000 */
    {"\xf5\x80\x80\x80", false},
    {"\xff", false},
    {"\x80", false},                       /* a lone continuation byte */
    {"a\xc3(", false},                     /* a lead byte, then no continuation */
};

Test(utf8, ill_formed_sequences_are_refused_alike_by_every_reader)
{
    Arena *a = bertc_arena_create("test_utf8", 1 << 20);
    static const char vocab[] = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\na\n";
    Tokenizer tok;
    BertcError err;
    cr_assert_eq(bertc_tokenizer_parse(&tok, a, "vocab.txt", vocab, strlen(vocab), &err), 0,
                 "%s", err.msg);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *s = cases[i].bytes;
        size_t len = strlen(s);
        char json[64];
        snprintf(json, sizeof json, "\"%s\"", s);
        JsonDoc *doc;
        Encoding e;
        bool json_ok = bertc_json_parse(a, "case.json", json, strlen(json), &doc, &err) == 0;
        bool tok_ok = bertc_tokenizer_encode(&tok, a, s, len, NULL, 0, 0, false, &e, &err) == 0;
        cr_expect_eq(bertc_utf8_valid(s, len), cases[i].valid, "case %zu: bertc_utf8_valid",
                     i);
        cr_expect_eq(json_ok, cases[i].valid, "case %zu: the JSON parser", i);
        cr_expect_eq(tok_ok, cases[i].valid, "case %zu: the tokenizer", i);
    }
    bertc_arena_destroy(a);
}
