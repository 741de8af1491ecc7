/*
 * zoo/train/dataset.h — labelled texts from CSV, TSV and JSONL files (or
 * text in memory), the label set of a classification task, the metrics
 * fine-tuning (zoo/train/finetune.h) scores a held-out set with, and a
 * bag-of-words naive Bayes baseline to compare a fine-tuned model against.
 *
 *     Dataset d;  BertcError err;
 *     Arena *a = bertc_arena_create("data", 1 << 20);
 *     bertc_dataset_read(&d, a, "train.csv", &err);        // zoo/train/dataset_file.c
 *     int text = bertc_dataset_column(&d, "text", &err);   // -1: not in the header
 *     for (int64_t i = 0; i < d.n_rows; i++)
 *         puts(bertc_dataset_cell(&d, i, text));           // NULL: absent (JSONL)
 *
 * The formats, as a table of rows under a header of column names:
 *  - CSV (RFC 4180): the first record is the header; fields separated by
 *    ',', a field in double quotes may hold ',', '"' written '""' and line
 *    breaks; records end with LF or CRLF. Every record has the header's
 *    number of fields.
 *  - TSV: the first line is the header; fields separated by TAB, no quoting
 *    (a '"' is an ordinary character, as in data/topics.tsv); LF or CRLF.
 *  - JSONL: one JSON object a line; the columns are the first object's keys,
 *    and "key.member" for the members of an object value (one level: SQuAD's
 *    "answers.text"). A string is its text, a number its literal ("3",
 *    "0.25"), a list of strings or numbers its elements joined by '|'
 *    (multi-label, token tags, SQuAD answers), null or an absent key an
 *    absent cell (NULL).
 *  - CoNLL (token classification, CoNLL-2003's `EU NNP B-NP B-ORG`): one
 *    token a line, columns separated by spaces or TABs, the word first and
 *    the tag last; a blank line ends a sentence; "-DOCSTART-" lines are
 *    skipped. The table has columns "tokens" and "tags", a row a sentence,
 *    its words and tags joined by '|' as JSONL lists are (a '|' in a word
 *    or tag is an error); a row's line is its first token's.
 *    "x.conll:5: one column ('EU'): ..." names a line without a tag.
 * Empty lines between records are skipped; a UTF-8 byte order mark at the
 * start of the text is dropped. Every cell is valid UTF-8 without NUL bytes
 * (a NUL is an error naming its line). Errors are one line naming the file and the line of the record:
 * "train.csv:7: 3 fields, the header has 2", "train.csv:9: unterminated
 * quoted field (opened here)", "x.tsv:4: invalid UTF-8 in column 'text'".
 *
 * Memory: the cells are copied into the caller's arena; at most 8 bytes of
 * row index per input byte besides.
 */
#ifndef BERTC_ZOO_DATASET_H
#define BERTC_ZOO_DATASET_H

#include "zoo/zoo.h"

typedef enum DatasetFormat {
    DATASET_CSV,
    DATASET_TSV,
    DATASET_JSONL,
    DATASET_CONLL
} DatasetFormat;

typedef struct Dataset {
    const char *name;           /* the file, named in messages */
    DatasetFormat format;
    int n_columns;
    const char **columns;       /* (n_columns) header names */
    int64_t n_rows;             /* records after the header */
    const char **cells;         /* (n_rows, n_columns); NULL: absent */
    int64_t *line;              /* (n_rows) line where each record starts, 1-based */
} Dataset;

/* The official SQuAD JSON (v1.1, v2.0) as JSONL rows, one per question:
 * id, question, context, answers {text: [...], answer_start: [...]}
 * (zoo/train/dataset_squad.c); lines[k] is the line of row k's question in the
 * SQuAD file, which the Dataset's rows then carry, so every message names
 * the file's line. bertc_dataset_parse of a JSONL file does this by itself
 * when the whole file is one such document. */
bool bertc_squad_is_squad(const JsonValue *root);
int bertc_squad_to_jsonl(Arena *arena, const JsonDoc *doc, char **text, size_t *len,
                         int64_t **lines, BertcError *err);

/* The most columns a header may have. */
#define DATASET_MAX_COLUMNS 1024

/* By the name's ending (.csv, .tsv, .jsonl/.json, .conll); otherwise by the
 * content: "-DOCSTART-" first is CoNLL, '{' first JSONL, a TAB in the first
 * line TSV, else CSV. */
