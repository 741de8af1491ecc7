/* zoo/train/train_collective.h — the data-parallel pieces of the training
 * engine (zoo/train/train_collective.c), for zoo/train/train.c only. The
 * collective itself, and what a run on several ranks means, are in
 * zoo/train/train.h (TrainCollective). */
#ifndef BERTC_ZOO_TRAIN_COLLECTIVE_H
#define BERTC_ZOO_TRAIN_COLLECTIVE_H

#include "zoo/train/train.h"

/* What the ranks add up at the end of a step besides the gradients. */
typedef struct StepSums {
    double loss;     /* sum over micro-batches of loss x weight */
    double weight;   /* the weights: labelled tokens (TrainTask.loss_items), else 1 each */
    double tokens;   /* real tokens read, for tokens/s */
    double bad;      /* ranks whose loss was not finite */
    double stop;     /* ranks that got SIGINT or SIGTERM */
} StepSums;

#define STEP_SUMS 5

/* The doubles one sum of a step needs: every parameter's gradient once
 * (tied aliases share their owner's) and the StepSums. */
int64_t bertc_train_flat_size(const Registry *reg);

/* The step's sum over the ranks, through flat (bertc_train_flat_size
 * doubles): the gradients in, added up, back into the gradients (now the
 * sums of every rank's), and *s likewise. */
int bertc_train_sum_step(const TrainCollective *co, Registry *reg, double *flat, StepSums *s,
                         BertcError *err);

/* Rank 0's weights to every rank (the others add zeros). */
int bertc_train_share_weights(const TrainCollective *co, Registry *reg, double *flat,
                              BertcError *err);

/* *flag becomes rank 0's on every rank. */
int bertc_train_agree(const TrainCollective *co, bool *flag, BertcError *err);

#endif /* BERTC_ZOO_TRAIN_COLLECTIVE_H */
