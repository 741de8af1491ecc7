/* zoo/models/architectures.c — the architectures bertc knows, one line each. An
 * architecture is its zoo file (keys, inputs, outputs, parameters, forward,
 * loss, task, explain steps: a ModelArch) plus its line in the list below;
 * nothing outside zoo/models/ names it (test/test_arch_names.c). */
#include "zoo/zoo.h"

#include <string.h>

/* The list, X(the C name of the file's ModelArch), in the order `bertc help`
 * and the listings show them. A new architecture is one line here. The list
 * declares each one (extern) and fills the table with it and its C name. */
#define BERTC_ARCHITECTURES(X)                 \
    X(bertc_arch_bert_model)                   \
    X(bertc_arch_bert_seqcls)                  \
    X(bertc_arch_bert_mlm)                     \
    X(bertc_arch_cgbert)                       \
    X(bertc_arch_qacgbert)                     \
    X(bertc_arch_summarizer)                   \
    X(bertc_arch_qaconv)                       \
    X(bertc_arch_spanbert)                     \
    X(bertc_arch_bert_token_classification)    \
    X(bertc_arch_bert_question_answering)      \
    X(bertc_arch_bert_next_sentence)           \
    X(bertc_arch_bert_pretraining)             \
    X(bertc_arch_bert_multiple_choice)         \
    /* end of the architectures */

#define DECLARE(symbol) extern const ModelArch symbol;
BERTC_ARCHITECTURES(DECLARE)

#define ENTRY(symbol) {&symbol, #symbol},
static const struct {
    const ModelArch *arch;
    const char *symbol;
} architectures[] = {BERTC_ARCHITECTURES(ENTRY)};

#define N_ARCHITECTURES ((int)(sizeof architectures / sizeof architectures[0]))

const ModelArch *bertc_zoo_arch_at(int i)
{
    return i >= 0 && i < N_ARCHITECTURES ? architectures[i].arch : NULL;
}

const ModelArch *bertc_zoo_arch(const char *name)
{
    for (int i = 0; i < N_ARCHITECTURES; i++)
        if (strcmp(architectures[i].arch->name, name) == 0)
            return architectures[i].arch;
    return NULL;
}

const ModelArch *bertc_zoo_arch_for_task(ModelTask task)
{
    for (int i = 0; i < N_ARCHITECTURES; i++)
        if (architectures[i].arch->finetune_head && architectures[i].arch->task == task)
            return architectures[i].arch;
    return NULL;
}

const ModelArch *bertc_zoo_arch_for_pretraining(ModelPretraining objective)
{
    for (int i = 0; i < N_ARCHITECTURES; i++)
        if (objective != MODEL_PRETRAIN_NONE &&
            architectures[i].arch->pretraining == objective)
            return architectures[i].arch;
    return NULL;
}

const char *bertc_zoo_arch_symbol(const ModelArch *arch)
{
    for (int i = 0; i < N_ARCHITECTURES; i++)
        if (architectures[i].arch == arch)
            return architectures[i].symbol;
    return NULL;
}

const char *bertc_model_task_name(ModelTask task)
{
    switch (task) {
    case MODEL_TASK_ENCODER: return "encoder";
    case MODEL_TASK_SEQ_CLS: return "sequence classification";
    case MODEL_TASK_TOKEN_CLS: return "token classification";
    case MODEL_TASK_QA_SPAN: return "question answering";
    case MODEL_TASK_MASKED_LM: return "fill-mask";
    case MODEL_TASK_SUMMARIZATION: return "extractive summarization";
    case MODEL_TASK_MULTIPLE_CHOICE: return "multiple choice";
    case MODEL_TASK_PRETRAINING: return "pre-training";
    }
    return "unknown";
}

const ModelExplain *bertc_model_explain(const ModelArch *arch)
{
    static const ModelExplain generic = {
        .mechanism = "A BERT encoder with its own head.",
        .encoder = bertc_bert_encoder_steps, .n_encoder = BERT_N_ENCODER_STEPS,
    };
    return arch->explain ? arch->explain : &generic;
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
