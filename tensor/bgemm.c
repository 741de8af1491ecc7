/* tensor/bgemm.c — the bf16 GEMM:
 *     Y (M, N) = bf16(A) (M, K) . W^T (K, N) + bias,  W bf16, float32 sums
 * (the definition and the API: tensor/kernels.h, "BF16 GEMM for inference").
 *
 * This file holds the definition (the conversions, one vdpbf16ps lane as
 * bertc_bgemm_dot2, the AMX model, the oracle bertc_bgemm_reference, the
 * scalar micro-kernel), the choice of path, the packing of W and the blocked
 * driver. The AVX512_BF16 micro-kernel lives in tensor/bgemm_avx512bf16.c,
 * the AMX-BF16 one in tensor/bgemm_amx.c, the NEON BFDOT one in
 * tensor/bgemm_neon.c (its lane, bertc_bgemm_bfdot2: tensor/bgemm_bfdot.c).
 *
 * The driver, for W packed in panels of NR = 48 channels:
 *
 *   convert A -> a (M x k_pad bf16)
 *   for ic in M step MC:          MC rows of a (L2)
 *     for panel P in N step NR:   W's panel P (NR x k_pad bf16, L2)
 *       for ir in MC step MR:     micro-kernel: Y[ic+ir:+MR, P*NR:+NR], whole K
 *
 * There is no blocking over K: the float32 accumulators of a tile stay in
 * registers for the whole reduction, in the order of the definition, so
 * splitting K would change the bits. A is converted first, rows split over
 * the threads, into a buffer of the calling thread; then threads take (ic,
 * group of panels) work items from a shared counter, as in tensor/qgemm.c.
 * Each entry of Y is computed by one tile in one fixed order, so Y is
 * bitwise the same with any thread count, and on the paths of one
 * arithmetic (scalar and avx512bf16; amxbf16 and neonbf16 have their own,
 * tensor/kernels.h). */
#include "tensor/bgemm_internal.h"
#include "tensor/isa_internal.h"
#include "tensor/scratch_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t ceil_div(int64_t n, int64_t d) { return (n + d - 1) / d; }
static int64_t round_up(int64_t n, int64_t m) { return ceil_div(n, m) * m; }

/* ------------------------------------------------------------------------ */
/* The definition: conversions, one lane of vdpbf16ps, the oracle            */
/* ------------------------------------------------------------------------ */

static uint32_t f32_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static float bits_f32(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* VCVTNEPS2BF16's convert_fp32_to_bfloat16 (Intel SDM), step for step. */
uint16_t bertc_bf16_from_f32(float x)
{
    uint32_t u = f32_bits(x);
    if ((u & 0x7F800000u) == 0)                            /* zero or denormal */
        return (uint16_t)((u >> 16) & 0x8000u);
    if ((u & 0x7F800000u) == 0x7F800000u && (u & 0x007FFFFFu) != 0)   /* NaN */
        return (uint16_t)((u >> 16) | 0x0040u);
    return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);   /* ties to even */
}

float bertc_bf16_to_f32(uint16_t b)
{
    return bits_f32((uint32_t)b << 16);
}

/* A denormal as zero of its sign: read so (DAZ) or written so (FTZ). A NaN
 * passes (the compare is false). */
static float flush_denormal(float x)
{
    return fabsf(x) < 0x1p-126f ? copysignf(0.0f, x) : x;
}

/* The NaN a NaN operand gives: the same with the quiet bit set. */
static float quiet(float x)
{
    return bits_f32(f32_bits(x) | 0x00400000u);
}

/* acc + a w rounded once (fmaf), then a denormal result written as zero of
 * its sign (FTZ). fmaf rounds to the denormal grid first; the hardware
 * flushes what that rounding leaves below 2^-126 (test/test_bgemm.c). Which
 * NaN comes out is not left to fmaf (its operand order, or a C library's
 * software fmaf, would decide): the first NaN of a, w, acc, quieted, as
 * vdpbf16ps does; a NaN made of numbers (Inf * 0, Inf - Inf) is x86's
 * default NaN, 0xFFC00000. */
