/* tensor/scratch_internal.h — private to tensor/: two pieces the float GEMM
 * (tensor/gemm.c) and the int8 GEMM (tensor/qgemm.c) share.
 *
 * ScratchBuffer: a grow-only, 64-byte aligned buffer kept between calls
 * (one per thread: declare it SCRATCH_THREAD_LOCAL). Its memory comes from
 * bertc_sys_alloc, or from an arena when the caller set one (bare metal,
 * where there is no heap); it is reallocated only when a larger size is
 * asked for than ever before.
 *
 * WorkCounter: the shared counter threads take work items from (a plain
 * integer in a build without threads). */
#ifndef BERTC_SCRATCH_INTERNAL_H
#define BERTC_SCRATCH_INTERNAL_H

#include "tensor/tensor.h"

#if defined(BERTC_NO_THREADS)
#define SCRATCH_THREAD_LOCAL
#else
#include <stdatomic.h>
#define SCRATCH_THREAD_LOCAL _Thread_local
#endif

typedef struct ScratchBuffer {
    void *raw;       /* from bertc_sys_alloc, or from an arena */
    void *data;      /* raw rounded up to 64 bytes */
    size_t cap;      /* bytes usable at data */
    bool in_arena;
} ScratchBuffer;

/* At least `bytes` bytes, 64-byte aligned, from `arena` (NULL: the heap).
 * Out of memory stops with "<what>: out of memory for a N-byte buffer". */
static inline void *scratch_get(ScratchBuffer *s, Arena *arena, size_t bytes, const char *what)
{
    if (s->cap < bytes) {
        if (!s->in_arena)
            bertc_sys_free(s->raw);
        s->in_arena = arena != NULL;
        s->raw = arena ? bertc_arena_alloc(arena, bytes + 64) : bertc_sys_alloc(bytes + 64);
        if (!s->raw)
            bertc_fatal("%s: out of memory for a %zu-byte buffer", what, bytes);
        s->data = (void *)(((uintptr_t)s->raw + 63) & ~(uintptr_t)63);
        s->cap = bytes;
    }
    return s->data;
}

/* Forget the buffer (freeing it if it came from the heap): the next
 * scratch_get allocates from wherever the caller now says. */
static inline void scratch_reset(ScratchBuffer *s)
{
    if (!s->in_arena)
        bertc_sys_free(s->raw);
    *s = (ScratchBuffer){0};
}

#if defined(BERTC_NO_THREADS)
typedef int64_t WorkCounter;
static inline void work_counter_reset(WorkCounter *c) { *c = 0; }
static inline int64_t work_counter_next(WorkCounter *c) { return (*c)++; }
#else
typedef atomic_int_fast64_t WorkCounter;
static inline void work_counter_reset(WorkCounter *c) { atomic_store(c, 0); }
static inline int64_t work_counter_next(WorkCounter *c) { return atomic_fetch_add(c, 1); }
#endif

#endif /* BERTC_SCRATCH_INTERNAL_H */
