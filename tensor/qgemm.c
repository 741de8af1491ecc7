/* tensor/qgemm.c — the int8 GEMM of dynamic quantisation:
 *     Y (M, N) = dequant( quant(A) (M, K) . qw^T (K, N) ) + bias
 * (the scheme and the API: tensor/tensor.h, "Int8 GEMM for inference").
 *
 * This file holds the definition (the portable quantiser, the oracle
 * bertc_qgemm_reference, the scalar micro-kernel), the choice of path, the
 * packing of W and the blocked driver. The SIMD micro-kernels live in
 * tensor/qgemm_avx512vnni.c, qgemm_avxvnni.c, qgemm_avx2.c, qgemm_neon.c and
 * qgemm_m4.c (Cortex-M4 DSP).
 *
 * The driver, for a quantised W packed in panels of NR channels:
 *
 *   quantise A -> qa (M x k_pad bytes)
 *   for ic in M step MC:          MC rows of qa (L2)
 *     for panel P in N step NR:   W's panel P (NR x k_pad bytes, L1/L2)
 *       for ir in MC step MR:     micro-kernel: Y[ic+ir:+MR, P*NR:+NR], whole K
 *
 * There is no blocking over K: the int32 accumulators of a tile stay in
 * registers for the whole reduction, and a panel of W (at most 48 x 3072
 * bytes for BERT-base) streams from L2. All of A is quantised first, rows
 * split over the threads, into a buffer of the calling thread; then threads
 * take (ic, group of panels) work items from a shared counter, as in
 * tensor/gemm.c. Every entry of Y is one exact int32 sum and one fixed float
 * epilogue, so Y is bitwise the same with any thread count and on every path.
 * bertc_qgemm_many runs several W on one quantised A (attention's Q, K, V)
 * from one counter, and may apply an activation to each work item's part of
 * Y once its tiles are written (the intermediate's GELU, while in L2). */
#include "tensor/isa_internal.h"
#include "tensor/qgemm_internal.h"
#include "tensor/scratch_internal.h"

#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t ceil_div(int64_t n, int64_t d) { return (n + d - 1) / d; }
static int64_t round_up(int64_t n, int64_t m) { return ceil_div(n, m) * m; }

/* ------------------------------------------------------------------------ */
/* The definition: quantising a row, and the oracle                          */
/* ------------------------------------------------------------------------ */

/* max |x[k]|; a NaN never wins (a > m is false), as with x86 maxps(a, m). */
static float row_amax(const float *x, int64_t n)
{
    float m = 0.0f;
    for (int64_t k = 0; k < n; k++) {
        float a = x[k] < 0.0f ? -x[k] : x[k];
        m = a > m ? a : m;
    }
    return m;
}

/* rne(clamp(x * inv, -127, 127)). The clamps are written as maxps(v, lo) and
 * minps(v, hi) compute them, so a NaN becomes -127 on every path. Adding and
 * subtracting 1.5 * 2^23 rounds a float of magnitude < 2^22 to an integer,
 * ties to even (the default rounding mode; ISO C never folds it away). */
int32_t bertc_qgemm_quantize_one(float x, float inv)
{
    float v = x * inv;
    v = v > -127.0f ? v : -127.0f;
    v = v < 127.0f ? v : 127.0f;
    return (int32_t)((v + 12582912.0f) - 12582912.0f);
}

/* scale = amax / 127 and its inverse; a row below BERTC_QUANT_MIN_AMAX gets
 * scale 1 and inverse 0 (all q = 0). */
float bertc_qgemm_row_scale(float amax, float *inv)
{
    if (!(amax >= BERTC_QUANT_MIN_AMAX)) {
        *inv = 0.0f;
        return 1.0f;
    }
    float scale = amax / 127.0f;
    *inv = 1.0f / scale;
    return scale;
}

