/*
 * zoo/train/pipeline.h — what `bertc predict` and `bertc embed` do to a model's
 * outputs (the task they answer is the architecture's ModelArch.task), kept
 * out of the CLI so each step is tested alone: softmax and top-k, the best
 * answer span of a question answering head, B-/I- tags grouped into
 * entities, and sentence embeddings pooled as sentence-transformers pools
 * them. The rules are Hugging Face's
 * pipelines' (transformers 4.x: TextClassificationPipeline,
 * TokenClassificationPipeline with aggregation_strategy="simple",
 * QuestionAnsweringPipeline, FillMaskPipeline) and sentence-transformers'
 * Pooling and Normalize modules.
 *
 *     float p[3];
 *     bertc_softmax((float[]){1, 2, 3}, 3, p);      // 0.090 0.245 0.665
 *     int top[2];
 *     bertc_top_k(p, 3, 2, top);                    // 2 1
 */
#ifndef BERTC_ZOO_PIPELINE_H
#define BERTC_ZOO_PIPELINE_H

#include "zoo/zoo.h"

/* ---- scores ------------------------------------------------------------- */

/* p = softmax(x), x and p (n), accumulated in double (the max subtracted
 * first, so large logits do not overflow). p may be x. */
void bertc_softmax(const float *x, int n, float *p);
/* 1 / (1 + exp(-x)), stable for large |x|. */
float bertc_sigmoid(float x);
/* The indices of the k largest of x (n), largest first, ties to the lower
 * index; k is capped at n. Returns how many were written. */
int bertc_top_k(const float *x, int n, int k, int *idx);

/* ---- question answering ------------------------------------------------- */

/* HF's QuestionAnsweringPipeline defaults. */
#define QA_MAX_ANSWER_LEN 15      /* tokens, end - start + 1 */
#define QA_MAX_SEQ_LEN 384        /* a window's tokens, at most model_max_length */
#define QA_DOC_STRIDE 128         /* overlap of two windows, at most max_seq_len / 2 */

typedef struct QaSpan {
    int start, end;       /* token positions, start <= end, inclusive */
    float score;          /* p_start[start] * p_end[end] */
} QaSpan;

/* The best answer in one window of S tokens, as HF's postprocess: the
 * softmax of start and of end logits over the context tokens
 * (is_context[t]) and position 0 ([CLS], which the pipeline leaves
 * unmasked), then [CLS] dropped; the span maximising p_start * p_end with
 * start <= end < start + max_answer_len, both in the context. Returns -1
 * when the window has no context token. */
int bertc_qa_best_span(const float *start_logits, const float *end_logits,
                       const bool *is_context, int S, int max_answer_len, QaSpan *out);

/* ---- token classification ----------------------------------------------- */

/* One token's prediction: its argmax label, that label's softmax score and
 * its span in the text (code points and bytes, end exclusive). */
typedef struct TokenTag {
    int label;
    float score;
    int32_t start, end, byte_start, byte_end;
} TokenTag;

/* A group of tokens with one entity type: "PER" from B-PER I-PER. */
typedef struct Entity {
    const char *group;    /* the label without "B-"/"I-" (points into the label name) */
    int group_len;
    float score;          /* the mean of its tokens' scores */
    int32_t start, end, byte_start, byte_end;
} Entity;

/* HF's group_entities (aggregation_strategy="simple"): a token joins the
 * group before it when it has the same type and is not a "B-"; a label
 * without B-/I- is its own type and continues like an "I-". Groups of type
 * "O" are dropped. names[c] is label c's name. out holds at most n; returns
 * how many. */
int bertc_group_entities(const TokenTag *tags, int n, const char *const *names, Entity *out);

/* ---- extractive summarization -------------------------------------------- */

/* The sentences of text (len bytes) as byte ranges [start[i], end[i]),
 * spaces around each trimmed: a sentence ends after '.', '!' or '?' (and
 * any closing quotes or brackets after it) that is followed by white space
 * or the end of the text. At most cap are written (the last takes the
 * rest); returns how many. */
int bertc_split_sentences(const char *text, size_t len, int32_t *start, int32_t *end, int cap);

/* ---- sentence embeddings ------------------------------------------------ */

typedef enum Pooling { POOL_MEAN, POOL_CLS } Pooling;

/* One sequence's embedding from its hidden states h (S, H) and 0/1 mask
 * (S) into out (H): POOL_MEAN is sentence-transformers' mean pooling,
 * sum_t mask[t] h[t] / max(sum_t mask[t], 1e-9), accumulated in double;
 * POOL_CLS is h[0]. */
void bertc_pool(Pooling p, const float *h, const int32_t *mask, int64_t S, int64_t H,
                float *out);
/* v / max(||v||_2, 1e-12), as torch.nn.functional.normalize. */
void bertc_l2_normalize(float *v, int64_t n);

#endif /* BERTC_ZOO_PIPELINE_H */
