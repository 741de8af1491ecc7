/* zoo/train/finetune_internal.h — the pieces of bertc_finetune
 * (zoo/train/finetune.h), shared by its files and their tests, not
 * installed: finetune.c runs it; finetune_model.c opens the base model and
 * builds the task's head; finetune_data.c reads the rows; finetune_task.c
 * makes them the engine's TrainTask and evaluates; finetune_tokens.c,
 * finetune_qa.c and finetune_mlm.c are the tasks with batches of their own;
 * finetune_out.c is the output directory. */
#ifndef BERTC_ZOO_FINETUNE_INTERNAL_H
#define BERTC_ZOO_FINETUNE_INTERNAL_H

#include "zoo/train/finetune.h"

#include <stdio.h>

/* The scores of one evaluation: the main metric, then the second
 * (macro-F1, MSE; NaN for multi-label). */
typedef struct EvalRecord {
    double loss;
    double metric[2];
} EvalRecord;

/* The examples, train rows first: [0, n_train) are trained on, [n_train, n)
 * scored. */
typedef struct FinetuneData {
    FinetuneKind kind;
    int64_t n, n_train;
    TextExample *ex;          /* (n) */
    const char **origin;      /* (n) "train.csv:7": the file and line of each */
    int32_t *label;           /* (n) seq-cls class ids */
    float *target;            /* (n, C) multi-label 0/1, (n) regression */
    LabelSet labels;          /* seq-cls and multi-label; n = 1 for regression */
    const char *labels_of;    /* whose labels they are, in the error for a label not among
                                 them: NULL "the training data", bertc_evaluate "the model" */
    const Tokenizer *tok;
    const Model *model;
    const char *name;         /* the training file, for messages */
    uint64_t seed;            /* mlm: the held-out rows' masking */
    int32_t max_len;
    int32_t eval_batch;       /* rows (qa: windows) a forward of an evaluation; 0: 32 */
    /* evaluation: predictions of the held-out rows, the best so far, the plateau */
    int32_t *pred_class;      /* (n - n_train) */
    uint8_t *pred_set, *gold_set;   /* (n - n_train, C) */
    float *pred_value;        /* (n - n_train) */
    /* token-cls: example e has words word_off[e] .. word_off[e + 1] - 1 */
    int64_t *word_off;        /* (n + 1) */
    int32_t *word_cp;         /* (W) a word's first code point in the example's text */
    int32_t *word_tag;        /* (W) its tag */
    int32_t *pred_tag;        /* (W) the predicted tag (held-out rows) */
    /* qa */
    const char **answers;     /* (n) the gold answers, '|'-joined */
    int32_t *span;            /* (n, 2) the first answer's [start, end) code points;
                                 -1 -1: no answer (SQuAD v2.0's is_impossible) */
    bool qa_negative;         /* some question has no answer: the [CLS] may win */
    double qa_em, qa_f1;      /* sums over the held-out rows of this evaluation */
    /* windows (features) of qa's contexts, or of long texts (text_stride >= 0):
     * feature f is window feat_win[f] of row feat_row[f]; train rows' features
     * first */
    int32_t doc_stride;       /* -1: min(128, max_len / 2), capped to fit */
    int32_t text_stride;      /* seq-cls, multi-label, regression; -1: truncate */
    int64_t n_feat, n_feat_train;
    int64_t *feat_row;        /* (n_feat) */
    int32_t *feat_win;        /* (n_feat) */
    Encoding *feat_enc;       /* (n_feat) text windows: each one's tokens */
    float *win_logits;        /* (n - n_train, C) text windows: a held-out row's logits */
    int32_t *win_count;       /* (n - n_train) its windows */
    WindowAggregate aggregate;   /* how they combine (finetune: the mean) */
    int32_t *qa_L, *qa_step;  /* (n) context tokens a window, start to start */
    float *qa_best;           /* (n - n_train) the best span score over a row's windows */
    float *qa_null;           /* (n - n_train) the lowest [CLS] score over them */
    int32_t *qa_pred;         /* (n - n_train, 2) its bytes [start, end) in the context */
    const char *out;          /* the model directory, written at each new best */
    int64_t patience, bad_evals;
    double best;              /* the main metric's best (higher is better: perplexity's
                                 negation; -inf: none) */
    bool saved;               /* the model directory was written */
    int n_evals, best_eval;   /* evaluations of this run; the best one's index (-1: none) */
    EvalRecord evals[TRAIN_MAX_POINTS];
} FinetuneData;

