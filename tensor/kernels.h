/*
 * tensor/kernels.h — the compute half of the bottom layer: the CPU's SIMD
 * path (one table row per ISA, tensor/isa.c), vector math, the row kernels,
 * the GEMM, the int8 and bf16 GEMMs, and the thread pool. tensor/tensor.h
 * (storage, shapes, arenas, errors, files, the RNG) includes it at its end,
 * so a program includes tensor/tensor.h (or bertc.h) and has both.
 */
#ifndef BERTC_TENSOR_KERNELS_H
#define BERTC_TENSOR_KERNELS_H

#include "tensor/tensor.h"

/* ------------------------------------------------------------------------ */
/* CPU features and the SIMD path (tensor/isa.c)                             */
/* ------------------------------------------------------------------------ */

/* The instruction-set path used by GEMM and the row kernels. On x86-64 it is
 * chosen at run time (the best the CPU supports); on ARM, NEON is chosen at
 * compile time. BERTC_ISA=scalar|avx2|avx512|neon forces a path (tests force
 * each in turn); asking for a path the CPU lacks is a fatal error. Each path
 * is one row of the ISA table (tensor/isa.c, docs/adding-an-isa.md). */
typedef enum CpuIsa {
    ISA_SCALAR = 0,
    ISA_AVX2,
    ISA_AVX512,
    ISA_NEON,
    ISA_COUNT   /* how many there are (a loop's bound), not a path */
} CpuIsa;

CpuIsa bertc_cpu_isa(void);                 /* the active path */
bool bertc_cpu_isa_supported(CpuIsa isa);   /* can this CPU run it? */
void bertc_cpu_set_isa(CpuIsa isa);         /* force a path (fatal if unsupported) */
const char *bertc_cpu_isa_name(CpuIsa isa); /* "scalar", "avx2", "avx512", "neon" */
/* The path named `name` ("scalar", "avx2", ...) into *isa; false if none is. */
bool bertc_cpu_isa_from_name(const char *name, CpuIsa *isa);
/* BERTC_ISA, BERTC_INT8_ISA, BERTC_BF16_ISA and BERTC_THREADS are user
 * input: a program checks them before any work (the `bertc` command and
 * every example do, and exit 2), so a value
 * the library would quietly clamp (BERTC_THREADS=0) or stop on
 * (BERTC_ISA=bogus, or a path this CPU lacks) is one line naming the
 * variable and what it accepts. 0 when all are unset, empty or valid. */
int bertc_check_env(BertcError *err);

/* ------------------------------------------------------------------------ */
/* Vector math: exp, tanh, erf (tensor/vmath.c)                             */
/* ------------------------------------------------------------------------ */

/* bertc's own expf, tanhf and erff. libm differs between targets (SPEC §10),
 * so every kernel that must give the same bits everywhere uses these instead.
 * Each is range reduction + a polynomial in plain float arithmetic (no libm
 * call, no FMA contraction under -std=c11), so the scalar versions return the
 * same bits on every IEEE-754 target. The SIMD versions run the same algorithm
 * with fused multiply-adds, so they may differ from the scalar twin by an ulp.
 * Max error vs. a double-precision libm reference (test/test_vmath.c checks):
 * see the table at the top of tensor/vmath.c. Special values: NaN -> NaN;
 * expf overflows to +inf and underflows to 0 (through the subnormals);
 * tanhf and erff saturate at +-1. */
float bertc_expf(float x);
float bertc_tanhf(float x);
float bertc_erff(float x);
/* Phi(x), the standard normal CDF (GELU's x Phi(x)): relative error 1.1e-7
 * for x >= 0 and, as the tail Phi(x) = Q(-x) for x < 0, 1.2e-7 down to x = -3,
 * 5.3e-7 to -4, 2.2e-4 to -8 (where Q < 3e-11 of x); 0 below -8. */
float bertc_normal_cdf(float x);

/* y[i] = f(x[i]) for n floats on the active bertc_cpu_isa() path; y may alias x. */
void bertc_expf_n(float *y, const float *x, int64_t n);
void bertc_tanhf_n(float *y, const float *x, int64_t n);
void bertc_erff_n(float *y, const float *x, int64_t n);
void bertc_normal_cdf_n(float *y, const float *x, int64_t n);

/* ------------------------------------------------------------------------ */
/* Row kernels (tensor/kernels*.c)                                           */
/* ------------------------------------------------------------------------ */

/* Each kernel_* below runs on the active bertc_cpu_isa() path. A scalar reference
 * (tensor/kernels.c, whose table the library's private
 * tensor/kernels_internal.h declares) is the fallback on every target and the
 * oracle the SIMD paths (tensor/row_kernels_simd.inc, compiled once per ISA)
 * are tested against (test/test_kernels_simd.c). All paths use
 * bertc_expf/erff/tanhf, never libm's, so results agree across targets.
 *
 * The backward kernels add into dx when `accumulate` is true; when it is
 * false they write dx, never reading it (it may hold garbage), with the
 * values that adding into zeros would give. */

