/* test/test_tokenizer_ids.c — bertc_tokenizer_encode_ids (zoo/text/tokenizer.c),
 * one text's input_ids in a fixed work buffer: they must be exactly those of
 * bertc_tokenizer_encode truncated to the same max_len, on every text of the
 * tokenizer fixtures (Hugging Face's cases, uncased and cased, and the
 * third-party ones in ../shared/real when present), on data/topics.tsv with
 * bert-base-uncased and a 1000-token vocabulary, and on hostile texts: long
 * words, 10,000 combining marks, every code point whose NFD starts with a
 * mark, special tokens inside words, CJK runs, controls, invalid UTF-8
 * anywhere, random texts. Every call gets a work buffer of exactly
 * bertc_tokenizer_work_bytes() bytes at a changing alignment and an ids
 * array of exactly max_len, both malloc'd to the byte, so `make sanitize`
 * sees any write past them. */
#include <criterion/criterion.h>

#include "nn/json.h"
#include "zoo/text/tokenizer_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VOCAB_PATH "data/bert-base-uncased-vocab.txt"
#define CASED_VOCAB_PATH "test/data/tokenizer/cased-vocab.txt"

static Arena *arena, *scratch;

static void setup(void)
{
    arena = bertc_arena_create("test_tokenizer_ids", 1 << 20);
    scratch = bertc_arena_create("encode", 1 << 20);
}

static void teardown(void)
{
    bertc_arena_destroy(scratch);
    bertc_arena_destroy(arena);
}

TestSuite(tokenizer_ids, .init = setup, .fini = teardown);

static const int32_t MAX_LENS[] = {2, 3, 8, 16, 32, 64, 512};
#define N_MAX_LENS ((int)(sizeof MAX_LENS / sizeof MAX_LENS[0]))

static Tokenizer load(const char *path, bool lower)
{
    Tokenizer t;
    BertcError err = {{0}};
    cr_assert_eq(bertc_tokenizer_load(&t, arena, path, &err), 0, "%s", err.msg);
    t.do_lower_case = lower;
    return t;
}

static Tokenizer parse(const char *name, const char *text, size_t len)
{
    Tokenizer t;
    BertcError err = {{0}};
    cr_assert_eq(bertc_tokenizer_parse(&t, arena, name, text, len, &err), 0, "%s", err.msg);
    return t;
}

/* bertc_tokenizer_encode_ids with a work buffer of exactly
 * bertc_tokenizer_work_bytes() that starts `skew` bytes past malloc's
 * alignment, and ids of exactly max_len. */
static int encode_ids(const Tokenizer *t, const char *s, size_t len, int32_t max_len, int skew,
                      int32_t *ids, int32_t *n, BertcError *err)
{
    size_t bytes = bertc_tokenizer_work_bytes();
    char *buf = malloc(bytes + (size_t)skew);
    cr_assert(buf);
    int rc = bertc_tokenizer_encode_ids(t, buf + skew, bytes, s, len, max_len, ids, n, err);
    free(buf);
    return rc;
}

/* encode_ids and bertc_tokenizer_encode(text, max_len, no pad) agree: the
 * same ids, or the same error. */
static void expect_same(const Tokenizer *t, const char *name, const char *s, size_t len,
                        int32_t max_len)
{
    static int skew;
    skew = (skew + 1) % 8;
    Encoding e;
    BertcError want_err = {{0}}, err = {{0}};
    int want_rc = bertc_tokenizer_encode(t, scratch, s, len, NULL, 0, max_len, false, &e,
                                         &want_err);
    int32_t *ids = malloc((size_t)max_len * sizeof *ids), n = -1;
    cr_assert(ids);
    int rc = encode_ids(t, s, len, max_len, skew, ids, &n, &err);
    cr_assert_eq(rc, want_rc, "%s, max_len %d: encode_ids returned %d (%s), encode %d (%s)",
                 name, max_len, rc, err.msg, want_rc, want_err.msg);
    if (rc != 0)
        cr_assert_str_eq(err.msg, want_err.msg, "%s, max_len %d: the errors differ", name,
                         max_len);
    else
        cr_assert_eq(n, e.S, "%s, max_len %d: %d tokens, encode gives %d", name, max_len, n,
                     e.S);
    for (int32_t i = 0; rc == 0 && i < n; i++)
        cr_assert_eq(ids[i], e.input_ids[i],
                     "%s, max_len %d: input_ids[%d] = %d, encode gives %d", name, max_len, i,
                     ids[i], e.input_ids[i]);
    free(ids);
    bertc_arena_reset(scratch);
}

