/* cli/bertc.c — the `bertc` command (SPEC §5). Each subcommand parses its
 * flags and calls the library; errors are one line on stderr and a non-zero
 * exit status. */
#include "cli/cli.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(void)
{
    fprintf(stderr,
            "usage: bertc <command> [options]\n"
            "  run      --config C.json --weights W.safetensors --inputs I.safetensors\n"
            "           --output O.safetensors [--grad] [--threads N] [--stats]\n"
            "  init     --config C.json --output W.safetensors [--seed S]\n"
            "  summary  --config C.json\n"
            "  tokenize --vocab vocab.txt [--max-len N] [--cased] TEXT [TEXT_PAIR]\n"
            "  train    NAME [--steps N] [--out DIR] [--resume] ...   (an example)\n"
            "  attention --config C.json --weights W.safetensors --vocab vocab.txt\n"
            "           [--layer L] [--map NAME] [--context N] [--output A.svg] TEXT [PAIR]\n");
    return 2;
}

static int require(const char *value, const char *flag, const char *command)
{
    if (value)
        return 0;
    fprintf(stderr, "bertc %s: %s is required\n", command, flag);
    return -1;
}

static int fail(const BertcError *err)
{
    fprintf(stderr, "bertc: %s\n", err->msg);
    return 1;
}

static int set_threads(const char *value)
{
    int n;
    BertcError err;
    if (!value)
        return 0;
    if (cli_parse_threads(value, &n, &err) != 0) {
        fprintf(stderr, "bertc: %s\n", err.msg);
        return -1;
    }
    bertc_threads_set_count(n);
    return 0;
}

static int cmd_run(const CliFlags *f)
{
    if (require(f->config, "--config", "run") || require(f->weights, "--weights", "run") ||
        require(f->inputs, "--inputs", "run") || require(f->output, "--output", "run") ||
        set_threads(f->threads))
        return 2;
    static const char *const flags[] = {"--config", "--weights", "--inputs"};
    const char *paths[] = {f->config, f->weights, f->inputs};
    RunArgs args = {f->config, f->weights, f->inputs, f->output, f->grad, f->stats};
    BertcError err;
    if (cli_output_not_an_input("--output", f->output, 3, flags, paths, &err) != 0)
        return fail(&err);
    return bertc_zoo_run(&args, &err) == 0 ? 0 : fail(&err);
}

static int cmd_init(const CliFlags *f)
{
    if (require(f->config, "--config", "init") || require(f->output, "--output", "init"))
        return 2;
    uint64_t seed = 0;
    if (f->seed && !bertc_parse_u64(f->seed, &seed)) {
        fprintf(stderr, "bertc init: --seed needs a whole number from 0 to %llu, got '%s'\n",
                (unsigned long long)UINT64_MAX, f->seed);
        return 2;
    }
    BertConfig cfg;
    BertcError err;
    static const char *const flags[] = {"--config"};
    if (cli_output_not_an_input("--output", f->output, 1, flags, &f->config, &err) != 0 ||
        bertc_bert_config_read(f->config, &cfg, &err) != 0)
        return fail(&err);
    Arena *arena = bertc_arena_create("params", 1 << 20);
    Model m;
    int rc = bertc_model_build(&m, arena, &cfg, &err);
    if (rc != 0)
        bertc_model_config_error(&err, f->config);
    if (rc == 0) {
        Rng rng = bertc_rng_seed(seed);
        bertc_registry_init_weights(m.reg, &rng, cfg.initializer_range);
        rc = bertc_registry_save_file(m.reg, f->output, &err);
    }
    bertc_arena_destroy(arena);
    return rc == 0 ? 0 : fail(&err);
}

