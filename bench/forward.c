/* bench/forward.c — inference speed and memory of any model, eval mode,
 * no_grad, as `bertc run` does it:
 *
 *   build/bench/forward (--config C.json | --model DIR) [--batch B] [--seq S]
 *                       [--threads N] [--iters K] [--layers L --hidden H]
 *                       [--no-prepack] [--weights W.safetensors] [--dump PREFIX]
 *                       [--int8 | --bf16] [--reference DIR]
 *
 * Weights are a seeded random init (speed does not depend on their values),
 * then pre-packed for the GEMM once (bertc_registry_prepack; --no-prepack skips
 * it), as a program serving many forwards would. --weights loads a
 * checkpoint over the init (tools/export_onnx.py writes the weights it
 * exported to ONNX, so ONNX Runtime and bertc run the same model); --model
 * reads a model directory instead (float32, or int8 from `bertc quantize`);
 * --dump writes the last timed forward's input_ids (PREFIX.ids, int32) and
 * last_hidden_state (PREFIX.hidden, float32), raw and row-major, for
 * bench/ort_forward.js to check ORT's output against.
 * One warm-up forward, then K timed ones (default 5), each on a fresh step
 * arena. Prints one line:
 *   forward <arch> B=.. S=.. threads=.. isa .. median_ms .. min_ms .. params_mib ..
 *   step_high_water_mib .. peak_rss_mib .. cores_used .. prepacked .. prepack_ms ..
 * peak_rss is the whole process (weights, arenas, libc); cores_used is the
 * CPU time of the timed forwards over their wall time.
 *
 * Int8 (docs/quantization.md): --int8 builds a second copy of the model with
 * the same weights, quantises it in memory (bertc_registry_quantize, what
 * `bertc quantize` writes), and times the two in turn, float32 then int8 in
 * every round, so that a busy machine slows both alike; an int8 --model DIR
 * is timed alone, and --reference DIR names its float32 original, then
 * timed in turn with it. Either prints, after the float32 line (--int8),
 *   forward-int8 <arch> B=.. S=.. threads=.. int8_isa .. median_ms .. min_ms ..
 *   peak_rss_mib .. int8_weights .. fp32_median_ms .. speedup .. cosine ..
 *   min_row_cosine ..
 * cosine is that of the last hidden state (last_hidden_state, else the last
 * hidden_states.L) to float32's on the same batch, over the whole tensor;
 * min_row_cosine the worst token's. With --int8 both copies are in memory,
 * so its peak_rss is theirs together; an int8 --model's peak_rss is taken
 * before --reference is read: the int8 model's own.
 *
 * Bf16 the same way: --bf16 packs the copy's encoder Linear weights for the
 * bf16 GEMM (bertc_registry_pack_bf16, what `bertc quantize --dtype bf16`
 * stores; tensor/kernels.h), and a bf16 --model DIR is timed alone or with
 * --reference; the line is
 *   forward-bf16 <arch> B=.. S=.. threads=.. bf16_isa .. median_ms .. min_ms ..
 *   peak_rss_mib .. bf16_weights .. fp32_median_ms .. speedup .. cosine ..
 *   min_row_cosine ..
 * (bf16_isa scalar: this CPU has no AVX512_BF16, and the bf16 GEMM is the
 * slow exact reference). */
#include "bench/bench_util.h"

#include <math.h>

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

/* What a run of timed forwards measured. */
typedef struct Timing {
    double median_ms, min_ms, cores;
    float *hidden;                /* the last forward's last hidden state (malloc) */
    int64_t rows, cols;           /* its tokens and width */
} Timing;

/* last_hidden_state, else hidden_states.L of an L-layer model. */
static Var *last_hidden(const Model *m, const Outputs *out)
{
    Var *h = bertc_outputs_get(out, "last_hidden_state");
    char name[64];
    snprintf(name, sizeof name, "hidden_states.%d", m->cfg.num_hidden_layers);
    return h ? h : bertc_outputs_get(out, name);
}

