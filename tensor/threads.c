/* tensor/threads.c — a small fork-join pool of POSIX threads (no OpenMP).
 *
 * bertc_parallel_for(n, fn, ctx) cuts [0, n) into T contiguous chunks, T = min(n,
 * bertc_threads_count()). The calling thread runs chunk 0, worker w runs chunk w, and
 * the call returns when every chunk is done. Workers start on first use and
 * live for the process; between jobs they spin briefly (a job that follows
 * quickly starts in microseconds) and then sleep on a condition variable.
 *
 * A bertc_parallel_for issued from inside a chunk, or while another thread owns the
 * pool, runs serially in the caller: nesting is safe and never deadlocks.
 *
 * Built with -DBERTC_NO_THREADS this file has no pthread symbol at all:
 * bertc_threads_count() is 1 and bertc_parallel_for is a plain call. */
#include "tensor/tensor.h"

#include <stdlib.h>

/* "8" -> 8; false for anything but a whole number from 1 to THREADS_MAX
 * (bertc_parse_i64: an empty string, a space or sign, trailing text, 0, too
 * large a count). */
bool bertc_threads_parse_count(const char *text, int *n)
{
    int64_t v;
    if (!bertc_parse_i64(text, 1, THREADS_MAX, &v))
        return false;
    *n = (int)v;
    return true;
}

#if defined(BERTC_NO_THREADS)

int bertc_threads_count(void) { return 1; }

void bertc_threads_set_count(int n) { (void)n; }

void bertc_parallel_for(int64_t n, void (*fn)(void *ctx, int64_t begin, int64_t end), void *ctx)
{
    if (n > 0)
        fn(ctx, 0, n);
}

#else

#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#define SPIN_ITERS (1 << 16)

static int clamp_count(int64_t n) { return n < 1 ? 1 : n > THREADS_MAX ? THREADS_MAX : (int)n; }

/* BERTC_THREADS if set, else the number of online cores. */
static int default_count(void)
{
    const char *env = getenv("BERTC_THREADS");
    if (env && *env)
        return clamp_count(strtol(env, NULL, 10));
    return clamp_count(sysconf(_SC_NPROCESSORS_ONLN));
}

static atomic_int configured_count; /* 0 until first read */

int bertc_threads_count(void)
{
    int n = atomic_load(&configured_count);
    if (n == 0) {
        n = default_count();
        atomic_store(&configured_count, n);
    }
    return n;
}

void bertc_threads_set_count(int n) { atomic_store(&configured_count, clamp_count(n)); }

typedef void (*ChunkFn)(void *ctx, int64_t begin, int64_t end);

/* One job: fn over [0, n) in `chunks` pieces. Written under pool.lock. */
typedef struct Job {
    ChunkFn fn;
    void *ctx;
    int64_t n;
    int chunks;
    unsigned generation;
} Job;

static struct {
    pthread_mutex_t lock;       /* guards job and the sleeps */
    pthread_cond_t wake;        /* a new job was posted */
    pthread_cond_t done;        /* the last worker chunk finished */
    pthread_mutex_t owner;      /* held by the thread running a bertc_parallel_for */
    Job job;
    atomic_uint generation;     /* bumped once per job */
    atomic_int pending;         /* worker chunks of the current job not finished */
    int n_workers;
} pool = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .wake = PTHREAD_COND_INITIALIZER,
    .done = PTHREAD_COND_INITIALIZER,
    .owner = PTHREAD_MUTEX_INITIALIZER,
};

/* True on a pool worker, and on the caller while it runs its own chunk. */
static _Thread_local bool in_parallel;

static void run_chunk(const Job *job, int c)
{
    int64_t begin = job->n * c / job->chunks, end = job->n * (c + 1) / job->chunks;
    if (begin < end)
        job->fn(job->ctx, begin, end);
}

/* Wait for a generation other than `seen` and return a copy of its job. */
static Job wait_for_job(unsigned seen)
{
    for (int i = 0; i < SPIN_ITERS && atomic_load(&pool.generation) == seen; i++)
        ;
    pthread_mutex_lock(&pool.lock);
    while (atomic_load(&pool.generation) == seen)
        pthread_cond_wait(&pool.wake, &pool.lock);
    Job job = pool.job;
    pthread_mutex_unlock(&pool.lock);
    return job;
}

static void *worker_main(void *arg)
{
    int w = (int)(intptr_t)arg;
    in_parallel = true;
    unsigned seen = 0;
    for (;;) {
        Job job = wait_for_job(seen);
        seen = job.generation;
        if (w >= job.chunks)
            continue;
        run_chunk(&job, w);
        if (atomic_fetch_sub(&pool.pending, 1) == 1) {
            pthread_mutex_lock(&pool.lock);
            pthread_cond_signal(&pool.done);
            pthread_mutex_unlock(&pool.lock);
        }
    }
    return NULL;
}

/* Start workers 1..want-1 that are not running yet; returns how many run. */
static int ensure_workers(int want)
{
    while (pool.n_workers < want - 1) {
        pthread_t tid;
        intptr_t w = pool.n_workers + 1;
        if (pthread_create(&tid, NULL, worker_main, (void *)w) != 0)
            break;
        pthread_detach(tid);
        pool.n_workers++;
    }
    return pool.n_workers;
}

static void wait_for_workers(void)
{
    for (int i = 0; i < SPIN_ITERS && atomic_load(&pool.pending) != 0; i++)
        ;
    pthread_mutex_lock(&pool.lock);
    while (atomic_load(&pool.pending) != 0)
        pthread_cond_wait(&pool.done, &pool.lock);
    pthread_mutex_unlock(&pool.lock);
}

void bertc_parallel_for(int64_t n, ChunkFn fn, void *ctx)
{
    if (n <= 0)
        return;
    int t = bertc_threads_count();
    if (t > n)
        t = (int)n;
    if (t <= 1 || in_parallel || pthread_mutex_trylock(&pool.owner) != 0) {
        fn(ctx, 0, n);
        return;
    }
    int workers = ensure_workers(t);
    if (t - 1 > workers)
        t = workers + 1;
    pthread_mutex_lock(&pool.lock);
    unsigned gen = atomic_load(&pool.generation) + 1;
    pool.job = (Job){.fn = fn, .ctx = ctx, .n = n, .chunks = t, .generation = gen};
    atomic_store(&pool.pending, t - 1);
    atomic_store(&pool.generation, gen);
    pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.lock);

    in_parallel = true;
    run_chunk(&pool.job, 0);
    in_parallel = false;
    wait_for_workers();
    pthread_mutex_unlock(&pool.owner);
}

#endif /* BERTC_NO_THREADS */
