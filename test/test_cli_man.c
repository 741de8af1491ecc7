/* test/test_cli_man.c — the manual page, docs/bertc.1, generated from the
 * command tables (cli/man.c, `bertc help --man`, `make man`): the committed
 * page is exactly what the tables give, so it cannot fall behind a new
 * command or flag; every command `bertc help` lists has its section, with
 * its usage, description and example; every flag that `bertc CMD --help`
 * prints is in that section with its argument, its help and its default,
 * read back from the troff; and groff renders the page without a warning. */
#include "test/test_util.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGE "docs/bertc.1"
#define BIG (1 << 20)

/* `bertc ARGS` (stdout alone, or with stderr) into a malloc'd buffer; the
 * exit code in *rc. */
static char *bertc_text(const char *args, bool with_stderr, int *rc)
{
    char cmd[1024];
    char *text = malloc(BIG);
    cr_assert(text);
    snprintf(cmd, sizeof cmd, "%s %s%s", BERTC_CLI, args, with_stderr ? "" : " 2>/dev/null");
    *rc = test_shell(cmd, TEST_STDOUT_AND_STDERR, text, BIG);
    return text;
}

static char *read_page(void)
{
    char *page = malloc(BIG);
    cr_assert(page);
    test_read_text(PAGE, page, BIG);
    cr_assert(page[0], "cannot read %s", PAGE);
    return page;
}

/* The line number (from 1) where a and b first differ, 0 if they do not. */
static int first_difference(const char *a, const char *b, const char **la, const char **lb)
{
    int line = 1;
    *la = a;
    *lb = b;
    for (; *a && *a == *b; a++, b++)
        if (*a == '\n') {
            line++;
            *la = a + 1;
            *lb = b + 1;
        }
    return *a == *b ? 0 : line;
}

Test(cli_man, the_committed_page_is_what_the_tables_give)
{
    int rc;
    char *generated = bertc_text("help --man", false, &rc), *page = read_page();
    cr_assert_eq(rc, 0, "bertc help --man failed");
    const char *la, *lb;
    int line = first_difference(page, generated, &la, &lb);
    cr_expect_eq(line, 0, "%s line %d is not what `bertc help --man` prints: run `make man` "
                 "and commit it\n  committed: %.*s\n  generated: %.*s", PAGE, line,
                 (int)strcspn(la, "\n"), la, (int)strcspn(lb, "\n"), lb);
    free(generated);
    generated = bertc_text("help --man run", true, &rc);
    cr_expect(rc == 2 && strstr(generated, "give no COMMAND") &&
              strchr(generated, '\n') == generated + strlen(generated) - 1,
              "help --man COMMAND: exit 2, one line; got %d: %s", rc, generated);
    free(generated);
    free(page);
}

/* ---- the page read back as text -------------------------------------------- */

/* A troff text line as it reads: font changes (\fB \fI \fR), \% and \&
 * dropped, \- as '-', \e as '\', \[uXXXX] as UTF-8. */
static void plain(const char *line, size_t n, char *out, size_t cap)
{
    size_t k = 0;
    for (size_t i = 0; i < n && k + 5 < cap;) {
        if (line[i] != '\\') {
            out[k++] = line[i++];
        } else if (line[i + 1] == 'f') {
            i += 3;
        } else if (line[i + 1] == '%' || line[i + 1] == '&') {
            i += 2;
        } else if (line[i + 1] == '-' || line[i + 1] == 'e') {
            out[k++] = line[i + 1] == '-' ? '-' : '\\';
            i += 2;
        } else if (line[i + 1] == '[' && line[i + 2] == 'u') {
            char *end;
            uint32_t cp = (uint32_t)strtoul(line + i + 3, &end, 16);
            k += (size_t)bertc_utf8_encode(cp, out + k);
            i = (size_t)(end - line) + 1;
        } else {
            cr_assert_fail("an escape the page should not hold: %.*s", (int)n, line);
        }
    }
    out[k] = '\0';
}

/* The section `.SS "bertc NAME"` of the page as plain text lines (macro
 * lines kept as they are), into out; false when there is none. */
static bool section(const char *page, const char *name, char *out, size_t cap)
{
    char head[96];
    snprintf(head, sizeof head, "\n.SS \"bertc %s\"\n", name);
    const char *s = strstr(page, head);
    if (!s)
        return false;
    s += strlen(head);
    size_t k = 0;
    out[0] = '\0';
    while (*s && strncmp(s, ".SS ", 4) != 0 && strncmp(s, ".SH ", 4) != 0) {
        size_t n = strcspn(s, "\n");
        plain(s, n, out + k, cap - k);
        k += strlen(out + k);
        cr_assert(k + 2 < cap);
        out[k++] = '\n';
        out[k] = '\0';
        s += n + (s[n] == '\n');
    }
    return true;
}

/* The line after the first line of sec that is exactly `line` ("" when it
 * is the last), else NULL. */
static const char *line_after(const char *sec, const char *line, char *next, size_t cap)
{
    size_t n = strlen(line);
    for (const char *s = sec; *s; s += strcspn(s, "\n") + 1) {
        if (strncmp(s, line, n) == 0 && s[n] == '\n') {
            const char *t = s + n + 1;
            snprintf(next, cap, "%.*s", (int)strcspn(t, "\n"), t);
            return next;
        }
        if (!s[strcspn(s, "\n")])
            break;
    }
    return NULL;
}

