/* test/test_bgemm.c — the bf16 GEMM (tensor/bgemm*.c).
 *
 * The definition (tensor/kernels.h) is checked twice: on hand-worked values
 * (ties to even, denormals, NaN, the order of the pair, the single rounding
 * of the fma), which hold on any CPU, and against the instructions
 * themselves where the CPU has AVX512_BF16 (vcvtneps2bf16 and vcvtne2ps2bf16
 * on edge values and millions of random bit patterns, vdpbf16ps on random and
 * edge lanes). Then every bf16 path this CPU runs is compared with the oracle
 * of its arithmetic (bertc_bgemm_reference_for: the vdpbf16ps order, or the
 * AMX model) bit for bit on BERT shapes, with and without bias, with 1 and 2
 * threads, NaN and Inf included (for AMX, whose edge-case bits are not
 * modelled, only NaN where the model has NaN, finite where it is finite); packing from float32 equals
 * packing its bf16 rounding; and the result is within bf16's error of a
 * float64 GEMM of the same float32 inputs. */
#include "tensor/bgemm_internal.h"
#include "test/test_util.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint32_t bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static float from_bits(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* The bf16 of a float whose low 16 bits are zero (exact). */
static uint16_t bf(float x)
{
    return (uint16_t)(bits(x) >> 16);
}

static void restore_defaults(void)
{
    bertc_bgemm_set_isa(BGEMM_ISA_COUNT);
    bertc_threads_set_count(2);
}

TestSuite(bgemm, .fini = restore_defaults);

/* The paths this CPU runs, scalar first. */
static int available_paths(BgemmIsa *out)
{
    int n = 0;
    for (int i = 0; i < BGEMM_ISA_COUNT; i++)
        if (bertc_bgemm_isa_supported((BgemmIsa)i))
            out[n++] = (BgemmIsa)i;
    return n;
}

/* ---- the definition on hand-worked values --------------------------------- */