/* Softmax over the last dim. x, y are (rows, n). y may alias x. */
void bertc_kernel_softmax_rows(float *y, const float *x, int64_t rows, int64_t n);
/* Given y = softmax(x) and dy: dx += y * (dy - sum(dy * y)). */
void bertc_kernel_softmax_rows_backward(float *dx, const float *y, const float *dy,
                                  int64_t rows, int64_t n, bool accumulate);
/* log_softmax over the last dim: y = x - max - log(sum(exp(x - max))). */
void bertc_kernel_log_softmax_rows(float *y, const float *x, int64_t rows, int64_t n);
/* Given y = log_softmax(x): dx += dy - exp(y) * sum(dy). */
void bertc_kernel_log_softmax_rows_backward(float *dx, const float *y, const float *dy,
                                      int64_t rows, int64_t n, bool accumulate);

/* The two passes of a softmax over one long row, for a loss that folds more
 * work around them (the MLM decoder, autograd/ops_linear_ce.c):
 *   bertc_kernel_add_max:  y[j] += b[j] (b NULL: y is only read); returns max_j y[j]
 *   bertc_kernel_exp_sum:  y[j] = exp(x[j] - shift); returns sum_j y[j] in double
 * y, b, x are (n), n >= 1; y may alias x. */
float bertc_kernel_add_max(float *y, const float *b, int64_t n);
double bertc_kernel_exp_sum(float *y, const float *x, float shift, int64_t n);

/* Multi-head attention one query row at a time (tensor/kernels_attention.c),
 * for inference: the (B, nh, Sq, S) scores are never stored.
 *   q, out (B, Sq, H) and k, v (B, S, H), nh heads of d = H / nh columns each
 *   (head h of row (b, i) at (b Sq + i) H + h d in q); mask (B, S) additive (0
 *   keep, a large negative value for padding) or NULL; scratch (B nh S) floats.
 *   out_bhi = sum_j softmax_j(alpha q_bhi . k_bhj + mask[b, j]) v_bhj
 * out may be q itself (each query row is read before its context is
 * written); it must not overlap k or v. Scalar on every path (the softmax
 * is the scalar reference's), so every target gives the same bits; the
 * (b, h) blocks run on the threads. */
void bertc_kernel_attention_rows(float *out, const float *q, const float *k, const float *v,
                                 const float *mask, float *scratch, int64_t B, int64_t Sq,
                                 int64_t S, int64_t H, int64_t nh, float alpha);

/* The same attention, softmax(alpha q_bh k_bh^T + mask) v_bh into out (B, S,
 * H), one (b, h) block at a time with BLAS-style GEMMs: the bits of the
 * three separate products (autograd/ops_attention.c), but each block's (S, S)
 * scores in one of bertc_kernel_attention_heads_parts() buffers of S x S
 * floats in scratch, reused while in cache. For inference that keeps no
 * attention maps. */
int bertc_kernel_attention_heads_parts(void);
void bertc_kernel_attention_heads(float *out, const float *q, const float *k, const float *v,
                                  const float *mask, float *scratch, int64_t B, int64_t S,
                                  int64_t H, int64_t nh, float alpha);

/* LayerNorm over the last dim (n), PyTorch semantics (biased variance):
 *   y = (x - mean) * rstd * gamma + beta,  rstd = 1/sqrt(var + eps).
 * x, y are (rows, n); gamma, beta are (n) or NULL (then 1 and 0);
 * mean and rstd are (rows) outputs kept for the backward (may be NULL). */
void bertc_kernel_layernorm_rows(float *y, float *mean, float *rstd, const float *x,
                           const float *gamma, const float *beta,
                           int64_t rows, int64_t n, float eps);
/* Accumulates dgamma (n), dbeta (n) and dx (rows, n), which it writes instead
 * when !dx_accumulate; any of them may be NULL. */
void bertc_kernel_layernorm_rows_backward(float *dx, float *dgamma, float *dbeta,
                                    const float *dy, const float *x,
                                    const float *mean, const float *rstd,
                                    const float *gamma, int64_t rows, int64_t n,
                                    bool dx_accumulate);

/* GELU, erf form (BERT): y = 0.5 x (1 + erf(x / sqrt 2)). x, y are (n). */
void bertc_kernel_gelu(float *y, const float *x, int64_t n);
void bertc_kernel_gelu_backward(float *dx, const float *x, const float *dy, int64_t n,
                          bool accumulate);
/* GELU, tanh form (BertSum, OpenNMT):
 *   y = 0.5 x (1 + tanh( sqrt(2/pi) (x + 0.044715 x^3) )). */
void bertc_kernel_gelu_tanh(float *y, const float *x, int64_t n);
void bertc_kernel_gelu_tanh_backward(float *dx, const float *x, const float *dy, int64_t n,
                               bool accumulate);

