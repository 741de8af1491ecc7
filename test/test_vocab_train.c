/* test/test_vocab_train.c — the WordPiece vocabulary trainer (zoo/text/vocab_train.c,
 * `bertc vocab`): a corpus small enough to merge by hand gives exactly the
 * vocabulary derived below; the result is deterministic; bad corpora and
 * sizes are one-line errors naming the file; a 2000-token vocabulary learnt
 * on data/topics.tsv tokenizes it with few [UNK]s and `bertc finetune` trains
 * a model with it. */
#include "test/test_util.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[128];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/bertc_vocab_train_%d", (int)getpid());
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s && mkdir -p %s", dir, dir);
    cr_assert_eq(system(cmd), 0);
}

static void teardown(void)
{
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_expect_eq(system(cmd), 0);
}

TestSuite(vocab_train, .init = setup, .fini = teardown, .timeout = 240);

static char log_text[8192];

static int bertc(const char *args)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s", BERTC_CLI, args);
    return test_shell(cmd, TEST_STDOUT_AND_STDERR, log_text, sizeof log_text);
}

static void expect_one_line_error(int rc, const char *want)
{
    cr_assert_neq(rc, 0, "expected a failure with '%s', got success:\n%s", want, log_text);
    cr_assert(strstr(log_text, want), "expected '%s' in:\n%s", want, log_text);
    cr_assert(strchr(log_text, '\n') == log_text + strlen(log_text) - 1, "not one line:\n%s",
              log_text);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert(f, "%s: cannot write", path);
    fputs(text, f);
    fclose(f);
}

static int train_text(const char *text, int32_t size, char **vocab, BertcError *err)
{
    BertcVocabTrainOptions opt = bertc_vocab_train_defaults();
    opt.vocab_size = size;
    const char *texts[1] = {text}, *names[1] = {"hand.txt"};
    size_t lens[1] = {strlen(text)}, len;
    return bertc_vocab_train_texts(texts, lens, names, 1, &opt, vocab, &len, err);
}

/* Words (lowercased, accents stripped, punctuation split): hello x3, "!",
 * ",", low, lower. Alphabet by code point: ! , e h l o r w (ids 5-12); the
 * words in byte order add ##e ##l ##o (hello), ##w (low), ##r (lower).
 * Pair counts: h ##e, ##e ##l, ##l ##l, ##l ##o 3 each; l ##o, ##o ##w 2;
 * ##w ##e, ##e ##r 1. Merges (count, then the smaller id pair):
 * (h, ##e) -> he; (##l, ##l) -> ##ll [ids 14,14 < he's 18]; (he, ##ll) ->
 * hell; (hell, ##o) -> hello; (l, ##o) -> lo; (lo, ##w) -> low; then only
 * pairs seen once are left, below min_frequency 2. */
#define HAND_CORPUS "H\xc3\xa9llo hello, HELLO! low lower\n"
static const char *const hand_vocab[] = {
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "!", ",", "e", "h", "l", "o", "r", "w",
    "##e", "##l", "##o", "##w", "##r", "he", "##ll", "hell", "hello", "lo", "low",
};
#define HAND_N (int)(sizeof hand_vocab / sizeof hand_vocab[0])

static void expect_vocab(const char *got, const char *const *want, int n)
{
    char expected[1024] = "";
    for (int i = 0; i < n; i++) {
        strcat(expected, want[i]);
        strcat(expected, "\n");
    }
    cr_assert_str_eq(got, expected, "trained vocabulary:\n%s\nexpected:\n%s", got, expected);
}

Test(vocab_train, a_hand_merged_corpus_gives_exactly_the_derived_vocabulary)
{
    char *vocab;
    BertcError err;
    cr_assert_eq(train_text(HAND_CORPUS, 100, &vocab, &err), 0, "%s", err.msg);
    expect_vocab(vocab, hand_vocab, HAND_N);
    free(vocab);
    /* --size stops the merges: 22 tokens end at "hello" */
    cr_assert_eq(train_text(HAND_CORPUS, 22, &vocab, &err), 0, "%s", err.msg);
    expect_vocab(vocab, hand_vocab, 22);
    free(vocab);
}

