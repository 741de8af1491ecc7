/* zoo/train/finetune_evaluate.c — bertc_evaluate (zoo/train/finetune.h): a
 * fine-tuned model directory scored on a labelled file, by the very
 * function that scores a fine-tuning run's held-out rows.
 *
 *   task       the model's head and problem_type -> the FinetuneKind a
 *              `bertc finetune --task` of it was;
 *   labels     the model's id2label in id order (a LabelSet that is not
 *              sorted), so a row's label is the model's id for it;
 *   rows       bertc_finetune_load_held_out: fine-tuning's readers, columns
 *              and row checks, every row held out (n_train 0);
 *   score      bertc_finetune_max_len (fine-tuning's default length), then
 *              bertc_finetune_evaluate_rows: the loss and the metrics;
 *   tables     the confusion matrix (rows: the true label, columns: the
 *              predicted one) and each class's precision, recall, F1 and
 *              support (bertc_metric_prf, the F1 macro-F1 averages). */
#include "zoo/train/finetune_internal.h"

#include <math.h>
#include <string.h>

/* The FinetuneKind that trained a model of this head and problem type. */
static int model_task(const ModelDir *d, FinetuneKind *kind, BertcError *err)
{
    const Model *m = &d->model;
    ModelTask task = m->arch->task;
    if (!m->arch->finetune_head || task == MODEL_TASK_MASKED_LM)
        return bertc_errorf(err, "%s: a %s model (%s), which bertc evaluate does not score: it "
                            "scores sequence classification, regression, token classification "
                            "and question answering models, as bertc finetune evaluates them",
                            d->dir, bertc_model_task_name(task), m->cfg.architecture);
    if (task == MODEL_TASK_TOKEN_CLS)
        *kind = FT_TOKEN_CLS;
    else if (task == MODEL_TASK_QA_SPAN)
        *kind = FT_QA;
    else if (m->cfg.problem_type == PROBLEM_REGRESSION ||
             (m->cfg.problem_type == PROBLEM_UNSET && m->cfg.num_labels == 1))
        *kind = FT_REGRESSION;   /* unset: as HF infers it, num_labels 1 -> regression */
    else if (m->cfg.problem_type == PROBLEM_MULTI_LABEL)
        *kind = FT_MULTI_LABEL;
    else
        *kind = FT_SEQ_CLS;
    return 0;
}

/* The model's labels in id order (HF's LABEL_i where config.json names
 * none); regression and qa have one, unnamed. */
static int model_labels(const Model *m, FinetuneKind kind, Arena *arena, LabelSet *s,
                        BertcError *err)
{
    if (kind == FT_REGRESSION || kind == FT_QA) {
        *s = (LabelSet){.n = 1};
        return 0;
    }
    int C = m->cfg.num_labels;
    if (C < 1 || C > LABELS_MAX)
        return bertc_errorf(err, "the model has %d labels (num_labels): 1..%d can be scored", C,
                            LABELS_MAX);
    *s = (LabelSet){.n = C, .names = bertc_arena_alloc(arena, sizeof(char *) * (size_t)C)};
    for (int c = 0; c < C; c++) {
        const char *name = bertc_bert_config_label(&m->cfg, c);
        if (!name) {
            char *own = bertc_arena_alloc(arena, 24);
            snprintf(own, 24, "LABEL_%d", c);
            name = own;
        }
        s->names[c] = name;
        s->unsorted |= c > 0 && strcmp(s->names[c - 1], name) >= 0;
    }
    return 0;
}

/* The (C, C) counts of [true, predicted]: seq-cls by row, token-cls by word. */
static int64_t *confusion(const FinetuneData *data, int C, Arena *arena)
{
    int64_t *m = bertc_arena_calloc(arena, (size_t)C * (size_t)C, sizeof *m);
    if (data->kind == FT_SEQ_CLS)
        for (int64_t i = 0; i < data->n; i++)
            m[data->label[i] * C + data->pred_class[i]]++;
    else
        for (int64_t w = 0; w < data->word_off[data->n]; w++)
            m[data->word_tag[w] * C + data->pred_tag[w]]++;
    return m;
}

/* Each class's precision, recall, F1 and support: from the confusion
 * matrix, or (multi-label) from the 0/1 cells of gold and predictions. */
static void per_class(const FinetuneData *data, EvaluateResult *r)
{
    int C = r->C;
    for (int c = 0; c < C; c++) {
        int64_t tp = 0, fp = 0, fn = 0;
        for (int k = 0; r->confusion && k < C; k++) {
            fp += k != c ? r->confusion[k * C + c] : 0;
            fn += k != c ? r->confusion[c * C + k] : 0;
        }
        if (r->confusion)
            tp = r->confusion[c * C + c];
        for (int64_t i = 0; !r->confusion && i < data->n; i++) {
            bool gold = data->gold_set[i * C + c], pred = data->pred_set[i * C + c];
            tp += gold && pred;
            fp += !gold && pred;
            fn += gold && !pred;
        }
        EvaluateClass *k = &r->per_class[c];
        k->label = data->labels.names[c];
        k->support = tp + fn;
        bertc_metric_prf(tp, fp, fn, &k->precision, &k->recall, &k->f1);
    }
}

