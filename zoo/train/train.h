/*
 * zoo/train/train.h — the training engine every example uses: seeded shuffling,
 * batching through a callback, AdamW + warmup/decay, gradient clipping, a
 * one-line progress bar, periodic evaluation, checkpoints and --resume.
 *
 * The loop, one step:
 *     reset the step arena -> make_batch(examples of this step) ->
 *     bertc_model_forward (training mode) -> backward(loss) -> clip -> AdamW ->
 *     zero_grad.
 * Nothing in that loop calls malloc once the step arena has grown to its
 * high-water mark in the first step.
 *
 * Resuming is exact: the checkpoint holds the weights, the AdamW moments, the
 * step and the dropout RNG; the example order of every epoch is a pure
 * function of (seed, epoch), so the resumed run sees the same batches. The
 * checkpoint also records, in its __metadata__, everything else that decides
 * the batches and updates: seed, batch_size, grad_accum, schedule, steps, lr,
 * warmup, weight_decay, clip_norm, n_train, config_crc32 (CRC-32 of the model's
 * config.json text), isa (the SIMD path), bertc_version and the task's own
 * TrainOptions.task_fields (bertc finetune's max_len). --resume with
 * any of them different is refused, naming the field and both values; so is
 * a checkpoint without them (from bertc before 0.1.0 recorded them: start
 * afresh), one whose counters are out of range (train.step outside
 * 0..steps, optimizer.step above train.step) and one holding a non-finite
 * weight or moment or a negative second moment (nn/checkpoint.c).
 *
 * Checkpoints are never lost: they are written atomically (nn/safetensors.h,
 * bertc_st_write_file), a save that would write a non-finite weight or moment is
 * refused so the last good file stays, and the checkpoint path is checked
 * writable (its directory made) before the first step.
 *
 * Signals: with catch_signals (the default), SIGINT and SIGTERM during
 * bertc_train_run finish the step in progress, save the checkpoint and make
 * bertc_train_run return -1 with res->interrupted set to the signal and a message
 * saying where the checkpoint is. The library never exits: a program ends
 * with status 128 + bertc_train_stop_signal() (130, 143), as a shell expects of a
 * program stopped by a signal. The handlers only set a flag; they are
 * installed while bertc_train_run runs, and after a run they stopped they stay
 * installed, so that a second Ctrl-C cannot kill the program on its way to
 * that exit.
 *
 *     TrainTask task = {.n_train = n, .make_batch = my_batch, .ctx = &data,
 *                       .evaluate = my_eval};
 *     TrainOptions opt = bertc_train_defaults();
 *     opt.steps = 600;
 *     opt.checkpoint = "out/ckpt.safetensors";
 *     TrainResult res;
 *     bertc_train_run(&model, &task, &opt, &res, &err);
 */
#ifndef BERTC_ZOO_TRAIN_H
#define BERTC_ZOO_TRAIN_H

#include "zoo/zoo.h"

/* What a task supplies. */
typedef struct TrainTask {
    int64_t n_train;          /* training examples, indexed 0..n_train-1 */
    /* Fill `batch` with the n examples idx[0..n-1] (allocate in g->step);
     * *tokens receives the number of real tokens, for the tokens/s figure. */
    int (*make_batch)(void *ctx, const int64_t *idx, int64_t n, Graph *g, Batch *batch,
                      int64_t *tokens, BertcError *err);
    /* Evaluate the model on held-out data (eval mode is set by the engine);
     * returns the task's metric (accuracy, F1, ...) in *metric and the mean
     * loss in *loss. May be NULL. */
    int (*evaluate)(void *ctx, Model *m, Graph *g, double *metric, double *loss,
                    BertcError *err);
    const char *metric_name;  /* "accuracy", "exact match", ... */
    void *ctx;
    /* Optional early stopping: asked after each periodic evaluation; true
     * ends the run there (res->stopped_early, steps_done the step reached)
     * with the checkpoint saved, as a plateau of the metric asks. */
    bool (*stop_early)(void *ctx);
    /* Optional: where training example idx came from ("train.csv:7") into
     * buf (len bytes), so a step whose loss is not finite can name the
     * example whose loss alone is not finite (a target that overflows the
     * loss) rather than only the step. */
    void (*example_name)(void *ctx, int64_t idx, char *buf, size_t len);
    /* Optional: how many items the batch's loss is a mean over (masked LM:
     * its labelled tokens, which vary from batch to batch). With grad_accum
     * > 1 each micro-batch's gradient is then weighted by its items and the
     * step's gradient is the mean over all the step's items, as one batch of
     * them gives (Hugging Face's num_items_in_batch); without it every
     * micro-batch weighs the same. */
    int64_t (*loss_items)(void *ctx, const Batch *batch);
    /* Optional: told before each make_batch where its examples stand in the
     * run: they are the first-th, first+1-th, ... examples drawn, counting
     * from 0 over every step, epoch and rank. A task that draws an example's
     * randomness from (seed, position) - pretraining's masks - then makes the
     * same rows on one process as on several ranks, and after --resume. */
    void (*batch_position)(void *ctx, int64_t first);
} TrainTask;

