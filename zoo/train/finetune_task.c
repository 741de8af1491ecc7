/* zoo/train/finetune_task.c — labelled rows as the training engine's task
 * (zoo/train/train.h): batches come from the architecture's batch_from_text (the
 * library's texts -> batch) plus the labels; evaluation scores the held-out
 * rows with the task's metrics (zoo/train/metrics.c), keeps the best model and
 * notices a plateau. */
#include "zoo/train/finetune_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define EVAL_BATCH 32

const char *bertc_finetune_metric_name(FinetuneKind kind)
{
    static const char *const names[] = {"accuracy", "micro_f1", "pearson", "entity_f1", "f1",
                                        "perplexity"};
    return names[kind];
}

const char *bertc_finetune_metric2_name(FinetuneKind kind)
{
    static const char *const names[] = {"macro_f1", NULL, "mse", NULL, "exact_match", NULL};
    return names[kind];
}

const char *bertc_finetune_task_name(FinetuneKind kind)
{
    static const char *const names[] = {"seq-cls", "multi-label", "regression", "token-cls",
                                        "qa", "mlm"};
    return names[kind];
}

/* ---- rows -> examples --------------------------------------------------- */

static int row_error(const Dataset *d, int64_t i, const char *what, const char *value,
                     BertcError *err)
{
    char shown[BERTC_SHOWN];
    return bertc_errorf(err, "%s:%lld: %s '%s'", d->name, (long long)d->line[i], what,
                        bertc_shown(value, shown));
}

static int add_label(FinetuneData *data, int64_t r, const Dataset *d, int64_t i,
                     const char *cell, BertcError *err)
{
    int C = data->labels.n;
    if (data->kind == FT_REGRESSION) {
        double y;
        if (!bertc_parse_f64(cell, &y))
            return row_error(d, i, "a regression label must be a finite number, got", cell, err);
        /* the model trains in float32: a double past FLT_MAX would become inf */
        if (!isfinite((float)y))
            return row_error(d, i, "a regression label must be a finite float32 (|y| <= "
                             "3.4e38), got", cell, err);
        data->target[r] = (float)y;
        return 0;
    }
    if (data->kind == FT_SEQ_CLS) {
        data->label[r] = bertc_label_set_id(&data->labels, cell, strlen(cell));
        if (data->label[r] >= 0)
            return 0;
        char what[64];
        snprintf(what, sizeof what, "a label %s does not have:", bertc_finetune_labels_of(data));
        return row_error(d, i, what, cell, err);
    }
    float *t = data->target + r * C;   /* "a|b" -> 0/1 over the C labels */
    memset(t, 0, sizeof(float) * (size_t)C);
    for (const char *c = cell; *cell;) {
        const char *bar = strchr(c, '|');
        size_t len = bar ? (size_t)(bar - c) : strlen(c);
        int id = bertc_label_set_id(&data->labels, c, len);
        if (id < 0) {
            char what[64];
            snprintf(what, sizeof what, "a label %s does not have in",
                     bertc_finetune_labels_of(data));
            return row_error(d, i, what, cell, err);
        }
        t[id] = 1.0f;
        if (!bar)
            break;
        c = bar + 1;
    }
    return 0;
}

int bertc_finetune_add_rows(FinetuneData *data, int64_t first, const Dataset *d, int text, int pair,
                            int label, BertcError *err)
{
    for (int64_t i = 0; i < d->n_rows; i++) {
        int64_t r = first + i;
        const char *t = bertc_dataset_cell(d, i, text);
        const char *y = label >= 0 ? bertc_dataset_cell(d, i, label) : NULL;
        const char *p = pair >= 0 ? bertc_dataset_cell(d, i, pair) : NULL;
        if (!t || (pair >= 0 && !p) || (label >= 0 && !y))
            return bertc_errorf(err, "%s:%lld: no '%s'", d->name, (long long)d->line[i],
                                d->columns[!t ? text : (label >= 0 && !y) ? label : pair]);
        data->ex[r] = (TextExample){.text = t, .text_pair = p, .context_id = -1};
        if (label >= 0 && add_label(data, r, d, i, y, err) != 0)
            return -1;
    }
    return 0;
}

