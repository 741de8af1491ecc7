/* test/portable/t_qgemm.c — the int8 GEMM (bertc_qgemm) on every int8 path
 * this target has (scalar everywhere; neon and, where the CPU has sdot,
 * neondot on aarch64; avx2/avxvnni/avx512vnni on x86-64) against the oracle
 * bertc_qgemm_reference, bit for bit, on odd sizes; and each path's row
 * quantiser against the scalar one. The Criterion suite test/test_qgemm.c
 * checks more on the host; this one reaches the NEON kernels (under qemu)
 * and the scalar path on big-endian mips and the Cortex-M4F. */
#include "test/portable/portable.h"

#include <string.h>

static void fill(Rng *r, float *x, int64_t n, float scale)
{
    for (int64_t i = 0; i < n; i++)
        x[i] = scale * (float)(2.0 * bertc_rng_uniform(r) - 1.0);
}

/* One shape on one path; false (after reporting) on the first difference. */
static bool qgemm_case(QgemmIsa isa, int64_t M, int64_t N, int64_t K)
{
    Arena *a = pt_arena();
    bertc_qgemm_set_arena(a);
    Rng r = bertc_rng_seed((uint64_t)(M * 7919 + N * 31 + K));
    float *A = bertc_arena_alloc(a, sizeof(float) * (size_t)(M * K));
    float *W = bertc_arena_alloc(a, sizeof(float) * (size_t)(N * K));
    float *bias = bertc_arena_alloc(a, sizeof(float) * (size_t)N);
    float *sw = bertc_arena_alloc(a, sizeof(float) * (size_t)N);
    float *sw2 = bertc_arena_alloc(a, sizeof(float) * (size_t)N);
    float *want = bertc_arena_alloc(a, sizeof(float) * (size_t)(M * N));
    float *got = bertc_arena_alloc(a, sizeof(float) * (size_t)(M * N));
    int8_t *qw = bertc_arena_alloc(a, (size_t)(N * K)), *qw2 = bertc_arena_alloc(a, (size_t)(N * K));
    void *mem = bertc_arena_alloc(a, bertc_qgemm_packed_bytes(N, K));
    fill(&r, A, M * K, 2.0f);
    fill(&r, W, N * K, 0.5f);
    fill(&r, bias, N, 1.0f);
    bertc_qgemm_set_isa(QGEMM_ISA_SCALAR);
    bertc_quantize_rows(W, N, K, K, qw, sw);
    bertc_qgemm_reference(M, A, K, qw, sw, N, K, bias, want, N);
    bertc_qgemm_set_isa(isa);
    bertc_quantize_rows(W, N, K, K, qw2, sw2);
    if (!pt_check(memcmp(qw, qw2, (size_t)(N * K)) == 0 && memcmp(sw, sw2, sizeof(float) * (size_t)N) == 0,
                  "bertc_quantize_rows %s (%lld, %lld): differs from the scalar path",
                  bertc_qgemm_isa_name(isa), (long long)N, (long long)K))
        return false;
    QuantPackedB pb;
    bertc_qgemm_pack_b(qw, sw, N, K, mem, &pb);
    bertc_qgemm(M, A, K, &pb, bias, got, N);
    for (int64_t i = 0; i < M * N; i++)
        if (memcmp(&got[i], &want[i], sizeof(float)) != 0)
            return pt_check(false, "bertc_qgemm %s M=%lld N=%lld K=%lld: Y[%lld][%lld] = %.9g, "
                            "reference %.9g", bertc_qgemm_isa_name(isa), (long long)M,
                            (long long)N, (long long)K, (long long)(i / N), (long long)(i % N),
                            (double)got[i], (double)want[i]);
    return pt_check(true, "bertc_qgemm");
}

void test_qgemm(void)
{
    static const int64_t shapes[][3] = {{1, 1, 1}, {3, 50, 7}, {17, 97, 130}, {9, 100, 260}};
    int paths = 0;
    for (int p = 0; p < QGEMM_ISA_COUNT; p++) {
        if (!bertc_qgemm_isa_supported((QgemmIsa)p))
            continue;
        paths++;
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            if (!qgemm_case((QgemmIsa)p, shapes[s][0], shapes[s][1], shapes[s][2]))
                break;
    }
    bertc_qgemm_set_isa(QGEMM_ISA_COUNT);
    bertc_qgemm_set_arena(NULL);
    pt_print("qgemm: %d int8 paths checked against the oracle", paths);
}
