/* test/test_dropout_kernel.c — bertc_kernel_dropout draws its mask per element (in
 * SIMD lanes and threads) from the formula draw_i = rng_mix(s + (i+1) gamma)
 * and an integer threshold. Its definition is the plain loop
 *     keep[i] = bertc_rng_uniform(&r) >= p;  out[i] = keep[i] ? a[i] * scale : 0
 * and every path this CPU can run (forced in turn), and 1 or 2 threads, must
 * give that loop's keep bytes, outputs and final Rng state bit for bit: on
 * n = 0..67 (every SIMD tail) and larger n past the threading threshold, for
 * p at 0, 1 and in between, and for states that wrap around 2^64. */
#include "test/test_util.h"
#include "tensor/kernels_internal.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define BIG 40005 /* past PARALLEL_MIN (32768) and not a multiple of any block */

static const float probs[] = {0.0f, 0.1f, 0.5f, 0.9f, 1.0f - 0x1p-24f, 1.0f, 0.3333333f};
static const uint64_t states[] = {42, 0, UINT64_MAX, UINT64_MAX - 3,
                                  (uint64_t)0 - 7 * RNG_GAMMA /* draw 6 sees state 0 */};

typedef struct Bufs {
    float *a, *out, *want_out, *dy, *da, *want_da;
    uint8_t *keep, *want_keep;
} Bufs;

static Bufs b;

static void setup(void)
{
    float **f[] = {&b.a, &b.out, &b.want_out, &b.dy, &b.da, &b.want_da};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        *f[i] = malloc(BIG * sizeof(float));
        cr_assert(*f[i]);
    }
    b.keep = malloc(BIG);
    b.want_keep = malloc(BIG);
    cr_assert(b.keep && b.want_keep);
    Rng r = bertc_rng_seed(7);
    test_fill_uniform(b.a, BIG, &r, -2.0f, 2.0f);
    test_fill_uniform(b.dy, BIG, &r, -1.0f, 1.0f);
    /* Values whose product with scale is delicate: signed zero, infinity, NaN. */
    b.a[3] = -0.0f;
    b.a[5] = -INFINITY;
    b.a[17] = NAN;
}

static void teardown(void)
{
    float *f[] = {b.a, b.out, b.want_out, b.dy, b.da, b.want_da};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        free(f[i]);
    free(b.keep);
    free(b.want_keep);
}

TestSuite(dropout_kernel, .init = setup, .fini = teardown);

static float scale_of(float p)
{
    return p < 1.0f ? 1.0f / (1.0f - p) : 0.0f; /* as bertc_ag_dropout */
}

/* The definition: n calls of bertc_rng_uniform, in order. Returns the Rng after. */
static Rng dropout_by_definition(int64_t n, uint64_t state, float p)
{
    Rng r = {state};
    float scale = scale_of(p);
    for (int64_t i = 0; i < n; i++) {
        b.want_keep[i] = bertc_rng_uniform(&r) >= (double)p;
        b.want_out[i] = b.want_keep[i] ? b.a[i] * scale : 0.0f;
    }
    return r;
}

/* keep and out equal the definition's bit for bit; names the first index
 * that does not. */
static void expect_definition(const char *what, CpuIsa isa, int64_t n, uint64_t state,
                              float p)
{
    for (int64_t i = 0; i < n; i++) {
        cr_assert(b.keep[i] == b.want_keep[i] &&
                      memcmp(&b.out[i], &b.want_out[i], sizeof(float)) == 0,
                  "%s [%s] n=%lld state=%llu p=%.9g: at %lld keep %d out %.9g, "
                  "expected keep %d out %.9g",
                  what, bertc_cpu_isa_name(isa), (long long)n, (unsigned long long)state,
                  (double)p, (long long)i, b.keep[i], (double)b.out[i], b.want_keep[i],
                  (double)b.want_out[i]);
    }
}

/* One case on one path: the dispatched kernel (threads as set) and the
 * scalar reference against the definition, and the Rng state after. */
