/* test/test_gemm_tiles.c — the GEMM's threading (one tile of C per thread) and
 * its unpacked B path (row-major op(B) read in place under short tiles).
 *
 * Bitwise: 1, 2, 3 and 4 threads (grids 1 x n, n x 1 and 2 x 2, and fewer
 * tiles than threads), a GEMM issued from inside a bertc_parallel_for (it runs
 * serially), and bertc_gemm_prepacked at 3 threads all give exactly the
 * one-thread bertc_gemm result on float data, where any change in the order
 * of the sums shows. Exact: small-integer data (every sum an integer below
 * 2^24) against bertc_gemm_reference, for the in-place B path with an odd row
 * stride and an unaligned B, over several rank-KC blocks and edge panels.
 * Every ISA path this CPU has is forced in turn. */
#include "tensor/kernels_internal.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

typedef struct TileCase {
    int64_t M, N, K, pad;
    float alpha, beta;
} TileCase;

static float *floats(int64_t n, Rng *rng, bool integers)
{
    float *x = malloc(sizeof(float) * (size_t)(n + 16));
    cr_assert(x != NULL, "out of memory for %lld floats", (long long)n);
    for (int64_t i = 0; i < n + 16; i++)
        x[i] = integers ? (float)bertc_rng_randint(rng, -3, 3)
                        : (float)(2.0 * bertc_rng_uniform(rng) - 1.0);
    return x;
}

static const char *op_name(bool ta, bool tb)
{
    static const char *names[] = {"NN", "NT", "TN", "TT"};
    return names[ta * 2 + tb];
}

/* Operands of a case: A (M, K) or (K, M) when ta, B (K, N) or (N, K) when tb,
 * C (M, N); every leading dimension padded by c->pad. */
typedef struct Mats {
    float *A, *B, *C0;
    int64_t lda, ldb, ldc;
} Mats;

static Mats make_mats(const TileCase *c, bool ta, bool tb, Rng *rng, bool integers)
{
    Mats m = {.lda = (ta ? c->M : c->K) + c->pad, .ldb = (tb ? c->K : c->N) + c->pad,
              .ldc = c->N + c->pad};
    m.A = floats((ta ? c->K : c->M) * m.lda, rng, integers);
    m.B = floats((tb ? c->N : c->K) * m.ldb, rng, integers);
    m.C0 = floats(c->M * m.ldc, rng, integers);
    return m;
}

static void free_mats(Mats *m) { free(m->A), free(m->B), free(m->C0); }

static float *gemm_on(const TileCase *c, bool ta, bool tb, const Mats *m, const float *B)
{
    float *C = malloc(sizeof(float) * (size_t)(c->M * m->ldc));
    memcpy(C, m->C0, sizeof(float) * (size_t)(c->M * m->ldc));
    bertc_gemm(ta, tb, c->M, c->N, c->K, c->alpha, m->A, m->lda, B, m->ldb, c->beta, C, m->ldc);
    return C;
}

static void assert_same_bits(const float *want, const float *got, int64_t n, const TileCase *c,
                             bool ta, bool tb, const char *what)
{
    for (int64_t i = 0; i < n; i++)
        if (memcmp(&want[i], &got[i], sizeof(float)) != 0)
            cr_assert_fail("bertc_gemm M=%lld N=%lld K=%lld op=%s isa=%s %s: C[%lld] expected "
                           "%.9g (1 thread), actual %.9g",
                           (long long)c->M, (long long)c->N, (long long)c->K, op_name(ta, tb),
                           bertc_cpu_isa_name(bertc_cpu_isa()), what, (long long)i, want[i],
                           got[i]);
}

static void for_each_isa(void (*test)(void))
{
    CpuIsa saved = bertc_cpu_isa();
    int saved_threads = bertc_threads_count();
    for (int isa = ISA_SCALAR; isa < ISA_COUNT; isa++)
        if (bertc_cpu_isa_supported((CpuIsa)isa)) {
            bertc_cpu_set_isa((CpuIsa)isa);
            test();
        }
    bertc_cpu_set_isa(saved);
    bertc_threads_set_count(saved_threads);
}

/* ------------------------------------------------------------------------ */

