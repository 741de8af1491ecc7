/* bench/bench_util.h — what bench/forward.c and bench/train.c share: a
 * clock, peak RSS, a median, flag parsing and a random batch for any model.
 * Static functions in a header, so each bench stays one .c file and one
 * binary. */
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

/* The model every bench times: config.json with the size overrides, built in
 * `params`, weights from the seeded init (seed 0: speed does not depend on
 * their values). Exits naming the bench on an error, as bench_random_batch. */
static void bench_build_model(const char *bench, const char *config, int layers, int hidden,
                              Arena *params, Model *m)
{
    BertConfig cfg;
    BertcError err;
    if (bertc_bert_config_read(config, &cfg, &err) != 0) {
        fprintf(stderr, "%s: %s\n", bench, err.msg);
        exit(1);
    }
    bench_apply_size(&cfg, layers, hidden);
    if (bertc_model_build(m, params, &cfg, &err) != 0) {
        fprintf(stderr, "%s: %s\n", bench, err.msg);
        exit(1);
    }
    Rng rng = bertc_rng_seed(0);
    bertc_registry_init_weights(m->reg, &rng, cfg.initializer_range);
}

#endif
