/* zoo/train/finetune_data.c — the rows a fine-tuning run trains on and
 * scores: the training and held-out tables (files, or tables in memory),
 * their columns, the label set of the training rows (sorted, so the same
 * data gives the same ids whatever its order), the task's rows
 * (finetune_task.c, finetune_tokens.c, finetune_qa.c), and without
 * held-out rows a seeded shuffle that holds out 10 % of the training rows. */
#include "zoo/train/finetune_internal.h"

#include <string.h>

/* The column names: the options', else the task's. */
typedef struct ColumnNames {
    const char *text, *pair, *label;
} ColumnNames;

static ColumnNames column_names(const FinetuneOptions *o)
{
    FinetuneKind k = o->task;
    ColumnNames c = {.text = k == FT_TOKEN_CLS ? "tokens" : k == FT_QA ? "question" : "text",
                     .pair = k == FT_QA ? "context" : NULL,
                     .label = k == FT_TOKEN_CLS ? "tags" : k == FT_QA ? "answers.text" : "label"};
    if (o->text_column)
        c.text = o->text_column;
    if (o->text_pair_column)
        c.pair = o->text_pair_column;
    if (o->label_column)
        c.label = o->label_column;
    return c;
}

typedef struct Columns {
    int text, pair, label;
} Columns;

static int find_columns(const ColumnNames *names, FinetuneKind kind, const Dataset *d, Columns *c,
                        BertcError *err)
{
    const char *text[2] = {names->text, "sentence"};
    /* the default "text" falls back to "sentence" (GLUE's files) */
    int n = strcmp(names->text, "text") == 0 ? 2 : 1;
    c->pair = c->label = -1;
    if ((c->text = bertc_dataset_column_of(d, text, n, err)) < 0 ||
        (kind != FT_MLM && (c->label = bertc_dataset_column(d, names->label, err)) < 0))
        return -1;
    if (names->pair && (c->pair = bertc_dataset_column(d, names->pair, err)) < 0)
        return -1;
    return 0;
}

/* token-cls: the words of the examples in the order `order`. */
static void shuffle_words(FinetuneData *data, const int64_t *order, Arena *arena)
{
    int64_t n = data->n, W = data->word_off[n];
    int64_t *off = bertc_arena_alloc(arena, sizeof *off * (size_t)(n + 1));
    int32_t *cp = bertc_arena_alloc(arena, sizeof *cp * (size_t)W);
    int32_t *tag = bertc_arena_alloc(arena, sizeof *tag * (size_t)W);
    off[0] = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t from = data->word_off[order[i]], nw = data->word_off[order[i] + 1] - from;
        memcpy(cp + off[i], data->word_cp + from, sizeof *cp * (size_t)nw);
        memcpy(tag + off[i], data->word_tag + from, sizeof *tag * (size_t)nw);
        off[i + 1] = off[i] + nw;
    }
    data->word_off = off;
    data->word_cp = cp;
    data->word_tag = tag;
}

/* Train rows, then eval rows: shuffled with the seed and split 90/10 when
 * there is no eval file. */
static void shuffle_split(FinetuneData *data, uint64_t seed, bool has_eval, Arena *arena)
{
    if (has_eval)
        return;   /* the engine shuffles the training rows every epoch */
    int64_t n = data->n, C = data->kind == FT_MULTI_LABEL ? data->labels.n : 1;
    int64_t *order = bertc_arena_alloc(arena, sizeof *order * (size_t)n);
    bertc_train_epoch_order(order, n, seed, -1);
    TextExample *ex = bertc_arena_alloc(arena, sizeof *ex * (size_t)n);
    int32_t *label = bertc_arena_alloc(arena, sizeof *label * (size_t)n);
    float *target = bertc_arena_alloc(arena, sizeof *target * (size_t)(n * C));
    for (int64_t i = 0; i < n; i++) {
        ex[i] = data->ex[order[i]];
        label[i] = data->label[order[i]];
        memcpy(target + i * C, data->target + order[i] * C, sizeof *target * (size_t)C);
    }
    const char **origin = bertc_arena_alloc(arena, sizeof *origin * (size_t)n);
    for (int64_t i = 0; i < n; i++)
        origin[i] = data->origin[order[i]];
    data->origin = origin;
    const char **answers = bertc_arena_alloc(arena, sizeof *answers * (size_t)n);
    int32_t *span = bertc_arena_alloc(arena, sizeof *span * (size_t)(2 * n));
    for (int64_t i = 0; i < n; i++) {
        answers[i] = data->answers[order[i]];
        span[2 * i] = data->span[2 * order[i]];
        span[2 * i + 1] = data->span[2 * order[i] + 1];
    }
    data->answers = answers;
    data->span = span;
    data->ex = ex;
    data->label = label;
    data->target = target;
    data->n_train = n - n / 10;
    if (data->kind == FT_TOKEN_CLS)
        shuffle_words(data, order, arena);
}

