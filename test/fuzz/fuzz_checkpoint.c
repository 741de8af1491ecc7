/* test/fuzz/fuzz_checkpoint.c — libFuzzer target: any bytes as the
 * checkpoint a training run resumes from. They go the way `--resume` takes
 * them, from memory: bertc_st_open_memory -> bertc_train_load_checkpoint (the run's
 * fields, the counters, every weight and moment) into a tiny BERT classifier
 * trained by the run below. A bad checkpoint must be an error naming the
 * file, never a crash; one that loads must hold only finite weights and
 * moments, second moments >= 0 and counters in range, and a training step
 * from it must run.
 *
 * Seeds: test/fuzz/make_corpus.py derives them from
 * test/data/checkpoint/tiny.safetensors, which this target writes itself:
 *     BERTC_FUZZ_WRITE_CHECKPOINT=test/data/checkpoint/tiny.safetensors \
 *         ./build/fuzz/fuzzers/fuzz_checkpoint -runs=0
 * (2 of the run's 4 steps, then a checkpoint). The SIMD path is forced to
 * scalar so the checkpoint's "isa" field is the same on every machine. */
#include "zoo/train/train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S 4
#define NAME "fuzz_checkpoint.safetensors"

static Model model;
static TrainTask task;
static TrainOptions options;
static Optimizer adamw;
static Graph *graph;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int make_batch(void *ctx, const int64_t *idx, int64_t n, Graph *g, Batch *b,
                      int64_t *tokens, BertcError *err)
{
    (void)ctx;
    (void)err;
    int64_t bs[2] = {n, S}, bl[1] = {n};
    ITensor ids = bertc_itensor_new(g->step, 2, bs), labels = bertc_itensor_new(g->step, 1, bl);
    for (int64_t j = 0; j < n; j++) {
        for (int t = 0; t < S; t++)
            ids.data[j * S + t] = (int32_t)(1 + (idx[j] + t) % 9);
        labels.data[j] = (int32_t)(idx[j] % 2);
    }
    bertc_batch_put_ids(b, "input_ids", ids);
    bertc_batch_put_ids(b, "labels", labels);
    *tokens = n * S;
    return 0;
}

static void die(const char *what, const BertcError *err)
{
    fprintf(stderr, "fuzz_checkpoint: %s: %s\n", what, err ? err->msg : "");
    abort();
}

static void build(void)
{
    BertConfig c = bertc_bert_config_default("BertForSequenceClassification");
    c.vocab_size = 10;
    c.hidden_size = 4;
    c.num_hidden_layers = 1;
    c.num_attention_heads = 2;
    c.intermediate_size = 8;
    c.max_position_embeddings = S;
    c.num_labels = 2;
    c.problem_type = PROBLEM_SINGLE_LABEL;
    BertcError err;
    if (bertc_model_build(&model, bertc_arena_create("fuzz", 1 << 16), &c, &err) != 0)
        die("model", &err);
    Rng init = bertc_rng_seed(7);
    bertc_registry_init_weights(model.reg, &init, 0.02f);
}

/* BERTC_FUZZ_WRITE_CHECKPOINT=path: the seed checkpoint (see the top). */
static void write_seed(const char *path)
{
    TrainOptions o = options;
    o.checkpoint = path;
    o.checkpoint_every = 2;
    o.stop_after = 2;
    TrainResult res;
    BertcError err;
    if (bertc_train_run(&model, &task, &o, &res, &err) != 0)
        die("writing the seed", &err);
    fprintf(stderr, "wrote %s\n", path);
    exit(0);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    setenv("BERTC_THREADS", "1", 0);
    bertc_cpu_set_isa(ISA_SCALAR);
    build();
    task = (TrainTask){.n_train = 8, .make_batch = make_batch, .metric_name = "accuracy"};
    options = bertc_train_defaults();
    options.steps = 4;
    options.batch_size = 2;
    options.quiet = true;
    options.catch_signals = false;
    const char *seed = getenv("BERTC_FUZZ_WRITE_CHECKPOINT");
    if (seed && *seed)
        write_seed(seed);
    OptimizerConfig oc = bertc_optimizer_defaults(OPT_ADAMW, options.lr);
    oc.weight_decay = options.weight_decay;
    bertc_optimizer_init(&adamw, model.reg, oc);
    graph = bertc_ag_graph_create(1 << 16, 0);
    return 0;
}

/* What a loaded checkpoint promises the training loop. */
static void check_loaded(int64_t step)
{
    if (step < 0 || step > options.steps || adamw.step < 0 || adamw.step > step)
        die("counters out of range were accepted", NULL);
    const Registry *r = model.reg;
    for (int i = 0; i < r->n_params; i++) {
        const Tensor *v = &r->params[i].var->value;
        for (int64_t k = 0; k < v->numel; k++)
            if (!isfinite(v->data[k]) || (adamw.state1[i] && !isfinite(adamw.state1[i][k])) ||
                (adamw.state2[i] && !(adamw.state2[i][k] >= 0 && isfinite(adamw.state2[i][k]))))
                die(r->params[i].name, NULL);
    }
}

/* One training step from the loaded state, as the resumed run takes it. */
static void one_step(void)
{
    Batch b;
    Outputs out;
    int64_t idx[2] = {0, 1}, tokens;
    BertcError err;
    bertc_ag_graph_reset(graph);
    bertc_batch_init(&b, "batch");
    make_batch(NULL, idx, 2, graph, &b, &tokens, &err);
    bertc_outputs_init(&out);
    if (bertc_model_forward(&model, graph, &b, &out, &err) != 0)
        die("forward after a good load", &err);
    bertc_ag_backward(graph, bertc_outputs_get(&out, "loss"));
    bertc_clip_grad_norm(model.reg, options.clip_norm);
    bertc_optimizer_step(&adamw, options.lr);
    bertc_registry_zero_grad(model.reg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    SafeTensors *st;
    BertcError err = {{0}};
    if (bertc_st_open_memory(NULL, NAME, data, size, &st, &err) != 0) {
        if (!strstr(err.msg, NAME))
            die("an error without the file's name", &err);
        return 0;
    }
    int64_t step = -1;
    Rng rng;
    int rc = bertc_train_load_checkpoint(&model, &task, &options, st, &adamw, &rng, &step, &err);
    bertc_st_close(st);
    if (rc != 0) {
        if (!strstr(err.msg, NAME) || strchr(err.msg, '\n'))
            die("an error without the file's name, or of several lines", &err);
        return 0;
    }
    check_loaded(step);
    one_step();
    return 0;
}
