/* autograd/ops_loss.c — the losses of SPEC §3/§4, each a scalar, each summed
 * in double (a mean over thousands of float terms otherwise loses digits the
 * parity tests need). Semantics follow torch.nn.functional exactly. */
#include "autograd/ops_internal.h"

#include <math.h>
#include <string.h>

static Var *scalar_result(Graph *g, Var *input)
{
    return bertc_ag_result(g, 0, NULL, &input, 1);
}

static const float *copy_target(Graph *g, const Tensor *t)
{
    float *copy = bertc_arena_alloc(g->step, sizeof(float) * (size_t)(t->numel ? t->numel : 1));
    memcpy(copy, t->data, sizeof(float) * (size_t)t->numel);
    return copy;
}

static void check_target_shape(const char *op, Var *a, const Tensor *t)
{
    if (!bertc_shape_equal(a->value.ndim, a->value.shape, t->ndim, t->shape)) {
        char s[SHAPE_STR_LEN], u[SHAPE_STR_LEN];
        bertc_fatal("%s: input shape %s and target shape %s differ", op,
                    bertc_shape_str(s, sizeof s, a->value.ndim, a->value.shape),
                    bertc_shape_str(u, sizeof u, t->ndim, t->shape));
    }
}

/* log sum_j exp(z_j) of one row, in double, shifted by the max. */
static double row_logsumexp(const float *z, int64_t C)
{
    float max = z[0];
    for (int64_t j = 1; j < C; j++)
        max = z[j] > max ? z[j] : max;
    double sum = 0.0;
    for (int64_t j = 0; j < C; j++)
        sum += exp((double)z[j] - max);
    return max + log(sum);
}

/* CE = -(1/n) sum_{rows with target != ignore} log softmax(z)[target],
 * n = number of such rows. No row counted gives 0/0 = NaN, as PyTorch. */
Var *bertc_ag_cross_entropy(Graph *g, Var *logits, const ITensor *target, int ignore_index)
{
    const Tensor *Z = &logits->value;
    if (Z->ndim != 2 || target->ndim != 1 || target->shape[0] != Z->shape[0]) {
        char s[SHAPE_STR_LEN], t[SHAPE_STR_LEN];
        bertc_fatal("cross_entropy: logits %s need (N, C) and target %s (N)",
                    bertc_shape_str(s, sizeof s, Z->ndim, Z->shape),
                    bertc_shape_str(t, sizeof t, target->ndim, target->shape));
    }
    int64_t N = Z->shape[0], C = Z->shape[1], counted = 0;
    double total = 0.0;
    for (int64_t i = 0; i < N; i++) {
        int32_t t = target->data[i];
        if (t == ignore_index)
            continue;
        if (t < 0 || t >= C)
            bertc_fatal("cross_entropy: target %d at row %lld is outside [0, %lld)", (int)t,
                        (long long)i, (long long)C);
        total += row_logsumexp(Z->data + i * C, C) - Z->data[i * C + t];
        counted++;
    }
    Var *out = scalar_result(g, logits);
    out->value.data[0] = (float)(total / (double)counted);
    Node *node = bertc_ag_record(g, OP_CROSS_ENTROPY, out, &logits, 1);
    if (node) {
        int32_t *t = bertc_arena_alloc(g->step, sizeof(int32_t) * (size_t)(N ? N : 1));
        memcpy(t, target->data, sizeof(int32_t) * (size_t)N);
        node->attr.cross_entropy = (CrossEntropyAttrs){.target = t, .ignore_index = ignore_index,
                                                       .counted = counted};
    }
    return out;
}

/* dz_ij = dy (softmax(z_i)_j - [j == t_i]) / n for counted rows, 0 otherwise.
 * The softmax is recomputed here rather than stored: for a vocabulary-sized C
 * that saves a (N, C) buffer. */
void bertc_cross_entropy_backward(Graph *g, Node *node)
{
    Var *logits = node->in[0];
    if (!logits->requires_grad)
        return;
    const CrossEntropyAttrs *at = &node->attr.cross_entropy;
    const int32_t *target = at->target;
    int64_t N = logits->value.shape[0], C = logits->value.shape[1];
    float scale = node->out->grad[0] / (float)at->counted, *dz = bertc_ag_grad(g, logits);
    for (int64_t i = 0; i < N; i++) {
        if (target[i] == at->ignore_index)
            continue;
        const float *z = logits->value.data + i * C;
        double lse = row_logsumexp(z, C);
        for (int64_t j = 0; j < C; j++)
            dz[i * C + j] += scale * (float)exp((double)z[j] - lse);
        dz[i * C + target[i]] -= scale;
    }
}

