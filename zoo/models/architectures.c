/* zoo/models/architectures.c — the architectures bertc knows, one line each. An
 * architecture is its zoo file (keys, inputs, outputs, parameters, forward,
 * loss: a ModelArch) plus its line here. */
#include "zoo/zoo.h"

#include <string.h>

extern const ModelArch bertc_arch_bert_model, bertc_arch_bert_seqcls, bertc_arch_bert_mlm, bertc_arch_cgbert,
    bertc_arch_qacgbert, bertc_arch_summarizer, bertc_arch_qaconv, bertc_arch_spanbert, bertc_arch_bert_token_classification,
    bertc_arch_bert_question_answering, bertc_arch_bert_next_sentence, bertc_arch_bert_pretraining,
    bertc_arch_bert_multiple_choice;

static const ModelArch *const architectures[] = {
    &bertc_arch_bert_model,
    &bertc_arch_bert_seqcls,
    &bertc_arch_bert_mlm,
    &bertc_arch_cgbert,
    &bertc_arch_qacgbert,
    &bertc_arch_summarizer,
    &bertc_arch_qaconv,
    &bertc_arch_spanbert,
    &bertc_arch_bert_token_classification,
    &bertc_arch_bert_question_answering,
    &bertc_arch_bert_next_sentence,
    &bertc_arch_bert_pretraining,
    &bertc_arch_bert_multiple_choice,
};

#define N_ARCHITECTURES ((int)(sizeof architectures / sizeof architectures[0]))

const ModelArch *bertc_zoo_arch_at(int i)
{
    return i >= 0 && i < N_ARCHITECTURES ? architectures[i] : NULL;
}

const ModelArch *bertc_zoo_arch(const char *name)
{
    for (int i = 0; i < N_ARCHITECTURES; i++)
        if (strcmp(architectures[i]->name, name) == 0)
            return architectures[i];
    return NULL;
}

const InputSpec *bertc_model_input(const ModelArch *arch, int i)
{
    if (i < 0)
        return NULL;
    if (i < arch->n_shared_inputs)
        return &arch->shared_inputs[i];
    i -= arch->n_shared_inputs;
    return i < arch->n_inputs ? &arch->inputs[i] : NULL;
}

const OutputSpec *bertc_model_output(const ModelArch *arch, int i)
{
    if (i < 0)
        return NULL;
    if (i < arch->n_shared_outputs)
        return &arch->shared_outputs[i];
    i -= arch->n_shared_outputs;
    return i < arch->n_outputs ? &arch->outputs[i] : NULL;
}

bool bertc_output_name_matches(const char *declared, const char *name)
{
    while (*declared) {
        if (strncmp(declared, "{l}", 3) == 0 || strncmp(declared, "{i}", 3) == 0) {
            if (*name < '0' || *name > '9')
                return false;
            while (*name >= '0' && *name <= '9')
                name++;
            declared += 3;
        } else if (*declared++ != *name++) {
            return false;
        }
    }
    return *name == '\0';
}

const OutputSpec *bertc_model_output_named(const ModelArch *arch, const char *name)
{
    const OutputSpec *o;
    for (int i = 0; (o = bertc_model_output(arch, i)) != NULL; i++)
        if (bertc_output_name_matches(o->name, name))
            return o;
    return NULL;
}

bool bertc_model_reads_input(const ModelArch *arch, const char *name)
{
    for (int i = 0; bertc_model_input(arch, i); i++)
        if (strcmp(bertc_model_input(arch, i)->name, name) == 0)
            return true;
    return false;
}