/* ---- batches ------------------------------------------------------------ */

/* "labels" of rows idx[0..n): class ids (n), 0/1 rows (n, C) or targets (n). */
static void put_labels(const FinetuneData *data, const int64_t *idx, int64_t n, Graph *g,
                       Batch *b)
{
    int64_t C = data->labels.n, shape[2] = {n, C};
    if (data->kind == FT_SEQ_CLS) {
        ITensor y = bertc_itensor_new(g->step, 1, &n);
        for (int64_t j = 0; j < n; j++)
            y.data[j] = data->label[idx[j]];
        bertc_batch_put_ids(b, "labels", y);
        return;
    }
    int64_t width = data->kind == FT_MULTI_LABEL ? C : 1;
    Tensor y = bertc_tensor_new(g->step, data->kind == FT_MULTI_LABEL ? 2 : 1, shape);
    for (int64_t j = 0; j < n; j++)
        memcpy(y.data + j * width, data->target + idx[j] * width, sizeof(float) * (size_t)width);
    bertc_batch_put_f32(b, "labels", y);
}

/* The text of rows idx[0..n) through m's batch_from_text, and the labels;
 * with text windows, idx are windows (features), each its row's label. */
static int rows_batch(const FinetuneData *data, const Model *m, const int64_t *idx, int64_t n,
                      Graph *g, Batch *b, int64_t *tokens, BertcError *err)
{
    TextExample *ex = bertc_arena_alloc(g->step, sizeof *ex * (size_t)n);
    int64_t *rows = bertc_arena_alloc(g->step, sizeof *rows * (size_t)n);
    bool windows = bertc_finetune_text_windowed(data);
    for (int64_t j = 0; j < n; j++) {
        rows[j] = windows ? data->feat_row[idx[j]] : idx[j];
        ex[j] = data->ex[rows[j]];
        if (windows)
            ex[j].encoding = &data->feat_enc[idx[j]];
    }
    if (bertc_model_batch_from_text(m, data->tok, ex, (int)n, data->max_len, g, b, err) != 0)
        return -1;
    put_labels(data, rows, n, g, b);
    const BatchItem *mask = bertc_batch_find(b, "attention_mask");
    *tokens = 0;
    for (int64_t k = 0; mask && k < mask->ids.numel; k++)
        *tokens += mask->ids.data[k];
    return 0;
}

static int make_batch(void *ctx, const int64_t *idx, int64_t n, Graph *g, Batch *b,
                      int64_t *tokens, BertcError *err)
{
    const FinetuneData *data = ctx;
    if (data->kind == FT_MLM) {
        int64_t masked;
        return bertc_finetune_mlm_batch(data, data->model, idx, n, g, b, false, tokens, &masked,
                                        err);
    }
    if (data->kind == FT_QA) {
        Encoding *enc;
        return bertc_finetune_qa_batch(data, data->model, idx, n, g, b, &enc, tokens, err);
    }
    if (data->kind == FT_TOKEN_CLS) {
        int32_t **pos = bertc_arena_alloc(g->step, sizeof(int32_t *) * (size_t)n);
        return bertc_finetune_token_batch(data, data->model, idx, n, g, b, pos, tokens, err);
    }
    return rows_batch(data, data->model, idx, n, g, b, tokens, err);
}

/* ---- evaluation --------------------------------------------------------- */

int bertc_finetune_row_logits(const FinetuneData *data)
{
    return data->kind == FT_REGRESSION ? 1 : data->labels.n;
}

/* Text windows: each held-out window's logits (k, C) of features idx[0..k)
 * into its row's in data->win_logits (bertc_windows_add). */
static void add_window_logits(FinetuneData *data, const float *logits, const int64_t *idx,
                              int64_t k)
{
    int C = bertc_finetune_row_logits(data);
    for (int64_t j = 0; j < k; j++) {
        int64_t e = data->feat_row[idx[j]] - data->n_train;
        bertc_windows_add(data->aggregate, data->win_logits + e * C, logits + j * C, C,
                          data->win_count[e]++, data->feat_win[idx[j]]);
    }
}