/* Inverted dropout on a, out, keep (n), with the randomness of n draws of
 * SplitMix64 from `state` (draw i is rng_mix(state + (i+1) RNG_GAMMA)):
 *   keep[i] = (draw_i >> 11) >= threshold      (threshold: bertc_rng_uniform_threshold(p))
 *   out[i]  = keep[i] ? a[i] * scale : 0
 * This is `keep[i] = bertc_rng_uniform(&r) >= p` for i = 0..n-1 bit for bit, on
 * every path and thread count; the caller advances its Rng by n draws. */
void bertc_kernel_dropout(const float *a, float *out, uint8_t *keep, int64_t n, uint64_t state,
                    uint64_t threshold, float scale);
/* Given keep and scale from the forward: da[i] += scale * dy[i] where keep[i]
 * (elements that were dropped leave da untouched, even a -0). */
void bertc_kernel_dropout_backward(const uint8_t *keep, const float *dy, float scale, float *da,
                             int64_t n);

/* y[i] += x[i] and y[i] += a * x[i] for n floats, on the active bertc_cpu_isa()
 * path. Every path does the same IEEE operations (a multiply, then an add:
 * no FMA), so all match the scalar references bit for bit. */
void bertc_kernel_add_inplace(float *y, const float *x, int64_t n);
void bertc_kernel_axpy(float *y, float a, const float *x, int64_t n);

/* One Adam/AdamW update of n parameters p with gradient g (NULL: zeros) and
 * moments m, v, in torch.optim's single-tensor order (nn/optim.c derives the
 * constants):
 *   decoupled: p *= decay        else: g += wd p
 *   m = m b1 + (1-b1) g;  v = v b2 + ((1-b2) g) g
 *   p += (neg_step m) / (sqrt(v) / bc2_sqrt + eps)
 * The SIMD path does the same IEEE operations in the same order (no FMA;
 * sqrt and division are correctly rounded), so it matches the scalar
 * reference bit for bit. */
typedef struct AdamStep {
    float b1, one_minus_b1, b2, one_minus_b2, neg_step, bc2_sqrt, eps, decay, wd;
    bool decoupled;
} AdamStep;
void bertc_kernel_adam(float *p, const float *g, float *m, float *v, int64_t n, const AdamStep *s);

/* ------------------------------------------------------------------------ */
/* GEMM: C = alpha * op(A) * op(B) + beta * C, row-major (tensor/gemm.c)     */
/* ------------------------------------------------------------------------ */

/* op(A) is (M, K): A itself is (M, K) with row stride lda, or, when trans_a,
 * A is (K, M) and op(A) = A^T. Likewise op(B) is (K, N): B is (K, N), or (N, K)
 * when trans_b. C is (M, N) with row stride ldc. When beta == 0, C is not read
 * (NaNs in C do not propagate), as in BLAS. M, N, K >= 1 (K may be 0 only with
 * beta scaling semantics: C = beta * C). */
void bertc_gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
          const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
          float *C, int64_t ldc);
/* GEMM's pack buffers (at most MC x KC floats of op(A) and KC x NC of op(B),
 * grown to the largest GEMM so far) come from the heap. After
 * bertc_gemm_set_pack_arena(a) they come from `a`, which must outlive every later
 * bertc_gemm call; NULL returns to the heap. FREESTANDING builds, which have no
 * heap, need it. Only with bertc_threads_count() == 1 (always so with NO_THREADS). */
void bertc_gemm_set_pack_arena(Arena *a);
/* The calling thread's pack buffers as they are now: the bytes of op(A)'s
 * and op(B)'s, the largest any GEMM since bertc_gemm_set_pack_arena asked
 * for. bertc_gemm_reserve_packs takes buffers of that size at once (from the
 * pack arena), so a model whose GEMMs were measured never grows them: an
 * arena never gets back a buffer that grew, so growing would cost the sum
 * of the sizes rather than the largest. */
void bertc_gemm_pack_sizes(size_t *a_bytes, size_t *b_bytes);
void bertc_gemm_reserve_packs(size_t a_bytes, size_t b_bytes);
/* batch independent GEMMs; matrix i of A starts at A + i * stride_a, etc.
 * stride_a == 0 reuses one A for every batch entry (likewise B). */
void bertc_gemm_batched(bool trans_a, bool trans_b, int64_t batch, int64_t M, int64_t N,
                  int64_t K, float alpha, const float *A, int64_t lda, int64_t stride_a,
                  const float *B, int64_t ldb, int64_t stride_b, float beta, float *C,
                  int64_t ldc, int64_t stride_c);

/* Pre-packed B: a matrix used as op(B) by many GEMMs (a weight, in inference)
 * is packed once into the exact order the micro-kernel reads, so later GEMMs
 * skip packing it. The layout is the GEMM's own B micro-panels
 * (tensor/gemm_kernel_internal.h), rank-KC block after rank-KC block:
 *     block pc (rows pc..pc+kc of op(B)), panel P (columns P*NR..P*NR+NR):
 *     data[pc * Npad + P * kc * NR + k * NR + j] = op(B)[pc + k][P * NR + j]
 * with Npad = N rounded up to NR (the padding columns are 0). bertc_gemm_prepacked
 * gives bitwise the results bertc_gemm gives on the unpacked matrix: the same
 * kernel, panels and order of sums. The layout belongs to the ISA that was
 * active when it was packed (BERTC_ISA may force another for later GEMMs;
 * a packed B keeps its own). */