/* "the training data", or data->labels_of. */
static inline const char *bertc_finetune_labels_of(const FinetuneData *data)
{
    return data->labels_of ? data->labels_of : "the training data";
}

/* A note for the user of a run (fine-tuning's, pretraining's): through
 * note(user, msg) when the caller gave one, else bertc_warn. */
void bertc_train_note(void (*note)(void *user, const char *msg), void *user, const char *fmt,
                      ...) __attribute__((format(printf, 3, 4)));

/* One base for a run (fine-tuning's, pretraining's; `who` names it in the
 * message): a model directory, or a config file or a config in memory with a
 * vocabulary. */
int bertc_finetune_check_base(const char *who, const char *model, const char *config_file,
                              const BertConfig *config, const char *vocab, BertcError *err);

/* ---- zoo/train/finetune_model.c: the base model and the task's head --- */

#define FINETUNE_MAX_LEN 128   /* the examples' length when max_len is 0, from scratch */
#define FINETUNE_MAX_LEN_MODEL 512   /* ... from a model directory: its model_max_length,
                                        at most this */

/* What a run starts from: the config and tokenizer of a pretrained model
 * directory (and its weights), or of a config and a vocabulary. */
typedef struct FinetuneBase {
    BertConfig cfg;
    Tokenizer tok;
    char weights[BERTC_PATH_MAX];     /* "" from scratch */
    int32_t model_max_length;         /* a model directory's (tokenizer_config.json, else its
                                         positions); 0 from scratch */
    const char *config_file;          /* for messages; NULL: a config in memory */
    Arena *arena;                     /* what the model directory opened */
} FinetuneBase;

int bertc_finetune_open_base(const FinetuneOptions *o, FinetuneBase *b, BertcError *err);
void bertc_finetune_close_base(FinetuneBase *b);
/* The task's model on b: b's config with the head of data->kind (its
 * labels), data->max_len and doc_stride checked against it, built, its
 * weights drawn from the run's seed and the encoder loaded from b. */
int bertc_finetune_build_model(const FinetuneOptions *o, const FinetuneBase *b, FinetuneData *data,
                               Model *m, Arena *arena, BertcError *err);
/* data->max_len (and doc_stride) for a model of config cfg on b: o->max_len,
 * else b's model_max_length (at most 512), else 128; at most cfg's
 * max_position_embeddings, with room for the rows' special tokens. */
int bertc_finetune_max_len(const FinetuneOptions *o, const FinetuneBase *b, const BertConfig *cfg,
                           FinetuneData *data, BertcError *err);

/* ---- zoo/train/finetune_data.c: the rows -------------------------------- */

/* How rows [first, first + n) of data (their text and pair) fit max_len:
 * the lengths text windows recorded, else the tokenizer run once more on
 * each, untruncated. */
typedef struct FinetuneLengths {
    int64_t rows, truncated;   /* rows counted, and those longer than max_len */
    int64_t tokens, cut;       /* their tokens untruncated, and those past max_len */
    int64_t longest;
} FinetuneLengths;
void bertc_finetune_lengths(const FinetuneData *data, int64_t first, int64_t n,
                            FinetuneLengths *len);

/* o's training and held-out tables as data's examples (train rows first),
 * the label set built from the training rows; without held-out rows, the
 * rows shuffled with the seed and the last 10 % held out. */
int bertc_finetune_load_data(const FinetuneOptions *o, FinetuneData *data, Arena *arena,
                             BertcError *err);
/* o's held-out table alone (eval_file or eval_data) as data's examples, all
 * of them scored (n_train 0), with the label set the caller put in
 * data->labels (bertc_evaluate: the model's). */
