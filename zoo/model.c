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

int model_build(Model *m, Arena *arena, const BertConfig *cfg, BertcError *err)
{
    const ModelArch *arch = zoo_arch(cfg->arch);
    if (!arch || !arch->build)
        return bertc_errorf(err, "architecture %s is not available in this build",
                            bert_arch_name(cfg->arch));
    m->cfg = *cfg;
    m->arch = arch;
    m->reg = registry_create(arena, arch->name);
    m->impl = arch->build(m->reg, &m->cfg, err);
    return m->impl ? 0 : -1;
}

/* The forward runs on a shallow copy of the batch (the tensors are shared)
 * that records every name the model looks up; an input it never looked up
 * is then an error rather than silently ignored. */
int model_forward(Model *m, Graph *g, const Batch *in, Outputs *out, BertcError *err)
{
    BatchLookups asked = {0};
    Batch seen = *in;
    seen.lookups = &asked;
    if (m->arch->forward(m->impl, &m->cfg, g, &seen, out, err) != 0)
        return -1;
    return batch_check_all_read(&seen, m->arch->name, err);
}