static float fma_daz_ftz(uint16_t a, uint16_t w, float acc)
{
    float fa = flush_denormal(bertc_bf16_to_f32(a)), fw = flush_denormal(bertc_bf16_to_f32(w));
    if (isnan(fa) || isnan(fw) || isnan(acc))
        return quiet(isnan(fa) ? fa : isnan(fw) ? fw : acc);
    float r = fmaf(fa, fw, flush_denormal(acc));
    return isnan(r) ? bits_f32(0xFFC00000u) : flush_denormal(r);
}

float bertc_bgemm_dot2(float acc, uint16_t a0, uint16_t a1, uint16_t w0, uint16_t w1)
{
    acc = fma_daz_ftz(a1, w1, acc);   /* the odd element first, as the hardware */
    return fma_daz_ftz(a0, w0, acc);
}

void bertc_bgemm_convert_row_scalar(const float *x, int64_t cols, int64_t k_pad, uint16_t *b)
{
    for (int64_t k = 0; k < cols; k++)
        b[k] = bertc_bf16_from_f32(x[k]);
    for (int64_t k = cols; k < k_pad; k++)
        b[k] = 0;
}

void bertc_bgemm_convert_trans_scalar(const float *src, int64_t lds, int kn, int cols, int rows,
                                      uint16_t *out, int64_t ldo)
{
    for (int i = 0; i < rows; i++)
        for (int k = 0; k < kn; k++)
            out[i * ldo + k] = i < cols ? bertc_bf16_from_f32(src[k * lds + i]) : 0;
}

void bertc_bgemm_convert_pairs_scalar(const float *even, const float *odd, int n, uint16_t *out)
{
    for (int j = 0; j < BGEMM_NR; j++) {
        out[2 * j] = j < n ? bertc_bf16_from_f32(even[j]) : 0;
        out[2 * j + 1] = j < n && odd ? bertc_bf16_from_f32(odd[j]) : 0;
    }
}

void bertc_bgemm_transpose_tile_scalar(const uint16_t *src, int64_t lds, int kn, int cols,
                                       int rows, uint16_t *out, int64_t ldo)
{
    for (int i = 0; i < rows; i++)
        for (int k = 0; k < kn; k++)
            out[i * ldo + k] = i < cols ? src[k * lds + i] : 0;
}

/* Element k of a row of n, or the zero that pads K to even. */
static uint16_t at(const uint16_t *row, int64_t n, int64_t k)
{
    return k < n ? row[k] : 0;
}

/* Element k of row a of A (K long) as bf16, or the zero that pads K. */
static uint16_t a_at(const float *a, int64_t K, int64_t k)
{
    return k < K ? bertc_bf16_from_f32(a[k]) : 0;
}

/* y[i][j] without bias, the vdpbf16ps order: one fma per product, the odd
 * k of each pair first. */
static float dot_vdpbf16ps(const float *a, const uint16_t *w, int64_t K)
{
    float acc = 0.0f;
    for (int64_t k = 0; k < K; k += 2)
        acc = bertc_bgemm_dot2(acc, a_at(a, K, k), a_at(a, K, k + 1), w[k], at(w, K, k + 1));
    return acc;
}

/* y[i][j] without bias, BFDOT's order: one lane per pair, in k order. */
static float dot_bfdot(const float *a, const uint16_t *w, int64_t K)
{
    float acc = 0.0f;
    for (int64_t k = 0; k < K; k += 2)
        acc = bertc_bgemm_bfdot2(acc, a_at(a, K, k), a_at(a, K, k + 1), w[k], at(w, K, k + 1));
    return acc;
}

/* One product as the AMX model reads it: daz inputs, the float32 product
 * (exact for bf16 inputs that neither overflow nor underflow), ftz. */
static float amx_product(uint16_t a, uint16_t w)
{
    return flush_denormal(flush_denormal(bertc_bf16_to_f32(a))
                          * flush_denormal(bertc_bf16_to_f32(w)));
}

/* y[i][j] without bias as TDPBF16PS computes it on ordinary values: K cut
 * into chunks of 16 pairs (one instruction; the last one shorter), and per
 * chunk the even products summed in order into E, the odd ones into O, each
 * sum rounded to float32; then acc = ftz(acc + ftz(E + O)). */