/* token-cls: the words of a '|'-joined column, over all rows. */
static int64_t count_words(const Dataset *d, int column)
{
    int64_t W = 0;
    for (int64_t i = 0; i < d->n_rows; i++) {
        const char *c = bertc_dataset_cell(d, i, column);
        for (W += c && *c ? 1 : 0; c && *c; c++)
            W += *c == '|';
    }
    return W;
}

static void alloc_rows(FinetuneData *data, int64_t n, int64_t W, Arena *arena)
{
    data->word_off = bertc_arena_calloc(arena, (size_t)n + 1, sizeof *data->word_off);
    data->word_cp = bertc_arena_alloc(arena, sizeof(int32_t) * (size_t)(W + 1));
    data->word_tag = bertc_arena_alloc(arena, sizeof(int32_t) * (size_t)(W + 1));
    data->pred_tag = bertc_arena_alloc(arena, sizeof(int32_t) * (size_t)(W + 1));
    data->answers = bertc_arena_calloc(arena, (size_t)n, sizeof *data->answers);
    data->span = bertc_arena_calloc(arena, 2 * (size_t)n, sizeof *data->span);
    int64_t C = data->labels.n;
    data->n = n;
    data->ex = bertc_arena_alloc(arena, sizeof *data->ex * (size_t)n);
    data->origin = bertc_arena_alloc(arena, sizeof *data->origin * (size_t)n);
    data->label = bertc_arena_calloc(arena, (size_t)n, sizeof *data->label);
    data->target = bertc_arena_calloc(arena, (size_t)(n * C), sizeof *data->target);
    data->pred_class = bertc_arena_alloc(arena, sizeof(int32_t) * (size_t)n);
    data->pred_value = bertc_arena_alloc(arena, sizeof(float) * (size_t)n);
    data->pred_set = bertc_arena_alloc(arena, (size_t)(n * C));
    data->gold_set = bertc_arena_alloc(arena, (size_t)(n * C));
}

/* "train.csv:7" for rows first.. of data, from d's lines. */
static void name_rows(FinetuneData *data, int64_t first, const Dataset *d, Arena *arena)
{
    for (int64_t i = 0; i < d->n_rows; i++) {
        int n = snprintf(NULL, 0, "%s:%lld", d->name, (long long)d->line[i]);
        char *s = bertc_arena_alloc(arena, (size_t)n + 1);
        snprintf(s, (size_t)n + 1, "%s:%lld", d->name, (long long)d->line[i]);
        data->origin[first + i] = s;
    }
}

/* qa: question, context, answers.text and (beside it) answers.answer_start. */
static int qa_columns(const ColumnNames *names, const Dataset *d, int *col, BertcError *err)
{
    char start[300];
    const char *dot = strrchr(names->label, '.');
    snprintf(start, sizeof start, "%.*sanswer_start", dot ? (int)(dot - names->label + 1) : 0,
             names->label);
    const char *list[4] = {names->text, names->pair, names->label, start};
    for (int k = 0; k < 4; k++)
        if ((col[k] = bertc_dataset_column(d, list[k], err)) < 0)
            return -1;
    return 0;
}

static int qa_rows(const ColumnNames *names, FinetuneData *data, const Dataset *train,
                   const Dataset *eval, BertcError *err)
{
    int col[4];
    if (qa_columns(names, train, col, err) != 0 ||
        bertc_finetune_qa_rows(data, 0, train, col, err) != 0)
        return -1;
    return eval && (qa_columns(names, eval, col, err) != 0 ||
                    bertc_finetune_qa_rows(data, train->n_rows, eval, col, err) != 0)
               ? -1
               : 0;
}

/* A table: the one in memory, else the file's; token-cls reads a .txt file
 * as CoNLL columns. */
static int read_data(FinetuneKind kind, const Dataset *given, const char *path, Dataset *d,
                     Arena *arena, BertcError *err)
{
    if (given) {
        *d = *given;
        return 0;
    }
    size_t n = strlen(path);
    if (kind == FT_TOKEN_CLS && n >= 4 && strcmp(path + n - 4, ".txt") == 0)
        return bertc_dataset_read_format(d, arena, path, DATASET_CONLL, err);
    return bertc_dataset_read(d, arena, path, err);
}

/* The rows of each table as the task's examples (their arrays allocated for
 * both), then the shuffle and split. */