Test(bgemm, conversion_rounds_as_the_definition_says)
{
    const struct {
        uint32_t in;
        uint16_t out;
        const char *why;
    } cases[] = {
        {0x3F800000u, 0x3F80, "1.0 exact"},
        {0x3F808000u, 0x3F80, "tie, even below: down"},
        {0x3F818000u, 0x3F82, "tie, odd below: up"},
        {0x3F808001u, 0x3F81, "just above a tie: up"},
        {0xBF80FFFFu, 0xBF81, "negative, rounds away from zero by magnitude"},
        {0x7F7FFFFFu, 0x7F80, "FLT_MAX rounds to Inf"},
        {0x7F7F7FFFu, 0x7F7F, "largest below the Inf tie stays finite"},
        {0x00000001u, 0x0000, "smallest denormal: +0"},
        {0x807FFFFFu, 0x8000, "largest negative denormal: -0"},
        {0x00800000u, 0x0080, "FLT_MIN is kept"},
        {0x7F800000u, 0x7F80, "+Inf"},
        {0xFF800000u, 0xFF80, "-Inf"},
        {0x7F800001u, 0x7FC0, "signalling NaN with a low payload: quieted, payload cut"},
        {0x7FA5FFFFu, 0x7FE5, "signalling NaN: upper bits kept, quiet bit set, no rounding"},
        {0xFFC12345u, 0xFFC1, "quiet NaN keeps sign and upper payload"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint16_t got = bertc_bf16_from_f32(from_bits(cases[i].in));
        cr_expect_eq(got, cases[i].out, "bertc_bf16_from_f32(0x%08x) = 0x%04x, expected "
                     "0x%04x (%s)", cases[i].in, got, cases[i].out, cases[i].why);
    }
    cr_expect_eq(bits(bertc_bf16_to_f32(0xC0A0)), 0xC0A00000u, "bf16 0xC0A0 is -5.0");
}

/* One lane by hand: what the order, the single rounding, DAZ and FTZ give. */
Test(bgemm, one_lane_follows_the_definition)
{
    const struct {
        float acc, a0, a1, w0, w1, want;
        const char *why;
    } cases[] = {
        /* 2^24 + 1 ties to 2^24, then - 2^24: 0; the even element first would give 1 */
        {0x1p24f, -0x1p12f, 1.0f, 0x1p12f, 1.0f, 0.0f, "the odd element first"},
        /* 2^128 overflows float32 but meets acc exactly: 2^128 - 1.5 * 2^127 */
        {-0x1.8p127f, 0.0f, 0x1p64f, 0.0f, 0x1p64f, 0x1p126f, "an fma: no rounded product"},
        /* 2^-130 is a denormal product, not flushed before the add */
        {0x1p-120f, 0.0f, 0x1p-65f, 0.0f, 0x1p-65f, 0x1.004p-120f, "a tiny product is kept"},
        /* 2^-126 - 0.75 * 2^-150 rounds to 2^-126 on the denormal grid */
        {0x1p-126f, 0.0f, -0x1.8p-75f, 0.0f, 0x1p-77f, 0x1p-126f, "flush after rounding"},
        {0x1p-126f, -0x1p-75f, 0.0f, 0x1p-52f, 0.0f, 0.0f, "a denormal result is flushed"},
        {1.0f, 0.0f, 0x1p-130f, 0.0f, 0x1p100f, 1.0f, "a denormal input (bf16 0x0008) is zero"},
        {2.0f, 3.0f, -0.5f, 4.0f, 2.0f, 13.0f, "2 - 1 + 12"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        float got = bertc_bgemm_dot2(cases[i].acc, bf(cases[i].a0), bf(cases[i].a1),
                                     bf(cases[i].w0), bf(cases[i].w1));
        cr_expect_eq(bits(got), bits(cases[i].want), "case %zu (%s): %a, expected %a", i,
                     cases[i].why, got, cases[i].want);
    }
}

/* ---- the definition against the instructions ------------------------------ */

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

/* 32 floats through vcvtne2ps2bf16 and the same through vcvtneps2bf16. */
BF16_TARGET static void hw_convert(const float *x, uint16_t *two, uint16_t *one)
{
    __m512 lo = _mm512_loadu_ps(x), hi = _mm512_loadu_ps(x + 16);
    _mm512_storeu_si512(two, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
    _mm256_storeu_si256((__m256i *)one, (__m256i)_mm512_cvtneps_pbh(lo));
    _mm256_storeu_si256((__m256i *)(one + 16), (__m256i)_mm512_cvtneps_pbh(hi));
}

/* 16 lanes of one vdpbf16ps: acc[l] with the pair of a and of w in lane l. */
BF16_TARGET static void hw_dot2(float *acc, const uint16_t *a, const uint16_t *w)
{
    __m512 c = _mm512_loadu_ps(acc);
    __m512i av = _mm512_loadu_si512(a), wv = _mm512_loadu_si512(w);
    __asm__("vdpbf16ps %2, %1, %0" : "+v"(c) : "v"(av), "v"(wv));
    _mm512_storeu_ps(acc, c);
}

static uint64_t xorshift(uint64_t *s)
{
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return *s;
}

/* A random bf16: random sign and mantissa, exponent in [e0, e0 + span); or
 * any bit pattern (span 0). */
static uint16_t random_bf16(uint64_t *s, int e0, int span)
{
    uint16_t b = (uint16_t)xorshift(s);
    if (span == 0)
        return b;
    int e = e0 + (int)(xorshift(s) % (uint64_t)span);
    return (uint16_t)((b & 0x807F) | (e << 7));
}
#define HAVE_HW 1
#endif

/* Skips the calling test where the instructions cannot run. */
static void need_hardware(void)
{
    if (!bertc_bgemm_isa_supported(BGEMM_ISA_AVX512BF16))
        cr_skip_test("this CPU (or build) has no AVX512_BF16: nothing to compare with");
}

Test(bgemm, conversion_matches_the_instructions)
{
    need_hardware();
#ifdef HAVE_HW
    static const uint32_t edges[] = {
        0x00000000u, 0x80000000u, 0x00000001u, 0x007FFFFFu, 0x807FFFFFu, 0x00800000u,
        0x80800000u, 0x7F7FFFFFu, 0xFF7FFFFFu, 0x7F7F7FFFu, 0x7F7F8000u, 0x7F800000u,
        0xFF800000u, 0x7F800001u, 0x7FBFFFFFu, 0x7FC00000u, 0xFFFFFFFFu, 0x3F808000u,
        0x3F818000u, 0x3F807FFFu, 0x3F808001u, 0xBF818000u, 0x0080FFFFu, 0x00FF8000u,
    };
    uint64_t seed = 0x9E3779B97F4A7C15ull;
    float x[32];
    uint16_t two[32], one[32];
    long mismatches = 0;
    /* the edges, then 4M random bit patterns, then every upper half with the
     * low halves that decide rounding (0x0000, 0x7FFF, 0x8000, 0x8001, 0xFFFF) */
    for (long blk = 0; blk < (1L << 17) + 10240; blk++) {
        for (int l = 0; l < 32; l++) {
            long n = blk * 32 + l;
            uint32_t u;
            if (n < (long)(sizeof edges / sizeof edges[0]))
                u = edges[n];
            else if (blk < (1L << 17))
                u = (uint32_t)xorshift(&seed);
            else {
                static const uint32_t low[5] = {0x0000, 0x7FFF, 0x8000, 0x8001, 0xFFFF};
                long e = n - (1L << 22);
                u = ((uint32_t)(e / 5 % 65536) << 16) | low[e % 5];
            }
            x[l] = from_bits(u);
        }
        hw_convert(x, two, one);
        for (int l = 0; l < 32; l++) {
            uint16_t want = bertc_bf16_from_f32(x[l]);
            if ((two[l] != want || one[l] != want) && mismatches++ < 5)
                cr_expect_fail("float 0x%08x: vcvtne2ps2bf16 0x%04x, vcvtneps2bf16 0x%04x, "
                               "bertc_bf16_from_f32 0x%04x", bits(x[l]), two[l], one[l], want);
        }
    }
    cr_expect_eq(mismatches, 0, "%ld conversions differ from the instructions", mismatches);
#endif
}

Test(bgemm, one_lane_matches_vdpbf16ps)
{
    need_hardware();
#ifdef HAVE_HW
    /* Ranges: all bit patterns (NaN, Inf, denormals); exponents close
     * together (rounding of the sum); the denormal edge (DAZ, FTZ); and an
     * acc that cancels the odd product (a sum near zero). */
    static const int e0[4] = {0, 100, 0, 0}, span[4] = {0, 40, 3, 30};
    uint64_t seed = 42;
    long mismatches = 0;
    for (long it = 0; it < 120000; it++) {
        int kind = (int)(it % 4);
        float acc[16], got[16];
        uint16_t a[32], w[32];
        for (int i = 0; i < 32; i++) {
            a[i] = random_bf16(&seed, e0[kind], span[kind]);
            w[i] = random_bf16(&seed, e0[kind], span[kind]);
        }
        for (int l = 0; l < 16; l++) {
            uint32_t u = (uint32_t)xorshift(&seed);
            if (kind == 1 || kind == 2)
                u = (u & 0x807FFFFFu) | ((uint32_t)(e0[kind] + (int)(u % 50u)) << 23);
            acc[l] = from_bits(u);
            if (kind == 3)
                acc[l] = -bertc_bf16_to_f32(a[2 * l + 1]) * bertc_bf16_to_f32(w[2 * l + 1])
                         * (1.0f + (float)(u % 3u) * 0x1p-20f);
            got[l] = acc[l];
        }
        hw_dot2(got, a, w);
        for (int l = 0; l < 16; l++) {
            float want = bertc_bgemm_dot2(acc[l], a[2 * l], a[2 * l + 1], w[2 * l], w[2 * l + 1]);
            if (bits(got[l]) != bits(want) && mismatches++ < 5)
                cr_expect_fail("acc 0x%08x, a (0x%04x, 0x%04x), w (0x%04x, 0x%04x): vdpbf16ps "
                               "0x%08x, bertc_bgemm_dot2 0x%08x", bits(acc[l]), a[2 * l],
                               a[2 * l + 1], w[2 * l], w[2 * l + 1], bits(got[l]), bits(want));
        }
    }
    cr_expect_eq(mismatches, 0, "%ld of 1.92M lanes differ from vdpbf16ps", mismatches);
#endif
}

/* ---- every path against the oracle --------------------------------------- */

typedef struct BCase {
    int64_t M, N, K, lda_extra, ldc_extra;
    bool bias;
} BCase;

typedef struct BData {
    float *A, *W, *bias, *want, *got;
    float *want_amx;   /* the AMX model's Y, where this CPU runs that path */
    uint16_t *w16;
    void *mem;
    int64_t lda, ldc;
} BData;

static void *xmalloc(size_t bytes)
{
    void *p = aligned_alloc(64, (bytes + 63) / 64 * 64);
    cr_assert(p != NULL, "out of memory for %zu bytes", bytes);
    return p;
}

static BData make_data(const BCase *c, Rng *rng)
{
    BData d = {.lda = c->K + c->lda_extra, .ldc = c->N + c->ldc_extra};
    d.A = xmalloc(sizeof(float) * (size_t)(c->M * d.lda));
    d.W = xmalloc(sizeof(float) * (size_t)(c->N * c->K));
    d.bias = xmalloc(sizeof(float) * (size_t)c->N);
    d.want = xmalloc(sizeof(float) * (size_t)(c->M * d.ldc));
    d.got = xmalloc(sizeof(float) * (size_t)(c->M * d.ldc));
    if (bertc_bgemm_isa_supported(BGEMM_ISA_AMXBF16))
        d.want_amx = xmalloc(sizeof(float) * (size_t)(c->M * d.ldc));
    d.w16 = xmalloc(sizeof(uint16_t) * (size_t)(c->N * c->K));
    d.mem = xmalloc(bertc_bgemm_packed_bytes(c->N, c->K));
    test_fill_uniform(d.A, c->M * d.lda, rng, -2.0f, 2.0f);
    test_fill_uniform(d.W, c->N * c->K, rng, -0.5f, 0.5f);
    test_fill_uniform(d.bias, c->N, rng, -1.0f, 1.0f);
    for (int64_t i = 0; i < c->N * c->K; i++)
        d.w16[i] = bertc_bf16_from_f32(d.W[i]);
    return d;
}

/* d->want by the vdpbf16ps order, d->want_amx by the AMX model. */
static void reference(const BCase *c, BData *d)
{
    bertc_bgemm_reference_for(BGEMM_ISA_SCALAR, c->M, d->A, d->lda, d->w16, c->N, c->K,
                              c->bias ? d->bias : NULL, d->want, d->ldc);
    if (d->want_amx)
        bertc_bgemm_reference_for(BGEMM_ISA_AMXBF16, c->M, d->A, d->lda, d->w16, c->N, c->K,
                                  c->bias ? d->bias : NULL, d->want_amx, d->ldc);
}

static void free_data(BData *d)
{
    free(d->A), free(d->W), free(d->bias), free(d->want), free(d->got), free(d->w16);
    free(d->want_amx);
    free(d->mem);
}

/* How Y must agree with its oracle: bit for bit, or (AMX on edge inputs,
 * whose bits are not modelled) NaN exactly where the oracle has NaN and
 * finite exactly where it is finite. */
typedef enum Agree { AGREE_BITS, AGREE_CLASS } Agree;

static bool agrees(float got, float want, Agree how)
{
    if (how == AGREE_BITS)
        return bits(got) == bits(want);
    return isnan(got) == isnan(want) && isfinite(got) == isfinite(want);
}

/* Y on `path` with `threads` threads against its oracle (d->want, or
 * d->want_amx for the AMX path); the stride padding of Y must stay
 * untouched. */
static void run_path_agree(const BCase *c, BData *d, BgemmIsa path, int threads, Agree how)
{
    bertc_bgemm_set_isa(path);
    bertc_threads_set_count(threads);
    Bf16PackedB pb;
    bertc_bgemm_pack_b(d->w16, c->N, c->K, d->mem, &pb);
    for (int64_t i = 0; i < c->M * d->ldc; i++)
        d->got[i] = 12345.0f;
    bertc_bgemm(c->M, d->A, d->lda, &pb, c->bias ? d->bias : NULL, d->got, d->ldc);
    const float *oracle = path == BGEMM_ISA_AMXBF16 ? d->want_amx : d->want;
    for (int64_t i = 0; i < c->M; i++)
        for (int64_t j = 0; j < d->ldc; j++) {
            float want = j < c->N ? oracle[i * d->ldc + j] : 12345.0f;
            float got = d->got[i * d->ldc + j];
            if (!agrees(got, want, j < c->N ? how : AGREE_BITS))
                cr_assert_fail("bertc_bgemm M=%lld N=%lld K=%lld lda=%lld ldc=%lld bias=%d "
                               "path=%s threads=%d: Y[%lld][%lld] = %a, expected %a (%s%s)",
                               (long long)c->M, (long long)c->N, (long long)c->K,
                               (long long)d->lda, (long long)d->ldc, c->bias,
                               bertc_bgemm_isa_name(path), threads, (long long)i, (long long)j,
                               got, want, j < c->N ? "the oracle of the path" : "stride padding",
                               how == AGREE_CLASS ? ", NaN and finite as it" : "");
        }
}

static void run_path(const BCase *c, BData *d, BgemmIsa path, int threads)
{
    run_path_agree(c, d, path, threads, AGREE_BITS);
}

/* One path's tile kernel (convert_trans on src32, or transpose_tile on
 * src16) on every tile size against the definition: out[i][k] is the bf16
 * of src[k][i] (src16's bits as they are) for i < cols, 0 for the rows past
 * cols, and nothing is written past kn in a row (out is prefilled). */
static void check_tiles(BgemmIsa path, const float *src32, const uint16_t *src16, int lds)
{
    enum { TK = BGEMM_TILE_K, TI = BGEMM_TILE_I, LDO = 37, FILL = 0xABCD };
    bertc_bgemm_set_isa(path);
    const BgemmKernel *kr = bertc_bgemm_kernel();
    for (int kn = 1; kn <= TK; kn++)
        for (int rows = 1; rows <= TI; rows++)
            for (int cols = 0; cols <= rows; cols++) {
                uint16_t out[TI * LDO];
                for (int n = 0; n < TI * LDO; n++)
                    out[n] = FILL;
                if (src32)
                    kr->convert_trans(src32, lds, kn, cols, rows, out, LDO);
                else
                    kr->transpose_tile(src16, lds, kn, cols, rows, out, LDO);
                for (int i = 0; i < TI; i++)
                    for (int k = 0; k < LDO; k++) {
                        uint16_t want = i >= rows || k >= kn ? FILL
                                        : i >= cols ? 0
                                        : src32 ? bertc_bf16_from_f32(src32[k * lds + i])
                                        : src16[k * lds + i];
                        if (out[i * LDO + k] != want)
                            cr_assert_fail("%s %s: kn %d cols %d rows %d: out[%d][%d] = 0x%04x, "
                                           "want 0x%04x", bertc_bgemm_isa_name(path),
                                           src32 ? "convert_trans" : "transpose_tile", kn,
                                           cols, rows, i, k, out[i * LDO + k], want);
                    }
            }
}

/* Each path's transposing converter. The values mix rounding ties, NaNs,
 * infinities and subnormals with random bit patterns; the stride is odd,
 * as a transposed operand's may be. */
Test(bgemm, every_path_converts_transposed_tiles_as_the_definition)
{
    enum { LDS = 19 };
    static const uint32_t edges[] = {0x7FC00000u, 0xFF800000u, 0x00000001u, 0x3F808000u,
                                     0x3F818000u, 0x807FFFFFu, 0x7F7FFFFFu, 0x80000000u};
    float src[BGEMM_TILE_K * LDS];
    Rng rng = bertc_rng_seed(16);
    for (int n = 0; n < BGEMM_TILE_K * LDS; n++)
        src[n] = from_bits(n % 5 == 0 ? edges[n / 5 % 8] : (uint32_t)bertc_rng_next_u64(&rng));
    BgemmIsa paths[BGEMM_ISA_COUNT];
    int np = available_paths(paths);
    for (int p = 0; p < np; p++)
        check_tiles(paths[p], src, NULL, LDS);
}

/* Each path's bf16 tile transposer: every bit pattern carried unchanged. */
Test(bgemm, every_path_transposes_bf16_tiles_as_the_definition)
{
    enum { LDS = 23 };
    uint16_t src[BGEMM_TILE_K * LDS];
    Rng rng = bertc_rng_seed(32);
    for (int n = 0; n < BGEMM_TILE_K * LDS; n++)
        src[n] = (uint16_t)bertc_rng_next_u64(&rng);
    BgemmIsa paths[BGEMM_ISA_COUNT];
    int np = available_paths(paths);
    for (int p = 0; p < np; p++)
        check_tiles(paths[p], NULL, src, LDS);
}

/* Each path's pairing converter against the definition, for every width n
 * and with the odd row missing: the pairs in place, zeros past n. */
Test(bgemm, every_path_pairs_two_rows_as_the_definition)
{
    static const uint32_t edges[] = {0x7FC00000u, 0xFF800000u, 0x00000001u, 0x3F808000u,
                                     0x3F818000u, 0x807FFFFFu, 0x7F7FFFFFu, 0x80000000u};
    float even[BGEMM_NR], odd[BGEMM_NR];
    Rng rng = bertc_rng_seed(48);
    for (int j = 0; j < BGEMM_NR; j++) {
        even[j] = from_bits(j % 3 == 0 ? edges[j / 3 % 8] : (uint32_t)bertc_rng_next_u64(&rng));
        odd[j] = from_bits(j % 5 == 1 ? edges[j % 8] : (uint32_t)bertc_rng_next_u64(&rng));
    }
    BgemmIsa paths[BGEMM_ISA_COUNT];
    int np = available_paths(paths);
    for (int p = 0; p < np; p++) {
        bertc_bgemm_set_isa(paths[p]);
        const BgemmKernel *kr = bertc_bgemm_kernel();
        for (int n = 1; n <= BGEMM_NR; n++)
            for (int has_odd = 0; has_odd < 2; has_odd++) {
                uint16_t out[2 * BGEMM_NR];
                memset(out, 0xAB, sizeof out);
                kr->convert_pairs(even, has_odd ? odd : NULL, n, out);
                for (int j = 0; j < BGEMM_NR; j++) {
                    uint16_t we = j < n ? bertc_bf16_from_f32(even[j]) : 0;
                    uint16_t wo = j < n && has_odd ? bertc_bf16_from_f32(odd[j]) : 0;
                    if (out[2 * j] != we || out[2 * j + 1] != wo)
                        cr_assert_fail("%s: n %d, odd %s: pair %d = (0x%04x, 0x%04x), want "
                                       "(0x%04x, 0x%04x)", bertc_bgemm_isa_name(paths[p]), n,
                                       has_odd ? "given" : "NULL", j, out[2 * j],
                                       out[2 * j + 1], we, wo);
                }
            }
    }
}

/* Every path, 1 thread, on every N from 1 to 50 (panel edges) with the small
 * M (one row, a tile's edges 7, 8, 9 and AMX's 16, 17) and K (odd, one pair,
 * AMX's 32-k chunk and its tails around 32 and 64). */
Test(bgemm, every_path_matches_the_reference_on_small_shapes, .timeout = 120)
{
    static const int64_t ms[] = {1, 7, 8, 9, 16, 17}, ks[] = {1, 2, 3, 31, 32, 33, 63, 64, 65};
    BgemmIsa paths[BGEMM_ISA_COUNT];
    int np = available_paths(paths);
    Rng rng = bertc_rng_seed(27);
    for (int64_t N = 1; N <= 50; N++)
        for (size_t m = 0; m < sizeof ms / sizeof ms[0]; m++)
            for (size_t k = 0; k < sizeof ks / sizeof ks[0]; k++) {
                BCase c = {ms[m], N, ks[k], N % 3, N % 2, (N + (int64_t)k) % 2 == 0};
                BData d = make_data(&c, &rng);
                reference(&c, &d);
                for (int p = 0; p < np; p++)
                    run_path(&c, &d, paths[p], 1);
                free_data(&d);
            }
}

/* BERT-base's Linears (768, 3072) and longer K, with 1 and 2 threads. */
Test(bgemm, every_path_matches_the_reference_on_bert_shapes, .timeout = 300)
{
    static const BCase cases[] = {
        {128, 768, 768, 0, 0, true},      /* Q, K, V, attention output: 2 threads split it */
        {9, 3072, 768, 0, 3, true},       /* FFN in, 64 panels */
        {7, 768, 63, 2, 0, false},
        {8, 3072, 64, 0, 0, false},
        {1, 768, 768, 0, 0, true},        /* one token */
        {128, 50, 768, 1, 2, false},      /* one short panel */
        {64, 500, 1000, 0, 0, true},      /* 32M multiply-adds: 2 threads, edge panels */
    };
    BgemmIsa paths[BGEMM_ISA_COUNT];
    int np = available_paths(paths);
    Rng rng = bertc_rng_seed(768);
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        BData d = make_data(&cases[t], &rng);
        reference(&cases[t], &d);
        for (int p = 0; p < np; p++)
            for (int threads = 1; threads <= 2; threads++)
                run_path(&cases[t], &d, paths[p], threads);
        free_data(&d);
    }
}

/* NaN and Inf in A and in W: NaN or Inf out, with the same bits on every
 * vdpbf16ps-order path as in the oracle (tensor/kernels.h says which NaN);
 * on AMX, NaN where its model has NaN and finite where it is finite. */
Test(bgemm, non_finite_inputs_agree_on_every_path)
{
    const BCase c = {9, 50, 40, 0, 0, true};
    Rng rng = bertc_rng_seed(9);
    BData d = make_data(&c, &rng);
    d.A[0 * d.lda + 3] = NAN;
    d.A[1 * d.lda + 0] = INFINITY;
    d.A[2 * d.lda + 39] = -INFINITY;
    d.A[4 * d.lda + 6] = from_bits(0x7FA12345u);   /* signalling, with a payload */
    for (int64_t k = 0; k < c.K; k++)
        d.A[3 * d.lda + k] = k % 2 ? -NAN : INFINITY;
    d.w16[5 * c.K + 7] = 0xFFC3;                   /* NaN with a payload */
    d.w16[6 * c.K + 8] = 0x7F80;                   /* +Inf */
    d.w16[7 * c.K + 9] = 0x0001;                   /* a bf16 denormal: read as zero */
    reference(&c, &d);
    int nan = 0;
    for (int64_t i = 0; i < c.M * d.ldc; i++)
        nan += isnan(d.want[i]);
    /* rows 0, 3 and 4 and column 5 at least */
    cr_expect(nan >= 3 * c.N + 6, "only %d NaN outputs: the NaN inputs did not reach them", nan);
    BgemmIsa paths[BGEMM_ISA_COUNT];
    int np = available_paths(paths);
    for (int p = 0; p < np; p++)
        run_path_agree(&c, &d, paths[p], 1,
                       paths[p] == BGEMM_ISA_AMXBF16 ? AGREE_CLASS : AGREE_BITS);
    free_data(&d);
}

/* ---- the AMX path ---------------------------------------------------------- */

static void need_amx(void)
{
    if (!bertc_bgemm_isa_supported(BGEMM_ISA_AMXBF16))
        cr_skip_test("this CPU (or build, or kernel) has no AMX-BF16: nothing to compare with");
}

/* BERT-base's three Linear shapes for 128 tokens, 1 and 2 threads, against
 * the AMX model bit for bit. */
Test(bgemm, amx_matches_its_model_on_bert_base_shapes, .timeout = 300)
{
    need_amx();
    static const BCase cases[] = {
        {128, 768, 768, 0, 0, true},
        {128, 3072, 768, 0, 0, true},
        {128, 768, 3072, 0, 0, false},
    };
    Rng rng = bertc_rng_seed(3072);
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        BData d = make_data(&cases[t], &rng);
        bertc_bgemm_reference_for(BGEMM_ISA_AMXBF16, cases[t].M, d.A, d.lda, d.w16, cases[t].N,
                                  cases[t].K, cases[t].bias ? d.bias : NULL, d.want_amx, d.ldc);
        for (int threads = 1; threads <= 2; threads++)
            run_path(&cases[t], &d, BGEMM_ISA_AMXBF16, threads);
        free_data(&d);
    }
}

/* The two models are different arithmetic: on K = 768 most outputs differ in
 * their last bits, so a test that passed AMX against the vdpbf16ps order
 * (or the reverse) would be a test of nothing. And the public oracle follows
 * the active path. */
Test(bgemm, the_amx_model_is_not_the_vdpbf16ps_order)
{
    const BCase c = {4, 48, 768, 0, 0, false};
    Rng rng = bertc_rng_seed(5);
    BData d = make_data(&c, &rng);
    float *amx = xmalloc(sizeof(float) * (size_t)(c.M * c.N));
    bertc_bgemm_reference_for(BGEMM_ISA_SCALAR, c.M, d.A, d.lda, d.w16, c.N, c.K, NULL, d.want,
                              d.ldc);
    bertc_bgemm_reference_for(BGEMM_ISA_AMXBF16, c.M, d.A, d.lda, d.w16, c.N, c.K, NULL, amx,
                              d.ldc);
    int differ = 0;
    for (int64_t i = 0; i < c.M * c.N; i++)
        differ += bits(amx[i]) != bits(d.want[i]);
    cr_expect(differ > c.M * c.N / 4, "only %d of %lld outputs differ between the models",
              differ, (long long)(c.M * c.N));
    if (bertc_bgemm_isa_supported(BGEMM_ISA_AMXBF16)) {
        bertc_bgemm_set_isa(BGEMM_ISA_AMXBF16);
        bertc_bgemm_reference(c.M, d.A, d.lda, d.w16, c.N, c.K, NULL, d.got, d.ldc);
        for (int64_t i = 0; i < c.M * c.N; i++)
            cr_assert_eq(bits(d.got[i]), bits(amx[i]), "amxbf16 active: "
                         "bertc_bgemm_reference[%lld] = %a, the AMX model %a", (long long)i,
                         d.got[i], amx[i]);
    }
    bertc_bgemm_set_isa(BGEMM_ISA_SCALAR);
    bertc_bgemm_reference(c.M, d.A, d.lda, d.w16, c.N, c.K, NULL, d.got, d.ldc);
    for (int64_t i = 0; i < c.M * c.N; i++)
        cr_assert_eq(bits(d.got[i]), bits(d.want[i]), "scalar active: bertc_bgemm_reference[%lld]"
                     " = %a, the vdpbf16ps order %a", (long long)i, d.got[i], d.want[i]);
    free(amx);
    free_data(&d);
}

/* Edge inputs the AMX model does not pin down to the bit: float32
 * denormals in A (converted to zero), a bf16 denormal in W (read as zero),
 * products that overflow float32 (row 2 times channel 3) and sums that do
 * (row 5: 16 products of 2^126 in one chunk). What can be stated: NaN where
 * the model has NaN, finite where it is finite. */
Test(bgemm, amx_on_edge_inputs_keeps_nan_and_finite_where_its_model_does)
{
    need_amx();
    const BCase c = {17, 50, 70, 0, 0, true};
    Rng rng = bertc_rng_seed(17);
    BData d = make_data(&c, &rng);
    for (int64_t k = 0; k < c.K; k += 3)
        d.A[0 * d.lda + k] = 1e-40f;
    d.w16[1 * c.K + 4] = 0x0001;
    for (int64_t k = 0; k < c.K; k++) {
        d.A[2 * d.lda + k] = 0x1p100f;
        d.w16[3 * c.K + k] = k % 2 ? 0x7F00 : 0xFF00;   /* +-2^127 */
        d.A[5 * d.lda + k] = 0x1p63f;
    }
    for (int64_t j = 0; j < c.N; j++)
        for (int64_t k = 0; k < 32; k++)
            d.w16[j * c.K + k] = 0x5F00;   /* 2^63 */
    d.A[7 * d.lda + 9] = NAN;
    d.A[8 * d.lda + 1] = INFINITY;
    reference(&c, &d);
    int nonfinite = 0;
    for (int64_t i = 0; i < c.M * d.ldc; i++)
        nonfinite += !isfinite(d.want_amx[i]);
    cr_expect(nonfinite >= 3 * c.N, "only %d non-finite outputs of the model", nonfinite);
    for (int threads = 1; threads <= 2; threads++)
        run_path_agree(&c, &d, BGEMM_ISA_AMXBF16, threads, AGREE_CLASS);
    free_data(&d);
}

/* ---- packing --------------------------------------------------------------- */

/* Packing float32 W equals packing its bertc_bf16_from_f32 rounding, byte for
 * byte, and both follow the layout formula of tensor/kernels.h. W holds ties,
 * float32 denormals (which round to zero), NaN and values past the largest bf16. */
Test(bgemm, packing_from_float32_equals_packing_its_bf16)
{
    const int64_t N = 53, K = 37;
    Rng rng = bertc_rng_seed(3);
    float *W = xmalloc(sizeof(float) * N * K);
    uint16_t *w16 = xmalloc(sizeof(uint16_t) * N * K);
    size_t bytes = bertc_bgemm_packed_bytes(N, K);
    uint8_t *m1 = xmalloc(bytes), *m2 = xmalloc(bytes);
    test_fill_uniform(W, N * K, &rng, -3.0f, 3.0f);
    W[1] = from_bits(0x3F808000u), W[2] = from_bits(0x3F818000u), W[3] = 1e-40f;
    W[4] = NAN, W[5] = from_bits(0x7F7FFFFFu), W[6] = -0.0f;
    for (int64_t i = 0; i < N * K; i++)
        w16[i] = bertc_bf16_from_f32(W[i]);
    memset(m1, 0xAB, bytes), memset(m2, 0xCD, bytes);
    Bf16PackedB p1, p2;
    bertc_bgemm_pack_b_f32(W, N, K, m1, &p1);
    bertc_bgemm_pack_b(w16, N, K, m2, &p2);
    cr_assert(p1.N == N && p1.K == K && p1.k_pad == 38 && p1.nr == BGEMM_NR,
              "packed (%lld, %lld) k_pad %lld nr %d", (long long)p1.N, (long long)p1.K,
              (long long)p1.k_pad, p1.nr);
    int64_t n_pad = 96;
    cr_assert(bytes >= (size_t)(n_pad * p1.k_pad) * sizeof(uint16_t), "%zu bytes", bytes);
    for (int64_t i = 0; i < n_pad * p1.k_pad; i++)
        cr_assert_eq(p1.data[i], p2.data[i], "data[%lld]: 0x%04x from float32, 0x%04x from bf16",
                     (long long)i, p1.data[i], p2.data[i]);
    for (int64_t j = 0; j < n_pad; j++)
        for (int64_t k = 0; k < p1.k_pad; k++) {
            int64_t P = j / BGEMM_NR, jj = j % BGEMM_NR, g = k / 2, t = k % 2;
            uint16_t want = j < N && k < K ? w16[j * K + k] : 0;
            uint16_t got = p1.data[P * BGEMM_NR * p1.k_pad + g * BGEMM_NR * 2 + jj * 2 + t];
            cr_assert_eq(got, want, "w[%lld][%lld] packed as 0x%04x, expected 0x%04x",
                         (long long)j, (long long)k, got, want);
        }
    cr_expect_eq(w16[3], 0x0000, "a float32 denormal W packs as +0, not 0x%04x", w16[3]);
    free(W), free(w16), free(m1), free(m2);
}

/* ---- the numbers are right, not only consistent -------------------------- */

/* Against float64 sums of the same float32 inputs: rounding A and W to bf16
 * (relative error at most 2^-8 each) bounds each output's error by
 *     |y - y64| <= 1e-6 + (2^-7 + 2^-8 + K 2^-24) sum_k |a_k w_k|
 * and, the roundings being independent, their RMS over the outputs stays
 * near 2^-8.8 sqrt(sum_k (a_k w_k)^2): the test asks for at most 2^-7.5 of it
 * (and more than 2^-11, so a path that skipped the rounding fails too).
 * A wrong pairing or order of W (a different sum) misses both by far. */
Test(bgemm, close_to_a_float64_gemm_within_bf16_error)
{
    const int64_t M = 32, N = 96, K = 768;
    Rng rng = bertc_rng_seed(11);
    float *A = xmalloc(sizeof(float) * M * K), *W = xmalloc(sizeof(float) * N * K);
    float *Y = xmalloc(sizeof(float) * M * N);
    void *mem = xmalloc(bertc_bgemm_packed_bytes(N, K));
    test_fill_uniform(A, M * K, &rng, -2.0f, 2.0f);
    test_fill_uniform(W, N * K, &rng, -0.5f, 0.5f);
    BgemmIsa paths[BGEMM_ISA_COUNT];
    int np = available_paths(paths);
    for (int p = 0; p < np; p++) {
        bertc_bgemm_set_isa(paths[p]);
        Bf16PackedB pb;
        bertc_bgemm_pack_b_f32(W, N, K, mem, &pb);
        bertc_bgemm(M, A, K, &pb, NULL, Y, N);
        double err2 = 0.0, scale2 = 0.0;
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double y = 0.0, abs_sum = 0.0, sq_sum = 0.0;
                for (int64_t k = 0; k < K; k++) {
                    double t = (double)A[i * K + k] * (double)W[j * K + k];
                    y += t, abs_sum += fabs(t), sq_sum += t * t;
                }
                double err = fabs((double)Y[i * N + j] - y);
                double bound = 1e-6 + (0x1p-7 + 0x1p-8 + (double)K * 0x1p-24) * abs_sum;
                cr_assert(err <= bound, "path %s: Y[%lld][%lld] = %.9g, float64 %.9g: error "
                          "%.3g above bf16's bound %.3g", bertc_bgemm_isa_name(paths[p]),
                          (long long)i, (long long)j, Y[i * N + j], y, err, bound);
                err2 += err * err, scale2 += sq_sum;
            }
        double ratio = sqrt(err2 / scale2);
        cr_expect(ratio <= sqrt(0x1p-15) && ratio >= 0x1p-11, "path %s: RMS error %.3g x "
                  "sqrt(sum (a w)^2), expected about 2^-8.8 = %.3g",
                  bertc_bgemm_isa_name(paths[p]), ratio, pow(2.0, -8.8));
    }
    free(A), free(W), free(Y), free(mem);
}

