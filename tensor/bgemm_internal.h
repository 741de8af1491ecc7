/* tensor/bgemm_internal.h — private to tensor/bgemm*.c: what one bf16 path
 * brings to the blocked driver of tensor/bgemm.c: its register tile MR x NR,
 * a row converter that writes A the way its micro-kernel reads it, and the
 * micro-kernel.
 *
 * Converted A, as the driver hands it to a micro-kernel: MR rows of k_pad
 * bf16 (then zeros up to the row stride lda, k_pad rounded up to the path's
 * ka), the k past K zero; rows past the last real row are zero rows too, so
 * a kernel always computes a full MR x NR tile and the driver keeps the
 * m x n corner.
 *
 * Packed W: see Bf16PackedB in tensor/kernels.h. A panel is nr channels x
 * k_pad bf16, the 2 k of a pair of one channel together (one 32-bit word:
 * what vdpbf16ps multiplies into one float32 lane). */
#ifndef BERTC_BGEMM_INTERNAL_H
#define BERTC_BGEMM_INTERNAL_H

#include "tensor/tensor.h"

/* Every path's NR: bertc_bgemm_packed_bytes pads N to it, and every path
 * reads the one layout with panels of this many channels. */
#define BGEMM_NR 48
/* The tallest register tile of any path (the AMX one: 16 rows). */
#define BGEMM_MR_MAX 16

/* The AMX path needs x86-64, Linux (its permission request) and a hosted
 * build; elsewhere tensor/bgemm_amx.c compiles to nothing. */
#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__) && !defined(BERTC_FREESTANDING)
#define BGEMM_HAVE_AMX 1
#endif

/* One float32 lane of vdpbf16ps: acc with the two products of the pair
 * (a0, a1) . (w0, w1), odd first, by the definition of tensor/kernels.h. The
 * scalar path, the oracle and the test of the instruction all use it. */
float bertc_bgemm_dot2(float acc, uint16_t a0, uint16_t a1, uint16_t w0, uint16_t w1);

/* One float32 lane of Arm's BFDOT (FEAT_BF16, FPCR.EBF 0): acc plus the sum
 * of the two products, each of the three results rounded to odd with
 * denormals flushed (tensor/bgemm_bfdot.c, from the Arm ARM's BFDotAdd). */
float bertc_bgemm_bfdot2(float acc, uint16_t a0, uint16_t a1, uint16_t w0, uint16_t w1);

/* The oracle of one path's arithmetic (tensor/kernels.h): the vdpbf16ps
 * order for scalar and avx512bf16, the E/O sums per 16-pair chunk for
 * amxbf16, BFDOT's lane per pair for neonbf16. bertc_bgemm_reference is
 * this with the active path. */
void bertc_bgemm_reference_for(BgemmIsa isa, int64_t M, const float *A, int64_t lda,
                               const uint16_t *W, int64_t N, int64_t K, const float *bias,
                               float *C, int64_t ldc);

/* Converts one row x (cols) into b (k_pad bf16: cols converted by
 * bertc_bf16_from_f32, then zeros up to k_pad). */
typedef void (*BgemmConvertRow)(const float *x, int64_t cols, int64_t k_pad, uint16_t *b);

/* A tile of a transposed operand, TILE_K steps k x TILE_I rows i at most:
 * for i < rows and k < kn, out[i * ldo + k] = bf16(src[k * lds + i]) for
 * i < cols, 0 for cols <= i < rows (bertc_bf16_from_f32). Nothing past kn
 * in a row of out is written. 0 <= cols <= rows <= TILE_I, 1 <= kn <=
 * TILE_K. 32 k of bf16 are one 64-byte line of an out row: rows of out lie
 * a whole operand row apart (8 KiB at 4096 tokens), all in one L1 set, so a
 * row's line must be written at once, not in halves. */
#define BGEMM_TILE_K 32
#define BGEMM_TILE_I 16
typedef void (*BgemmConvertTrans)(const float *src, int64_t lds, int kn, int cols, int rows,
                                  uint16_t *out, int64_t ldo);
/* The same tile of an operand already in bf16: out[i * ldo + k] =
 * src[k * lds + i] (a transpose, no rounding). */
typedef void (*BgemmTransposeTile)(const uint16_t *src, int64_t lds, int kn, int cols, int rows,
                                   uint16_t *out, int64_t ldo);

/* One k-pair of a W panel from two rows of a (K, N) operand: out[2 j] =
 * bf16(even[j]), out[2 j + 1] = bf16(odd[j]) (0 when odd is NULL: the pad
 * past an odd K) for j < n; zeros for n <= j < BGEMM_NR. 1 <= n <= NR. */
typedef void (*BgemmConvertPairs)(const float *even, const float *odd, int n, uint16_t *out);

/* The tile: c[i * ldc + j] = acc[i][j] (+ bias[j]) for i < MR, j < NR, with
 * acc by the definition over k_pad (bias NULL: no add). a holds MR rows of
 * converted A, row stride lda; b one packed panel of W. */
typedef void (*BgemmMicroKernel)(int64_t k_pad, const uint16_t *a, int64_t lda,
                                 const uint16_t *b, const float *bias, float *c, int64_t ldc);