static float dot_amx(const float *a, const uint16_t *w, int64_t K)
{
    int64_t pairs = (K + 1) / 2;
    float acc = 0.0f;
    for (int64_t g0 = 0; g0 < pairs; g0 += 16) {
        int64_t g1 = min64(g0 + 16, pairs);
        float E = amx_product(a_at(a, K, 2 * g0), w[2 * g0]);
        float O = amx_product(a_at(a, K, 2 * g0 + 1), at(w, K, 2 * g0 + 1));
        for (int64_t g = g0 + 1; g < g1; g++) {
            E = flush_denormal(E + amx_product(a_at(a, K, 2 * g), w[2 * g]));
            O = flush_denormal(O + amx_product(a_at(a, K, 2 * g + 1), at(w, K, 2 * g + 1)));
        }
        acc = flush_denormal(acc + flush_denormal(E + O));
    }
    return acc;
}

/* Converts A element by element, inside the loops: no buffer, so it runs on
 * a target without a heap too. */
void bertc_bgemm_reference_for(BgemmIsa isa, int64_t M, const float *A, int64_t lda,
                               const uint16_t *W, int64_t N, int64_t K, const float *bias,
                               float *C, int64_t ldc)
{
    float (*dot)(const float *, const uint16_t *, int64_t) =
        isa == BGEMM_ISA_AMXBF16     ? dot_amx
        : isa == BGEMM_ISA_NEONBF16 ? dot_bfdot
                                    : dot_vdpbf16ps;
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            float acc = dot(A + i * lda, W + j * K, K);
            C[i * ldc + j] = bias ? acc + bias[j] : acc;
        }
}

void bertc_bgemm_reference(int64_t M, const float *A, int64_t lda, const uint16_t *W, int64_t N,
                           int64_t K, const float *bias, float *C, int64_t ldc)
{
    bertc_bgemm_reference_for(bertc_bgemm_isa(), M, A, lda, W, N, K, bias, C, ldc);
}

/* ------------------------------------------------------------------------ */
/* The scalar path                                                           */
/* ------------------------------------------------------------------------ */

enum { SCALAR_MR = 4 };

static void kernel_scalar(int64_t k_pad, const uint16_t *a, int64_t lda, const uint16_t *b,
                          const float *bias, float *c, int64_t ldc)
{
    float acc[SCALAR_MR][BGEMM_NR] = {{0}};
    for (int64_t k = 0; k < k_pad; k += 2, b += 2 * BGEMM_NR)
        for (int i = 0; i < SCALAR_MR; i++)
            for (int j = 0; j < BGEMM_NR; j++)
                acc[i][j] = bertc_bgemm_dot2(acc[i][j], a[i * lda + k], a[i * lda + k + 1],
                                             b[2 * j], b[2 * j + 1]);
    for (int i = 0; i < SCALAR_MR; i++)
        for (int j = 0; j < BGEMM_NR; j++)
            c[i * ldc + j] = bias ? acc[i][j] + bias[j] : acc[i][j];
}

const BgemmKernel bertc_bgemm_kernel_scalar = {
    .isa = BGEMM_ISA_SCALAR,
    .mr = SCALAR_MR,
    .mc = 64,
    .ka = 2,
    .convert_row = bertc_bgemm_convert_row_scalar,
    .convert_trans = bertc_bgemm_convert_trans_scalar,
    .convert_pairs = bertc_bgemm_convert_pairs_scalar,
    .transpose_tile = bertc_bgemm_transpose_tile_scalar,
    .kernel = kernel_scalar,
};

/* ------------------------------------------------------------------------ */
/* Choosing the path                                                         */
/* ------------------------------------------------------------------------ */

static bool detect_always(void)
{
    return true;
}

#if defined(__x86_64__) && defined(__GNUC__)
/* AVX512_BF16 is CPUID leaf 7, sub-leaf 1, EAX bit 5, asked of cpuid
 * directly (as AVX-VNNI in tensor/qgemm.c). __builtin_cpu_supports("avx512f")
 * also says the OS saves the zmm and mask registers (XCR0), which the
 * AVX-512 instructions need. */