/* One option line of `bertc NAME --help` ("  --flag ARG   help [default: X]"),
 * found in the section as ".TP", "--flag ARG", "help [default: X]": the
 * two lines put back as --help prints them are the line itself. */
static void expect_option(const char *name, const char *sec, const char *help_line)
{
    char flag[64], tag[256], text[2048], *next = malloc(BIG);
    snprintf(flag, sizeof flag, "%.*s", (int)strcspn(help_line + 2, " "), help_line + 2);
    const char *s = sec;
    bool found = false;
    for (; (s = strstr(s, ".TP\n")); s += 4) {   /* the entry whose tag starts with flag */
        const char *t = s + 4;
        size_t n = strcspn(t, "\n"), f = strlen(flag);
        if (strncmp(t, flag, f) != 0 || (t[f] != ' ' && t[f] != '\n'))
            continue;
        snprintf(tag, sizeof tag, "%.*s", (int)n, t);
        cr_assert(line_after(t, tag, text, sizeof text), "bertc %s: %s has no help line", name,
                  flag);
        snprintf(next, BIG, "  %-24s %s", tag, text);
        found = true;
        break;
    }
    cr_expect(found, "the man page's bertc %s has no entry for %s (bertc %s --help: %s)", name,
              flag, name, help_line);
    if (found)
        cr_expect_str_eq(next, help_line, "bertc %s %s: the man page says\n%s\n--help says\n%s",
                         name, flag, next, help_line);
    free(next);
}

/* The line of text after `marker` ("example:\n  ") in help, else "". */
static void help_part(const char *help, const char *marker, char *out, size_t cap)
{
    const char *s = strstr(help, marker);
    out[0] = '\0';
    if (s)
        snprintf(out, cap, "%.*s", (int)strcspn(s + strlen(marker), "\n"), s + strlen(marker));
}

/* `bertc NAME --help` against its section: the usage, the description and
 * the example as lines of it, and every option line (expect_option). */
static int expect_command(const char *name, const char *sec, const char *help)
{
    char want[4096], got[4096], marker[64];
    snprintf(marker, sizeof marker, "usage: bertc %s ", name);
    help_part(help, marker, want, sizeof want);
    snprintf(marker, sizeof marker, ".B bertc %s", name);
    cr_expect(!want[0] || (line_after(sec, marker, got, sizeof got) && !strcmp(got, want)),
              "bertc %s: the page's usage is not --help's: %s", name, want);
    const char *desc = strstr(help, "\n\n");   /* after the title line */
    desc = desc ? strstr(desc + 2, "\n\n") : NULL;   /* after the usage */
    if (desc && strncmp(desc + 2, "options", 7) && strncmp(desc + 2, "example:", 8)) {
        snprintf(want, sizeof want, "\n%.*s\n", (int)strcspn(desc + 2, "\n"), desc + 2);
        cr_expect(strstr(sec, want), "bertc %s: the page lacks the description%s", name, want);
    }
    help_part(help, "\nexample:\n  ", want, sizeof want);
    cr_expect(want[0] && strstr(sec, want), "bertc %s: the page lacks the example '%s'", name,
              want);
    int flags = 0;
    for (const char *h = help; (h = strstr(h, "\n  --")); h++) {
        snprintf(want, sizeof want, "%.*s", (int)strcspn(h + 1, "\n"), h + 1);
        expect_option(name, sec, want);
        flags++;
    }
    return flags;
}

/* Every command `bertc help` lists ("  name  summary") against its own --help. */
Test(cli_man, every_flag_of_every_help_is_in_its_section)
{
    int rc;
    char *list = bertc_text("help", false, &rc), *page = read_page(), *sec = malloc(BIG);
    cr_assert_eq(rc, 0);
    int commands = 0, flags = 0;
    for (const char *s = list; (s = strstr(s, "\n  ")); s++) {
        char name[32], args[64];
        if (sscanf(s + 1, "  %31[a-z0-9-] ", name) != 1)
            continue;
        commands++;
        cr_assert(section(page, name, sec, BIG), "%s has no section for bertc %s", PAGE, name);
        snprintf(args, sizeof args, "%s --help", name);
        char *help = bertc_text(args, false, &rc);
        cr_assert_eq(rc, 0, "bertc %s", args);
        flags += expect_command(name, sec, help);
        free(help);
    }
    cr_expect_geq(commands, 17, "bertc help listed %d commands", commands);
    cr_expect_geq(flags, 100, "the --help pages listed %d flags", flags);
    free(sec);
    free(page);
    free(list);
}

Test(cli_man, groff_renders_the_page_without_a_warning)
{
    if (system("command -v groff >/dev/null 2>&1") != 0)
        cr_skip_test("no groff here (make install-check renders the page where there is)");
    char out[4096];
    int rc = test_shell("LC_ALL=C.UTF-8 groff -man -Tutf8 -ww -z " PAGE,
                        TEST_STDOUT_AND_STDERR, out, sizeof out);
    cr_expect(rc == 0 && !out[0], "groff on %s: exit %d, %s", PAGE, rc, out);
}
