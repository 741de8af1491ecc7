/* tensor/cpu.c — which SIMD path to run. Detected once, overridable with
 * BERTC_ISA or bertc_cpu_set_isa(). */
#include "tensor/tensor.h"

#include <stdlib.h>
#include <string.h>

static const char *const isa_names[] = {"scalar", "avx2", "avx512", "neon"};

const char *bertc_cpu_isa_name(CpuIsa isa)
{
    return (unsigned)isa < 4 ? isa_names[isa] : "unknown";
}

bool bertc_cpu_isa_from_name(const char *name, CpuIsa *isa)
{
    for (int i = 0; i < 4; i++)
        if (strcmp(name, isa_names[i]) == 0) {
            *isa = (CpuIsa)i;
            return true;
        }
    return false;
}

bool bertc_cpu_isa_supported(CpuIsa isa)
{
    switch (isa) {
    case ISA_SCALAR:
        return true;
#if defined(__x86_64__) && defined(__GNUC__)
    case ISA_AVX2:
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case ISA_AVX512:
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq")
            && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
#endif
#if defined(__ARM_NEON) && defined(__aarch64__)
    case ISA_NEON:
        return true;
#endif
    default:
        return false;
    }
}

int bertc_check_env(BertcError *err)
{
    const char *threads = getenv("BERTC_THREADS"), *env = getenv("BERTC_ISA");
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
    if (!env || !*env)
        return 0;
    if (!bertc_cpu_isa_from_name(env, &isa))
        return bertc_errorf(err, "BERTC_ISA=%s: expected one of scalar, avx2, avx512, neon",
                            env);
    if (!bertc_cpu_isa_supported(isa))
        return bertc_errorf(err, "BERTC_ISA=%s: this CPU (or this build) cannot run that path; "
                            "unset BERTC_ISA for the best one", env);
    return 0;
}

static CpuIsa best_isa(void)
{
    if (bertc_cpu_isa_supported(ISA_AVX512))
        return ISA_AVX512;
    if (bertc_cpu_isa_supported(ISA_AVX2))
        return ISA_AVX2;
    if (bertc_cpu_isa_supported(ISA_NEON))
        return ISA_NEON;
    return ISA_SCALAR;
}

static bool isa_chosen = false;
static CpuIsa active_isa = ISA_SCALAR;

void bertc_cpu_set_isa(CpuIsa isa)
{
    if (!bertc_cpu_isa_supported(isa))
        bertc_fatal("bertc_cpu_set_isa: this CPU cannot run the '%s' path", bertc_cpu_isa_name(isa));
    active_isa = isa;
    isa_chosen = true;
}

CpuIsa bertc_cpu_isa(void)
{
    if (isa_chosen)
        return active_isa;
    const char *env = getenv("BERTC_ISA");
    CpuIsa isa = best_isa();
    if (env && *env && !bertc_cpu_isa_from_name(env, &isa))
        bertc_fatal("BERTC_ISA=%s: expected one of scalar, avx2, avx512, neon", env);
    bertc_cpu_set_isa(isa);
    return active_isa;
}
