/* test/test_vmath.c — bertc_expf/tanhf/erff on every path this CPU runs:
 * max error in ulps vs. double-precision libm on a dense sample of each range
 * (asserting the bounds documented in tensor/vmath.c), special values, and
 * SIMD == scalar twin within one ulp. */
#include "tensor/kernels_internal.h"

#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef float (*ScalarFn)(float);
typedef void (*ArrayFn)(float *y, const float *x, int64_t n);
typedef double (*RefFn)(double);

typedef struct VmathCase {
    const char *name;
    ScalarFn scalar;
    ArrayFn array;
    RefFn ref;
    float lo, hi;     /* the range of the ulp measurement */
    double max_ulp;   /* the bound documented in tensor/vmath.c */
} VmathCase;

static const VmathCase cases[] = {
    /* below -103.97 the result rounds to 0, above 88.7228 it overflows */
    {"bertc_expf", bertc_expf, bertc_expf_n, exp, -103.9f, 88.72f, 1.5},
    {"bertc_tanhf", bertc_tanhf, bertc_tanhf_n, tanh, -10.0f, 10.0f, 2.0},
    {"bertc_erff", bertc_erff, bertc_erff_n, erf, -4.0f, 4.0f, 2.0},
};
#define N_CASES (int)(sizeof(cases) / sizeof(cases[0]))