static bool cpu_has_avx512_bf16(void)
{
    unsigned eax, ebx, ecx, edx;
    if (!__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx))
        return false;
    return (eax >> 5) & 1u;
}

static bool detect_avx512bf16(void)
{
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")
        && __builtin_cpu_supports("avx512vl") && cpu_has_avx512_bf16();
}
#endif
#if defined(BGEMM_HAVE_AMX)
/* The AMX path converts A with the AVX512_BF16 converter. */
static bool detect_amxbf16(void)
{
    return detect_avx512bf16() && bertc_bgemm_amx_usable();
}
#endif

/* One row per path. A row's detection and kernel exist only in the builds
 * for its architecture, hence the #if inside it: elsewhere the row keeps
 * only its name (BERTC_BF16_ISA=avx512bf16 on aarch64 is a path this build
 * lacks, not an unknown name). */
typedef struct BgemmPath {
    const char *name;           /* BERTC_BF16_ISA's spelling */
    bool (*detect)(void);       /* can this CPU run it? NULL: not in this build */
    const BgemmKernel *kernel;
} BgemmPath;

static const BgemmPath bgemm_paths[BGEMM_ISA_COUNT] = {
    [BGEMM_ISA_SCALAR] = {
        .name = "scalar",
        .detect = detect_always,
        .kernel = &bertc_bgemm_kernel_scalar,
    },
    [BGEMM_ISA_AVX512BF16] = {
        .name = "avx512bf16",
#if defined(__x86_64__) && defined(__GNUC__)
        .detect = detect_avx512bf16,
        .kernel = &bertc_bgemm_kernel_avx512bf16,
#endif
    },
    [BGEMM_ISA_AMXBF16] = {
        .name = "amxbf16",
#if defined(BGEMM_HAVE_AMX)
        .detect = detect_amxbf16,
        .kernel = &bertc_bgemm_kernel_amxbf16,
#endif
    },
    [BGEMM_ISA_NEONBF16] = {
        .name = "neonbf16",
#if defined(BGEMM_HAVE_NEONBF16)
        .detect = bertc_bgemm_neon_has_bf16,
        .kernel = &bertc_bgemm_kernel_neonbf16,
#endif
    },
};

const char *bertc_bgemm_isa_name(BgemmIsa isa)
{
    return (unsigned)isa < BGEMM_ISA_COUNT ? bgemm_paths[isa].name : "unknown";
}

bool bertc_bgemm_isa_from_name(const char *name, BgemmIsa *isa)
{
    for (int i = 0; i < BGEMM_ISA_COUNT; i++)
        if (strcmp(name, bgemm_paths[i].name) == 0) {
            *isa = (BgemmIsa)i;
            return true;
        }
    return false;
}

/* What each path's detect said (bertc_isa_detect_once). */
static _Atomic unsigned char detected[BGEMM_ISA_COUNT];

bool bertc_bgemm_isa_supported(BgemmIsa isa)
{
    return (unsigned)isa < BGEMM_ISA_COUNT && bgemm_paths[isa].detect
        && bertc_isa_detect_once(&detected[isa], bgemm_paths[isa].detect);
}

/* The first bf16 path the fp32 path's row of the ISA table allows that
 * this CPU runs: with the fp32 path forced to avx2, no AVX-512 or AMX
 * instruction runs here either. */
static BgemmIsa default_isa(void)
{
    const BgemmIsa *allowed = bertc_isa_active()->bf16;
    for (int i = 0; i < ISA_BF16_MAX && allowed[i] != BGEMM_ISA_SCALAR; i++)
        if (bertc_bgemm_isa_supported(allowed[i]))
            return allowed[i];
    return BGEMM_ISA_SCALAR;
}

static bool env_read = false;
static int forced_isa = -1;   /* bertc_bgemm_set_isa or BERTC_BF16_ISA; -1: the default */

