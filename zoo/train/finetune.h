/*
 * zoo/train/finetune.h — fine-tuning as one library call: labelled texts (a
 * CSV, TSV or JSONL file, or a table in memory: zoo/train/dataset.h) -> a
 * trained BERT head, saved as a Hugging Face model directory. `bertc
 * finetune` is this call behind its flags (cli/finetune.c), and `make demo`
 * (examples/topics.c) calls it too.
 *
 *     FinetuneOptions o = bertc_finetune_defaults();
 *     o.task = FT_SEQ_CLS;
 *     o.model = "bert-tiny";              // a pretrained model directory, or
 *                                         // o.config_file + o.vocab: from scratch
 *     o.train_file = "reviews.csv";       // columns "text" and "label"
 *     o.out = "reviews-model";
 *     o.epochs = 3;
 *     FinetuneResult r;
 *     BertcError err;
 *     if (bertc_finetune(&o, &r, &err) != 0)
 *         fprintf(stderr, "%s\n", err.msg);
 *     else
 *         printf("held-out %s %.3f\n", r.metric_name, r.best_metric);
 *
 * What the call does:
 *   1. the model: a pretrained model directory of any BERT head (its encoder
 *      is loaded, the new head initialised as from_pretrained does, the keys
 *      it initialised listed by a warning), or a config (a file or in
 *      memory) and a vocabulary from scratch (zoo/train/finetune_model.c);
 *   2. the data: the label set of the training rows (sorted), the rows
 *      shuffled with the seed and 10 % held out unless held-out rows are
 *      given (zoo/train/finetune_data.c);
 *   3. the engine of zoo/train/train.h (AdamW, warmup, progress bar,
 *      checkpoint, exact resume, Ctrl-C saves) over the task's batches
 *      (finetune_task.c; token-cls: finetune_tokens.c; qa windows:
 *      finetune_qa.c; mlm masking: finetune_mlm.c), evaluating the held-out
 *      rows with the task's metrics at every eval_every steps;
 *   4. out/ holds the best evaluation's model (config.json with
 *      id2label/label2id, model.safetensors, vocab.txt,
 *      tokenizer_config.json), written at each better evaluation, and
 *      log.jsonl (one line per evaluation), loss.svg,
 *      checkpoint.safetensors and trainer_state.json (the best metric, for
 *      resume). An out that held something is replaced only when the run
 *      ends with a kept model (FINETUNE_OUT_SWAP, finetune_out.c).
 * A plateau of `patience` evaluations without a better metric ends the run.
 * Everything that can be refused is refused before anything is written.
 *
 * The call prints nothing itself: the engine's progress bar and evaluation
 * lines go to stderr unless train.quiet, warnings go through bertc_warn, and
 * a note (a batch size capped at the data) through `note`. Errors are one
 * line in err; they name an option by its `bertc finetune` flag (--max-len,
 * --epochs), the name a user of either knows.
 */
#ifndef BERTC_ZOO_FINETUNE_H
#define BERTC_ZOO_FINETUNE_H

#include "zoo/train/dataset.h"
#include "zoo/train/train.h"

typedef enum FinetuneKind {
    FT_SEQ_CLS,        /* one label of C: cross-entropy; accuracy, macro-F1 */
    FT_MULTI_LABEL,    /* any of C labels ("a|b"): BCE; micro-F1 */
    FT_REGRESSION,     /* one number: MSE; MSE, Pearson */
    FT_TOKEN_CLS,      /* a tag per word ("tokens"/"tags" lists): CE; entity F1 */
    FT_QA,             /* a span of the context (SQuAD): CE of start and end; F1, EM */
    FT_MLM             /* unlabelled text, 15 % masked: CE; perplexity (lower is better) */
} FinetuneKind;

/* What may already be in out. */
typedef enum FinetuneOutMode {
    FINETUNE_OUT_NEW,      /* out must be new or empty, or be the model being fine-tuned, or
                              hold the checkpoint a resumed run continues */
    FINETUNE_OUT_SWAP,     /* out may hold anything: the run writes beside it
                              (OUT.bertc-staging) and swaps its model in only when it keeps
                              one; an interrupted run leaves out as it was (--force) */
    FINETUNE_OUT_IN_PLACE  /* the run writes into out whatever it holds, its files replaced
                              as it goes (the examples' build/demo) */
} FinetuneOutMode;

