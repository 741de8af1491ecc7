/* test/test_tokenizer.c — the WordPiece tokenizer (zoo/text/tokenizer*.c, SPEC §7):
 * ids, token types, mask and offsets of 349 cases as Hugging Face's own
 * BertTokenizerFast gives them (test/data/tokenizer/hf_uncased.json, written
 * by tools/hf_tokenizer_fixtures.sh with the npm `tokenizers` 0.23: the
 * 151 inputs of tools/tokenizer_ref.py plus a corpus of every class of
 * input) on the real bert-base-uncased vocab, 260 cased (hf_cased.json,
 * lowercase=False) on the small cased-vocab.txt, named regression tests
 * for each class of difference from the old BertTokenizer-style code, the
 * third-party golden data in ../shared/real when present, ids read off the
 * vocab by hand, WordPiece on a tiny vocab, truncation, and every error:
 * bad UTF-8 input, bad vocab files, impossible max_len; random bytes never
 * crash. */
#include <criterion/criterion.h>

#include "nn/json.h"
#include "zoo/zoo.h"

#include <stdio.h>
#include <string.h>

#define VOCAB_PATH "data/bert-base-uncased-vocab.txt"
#define CASES_PATH "test/data/tokenizer/hf_uncased.json"
#define CASED_VOCAB_PATH "test/data/tokenizer/cased-vocab.txt"
#define CASED_CASES_PATH "test/data/tokenizer/hf_cased.json"

static Arena *arena;

static void setup(void) { arena = bertc_arena_create("test_tokenizer", 1 << 20); }
static void teardown(void) { bertc_arena_destroy(arena); }

TestSuite(tokenizer, .init = setup, .fini = teardown);

static Tokenizer load_real(void)
{
    Tokenizer t;
    BertcError err = {{0}};
    cr_assert_eq(bertc_tokenizer_load(&t, arena, VOCAB_PATH, &err), 0, "%s", err.msg);
    return t;
}

/* A tiny vocab from a string, asserting it loads. */
static Tokenizer load_text(const char *text)
{
    Tokenizer t;
    BertcError err = {{0}};
    cr_assert_eq(bertc_tokenizer_parse(&t, arena, "tiny.txt", text, strlen(text), &err), 0, "%s",
                 err.msg);
    return t;
}

static Encoding encode_ok(const Tokenizer *t, const char *a, const char *b, int max_len,
                          bool pad)
{
    Encoding e;
    BertcError err = {{0}};
    int rc = bertc_tokenizer_encode(t, arena, a, strlen(a), b, b ? strlen(b) : 0, max_len, pad, &e,
                              &err);
    cr_assert_eq(rc, 0, "encoding \"%s\" failed: %s", a, err.msg);
    return e;
}

/* ------------------------------------------------------------------------ */
/* The reference cases                                                       */
/* ------------------------------------------------------------------------ */

/* The whole of a JSON file, parsed into the test arena; NULL when the file
 * does not exist and missing_ok. */
static const JsonValue *read_json(const char *path, bool missing_ok)
{
    FILE *fp = fopen(path, "rb");
    if (!fp && missing_ok)
        return NULL;
    cr_assert(fp, "cannot open %s (run the tests from the repository root)", path);
    static char buf[1 << 19];
    size_t n = fread(buf, 1, sizeof buf, fp);
    fclose(fp);
    cr_assert(n > 0 && n < sizeof buf, "%s: %zu bytes, expected 1..%zu", path, n,
              sizeof buf - 1);
    JsonDoc *doc;
    BertcError err = {{0}};
    cr_assert_eq(bertc_json_parse(arena, path, buf, n, &doc, &err), 0, "%s", err.msg);
    return doc->root;
}

/* The cases of a fixture written by tools/hf_tokenizer_fixtures.sh, checking
 * it was made with the do_lower_case the test runs. */
static const JsonValue *load_cases(const char *path, bool do_lower_case)
{
    const JsonValue *root = read_json(path, false);
    const JsonValue *lower = bertc_json_get(root, "do_lower_case");
    cr_assert(lower && lower->boolean == do_lower_case, "%s: made with do_lower_case %s, "
              "expected %s (regenerate with tools/hf_tokenizer_fixtures.sh)", path,
              lower ? (lower->boolean ? "true" : "false") : "(missing)",
              do_lower_case ? "true" : "false");
    return bertc_json_get(root, "cases");
}