void bertc_bgemm_set_isa(BgemmIsa isa)
{
    if (isa == BGEMM_ISA_COUNT) {   /* back to the default: read the variable again */
        forced_isa = -1;
        env_read = false;
        return;
    }
    if (!bertc_bgemm_isa_supported(isa))
        bertc_fatal("bertc_bgemm_set_isa: this CPU (or build) cannot run the '%s' bf16 path",
                    bertc_bgemm_isa_name(isa));
    forced_isa = (int)isa;
    env_read = true;
}

BgemmIsa bertc_bgemm_isa(void)
{
    if (!env_read) {
        const char *env = getenv("BERTC_BF16_ISA");
        BgemmIsa isa;
        if (env && *env) {
            if (!bertc_bgemm_isa_from_name(env, &isa))
                bertc_fatal("BERTC_BF16_ISA=%s: expected one of scalar, avx512bf16, amxbf16, "
                            "neonbf16", env);
            bertc_bgemm_set_isa(isa);
        }
        env_read = true;
    }
    return forced_isa >= 0 ? (BgemmIsa)forced_isa : default_isa();
}

/* ------------------------------------------------------------------------ */
/* Packing W                                                                 */
/* ------------------------------------------------------------------------ */

static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

size_t bertc_bgemm_packed_bytes(int64_t N, int64_t K)
{
    size_t n_pad = (size_t)round_up(N, BGEMM_NR), k_pad = (size_t)round_up(K, 2);
    return align64(n_pad * k_pad * sizeof(uint16_t));
}

/* The description of W (N, K) in mem, after checking both. */
Bf16PackedB bertc_bgemm_packed_header(const char *fn, int64_t N, int64_t K, void *mem)
{
    if (N < 1 || K < 1)
        bertc_fatal("%s: W is (%lld, %lld); need N >= 1 and K >= 1", fn, (long long)N,
                    (long long)K);
    if ((uintptr_t)mem % 64 != 0)
        bertc_fatal("%s: mem %p is not 64-byte aligned", fn, mem);
    return (Bf16PackedB){.N = N, .K = K, .k_pad = round_up(K, 2), .nr = BGEMM_NR,
                         .isa = (int)bertc_bgemm_isa(), .data = mem};
}

/* data[P * nr * k_pad + g * nr * 2 + jj * 2 + t] = w[P * nr + jj][2 g + t],
 * w[j][k] = bf16(W[j * K + k]) (f32 set) or W16[j * K + k], zero past N or K. */
static void pack_panels(const float *W, const uint16_t *W16, Bf16PackedB *pb)
{
    int64_t nr = pb->nr, n_pad = round_up(pb->N, nr), K = pb->K;
    for (int64_t P = 0; P < n_pad / nr; P++)
        for (int64_t g = 0; g < pb->k_pad / 2; g++)
            for (int64_t jj = 0; jj < nr; jj++)
                for (int64_t t = 0; t < 2; t++) {
                    int64_t j = P * nr + jj, k = 2 * g + t;
                    uint16_t w = 0;
                    if (j < pb->N && k < K)
                        w = W ? bertc_bf16_from_f32(W[j * K + k]) : W16[j * K + k];
                    pb->data[P * nr * pb->k_pad + g * nr * 2 + jj * 2 + t] = w;
                }
}

void bertc_bgemm_pack_b_f32(const float *W, int64_t N, int64_t K, void *mem, Bf16PackedB *out)
{
    *out = bertc_bgemm_packed_header("bertc_bgemm_pack_b_f32", N, K, mem);
    pack_panels(W, NULL, out);
}

void bertc_bgemm_pack_b(const uint16_t *W, int64_t N, int64_t K, void *mem, Bf16PackedB *out)
{
    *out = bertc_bgemm_packed_header("bertc_bgemm_pack_b", N, K, mem);
    pack_panels(NULL, W, out);
}

/* ------------------------------------------------------------------------ */
/* The driver                                                                */
/* ------------------------------------------------------------------------ */


/* The calling thread's converted rows of A, kept between calls. */
static SCRATCH_THREAD_LOCAL ScratchBuffer a_buffer;

/* Rows [begin, end) of A (float32, row stride lda) -> a (rows of a_cols
 * bf16; the rows past M are zero rows). */