static void expect_same_all(const Tokenizer *t, const char *name, const char *s, size_t len)
{
    for (int k = 0; k < N_MAX_LENS; k++)
        expect_same(t, name, s, len, MAX_LENS[k]);
}

/* ------------------------------------------------------------------------ */
/* The fixtures                                                              */
/* ------------------------------------------------------------------------ */

/* A JSON file parsed into the arena; NULL when it is absent and missing_ok. */
static const JsonValue *read_json(const char *path, bool missing_ok)
{
    Arena *file;
    char *text;
    size_t len;
    BertcError err = {{0}};
    if (bertc_read_file(path, 1 << 24, "a fixture", &file, &text, &len, &err) != 0) {
        bertc_arena_destroy(file);
        cr_assert(missing_ok, "%s (run the tests from the repository root)", err.msg);
        return NULL;
    }
    char *copy = bertc_arena_alloc(arena, len + 1);
    memcpy(copy, text, len + 1);
    bertc_arena_destroy(file);
    JsonDoc *doc;
    cr_assert_eq(bertc_json_parse(arena, path, copy, len, &doc, &err), 0, "%s", err.msg);
    return doc->root;
}

/* Every string `key` of the cases of a fixture, at every max_len; returns
 * how many texts. */
static size_t expect_same_on_cases(const Tokenizer *t, const JsonValue *cases, const char *key,
                                   const char *name_key)
{
    size_t texts = 0;
    for (size_t k = 0; cases && k < cases->length; k++) {
        const JsonValue *c = bertc_json_at(cases, k), *text = bertc_json_get(c, key);
        const JsonValue *name = bertc_json_get(c, name_key);
        if (!text || text->type != JSON_STRING)
            continue;
        expect_same_all(t, name ? bertc_json_string(name) : key, bertc_json_string(text),
                        text->length);
        texts++;
    }
    return texts;
}

static size_t expect_same_on_fixture(const Tokenizer *t, const char *path)
{
    const JsonValue *cases = bertc_json_get(read_json(path, false), "cases");
    return expect_same_on_cases(t, cases, "a", "name") + expect_same_on_cases(t, cases, "b", "name");
}

Test(tokenizer_ids, equal_encode_on_the_hf_fixtures)
{
    Tokenizer t = load(VOCAB_PATH, true);
    size_t n = expect_same_on_fixture(&t, "test/data/tokenizer/hf_uncased.json");
    cr_expect_geq(n, 400, "only %zu uncased texts", n);
    Tokenizer cased = load(CASED_VOCAB_PATH, false);
    n = expect_same_on_fixture(&cased, "test/data/tokenizer/hf_cased.json");
    cr_expect_geq(n, 300, "only %zu cased texts", n);
}

/* ../shared/real (from the repository root or a worktree one level down),
 * skipped when absent. */
Test(tokenizer_ids, equal_encode_on_the_real_cases_when_present)
{
    static const char *names[2] = {"hf_tokenizers_golden_bert_base_uncased_subset.json",
                                   "llamacpp_bert_bge_vocab/derived/cases.json"};
    static const char *dirs[2] = {"../shared/real/", "../../shared/real/"};
    Tokenizer t = load(VOCAB_PATH, true);
    size_t n = 0;
    for (int f = 0; f < 2; f++)
        for (int d = 0; d < 2; d++) {
            char path[256];
            snprintf(path, sizeof path, "%s%s", dirs[d], names[f]);
            const JsonValue *root = read_json(path, true);
            if (root) {
                n += expect_same_on_cases(&t, bertc_json_get(root, "cases"), "text", "source");
                break;
            }
        }
    if (n == 0)
        cr_skip_test("../shared/real is absent");
}