/* ---- choosing the path ---------------------------------------------------- */

/* avx512 as the fp32 path gives amxbf16 where the CPU has it, else
 * avx512bf16 where it has that; avx2 or scalar gives scalar (no AVX-512 or
 * AMX instruction on the laptop path). */
Test(bgemm, default_path_follows_the_fp32_path)
{
    CpuIsa orig = bertc_cpu_isa();
    unsetenv("BERTC_BF16_ISA");
    bertc_bgemm_set_isa(BGEMM_ISA_COUNT);
    if (bertc_cpu_isa_supported(ISA_AVX512)) {
        bertc_cpu_set_isa(ISA_AVX512);
        BgemmIsa want = bertc_bgemm_isa_supported(BGEMM_ISA_AMXBF16)      ? BGEMM_ISA_AMXBF16
                        : bertc_bgemm_isa_supported(BGEMM_ISA_AVX512BF16) ? BGEMM_ISA_AVX512BF16
                                                                          : BGEMM_ISA_SCALAR;
        cr_expect_eq(bertc_bgemm_isa(), want, "fp32 avx512: bf16 '%s', expected '%s'",
                     bertc_bgemm_isa_name(bertc_bgemm_isa()), bertc_bgemm_isa_name(want));
    }
    if (bertc_cpu_isa_supported(ISA_AVX2)) {
        bertc_cpu_set_isa(ISA_AVX2);
        cr_expect_eq(bertc_bgemm_isa(), BGEMM_ISA_SCALAR, "fp32 avx2: bf16 '%s'",
                     bertc_bgemm_isa_name(bertc_bgemm_isa()));
    }
    bertc_cpu_set_isa(ISA_SCALAR);
    cr_expect_eq(bertc_bgemm_isa(), BGEMM_ISA_SCALAR, "fp32 scalar: bf16 '%s'",
                 bertc_bgemm_isa_name(bertc_bgemm_isa()));
    bertc_cpu_set_isa(orig);
    for (int i = 0; i < BGEMM_ISA_COUNT; i++) {
        BgemmIsa back = BGEMM_ISA_COUNT;
        cr_expect(bertc_bgemm_isa_from_name(bertc_bgemm_isa_name((BgemmIsa)i), &back)
                      && back == (BgemmIsa)i, "the name of BgemmIsa %d does not round-trip", i);
    }
}

