/* cli/bertc.c — the `bertc` command (SPEC §5): the registry of its commands,
 * `bertc help [CMD]`, `--version`, and main. Each command lives in its own
 * file with its table (cli/cli.h, CliCommand: summary, usage, every option
 * with its default, an example) and its entry `int cmd_NAME(int argc, char
 * **argv)` (argv[0] = "NAME"; returns the exit status: 0, 1 on a failure of
 * the work, 2 on a usage error), which starts with cli_start (the parse and
 * --help).
 *
 * Adding a command is one line in `commands` below,
 *     {&cli_cmd_predict, cmd_predict},
 * after declaring both in cli/cli.h:
 *     extern const CliCommand cli_cmd_predict;
 *     int cmd_predict(int argc, char **argv);
 * `bertc help`, `bertc help predict`, `bertc predict --help`, the nearest
 * name for a typo, dispatch and the manual page (`bertc help --man`, which
 * `make man` writes to docs/bertc.1) then all know it. Errors are one line
 * on stderr. */
#include "cli/cli.h"
#include "cli/explain.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *program;   /* argv[0] of main */

/* The folder bertc runs from: /proc/self/exe where there is one, else argv[0]. */
static void own_dir(const char *argv0, char *dir, size_t len)
{
    ssize_t n = readlink("/proc/self/exe", dir, len - 1);
    if (n <= 0) {
        snprintf(dir, len, "%s", argv0);
        n = (ssize_t)strlen(dir);
    }
    dir[n] = '\0';
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    else
        snprintf(dir, len, ".");
}

/* " (examples: a b c)" ending the one-line message about a bad NAME, then
 * the newline. */
static void list_examples(const char *dir)
{
    DIR *d = opendir(dir);
    fprintf(stderr, " (examples:");
    for (struct dirent *e; d && (e = readdir(d));)
        if (e->d_name[0] != '.')
            fprintf(stderr, " %s", e->d_name);
    fprintf(stderr, ")\n");
    if (d)
        closedir(d);
}

/* An example is a plain name (no '/', not "." or a hidden file) of a
 * regular executable file in the examples directory: "", "." and ".."
 * would otherwise name the directory itself. */
static bool is_example(const char *name, const char *path)
{
    struct stat sb;
    return name[0] && name[0] != '.' && !strchr(name, '/') && stat(path, &sb) == 0 &&
           S_ISREG(sb.st_mode) && access(path, X_OK) == 0;
}

/* dir with its last component dropped ("/a/b" -> "/a"); false at the top. */
static bool parent_dir(char *dir)
{
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return false;
    *slash = '\0';
    return true;
}

static bool has_data(const char *root)
{
    char marker[BERTC_PATH_MAX];
    return bertc_path_join(marker, root, "data/topics.tsv", root, NULL) == 0 &&
           access(marker, R_OK) == 0;
}

/* Where `bertc train` finds the example programs and the directory holding
 * their data/, from the directory `dir` of the bertc binary (examples and
 * data_root: BERTC_PATH_MAX bytes each):
 *   build tree  BUILD/bertc, BUILD/examples/NAME, data/ in the source tree
 *               above BUILD (BUILD may be nested: build/x), found by its
 *               data/topics.tsv a few levels up;
 *   installed   PREFIX/bin/bertc, PREFIX/libexec/bertc/examples/NAME,
 *               PREFIX/share/bertc/data/.
 * data_root is left empty when no data/ is found (the example then says so). */
static void train_layout(const char *dir, char *examples, char *data_root)
{
    char up[BERTC_PATH_MAX];
    snprintf(up, sizeof up, "%s", dir);
    data_root[0] = '\0';
    if (bertc_path_join(examples, dir, "examples", dir, NULL) == 0 &&
        access(examples, X_OK) == 0) {
        for (int level = 0; level < 4; level++) {
            if (has_data(up)) {
                snprintf(data_root, BERTC_PATH_MAX, "%s", up);
                return;
            }
            if (!parent_dir(up))
                return;
        }
        return;
    }
    if (!parent_dir(up) ||
        bertc_path_join(examples, up, "libexec/bertc/examples", up, NULL) != 0 ||
        bertc_path_join(data_root, up, "share/bertc", up, NULL) != 0 || !has_data(data_root))
        data_root[0] = '\0';
}

