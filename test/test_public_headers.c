/* test/test_public_headers.c — what a program sees when it includes bertc.h:
 * every public header (the Makefile's PUBLIC_HEADERS, which `make install`
 * copies) and no private one; each compiles on its own under
 * -std=c11 -pedantic -Wall -Wextra -Werror, hosted and FREESTANDING; and none
 * of them redefines a standard name (snprintf, vsnprintf, PRId64, ...): the
 * macros of those names are exactly the ones <stdio.h> and <inttypes.h>
 * define. The compiler is the build's own (BERTC_CC). */
#include "test/test_util.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

TestSuite(public_headers);

/* The two ways a header is compiled: for a hosted program, for bare metal. */
static const char *const modes[] = {"", "-DBERTC_FREESTANDING"};
#define MODE_NAME(m) (modes[m][0] ? modes[m] : "(hosted)")

/* words holds space-separated words; is word one of them? */
static bool has_word(const char *words, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = strstr(words, word); p; p = strstr(p + 1, word))
        if ((p == words || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
            return true;
    return false;
}

/* `cc -MM bertc.h`: the project headers bertc.h reaches, into deps. */
static void bertc_h_dependencies(const char *mode, char *deps, size_t cap)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s -std=c11 -I. %s -MM bertc.h", BERTC_CC, mode);
    cr_assert_eq(test_shell(cmd, TEST_STDOUT_AND_STDERR, deps, cap), 0,
                 "%s failed:\n%s", cmd, deps);
}

Test(public_headers, bertc_h_includes_exactly_the_public_headers)
{
    for (size_t m = 0; m < sizeof modes / sizeof *modes; m++) {
        char deps[8192];
        bertc_h_dependencies(modes[m], deps, sizeof deps);
        char reached[8192];
        snprintf(reached, sizeof reached, "%s", deps);
        for (char *p = reached; *p; p++)
            if (*p == '\\' || *p == '\n')
                *p = ' ';
        for (char *t = strtok(deps, " \\\n"); t; t = strtok(NULL, " \\\n")) {
            size_t n = strlen(t);
            if (n > 2 && strcmp(t + n - 2, ".h") == 0)
                cr_expect(has_word(BERTC_PUBLIC_HEADERS, t),
                          "bertc.h %s reaches %s, which is not in the Makefile's PUBLIC_HEADERS "
                          "(a public header includes a private one, which make install "
                          "leaves behind)", MODE_NAME(m), t);
        }
        char list[] = BERTC_PUBLIC_HEADERS;
        for (char *h = strtok(list, " "); h; h = strtok(NULL, " "))
            cr_expect(strcmp(h, "bertc.h") == 0 || has_word(reached, h),
                      "bertc.h %s does not include the public header %s", MODE_NAME(m), h);
    }
}

Test(public_headers, each_compiles_alone_pedantic_without_redefining_snprintf)
{
    char list[] = BERTC_PUBLIC_HEADERS;
    for (char *h = strtok(list, " "); h; h = strtok(NULL, " "))
        for (size_t m = 0; m < sizeof modes / sizeof *modes; m++) {
            char cmd[1024], log[4096];
            snprintf(cmd, sizeof cmd,
                     "printf '#include \"%s\"\\n"
                     "#if defined(snprintf) || defined(vsnprintf)\\n"
                     "#error it defines snprintf or vsnprintf as a macro\\n#endif\\n' | "
                     "%s -std=c11 -pedantic -Wall -Wextra -Werror -I. %s -fsyntax-only -x c -",
                     h, BERTC_CC, modes[m]);
            cr_expect_eq(test_shell(cmd, TEST_STDOUT_AND_STDERR, log, sizeof log), 0,
                         "a file that includes only %s (%s) does not compile cleanly:\n%s", h,
                         MODE_NAME(m), log);
        }
}

/* The macros named like printf-family functions or <inttypes.h> formats
 * that a translation unit with `includes` defines, sorted, into path. */
static void standard_macros(const char *includes, const char *mode, const char *path)
{
    char cmd[1024], log[4096];
    snprintf(cmd, sizeof cmd,
             "printf '%s' | %s -std=c11 -I. %s -E -dM -x c - | "
             "grep -E '^#define ((PRI|SCN)[a-zA-Z0-9]+|v?[sfd]?n?printf|v?s?n?scanf) ' | "
             "sort -o %s",
             includes, BERTC_CC, mode, path);
    cr_assert_eq(test_shell(cmd, TEST_STDERR, log, sizeof log), 0, "%s failed:\n%s", cmd, log);
}

Test(public_headers, bertc_h_leaves_standard_macros_alone)
{
    for (size_t m = 0; m < sizeof modes / sizeof *modes; m++) {
        char ours[128], sys[128], cmd[512], diff[8192];
        snprintf(ours, sizeof ours, "/tmp/bertc_macros_%d_bertc", (int)getpid());
        snprintf(sys, sizeof sys, "/tmp/bertc_macros_%d_system", (int)getpid());
        standard_macros("#include \"bertc.h\"\\n", modes[m], ours);
        standard_macros("#include <stdio.h>\\n#include <inttypes.h>\\n", modes[m], sys);
        char text[8192];
        test_read_text(sys, text, sizeof text);
        cr_assert(strstr(text, "#define PRId64 ") != NULL,
                  "the macros of <inttypes.h> alone (%s) do not list PRId64:\n%s", sys, text);
        snprintf(cmd, sizeof cmd, "diff %s %s", sys, ours);
        int rc = test_shell(cmd, TEST_STDOUT_AND_STDERR, diff, sizeof diff);
        remove(ours);
        remove(sys);
        cr_expect_eq(rc, 0, "bertc.h (%s) changes standard macros (< system headers alone, "
                     "> with bertc.h):\n%s", MODE_NAME(m), diff);
    }
}
