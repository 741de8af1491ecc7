/* test/portable/main.c — runs every portable test group and prints the tally. */
#include "test/portable/portable.h"

#include <stdarg.h>
#include <stdio.h>

static int passed, failed;

void pt_print(const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    bertc_vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    printf("%s\n", line);
}

bool pt_check(bool ok, const char *fmt, ...)
{
    if (ok) {
        passed++;
        return true;
    }
    failed++;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    bertc_vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    printf("FAIL: %s\n", line);
    return false;
}

bool pt_close(double got, double want, double atol, double rtol)
{
    double d = got > want ? got - want : want - got;
    return d <= atol + rtol * (want < 0 ? -want : want);
}

/* 3 MiB: the model test needs about 0.5 MiB (parameters, their gradients and
 * one forward); the GEMM tests' largest case about 1 MiB. */
#define ARENA_BYTES (3u << 20)
static unsigned char arena_buffer[ARENA_BYTES] __attribute__((aligned(64)));
static Arena arena;

Arena *pt_arena(void)
{
    bertc_arena_init_fixed(&arena, "portable", arena_buffer, sizeof arena_buffer);
    bertc_gemm_set_pack_arena(&arena); /* no heap: GEMM packs into the arena too */
    return &arena;
}

/* A failed bertc_fatal reports and counts, then stops the run. */
static void fatal_hook(const char *msg, void *user)
{
    (void)user;
    printf("FATAL: %s\n%d passed, %d failed\n", msg, passed, failed + 1);
}

int main(void)
{
    bertc_set_error_hook(fatal_hook, NULL);
    bertc_threads_set_count(1);
    void (*const groups[])(void) = {test_format, test_vmath, test_gemm, test_qgemm, test_bgemm,
                                    test_row_kernels, test_grad, test_safetensors, test_model};
    for (size_t i = 0; i < sizeof groups / sizeof *groups; i++)
        groups[i]();
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