/* Predictions for the held-out rows from a forward's logits (k, C). */
static void predict(FinetuneData *data, const float *logits, int64_t row, int64_t k)
{
    int C = bertc_finetune_row_logits(data);
    for (int64_t j = 0; j < k; j++) {
        const float *z = logits + j * C;
        int64_t e = row + j - data->n_train;
        if (data->kind == FT_SEQ_CLS) {
            int best = 0;
            for (int c = 1; c < C; c++)
                best = z[c] > z[best] ? c : best;
            data->pred_class[e] = best;
        } else if (data->kind == FT_MULTI_LABEL) {
            for (int c = 0; c < C; c++)   /* sigmoid(z) > 0.5 */
                data->pred_set[e * C + c] = z[c] > 0;
        } else {
            data->pred_value[e] = z[0];
        }
    }
}

/* Text windows: the held-out rows' sums of logits start at 0. */
static void begin_window_eval(FinetuneData *data)
{
    int C = bertc_finetune_row_logits(data);
    int64_t n = data->n - data->n_train;
    memset(data->win_logits, 0, sizeof(float) * (size_t)(n * C));
    memset(data->win_count, 0, sizeof(int32_t) * (size_t)n);
}

/* Each held-out row's logits from its windows' (the mean: predict's
 * --aggregate mean), and the predictions made from them. */
static void end_window_eval(FinetuneData *data)
{
    int C = bertc_finetune_row_logits(data);
    int64_t n = data->n - data->n_train;
    for (int64_t e = 0; e < n; e++)
        bertc_windows_finish(data->aggregate, data->win_logits + e * C, C, data->win_count[e]);
    predict(data, data->win_logits, data->n_train, n);
}

/* The task's metrics of the predictions; the main one first. */
static void score(FinetuneData *data, Graph *g, EvalRecord *rec)
{
    int64_t n = data->n - data->n_train;
    int C = data->labels.n;
    rec->metric[1] = NAN;
    if (data->kind == FT_QA) {
        rec->metric[0] = data->qa_f1 / (double)n;
        rec->metric[1] = data->qa_em / (double)n;
    } else if (data->kind == FT_TOKEN_CLS) {
        bertc_ag_graph_reset(g);
        rec->metric[0] = bertc_finetune_token_score(data, g->step);
    } else if (data->kind == FT_SEQ_CLS) {
        rec->metric[0] = bertc_metric_accuracy(data->label + data->n_train, data->pred_class, n);
        rec->metric[1] = bertc_metric_macro_f1(data->label + data->n_train, data->pred_class, n, C);
    } else if (data->kind == FT_MULTI_LABEL) {
        for (int64_t i = 0; i < n * C; i++)
            data->gold_set[i] = data->target[data->n_train * C + i] > 0.5f;
        rec->metric[0] = bertc_metric_micro_f1(data->gold_set, data->pred_set, n, C);
    } else {
        const float *gold = data->target + data->n_train;
        rec->metric[0] = bertc_metric_pearson(gold, data->pred_value, n);
        rec->metric[1] = bertc_metric_mse(gold, data->pred_value, n);
    }
}

/* A new best is saved as the model directory; otherwise one more
 * evaluation without improvement. */
static int keep_best(FinetuneData *data, const Model *m, double metric, BertcError *err)
{
    /* perplexity: lower is better (data->best holds its negation) */
    double score = data->kind == FT_MLM ? -metric : metric;
    if (!(score > data->best)) {
        data->bad_evals++;
        return 0;
    }
    data->best = score;
    data->best_eval = data->n_evals;
    data->bad_evals = 0;
    data->saved = true;
    return bertc_model_dir_save(data->out, m, data->tok, err);
}

/* The held-out rows' predictions in batches of data->eval_batch (0:
 * EVAL_BATCH), then the task's metrics: what a run's every evaluation and
 * bertc_evaluate (finetune_evaluate.c) compute. */
