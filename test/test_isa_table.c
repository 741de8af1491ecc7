/* test/test_isa_table.c — the ISA table (tensor/isa.c): every path of the
 * CpuIsa enum has one row whose name round-trips; every path this CPU runs
 * brings a GEMM kernel and every row kernel (a new row that forgets one
 * fails here, not in a model); a path the build lacks falls back to the
 * scalar row; the int8 default is the first path of the row's list that the
 * CPU runs; and BERTC_ISA's refusal lists the names from the table, word for
 * word as before the table. */
#include "tensor/isa_internal.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>


Test(isa_table, every_path_has_one_row_and_its_name_round_trips)
{
    for (int i = 0; i < ISA_COUNT; i++) {
        const char *name = bertc_cpu_isa_name((CpuIsa)i);
        CpuIsa back = ISA_SCALAR;
        cr_expect(strcmp(name, "unknown") != 0, "CpuIsa %d has no row", (int)(CpuIsa)i);
        cr_expect(bertc_cpu_isa_from_name(name, &back) && back == (CpuIsa)i,
                  "the name '%s' of CpuIsa %d reads back as %d", name, (int)(CpuIsa)i,
                  (int)back);
    }
    cr_expect_str_eq(bertc_cpu_isa_name(ISA_COUNT), "unknown");
    CpuIsa untouched = ISA_AVX2;
    cr_expect(!bertc_cpu_isa_from_name("avx9000", &untouched) && untouched == ISA_AVX2);
}

/* Every function of a path's row kernels, by name. */
static void expect_every_row_kernel(const char *path, const RowKernels *k)
{
    const struct {
        const char *name;
        bool set;
    } fns[] = {
        {"softmax_rows", k->softmax_rows},
        {"softmax_rows_backward", k->softmax_rows_backward},
        {"log_softmax_rows", k->log_softmax_rows},
        {"log_softmax_rows_backward", k->log_softmax_rows_backward},
        {"add_max", k->add_max},
        {"exp_sum", k->exp_sum},
        {"layernorm_rows", k->layernorm_rows},
        {"layernorm_rows_backward", k->layernorm_rows_backward},
        {"gelu", k->gelu},
        {"gelu_backward", k->gelu_backward},
        {"gelu_tanh", k->gelu_tanh},
        {"gelu_tanh_backward", k->gelu_tanh_backward},
        {"dropout", k->dropout},
        {"dropout_backward", k->dropout_backward},
        {"add_inplace", k->add_inplace},
        {"axpy", k->axpy},
        {"adam", k->adam},
        {"expf_n", k->expf_n},
        {"tanhf_n", k->tanhf_n},
        {"erff_n", k->erff_n},
        {"normal_cdf_n", k->normal_cdf_n},
    };
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++)
        cr_expect(fns[i].set, "the %s row has no %s kernel", path, fns[i].name);
}

Test(isa_table, every_path_this_cpu_runs_brings_every_kernel)
{
    for (int i = 0; i < ISA_COUNT; i++) {
        CpuIsa isa = (CpuIsa)i;
        const char *name = bertc_cpu_isa_name(isa);
        const IsaPath *p = bertc_isa_path(isa);
        if (!bertc_cpu_isa_supported(isa)) {
            /* not built here (neon on x86-64): the scalar row; built but not
             * runnable on this CPU (avx512 under valgrind, which hides it):
             * its own row, which nothing selects */
            cr_expect(p->isa == ISA_SCALAR || p->isa == isa, "%s (not runnable here) gave the "
                      "%s row", name, bertc_cpu_isa_name(p->isa));
            cr_expect_eq(bertc_row_kernels(isa), p->rows, "%s", name);
            continue;
        }
        cr_expect_eq(p->isa, isa, "bertc_isa_path(%s) is the %s row", name,
                     bertc_cpu_isa_name(p->isa));
        cr_expect_str_eq(p->name, name);
        cr_assert(p->gemm && p->rows, "the %s row has no GEMM kernel or no row kernels", name);
        cr_expect(p->gemm->kernel && p->gemm->pack_trans && p->gemm->pack_copy,
                  "the %s GEMM lacks its micro-kernel or a packer", name);
        cr_expect(p->gemm->mr > 0 && p->gemm->nr > 0 && p->gemm->mc >= p->gemm->mr
                      && p->gemm->kc > 0 && p->gemm->nc >= p->gemm->nr,
                  "the %s GEMM's tile %d x %d or blocks %lld/%lld/%lld", name, p->gemm->mr,
                  p->gemm->nr, (long long)p->gemm->mc, (long long)p->gemm->kc,
                  (long long)p->gemm->nc);
        cr_expect_eq(bertc_row_kernels(isa), p->rows, "%s", name);
        expect_every_row_kernel(name, p->rows);
        if (isa != ISA_SCALAR)  /* a SIMD row runs its own kernels, not the fallback */
            cr_expect(p->rows != &bertc_row_kernels_scalar && p->gemm != &bertc_gemm_kernel_scalar,
                      "the %s row points at the scalar kernels", name);
    }
    cr_expect(bertc_cpu_isa_supported(ISA_SCALAR), "the scalar path runs everywhere");
}

