/* test/test_examples.c — every example program runs to completion with a
 * couple of steps (a smoke test: the full runs and their metrics are in
 * docs/examples.md) and leaves its checkpoint in --out. */
#include "test/test_util.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_EXAMPLES 32

typedef struct Example {
    char name[256];
} Example;

ParameterizedTestParameters(examples, smoke)
{
    Example *list = cr_malloc(sizeof(Example) * MAX_EXAMPLES);
    size_t n = 0;
    DIR *d = opendir(BERTC_EXAMPLES_DIR);
    for (struct dirent *e; d && (e = readdir(d)) && n < MAX_EXAMPLES;)
        if (e->d_name[0] != '.')
            snprintf(list[n++].name, sizeof list[0].name, "%s", e->d_name);
    if (d)
        closedir(d);
    return cr_make_param_array(Example, list, n);
}

ParameterizedTest(Example *ex, examples, smoke, .timeout = 300)
{
    char out[512], cmd[2048], checkpoint[600];
    snprintf(out, sizeof out, "/tmp/bertc_example_%d_%s", (int)getpid(), ex->name);
    snprintf(cmd, sizeof cmd, "%s/%s --steps 2 --eval-every 1 --out %s --quiet > %s.log 2>&1",
             BERTC_EXAMPLES_DIR, ex->name, out, out);
    int status = system(cmd);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "%s exited with status %d; its output is in %s.log", ex->name,
              WIFEXITED(status) ? WEXITSTATUS(status) : -1, out);
    snprintf(checkpoint, sizeof checkpoint, "%s/checkpoint.safetensors", out);
    cr_assert_eq(access(checkpoint, F_OK), 0, "%s wrote no %s", ex->name, checkpoint);
    snprintf(cmd, sizeof cmd, "rm -rf %s %s.log", out, out);
    cr_assert_eq(system(cmd), 0);
}