Test(vocab_train, a_size_below_the_specials_and_alphabet_is_a_one_line_error)
{
    char *vocab;
    BertcError err;
    cr_assert_neq(train_text(HAND_CORPUS, 17, &vocab, &err), 0);
    cr_assert(strstr(err.msg, "vocabulary size 17 is below the 18 tokens"), "%s", err.msg);
    cr_assert_eq(train_text(HAND_CORPUS, 18, &vocab, &err), 0, "%s", err.msg);
    expect_vocab(vocab, hand_vocab, 18);
    free(vocab);
    char path[300], args[700];
    snprintf(path, sizeof path, "%s/hand.txt", dir);
    write_file(path, HAND_CORPUS);
    snprintf(args, sizeof args, "vocab --train %s --size 10 --out %s/v.txt", path, dir);
    expect_one_line_error(bertc(args), "vocabulary size 10 is below the 18 tokens");
    snprintf(args, sizeof args, "vocab --train %s --size 3 --out %s/v.txt", path, dir);
    expect_one_line_error(bertc(args), "--size '3': expected a whole number from 6");
}

Test(vocab_train, training_is_deterministic_and_files_equal_texts)
{
    char a[300], b[300], args[1000];
    snprintf(a, sizeof a, "%s/a.txt", dir);
    snprintf(b, sizeof b, "%s/b.txt", dir);
    snprintf(args, sizeof args, "vocab --train data/topics.tsv --size 1500 --out %s", a);
    cr_assert_eq(bertc(args), 0, "%s", log_text);
    cr_assert(strstr(log_text, "1500 tokens written"), "%s", log_text);
    snprintf(args, sizeof args, "vocab --train data/topics.tsv --size 1500 --out %s", b);
    cr_assert_eq(bertc(args), 0, "%s", log_text);
    cr_assert(test_same_file(a, b), "two runs on the same corpus differ");

    /* two files: the words of both are counted (the hand corpus's two
     * halves give the hand vocabulary) */
    char h1[300], h2[300], out[300], got[1024];
    snprintf(h1, sizeof h1, "%s/h1.txt", dir);
    snprintf(h2, sizeof h2, "%s/h2.txt", dir);
    snprintf(out, sizeof out, "%s/h.txt", dir);
    write_file(h1, "H\xc3\xa9llo hello,\n");
    write_file(h2, "HELLO! low lower\n");
    snprintf(args, sizeof args, "vocab --train %s %s --size 100 --out %s", h1, h2, out);
    cr_assert_eq(bertc(args), 0, "%s", log_text);
    test_read_text(out, got, sizeof got);
    expect_vocab(got, hand_vocab, HAND_N);
}

Test(vocab_train, bad_corpus_files_are_one_line_errors_naming_them)
{
    char path[300], args[900];
    snprintf(path, sizeof path, "%s/empty.txt", dir);
    write_file(path, "");
    snprintf(args, sizeof args, "vocab --train %s --out %s/v.txt", path, dir);
    expect_one_line_error(bertc(args), "empty.txt: empty corpus file");

    snprintf(args, sizeof args, "vocab --train %s/missing.txt --out %s/v.txt", dir, dir);
    expect_one_line_error(bertc(args), "missing.txt");

    snprintf(path, sizeof path, "%s/fifo", dir);
    cr_assert_eq(mkfifo(path, 0600), 0);
    snprintf(args, sizeof args, "vocab --train %s --out %s/v.txt", path, dir);
    expect_one_line_error(bertc(args), "fifo: not a regular file (a FIFO)");

    snprintf(args, sizeof args, "vocab --train %s --out %s/v.txt", dir, dir);
    expect_one_line_error(bertc(args), "not a regular file");

    snprintf(path, sizeof path, "%s/latin1.txt", dir);
    write_file(path, "caf\xe9 ok\n");
    snprintf(args, sizeof args, "vocab --train %s --out %s/v.txt", path, dir);
    expect_one_line_error(bertc(args), "latin1.txt: invalid UTF-8 at byte 3");

    snprintf(path, sizeof path, "%s/spaces.txt", dir);
    write_file(path, " \n\t\n");
    snprintf(args, sizeof args, "vocab --train %s --out %s/v.txt", path, dir);
    expect_one_line_error(bertc(args), "spaces.txt: no words");

    snprintf(args, sizeof args, "vocab --train data/topics.tsv --out data/topics.tsv");
    expect_one_line_error(bertc(args), "--out");
    snprintf(path, sizeof path, "%s/v.txt", dir);
    cr_assert_eq(access(path, F_OK), -1, "a failed run left %s", path);
}

