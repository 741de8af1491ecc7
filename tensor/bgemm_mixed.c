/* tensor/bgemm_mixed.c — the mixed-precision GEMM of training:
 *
 *     C (M, N) = bf16(op(A)) (M, K) . bf16(op(B)) (K, N)  (+ beta C)
 *
 * with float32 operands, float32 sums and a float32 C: what PyTorch calls
 * torch.set_float32_matmul_precision("medium"), and what bf16 mixed
 * precision does to a Linear's three products (forward y = x W^T, backward
 * dx = dy W and dW = dy^T x). The parameters, their gradients and Adam's
 * moments stay float32; only the multiplications read bf16.
 *
 * It is the inference GEMM of tensor/bgemm.c with both operands converted
 * on the fly: op(B) is packed into the Bf16PackedB layout (as W = op(B)^T,
 * (N, K)) and op(A) into the rows the micro-kernel reads, each in the
 * orientation it comes in, so no float32 transpose is made:
 *
 *   op(B) = B^T (B is (N, K), a weight W):   B's rows are W's rows: each
 *            row converted, its pairs of k scattered into the panel;
 *   op(B) = B   (B is (K, N)):               rows 2g and 2g + 1 of B give
 *            pair g of every channel: two row pieces converted, interleaved;
 *   op(A) = A   (A is (M, K)):               row by row (bertc_bgemm_convert_a);
 *   op(A) = A^T (A is (K, M)):               tiles of 32 k x 16 i read along
 *            A's rows, transposed in registers, then converted.
 *
 * The sums are those of the active path (tensor/kernels.h), so C is
 * bitwise bertc_bgemm_reference on (op(A), bf16(op(B)^T)), plus beta C
 * (one add for beta = 1, C scaled first for any other beta), with any
 * thread count. */
#include "tensor/bgemm_internal.h"
#include "tensor/scratch_internal.h"

#include <string.h>

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t ceil_div(int64_t n, int64_t d) { return (n + d - 1) / d; }
static int64_t round_up(int64_t n, int64_t m) { return ceil_div(n, m) * m; }

/* The calling thread's bf16 operands, kept between calls. */
static SCRATCH_THREAD_LOCAL ScratchBuffer b_buffer, a_buffer;

/* ------------------------------------------------------------------------ */
/* op(B) -> the packed W = op(B)^T                                           */
/* ------------------------------------------------------------------------ */

/* The k of one row converted at a time (a stack buffer's worth). */
#define ROW_CHUNK 512

typedef struct PackJob {
    const BgemmKernel *kr;
    const float *B;
    int64_t ldb;
    Bf16PackedB *pb;
} PackJob;

/* Panel P of the packed W: pair g (k = 2g, 2g + 1) of channel jj is at
 * panel[g * NR * 2 + jj * 2 + t] (tensor/kernels.h, Bf16PackedB). */
static uint16_t *panel_at(const Bf16PackedB *pb, int64_t P)
{
    return pb->data + P * BGEMM_NR * pb->k_pad;
}

/* B is (N, K), row j = channel j: for each channel of panels [begin, end),
 * its row converted ROW_CHUNK k at a time, each pair put in place.
 * Channels past N are zero. */
static void pack_rows_range(void *ctx, int64_t begin, int64_t end)
{
    const PackJob *job = ctx;
    const Bf16PackedB *pb = job->pb;
    _Alignas(64) uint16_t row[ROW_CHUNK];
    for (int64_t P = begin; P < end; P++) {
        uint16_t *panel = panel_at(pb, P);
        for (int jj = 0; jj < BGEMM_NR; jj++) {
            int64_t j = P * BGEMM_NR + jj;
            for (int64_t k0 = 0; k0 < pb->k_pad; k0 += ROW_CHUNK) {
                int64_t width = min64(ROW_CHUNK, pb->k_pad - k0);
                if (j < pb->N)
                    job->kr->convert_row(job->B + j * job->ldb + k0, min64(width, pb->K - k0),
                                         width, row);
                else
                    memset(row, 0, sizeof(uint16_t) * (size_t)width);
                for (int64_t g = 0; g < width / 2; g++) {
                    uint16_t *pair = panel + ((k0 / 2 + g) * BGEMM_NR + jj) * 2;
                    pair[0] = row[2 * g];
                    pair[1] = row[2 * g + 1];
                }
            }
        }
    }
}