int bertc_finetune_evaluate_rows(FinetuneData *data, Model *m, Graph *g, EvalRecord *rec,
                                 BertcError *err)
{
    int64_t B = data->eval_batch > 0 ? data->eval_batch : EVAL_BATCH, tokens;
    int64_t *idx = malloc(sizeof *idx * (size_t)B);
    int32_t **pos = malloc(sizeof *pos * (size_t)B);
    double loss_sum = 0;
    bool qa = data->kind == FT_QA, windows = bertc_finetune_text_windowed(data);
    bool features = qa || windows;   /* the held-out rows' windows */
    int64_t lo = features ? data->n_feat_train : data->n_train;
    int64_t hi = features ? data->n_feat : data->n;
    int rc = idx && pos ? 0 : bertc_errorf(err, "evaluation: out of memory for a batch of %lld",
                                           (long long)B);
    if (qa && rc == 0)
        bertc_finetune_qa_begin_eval(data);
    if (windows && rc == 0)
        begin_window_eval(data);
    for (int64_t row = lo; rc == 0 && row < hi; row += B) {
        int64_t k = hi - row < B ? hi - row : B;
        for (int64_t j = 0; j < k; j++)
            idx[j] = row + j;
        Batch b;
        Outputs out;
        bertc_ag_graph_reset(g);
        bertc_batch_init(&b, "eval");
        bertc_outputs_init(&out);
        out.final_only = true;   /* the eval reads logits only */
        Encoding *enc = NULL;
        if ((data->kind == FT_QA
                 ? bertc_finetune_qa_batch(data, m, idx, k, g, &b, &enc, &tokens, err)
             : data->kind == FT_TOKEN_CLS
                 ? bertc_finetune_token_batch(data, m, idx, k, g, &b, pos, &tokens, err)
                 : rows_batch(data, m, idx, k, g, &b, &tokens, err)) != 0 ||
            bertc_model_forward(m, g, &b, &out, err) != 0) {
            rc = -1;
            break;
        }
        const Var *logits = bertc_outputs_get(&out, "logits");
        if (data->kind == FT_QA) {
            const Var *sl = bertc_outputs_get(&out, "start_logits");
            bertc_finetune_qa_predict(data, sl->value.data,
                                      bertc_outputs_get(&out, "end_logits")->value.data,
                                      sl->value.shape[1], idx, k, enc);
        } else if (data->kind == FT_TOKEN_CLS)
            bertc_finetune_token_predict(data, logits->value.data, logits->value.shape[1], idx, k,
                                         pos);
        else if (windows)
            add_window_logits(data, logits->value.data, idx, k);
        else
            predict(data, logits->value.data, row, k);
        loss_sum += bertc_outputs_get(&out, "loss")->value.data[0] * (double)k;
    }
    free(idx);
    free(pos);
    if (rc != 0)
        return -1;
    *rec = (EvalRecord){.loss = loss_sum / (double)(hi - lo)};
    if (qa)
        bertc_finetune_qa_end_eval(data);
    if (windows)
        end_window_eval(data);
    score(data, g, rec);
    return 0;
}

/* Perplexity of the held-out rows: exp of the CE averaged over every
 * masked token (each batch's mean weighted by its masked count). */
static int evaluate_mlm(FinetuneData *data, Model *m, Graph *g, EvalRecord *rec, BertcError *err)
{
    int64_t idx[EVAL_BATCH], tokens, masked, total = 0;
    double sum = 0;
    for (int64_t row = data->n_train; row < data->n; row += EVAL_BATCH) {
        int64_t k = data->n - row < EVAL_BATCH ? data->n - row : EVAL_BATCH;
        for (int64_t j = 0; j < k; j++)
            idx[j] = row + j;
        Batch b;
        Outputs out;
        bertc_ag_graph_reset(g);
        bertc_batch_init(&b, "eval");
        bertc_outputs_init(&out);
        out.loss_only = true;   /* no (B, S, V) logits */
        if (bertc_finetune_mlm_batch(data, m, idx, k, g, &b, true, &tokens, &masked, err) != 0 ||
            bertc_model_forward(m, g, &b, &out, err) != 0)
            return -1;
        sum += bertc_outputs_get(&out, "loss")->value.data[0] * (double)masked;
        total += masked;
    }
    *rec = (EvalRecord){.loss = sum / (double)total, .metric = {exp(sum / (double)total), NAN}};
    return 0;
}