typedef struct GemmPackedB {
    int64_t K, N;          /* op(B) is (K, N) */
    const void *kernel;    /* the micro-kernel it is laid out for (private) */
    float *data;           /* bertc_gemm_packed_b_floats(K, N) floats, 64-byte aligned */
} GemmPackedB;
/* Floats the packed op(B) (K, N) takes with the current ISA: K * Npad. Equal
 * to K * N exactly when N is a multiple of the kernel's NR (48 for AVX-512):
 * then a matrix can be packed in place of itself (bertc_gemm_pack_b with dst ==
 * a copy's source, see nn's bertc_registry_prepack). */
size_t bertc_gemm_packed_b_floats(int64_t K, int64_t N);
/* Packs op(B) (K, N) (B is (K, N), or (N, K) when trans_b, row stride ldb)
 * into dst (bertc_gemm_packed_b_floats(K, N) floats, 64-byte aligned, not
 * overlapping B) and describes it in *out. */
void bertc_gemm_pack_b(bool trans_b, int64_t K, int64_t N, const float *B, int64_t ldb, float *dst,
                 GemmPackedB *out);
/* The inverse: writes op(B) back into B (row stride ldb, same trans_b). */
void bertc_gemm_unpack_b(const GemmPackedB *pb, bool trans_b, float *B, int64_t ldb);
/* bertc_gemm with a pre-packed op(B): C = alpha * op(A) pb + beta * C; pb is (K, N). */
void bertc_gemm_prepacked(bool trans_a, int64_t M, float alpha, const float *A, int64_t lda,
                    const GemmPackedB *pb, float beta, float *C, int64_t ldc);

/* ------------------------------------------------------------------------ */
/* Int8 GEMM for inference: y = A W^T + b with int8 W and A (tensor/qgemm.c) */
/* ------------------------------------------------------------------------ */

/* Dynamic quantisation of a Linear, y (M, N) = A (M, K) W^T + bias, W (N, K):
 *
 *   W: int8, symmetric, one scale per output channel (row j of W):
 *        sw[j] = max_k |W[j,k]| / 127,   qw[j,k] = rne(W[j,k] * (1 / sw[j])) in [-127, 127]
 *   A: quantised the same way per row (sa[i], qa[i,k]) on the fly, inside bertc_qgemm
 *   acc[i,j] = sum_k qa[i,k] qw[j,k]                           exact, in int32
 *   y[i,j]   = ((float)acc[i,j] * sa[i]) * sw[j] + bias[j]     in this order, no FMA
 *
 * rne is round to nearest, ties to even; -128 never occurs (so every SIMD trick
 * in tensor/qgemm_*.c is exact). A row whose max |x| is below
 * BERTC_QUANT_MIN_AMAX (all zeros, or tiny enough that 1/scale would
 * overflow) gets scale 1 and all-zero q. Rows holding NaN or Inf give finite,
 * meaningless values (the same on every path), never a crash. Every int8
 * path (below) computes the same int32 accumulators and the same float
 * epilogue as the scalar oracle bertc_qgemm_reference, so all paths and all
 * thread counts give bitwise the same y (test/test_qgemm.c).
 *
 * A Linear's life:
 *     int8_t *qw = ...; float *sw = ...;                    // N*K bytes, N floats
 *     bertc_quantize_rows(W, N, K, K, qw, sw);              // or read them from a file
 *     void *mem = aligned 64: bertc_qgemm_packed_bytes(N, K) bytes;
 *     QuantPackedB pb;
 *     bertc_qgemm_pack_b(qw, sw, N, K, mem, &pb);           // for the active int8 path
 *     bertc_qgemm(M, A, K, &pb, bias, Y, N);                // every forward            */
#define BERTC_QUANT_MIN_AMAX 1e-30f

/* The int8 paths. The default follows bertc_cpu_isa(): AVX-512 VNNI when the
 * fp32 path is avx512 and the CPU has it; else AVX-VNNI (256-bit, VEX) when
 * the fp32 path is avx2 or avx512 and the CPU has it; else AVX2 (pmaddubsw);
 * NEON with sdot when the CPU has the dot-product extension, else NEON with
 * widening multiplies; SXTB16/SMLAD (m4dsp) when compiled for a 32-bit Arm
 * core with the DSP extension (Cortex-M4/M7/M33); else scalar. So
 * BERTC_ISA=avx2 (the laptop case) never runs AVX-512 code.
 * BERTC_INT8_ISA=scalar|avx2|avxvnni|avx512vnni|neon|neondot|m4dsp forces one (bertc_check_env validates it), as does
 * bertc_qgemm_set_isa. */