static void keep_hidden(const Model *m, const Outputs *out, Timing *t)
{
    Var *h = last_hidden(m, out);
    if (!h)
        return;
    free(t->hidden);
    t->cols = h->value.shape[h->value.ndim - 1];
    t->rows = h->value.numel / t->cols;
    t->hidden = malloc(sizeof(float) * (size_t)h->value.numel);
    memcpy(t->hidden, h->value.data, sizeof(float) * (size_t)h->value.numel);
}

/* One forward of m on the seeded batch: its wall time; the last hidden
 * state kept when asked, the dump written when dump is set. */
static double one_forward(Model *m, Graph *g, int64_t B, int64_t S, bool keep, Timing *t,
                          const char *dump)
{
    Batch batch;
    Outputs out;
    double ms = bench_forward("forward", m, g, B, S, &batch, &out);
    if (keep)
        keep_hidden(m, &out, t);
    if (dump)
        dump_forward(dump, &batch, &out);
    return ms;
}

/* n models (1, or float32 and int8), one warm-up each, then `iters` rounds
 * in which each model runs once in turn, so that a busy machine slows them
 * alike. t[k] gets model k's times; dump applies to model 0's last forward. */
static void time_forwards(Model **models, int n, Graph *g, int64_t B, int64_t S, int iters,
                          const char *dump, Timing *t)
{
    double ms[2][1000], cpu[2] = {0}, wall[2] = {0};
    for (int k = 0; k < n; k++) {
        t[k] = (Timing){0};
        one_forward(models[k], g, B, S, false, &t[k], NULL);
    }
    for (int it = 0; it < iters; it++) {
        for (int k = 0; k < n; k++) {
            bool last = it == iters - 1;
            double c0 = bench_cpu_ms(), w0 = bench_now_ms();
            ms[k][it] = one_forward(models[k], g, B, S, last, &t[k], last && k == 0 ? dump : NULL);
            cpu[k] += bench_cpu_ms() - c0;
            wall[k] += bench_now_ms() - w0;
        }
    }
    for (int k = 0; k < n; k++) {
        t[k].cores = cpu[k] / wall[k];
        t[k].median_ms = bench_median(ms[k], iters); /* sorts ms[k] */
        t[k].min_ms = ms[k][0];
    }
}

static double cosine(const float *a, const float *b, int64_t n)
{
    double ab = 0.0, aa = 0.0, bb = 0.0;
    for (int64_t i = 0; i < n; i++) {
        ab += (double)a[i] * b[i];
        aa += (double)a[i] * a[i];
        bb += (double)b[i] * b[i];
    }
    return aa > 0.0 && bb > 0.0 ? ab / sqrt(aa * bb) : 0.0;
}

/* The end of an int8 or bf16 line: against the float32 run ref, when there
 * is one, its time, the speed-up and the cosines of the last hidden states
 * (all of them, and the worst token's). */
static void print_against(const Timing *q, const Timing *ref)
{
    double min_row = 1.0;
    bool both = q->hidden && ref->hidden && q->rows == ref->rows && q->cols == ref->cols;
    for (int64_t r = 0; both && r < q->rows; r++) {
        double c = cosine(q->hidden + r * q->cols, ref->hidden + r * q->cols, q->cols);
        min_row = c < min_row ? c : min_row;
    }
    if (both)
        printf(" fp32_median_ms %.2f speedup %.2f cosine %.6f min_row_cosine %.6f",
               ref->median_ms, ref->median_ms / q->median_ms,
               cosine(q->hidden, ref->hidden, q->rows * q->cols), min_row);
    printf("\n");
}

static void print_int8(const Model *m, int64_t B, int64_t S, const Timing *q, double rss,
                       const Timing *ref)
{
    printf("forward-int8 %s B=%lld S=%lld threads=%d int8_isa %s median_ms %.2f min_ms %.2f "
           "peak_rss_mib %.1f int8_weights %d", m->cfg.architecture, (long long)B, (long long)S,
           bertc_threads_count(), bertc_qgemm_isa_name(bertc_qgemm_isa()), q->median_ms,
           q->min_ms, rss, m->reg->n_int8);
    print_against(q, ref);
}

