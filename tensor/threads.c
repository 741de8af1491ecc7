/* tensor/threads.c — a small fork-join pool of POSIX threads (no OpenMP).
 *
 * bertc_parallel_for(n, fn, ctx) cuts [0, n) into T contiguous chunks, T = min(n,
 * bertc_threads_count()), and returns when every chunk is done. The calling
 * thread and the workers take chunks in turn from a shared ticket, so a
 * worker that is slow to wake (asleep, or on a core another process holds)
 * takes fewer or none and never holds the caller up. Workers start on first
 * use and live for the process; between jobs they poll for a few hundred
 * microseconds (the next job of a forward or a training step starts in
 * microseconds) unless the scheduler shows another thread wants their core,
 * and then sleep on a condition variable.
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
#include <sched.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

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

/* ---- waiting without holding a core another thread needs ---------------- */

/* How long an idle thread polls before it sleeps. Waking a sleeping thread
 * costs a futex call and, on a virtual machine whose idle vCPU halted, tens
 * to hundreds of microseconds: more than a whole M = 128 GEMM of BERT-base
 * on two cores (~0.3 ms). Between the parallel regions of one forward or one
 * training step (a GEMM, then a LayerNorm, then the next GEMM) the gaps are
 * microseconds, so a worker that polls for a few hundred microseconds finds
 * the next job itself. The budget is wall time, not a count of polls, so it
 * means the same on every CPU. */
#define SPIN_NS 300000
/* Every CHECK_NS of polling, the poller offers its core with sched_yield.
 * A yield that comes back at once means no other thread wanted the core;
 * one that took over YIELD_BUSY_NS means another ran there (another process,
 * or this process's own caller), and the poller goes to sleep at once
 * instead: on a loaded machine an idle worker must not hold a core (a 1 ms
 * poll without this made a 2-thread finetune 4x slower with one core busy,
 * commit 372e07a). This is the "spin, but back off when oversubscribed" of
 * OpenMP runtimes' KMP_BLOCKTIME / GOMP_SPINCOUNT, decided by what the
 * scheduler reports rather than by a fixed count. */
#define CHECK_NS 20000
#define YIELD_BUSY_NS 50000

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* One polling step's pause: tells the CPU this is a spin loop (it saves
 * power and leaves a hyper-thread sibling its share). */
static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Polls done(arg) for up to SPIN_NS; true as soon as it holds, false when
 * the budget ran out or another thread wants this core (the caller then
 * sleeps). */
static bool poll_until(bool (*done)(const void *arg), const void *arg)
{
    int64_t start = now_ns(), last_check = start;
    for (;;) {
        for (int i = 0; i < 64; i++) {
            if (done(arg))
                return true;
            cpu_relax();
        }
        int64_t t = now_ns();
        if (t - start > SPIN_NS)
            return false;
        if (t - last_check > CHECK_NS) {
            sched_yield();
            last_check = now_ns();
            if (last_check - t > YIELD_BUSY_NS)
                return done(arg);
        }
    }
}

/* ---- the pool ----------------------------------------------------------- */

/* One job: fn over [0, n) in `chunks` contiguous pieces. Written under
 * pool.lock before its generation is published. */
typedef struct Job {
    ChunkFn fn;
    void *ctx;
    int64_t n;
    int chunks;
    uint32_t generation;
} Job;

/* Chunks are not bound to threads: whoever comes first takes the next one
 * (the caller included), through one 64-bit ticket: the job's generation in
 * the high half, the next chunk in the low half. A worker that wakes late
 * finds every chunk taken and goes back to waiting, so a job never waits for
 * a thread that has not started it: on a loaded machine, or after a sleep
 * that made a worker slow to wake, the caller runs the chunks itself. The
 * generation in the ticket stops a worker holding an old job's copy from
 * taking a chunk of the next job (the compare-and-swap fails). Which thread
 * runs a chunk never changes what the chunk computes, so results stay
 * bitwise those of one thread. */