typedef enum QgemmIsa {
    QGEMM_ISA_SCALAR = 0,
    QGEMM_ISA_AVX2,
    QGEMM_ISA_AVXVNNI,
    QGEMM_ISA_AVX512VNNI,
    QGEMM_ISA_NEON,
    QGEMM_ISA_NEONDOT,
    QGEMM_ISA_M4DSP,
    QGEMM_ISA_COUNT
} QgemmIsa;
QgemmIsa bertc_qgemm_isa(void);                     /* the active int8 path */
bool bertc_qgemm_isa_supported(QgemmIsa isa);        /* can this CPU and build run it? */
/* Force a path (fatal if unsupported); QGEMM_ISA_COUNT returns to the default. */
void bertc_qgemm_set_isa(QgemmIsa isa);
const char *bertc_qgemm_isa_name(QgemmIsa isa);      /* "scalar", "avx2", ... */
/* Do the two paths read the same packed W? (scalar and m4dsp do.) */
bool bertc_qgemm_same_layout(QgemmIsa a, QgemmIsa b);
/* The path that runs W packed for `packed_for` here: itself when this build
 * and CPU can, else scalar when it reads the same layout, else QGEMM_ISA_COUNT. */
QgemmIsa bertc_qgemm_isa_for_pack(QgemmIsa packed_for);
bool bertc_qgemm_isa_from_name(const char *name, QgemmIsa *isa);

/* X (rows, cols), row stride ldx -> q (rows, cols) int8, row stride cols, and
 * scale (rows): the scheme above, row by row. Quantises a weight (N, K) per
 * output channel, or activations per token. */
void bertc_quantize_rows(const float *X, int64_t rows, int64_t cols, int64_t ldx, int8_t *q,
                         float *scale);

/* W quantised and packed for one int8 path's micro-kernel. The layout
 * (private to tensor/qgemm*.c): K padded with zeros to k_pad (a multiple of
 * 4); panels of nr output channels (N padded with zero channels to a multiple
 * of nr); in a panel, for each group of 4 k, the 4 bytes of each channel:
 *     data[P * nr * k_pad + g * nr * 4 + j * 4 + t] = qw[P * nr + j][4 g + t]
 * col_sum[j] = sum_k qw[j][k] and scale[j] = sw[j] (0 on padding channels).
 * A QuantPackedB belongs to the path it was packed for (isa): bertc_qgemm
 * with another path active is a bertc_fatal (pack again). */
typedef struct QuantPackedB {
    int64_t N, K, k_pad;   /* W is (N, K) */
    int nr;                /* channels per panel, for `isa` */
    int isa;               /* the QgemmIsa it was packed for */
    int8_t *data;          /* n_pad * k_pad bytes */
    int32_t *col_sum;      /* n_pad */
    float *scale;          /* n_pad */
} QuantPackedB;
/* Bytes bertc_qgemm_pack_b needs for a (N, K) weight: data, col_sum and
 * scale, each 64-byte aligned. The same for every path (N is padded to 48,
 * a multiple of every path's nr), so a buffer sized once fits any path. */
size_t bertc_qgemm_packed_bytes(int64_t N, int64_t K);
/* Packs qw (N, K) int8 (row stride K) with its scales sw (N) for the active
 * int8 path into mem (bertc_qgemm_packed_bytes(N, K) bytes, 64-byte aligned,
 * owned by the caller) and describes it in *out. */
void bertc_qgemm_pack_b(const int8_t *Wq, const float *scale, int64_t N, int64_t K, void *mem,
                        QuantPackedB *out);
/* Y (M, N) row stride ldc = A (M, K) row stride lda, quantised per row, times
 * the packed W^T, plus bias (N; NULL: none). Threads over row blocks and
 * channel panels (bertc_parallel_for), after quantising A into a buffer of
 * the calling thread (M x k_pad bytes, grown to the largest call so far,
 * from the heap). Bitwise the same result with any thread count. */
void bertc_qgemm(int64_t M, const float *A, int64_t lda, const QuantPackedB *pb,
                 const float *bias, float *C, int64_t ldc);
/* Several products of one A, quantised once (Q, K and V of attention read the
 * same X): Y_p = act_p(quant(A) W_p^T + bias_p) for each p, every W_p reading
 * A's K columns. act_p (NULL: none) runs on each work item's rows and columns
 * of Y_p in place right after the item's tiles, while they are in L2 (the
 * BERT intermediate's GELU: two passes over a Y that does not fit in cache
 * fewer). Each Y_p is bitwise what bertc_qgemm gives, then act(y, y, n) on a
 * row's columns; the products share one pool of work items, so the threads
 * wake once for all of them. */
#define QGEMM_PRODUCTS_MAX 4
typedef struct QgemmProduct {
    const QuantPackedB *pb;
    const float *bias;                                 /* (N) or NULL */
    float *C;                                          /* Y (M, N), row stride ldc */
    int64_t ldc;
    void (*act)(float *y, const float *x, int64_t n);  /* e.g. bertc_kernel_gelu; or NULL */
} QgemmProduct;
void bertc_qgemm_many(int64_t M, const float *A, int64_t lda, const QgemmProduct *prod, int n);
/* As bertc_gemm_set_pack_arena, for bertc_qgemm's buffer: after
 * bertc_qgemm_set_arena(a) it comes from `a` (which must outlive every later
 * bertc_qgemm); NULL returns to the heap. FREESTANDING builds need it. Only
 * with bertc_threads_count() == 1. With an arena, A is quantised MR rows at
 * a time (the path's register tile), so the buffer is MR x k_pad bytes and
 * MR scales rather than M x k_pad; Y is bitwise the same. */