/* The int array `key` of a case equals got[0..S), element by element. */
static void expect_ints(const JsonValue *c, const char *name, const char *key,
                        const int32_t *got, int32_t S)
{
    const JsonValue *want = bertc_json_get(c, key);
    cr_assert_eq((int32_t)want->length, S, "%s: %s has %d tokens, the reference %zu", name,
                 key, S, want->length);
    for (int32_t i = 0; i < S; i++)
        cr_expect_eq(got[i], bertc_json_at(want, (size_t)i)->integer,
                     "%s: %s[%d] = %d, the reference says %lld", name, key, i, got[i],
                     (long long)bertc_json_at(want, (size_t)i)->integer);
}

static void expect_offsets(const JsonValue *c, const char *name, const Encoding *e)
{
    const JsonValue *want = bertc_json_get(c, "offsets");
    for (int32_t i = 0; i < e->S; i++) {
        int64_t s = bertc_json_at(bertc_json_at(want, (size_t)i), 0)->integer;
        int64_t f = bertc_json_at(bertc_json_at(want, (size_t)i), 1)->integer;
        cr_expect(e->start[i] == s && e->end[i] == f,
                  "%s: token %d spans code points (%d, %d), the reference (%lld, %lld)", name,
                  i, e->start[i], e->end[i], (long long)s, (long long)f);
    }
}

/* Byte offsets name the same span as code-point offsets: counting the code
 * points (non-continuation bytes) before each byte offset gives the other. */
static void expect_byte_offsets(const char *name, const Encoding *e, const char *a,
                                const char *b)
{
    for (int32_t i = 0; i < e->S; i++) {
        const char *text = e->token_type_ids[i] ? b : a;
        int32_t cps_before_start = 0, cps_before_end = 0;
        for (int32_t k = 0; k < e->byte_end[i]; k++) {
            bool lead = ((uint8_t)text[k] & 0xC0) != 0x80;
            cps_before_start += lead && k < e->byte_start[i];
            cps_before_end += lead;
        }
        bool empty = e->start[i] == e->end[i];
        cr_expect(empty ? e->byte_start[i] == e->byte_end[i]
                        : cps_before_start == e->start[i] && cps_before_end == e->end[i],
                  "%s: token %d bytes (%d, %d) do not match code points (%d, %d)", name, i,
                  e->byte_start[i], e->byte_end[i], e->start[i], e->end[i]);
    }
}

static void run_case(const Tokenizer *t, const JsonValue *c)
{
    const JsonValue *a = bertc_json_get(c, "a"), *b = bertc_json_get(c, "b");
    const char *name = bertc_json_string(bertc_json_get(c, "name"));
    int64_t max_len = bertc_json_get(c, "max_len")->integer;
    bool pad = bertc_json_get(c, "pad")->boolean;
    Encoding e;
    BertcError err = {{0}};
    int rc = bertc_tokenizer_encode(t, arena, bertc_json_string(a), a->length, bertc_json_string(b),
                              b ? b->length : 0, (int32_t)max_len, pad, &e, &err);
    cr_assert_eq(rc, 0, "%s: %s", name, err.msg);
    expect_ints(c, name, "ids", e.input_ids, e.S);
    expect_ints(c, name, "types", e.token_type_ids, e.S);
    expect_ints(c, name, "mask", e.attention_mask, e.S);
    expect_offsets(c, name, &e);
    expect_byte_offsets(name, &e, bertc_json_string(a), bertc_json_string(b));
}

Test(tokenizer, reference_cases_match_ids_types_mask_offsets)
{
    Tokenizer t = load_real();
    cr_assert(t.do_lower_case, "a loaded tokenizer must default to do_lower_case");
    const JsonValue *cases = load_cases(CASES_PATH, true);
    cr_assert_geq(cases->length, 300, "only %zu reference cases", cases->length);
    for (size_t k = 0; k < cases->length; k++)
        run_case(&t, bertc_json_at(cases, k));
}

/* do_lower_case false on a cased vocab: "Héllo" is H ##é ##llo, "Hello"
 * and "hello" are different ids; the hand cases and the corpus run too, so
 * cleaning, CJK, punctuation and offsets are checked without lowercasing. */