/* bertc train's flags are the examples' own (zoo/train/train.h,
 * bertc_train_parse_flags, which parses them): listed here for --help. */
static const CliOption train_options[] = {
    {"--steps", "N", NULL, "optimizer steps (default: the example's)"},
    {"--batch-size", "N", NULL, "examples per step (default: the example's)"},
    {"--lr", "X", NULL, "peak learning rate, > 0 (default: the example's)"},
    {"--seed", "N", NULL, "shuffling and dropout, 0..2^64-1 (default: the example's)"},
    {"--eval-every", "N", NULL, "steps between evaluations, 0: only at the end"},
    {"--checkpoint", "PATH", NULL, "the checkpoint file (default: OUT/checkpoint.safetensors)"},
    {"--checkpoint-every", "N", NULL, "steps between checkpoints"},
    {"--resume", NULL, NULL, "continue exactly from the checkpoint"},
    {"--quiet", NULL, NULL, "no progress bar"},
    {"--out", "DIR", NULL, "where the model, curves and log go (default: the example's)"},
    {"--nan-policy", "stop|skip", "stop", "what a non-finite loss or gradient does"},
};

static const CliCommand cli_cmd_train = {
    .name = "train",
    .summary = "train one of the examples (topics, absa, bertsum, qaconv, spanbert)",
    .usage = "NAME [--steps N] [--batch-size N] [--lr X] [--seed N] [--out DIR] [--resume] ...",
    .description = "Runs the example program NAME with these flags, its data found next to "
                   "bertc (or in BERTC_DATA_DIR/data when that is set).",
    .options = train_options,
    .n_options = sizeof train_options / sizeof train_options[0],
    .max_positional = 1,
    .positional = "NAME",
    .example = "bertc train topics --steps 200 --out out/topics",
    .manual = "Each example trains with a progress bar, periodic evaluation, checkpoints and "
              "an exact --resume; Ctrl-C saves a checkpoint. bertc train --help lists the "
              "examples this build has. The data is found next to the binary (the source tree, "
              "or PREFIX/share/bertc) unless BERTC_DATA_DIR is set.",
};

/* The example programs' names, one line: " a b c". */
static void print_examples(const char *dir, FILE *out)
{
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));)
        if (e->d_name[0] != '.')
            fprintf(out, " %s", e->d_name);
    if (d)
        closedir(d);
}

/* bertc train NAME [flags]: run the example program NAME with the flags
 * passed on (see zoo/train/train.h), its data found through BERTC_DATA_DIR, which
 * is set to the data next to bertc unless the user set it. argv[0] is
 * "train". */
static int cmd_train(int argc, char **argv)
{
    char dir[BERTC_PATH_MAX], examples[BERTC_PATH_MAX], data_root[BERTC_PATH_MAX],
        path[BERTC_PATH_MAX];
    own_dir(program, dir, sizeof dir);
    train_layout(dir, examples, data_root);
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        cli_print_help(&cli_cmd_train, stdout);
        printf("\nexamples (in %s):", examples);
        print_examples(examples, stdout);
        printf("\n");
        return 0;
    }
    if (argc < 2) {
        fprintf(stderr, "usage: bertc train NAME [--steps N] [--out DIR] [--resume] ...");
        list_examples(examples);
        return 2;
    }
    if (bertc_path_join(path, examples, argv[1], examples, NULL) != 0 ||
        !is_example(argv[1], path)) {
        char shown[BERTC_SHOWN];
        fprintf(stderr, "bertc train: no example '%s' in %s", bertc_shown(argv[1], shown),
                examples);
        list_examples(examples);
        return 2;
    }
    if (data_root[0] && setenv("BERTC_DATA_DIR", data_root, 0) != 0) {
        fprintf(stderr, "bertc train: cannot set BERTC_DATA_DIR\n");
        return 1;
    }
    argv[1] = path;
    execv(path, argv + 1);
    fprintf(stderr, "bertc train: cannot run %s\n", path);
    return 1;
}

