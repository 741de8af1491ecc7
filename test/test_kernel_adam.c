/* test/test_kernel_adam.c — the optimizer's update kernel: every path this
 * CPU runs (forced in turn) gives the scalar reference's bits, for AdamW and
 * for Adam with L2 weight decay, with a gradient and with none (NULL: zeros),
 * on sizes with a ragged tail. */
#include "test/test_util.h"
#include "tensor/kernels_internal.h"

#include <criterion/criterion.h>
#include <string.h>

enum { N = 1037 };

static void one_case(CpuIsa isa, bool decoupled, bool with_grad)
{
    static float p0[N], g[N], m0[N], v0[N], p1[N], m1[N], v1[N], p2[N], m2[N], v2[N];
    Rng rng = bertc_rng_seed(11);
    test_fill_uniform(p0, N, &rng, -1, 1);
    test_fill_uniform(g, N, &rng, -1e-2f, 1e-2f);
    test_fill_uniform(m0, N, &rng, -1e-3f, 1e-3f);
    test_fill_uniform(v0, N, &rng, 0, 1e-5f);
    AdamStep s = {.b1 = 0.9f, .one_minus_b1 = 0.1f, .b2 = 0.999f, .one_minus_b2 = 1e-3f,
                  .neg_step = -1e-3f, .bc2_sqrt = 0.3f, .eps = 1e-8f, .decay = 0.99999f,
                  .wd = 0.01f, .decoupled = decoupled};
    memcpy(p1, p0, sizeof p0), memcpy(m1, m0, sizeof m0), memcpy(v1, v0, sizeof v0);
    memcpy(p2, p0, sizeof p0), memcpy(m2, m0, sizeof m0), memcpy(v2, v0, sizeof v0);
    bertc_row_kernels_scalar.adam(p1, with_grad ? g : NULL, m1, v1, N, &s);
    CpuIsa orig = bertc_cpu_isa();
    bertc_cpu_set_isa(isa);
    bertc_kernel_adam(p2, with_grad ? g : NULL, m2, v2, N, &s);
    bertc_cpu_set_isa(orig);
    const float *got[3] = {p2, m2, v2}, *want[3] = {p1, m1, v1};
    const char *name[3] = {"p", "m", "v"};
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < N; i++)
            cr_assert(memcmp(&got[k][i], &want[k][i], sizeof(float)) == 0,
                      "adam (%s, %s, %s): %s[%d] = %.9g, scalar reference %.9g",
                      bertc_cpu_isa_name(isa), decoupled ? "AdamW" : "Adam",
                      with_grad ? "gradient" : "no gradient", name[k], i, (double)got[k][i],
                      (double)want[k][i]);
}

Test(kernel_adam, every_path_matches_the_scalar_bits)
{
    for (int isa = 0; isa < ISA_COUNT; isa++) {
        if (!bertc_cpu_isa_supported((CpuIsa)isa))
            continue;
        for (int d = 0; d < 2; d++)
            for (int w = 0; w < 2; w++)
                one_case((CpuIsa)isa, d, w);
    }
}