Test(tokenizer, cased_reference_cases_keep_case_and_accents)
{
    Tokenizer t;
    BertcError err = {{0}};
    cr_assert_eq(bertc_tokenizer_load(&t, arena, CASED_VOCAB_PATH, &err), 0, "%s", err.msg);
    t.do_lower_case = false;
    const JsonValue *cases = load_cases(CASED_CASES_PATH, false);
    cr_assert_geq(cases->length, 200, "only %zu cased reference cases", cases->length);
    for (size_t k = 0; k < cases->length; k++)
        run_case(&t, bertc_json_at(cases, k));
}

/* ------------------------------------------------------------------------ */
/* Hand-checked against the vocab's lines (id = line number - 1)             */
/* ------------------------------------------------------------------------ */

Test(tokenizer, real_vocab_ids_read_by_hand)
{
    Tokenizer t = load_real();
    cr_expect_eq(t.V, 30522);
    cr_expect_eq(t.pad_id, 0);
    cr_expect_eq(t.unk_id, 100);
    cr_expect_eq(t.cls_id, 101);
    cr_expect_eq(t.sep_id, 102);
    cr_expect_eq(t.mask_id, 103);
    cr_expect_eq(bertc_tokenizer_id(&t, "hello", 5), 7592, "line 7593 of the vocab is 'hello'");
    cr_expect_eq(bertc_tokenizer_id(&t, "world", 5), 2088, "line 2089 of the vocab is 'world'");
    cr_expect_eq(bertc_tokenizer_id(&t, "##able", 6), 3085, "line 3086 of the vocab is '##able'");
    cr_expect_eq(bertc_tokenizer_id(&t, "hellox", 6), -1);
    cr_expect_str_eq(bertc_tokenizer_token(&t, 7592), "hello");
    cr_expect_null(bertc_tokenizer_token(&t, 30522));
    cr_expect_null(bertc_tokenizer_token(&t, -1));
    /* "Hello, world!" -> [CLS] hello , world ! [SEP]: ',' is line 1011, '!' line 1000. */
    Encoding e = encode_ok(&t, "Hello, world!", NULL, 0, false);
    int32_t want[] = {101, 7592, 1010, 2088, 999, 102};
    cr_assert_eq(e.S, 6);
    for (int i = 0; i < 6; i++)
        cr_expect_eq(e.input_ids[i], want[i], "token %d: %d, want %d", i, e.input_ids[i],
                     want[i]);
}

Test(tokenizer, empty_input_is_cls_sep)
{
    Tokenizer t = load_real();
    const char *inputs[] = {"", " ", "\t\n\r ", "\x01\x02", "\xcc\x81"};  /* U+0301 alone */
    for (int k = 0; k < 5; k++) {
        Encoding e = encode_ok(&t, inputs[k], NULL, 0, false);
        cr_assert_eq(e.S, 2, "input %d: %d tokens", k, e.S);
        cr_expect(e.input_ids[0] == 101 && e.input_ids[1] == 102);
        cr_expect(e.attention_mask[0] == 1 && e.attention_mask[1] == 1);
        cr_expect(e.start[0] == 0 && e.end[0] == 0 && e.start[1] == 0 && e.end[1] == 0);
    }
}

/* ------------------------------------------------------------------------ */
/* Offsets and classes as tokenizers' NormalizedString has them              */
/* ------------------------------------------------------------------------ */

/* Text a's tokens between [CLS] and [SEP]: want[k] = {id, start, end}, or
 * id -1 to skip the id check. */
static void expect_tokens(const Tokenizer *t, const char *a, int n, const int32_t (*want)[3])
{
    Encoding e = encode_ok(t, a, NULL, 0, false);
    cr_assert_eq(e.S, n + 2, "\"%s\": %d tokens, want %d", a, e.S - 2, n);
    for (int k = 0; k < n; k++)
        cr_expect((want[k][0] < 0 || e.input_ids[k + 1] == want[k][0]) &&
                      e.start[k + 1] == want[k][1] && e.end[k + 1] == want[k][2],
                  "\"%s\" token %d: id %d (%d, %d), want %d (%d, %d)", a, k,
                  e.input_ids[k + 1], e.start[k + 1], e.end[k + 1], want[k][0], want[k][1],
                  want[k][2]);
}

