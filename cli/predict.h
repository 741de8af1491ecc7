/* cli/predict.h — the parts of `bertc predict` (cli/predict.c: the tasks
 * and the driver; cli/predict_qa.c: question answering in windows;
 * cli/predict_print.c: the TSV and JSONL lines). */
#ifndef BERTC_CLI_PREDICT_H
#define BERTC_CLI_PREDICT_H

#include "cli/cli.h"
#include "zoo/train/pipeline.h"

/* --aggregate: a long text's logits from its windows'. */

typedef struct PredictRun {
    CliModel *cm;
    ModelTask task;       /* the architecture's (ModelArch.task) */
    bool jsonl;
    int top_k;            /* -1: not given */
    int context;          /* --context, -1: not given */
    int stride;           /* --stride, -1: not given */
    WindowAggregate aggregate;
    int batch_size;
    int32_t max_len;
    const char **labels;  /* n_labels names: id2label, else LABEL_i */
    int n_labels;
    CliRunStats stats;    /* the run's inputs, truncations, tokens, time */
} PredictRun;

/* One [MASK] of a fill-mask input: its bytes in the text and its k best
 * token ids (ids) with their probabilities (score). */
typedef struct PredictMask {
    int32_t byte_start, byte_end;
    int *ids;
    float *score;
    int k;
} PredictMask;

/* A question's answer: its score and its span in the context. */
typedef struct PredictAnswer {
    float score;
    int32_t start, end, byte_start, byte_end;   /* code points and bytes, end exclusive */
} PredictAnswer;

/* "line 3" (of --input) or "text 1" (a positional) in a static buffer. */
const char *predict_input_name(const CliText *t, int index);

/* The encoding of input i that the model was given (b->enc, kept by its
 * batch_from_text), for its tokens and offsets; an error naming the
 * architecture when its batch keeps none. */
const Encoding *predict_batch_encoding(const PredictRun *r, const Batch *b, int i,
                                       BertcError *err);

/* Question answering on input t (index among the inputs): its question
 * with its context. */
int predict_qa_one(PredictRun *r, Graph *g, const CliText *t, int index, BertcError *err);

/* The results of input t, whose index among the inputs is index (its
 * number, cli_text_number, leads every JSONL object as "line"). */
void predict_print_classes(const PredictRun *r, const CliText *t, int index, const float *logits,
                           int C);
void predict_print_entities(const PredictRun *r, const CliText *t, int index, const Entity *e,
                            int n);
void predict_print_masks(const PredictRun *r, const CliText *t, int index, const PredictMask *m,
                         int n);
void predict_print_sentences(const PredictRun *r, const CliText *t, int index,
                             const char *const *sents, const float *scores, int n);
void predict_print_answer(const PredictRun *r, const CliText *t, int index,
                          const PredictAnswer *a);
/* A blank input's result: an empty line where the task prints a line per
 * input (classification, question answering), nothing where its lines
 * carry the input's number; in JSONL its object without results. */
void predict_print_blank(const PredictRun *r, const CliText *t, int index);

#endif