/* The classifier's own data: every line of data/topics.tsv (label, tab,
 * text) with bert-base-uncased and with 1000 tokens learnt on it. */
Test(tokenizer_ids, equal_encode_on_topics_with_both_vocabularies)
{
    Arena *file;
    char *text;
    size_t len;
    BertcError err = {{0}};
    cr_assert_eq(bertc_read_file("data/topics.tsv", 1 << 24, "data", &file, &text, &len, &err),
                 0, "%s", err.msg);
    BertcVocabTrainOptions opt = bertc_vocab_train_defaults();
    opt.vocab_size = 1000;
    const char *path = "data/topics.tsv";
    char *vocab;
    size_t vocab_len;
    cr_assert_eq(bertc_vocab_train(&path, 1, &opt, &vocab, &vocab_len, &err), 0, "%s", err.msg);
    Tokenizer small = parse("topics-1000.txt", vocab, vocab_len), big = load(VOCAB_PATH, true);
    free(vocab);
    cr_assert_eq(small.V, 1000);
    int lines = 0;
    for (char *line = text; line < text + len; lines++) {
        char *end = memchr(line, '\n', (size_t)(text + len - line));
        end = end ? end : text + len;
        char *tab = memchr(line, '\t', (size_t)(end - line));
        char *s = tab ? tab + 1 : line;
        expect_same_all(&small, "topics.tsv line (1000 tokens)", s, (size_t)(end - s));
        expect_same_all(&big, "topics.tsv line (bert-base)", s, (size_t)(end - s));
        line = end + 1;
    }
    cr_expect_geq(lines, 1000, "only %d lines in data/topics.tsv", lines);
    bertc_arena_destroy(file);
}

/* ------------------------------------------------------------------------ */
/* Hostile texts                                                             */
/* ------------------------------------------------------------------------ */

/* Appends cp as UTF-8 `times` times to buf (of cap), returns the new length. */
static size_t put_cp(char *buf, size_t len, size_t cap, uint32_t cp, int times)
{
    for (int k = 0; k < times; k++) {
        cr_assert(len + 4 < cap, "a test text longer than its buffer");
        len += (size_t)bertc_utf8_encode(cp, buf + len);
    }
    return len;
}

/* "a" + M x 110 + " b" and ". M" runs, for every code point M whose NFD
 * starts with a mark: the runs the ids-only normaliser cannot keep (more
 * than 100 kept marks) must still be one [UNK], which holds only if no such
 * character is or lowercases to punctuation (which would split the word). */
Test(tokenizer_ids, every_run_of_marks_is_the_same_word)
{
    Tokenizer t = load(VOCAB_PATH, true);
    static char buf[2048];
    int runs = 0;
    for (uint32_t cp = 0; cp <= 0x10FFFF; cp++) {
        if ((cp >= 0xD800 && cp <= 0xDFFF) || bertc_uc_nfd_starter(cp))
            continue;
        size_t n = put_cp(buf, 0, sizeof buf, 'a', 1);
        n = put_cp(buf, n, sizeof buf, cp, 110);
        n = put_cp(buf, n, sizeof buf, ' ', 1);
        n = put_cp(buf, n, sizeof buf, '.', 1);
        n = put_cp(buf, n, sizeof buf, cp, 120);
        n = put_cp(buf, n, sizeof buf, 'b', 1);
        char name[32];
        snprintf(name, sizeof name, "a + U+%04X x 110 ...", (unsigned)cp);
        expect_same(&t, name, buf, n, 8);
        runs++;
    }
    cr_expect_geq(runs, 800, "only %d code points start their NFD with a mark", runs);
}