typedef struct ConvertJob {
    const BgemmKernel *kr;
    const float *A;
    int64_t M, K, lda;
    uint16_t *a;
    int64_t a_cols;
} ConvertJob;

static void convert_range(void *ctx, int64_t begin, int64_t end)
{
    const ConvertJob *job = ctx;
    int64_t a_cols = job->a_cols;
    for (int64_t r = begin; r < end; r++) {
        uint16_t *row = job->a + r * a_cols;
        if (r < job->M)
            job->kr->convert_row(job->A + r * job->lda, job->K, a_cols, row);
        else
            memset(row, 0, sizeof(uint16_t) * (size_t)a_cols);
    }
}

/* Elements of A below which its conversion stays on the caller. */
#define BGEMM_MIN_THREAD_CONVERT (1 << 15)

void bertc_bgemm_convert_a(const BgemmKernel *kr, int64_t M, int64_t K, const float *A,
                           int64_t lda, uint16_t *a, int64_t a_cols)
{
    int64_t rows_pad = round_up(M, kr->mr);
    ConvertJob job = {.kr = kr, .A = A, .M = M, .K = K, .lda = lda, .a = a, .a_cols = a_cols};
    if (bertc_threads_count() > 1 && M * a_cols >= BGEMM_MIN_THREAD_CONVERT)
        bertc_parallel_for(rows_pad, convert_range, &job);
    else
        convert_range(&job, 0, rows_pad);
}

/* One product, A converted: item i covers rows [ic, ic + MC),
 * ic = (i / items_per_ic) * MC, and panels [p0, p0 + panels_per_item),
 * p0 = (i % items_per_ic) * panels_per_item. */
typedef struct BgemmJob {
    const BgemmKernel *kr;
    const Bf16PackedB *pb;
    int64_t M;
    const uint16_t *a;
    int64_t a_cols;
    const float *bias;
    bool accumulate;          /* C += the product (no bias) */
    float *C;
    int64_t ldc;
    int64_t n_panels, panels_per_item, items_per_ic, n_items;
    WorkCounter next;
} BgemmJob;

/* C[i0 : i0 + m, panel P's columns]: the micro-kernel straight into C when
 * the tile is whole and written, else into a scratch tile (with a padded
 * bias) whose m x n corner is copied, or added, to C. */
static void run_tile(const BgemmJob *job, int64_t i0, int m, int64_t P)
{
    const BgemmKernel *kr = job->kr;
    const Bf16PackedB *pb = job->pb;
    int64_t j0 = P * BGEMM_NR;
    int n = (int)min64(BGEMM_NR, pb->N - j0);
    const uint16_t *a = job->a + i0 * job->a_cols;
    const uint16_t *b = pb->data + P * BGEMM_NR * pb->k_pad;
    const float *bias = job->bias ? job->bias + j0 : NULL;
    float *c = job->C + i0 * job->ldc + j0;
    if (m == kr->mr && n == BGEMM_NR && !job->accumulate) {
        kr->kernel(pb->k_pad, a, job->a_cols, b, bias, c, job->ldc);
        return;
    }
    _Alignas(64) float tile[BGEMM_MR_MAX * BGEMM_NR];
    float bias_pad[BGEMM_NR] = {0};
    if (bias)
        memcpy(bias_pad, bias, sizeof(float) * (size_t)n);
    kr->kernel(pb->k_pad, a, job->a_cols, b, bias ? bias_pad : NULL, tile, BGEMM_NR);
    for (int i = 0; i < m; i++) {
        const float *t = tile + i * BGEMM_NR;
        float *ci = c + i * job->ldc;
        if (job->accumulate)
            for (int j = 0; j < n; j++)
                ci[j] += t[j];
        else
            memcpy(ci, t, sizeof(float) * (size_t)n);
    }
}