/* Data-parallel training (docs/distributed.md): `ranks` processes each call
 * bertc_train_run with the same model, task and options and a collective of
 * their own rank. A step's batch is then ranks x batch_size examples of the
 * run's one example order (each rank reads the rank-th batch_size of them),
 * and its gradient the mean over all of them, so that N ranks with batch b
 * train as one process with batch N b does (to the rounding of the sum's
 * order: each rank's gradient is summed whole rather than row by row).
 *
 * The library calls no MPI: the program supplies `sum`, which adds n doubles
 * elementwise over the ranks, in place, and leaves the same result on every
 * rank (the MPI build of bertc: MPI_Reduce to rank 0, then MPI_Bcast, so
 * every rank steps with the same bits). It returns 0, or -1 with err set
 * when the ranks do not all join within its time limit (a rank died or
 * hangs). Every rank calls it the same number of times in the same order.
 *
 * Rank 0 evaluates, saves the checkpoint and draws the progress bar (global
 * tokens/s); every rank reads the checkpoint to resume, which refuses a
 * different number of ranks. Rank r's dropout draws from (seed, step, r), so
 * that a resumed run continues exactly without any rank's RNG in the file.
 * A signal on any rank stops every rank after the same step. */
typedef struct TrainCollective {
    int rank, ranks;
    int (*sum)(void *ctx, double *x, int64_t n, BertcError *err);
    void *ctx;
} TrainCollective;

/* What to do with a step whose loss or any parameter gradient is not finite
 * (NaN or Inf). Either way the weights never see it. */
typedef enum TrainNanPolicy {
    TRAIN_NAN_STOP,           /* end the run with an error naming the first bad tensor */
    TRAIN_NAN_SKIP            /* warn (naming it), drop the step's gradients, go on */
} TrainNanPolicy;

typedef struct TrainOptions {
    int64_t steps;            /* optimizer steps in all */
    int64_t batch_size;
    double lr;                /* peak learning rate */
    double warmup;            /* fraction of steps spent warming up (linear) */
    ScheduleKind schedule;    /* after the warmup: SCHED_LINEAR (default) decays to 0 by the
                                 last step, SCHED_COSINE along a half cosine, SCHED_CONSTANT
                                 stays at lr (nn/nn.h, HF's get_*_schedule_with_warmup) */
    int64_t grad_accum;       /* micro-batches of batch_size summed into one optimizer step
                                 (1: none); a step sees batch_size * grad_accum examples and
                                 its gradient is their mean, as one big batch's */
    double weight_decay;      /* AdamW, on the weights of 2+ dimensions only (HF Trainer) */
    float clip_norm;          /* global gradient norm, <= 0: no clipping */
    int64_t eval_every;       /* steps between evaluations, 0: only at the end */
    uint64_t seed;            /* shuffling and dropout */
    const char *checkpoint;   /* path written every checkpoint_every steps and at the end */
    int64_t checkpoint_every;
    bool resume;              /* start from `checkpoint` if it exists */
    int64_t stop_after;       /* stop once this many steps are done, as if the run were
                                 killed there: no evaluation, no checkpoint beyond the
                                 periodic ones (0: run all steps) */
    bool quiet;               /* no progress output */
    bool bf16;                /* mixed precision (bertc_ag_set_bf16): bf16 Linear products,
                                 float32 weights, gradients and optimizer state */
    const char *loss_csv;     /* optional: "step,train_loss,eval_loss,metric" per eval */
    TrainNanPolicy nan_policy;/* default TRAIN_NAN_STOP */
    bool catch_signals;       /* SIGINT/SIGTERM end the run with a checkpoint
                                 (default true; see the top) */
    /* The task's own settings that decide its batches (bertc finetune:
     * max_len), recorded in the checkpoint beside the engine's fields and
     * compared the same way by --resume; at most TRAIN_MAX_TASK_FIELDS, keys
     * distinct from the engine's, values under 32 bytes. */
    const StMetadata *task_fields;
    int n_task_fields;
    /* Data-parallel training across processes (see TrainCollective above);
     * NULL, or one rank: this process alone. */
    const TrainCollective *collective;
} TrainOptions;

/* The ranges bertc_train_run accepts (and the flags parse): steps 1..TRAIN_MAX_STEPS,
 * batch size 1..TRAIN_MAX_BATCH, grad_accum 0..TRAIN_MAX_GRAD_ACCUM (0 is 1), lr
 * finite and > 0, warmup 0..1, weight decay finite and >= 0, eval_every and
 * checkpoint_every 0..TRAIN_MAX_STEPS. */
#define TRAIN_MAX_STEPS 1000000000LL
#define TRAIN_MAX_BATCH (1 << 20)
#define TRAIN_MAX_TASK_FIELDS 6
#define TRAIN_MAX_GRAD_ACCUM 4096