int bertc_finetune_load_held_out(const FinetuneOptions *o, FinetuneData *data, Arena *arena,
                                 BertcError *err);

/* ---- zoo/train/finetune_task.c: the engine's task ------------------------ */

/* Logits a row of the rows' tasks: 1 for regression, else one a label. */
int bertc_finetune_row_logits(const FinetuneData *data);

/* The columns of d (text, optional pair, label) as examples rows[first ..]
 * of data (its arrays allocated for all rows by the caller); labels not in
 * data->labels, and regression targets that are not finite float32 numbers, are
 * errors naming the file and line. */
int bertc_finetune_add_rows(FinetuneData *data, int64_t first, const Dataset *d, int text, int pair,
                            int label, BertcError *err);
/* The TrainTask of data: make_batch tokenizes with batch_from_text and
 * adds "labels"; evaluate scores the held-out rows, logs, saves the best
 * model to data->out, and counts evaluations without improvement. */
TrainTask bertc_finetune_task(FinetuneData *data);
/* The held-out rows [n_train, n) (qa: their windows) scored by m in
 * batches of data->eval_batch: the mean loss and the task's metrics into
 * rec, the predictions into data's pred_* arrays. Every evaluation of a run
 * and bertc_evaluate are this call. */
int bertc_finetune_evaluate_rows(FinetuneData *data, Model *m, Graph *g, EvalRecord *rec,
                                 BertcError *err);
/* One JSON line per evaluation of the run res into log: step, train_loss,
 * eval_loss, the metrics, best (true on the one saved). */
void bertc_finetune_write_log(const FinetuneData *data, const TrainResult *res, FILE *log);
/* The majority-class accuracy of the held-out rows (seq-cls), else NaN. */
double bertc_finetune_majority_baseline(const FinetuneData *data);

/* ---- zoo/train/finetune_out.c: the output directory, never losing its model --- */

/* Where a run writes (the file's head comment tells the whole story). */
typedef struct FinetuneOut {
    const char *out;                  /* --out as given, for messages */
    char target[BERTC_PATH_MAX];      /* --out resolved (realpath when it exists) */
    char staging[BERTC_PATH_MAX];     /* target + ".bertc-staging" */
    char old[BERTC_PATH_MAX];         /* target + ".bertc-old", during the swap */
    const char *dir;                  /* where the run writes: out or staging; NULL
                                         until planned */
    bool staged;                      /* writing into staging, swapped in when kept */
    bool made;                        /* o->dir made: the run has started */
    bool kept;                        /* the swap has been made */
} FinetuneOut;

/* Decides where the run writes and checks it, writing nothing: --out new
 * or empty (or resume with a checkpoint in it): --out itself; --out
 * holding something: refused with FINETUNE_OUT_NEW (unless it is the
 * directory `model`, fine-tuned in place), else the staging directory
 * (FINETUNE_OUT_SWAP), as is an existing staging directory (resume
 * continues there); FINETUNE_OUT_IN_PLACE: --out itself. Refused too: a
 * file of the run there that is not a regular file (a FIFO
 * trainer_state.json), and a swap an earlier run left half done. */
int bertc_finetune_out_plan(FinetuneOut *o, const char *out, const char *model,
                            FinetuneOutMode mode, bool resume, BertcError *err);
/* Right before the first step: o->dir made and checked writable; a new
 * run in the staging directory first removes what an earlier run left. */
int bertc_finetune_out_make(FinetuneOut *o, bool resume, BertcError *err);
/* The run has kept a model: a staged one is swapped into --out (nothing
 * to do for a run written into --out itself). */
int bertc_finetune_out_commit(FinetuneOut *o, BertcError *err);

/* ---- zoo/train/finetune_tokens.c: token classification ---------------------- */

/* Rows of '|'-joined words and tags (columns `words`, `tags`) as examples
 * first.. of data (word_off[first] set by the caller); a word count that is
 * not the tag count, or a tag not in data->labels, is an error naming the
 * file and line. */
int bertc_finetune_token_rows(FinetuneData *data, int64_t first, const Dataset *d, int words,
                              int tags, Arena *arena, BertcError *err);
