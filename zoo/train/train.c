/* zoo/train/train.c — the training engine (see train.h). */
#include "zoo/train/train_collective.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

TrainOptions bertc_train_defaults(void)
{
    TrainOptions o = {.steps = 100, .batch_size = 16, .grad_accum = 1, .lr = 1e-3,
                      .warmup = 0.1, .schedule = SCHED_LINEAR,
                      .weight_decay = 0.01, .clip_norm = 1.0f, .eval_every = 0, .seed = 42,
                      .checkpoint_every = 0, .catch_signals = true};
    return o;
}

void bertc_train_epoch_order(int64_t *order, int64_t n, uint64_t seed, int64_t epoch)
{
    Rng r = bertc_rng_seed(seed * 0x9E3779B97F4A7C15ull + (uint64_t)epoch);
    for (int64_t i = 0; i < n; i++)
        order[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = bertc_rng_randint(&r, 0, i);
        int64_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

/* Wall-clock seconds for the progress line. A C library without POSIX
 * clocks (newlib on bare metal) falls back to processor time. */
static double now_seconds(void)
{
#if defined(CLOCK_MONOTONIC)
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
#else
    return (double)clock() / CLOCKS_PER_SEC;
#endif
}

/* The checkpoint's record of the run (make_fields). */
#define RUN_FIELDS 13
#define RUN_FIELD_LEN 32
static const char *const run_field_keys[RUN_FIELDS] = {
    "seed", "batch_size", "steps", "lr", "warmup", "weight_decay",
    "clip_norm", "n_train", "config_crc32", "isa", "bertc_version", "grad_accum", "schedule"};
typedef struct RunFields {
    char text[RUN_FIELDS + 1][RUN_FIELD_LEN];
    /* the task's, then the engine's, then "ranks" when there are several */
    StMetadata meta[RUN_FIELDS + TRAIN_MAX_TASK_FIELDS + 1];
    int n;
} RunFields;

/* SIGINT or SIGTERM during a run: the handler only records it; the loop
 * finishes the step, saves and returns (interrupted()). A second signal
 * while saving changes nothing: the handler stays installed until
 * bertc_train_run returns (after a stop, for good) and writes are restarted
 * (SA_RESTART). */
static volatile sig_atomic_t stop_signal;

/* The state of one run, passed between the small functions below. */
typedef struct Run {
    Model *m;
    const TrainTask *task;
    const TrainOptions *opt;
    TrainResult *res;
    Graph *g;
    Optimizer adamw;
    Schedule schedule;
    int64_t *order;           /* the current epoch's example order */
    int64_t order_epoch;
    int64_t *batch_idx;
    double loss_sum;          /* since the last curve point */
    int64_t loss_count, tokens;
    double start;
    bool tty;
    FILE *csv;
    RunFields fields;         /* what the checkpoint records for an exact resume */
    int64_t saved_at;         /* the step of the last checkpoint written, or -1 */
    /* data-parallel (train_collective.c): NULL for one process */
    const TrainCollective *co;
    double *flat;             /* every gradient (then every weight), end to end, + StepSums */
    bool stop_agreed;         /* some rank got SIGINT/SIGTERM before this step's sum */
    char bad_what[BERTC_ERROR_LEN / 2 + 32];   /* this rank's non-finite loss, or "" */
} Run;

/* One process, or rank 0 of several: the one that evaluates, saves and speaks. */
static bool rank0(const Run *r)
{
    return !r->co || r->co->rank == 0;
}

/* Example indices of micro-batch `micro` of `step` (grad_accum of them a
 * step): examples k*B .. k*B+B-1, k = step*grad_accum + micro, of the
 * endless sequence epoch 0 order, epoch 1 order, ... With R ranks every
 * micro-batch is R batches side by side, k = (step*grad_accum + micro)*R +
 * rank: rank r reads the r-th B of them. */
static void batch_indices(Run *r, int64_t step, int64_t micro)
{
    int64_t n = r->task->n_train, B = r->opt->batch_size;
    int64_t ranks = r->co ? r->co->ranks : 1, rank = r->co ? r->co->rank : 0;
    int64_t first = ((step * r->opt->grad_accum + micro) * ranks + rank) * B;
    if (r->task->batch_position)
        r->task->batch_position(r->task->ctx, first);
    for (int64_t j = 0; j < B; j++) {
        int64_t k = first + j, epoch = k / n;
        if (epoch != r->order_epoch) {
            bertc_train_epoch_order(r->order, n, r->opt->seed, epoch);
            r->order_epoch = epoch;
        }
        r->batch_idx[j] = r->order[k % n];
    }
}

static void format_eta(char *buf, size_t len, double seconds)
{
    int s = (int)(seconds + 0.5);
    snprintf(buf, len, "%d:%02d", s / 60, s % 60);
}

static void progress(Run *r, int64_t step, double loss)
{
    if (r->opt->quiet)
        return;
    int64_t done = step + 1, total = r->opt->steps;
    double elapsed = now_seconds() - r->start;
    double tok_s = elapsed > 0 ? (double)r->tokens / elapsed : 0.0;
    char eta[32];
    format_eta(eta, sizeof eta, elapsed / (double)(done - r->res->steps_done + 1e-9) *
                                    (double)(total - done));
    int width = 24, filled = (int)(width * done / total);
    char bar[32];
    for (int i = 0; i < width; i++)
        bar[i] = i < filled ? '#' : '.';
    bar[width] = '\0';
    if (r->tty)
        fprintf(stderr, "\r[%s] step %lld/%lld  loss %.4f  %.0f tok/s  ETA %s ", bar,
                (long long)done, (long long)total, loss, tok_s, eta);
    else if (done == total || done % (total / 20 ? total / 20 : 1) == 0)
        fprintf(stderr, "step %lld/%lld  loss %.4f  %.0f tok/s  ETA %s\n", (long long)done,
                (long long)total, loss, tok_s, eta);
    if (r->tty && done == total)
        fprintf(stderr, "\n");
}

/* "'name'[i, j] = nan" for the first non-finite element of a parameter's
 * gradient (grads) or value, in registry order; false when all are finite.
 * Tied aliases share their owner's storage and are not scanned twice. */
static bool first_non_finite(const Registry *reg, bool grads, char *buf, size_t len)
{
    for (int i = 0; i < reg->n_params; i++) {
        const Param *p = &reg->params[i];
        const Tensor *v = &p->var->value;
        const float *x = grads ? p->var->grad : v->data;
        if (p->alias_of >= 0 || !x)
            continue;
        for (int64_t k = 0; k < v->numel; k++) {
            if (isfinite(x[k]))
                continue;
            char at[SHAPE_STR_LEN];
            snprintf(buf, len, "%s '%s'%s = %g", grads ? "gradient of" : "parameter", p->name,
                     bertc_index_str(at, sizeof at, v->ndim, v->shape, k), x[k]);
            return true;
        }
    }
    return false;
}

/* A step whose loss or a gradient is not finite (`what` names it): stop
 * with an error, or (TRAIN_NAN_SKIP) warn, drop its gradients and go on.
 * Either way the optimizer never sees it. Returns -1 to stop, 0 to skip. */
static int non_finite_step(Run *r, int64_t step, const char *what, BertcError *err)
{
    if (r->opt->nan_policy == TRAIN_NAN_STOP)
        return bertc_errorf(err, "training: step %lld: %s; stopping before it reaches the "
                            "weights (--nan-policy skip skips such steps)", (long long)step,
                            what);
    bertc_warn("training: step %lld: %s; step skipped", (long long)step, what);
    bertc_registry_zero_grad(r->m->reg);
    r->res->skipped_steps++;
    return 0;
}

/* The first example of this step's batch whose loss alone is not finite,
 * named by the task ("train.csv:7") in buf; false when the task cannot name
 * examples or no single one reproduces it (then the step is all a message
 * can name). The forwards draw from a copy of the graph's RNG, so a skipped
 * step leaves the run as it would have been without the search. */
static bool non_finite_example(Run *r, char *buf, size_t len)
{
    if (!r->task->example_name)
        return false;
    Rng saved = r->g->rng;
    bool found = false;
    for (int64_t j = 0; j < r->opt->batch_size && !found; j++) {
        Batch batch;
        Outputs out;
        int64_t tokens;
        BertcError ignored;
        bertc_ag_graph_reset(r->g);
        bertc_batch_init(&batch, "batch");
        bertc_outputs_init(&out);
        out.loss_only = true;
        if (r->task->make_batch(r->task->ctx, &r->batch_idx[j], 1, r->g, &batch, &tokens,
                                &ignored) != 0 ||
            bertc_model_forward(r->m, r->g, &batch, &out, &ignored) != 0)
            break;
        const Var *loss = bertc_outputs_get(&out, "loss");
        if (loss && !isfinite(loss->value.data[0])) {
            r->task->example_name(r->task->ctx, r->batch_idx[j], buf, len);
            found = true;
        }
    }
    r->g->rng = saved;
    bertc_ag_graph_reset(r->g);
    return found;
}

/* Micro-batch `micro` of `step`: its forward and its backward. With
 * grad_accum 1 the backward is seeded with 1. Else with the micro-batch's
 * weight *weight (its loss items, or 1 without TrainTask.loss_items), and
 * one_step divides the summed gradients by the step's total weight: the
 * mean over every item of the step, as one batch of them would give (each
 * micro-batch's loss is already a mean over its own items). *value
 * receives the loss. Returns 1 for a loss or gradient that is not finite
 * (handled by non_finite_step: the step is dropped), -1 for an error. */
static int micro_step(Run *r, int64_t step, int64_t micro, double *value, double *weight,
                      int64_t *tokens, BertcError *err)
{
    Graph *g = r->g;
    Batch batch;
    Outputs out;
    bertc_ag_graph_reset(g);
    batch_indices(r, step, micro);
    bertc_batch_init(&batch, "batch");
    if (r->task->make_batch(r->task->ctx, r->batch_idx, r->opt->batch_size, g, &batch, tokens,
                            err) != 0)
        return -1;
    *weight = r->task->loss_items ? (double)r->task->loss_items(r->task->ctx, &batch) : 1.0;
    bertc_outputs_init(&out);
    out.loss_only = true;   /* the step reads only the loss: no (B, S, V) MLM logits */
    if (bertc_model_forward(r->m, g, &batch, &out, err) != 0)
        return -1;
    Var *loss = bertc_outputs_get(&out, "loss");
    if (!loss)
        return bertc_errorf(err, "training: the model produced no loss (are the labels in "
                            "the batch?)");
    *value = loss->value.data[0];
    char what[BERTC_ERROR_LEN / 2], bad[BERTC_ERROR_LEN / 4];
    if (!isfinite(*value)) {
        /* name the first non-finite weight, the likeliest cause, if there is
         * one; else the example whose loss alone overflows, if one does */
        bool weight_bad = first_non_finite(r->m->reg, false, bad, sizeof bad);
        if (weight_bad)
            snprintf(what, sizeof what, "the loss is %g (%s)", *value, bad);
        else if (non_finite_example(r, bad, sizeof bad))
            snprintf(what, sizeof what, "the loss is %g; the example at %s alone gives a "
                     "non-finite loss", *value, bad);
        else
            snprintf(what, sizeof what, "the loss is %g", *value);
        if (r->co) {   /* every rank decides after the step's sum (one_step) */
            snprintf(r->bad_what, sizeof r->bad_what, "rank %d: %s", r->co->rank, what);
            return 1;
        }
        return non_finite_step(r, step, what, err) != 0 ? -1 : 1;
    }
    /* several micro-batches or ranks: each seeded with its weight, the sum
     * divided by the step's total weight (one_step) */
    const float seed = r->opt->grad_accum == 1 && !r->co ? 1.0f : (float)*weight;
    bertc_ag_backward_seeded(g, loss, &seed);
    return 0;
}

/* one_step's return when the ranks' sum failed (a rank died or hangs) */
#define SUM_FAILED (-2)

/* One optimizer step: grad_accum micro-batches (on every rank), their
 * weighted mean, clip, AdamW, zero_grad. */
static int one_step(Run *r, int64_t step, BertcError *err)
{
    StepSums s = {0};
    char what[BERTC_ERROR_LEN / 2];
    if (r->co)   /* rank r's dropout: a function of (seed, step, r), see train.h */
        r->g->rng = bertc_rng_seed((r->opt->seed * 0x9E3779B97F4A7C15ull + (uint64_t)step) *
                                       0xBF58476D1CE4E5B9ull + (uint64_t)r->co->rank);
    r->bad_what[0] = '\0';
    for (int64_t micro = 0; micro < r->opt->grad_accum; micro++) {
        int64_t micro_tokens = 0;
        double value = 0, weight = 1;
        int rc = micro_step(r, step, micro, &value, &weight, &micro_tokens, err);
        if (rc < 0 || (rc > 0 && !r->co))
            return rc < 0 ? -1 : 0;
        if (rc > 0) {   /* this rank's loss is not finite: the ranks decide together */
            s.bad = 1;
            break;
        }
        s.loss += value * weight;
        s.weight += weight;
        s.tokens += (double)micro_tokens;
    }
    if (r->co) {
        s.stop = stop_signal ? 1 : 0;
        if (bertc_train_sum_step(r->co, r->m->reg, r->flat, &s, err) != 0)
            return SUM_FAILED;
        r->stop_agreed = s.stop > 0;
        if (s.bad > 0)
            return non_finite_step(r, step, r->bad_what[0] ? r->bad_what : "the loss of "
                                   "another rank's batch is not finite", err);
    }
    double sum = s.loss, total = s.weight;
    int64_t tokens = (int64_t)s.tokens;
    double value = total > 0 ? sum / total : sum;
    if ((r->opt->grad_accum > 1 || r->co) && total > 0)
        bertc_scale_grads(r->m->reg, (float)(1.0 / total));
    if (first_non_finite(r->m->reg, true, what, sizeof what))
        return non_finite_step(r, step, what, err);
    if (r->opt->clip_norm > 0)
        bertc_clip_grad_norm(r->m->reg, r->opt->clip_norm);
    bertc_optimizer_step(&r->adamw, bertc_schedule_lr(&r->schedule, step));
    bertc_registry_zero_grad(r->m->reg);
    r->loss_sum += value;
    r->loss_count++;
    r->tokens += tokens;
    progress(r, step, value);
    return 0;
}

static int evaluate(Run *r, int64_t step, BertcError *err)
{
    TrainPoint p = {step, r->loss_count ? r->loss_sum / (double)r->loss_count : NAN, NAN, NAN};
    if (r->task->evaluate && rank0(r)) {
        bertc_ag_graph_reset(r->g);
        bertc_ag_set_training(r->g, false);
        bool old = bertc_ag_set_no_grad(r->g, true);
        int rc = r->task->evaluate(r->task->ctx, r->m, r->g, &p.metric, &p.eval_loss, err);
        bertc_ag_set_no_grad(r->g, old);
        bertc_ag_set_training(r->g, true);
        if (rc != 0)
            return -1;
        if (!r->opt->quiet)
            fprintf(stderr, "%seval at step %lld: loss %.4f, %s %.4f\n", r->tty ? "\n" : "",
                    (long long)step, p.eval_loss, r->task->metric_name, p.metric);
    }
    if (r->res->n_points < TRAIN_MAX_POINTS)
        r->res->points[r->res->n_points++] = p;
    if (r->csv)
        fprintf(r->csv, "%lld,%.6f,%.6f,%.6f\n", (long long)step, p.train_loss, p.eval_loss,
                p.metric);
    r->res->final_metric = p.metric;
    r->res->final_eval_loss = p.eval_loss;
    r->loss_sum = 0;
    r->loss_count = 0;
    return 0;
}

static int save(Run *r, int64_t steps_done, BertcError *err)
{
    if (!r->opt->checkpoint || r->saved_at == steps_done || !rank0(r))
        return 0;
    CheckpointRun run = {r->fields.meta, (size_t)r->fields.n, r->opt->steps};
    if (bertc_checkpoint_save(r->opt->checkpoint, r->m->reg, &r->adamw, &r->g->rng, steps_done,
                        &run, err) != 0)
        return -1;
    r->saved_at = steps_done;
    return 0;
}

static int resume(Run *r, int64_t *start, BertcError *err)
{
    *start = 0;
    if (!r->opt->resume || !r->opt->checkpoint)
        return 0;
    struct stat sb;
    if (stat(r->opt->checkpoint, &sb) != 0 && errno == ENOENT) {   /* a first run */
        if (!r->opt->quiet)
            fprintf(stderr, "--resume: no checkpoint at %s yet; starting from step 0\n",
                    r->opt->checkpoint);
        return 0;
    }
    SafeTensors *st;
    if (bertc_st_open_file(NULL, r->opt->checkpoint, &st, err) != 0)
        return -1;
    int rc = bertc_checkpoint_require_crc(st, err) != 0
                 ? -1
                 : bertc_train_load_checkpoint(r->m, r->task, r->opt, st, &r->adamw, &r->g->rng,
                                         start, err);
    bertc_st_close(st);
    if (rc != 0)
        return -1;
    r->saved_at = *start;
    if (!r->opt->quiet)
        fprintf(stderr, "resumed from %s at step %lld\n", r->opt->checkpoint, (long long)*start);
    return 0;
}

/* A SIGINT or SIGTERM arrived: the step in progress has finished; save it
 * and end the run with an error saying so (res->interrupted = the signal). */
static int interrupted(Run *r, int64_t done, BertcError *err)
{
    int sig = stop_signal ? (int)stop_signal : SIGTERM;   /* or another rank's */
    r->res->interrupted = sig;
    r->res->steps_done = done;
    if (save(r, done, err) != 0)
        return -1;
    const char *name = sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal";
    if (!rank0(r))
        return bertc_errorf(err, "training: rank %d stopped by %s with the others after step "
                            "%lld of %lld (rank 0 saves the checkpoint)", r->co->rank, name,
                            (long long)done, (long long)r->opt->steps);
    if (!r->opt->checkpoint)
        return bertc_errorf(err, "training: stopped by %s after step %lld of %lld (no "
                            "checkpoint path: progress not saved)", name, (long long)done,
                            (long long)r->opt->steps);
    return bertc_errorf(err, "training: stopped by %s after step %lld of %lld; checkpoint "
                        "saved to %s (run again with --resume to continue)", name,
                        (long long)done, (long long)r->opt->steps, r->opt->checkpoint);
}

/* The task saw a plateau at step `done`: end here, as at the last step. */
static int stop_early(Run *r, int64_t done, BertcError *err)
{
    r->res->seconds = now_seconds() - r->start;
    r->res->tokens_per_second = r->res->seconds > 0 ? (double)r->tokens / r->res->seconds : 0;
    r->res->steps_done = done;
    r->res->stopped_early = true;
    return save(r, done, err);
}

static int loop(Run *r, BertcError *err)
{
    int64_t start;
    if (resume(r, &start, err) != 0)
        return -1;
    r->res->steps_done = start;
    if (r->co && bertc_train_share_weights(r->co, r->m->reg, r->flat, err) != 0)
        return -1;   /* every rank starts from rank 0's weights */
    r->start = now_seconds();
    for (int64_t step = start; step < r->opt->steps; step++) {
        int rc = one_step(r, step, err);
        if (rc == SUM_FAILED) {
            /* the ranks' sum gave up: on a stop signal, as a stop; else (a
             * rank died or hangs) rank 0 still saves the steps done. This
             * step never reached the weights. */
            if (stop_signal)
                return interrupted(r, step, err);
            BertcError save_err;
            if (save(r, step, &save_err) == 0 && rank0(r) && r->opt->checkpoint)
                bertc_warn("training: rank 0 saved the %lld steps done to %s", (long long)step,
                           r->opt->checkpoint);
            return -1;
        }
        if (rc != 0)
            return -1;
        int64_t done = step + 1;
        r->res->final_train_loss = r->loss_sum / (double)r->loss_count;
        if (r->opt->eval_every && done % r->opt->eval_every == 0 && done < r->opt->steps) {
            if (evaluate(r, done, err) != 0)
                return -1;
            bool plateau = r->task->stop_early && rank0(r) && r->task->stop_early(r->task->ctx);
            if (r->co && bertc_train_agree(r->co, &plateau, err) != 0)
                return -1;   /* rank 0's evaluation decides for all */
            if (plateau)
                return stop_early(r, done, err);
        }
        if (r->opt->checkpoint_every && done % r->opt->checkpoint_every == 0 &&
            save(r, done, err) != 0)
            return -1;
        if (r->opt->stop_after && done == r->opt->stop_after && done < r->opt->steps) {
            r->res->steps_done = done;   /* like a kill: no final checkpoint */
            return 0;
        }
        if (r->co ? r->stop_agreed : stop_signal != 0)
            return interrupted(r, done, err);
    }
    r->res->seconds = now_seconds() - r->start;
    r->res->tokens_per_second = r->res->seconds > 0 ? (double)r->tokens / r->res->seconds : 0;
    /* The final checkpoint before the final evaluation: an evaluation that
     * fails (a task saving its best model to a full disk) loses no step,
     * and --resume from this checkpoint only evaluates again. */
    if (save(r, r->opt->steps, err) != 0 || evaluate(r, r->opt->steps, err) != 0)
        return -1;
    r->res->steps_done = r->opt->steps;
    return (r->co ? r->stop_agreed : stop_signal != 0) ? interrupted(r, r->opt->steps, err) : 0;
}

/* Options a library caller can get wrong as well as a flag can: each bound is
 * stated in train.h. */
static int check_options(const TrainTask *task, const TrainOptions *o, BertcError *err)
{
    if (task->n_train < 1)
        return bertc_errorf(err, "training: the task has %lld training examples; it needs at "
                            "least 1", (long long)task->n_train);
    if (o->steps < 1 || o->steps > TRAIN_MAX_STEPS)
        return bertc_errorf(err, "training: steps is %lld; it must be 1..%lld",
                            (long long)o->steps, (long long)TRAIN_MAX_STEPS);
    if (o->batch_size < 1 || o->batch_size > TRAIN_MAX_BATCH)
        return bertc_errorf(err, "training: batch size is %lld; it must be 1..%d",
                            (long long)o->batch_size, TRAIN_MAX_BATCH);
    if (o->grad_accum < 0 || o->grad_accum > TRAIN_MAX_GRAD_ACCUM)
        return bertc_errorf(err, "training: grad_accum is %lld; it must be 1..%d",
                            (long long)o->grad_accum, TRAIN_MAX_GRAD_ACCUM);
    if ((unsigned)o->schedule > SCHED_COSINE)
        return bertc_errorf(err, "training: schedule %d is not one of ScheduleKind's",
                            (int)o->schedule);
    if (!isfinite(o->lr) || !(o->lr > 0))
        return bertc_errorf(err, "training: the learning rate is %g; it must be finite and "
                            "positive", o->lr);
    if (!(o->warmup >= 0 && o->warmup <= 1))
        return bertc_errorf(err, "training: warmup is %g; it is a fraction of the steps, "
                            "0..1", o->warmup);
    if (!isfinite(o->weight_decay) || o->weight_decay < 0 || !isfinite(o->clip_norm))
        return bertc_errorf(err, "training: weight decay %g and clip norm %g must be finite "
                            "(and the decay >= 0)", o->weight_decay, (double)o->clip_norm);
    if (o->n_task_fields < 0 || o->n_task_fields > TRAIN_MAX_TASK_FIELDS ||
        (o->n_task_fields && !o->task_fields))
        return bertc_errorf(err, "training: n_task_fields is %d; it must be 0..%d, with "
                            "task_fields set", o->n_task_fields, TRAIN_MAX_TASK_FIELDS);
    const TrainCollective *co = o->collective;
    if (co && (co->ranks < 1 || co->rank < 0 || co->rank >= co->ranks || !co->sum))
        return bertc_errorf(err, "training: the collective has rank %d of %d ranks%s; it "
                            "needs 0 <= rank < ranks and a sum", co->rank, co->ranks,
                            co->sum ? "" : " and no sum");
    if (o->eval_every < 0 || o->checkpoint_every < 0 || o->stop_after < 0)
        return bertc_errorf(err, "training: eval_every (%lld), checkpoint_every (%lld) and "
                            "stop_after (%lld) must be >= 0", (long long)o->eval_every,
                            (long long)o->checkpoint_every, (long long)o->stop_after);
    return 0;
}

/* The shortest "%.Ng" that reads back as v, so a field reads "0.0005", not
 * "0.00050000000000000001", and still compares exactly. */
static void format_double(char *buf, size_t len, double v)
{
    for (int digits = 6; digits <= 17; digits++) {
        snprintf(buf, len, "%.*g", digits, v);
        if (strtod(buf, NULL) == v)
            return;
    }
}

/* The run's fields, in the order of run_field_keys. Everything that decides
 * which examples and which updates step k sees: the seed (shuffling and
 * dropout), batch size, the schedule, the total steps (the decay's length),
 * the number of training examples, the model's config (CRC-32 of its
 * config.json text), the SIMD path (its sums round differently), the
 * bertc version, then the task's own (TrainOptions.task_fields). */
static int make_fields(RunFields *f, const Model *m, const TrainTask *task,
                       const TrainOptions *o, BertcError *err)
{
    size_t len = 0;
    bertc_bert_config_format(&m->cfg, NULL, 0, &len, NULL);
    char *text = bertc_sys_alloc(len + 1);
    if (!text)
        return bertc_errorf(err, "training: out of memory formatting the config");
    int rc = bertc_bert_config_format(&m->cfg, text, len + 1, &len, err);
    uint32_t crc = bertc_st_crc32(0, text, len);
    bertc_sys_free(text);
    if (rc != 0)
        return -1;
    snprintf(f->text[0], RUN_FIELD_LEN, "%" PRIu64, o->seed);
    snprintf(f->text[1], RUN_FIELD_LEN, "%lld", (long long)o->batch_size);
    snprintf(f->text[2], RUN_FIELD_LEN, "%lld", (long long)o->steps);
    format_double(f->text[3], RUN_FIELD_LEN, o->lr);
    format_double(f->text[4], RUN_FIELD_LEN, o->warmup);
    format_double(f->text[5], RUN_FIELD_LEN, o->weight_decay);
    format_double(f->text[6], RUN_FIELD_LEN, o->clip_norm > 0 ? (double)o->clip_norm : 0.0);
    snprintf(f->text[7], RUN_FIELD_LEN, "%lld", (long long)task->n_train);
    snprintf(f->text[8], RUN_FIELD_LEN, "%08" PRIx32, crc);
    snprintf(f->text[9], RUN_FIELD_LEN, "%s", bertc_cpu_isa_name(bertc_cpu_isa()));
    snprintf(f->text[10], RUN_FIELD_LEN, "%s", BERTC_VERSION);
    snprintf(f->text[11], RUN_FIELD_LEN, "%lld", (long long)(o->grad_accum ? o->grad_accum : 1));
    snprintf(f->text[12], RUN_FIELD_LEN, "%s", o->schedule == SCHED_COSINE     ? "cosine"
                                               : o->schedule == SCHED_CONSTANT ? "constant"
                                                                               : "linear");
    if (o->n_task_fields < 0 || o->n_task_fields > TRAIN_MAX_TASK_FIELDS)
        return bertc_errorf(err, "training: %d task fields; at most %d", o->n_task_fields,
                            TRAIN_MAX_TASK_FIELDS);
    /* the task's first: --resume names the first field that differs, and a
     * task's setting (pretraining's max_len, objective) is what changes the
     * engine's n_train or config_crc32, and what the user set */
    for (int i = 0; i < o->n_task_fields; i++)
        f->meta[i] = o->task_fields[i];
    for (int i = 0; i < RUN_FIELDS; i++)
        f->meta[o->n_task_fields + i] = (StMetadata){run_field_keys[i], f->text[i]};
    f->n = RUN_FIELDS + o->n_task_fields;
    /* data-parallel: the number of ranks decides the batches too; a run of
     * one process records none (so its checkpoints read as before) */
    int ranks = o->collective ? o->collective->ranks : 1;
    if (ranks > 1) {
        snprintf(f->text[RUN_FIELDS], RUN_FIELD_LEN, "%d", ranks);
        f->meta[f->n++] = (StMetadata){"ranks", f->text[RUN_FIELDS]};
    }
    return 0;
}

/* --resume on one process of a checkpoint made by several ranks: the field
 * check only looks for the fields this run records, so "ranks" is looked
 * for here. */
static int check_ranks(const SafeTensors *st, const TrainOptions *opt, BertcError *err)
{
    const char *had = bertc_st_metadata_get(st, "ranks");
    int ranks = opt->collective ? opt->collective->ranks : 1;
    if (!had && ranks > 1)
        return bertc_errorf(err, "%s: resuming with ranks %d, but the checkpoint was made by "
                            "one process (ranks 1); run it without mpirun or remove it to "
                            "start afresh", st->name, ranks);
    if (had && ranks == 1)
        return bertc_errorf(err, "%s: resuming with ranks 1, but the checkpoint was made "
                            "with %s; run it again with mpirun -np %s or remove it to start "
                            "afresh", st->name, had, had);
    return 0;
}

int bertc_train_load_checkpoint(Model *m, const TrainTask *task, const TrainOptions *opt,
                          const SafeTensors *st, Optimizer *adamw, Rng *rng, int64_t *step,
                          BertcError *err)
{
    RunFields f;
    if (make_fields(&f, m, task, opt, err) != 0)
        return -1;
    CheckpointRun run = {f.meta, (size_t)f.n, opt->steps};
    if (check_ranks(st, opt, err) != 0)
        return -1;
    return bertc_checkpoint_load_st(st, m->reg, adamw, rng, step, &run, err);
}

/* Before the first step: the checkpoint's directory exists (made if need
 * be) and a file can be created in it, so a typo in --out or a read-only
 * disk is found now, not after an hour of training. */
static int check_checkpoint_path(const char *path, BertcError *err)
{
    const char *slash = strrchr(path, '/');
    char dir[BERTC_PATH_MAX];
    if (slash && slash != path) {
        size_t n = (size_t)(slash - path);
        if (n >= sizeof dir)
            return bertc_errorf(err, "the checkpoint's directory is %zu bytes, more than the %d "
                                "a path may have (PATH_MAX): '%s'", n, BERTC_PATH_MAX - 1, path);
        memcpy(dir, path, n);
        dir[n] = '\0';
        if (bertc_train_make_dirs(dir, err) != 0)
            return -1;
    }
    return bertc_st_check_writable(path, err);
}

int bertc_train_check_out_dir(const char *dir, BertcError *err)
{
    char probe[BERTC_PATH_MAX];
    /* a fresh name (mkstemp: O_CREAT | O_EXCL, mode 0600), so that whatever
     * already sits in dir under some fixed name (a directory, a FIFO, a link)
     * cannot make a writable directory look unwritable */
    if (bertc_path_check_dir(dir, "the output directory", err) != 0 ||
        bertc_path_join(probe, dir, ".bertc-write-check.XXXXXX", "the output directory",
                        err) != 0 ||
        bertc_train_make_dirs(dir, err) != 0)
        return -1;
    int fd = mkstemp(probe);
    if (fd < 0)
        return bertc_errorf(err, "output directory '%s' is not writable (cannot create a "
                            "file in it: %s)", dir, strerror(errno));
    close(fd);
    unlink(probe);
    return 0;
}

/* ---- signals ----------------------------------------------------------- */

static void on_stop_signal(int sig)
{
    if (!stop_signal)
        stop_signal = sig;
}

int bertc_train_stop_signal(void)
{
    return (int)stop_signal;
}

typedef struct SavedSignals {
    bool installed;
    struct sigaction intr, term;
} SavedSignals;

static void catch_signals(SavedSignals *saved)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
#if defined(SA_RESTART)   /* not in a bare-metal newlib */
    sa.sa_flags = SA_RESTART;
#endif
    sigemptyset(&sa.sa_mask);
    saved->installed = sigaction(SIGINT, &sa, &saved->intr) == 0 &&
                       sigaction(SIGTERM, &sa, &saved->term) == 0;
}

static void restore_signals(const SavedSignals *saved)
{
    if (!saved->installed)
        return;
    sigaction(SIGINT, &saved->intr, NULL);
    sigaction(SIGTERM, &saved->term, NULL);
}

/* ---- the run ----------------------------------------------------------- */

static int prepare(Run *r, BertcError *err)
{
    const TrainOptions *opt = r->opt;
    if (make_fields(&r->fields, r->m, r->task, opt, err) != 0 ||
        (opt->checkpoint && check_checkpoint_path(opt->checkpoint, err) != 0))
        return -1;
    r->order = bertc_sys_alloc(sizeof(int64_t) * (size_t)r->task->n_train);
    r->batch_idx = bertc_sys_alloc(sizeof(int64_t) * (size_t)opt->batch_size);
    if (!r->order || !r->batch_idx)
        return bertc_errorf(err, "training: out of memory for the example order of %lld "
                            "examples", (long long)r->task->n_train);
    if (r->co) {
        int64_t n = bertc_train_flat_size(r->m->reg);
        r->flat = bertc_sys_alloc(sizeof(double) * (size_t)n);
        if (!r->flat)
            return bertc_errorf(err, "training: out of memory for the %lld doubles the ranks "
                                "sum each step", (long long)n);
    }
    r->csv = opt->loss_csv ? bertc_open_write(opt->loss_csv, err) : NULL;
    if (opt->loss_csv && !r->csv)
        return -1;   /* err names the path */
    if (r->csv)
        fprintf(r->csv, "step,train_loss,eval_loss,%s\n", r->task->metric_name);
    return 0;
}

/* Everything that allocates or runs the model: the graph, the optimizer,
 * the run's buffers and files (in r, for bertc_train_run to free), then the
 * steps. */
static int run_steps(Run *r, BertcError *err)
{
    r->g = bertc_ag_graph_create(1 << 20, r->opt->seed);
    bertc_ag_set_bf16(r->g, r->opt->bf16);
    OptimizerConfig oc = bertc_optimizer_defaults(OPT_ADAMW, r->opt->lr);
    oc.weight_decay = r->opt->weight_decay;
    oc.no_decay_vectors = true;   /* HF Trainer: no decay on biases and LayerNorm */
    bertc_optimizer_init(&r->adamw, r->m->reg, oc);
    return prepare(r, err) == 0 ? loop(r, err) : -1;
}

/* run_steps, guarded: a batch size whose step needs more memory than the
 * machine has is an error naming the arena, and r (the caller's: a local
 * here would be indeterminate after the jump) still holds what was made,
 * for bertc_train_run to free. */
static int run_steps_guarded(Run *r, BertcError *err)
{
    BertcCatch guard;
    bertc_catch_begin(&guard, err);
    if (setjmp(guard.env) != 0)
        return -1;   /* out of memory: err names the arena */
    int rc = run_steps(r, err);
    bertc_catch_end(&guard);
    return rc;
}

int bertc_train_run(Model *m, const TrainTask *task, const TrainOptions *given, TrainResult *res,
              BertcError *err)
{
    memset(res, 0, sizeof *res);
    if (check_options(task, given, err) != 0)
        return -1;
    TrainOptions options = *given;   /* grad_accum 0 (an options struct made by hand): 1 */
    options.grad_accum = given->grad_accum ? given->grad_accum : 1;
    const TrainOptions *opt = &options;
    /* several ranks: rank 0 alone speaks (progress, evaluations) */
    const TrainCollective *co = given->collective && given->collective->ranks > 1
                                    ? given->collective
                                    : NULL;
    if (co && co->rank != 0)
        options.quiet = true;
    Run r = {.m = m, .task = task, .opt = opt, .res = res, .order_epoch = -1, .saved_at = -1,
             .co = co};
    r.schedule = (Schedule){opt->schedule, opt->lr, (int64_t)(opt->warmup * (double)opt->steps),
                            opt->steps};
    r.tty = isatty(STDERR_FILENO);
    SavedSignals saved = {0};
    stop_signal = 0;
    if (opt->catch_signals)
        catch_signals(&saved);
    int rc = run_steps_guarded(&r, err);
    /* After a stop the handlers stay: the program is about to exit with
     * 128 + the signal, and a second Ctrl-C must not kill it on the way. */
    if (!res->interrupted)
        restore_signals(&saved);
    res->step_arena_high_water = r.g ? bertc_arena_high_water(r.g->step) : 0;
    res->checkpoint_step = r.saved_at;
    if (r.csv)
        fclose(r.csv);
    bertc_sys_free(r.order);
    bertc_sys_free(r.batch_idx);
    bertc_sys_free(r.flat);
    bertc_ag_graph_destroy(r.g);
    return rc;
}

/* ---- flags ------------------------------------------------------------- */

/* A count flag: a decimal integer in min..max, nothing else. */
static int parse_count(const char *flag, const char *text, int64_t min, int64_t max,
                       int64_t *out, BertcError *err)
{
    if (!bertc_parse_i64(text, min, max, out))
        return bertc_errorf(err, "%s needs a whole number from %lld to %lld, got '%s'", flag,
                            (long long)min, (long long)max, text);
    return 0;
}

/* The count flags and where each goes; --steps and --batch-size start at 1. */
static int64_t *count_flag(const char *flag, TrainOptions *opt, int64_t *min, int64_t *max)
{
    *min = 0;
    *max = TRAIN_MAX_STEPS;
    if (!strcmp(flag, "--eval-every"))
        return &opt->eval_every;
    if (!strcmp(flag, "--checkpoint-every"))
        return &opt->checkpoint_every;
    *min = 1;
    if (!strcmp(flag, "--steps"))
        return &opt->steps;
    *max = TRAIN_MAX_BATCH;
    return !strcmp(flag, "--batch-size") ? &opt->batch_size : NULL;
}

static int parse_flag_value(const char *flag, const char *value, TrainOptions *opt,
                            const char **out_dir, BertcError *err)
{
    int64_t min, max, *count = count_flag(flag, opt, &min, &max);
    if (count)
        return parse_count(flag, value, min, max, count, err);
    if (!strcmp(flag, "--seed")) {
        if (!bertc_parse_u64(value, &opt->seed))
            return bertc_errorf(err, "--seed needs a whole number from 0 to %" PRIu64 ", got "
                                "'%s'", UINT64_MAX, value);
        return 0;
    }
    if (!strcmp(flag, "--lr")) {
        double lr;
        if (!bertc_parse_f64(value, &lr) || !(lr > 0))
            return bertc_errorf(err, "--lr needs a finite number > 0 (such as 1e-3), got "
                                "'%s'", value);
        opt->lr = lr;
        return 0;
    }
    if (!strcmp(flag, "--nan-policy")) {
        if (strcmp(value, "stop") != 0 && strcmp(value, "skip") != 0)
            return bertc_errorf(err, "--nan-policy needs stop or skip, got '%s'", value);
        opt->nan_policy = strcmp(value, "skip") == 0 ? TRAIN_NAN_SKIP : TRAIN_NAN_STOP;
        return 0;
    }
    if (!strcmp(flag, "--checkpoint")) {
        opt->checkpoint = value;
        return bertc_path_check(value, flag, err);
    }
    if (!strcmp(flag, "--out") && out_dir) {
        *out_dir = value;
        return bertc_path_check_dir(value, flag, err);
    }
    return bertc_errorf(err, "unknown option '%s'", flag);
}

int bertc_train_parse_flags(int argc, char **argv, TrainOptions *opt, const char **out_dir,
                      BertcError *err)
{
    for (int i = 1; i < argc; i++) {
        const char *flag = argv[i];
        if (!strcmp(flag, "--resume"))
            opt->resume = true;
        else if (!strcmp(flag, "--quiet"))
            opt->quiet = true;
        else if (i + 1 >= argc)
            return bertc_errorf(err, "%s needs a value (or is unknown)", flag);
        else if (parse_flag_value(flag, argv[++i], opt, out_dir, err) != 0)
            return -1;
    }
    if (opt->eval_every > opt->steps)
        opt->eval_every = 0;
    return 0;
}

int bertc_train_make_dirs(const char *path, BertcError *err)
{
    char buf[BERTC_PATH_MAX];
    size_t n = strlen(path);
    if (n == 0)
        return bertc_errorf(err, "the output directory is empty (\"\"): give a path");
    if (n >= sizeof buf)
        return bertc_errorf(err, "the output directory is %zu bytes, more than the %d a path "
                            "may have (PATH_MAX): '%s'", n, BERTC_PATH_MAX - 1, path);
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != '\0')
            continue;
        char keep = buf[i];
        buf[i] = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return bertc_errorf(err, "cannot create directory '%s': %s", buf, strerror(errno));
        buf[i] = keep;
    }
    return 0;
}