float bertc_qgemm_quantize_row_scalar(const float *x, int64_t cols, int64_t k_pad, int8_t *q,
                                      bool biased)
{
    float inv, scale = bertc_qgemm_row_scale(row_amax(x, cols), &inv);
    uint8_t *u = (uint8_t *)q, offset = biased ? 128 : 0;
    for (int64_t k = 0; k < cols; k++)
        u[k] = (uint8_t)(bertc_qgemm_quantize_one(x[k], inv) + offset);
    memset(u + cols, offset, (size_t)(k_pad - cols));
    return scale;
}

/* ((float)acc * sa) * sw + bias, the epilogue every path computes. */
static float dequantize(int32_t acc, float sa, float sw, const float *bias, int64_t j)
{
    float y = ((float)acc * sa) * sw;
    return bias ? y + bias[j] : y;
}

/* Quantises A on the fly, element by element, with the definition's two
 * halves: no buffer, so it runs on a target without a heap too. */
void bertc_qgemm_reference(int64_t M, const float *A, int64_t lda, const int8_t *Wq,
                           const float *scale, int64_t N, int64_t K, const float *bias,
                           float *C, int64_t ldc)
{
    for (int64_t i = 0; i < M; i++) {
        const float *a = A + i * lda;
        float inv, sa = bertc_qgemm_row_scale(row_amax(a, K), &inv);
        for (int64_t j = 0; j < N; j++) {
            int32_t acc = 0;
            for (int64_t k = 0; k < K; k++)
                acc += bertc_qgemm_quantize_one(a[k], inv) * (int32_t)Wq[j * K + k];
            C[i * ldc + j] = dequantize(acc, sa, scale[j], bias, j);
        }
    }
}

/* ------------------------------------------------------------------------ */
/* The scalar path                                                           */
/* ------------------------------------------------------------------------ */

enum { SCALAR_MR = 4, SCALAR_NR = 8 };

static void kernel_scalar(int64_t k_pad, const int8_t *a, int64_t lda, const int8_t *b,
                          const float *sa, const float *sw, const int32_t *col_sum,
                          const float *bias, float *c, int64_t ldc)
{
    (void)col_sum;
    int32_t acc[SCALAR_MR][SCALAR_NR] = {{0}};
    for (int64_t k = 0; k < k_pad; k += 4, b += 4 * SCALAR_NR)
        for (int i = 0; i < SCALAR_MR; i++)
            for (int j = 0; j < SCALAR_NR; j++)
                for (int t = 0; t < 4; t++)
                    acc[i][j] += (int32_t)a[i * lda + k + t] * (int32_t)b[j * 4 + t];
    for (int i = 0; i < SCALAR_MR; i++)
        for (int j = 0; j < SCALAR_NR; j++)
            c[i * ldc + j] = dequantize(acc[i][j], sa[i], sw[j], bias, j);
}

const QgemmKernel bertc_qgemm_kernel_scalar = {
    .isa = QGEMM_ISA_SCALAR,
    .mr = SCALAR_MR,
    .nr = SCALAR_NR,
    .mc = 64,
    .biased = false,
    .quantize_row = bertc_qgemm_quantize_row_scalar,
    .kernel = kernel_scalar,
};

/* ------------------------------------------------------------------------ */
/* Choosing the path                                                         */
/* ------------------------------------------------------------------------ */

/* ---- detection ------------------------------------------------------------- */

static bool detect_always(void)
{
    return true;
}

#if defined(__x86_64__) && defined(__GNUC__)
/* AVX-VNNI is CPUID leaf 7, sub-leaf 1, EAX bit 4. Asked of cpuid directly:
 * clang 14's __builtin_cpu_supports does not know the name "avxvnni". The
 * OS saves the YMM registers it uses whenever AVX2 is usable, which the
 * caller checks first. */
static bool cpu_has_avx_vnni(void)
{
    unsigned eax, ebx, ecx, edx;
    if (!__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx))
        return false;
    return (eax >> 4) & 1u;
}

