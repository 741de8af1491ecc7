/* cli/bertc.c — the `bertc` command (SPEC §5). Each subcommand parses its
 * flags and calls the library; errors are one line on stderr and a non-zero
 * exit status. */
#include "zoo/zoo.h"

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
            "  summary  --config C.json\n");
    return 2;
}

/* --name value pairs and --flag switches. */
typedef struct Flags {
    const char *config, *weights, *inputs, *output, *seed, *threads;
    bool grad, stats;
} Flags;

static int parse_flags(int argc, char **argv, Flags *f)
{
    memset(f, 0, sizeof *f);
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const char **slot = !strcmp(a, "--config")    ? &f->config
                            : !strcmp(a, "--weights") ? &f->weights
                            : !strcmp(a, "--inputs")  ? &f->inputs
                            : !strcmp(a, "--output")  ? &f->output
                            : !strcmp(a, "--seed")    ? &f->seed
                            : !strcmp(a, "--threads") ? &f->threads
                                                      : NULL;
        if (slot) {
            if (i + 1 >= argc) {
                fprintf(stderr, "bertc: %s needs a value\n", a);
                return -1;
            }
            *slot = argv[++i];
        } else if (!strcmp(a, "--grad")) {
            f->grad = true;
        } else if (!strcmp(a, "--stats")) {
            f->stats = true;
        } else {
            fprintf(stderr, "bertc: unknown option '%s'\n", a);
            return -1;
        }
    }
    return 0;
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
    if (!value)
        return 0;
    char *end;
    long n = strtol(value, &end, 10);
    if (*end || n < 1 || n > 1024) {
        fprintf(stderr, "bertc: --threads needs a count from 1 to 1024, got '%s'\n", value);
        return -1;
    }
    threads_set_count((int)n);
    return 0;
}

static int cmd_run(const Flags *f)
{
    if (require(f->config, "--config", "run") || require(f->weights, "--weights", "run") ||
        require(f->inputs, "--inputs", "run") || require(f->output, "--output", "run") ||
        set_threads(f->threads))
        return 2;
    RunArgs args = {f->config, f->weights, f->inputs, f->output, f->grad, f->stats};
    BertcError err;
    return zoo_run(&args, &err) == 0 ? 0 : fail(&err);
}

static int cmd_init(const Flags *f)
{
    if (require(f->config, "--config", "init") || require(f->output, "--output", "init"))
        return 2;
    uint64_t seed = 0;
    if (f->seed) {
        char *end;
        seed = strtoull(f->seed, &end, 10);
        if (*end || f->seed[0] == '-') {
            fprintf(stderr, "bertc init: --seed needs a non-negative integer, got '%s'\n",
                    f->seed);
            return 2;
        }
    }
    BertConfig cfg;
    BertcError err;
    if (bert_config_read(f->config, &cfg, &err) != 0)
        return fail(&err);
    Arena *arena = arena_create("params", 1 << 20);
    Model m;
    int rc = model_build(&m, arena, &cfg, &err);
    if (rc == 0) {
        Rng rng = rng_seed(seed);
        registry_init_weights(m.reg, &rng, cfg.initializer_range);
        rc = registry_save_file(m.reg, f->output, &err);
    }
    arena_destroy(arena);
    return rc == 0 ? 0 : fail(&err);
}

static int cmd_summary(const Flags *f)
{
    if (require(f->config, "--config", "summary"))
        return 2;
    BertConfig cfg;
    BertcError err;
    if (bert_config_read(f->config, &cfg, &err) != 0)
        return fail(&err);
    Arena *arena = arena_create("params", 1 << 20);
    Model m;
    int rc = model_build(&m, arena, &cfg, &err);
    if (rc == 0)
        registry_print(m.reg, stdout);
    arena_destroy(arena);
    return rc == 0 ? 0 : fail(&err);
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return usage();
    Flags f;
    if (parse_flags(argc - 2, argv + 2, &f) != 0)
        return 2;
    const char *cmd = argv[1];
    if (!strcmp(cmd, "run"))
        return cmd_run(&f);
    if (!strcmp(cmd, "init"))
        return cmd_init(&f);
    if (!strcmp(cmd, "summary"))
        return cmd_summary(&f);
    fprintf(stderr, "bertc: unknown command '%s'\n", cmd);
    return usage();
}
