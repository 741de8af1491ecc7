/* bench/scaling.c — how bertc's speed grows with its thread count, on the
 * BERT workloads, all in one process:
 *
 *   build/bench/scaling [--threads-max N] [--only gemm|forward|mlm] [--quick]
 *                       [--config C.json]
 *
 * Thread counts: 1, 2, 4, 8, ... below N, then N itself (1 2 4 8 12 on 12
 * cores). N is the online cores; --threads-max sets it, above the core count
 * too (the header then says the cores are oversubscribed). The workloads:
 *
 *   gemm     bertc_gemm on BERT-base's Linear shapes, MxNxK at M = 128 and
 *            1024 tokens and K -> N of 768 -> 768 (a query, key or value, the
 *            attention output), 768 -> 3072 and 3072 -> 768 (the feed-forward),
 *            each as NN, NT and TN: bench/gemm.c's default BERT-base rows less
 *            the fused 768 -> 2304, which bertc's BERT does not multiply;
 *   forward  BERT-base's encoder (C.json as a BertModel; C.json defaults to
 *            examples/configs/bert-base-uncased.json, bench/compare.sh's) at
 *            1x128 and 8x128, no_grad, in float32 (weights pre-packed), int8
 *            and bf16, each copy made in memory as bench/forward.c --int8 and
 *            --bf16 make it (bench_make_lowp); bf16 only where the CPU has a
 *            bf16 path (bertc_bgemm_isa() not scalar);
 *   mlm      C.json's MLM training step at L4/H256, 8x128, as bench/train.c
 *            and bench/compare.sh time it (bench_train_step).
 *
 * Each workload: one warm-up run at every thread count, then R rounds (5;
 * --quick: 2), each of which runs every thread count once in turn, so that
 * a busy machine slows them alike; the median of its R runs is its time. A
 * GEMM run repeats the call for at least 20 ms (--quick: 5 ms) and counts the
 * time per call. --quick, a smoke test, also leaves out the 8x128 forwards
 * (building the three BERT-base copies is most of what is left). Weights are
 * the seeded random init: speed does not depend on their values. Times are
 * the wall clock (bench_now_ms).
 *
 * Prints a header (the CPU's model name, online cores, the float32, int8 and
 * bf16 paths as `bertc version` names them, the load average), then one row
 * per workload and thread count:
 *   workload threads median_ms speedup efficiency cores rate [note]
 * speedup is the workload's own 1-thread time over this one, efficiency the
 * speed-up over the thread count, cores the CPU time over the wall time of
 * its timed runs (what it really got), rate GFLOP/s (gemm) or tokens/s. A
 * row at N threads slower than at the count before it (N/2 when N is a power
 * of two) says so in its note, and a last gemm line counts such shapes: the
 * check "no GEMM shape slower at 16 threads than at 8". A row whose runs got
 * under 3/4 of the cores they asked for (cores < 0.75 x min(threads, online
 * cores): other work had them) says "busy", as the gemm line does: its
 * times say more about the machine than about bertc. */
#include "bench/bench_util.h"

#include <unistd.h>

#define THREAD_COUNTS_MAX 8   /* 1, 2, 4, 8, 16, 32, then up to THREADS_MAX */
#define ROUNDS_MAX 5

/* The thread counts and repeats every workload runs with. */
typedef struct Sweep {
    int threads[THREAD_COUNTS_MAX];
    int n_threads;
    int rounds;
    double gemm_min_ms;   /* a GEMM run repeats its call for this long at least */
    int n_batches;        /* the forward's batch sizes: 1, then 8 when 2 */
    int cores;            /* online cores */
} Sweep;

/* 1, 2, 4, ... below n_max, then n_max; returns how many. */
static int thread_counts(int n_max, int *t)
{
    int n = 0;
    for (int c = 1; c < n_max; c *= 2)
        t[n++] = c;
    t[n++] = n_max;
    return n;
}

/* One workload: run(ctx) does one timed unit and returns its wall ms; work
 * is what one unit does, in the units of `rate` (GFLOP or tokens). */
typedef struct Workload {
    const char *name;
    double (*run)(void *ctx);
    void *ctx;
    double work;
    const char *rate;   /* "GFLOP/s" or "tokens/s" */
} Workload;

/* What a workload measured at each of the sweep's thread counts. */
typedef struct Scaling {
    double ms[THREAD_COUNTS_MAX];      /* median per unit */
    double cores[THREAD_COUNTS_MAX];   /* CPU time / wall time of the timed runs */
} Scaling;