static int evaluate(void *ctx, Model *m, Graph *g, double *metric, double *loss, BertcError *err)
{
    FinetuneData *data = ctx;
    EvalRecord *rec = &data->evals[data->n_evals < TRAIN_MAX_POINTS ? data->n_evals
                                                                      : TRAIN_MAX_POINTS - 1];
    if ((data->kind == FT_MLM ? evaluate_mlm(data, m, g, rec, err)
                              : bertc_finetune_evaluate_rows(data, m, g, rec, err)) != 0)
        return -1;
    *metric = rec->metric[0];
    *loss = rec->loss;
    if (keep_best(data, m, *metric, err) != 0)
        return -1;
    data->n_evals++;
    return 0;
}

static bool stop_early(void *ctx)
{
    const FinetuneData *data = ctx;
    return data->patience > 0 && data->bad_evals >= data->patience;
}

/* A training example's file and line (qa: its feature's row). */
static void example_name(void *ctx, int64_t idx, char *buf, size_t len)
{
    const FinetuneData *data = ctx;
    int64_t row = data->kind == FT_QA ? data->feat_row[idx] : idx;
    snprintf(buf, len, "%s", data->origin[row]);
}

TrainTask bertc_finetune_task(FinetuneData *data)
{
    return (TrainTask){.n_train = bertc_finetune_train_examples(data),
                       .make_batch = make_batch,
                       .evaluate = data->n > data->n_train ? evaluate : NULL,
                       .metric_name = bertc_finetune_metric_name(data->kind), .ctx = data,
                       .stop_early = stop_early,
                       .example_name = data->origin ? example_name : NULL};
}

double bertc_finetune_majority_baseline(const FinetuneData *data)
{
    if (data->kind != FT_SEQ_CLS || data->n == data->n_train)
        return NAN;
    int64_t *count = calloc((size_t)data->labels.n, sizeof *count), best = 0;
    if (!count)
        return NAN;
    for (int64_t i = data->n_train; i < data->n; i++)
        count[data->label[i]]++;
    for (int c = 0; c < data->labels.n; c++)
        best = count[c] > best ? count[c] : best;
    free(count);
    return (double)best / (double)(data->n - data->n_train);
}

/* A metric's name as a JSON key (the names are short and fixed; they go
 * through the one escaper all the same). */
static void put_name(FILE *log, const char *name)
{
    char quoted[32];
    bertc_json_quote(quoted, sizeof quoted, name, strlen(name));
    fputs(quoted, log);
}

/* One JSON line per evaluation of this run, its step and train loss from
 * the engine's points. */
void bertc_finetune_write_log(const FinetuneData *data, const TrainResult *res, FILE *log)
{
    const char *second = bertc_finetune_metric2_name(data->kind);
    for (int i = 0, e = 0; i < res->n_points && e < data->n_evals; i++) {
        const TrainPoint *p = &res->points[i];
        if (isnan(p->metric))
            continue;
        const EvalRecord *rec = &data->evals[e < TRAIN_MAX_POINTS ? e : TRAIN_MAX_POINTS - 1];
        const char *metric = bertc_finetune_metric_name(data->kind);
        fprintf(log, "{\"step\": %lld, \"train_loss\": %.6g, \"eval_loss\": %.6g, ",
                (long long)p->step, isnan(p->train_loss) ? 0.0 : p->train_loss, rec->loss);
        put_name(log, metric);
        fprintf(log, ": %.6g", rec->metric[0]);
        if (second) {
            fputs(", ", log);
            put_name(log, second);
            fprintf(log, ": %.6g", rec->metric[1]);
        }
        fprintf(log, ", \"best\": %s}\n", e == data->best_eval ? "true" : "false");
        e++;
    }
}