/* A removed character (control, format, private use) or a stripped mark
 * right after a token is not part of its offsets: tokenizers drops the
 * alignment of every character its normalizer removes (issue 13: bertc gave
 * "e\u0301" (0, 2)). Ids: e 1041, x 1060, ##ab 7875, ##c 2278, [UNK] 100. */
Test(tokenizer, removed_chars_and_marks_are_outside_the_offsets)
{
    Tokenizer t = load_real();
    expect_tokens(&t, "e\xcc\x81", 1, (const int32_t[][3]){{1041, 0, 1}});
    expect_tokens(&t, "e\xcc\x81\xcc\x81\xcc\xa3 x", 2,
                  (const int32_t[][3]){{1041, 0, 1}, {1060, 5, 6}});
    expect_tokens(&t, "e\xe2\x80\x8b", 1, (const int32_t[][3]){{1041, 0, 1}});   /* ZWSP */
    expect_tokens(&t, "\xe2\x80\x8b" "e", 1, (const int32_t[][3]){{1041, 1, 2}});
    expect_tokens(&t, "e\x07", 1, (const int32_t[][3]){{1041, 0, 1}});              /* BEL */
    expect_tokens(&t, "e\xee\x80\x80", 1, (const int32_t[][3]){{1041, 0, 1}});    /* U+E000 */
    /* Inside a word a removed character splits nothing and is skipped. */
    expect_tokens(&t, "x\xe2\x80\x8b" "ab\xc2\xad" "c", 3,
                  (const int32_t[][3]){{1060, 0, 1}, {7875, 2, 4}, {2278, 5, 6}});
    /* Marks inside a token's span stay inside; an [UNK] word ends at its
     * last kept character. */
    expect_tokens(&t, "cafe\xcc\x81 nai\xcc\x88ve re\xcc\x81sume\xcc\x81", 3,
                  (const int32_t[][3]){{7668, 0, 4}, {15743, 6, 12}, {13746, 13, 20}});
    expect_tokens(&t, "\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xe2\x80\x8b e\xcc\x81", 2,
                  (const int32_t[][3]){{100, 0, 2}, {1041, 4, 5}});
}

/* The character classes are those of the fast tokenizer, not of the
 * Unicode of the day: an unassigned code point (U+0378) is kept, and is an
 * [UNK] word; U+2028 splits words; U+0130 'İ' is NFD 'I' + a dot that is
 * stripped, then lowercased: "istanbul" (0, 8); U+1E9E is 'ß' (1096). */
Test(tokenizer, character_classes_are_the_fast_tokenizers)
{
    Tokenizer t = load_real();
    expect_tokens(&t, "x\xcd\xb8y", 1, (const int32_t[][3]){{100, 0, 3}});
    expect_tokens(&t, "x\xe2\x80\xa8x", 2, (const int32_t[][3]){{1060, 0, 1}, {1060, 2, 3}});
    expect_tokens(&t, "\xc4\xb0stanbul \xe1\xba\x9e", 2,
                  (const int32_t[][3]){{9960, 0, 8}, {1096, 9, 10}});
    /* Special tokens written in the text are split out anywhere, as the
     * fast tokenizer's added tokens; "[cls]" is not one. */
    expect_tokens(&t, "a[SEP]b [cls]", 7,
                  (const int32_t[][3]){{1037, 0, 1}, {102, 1, 6}, {1038, 6, 7}, {1031, 8, 9},
                                       {18856, 9, 11}, {2015, 11, 12}, {1033, 12, 13}});
}

/* NFD reordering moves characters, not alignments: in "İ\U0001D16D\u1DC0"
 * ('I' + an inserted dot, then marks of classes 226 and 230) the dot and
 * U+1D16D trade places; U+1D16D, kept (it is Mc), gets the next original
 * character's span, its own, and the dot and U+1DC0 are dropped, so the
 * [UNK] word spans 'İ' and U+1D16D: HF gives (2, 4) after "x ". */
Test(tokenizer, nfd_reordering_keeps_the_alignments_in_place)
{
    Tokenizer t = load_real();
    expect_tokens(&t, "x \xc4\xb0\xf0\x9d\x85\xad\xe1\xb7\x80", 2,
                  (const int32_t[][3]){{1060, 0, 1}, {100, 2, 4}});
    expect_tokens(&t, "a\xf0\x9d\x85\xad\xf0\x9d\x85\xa5\xcc\x81", 1,
                  (const int32_t[][3]){{100, 0, 3}});
}