/* A thread's share: items until none are left. */
static void bgemm_worker(void *ctx, int64_t begin, int64_t end)
{
    (void)begin, (void)end;
    BgemmJob *job = ctx;
    const BgemmKernel *kr = job->kr;
    if (kr->enter)
        kr->enter();
    for (int64_t item; (item = work_counter_next(&job->next)) < job->n_items;) {
        int64_t ic = item / job->items_per_ic * kr->mc, mc = min64(kr->mc, job->M - ic);
        int64_t p0 = item % job->items_per_ic * job->panels_per_item;
        int64_t p1 = min64(p0 + job->panels_per_item, job->n_panels);
        for (int64_t P = p0; P < p1; P++)
            for (int64_t ir = 0; ir < mc; ir += kr->mr)
                run_tile(job, ic + ir, (int)min64(kr->mr, mc - ir), P);
    }
    if (kr->leave)
        kr->leave();
}

/* Multiply-adds below which a thread is not worth waking (bf16 runs ~2x the
 * fp32 rate, so 2x tensor/gemm.c's threshold). */
#define BGEMM_MIN_THREAD_WORK (1 << 22)

const BgemmKernel *bertc_bgemm_kernel(void) { return bgemm_paths[bertc_bgemm_isa()].kernel; }

int bertc_bgemm_thread_count(int64_t M, int64_t N, int64_t k_pad)
{
    double work = (double)M * (double)N * (double)k_pad / BGEMM_MIN_THREAD_WORK;
    int threads = bertc_threads_count();
    return work < 1.0 ? 1 : work < threads ? (int)work : threads;
}

void bertc_bgemm_converted(const BgemmKernel *kr, int64_t M, const uint16_t *a, int64_t a_cols,
                           const Bf16PackedB *pb, const float *bias, bool accumulate, float *C,
                           int64_t ldc)
{
    int threads = bertc_bgemm_thread_count(M, pb->N, pb->k_pad);
    BgemmJob job = {.kr = kr, .pb = pb, .M = M, .a = a, .a_cols = a_cols, .bias = bias,
                    .accumulate = accumulate, .C = C, .ldc = ldc,
                    .n_panels = ceil_div(pb->N, BGEMM_NR)};
    /* About 4 items per thread: the row blocks, then groups of panels in each. */
    int64_t n_ic = ceil_div(M, kr->mc);
    int64_t groups = min64(ceil_div(4 * (int64_t)threads, n_ic), job.n_panels);
    job.panels_per_item = ceil_div(job.n_panels, groups);
    job.items_per_ic = ceil_div(job.n_panels, job.panels_per_item);
    job.n_items = n_ic * job.items_per_ic;
    work_counter_reset(&job.next);
    if (threads == 1)
        bgemm_worker(&job, 0, 1);
    else
        bertc_parallel_for(threads, bgemm_worker, &job);
}

void bertc_bgemm(int64_t M, const float *A, int64_t lda, const Bf16PackedB *pb,
                 const float *bias, float *C, int64_t ldc)
{
    BgemmIsa active = bertc_bgemm_isa();
    const BgemmKernel *kr = bgemm_paths[active].kernel;
    if (pb->nr != BGEMM_NR)
        bertc_fatal("bertc_bgemm: W (%lld, %lld) was packed in panels of %d, the '%s' path "
                    "reads %d; pack it with bertc_bgemm_pack_b", (long long)pb->N,
                    (long long)pb->K, pb->nr, bertc_bgemm_isa_name(active), BGEMM_NR);
    if (M <= 0)
        return;
    if (lda < pb->K || ldc < pb->N)
        bertc_fatal("bertc_bgemm: A (%lld, %lld) with row stride %lld, Y (%lld, %lld) with row "
                    "stride %lld: a stride is shorter than its row", (long long)M,
                    (long long)pb->K, (long long)lda, (long long)M, (long long)pb->N,
                    (long long)ldc);
    int64_t rows_pad = round_up(M, kr->mr), a_cols = round_up(pb->k_pad, kr->ka);
    uint16_t *a = scratch_get(&a_buffer, NULL, sizeof(uint16_t) * (size_t)(rows_pad * a_cols),
                              "bertc_bgemm (bf16 rows of A)");
    bertc_bgemm_convert_a(kr, M, pb->K, A, lda, a, a_cols);
    bertc_bgemm_converted(kr, M, a, a_cols, pb, bias, false, C, ldc);
}