/* B is (K, N), row k = step k of every channel: for pairs of k in
 * [begin, end), the two rows' pieces of each panel converted and
 * interleaved by the path's convert_pairs (the second row is zero past K,
 * channels past N are zero). */
static void pack_cols_range(void *ctx, int64_t begin, int64_t end)
{
    const PackJob *job = ctx;
    const Bf16PackedB *pb = job->pb;
    int64_t n_panels = ceil_div(pb->N, BGEMM_NR);
    for (int64_t g = begin; g < end; g++) {
        const float *even = job->B + 2 * g * job->ldb;
        const float *odd = 2 * g + 1 < pb->K ? even + job->ldb : NULL;
        for (int64_t P = 0; P < n_panels; P++) {
            int64_t j0 = P * BGEMM_NR;
            job->kr->convert_pairs(even + j0, odd ? odd + j0 : NULL,
                                   (int)min64(BGEMM_NR, pb->N - j0),
                                   panel_at(pb, P) + g * BGEMM_NR * 2);
        }
    }
}

/* op(B) (K, N) packed as W = op(B)^T (N, K) into this thread's buffer. */
static Bf16PackedB pack_op_b(const BgemmKernel *kr, bool trans_b, int64_t K, int64_t N,
                             const float *B, int64_t ldb)
{
    void *mem = scratch_get(&b_buffer, NULL, bertc_bgemm_packed_bytes(N, K),
                            "bertc_gemm_bf16 (bf16 op(B))");
    Bf16PackedB pb = bertc_bgemm_packed_header("bertc_gemm_bf16", N, K, mem);
    PackJob job = {.kr = kr, .B = B, .ldb = ldb, .pb = &pb};
    int64_t n_panels = ceil_div(N, BGEMM_NR), pairs = pb.k_pad / 2;
    bool threads = bertc_threads_count() > 1 && N * K >= (1 << 15);
    if (trans_b) {
        if (threads)
            bertc_parallel_for(n_panels, pack_rows_range, &job);
        else
            pack_rows_range(&job, 0, n_panels);
    } else {
        if (threads)
            bertc_parallel_for(pairs, pack_cols_range, &job);
        else
            pack_cols_range(&job, 0, pairs);
    }
    return pb;
}

/* ------------------------------------------------------------------------ */
/* op(A) = A^T -> converted rows                                             */
/* ------------------------------------------------------------------------ */

typedef struct TransJob {
    const BgemmKernel *kr;
    const float *A;          /* (K, M), row stride lda; or NULL and */
    const uint16_t *A16;     /* (K, M) already in bf16 (bertc_gemm_bf16_rows_t) */
    int64_t M, K, lda;
    uint16_t *a;             /* round_up(M, mr) rows of a_cols */
    int64_t a_cols;
} TransJob;

/* Element e of the job's A, as an address to fetch. */
static const void *source_at(const TransJob *job, int64_t e)
{
    return job->A ? (const void *)(job->A + e) : (const void *)(job->A16 + e);
}

/* Rows [begin * TI, end * TI) of op(A), TI = BGEMM_TILE_I: a[i][k] =
 * bf16(A[k][i]), zeros past K (to a_cols) and past M; a tile of TK =
 * BGEMM_TILE_K rows of A at a time, read along A's rows and transposed in
 * registers by the path's convert_trans, the next tile's rows fetched
 * ahead. With the AVX-512 tile in place of the scalar loop that was here,
 * converting the transposed operands went from ~7 % of a mixed-precision
 * MLM step (the shipped model's recipe, batch 32 x 128, perf) to 3.5 %,
 * most of it now waiting on A's rows and on out's stores. */
