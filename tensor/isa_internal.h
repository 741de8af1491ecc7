/* tensor/isa_internal.h — the ISA table: one row per instruction-set path
 * (tensor/isa.c), saying everything the library runs differently on it. A
 * kernel asks the table, never switches on the path itself:
 *
 *     bertc_isa_active()->gemm          the float32 GEMM micro-kernel
 *     bertc_isa_active()->rows->gelu    a row kernel
 *
 * Private to tensor/; docs/adding-an-isa.md shows how a path joins. */
#ifndef BERTC_ISA_INTERNAL_H
#define BERTC_ISA_INTERNAL_H

#include "tensor/gemm_kernel_internal.h"
#include "tensor/kernels_internal.h"

#include <stdatomic.h>

/* The int8 paths one row may allow, at most. */
enum { ISA_INT8_MAX = 3, ISA_BF16_MAX = 2 };

typedef struct IsaPath {
    CpuIsa isa;
    const char *name;         /* BERTC_ISA's spelling, bertc_cpu_isa_name's answer */
    /* Can this CPU run it? NULL: this build does not carry the path (NEON on
     * x86-64), whose other fields are then empty too. */
    bool (*detect)(void);
    const GemmKernel *gemm;   /* float32 GEMM: micro-kernel, tile, blocking, packers */
    /* Softmax, LayerNorm, GELU, dropout, y += a x, exp/tanh/erf on arrays
     * and the optimizer's update (Adam). */
    const RowKernels *rows;
    /* The int8 GEMM paths this float path allows, best first (bertc_qgemm's
     * default is the first this CPU runs; none: the scalar one). Ends at the
     * first QGEMM_ISA_SCALAR, so unused entries need no writing. */
    QgemmIsa int8[ISA_INT8_MAX];
    /* The bf16 GEMM paths this float path allows, best first (bertc_bgemm's
     * default is the first this CPU runs; none: the scalar one). Ends at the
     * first BGEMM_ISA_SCALAR, as int8. */
    BgemmIsa bf16[ISA_BF16_MAX];
} IsaPath;

/* The row of `isa`; the scalar row when this build lacks that path. */
const IsaPath *bertc_isa_path(CpuIsa isa);
/* The row of the active path, bertc_cpu_isa(). */
const IsaPath *bertc_isa_active(void);

/* detect(), asked once: *known keeps its answer (0: not asked yet, 1: no,
 * 2: yes). The int8 and bf16 default paths are looked up on every GEMM
 * call, and detection asks cpuid, which a virtual machine traps: 18 % of a
 * mixed-precision training step (many small GEMMs) went to it before the
 * answers were kept. Threads may race to fill *known; they write the same
 * answer. */
bool bertc_isa_detect_once(_Atomic unsigned char *known, bool (*detect)(void));

#endif /* BERTC_ISA_INTERNAL_H */