static const TileCase thread_cases[] = {
    {.M = 128, .N = 768, .K = 800, .alpha = 1.0f, .beta = 0.0f},            /* cut N; B in place */
    {.M = 1024, .N = 96, .K = 300, .pad = 1, .alpha = 1.0f, .beta = 0.5f},  /* cut M */
    {.M = 300, .N = 500, .K = 410, .pad = 3, .alpha = -0.5f, .beta = 1.0f}, /* 2 x 2 at 4 */
    {.M = 131, .N = 197, .K = 389, .pad = 5, .alpha = 2.0f, .beta = 0.0f},  /* edges */
    {.M = 8, .N = 60, .K = 700, .alpha = 1.0f, .beta = 0.0f},               /* < 1 tile each */
};

/* 2, 3 and 4 threads give the one-thread bits on every case and op. */
static void threads_bitwise(void)
{
    Rng rng = bertc_rng_seed(31);
    for (size_t i = 0; i < sizeof thread_cases / sizeof thread_cases[0]; i++)
        for (int op = 0; op < 4; op++) {
            const TileCase *c = &thread_cases[i];
            bool ta = op & 2, tb = op & 1;
            Mats m = make_mats(c, ta, tb, &rng, false);
            bertc_threads_set_count(1);
            float *one = gemm_on(c, ta, tb, &m, m.B);
            for (int t = 2; t <= 4; t++) {
                bertc_threads_set_count(t);
                float *many = gemm_on(c, ta, tb, &m, m.B);
                char what[32];
                snprintf(what, sizeof what, "threads=%d", t);
                assert_same_bits(one, many, c->M * m.ldc, c, ta, tb, what);
                free(many);
            }
            free(one);
            free_mats(&m);
        }
}

Test(gemm, threads_1_to_4_bitwise, .timeout = 120) { for_each_isa(threads_bitwise); }

/* N = 64, 128 and 256 (attention's d and S) run in the AVX-512 path's panels
 * of 32, N = 96, 144 and 264 in its panels of 48 (tensor/gemm.c kernel_for_n),
 * and N = 264 packs the A that N <= 256 reads in place (a_in_place): the
 * first columns of the wider product are the narrower product's, bit for bit,
 * on every op, over two rank-KC blocks and an edge block of rows, with an odd
 * row stride, alpha and beta. */
static void narrow_tiles_bitwise(void)
{
    Rng rng = bertc_rng_seed(77);
    const int64_t pairs[3][2] = {{64, 96}, {128, 144}, {256, 264}};
    for (int p = 0; p < 3; p++)
        for (int op = 0; op < 4; op++) {
            bool ta = op & 2, tb = op & 1;
            TileCase wide = {.M = 131, .N = pairs[p][1], .K = 800, .pad = 3, .alpha = 0.5f,
                             .beta = 1.0f};
            TileCase narrow = wide;
            narrow.N = pairs[p][0];
            Mats m = make_mats(&wide, ta, tb, &rng, false);
            float *cw = gemm_on(&wide, ta, tb, &m, m.B), *cn = gemm_on(&narrow, ta, tb, &m, m.B);
            for (int64_t i = 0; i < narrow.M; i++)
                assert_same_bits(cw + i * m.ldc, cn + i * m.ldc, narrow.N, &narrow, ta, tb,
                                 "against the first columns of a wider C");
            free(cw), free(cn);
            free_mats(&m);
        }
}

Test(gemm, narrow_and_wide_tiles_bitwise, .timeout = 60) { for_each_isa(narrow_tiles_bitwise); }

/* ------------------------------------------------------------------------ */

typedef struct Nested {
    const TileCase *c;
    const Mats *m;
    float *C[2];
} Nested;

static void nested_chunk(void *ctx, int64_t begin, int64_t end)
{
    Nested *n = ctx;
    for (int64_t i = begin; i < end; i++)
        bertc_gemm(false, false, n->c->M, n->c->N, n->c->K, n->c->alpha, n->m->A, n->m->lda,
                   n->m->B, n->m->ldb, n->c->beta, n->C[i], n->m->ldc);
}

/* A GEMM inside a bertc_parallel_for runs serially in its chunk (all tiles on
 * one thread): the same bits as on its own. */
static void nested_bitwise(void)
{
    Rng rng = bertc_rng_seed(32);
    const TileCase *c = &thread_cases[0];
    Mats m = make_mats(c, false, false, &rng, false);
    bertc_threads_set_count(1);
    float *one = gemm_on(c, false, false, &m, m.B);
    bertc_threads_set_count(2);
    Nested n = {.c = c, .m = &m};
    for (int i = 0; i < 2; i++) {
        n.C[i] = malloc(sizeof(float) * (size_t)(c->M * m.ldc));
        memcpy(n.C[i], m.C0, sizeof(float) * (size_t)(c->M * m.ldc));
    }
    bertc_parallel_for(2, nested_chunk, &n);
    for (int i = 0; i < 2; i++) {
        assert_same_bits(one, n.C[i], c->M * m.ldc, c, false, false, "nested in a chunk");
        free(n.C[i]);
    }
    free(one);
    free_mats(&m);
}

