/* test/test_paths.c — long paths: an error message that holds one keeps its
 * reason (the path is shortened in its middle, never the message at its
 * end); bertc_path_join builds dir/name whole or refuses naming what gave
 * the path; and the CLI writes and reads the right files under a directory
 * path far longer than 1,024 bytes (nested 200-byte components), and
 * refuses one longer than PATH_MAX naming its flag. */
#include "test/test_util.h"

#include <criterion/criterion.h>
#include <stdarg.h>
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

/* ---- bertc_path_join --------------------------------------------------- */

Test(paths, a_join_that_fits_is_whole_and_one_that_does_not_names_what_gave_it)
{
    char out[BERTC_PATH_MAX];
    BertcError err;
    cr_assert_eq(bertc_path_join(out, "a/b/", "config.json", "--out", &err), 0, "%s", err.msg);
    cr_expect_str_eq(out, "a/b/config.json");
    char *dir = test_long_dir("/tmp", BERTC_PATH_MAX - 1 - strlen("/config.json"), false);
    cr_assert_eq(bertc_path_join(out, dir, "config.json", "--out", &err), 0, "%s", err.msg);
    cr_expect_eq(strlen(out), BERTC_PATH_MAX - 1);
    cr_assert_neq(bertc_path_join(out, dir, "config.jsonx", "--out", &err), 0);
    cr_expect_str_eq(out, "", "a path that does not fit was cut: %.60s", out);
    cr_expect(strstr(err.msg, "--out: the path of config.jsonx in it would be 4096 bytes"),
              "%s", err.msg);
    cr_expect_neq(bertc_path_check_dir(dir, "--model", &err), 0);
    cr_expect(strstr(err.msg, "--model: the directory path is"), "%s", err.msg);
    free(dir);
}

Test(paths, a_missing_model_directory_of_2000_bytes_is_named_with_its_reason)
{
    char *dir = test_long_dir("/tmp/bertc_paths_missing", 2000, false);
    Arena *a = bertc_arena_create("paths", 1 << 16);
    ModelDir d;
    BertcError err;
    cr_assert_neq(bertc_model_dir_open(&d, a, dir, &err), 0);
    cr_expect(strstr(err.msg, ": not a model directory (No such file or directory)"), "%s",
              err.msg);
    bertc_arena_destroy(a);
    free(dir);
}

/* ---- the CLI under a directory path near PATH_MAX ---------------------- */

static char root[128];
static char *deep;   /* a directory of 3,900 bytes under root */

static void deep_setup(void)
{
    test_scratch_make(root, sizeof root, "paths");
    deep = test_long_dir(root, 3900, true);
}

static void deep_teardown(void)
{
    free(deep);
    test_scratch_remove(root);
}

TestSuite(long_paths, .init = deep_setup, .fini = deep_teardown, .timeout = 120);

/* Runs the shell command made from fmt (of any length); its stdout and
 * stderr in *log. Returns the exit status. */