static bool detect_avx2(void)
{
    return __builtin_cpu_supports("avx2");
}

static bool detect_avxvnni(void)
{
    return __builtin_cpu_supports("avx2") && cpu_has_avx_vnni();
}

static bool detect_avx512vnni(void)
{
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")
        && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
}
#endif

/* ---- the int8 paths, one row each -------------------------------------------- */

/* Which of these may run while a float path is forced is that path's row of
 * the ISA table (tensor/isa.c). A row's detection and kernel exist only in
 * the builds for its architecture, hence the #if inside it: elsewhere the
 * row keeps only its name (BERTC_INT8_ISA=neon on x86-64 is a path this build
 * lacks, not an unknown name). */
typedef struct QgemmPath {
    const char *name;           /* BERTC_INT8_ISA's spelling */
    bool (*detect)(void);       /* can this CPU run it? NULL: not in this build */
    const QgemmKernel *kernel;
} QgemmPath;

static const QgemmPath qgemm_paths[QGEMM_ISA_COUNT] = {
    [QGEMM_ISA_SCALAR] = {
        .name = "scalar",
        .detect = detect_always,
        .kernel = &bertc_qgemm_kernel_scalar,
    },
    [QGEMM_ISA_AVX2] = {
        .name = "avx2",
#if defined(__x86_64__) && defined(__GNUC__)
        .detect = detect_avx2,
        .kernel = &bertc_qgemm_kernel_avx2,
#endif
    },
    [QGEMM_ISA_AVXVNNI] = {
        .name = "avxvnni",
#if defined(__x86_64__) && defined(__GNUC__)
        .detect = detect_avxvnni,
        .kernel = &bertc_qgemm_kernel_avxvnni,
#endif
    },
    [QGEMM_ISA_AVX512VNNI] = {
        .name = "avx512vnni",
#if defined(__x86_64__) && defined(__GNUC__)
        .detect = detect_avx512vnni,
        .kernel = &bertc_qgemm_kernel_avx512vnni,
#endif
    },
    [QGEMM_ISA_NEON] = {
        .name = "neon",
#if defined(__aarch64__) && defined(__ARM_NEON)
        .detect = detect_always,
        .kernel = &bertc_qgemm_kernel_neon,
#endif
    },
    [QGEMM_ISA_NEONDOT] = {
        .name = "neondot",
#if defined(__aarch64__) && defined(__ARM_NEON)
        .detect = bertc_qgemm_neon_has_dotprod,
        .kernel = &bertc_qgemm_kernel_neondot,
#endif
    },
    [QGEMM_ISA_M4DSP] = {
        .name = "m4dsp",
#if defined(BERTC_QGEMM_HAS_M4DSP)
        .detect = detect_always,   /* a compile-time feature: every core the build targets has it */
        .kernel = &bertc_qgemm_kernel_m4dsp,
#endif
    },
};

const char *bertc_qgemm_isa_name(QgemmIsa isa)
{
    return (unsigned)isa < QGEMM_ISA_COUNT ? qgemm_paths[isa].name : "unknown";
}

bool bertc_qgemm_isa_from_name(const char *name, QgemmIsa *isa)
{
    for (int i = 0; i < QGEMM_ISA_COUNT; i++)
        if (strcmp(name, qgemm_paths[i].name) == 0) {
            *isa = (QgemmIsa)i;
            return true;
        }
    return false;
}

/* What each path's detect said (bertc_isa_detect_once). */
static _Atomic unsigned char detected[QGEMM_ISA_COUNT];

bool bertc_qgemm_isa_supported(QgemmIsa isa)
{
    return (unsigned)isa < QGEMM_ISA_COUNT && qgemm_paths[isa].detect
        && bertc_isa_detect_once(&detected[isa], qgemm_paths[isa].detect);
}

