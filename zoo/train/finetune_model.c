/* zoo/train/finetune_model.c — the model a fine-tuning run trains: the base
 * it starts from (a pretrained model directory, or a config and a
 * vocabulary from scratch) with the task's head on top, the examples'
 * length checked against it.
 *
 * The head is Hugging Face's for the task: BertForSequenceClassification
 * with num_labels, problem_type and id2label from the label set (seq-cls,
 * multi-label, regression), BertForTokenClassification, BertForQuestionAnswering
 * or BertForMaskedLM; the encoder's keys are the base's. From a pretrained
 * directory the encoder's weights are loaded and the new head keeps its
 * fresh init, drawn from the run's seed, as from_pretrained does. */
#include "zoo/train/finetune_internal.h"

#include <string.h>

/* --model DIR: its config, tokenizer (tokenizer_config.json applied) and
 * weights; --config (a file or in memory) + --vocab: those. */
int bertc_finetune_open_base(const FinetuneOptions *o, FinetuneBase *b, BertcError *err)
{
    b->weights[0] = '\0';
    b->arena = bertc_arena_create("base model", 1 << 20);
    if (o->config) {   /* the caller's: its label names stay its own (head_config sets them) */
        b->cfg = *o->config;
        b->cfg.n_label_names = 0;
        b->cfg.label_spill = NULL;
        b->cfg.label_heap = false;
    }
    if (o->config || o->config_file) {
        b->config_file = o->config_file;
        return (o->config_file && bertc_bert_config_read(o->config_file, &b->cfg, err) != 0) ||
                       bertc_tokenizer_load(&b->tok, b->arena, o->vocab, err) != 0
                   ? -1
                   : 0;
    }
    ModelDir *d = bertc_arena_alloc(b->arena, sizeof *d);
    if (bertc_model_dir_open(d, b->arena, o->model, err) != 0)
        return -1;
    if (!d->has_tokenizer)
        return bertc_errorf(err, "%s: no vocab.txt in the model directory (finetune needs the "
                            "tokenizer)", o->model);
    b->cfg = d->model.cfg;
    b->tok = d->tok;
    b->model_max_length = d->model_max_length;
    char *config = bertc_arena_alloc(b->arena, BERTC_PATH_MAX);
    b->config_file = config;
    if (bertc_path_join(config, o->model, "config.json", "--model", err) != 0)
        return -1;
    if (d->has_weights)
        return bertc_path_join(b->weights, o->model, "model.safetensors", "--model", err);
    return 0;
}

void bertc_finetune_close_base(FinetuneBase *b)
{
    if (b->arena)
        bertc_arena_destroy(b->arena);
    bertc_bert_config_free(&b->cfg);
}

/* The head the task trains (ModelArch.finetune_head): the base's own
 * architecture when it is one for the task, else the table's. */
static const ModelArch *head_arch(const FinetuneBase *b, FinetuneKind kind, BertcError *err)
{
    ModelTask task = kind == FT_MLM ? MODEL_TASK_MASKED_LM : kind == FT_QA ? MODEL_TASK_QA_SPAN
                     : kind == FT_TOKEN_CLS ? MODEL_TASK_TOKEN_CLS : MODEL_TASK_SEQ_CLS;
    const ModelArch *own = bertc_zoo_arch(b->cfg.architecture);
    if (own && own->finetune_head && own->task == task)
        return own;
    const ModelArch *head = bertc_zoo_arch_for_task(task);
    if (!head)
        bertc_errorf(err, "no architecture is a fine-tuning head for %s",
                     bertc_model_task_name(task));
    return head;
}

/* The base config as the task's head with the task's labels: num_labels,
 * problem_type, id2label, a pooler (the sequence head reads it). */