void bertc_qgemm_set_arena(Arena *a);
/* Its size now (the largest call's rows of A held at once, times k_pad,
 * plus a float scale per row), and taking it at once, as
 * bertc_gemm_pack_sizes / bertc_gemm_reserve_packs. */
size_t bertc_qgemm_scratch_bytes(void);
void bertc_qgemm_reserve(size_t bytes);
/* The oracle: the same y from qw (N, K) (row stride K) and sw (N) by plain
 * loops, quantising A with the portable code. Slow; for tests. */
void bertc_qgemm_reference(int64_t M, const float *A, int64_t lda, const int8_t *Wq,
                           const float *scale, int64_t N, int64_t K, const float *bias,
                           float *C, int64_t ldc);

/* ------------------------------------------------------------------------ */
/* BF16 GEMM for inference: y = A W^T + b with bf16 W and A (tensor/bgemm.c) */
/* ------------------------------------------------------------------------ */

/* A Linear y (M, N) = A (M, K) W^T + bias, W (N, K), in bfloat16 (bf16: the
 * upper 16 bits of a float32, 8 bits of mantissa) with float32 sums, as
 * AVX512_BF16's vdpbf16ps computes it:
 *
 *   W: bf16, packed once (from float32, rounded by bertc_bf16_from_f32, or
 *      from bf16 as read from a BF16 file)
 *   A: float32, rounded to bf16 per row inside bertc_bgemm (bertc_bf16_from_f32)
 *   per output (i, j): acc = +0.0f; K odd counts one more k with a = w = 0;
 *   for each pair of k, g = 0, 1, ..., k_pad / 2 - 1 in order:
 *       acc = ftz(fma(daz(a[2g+1]), daz(w[2g+1]), daz(acc)))      odd k first
 *       acc = ftz(fma(daz(a[2g]),   daz(w[2g]),   daz(acc)))
 *   y[i,j] = acc + bias[j]   (one IEEE add; no bias: y = acc)
 *
 * fma rounds once, to nearest even (the bf16 product is exact in float32, and
 * one that overflows float32 still meets acc exactly); daz reads a denormal
 * as zero of its sign, ftz writes a denormal result as zero of its sign,
 * after rounding to the denormal grid (2^-126 - 0.75 * 2^-150 gives 2^-126,
 * not zero). This is Intel's VDPBF16PS pseudo-code, checked against the
 * instruction on random and edge inputs (test/test_bgemm.c): the even element
 * first, or a product rounded (or flushed) before the add, each disagree with
 * the hardware on most random inputs. NaN in, NaN out, with the
 * instruction's bits: each fma gives the first NaN of (a, w, acc) with its
 * quiet bit set, or x86's default NaN 0xFFC00000 for Inf * 0 and Inf - Inf
 * (the scalar code says so itself rather than trust fmaf's choice). The
 * scalar and avx512bf16 paths give bitwise this y with any thread count.
 *
 * The amxbf16 path (TDPBF16PS, 16 pairs of k per instruction) rounds
 * otherwise, and its y is bitwise this model's on ordinary values (finite
 * inputs whose products and partial sums stay normal float32), with any
 * thread count:
 *   pairs g cut into chunks of 16 from g = 0 (the last chunk shorter); per
 *   chunk, E = the even products a[2g] w[2g] summed in g order in float32,
 *   O = the odd ones the same way, apart; acc = ftz(acc + ftz(E + O));
 *   products exact, daz on inputs, ftz on every sum; y = acc + bias[j].
 * Its bits on edge inputs (a partial sum that overflows, zero signs and
 * rounding near 2^-126, which NaN comes out) are NOT modelled: a probe of
 * the instruction matched no model there. What holds there, and what
 * test/test_bgemm.c checks, is NaN where the model has NaN and finite
 * where it is finite.
 *
 * The neonbf16 path (Arm's BFDOT, FEAT_BF16, FPCR.EBF 0) rounds otherwise
 * again, and its y is bitwise this, on all inputs, with any thread count:
 *   acc = +0.0f; for each pair g in order:
 *       p0 = R(daz(a[2g]) daz(w[2g])), p1 = R(daz(a[2g+1]) daz(w[2g+1]))
 *       acc = R(daz(acc) + R(p0 + p1))
 *   y[i,j] = acc + bias[j]   (one IEEE add)
 * the Arm ARM's BFDotAdd: R is BFRound, round to odd (truncate, then set the
 * last bit if inexact; no overflow below 2^128: FLT_MAX + 2^103 gives
 * FLT_MAX), a result below 2^-126 before rounding -> zero of its sign, at
 * or past 2^128 -> Inf; any NaN, Inf * 0 or Inf - Inf gives the default
 * NaN 0x7FC00000; an exact zero sum of non-zeros is +0. The products are
 * exact unless they overflow or flush, so three roundings per pair where
 * vdpbf16ps has two fmas (tensor/bgemm_bfdot.c; QEMU's bfdotadd is the same,
 * and test/portable/t_bgemm.c checks it against the instruction).
 *
 * A Linear's life:
 *     void *mem = aligned 64: bertc_bgemm_packed_bytes(N, K) bytes;
 *     Bf16PackedB pb;
 *     bertc_bgemm_pack_b_f32(W, N, K, mem, &pb);            // or _pack_b from bf16
 *     bertc_bgemm(M, A, K, &pb, bias, Y, N);                // every forward */

