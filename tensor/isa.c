/* tensor/isa.c — the ISA table, and which of its paths runs: the best this
 * CPU supports, detected once, or the one BERTC_ISA or bertc_cpu_set_isa()
 * forces.
 *
 * One row per path says everything the library does differently on it: its
 * name, how to detect it, its GEMM micro-kernel, its row kernels (with the
 * optimizer's update) and the int8 and bf16 paths it allows. A new path is
 * one row here (docs/adding-an-isa.md). */
#include "tensor/isa_internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- detection ------------------------------------------------------------- */

static bool detect_scalar(void)
{
    return true;
}

#if defined(__x86_64__) && defined(__GNUC__)
static bool detect_avx2(void)
{
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

static bool detect_avx512(void)
{
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq")
        && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
}
#endif

#if defined(__aarch64__) && defined(__ARM_NEON)
static bool detect_neon(void)
{
    return true; /* part of every AArch64 CPU */
}
#endif

/* ---- the table ------------------------------------------------------------- */

/* Best first: with BERTC_ISA unset, the first row this CPU runs is the path.
 * A row's kernels exist only in the builds for its architecture, hence the
 * #if inside it: elsewhere the row keeps only its name (BERTC_ISA=neon on
 * x86-64 is a path this build lacks, not an unknown name). */
static const IsaPath isa_table[] = {
    {
        .isa = ISA_AVX512,
        .name = "avx512",
#if defined(__x86_64__) && defined(__GNUC__)
        .detect = detect_avx512,
        .gemm = &bertc_gemm_kernel_avx512,
        .rows = &bertc_row_kernels_avx512,
        .int8 = {QGEMM_ISA_AVX512VNNI, QGEMM_ISA_AVXVNNI, QGEMM_ISA_AVX2},
        .bf16 = {BGEMM_ISA_AMXBF16, BGEMM_ISA_AVX512BF16},
#endif
    },
    {
        .isa = ISA_AVX2,
        .name = "avx2",
#if defined(__x86_64__) && defined(__GNUC__)
        .detect = detect_avx2,
        .gemm = &bertc_gemm_kernel_avx2,
        .rows = &bertc_row_kernels_avx2,
        .int8 = {QGEMM_ISA_AVXVNNI, QGEMM_ISA_AVX2},  /* no AVX-512 instruction */
#endif
    },
    {
        .isa = ISA_NEON,
        .name = "neon",
#if defined(__aarch64__) && defined(__ARM_NEON)
        .detect = detect_neon,
        .gemm = &bertc_gemm_kernel_neon,
        .rows = &bertc_row_kernels_neon,
        .int8 = {QGEMM_ISA_NEONDOT, QGEMM_ISA_NEON},
        .bf16 = {BGEMM_ISA_NEONBF16},
#endif
    },
    {
        .isa = ISA_SCALAR,
        .name = "scalar",
        .detect = detect_scalar,
        .gemm = &bertc_gemm_kernel_scalar,
        .rows = &bertc_row_kernels_scalar,
        .int8 = {QGEMM_ISA_M4DSP},  /* a Cortex-M4 has no float SIMD to defer to */
    },
};

enum { ISA_ROWS = sizeof isa_table / sizeof isa_table[0] };
_Static_assert((int)ISA_ROWS == (int)ISA_COUNT, "the ISA table has one row per CpuIsa");

/* The row of isa, or NULL for a value outside the enum. */
static const IsaPath *row_of(CpuIsa isa)
{
    for (int i = 0; i < ISA_ROWS; i++)
        if (isa_table[i].isa == isa)
            return &isa_table[i];
    return NULL;
}

const IsaPath *bertc_isa_path(CpuIsa isa)
{
    const IsaPath *row = row_of(isa);
    return row && row->detect ? row : row_of(ISA_SCALAR);
}

const char *bertc_cpu_isa_name(CpuIsa isa)
{
    const IsaPath *row = row_of(isa);
    return row ? row->name : "unknown";
}

bool bertc_cpu_isa_from_name(const char *name, CpuIsa *isa)
{
    for (int i = 0; i < ISA_ROWS; i++)
        if (strcmp(name, isa_table[i].name) == 0) {
            *isa = isa_table[i].isa;
            return true;
        }
    return false;
}

bool bertc_cpu_isa_supported(CpuIsa isa)
{
    const IsaPath *row = row_of(isa);
    return row && row->detect && row->detect();
}

/* "scalar, avx2, avx512, neon" into list: every name, in the order of the enum. */
static const char *isa_names_list(char *list, size_t len)
{
    size_t used = 0;
    list[0] = '\0';
    for (int isa = 0; isa < ISA_COUNT && used < len; isa++)
        used += (size_t)bertc_snprintf(list + used, len - used, "%s%s", isa ? ", " : "",
                                       bertc_cpu_isa_name((CpuIsa)isa));
    return list;
}

/* ---- the active path ------------------------------------------------------- */

int bertc_check_env(BertcError *err)
{
    const char *threads = getenv("BERTC_THREADS"), *env = getenv("BERTC_ISA");
    char names[128];
    int n;
    CpuIsa isa;
    if (threads && *threads && !bertc_threads_parse_count(threads, &n))
        return bertc_errorf(err, "BERTC_THREADS=%s: expected a count from 1 to %d", threads,
                            THREADS_MAX);
    const char *int8 = getenv("BERTC_INT8_ISA");
    QgemmIsa qisa;
    if (int8 && *int8 && !bertc_qgemm_isa_from_name(int8, &qisa))
        return bertc_errorf(err, "BERTC_INT8_ISA=%s: expected one of scalar, avx2, avxvnni, "
                            "avx512vnni, neon, neondot, m4dsp", int8);
    if (int8 && *int8 && !bertc_qgemm_isa_supported(qisa))
        return bertc_errorf(err, "BERTC_INT8_ISA=%s: this CPU (or this build) cannot run that "
                            "int8 path; unset BERTC_INT8_ISA for the best one", int8);
    const char *bf16 = getenv("BERTC_BF16_ISA");
    BgemmIsa bisa;
    if (bf16 && *bf16 && !bertc_bgemm_isa_from_name(bf16, &bisa))
        return bertc_errorf(err, "BERTC_BF16_ISA=%s: expected one of scalar, avx512bf16, "
                            "amxbf16, neonbf16", bf16);
    if (bf16 && *bf16 && !bertc_bgemm_isa_supported(bisa))
        return bertc_errorf(err, "BERTC_BF16_ISA=%s: this CPU (or this build) cannot run that "
                            "bf16 path; unset BERTC_BF16_ISA for the best one", bf16);
    if (!env || !*env)
        return 0;
    if (!bertc_cpu_isa_from_name(env, &isa))
        return bertc_errorf(err, "BERTC_ISA=%s: expected one of %s", env,
                            isa_names_list(names, sizeof names));
    if (!bertc_cpu_isa_supported(isa))
        return bertc_errorf(err, "BERTC_ISA=%s: this CPU (or this build) cannot run that path; "
                            "unset BERTC_ISA for the best one", env);
    return 0;
}

static CpuIsa best_isa(void)
{
    for (int i = 0; i < ISA_ROWS; i++)
        if (bertc_cpu_isa_supported(isa_table[i].isa))
            return isa_table[i].isa;
    return ISA_SCALAR;
}

static const IsaPath *active = NULL;   /* NULL until chosen */

void bertc_cpu_set_isa(CpuIsa isa)
{
    if (!bertc_cpu_isa_supported(isa))
        bertc_fatal("bertc_cpu_set_isa: this CPU cannot run the '%s' path",
                    bertc_cpu_isa_name(isa));
    active = row_of(isa);
}

const IsaPath *bertc_isa_active(void)
{
    if (active)
        return active;
    const char *env = getenv("BERTC_ISA");
    char names[128];
    CpuIsa isa = best_isa();
    if (env && *env && !bertc_cpu_isa_from_name(env, &isa))
        bertc_fatal("BERTC_ISA=%s: expected one of %s", env, isa_names_list(names, sizeof names));
    bertc_cpu_set_isa(isa);
    return active;
}

CpuIsa bertc_cpu_isa(void)
{
    return bertc_isa_active()->isa;
}

bool bertc_isa_detect_once(_Atomic unsigned char *known, bool (*detect)(void))
{
    unsigned char answer = atomic_load_explicit(known, memory_order_relaxed);
    if (answer == 0) {
        answer = detect() ? 2 : 1;
        atomic_store_explicit(known, answer, memory_order_relaxed);
    }
    return answer == 2;
}