static int sh(const char **log, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int sh(const char **log, const char *fmt, ...)
{
    static char out[16384];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *cmd = malloc((size_t)n + 1);
    cr_assert(cmd);
    va_start(ap, fmt);
    vsnprintf(cmd, (size_t)n + 1, fmt, ap);
    va_end(ap);
    int rc = test_shell(cmd, TEST_STDOUT_AND_STDERR, out, sizeof out);
    free(cmd);
    *log = out;
    return rc;
}

/* dir holds exactly the files named (and nothing else). */
static void expect_files(const char *dir, const char *const *names, int n)
{
    for (int i = 0; i < n; i++) {
        char path[BERTC_PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        cr_expect_eq(access(path, R_OK), 0, "no %s in the %zu-byte directory", names[i],
                     strlen(dir));
    }
    const char *log;
    cr_expect_eq(sh(&log, "test $(ls -A '%s' | wc -l) -eq %d", dir, n), 0,
                 "files under other names beside the %d expected", n);
}

static const char rows[] = "text,label\nthe computer crashed,computers\nbread and soup,food\n"
                           "the court ruled,law\natoms and stars,science\n";

Test(long_paths, finetune_quantize_predict_and_export_write_and_read_the_right_files)
{
    const char *log;
    char csv[BERTC_PATH_MAX];
    snprintf(csv, sizeof csv, "%s/t.csv", deep);
    FILE *f = fopen(csv, "w");
    cr_assert(f, "cannot write %s", csv);
    fputs(rows, f);
    fclose(f);
    cr_assert_eq(sh(&log, "%s finetune --model test/data/finetuned --train %s/t.csv --task "
                    "seq-cls --out %s/ft --steps 2 --quiet", BERTC_CLI, deep, deep), 0,
                 "%s", log);
    char *ft = malloc(strlen(deep) + 8), *q = malloc(strlen(deep) + 8);
    sprintf(ft, "%s/ft", deep);
    sprintf(q, "%s/q", deep);
    static const char *const tuned[] = {"config.json", "model.safetensors", "vocab.txt",
                                        "tokenizer_config.json", "log.jsonl",
                                        "trainer_state.json", "loss.svg",
                                        "checkpoint.safetensors"};
    expect_files(ft, tuned, 8);
    cr_assert_eq(sh(&log, "%s quantize --model %s --out %s", BERTC_CLI, ft, q), 0, "%s", log);
    expect_files(q, tuned, 4);
    cr_expect_eq(sh(&log, "test $(ls -A '%s' | wc -l) -eq 3", deep), 0, "other files than "
                 "t.csv, ft and q in the 3,900-byte directory");
    cr_expect_eq(sh(&log, "%s predict --model %s 'the computer froze'", BERTC_CLI, q), 0, "%s",
                 log);
    cr_expect(strstr(log, "the computer froze"), "%s", log);
    cr_expect_eq(sh(&log, "%s vocab --train %s/t.csv --size 120 --out %s/vocab.txt", BERTC_CLI,
                    deep, deep), 0, "%s", log);
    char *out = malloc(strlen(deep) + 8);
    sprintf(out, "%s/c", deep);
    cr_expect_eq(sh(&log, "%s export-c --model %s --out %s", BERTC_CLI, ft, out), 0, "%s", log);
    static const char *const sources[] = {"model_data.c", "model.h", "model.c"};
    expect_files(out, sources, 3);
    free(out);
    free(ft);
    free(q);
}

/* cmd (with "%s" where the path goes) given `path`: exit 2 and one line
 * "bertc CMD: FLAG: ..." naming the flag, with the reason; nothing written. */
static void expect_refused(const char *cmd, const char *path, const char *flag)
{
    const char *log;
    size_t n = strlen(cmd) + strlen(path) + 64;
    char *line = malloc(n);
    snprintf(line, n, cmd, path);
    cr_expect_eq(sh(&log, "%s %s", BERTC_CLI, line), 2, "%s: %s", cmd, log);
    char want[64];
    snprintf(want, sizeof want, ": %s: the ", flag);
    cr_expect(strstr(log, want) && strstr(log, "PATH_MAX"), "%s: %s", cmd, log);
    cr_expect(strchr(log, '\n') == log + strlen(log) - 1, "not one line: %s", log);
    free(line);
}

Test(long_paths, a_path_too_long_is_refused_naming_its_flag_and_nothing_is_written)
{
    char *dir = test_long_dir(deep, 4040, false);    /* a path, not a directory */
    char *file = test_long_dir(deep, 4200, false);   /* not a path */
    expect_refused("finetune --model test/data/finetuned --train x.csv --out %s", dir, "--out");
    expect_refused("quantize --model test/data/finetuned --out %s", dir, "--out");
    expect_refused("predict --model %s text", file, "--model");
    expect_refused("run --model %s --output o.safetensors", dir, "--model");
    expect_refused("vocab --train x.txt --out %s", file, "--out");
    expect_refused("export-c --model test/data/finetuned --out %s", dir, "--out");
    expect_refused("init --config %s --output w.safetensors", file, "--config");
    const char *log;
    cr_expect_eq(sh(&log, "test $(ls -A '%s' | wc -l) -eq 0", deep), 0,
                 "something was written");
    free(dir);
    free(file);
}