/* float32 -> bf16 exactly as VCVTNEPS2BF16 (and VCVTNE2PS2BF16) converts:
 * zero or denormal -> zero of its sign; NaN -> its upper 16 bits with the
 * quiet bit (bit 6) set; else round to nearest even on the upper 16 bits
 * (bits + 0x7FFF + bit 16, then >> 16), so a value past the largest bf16
 * becomes Inf. MXCSR plays no part. bf16 -> float32 is exact (<< 16). */
uint16_t bertc_bf16_from_f32(float x);
float bertc_bf16_to_f32(uint16_t b);

/* The bf16 paths. When the fp32 path (bertc_cpu_isa) is avx512 the default
 * is AMX-BF16 if the CPU and the OS allow it (CPUID leaf 7 EDX bits 22 and
 * 24, XCR0 bits 17 and 18, Linux's permission for the tile data, asked once),
 * else AVX512_BF16 if the CPU has it (CPUID leaf 7, sub-leaf 1, EAX bit 5);
 * when it is neon, NEON BFDOT if the CPU has FEAT_BF16 (Linux's HWCAP2_BF16);
 * otherwise scalar: the fp32 path's row of the ISA table (tensor/isa.c) names
 * the bf16 paths it allows. BERTC_BF16_ISA=scalar|avx512bf16|amxbf16|neonbf16
 * forces one (bertc_check_env validates it), as does bertc_bgemm_set_isa. */
typedef enum BgemmIsa {
    BGEMM_ISA_SCALAR = 0,
    BGEMM_ISA_AVX512BF16,
    BGEMM_ISA_AMXBF16,
    BGEMM_ISA_NEONBF16,
    BGEMM_ISA_COUNT
} BgemmIsa;
BgemmIsa bertc_bgemm_isa(void);                      /* the active bf16 path */
bool bertc_bgemm_isa_supported(BgemmIsa isa);         /* can this CPU and build run it? */
/* Force a path (fatal if unsupported); BGEMM_ISA_COUNT returns to the default. */
void bertc_bgemm_set_isa(BgemmIsa isa);
/* "scalar", "avx512bf16", "amxbf16", "neonbf16" */
const char *bertc_bgemm_isa_name(BgemmIsa isa);
bool bertc_bgemm_isa_from_name(const char *name, BgemmIsa *isa);

/* W in bf16, packed for bertc_bgemm. K padded with a zero to k_pad (even);
 * N padded with zero channels to a multiple of nr; panels of nr channels,
 * the two k of each pair of a channel together (the order vdpbf16ps reads:
 * one float32 lane += 2 products):
 *     data[P * nr * k_pad + g * nr * 2 + j * 2 + t] = w[P * nr + j][2 g + t]
 * Every path reads this one layout (nr 48), so W packed once runs on any
 * path; isa records the path active when it was packed. */
typedef struct Bf16PackedB {
    int64_t N, K, k_pad;   /* W is (N, K) */
    int nr;                /* channels per panel */
    int isa;               /* the BgemmIsa active at packing */
    uint16_t *data;        /* n_pad * k_pad bf16 */
} Bf16PackedB;
/* Bytes the packers need for a (N, K) weight (N padded to 48, K to even),
 * the same for every path. */
size_t bertc_bgemm_packed_bytes(int64_t N, int64_t K);
/* Packs W (N, K) row stride K into mem (bertc_bgemm_packed_bytes(N, K)
 * bytes, 64-byte aligned, owned by the caller) and describes it in *out:
 * from float32 (each rounded by bertc_bf16_from_f32), or from bf16 bits
 * (stored as they are: a denormal bf16 is read as zero by the arithmetic). */
void bertc_bgemm_pack_b_f32(const float *W, int64_t N, int64_t K, void *mem, Bf16PackedB *out);
void bertc_bgemm_pack_b(const uint16_t *W, int64_t N, int64_t K, void *mem, Bf16PackedB *out);
/* Y (M, N) row stride ldc = A (M, K) row stride lda, rounded to bf16 per row,
 * times the packed W^T, plus bias (N; NULL: none). Threads over row blocks
 * and channel panels (bertc_parallel_for), after converting A into a buffer
 * of the calling thread (M x k_pad bf16, grown to the largest call so far,
 * from the heap). Bitwise the same result with any thread count. */