typedef struct FinetuneOptions {
    FinetuneKind task;
    /* The model: one of a pretrained directory, a config.json file or a
     * config in memory; the two configs (from scratch) with a vocabulary. */
    const char *model;               /* DIR: config.json, model.safetensors, vocab.txt */
    const char *config_file;
    const BertConfig *config;        /* its sizes, dropout, ...: the head is set by the task */
    const char *vocab;               /* vocab.txt, with a config */
    /* The data: a file or a table in memory for each side. */
    const char *train_file;          /* .csv, .tsv, .jsonl (SQuAD JSON too); token-cls also
                                        CoNLL columns (.conll, .txt) */
    const Dataset *train_data;       /* instead of train_file */
    const char *eval_file;           /* held-out rows; neither: 10 % of the training rows */
    const Dataset *eval_data;
    /* Columns; NULL: the task's default. text: "text" (else "sentence"),
     * token-cls "tokens", qa "question"; pair: none, qa "context"; label:
     * "label", token-cls "tags", qa "answers.text" (with answers.answer_start). */
    const char *text_column, *text_pair_column, *label_column;
    int64_t max_len;                 /* tokens an example (qa: a window); 0: 128, lowered to
                                        the model's max_position_embeddings */
    int64_t doc_stride;              /* qa: context tokens two windows share; -1:
                                        min(128, max_len / 2), capped to fit */
    int64_t stride;                  /* seq-cls, multi-label, regression: a text longer
                                        than max_len is read whole, in windows sharing
                                        stride tokens (each a training example with the
                                        row's label; evaluated by the mean of the
                                        windows' logits); -1: truncated */
    int64_t epochs;                  /* passes over the training rows when train.steps is 0 */
    int64_t patience;                /* evaluations without a better metric that end the run
                                        (0: never) */
    /* The engine's options (zoo/train/train.h), with four defaults of the
     * task's: steps 0 (from epochs), lr 0 (bertc_finetune_default_lr: by the width of
     * a pretrained model, 5e-5 at H = 768, 7.3e-4 at H = 128; 5e-4
     * from scratch), eval_every -1 (a tenth of the run; 0: only at the end),
     * checkpoint_every -1 (= eval_every); checkpoint NULL:
     * OUT/checkpoint.safetensors. batch_size is capped at the training
     * examples; task_fields are the task's own (max_len, doc_stride). */
    TrainOptions train;
    const char *out;                 /* the model directory */
    FinetuneOutMode out_mode;
    /* A note for the user (NULL: through bertc_warn), as "--batch-size 64
     * is more than the 20 training rows: batches of 20". */
    void (*note)(void *user, const char *msg);
    void *note_user;
} FinetuneOptions;

/* The options of `bertc finetune` without flags: seq-cls, 3 epochs, batch
 * size 16, max_len 0 (128), seed 42, FINETUNE_OUT_NEW. model or config, the
 * training data and out are the caller's. */
FinetuneOptions bertc_finetune_defaults(void);

typedef struct FinetuneResult {
    TrainResult train;         /* the engine's: steps done, time, tokens/s, the loss curve,
                                  interrupted, stopped_early (a plateau) */
    int64_t steps;             /* the run's steps (train.steps_done below it, without a
                                  plateau: cut short by train.stop_after) */
    int64_t batch_size;        /* as trained (capped at the training examples) */
    int64_t n_train, n_eval;   /* training and held-out rows */
    int64_t n_parameters;
    const char *metric_name;   /* "accuracy", "micro_f1", "pearson", "entity_f1", "f1",
                                  "perplexity" */
    double best_metric;        /* the kept model's held-out metric (perplexity: the lowest);
                                  NaN without held-out rows, -inf (perplexity: inf) when no
                                  evaluation gave a number */
    double baseline;           /* seq-cls: the majority class's held-out accuracy; else NaN */
    bool kept;                 /* the run ended with its model in out */
    char dir[BERTC_PATH_MAX];  /* where the run wrote: out, or OUT.bertc-staging beside it
                                  ("" before it was decided) */
    bool out_untouched;        /* a run staged beside out that kept no model: out is as it
                                  was, the run's checkpoint and files are in dir */
} FinetuneResult;

/* Runs o (see the top) and fills r, also on an error (r->dir and
 * r->out_untouched say where an interrupted run's checkpoint is). 0 when the
 * run ended with a kept model or stopped at train.stop_after; -1 with err
 * set otherwise. An interruption (SIGINT, SIGTERM) is an error with
 * r->train.interrupted set; the program should then exit with 128 +
 * bertc_train_stop_signal(). */
int bertc_finetune(const FinetuneOptions *o, FinetuneResult *r, BertcError *err);