const QgemmKernel *bertc_qgemm_kernel_for(QgemmIsa isa)
{
    return (unsigned)isa < QGEMM_ISA_COUNT ? qgemm_paths[isa].kernel : NULL;
}

/* The best int8 path within the fp32 path bertc_cpu_isa() allows (its row of
 * the ISA table lists them): with the fp32 path forced to avx2, no AVX-512
 * instruction runs here either. */
static QgemmIsa default_isa(void)
{
    const QgemmIsa *allowed = bertc_isa_active()->int8;
    for (int i = 0; i < ISA_INT8_MAX && allowed[i] != QGEMM_ISA_SCALAR; i++)
        if (bertc_qgemm_isa_supported(allowed[i]))
            return allowed[i];
    return QGEMM_ISA_SCALAR;
}

/* The packed layout of W a path reads: panels of nr channels, 4 consecutive
 * k of a channel in one word, plain signed bytes. The scalar oracle and the
 * Cortex-M4 DSP path read the same one (nr 8), so weights packed for either
 * run on the other, bit for bit: one export serves a Cortex-M4 and a PC. */
bool bertc_qgemm_same_layout(QgemmIsa a, QgemmIsa b)
{
    bool a_plain = a == QGEMM_ISA_SCALAR || a == QGEMM_ISA_M4DSP;
    bool b_plain = b == QGEMM_ISA_SCALAR || b == QGEMM_ISA_M4DSP;
    return a == b || (a_plain && b_plain);
}

QgemmIsa bertc_qgemm_isa_for_pack(QgemmIsa packed_for)
{
    if (bertc_qgemm_isa_supported(packed_for))
        return packed_for;
    if (bertc_qgemm_same_layout(packed_for, QGEMM_ISA_SCALAR))
        return QGEMM_ISA_SCALAR;
    return QGEMM_ISA_COUNT;
}

static bool env_read = false;
static int forced_isa = -1;   /* bertc_qgemm_set_isa or BERTC_INT8_ISA; -1: the default */

void bertc_qgemm_set_isa(QgemmIsa isa)
{
    if (isa == QGEMM_ISA_COUNT) {   /* back to the default: read the variable again */
        forced_isa = -1;
        env_read = false;
        return;
    }
    if (!bertc_qgemm_isa_supported(isa))
        bertc_fatal("bertc_qgemm_set_isa: this CPU (or build) cannot run the '%s' int8 path",
                    bertc_qgemm_isa_name(isa));
    forced_isa = (int)isa;
    env_read = true;
}

QgemmIsa bertc_qgemm_isa(void)
{
    if (!env_read) {
        const char *env = getenv("BERTC_INT8_ISA");
        QgemmIsa isa;
        if (env && *env) {
            if (!bertc_qgemm_isa_from_name(env, &isa))
                bertc_fatal("BERTC_INT8_ISA=%s: expected one of scalar, avx2, avxvnni, "
                            "avx512vnni, neon, neondot, m4dsp", env);
            bertc_qgemm_set_isa(isa);
        }
        env_read = true;
    }
    return forced_isa >= 0 ? (QgemmIsa)forced_isa : default_isa();
}

/* ------------------------------------------------------------------------ */
/* Quantising and packing W                                                  */
/* ------------------------------------------------------------------------ */

void bertc_quantize_rows(const float *X, int64_t rows, int64_t cols, int64_t ldx, int8_t *q,
                         float *scale)
{
    const QgemmKernel *kr = bertc_qgemm_kernel_for(bertc_qgemm_isa());
    for (int64_t r = 0; r < rows; r++)
        scale[r] = kr->quantize_row(X + r * ldx, cols, cols, q + r * cols, false);
}

static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

/* |acc| <= K * 127^2 must fit an int32. */
#define QGEMM_K_MAX 131072

size_t bertc_qgemm_packed_bytes(int64_t N, int64_t K)
{
    size_t n_pad = (size_t)round_up(N, QGEMM_NR_MAX), k_pad = (size_t)round_up(K, 4);
    return align64(n_pad * k_pad) + 2 * align64(n_pad * sizeof(float));
}

