/* zoo/train/train_collective.c — what the ranks of a data-parallel run add
 * up (zoo/train/train.h, TrainCollective).
 *
 * Each step every rank has the gradient of its own slice of the batch, each
 * seeded with its weight (labelled tokens, or 1). One sum over the ranks
 * gives every rank the sum of them all, in the same bits; divided by the
 * summed weight (train.c, one_step) it is the gradient of the whole batch:
 *
 *     g = (sum over ranks r of w_r g_r) / (sum over ranks r of w_r)
 *
 * The gradients travel as doubles: the sum of a few float32 values is
 * nearly exact in double, so the gradient the step sees is the exact sum
 * rounded once to float32, whatever order the collective adds in. */
#include "zoo/train/train_collective.h"

#include <string.h>

int64_t bertc_train_flat_size(const Registry *reg)
{
    int64_t n = STEP_SUMS;
    for (int i = 0; i < reg->n_params; i++)
        if (reg->params[i].alias_of < 0)
            n += reg->params[i].var->value.numel;
    return n;
}

/* grads: the gradients (a parameter without one counts as zeros), else the
 * weights; to_flat: registry -> flat, else back. Returns the doubles used. */
static int64_t copy_params(Registry *reg, double *flat, bool grads, bool to_flat)
{
    int64_t at = 0;
    for (int i = 0; i < reg->n_params; i++) {
        Param *p = &reg->params[i];
        if (p->alias_of >= 0)
            continue;
        int64_t n = p->var->value.numel;
        float *x = grads ? p->var->grad : p->var->value.data;
        for (int64_t k = 0; k < n; k++) {
            if (to_flat)
                flat[at + k] = x ? (double)x[k] : 0.0;
            else if (x)
                x[k] = (float)flat[at + k];
        }
        at += n;
    }
    return at;
}

int bertc_train_sum_step(const TrainCollective *co, Registry *reg, double *flat, StepSums *s,
                         BertcError *err)
{
    int64_t at = copy_params(reg, flat, true, true);
    double *sums = flat + at;
    sums[0] = s->loss, sums[1] = s->weight, sums[2] = s->tokens, sums[3] = s->bad,
    sums[4] = s->stop;
    if (co->sum(co->ctx, flat, at + STEP_SUMS, err) != 0)
        return -1;
    copy_params(reg, flat, true, false);
    *s = (StepSums){sums[0], sums[1], sums[2], sums[3], sums[4]};
    return 0;
}

int bertc_train_share_weights(const TrainCollective *co, Registry *reg, double *flat,
                              BertcError *err)
{
    int64_t n = bertc_train_flat_size(reg);
    if (co->rank == 0)
        copy_params(reg, flat, false, true);
    else
        memset(flat, 0, sizeof(double) * (size_t)n);
    if (co->sum(co->ctx, flat, n, err) != 0)
        return -1;
    copy_params(reg, flat, false, false);
    return 0;
}

int bertc_train_agree(const TrainCollective *co, bool *flag, BertcError *err)
{
    double x = co->rank == 0 && *flag ? 1.0 : 0.0;
    if (co->sum(co->ctx, &x, 1, err) != 0)
        return -1;
    *flag = x > 0.5;
    return 0;
}

bool bertc_train_is_writer(const TrainOptions *opt)
{
    return !opt->collective || opt->collective->rank == 0;
}

int bertc_train_barrier(const TrainOptions *opt, BertcError *err)
{
    const TrainCollective *co = opt->collective;
    double x = 1.0;
    return co && co->ranks > 1 ? co->sum(co->ctx, &x, 1, err) : 0;
}
