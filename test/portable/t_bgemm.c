/* test/portable/t_bgemm.c — the bf16 GEMM (bertc_bgemm) on every bf16 path
 * this target has (scalar everywhere; neonbf16 on an aarch64 CPU with
 * FEAT_BF16, as qemu-aarch64's default "max" CPU is; avx512bf16 and
 * amxbf16 on x86-64 where the CPU has them) against the oracle
 * bertc_bgemm_reference, bit for bit, on odd sizes. The oracle follows the
 * active path's arithmetic: on neonbf16 it is bertc_bgemm_bfdot2 (BFDOT's
 * round-to-odd steps, tensor/bgemm_bfdot.c), so this is where that model
 * meets the instruction itself — on ordinary values, on values whose
 * products and sums round at the last bit, and on ones that flush to zero
 * or overflow. The Criterion suite test/test_bgemm.c checks more, on the
 * host. Bare metal has no bf16 path and bertc_bgemm takes its buffer from
 * the heap: the group only says so there. */
#include "test/portable/portable.h"

#include <string.h>

#if !defined(BERTC_FREESTANDING)

/* Uniform values in [-scale, scale], every eighth one an edge: a value
 * near the bottom of float32's range (its products flush), one near the top
 * (its products and sums overflow), a zero of either sign, or one whose
 * bf16 rounding lands half way. */
static void fill(Rng *r, float *x, int64_t n, float scale, bool edges)
{
    static const float edge[] = {1.5e-38f, -2.2e-38f, 3.0e38f, -1.7e38f, 0.0f, -0.0f,
                                 1.00390625f, -3.0078125f};
    for (int64_t i = 0; i < n; i++) {
        uint64_t u = bertc_rng_next_u64(r);
        x[i] = edges && u % 8 == 0 ? edge[(u >> 8) % 8]
                                   : scale * (float)(2.0 * bertc_rng_uniform(r) - 1.0);
    }
}

static bool bgemm_case(BgemmIsa isa, int64_t M, int64_t N, int64_t K, bool edges)
{
    Arena *a = pt_arena();
    Rng r = bertc_rng_seed((uint64_t)(M * 7919 + N * 31 + K + edges));
    float *A = bertc_arena_alloc(a, sizeof(float) * (size_t)(M * K));
    float *W = bertc_arena_alloc(a, sizeof(float) * (size_t)(N * K));
    float *bias = bertc_arena_alloc(a, sizeof(float) * (size_t)N);
    uint16_t *w16 = bertc_arena_alloc(a, sizeof(uint16_t) * (size_t)(N * K));
    float *want = bertc_arena_alloc(a, sizeof(float) * (size_t)(M * N));
    float *got = bertc_arena_alloc(a, sizeof(float) * (size_t)(M * N));
    void *mem = bertc_arena_alloc(a, bertc_bgemm_packed_bytes(N, K));
    fill(&r, A, M * K, 2.0f, edges);
    fill(&r, W, N * K, 0.5f, edges);
    fill(&r, bias, N, 1.0f, false);
    for (int64_t i = 0; i < N * K; i++)
        w16[i] = bertc_bf16_from_f32(W[i]);
    bertc_bgemm_set_isa(isa);
    Bf16PackedB pb;
    bertc_bgemm_pack_b_f32(W, N, K, mem, &pb);
    bertc_bgemm(M, A, K, &pb, bias, got, N);
    bertc_bgemm_reference(M, A, K, w16, N, K, bias, want, N);
    for (int64_t i = 0; i < M * N; i++)
        if (memcmp(&got[i], &want[i], sizeof(float)) != 0) {
            uint32_t g, w;
            memcpy(&g, &got[i], 4);
            memcpy(&w, &want[i], 4);
            return pt_check(false, "bertc_bgemm %s M=%lld N=%lld K=%lld%s: Y[%lld][%lld] bits "
                            "%08x, the oracle %08x", bertc_bgemm_isa_name(isa), (long long)M,
                            (long long)N, (long long)K, edges ? " (edges)" : "",
                            (long long)(i / N), (long long)(i % N), (unsigned)g, (unsigned)w);
        }
    return pt_check(true, "bertc_bgemm");
}

void test_bgemm(void)
{
    static const int64_t shapes[][3] = {{1, 1, 1},   {3, 50, 7},  {17, 97, 130}, {9, 100, 260},
                                        {1, 9, 66},  {3, 13, 5},  {17, 3, 63},   {32, 64, 64}};
    int paths = 0;
    bool neon = false;
    for (int p = 0; p < BGEMM_ISA_COUNT; p++) {
        if (!bertc_bgemm_isa_supported((BgemmIsa)p))
            continue;
        paths++;
        neon |= p == BGEMM_ISA_NEONBF16;
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            if (!bgemm_case((BgemmIsa)p, shapes[s][0], shapes[s][1], shapes[s][2], false) ||
                !bgemm_case((BgemmIsa)p, shapes[s][0], shapes[s][1], shapes[s][2], true))
                break;
    }
    bertc_bgemm_set_isa(BGEMM_ISA_COUNT);
    pt_print("bgemm: %d bf16 paths checked against the oracle%s", paths,
             neon ? " (neonbf16: BFDOT against bertc_bgemm_bfdot2)" : "");
}

#else

void test_bgemm(void)
{
    pt_print("bgemm: no bf16 path on bare metal");
}

#endif
