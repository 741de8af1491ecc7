/* cli/flags.c — the flags of `bertc run`, `init`, `summary` and `tokenize`
 * (cli/cli.h). Nothing here prints or exits: errors are one line in err. */
#include "cli/cli.h"

#include <stdlib.h>
#include <string.h>

static int add_positional(CliFlags *f, const char *a, BertcError *err)
{
    if (f->n_pos == 2)
        return bertc_errorf(err, "unexpected argument '%.200s' (at most TEXT and TEXT_PAIR)", a);
    f->pos[f->n_pos++] = a;
    return 0;
}

/* The slot of a flag that takes a value, or NULL. */
static const char **value_slot(CliFlags *f, const char *a)
{
    return !strcmp(a, "--config")    ? &f->config
           : !strcmp(a, "--weights") ? &f->weights
           : !strcmp(a, "--inputs")  ? &f->inputs
           : !strcmp(a, "--output")  ? &f->output
           : !strcmp(a, "--seed")    ? &f->seed
           : !strcmp(a, "--threads") ? &f->threads
           : !strcmp(a, "--vocab")   ? &f->vocab
           : !strcmp(a, "--max-len") ? &f->max_len
                                     : NULL;
}

static bool *switch_slot(CliFlags *f, const char *a)
{
    return !strcmp(a, "--grad")    ? &f->grad
           : !strcmp(a, "--stats") ? &f->stats
           : !strcmp(a, "--cased") ? &f->cased
                                   : NULL;
}

int cli_parse_flags(int argc, char **argv, CliFlags *f, BertcError *err)
{
    memset(f, 0, sizeof *f);
    bool options = true;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!options || strncmp(a, "--", 2) != 0) {
            if (add_positional(f, a, err) != 0)
                return -1;
            continue;
        }
        if (!strcmp(a, "--")) {
            options = false;
            continue;
        }
        const char **slot = value_slot(f, a);
        bool *on = switch_slot(f, a);
        if (slot && i + 1 >= argc)
            return bertc_errorf(err, "%s needs a value", a);
        if (slot)
            *slot = argv[++i];
        else if (on)
            *on = true;
        else
            return bertc_errorf(err, "unknown option '%.200s'", a);
    }
    return 0;
}

/* A whole number in [lo, hi] (no sign games, no trailing text). */
static bool whole_number(const char *s, long lo, long hi, long *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

int cli_parse_threads(const char *value, int *n, BertcError *err)
{
    if (!threads_parse_count(value, n))
        return bertc_errorf(err, "--threads needs a count from 1 to %d, got '%.200s'",
                            THREADS_MAX, value);
    return 0;
}

int cli_parse_max_len(const char *value, int32_t *n, BertcError *err)
{
    long v;
    if (!whole_number(value, 1, CLI_MAX_LEN, &v))
        return bertc_errorf(err, "--max-len needs a count from 1 to %ld, got '%.200s'",
                            CLI_MAX_LEN, value);
    *n = (int32_t)v;
    return 0;
}
