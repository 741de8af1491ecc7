/* test/test_threads.c — the pool of tensor/threads.c: bertc_parallel_for
 * covers [0, n) exactly once in contiguous chunks whatever thread takes
 * which chunk, many short jobs in a row (a worker still holding the last
 * job's copy must not run a chunk of the next), nesting, and a caller that
 * finishes without waiting for a worker that has not woken. */
#include "test/test_util.h"

#include <criterion/criterion.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

enum { MAX_N = 1000 };

typedef struct Cover {
    atomic_int hits[MAX_N];
    atomic_int calls;
    int64_t n;
} Cover;

static void mark(void *ctx, int64_t begin, int64_t end)
{
    Cover *c = ctx;
    atomic_fetch_add(&c->calls, 1);
    for (int64_t i = begin; i < end; i++)
        atomic_fetch_add(&c->hits[i], 1);
}

static void expect_covered_once(Cover *c, int threads)
{
    for (int64_t i = 0; i < c->n; i++)
        cr_assert_eq(atomic_load(&c->hits[i]), 1, "n = %lld, %d threads: index %lld run %d times",
                     (long long)c->n, threads, (long long)i, atomic_load(&c->hits[i]));
    int64_t chunks = c->n < threads ? c->n : threads;
    cr_assert_eq(atomic_load(&c->calls), chunks, "n = %lld, %d threads: %d chunks, want %lld",
                 (long long)c->n, threads, atomic_load(&c->calls), (long long)chunks);
}

static Cover cover;

Test(threads, every_index_once_in_one_chunk_per_thread)
{
    int saved = bertc_threads_count();
    int64_t sizes[] = {1, 2, 3, 7, 64, 999, MAX_N};
    for (int t = 1; t <= 5; t++) {
        bertc_threads_set_count(t);
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
            memset(&cover, 0, sizeof cover);
            cover.n = sizes[s];
            bertc_parallel_for(cover.n, mark, &cover);
            expect_covered_once(&cover, t);
        }
    }
    bertc_threads_set_count(saved);
}

/* Many tiny jobs back to back: each job's counter must end at exactly its n,
 * so no chunk is lost, run twice, or run with another job's context. */
typedef struct Sum {
    atomic_long total;
} Sum;

static void add_range(void *ctx, int64_t begin, int64_t end)
{
    atomic_fetch_add(&((Sum *)ctx)->total, (long)(end - begin));
}

Test(threads, many_short_jobs_lose_or_repeat_no_chunk)
{
    int saved = bertc_threads_count();
    bertc_threads_set_count(4);
    for (int job = 0; job < 20000; job++) {
        Sum s = {0};
        int64_t n = 1 + job % 9;
        bertc_parallel_for(n, add_range, &s);
        cr_assert_eq(atomic_load(&s.total), n, "job %d: %ld of %lld indices run", job,
                     atomic_load(&s.total), (long long)n);
    }
    bertc_threads_set_count(saved);
}

static void nested(void *ctx, int64_t begin, int64_t end)
{
    for (int64_t i = begin; i < end; i++)
        bertc_parallel_for(10, add_range, ctx);
}

Test(threads, a_nested_call_runs_in_its_caller)
{
    int saved = bertc_threads_count();
    bertc_threads_set_count(3);
    Sum s = {0};
    bertc_parallel_for(6, nested, &s);
    cr_assert_eq(atomic_load(&s.total), 60);
    bertc_threads_set_count(saved);
}

/* After the workers went to sleep (a pause longer than their polling), a
 * job whose chunks are quick returns with every chunk done: the caller takes
 * the chunks no worker came for. */
static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

Test(threads, a_job_after_a_pause_completes)
{
    int saved = bertc_threads_count();
    bertc_threads_set_count(4);
    for (int round = 0; round < 5; round++) {
        sleep_ms(5);
        memset(&cover, 0, sizeof cover);
        cover.n = 4;
        bertc_parallel_for(cover.n, mark, &cover);
        expect_covered_once(&cover, 4);
    }
    bertc_threads_set_count(saved);
}