TrainOptions bertc_train_defaults(void);

/* One point of the loss curve. */
typedef struct TrainPoint {
    int64_t step;
    double train_loss;        /* mean over the steps since the previous point */
    double eval_loss, metric; /* NaN when there is no evaluation */
} TrainPoint;

#define TRAIN_MAX_POINTS 256

typedef struct TrainResult {
    int64_t steps_done;
    double final_train_loss;
    double final_metric, final_eval_loss;
    double seconds;
    double tokens_per_second;
    int n_points;
    TrainPoint points[TRAIN_MAX_POINTS];
    size_t step_arena_high_water;
    int64_t skipped_steps;    /* non-finite steps dropped (TRAIN_NAN_SKIP) */
    int interrupted;          /* SIGINT/SIGTERM that stopped the run, else 0 */
    bool stopped_early;       /* TrainTask.stop_early ended the run */
    int64_t checkpoint_step;  /* the steps the checkpoint file holds at the end (written or
                                 resumed from by this run), -1: none */
} TrainResult;

/* 0 when every step ran; -1 with err set on an error or an interruption
 * (res->interrupted tells which). */
int bertc_train_run(Model *m, const TrainTask *task, const TrainOptions *opt, TrainResult *res,
              BertcError *err);

/* What --resume does with the checkpoint st, from memory (a port without a
 * file system, and test/fuzz/fuzz_checkpoint.c, call it): check that it was
 * made by this run (the fields above, for this model, task and options) and
 * holds valid counters and values, then load the weights into m, the AdamW
 * state into adamw (made by bertc_optimizer_init for m), the dropout RNG into rng
 * and the steps done into *step. */
int bertc_train_load_checkpoint(Model *m, const TrainTask *task, const TrainOptions *opt,
                          const SafeTensors *st, Optimizer *adamw, Rng *rng, int64_t *step,
                          BertcError *err);

/* The signal that interrupted the last bertc_train_run of this process, else 0:
 * for main() to exit with 128 + it. */
int bertc_train_stop_signal(void);

/* The loss curve of res as an SVG file: train loss, and eval loss where
 * there is one, against the step (zoo/train/loss_curve.c). */
int bertc_svg_loss_curve(const char *path, const TrainResult *res, const char *title,
                         BertcError *err);
/* The same with the evaluations' metric (metric: its name, "accuracy",
 * "perplexity"...) on a right-hand axis and its best point marked (the
 * lowest for perplexity, MSE and losses, else the highest): bertc finetune's
 * and bertc pretrain's loss.svg. */
int bertc_svg_training_curve(const char *path, const TrainResult *res, const char *title,
                             const char *metric, BertcError *err);

/* The flags every example (and `bertc train NAME`) understands, applied on
 * top of the example's own defaults in *opt:
 *   --steps N  --batch-size N  --lr X  --seed N  --eval-every N
 *   --checkpoint PATH  --checkpoint-every N  --resume  --quiet  --out DIR
 *   --nan-policy stop|skip
 * *out_dir (may be NULL) receives --out (default left as given). Numbers
 * are parsed strictly (bertc_parse_*): the whole value, in decimal, within
 * the ranges above; --seed is any unsigned 64-bit integer without a sign;
 * --lr a finite number > 0. Anything else, and unknown flags, is an error
 * naming the flag and the value. */
int bertc_train_parse_flags(int argc, char **argv, TrainOptions *opt, const char **out_dir,
                      BertcError *err);

/* The example order of an epoch: a Fisher–Yates shuffle of 0..n-1 driven by
 * SplitMix64 seeded with seed + epoch (so a resumed run can recompute it). */
void bertc_train_epoch_order(int64_t *order, int64_t n, uint64_t seed, int64_t epoch);

/* True where this process writes the run's files: no collective, or rank 0. */
bool bertc_train_is_writer(const TrainOptions *opt);
/* Wait until every rank of opt's collective gets here (nothing without one):
 * rank 0 makes the output directory and the token cache before the others
 * read them. -1 with err set when a rank does not come. */
int bertc_train_barrier(const TrainOptions *opt, BertcError *err);

/* mkdir -p: create `path` and its missing parents (mode 0755). */
int bertc_train_make_dirs(const char *path, BertcError *err);
/* bertc_train_make_dirs, then create and remove a temporary file in dir: an
 * output directory that cannot be written is an error naming it before any
 * work is done. */
int bertc_train_check_out_dir(const char *dir, BertcError *err);
/* --out DIR of a run that writes a model directory (zoo/train/out_dir.c):
 * new or an empty directory; a non-empty one only with force, else an error
 * naming --force and what it does (force_does: "to replace the model files
 * in it"). An --out that exists and is not a directory is an error.
 * *nonempty (may be NULL) tells whether --out exists and holds something.
 * Writes nothing. */
int bertc_train_check_out_empty(const char *out, bool force, const char *force_does,
                                bool *nonempty, BertcError *err);

#endif /* BERTC_ZOO_TRAIN_H */