static void measure(const Workload *w, const Sweep *sw, Scaling *out)
{
    double ms[THREAD_COUNTS_MAX][ROUNDS_MAX];
    double cpu[THREAD_COUNTS_MAX] = {0}, wall[THREAD_COUNTS_MAX] = {0};
    for (int k = 0; k < sw->n_threads; k++) {   /* warm-up: arenas, buffers, threads */
        bertc_threads_set_count(sw->threads[k]);
        w->run(w->ctx);
    }
    for (int r = 0; r < sw->rounds; r++)
        for (int k = 0; k < sw->n_threads; k++) {
            bertc_threads_set_count(sw->threads[k]);
            double c0 = bench_cpu_ms(), w0 = bench_now_ms();
            ms[k][r] = w->run(w->ctx);
            cpu[k] += bench_cpu_ms() - c0;
            wall[k] += bench_now_ms() - w0;
        }
    for (int k = 0; k < sw->n_threads; k++) {
        out->ms[k] = bench_median(ms[k], sw->rounds);
        out->cores[k] = cpu[k] / wall[k];
    }
}

static void print_table_head(void)
{
    printf("%-22s %7s %10s %8s %10s %5s %18s  %s\n", "workload", "threads", "median_ms",
           "speedup", "efficiency", "cores", "rate", "note");
}

/* Below this share of the cores it asked for (its threads, at most the
 * online cores), a run was short of cores: other work had them. */
#define BUSY_SHARE 0.75

/* Measures w and prints its rows; true when it is slower at the last thread
 * count than at the one before. *busy: some run of it was short of cores. */
static bool scale_workload(const Workload *w, const Sweep *sw, bool *busy)
{
    Scaling sc;
    measure(w, sw, &sc);
    int last = sw->n_threads - 1;
    bool slower = last > 0 && sc.ms[last] > sc.ms[last - 1];
    *busy = false;
    for (int k = 0; k < sw->n_threads; k++) {
        int want = sw->threads[k] < sw->cores ? sw->threads[k] : sw->cores;
        bool short_of_cores = sc.cores[k] < BUSY_SHARE * want;
        *busy |= short_of_cores;
        double speedup = sc.ms[0] / sc.ms[k];
        char rate[32];
        snprintf(rate, sizeof rate, "%.1f %s", w->work / (sc.ms[k] * 1e-3), w->rate);
        printf("%-22s %7d %10.3f %7.2fx %10.2f %5.2f %18s", w->name, sw->threads[k], sc.ms[k],
               speedup, speedup / sw->threads[k], sc.cores[k], rate);
        if (k == last && slower)
            printf("  slower at %d threads than at %d", sw->threads[k], sw->threads[k - 1]);
        if (short_of_cores)
            printf("  busy: %.2f of %d cores", sc.cores[k], want);
        printf("\n");
    }
    fflush(stdout);
    return slower;
}

/* --- gemm: bertc_gemm on BERT-base's Linear shapes ----------------------- */

/* C (M, N) = A (M, K) or A^T when ta, times B (K, N) or B^T when tb. */
typedef struct GemmCase {
    int64_t M, N, K;
    bool ta, tb;
    float *A, *B, *C;
    double min_ms;
} GemmCase;

static double gemm_run(void *ctx)
{
    const GemmCase *c = ctx;
    int calls = 0;
    double t0 = bench_now_ms(), ms;
    do {
        bertc_gemm(c->ta, c->tb, c->M, c->N, c->K, 1.0f, c->A, c->ta ? c->M : c->K, c->B,
                   c->tb ? c->K : c->N, 0.0f, c->C, c->N);
        calls++;
    } while ((ms = bench_now_ms() - t0) < c->min_ms);
    return ms / calls;
}

/* n floats uniform in [-1, 1). */
static float *random_matrix(int64_t n, Rng *rng)
{
    float *x = malloc(sizeof(float) * (size_t)n);
    if (!x) {
        fprintf(stderr, "scaling: out of memory\n");
        exit(1);
    }
    for (int64_t i = 0; i < n; i++)
        x[i] = (float)(2.0 * bertc_rng_uniform(rng) - 1.0);
    return x;
}