/* Every character of the pool, and its "##" form: each word is one piece a
 * character, so marks sorted into another order give other ids. */
static Tokenizer order_vocab(void)
{
    static const uint32_t alphabet[] = {'a', 'b', 'i', 0x3C3, 0x4E2D, 0x1100, 0x1161, 0x11A8,
                                        0x8D4, 0x302E, 0x1D165, 0x1D16D, 0x1B44, 0x1E000};
    static char text[1024];
    size_t n = 0;
    const char *specials = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n.\n";
    memcpy(text, specials, strlen(specials));
    n = strlen(specials);
    for (size_t k = 0; k < sizeof alphabet / sizeof alphabet[0]; k++) {
        n = put_cp(text, n, sizeof text, alphabet[k], 1);
        text[n++] = '\n';
        text[n++] = '#';
        text[n++] = '#';
        n = put_cp(text, n, sizeof text, alphabet[k], 1);
        text[n++] = '\n';
    }
    return parse("order-vocab.txt", text, n);
}

typedef struct Hostile {
    const char *name;
    uint32_t cp[4];    /* a unit of code points (0 ends it early) ... */
    int times;         /* ... repeated */
    const char *before, *after;
} Hostile;

static size_t build(const Hostile *h, char *buf, size_t cap)
{
    size_t n = strlen(h->before);
    memcpy(buf, h->before, n);
    for (int r = 0; r < h->times; r++)
        for (int k = 0; k < 4 && h->cp[k]; k++)
            n = put_cp(buf, n, cap, h->cp[k], 1);
    cr_assert(n + strlen(h->after) < cap);
    memcpy(buf + n, h->after, strlen(h->after));
    return n + strlen(h->after);
}

Test(tokenizer_ids, equal_encode_on_hostile_texts)
{
    static const Hostile cases[] = {
        {"300-char word", {'a'}, 300, "x ", " y"},
        {"300 chars of two-letter pieces", {'a', 'b'}, 150, "", " end"},
        {"100-char word", {'a'}, 100, "", " x"},
        {"101-char word", {'a'}, 101, "", " x"},
        {"100 chars and dropped accents", {'a', 0x301}, 100, "", " x"},
        {"101 chars with accents", {'a', 0x301}, 101, "", " x"},
        {"99 chars then I with dot", {'a'}, 99, "", "\xc4\xb0 x"},
        {"10k acute accents", {0x301}, 10000, "e", "x y z"},
        {"10k kept marks", {0x1D165}, 10000, "e", " x"},
        {"10k mixed marks", {0x301, 0x1D16D, 0x323, 0x1D165}, 2500, "a", "b. c"},
        {"10k marks after a period", {0x1D16D}, 10000, "x.", "y z"},
        {"10k marks and grapheme joiners", {0x1D16D, 0x34F, 0x1D165}, 3000, "", " q"},
        {"10k marks at the start", {0x302E}, 10000, "", ""},
        {"marks then CJK", {0x1D165, 0x4E2D}, 500, "a", ""},
        {"10k Hangul syllables", {0xAC01}, 10000, "", ""},
        {"CJK run", {0x4E2D, 0x6587}, 2000, "x", "y"},
        {"[CLS] inside words", {'a', 'b'}, 60, "ab[CLS]cd[SEP]e[MASK]", "[PAD]x[UNK]"},
        {"half specials", {'['}, 300, "[CLS", "[SEP][[MASK]]"},
        {"controls", {0x1, 'a', 0x200B, 0x85}, 2000, "\x7f", "\xc2\xad"},
        {"word of removed characters", {0x200B}, 5000, "a", "b"},
        {"sigma and dotted I", {0x3A3, 0x130}, 1000, "", " \xce\xa3"},
        {"punctuation run", {',', '.'}, 3000, "a", "b"},
        {"emoji", {0x1F600}, 300, "", ""},
        {"spaces only", {' ', '\t', 0x3000}, 3000, "", ""},
    };
    Tokenizer t = load(VOCAB_PATH, true), cased = load(CASED_VOCAB_PATH, false);
    Tokenizer order = order_vocab();
    static char buf[1 << 16];
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        size_t n = build(&cases[k], buf, sizeof buf);
        expect_same_all(&t, cases[k].name, buf, n);
        expect_same_all(&cased, cases[k].name, buf, n);
        expect_same_all(&order, cases[k].name, buf, n);
    }
}