DatasetFormat bertc_dataset_guess_format(const char *name, const char *text, size_t len);
/* text[0..len) (need not be NUL-terminated) -> d, cells in arena. */
int bertc_dataset_parse(Dataset *d, Arena *arena, const char *name, DatasetFormat format,
                        const char *text, size_t len, BertcError *err);
/* The same for a CSV or TSV table without a header line, its n_columns
 * columns named by the caller (data/topics.tsv is "label<TAB>text" lines):
 * every record is a row, and a text of none is a table of no rows. */
int bertc_dataset_parse_columns(Dataset *d, Arena *arena, const char *name, DatasetFormat format,
                                const char *const *columns, int n_columns, const char *text,
                                size_t len, BertcError *err);
/* Rows first .. first + n - 1 of d (clamped to its rows) as a table of their
 * own, with d's columns and name: a view, the cells stay d's. A held-out
 * split: bertc_dataset_rows(&d, n_train, d.n_rows - n_train). */
Dataset bertc_dataset_rows(const Dataset *d, int64_t first, int64_t n);
/* bertc_dataset_parse of a regular file (zoo/train/dataset_file.c), the format by
 * bertc_dataset_guess_format. Files above DATASET_MAX_BYTES are refused. */
#define DATASET_MAX_BYTES (1ULL << 30)
int bertc_dataset_read(Dataset *d, Arena *arena, const char *path, BertcError *err);
/* The same in the given format (`bertc finetune --task token-cls` reads a
 * .txt file as CoNLL). */
int bertc_dataset_read_format(Dataset *d, Arena *arena, const char *path, DatasetFormat format,
                              BertcError *err);

/* The index of column `name`; -1 with err naming the file and listing the
 * header when there is none. */
int bertc_dataset_column(const Dataset *d, const char *name, BertcError *err);
/* The first of names[0..n) the header has, else -1 with err listing them. */
int bertc_dataset_column_of(const Dataset *d, const char *const *names, int n, BertcError *err);
static inline const char *bertc_dataset_cell(const Dataset *d, int64_t row, int column)
{
    return d->cells[row * d->n_columns + column];
}

/* ------------------------------------------------------------------------ */
/* Label sets                                                                */
/* ------------------------------------------------------------------------ */

/* The distinct labels of a column, sorted by strcmp (so the same data gives
 * the same ids whatever its order). multi: each cell is a '|'-separated
 * list ("sports|politics"; "" is no label). */
#define LABELS_MAX 1024
typedef struct LabelSet {
    int n;
    const char **names;         /* (n) sorted, in the arena */
    bool unsorted;              /* names in another order (a model's id2label, which
                                   bertc_evaluate scores with): looked up one by one */
} LabelSet;

/* Errors name the file and line: an absent cell, an empty label, more than
 * LABELS_MAX labels. */
int bertc_label_set_build(LabelSet *s, Arena *arena, const Dataset *d, int column, bool multi,
                          BertcError *err);
/* The id of a label, -1 when the set has none (a binary search of the
 * sorted names; a scan when s->unsorted). */
int bertc_label_set_id(const LabelSet *s, const char *name, size_t len);

/* ------------------------------------------------------------------------ */
/* Metrics (zoo/train/metrics.c)                                                   */
/* ------------------------------------------------------------------------ */

/* Single-label classification over n examples of C classes: the fraction
 * right and the macro-averaged F1 (the mean over the classes that occur in
 * gold or predictions of 2PR/(P+R), 0 when P+R is 0, as scikit-learn's
 * f1_score(average="macro") over the labels present). */
double bertc_metric_accuracy(const int32_t *gold, const int32_t *pred, int64_t n);
/* One class's precision TP / (TP + FP), recall TP / (TP + FN) and F1
 * 2 TP / (2 TP + FP + FN) (the F1 macro-F1 averages), each 0 when TP is 0. */
void bertc_metric_prf(int64_t tp, int64_t fp, int64_t fn, double *precision, double *recall,
                      double *f1_score);
double bertc_metric_macro_f1(const int32_t *gold, const int32_t *pred, int64_t n, int C);
/* Multi-label: gold and pred are (n, C) 0/1; micro-F1 = 2 TP / (2 TP + FP +
 * FN) over every cell (1 when there is no positive at all). */