static void gemm_section(const Sweep *sw)
{
    const int64_t Ms[] = {128, 1024};
    const int64_t kn[][2] = {{768, 768}, {768, 3072}, {3072, 768}};   /* K -> N */
    const bool ops[3][2] = {{false, false}, {false, true}, {true, false}};   /* NN NT TN */
    Rng rng = bertc_rng_seed(1234);
    int n_shapes = 0, n_slower = 0, n_busy = 0;
    char slower[1024] = "";
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int o = 0; o < 3; o++) {
                GemmCase c = {.M = Ms[i], .N = kn[j][1], .K = kn[j][0], .ta = ops[o][0],
                              .tb = ops[o][1], .min_ms = sw->gemm_min_ms};
                c.A = random_matrix(c.M * c.K, &rng);
                c.B = random_matrix(c.K * c.N, &rng);
                c.C = random_matrix(c.M * c.N, &rng);
                char name[64];
                snprintf(name, sizeof name, "gemm %lldx%lldx%lld %c%c", (long long)c.M,
                         (long long)c.N, (long long)c.K, c.ta ? 'T' : 'N', c.tb ? 'T' : 'N');
                Workload w = {.name = name, .run = gemm_run, .ctx = &c,
                              .work = 2.0 * c.M * c.N * c.K * 1e-9, .rate = "GFLOP/s"};
                n_shapes++;
                bool busy;
                bool slower_here = scale_workload(&w, sw, &busy);
                n_busy += busy;
                if (slower_here) {
                    n_slower++;
                    size_t len = strlen(slower);
                    snprintf(slower + len, sizeof slower - len, "%s%s", len ? ", " : "",
                             name + 5);
                }
                free(c.A);
                free(c.B);
                free(c.C);
            }
    if (sw->n_threads > 1)
        printf("# gemm: %d of %d shapes slower at %d threads than at %d%s%s%s\n", n_slower,
               n_shapes, sw->threads[sw->n_threads - 1], sw->threads[sw->n_threads - 2],
               n_slower ? ": " : "", slower,
               n_busy ? " (some were short of cores: rerun on a quieter machine)" : "");
}

/* --- forward: BERT-base's encoder in float32, int8 and bf16 -------------- */

typedef struct ForwardCase {
    Model *m;
    Graph *g;
    int64_t B, S;
} ForwardCase;

static double forward_run(void *ctx)
{
    const ForwardCase *c = ctx;
    Batch batch;
    Outputs out;
    return bench_forward("scaling", c->m, c->g, c->B, c->S, &batch, &out);
}

static void forward_section(const char *config, const Sweep *sw)
{
    const char *dtypes[] = {"fp32", "int8", "bf16"};
    for (int d = 0; d < 3; d++) {
        bool bf16 = d == 2;
        if (bf16 && bertc_bgemm_isa() == BGEMM_ISA_SCALAR) {
            printf("# forward bf16: skipped: this CPU has no bf16 path (bf16 path scalar: "
                   "the exact reference loops, not a speed)\n");
            continue;
        }
        Arena *params = bertc_arena_create("params", 1 << 20);
        Model m;
        bench_build_model("scaling", config, "BertModel", 0, 0, params, &m);
        Graph *g = bertc_ag_graph_create(1 << 20, 0);
        bertc_ag_set_training(g, false);
        bertc_ag_set_no_grad(g, true);
        if (d == 0)
            bertc_registry_prepack(m.reg, g->step);
        else
            bench_make_lowp("scaling", &m, bf16, g->step);
        const int64_t batches[] = {1, 8};
        for (int b = 0; b < sw->n_batches; b++) {
            ForwardCase c = {.m = &m, .g = g, .B = batches[b], .S = 128};
            char name[64];
            snprintf(name, sizeof name, "forward %s %lldx%lld", dtypes[d], (long long)c.B,
                     (long long)c.S);
            Workload w = {.name = name, .run = forward_run, .ctx = &c,
                          .work = (double)(c.B * c.S), .rate = "tokens/s"};
            bool busy;
            scale_workload(&w, sw, &busy);
        }
        bertc_ag_graph_destroy(g);
        bertc_arena_destroy(params);
    }
}

/* --- mlm: the MLM training step at L4/H256 ------------------------------- */

typedef struct TrainCase {
    Model *m;
    Graph *g;
    Optimizer *adamw;
    int64_t B, S;
    Rng data;
} TrainCase;

static double train_run(void *ctx)
{
    TrainCase *c = ctx;
    double loss;
    return bench_train_step("scaling", c->m, c->g, c->adamw, c->B, c->S, &c->data, &loss);
}

static void mlm_section(const char *config, const Sweep *sw)
{
    Arena *params = bertc_arena_create("params", 1 << 20);
    Model m;
    bench_build_model("scaling", config, NULL, 4, 256, params, &m);
    Optimizer adamw;
    bertc_optimizer_init(&adamw, m.reg, bertc_optimizer_defaults(OPT_ADAMW, 1e-4));
    Graph *g = bertc_ag_graph_create(1 << 20, 0);
    bertc_ag_set_training(g, true);
    TrainCase c = {.m = &m, .g = g, .adamw = &adamw, .B = 8, .S = 128,
                   .data = bertc_rng_seed(1)};
    Workload w = {.name = "mlm L4/H256 8x128", .run = train_run, .ctx = &c,
                  .work = (double)(c.B * c.S), .rate = "tokens/s"};
    bool busy;
    scale_workload(&w, sw, &busy);
    bertc_ag_graph_destroy(g);
    bertc_arena_destroy(params);
}

/* --- the header and main ------------------------------------------------- */