static void convert_trans_range(void *ctx, int64_t begin, int64_t end)
{
    const TransJob *job = ctx;
    const int TI = BGEMM_TILE_I, TK = BGEMM_TILE_K;
    int64_t rows_pad = round_up(job->M, job->kr->mr);
    for (int64_t i0 = begin * TI; i0 < end * TI && i0 < rows_pad; i0 += TI) {
        int rows = (int)min64(TI, rows_pad - i0);
        int cols = job->M > i0 ? (int)min64(rows, job->M - i0) : 0;
        uint16_t *a = job->a + i0 * job->a_cols;
        for (int i = 0; i < rows; i++)
            memset(a + i * job->a_cols + job->K, 0,
                   sizeof(uint16_t) * (size_t)(job->a_cols - job->K));
        for (int64_t k0 = 0; k0 < job->K; k0 += TK) {
            int kn = (int)min64(TK, job->K - k0);
            int64_t at = k0 * job->lda + i0;
            for (int64_t k = k0 + TK; cols > 0 && k < min64(job->K, k0 + 2 * TK); k++)
                __builtin_prefetch(source_at(job, k * job->lda + i0));
            if (job->A)
                job->kr->convert_trans(job->A + at, job->lda, kn, cols, rows, a + k0, job->a_cols);
            else
                job->kr->transpose_tile(job->A16 + at, job->lda, kn, cols, rows, a + k0,
                                        job->a_cols);
        }
    }
}

/* The transposing job over every row block, on the threads when it is big. */
static void run_trans(const TransJob *job)
{
    int64_t blocks = ceil_div(round_up(job->M, job->kr->mr), BGEMM_TILE_I);
    if (bertc_threads_count() > 1 && job->M * job->K >= (1 << 15))
        bertc_parallel_for(blocks, convert_trans_range, (void *)job);
    else
        convert_trans_range((void *)job, 0, blocks);
}

static void convert_op_a(const BgemmKernel *kr, bool trans_a, int64_t M, int64_t K,
                         const float *A, int64_t lda, uint16_t *a, int64_t a_cols)
{
    if (!trans_a) {
        bertc_bgemm_convert_a(kr, M, K, A, lda, a, a_cols);
        return;
    }
    TransJob job = {.kr = kr, .A = A, .M = M, .K = K, .lda = lda, .a = a, .a_cols = a_cols};
    run_trans(&job);
}

/* ------------------------------------------------------------------------ */
/* The entry point                                                           */
/* ------------------------------------------------------------------------ */

/* C = beta * C for a beta other than 0 and 1 (the product is then added). */
static void scale_c(int64_t M, int64_t N, float beta, float *C, int64_t ldc)
{
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++)
            C[i * ldc + j] *= beta;
}

/* An empty C, or an empty sum (K = 0: C = beta C, op(A) and op(B) not
 * read): true when that is all there is to do. */
static bool nothing_to_multiply(int64_t M, int64_t N, int64_t K, float beta, float *C,
                                int64_t ldc)
{
    if (M <= 0 || N <= 0)
        return true;
    if (K > 0)
        return false;
    if (beta != 1.0f)
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++)
                C[i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[i * ldc + j];
    return true;
}

/* The product of converted rows a (a_cols each) with op(B), into C. */
static void product(const BgemmKernel *kr, bool trans_b, int64_t M, int64_t N, int64_t K,
                    const uint16_t *a, int64_t a_cols, const float *B, int64_t ldb,
                    float beta, float *C, int64_t ldc)
{
    Bf16PackedB pb = pack_op_b(kr, trans_b, K, N, B, ldb);
    if (beta != 0.0f && beta != 1.0f)
        scale_c(M, N, beta, C, ldc);
    bertc_bgemm_converted(kr, M, a, a_cols, &pb, NULL, beta != 0.0f, C, ldc);
}

