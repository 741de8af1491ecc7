/* test/test_util.h — helpers shared by the Criterion tests. */
#ifndef BERTC_TEST_UTIL_H
#define BERTC_TEST_UTIL_H

#include "autograd/autograd.h"

/* malloc/calloc/realloc calls made since the start of the process by code
 * linked into the test binary (test/support_malloc_count.c, --wrap). */
size_t test_malloc_calls(void);

/* A persistent input for gradcheck: shape, values uniform in [lo, hi). */
Var *test_param(Arena *a, int ndim, const int64_t *shape, Rng *rng, float lo, float hi);

/* Fill with uniform values in [lo, hi). */
void test_fill_uniform(float *x, int64_t n, Rng *rng, float lo, float hi);

/* Run ag_gradcheck with the tolerances used for float32 central differences
 * (eps 1e-2 in float: truncation error ~eps^2, rounding ~1e-7/eps) and assert
 * it passes; the failure message names the op, input, index and both values. */
void test_gradcheck(const char *op, Graph *g, GradcheckFn fn, Var **inputs, int n, void *user);

/* Run fn(ctx), expecting it to call bertc_fatal. Returns true if it did, and
 * copies the message into msg. Uses an error hook that longjmps back. */
bool test_catch_fatal(void (*fn)(void *ctx), void *ctx, char *msg, size_t len);

#endif