void bertc_qgemm_pack_b(const int8_t *Wq, const float *scale, int64_t N, int64_t K, void *mem,
                        QuantPackedB *out)
{
    if (N < 1 || K < 1 || K > QGEMM_K_MAX)
        bertc_fatal("bertc_qgemm_pack_b: W is (%lld, %lld); need N >= 1 and 1 <= K <= %d "
                    "(int32 sums)", (long long)N, (long long)K, QGEMM_K_MAX);
    if ((uintptr_t)mem % 64 != 0)
        bertc_fatal("bertc_qgemm_pack_b: mem %p is not 64-byte aligned", mem);
    const QgemmKernel *kr = bertc_qgemm_kernel_for(bertc_qgemm_isa());
    int64_t n_pad = round_up(N, QGEMM_NR_MAX), k_pad = round_up(K, 4), nr = kr->nr;
    uint8_t *base = mem;
    *out = (QuantPackedB){.N = N, .K = K, .k_pad = k_pad, .nr = kr->nr, .isa = (int)kr->isa,
                          .data = (int8_t *)base,
                          .col_sum = (int32_t *)(base + align64((size_t)(n_pad * k_pad))),
                          .scale = (float *)(base + align64((size_t)(n_pad * k_pad))
                                             + align64((size_t)n_pad * sizeof(float)))};
    for (int64_t j = 0; j < n_pad; j++) {
        int32_t sum = 0;
        for (int64_t k = 0; j < N && k < K; k++)
            sum += Wq[j * K + k];
        out->col_sum[j] = sum;
        out->scale[j] = j < N ? scale[j] : 0.0f;
    }
    /* data[P * nr * k_pad + g * nr * 4 + jj * 4 + t] = qw[P * nr + jj][4 g + t] */
    for (int64_t P = 0; P < n_pad / nr; P++)
        for (int64_t g = 0; g < k_pad / 4; g++)
            for (int64_t jj = 0; jj < nr; jj++)
                for (int64_t t = 0; t < 4; t++) {
                    int64_t j = P * nr + jj, k = 4 * g + t;
                    out->data[P * nr * k_pad + g * nr * 4 + jj * 4 + t] =
                        j < N && k < K ? Wq[j * K + k] : 0;
                }
}

/* ------------------------------------------------------------------------ */
/* The driver                                                                */
/* ------------------------------------------------------------------------ */

/* The calling thread's quantised rows of A (QgemmJob's qa and sa), kept
 * between calls; from the heap, or from the arena of bertc_qgemm_set_arena. */
static SCRATCH_THREAD_LOCAL ScratchBuffer qa_buffer;
static Arena *qa_arena;   /* bertc_qgemm_set_arena; NULL: the heap */

void bertc_qgemm_set_arena(Arena *a)
{
    if (a && bertc_threads_count() > 1)
        bertc_fatal("bertc_qgemm_set_arena: needs bertc_threads_count() == 1, not %d",
                    bertc_threads_count());
    scratch_reset(&qa_buffer);
    qa_arena = a;
}

size_t bertc_qgemm_scratch_bytes(void)
{
    return qa_buffer.cap;
}

void bertc_qgemm_reserve(size_t bytes)
{
    scratch_get(&qa_buffer, qa_arena, bytes, "bertc_qgemm (quantised rows of A)");
}

/* One call: n products of the same A. Its rows of A, quantised once for all
 * of them, are qa (rows_pad rows of k_pad bytes, rows_pad = M rounded up to
 * MR, or MR at a time from row row0 with an arena: qgemm_row_blocks; the
 * rows past M are zero rows of scale 1) and sa (rows_pad). Product p's items
 * are [first[p], first[p + 1]); its item i (counted from first[p]) covers rows
 * [ic, ic + MC), ic = (i / items_per_ic[p]) * MC, and panels
 * [p0, p0 + panels_per_item[p]), p0 = (i % items_per_ic[p]) * panels_per_item[p]. */