static void print_bf16(const Model *m, int64_t B, int64_t S, const Timing *q, double rss,
                       const Timing *ref)
{
    printf("forward-bf16 %s B=%lld S=%lld threads=%d bf16_isa %s median_ms %.2f min_ms %.2f "
           "peak_rss_mib %.1f bf16_weights %d", m->cfg.architecture, (long long)B, (long long)S,
           bertc_threads_count(), bertc_bgemm_isa_name(bertc_bgemm_isa()), q->median_ms,
           q->min_ms, rss, m->reg->n_bf16);
    print_against(q, ref);
}

static void open_dir(const char *dir, Arena *arena, Model *m)
{
    ModelDir d;
    BertcError err;
    if (bertc_model_dir_open(&d, arena, dir, &err) != 0) {
        fprintf(stderr, "forward: %s\n", err.msg);
        exit(1);
    }
    *m = d.model;
}

/* The float32 line (as before int8 existed). */
static void print_fp32(const Model *m, const Arena *params, const Graph *g, int64_t B, int64_t S,
                       const Timing *t, int packed, double t_pack)
{
    printf("forward %s B=%lld S=%lld threads=%d isa %s median_ms %.2f min_ms %.2f params_mib %.1f "
           "step_high_water_mib %.1f peak_rss_mib %.1f cores_used %.2f prepacked %d "
           "prepack_ms %.1f\n",
           m->cfg.architecture, (long long)B, (long long)S, bertc_threads_count(),
           bertc_cpu_isa_name(bertc_cpu_isa()), t->median_ms, t->min_ms,
           bertc_arena_high_water(params) / 1048576.0, bertc_arena_high_water(g->step) / 1048576.0,
           bench_peak_rss_mib(), t->cores, packed, t_pack);
}

/* --int8 (or --bf16): a second copy of the float32 model (the same
 * weights), quantised (or packed in bf16: the Linear weights `bertc quantize
 * --dtype bf16` stores) in memory, timed in turn with the first; the float32
 * line, then the int8 (bf16) one. */
static void run_in_memory_lowp(Model *fp, Model *q, bool bf16, const Arena *params, Graph *g,
                               int64_t B, int64_t S, int iters, int packed, double t_pack)
{
    bench_make_lowp("forward", q, bf16, g->step);
    Model *models[2] = {fp, q};
    Timing t[2];
    time_forwards(models, 2, g, B, S, iters, NULL, t);
    print_fp32(fp, params, g, B, S, &t[0], packed, t_pack);
    (bf16 ? print_bf16 : print_int8)(q, B, S, &t[1], bench_peak_rss_mib(), &t[0]);
    free(t[0].hidden);
    free(t[1].hidden);
}

/* An int8 (or bf16) --model: timed alone (its peak RSS), then, with
 * --reference, again in turn with its float32 original. */
static void run_lowp_model(Model *m, Graph *g, int64_t B, int64_t S, int iters,
                           const char *reference, const char *dump)
{
    Model *alone[1] = {m};
    Timing t[2], q, ref = {0};
    time_forwards(alone, 1, g, B, S, iters, dump, t);
    q = t[0];
    double rss = bench_peak_rss_mib();
    Arena *ref_params = bertc_arena_create("reference", 1 << 20);
    if (reference) {
        Model r;
        open_dir(reference, ref_params, &r);
        bertc_registry_prepack(r.reg, g->step);
        Model *both[2] = {&r, m};
        free(q.hidden);
        time_forwards(both, 2, g, B, S, iters, NULL, t);
        ref = t[0];
        q = t[1];
    }
    (m->reg->n_bf16 > 0 ? print_bf16 : print_int8)(m, B, S, &q, rss, &ref);
    free(q.hidden);
    free(ref.hidden);
    bertc_arena_destroy(ref_params);
}