/* ../shared/real: third-party data, used by path (from the repository root,
 * or from a worktree one level further down) and skipped when absent. */
#define GOLDEN_NAME "hf_tokenizers_golden_bert_base_uncased_subset.json"
#define LLAMA_NAME "llamacpp_bert_bge_vocab/derived/cases.json"

static const JsonValue *read_real(const char *name)
{
    static const char *dirs[2] = {"../shared/real/", "../../shared/real/"};
    for (int k = 0; k < 2; k++) {
        char path[256];
        snprintf(path, sizeof path, "%s%s", dirs[k], name);
        const JsonValue *root = read_json(path, true);
        if (root)
            return root;
    }
    return NULL;
}

/* The "cases" of the third-party file `name`, at least min of them; skips
 * the test when the file is absent. */
static const JsonValue *real_cases(const char *name, size_t min)
{
    const JsonValue *root = read_real(name);
    if (!root)
        cr_skip_test("../shared/real/%s is absent", name);
    const JsonValue *cases = bertc_json_get(root, "cases");
    cr_assert(cases && cases->length >= min, "%s: fewer than %zu cases", name, min);
    return cases;
}

/* Hugging Face tokenizers' own golden outputs for bert-base-uncased (16 of
 * the edge:* samples of tokenizers 0.23.1): ids, and offsets where given. */
Test(tokenizer, hf_golden_outputs_when_present)
{
    const JsonValue *cases = real_cases(GOLDEN_NAME, 10);
    Tokenizer t = load_real();
    for (size_t k = 0; k < cases->length; k++) {
        const JsonValue *c = bertc_json_at(cases, k), *text = bertc_json_get(c, "text");
        const char *name = bertc_json_string(bertc_json_get(c, "source"));
        Encoding e = encode_ok(&t, bertc_json_string(text), NULL, 0, false);
        expect_ints(c, name, "ids", e.input_ids, e.S);
        const JsonValue *offsets = bertc_json_get(c, "offsets");
        if (offsets && offsets->type == JSON_ARRAY)     /* null: not transcribed */
            expect_offsets(c, name, &e);
    }
}

/* llama.cpp's 46 cases of HF AutoTokenizer on bge-small (the bert-base-
 * uncased vocab), ids without [CLS] [SEP]. */
Test(tokenizer, llamacpp_bge_cases_when_present)
{
    const JsonValue *cases = real_cases(LLAMA_NAME, 40);
    Tokenizer t = load_real();
    for (size_t k = 0; k < cases->length; k++) {
        const JsonValue *c = bertc_json_at(cases, k), *text = bertc_json_get(c, "text");
        const JsonValue *want = bertc_json_get(c, "ids_no_specials");
        Encoding e = encode_ok(&t, bertc_json_string(text), NULL, 0, false);
        cr_assert_eq((size_t)e.S, want->length + 2, "case %zu: %d tokens, want %zu", k,
                     e.S - 2, want->length);
        for (size_t i = 0; i < want->length; i++)
            cr_expect_eq(e.input_ids[i + 1], bertc_json_at(want, i)->integer,
                         "case %zu token %zu: %d, want %lld", k, i, e.input_ids[i + 1],
                         (long long)bertc_json_at(want, i)->integer);
    }
}

/* ------------------------------------------------------------------------ */
/* WordPiece on a tiny vocab                                                 */
/* ------------------------------------------------------------------------ */

#define TINY "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nun\n##aff\n##able\na\n##a\nb\n"

Test(tokenizer, wordpiece_greedy_longest_match_first)
{
    Tokenizer t = load_text(TINY);
    /* HF's docstring example: "unaffable" -> ["un", "##aff", "##able"]. */
    Encoding e = encode_ok(&t, "unaffable", NULL, 0, false);
    int32_t want[] = {2, 5, 6, 7, 3};
    cr_assert_eq(e.S, 5);
    for (int i = 0; i < 5; i++)
        cr_expect_eq(e.input_ids[i], want[i], "token %d: %d, want %d", i, e.input_ids[i],
                     want[i]);
    cr_expect(e.start[1] == 0 && e.end[1] == 2 && e.start[2] == 2 && e.end[2] == 5);
    /* "unaffableb": no "##b" -> the whole word is one [UNK] spanning all of it. */
    e = encode_ok(&t, "unaffableb", NULL, 0, false);
    cr_assert_eq(e.S, 3);
    cr_expect_eq(e.input_ids[1], 1);
    cr_expect(e.start[1] == 0 && e.end[1] == 10, "[UNK] spans (%d, %d)", e.start[1],
              e.end[1]);
}