double bertc_metric_micro_f1(const uint8_t *gold, const uint8_t *pred, int64_t n, int C);
/* Regression: mean squared error and Pearson's r (0 when either side is
 * constant). Sums in double. */
double bertc_metric_mse(const float *gold, const float *pred, int64_t n);
double bertc_metric_pearson(const float *gold, const float *pred, int64_t n);

/* Entity-level F1 of tag sequences, as seqeval's default (conlleval)
 * scheme: a chunk is a maximal run of one entity type started by B- (or S-),
 * or by I-/E- after O, after another type or after an E-/S-; it counts as
 * found when the prediction has a chunk of the same type over exactly the
 * same positions. gold and pred are the n_seqs sequences one after the
 * other, lengths[s] tags each. F1 = 2 TP / (gold chunks + predicted
 * chunks); 1 when there are none at all. */
double bertc_metric_entity_f1(const char *const *gold, const char *const *pred,
                              const int64_t *lengths, int64_t n_seqs);

/* SQuAD's exact match and F1 of a predicted answer against one gold answer,
 * after its normalize_answer (lowercase, ASCII punctuation and the articles
 * a/an/the removed, whitespace collapsed); F1 over the words in common
 * (each counted as often as both have it). With no words on either side
 * F1 is 1 if both are empty, else 0 (SQuAD 2.0). The caller takes the
 * maximum over the gold answers. */
double bertc_metric_squad_em(const char *pred, const char *gold);
double bertc_metric_squad_f1(const char *pred, const char *gold);

/* ------------------------------------------------------------------------ */
/* A bag-of-words baseline (zoo/train/naive_bayes.c)                        */
/* ------------------------------------------------------------------------ */

/* Multinomial naive Bayes over the words of the texts: what a fine-tuned
 * BERT should beat. A word is a maximal run of ASCII letters and digits,
 * lowercased ("Don't panic, 42!" is don, t, panic, 42); every other byte,
 * UTF-8 of other scripts included, separates words. Fitted on N rows with
 * N_c of class c, T_cw occurrences of word w in class c's texts and V the
 * distinct words of all the training texts:
 *     log_prior[c]          = log(N_c / N)
 *     log_p_word[c * V + v] = log((T_cv + alpha) / (sum_w T_cw + alpha V))
 * alpha = 1 is Laplace smoothing. A text's score for class c is log_prior[c]
 * plus log_p_word[c, v] for each of its words in the vocabulary (each time
 * it occurs); a word the training texts never had is skipped, as
 * scikit-learn's CountVectorizer + MultinomialNB do. */
typedef struct NaiveBayes {
    int C;                  /* classes, ids 0 .. C-1 */
    int64_t V;              /* distinct words of the training texts */
    const char **words;     /* (V) the vocabulary, sorted by strcmp, in the arena */
    double *log_prior;      /* (C); -inf for a class without training rows */
    double *log_p_word;     /* (C, V) */
} NaiveBayes;

/* Fits nb on texts[0..n) with labels[i] in 0..C-1, everything in arena.
 * Errors: n < 1, C < 1, alpha not a finite number > 0, a label out of
 * range (naming its row). */
int bertc_naive_bayes_fit(NaiveBayes *nb, Arena *arena, const char *const *texts,
                          const int32_t *labels, int64_t n, int C, double alpha,
                          BertcError *err);
/* scores (C): each class's log P(c) + sum log P(w | c) for text. */
void bertc_naive_bayes_scores(const NaiveBayes *nb, const char *text, double *scores);
/* The class of the highest score; a tie goes to the lower class id. */
int32_t bertc_naive_bayes_predict(const NaiveBayes *nb, const char *text);

/* The baseline in one call: fitted (alpha 1) on train's rows, the labels
 * the sorted set of train's label column (bertc_label_set_build), scored on
 * held_out's rows; a held-out label the training rows lack (or an absent
 * one) is never right. Errors name the table: a missing column, an absent
 * text or training label, an empty label. */
int bertc_naive_bayes_accuracy(const Dataset *train, const Dataset *held_out,
                               const char *text_column, const char *label_column,
                               double *accuracy, BertcError *err);

#endif /* BERTC_ZOO_DATASET_H */
