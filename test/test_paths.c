/* test/test_paths.c — long paths: an error message that holds one keeps its
 * reason (the path is shortened in its middle, never the message at its
 * end); bertc_path_join builds dir/name whole or refuses naming what gave
 * the path; and the CLI writes and reads the right files under a directory
 * path far longer than 1,024 bytes (nested 200-byte components), and
 * refuses one longer than PATH_MAX naming its flag. */
#include "test/test_util.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A path of n bytes: "/tmp/" then 'a's, a '/' every 200 bytes. */
static char *long_path(size_t n)
{
    char *p = malloc(n + 1);
    cr_assert(p);
    memcpy(p, "/tmp/", 5);
    for (size_t i = 5; i < n; i++)
        p[i] = (i - 5) % 201 == 200 ? '/' : 'a';
    p[n] = '\0';
    return p;
}

/* ---- error messages ---------------------------------------------------- */

Test(errors, a_long_path_is_shortened_in_its_middle_and_the_reason_survives)
{
    char *path = long_path(3000);
    BertcError err;
    bertc_errorf(&err, "%s: not a model directory (%s)", path, "No such file or directory");
    size_t n = strlen(err.msg);
    cr_assert_lt(n, sizeof err.msg);
    cr_assert(strstr(err.msg, ": not a model directory (No such file or directory)"),
              "the reason was cut: %s", err.msg);
    cr_assert_eq(strncmp(err.msg, "/tmp/aaaa", 9), 0, "the path's start is gone: %s", err.msg);
    cr_assert(strstr(err.msg, "..."), "no mark where the path was shortened: %s", err.msg);
    cr_assert_gt(n, sizeof err.msg - 8, "shortened more than needed (%zu bytes): %s", n,
                 err.msg);
    free(path);
}

Test(errors, two_long_paths_and_a_newline_stay_one_line_with_the_reason)
{
    char *a = long_path(2000), *b = long_path(1500);
    b[1000] = '\n';
    BertcError err;
    bertc_errorf(&err, "%s: cannot rename %s over it: %s", a, b, "Permission denied");
    cr_assert_lt(strlen(err.msg), sizeof err.msg);
    cr_assert(!strchr(err.msg, '\n'), "a newline split the message: %s", err.msg);
    cr_assert(strstr(err.msg, "over it: Permission denied"), "the reason was cut: %s", err.msg);
    cr_assert(strstr(err.msg, ": cannot rename /tmp/"), "the middle words are gone: %s",
              err.msg);
    free(a);
    free(b);
}

Test(errors, a_message_without_long_words_keeps_its_start_and_end)
{
    char words[2000] = "";
    for (int i = 0; i < 300; i++)
        strcat(words, "word ");
    BertcError err;
    bertc_errorf(&err, "start %s the end", words);
    cr_assert_lt(strlen(err.msg), sizeof err.msg);
    cr_assert_eq(strncmp(err.msg, "start word", 10), 0, "%s", err.msg);
    size_t n = strlen(err.msg);
    cr_assert_str_eq(err.msg + n - 7, "the end", "%s", err.msg);
}

static char warned[BERTC_ERROR_LEN];
static void record_warning(const char *msg, void *user)
{
    (void)user;
    snprintf(warned, sizeof warned, "%s", msg);
}

Test(errors, a_warning_with_a_long_path_keeps_its_reason)
{
    char *path = long_path(1500);
    BertcWarnHook old = bertc_set_warn_hook(record_warning, NULL);
    bertc_warn("%s: unused keys in the weights file", path);
    bertc_set_warn_hook(old, NULL);
    cr_assert(strstr(warned, ": unused keys in the weights file"), "cut: %s", warned);
    free(path);
}