typedef struct QgemmJob {
    const QgemmKernel *kr;
    const QgemmProduct *prod;
    int n_prod;
    int64_t M, K, k_pad, rows_pad;
    const float *A;
    int64_t lda;
    int8_t *qa;
    float *sa;
    int64_t row0;            /* the row of A that qa and sa start at */
    int64_t n_panels[QGEMM_PRODUCTS_MAX], panels_per_item[QGEMM_PRODUCTS_MAX];
    int64_t items_per_ic[QGEMM_PRODUCTS_MAX], first[QGEMM_PRODUCTS_MAX + 1];
    WorkCounter next;
} QgemmJob;

/* Rows [begin, end) of A -> qa and sa. */
static void quantize_range(void *ctx, int64_t begin, int64_t end)
{
    const QgemmJob *job = ctx;
    const QgemmKernel *kr = job->kr;
    int64_t k_pad = job->k_pad;
    for (int64_t r = begin; r < end; r++) {
        int8_t *q = job->qa + (r - job->row0) * k_pad;
        float *sa = job->sa + (r - job->row0);
        if (r < job->M) {
            *sa = kr->quantize_row(job->A + r * job->lda, job->K, k_pad, q, kr->biased);
        } else {
            memset(q, kr->biased ? 128 : 0, (size_t)k_pad);
            *sa = 1.0f;
        }
    }
}

/* Y[i0 : i0 + m, panel P's columns] of product p: the micro-kernel straight
 * into Y when the tile is whole, else into a scratch tile (with a padded
 * bias) whose m x n corner is copied out. */
static void run_tile(const QgemmJob *job, const QgemmProduct *p, int64_t i0, int m, int64_t P)
{
    const QgemmKernel *kr = job->kr;
    const QuantPackedB *pb = p->pb;
    int64_t j0 = P * kr->nr;
    int n = (int)min64(kr->nr, pb->N - j0);
    const int8_t *a = job->qa + (i0 - job->row0) * pb->k_pad;
    const int8_t *b = pb->data + P * kr->nr * pb->k_pad;
    const float *sa = job->sa + (i0 - job->row0), *sw = pb->scale + j0;
    const float *bias = p->bias ? p->bias + j0 : NULL;
    const int32_t *cs = pb->col_sum + j0;
    float *c = p->C + i0 * p->ldc + j0;
    if (m == kr->mr && n == kr->nr) {
        kr->kernel(pb->k_pad, a, pb->k_pad, b, sa, sw, cs, bias, c, p->ldc);
        return;
    }
    _Alignas(64) float tile[8 * QGEMM_NR_MAX];
    float bias_pad[QGEMM_NR_MAX] = {0};
    if (bias)
        memcpy(bias_pad, bias, sizeof(float) * (size_t)n);
    kr->kernel(pb->k_pad, a, pb->k_pad, b, sa, sw, cs, bias ? bias_pad : NULL, tile, kr->nr);
    for (int i = 0; i < m; i++)
        memcpy(c + i * p->ldc, tile + i * kr->nr, sizeof(float) * (size_t)n);
}

/* Product p's activation on rows [i0, i0 + m) of panels [p0, p1), in place. */
static void run_act(const QgemmJob *job, const QgemmProduct *p, int64_t i0, int64_t m,
                    int64_t p0, int64_t p1)
{
    int64_t j0 = p0 * job->kr->nr, j1 = min64(p1 * job->kr->nr, p->pb->N);
    for (int64_t i = i0; i < i0 + m; i++)
        p->act(p->C + i * p->ldc + j0, p->C + i * p->ldc + j0, j1 - j0);
}