Test(bgemm, bertc_check_env_names_a_bad_bf16_path)
{
    BertcError err = {{0}};
    setenv("BERTC_BF16_ISA", "avx9000", 1);
    cr_expect_eq(bertc_check_env(&err), -1, "BERTC_BF16_ISA=avx9000 was accepted");
    cr_expect(strstr(err.msg, "BERTC_BF16_ISA=avx9000: expected one of scalar, avx512bf16, "
                              "amxbf16")
                  != NULL, "message: %s", err.msg);
    if (!bertc_bgemm_isa_supported(BGEMM_ISA_AVX512BF16)) {
        setenv("BERTC_BF16_ISA", "avx512bf16", 1);
        cr_expect_eq(bertc_check_env(&err), -1, "BERTC_BF16_ISA=avx512bf16 (unsupported) "
                     "was accepted");
        cr_expect(strstr(err.msg, "cannot run") != NULL, "message: %s", err.msg);
    }
    setenv("BERTC_BF16_ISA", "scalar", 1);
    cr_expect_eq(bertc_check_env(&err), 0, "BERTC_BF16_ISA=scalar refused: %s", err.msg);
    bertc_bgemm_set_isa(BGEMM_ISA_COUNT);
    cr_expect_eq(bertc_bgemm_isa(), BGEMM_ISA_SCALAR, "BERTC_BF16_ISA=scalar not followed");
    unsetenv("BERTC_BF16_ISA");
}
