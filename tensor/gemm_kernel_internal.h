/* tensor/gemm_kernel_internal.h — private to tensor/gemm*.c: what one ISA brings to the
 * packed GEMM (tensor/gemm.c): a micro-kernel, its register tile MR x NR, the
 * cache blocking MC/KC/NC, and a packing routine for the transposed reads.
 *
 * Packed layouts (BLIS):
 *   an A micro-panel is MR rows of op(A) over kc steps, k-major:
 *       a[k * MR + i] = op(A)[i][k]      (MR * kc floats, rows past m are 0)
 *   a B micro-panel is NR columns of op(B) over kc steps, k-major:
 *       b[k * NR + j] = op(B)[k][j]      (kc * NR floats, cols past n are 0)
 */
#ifndef BERTC_GEMM_KERNEL_INTERNAL_H
#define BERTC_GEMM_KERNEL_INTERNAL_H

#include <stdint.h>

/* The micro-kernel: with acc (MR, NR) = sum over k < kc of a[k*MR+i] * b[k*NR+j],
 * writes the top-left (m, n) corner of the tile C (row stride ldc):
 *     C = alpha * acc + beta * C      (beta == 0: C is not read).
 * 1 <= m <= MR, 1 <= n <= NR; a is 64-byte aligned, b a packed B micro-panel
 * (64-byte aligned). */
typedef void (*GemmMicroKernel)(int64_t kc, const float *a, const float *b, float *c,
                                int64_t ldc, float alpha, float beta, int m, int n);

/* The micro-kernel on a full panel of a row-major op(B) read in place (n =
 * NR, ldb its row stride, any alignment) that also packs it: b_packed[k * NR
 * + j] = b[k * ldb + j], the panel pack_copy would write. The tile's sums are
 * the micro-kernel's, in the same order. Optional (NULL: the panel is packed
 * first). */
typedef void (*GemmPackingKernel)(int64_t kc, const float *a, const float *b, int64_t ldb,
                                  float *b_packed, float *c, int64_t ldc, float alpha,
                                  float beta, int m);

/* The micro-kernel on MR full rows of a row-major op(A) read in place (A[i][k]
 * at a[i * lda + k]) instead of a packed A micro-panel, with a packed B
 * micro-panel; m = MR. The same sums in the same order. Optional (NULL: A
 * is always packed). */
typedef void (*GemmAInPlaceKernel)(int64_t kc, const float *a, int64_t lda, const float *b,
                                   float *c, int64_t ldc, float alpha, float beta, int n);

/* Packs a panel whose k index is contiguous in memory (the transposing case):
 *     dst[k * w + r] = src[r * ld + k]   for r < v, k < kc;  0 for v <= r < w. */
typedef void (*GemmPackTrans)(const float *src, int64_t ld, int w, int v, int64_t kc,
                              float *dst);
/* Packs a panel whose own index is contiguous in memory (no transpose):
 *     dst[k * w + r] = src[k * ld + r]   for r < v, k < kc;  0 for v <= r < w. */
typedef void (*GemmPackCopy)(const float *src, int64_t ld, int w, int v, int64_t kc,
                             float *dst);

typedef struct GemmKernel {
    const char *name;
    int mr, nr;               /* register tile of C */
    int64_t mc, kc, nc;       /* cache blocks: MC rows of A x KC in L2, KC x NC of B */
    GemmMicroKernel kernel;
    GemmPackingKernel kernel_packing;  /* or NULL */
    GemmAInPlaceKernel kernel_a_in_place;  /* or NULL */
    GemmPackTrans pack_trans;
    GemmPackCopy pack_copy;
    /* The same blocking with a narrower register tile, for a GEMM whose N
     * fills its panels better (attention heads: tensor/gemm.c kernel_for_n);
     * or NULL. */
    const struct GemmKernel *narrow;
} GemmKernel;

/* The portable kernel and packers (tensor/gemm.c). */
extern const GemmKernel bertc_gemm_kernel_scalar;
void bertc_gemm_pack_trans_scalar(const float *src, int64_t ld, int w, int v, int64_t kc,
                            float *dst);
void bertc_gemm_pack_copy_scalar(const float *src, int64_t ld, int w, int v, int64_t kc,
                           float *dst);

#if defined(__x86_64__)
extern const GemmKernel bertc_gemm_kernel_avx512; /* tensor/gemm_avx512.c */
extern const GemmKernel bertc_gemm_kernel_avx2;   /* tensor/gemm_avx2.c */
/* The AVX2 packers (8x8 register transposes, 8-float copies), shared by the
 * AVX-512 path. */
void bertc_gemm_pack_trans_avx2(const float *src, int64_t ld, int w, int v, int64_t kc,
                          float *dst);
void bertc_gemm_pack_copy_avx2(const float *src, int64_t ld, int w, int v, int64_t kc,
                         float *dst);
#endif
#if defined(__aarch64__)
extern const GemmKernel bertc_gemm_kernel_neon;   /* tensor/gemm_neon.c */
#endif

#endif /* BERTC_GEMM_KERNEL_INTERNAL_H */
