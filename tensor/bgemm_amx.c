/* tensor/bgemm_amx.c — the bf16 micro-kernel on AMX-BF16: a 16 x 48 tile of
 * float32 sums in three 16 x 16 tiles of the tile unit.
 *
 * TDPBF16PS C, A, B: C (16 x 16 float32) += A (16 rows x 16 pairs of bf16)
 * times B (16 pair-rows x 16 channels x 2 bf16), 32 k in one instruction.
 * It does not round as vdpbf16ps: tensor/kernels.h states the model (E/O
 * sums per 16-pair chunk) and bertc_bgemm_reference_for computes it; the
 * chunks here start at pair 0, 16, 32, ... as there.
 *
 * The tiles (all 16 rows x 64 bytes):
 *   0, 1, 2  C: rows i, channels 0-15, 16-31, 32-47 of the panel
 *   3        A: 16 rows of the driver's bf16 A, pairs g0 .. g0+15
 *   4, 5, 6  B: pair-rows g0 .. g0+15 of the panel, 16 channels each,
 *            read straight from the packed layout: base + g0 * 192 bytes
 *            + j * 64, row stride 192 (one pair of 48 channels)
 * Per chunk: 4 tile loads, 3 TDPBF16PS (3 x 16 x 16 x 32 multiply-adds).
 *
 * The K tail: the driver pads A's rows with zeros to a multiple of 32 k
 * (ka), so the A tile of the last chunk reads zeros past k_pad; the packed
 * panel ends at k_pad / 2 pair-rows, so its last pair-rows are copied into
 * a zeroed 16-row buffer first. Zero pairs add zero products: the same sums
 * as the model's shorter last chunk.
 *
 * The tile configuration is per thread: each thread of a bertc_bgemm loads
 * it before its first tile (enter) and releases the tiles after its last
 * (leave); a thread-local flag records which threads hold it. Linux hands a
 * process the tile state only after it asks (arch_prctl
 * ARCH_REQ_XCOMP_PERM), asked once, on first detection. */
#define _GNU_SOURCE   /* syscall() */
#include "tensor/bgemm_internal.h"

#if defined(BGEMM_HAVE_AMX)
#include "tensor/scratch_internal.h"

#include <cpuid.h>
#include <immintrin.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#if !defined(BERTC_NO_THREADS)
#include <pthread.h>
#endif

#define AMX_TARGET __attribute__((target("amx-tile,amx-bf16")))

enum { MR = 16, NR = BGEMM_NR, CHUNK = 16 /* pairs per TDPBF16PS */ };

/* GCC 12's tile loads and stores are asm statements that name no memory:
 * the compiler may drop stores only a tile load reads, or move reads of C
 * above the tile store that writes it. This barrier says memory is read
 * and written here. */
#define MEMORY_BARRIER() __asm__ volatile("" ::: "memory")

/* ---- may this process use the tiles? ------------------------------------ */

#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

/* CPUID leaf 7 sub-leaf 0: EDX bit 22 AMX-BF16, bit 24 AMX-TILE; leaf 1
 * ECX bit 27: the OS enabled xgetbv; XCR0 bits 17 (XTILECFG) and 18
 * (XTILEDATA): the OS saves the tile state. */
static bool cpu_and_os_have_amx(void)
{
    unsigned eax, ebx, ecx, edx;
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx))
        return false;
    if (!((edx >> 22) & 1u) || !((edx >> 24) & 1u))
        return false;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx) || !((ecx >> 27) & 1u))
        return false;
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((lo >> 17) & 3u) == 3u;
}

static bool amx_usable;

static void ask_once(void)
{
    amx_usable = cpu_and_os_have_amx()
              && syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
}

bool bertc_bgemm_amx_usable(void)
{
#if defined(BERTC_NO_THREADS)
    static bool asked = false;
    if (!asked) {
        ask_once();
        asked = true;
    }
#else
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, ask_once);
#endif
    return amx_usable;
}

/* ---- the tile configuration, per thread --------------------------------- */