static void forward_case(CpuIsa isa, int64_t n, uint64_t state, float p)
{
    Rng after = dropout_by_definition(n, state, p);
    uint64_t t = bertc_rng_uniform_threshold((double)p);
    bertc_cpu_set_isa(isa);
    memset(b.keep, 0xAA, (size_t)n);
    bertc_kernel_dropout(b.a, b.out, b.keep, n, state, t, scale_of(p));
    expect_definition("bertc_kernel_dropout", isa, n, state, p);
    memset(b.keep, 0xAA, (size_t)n);
    bertc_row_kernels_scalar.dropout(b.a, b.out, b.keep, n, state, t, scale_of(p));
    expect_definition("the scalar dropout", isa, n, state, p);
    cr_assert_eq(state + (uint64_t)n * RNG_GAMMA, after.state,
                 "n=%lld draws from state %llu: skipping ahead gives %llu, the loop %llu",
                 (long long)n, (unsigned long long)state,
                 (unsigned long long)(state + (uint64_t)n * RNG_GAMMA),
                 (unsigned long long)after.state);
}

/* Calls fn for every path this CPU runs, p, state and n in 0..67 and BIG. */
static void for_each_case(void (*fn)(CpuIsa isa, int64_t n, uint64_t state, float p))
{
    CpuIsa orig = bertc_cpu_isa();
    for (int isa = 0; isa < ISA_COUNT; isa++) {
        if (!bertc_cpu_isa_supported((CpuIsa)isa))
            continue;
        for (size_t ip = 0; ip < sizeof probs / sizeof probs[0]; ip++)
            for (size_t is = 0; is < sizeof states / sizeof states[0]; is++) {
                for (int64_t n = 0; n <= 67; n++)
                    fn((CpuIsa)isa, n, states[is], probs[ip]);
                fn((CpuIsa)isa, 4099, states[is], probs[ip]);
                fn((CpuIsa)isa, BIG, states[is], probs[ip]);
            }
    }
    bertc_cpu_set_isa(orig);
}

Test(dropout_kernel, every_path_matches_the_rng_uniform_loop)
{
    for_each_case(forward_case);
}

/* The threshold splits the draws exactly where `uniform >= p` does, for
 * every p in the list and for the p on either side of it. */
Test(dropout_kernel, threshold_is_where_uniform_crosses_p)
{
    for (size_t ip = 0; ip < sizeof probs / sizeof probs[0]; ip++) {
        double ps[3] = {nextafter((double)probs[ip], 0.0), (double)probs[ip],
                        nextafter((double)probs[ip], 2.0)};
        for (int j = 0; j < 3; j++) {
            uint64_t t = bertc_rng_uniform_threshold(ps[j]);
            cr_assert(t <= 1ull << 53, "p=%.17g: threshold %llu above 2^53", ps[j],
                      (unsigned long long)t);
            if (t > 0)
                cr_assert(!(bertc_rng_uniform_of((t - 1) << 11) >= ps[j]),
                          "p=%.17g: m = T-1 = %llu already passes", ps[j],
                          (unsigned long long)(t - 1));
            if (t < 1ull << 53)
                cr_assert(bertc_rng_uniform_of(t << 11) >= ps[j], "p=%.17g: m = T = %llu fails",
                          ps[j], (unsigned long long)t);
        }
    }
    /* The top draw rounds to exactly 1, so with p = 1 it is kept. */
    cr_assert_eq(bertc_rng_uniform_of(UINT64_MAX), 1.0);
    cr_assert_eq(bertc_rng_uniform_threshold(1.0), (1ull << 53) - 1);
}

/* ---- draws planted at the threshold ------------------------------------------ */

/* The inverse of z ^= z >> k. */
static uint64_t unxorshift(uint64_t z, int k)
{
    uint64_t x = z;
    for (int i = 0; i < 64 / k + 1; i++)
        x = z ^ (x >> k);
    return x;
}

/* c^-1 mod 2^64 for odd c (Newton: each step doubles the correct bits). */
static uint64_t mul_inverse(uint64_t c)
{
    uint64_t x = c; /* correct to 3 bits */
    for (int i = 0; i < 5; i++)
        x *= 2 - c * x;
    return x;
}

/* The state s with rng_mix(s) = z. */
static uint64_t unmix(uint64_t z)
{
    z = unxorshift(z, 31);
    z *= mul_inverse(0x94D049BB133111EBull);
    z = unxorshift(z, 27);
    z *= mul_inverse(0xBF58476D1CE4E5B9ull);
    return unxorshift(z, 30);
}

/* Random draws almost never land on the threshold, so put them there: draws
 * m = T-1 and m = T at positions in the SIMD body and in the tail (for p = 1,
 * m = 2^53 - 1, the one draw that is kept). */
