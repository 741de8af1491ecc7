/* test/portable/portable.h — a tiny test runner for cross targets (SPEC §10).
 *
 * Criterion cannot run under qemu-user or on bare metal, so these tests use
 * only printf, one fixed arena and the freestanding core: the same sources
 * run on the host, on aarch64 and big-endian mips Linux under qemu-user, and
 * on a Cortex-M4F under qemu-system-arm (with the porting kit's startup,
 * examples/firmware/cortex-m4f/). The last line of the output is
 * "N passed, N failed". */
#ifndef BERTC_TEST_PORTABLE_H
#define BERTC_TEST_PORTABLE_H

#include "zoo/zoo.h"

/* Print a message (formatted by bertc_snprintf: no float printf needed). */
void pt_print(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Count one check; print "FAIL: <message>" when it failed. Returns ok. */
bool pt_check(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* |got - want| <= atol + rtol * |want| (NaN never passes). */
bool pt_close(double got, double want, double atol, double rtol);

/* The one arena every test allocates from, emptied at the start of each test. */
Arena *pt_arena(void);

/* The groups, in test/portable/t_*.c. */
void test_format(void);
void test_vmath(void);
void test_gemm(void);
void test_qgemm(void);
void test_bgemm(void);
void test_row_kernels(void);
void test_grad(void);
void test_safetensors(void);
void test_model(void);

#endif
