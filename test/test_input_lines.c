/* test/test_input_lines.c — the --input FILE of predict, embed and encode
 * (cli_read_lines): a NUL byte inside a line is dropped as the tokenizer's
 * clean_text drops U+0000, so the text after it stays (it used to end the
 * line there); a UTF-8 byte order mark at the start is no part of the first
 * text; a line that is not UTF-8 is named. */
#include "test/test_util.h"
#include "cli/cli.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ZOO "test/data/zoo/bert_seqcls_single/"

static char dir[128];

static void setup(void) { test_scratch_make(dir, sizeof dir, "input_lines"); }
static void teardown(void) { test_scratch_remove(dir); }

TestSuite(input_lines, .init = setup, .fini = teardown);

/* bytes[0..n) (NULs included) as dir/name; the path in path. */
static void write_bytes(char *path, size_t cap, const char *name, const char *bytes, size_t n)
{
    snprintf(path, cap, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    cr_assert(f, "%s: cannot write", path);
    cr_assert_eq(fwrite(bytes, 1, n, f), n);
    fclose(f);
}

#define WRITE(path, name, literal) write_bytes(path, sizeof path, name, literal, sizeof literal - 1)

Test(input_lines, nul_bytes_are_dropped_and_the_rest_of_the_line_kept)
{
    char path[300];
    WRITE(path, "in.txt", "\xEF\xBB\xBF" "ab\0cd\tpa\0ir\r\n\nlast\0");
    Arena *a = bertc_arena_create("lines", 1 << 16);
    CliText *t;
    int n;
    BertcError err;
    cr_assert_eq(cli_read_lines(path, true, a, &t, &n, &err), 0, "%s", err.msg);
    cr_assert_eq(n, 3, "3 lines, got %d", n);
    cr_expect_str_eq(t[0].text, "abcd", "the BOM and the NUL dropped, the rest kept");
    cr_expect(t[0].pair && strcmp(t[0].pair, "pair") == 0, "pair '%s'", t[0].pair);
    cr_expect(t[1].text[0] == '\0' && !t[1].pair && t[1].line == 2);
    cr_expect(strcmp(t[2].text, "last") == 0 && t[2].line == 3, "'%s' line %d", t[2].text,
              t[2].line);
    bertc_arena_destroy(a);
}

Test(input_lines, a_line_that_is_not_utf8_is_named)
{
    char path[300], want[400];
    WRITE(path, "bad.txt", "fine\nalso fine\nbad \xC3\x28 byte\n");
    Arena *a = bertc_arena_create("lines", 1 << 16);
    CliText *t;
    int n;
    BertcError err;
    cr_assert_neq(cli_read_lines(path, false, a, &t, &n, &err), 0);
    snprintf(want, sizeof want, "%s:3: not valid UTF-8 text", path);
    cr_expect(strstr(err.msg, want), "want '%s', got '%s'", want, err.msg);
    bertc_arena_destroy(a);
}

/* A text given on the command line is checked as a line is: one that is
 * not UTF-8 is named (predict's TEXT or TEXT_PAIR, embed's text N) before
 * any model is read. */
Test(input_lines, a_positional_that_is_not_utf8_is_named)
{
    static const struct {
        const CliCommand *c;
        char *argv[4];
        const char *want;
    } runs[] = {
        {&cli_cmd_predict, {"predict", "bad \xC3\x28 byte"}, "text 1: not valid UTF-8 text"},
        {&cli_cmd_predict, {"predict", "fine", "\xED\xA0\x80"}, "text 2: not valid UTF-8"},
        {&cli_cmd_predict, {"predict", "--pair", "fine", "\xED\xA0\x80"},
         "TEXT_PAIR 1: not valid UTF-8"},
        {&cli_cmd_embed, {"embed", "fine", "also fine", "\xFF"}, "text 3: not valid UTF-8"},
    };
    Arena *a = bertc_arena_create("args", 1 << 16);
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        int argc = 0;
        while (argc < 4 && runs[i].argv[argc])
            argc++;
        char *argv[4];
        memcpy(argv, runs[i].argv, sizeof argv);
        CliArgs args;
        CliText *t;
        int n;
        BertcError err;
        cr_assert_eq(cli_parse(runs[i].c, argc, argv, &args, &err), 0, "%s", err.msg);
        CliInputs in = {.pairs = cli_given(runs[i].c, &args, "--pair")};
        cr_assert_neq(cli_texts(runs[i].c, &args, &in, a, &t, &n, &err), 0, "run %zu: accepted",
                      i);
        cr_expect(strstr(err.msg, runs[i].want), "run %zu: want '%s', got '%s'", i,
                  runs[i].want, err.msg);
    }
    bertc_arena_destroy(a);
}