static int head_config(const FinetuneBase *b, const FinetuneData *data, BertConfig *cfg,
                       BertcError *err)
{
    BertConfig fresh;
    const ModelArch *head = head_arch(b, data->kind, err);
    if (!head || bertc_model_config_default(&fresh, head->name, err) != 0)
        return -1;
    *cfg = b->cfg;   /* keep the encoder's keys; take the head's name and own keys */
    memcpy(cfg->architecture, fresh.architecture, sizeof cfg->architecture);
    if (strcmp(cfg->architecture, b->cfg.architecture) != 0)   /* a new head: its defaults */
        cfg->model = fresh.model;
    cfg->add_pooling_layer = true;
    cfg->bf16 = false;        /* a bf16 base trains in float32, into a float32 model */
    cfg->n_label_names = 0;   /* the base's names stay the base's (b frees them) */
    cfg->label_spill = NULL;
    cfg->label_heap = false;
    if (data->kind == FT_MLM) {   /* no pooler, as HF's masked-LM head */
        cfg->add_pooling_layer = false;
        cfg->problem_type = PROBLEM_UNSET;
    } else if (data->kind == FT_QA) {   /* no pooler, as HF's span head */
        cfg->add_pooling_layer = false;
        cfg->num_labels = 2;
        cfg->problem_type = PROBLEM_UNSET;
    } else if (data->kind == FT_TOKEN_CLS) {   /* no pooler, as HF's token classifier */
        cfg->add_pooling_layer = false;
        cfg->num_labels = data->labels.n;
        cfg->problem_type = PROBLEM_UNSET;
        if (bertc_bert_config_set_labels(cfg, data->labels.names, data->labels.n, err) != 0)
            return -1;
    } else if (data->kind == FT_REGRESSION) {
        cfg->num_labels = 1;
        cfg->problem_type = PROBLEM_REGRESSION;
    } else {
        cfg->num_labels = data->labels.n;
        cfg->problem_type = data->kind == FT_SEQ_CLS ? PROBLEM_SINGLE_LABEL : PROBLEM_MULTI_LABEL;
        if (bertc_bert_config_set_labels(cfg, data->labels.names, data->labels.n, err) != 0)
            return -1;
    }
    if (b->tok.V > cfg->vocab_size)
        return bertc_errorf(err, "%s has %d tokens but the config's vocab_size is %d",
                            b->tok.name, (int)b->tok.V, cfg->vocab_size);
    if (!b->weights[0] && b->tok.V < cfg->vocab_size)   /* rows no token could ever reach */
        return bertc_errorf(err, "%s has %d tokens but the config's vocab_size is %d: set "
                            "vocab_size to %d for a model trained from scratch", b->tok.name,
                            (int)b->tok.V, cfg->vocab_size, (int)b->tok.V);
    return 0;
}

/* Build, draw the init (seed), load the encoder from the base weights. */
static int build_model(const FinetuneBase *b, const BertConfig *cfg, uint64_t seed, Model *m,
                       Arena *arena, BertcError *err)
{
    if (cfg->int8_dynamic)
        return bertc_errorf(err, "%s: the model is quantised to int8 (its config.json has a "
                            "quantization_config), which is for inference only: fine-tune its "
                            "float32 original", b->weights[0] ? b->weights : "--model");
    if (bertc_model_build(m, arena, cfg, err) != 0)
        return -1;
    Rng init = bertc_rng_seed(seed);
    bertc_registry_init_weights(m->reg, &init, cfg->initializer_range);
    if (!b->weights[0])
        return 0;
    /* the missing keys (the new head) are listed by the loader's warning */
    return bertc_model_load(m, b->weights, true, err);
}

/* The examples' length: --max-len, at most max_position_embeddings (the
 * default is lowered to it; a --max-len given above it is refused); refused
 * in one line naming what set it when that leaves no room for the special
 * tokens of the rows (3 when they have a pair); qa's --doc-stride as given. */
int bertc_finetune_max_len(const FinetuneOptions *o, const FinetuneBase *b, const BertConfig *cfg,
                           FinetuneData *data, BertcError *err)
{
    int64_t positions = cfg->max_position_embeddings;
    int64_t wanted = o->max_len ? o->max_len : FINETUNE_MAX_LEN;
    if (o->max_len && o->max_len > positions)
        return bertc_errorf(err, "--max-len %lld is more than the model's "
                            "max_position_embeddings (%lld)", (long long)o->max_len,
                            (long long)positions);
    MaxLen m = {.n = (int32_t)wanted, .key = "--max-len"};
    if (!o->max_len && b->model_max_length > 0)   /* the model directory's own length */
        wanted = b->model_max_length < FINETUNE_MAX_LEN_MODEL ? b->model_max_length
                                                               : FINETUNE_MAX_LEN_MODEL;
    /* the directory's model_max_length is at most its positions (a limit the
     * positions set is named as theirs) */
    if (!o->max_len && b->model_max_length > 0 && wanted < positions)
        m = (MaxLen){.n = (int32_t)wanted, .key = "model_max_length",
                     .file = "tokenizer_config.json"};
    else if (positions <= wanted && !(o->max_len && positions == wanted))
        m = (MaxLen){.n = (int32_t)positions, .key = "max_position_embeddings",
                     .file = b->config_file};
    int specials = 2;
    for (int64_t i = 0; i < data->n; i++)
        if (data->ex[i].text_pair)
            specials = 3;
    data->max_len = m.n;
    data->doc_stride = (int32_t)o->doc_stride;
    data->text_stride = (int32_t)o->stride;
    return bertc_max_len_room(&m, specials, err);
}

int bertc_finetune_build_model(const FinetuneOptions *o, const FinetuneBase *b,
                               FinetuneData *data, Model *m, Arena *arena, BertcError *err)
{
    BertConfig cfg = {0};
    int rc = head_config(b, data, &cfg, err) != 0 ||
             bertc_finetune_max_len(o, b, &cfg, data, err) != 0 ||
             build_model(b, &cfg, o->train.seed, m, arena, err) != 0;
    bertc_bert_config_free(&cfg);   /* the model keeps its own copy of the label names */
    return rc ? -1 : 0;
}