static uint32_t f2u(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float u2f(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* |got - ref| in units of the float spacing at ref: 2^(e-24) for
 * |ref| = m 2^e, m in [0.5, 1), and 2^-149 in the subnormal range. */
static double ulp_error(float got, double ref)
{
    int e;
    frexp(ref, &e);
    double ulp = fabs(ref) < FLT_MIN ? ldexp(1.0, -149) : ldexp(1.0, e - 24);
    return fabs((double)got - ref) / ulp;
}

/* Every 509th float of [lo, hi] (both signs), ~4-5 million per function. */
static int64_t fill_sample(float *x, int64_t cap, float lo, float hi)
{
    int64_t n = 0;
    for (int sign = 0; sign < 2; sign++) {
        float lim = sign ? -lo : hi;
        for (uint32_t b = 0; lim > 0 && b <= f2u(lim) && n < cap; b += 509)
            x[n++] = u2f(b | (sign ? 0x80000000u : 0));
    }
    return n;
}

#define SAMPLE_CAP (5 << 20)

static void check_ulp(const VmathCase *c, CpuIsa isa, const float *x, float *y, int64_t n)
{
    bertc_cpu_set_isa(isa);
    c->array(y, x, n);
    double worst = 0.0;
    int64_t at = 0;
    for (int64_t i = 0; i < n; i++) {
        double e = ulp_error(y[i], c->ref((double)x[i]));
        if (!(e <= worst)) {
            worst = e;
            at = i;
        }
    }
    cr_expect(worst <= c->max_ulp,
              "%s [%s]: %.3f ulp > bound %.1f at x = %a: expected %.9g, got %.9g",
              c->name, bertc_cpu_isa_name(isa), worst, c->max_ulp, (double)x[at],
              c->ref((double)x[at]), (double)y[at]);
}

Test(vmath, ulp_bounds_every_path)
{
    CpuIsa orig = bertc_cpu_isa();
    float *x = malloc(SAMPLE_CAP * sizeof *x), *y = malloc(SAMPLE_CAP * sizeof *y);
    cr_assert(x && y);
    for (int c = 0; c < N_CASES; c++) {
        int64_t n = fill_sample(x, SAMPLE_CAP, cases[c].lo, cases[c].hi);
        for (int p = 0; p < ISA_COUNT; p++)
            if (bertc_cpu_isa_supported((CpuIsa)p))
                check_ulp(&cases[c], (CpuIsa)p, x, y, n);
    }
    bertc_cpu_set_isa(orig);
    free(x);
    free(y);
}

/* Same bits as `want`, or both NaN. */
static bool same_value(float got, float want)
{
    return (isnan(got) && isnan(want)) || f2u(got) == f2u(want);
}

typedef struct Special {
    float x, want;
} Special;

static void check_specials(const VmathCase *c, const Special *s, int n)
{
    CpuIsa orig = bertc_cpu_isa();
    float x[35], y[35];
    for (int p = 0; p < ISA_COUNT; p++) {
        if (!bertc_cpu_isa_supported((CpuIsa)p))
            continue;
        bertc_cpu_set_isa((CpuIsa)p);
        /* 35 copies of each value: every vector lane and the scalar tail */
        for (int i = 0; i < n; i++) {
            for (int k = 0; k < 35; k++)
                x[k] = s[i].x;
            c->array(y, x, 35);
            for (int k = 0; k < 35; k++)
                cr_expect(same_value(y[k], s[i].want),
                          "%s [%s] lane %d: f(%a) expected %a, got %a", c->name,
                          bertc_cpu_isa_name((CpuIsa)p), k, (double)s[i].x,
                          (double)s[i].want, (double)y[k]);
        }
    }
    bertc_cpu_set_isa(orig);
}

Test(vmath, expf_special_values)
{
    const Special s[] = {
        {NAN, NAN},          {INFINITY, INFINITY}, {-INFINITY, 0.0f},
        {0.0f, 1.0f},        {-0.0f, 1.0f},        {88.72284f, INFINITY},
        {1e30f, INFINITY},   {-104.0f, 0.0f},      {-1e30f, 0.0f},
        {-100.0f, 0x1.bp-145f}, {-103.0f, 0x1p-149f}, {1.0f, 0x1.5bf0a8p+1f},
    };
    check_specials(&cases[0], s, (int)(sizeof s / sizeof s[0]));
}

Test(vmath, tanhf_special_values)
{
    const Special s[] = {
        {NAN, NAN},      {INFINITY, 1.0f}, {-INFINITY, -1.0f}, {0.0f, 0.0f},
        {-0.0f, -0.0f},  {10.0f, 1.0f},    {-50.0f, -1.0f},    {1e30f, 1.0f},
        {0x1p-130f, 0x1p-130f},
    };
    check_specials(&cases[1], s, (int)(sizeof s / sizeof s[0]));
}

Test(vmath, erff_special_values)
{
    const Special s[] = {
        {NAN, NAN},     {INFINITY, 1.0f}, {-INFINITY, -1.0f}, {0.0f, 0.0f},
        {-0.0f, -0.0f}, {4.0f, 1.0f},     {-6.0f, -1.0f},     {1e30f, 1.0f},
        {-1e30f, -1.0f},
    };
    check_specials(&cases[2], s, (int)(sizeof s / sizeof s[0]));
}

/* The scalar function and every path's array loop agree within one ulp of
 * each other on the sample (the FMA in the SIMD paths is the only change). */
Test(vmath, simd_matches_scalar_twin)
{
    CpuIsa orig = bertc_cpu_isa();
    float *x = malloc(SAMPLE_CAP * sizeof *x), *y = malloc(SAMPLE_CAP * sizeof *y);
    cr_assert(x && y);
    for (int c = 0; c < N_CASES; c++) {
        int64_t n = fill_sample(x, SAMPLE_CAP, cases[c].lo, cases[c].hi);
        for (int p = 0; p < ISA_COUNT; p++) {
            if (p == ISA_SCALAR || !bertc_cpu_isa_supported((CpuIsa)p))
                continue;
            bertc_cpu_set_isa((CpuIsa)p);
            cases[c].array(y, x, n);
            int64_t bad = -1;
            for (int64_t i = 0; i < n && bad < 0; i++) {
                float want = cases[c].scalar(x[i]);
                if (fabsf(y[i] - want) > fabsf(nextafterf(want, INFINITY) - want))
                    bad = i;
            }
            cr_expect(bad < 0, "%s [%s] differs from the scalar twin by > 1 ulp at x = %a: "
                      "expected %a, got %a", cases[c].name, bertc_cpu_isa_name((CpuIsa)p),
                      bad < 0 ? 0.0 : (double)x[bad],
                      bad < 0 ? 0.0 : (double)cases[c].scalar(x[bad]),
                      bad < 0 ? 0.0 : (double)y[bad]);
        }
    }
    bertc_cpu_set_isa(orig);
    free(x);
    free(y);
}

/* ---- bertc_normal_cdf: Phi, GELU's x Phi(x) --------------------------------
 *
 * Relative error against 0.5 erfc(-x / sqrt 2) in double on every 509th float
 * of [-9, 9], range by range, on every path: the bounds of tensor/kernels.h
 * (measured 1.1e-7 for x >= 0, 1.2e-7 to -3, 5.3e-7 to -4, 4.7e-6 to -5,
 * 2.2e-4 to -8 by tools/fit_normal_cdf.py, asserted with a margin for the
 * FMA paths); 0 below -8. */
typedef struct CdfRange {
    double lo, hi, max_rel;
} CdfRange;

static const CdfRange cdf_ranges[] = {
    {0.0, 9.0, 1.5e-7},   {-3.0, 0.0, 1.6e-7}, {-4.0, -3.0, 7e-7},
    {-5.0, -4.0, 6e-6},   {-8.0, -5.0, 3e-4},
};

static double normal_cdf_ref(double x) { return 0.5 * erfc(-x / sqrt(2.0)); }

static void check_normal_cdf(CpuIsa isa, const float *x, float *y, int64_t n)
{
    bertc_cpu_set_isa(isa);
    bertc_normal_cdf_n(y, x, n);
    double worst[5] = {0};
    int64_t at[5] = {0};
    for (int64_t i = 0; i < n; i++) {
        double xi = x[i], ref = normal_cdf_ref(xi);
        if (xi <= -8.0) {
            cr_expect(y[i] == 0.0f, "bertc_normal_cdf [%s](%a) = %a, not 0 below -8",
                      bertc_cpu_isa_name(isa), xi, (double)y[i]);
            continue;
        }
        for (int r = 0; r < 5; r++)
            if (xi >= cdf_ranges[r].lo && xi < cdf_ranges[r].hi) {
                double e = fabs((double)y[i] - ref) / ref;
                if (!(e <= worst[r]))
                    worst[r] = e, at[r] = i;
            }
    }
    for (int r = 0; r < 5; r++)
        cr_expect(worst[r] <= cdf_ranges[r].max_rel,
                  "bertc_normal_cdf [%s] on [%g, %g): relative error %.3g > %.3g at x = %a "
                  "(got %.9g, want %.9g)", bertc_cpu_isa_name(isa), cdf_ranges[r].lo,
                  cdf_ranges[r].hi, worst[r], cdf_ranges[r].max_rel, (double)x[at[r]],
                  (double)y[at[r]], normal_cdf_ref(x[at[r]]));
}

Test(vmath, normal_cdf_relative_error_every_path)
{
    CpuIsa orig = bertc_cpu_isa();
    float *x = malloc(SAMPLE_CAP * sizeof *x), *y = malloc(SAMPLE_CAP * sizeof *y);
    cr_assert(x && y);
    int64_t n = fill_sample(x, SAMPLE_CAP, -9.0f, 9.0f);
    for (int p = 0; p < ISA_COUNT; p++)
        if (bertc_cpu_isa_supported((CpuIsa)p))
            check_normal_cdf((CpuIsa)p, x, y, n);
    bertc_cpu_set_isa(orig);
    free(x);
    free(y);
}

/* NaN, the infinities, zeros, and the edges of the table (a = 8, where Q
 * becomes 0, and its last interval) on every path, in every lane of every
 * width (16 values). */
Test(vmath, normal_cdf_special_values)
{
    const float x[16] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 8.0f, -8.0f, 1e30f,
                         -1e30f, 0x1.fffffep+2f, -0x1.fffffep+2f, 7.5f, -7.5f, 0.5f, -0.5f, 2.0f};
    CpuIsa orig = bertc_cpu_isa();
    for (int p = 0; p < ISA_COUNT; p++) {
        if (!bertc_cpu_isa_supported((CpuIsa)p))
            continue;
        bertc_cpu_set_isa((CpuIsa)p);
        float y[16];
        bertc_normal_cdf_n(y, x, 16);
        cr_expect(isnan(y[0]), "[%s] Phi(NaN) = %g", bertc_cpu_isa_name((CpuIsa)p), (double)y[0]);
        for (int i = 1; i < 16; i++) {
            double want = fabsf(x[i]) < 8.0f ? normal_cdf_ref(x[i]) : x[i] < 0.0f ? 0.0 : 1.0;
            double tol = 0.0;   /* |x| >= 8: exactly 0 or 1 */
            for (int r = 0; r < 5 && fabsf(x[i]) < 8.0f; r++)
                if (x[i] >= cdf_ranges[r].lo && x[i] < cdf_ranges[r].hi)
                    tol = cdf_ranges[r].max_rel * want;
            cr_expect(fabs((double)y[i] - want) <= tol, "[%s] Phi(%a) = %a, want %a",
                      bertc_cpu_isa_name((CpuIsa)p), (double)x[i], (double)y[i], want);
        }
    }
    bertc_cpu_set_isa(orig);
}