Test(tokenizer, words_longer_than_100_chars_are_unk)
{
    Tokenizer t = load_text(TINY);
    char word[102];
    memset(word, 'a', 101);
    word[101] = '\0';
    Encoding e = encode_ok(&t, word, NULL, 0, false);
    cr_assert_eq(e.S, 3, "101 chars: %d tokens, want [CLS] [UNK] [SEP]", e.S);
    cr_expect_eq(e.input_ids[1], 1);
    word[100] = '\0';
    e = encode_ok(&t, word, NULL, 0, false);
    cr_expect_eq(e.S, 102, "100 chars: a + 99 x ##a, %d tokens", e.S);
}

/* ------------------------------------------------------------------------ */
/* Truncation 'longest_first' and padding                                    */
/* ------------------------------------------------------------------------ */

Test(tokenizer, truncation_longest_first)
{
    Tokenizer t = load_text(TINY);
    /* A has 5 tokens, B 2. max_len 7 leaves room for 4: B (the shorter) is
     * kept, A gets the other 2. max_len 6: room 3, B 2 > 3 - 2, so both are
     * cut to halves, the longer A getting the odd one: A 2, B 1. */
    Encoding e = encode_ok(&t, "a a a a a", "b b", 7, false);
    cr_expect(e.n_a == 2 && e.n_b == 2, "A %d B %d, want 2 2", e.n_a, e.n_b);
    cr_expect_eq(e.S, 7);
    e = encode_ok(&t, "a a a a a", "b b", 6, false);
    cr_expect(e.n_a == 2 && e.n_b == 1, "A %d B %d, want 2 1", e.n_a, e.n_b);
    e = encode_ok(&t, "a a a", "b b b b b b", 3, true);
    cr_expect(e.n_a == 0 && e.n_b == 0 && e.S == 3, "A %d B %d S %d", e.n_a, e.n_b, e.S);
    e = encode_ok(&t, "a a a a", NULL, 4, true);
    cr_expect(e.n_a == 2 && e.S == 4, "single: A %d S %d", e.n_a, e.S);
    e = encode_ok(&t, "a", "b", 8, true);
    cr_assert_eq(e.S, 8);
    int32_t mask[8] = {1, 1, 1, 1, 1, 0, 0, 0}, type[8] = {0, 0, 0, 1, 1, 0, 0, 0};
    for (int i = 0; i < 8; i++)
        cr_expect(e.attention_mask[i] == mask[i] && e.token_type_ids[i] == type[i] &&
                      (i < 5 || e.input_ids[i] == 0),
                  "position %d: id %d mask %d type %d", i, e.input_ids[i],
                  e.attention_mask[i], e.token_type_ids[i]);
}

/* Where the fast tokenizer's LongestFirst and the slow one's one-at-a-time
 * truncation differ, bertc gives the fast answer (checked with tokenizers
 * 0.23 on 4096 length combinations; the fixtures hold a few). */
Test(tokenizer, truncation_follows_the_fast_tokenizer)
{
    Tokenizer t = load_text(TINY);
    struct { const char *a, *b; int max_len, n_a, n_b; } c[] = {
        {"a a a a a", "b b b b", 4, 0, 1},     /* slow: A 1, B 0 */
        {"a a a a a a a", "b b b b b b", 6, 1, 2},   /* slow: A 2, B 1 */
        {"a a a a a a a", "b b b b b", 6, 2, 1},     /* A 7 cut to 6 first, then 2 1 */
        {"a a a a a a a", "b b b", 4, 1, 0},
        {"a a a a a", "b", 7, 3, 1},
        {"a a a a", NULL, 2, 0, 0},            /* slow: an error; fast: [CLS] [SEP] */
        /* Each text of a pair is first cut after the word that reaches
         * max_len pieces; special tokens count but never stop it. */
        {"unaffable unaffable unaffable", "a a a a a a a a", 6, 1, 2},
        {"aaaaaa", "a a a a a a a a a a", 4, 1, 0},
        {"a a a [CLS] a a a a a a", "b b b b b b", 4, 1, 0},
        {"[UNK] [UNK] [UNK] [UNK] [UNK]", "a a a a a a", 4, 1, 0},
        {"a a a a [UNK] [UNK]", "a a a a a", 4, 0, 1},
        {"a a a a [UNK] [UNK]", "a a a a a", 5, 1, 1},
    };
    for (size_t k = 0; k < sizeof c / sizeof c[0]; k++) {
        Encoding e = encode_ok(&t, c[k].a, c[k].b, c[k].max_len, false);
        cr_expect(e.n_a == c[k].n_a && e.n_b == c[k].n_b, "case %zu: A %d B %d, want %d %d", k,
                  e.n_a, e.n_b, c[k].n_a, c[k].n_b);
    }
}