static int cmd_summary(const CliFlags *f)
{
    if (require(f->config, "--config", "summary"))
        return 2;
    BertConfig cfg;
    BertcError err;
    if (bertc_bert_config_read(f->config, &cfg, &err) != 0)
        return fail(&err);
    Arena *arena = bertc_arena_create("params", 1 << 20);
    Model m;
    int rc = bertc_model_build(&m, arena, &cfg, &err);
    if (rc != 0)
        bertc_model_config_error(&err, f->config);
    if (rc == 0)
        bertc_registry_print(m.reg, stdout);
    bertc_arena_destroy(arena);
    return rc == 0 ? 0 : fail(&err);
}

/* One line per token: index, id, token, type, mask, and its span of the
 * text it came from in code points [start, end) ((0, 0) for specials). */
static void print_encoding(const Tokenizer *t, const Encoding *e)
{
    printf("index     id  %-16s type mask  start   end\n", "token");
    for (int32_t i = 0; i < e->S; i++)
        printf("%5d %6d  %-16s %4d %4d  %5d %5d\n", i, e->input_ids[i],
               bertc_tokenizer_token(t, e->input_ids[i]), e->token_type_ids[i], e->attention_mask[i],
               e->start[i], e->end[i]);
}

/* --max-len N truncates (longest_first) and pads to N tokens; --cased keeps
 * case and accents (do_lower_case=False, for cased vocabs such as
 * bert-base-cased). */
static int cmd_tokenize(const CliFlags *f)
{
    if (require(f->vocab, "--vocab", "tokenize"))
        return 2;
    if (f->n_pos == 0) {
        fprintf(stderr, "bertc tokenize: TEXT is required\n");
        return 2;
    }
    int32_t max_len = 0;
    BertcError err;
    if (f->max_len && cli_parse_max_len(f->max_len, &max_len, &err) != 0) {
        fprintf(stderr, "bertc tokenize: %s\n", err.msg);
        return 2;
    }
    const char *a = f->pos[0], *b = f->n_pos > 1 ? f->pos[1] : NULL;
    Arena *arena = bertc_arena_create("tokenize", 1 << 20);
    Tokenizer t;
    Encoding e;
    int rc = bertc_tokenizer_load(&t, arena, f->vocab, &err);
    t.do_lower_case = !f->cased;
    if (rc == 0)
        rc = bertc_tokenizer_encode(&t, arena, a, strlen(a), b, b ? strlen(b) : 0, max_len,
                              max_len > 0, &e, &err);
    if (rc == 0)
        print_encoding(&t, &e);
    bertc_arena_destroy(arena);
    return rc == 0 ? 0 : fail(&err);
}

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
    char marker[1200];
    snprintf(marker, sizeof marker, "%s/data/topics.tsv", root);
    return access(marker, R_OK) == 0;
}

/* Where `bertc train` finds the example programs and the directory holding
 * their data/, from the directory `dir` of the bertc binary:
 *   build tree  BUILD/bertc, BUILD/examples/NAME, data/ in the source tree
 *               above BUILD (BUILD may be nested: build/x), found by its
 *               data/topics.tsv a few levels up;
 *   installed   PREFIX/bin/bertc, PREFIX/libexec/bertc/examples/NAME,
 *               PREFIX/share/bertc/data/.
 * data_root is left empty when no data/ is found (the example then says so). */
static void train_layout(const char *dir, char *examples, size_t ex_len, char *data_root,
                         size_t root_len)
{
    char up[1024];
    snprintf(up, sizeof up, "%s", dir);
    data_root[0] = '\0';
    snprintf(examples, ex_len, "%s/examples", dir);
    if (access(examples, X_OK) == 0) {
        for (int level = 0; level < 4; level++) {
            if (has_data(up)) {
                snprintf(data_root, root_len, "%s", up);
                return;
            }
            if (!parent_dir(up))
                return;
        }
        return;
    }
    if (!parent_dir(up))
        return;
    snprintf(examples, ex_len, "%s/libexec/bertc/examples", up);
    snprintf(data_root, root_len, "%s/share/bertc", up);
    if (!has_data(data_root))
        data_root[0] = '\0';
}

