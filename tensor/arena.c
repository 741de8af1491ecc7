/* tensor/arena.c — bump allocation in 64-byte-aligned chunks.
 *
 * Why chunks are merged on reset: a step arena grows while the first training
 * step discovers how much memory a step needs. At the reset that ends the step,
 * all chunks are replaced by ONE chunk of at least the high-water mark. Every
 * later step that does the same work fits in that chunk, so the steady-state
 * loop performs zero system allocations. */
#include "tensor/tensor.h"
#include "tensor/format_internal.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if !defined(BERTC_FREESTANDING)
#include <unistd.h>
#endif

#define ARENA_ALIGN 64

struct ArenaChunk {
    ArenaChunk *older;  /* the chunk that was current before this one */
    void *raw;          /* what bertc_sys_alloc returned (for free) */
    uint8_t *data;      /* 64-byte-aligned start */
    size_t cap;
    size_t used;        /* bytes used when this chunk stopped being current */
    size_t total;       /* bytes allocated for it, counted in arena_total */
};

/* Atomic: GEMM worker threads allocate their packing buffers on first use. */
static atomic_size_t sys_alloc_count;

#if defined(BERTC_FREESTANDING)
/* No heap: fixed arenas never get here, so reaching it is a sizing mistake. */
void *bertc_sys_alloc(size_t bytes)
{
    bertc_fatal("bertc_sys_alloc(%zu bytes): this FREESTANDING build has no heap; give "
                "bertc_arena_init_fixed a bigger buffer (and bertc_gemm_set_pack_arena an arena)", bytes);
}

void bertc_sys_free(void *p) { (void)p; }
#else
void *bertc_sys_alloc(size_t bytes)
{
    atomic_fetch_add_explicit(&sys_alloc_count, 1, memory_order_relaxed);
    return malloc(bytes);
}

void bertc_sys_free(void *p) { free(p); }
#endif

size_t bertc_sys_alloc_count(void)
{
    return atomic_load_explicit(&sys_alloc_count, memory_order_relaxed);
}

static size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

/* ------------------------------------------------------------------------ */
/* The memory limit                                                          */
/* ------------------------------------------------------------------------ */

/* Bytes held by the chunks of every growable arena, and the most they may
 * hold. Linux hands out address space it does not have (overcommit): a
 * 20 GB chunk on a 16 GB machine "succeeds" and the process is killed later,
 * when the pages are touched. So growing past the memory there is to have
 * is refused up front, while the caller can still say which batch was too
 * big. The machine's RAM alone is not that bound: other processes hold part
 * of it, and a batch that fits the RAM but not what is free is killed by the
 * OOM killer all the same. */
static atomic_size_t arena_total;
static size_t memory_limit;   /* 0: not yet set (see default_limit) */

static size_t physical_memory(void)
{
#if defined(_SC_PHYS_PAGES) && defined(_SC_PAGESIZE) && !defined(BERTC_FREESTANDING)
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0 && (size_t)pages <= SIZE_MAX / (size_t)page)
        return (size_t)pages * (size_t)page;
#endif
    return SIZE_MAX;
}

/* The memory the system can still give (Linux: MemAvailable + SwapFree of
 * /proc/meminfo, in kB), or SIZE_MAX where that is not known. */
static size_t available_memory(void)
{
    size_t total = SIZE_MAX;
#if !defined(BERTC_FREESTANDING)
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f)
        return total;
    char line[128];
    unsigned long long kb, sum = 0;
    int found = 0;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "MemAvailable: %llu", &kb) == 1 ||
            sscanf(line, "SwapFree: %llu", &kb) == 1) {
            sum += kb;
            found++;
        }
    }
    fclose(f);
    if (found == 2 && sum < SIZE_MAX / 1024)
        total = (size_t)sum * 1024;
#endif
    return total;
}

/* The default limit: the machine's RAM, and at most what the arenas hold now
 * plus 7/8 of the memory still available (the rest is left to what bertc
 * allocates outside its arenas, and to the other processes). */
static size_t default_limit(void)
{
    size_t limit = physical_memory(), avail = available_memory();
    size_t held = atomic_load(&arena_total);
    if (avail != SIZE_MAX) {
        avail -= avail / 8;
        if (avail <= SIZE_MAX - held && held + avail < limit)
            limit = held + avail;
    }
    return limit;
}

void bertc_arena_set_memory_limit(size_t bytes) { memory_limit = bytes ? bytes : default_limit(); }

