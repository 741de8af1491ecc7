/* zoo/architectures.c — the architectures bertc knows, one line each. An
 * architecture is its zoo file (keys, inputs, outputs, parameters, forward,
 * loss: a ModelArch) plus its line here. */
#include "zoo/zoo.h"

#include <string.h>

extern const ModelArch arch_bert_model, arch_bert_seqcls, arch_bert_mlm, arch_cgbert,
    arch_qacgbert, arch_summarizer, arch_qaconv, arch_spanbert, arch_bert_token_classification,
    arch_bert_question_answering, arch_bert_next_sentence, arch_bert_pretraining,
    arch_bert_multiple_choice;

static const ModelArch *const architectures[] = {
    &arch_bert_model,
    &arch_bert_seqcls,
    &arch_bert_mlm,
    &arch_cgbert,
    &arch_qacgbert,
    &arch_summarizer,
    &arch_qaconv,
    &arch_spanbert,
    &arch_bert_token_classification,
    &arch_bert_question_answering,
    &arch_bert_next_sentence,
    &arch_bert_pretraining,
    &arch_bert_multiple_choice,
};

#define N_ARCHITECTURES ((int)(sizeof architectures / sizeof architectures[0]))

const ModelArch *zoo_arch_at(int i)
{
    return i >= 0 && i < N_ARCHITECTURES ? architectures[i] : NULL;
}

const ModelArch *zoo_arch(const char *name)
{
    for (int i = 0; i < N_ARCHITECTURES; i++)
        if (strcmp(architectures[i]->name, name) == 0)
            return architectures[i];
    return NULL;
}

const InputSpec *model_input(const ModelArch *arch, int i)
{
    if (i < 0)
        return NULL;
    if (i < arch->n_shared_inputs)
        return &arch->shared_inputs[i];
    i -= arch->n_shared_inputs;
    return i < arch->n_inputs ? &arch->inputs[i] : NULL;
}

const OutputSpec *model_output(const ModelArch *arch, int i)
{
    if (i < 0)
        return NULL;
    if (i < arch->n_shared_outputs)
        return &arch->shared_outputs[i];
    i -= arch->n_shared_outputs;
    return i < arch->n_outputs ? &arch->outputs[i] : NULL;
}
