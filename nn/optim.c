/* nn/optim.c — SGD, Adam, AdamW with torch.optim's exact update order,
 * global-norm clipping and the Hugging Face LR schedules. */
#include "nn/nn.h"

#include <math.h>

OptimizerConfig bertc_optimizer_defaults(OptimizerKind kind, double lr)
{
    OptimizerConfig c = {.kind = kind, .lr = lr, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8};
    if (kind == OPT_ADAMW)
        c.weight_decay = 0.01;   /* torch.optim.AdamW's default */
    return c;
}

static bool trainable(const Param *p)
{
    return p->alias_of < 0 && !p->buffer && p->var->requires_grad;
}

/* The weight decay of parameter p: none for a vector (a bias, a LayerNorm
 * weight or bias) when the config asks for HF Trainer's groups. In a BERT the
 * vectors are exactly the parameters HF leaves out by name. */
static double weight_decay_of(const OptimizerConfig *c, const Param *p)
{
    return c->no_decay_vectors && p->var->value.ndim < 2 ? 0.0 : c->weight_decay;
}

void bertc_optimizer_init(Optimizer *o, Registry *r, OptimizerConfig cfg)
{
    o->cfg = cfg;
    o->reg = r;
    o->step = 0;
    o->state1 = bertc_arena_calloc(r->arena, (size_t)r->n_params, sizeof(float *));
    o->state2 = bertc_arena_calloc(r->arena, (size_t)r->n_params, sizeof(float *));
    bool adam = cfg.kind != OPT_SGD;
    for (int i = 0; i < r->n_params; i++) {
        if (!trainable(&r->params[i]))
            continue;
        size_t n = (size_t)r->params[i].var->value.numel;
        if (adam || cfg.momentum != 0.0f)
            o->state1[i] = bertc_arena_calloc(r->arena, n, sizeof(float));
        if (adam)
            o->state2[i] = bertc_arena_calloc(r->arena, n, sizeof(float));
    }
}

/* grad is NULL for a parameter no backward has reached yet: zeros, so the
 * update is the same as with an eagerly allocated zero gradient.
 * torch.optim.SGD: d = g + wd p; buf = momentum buf + (1 - dampening) d
 * (buf = d on the first step); d = nesterov ? d + momentum buf : buf. */
static void sgd_update(const OptimizerConfig *c, double weight_decay, float *p, const float *grad,
                       float *buf, int64_t n, double lr, bool first_step)
{
    float wd = (float)weight_decay, momentum = (float)c->momentum;
    float keep = (float)(1.0 - c->dampening), neg_lr = (float)-lr;
    for (int64_t i = 0; i < n; i++) {
        float d = grad ? grad[i] : 0.0f;
        if (wd != 0.0f)
            d += wd * p[i];
        if (buf) {
            buf[i] = first_step ? d : buf[i] * momentum + keep * d;
            d = c->nesterov ? d + momentum * buf[i] : buf[i];
        }
        p[i] += neg_lr * d;
    }
}

/* torch.optim.Adam / AdamW (single-tensor path, PyTorch 1.13):
 *   AdamW: p *= 1 - lr wd            Adam: g += wd p
 *   m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2
 *   p -= (lr / (1 - b1^t)) m / (sqrt(v) / sqrt(1 - b2^t) + eps)
 * The bias corrections are computed in double, as Python does. */
static void adam_update(const OptimizerConfig *c, double weight_decay, float *p, const float *grad,
                        float *m, float *v, int64_t n, double lr, int64_t t)
{
    double bc1 = 1.0 - pow(c->beta1, (double)t), bc2 = 1.0 - pow(c->beta2, (double)t);
    AdamStep s = {
        .b1 = (float)c->beta1, .one_minus_b1 = (float)(1.0 - c->beta1),
        .b2 = (float)c->beta2, .one_minus_b2 = (float)(1.0 - c->beta2),
        .neg_step = (float)(-lr / bc1), .bc2_sqrt = (float)sqrt(bc2), .eps = (float)c->eps,
        .decay = (float)(1.0 - lr * weight_decay), .wd = (float)weight_decay,
        .decoupled = c->kind == OPT_ADAMW,
    };
    bertc_kernel_adam(p, grad, m, v, n, &s);   /* tensor/kernels.c: the loop, and its SIMD twin */
}

void bertc_optimizer_step(Optimizer *o, double lr)
{
    bertc_registry_require_unpacked(o->reg, "bertc_optimizer_step");
    Registry *r = o->reg;
    o->step++;
    for (int i = 0; i < r->n_params; i++) {
        const Param *p = &r->params[i];
        if (!trainable(p))
            continue;
        Var *v = p->var;
        double wd = weight_decay_of(&o->cfg, p);
        if (o->cfg.kind == OPT_SGD)
            sgd_update(&o->cfg, wd, v->value.data, v->grad, o->state1[i], v->value.numel, lr,
                       o->step == 1);
        else
            adam_update(&o->cfg, wd, v->value.data, v->grad, o->state1[i], o->state2[i],
                        v->value.numel, lr, o->step);
    }
}

void bertc_scale_grads(Registry *r, float factor)
{
    for (int i = 0; i < r->n_params; i++) {
        const Param *p = &r->params[i];
        if (!trainable(p) || !p->var->grad)
            continue;
        for (int64_t k = 0; k < p->var->value.numel; k++)
            p->var->grad[k] *= factor;
    }
}

float bertc_clip_grad_norm(Registry *r, float max_norm)
{
    double sum = 0.0;
    for (int i = 0; i < r->n_params; i++) {
        const Param *p = &r->params[i];
        if (!trainable(p) || !p->var->grad)
            continue;
        for (int64_t k = 0; k < p->var->value.numel; k++)
            sum += (double)p->var->grad[k] * p->var->grad[k];
    }
    float total = (float)sqrt(sum);
    float coef = max_norm / (total + 1e-6f);
    if (coef < 1.0f)
        for (int i = 0; i < r->n_params; i++) {
            const Param *p = &r->params[i];
            if (!trainable(p) || !p->var->grad)
                continue;
            for (int64_t k = 0; k < p->var->value.numel; k++)
                p->var->grad[k] *= coef;
        }
    return total;
}

double bertc_schedule_lr(const Schedule *s, int64_t step)
{
    if (s->kind == SCHED_CONSTANT)
        return s->base_lr;
    if (step < s->warmup_steps)
        return s->base_lr * (double)step / (double)(s->warmup_steps > 1 ? s->warmup_steps : 1);
    double span = (double)(s->total_steps - s->warmup_steps);
    double progress = span > 0 ? (double)(step - s->warmup_steps) / span : 1.0;
    if (s->kind == SCHED_LINEAR)
        return s->base_lr * fmax(0.0, 1.0 - progress);
    /* cosine with num_cycles = 0.5: from base_lr down to 0 over the decay */
    return s->base_lr * fmax(0.0, 0.5 * (1.0 + cos(3.14159265358979323846 * progress)));
}