static int task_rows(const FinetuneOptions *o, const ColumnNames *names, FinetuneData *data,
                     const Dataset *train, const Columns *ct, const Dataset *eval,
                     const Columns *ce, Arena *arena, BertcError *err)
{
    bool tokens = o->task == FT_TOKEN_CLS;
    int64_t W = tokens ? count_words(train, ct->text) + (eval ? count_words(eval, ce->text) : 0)
                       : 0;
    alloc_rows(data, train->n_rows + (eval ? eval->n_rows : 0), W, arena);
    data->n_train = train->n_rows;
    name_rows(data, 0, train, arena);
    if (eval)
        name_rows(data, train->n_rows, eval, arena);
    if (o->task == FT_QA)
        return qa_rows(names, data, train, eval, err) != 0
                   ? -1
                   : (shuffle_split(data, o->train.seed, eval != NULL, arena), 0);
    if (tokens ? bertc_finetune_token_rows(data, 0, train, ct->text, ct->label, arena, err) != 0 ||
                     (eval && bertc_finetune_token_rows(data, train->n_rows, eval, ce->text,
                                                        ce->label, arena, err) != 0)
               : bertc_finetune_add_rows(data, 0, train, ct->text, ct->pair, ct->label, err) != 0 ||
                     (eval && bertc_finetune_add_rows(data, train->n_rows, eval, ce->text,
                                                      ce->pair, ce->label, err) != 0))
        return -1;
    shuffle_split(data, o->train.seed, eval != NULL, arena);
    return 0;
}

int bertc_finetune_load_data(const FinetuneOptions *o, FinetuneData *data, Arena *arena,
                             BertcError *err)
{
    Dataset train, eval;
    Columns ct, ce;
    ColumnNames names = column_names(o);
    bool has_eval = o->eval_data || o->eval_file;
    if (read_data(o->task, o->train_data, o->train_file, &train, arena, err) != 0 ||
        find_columns(&names, o->task, &train, &ct, err) != 0)
        return -1;
    data->kind = o->task;
    data->name = o->train_data ? train.name : o->train_file;
    data->seed = o->train.seed;
    if (o->task == FT_REGRESSION || o->task == FT_QA || o->task == FT_MLM)
        data->labels = (LabelSet){.n = 1};
    else if (bertc_label_set_build(&data->labels, arena, &train, ct.label,
                                   o->task == FT_MULTI_LABEL || o->task == FT_TOKEN_CLS, err) != 0)
        return -1;
    if (o->task == FT_SEQ_CLS && data->labels.n < 2)
        return bertc_errorf(err, "%s: one label ('%s') in column '%s': a classifier needs two "
                            "or more", data->name, data->labels.names[0], names.label);
    if (has_eval && (read_data(o->task, o->eval_data, o->eval_file, &eval, arena, err) != 0 ||
                     find_columns(&names, o->task, &eval, &ce, err) != 0))
        return -1;
    if (task_rows(o, &names, data, &train, &ct, has_eval ? &eval : NULL, &ce, arena, err) != 0)
        return -1;
    if (o->task != FT_QA && data->n_train < 1)
        return bertc_errorf(err, "%s: too few rows to train on", data->name);
    return 0;
}

int bertc_finetune_load_held_out(const FinetuneOptions *o, FinetuneData *data, Arena *arena,
                                 BertcError *err)
{
    Dataset eval;
    Columns c;
    ColumnNames names = column_names(o);
    if (read_data(o->task, o->eval_data, o->eval_file, &eval, arena, err) != 0 ||
        find_columns(&names, o->task, &eval, &c, err) != 0)
        return -1;
    data->kind = o->task;
    data->name = o->eval_data ? eval.name : o->eval_file;
    data->seed = o->train.seed;
    Dataset none = bertc_dataset_rows(&eval, 0, 0);   /* no rows to train on */
    return task_rows(o, &names, data, &none, &c, &eval, &c, arena, err);
}

/* A row of `tokens` tokens untruncated, counted into len. */
static void count_length(FinetuneLengths *len, int64_t tokens, int32_t max_len)
{
    len->rows++;
    len->tokens += tokens;
    len->longest = tokens > len->longest ? tokens : len->longest;
    if (tokens > max_len) {
        len->truncated++;
        len->cut += tokens - max_len;
    }
}

void bertc_finetune_lengths(const FinetuneData *data, int64_t first, int64_t n,
                            FinetuneLengths *len)
{
    *len = (FinetuneLengths){0};
    if (data->feat_enc) {   /* text windows: each row's first keeps its untruncated length */
        for (int64_t f = 0; f < data->n_feat; f++)
            if (data->feat_win[f] == 0 && data->feat_row[f] >= first &&
                data->feat_row[f] < first + n)
                count_length(len, data->feat_enc[f].untruncated, data->max_len);
        return;
    }
    Arena *scratch = bertc_arena_create("finetune: lengths", 1 << 16);
    for (int64_t i = first; i < first + n; i++) {
        const TextExample *ex = &data->ex[i];
        Encoding enc;
        BertcError ignored;   /* a row that does not tokenize fails where it is used */
        bertc_arena_reset(scratch);
        if (bertc_tokenizer_encode(data->tok, scratch, ex->text, strlen(ex->text), ex->text_pair,
                                   ex->text_pair ? strlen(ex->text_pair) : 0, 0, false, &enc,
                                   &ignored) == 0)
            count_length(len, enc.untruncated, data->max_len);
    }
    bertc_arena_destroy(scratch);
}