/* ---- the registry ------------------------------------------------------- */

typedef struct CliEntry {
    const CliCommand *cmd;
    int (*run)(int argc, char **argv);
} CliEntry;

static int cmd_help(int argc, char **argv);
static int cmd_version(int argc, char **argv);
static const CliCommand cli_cmd_help, cli_cmd_version;

/* `bertc help` lists them in this order. */
static const CliEntry commands[] = {
    {&cli_cmd_run, cmd_run},
    {&cli_cmd_predict, cmd_predict},
    {&cli_cmd_embed, cmd_embed},
    {&cli_cmd_encode, cmd_encode},
    {&cli_cmd_show, cmd_show},
    {&cli_cmd_init, cmd_init},
    {&cli_cmd_summary, cmd_summary},
    {&cli_cmd_tokenize, cmd_tokenize},
    {&cli_cmd_vocab, cmd_vocab},
    {&cli_cmd_attention, cmd_attention},
    {&cli_cmd_explain, cmd_explain},
    {&cli_cmd_pretrain, cmd_pretrain},
    {&cli_cmd_finetune, cmd_finetune},
    {&cli_cmd_evaluate, cmd_evaluate},
    {&cli_cmd_quantize, cmd_quantize},
    {&cli_cmd_export_c, cmd_export_c},
    {&cli_cmd_train, cmd_train},
    {&cli_cmd_help, cmd_help},
    {&cli_cmd_version, cmd_version},
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static const CliEntry *find_command(const char *name)
{
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (!strcmp(commands[i].cmd->name, name))
            return &commands[i];
    return NULL;
}

/* Levenshtein distance of a and b (b at most 31 bytes; a longer a costs its
 * extra length). */
static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), row[32];
    if (lb > 31)
        lb = 31;
    if (la > 64)
        return la;
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            best = up + 1 < best ? up + 1 : best;
            best = row[j - 1] + 1 < best ? row[j - 1] + 1 : best;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

static const char *nearest_command(const char *typed)
{
    const char *best = commands[0].cmd->name;
    size_t best_d = (size_t)-1;
    for (size_t i = 0; i < N_COMMANDS; i++) {
        size_t d = edit_distance(typed, commands[i].cmd->name);
        if (d < best_d)
            best = commands[i].cmd->name, best_d = d;
    }
    return best;
}

static int unknown_command(const char *name)
{
    char shown[BERTC_SHOWN];
    fprintf(stderr, "bertc: unknown command '%s' (the nearest is '%s'; bertc help lists them)\n",
            bertc_shown(name, shown), nearest_command(name));
    return 2;
}