/* The batch of examples idx[0..n) with "labels" (n, S): each word's tag on its
 * first WordPiece, -100 elsewhere; pos[j][w] receives the position of word w
 * of example j (-1: truncated away). */
int bertc_finetune_token_batch(const FinetuneData *data, const Model *m, const int64_t *idx,
                               int64_t n, Graph *g, Batch *b, int32_t **pos, int64_t *tokens,
                               BertcError *err);
/* data->pred_tag of the words of examples idx[0..n) from logits (n, S, C). */
void bertc_finetune_token_predict(FinetuneData *data, const float *logits, int64_t S,
                                  const int64_t *idx, int64_t n, int32_t *const *pos);
/* Entity F1 of the held-out rows' predicted tags. */
double bertc_finetune_token_score(const FinetuneData *data, Arena *scratch);

/* ---- zoo/train/finetune_qa.c: extractive question answering ----------------- */

/* Rows with columns col[0..3] = question, context, answers.text,
 * answers.answer_start as examples first..; an answer_start that does not
 * point at the answer's text is an error naming the file and line. A row
 * whose answers are both empty (SQuAD v2.0's unanswerable question) is
 * trained on the [CLS] and sets data->qa_negative. */
int bertc_finetune_qa_rows(FinetuneData *data, int64_t first, const Dataset *d, const int *col,
                           BertcError *err);
/* The windows of every row (data->tok, max_len and doc_stride set): a
 * context longer than a window after its question becomes windows of L
 * context tokens overlapping by the stride, as run_qa's
 * prepare_train_features; a question that leaves no room is an error. */
int bertc_finetune_qa_windows(FinetuneData *data, Arena *arena, BertcError *err);

/* ---- zoo/train/finetune_windows.c: long texts in windows ---------------- */

/* With data->text_stride >= 0 (seq-cls, multi-label, regression): every
 * row's windows (bertc_encoding_windows; a text that fits is one) as
 * features, the training rows' first. Nothing to do otherwise. */
int bertc_finetune_text_windows(FinetuneData *data, Arena *arena, BertcError *err);
/* The rows' text is read in windows (features) rather than truncated. */
bool bertc_finetune_text_windowed(const FinetuneData *data);
/* What the engine draws training batches from: qa's and long texts'
 * windows, else the training rows. */
int64_t bertc_finetune_train_examples(const FinetuneData *data);
/* The batch of features (windows) idx[0..n) with start_positions and
 * end_positions (0 0 when the answer is not wholly in the window); *enc
 * receives the windows' encodings (for the spans' offsets). */
int bertc_finetune_qa_batch(const FinetuneData *data, const Model *m, const int64_t *idx, int64_t n,
                            Graph *g, Batch *b, Encoding **enc, int64_t *tokens, BertcError *err);
/* An evaluation: begin, predict the held-out features idx[0..n) from their
 * start/end logits (n, S) keeping each row's best span over its windows,
 * end: the SQuAD EM and F1 sums over the held-out rows in data->qa_em,
 * qa_f1. */
void bertc_finetune_qa_begin_eval(FinetuneData *data);
void bertc_finetune_qa_predict(FinetuneData *data, const float *start_logits,
                               const float *end_logits, int64_t S, const int64_t *idx, int64_t n,
                               const Encoding *enc);
void bertc_finetune_qa_end_eval(FinetuneData *data);

/* ---- zoo/train/finetune_mlm.c: masked language modelling ---------------------- */

/* The batch of examples idx[0..n) with 15 % of the real tokens masked
 * (80/10/10) and "labels" the original ids there, -100 elsewhere: drawn
 * from g->rng in training, from data->seed + the row when eval. *masked
 * receives the number of labelled positions. */
int bertc_finetune_mlm_batch(const FinetuneData *data, const Model *m, const int64_t *idx,
                             int64_t n, Graph *g, Batch *b, bool eval, int64_t *tokens,
                             int64_t *masked, BertcError *err);

#endif /* BERTC_ZOO_FINETUNE_INTERNAL_H */
