/* cli/flags.c — what several commands share (cli/cli.h): their start (parse,
 * --help), the values of --threads and --max-len, --model DIR or
 * --config/--weights/--vocab, and one-line arguments in messages. Apart from
 * cli_start, cli_required and cli_fail nothing here prints: errors are one
 * line in err. */
#include "cli/cli.h"
#include "zoo/train/train.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cli_json_string(FILE *f, const char *s, size_t len)
{
    size_t n = bertc_json_quote(NULL, 0, s, len);
    char small[256];
    char *buf = n < sizeof small ? small : malloc(n + 1);
    if (!buf) {   /* out of memory: the text is left out, the line stays JSON */
        fputs("null", f);
        return;
    }
    bertc_json_quote(buf, n + 1, s, len);
    fputs(buf, f);
    if (buf != small)
        free(buf);
}

int cli_parse_threads(const char *value, int *n, BertcError *err)
{
    char shown[BERTC_SHOWN];
    if (!bertc_threads_parse_count(value, n))
        return bertc_errorf(err, "--threads needs a count from 1 to %d, got '%s'",
                            THREADS_MAX, bertc_shown(value, shown));
    return 0;
}

int cli_parse_max_len(const char *value, int32_t *n, BertcError *err)
{
    int64_t v;
    char shown[BERTC_SHOWN];
    if (!bertc_parse_i64(value, 1, CLI_MAX_LEN, &v))
        return bertc_errorf(err, "--max-len needs a count from 1 to %ld, got '%s'",
                            CLI_MAX_LEN, bertc_shown(value, shown));
    *n = (int32_t)v;
    return 0;
}

int cli_output_not_an_input(const char *output_flag, const char *output, int n,
                            const char *const *flags, const char *const *paths, BertcError *err)
{
    char shown[BERTC_SHOWN];
    for (int i = 0; output && i < n; i++)
        if (paths[i] && (strcmp(paths[i], output) == 0 || bertc_same_file(paths[i], output)))
            return bertc_errorf(err, "%s '%s' is the file given to %s: writing it would replace "
                                "what the command reads; give another %s path", output_flag,
                                bertc_shown(output, shown), flags[i], output_flag);
    return 0;
}

int cli_start(const CliCommand *c, int argc, char **argv, CliArgs *a)
{
    BertcError err;
    if (cli_parse(c, argc, argv, a, &err) != 0) {
        fprintf(stderr, "bertc %s: %s\n", c->name, err.msg);
        return 2;
    }
    if (a->help) {
        cli_print_help(c, stdout);
        return 0;
    }
    return -1;
}

int cli_required(const CliCommand *c, const char *flag)
{
    fprintf(stderr, "bertc %s: %s is required (see bertc %s --help)\n", c->name, flag, c->name);
    return 2;
}

int cli_fail(const BertcError *err)
{
    fprintf(stderr, "bertc: %s\n", err->msg);
    return 1;
}

/* --model with one of the flags it replaces: an error naming both. */
static int not_both(const CliCommand *c, const CliArgs *a, const char *flag, BertcError *err)
{
    if (cli_given(c, a, "--model") && cli_given(c, a, flag))
        return bertc_errorf(err, "--model and %s both name the model: give --model DIR or %s, "
                            "not both", flag, flag);
    return 0;
}

int cli_model_files(const CliCommand *c, const CliArgs *a, CliModelFiles *f, BertcError *err)
{
    memset(f, 0, sizeof *f);
    if (not_both(c, a, "--config", err) != 0 || not_both(c, a, "--weights", err) != 0)
        return -1;
    f->dir = cli_given(c, a, "--model") ? cli_value(c, a, "--model") : NULL;
    if (!f->dir) {
        f->config = cli_value(c, a, "--config");
        f->weights = cli_value(c, a, "--weights");
        if (!f->config)
            return bertc_errorf(err, "--model DIR or --config C.json is required (see bertc %s "
                                "--help)", c->name);
        return 0;
    }
    if (bertc_path_join(f->config_buf, f->dir, "config.json", "--model", err) != 0 ||
        bertc_path_join(f->weights_buf, f->dir, "model.safetensors", "--model", err) != 0)
        return -1;
    f->config = f->config_buf;
    f->weights = f->weights_buf;
    return 0;
}

/* --config C.json [--weights W]: built, and loaded when weights are given. */
static int open_files(const CliModelFiles *f, Arena *arena, Model *m, BertcError *err)
{
    if (f->weights)
        return bertc_model_open(m, arena, f->config, f->weights, err);
    BertConfig cfg;
    if (bertc_bert_config_read(f->config, &cfg, err) != 0)
        return -1;
    int rc = bertc_model_build(m, arena, &cfg, err);
    bertc_bert_config_free(&cfg);
    if (rc != 0)
        bertc_model_config_error(err, f->config);
    return rc;
}