static char out[1 << 16];

static void write_vocab(char *path, size_t cap)
{
    static const char v[] = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\ncat\nsat\non\nmat\n";
    write_bytes(path, cap, "vocab.txt", v, sizeof v - 1);
}

/* predict and embed: the line with a NUL in a word gives what the line
 * without it gives, and the printed text is the text read (no BOM). */
Test(input_lines, predict_and_embed_read_past_a_nul)
{
    char vocab[300], input[300], cmd[2048];
    write_vocab(vocab, sizeof vocab);
    WRITE(input, "in.txt", "\xEF\xBB\xBF" "the ca\0t sat\nthe cat sat\n");
    static const char *const command[2] = {"predict", "embed"};
    for (int c = 0; c < 2; c++) {
        snprintf(cmd, sizeof cmd, "%s %s --config " ZOO "config.json --weights " ZOO
                 "weights.safetensors --vocab %s --input %s", BERTC_CLI, command[c], vocab,
                 input);
        cr_assert_eq(test_shell(cmd, TEST_STDOUT_AND_STDERR, out, sizeof out), 0, "%s", out);
        const char *second = strchr(out, '\n');
        cr_assert(second, "%s: two lines expected: %s", command[c], out);
        second++;
        size_t first_len = (size_t)(second - out);
        cr_expect(strlen(second) == first_len && memcmp(out, second, first_len) == 0,
                  "%s: the line with a NUL and the line without differ:\n%s", command[c], out);
        cr_expect(strstr(out, "\xEF\xBB\xBF") == NULL, "%s printed the BOM:\n%s", command[c],
                  out);
    }
}

/* encode: the same ids for both lines. */
Test(input_lines, encode_reads_past_a_nul)
{
    char vocab[300], input[300], st_path[300], cmd[2048];
    write_vocab(vocab, sizeof vocab);
    WRITE(input, "in.txt", "\xEF\xBB\xBF" "the ca\0t\tsat\nthe cat\tsat\n");
    snprintf(st_path, sizeof st_path, "%s/in.safetensors", dir);
    snprintf(cmd, sizeof cmd, "%s encode --config " ZOO "config.json --vocab %s --input %s "
             "--output %s", BERTC_CLI, vocab, input, st_path);
    cr_assert_eq(test_shell(cmd, TEST_STDOUT_AND_STDERR, out, sizeof out), 0, "%s", out);
    Arena *a = bertc_arena_create("st", 1 << 16);
    SafeTensors *st;
    ITensor ids;
    BertcError err;
    cr_assert_eq(bertc_st_open_file(NULL, st_path, &st, &err), 0, "%s", err.msg);
    cr_assert_eq(bertc_st_load_itensor(st, "input_ids", a, &ids, &err), 0, "%s", err.msg);
    /* [CLS] the cat [SEP] sat [SEP], twice */
    static const int32_t want[12] = {2, 5, 6, 3, 7, 3, 2, 5, 6, 3, 7, 3};
    cr_assert_eq(ids.numel, 12, "input_ids: %lld values", (long long)ids.numel);
    for (int k = 0; k < 12; k++)
        cr_expect_eq(ids.data[k], want[k], "input_ids[%d]: %d, want %d", k, ids.data[k],
                     want[k]);
    bertc_st_close(st);
    bertc_arena_destroy(a);
}
