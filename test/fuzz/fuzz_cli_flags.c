/* test/fuzz/fuzz_cli_flags.c — libFuzzer target: the flag parsers of the
 * `bertc` command (cli/cli.h), linked without its main. Byte 0 picks the
 * parser (even: run/init/summary/tokenize flags and then their --threads and
 * --max-len values; odd: `bertc attention`); the other bytes, split at NUL
 * bytes, are argv. Any argv must give either a parse whose values are
 * arguments it was given (numbers in range) or one error line: never a
 * crash, a read past argv, or a multi-line message. */
#include "cli/cli.h"
#include "test/fuzz/fuzz_util.h"

#define ARGS_MAX 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* v is NULL or one of argv[0..argc). */
static void check_from_argv(const char *v, char **argv, int argc)
{
    for (int i = 0; v && i < argc; i++)
        if (v == argv[i])
            return;
    if (v) {
        fprintf(stderr, "a parsed value is not one of the arguments: \"%s\"\n", v);
        abort();
    }
}

static void bertc_flags(int argc, char **argv)
{
    CliFlags f;
    BertcError err = {{0}};
    if (cli_parse_flags(argc, argv, &f, &err) != 0) {
        fuzz_expect_one_line(&err);
        return;
    }
    const char *values[] = {f.config, f.weights, f.inputs, f.output, f.seed, f.threads,
                            f.vocab, f.max_len, f.n_pos > 0 ? f.pos[0] : NULL,
                            f.n_pos > 1 ? f.pos[1] : NULL};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++)
        check_from_argv(values[i], argv, argc);
    int threads;
    int32_t max_len;
    if (f.threads && cli_parse_threads(f.threads, &threads, &err) == 0 &&
        (threads < 1 || threads > THREADS_MAX))
        abort();
    if (f.max_len && cli_parse_max_len(f.max_len, &max_len, &err) == 0 &&
        (max_len < 1 || max_len > CLI_MAX_LEN))
        abort();
}

static void attention_flags(int argc, char **argv)
{
    AttentionArgs a;
    BertcError err = {{0}};
    if (attention_parse(argc, argv, &a, &err) != 0) {
        fuzz_expect_one_line(&err);
        return;
    }
    const char *values[] = {a.config, a.weights, a.vocab, a.text_a, a.text_b};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++)
        check_from_argv(values[i], argv, argc);
    if (a.layer < -1 || a.context < -1)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    /* argv strings: the bytes after byte 0, split at NULs */
    char *text;
    char *argv[ARGS_MAX + 1] = {data[0] & 1 ? "attention" : "run"};
    int argc = fuzz_split_args(data + 1, size - 1, &text, argv, 1, ARGS_MAX);
    argv[argc] = NULL;
    if (data[0] & 1)
        attention_flags(argc, argv);
    else
        bertc_flags(argc - 1, argv + 1);
    free(text);
    return 0;
}
