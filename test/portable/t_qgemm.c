/* test/portable/t_qgemm.c — the int8 GEMM (bertc_qgemm) on every int8 path
 * this target has (scalar everywhere; neon and, where the CPU has sdot,
 * neondot on aarch64; m4dsp (SXTB16/SMLAD) on the Cortex-M4F;
 * avx2/avxvnni/avx512vnni on x86-64) against the oracle
 * bertc_qgemm_reference, bit for bit, on odd sizes; each path's row
 * quantiser against the scalar one; and each path's micro-kernel's int32
 * sums, exactly, on bytes at the extremes +-127. The Criterion suite
 * test/test_qgemm.c checks more on the host; this one reaches the NEON
 * kernels (under qemu), the DSP kernel on the Cortex-M4F and the scalar path
 * on big-endian mips. */
#include "test/portable/portable.h"
#include "tensor/qgemm_internal.h"

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

/* One tile of one path's micro-kernel, with unit scales and no bias, so
 * every output is (float)acc, exact below 2^24: its int32 sums against plain
 * loops, over K groups of bytes drawn from {-127, -1, 0, 1, 127} and
 * uniform ones (K = 257: 32K products of 127^2 reach 2^24 only past K =
 * 1040). The packing is bertc_qgemm_pack_b's, for the path. */
static bool kernel_case(QgemmIsa isa, int64_t K)
{
    const QgemmKernel *kr = bertc_qgemm_kernel_for(isa);
    Arena *ar = pt_arena();
    int64_t N = kr->nr, k_pad = (K + 3) / 4 * 4;
    int8_t *qw = bertc_arena_alloc(ar, (size_t)(N * K));
    int8_t *qa = bertc_arena_alloc(ar, (size_t)(kr->mr * k_pad));
    float *ones = bertc_arena_alloc(ar, sizeof(float) * QGEMM_NR_MAX);
    float *c = bertc_arena_alloc(ar, sizeof(float) * (size_t)(kr->mr * N));
    void *mem = bertc_arena_alloc(ar, bertc_qgemm_packed_bytes(N, K));
    static const int8_t edges[] = {-127, -1, 0, 1, 127};
    Rng r = bertc_rng_seed((uint64_t)(K * 131 + isa));
    int8_t *bytes[2] = {qw, qa};
    int64_t counts[2] = {N * K, kr->mr * k_pad};
    for (int s = 0; s < 2; s++)
        for (int64_t i = 0; i < counts[s]; i++) {
            uint64_t u = bertc_rng_next_u64(&r);
            bytes[s][i] = u % 3 == 0 ? edges[(u >> 8) % 5] : (int8_t)((int)((u >> 16) % 255) - 127);
        }
    for (int i = 0; i < kr->mr; i++)   /* the driver's padding: zero bytes past K */
        memset(qa + i * k_pad + K, 0, (size_t)(k_pad - K));
    for (int j = 0; j < QGEMM_NR_MAX; j++)
        ones[j] = 1.0f;
    bertc_qgemm_set_isa(isa);
    QuantPackedB pb;
    bertc_qgemm_pack_b(qw, ones, N, K, mem, &pb);
    if (kr->biased)   /* the kernel's u8 operand: qa + 128 */
        for (int64_t i = 0; i < kr->mr * k_pad; i++)
            qa[i] = (int8_t)(uint8_t)(qa[i] + 128);
    kr->kernel(k_pad, qa, k_pad, pb.data, ones, ones, pb.col_sum, NULL, c, N);
    for (int i = 0; i < kr->mr; i++)
        for (int64_t j = 0; j < N; j++) {
            int32_t want = 0;
            for (int64_t k = 0; k < K; k++) {
                int32_t a = kr->biased ? (int32_t)(uint8_t)qa[i * k_pad + k] - 128
                                       : qa[i * k_pad + k];
                want += a * qw[j * K + k];
            }
            if (c[i * N + j] != (float)want || (int32_t)c[i * N + j] != want)
                return pt_check(false, "%s micro-kernel K=%lld: acc[%d][%lld] = %.1f, exact %d",
                                bertc_qgemm_isa_name(isa), (long long)K, i, (long long)j,
                                (double)c[i * N + j], (int)want);
        }
    return pt_check(true, "micro-kernel");
}

void test_qgemm(void)
{
    /* M = 1, 3, 17 (not multiples of any MR), N off every NR, K off 4; and
     * a BERT-tiny-like Linear (32 tokens, 64 -> 64 and 64 -> 256). */
    static const int64_t shapes[][3] = {{1, 1, 1},     {3, 50, 7},    {17, 97, 130},
                                        {9, 100, 260}, {1, 9, 66},    {3, 13, 5},
                                        {17, 3, 63},   {32, 64, 64}};
    int paths = 0;
    bool m4dsp = false;
    for (int p = 0; p < QGEMM_ISA_COUNT; p++) {
        if (!bertc_qgemm_isa_supported((QgemmIsa)p))
            continue;
        paths++;
        m4dsp |= p == QGEMM_ISA_M4DSP;
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            if (!qgemm_case((QgemmIsa)p, shapes[s][0], shapes[s][1], shapes[s][2]))
                break;
        if (kernel_case((QgemmIsa)p, 257))
            kernel_case((QgemmIsa)p, 3);
    }
    bertc_qgemm_set_isa(QGEMM_ISA_COUNT);
#if defined(__ARM_FEATURE_DSP) && defined(__ARM_FEATURE_SIMD32) && defined(__arm__)
    /* A DSP core must have, and default to, the SXTB16/SMLAD path. */
    pt_check(m4dsp && bertc_qgemm_isa() == QGEMM_ISA_M4DSP,
             "qgemm: built for a DSP core but the default int8 path is '%s'",
             bertc_qgemm_isa_name(bertc_qgemm_isa()));
#endif
    bertc_qgemm_set_arena(NULL);
    pt_print("qgemm: %d int8 paths checked against the oracle%s", paths,
             m4dsp ? " (m4dsp among them)" : "");
}