/* Item -> its product: the last p with first[p] <= item (n_prod is small). */
static int item_product(const QgemmJob *job, int64_t item)
{
    int p = 0;
    while (p + 1 < job->n_prod && job->first[p + 1] <= item)
        p++;
    return p;
}

/* A thread's share: items until none are left. */
static void qgemm_worker(void *ctx, int64_t begin, int64_t end)
{
    (void)begin, (void)end;
    QgemmJob *job = ctx;
    const QgemmKernel *kr = job->kr;
    int64_t n_items = job->first[job->n_prod];
    for (int64_t item; (item = work_counter_next(&job->next)) < n_items;) {
        int k = item_product(job, item);
        const QgemmProduct *p = &job->prod[k];
        int64_t i = item - job->first[k];
        int64_t ic = i / job->items_per_ic[k] * kr->mc, mc = min64(kr->mc, job->M - ic);
        int64_t p0 = i % job->items_per_ic[k] * job->panels_per_item[k];
        int64_t p1 = min64(p0 + job->panels_per_item[k], job->n_panels[k]);
        for (int64_t P = p0; P < p1; P++)
            for (int64_t ir = 0; ir < mc; ir += kr->mr)
                run_tile(job, p, ic + ir, (int)min64(kr->mr, mc - ir), P);
        if (p->act)
            run_act(job, p, ic, mc, p0, p1);
    }
}

/* With a fixed arena (bare metal: one thread, no cache that would keep W's
 * panels near between row blocks) A is quantised MR rows at a time, right
 * before the tiles that read them: the buffer is MR x k_pad bytes instead
 * of M x k_pad. The tiles, and so the bits, are the blocked order's. */
static void qgemm_row_blocks(QgemmJob *job)
{
    const QgemmKernel *kr = job->kr;
    for (int64_t i0 = 0; i0 < job->M; i0 += kr->mr) {
        job->row0 = i0;
        quantize_range(job, i0, i0 + kr->mr);
        int64_t m = min64(kr->mr, job->M - i0);
        for (int k = 0; k < job->n_prod; k++) {
            for (int64_t P = 0; P < job->n_panels[k]; P++)
                run_tile(job, &job->prod[k], i0, (int)m, P);
            if (job->prod[k].act)
                run_act(job, &job->prod[k], i0, m, 0, job->n_panels[k]);
        }
    }
}

/* Multiply-adds below which a thread is not worth waking (int8 runs ~4x the
 * fp32 rate, so 4x tensor/gemm.c's threshold); elements of A below which its
 * quantisation stays on the caller. */
#define QGEMM_MIN_THREAD_WORK (1 << 23)
#define QGEMM_MIN_THREAD_QUANT (1 << 15)

/* The kernel of the active path, after checking that every product's W was
 * packed for it and that all of them read A's K columns. */
static const QgemmKernel *checked_kernel(const QgemmProduct *prod, int n, int64_t M, int64_t lda)
{
    if (n < 1 || n > QGEMM_PRODUCTS_MAX)
        bertc_fatal("bertc_qgemm_many: %d products; need 1 to %d", n, QGEMM_PRODUCTS_MAX);
    QgemmIsa active = bertc_qgemm_isa();
    const QgemmKernel *kr = bertc_qgemm_kernel_for(active);
    for (int k = 0; k < n; k++) {
        const QuantPackedB *pb = prod[k].pb;
        if (!bertc_qgemm_same_layout((QgemmIsa)pb->isa, active))
            bertc_fatal("bertc_qgemm: W (%lld, %lld) was packed for the '%s' int8 path, but the "
                        "active path is '%s'; pack it again (bertc_qgemm_pack_b) after choosing "
                        "the path", (long long)pb->N, (long long)pb->K,
                        bertc_qgemm_isa_name((QgemmIsa)pb->isa), bertc_qgemm_isa_name(active));
        if (pb->nr != kr->nr)
            bertc_fatal("bertc_qgemm: W was packed in panels of %d, the '%s' path reads %d",
                        pb->nr, bertc_qgemm_isa_name(active), kr->nr);
        if (pb->K != prod[0].pb->K)
            bertc_fatal("bertc_qgemm_many: product %d's W is (%lld, %lld), product 0's reads "
                        "K = %lld; every product reads the same A", k, (long long)pb->N,
                        (long long)pb->K, (long long)prod[0].pb->K);
        if (M > 0 && (lda < pb->K || prod[k].ldc < pb->N))
            bertc_fatal("bertc_qgemm: A (%lld, %lld) with row stride %lld, Y (%lld, %lld) with "
                        "row stride %lld: a stride is shorter than its row", (long long)M,
                        (long long)pb->K, (long long)lda, (long long)M, (long long)pb->N,
                        (long long)prod[k].ldc);
    }
    return kr;
}

