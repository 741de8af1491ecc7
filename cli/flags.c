/* cli/flags.c — the flags of `bertc run`, `init`, `summary` and `tokenize`
 * (cli/cli.h). Nothing here prints or exits: errors are one line in err. */
#include "cli/cli.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>

const char *cli_shown(const char *arg, char buf[CLI_SHOWN])
{
    static const char hex[] = "0123456789abcdef";
    size_t n = 0;
    for (const unsigned char *s = (const unsigned char *)arg; *s && n + 5 < CLI_SHOWN; s++) {
        if (*s >= 0x20 && *s != 0x7f) {
            buf[n++] = (char)*s;
            continue;
        }
        buf[n++] = '\\';
        if (*s == '\n' || *s == '\t' || *s == '\r') {
            buf[n++] = *s == '\n' ? 'n' : *s == '\t' ? 't' : 'r';
        } else {
            buf[n++] = 'x';
            buf[n++] = hex[*s >> 4];
            buf[n++] = hex[*s & 15];
        }
    }
    buf[n] = '\0';
    return buf;
}

static int add_positional(CliFlags *f, const char *a, BertcError *err)
{
    char shown[CLI_SHOWN];
    if (f->n_pos == 2)
        return bertc_errorf(err, "unexpected argument '%s' (at most TEXT and TEXT_PAIR)",
                            cli_shown(a, shown));
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
        char shown[CLI_SHOWN];
        if (slot && i + 1 >= argc)
            return bertc_errorf(err, "%s needs a value", a);
        if (slot)
            *slot = argv[++i];
        else if (on)
            *on = true;
        else
            return bertc_errorf(err, "unknown option '%s'", cli_shown(a, shown));
    }
    return 0;
}

int cli_parse_threads(const char *value, int *n, BertcError *err)
{
    char shown[CLI_SHOWN];
    if (!bertc_threads_parse_count(value, n))
        return bertc_errorf(err, "--threads needs a count from 1 to %d, got '%s'",
                            THREADS_MAX, cli_shown(value, shown));
    return 0;
}

int cli_parse_max_len(const char *value, int32_t *n, BertcError *err)
{
    int64_t v;
    char shown[CLI_SHOWN];
    if (!bertc_parse_i64(value, 1, CLI_MAX_LEN, &v))
        return bertc_errorf(err, "--max-len needs a count from 1 to %ld, got '%s'",
                            CLI_MAX_LEN, cli_shown(value, shown));
    *n = (int32_t)v;
    return 0;
}

/* Same device and inode: the same file, whatever the spelling of its path. */
static bool same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

int cli_output_not_an_input(const char *output_flag, const char *output, int n,
                            const char *const *flags, const char *const *paths, BertcError *err)
{
    char shown[CLI_SHOWN];
    for (int i = 0; output && i < n; i++)
        if (paths[i] && (strcmp(paths[i], output) == 0 || same_file(paths[i], output)))
            return bertc_errorf(err, "%s '%s' is the file given to %s: writing it would replace "
                                "what the command reads; give another %s path", output_flag,
                                cli_shown(output, shown), flags[i], output_flag);
    return 0;
}