/* /proc/cpuinfo's first "model name", else "unknown CPU". */
static void cpu_model_name(char *buf, size_t cap)
{
    snprintf(buf, cap, "unknown CPU (no model name in /proc/cpuinfo)");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) == 0 && colon) {
            colon += strspn(colon + 1, " \t") + 1;
            colon[strcspn(colon, "\n")] = '\0';
            snprintf(buf, cap, "%s", colon);
            break;
        }
    }
    fclose(f);
}

static void print_header(const Sweep *sw, int cores, const char *config)
{
    char cpu[256], load[64] = "?";
    cpu_model_name(cpu, sizeof cpu);
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%63[^\n]", load) != 1)
            snprintf(load, sizeof load, "?");
        fclose(f);
    }
    printf("# bench/scaling: bertc's thread scaling on the BERT workloads (%s)\n", config);
    printf("# cpu: %s, %d online cores, load %s\n", cpu, cores, load);
    printf("# paths: float32 %s, int8 %s, bf16 %s\n", bertc_cpu_isa_name(bertc_cpu_isa()),
           bertc_qgemm_isa_name(bertc_qgemm_isa()), bertc_bgemm_isa_name(bertc_bgemm_isa()));
    printf("# threads:");
    for (int k = 0; k < sw->n_threads; k++)
        printf(" %d", sw->threads[k]);
    if (sw->threads[sw->n_threads - 1] > cores)
        printf(" (more threads than cores: oversubscribed)");
    printf("\n# times: wall clock, median of %d rounds after a warm-up, every thread count "
           "once per round; a GEMM run repeats for >= %.0f ms\n", sw->rounds, sw->gemm_min_ms);
    printf("# speedup = 1-thread time / time; efficiency = speedup / threads; "
           "cores = CPU time / wall time\n");
}

static void usage(FILE *out)
{
    fprintf(out, "usage: scaling [--threads-max N] [--only gemm|forward|mlm] [--quick] "
                 "[--config C.json]\n"
                 "  --threads-max N  thread counts 1, 2, 4, ... below N, then N "
                 "(default: the online cores)\n"
                 "  --only W         one workload: gemm, forward or mlm (default: all three)\n"
                 "  --quick          a smoke test: 2 rounds (default 5), 5 ms GEMM runs "
                 "(20 ms), no 8x128 forward\n"
                 "  --config C.json  the BERT config (default "
                 "examples/configs/bert-base-uncased.json)\n");
}

int main(int argc, char **argv)
{
    const char *config = "examples/configs/bert-base-uncased.json", *only = NULL;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    int cores = online < 1 ? 1 : (int)online;
    int n_max = cores > THREADS_MAX ? THREADS_MAX : cores;
    bool quick = false;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if ((v = bench_flag(argc, argv, &i, "--threads-max"))) {
            if (!bertc_threads_parse_count(v, &n_max)) {
                fprintf(stderr, "scaling: --threads-max %s: want a whole number from 1 to %d\n",
                        v, THREADS_MAX);
                return 2;
            }
        } else if ((v = bench_flag(argc, argv, &i, "--only"))) {
            if (strcmp(v, "gemm") != 0 && strcmp(v, "forward") != 0 && strcmp(v, "mlm") != 0) {
                fprintf(stderr, "scaling: --only %s: want gemm, forward or mlm\n", v);
                return 2;
            }
            only = v;
        } else if ((v = bench_flag(argc, argv, &i, "--config"))) {
            config = v;
        } else if (strcmp(argv[i], "--quick") == 0) {
            quick = true;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "scaling: unknown flag '%s' (scaling --help lists the flags)\n",
                    argv[i]);
            return 2;
        }
    }
    BertcError err;
    if (bertc_check_env(&err) != 0) {
        fprintf(stderr, "scaling: %s\n", err.msg);
        return 2;
    }
    bertc_threads_set_count(2);
    if (bertc_threads_count() == 1 && n_max > 1) {
        printf("# bertc was built with NO_THREADS=1: it runs on one thread only\n");
        n_max = 1;
    }
    Sweep sw = {.rounds = quick ? 2 : 5, .gemm_min_ms = quick ? 5.0 : 20.0,
                .n_batches = quick ? 1 : 2, .cores = cores};
    sw.n_threads = thread_counts(n_max, sw.threads);
    print_header(&sw, cores, config);
    print_table_head();
    double t0 = bench_now_ms();
    if (!only || strcmp(only, "gemm") == 0)
        gemm_section(&sw);
    if (!only || strcmp(only, "forward") == 0)
        forward_section(config, &sw);
    if (!only || strcmp(only, "mlm") == 0)
        mlm_section(config, &sw);
    printf("# peak RSS %.0f MiB, %.1f s in all\n", bench_peak_rss_mib(),
           (bench_now_ms() - t0) * 1e-3);
    return 0;
}