/* LDTILECFG's 64-byte operand, palette 1. */
typedef struct TileConfig {
    uint8_t palette, start_row;
    uint8_t reserved[14];
    uint16_t colsb[16];   /* bytes per row of tile t */
    uint8_t rows[16];
} TileConfig;

/* 3 C, 1 A, 3 B: all 16 rows x 64 bytes. A constant in memory, not a local:
 * GCC 12 does not see _tile_loadconfig read its operand and drops the stores
 * to a local one (the reason of MEMORY_BARRIER too). */
static _Alignas(64) const TileConfig tile_config = {
    .palette = 1,
    .colsb = {64, 64, 64, 64, 64, 64, 64},
    .rows = {16, 16, 16, 16, 16, 16, 16},
};

static SCRATCH_THREAD_LOCAL bool tiles_loaded;

AMX_TARGET static void amx_enter(void)
{
    if (tiles_loaded)
        return;
    _tile_loadconfig(&tile_config);
    tiles_loaded = true;
}

AMX_TARGET static void amx_leave(void)
{
    _tile_release();
    tiles_loaded = false;
}

/* ---- the micro-kernel ---------------------------------------------------- */

/* One chunk: A's pairs from a (row stride lda_bytes), B's pair-rows from b
 * (row stride b_bytes), into C tiles 0-2. */
#define CHUNK_DOT(a, lda_bytes, b, b_bytes)          \
    do {                                             \
        _tile_loadd(3, (a), (lda_bytes));            \
        _tile_loadd(4, (b), (b_bytes));              \
        _tile_loadd(5, (b) + 32, (b_bytes));         \
        _tile_loadd(6, (b) + 64, (b_bytes));         \
        _tile_dpbf16ps(0, 3, 4);                     \
        _tile_dpbf16ps(1, 3, 5);                     \
        _tile_dpbf16ps(2, 3, 6);                     \
    } while (0)

AMX_TARGET static void kernel_16x48(int64_t k_pad, const uint16_t *a, int64_t lda,
                                    const uint16_t *b, const float *bias, float *c, int64_t ldc)
{
    const int64_t pairs = k_pad / 2, whole = pairs / CHUNK * CHUNK;
    const int64_t a_bytes = lda * 2, b_bytes = 2 * NR * 2;   /* b: 192 bytes per pair-row */
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    for (int64_t g0 = 0; g0 < whole; g0 += CHUNK)
        CHUNK_DOT(a + 2 * g0, a_bytes, b + g0 * 2 * NR, b_bytes);
    if (whole < pairs) {   /* the last pair-rows, padded with zero pairs */
        _Alignas(64) uint16_t tail[CHUNK * 2 * NR];
        size_t live = sizeof(uint16_t) * (size_t)((pairs - whole) * 2 * NR);
        memcpy(tail, b + whole * 2 * NR, live);
        memset((char *)tail + live, 0, sizeof tail - live);
        MEMORY_BARRIER();
        CHUNK_DOT(a + 2 * whole, a_bytes, tail, b_bytes);
    }
    _tile_stored(0, c, ldc * 4);
    _tile_stored(1, c + 16, ldc * 4);
    _tile_stored(2, c + 32, ldc * 4);
    MEMORY_BARRIER();
    if (bias)
        for (int i = 0; i < MR; i++)
            for (int j = 0; j < NR; j++)
                c[i * ldc + j] += bias[j];   /* y = acc + bias: one add */
}

/* MC = 128 rows of A, as the AVX512_BF16 path; A's rows padded to 32 k so
 * every A tile of 16 pairs lies inside its row. */
const BgemmKernel bertc_bgemm_kernel_amxbf16 = {
    .isa = BGEMM_ISA_AMXBF16,
    .mr = MR,
    .mc = 128,
    .ka = 2 * CHUNK,
    .convert_row = bertc_bgemm_convert_row_avx512bf16,
    .convert_trans = bertc_bgemm_convert_trans_avx512bf16,
    .convert_pairs = bertc_bgemm_convert_pairs_avx512bf16,
    .transpose_tile = bertc_bgemm_transpose_tile_avx512bf16,
    .kernel = kernel_16x48,
    .enter = amx_enter,
    .leave = amx_leave,
};

#endif /* BGEMM_HAVE_AMX */