static struct {
    pthread_mutex_t lock;       /* guards job, sleeping flags and the condition variables */
    pthread_cond_t wake;        /* a new job was posted */
    pthread_cond_t done;        /* the last chunk of the job finished */
    pthread_mutex_t owner;      /* held by the thread running a bertc_parallel_for */
    Job job;
    atomic_uint generation;     /* bumped once per job */
    atomic_uint_least64_t ticket; /* generation << 32 | next chunk */
    atomic_int finished;        /* chunks of the current job done */
    int sleepers;               /* workers asleep on `wake` */
    bool caller_asleep;         /* the caller sleeps on `done` */
    int n_workers;
} pool = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .wake = PTHREAD_COND_INITIALIZER,
    .done = PTHREAD_COND_INITIALIZER,
    .owner = PTHREAD_MUTEX_INITIALIZER,
};

/* True on a pool worker, and on the caller while it runs chunks. */
static _Thread_local bool in_parallel;

/* Takes the next chunk of job `gen`: its index, or -1 when none is left or
 * the job is no longer the current one. */
static int take_chunk(uint32_t gen, int chunks)
{
    uint_least64_t t = atomic_load(&pool.ticket);
    for (;;) {
        if ((uint32_t)(t >> 32) != gen || (int)(uint32_t)t >= chunks)
            return -1;
        if (atomic_compare_exchange_weak(&pool.ticket, &t, t + 1))
            return (int)(uint32_t)t;
    }
}

/* Runs chunks of `job` until none is left; the thread that finishes the
 * job's last chunk wakes the caller if it sleeps. */
static void run_chunks(const Job *job)
{
    for (int c; (c = take_chunk(job->generation, job->chunks)) >= 0;) {
        int64_t begin = job->n * c / job->chunks, end = job->n * (c + 1) / job->chunks;
        if (begin < end)
            job->fn(job->ctx, begin, end);
        if (atomic_fetch_add(&pool.finished, 1) + 1 == job->chunks) {
            pthread_mutex_lock(&pool.lock);
            if (pool.caller_asleep)
                pthread_cond_signal(&pool.done);
            pthread_mutex_unlock(&pool.lock);
        }
    }
}

static bool generation_moved(const void *seen)
{
    return atomic_load(&pool.generation) != *(const unsigned *)seen;
}

/* Waits for a generation other than `seen` and returns a copy of its job. */
static Job wait_for_job(unsigned seen)
{
    poll_until(generation_moved, &seen);
    pthread_mutex_lock(&pool.lock);
    while (atomic_load(&pool.generation) == seen) {
        pool.sleepers++;
        pthread_cond_wait(&pool.wake, &pool.lock);
        pool.sleepers--;
    }
    Job job = pool.job;
    pthread_mutex_unlock(&pool.lock);
    return job;
}

static void *worker_main(void *arg)
{
    (void)arg;
    in_parallel = true;
    unsigned seen = 0;
    for (;;) {
        Job job = wait_for_job(seen);
        seen = job.generation;
        run_chunks(&job);
    }
    return NULL;
}

/* Starts workers until `want` - 1 run; returns how many run. */
static int ensure_workers(int want)
{
    while (pool.n_workers < want - 1) {
        pthread_t tid;
        if (pthread_create(&tid, NULL, worker_main, NULL) != 0)
            break;
        pthread_detach(tid);
        pool.n_workers++;
    }
    return pool.n_workers;
}

static bool job_finished(const void *chunks)
{
    return atomic_load(&pool.finished) == *(const int *)chunks;
}

/* The caller, its own chunks done, waits for the chunks other threads took
 * (they are running: no chunk waits for a thread to wake). */
static void wait_for_chunks(int chunks)
{
    if (poll_until(job_finished, &chunks))
        return;
    pthread_mutex_lock(&pool.lock);
    pool.caller_asleep = true;
    while (atomic_load(&pool.finished) != chunks)
        pthread_cond_wait(&pool.done, &pool.lock);
    pool.caller_asleep = false;
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
    uint32_t gen = atomic_load(&pool.generation) + 1;
    pool.job = (Job){.fn = fn, .ctx = ctx, .n = n, .chunks = t, .generation = gen};
    atomic_store(&pool.finished, 0);
    atomic_store(&pool.ticket, (uint_least64_t)gen << 32);
    atomic_store(&pool.generation, gen);
    if (pool.sleepers > 0)
        pthread_cond_broadcast(&pool.wake);
    Job job = pool.job;
    pthread_mutex_unlock(&pool.lock);

    in_parallel = true;
    run_chunks(&job);
    in_parallel = false;
    wait_for_chunks(t);
    pthread_mutex_unlock(&pool.owner);
}

#endif /* BERTC_NO_THREADS */
