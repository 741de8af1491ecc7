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

/* Hugging Face's names (transformers' TrainingArguments and run_*.py
 * scripts) for bertc's flags, so that a user coming from there is told
 * the name here. Suggested only where the command has the flag. */
static const char *const hf_names[][2] = {
    {"learning-rate", "--lr"},          {"per-device-train-batch-size", "--batch-size"},
    {"train-batch-size", "--batch-size"}, {"per-device-eval-batch-size", "--batch-size"},
    {"num-train-epochs", "--epochs"},   {"max-seq-length", "--max-len"},
    {"max-length", "--max-len"},        {"output-dir", "--out"},
    {"model-name-or-path", "--model"},  {"train-file", "--train"},
    {"validation-file", "--eval"},      {"eval-file", "--eval"},
    {"warmup-ratio", "--warmup"},       {"max-steps", "--steps"},
    {"num-threads", "--threads"},       {"eval-steps", "--eval-every"},
    {"save-steps", "--checkpoint-every"}, {"resume-from-checkpoint", "--resume"},
};

/* The optimal-string-alignment distance of a (la bytes) and b (lb): edits,
 * deletions, insertions and swaps of two neighbours ("modle" -> "model":
 * 1), for names up to 63 bytes (longer: "far"). */
#define NAME_MAX_LEN 63
static int edit_distance(const char *a, size_t la, const char *b, size_t lb)
{
    if (la > NAME_MAX_LEN || lb > NAME_MAX_LEN)
        return 1 << 20;
    int d[NAME_MAX_LEN + 1][NAME_MAX_LEN + 1];
    for (size_t i = 0; i <= la; i++)
        d[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            int cost = a[i - 1] != b[j - 1];
            int best = d[i - 1][j - 1] + cost;
            if (d[i - 1][j] + 1 < best)
                best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[la][lb];
}

/* "--thread": did the user mean --threads? In turn: the option that starts
 * with what was typed, or that what was typed starts with; Hugging Face's
 * name for one ("--learning_rate": --lr); the option within 1 edit (2 for
 * names of 6 letters or more) of what was typed, '_' read as '-'. */
static const char *nearest(const CliCommand *c, const char *typed, size_t len)
{
    for (int i = 0; i < c->n_options; i++) {
        size_t n = strlen(c->options[i].name);
        if (strncmp(c->options[i].name, typed, n < len ? n : len) == 0)
            return c->options[i].name;
    }
    char name[NAME_MAX_LEN + 1];   /* typed without its dashes, '_' as '-' */
    size_t skip = 0;
    while (skip < len && typed[skip] == '-')
        skip++;
    size_t n = len - skip < NAME_MAX_LEN ? len - skip : NAME_MAX_LEN;
    for (size_t i = 0; i < n; i++)
        name[i] = typed[skip + i] == '_' ? '-' : typed[skip + i];
    name[n] = '\0';
    for (size_t k = 0; k < sizeof hf_names / sizeof hf_names[0]; k++)
        if (strcmp(name, hf_names[k][0]) == 0 &&
            find_option(c, hf_names[k][1], strlen(hf_names[k][1])) >= 0)
            return hf_names[k][1];
    const char *best = NULL;
    int best_d = n >= 6 ? 2 : 1;
    for (int i = 0; i < c->n_options; i++) {
        const char *o = c->options[i].name + 2;   /* past "--" */
        int d = edit_distance(name, n, o, strlen(o));
        if (d <= best_d && d < (int)n && (!best || d < best_d)) {
            best = c->options[i].name;
            best_d = d;
        }
    }
    return best;
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