void bertc_bgemm(int64_t M, const float *A, int64_t lda, const Bf16PackedB *pb,
                 const float *bias, float *C, int64_t ldc);
/* The oracle: the same y from float32 A and bf16 W (N, K) (row stride K) by
 * plain loops over the arithmetic of the active path (bertc_bgemm_isa): the
 * vdpbf16ps order above for scalar and avx512bf16, the AMX model for
 * amxbf16, BFDOT's for neonbf16. Slow; for tests. */
void bertc_bgemm_reference(int64_t M, const float *A, int64_t lda, const uint16_t *W, int64_t N,
                           int64_t K, const float *bias, float *C, int64_t ldc);

/* Mixed precision, for training (tensor/bgemm_mixed.c): C (M, N) =
 * op(A) (M, K) op(B) (K, N) + beta C with float32 operands and C, each
 * operand rounded to bf16 (bertc_bf16_from_f32) as it is read, the sums in
 * float32 in the active path's order: PyTorch's
 * set_float32_matmul_precision("medium"). op(X) is X, or X^T when trans_x
 * (then X is stored (cols, rows)), as in bertc_gemm (no alpha here).
 * Bitwise: y = bertc_bgemm_reference(op(A), bf16(op(B)^T)), then C = y
 * (beta 0), C + y (beta 1), or fl(beta C) + y; the same with any thread
 * count. Both operands are converted on each call (B packed into a buffer
 * of the calling thread), so it suits products with M of a few hundred
 * rows and more, as in a training step. */
void bertc_gemm_bf16(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                     const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                     float *C, int64_t ldc);
/* The same with op(A) already rounded, for an operand that two products
 * read (linear_cross_entropy's softmax numerators, a Linear's dy in its
 * backward): rounded once, no conversion per product, the same bits as
 * bertc_gemm_bf16 on its float32 values.
 *   _rows:   op(A) = A given as bertc_gemm_bf16_rows_pad(M) rows of a_cols
 *            = bertc_gemm_bf16_a_cols(K) bf16 (bertc_bf16_from_f32 of
 *            A[i][k], zeros past K and in the rows past M): the layout
 *            bertc_gemm_bf16 converts A into, read in place;
 *   _rows_t: op(A) = at^T, at (K, M) in bf16 with row stride ldat (such
 *            rows, read as K rows of M), transposed into that layout. */
int64_t bertc_gemm_bf16_a_cols(int64_t K);
int64_t bertc_gemm_bf16_rows_pad(int64_t M);
void bertc_gemm_bf16_rows(bool trans_b, int64_t M, int64_t N, int64_t K, const uint16_t *a,
                          int64_t a_cols, const float *B, int64_t ldb, float beta, float *C,
                          int64_t ldc);
void bertc_gemm_bf16_rows_t(bool trans_b, int64_t M, int64_t N, int64_t K, const uint16_t *at,
                            int64_t ldat, const float *B, int64_t ldb, float beta, float *C,
                            int64_t ldc);
/* bf16 of x[0 .. n) into out, then zeros to out[n_pad - 1], with the
 * active bf16 path's converter (bertc_bf16_from_f32's bits). */
void bertc_bf16_convert_row(const float *x, int64_t n, int64_t n_pad, uint16_t *out);
/* A (M, K), row stride lda, into the layout bertc_gemm_bf16_rows reads:
 * bertc_gemm_bf16_rows_pad(M) rows of bertc_gemm_bf16_a_cols(K), on the
 * threads when it is large. */
void bertc_gemm_bf16_round_rows(int64_t M, int64_t K, const float *A, int64_t lda, uint16_t *a);

/* ------------------------------------------------------------------------ */
/* Threads: a small fork-join pool (tensor/threads.c)                        */
/* ------------------------------------------------------------------------ */

/* The number of threads parallel work may use: BERTC_THREADS if set, else the
 * online cores; 1 when built with NO_THREADS=1. bertc_gemm() splits a large GEMM
 * into up to this many pieces. */
int bertc_threads_count(void);
#define THREADS_MAX 64                /* the pool's size limit */
void bertc_threads_set_count(int n);        /* clamped to 1..THREADS_MAX */
/* A thread count given as text (--threads, BERTC_THREADS): a whole number
 * from 1 to THREADS_MAX into *n, else false. */
bool bertc_threads_parse_count(const char *text, int *n);
/* Calls fn(ctx, begin, end) on contiguous chunks covering [0, n), at most
 * bertc_threads_count() chunks, and returns when all are done. The caller and
 * the pool's workers take the chunks in turn, so any thread may run any
 * chunk (the caller all of them, when the workers are slow to wake): fn must
 * not depend on which thread runs it. Called from inside a chunk, it runs
 * the whole range serially in the caller (nesting is safe). */
void bertc_parallel_for(int64_t n, void (*fn)(void *ctx, int64_t begin, int64_t end), void *ctx);

#endif /* BERTC_TENSOR_KERNELS_H */
