/* zoo/train.c — the training engine (see train.h). */
#include "zoo/train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

TrainOptions train_defaults(void)
{
    TrainOptions o = {.steps = 100, .batch_size = 16, .lr = 1e-3, .warmup = 0.1,
                      .weight_decay = 0.01, .clip_norm = 1.0f, .eval_every = 0, .seed = 42,
                      .checkpoint_every = 0};
    return o;
}

void train_epoch_order(int64_t *order, int64_t n, uint64_t seed, int64_t epoch)
{
    Rng r = rng_seed(seed * 0x9E3779B97F4A7C15ull + (uint64_t)epoch);
    for (int64_t i = 0; i < n; i++)
        order[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = rng_randint(&r, 0, i);
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
} Run;

/* Example indices of `step`: examples step*B .. step*B+B-1 of the endless
 * sequence epoch 0 order, epoch 1 order, ... */
static void batch_indices(Run *r, int64_t step)
{
    int64_t n = r->task->n_train, B = r->opt->batch_size;
    for (int64_t j = 0; j < B; j++) {
        int64_t k = step * B + j, epoch = k / n;
        if (epoch != r->order_epoch) {
            train_epoch_order(r->order, n, r->opt->seed, epoch);
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
                     index_str(at, sizeof at, v->ndim, v->shape, k), x[k]);
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
    registry_zero_grad(r->m->reg);
    r->res->skipped_steps++;
    return 0;
}

static int one_step(Run *r, int64_t step, BertcError *err)
{
    Graph *g = r->g;
    Batch batch;
    Outputs out;
    int64_t tokens = 0;
    ag_graph_reset(g);
    batch_indices(r, step);
    batch_init(&batch, "batch");
    if (r->task->make_batch(r->task->ctx, r->batch_idx, r->opt->batch_size, g, &batch, &tokens,
                            err) != 0)
        return -1;
    outputs_init(&out);
    out.loss_only = true;   /* the step reads only the loss: no (B, S, V) MLM logits */
    if (model_forward(r->m, g, &batch, &out, err) != 0)
        return -1;
    Var *loss = outputs_get(&out, "loss");
    if (!loss)
        return bertc_errorf(err, "training: the model produced no loss (are the labels in "
                            "the batch?)");
    double value = loss->value.data[0];
    char what[BERTC_ERROR_LEN / 2], bad[BERTC_ERROR_LEN / 4];
    if (!isfinite(value)) {
        /* name the first non-finite weight, the likeliest cause, if there is one */
        bool weight = first_non_finite(r->m->reg, false, bad, sizeof bad);
        snprintf(what, sizeof what, "the loss is %g%s%s%s", value, weight ? " (" : "",
                 weight ? bad : "", weight ? ")" : "");
        return non_finite_step(r, step, what, err);
    }
    ag_backward(g, loss);
    if (first_non_finite(r->m->reg, true, what, sizeof what))
        return non_finite_step(r, step, what, err);
    if (r->opt->clip_norm > 0)
        clip_grad_norm(r->m->reg, r->opt->clip_norm);
    optimizer_step(&r->adamw, schedule_lr(&r->schedule, step));
    registry_zero_grad(r->m->reg);
    r->loss_sum += value;
    r->loss_count++;
    r->tokens += tokens;
    progress(r, step, value);
    return 0;
}

static int evaluate(Run *r, int64_t step, BertcError *err)
{
    TrainPoint p = {step, r->loss_count ? r->loss_sum / (double)r->loss_count : NAN, NAN, NAN};
    if (r->task->evaluate) {
        ag_graph_reset(r->g);
        ag_set_training(r->g, false);
        bool old = ag_set_no_grad(r->g, true);
        int rc = r->task->evaluate(r->task->ctx, r->m, r->g, &p.metric, &p.eval_loss, err);
        ag_set_no_grad(r->g, old);
        ag_set_training(r->g, true);
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
    if (!r->opt->checkpoint)
        return 0;
    return checkpoint_save(r->opt->checkpoint, r->m->reg, &r->adamw, &r->g->rng, steps_done,
                           err);
}

static int resume(Run *r, int64_t *start, BertcError *err)
{
    *start = 0;
    if (!r->opt->resume || !r->opt->checkpoint)
        return 0;
    if (access(r->opt->checkpoint, F_OK) != 0) {   /* the first run of a resumable job */
        if (!r->opt->quiet)
            fprintf(stderr, "--resume: no checkpoint at %s yet; starting from step 0\n",
                    r->opt->checkpoint);
        return 0;
    }
    if (checkpoint_load(r->opt->checkpoint, r->m->reg, &r->adamw, &r->g->rng, start, err) != 0)
        return -1;
    if (!r->opt->quiet)
        fprintf(stderr, "resumed from %s at step %lld\n", r->opt->checkpoint, (long long)*start);
    return 0;
}

static int loop(Run *r, BertcError *err)
{
    int64_t start;
    if (resume(r, &start, err) != 0)
        return -1;
    r->res->steps_done = start;
    r->start = now_seconds();
    for (int64_t step = start; step < r->opt->steps; step++) {
        if (one_step(r, step, err) != 0)
            return -1;
        int64_t done = step + 1;
        r->res->final_train_loss = r->loss_sum / (double)r->loss_count;
        if (r->opt->eval_every && done % r->opt->eval_every == 0 && done < r->opt->steps &&
            evaluate(r, done, err) != 0)
            return -1;
        if (r->opt->checkpoint_every && done % r->opt->checkpoint_every == 0 &&
            save(r, done, err) != 0)
            return -1;
        if (r->opt->stop_after && done == r->opt->stop_after && done < r->opt->steps) {
            r->res->steps_done = done;   /* like a kill: no final checkpoint */
            return 0;
        }
    }
    r->res->seconds = now_seconds() - r->start;
    r->res->tokens_per_second = r->res->seconds > 0 ? (double)r->tokens / r->res->seconds : 0;
    if (evaluate(r, r->opt->steps, err) != 0)
        return -1;
    r->res->steps_done = r->opt->steps;
    return save(r, r->opt->steps, err);
}

int train_run(Model *m, const TrainTask *task, const TrainOptions *opt, TrainResult *res,
              BertcError *err)
{
    if (task->n_train < 1 || opt->batch_size < 1 || opt->steps < 1)
        return bertc_errorf(err, "training: needs examples (%lld), a batch size (%lld) and "
                            "steps (%lld) of at least 1", (long long)task->n_train,
                            (long long)opt->batch_size, (long long)opt->steps);
    memset(res, 0, sizeof *res);
    Run r = {.m = m, .task = task, .opt = opt, .res = res, .order_epoch = -1};
    r.g = ag_graph_create(1 << 20, opt->seed);
    OptimizerConfig oc = optimizer_defaults(OPT_ADAMW, opt->lr);
    oc.weight_decay = opt->weight_decay;
    optimizer_init(&r.adamw, m->reg, oc);
    r.schedule = (Schedule){SCHED_LINEAR, opt->lr, (int64_t)(opt->warmup * (double)opt->steps),
                            opt->steps};
    r.order = bertc_sys_alloc(sizeof(int64_t) * (size_t)task->n_train);
    r.batch_idx = bertc_sys_alloc(sizeof(int64_t) * (size_t)opt->batch_size);
    r.tty = isatty(STDERR_FILENO);
    r.csv = opt->loss_csv ? bertc_open_write(opt->loss_csv, err) : NULL;
    if (r.csv)
        fprintf(r.csv, "step,train_loss,eval_loss,%s\n", task->metric_name);
    int rc = opt->loss_csv && !r.csv     ? -1   /* err names the path */
             : r.order && r.batch_idx ? loop(&r, err)
                                      : bertc_errorf(err, "training: out of memory");
    res->step_arena_high_water = arena_high_water(r.g->step);
    if (r.csv)
        fclose(r.csv);
    bertc_sys_free(r.order);
    bertc_sys_free(r.batch_idx);
    ag_graph_destroy(r.g);
    return rc;
}

/* ---- flags ------------------------------------------------------------- */

static int parse_int(const char *flag, const char *text, int64_t min, int64_t *out,
                     BertcError *err)
{
    char *end;
    long long v = strtoll(text, &end, 10);
    if (*text == '\0' || *end || v < min)
        return bertc_errorf(err, "%s needs a whole number >= %lld, got '%s'", flag,
                            (long long)min, text);
    *out = v;
    return 0;
}

static int parse_flag_value(const char *flag, const char *value, TrainOptions *opt,
                            const char **out_dir, BertcError *err)
{
    int64_t v = 0;
    if (!strcmp(flag, "--steps") || !strcmp(flag, "--batch-size") ||
        !strcmp(flag, "--eval-every") || !strcmp(flag, "--checkpoint-every") ||
        !strcmp(flag, "--seed")) {
        if (parse_int(flag, value, !strcmp(flag, "--steps") || !strcmp(flag, "--batch-size"),
                      &v, err) != 0)
            return -1;
        if (!strcmp(flag, "--steps")) opt->steps = v;
        else if (!strcmp(flag, "--batch-size")) opt->batch_size = v;
        else if (!strcmp(flag, "--eval-every")) opt->eval_every = v;
        else if (!strcmp(flag, "--checkpoint-every")) opt->checkpoint_every = v;
        else opt->seed = (uint64_t)v;
        return 0;
    }
    if (!strcmp(flag, "--lr")) {
        char *end;
        opt->lr = strtod(value, &end);
        if (*value == '\0' || *end || !(opt->lr > 0))
            return bertc_errorf(err, "--lr needs a positive number, got '%s'", value);
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
        return 0;
    }
    if (!strcmp(flag, "--out") && out_dir) {
        *out_dir = value;
        return 0;
    }
    return bertc_errorf(err, "unknown option '%s'", flag);
}

int train_parse_flags(int argc, char **argv, TrainOptions *opt, const char **out_dir,
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

int train_make_dirs(const char *path, BertcError *err)
{
    char buf[1024];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof buf)
        return bertc_errorf(err, "output directory '%s': empty or too long", path);
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != '\0')
            continue;
        char keep = buf[i];
        buf[i] = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return bertc_errorf(err, "cannot create directory '%s'", buf);
        buf[i] = keep;
    }
    return 0;
}