/* t's positions (max_position_embeddings of config) and its default limit:
 * model_max_length of DIR/tokenizer_config.json when it is below them
 * (0: none), else the positions. */
static void set_limits(CliTextModel *t, const char *config, const char *dir,
                       int32_t model_max_length, Arena *arena)
{
    size_t n = strlen(config) + 1;
    char *config_copy = memcpy(bertc_arena_alloc(arena, n), config, n);
    t->positions = (MaxLen){.n = t->model->cfg.max_position_embeddings,
                               .key = "max_position_embeddings", .file = config_copy};
    t->max_len = t->positions;
    if (dir && model_max_length > 0 && model_max_length < t->positions.n) {
        static const char name[] = "/tokenizer_config.json";
        char *file = bertc_arena_alloc(arena, strlen(dir) + sizeof name);
        strcpy(file, dir);
        strcat(file, name);
        t->max_len = (MaxLen){.n = model_max_length, .key = "model_max_length", .file = file};
    }
}

int cli_open_text_model(const CliCommand *c, const CliArgs *a, bool need_weights, Arena *arena,
                        CliTextModel *t, BertcError *err)
{
    CliModelFiles f;
    char shown[BERTC_SHOWN];
    memset(t, 0, sizeof *t);
    if (cli_model_files(c, a, &f, err) != 0)
        return -1;
    const char *vocab = cli_value(c, a, "--vocab");
    if (!f.dir) {
        if (need_weights && !f.weights)
            return bertc_errorf(err, "--weights is required with --config (see bertc %s --help)",
                                c->name);
        if (!vocab)
            return bertc_errorf(err, "--vocab is required with --config (see bertc %s --help)",
                                c->name);
        t->model = bertc_arena_alloc(arena, sizeof *t->model);
        t->tok = bertc_arena_alloc(arena, sizeof *t->tok);
        if (open_files(&f, arena, t->model, err) != 0 ||
            bertc_tokenizer_load(t->tok, arena, vocab, err) != 0)
            return -1;
        set_limits(t, f.config, NULL, 0, arena);
        return 0;
    }
    ModelDir *d = bertc_arena_alloc(arena, sizeof *d);
    if (bertc_model_dir_open(d, arena, f.dir, err) != 0)
        return -1;
    if (need_weights && !d->has_weights)
        return bertc_errorf(err, "%s: no model.safetensors: bertc %s needs trained weights",
                            bertc_shown(f.dir, shown), c->name);
    t->model = &d->model;
    t->tok = &d->tok;
    set_limits(t, f.config, f.dir, d->model_max_length, arena);
    if (vocab) {
        t->tok = bertc_arena_alloc(arena, sizeof *t->tok);
        return bertc_tokenizer_load(t->tok, arena, vocab, err);
    }
    if (!d->has_tokenizer)
        return bertc_errorf(err, "%s: no vocab.txt: give --vocab V.txt", bertc_shown(f.dir, shown));
    return 0;
}

int cli_apply_threads(const CliCommand *c, const CliArgs *a, BertcError *err)
{
    int n;
    if (!cli_given(c, a, "--threads"))
        return 0;
    if (cli_parse_threads(cli_value(c, a, "--threads"), &n, err) != 0)
        return -1;
    bertc_threads_set_count(n);
    return 0;
}

bool cli_apply_bf16(const CliCommand *c, const CliArgs *a)
{
    if (!cli_given(c, a, "--bf16"))
        return false;
    if (bertc_bgemm_isa() != BGEMM_ISA_SCALAR)
        return true;
    fprintf(stderr, "bertc %s: --bf16: this CPU has no bf16 instructions (AVX512_BF16, "
                    "AMX-BF16 or Arm BF16); training in float32\n", c->name);
    return false;
}

void cli_report_stop_after(const TrainResult *res, int64_t steps, const char *dir)
{
    printf("stopped after step %lld", (long long)res->steps_done);
    if (steps > res->steps_done)
        printf(" of %lld", (long long)steps);
    if (res->checkpoint_step > 0)
        printf(" (--stop-after); the checkpoint in %s holds step %lld: --resume continues "
               "from there\n", dir, (long long)res->checkpoint_step);
    else
        printf(" (--stop-after) before the first checkpoint (one is written at each "
               "evaluation, --eval-every): nothing in %s to resume from yet\n", dir);
}

int cli_train_failed(const TrainResult *res)
{
    int sig = bertc_train_stop_signal() ? bertc_train_stop_signal() : res->interrupted;
    return sig ? 128 + sig : 1;
}