/* About 4 items per thread in each product: its row blocks, then groups of
 * its panels in each. */
static void plan_items(QgemmJob *job, int threads)
{
    int64_t n_ic = ceil_div(job->M, job->kr->mc);
    job->first[0] = 0;
    for (int k = 0; k < job->n_prod; k++) {
        job->n_panels[k] = ceil_div(job->prod[k].pb->N, job->kr->nr);
        int64_t groups = min64(ceil_div(4 * (int64_t)threads, n_ic), job->n_panels[k]);
        job->panels_per_item[k] = ceil_div(job->n_panels[k], groups);
        job->items_per_ic[k] = ceil_div(job->n_panels[k], job->panels_per_item[k]);
        job->first[k + 1] = job->first[k] + n_ic * job->items_per_ic[k];
    }
}

void bertc_qgemm_many(int64_t M, const float *A, int64_t lda, const QgemmProduct *prod, int n)
{
    const QgemmKernel *kr = checked_kernel(prod, n, M, lda);
    if (M <= 0)
        return;
    int64_t K = prod[0].pb->K, k_pad = prod[0].pb->k_pad;
    bool row_blocks = qa_arena != NULL;   /* see qgemm_row_blocks */
    int64_t rows_pad = row_blocks ? kr->mr : round_up(M, kr->mr);
    uint8_t *buf = scratch_get(&qa_buffer, qa_arena,
                               (size_t)(rows_pad * k_pad) + sizeof(float) * (size_t)rows_pad,
                               "bertc_qgemm (quantised rows of A)");
    QgemmJob job = {.kr = kr, .prod = prod, .n_prod = n, .M = M, .K = K, .k_pad = k_pad,
                    .rows_pad = rows_pad, .A = A, .lda = lda, .qa = (int8_t *)buf,
                    .sa = (float *)(buf + rows_pad * k_pad)};
    double work = 0.0;
    for (int k = 0; k < n; k++)
        work += (double)M * (double)prod[k].pb->N * (double)k_pad / QGEMM_MIN_THREAD_WORK;
    int threads = bertc_threads_count();
    threads = row_blocks || work < 1.0 ? 1 : work < threads ? (int)work : threads;
    plan_items(&job, threads);
    if (row_blocks) {
        qgemm_row_blocks(&job);
        return;
    }
    if (threads > 1 && M * k_pad >= QGEMM_MIN_THREAD_QUANT)
        bertc_parallel_for(rows_pad, quantize_range, &job);
    else
        quantize_range(&job, 0, rows_pad);
    work_counter_reset(&job.next);
    if (threads == 1)
        qgemm_worker(&job, 0, 1);
    else
        bertc_parallel_for(threads, qgemm_worker, &job);
}

void bertc_qgemm(int64_t M, const float *A, int64_t lda, const QuantPackedB *pb,
                 const float *bias, float *C, int64_t ldc)
{
    QgemmProduct p = {.pb = pb, .bias = bias, .C = C, .ldc = ldc, .act = NULL};
    bertc_qgemm_many(M, A, lda, &p, 1);
}
