/* cli/vocab.c — `bertc vocab --train CORPUS... --size N --out vocab.txt`:
 * a WordPiece vocabulary learnt from text files (zoo/text/vocab_train.c, the
 * algorithm of Hugging Face BertWordPieceTokenizer.train), for a small model
 * that should not carry bert-base's 30,522 rows of embeddings. */
#include "cli/cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const CliOption vocab_options[] = {
    {"--train", "CORPUS", NULL, "a UTF-8 text file to learn from; more files follow as "
     "arguments [required]"},
    {"--size", "N", "30000", "the vocabulary's size, special tokens and alphabet included"},
    {"--out", "FILE", NULL, "the vocab.txt to write [required]"},
    {"--min-frequency", "N", "2", "a pair of pieces seen fewer times is never merged"},
    {"--limit-alphabet", "N", "1000", "keep only the N most frequent characters (0: all)"},
    {"--cased", NULL, NULL, "keep case and accents (default: lowercase and strip accents, "
     "as bert-base-uncased)"},
};

const CliCommand cli_cmd_vocab = {
    .name = "vocab",
    .summary = "train a WordPiece vocabulary (vocab.txt) on text files",
    .usage = "--train CORPUS [CORPUS...] --out FILE [--size N] [--min-frequency N] "
             "[--limit-alphabet N] [--cased]",
    .description = "Hugging Face BertWordPieceTokenizer.train's algorithm: the corpus is "
                   "normalised and split into words as `bertc tokenize` does; the vocabulary "
                   "is [PAD] [UNK] [CLS] [SEP] [MASK], every character and its ## form, then "
                   "the most frequent adjacent pieces merged one pair at a time until it has "
                   "N tokens. Deterministic. `bertc finetune --vocab FILE` trains with it "
                   "(config vocab_size = its line count). See docs/tokenizer.md.",
    .options = vocab_options,
    .n_options = sizeof vocab_options / sizeof vocab_options[0],
    .max_positional = CLI_MAX_POSITIONAL,
    .positional = "CORPUS...",
    .example = "bertc vocab --train data/topics.tsv --size 2000 --out vocab.txt",
    .manual = "--size counts the special tokens and the alphabet (the --limit-alphabet most "
              "frequent characters, in code-point order, and their ## forms); the vocabulary "
              "has fewer tokens when no pair is left to merge, and a size below what the "
              "specials and the alphabet already take is an error. The same corpus gives the "
              "same file.",
};

/* A whole number in [lo, hi] for flag. */
static int parse_count(const char *flag, const char *value, long lo, long hi, long *out,
                       BertcError *err)
{
    char *end;
    errno = 0;
    long v = strtol(value, &end, 10);
    if (errno || end == value || *end || v < lo || v > hi) {
        char shown[BERTC_SHOWN];
        return bertc_errorf(err, "%s '%s': expected a whole number from %ld to %ld", flag,
                            bertc_shown(value, shown), lo, hi);
    }
    *out = v;
    return 0;
}

static int parse_options(const CliCommand *c, const CliArgs *a, BertcVocabTrainOptions *opt,
                         BertcError *err)
{
    long size, minf, limit;
    if (parse_count("--size", cli_value(c, a, "--size"), 6, 1L << 24, &size, err) != 0 ||
        parse_count("--min-frequency", cli_value(c, a, "--min-frequency"), 0, 1L << 30, &minf,
                    err) != 0 ||
        parse_count("--limit-alphabet", cli_value(c, a, "--limit-alphabet"), 0, 1L << 24, &limit,
                    err) != 0)
        return -1;
    *opt = bertc_vocab_train_defaults();
    opt->vocab_size = (int32_t)size;
    opt->min_frequency = minf;
    opt->limit_alphabet = (int32_t)limit;
    opt->lowercase = !cli_given(c, a, "--cased");
    return 0;
}

int cmd_vocab(int argc, char **argv)
{
    const CliCommand *c = &cli_cmd_vocab;
    CliArgs a;
    int rc = cli_start(c, argc, argv, &a);
    if (rc >= 0)
        return rc;
    const char *train = cli_value(c, &a, "--train"), *out = cli_value(c, &a, "--out");
    if (!train)
        return cli_required(c, "--train");
    if (!out)
        return cli_required(c, "--out");
    BertcError err;
    BertcVocabTrainOptions opt;
    if (parse_options(c, &a, &opt, &err) != 0) {
        fprintf(stderr, "bertc vocab: %s\n", err.msg);
        return 2;
    }
    const char *paths[1 + CLI_MAX_POSITIONAL] = {train};
    for (int i = 0; i < a.n_pos; i++)
        paths[1 + i] = a.pos[i];
    const char *out_flag[1] = {"--train"};
    for (int i = 0; i <= a.n_pos; i++)
        if (cli_output_not_an_input("--out", out, 1, out_flag, &paths[i], &err) != 0)
            return cli_fail(&err);
    char *vocab;
    size_t len;
    if (bertc_vocab_train(paths, 1 + a.n_pos, &opt, &vocab, &len, &err) != 0)
        return cli_fail(&err);
    rc = bertc_write_file(out, vocab, len, &err);
    size_t lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += vocab[i] == '\n';
    free(vocab);
    if (rc != 0)
        return cli_fail(&err);
    fprintf(stderr, "bertc vocab: %zu tokens written to %s\n", lines, out);
    return 0;
}
