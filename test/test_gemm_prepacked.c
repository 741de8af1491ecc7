/* test/test_gemm_prepacked.c — bertc_gemm_prepacked against bertc_gemm, bit for bit.
 *
 * A pre-packed op(B) (tensor/tensor.h, GemmPackedB) must give exactly what
 * bertc_gemm gives on the unpacked matrix — same kernel, same panels, same order of
 * sums — for every ISA path, both layouts of B (trans_b), both of A, alpha
 * and beta, several rank-KC blocks (K > KC), several NC blocks (N > NC),
 * edge panels (N not a multiple of NR), and 1 or 2 threads. Unpacking gives
 * back the matrix that was packed. */
#include "tensor/kernels_internal.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

typedef struct PackCase {
    int64_t M, N, K;
    float alpha, beta;
} PackCase;

static const PackCase cases[] = {
    {1, 1, 1, 1.0f, 0.0f},
    {7, 5, 3, 1.0f, 0.0f},
    {128, 768, 768, 1.0f, 0.0f},      /* BERT-base Q, K, V, attention output */
    {33, 97, 801, 0.5f, 1.0f},        /* three rank-KC blocks, edge panel */
    {20, 3100, 40, 1.0f, 0.25f},      /* two NC blocks (NC = 3072 for AVX-512, AVX2) */
    {130, 48, 2, -2.0f, 0.0f},
};

static float *random_floats(int64_t n, Rng *rng)
{
    float *x = aligned_alloc(64, sizeof(float) * (size_t)((n + 15) / 16 * 16));
    cr_assert(x != NULL, "out of memory for %lld floats", (long long)n);
    for (int64_t i = 0; i < n; i++)
        x[i] = (float)(2.0 * bertc_rng_uniform(rng) - 1.0);
    return x;
}

static void check_equal(const float *want, const float *got, int64_t n, const PackCase *c,
                        bool ta, bool tb, int threads)
{
    for (int64_t i = 0; i < n; i++)
        if (memcmp(&want[i], &got[i], sizeof(float)) != 0)
            cr_assert_fail("bertc_gemm_prepacked M=%lld N=%lld K=%lld ta=%d tb=%d isa=%s threads=%d: "
                           "C[%lld] expected %.9g (bertc_gemm), actual %.9g",
                           (long long)c->M, (long long)c->N, (long long)c->K, ta, tb,
                           bertc_cpu_isa_name(bertc_cpu_isa()), threads, (long long)i, want[i], got[i]);
}

/* One case, one layout: bertc_gemm on B, then bertc_gemm_prepacked on B packed. */
static void check_case(const PackCase *c, bool ta, bool tb, int threads, Rng *rng)
{
    int64_t M = c->M, N = c->N, K = c->K;
    float *A = random_floats(M * K, rng), *B = random_floats(K * N, rng);
    float *C0 = random_floats(M * N, rng);
    float *want = malloc(sizeof(float) * (size_t)(M * N));
    float *got = malloc(sizeof(float) * (size_t)(M * N));
    memcpy(want, C0, sizeof(float) * (size_t)(M * N));
    memcpy(got, C0, sizeof(float) * (size_t)(M * N));
    int64_t lda = ta ? M : K, ldb = tb ? K : N;
    bertc_gemm(ta, tb, M, N, K, c->alpha, A, lda, B, ldb, c->beta, want, N);

    size_t floats = bertc_gemm_packed_b_floats(K, N);
    cr_assert_geq(floats, (size_t)(K * N));
    float *packed = aligned_alloc(64, sizeof(float) * ((floats + 15) / 16 * 16));
    GemmPackedB pb;
    bertc_gemm_pack_b(tb, K, N, B, ldb, packed, &pb);
    cr_assert(pb.K == K && pb.N == N, "GemmPackedB says (%lld, %lld), packed (%lld, %lld)",
              (long long)pb.K, (long long)pb.N, (long long)K, (long long)N);
    bertc_gemm_prepacked(ta, M, c->alpha, A, lda, &pb, c->beta, got, N);
    check_equal(want, got, M * N, c, ta, tb, threads);

    float *back = malloc(sizeof(float) * (size_t)(K * N));
    bertc_gemm_unpack_b(&pb, tb, back, ldb);
    for (int64_t i = 0; i < K * N; i++)
        cr_assert(memcmp(&back[i], &B[i], sizeof(float)) == 0,
                  "bertc_gemm_unpack_b (K=%lld N=%lld tb=%d isa=%s): B[%lld] expected %.9g, "
                  "actual %.9g", (long long)K, (long long)N, tb, bertc_cpu_isa_name(bertc_cpu_isa()),
                  (long long)i, B[i], back[i]);
    free(A), free(B), free(C0), free(want), free(got), free(packed), free(back);
}

Test(gemm_prepacked, equals_gemm_bit_for_bit_on_every_isa, .timeout = 120)
{
    CpuIsa saved_isa = bertc_cpu_isa();
    int saved_threads = bertc_threads_count();
    Rng rng = bertc_rng_seed(7);
    for (int isa = ISA_SCALAR; isa < ISA_COUNT; isa++) {
        if (!bertc_cpu_isa_supported((CpuIsa)isa))
            continue;
        bertc_cpu_set_isa((CpuIsa)isa);
        for (int threads = 1; threads <= 2; threads++) {
            bertc_threads_set_count(threads);
            for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
                for (int op = 0; op < 4; op++)
                    check_case(&cases[i], op & 2, op & 1, threads, &rng);
        }
    }
    bertc_threads_set_count(saved_threads);
    bertc_cpu_set_isa(saved_isa);
}

/* A B packed under one ISA keeps its layout when another is forced later. */
Test(gemm_prepacked, keeps_the_layout_it_was_packed_for)
{
    CpuIsa saved = bertc_cpu_isa();
    Rng rng = bertc_rng_seed(8);
    PackCase c = {9, 50, 70, 1.0f, 0.0f};
    float *A = random_floats(c.M * c.K, &rng), *B = random_floats(c.K * c.N, &rng);
    float *want = malloc(sizeof(float) * (size_t)(c.M * c.N));
    float *got = malloc(sizeof(float) * (size_t)(c.M * c.N));
    bertc_gemm(false, true, c.M, c.N, c.K, 1.0f, A, c.K, B, c.K, 0.0f, want, c.N);
    float *packed = aligned_alloc(64, sizeof(float) * (bertc_gemm_packed_b_floats(c.K, c.N) + 16));
    GemmPackedB pb;
    bertc_gemm_pack_b(true, c.K, c.N, B, c.K, packed, &pb);
    bertc_cpu_set_isa(ISA_SCALAR);
    bertc_gemm_prepacked(false, c.M, 1.0f, A, c.K, &pb, 0.0f, got, c.N);
    bertc_cpu_set_isa(saved);
    check_equal(want, got, c.M * c.N, &c, false, true, bertc_threads_count());
    free(A), free(B), free(want), free(got), free(packed);
}
