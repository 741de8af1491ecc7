/* cli/mpi.c — data-parallel training across processes for `bertc finetune`
 * and `bertc pretrain` (docs/distributed.md): the TrainCollective of
 * zoo/train/train.h, made of Open MPI.
 *
 * Only `make mpi` compiles this file with BERTC_MPI (and mpi.h); the
 * default build's bertc is one process, and so is the MPI build's when no
 * mpirun started it (OMPI_COMM_WORLD_SIZE unset): MPI is then never
 * initialised. Nothing in the library includes mpi.h: it calls the
 * collective's sum and knows nothing of how the ranks talk.
 *
 * The sum is MPI_Reduce to rank 0 followed by MPI_Bcast from it: every rank
 * gets rank 0's bits (an MPI_Allreduce may round differently on different
 * ranks), so the ranks' weights never drift apart. Both are nonblocking and
 * waited for with MPI_Test against a deadline, BERTC_MPI_TIMEOUT seconds
 * (default 600; it must cover rank 0's evaluations, which the others wait
 * out at the next sum): a rank that hangs or died ends the job with one
 * line from every rank still alive, not a hang. A SIGINT or SIGTERM during
 * the wait gives the others BERTC_MPI_GRACE seconds more (they are
 * finishing their step), then stops waiting, so that rank 0 can save the
 * checkpoint of the steps done. */
#include "cli/cli.h"
#include "zoo/train/train.h"

#include <stdlib.h>

#if defined(BERTC_MPI)

#include <errno.h>
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define DEFAULT_TIMEOUT_S 600.0
#define GRACE_S 10.0
#define SPIN_S 0.05       /* MPI_Test back to back for the first 50 ms of a wait, */
#define POLL_NS 100000L   /* then 100 us apart (rank 0 evaluating, a hung rank) */

typedef struct MpiState {
    bool started;
    TrainCollective co;
    double timeout_s;
    long long sums;   /* collectives so far, for the messages */
    double sum_s;     /* seconds spent in them (BERTC_MPI_STATS=1 prints it) */
    int64_t sum_doubles;
} MpiState;

static MpiState mpi;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Seconds from an environment variable: a number > 0, else the default. */
static double env_seconds(const char *name, double def)
{
    const char *v = getenv(name);
    char *end;
    double x = v ? strtod(v, &end) : 0.0;
    if (!v || end == v || *end != '\0' || !(x > 0.0)) {
        if (v)
            fprintf(stderr, "bertc: %s=%s is not a number of seconds > 0; using %g\n", name, v,
                    def);
        return def;
    }
    return x;
}

/* Wait for one nonblocking collective, polling, until its deadline. */
static int wait_for(MPI_Request *req, const char *what, BertcError *err)
{
    double start = now_s(), deadline = start + mpi.timeout_s;
    bool interrupted = false;
    for (;;) {
        int done = 0;
        if (MPI_Test(req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            return bertc_errorf(err, "rank %d: MPI failed in %s %lld (a rank died?)",
                                mpi.co.rank, what, mpi.sums);
        if (done)
            return 0;
        double t = now_s();
        if (!interrupted && bertc_train_stop_signal()) {
            interrupted = true;
            if (deadline > t + GRACE_S)
                deadline = t + GRACE_S;
        }
        if (t > deadline)
            return bertc_errorf(err, "rank %d: waited %.0f s for the other ranks in %s %lld%s; "
                                "ending the job", mpi.co.rank, t - start, what, mpi.sums,
                                interrupted ? " after a stop signal"
                                            : " (a rank died or hangs; BERTC_MPI_TIMEOUT "
                                              "sets the wait)");
        /* Open MPI moves a long message segment by segment, each only
         * inside an MPI call: sleeping between the tests of a gradient
         * sum made 2 ranks slower than 1 process */
        if (t - start > SPIN_S) {
            struct timespec pause = {0, POLL_NS};
            nanosleep(&pause, NULL);
        }
    }
}

/* x[0..n) summed over the ranks, rank 0's result on every rank. */
static int mpi_sum(void *ctx, double *x, int64_t n, BertcError *err)
{
    (void)ctx;
    mpi.sums++;
    double t0 = now_s();
    mpi.sum_doubles += n;
    for (int64_t at = 0; at < n; at += INT_MAX / 2) {   /* MPI counts are int */
        int count = (int)(n - at < INT_MAX / 2 ? n - at : INT_MAX / 2);
        MPI_Request req;
        void *send = mpi.co.rank == 0 ? MPI_IN_PLACE : (void *)(x + at);
        if (MPI_Ireduce(send, x + at, count, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD, &req) !=
                MPI_SUCCESS ||
            wait_for(&req, "sum", err) != 0)
            return -1;
        if (MPI_Ibcast(x + at, count, MPI_DOUBLE, 0, MPI_COMM_WORLD, &req) != MPI_SUCCESS ||
            wait_for(&req, "sum", err) != 0)
            return -1;
    }
    mpi.sum_s += now_s() - t0;
    return 0;
}

void cli_mpi_start(int *argc, char ***argv)
{
    const char *size = getenv("OMPI_COMM_WORLD_SIZE");
    if (!size || atoi(size) < 2)
        return;   /* not started by mpirun, or one rank: one process */
    int provided;
    /* bertc's worker threads never call MPI: only the main thread does */
    if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
        fprintf(stderr, "bertc: MPI_Init_thread failed\n");
        exit(1);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    mpi.started = true;
    MPI_Comm_rank(MPI_COMM_WORLD, &mpi.co.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mpi.co.ranks);
    mpi.co.sum = mpi_sum;
    mpi.timeout_s = env_seconds("BERTC_MPI_TIMEOUT", DEFAULT_TIMEOUT_S);
}

int cli_mpi_finish(int status)
{
    if (!mpi.started)
        return status;
    const char *stats = getenv("BERTC_MPI_STATS");
    if (stats && strcmp(stats, "1") == 0)
        fprintf(stderr, "bertc: rank %d: %lld sums of %.1f MB in all took %.2f s (waiting for "
                "the other ranks included)\n", mpi.co.rank, mpi.sums,
                8e-6 * (double)mpi.sum_doubles, mpi.sum_s);
    /* An error that only this rank met would leave the others waiting in
     * their next sum until the timeout: end the job now. A stop (130, 143)
     * and a usage error (2) are every rank's alike: they end in step. */
    if (status == 1) {
        fflush(stdout);
        fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Finalize();
    return status;
}

const TrainCollective *cli_collective(void)
{
    return mpi.started ? &mpi.co : NULL;
}

#else /* the default build: one process */

void cli_mpi_start(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
}

int cli_mpi_finish(int status)
{
    return status;
}

const TrainCollective *cli_collective(void)
{
    return NULL;
}

#endif

bool cli_is_rank0(void)
{
    const TrainCollective *co = cli_collective();
    return !co || co->rank == 0;
}