/* [UNK]s among the tokens of every line of the file at `text`. */
static void unk_fraction(const char *vocab_path, const char *text, long *unk, long *total)
{
    Arena *a = bertc_arena_create("vocab", 1 << 20);
    Tokenizer tok;
    BertcError err;
    cr_assert_eq(bertc_tokenizer_load(&tok, a, vocab_path, &err), 0, "%s", err.msg);
    FILE *f = fopen(text, "r");
    cr_assert(f, "%s: cannot open", text);
    char line[8192];
    *unk = *total = 0;
    while (fgets(line, sizeof line, f)) {
        Arena *s = bertc_arena_create("line", 1 << 20);
        Encoding e;
        cr_assert_eq(bertc_tokenizer_encode(&tok, s, line, strlen(line), NULL, 0, 0, false, &e,
                                            &err), 0, "%s", err.msg);
        for (int32_t i = 1; i + 1 < e.S; i++)   /* not [CLS] and [SEP] */
            *unk += e.input_ids[i] == tok.unk_id;
        *total += e.S - 2;
        bertc_arena_destroy(s);
    }
    fclose(f);
    bertc_arena_destroy(a);
}

Test(vocab_train, a_2000_token_vocabulary_covers_its_corpus_and_finetunes_a_model)
{
    char vocab[300], args[2000];
    snprintf(vocab, sizeof vocab, "%s/vocab.txt", dir);
    snprintf(args, sizeof args, "vocab --train data/topics.tsv --size 2000 --out %s", vocab);
    cr_assert_eq(bertc(args), 0, "%s", log_text);
    long unk, total;
    unk_fraction(vocab, "data/topics.tsv", &unk, &total);
    /* every character of the corpus is in the alphabet (fewer than 1000
     * of them), so no word can be [UNK]: measured 0 of 44,331 tokens */
    cr_assert(total > 30000, "only %ld tokens", total);
    cr_assert(unk == 0, "%ld [UNK] of %ld tokens", unk, total);
    /* learnt on the first 915 lines, the other 229 (unseen): measured 2
     * [UNK] of 9,767 tokens (characters the first part never has) */
    char head[300], tail[300], held[300];
    snprintf(head, sizeof head, "%s/head.tsv", dir);
    snprintf(tail, sizeof tail, "%s/tail.tsv", dir);
    snprintf(held, sizeof held, "%s/held.txt", dir);
    snprintf(args, sizeof args, "head -n 915 data/topics.tsv > %s && tail -n +916 "
             "data/topics.tsv > %s", head, tail);
    cr_assert_eq(system(args), 0);
    snprintf(args, sizeof args, "vocab --train %s --size 2000 --out %s", head, held);
    cr_assert_eq(bertc(args), 0, "%s", log_text);
    unk_fraction(held, tail, &unk, &total);
    cr_assert(total > 8000 && unk <= total / 1000, "held-out text: %ld [UNK] of %ld tokens, "
              "expected at most 0.1 %%", unk, total);

    /* finetune with it: a 1-layer model of vocab_size 2000, a few steps */
    char csv[300], cfg[300];
    snprintf(csv, sizeof csv, "%s/train.tsv", dir);
    snprintf(args, sizeof args, "awk -F'\\t' 'BEGIN{print \"label\\ttext\"} NR<=200{print}' "
             "data/topics.tsv > %s", csv);
    cr_assert_eq(system(args), 0);
    snprintf(cfg, sizeof cfg, "%s/config.json", dir);
    const char *fmt = "{\"architectures\": [\"BertModel\"], \"vocab_size\": %d, \"hidden_size\": "
                      "32, \"num_hidden_layers\": 1, \"num_attention_heads\": 2, "
                      "\"intermediate_size\": 64, \"max_position_embeddings\": 64}\n";
    char text[400];
    snprintf(text, sizeof text, fmt, 2000);
    write_file(cfg, text);
    snprintf(args, sizeof args, "finetune --config %s --vocab %s --train %s --task seq-cls "
             "--out %s/model --quiet --batch-size 8 --max-len 32 --steps 5", cfg, vocab, csv, dir);
    cr_assert_eq(bertc(args), 0, "finetune with the trained vocabulary failed:\n%s", log_text);
    ModelDir d;
    BertcError err;
    char model[300];
    snprintf(model, sizeof model, "%s/model", dir);
    Arena *a = bertc_arena_create("dir", 1 << 20);
    cr_assert_eq(bertc_model_dir_open(&d, a, model, &err), 0, "%s", err.msg);
    cr_assert_eq(d.model.cfg.vocab_size, 2000);
    cr_assert(d.has_tokenizer && d.tok.V == 2000, "the model directory's vocab.txt");
    bertc_arena_destroy(a);

    /* a config whose vocab_size does not match is refused in one line */
    snprintf(text, sizeof text, fmt, 30522);
    write_file(cfg, text);
    snprintf(args, sizeof args, "finetune --config %s --vocab %s --train %s --task seq-cls "
             "--out %s/model2 --quiet --steps 1", cfg, vocab, csv, dir);
    expect_one_line_error(bertc(args), "has 2000 tokens but the config's vocab_size is 30522");
}

