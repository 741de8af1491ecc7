/* bench/forward.c — inference speed and memory of any model, eval mode,
 * no_grad, as `bertc run` does it:
 *
 *   build/bench/forward --config C.json [--batch B] [--seq S] [--threads N]
 *                       [--iters K] [--layers L --hidden H] [--no-prepack]
 *                       [--weights W.safetensors] [--dump PREFIX]
 *
 * Weights are a seeded random init (speed does not depend on their values),
 * then pre-packed for the GEMM once (bertc_registry_prepack; --no-prepack skips
 * it), as a program serving many forwards would. --weights loads a
 * checkpoint over the init (tools/export_onnx.py writes the weights it
 * exported to ONNX, so ONNX Runtime and bertc run the same model); --dump
 * writes the last timed forward's input_ids (PREFIX.ids, int32) and
 * last_hidden_state (PREFIX.hidden, float32), raw and row-major, for
 * bench/ort_forward.js to check ORT's output against.
 * One warm-up forward, then K timed ones (default 5), each on a fresh step
 * arena. Prints one line:
 *   forward <arch> B=.. S=.. threads=.. isa .. median_ms .. min_ms .. params_mib ..
 *   step_high_water_mib .. peak_rss_mib .. cores_used .. prepacked .. prepack_ms ..
 * peak_rss is the whole process (weights, arenas, libc); cores_used is the
 * CPU time of the timed forwards over their wall time. */
#include "bench/bench_util.h"

/* n elements of `size` bytes at p -> path; exits naming the file on error. */
static void dump_raw(const char *path, const void *p, size_t size, int64_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, size, (size_t)n, f) != (size_t)n || fclose(f) != 0) {
        fprintf(stderr, "forward: cannot write %s\n", path);
        exit(1);
    }
}

/* PREFIX.ids and PREFIX.hidden of one forward (see the top of the file). */
static void dump_forward(const char *prefix, const Batch *batch, const Outputs *out)
{
    const BatchItem *ids = bertc_batch_find(batch, "input_ids");
    Var *h = bertc_outputs_get(out, "last_hidden_state");
    if (!ids || !h) {
        fprintf(stderr, "forward: --dump needs input_ids and last_hidden_state (a BertModel)\n");
        exit(1);
    }
    char path[1024];
    snprintf(path, sizeof path, "%s.ids", prefix);
    dump_raw(path, ids->ids.data, sizeof(int32_t), ids->ids.numel);
    snprintf(path, sizeof path, "%s.hidden", prefix);
    dump_raw(path, h->value.data, sizeof(float), h->value.numel);
}

int main(int argc, char **argv)
{
    const char *config = NULL, *weights = NULL, *dump = NULL;
    int64_t B = 1, S = 128;
    int threads = 0, iters = 5, layers = 0, hidden = 0;
    bool prepack = true;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if ((v = bench_flag(argc, argv, &i, "--config"))) config = v;
        else if ((v = bench_flag(argc, argv, &i, "--batch"))) B = atoll(v);
        else if ((v = bench_flag(argc, argv, &i, "--seq"))) S = atoll(v);
        else if ((v = bench_flag(argc, argv, &i, "--threads"))) threads = atoi(v);
        else if ((v = bench_flag(argc, argv, &i, "--iters"))) iters = atoi(v);
        else if ((v = bench_flag(argc, argv, &i, "--layers"))) layers = atoi(v);
        else if ((v = bench_flag(argc, argv, &i, "--hidden"))) hidden = atoi(v);
        else if ((v = bench_flag(argc, argv, &i, "--weights"))) weights = v;
        else if ((v = bench_flag(argc, argv, &i, "--dump"))) dump = v;
        else if (strcmp(argv[i], "--no-prepack") == 0) prepack = false;
        else {
            fprintf(stderr, "usage: forward --config C.json [--batch B] [--seq S] "
                            "[--threads N] [--iters K] [--layers L --hidden H] [--no-prepack]\n"
                            "               [--weights W.safetensors] [--dump PREFIX]\n");
            return 2;
        }
    }
    if (!config || B < 1 || S < 1 || iters < 1 || iters > 1000) {
        fprintf(stderr, "forward: --config is required; B, S, iters must be positive\n");
        return 2;
    }
    if (threads > 0)
        bertc_threads_set_count(threads);
    Arena *params = bertc_arena_create("params", 1 << 20);
    Model m;
    bench_build_model("forward", config, layers, hidden, params, &m);
    BertcError err;
    if (weights && bertc_model_load(&m, weights, false, &err) != 0) {
        fprintf(stderr, "forward: %s\n", err.msg);
        return 1;
    }
    Graph *g = bertc_ag_graph_create(1 << 20, 0);
    bertc_ag_set_training(g, false);
    bertc_ag_set_no_grad(g, true);
    double t_pack = bench_now_ms();
    int packed = prepack ? bertc_registry_prepack(m.reg, g->step) : 0;
    t_pack = bench_now_ms() - t_pack;
    double ms[1000], cpu0 = 0.0, wall0 = 0.0;
    for (int it = -1; it < iters; it++) {
        if (it == 0) {
            cpu0 = bench_cpu_ms();
            wall0 = bench_now_ms();
        }
        bertc_ag_graph_reset(g);
        Batch batch;
        Outputs out;
        Rng data = bertc_rng_seed(1);
        bench_random_batch("forward", g, &m, B, S, false, &data, &batch);
        bertc_outputs_init(&out);
        double t0 = bench_now_ms();
        if (bertc_model_forward(&m, g, &batch, &out, &err) != 0) {
            fprintf(stderr, "forward: %s\n", err.msg);
            return 1;
        }
        if (it >= 0)
            ms[it] = bench_now_ms() - t0;
        if (dump && it == iters - 1)
            dump_forward(dump, &batch, &out);
    }
    double cores = (bench_cpu_ms() - cpu0) / (bench_now_ms() - wall0);
    double med = bench_median(ms, iters);
    printf("forward %s B=%lld S=%lld threads=%d isa %s median_ms %.2f min_ms %.2f params_mib %.1f "
           "step_high_water_mib %.1f peak_rss_mib %.1f cores_used %.2f prepacked %d "
           "prepack_ms %.1f\n",
           m.cfg.architecture, (long long)B, (long long)S, bertc_threads_count(),
           bertc_cpu_isa_name(bertc_cpu_isa()), med, ms[0],
           bertc_arena_high_water(params) / 1048576.0, bertc_arena_high_water(g->step) / 1048576.0,
           bench_peak_rss_mib(), cores, packed, t_pack);
    bertc_ag_graph_destroy(g);
    bertc_arena_destroy(params);
    return 0;
}