Test(dropout_kernel, draws_at_the_threshold)
{
    CpuIsa orig = bertc_cpu_isa();
    const int64_t n = 45, at[] = {0, 7, 8, 20, 33, 44};
    for (size_t ip = 0; ip < sizeof probs / sizeof probs[0]; ip++) {
        uint64_t t = bertc_rng_uniform_threshold((double)probs[ip]);
        for (uint64_t m = t > 0 ? t - 1 : t; m <= t && m < 1ull << 53; m++)
            for (size_t j = 0; j < sizeof at / sizeof at[0]; j++) {
                uint64_t z = m << 11 | 0x5A5;
                uint64_t state = unmix(z) - (uint64_t)(at[j] + 1) * RNG_GAMMA;
                Rng r = {state};
                for (int64_t i = 0; i < at[j]; i++)
                    bertc_rng_next_u64(&r);
                cr_assert_eq(bertc_rng_next_u64(&r), z, "unmix is wrong");
                for (int isa = 0; isa < ISA_COUNT; isa++)
                    if (bertc_cpu_isa_supported((CpuIsa)isa))
                        forward_case((CpuIsa)isa, n, state, probs[ip]);
                cr_assert_eq(b.want_keep[at[j]], m >= t);
            }
    }
    bertc_cpu_set_isa(orig);
}

/* ---- backward ------------------------------------------------------------------ */

/* da starts random with some -0 (a dropped element must leave it as is). */
static void fill_da(int64_t n)
{
    Rng r = bertc_rng_seed(11);
    test_fill_uniform(b.da, n, &r, -1.0f, 1.0f);
    for (int64_t i = 0; i < n; i += 5)
        b.da[i] = -0.0f;
    memcpy(b.want_da, b.da, (size_t)n * sizeof(float));
}

static void backward_case(CpuIsa isa, int64_t n, uint64_t state, float p)
{
    dropout_by_definition(n, state, p);
    float scale = scale_of(p);
    fill_da(n);
    for (int64_t i = 0; i < n; i++)
        if (b.want_keep[i])
            b.want_da[i] += scale * b.dy[i];
    bertc_cpu_set_isa(isa);
    bertc_kernel_dropout_backward(b.want_keep, b.dy, scale, b.da, n);
    for (int64_t i = 0; i < n; i++)
        cr_assert(memcmp(&b.da[i], &b.want_da[i], sizeof(float)) == 0,
                  "bertc_kernel_dropout_backward [%s] n=%lld p=%.9g: da[%lld] = %.9g, expected %.9g",
                  bertc_cpu_isa_name(isa), (long long)n, (double)p, (long long)i, (double)b.da[i],
                  (double)b.want_da[i]);
}

Test(dropout_kernel, backward_every_path_matches_the_loop)
{
    for_each_case(backward_case);
}

/* ---- threads ------------------------------------------------------------------- */

/* The blocks on 2 threads compute their own place in the stream: the same
 * bits as 1 thread (and as the definition, which forward_case checks). */
Test(dropout_kernel, two_threads_match_the_loop)
{
    int saved = bertc_threads_count();
    for (int threads = 1; threads <= 2; threads++) {
        bertc_threads_set_count(threads);
        for (int isa = 0; isa < ISA_COUNT; isa++) {
            if (!bertc_cpu_isa_supported((CpuIsa)isa))
                continue;
            forward_case((CpuIsa)isa, BIG, 42, 0.1f);
            backward_case((CpuIsa)isa, BIG, 42, 0.1f);
        }
    }
    bertc_threads_set_count(saved);
}

/* bertc_ag_dropout moves the graph's Rng on by exactly n draws. */
Test(dropout_kernel, ag_dropout_advances_the_graph_rng)
{
    const int64_t n = 1003;
    Graph *g = bertc_ag_graph_create(1 << 20, 99);
    bertc_ag_set_training(g, true);
    int64_t shape[1] = {n};
    Var *x = bertc_ag_tensor(g, 1, shape, false);
    memcpy(x->value.data, b.a, (size_t)n * sizeof(float));
    uint64_t state = g->rng.state;
    Rng after = dropout_by_definition(n, state, 0.3f);
    Var *y = bertc_ag_dropout(g, x, 0.3f);
    cr_assert_eq(g->rng.state, after.state, "graph Rng after dropout: %llu, expected %llu",
                 (unsigned long long)g->rng.state, (unsigned long long)after.state);
    for (int64_t i = 0; i < n; i++)
        cr_assert(memcmp(&y->value.data[i], &b.want_out[i], sizeof(float)) == 0,
                  "bertc_ag_dropout out[%lld] = %.9g, expected %.9g", (long long)i,
                  (double)y->value.data[i], (double)b.want_out[i]);
    bertc_ag_graph_destroy(g);
}