/* The learning rate a run takes when train.lr is 0. From scratch 5e-4. From
 * a pretrained model it follows the model's width H, 5e-5 * (768 / H)^1.5
 * at most 1e-3: Hugging Face's 5e-5 for BERT-base (H = 768), 3.2e-5 for
 * BERT-large (H = 1024, where 2e-5..3e-5 is the usual range), 2.6e-4 at
 * H = 256 and 7.3e-4 at H = 128, where a small model needs larger steps
 * (docs/pretraining.md has the measurements). */
double bertc_finetune_default_lr(const BertConfig *cfg, bool pretrained);

/* The task's main metric: "accuracy", "micro_f1", ... as in FinetuneResult. */
const char *bertc_finetune_metric_name(FinetuneKind kind);
/* The second metric log.jsonl has: "macro_f1" (seq-cls), "mse" (regression),
 * "exact_match" (qa); NULL for the others. */
const char *bertc_finetune_metric2_name(FinetuneKind kind);
/* The task as `bertc finetune --task` names it: "seq-cls", "multi-label",
 * "regression", "token-cls", "qa", "mlm". */
const char *bertc_finetune_task_name(FinetuneKind kind);

/* ---- zoo/train/finetune_evaluate.c: scoring a labelled file ------------- */

/* A fine-tuned model directory scored on a labelled file exactly as a
 * `bertc finetune` run scores its held-out rows (`bertc evaluate`):
 *
 *     EvaluateOptions o = {.model = "reviews-model", .data_file = "test.csv"};
 *     EvaluateResult r;
 *     if (bertc_evaluate(&o, &r, &err) == 0)
 *         printf("%s %.4f over %lld rows\n", r.metric_name, r.metric, (long long)r.n);
 *     bertc_evaluate_free(&r);
 *
 * The file is read by fine-tuning's readers with its columns (and their
 * defaults); the task is the model's (its head and problem_type); a label
 * maps to the model's id by its config.json's id2label, and one the model
 * does not have is an error naming the file's line. The rows are scored by
 * bertc_finetune_evaluate_rows, every evaluation of a run's own function,
 * in batches of 32 unless batch_size says otherwise, truncated to max_len
 * (0: as fine-tuning's default): on the held-out file of a run, its metric
 * and loss are those of the model's evaluation in log.jsonl. Masked-LM
 * models are refused (their perplexity depends on the run's masking), as
 * are heads fine-tuning does not train. */
typedef struct EvaluateOptions {
    const char *model;                 /* DIR: config.json, model.safetensors, vocab.txt */
    const char *data_file;             /* .csv, .tsv, .jsonl (SQuAD JSON too); token-cls CoNLL */
    const Dataset *data;               /* instead of data_file */
    const char *text_column, *text_pair_column, *label_column;   /* NULL: finetune's */
    int64_t max_len;                   /* 0: as finetune (model_max_length up to 512) */
    int64_t batch_size;                /* 0: 32, as finetune's evaluation */
    int64_t stride;                    /* -1: truncate; else windows, as FinetuneOptions */
    WindowAggregate aggregate;         /* with stride: how a row's windows' logits combine */
} EvaluateOptions;

/* One class's scores: precision, recall and F1 (0 when undefined, as
 * scikit-learn's zero_division=0), and its gold count. */
typedef struct EvaluateClass {
    const char *label;
    double precision, recall, f1;
    int64_t support;
} EvaluateClass;

typedef struct EvaluateResult {
    FinetuneKind task;
    int64_t n;                  /* rows scored (token-cls: sentences, qa: questions) */
    const char *metric_name;    /* as FinetuneResult's */
    double metric;
    const char *metric2_name;   /* "macro_f1", "mse", "exact_match"; NULL: none */
    double metric2;
    double loss;                /* the mean loss over the rows (qa: the windows) */
    int32_t max_len;            /* the tokens a row was truncated to */
    int64_t truncated;          /* rows longer than max_len (seq-cls, multi-label,
                                   regression) */
    int C;                      /* classes (seq-cls, multi-label, token-cls tags); 0 else */
    int64_t *confusion;         /* (C, C) [true, predicted] counts: seq-cls, and token-cls
                                   over words (a truncated word's prediction is its O, else
                                   tag 0); NULL for multi-label */
    EvaluateClass *per_class;   /* (C) */
    Arena *arena;               /* holds the arrays; bertc_evaluate_free */
} EvaluateResult;

/* Scores o (see above) into r; -1 with err set otherwise (r then holds
 * nothing to free, and bertc_evaluate_free of it is harmless). */
int bertc_evaluate(const EvaluateOptions *o, EvaluateResult *r, BertcError *err);
void bertc_evaluate_free(EvaluateResult *r);

#endif /* BERTC_ZOO_FINETUNE_H */
