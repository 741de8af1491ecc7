/* test/test_cli_options.c — the one flag parser of every bertc command
 * (cli/options.c): both spellings of a value, switches, "--", --help, and
 * one-line errors naming the flag. */
#include "cli/cli.h"

#include <criterion/criterion.h>
#include <string.h>

static const CliOption options[] = {
    {"--model", "DIR", NULL, "the model directory"},
    {"--max-len", "N", "128", "tokens per text"},
    {"--normalize", NULL, NULL, "unit-length vectors"},
};
static const CliCommand cmd = {.name = "embed", .summary = "sentence embeddings",
                               .usage = "--model DIR [TEXT ...]", .options = options,
                               .n_options = 3, .max_positional = 2, .positional = "TEXT [TEXT]"};

static int parse(CliArgs *a, BertcError *err, int argc, char **argv)
{
    return cli_parse(&cmd, argc, argv, a, err);
}

Test(cli_options, both_spellings_switches_and_defaults)
{
    CliArgs a;
    BertcError err;
    char *argv[] = {"embed", "--model=dir/m", "--normalize", "hello", "--", "--not-a-flag"};
    cr_assert_eq(parse(&a, &err, 6, argv), 0, "%s", err.msg);
    cr_expect_str_eq(cli_value(&cmd, &a, "--model"), "dir/m");
    cr_expect_str_eq(cli_value(&cmd, &a, "--max-len"), "128", "the default");
    cr_expect(!cli_given(&cmd, &a, "--max-len"));
    cr_expect(cli_given(&cmd, &a, "--normalize"));
    cr_assert_eq(a.n_pos, 2);
    cr_expect_str_eq(a.pos[1], "--not-a-flag");
    char *argv2[] = {"embed", "--max-len", "64", "--help"};
    cr_assert_eq(parse(&a, &err, 4, argv2), 0, "%s", err.msg);
    cr_expect_str_eq(cli_value(&cmd, &a, "--max-len"), "64");
    cr_expect(a.help);
}

static void fails(int argc, char **argv, const char *want)
{
    CliArgs a;
    BertcError err;
    cr_assert_neq(parse(&a, &err, argc, argv), 0, "%s should fail", argv[1]);
    cr_expect(strstr(err.msg, want), "\"%s\" lacks \"%s\"", err.msg, want);
    cr_expect(!strchr(err.msg, '\n'), "not one line: %s", err.msg);
}

Test(cli_options, errors_name_the_flag)
{
    fails(2, (char *[]){"embed", "--modle=x"},
          "unknown option '--modle' (did you mean --model? see bertc embed --help)");
    fails(2, (char *[]){"embed", "--x=1"}, "unknown option '--x' (see bertc embed --help)");
    fails(2, (char *[]){"embed", "--max"}, "did you mean --max-len?");
    fails(2, (char *[]){"embed", "--model"}, "--model needs a value (DIR)");
    fails(3, (char *[]){"embed", "--normalize=yes", "x"}, "--normalize takes no value");
    fails(5, (char *[]){"embed", "--model", "a", "--model", "b"}, "--model is given twice");
    fails(4, (char *[]){"embed", "a", "b", "c"}, "unexpected argument 'c' (bertc embed takes TEXT [TEXT])");
    fails(2, (char *[]){"embed", "--x\n"}, "unknown option '--x\\n'");
}

/* A typo one or two edits away, and Hugging Face's name for a flag, are
 * answered with bertc's flag (issue #29: --topk, --batchsize, --modle got
 * no suggestion); a name far from every flag gets none. */
static void suggests(const CliCommand *c, const char *typed, const char *want)
{
    CliArgs a;
    BertcError err;
    char *argv[] = {(char *)c->name, (char *)typed, (char *)"1"};
    cr_assert_neq(cli_parse(c, 3, argv, &a, &err), 0, "%s was taken", typed);
    char expect[128];
    snprintf(expect, sizeof expect, "(did you mean %s?", want);
    cr_expect(strstr(err.msg, expect), "%s: \"%s\" lacks \"%s\"", typed, err.msg, expect);
}

Test(cli_options, near_flags_and_hugging_face_names_are_suggested)
{
    suggests(&cli_cmd_predict, "--topk", "--top-k");
    suggests(&cli_cmd_predict, "--batchsize", "--batch-size");
    suggests(&cli_cmd_predict, "--batch_size", "--batch-size");
    suggests(&cli_cmd_predict, "--inptu", "--input");
    suggests(&cli_cmd_finetune, "--learning-rate", "--lr");
    suggests(&cli_cmd_finetune, "--learning_rate", "--lr");
    suggests(&cli_cmd_finetune, "--num_train_epochs", "--epochs");
    suggests(&cli_cmd_finetune, "--per_device_train_batch_size", "--batch-size");
    suggests(&cli_cmd_finetune, "--output_dir", "--out");
    suggests(&cli_cmd_pretrain, "--max_seq_length", "--max-len");
    CliArgs a;
    BertcError err;
    char *far[] = {(char *)"predict", (char *)"--temperature", (char *)"1"};
    cr_assert_neq(cli_parse(&cli_cmd_predict, 3, far, &a, &err), 0);
    cr_expect(!strstr(err.msg, "did you mean"), "a far name got a suggestion: %s", err.msg);
}
