/* cli/options.c — one flag parser for every `bertc` command, driven by the
 * command's table of options (cli/cli.h, CliCommand): `--flag value` and
 * `--flag=value`, switches, `--` before positional arguments that start
 * with "--", `--help`; and the help text printed from the same table, so
 * what --help says is what the parser takes. */
#include "cli/cli.h"

#include <stdio.h>
#include <string.h>

static int find_option(const CliCommand *c, const char *name, size_t len)
{
    for (int i = 0; i < c->n_options; i++)
        if (strlen(c->options[i].name) == len && strncmp(c->options[i].name, name, len) == 0)
            return i;
    return -1;
}

/* "--thread": did the user mean --threads? The option that starts with
 * what was typed, or that what was typed starts with. */
static const char *nearest(const CliCommand *c, const char *typed, size_t len)
{
    for (int i = 0; i < c->n_options; i++) {
        size_t n = strlen(c->options[i].name);
        if (strncmp(c->options[i].name, typed, n < len ? n : len) == 0)
            return c->options[i].name;
    }
    return NULL;
}

static int unknown(const CliCommand *c, const char *arg, size_t len, BertcError *err)
{
    char shown[BERTC_SHOWN], typed[BERTC_SHOWN];
    snprintf(typed, sizeof typed, "%.*s", (int)(len < BERTC_SHOWN - 1 ? len : BERTC_SHOWN - 1), arg);
    const char *near = nearest(c, arg, len);
    if (near)
        return bertc_errorf(err, "unknown option '%s' (did you mean %s? see bertc %s --help)",
                            bertc_shown(typed, shown), near, c->name);
    return bertc_errorf(err, "unknown option '%s' (see bertc %s --help)",
                        bertc_shown(typed, shown), c->name);
}

static int positional(const CliCommand *c, CliArgs *a, const char *arg, BertcError *err)
{
    char shown[BERTC_SHOWN];
    if (a->n_pos >= c->max_positional || a->n_pos >= CLI_MAX_POSITIONAL)
        return bertc_errorf(err, "unexpected argument '%s' (bertc %s takes %s)",
                            bertc_shown(arg, shown), c->name,
                            c->positional ? c->positional : "no arguments");
    a->pos[a->n_pos++] = arg;
    return 0;
}

/* A path option's value (its placeholder "DIR"; "FILE", "PATH", "CORPUS" or
 * a file name such as "C.json") too long to be a path is refused here,
 * naming the flag, before anything is read or written: a directory must
 * leave room for the files put in it (bertc_path_check_dir). */
static int check_path(const CliOption *o, const char *value, BertcError *err)
{
    const char *arg = o->arg;
    if (!strcmp(arg, "DIR"))
        return bertc_path_check_dir(value, o->name, err);
    if (!strcmp(arg, "FILE") || !strcmp(arg, "PATH") || !strcmp(arg, "CORPUS") ||
        strchr(arg, '.'))
        return bertc_path_check(value, o->name, err);
    return 0;
}

/* One "--name" or "--name=value" at argv[*i]. */
static int option(const CliCommand *c, CliArgs *a, int argc, char **argv, int *i,
                  BertcError *err)
{
    const char *arg = argv[*i], *eq = strchr(arg, '=');
    size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
    int k = find_option(c, arg, len);
    if (k < 0)
        return unknown(c, arg, len, err);
    const CliOption *o = &c->options[k];
    if (a->values[k])
        return bertc_errorf(err, "%s is given twice", o->name);
    if (!o->arg) {   /* a switch */
        if (eq)
            return bertc_errorf(err, "%s takes no value (got '%s')", o->name, eq + 1);
        a->values[k] = "1";
        return 0;
    }
    if (eq) {
        a->values[k] = eq + 1;
    } else if (*i + 1 >= argc) {
        return bertc_errorf(err, "%s needs a value (%s)", o->name, o->arg);
    } else {
        a->values[k] = argv[++*i];
    }
    return check_path(o, a->values[k], err);
}

int cli_parse(const CliCommand *c, int argc, char **argv, CliArgs *a, BertcError *err)
{
    memset(a, 0, sizeof *a);
    if (c->n_options > CLI_MAX_OPTIONS)
        return bertc_errorf(err, "bertc %s has more than %d options", c->name, CLI_MAX_OPTIONS);
    bool options = true;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (options && strcmp(arg, "--") == 0) {
            options = false;
        } else if (options && (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0)) {
            a->help = true;
        } else if (options && strncmp(arg, "--", 2) == 0) {
            if (option(c, a, argc, argv, &i, err) != 0)
                return -1;
        } else if (positional(c, a, arg, err) != 0) {
            return -1;
        }
    }
    return 0;
}

const char *cli_value(const CliCommand *c, const CliArgs *a, const char *name)
{
    int k = find_option(c, name, strlen(name));
    if (k < 0)
        return NULL;
    return a->values[k] ? a->values[k] : c->options[k].def;
}

bool cli_given(const CliCommand *c, const CliArgs *a, const char *name)
{
    int k = find_option(c, name, strlen(name));
    return k >= 0 && a->values[k] != NULL;
}

void cli_print_help(const CliCommand *c, FILE *out)
{
    fprintf(out, "bertc %s — %s\n\nusage: bertc %s %s\n", c->name, c->summary, c->name,
            c->usage);
    if (c->description)
        fprintf(out, "\n%s\n", c->description);
    if (c->n_options)
        fprintf(out, "\noptions (--flag value or --flag=value):\n");
    for (int i = 0; i < c->n_options; i++) {
        const CliOption *o = &c->options[i];
        char left[64];
        snprintf(left, sizeof left, "%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
        fprintf(out, "  %-24s %s", left, o->help);
        if (o->def)
            fprintf(out, " [default: %s]", o->def);
        fprintf(out, "\n");
    }
    if (c->example)
        fprintf(out, "\nexample:\n  %s\n", c->example);
}