typedef struct BgemmKernel {
    BgemmIsa isa;
    int mr;               /* register tile of C: mr x BGEMM_NR */
    int64_t mc;           /* rows of A in one work item (a multiple of mr) */
    int ka;               /* A's rows are k_pad rounded up to ka bf16 (zeros) */
    BgemmConvertRow convert_row;
    BgemmConvertTrans convert_trans;
    BgemmTransposeTile transpose_tile;
    BgemmConvertPairs convert_pairs;
    BgemmMicroKernel kernel;
    /* Called by each thread before its first tile and after its last of one
     * bertc_bgemm (NULL: nothing to do): AMX loads and releases its tiles. */
    void (*enter)(void);
    void (*leave)(void);
} BgemmKernel;

/* The portable converter (tensor/bgemm.c): the definition every path's
 * converter must match bit for bit. */
void bertc_bgemm_convert_row_scalar(const float *x, int64_t cols, int64_t k_pad, uint16_t *b);
void bertc_bgemm_convert_trans_scalar(const float *src, int64_t lds, int kn, int cols, int rows,
                                      uint16_t *out, int64_t ldo);
void bertc_bgemm_convert_pairs_scalar(const float *even, const float *odd, int n, uint16_t *out);
void bertc_bgemm_transpose_tile_scalar(const uint16_t *src, int64_t lds, int kn, int cols,
                                       int rows, uint16_t *out, int64_t ldo);

/* The paths this build has; each checks the CPU with bertc_bgemm_isa_supported
 * before it is used. */
extern const BgemmKernel bertc_bgemm_kernel_scalar;                      /* tensor/bgemm.c */
#if defined(__x86_64__) && defined(__GNUC__)
extern const BgemmKernel bertc_bgemm_kernel_avx512bf16;   /* tensor/bgemm_avx512bf16.c */
/* vcvtne2ps2bf16's row converter, the transposing and the pairing ones,
 * which the AMX path shares. */
void bertc_bgemm_convert_row_avx512bf16(const float *x, int64_t cols, int64_t k_pad, uint16_t *b);
void bertc_bgemm_convert_trans_avx512bf16(const float *src, int64_t lds, int kn, int cols,
                                          int rows, uint16_t *out, int64_t ldo);
void bertc_bgemm_convert_pairs_avx512bf16(const float *even, const float *odd, int n,
                                          uint16_t *out);
void bertc_bgemm_transpose_tile_avx512bf16(const uint16_t *src, int64_t lds, int kn, int cols,
                                           int rows, uint16_t *out, int64_t ldo);
#endif
#if defined(BGEMM_HAVE_AMX)
extern const BgemmKernel bertc_bgemm_kernel_amxbf16;             /* tensor/bgemm_amx.c */
/* CPUID says AMX-TILE and AMX-BF16, XCR0 that the OS saves the tiles, and
 * Linux granted this process the tile data (asked once). */
bool bertc_bgemm_amx_usable(void);
#endif
/* The NEON path needs AArch64 and a compiler that knows the BF16 target
 * (GCC 10, clang 11); elsewhere tensor/bgemm_neon.c compiles to nothing. */
#if defined(__aarch64__) && defined(__ARM_NEON) && (defined(__clang__) ? __clang_major__ >= 11 : __GNUC__ >= 10)
#define BGEMM_HAVE_NEONBF16 1
extern const BgemmKernel bertc_bgemm_kernel_neonbf16;           /* tensor/bgemm_neon.c */
/* The CPU has FEAT_BF16: the compile-time feature, or Linux's HWCAP2_BF16. */
bool bertc_bgemm_neon_has_bf16(void);
#endif

/* ------------------------------------------------------------------------ */
/* The driver's pieces, for tensor/bgemm_mixed.c                             */
/* ------------------------------------------------------------------------ */

/* The description of W (N, K) in mem (64-byte aligned), after checking both
 * (fn names the caller in the error). */
Bf16PackedB bertc_bgemm_packed_header(const char *fn, int64_t N, int64_t K, void *mem);

/* The active path's kernel (bertc_bgemm_isa). */
const BgemmKernel *bertc_bgemm_kernel(void);

/* How many threads a product of M x N x k_pad multiply-adds is worth. */
int bertc_bgemm_thread_count(int64_t M, int64_t N, int64_t k_pad);

/* Rows [0, M) of A (float32, (M, K), row stride lda) -> a in the converted
 * layout above: round_up(M, kr->mr) rows of a_cols bf16 (a_cols >= k_pad,
 * a multiple of kr->ka), zeros past K and past M; rows split over the
 * threads when that pays. */
void bertc_bgemm_convert_a(const BgemmKernel *kr, int64_t M, int64_t K, const float *A,
                           int64_t lda, uint16_t *a, int64_t a_cols);

/* The driver once A is converted (a as above, M real rows): C (M, N) =
 * a . pb^T (+ bias) or, with accumulate, C += a . pb^T (bias NULL), each
 * entry from one tile in the path's order. */
void bertc_bgemm_converted(const BgemmKernel *kr, int64_t M, const uint16_t *a, int64_t a_cols,
                           const Bf16PackedB *pb, const float *bias, bool accumulate, float *C,
                           int64_t ldc);

#endif /* BERTC_BGEMM_INTERNAL_H */