static int check_options(const EvaluateOptions *o, BertcError *err)
{
    if (!o->model || !o->data_file == !o->data)
        return bertc_errorf(err, "evaluation: give model (a directory) and the rows as "
                            "data_file or data");
    if (o->max_len < 0 || o->max_len > INT32_MAX || o->batch_size < 0 ||
        o->batch_size > TRAIN_MAX_BATCH)
        return bertc_errorf(err, "evaluation: max_len %lld or batch_size %lld is out of range "
                            "(batch_size 0..%d)", (long long)o->max_len,
                            (long long)o->batch_size, TRAIN_MAX_BATCH);
    return 0;
}

/* The model directory and the rows, ready to score: data's examples, its
 * labels the model's, max_len, qa's windows. */
static int prepare(const EvaluateOptions *o, ModelDir *d, FinetuneData *data, Arena *arena,
                   BertcError *err)
{
    FinetuneOptions fo = bertc_finetune_defaults();
    FinetuneBase b = {0};
    char config[BERTC_PATH_MAX];
    if (bertc_model_dir_open(d, arena, o->model, err) != 0)
        return -1;
    if (!d->has_weights || !d->has_tokenizer)
        return bertc_errorf(err, "%s: no %s in the model directory (evaluate needs the trained "
                            "model and its tokenizer)", o->model,
                            d->has_weights ? "vocab.txt" : "model.safetensors");
    if (model_task(d, &fo.task, err) != 0 ||
        model_labels(&d->model, fo.task, arena, &data->labels, err) != 0)
        return -1;
    fo.eval_file = o->data_file;
    fo.eval_data = o->data;
    fo.text_column = o->text_column;
    fo.text_pair_column = o->text_pair_column;
    fo.label_column = o->label_column;
    fo.max_len = o->max_len;
    fo.stride = o->stride;
    data->aggregate = o->aggregate;
    data->labels_of = "the model";
    data->eval_batch = (int32_t)o->batch_size;
    if (bertc_finetune_load_held_out(&fo, data, arena, err) != 0)
        return -1;
    if (data->n < 1)
        return bertc_errorf(err, "%s: no rows to score", data->name);
    b = (FinetuneBase){.cfg = d->model.cfg, .tok = d->tok, .config_file = config,
                       .model_max_length = d->model_max_length};
    if (bertc_path_join(config, o->model, "config.json", "--model", err) != 0 ||
        bertc_finetune_max_len(&fo, &b, &d->model.cfg, data, err) != 0)
        return -1;
    data->tok = &d->tok;
    data->model = &d->model;
    if (o->stride >= 0 && fo.task != FT_SEQ_CLS && fo.task != FT_MULTI_LABEL &&
        fo.task != FT_REGRESSION)
        return bertc_errorf(err, "stride: the model is %s; windows of long texts are for "
                            "seq-cls, multi-label and regression models",
                            bertc_finetune_task_name(fo.task));
    return data->kind == FT_QA ? bertc_finetune_qa_windows(data, arena, err)
                               : bertc_finetune_text_windows(data, arena, err);
}

/* The scores of data's rows by the model, and the tables. */
static int score(ModelDir *d, FinetuneData *data, EvaluateResult *r, BertcError *err)
{
    EvalRecord rec;
    Graph *g = bertc_ag_graph_create(1 << 20, 0);
    bertc_ag_set_training(g, false);
    int rc = bertc_finetune_evaluate_rows(data, &d->model, g, &rec, err);
    bertc_ag_graph_destroy(g);
    if (rc != 0)
        return -1;
    r->task = data->kind;
    r->n = data->n;
    r->metric_name = bertc_finetune_metric_name(data->kind);
    r->metric = rec.metric[0];
    r->metric2_name = bertc_finetune_metric2_name(data->kind);
    r->metric2 = rec.metric[1];
    r->loss = rec.loss;
    r->max_len = data->max_len;
    bool rows = data->kind == FT_SEQ_CLS || data->kind == FT_MULTI_LABEL ||
                data->kind == FT_REGRESSION;
    if (rows && data->text_stride < 0) {   /* with windows nothing is cut */
        FinetuneLengths len;
        bertc_finetune_lengths(data, 0, data->n, &len);
        r->truncated = len.truncated;
    }
    if (data->kind == FT_REGRESSION || data->kind == FT_QA)
        return 0;
    r->C = data->labels.n;
    r->confusion = data->kind == FT_MULTI_LABEL ? NULL : confusion(data, r->C, r->arena);
    r->per_class = bertc_arena_alloc(r->arena, sizeof *r->per_class * (size_t)r->C);
    per_class(data, r);
    return 0;
}

int bertc_evaluate(const EvaluateOptions *o, EvaluateResult *r, BertcError *err)
{
    memset(r, 0, sizeof *r);
    r->metric = r->metric2 = r->loss = NAN;
    if (check_options(o, err) != 0)
        return -1;
    r->arena = bertc_arena_create("evaluate", 1 << 20);
    ModelDir *d = bertc_arena_calloc(r->arena, 1, sizeof *d);
    FinetuneData *data = bertc_arena_calloc(r->arena, 1, sizeof *data);
    *data = (FinetuneData){.best = -INFINITY, .best_eval = -1};
    /* the model, its label names included, lives in r->arena */
    int rc = prepare(o, d, data, r->arena, err) != 0 || score(d, data, r, err) != 0 ? -1 : 0;
    if (rc != 0)
        bertc_evaluate_free(r);
    return rc;
}

void bertc_evaluate_free(EvaluateResult *r)
{
    if (r->arena)
        bertc_arena_destroy(r->arena);
    r->arena = NULL;
    r->confusion = NULL;
    r->per_class = NULL;
}