/* BCE(p, y) = -(y max(ln p, -100) + (1-y) max(ln(1-p), -100)): PyTorch clamps
 * the logs at -100 so p = 0 or 1 gives a finite loss. */
Var *bertc_ag_bce(Graph *g, Var *p, const Tensor *target, bool reduction_sum)
{
    check_target_shape("bce", p, target);
    double total = 0.0;
    for (int64_t i = 0; i < p->value.numel; i++) {
        double x = p->value.data[i], y = target->data[i];
        double log_p = fmax(log(x), -100.0), log_1p = fmax(log(1.0 - x), -100.0);
        total -= y * log_p + (1.0 - y) * log_1p;
    }
    int64_t n = p->value.numel;
    Var *out = scalar_result(g, p);
    out->value.data[0] = (float)(reduction_sum ? total : total / (double)n);
    Node *node = bertc_ag_record(g, OP_BCE, out, &p, 1);
    if (node)
        node->attr.bce = (BceAttrs){.target = copy_target(g, target),
                                    .scale = reduction_sum ? 1.0f : 1.0f / (float)n};
    return out;
}

/* PyTorch's BCE backward: (p - y) / max(p (1 - p), 1e-12), times the
 * reduction scale. The clamp keeps p = 0 or 1 finite. */
void bertc_bce_backward(Graph *g, Node *node)
{
    Var *p = node->in[0];
    if (!p->requires_grad)
        return;
    const float *y = node->attr.bce.target;
    float scale = node->out->grad[0] * node->attr.bce.scale, *dp = bertc_ag_grad(g, p);
    for (int64_t i = 0; i < p->value.numel; i++) {
        float x = p->value.data[i];
        float denom = fmaxf(x * (1.0f - x), 1e-12f);
        dp[i] += scale * (x - y[i]) / denom;
    }
}

/* mean of max(z,0) - z y + log(1 + exp(-|z|)): the stable form of
 * BCE(sigmoid(z), y), never overflowing exp. */
Var *bertc_ag_bce_with_logits(Graph *g, Var *z, const Tensor *target)
{
    check_target_shape("bce_with_logits", z, target);
    double total = 0.0;
    for (int64_t i = 0; i < z->value.numel; i++) {
        double x = z->value.data[i], y = target->data[i];
        total += fmax(x, 0.0) - x * y + log1p(exp(-fabs(x)));
    }
    Var *out = scalar_result(g, z);
    out->value.data[0] = (float)(total / (double)z->value.numel);
    Node *node = bertc_ag_record(g, OP_BCE_WITH_LOGITS, out, &z, 1);
    if (node)
        node->attr.target.target = copy_target(g, target);
    return out;
}

/* d/dz = (sigmoid(z) - y) / n */
void bertc_bce_with_logits_backward(Graph *g, Node *node)
{
    Var *z = node->in[0];
    if (!z->requires_grad)
        return;
    const float *y = node->attr.target.target;
    float scale = node->out->grad[0] / (float)z->value.numel, *dz = bertc_ag_grad(g, z);
    for (int64_t i = 0; i < z->value.numel; i++) {
        double s = 1.0 / (1.0 + exp(-(double)z->value.data[i]));
        dz[i] += scale * (float)(s - y[i]);
    }
}

/* mean of (a - t)^2 */
Var *bertc_ag_mse(Graph *g, Var *a, const Tensor *target)
{
    check_target_shape("mse", a, target);
    double total = 0.0;
    for (int64_t i = 0; i < a->value.numel; i++) {
        double d = (double)a->value.data[i] - target->data[i];
        total += d * d;
    }
    Var *out = scalar_result(g, a);
    out->value.data[0] = (float)(total / (double)a->value.numel);
    Node *node = bertc_ag_record(g, OP_MSE, out, &a, 1);
    if (node)
        node->attr.target.target = copy_target(g, target);
    return out;
}

/* d/da = 2 (a - t) / n */
void bertc_mse_backward(Graph *g, Node *node)
{
    Var *a = node->in[0];
    if (!a->requires_grad)
        return;
    const float *t = node->attr.target.target;
    float scale = 2.0f * node->out->grad[0] / (float)a->value.numel, *da = bertc_ag_grad(g, a);
    for (int64_t i = 0; i < a->value.numel; i++)
        da[i] += scale * (a->value.data[i] - t[i]);
}