/* The bf16 a converted row of K steps holds on kr's path: K padded to
 * even, then to the kernel's ka (zeros). */
static int64_t a_cols_of(const BgemmKernel *kr, int64_t K)
{
    return round_up(round_up(K, 2), kr->ka);
}

/* This thread's buffer for the converted op(A) of M rows and K steps; its
 * rows' length into *a_cols. */
static uint16_t *a_rows(const BgemmKernel *kr, int64_t M, int64_t K, int64_t *a_cols)
{
    *a_cols = a_cols_of(kr, K);
    size_t n = (size_t)(round_up(M, kr->mr) * *a_cols);
    return scratch_get(&a_buffer, NULL, sizeof(uint16_t) * n, "bertc_gemm_bf16 (bf16 op(A))");
}

int64_t bertc_gemm_bf16_a_cols(int64_t K)
{
    return a_cols_of(bertc_bgemm_kernel(), K);
}

int64_t bertc_gemm_bf16_rows_pad(int64_t M)
{
    return round_up(M, bertc_bgemm_kernel()->mr);
}

void bertc_gemm_bf16(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                     const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                     float *C, int64_t ldc)
{
    if (nothing_to_multiply(M, N, K, beta, C, ldc))
        return;
    const BgemmKernel *kr = bertc_bgemm_kernel();
    int64_t a_cols;
    uint16_t *a = a_rows(kr, M, K, &a_cols);
    convert_op_a(kr, trans_a, M, K, A, lda, a, a_cols);
    product(kr, trans_b, M, N, K, a, a_cols, B, ldb, beta, C, ldc);
}

void bertc_gemm_bf16_rows(bool trans_b, int64_t M, int64_t N, int64_t K, const uint16_t *a,
                          int64_t a_cols, const float *B, int64_t ldb, float beta, float *C,
                          int64_t ldc)
{
    if (nothing_to_multiply(M, N, K, beta, C, ldc))
        return;
    const BgemmKernel *kr = bertc_bgemm_kernel();
    if (a_cols != a_cols_of(kr, K))
        bertc_fatal("bertc_gemm_bf16_rows: rows of %lld bf16 for K = %lld; this path reads "
                    "bertc_gemm_bf16_a_cols(K) = %lld", (long long)a_cols, (long long)K,
                    (long long)a_cols_of(kr, K));
    product(kr, trans_b, M, N, K, a, a_cols, B, ldb, beta, C, ldc);
}

void bertc_gemm_bf16_rows_t(bool trans_b, int64_t M, int64_t N, int64_t K, const uint16_t *at,
                            int64_t ldat, const float *B, int64_t ldb, float beta, float *C,
                            int64_t ldc)
{
    if (nothing_to_multiply(M, N, K, beta, C, ldc))
        return;
    const BgemmKernel *kr = bertc_bgemm_kernel();
    int64_t a_cols;
    uint16_t *a = a_rows(kr, M, K, &a_cols);
    TransJob job = {.kr = kr, .A16 = at, .M = M, .K = K, .lda = ldat, .a = a, .a_cols = a_cols};
    run_trans(&job);
    product(kr, trans_b, M, N, K, a, a_cols, B, ldb, beta, C, ldc);
}

void bertc_bf16_convert_row(const float *x, int64_t n, int64_t n_pad, uint16_t *out)
{
    bertc_bgemm_kernel()->convert_row(x, n, n_pad, out);
}

void bertc_gemm_bf16_round_rows(int64_t M, int64_t K, const float *A, int64_t lda, uint16_t *a)
{
    const BgemmKernel *kr = bertc_bgemm_kernel();
    bertc_bgemm_convert_a(kr, M, K, A, lda, a, a_cols_of(kr, K));
}