Test(vocab_train, limit_alphabet_drops_the_rarest_and_cased_keeps_case_and_accents)
{
    /* a x4, b x1: with limit 1 only "a" is kept and "ab" is "a" alone;
     * with min_frequency 1, aaa = (a, ##a, ##a) merges to aa then aaa */
    BertcVocabTrainOptions opt = bertc_vocab_train_defaults();
    opt.vocab_size = 100;
    opt.limit_alphabet = 1;
    opt.min_frequency = 1;
    const char *texts[1] = {"aaa ab"}, *names[1] = {"t.txt"};
    size_t lens[1] = {6}, len;
    char *vocab;
    BertcError err;
    cr_assert_eq(bertc_vocab_train_texts(texts, lens, names, 1, &opt, &vocab, &len, &err), 0,
                 "%s", err.msg);
    static const char *const limited[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a",
                                          "##a", "aa", "aaa"};
    expect_vocab(vocab, limited, 9);
    free(vocab);

    opt = bertc_vocab_train_defaults();
    opt.lowercase = false;
    texts[0] = "H\xc3\xa9llo H\xc3\x89LLO";
    lens[0] = strlen(texts[0]);
    cr_assert_eq(bertc_vocab_train_texts(texts, lens, names, 1, &opt, &vocab, &len, &err), 0,
                 "%s", err.msg);
    cr_assert(strstr(vocab, "\nH\n") && strstr(vocab, "\n##\xc3\xa9\n") &&
              strstr(vocab, "\n##\xc3\x89\n") && !strstr(vocab, "\nh\n"),
              "cased: H, ##é and ##É kept apart, no h:\n%s", vocab);
    free(vocab);
}