/* Where the ids-only normaliser stops keeping a run of marks: a word of
 * exactly 100 characters made of one starter and marks, or of marks alone
 * after a punctuation character, is still its pieces; one more is [UNK]. */
Test(tokenizer_ids, runs_of_marks_at_the_word_limit)
{
    Tokenizer order = order_vocab();
    static char buf[4096];
    static const char *before[3] = {".", "a", ""};
    for (int b = 0; b < 3; b++)
        for (int marks = 97; marks <= 103; marks++) {
            Hostile h = {"", {0x1D165, 0}, marks, before[b], " b"};
            size_t n = build(&h, buf, sizeof buf);
            char name[48];
            snprintf(name, sizeof name, "\"%s\" + %d marks", before[b], marks);
            expect_same_all(&order, name, buf, n);
        }
}

/* ------------------------------------------------------------------------ */
/* Random texts, on a vocabulary where the order of marks shows in the ids   */
/* ------------------------------------------------------------------------ */

/* Random runs of characters of every kind the normaliser treats apart:
 * letters, marks dropped or kept with several classes, a mark of class 0,
 * characters whose NFD is several marks, Hangul, CJK, 'İ', 'Σ', spaces,
 * punctuation, removed characters, special tokens, now and then a byte of
 * invalid UTF-8. */
static size_t random_text(Rng *rng, char *buf, size_t cap)
{
    static const uint32_t pool[] = {'a', 'b', 'A', ' ', '.', 0x301, 0x323, 0x34F, 0xF73, 0x344,
                                    0x8D4, 0x302E, 0x1D165, 0x1D16D, 0x1B44, 0x1E000, 0xAC01,
                                    0x4E2D, 0x130, 0x3A3, 0x200B, 0x1, '\n', 0x1F600};
    static const char *specials[3] = {"[CLS]", "[MASK]", "[SEP"};
    size_t n = 0, len = (size_t)bertc_rng_randint(rng, 0, 400);
    for (size_t k = 0; k < len && n + 4 * 120 + 8 < cap; k++) {
        int64_t r = bertc_rng_randint(rng, 0, 99);
        if (r == 0) {
            const char *s = specials[bertc_rng_randint(rng, 0, 2)];
            memcpy(buf + n, s, strlen(s));
            n += strlen(s);
            continue;
        }
        uint32_t cp = pool[bertc_rng_randint(rng, 0, sizeof pool / sizeof pool[0] - 1)];
        int times = r < 10 ? (int)bertc_rng_randint(rng, 1, 120) : 1;
        n = put_cp(buf, n, cap, cp, times);
    }
    if (bertc_rng_randint(rng, 0, 49) == 0 && n > 0)
        buf[bertc_rng_randint(rng, 0, (int64_t)n - 1)] = (char)0xFF;
    return n;
}

Test(tokenizer_ids, equal_encode_on_random_texts)
{
    Tokenizer order = order_vocab(), t = load(VOCAB_PATH, true);
    Rng rng = bertc_rng_seed(17);
    static char buf[1 << 16];
    for (int iter = 0; iter < 3000; iter++) {
        size_t n = random_text(&rng, buf, sizeof buf);
        int32_t max_len = MAX_LENS[bertc_rng_randint(&rng, 0, N_MAX_LENS - 1)];
        char name[48];
        snprintf(name, sizeof name, "random text %d (%zu bytes)", iter, n);
        expect_same(&order, name, buf, n, max_len);
        order.do_lower_case = !order.do_lower_case;
        expect_same(&order, name, buf, n, max_len);
        order.do_lower_case = !order.do_lower_case;
        expect_same(&t, name, buf, n, max_len);
    }
}