static void expect_encode_error(const Tokenizer *t, const char *a, size_t la, const char *b,
                                size_t lb, int max_len, const char *want)
{
    Encoding e;
    BertcError err = {{0}};
    int rc = bertc_tokenizer_encode(t, arena, a, la, b, lb, max_len, false, &e, &err);
    cr_assert_neq(rc, 0, "encoding should fail with \"%s\"", want);
    cr_expect(strstr(err.msg, want), "message \"%s\" lacks \"%s\"", err.msg, want);
}

Test(tokenizer, impossible_max_len_is_an_error)
{
    Tokenizer t = load_text(TINY);
    expect_encode_error(&t, "a", 1, NULL, 0, 1, "no room for the 2 special tokens");
    expect_encode_error(&t, "a", 1, "b", 1, 2, "no room for the 3 special tokens");
    expect_encode_error(&t, "a", 1, NULL, 0, -1, "max_len must be >= 0");
}

/* ------------------------------------------------------------------------ */
/* Invalid input text and invalid vocab files                                */
/* ------------------------------------------------------------------------ */

Test(tokenizer, invalid_utf8_input_names_the_byte)
{
    Tokenizer t = load_text(TINY);
    struct { const char *s; size_t n; const char *want; } bad[] = {
        {"ab\xff", 3, "text: invalid UTF-8 at byte 2 (0xff)"},
        {"a\xc3", 2, "at byte 1 (0xc3)"},                 /* truncated sequence */
        {"\xc0\xaf", 2, "at byte 0 (0xc0)"},              /* overlong '/' */
        {"\xe0\x80\xaf", 3, "at byte 0"},                 /* overlong, 3 bytes */
        {"xx\xed\xa0\x80", 5, "at byte 2 (0xed)"},        /* surrogate U+D800 */
        {"\xf4\x90\x80\x80", 4, "at byte 0 (0xf4)"},      /* U+110000 */
        {"a\x80", 2, "at byte 1 (0x80)"},                 /* lone continuation */
        {"\xe2\x82", 2, "at byte 0 (0xe2)"},              /* cut short at the end */
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++)
        expect_encode_error(&t, bad[k].s, bad[k].n, NULL, 0, 0, bad[k].want);
    expect_encode_error(&t, "a", 1, "ok \xfe", 4, 0, "text B: invalid UTF-8 at byte 3");
}

static void expect_vocab_error(const char *text, size_t len, const char *want)
{
    Tokenizer t;
    BertcError err = {{0}};
    int rc = bertc_tokenizer_parse(&t, arena, "bad.txt", text, len, &err);
    cr_assert_neq(rc, 0, "vocab \"%.40s\" should fail with \"%s\"", text, want);
    cr_expect(strstr(err.msg, want), "message \"%s\" lacks \"%s\"", err.msg, want);
}

#define SPECIALS "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n"
/* A string literal (NULs included) as a vocab file. */
#define VOCAB_ERROR(lit, want) expect_vocab_error(lit, sizeof lit - 1, want)

