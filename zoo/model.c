/* zoo/model.c — the table of architectures and the Model life cycle. */
#include "zoo/zoo.h"

static const ModelArch *const architectures[ARCH_COUNT] = {
    [ARCH_BERT_MODEL] = &arch_bert_model,
    [ARCH_BERT_SEQCLS] = &arch_bert_seqcls,
    [ARCH_BERT_MLM] = &arch_bert_mlm,
    [ARCH_CGBERT] = &arch_cgbert,
    [ARCH_QACGBERT] = &arch_qacgbert,
    [ARCH_SUMMARIZER] = &arch_summarizer,
    [ARCH_QACONV] = &arch_qaconv,
    [ARCH_SPANBERT] = &arch_spanbert,
};

const ModelArch *zoo_arch(BertArch id)
{
    return (unsigned)id < ARCH_COUNT ? architectures[id] : NULL;
}

/* Each entry point below runs its work through bertc_try (tensor/tensor.h):
 * a config or a batch too big for the machine's memory, or an op that meets
 * shapes a missing check let through, is an error here, never an abort. */

typedef struct BuildCall {
    Model *m;
    Arena *arena;
    const BertConfig *cfg;
} BuildCall;

static int build(void *ctx, BertcError *err)
{
    BuildCall *c = ctx;
    c->m->reg = registry_create(c->arena, c->m->arch->name);
    c->m->impl = c->m->arch->build(c->m->reg, &c->m->cfg, err);
    return c->m->impl ? 0 : -1;
}

int model_build(Model *m, Arena *arena, const BertConfig *cfg, BertcError *err)
{
    const ModelArch *arch = zoo_arch(cfg->arch);
    if (!arch || !arch->build)
        return bertc_errorf(err, "architecture %s is not available in this build",
                            bert_arch_name(cfg->arch));
    m->cfg = *cfg;
    m->arch = arch;
    m->reg = NULL;
    m->impl = NULL;
    BuildCall c = {m, arena, cfg};
    return bertc_try(build, &c, err);
}

typedef struct ForwardCall {
    Model *m;
    Graph *g;
    const Batch *in;
    Outputs *out;
} ForwardCall;

static int forward(void *ctx, BertcError *err)
{
    ForwardCall *c = ctx;
    return c->m->arch->forward(c->m->impl, &c->m->cfg, c->g, c->in, c->out, err);
}

/* The forward runs on a shallow copy of the batch (the tensors are shared)
 * that records every name the model looks up; an input it never looked up
 * is then an error rather than silently ignored. */
int model_forward(Model *m, Graph *g, const Batch *in, Outputs *out, BertcError *err)
{
    BatchLookups asked = {0};
    Batch seen = *in;
    seen.lookups = &asked;
    ForwardCall c = {m, g, &seen, out};
    if (bertc_try(forward, &c, err) != 0)
        return -1;
    return batch_check_all_read(&seen, m->arch->name, err);
}

typedef struct BackwardCall {
    Graph *g;
    Var *loss;
} BackwardCall;

static int backward(void *ctx, BertcError *err)
{
    (void)err;
    BackwardCall *c = ctx;
    ag_backward(c->g, c->loss);
    return 0;
}

int model_backward(Graph *g, Var *loss, BertcError *err)
{
    BackwardCall c = {g, loss};
    return bertc_try(backward, &c, err);
}