/* ------------------------------------------------------------------------ */
/* Errors, and the early stop                                                */
/* ------------------------------------------------------------------------ */

/* Invalid UTF-8 anywhere, also far past the pieces max_len keeps, is the
 * error bertc_tokenizer_encode gives, naming the byte. */
Test(tokenizer_ids, invalid_utf8_anywhere_is_the_error_encode_gives)
{
    Tokenizer t = load(VOCAB_PATH, true);
    static char buf[60010];
    for (int k = 0; k < 10000; k++)
        memcpy(buf + 6 * k, "words ", 6);
    struct { size_t at; unsigned char byte; } bad[] = {{0, 0xFF}, {3, 0x80}, {59999, 0xC3},
                                                       {30000, 0xED}};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        char saved = buf[bad[k].at];
        buf[bad[k].at] = (char)bad[k].byte;
        expect_same(&t, "60000 bytes with one bad byte", buf, 60000, 8);
        int32_t ids[8], n;
        BertcError err = {{0}};
        cr_assert_neq(encode_ids(&t, buf, 60000, 8, 0, ids, &n, &err), 0);
        char want[64];
        snprintf(want, sizeof want, "text: invalid UTF-8 at byte %zu", bad[k].at);
        cr_expect(strstr(err.msg, want), "\"%s\" lacks \"%s\"", err.msg, want);
        buf[bad[k].at] = saved;
    }
}

Test(tokenizer_ids, too_small_a_work_buffer_or_max_len_is_an_error)
{
    Tokenizer t = load(VOCAB_PATH, true);
    size_t bytes = bertc_tokenizer_work_bytes();
    char *work = malloc(bytes);
    int32_t ids[8], n;
    BertcError err = {{0}};
    cr_assert_neq(bertc_tokenizer_encode_ids(&t, work, bytes - 1, "hi", 2, 8, ids, &n, &err), 0);
    char want[96];
    snprintf(want, sizeof want, "work buffer of %zu bytes is below the %zu", bytes - 1, bytes);
    cr_expect(strstr(err.msg, want), "\"%s\" lacks \"%s\"", err.msg, want);
    cr_assert_neq(bertc_tokenizer_encode_ids(&t, work, bytes, "hi", 2, 1, ids, &n, &err), 0);
    cr_expect(strstr(err.msg, "max_len 1 leaves no room for the 2 special tokens"), "%s",
              err.msg);
    cr_assert_eq(bertc_tokenizer_encode_ids(&t, work, bytes, "hi", 2, 2, ids, &n, &err), 0,
                 "%s", err.msg);
    cr_expect(n == 2 && ids[0] == t.cls_id && ids[1] == t.sep_id,
              "max_len 2: %d tokens %d %d, want [CLS] [SEP]", n, ids[0], ids[1]);
    free(work);
}

/* A megabyte of text in the same work buffer: the buffer does not grow
 * with the text, and the ids are the text's first words (encode, which
 * keeps every piece, is compared on its first 60,000 bytes). */
Test(tokenizer_ids, a_megabyte_of_text_in_the_same_buffer)
{
    Tokenizer t = load(VOCAB_PATH, true);
    size_t len = 1 << 20;
    char *text = malloc(len);
    for (size_t i = 0; i < len; i++)
        text[i] = "hello world "[i % 12];
    expect_same(&t, "60000 bytes of hello world", text, 60000, 32);
    int32_t ids[32], n;
    BertcError err = {{0}};
    cr_assert_eq(encode_ids(&t, text, len, 32, 3, ids, &n, &err), 0, "%s", err.msg);
    cr_expect(n == 32 && ids[1] == 7592 && ids[2] == 2088 && ids[31] == t.sep_id,
              "%d tokens: %d %d ... %d, want 32: hello (7592) world (2088) ... [SEP]", n,
              ids[1], ids[2], ids[31]);
    free(text);
}