Test(tokenizer, bad_vocab_files_name_file_and_line)
{
    VOCAB_ERROR("", "bad.txt: empty file");
    VOCAB_ERROR(SPECIALS "ok\n\xc3\x28\n", "bad.txt:7: invalid UTF-8 at byte 34 of the file");
    VOCAB_ERROR(SPECIALS "x\ny\nx\n", "bad.txt:8: duplicate token 'x' (first on line 6)");
    VOCAB_ERROR(SPECIALS "x\n\ny\n", "bad.txt:7: empty line");
    VOCAB_ERROR(SPECIALS "a\0b\n", "bad.txt:6: NUL byte");
    VOCAB_ERROR("[PAD]\n[CLS]\n[SEP]\n[MASK]\n", "bad.txt: the vocabulary has no [UNK] token");
    Tokenizer t;
    BertcError err = {{0}};
    cr_expect_neq(bertc_tokenizer_load(&t, arena, "test/data/tokenizer/missing.txt", &err), 0);
    cr_expect(strstr(err.msg, "missing.txt: cannot open"), "%s", err.msg);
}

Test(tokenizer, crlf_vocab_and_no_final_newline_load)
{
    const char *text = "[PAD]\r\n[UNK]\r\n[CLS]\r\n[SEP]\r\n[MASK]\r\nhello";
    Tokenizer t = load_text(text);
    cr_expect_eq(t.V, 6);
    cr_expect_eq(bertc_tokenizer_id(&t, "hello", 5), 5);
    cr_expect_eq(bertc_tokenizer_id(&t, "[MASK]", 6), 4);
}

/* A vocab.txt saved by a Windows editor starts with a UTF-8 byte order
 * mark: no part of [PAD] (it used to be: "no [PAD] token"); byte offsets in
 * messages stay the file's. */
Test(tokenizer, a_byte_order_mark_is_no_part_of_the_first_token)
{
    const char *text = "\xEF\xBB\xBF[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhello\n";
    Tokenizer t = load_text(text);
    cr_expect_eq(t.V, 6);
    cr_expect_eq(t.pad_id, 0, "[PAD] is id %d", t.pad_id);
    cr_expect_str_eq(bertc_tokenizer_token(&t, 0), "[PAD]");
    VOCAB_ERROR("\xEF\xBB\xBF" SPECIALS "ok\n\xc3\x28\n",
                "bad.txt:7: invalid UTF-8 at byte 37 of the file");
}

/* ------------------------------------------------------------------------ */
/* Random bytes: an error or a well-formed encoding, never a crash           */
/* ------------------------------------------------------------------------ */

/* Random strings biased towards the interesting bytes: ASCII, UTF-8 lead
 * and continuation bytes, controls and '['. */
static size_t random_text(Rng *rng, char *buf, size_t cap)
{
    static const uint8_t pool[] = {'a', 'b', ' ', '[', ']', 'M', '#', '.', 0x00, 0x09, 0x0a,
                                   0x1b, 0x80, 0xbf, 0xc3, 0xa9, 0xcc, 0x81, 0xe4, 0xb8,
                                   0xad, 0xed, 0xf0, 0x9f, 0xff, 0xce, 0xa3};
    size_t n = (size_t)bertc_rng_randint(rng, 0, (int64_t)cap);
    for (size_t i = 0; i < n; i++)
        buf[i] = bertc_rng_randint(rng, 0, 3) == 0 ? (char)bertc_rng_randint(rng, 0, 255)
                                              : (char)pool[bertc_rng_randint(rng, 0, sizeof pool - 1)];
    return n;
}

Test(tokenizer, random_bytes_never_crash)
{
    Tokenizer t = load_real();
    Arena *work = bertc_arena_create("random", 1 << 16);
    Rng rng = bertc_rng_seed(7);
    char a[64], b[64];
    for (int iter = 0; iter < 3000; iter++) {
        size_t la = random_text(&rng, a, sizeof a), lb = random_text(&rng, b, sizeof b);
        int max_len = (int)bertc_rng_randint(&rng, 0, 20);
        Encoding e;
        BertcError err = {{0}};
        int rc = bertc_tokenizer_encode(&t, work, a, la, iter % 2 ? b : NULL, lb, max_len,
                                  iter % 3 == 0, &e, &err);
        if (rc == 0) {
            cr_assert(max_len == 0 || e.S <= max_len, "S %d > max_len %d", e.S, max_len);
            for (int32_t i = 0; i < e.S; i++)
                cr_assert(e.input_ids[i] >= 0 && e.input_ids[i] < t.V && e.start[i] <= e.end[i]);
        } else {
            cr_assert(err.msg[0], "an error without a message");
        }
        bertc_arena_reset(work);
    }
    bertc_arena_destroy(work);
}