/* bertc train NAME [flags]: run the example program NAME with the flags
 * passed on (see zoo/train.h), its data found through BERTC_DATA_DIR, which
 * is set to the data next to bertc unless the user set it. */
static int cmd_train(int argc, char **argv)
{
    char dir[1024], examples[1100], data_root[1100], path[1400];
    own_dir(argv[0], dir, sizeof dir);
    train_layout(dir, examples, sizeof examples, data_root, sizeof data_root);
    if (argc < 3) {
        fprintf(stderr, "usage: bertc train NAME [--steps N] [--out DIR] [--resume] ...");
        list_examples(examples);
        return 2;
    }
    int n = snprintf(path, sizeof path, "%s/%s", examples, argv[2]);
    if (n < 0 || (size_t)n >= sizeof path || !is_example(argv[2], path)) {
        char shown[CLI_SHOWN];
        fprintf(stderr, "bertc train: no example '%s' in %s", cli_shown(argv[2], shown),
                examples);
        list_examples(examples);
        return 2;
    }
    if (data_root[0] && setenv("BERTC_DATA_DIR", data_root, 0) != 0) {
        fprintf(stderr, "bertc train: cannot set BERTC_DATA_DIR\n");
        return 1;
    }
    argv[2] = path;
    execv(path, argv + 2);
    fprintf(stderr, "bertc train: cannot run %s\n", path);
    return 1;
}

static int run_command(int argc, char **argv)
{
    if (argc < 2)
        return usage();
    BertcError err;
    if (bertc_check_env(&err) != 0) {   /* the examples make the same check */
        fprintf(stderr, "bertc: %s\n", err.msg);
        return 2;
    }
    if (!strcmp(argv[1], "train"))
        return cmd_train(argc, argv);
    if (!strcmp(argv[1], "attention"))
        return cmd_attention(argc - 1, argv + 1);
    if (!strcmp(argv[1], "finetune"))
        return cmd_finetune(argc - 1, argv + 1);
    CliFlags f;
    if (cli_parse_flags(argc - 2, argv + 2, &f, &err) != 0) {
        fprintf(stderr, "bertc: %s\n", err.msg);
        return 2;
    }
    const char *cmd = argv[1];
    char shown[CLI_SHOWN], cmd_shown[CLI_SHOWN];
    if (!strcmp(cmd, "tokenize"))
        return cmd_tokenize(&f);
    if (f.n_pos > 0) {
        fprintf(stderr, "bertc %s: unexpected argument '%s'\n", cli_shown(cmd, cmd_shown),
                cli_shown(f.pos[0], shown));
        return 2;
    }
    if (!strcmp(cmd, "run"))
        return cmd_run(&f);
    if (!strcmp(cmd, "init"))
        return cmd_init(&f);
    if (!strcmp(cmd, "summary"))
        return cmd_summary(&f);
    fprintf(stderr, "bertc: unknown command '%s' (run bertc alone for the list)\n",
            cli_shown(cmd, shown));
    return 2;
}

/* The command runs under bertc_try: the library's entry points catch what
 * they meet on user input themselves; this catches anything else, so that
 * bertc ends with one line and status 1, never an abort. */
typedef struct Command {
    int argc;
    char **argv;
    int status;
} Command;

static int run_guarded(void *ctx, BertcError *err)
{
    (void)err;
    Command *c = ctx;
    c->status = run_command(c->argc, c->argv);
    return 0;
}

int main(int argc, char **argv)
{
    Command c = {argc, argv, 0};
    BertcError err;
    /* a file-size limit (ulimit -f) reached while writing is a failed write
     * (EFBIG, one line), not SIGXFSZ's kill */
    signal(SIGXFSZ, SIG_IGN);
    if (bertc_try(run_guarded, &c, &err) != 0) {
        fprintf(stderr, "bertc: %s\n", err.msg);
        return 1;
    }
    return c.status;
}