static void print_commands(FILE *out)
{
    fprintf(out, "usage: bertc COMMAND [options]   (bertc help COMMAND, or bertc COMMAND --help, "
                 "for its options)\n\ncommands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(out, "  %-10s %s\n", commands[i].cmd->name, commands[i].cmd->summary);
    fprintf(out, "\nbertc --version prints the version; man bertc has the details.\n");
}

static const CliOption help_options[] = {
    {"--man", NULL, NULL, "print the manual page, bertc(1), as troff: every command of this "
     "list with its options (make man writes docs/bertc.1 with it)"},
};

static const CliCommand cli_cmd_help = {
    .name = "help",
    .summary = "list the commands, or show one command's options",
    .usage = "[COMMAND] [--man]",
    .options = help_options,
    .n_options = sizeof help_options / sizeof help_options[0],
    .max_positional = 1,
    .positional = "[COMMAND]",
    .example = "bertc help run",
    .manual = "bertc help --man | man -l - reads this page without installing it.",
};

/* bertc help --man: the manual page from every command's table. */
static int print_man(void)
{
    const CliCommand *tables[N_COMMANDS];
    for (size_t i = 0; i < N_COMMANDS; i++)
        tables[i] = commands[i].cmd;
    cli_print_man(tables, (int)N_COMMANDS, stdout);
    return 0;
}

/* bertc help [CMD]: the list, or exactly what `bertc CMD --help` prints. */
static int cmd_help(int argc, char **argv)
{
    CliArgs a;
    int rc = cli_start(&cli_cmd_help, argc, argv, &a);
    if (rc >= 0)
        return rc;
    if (cli_given(&cli_cmd_help, &a, "--man")) {
        if (a.n_pos > 0) {
            fprintf(stderr, "bertc help: --man prints the whole page: give no COMMAND\n");
            return 2;
        }
        return print_man();
    }
    if (a.n_pos == 0) {
        print_commands(stdout);
        return 0;
    }
    const CliEntry *e = find_command(a.pos[0]);
    if (!e)
        return unknown_command(a.pos[0]);
    char *help_argv[] = {(char *)e->cmd->name, "--help", NULL};
    return e->run(2, help_argv);
}

static const CliCommand cli_cmd_version = {
    .name = "version",
    .summary = "print the version and the SIMD paths (float, int8 and bf16) this CPU runs",
    .usage = "",
    .example = "bertc --version",
    .manual = "bertc --version prints the same. BERTC_ISA and BERTC_INT8_ISA force the paths "
              "(see ENVIRONMENT).",
};

static int cmd_version(int argc, char **argv)
{
    CliArgs a;
    int rc = cli_start(&cli_cmd_version, argc, argv, &a);
    if (rc >= 0)
        return rc;
    printf("bertc %s (SIMD path: %s, int8 path: %s, bf16 path: %s)\n", BERTC_VERSION,
           bertc_cpu_isa_name(bertc_cpu_isa()), bertc_qgemm_isa_name(bertc_qgemm_isa()),
           bertc_bgemm_isa_name(bertc_bgemm_isa()));
    return 0;
}

static int run_command(int argc, char **argv)
{
    if (argc < 2) {
        print_commands(stderr);
        return 2;
    }
    const char *name = argv[1];
    if (!strcmp(name, "--help") || !strcmp(name, "-h"))
        name = "help";
    else if (!strcmp(name, "--version"))
        name = "version";
    BertcError err;
    if (bertc_check_env(&err) != 0) {   /* the examples make the same check */
        fprintf(stderr, "bertc: %s\n", err.msg);
        return 2;
    }
    const CliEntry *e = find_command(name);
    if (!e)
        return unknown_command(name);
    argv[1] = (char *)e->cmd->name;
    return e->run(argc - 1, argv + 1);
}

/* The command runs under a guard: the library's entry points catch what
 * they meet on user input themselves; this catches anything else, so that
 * bertc ends with one line and status 1, never an abort. */
int main(int argc, char **argv)
{
    program = argv[0];
    /* a file-size limit (ulimit -f) reached while writing is a failed write
     * (EFBIG, one line), not SIGXFSZ's kill */
    signal(SIGXFSZ, SIG_IGN);
    /* static: bertc_fatal writes it after the setjmp, and a local so written
     * would be indeterminate after the jump (C11 7.13.2.1) */
    static BertcError err;
    BertcCatch guard;
    bertc_catch_begin(&guard, &err);
    if (setjmp(guard.env) != 0) {
        fprintf(stderr, "bertc: %s\n", err.msg);
        return 1;
    }
    cli_mpi_start(&argc, &argv);   /* the MPI build under mpirun: this rank */
    int status = run_command(argc, argv);
    bertc_catch_end(&guard);
    return cli_mpi_finish(status);
}