int main(int argc, char **argv)
{
    const char *config = NULL, *weights = NULL, *dump = NULL, *model = NULL, *reference = NULL;
    int64_t B = 1, S = 128;
    int threads = 0, iters = 5, layers = 0, hidden = 0;
    bool prepack = true, int8 = false, bf16 = false;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if ((v = bench_flag(argc, argv, &i, "--config"))) config = v;
        else if ((v = bench_flag(argc, argv, &i, "--model"))) model = v;
        else if ((v = bench_flag(argc, argv, &i, "--reference"))) reference = v;
        else if ((v = bench_flag(argc, argv, &i, "--batch"))) B = atoll(v);
        else if ((v = bench_flag(argc, argv, &i, "--seq"))) S = atoll(v);
        else if ((v = bench_flag(argc, argv, &i, "--threads"))) threads = atoi(v);
        else if ((v = bench_flag(argc, argv, &i, "--iters"))) iters = atoi(v);
        else if ((v = bench_flag(argc, argv, &i, "--layers"))) layers = atoi(v);
        else if ((v = bench_flag(argc, argv, &i, "--hidden"))) hidden = atoi(v);
        else if ((v = bench_flag(argc, argv, &i, "--weights"))) weights = v;
        else if ((v = bench_flag(argc, argv, &i, "--dump"))) dump = v;
        else if (strcmp(argv[i], "--no-prepack") == 0) prepack = false;
        else if (strcmp(argv[i], "--int8") == 0) int8 = true;
        else if (strcmp(argv[i], "--bf16") == 0) bf16 = true;
        else {
            fprintf(stderr, "usage: forward (--config C.json | --model DIR) [--batch B] [--seq S] "
                            "[--threads N] [--iters K] [--layers L --hidden H] [--no-prepack]\n"
                            "               [--weights W.safetensors] [--dump PREFIX] [--int8 | "
                            "--bf16] [--reference DIR]\n");
            return 2;
        }
    }
    if (!config == !model || B < 1 || S < 1 || iters < 1 || iters > 1000 || (int8 && bf16)) {
        fprintf(stderr, "forward: one of --config and --model is required; B, S, iters must be "
                        "positive; --int8 or --bf16, not both\n");
        return 2;
    }
    if (threads > 0)
        bertc_threads_set_count(threads);
    Arena *params = bertc_arena_create("params", 1 << 20);
    Model m;
    BertcError err;
    if (model)
        open_dir(model, params, &m);
    else
        bench_build_model("forward", config, NULL, layers, hidden, params, &m);
    if (weights && bertc_model_load(&m, weights, false, &err) != 0) {
        fprintf(stderr, "forward: %s\n", err.msg);
        return 1;
    }
    /* --int8: the copy to quantise, built and loaded as the first */
    Arena *q_params = bertc_arena_create("params-int8", 1 << 20);
    Model q;
    if ((int8 || bf16) && m.reg->n_int8 == 0 && m.reg->n_bf16 == 0) {
        if (model)
            open_dir(model, q_params, &q);
        else
            bench_build_model("forward", config, NULL, layers, hidden, q_params, &q);
        if (weights && bertc_model_load(&q, weights, false, &err) != 0) {
            fprintf(stderr, "forward: %s\n", err.msg);
            return 1;
        }
    }
    Graph *g = bertc_ag_graph_create(1 << 20, 0);
    bertc_ag_set_training(g, false);
    bertc_ag_set_no_grad(g, true);
    if (m.reg->n_int8 > 0 || m.reg->n_bf16 > 0) {
        run_lowp_model(&m, g, B, S, iters, reference, dump);
    } else {
        double t_pack = bench_now_ms();
        int packed = prepack ? bertc_registry_prepack(m.reg, g->step) : 0;
        t_pack = bench_now_ms() - t_pack;
        if (int8 || bf16) {
            run_in_memory_lowp(&m, &q, bf16, params, g, B, S, iters, packed, t_pack);
        } else {
            Model *one[1] = {&m};
            Timing t[1];
            time_forwards(one, 1, g, B, S, iters, dump, t);
            print_fp32(&m, params, g, B, S, &t[0], packed, t_pack);
            free(t[0].hidden);
        }
    }
    bertc_ag_graph_destroy(g);
    bertc_arena_destroy(q_params);
    bertc_arena_destroy(params);
    return 0;
}