/* Forcing a path makes its row the active one; the int8 default is then the
 * first of the row's int8 paths this CPU runs, else the scalar one. */
Test(isa_table, the_active_row_and_its_int8_default)
{
    CpuIsa orig = bertc_cpu_isa();
    unsetenv("BERTC_INT8_ISA");
    bertc_qgemm_set_isa(QGEMM_ISA_COUNT);
    for (int i = 0; i < ISA_COUNT; i++) {
        CpuIsa isa = (CpuIsa)i;
        if (!bertc_cpu_isa_supported(isa))
            continue;
        bertc_cpu_set_isa(isa);
        const IsaPath *p = bertc_isa_active();
        cr_expect_eq(p, bertc_isa_path(isa), "%s forced, the %s row active",
                     bertc_cpu_isa_name(isa), p->name);
        QgemmIsa want = QGEMM_ISA_SCALAR;
        for (int k = 0; k < ISA_INT8_MAX && p->int8[k] != QGEMM_ISA_SCALAR; k++)
            if (bertc_qgemm_isa_supported(p->int8[k])) {
                want = p->int8[k];
                break;
            }
        cr_expect_eq(bertc_qgemm_isa(), want,
                     "%s: int8 default '%s', the row's first runnable '%s'", p->name,
                     bertc_qgemm_isa_name(bertc_qgemm_isa()), bertc_qgemm_isa_name(want));
    }
    /* the laptop case: BERTC_ISA=avx2 allows no AVX-512 instruction */
    const IsaPath *avx2 = bertc_isa_path(ISA_AVX2);
    for (int k = 0; avx2->isa == ISA_AVX2 && k < ISA_INT8_MAX; k++)
        cr_expect_neq(avx2->int8[k], QGEMM_ISA_AVX512VNNI, "the avx2 row allows avx512vnni");
    bertc_cpu_set_isa(orig);
}

Test(isa_table, bertc_isa_refusals_are_the_same_words)
{
    BertcError err = {{0}};
    unsetenv("BERTC_INT8_ISA");
    unsetenv("BERTC_THREADS");
    setenv("BERTC_ISA", "avx9000", 1);
    cr_expect_eq(bertc_check_env(&err), -1, "BERTC_ISA=avx9000 was accepted");
    cr_expect_str_eq(err.msg, "BERTC_ISA=avx9000: expected one of scalar, avx2, avx512, neon");
    for (int i = 0; i < ISA_COUNT; i++) {
        const char *name = bertc_cpu_isa_name((CpuIsa)i);
        setenv("BERTC_ISA", name, 1);
        int rc = bertc_check_env(&err);
        if (bertc_cpu_isa_supported((CpuIsa)i)) {
            cr_expect_eq(rc, 0, "BERTC_ISA=%s refused: %s", name, err.msg);
            continue;
        }
        char want[BERTC_ERROR_LEN];
        snprintf(want, sizeof want, "BERTC_ISA=%s: this CPU (or this build) cannot run that "
                 "path; unset BERTC_ISA for the best one", name);
        cr_expect_eq(rc, -1, "BERTC_ISA=%s (not runnable here) was accepted", name);
        cr_expect_str_eq(err.msg, want);
    }
    unsetenv("BERTC_ISA");
}
