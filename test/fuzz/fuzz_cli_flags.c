/* test/fuzz/fuzz_cli_flags.c — libFuzzer target: the flag parsers of the
 * `bertc` command (cli/cli.h), linked without its main. Byte 0 picks the
 * parser (even: cli_parse with the table of run, init, summary, tokenize,
 * show or encode (byte 0 / 2), then the --threads and --max-len values;
 * odd: `bertc attention`); the other bytes, split at NUL
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

/* The commands of cli/run.c, show and encode, parsed with cli_parse: every
 * value is one of the arguments (or its option's default), then the
 * --threads and --max-len values go through their strict parsers. */
static const CliCommand *const commands[] = {
    &cli_cmd_run, &cli_cmd_init, &cli_cmd_summary, &cli_cmd_tokenize, &cli_cmd_show,
    &cli_cmd_encode,
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

/* v is one of argv[0..argc), or (a "--flag=value" argument) points into one. */
static void check_in_argv(const char *v, char **argv, int argc)
{
    for (int i = 0; i < argc; i++)
        if (v >= argv[i] && v <= argv[i] + strlen(argv[i]))
            return;
    fprintf(stderr, "a parsed value is not in the arguments: \"%s\"\n", v);
    abort();
}

static void bertc_flags(const CliCommand *c, int argc, char **argv)
{
    CliArgs a;
    BertcError err = {{0}};
    if (cli_parse(c, argc, argv, &a, &err) != 0) {
        fuzz_expect_one_line(&err);
        return;
    }
    for (int i = 0; i < c->n_options; i++)
        if (a.values[i] && c->options[i].arg)
            check_in_argv(a.values[i], argv, argc);
    if (a.n_pos > c->max_positional)
        abort();
    for (int i = 0; i < a.n_pos; i++)
        check_from_argv(a.pos[i], argv, argc);
    const char *threads_text = cli_value(c, &a, "--threads");
    const char *max_len_text = cli_value(c, &a, "--max-len");
    int threads;
    int32_t max_len;
    if (threads_text && cli_parse_threads(threads_text, &threads, &err) == 0 &&
        (threads < 1 || threads > THREADS_MAX))
        abort();
    if (max_len_text && cli_parse_max_len(max_len_text, &max_len, &err) == 0 &&
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
    const char *values[] = {a.model, a.config, a.weights, a.vocab, a.text_a, a.text_b};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++)
        if (values[i])
            check_in_argv(values[i], argv, argc);
    if (a.layer < -1 || a.context < -1)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    /* argv strings: the bytes after byte 0, split at NULs */
    char *text;
    const CliCommand *c = commands[(data[0] >> 1) % N_COMMANDS];
    char *argv[ARGS_MAX + 1] = {data[0] & 1 ? "attention" : (char *)c->name};
    int argc = fuzz_split_args(data + 1, size - 1, &text, argv, 1, ARGS_MAX);
    argv[argc] = NULL;
    if (data[0] & 1)
        attention_flags(argc, argv);
    else
        bertc_flags(c, argc, argv);
    free(text);
    return 0;
}
