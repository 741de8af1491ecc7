/* cli/cli.h — the `bertc` command's pieces that live outside its main
 * (cli/bertc.c): the flag parsers, kept apart so the tests and the fuzz
 * targets (test/fuzz/fuzz_cli_flags.c, fuzz_attention.c) run them without
 * exec'ing bertc, and `bertc attention`. Parsers print nothing: an error is
 * one line in err, naming the flag. */
#ifndef BERTC_CLI_H
#define BERTC_CLI_H

#include "zoo/zoo.h"

#include <stdio.h>

/* ---- cli/options.c: one flag parser and help printer for every command ---- */

/* One option of a command: its name, the placeholder of its value (NULL: a
 * switch), its default as --help shows it (and cli_value returns when it
 * is not given), and one line of help. */
typedef struct CliOption {
    const char *name;          /* "--max-len" */
    const char *arg;           /* "N"; NULL for a switch */
    const char *def;           /* "128", or NULL */
    const char *help;
} CliOption;

/* A command as `bertc help` and its parser see it. */
typedef struct CliCommand {
    const char *name;          /* "predict" */
    const char *summary;       /* one line */
    const char *usage;         /* after "bertc predict " */
    const char *description;   /* a paragraph, or NULL */
    const CliOption *options;
    int n_options;
    int max_positional;        /* positional arguments it takes */
    const char *positional;    /* "TEXT [TEXT_PAIR]", for the error message */
    const char *example;       /* one command line */
} CliCommand;

#define CLI_MAX_OPTIONS 48
#define CLI_MAX_POSITIONAL 8

typedef struct CliArgs {
    const char *values[CLI_MAX_OPTIONS];   /* as given, "1" for a switch; NULL: absent */
    const char *pos[CLI_MAX_POSITIONAL];
    int n_pos;
    bool help;                             /* --help or -h */
} CliArgs;

/* argv[0] is the command's name. --flag value, --flag=value, switches, "--"
 * then positionals only. Errors (one line): an unknown option (with the
 * nearest known one), a flag given twice, a missing value, a value given to
 * a switch, too many positionals. */
int cli_parse(const CliCommand *c, int argc, char **argv, CliArgs *a, BertcError *err);
/* The value of option `name`: as given, else its default, else NULL. */
const char *cli_value(const CliCommand *c, const CliArgs *a, const char *name);
bool cli_given(const CliCommand *c, const CliArgs *a, const char *name);
/* `bertc CMD --help`: usage, description, every option with its default,
 * an example. */
void cli_print_help(const CliCommand *c, FILE *out);

/* ---- cli/flags.c: the flags of run, init, summary and tokenize ----------- */

/* --name value pairs, --flag switches and up to two positional arguments
 * (after "--", everything is positional). Values are kept as given; each
 * command checks the ones it takes (cli_parse_threads, cli_parse_max_len). */
typedef struct CliFlags {
    const char *config, *weights, *inputs, *output, *seed, *threads, *vocab, *max_len;
    bool grad, stats, cased;
    const char *pos[2];
    int n_pos;
} CliFlags;

int cli_parse_flags(int argc, char **argv, CliFlags *f, BertcError *err);
/* An argument as an error message shows it: its first bytes, control
 * characters written \n, \t or \xNN, so the message stays one line.
 * Returns buf (CLI_SHOWN bytes). */
#define CLI_SHOWN 80
const char *cli_shown(const char *arg, char buf[CLI_SHOWN]);
/* --threads N: 1..THREADS_MAX. */
int cli_parse_threads(const char *value, int *n, BertcError *err);
/* tokenize --max-len N: 1..CLI_MAX_LEN tokens. */
#define CLI_MAX_LEN (1L << 20)
int cli_parse_max_len(const char *value, int32_t *n, BertcError *err);

/* An output path that names the same file as one of the command's inputs
 * (`flags[i]` given as `paths[i]`, NULL when not given; a link or another
 * spelling of the path counts) is an error naming both flags: the command
 * would replace the file it reads (its weights, its config) with its output. */
int cli_output_not_an_input(const char *output_flag, const char *output, int n,
                            const char *const *flags, const char *const *paths, BertcError *err);

/* ---- cli/finetune.c: bertc finetune (docs/finetune.md) ------------------ */

extern const CliCommand cli_cmd_finetune;
/* bertc finetune ...: argv[0] is "finetune". Returns the exit status. */
int cmd_finetune(int argc, char **argv);

/* ---- cli/attention.c: bertc attention ----------------------------------- */

typedef struct AttentionArgs {
    const char *config, *weights, *vocab, *output, *map;
    const char *text_a, *text_b;
    int layer;            /* -1: the last */
    int context;          /* CGBERT/QACGBERT context id; -1: not given (0) */
} AttentionArgs;

/* argv[0] is "attention". --layer and --context are whole numbers (checked
 * against the model in attention_draw). */
int attention_parse(int argc, char **argv, AttentionArgs *a, BertcError *err);
/* Runs model m on the sentence(s) of `a`, tokenized by tok, and draws layer
 * a->layer's map a->map, every head, into a->output. The map must be
 * (1, nh, S, S) for the S tokens: anything else is refused, naming the map
 * and its shape. */
int attention_draw(const AttentionArgs *a, Model *m, const Tokenizer *tok, Arena *arena,
                   BertcError *err);
/* bertc attention ...: argv[0] is "attention". Returns the exit status. */
int cmd_attention(int argc, char **argv);

#endif
