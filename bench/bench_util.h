/* bench/bench_util.h — what bench/forward.c, bench/train.c and
 * bench/scaling.c share: a clock, peak RSS, a median, flag parsing, a random
 * batch for any model, the model they time, and the timed units themselves
 * (a forward, a training step, the int8 or bf16 copy of a model). Static
 * functions in a header, so each bench stays one .c file and one binary;
 * those that not every bench calls are static inline, so that the others
 * compile without an unused-function warning. */
#ifndef BERTC_BENCH_UTIL_H
#define BERTC_BENCH_UTIL_H

#include "zoo/zoo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double bench_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/* CPU time of the whole process (every thread, user + system), ms. Divided
 * by the wall time of the same span it says how many cores a run used. */
static double bench_cpu_ms(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
           (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-3;
}

/* The process's peak resident set so far, MiB (Linux reports KiB). */
static double bench_peak_rss_mib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024.0;
}

static int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts v in place. */
static double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* "--name value" at argv[*i]: returns the value and advances *i. */
static const char *bench_flag(int argc, char **argv, int *i, const char *name)
{
    if (strcmp(argv[*i], name) != 0)
        return NULL;
    if (*i + 1 >= argc) {
        fprintf(stderr, "%s needs a value\n", name);
        exit(2);
    }
    return argv[++*i];
}

/* A random batch that fits m's architecture (bertc_model_random_batch): for the
 * BERT family input_ids uniform in [1000, V) (past the special tokens) when
 * V > 1000, no padding, one segment: the same distribution
 * tools/bench_torch.py draws. With labels, what the model's loss needs
 * (BertForMaskedLM: 15% of the positions labelled). Exits on an error. */
static void bench_random_batch(const char *bench, Graph *g, const Model *m, int64_t B,
                               int64_t S, bool labels, Rng *rng, Batch *batch)
{
    BertcError err;
    if (bertc_model_random_batch(m, g, B, S, labels, rng, batch, &err) != 0) {
        fprintf(stderr, "%s: %s\n", bench, err.msg);
        exit(1);
    }
}

/* Overrides of config.json from the command line: --layers L --hidden H
 * (heads H/64 and intermediate 4H, as the BERT-tiny/mini/small family). */
static void bench_apply_size(BertConfig *cfg, int layers, int hidden)
{
    if (layers > 0)
        cfg->num_hidden_layers = layers;
    if (hidden > 0) {
        cfg->hidden_size = hidden;
        cfg->num_attention_heads = hidden / 64 > 0 ? hidden / 64 : 1;
        cfg->intermediate_size = 4 * hidden;
    }
}

/* The model every bench times: config.json with the size overrides, as
 * architecture `arch` (NULL: the config's own; "BertModel" times the encoder
 * of a BertForMaskedLM config), built in `params`, weights from the seeded
 * init (seed 0: speed does not depend on their values). Exits naming the
 * bench on an error, as bench_random_batch. */
static void bench_build_model(const char *bench, const char *config, const char *arch, int layers,
                              int hidden, Arena *params, Model *m)
{
    BertConfig cfg;
    BertcError err;
    if (bertc_bert_config_read(config, &cfg, &err) != 0) {
        fprintf(stderr, "%s: %s\n", bench, err.msg);
        exit(1);
    }
    if (arch)
        snprintf(cfg.architecture, sizeof cfg.architecture, "%s", arch);
    bench_apply_size(&cfg, layers, hidden);
    if (bertc_model_build(m, params, &cfg, &err) != 0) {
        fprintf(stderr, "%s: %s\n", bench, err.msg);
        exit(1);
    }
    Rng rng = bertc_rng_seed(0);
    bertc_registry_init_weights(m->reg, &rng, cfg.initializer_range);
}


/* One forward of m, as `bertc run` does it when g is in eval and no_grad
 * mode, on a B x S random batch drawn from a fresh seed-1 Rng (the same
 * batch every call): its wall time in ms, the forward alone (the batch is
 * drawn before the clock starts). *batch and *out live in g's step arena
 * until its next reset. */
static inline double bench_forward(const char *bench, Model *m, Graph *g, int64_t B, int64_t S,
                                   Batch *batch, Outputs *out)
{
    BertcError err;
    bertc_ag_graph_reset(g);
    Rng data = bertc_rng_seed(1);
    bench_random_batch(bench, g, m, B, S, false, &data, batch);
    bertc_outputs_init(out);
    out->final_only = true;   /* as predict: the model's final outputs, no per-layer maps */
    double t0 = bench_now_ms();
    if (bertc_model_forward(m, g, batch, out, &err) != 0) {
        fprintf(stderr, "%s: %s\n", bench, err.msg);
        exit(1);
    }
    return bench_now_ms() - t0;
}

/* One training step of m as the training engine (zoo/train/train.c) runs
 * it, g in training mode: forward (dropout on), loss, backward, AdamW,
 * zero_grad, on a B x S random batch with labels drawn from *data. Its wall
 * time in ms, from the forward to zero_grad; the loss into *loss. */
static inline double bench_train_step(const char *bench, Model *m, Graph *g, Optimizer *adamw,
                                      int64_t B, int64_t S, Rng *data, double *loss)
{
    BertcError err;
    bertc_ag_graph_reset(g);
    Batch batch;
    Outputs out;
    bench_random_batch(bench, g, m, B, S, true, data, &batch);
    bertc_outputs_init(&out);
    out.loss_only = true;
    double t0 = bench_now_ms();
    if (bertc_model_forward(m, g, &batch, &out, &err) != 0) {
        fprintf(stderr, "%s: %s\n", bench, err.msg);
        exit(1);
    }
    Var *l = bertc_model_step_loss(g, &out);
    if (!l) {
        fprintf(stderr, "%s: %s gives no loss for this batch\n", bench, m->cfg.architecture);
        exit(1);
    }
    *loss = l->value.data[0];
    bertc_ag_backward(g, l);
    bertc_optimizer_step(adamw, 1e-4);
    bertc_registry_zero_grad(m->reg);
    return bench_now_ms() - t0;
}

/* Makes a float32 model its int8 copy in memory (bertc_registry_quantize:
 * what `bertc quantize` writes), or with bf16 its bf16 one
 * (bertc_registry_pack_bf16: `bertc quantize --dtype bf16`), the Linear
 * weights of bertc_registry_int8_plan's plan. Uses `scratch` while it
 * quantises. */
static inline void bench_make_lowp(const char *bench, Model *q, bool bf16, Arena *scratch)
{
    BertcError err;
    bool *chosen = calloc((size_t)q->reg->n_params, sizeof *chosen);
    if (!chosen || bertc_registry_int8_plan(q->reg, NULL, 0, chosen, &err) < 0) {
        fprintf(stderr, "%s: %s\n", bench, chosen ? err.msg : "out of memory");
        exit(1);
    }
    if (bf16)
        bertc_registry_pack_bf16(q->reg, chosen);
    else
        bertc_registry_quantize(q->reg, chosen, scratch);
    free(chosen);
}

#endif