Test(gemm, nested_in_parallel_for_bitwise) { for_each_isa(nested_bitwise); }

/* ------------------------------------------------------------------------ */

/* bertc_gemm_prepacked at 3 threads equals bertc_gemm at 1, with B in place
 * (NN, M <= 256) on the bertc_gemm side: the pre-packed panels hold the same
 * numbers the kernel reads from B. */
static void prepacked_bitwise(void)
{
    Rng rng = bertc_rng_seed(33);
    const TileCase cases[] = {thread_cases[0], thread_cases[3]};
    for (int i = 0; i < 2; i++)
        for (int op = 0; op < 4; op++) {
            TileCase c = cases[i];
            c.pad = 0;
            bool ta = op & 2, tb = op & 1;
            Mats m = make_mats(&c, ta, tb, &rng, false);
            bertc_threads_set_count(1);
            float *want = gemm_on(&c, ta, tb, &m, m.B);
            float *packed = aligned_alloc(64, sizeof(float) *
                                                  ((bertc_gemm_packed_b_floats(c.K, c.N) + 15) / 16 * 16));
            GemmPackedB pb;
            bertc_gemm_pack_b(tb, c.K, c.N, m.B, m.ldb, packed, &pb);
            bertc_threads_set_count(3);
            float *got = malloc(sizeof(float) * (size_t)(c.M * m.ldc));
            memcpy(got, m.C0, sizeof(float) * (size_t)(c.M * m.ldc));
            bertc_gemm_prepacked(ta, c.M, c.alpha, m.A, m.lda, &pb, c.beta, got, m.ldc);
            assert_same_bits(want, got, c.M * m.ldc, &c, ta, tb, "prepacked, threads=3");
            free(want), free(got), free(packed);
            free_mats(&m);
        }
}

Test(gemm, prepacked_3_threads_bitwise, .timeout = 60) { for_each_isa(prepacked_bitwise); }

/* ------------------------------------------------------------------------ */

/* Row-major op(B) (NN, TN) with an odd row stride and a B that starts one
 * float past an aligned address, short and tall M (in place and packed),
 * several rank-KC blocks, two full panels and an edge one, beta 0.5: exact
 * against the reference on small-integer data, padding columns untouched. */
static void b_in_place_exact(void)
{
    const int64_t Ms[] = {1, 7, 8, 33, 128, 256, 257};
    Rng rng = bertc_rng_seed(34);
    for (size_t i = 0; i < sizeof Ms / sizeof Ms[0]; i++)
        for (int ta = 0; ta < 2; ta++) {
            TileCase c = {.M = Ms[i], .N = 100, .K = 900, .pad = 5, .alpha = 1.0f, .beta = 0.5f};
            Mats m = make_mats(&c, ta, false, &rng, true);
            const float *B = m.B + 1; /* unaligned; make_mats leaves 16 floats of slack */
            for (int t = 1; t <= 2; t++) {
                bertc_threads_set_count(t);
                float *got = gemm_on(&c, ta, false, &m, B);
                float *want = malloc(sizeof(float) * (size_t)(c.M * m.ldc));
                memcpy(want, m.C0, sizeof(float) * (size_t)(c.M * m.ldc));
                bertc_gemm_reference(ta, false, c.M, c.N, c.K, c.alpha, m.A, m.lda, B, m.ldb,
                                     c.beta, want, m.ldc);
                for (int64_t k = 0; k < c.M * m.ldc; k++)
                    if (want[k] != got[k])
                        cr_assert_fail("bertc_gemm M=%lld N=%lld K=%lld op=%s ldb=%lld (B + 1) "
                                       "isa=%s threads=%d: C[%lld][%lld] expected %.9g, actual %.9g",
                                       (long long)c.M, (long long)c.N, (long long)c.K,
                                       op_name(ta, false), (long long)m.ldb,
                                       bertc_cpu_isa_name(bertc_cpu_isa()), t,
                                       (long long)(k / m.ldc), (long long)(k % m.ldc), want[k],
                                       got[k]);
                free(got), free(want);
            }
            free_mats(&m);
        }
}

Test(gemm, b_in_place_odd_stride_unaligned_exact, .timeout = 60)
{
    for_each_isa(b_in_place_exact);
}
