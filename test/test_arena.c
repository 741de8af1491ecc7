/* test/test_arena.c — the arena allocator: alignment, growth, merge on reset,
 * high-water mark, fixed buffers. */
#include "test/test_util.h"

#include <criterion/criterion.h>
#include <string.h>

Test(arena, aligned_and_disjoint)
{
    Arena *a = bertc_arena_create("t", 4096);
    uint8_t *p = bertc_arena_alloc(a, 1), *q = bertc_arena_alloc(a, 100), *r = bertc_arena_alloc(a, 64);
    cr_assert_eq((uintptr_t)p % 64, 0);
    cr_assert_eq((uintptr_t)q % 64, 0);
    cr_assert_eq((uintptr_t)r % 64, 0);
    cr_assert(q >= p + 1 && r >= q + 100, "blocks overlap");
    cr_assert_eq(bertc_arena_used(a), 64 + 128 + 64);
    bertc_arena_destroy(a);
}

Test(arena, grows_then_merges_into_one_chunk)
{
    Arena *a = bertc_arena_create("t", 4096);
    size_t allocs_at_start = a->n_system_allocs;
    /* step 1: 10 x 1000 floats, more than the first chunk holds */
    for (int i = 0; i < 10; i++)
        memset(bertc_arena_alloc(a, 4000), 0xab, 4000);
    cr_assert_gt(a->n_system_allocs, allocs_at_start, "the arena never grew");
    size_t hw = bertc_arena_high_water(a);
    cr_assert_geq(hw, 40000);
    bertc_arena_reset(a);
    cr_assert_eq(bertc_arena_used(a), 0);
    /* later steps doing the same work: no new chunk */
    size_t allocs_after_merge = a->n_system_allocs;
    for (int step = 0; step < 5; step++) {
        for (int i = 0; i < 10; i++)
            memset(bertc_arena_alloc(a, 4000), 0xcd, 4000);
        bertc_arena_reset(a);
    }
    cr_assert_eq(a->n_system_allocs, allocs_after_merge,
                 "steady-state steps allocated %zu new chunks",
                 a->n_system_allocs - allocs_after_merge);
    cr_assert_eq(bertc_arena_high_water(a), hw, "high water changed: %zu vs %zu",
                 bertc_arena_high_water(a), hw);
    bertc_arena_destroy(a);
}

/* Training steps differ a little in size (how many tokens are masked): once
 * the arena has had to merge a second time, a step up to an eighth larger
 * than the largest so far still fits the merged chunk, so it costs no new
 * chunk (whose pages the OS would fault in anew). The first merge is exact. */
Test(arena, merged_chunk_has_slack_once_step_sizes_vary)
{
    Arena *a = bertc_arena_create("t", 4096);
    for (int i = 0; i < 16; i++)         /* step 1 */
        bertc_arena_alloc(a, 4096);
    bertc_arena_reset(a);                      /* first merge: exactly 16 blocks */
    size_t after_first = a->n_system_allocs;
    for (int i = 0; i < 17; i++)         /* step 2, one block larger: grows */
        memset(bertc_arena_alloc(a, 4096), 0xab, 4096);
    cr_assert_gt(a->n_system_allocs, after_first, "a larger step fit an exact merge");
    bertc_arena_reset(a);                      /* second merge: 17 blocks and slack */
    size_t after_second = a->n_system_allocs;
    for (int step = 0; step < 3; step++) {
        for (int i = 0; i < 19; i++)     /* 19/17: 12% more than step 2 */
            memset(bertc_arena_alloc(a, 4096), 0xcd, 4096);
        bertc_arena_reset(a);
    }
    cr_assert_eq(a->n_system_allocs, after_second,
                 "a 12%% larger step allocated %zu new chunks",
                 a->n_system_allocs - after_second);
    for (int i = 0; i < 40; i++)         /* twice as large: grows, as it must */
        bertc_arena_alloc(a, 4096);
    cr_assert_gt(a->n_system_allocs, after_second, "the arena never grew");
    bertc_arena_destroy(a);
}

/* Inference releases each layer's temporaries (bertc_arena_release to a
 * mark): a step that grew past its chunk and gave the growth back leaves one
 * small chunk, so without a merge every later step would allocate (and the
 * OS fault in) the same chunks again. The reset merges to the peak. */
Test(arena, growth_released_within_a_step_is_merged_on_reset)
{
    Arena *a = bertc_arena_create("t", 4096);
    for (int step = 0; step < 4; step++) {
        size_t before = a->n_system_allocs;
        for (int layer = 0; layer < 3; layer++) {
            ArenaMark m = bertc_arena_mark(a);
            for (int i = 0; i < 8; i++)
                memset(bertc_arena_alloc(a, 4096), 0xab, 4096);
            bertc_arena_release(a, m);
        }
        bertc_arena_reset(a);
        if (step > 0)
            cr_expect_eq(a->n_system_allocs, before, "step %d allocated %zu chunks", step,
                         a->n_system_allocs - before);
    }
    bertc_arena_destroy(a);
}

Test(arena, calloc_zeroes)
{
    Arena *a = bertc_arena_create("t", 4096);
    memset(bertc_arena_alloc(a, 256), 0xff, 256);
    bertc_arena_reset(a);
    float *z = bertc_arena_calloc(a, 64, sizeof(float));
    for (int i = 0; i < 64; i++)
        cr_assert_eq(z[i], 0.0f);
    bertc_arena_destroy(a);
}

static void overflow_fixed(void *ctx)
{
    Arena *a = ctx;
    bertc_arena_alloc(a, 1000);
    bertc_arena_alloc(a, 1000);
}

Test(arena, fixed_buffer_full_is_reported)
{
    static uint8_t buffer[1024 + 64];
    Arena a;
    bertc_arena_init_fixed(&a, "mcu", buffer, sizeof buffer);
    char msg[BERTC_ERROR_LEN];
    cr_assert(test_catch_fatal(overflow_fixed, &a, msg, sizeof msg), "no error when full");
    cr_assert(strstr(msg, "mcu") && strstr(msg, "full"), "message: %s", msg);
    cr_assert_eq(a.n_system_allocs, 0, "a fixed arena called malloc");
}

static void calloc_overflow(void *ctx)
{
    bertc_arena_calloc(ctx, SIZE_MAX / 2, 4);
}

Test(arena, size_overflow_is_reported)
{
    Arena *a = bertc_arena_create("big", 4096);
    char msg[BERTC_ERROR_LEN];
    cr_assert(test_catch_fatal(calloc_overflow, a, msg, sizeof msg), "no overflow error");
    cr_assert(strstr(msg, "overflows"), "message: %s", msg);
    bertc_arena_destroy(a);
}

/* The malloc counter the no-malloc training test relies on must see the
 * library's allocations, or that test could never fail. */
Test(arena, malloc_counter_sees_library_allocations)
{
    size_t before = test_malloc_calls(), sys_before = bertc_sys_alloc_count();
    Arena *a = bertc_arena_create("counted", 4096);
    cr_assert_gt(test_malloc_calls(), before, "the --wrap=malloc counter saw nothing");
    cr_assert_gt(bertc_sys_alloc_count(), sys_before);
    bertc_arena_destroy(a);
}
