/* test/portable/t_vmath.c — bertc_expf/tanhf/erff/normal_cdf on this target: within
 * the ulp bounds of tensor/vmath.c against the target's double libm, and the
 * scalar versions bit-identical to the host's (a hash of 20,000 results per
 * function, recorded on x86-64). */
#include "test/portable/portable.h"

#include <math.h>
#include <string.h>

typedef struct VmathCase {
    const char *name;
    float (*f)(float);
    double (*ref)(double);
    void (*f_n)(float *, const float *, int64_t);
    float lo, hi;
    double max_ulps;          /* tensor/vmath.c's asserted bound */
    uint32_t host_hash;       /* FNV-1a of the scalar results' bits on x86-64 */
} VmathCase;

/* Phi(x) in double, from the target's libm. */
static double normal_cdf_ref(double x)
{
    return 0.5 * erfc(-x / sqrt(2.0));
}

/* One ulp of the float nearest to v. */
static double ulp_of(double v)
{
    int e;
    frexp(v == 0.0 ? 1e-38 : v, &e);
    return ldexp(1.0, e - 24);
}

void test_vmath(void)
{
    const VmathCase cases[] = {
        {"expf", bertc_expf, exp, bertc_expf_n, -87.0f, 88.0f, 1.5, 0xaa89547fu},
        {"tanhf", bertc_tanhf, tanh, bertc_tanhf_n, -10.0f, 10.0f, 2.0, 0x9a947013u},
        {"erff", bertc_erff, erf, bertc_erff_n, -4.0f, 4.0f, 2.0, 0x76a4e56au},
        /* 1.85 ulps on x86-64 (relative 1.2e-7, tensor/kernels.h); the deep tail
         * is held to relative bounds by test/test_vmath.c */
        {"normal_cdf", bertc_normal_cdf, normal_cdf_ref, bertc_normal_cdf_n, -3.0f, 3.0f, 2.5,
         0x4752e271u},
    };
    enum { N = 20000 };
    Arena *a = pt_arena();
    float *x = bertc_arena_alloc(a, N * sizeof(float)), *y = bertc_arena_alloc(a, N * sizeof(float));
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        const VmathCase *vc = &cases[c];
        uint32_t hash = 2166136261u;
        double worst = 0.0;
        for (int i = 0; i < N; i++) {
            x[i] = vc->lo + (vc->hi - vc->lo) * (float)i / (float)(N - 1);
            float v = vc->f(x[i]);
            uint32_t bits;
            memcpy(&bits, &v, sizeof bits);
            for (int k = 0; k < 4; k++)
                hash = (hash ^ ((bits >> (8 * k)) & 0xffu)) * 16777619u;
            double want = vc->ref((double)x[i]);
            double ulps = fabs((double)v - want) / ulp_of(want);
            if (ulps > worst)
                worst = ulps;
        }
        pt_check(worst <= vc->max_ulps, "bertc_%s: %.3g ulps > %.3g", vc->name, worst,
                 vc->max_ulps);
        pt_check(hash == vc->host_hash,
                 "bertc_%s: bits differ from x86-64's (hash 0x%08x, host 0x%08x)", vc->name,
                 (unsigned)hash, (unsigned)vc->host_hash);
        pt_print("vmath %s: max %.3f ulps, scalar bits hash 0x%08x", vc->name, worst,
                 (unsigned)hash);
        /* the dispatched array version (SIMD where there is one) within bounds too */
        vc->f_n(y, x, N);
        double worst_n = 0.0;
        for (int i = 0; i < N; i++) {
            double want = vc->ref((double)x[i]);
            double ulps = fabs((double)y[i] - want) / ulp_of(want);
            if (ulps > worst_n)
                worst_n = ulps;
        }
        pt_check(worst_n <= vc->max_ulps, "bertc_%s_n (%s): %.3g ulps > %.3g", vc->name,
                 bertc_cpu_isa_name(bertc_cpu_isa()), worst_n, vc->max_ulps);
    }
}