size_t bertc_arena_memory_limit(void)
{
    if (!memory_limit)
        memory_limit = default_limit();
    return memory_limit;
}

size_t bertc_arena_memory_total(void) { return atomic_load(&arena_total); }

/* "512 bytes", "5.9 KiB", "13 MiB", "2.41 GiB": sizes in messages. */
typedef struct SizeText {
    char text[24];
} SizeText;

static SizeText size_text(double bytes)
{
    static const char *const unit[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    int u = 0;
    while (bytes >= 1024.0 && u < 6) {
        bytes /= 1024.0;
        u++;
    }
    SizeText s;
    snprintf(s.text, sizeof s.text, u ? "%.3g %s" : "%.0f %s", bytes, unit[u]);
    return s;
}

/* Account for `bytes` more, or stop (bertc_fatal: an error inside a guard)
 * with the arena's name and the sizes, when they would pass the limit. */
static void reserve(const char *arena, size_t bytes)
{
    size_t limit = bertc_arena_memory_limit();
    size_t before = atomic_fetch_add(&arena_total, bytes);
    if (bytes <= limit && before <= limit - bytes)
        return;
    atomic_fetch_sub(&arena_total, bytes);
    bertc_fatal("arena '%s': out of memory: %s more would bring bertc to %s, past the %s "
                "limit (the memory this machine had free); use a smaller batch or shorter "
                "sequences", arena,
                size_text((double)bytes).text, size_text((double)before + (double)bytes).text,
                size_text((double)limit).text);
}

static ArenaChunk *chunk_new(const char *arena, size_t cap)
{
    /* One allocation holds the header, the data and room to align the data. */
    if (cap > SIZE_MAX - sizeof(ArenaChunk) - ARENA_ALIGN)
        bertc_fatal("arena '%s': a chunk of %zu bytes overflows", arena, cap);
    size_t total = sizeof(ArenaChunk) + cap + ARENA_ALIGN;
    reserve(arena, total);
    void *raw = bertc_sys_alloc(total);
    if (!raw) {
        atomic_fetch_sub(&arena_total, total);
        bertc_fatal("arena '%s': out of memory: the system refused %s; use a smaller batch "
                    "or shorter sequences", arena, size_text((double)total).text);
    }
    ArenaChunk *c = raw;
    c->raw = raw;
    c->data = (uint8_t *)round_up((uintptr_t)(c + 1), ARENA_ALIGN);
    c->cap = cap;
    c->used = 0;
    c->older = NULL;
    c->total = total;
    return c;
}

static void chunk_free(ArenaChunk *c)
{
    atomic_fetch_sub(&arena_total, c->total);
    bertc_sys_free(c->raw);
}

static void arena_use_chunk(Arena *a, ArenaChunk *c)
{
    a->chunk = c;
    a->base = c->data;
    a->cap = c->cap;
    a->used = 0;
}

Arena *bertc_arena_create(const char *name, size_t initial_bytes)
{
    if (initial_bytes < 4096)
        initial_bytes = 4096;
    ArenaChunk *first = chunk_new(name, round_up(initial_bytes, ARENA_ALIGN));
    Arena *a = bertc_sys_alloc(sizeof *a);
    if (!a) {
        chunk_free(first);
        bertc_fatal("arena '%s': out of memory", name);
    }
    memset(a, 0, sizeof *a);
    a->name = name;
    a->n_system_allocs = 1;
    arena_use_chunk(a, first);
    return a;
}

Arena *bertc_arena_create_checked(const char *name, size_t initial_bytes, BertcError *err)
{
    BertcCatch guard;
    bertc_catch_begin(&guard, err);
    if (setjmp(guard.env) != 0)
        return NULL;   /* no memory for it: err says so */
    Arena *a = bertc_arena_create(name, initial_bytes);
    bertc_catch_end(&guard);
    return a;
}

void bertc_arena_init_fixed(Arena *a, const char *name, void *buffer, size_t bytes)
{
    memset(a, 0, sizeof *a);
    a->name = name;
    a->fixed = true;
    uintptr_t start = round_up((uintptr_t)buffer, ARENA_ALIGN);
    size_t lost = (size_t)(start - (uintptr_t)buffer);
    a->base = (uint8_t *)start;
    a->cap = bytes > lost ? bytes - lost : 0;
}

static void free_chunks(ArenaChunk *c)
{
    while (c) {
        ArenaChunk *older = c->older;
        chunk_free(c);
        c = older;
    }
}

void bertc_arena_destroy(Arena *a)
{
    if (!a || a->fixed)
        return;
    if (a->spare)
        chunk_free(a->spare);
    free_chunks(a->chunk);
    bertc_sys_free(a);
}

/* The spare chunk, when it holds need bytes (its pages are already the
 * process's); NULL otherwise. */
static ArenaChunk *take_spare(Arena *a, size_t need)
{
    ArenaChunk *c = a->spare;
    if (!c || c->cap < need)
        return NULL;
    a->spare = NULL;
    return c;
}

/* Chunk c, no longer in use, as the spare if it is the larger one. */
static void keep_spare(Arena *a, ArenaChunk *c)
{
    if (a->spare && a->spare->cap >= c->cap) {
        chunk_free(c);
        return;
    }
    if (a->spare)
        chunk_free(a->spare);
    c->older = NULL;
    a->spare = c;
}

void *bertc_arena_alloc(Arena *a, size_t bytes)
{
    size_t need = round_up(bytes ? bytes : 1, ARENA_ALIGN);
    if (need < bytes)
        bertc_fatal("arena '%s': allocation of %zu bytes overflows", a->name, bytes);
    if (need > a->cap - a->used) {
        if (a->fixed)
            bertc_fatal("arena '%s': full: %zu more bytes needed, %zu of %zu used; "
                        "give the arena a bigger buffer",
                        a->name, need, a->used, a->cap);
        /* Grow: keep the old chunk alive (its blocks are still in use). The
         * arena changes only once the new chunk exists. */
        ArenaChunk *c = take_spare(a, need);
        if (!c) {
            size_t cap = a->cap <= SIZE_MAX / 2 && a->cap * 2 > need ? a->cap * 2 : need;
            c = chunk_new(a->name, cap);
            a->n_system_allocs++;
        }
        if (a->chunk)
            a->chunk->used = a->used;
        a->used_before += a->used;
        c->older = a->chunk;
        arena_use_chunk(a, c);
    }
    void *p = a->base + a->used;
    a->used += need;
    if (a->used_before + a->used > a->high_water)
        a->high_water = a->used_before + a->used;
    return p;
}

void *bertc_arena_calloc(Arena *a, size_t count, size_t size)
{
    if (size && count > SIZE_MAX / size)
        bertc_fatal("arena '%s': %zu x %zu bytes overflows", a->name, count, size);
    void *p = bertc_arena_alloc(a, count * size);
    memset(p, 0, count * size);
    return p;
}

void bertc_arena_reset(Arena *a)
{
    /* A chain of chunks, or one chunk smaller than what the step held at
     * its peak: chunks the step grew into and then gave back with
     * bertc_arena_release (inference's layer-by-layer temporaries) would
     * otherwise be allocated, faulted in and freed again in every step. */
    if (!a->fixed && a->chunk && (a->chunk->older || a->high_water > a->cap)) {
        /* Merge: one chunk that holds everything the arena ever held at once.
         * A second merge means the steps vary in size (a training loop masks
         * a different number of tokens each step): give that chunk an eighth
         * more, or each new maximum would bring another merge, and a fresh
         * chunk is fresh pages from the OS, faulted in (zeroed) on first
         * touch. The first merge is exact: steps of one size (inference)
         * keep their exact footprint. */
        size_t slack = a->n_merges++ > 0 ? a->high_water / 8 : 0;
        size_t cap = round_up(a->high_water + slack, ARENA_ALIGN);
        free_chunks(a->chunk);
        if (a->spare)
            chunk_free(a->spare);
        a->spare = NULL;
        /* empty until the new chunk exists: a chunk_new that fails (inside
         * a guard) leaves an arena that grows again on its next alloc */
        a->chunk = NULL;
        a->base = NULL;
        a->cap = a->used = a->used_before = 0;
        arena_use_chunk(a, chunk_new(a->name, cap));
        a->n_system_allocs++;
    }
    a->used = 0;
    a->used_before = 0;
}

ArenaMark bertc_arena_mark(const Arena *a)
{
    ArenaMark m = {a->chunk, a->used, a->used_before};
    return m;
}

void bertc_arena_release(Arena *a, ArenaMark m)
{
    while (a->chunk != m.chunk) {
        ArenaChunk *c = a->chunk;
        arena_use_chunk(a, c->older);
        keep_spare(a, c);
    }
    a->used = m.used;
    a->used_before = m.used_before;
}

size_t bertc_arena_used(const Arena *a) { return a->used_before + a->used; }

size_t bertc_arena_high_water(const Arena *a) { return a->high_water; }
