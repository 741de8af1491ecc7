/* bench/train.c — one training step of a model, end to end, as the
 * training engine (zoo/train/train.c) runs it: forward in training mode (dropout
 * on), loss, backward, AdamW, zero_grad.
 *
 *   build/bench/train --config C.json [--batch B] [--seq S] [--threads N]
 *                     [--steps K] [--layers L --hidden H] [--bf16]
 *
 * The batch is random and fits the architecture (bertc_model_random_batch): for
 * BertForMaskedLM random ids with 15% of the positions labelled. BertModel
 * has no loss of its own: its step uses mean(last_hidden_state^2) in its
 * place. One warm-up step (it grows the arenas), then
 * K timed steps (default 5). --bf16 runs the step in mixed precision
 * (bertc_ag_set_bf16: bf16 Linear products, float32 weights, gradients and
 * AdamW), as `bertc finetune --bf16` and `bertc pretrain --bf16` do.
 * Prints one line:
 *   train <arch> B=.. S=.. threads=.. isa .. precision fp32|bf16:<path> median_ms ..
 *   tokens_per_s .. params_mib ..
 *   step_high_water_mib .. peak_rss_mib .. mallocs_after_warmup .. cores_used ..
 * mallocs_after_warmup counts bertc's system allocations in the timed steps
 * (0: the arenas and GEMM buffers reached their size in the warm-up step).
 * params_mib is the persistent arena: weights, gradients, AdamW moments;
 * cores_used is the CPU time of the timed steps over their wall time. */
#include "bench/bench_util.h"

int main(int argc, char **argv)
{
    const char *config = NULL;
    int64_t B = 8, S = 128;
    int threads = 0, steps = 5, layers = 0, hidden = 0;
    bool bf16 = false;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if ((v = bench_flag(argc, argv, &i, "--config"))) config = v;
        else if ((v = bench_flag(argc, argv, &i, "--batch"))) B = atoll(v);
        else if ((v = bench_flag(argc, argv, &i, "--seq"))) S = atoll(v);
        else if ((v = bench_flag(argc, argv, &i, "--threads"))) threads = atoi(v);
        else if ((v = bench_flag(argc, argv, &i, "--steps"))) steps = atoi(v);
        else if ((v = bench_flag(argc, argv, &i, "--layers"))) layers = atoi(v);
        else if ((v = bench_flag(argc, argv, &i, "--hidden"))) hidden = atoi(v);
        else if (strcmp(argv[i], "--bf16") == 0) bf16 = true;
        else {
            fprintf(stderr, "usage: train --config C.json [--batch B] [--seq S] "
                            "[--threads N] [--steps K] [--layers L --hidden H] [--bf16]\n");
            return 2;
        }
    }
    if (!config || B < 1 || S < 1 || steps < 1 || steps > 1000) {
        fprintf(stderr, "train: --config is required; B, S, steps must be positive\n");
        return 2;
    }
    if (threads > 0)
        bertc_threads_set_count(threads);
    Arena *params = bertc_arena_create("params", 1 << 20);
    Model m;
    bench_build_model("train", config, NULL, layers, hidden, params, &m);
    Optimizer adamw;
    bertc_optimizer_init(&adamw, m.reg, bertc_optimizer_defaults(OPT_ADAMW, 1e-4));
    Graph *g = bertc_ag_graph_create(1 << 20, 0);
    bertc_ag_set_training(g, true);
    bertc_ag_set_bf16(g, bf16);
    Rng data = bertc_rng_seed(1);
    double ms[1000], loss = 0.0;
    size_t allocs = 0;
    double cpu0 = 0.0, wall0 = 0.0;
    for (int it = -1; it < steps; it++) {
        if (it == 0) {
            allocs = bertc_sys_alloc_count();
            cpu0 = bench_cpu_ms();
            wall0 = bench_now_ms();
        }
        double t = bench_train_step("train", &m, g, &adamw, B, S, &data, &loss);
        if (it >= 0)
            ms[it] = t;
    }
    allocs = bertc_sys_alloc_count() - allocs;
    double cores = (bench_cpu_ms() - cpu0) / (bench_now_ms() - wall0);
    double med = bench_median(ms, steps);
    printf("train %s B=%lld S=%lld threads=%d isa %s precision %s%s median_ms %.2f tokens_per_s "
           "%.0f loss %.4f "
           "params_mib %.1f step_high_water_mib %.1f peak_rss_mib %.1f mallocs_after_warmup "
           "%zu cores_used %.2f\n",
           m.cfg.architecture, (long long)B, (long long)S, bertc_threads_count(),
           bertc_cpu_isa_name(bertc_cpu_isa()), bf16 ? "bf16:" : "fp32",
           bf16 ? bertc_bgemm_isa_name(bertc_bgemm_isa()) : "", med,
           (double)(B * S) / (med * 1e-3), loss, bertc_arena_high_water(params) / 1048576.0,
           bertc_arena_high_water(g->step) / 1048576.0, bench_peak_rss_mib(), allocs, cores);
    bertc_ag_graph_destroy(g);
    bertc_arena_destroy(params);
    return 0;
}
