/*
 * zoo/models/batch.h — a model's named inputs (Batch) and named outputs
 * (Outputs), with the input checks every architecture shares
 * (zoo/models/batch.c).
 */
#ifndef BERTC_ZOO_MODELS_BATCH_H
#define BERTC_ZOO_MODELS_BATCH_H

#include "nn/nn.h"

/* ------------------------------------------------------------------------ */
/* Batch: the named inputs of one forward                                    */
/* ------------------------------------------------------------------------ */

#define BATCH_MAX 32

typedef struct BatchItem {
    const char *name;
    bool is_int;
    ITensor ids;          /* integer inputs (ids, masks, labels, positions) */
    Tensor f32;           /* float inputs (regression / multi-label labels) */
} BatchItem;

/* The names a model looked up in a batch (bertc_batch_find, bertc_batch_ids, bertc_batch_f32),
 * present in it or not: bertc_model_forward refuses an input the model never
 * looked up (a misspelled 'attention_masks' would otherwise be ignored) and
 * lists these as the names it reads. */
#define BATCH_LOOKUPS_MAX 64
typedef struct BatchLookups {
    int n;
    bool overflow;        /* more distinct names than fit: no check */
    const char *names[BATCH_LOOKUPS_MAX];
} BatchLookups;

struct Encoding;

typedef struct Batch {
    const char *source;   /* named in messages: the inputs file, or "batch" */
    int n;
    BatchItem items[BATCH_MAX];
    BatchLookups *lookups;   /* NULL, or where lookups are recorded (bertc_model_forward) */
    /* A batch made from text (bertc_text_batch_put): the tokenizer's
     * encoding of each of its n_enc examples, kept so that a caller reads
     * the tokens, offsets and untruncated lengths the model was given
     * without tokenizing the text again. NULL (n_enc 0) for any other. */
    const struct Encoding *enc;
    int n_enc;
} Batch;

void bertc_batch_init(Batch *b, const char *source);
void bertc_batch_put_ids(Batch *b, const char *name, ITensor t);
void bertc_batch_put_f32(Batch *b, const char *name, Tensor t);
/* Every tensor of a safetensors file: I64/I32/U8/BOOL become ITensor (range
 * checked), F32/F16/BF16/F64 become Tensor. */
int bertc_batch_from_safetensors(Batch *b, const SafeTensors *st, Arena *arena, BertcError *err);
const BatchItem *bertc_batch_find(const Batch *b, const char *name);

/* A required integer input with ndim dims; shape[i] == -1 accepts any size,
 * otherwise it must match. Errors name the source, the tensor and both
 * shapes ("inputs.safetensors: 'input_ids' must be (B, S) = [2, 16], got
 * [2, 17]"). A float tensor where ids are expected is an error too. */
int bertc_batch_ids(const Batch *b, const char *name, int ndim, const int64_t *shape, ITensor *out,
              BertcError *err);
int bertc_batch_f32(const Batch *b, const char *name, int ndim, const int64_t *shape, Tensor *out,
              BertcError *err);
/* Every value in [lo, hi): else an error naming the tensor, the position,
 * the value and the limit ("'input_ids'[1, 5] = 30522 is >= vocab_size 30522"). */
int bertc_batch_check_range(const Batch *b, const char *name, const ITensor *t, int64_t lo,
                      int64_t hi, const char *limit_name, BertcError *err);
/* Every value 0 or 1 (masks, 0/1 labels): else an error naming the tensor,
 * the position and the value ("'mask_cls'[1, 2] = 2 is neither 0 nor 1"). */
int bertc_batch_check_binary(const Batch *b, const char *name, const ITensor *t, BertcError *err);
/* Every value finite and in [lo, hi] (float labels: a NaN or infinite target
 * would only make the loss and every gradient NaN): else an error naming the
 * tensor, the position and the value ("'labels'[1, 2] = nan is not a finite
 * number"). */
int bertc_batch_check_real(const Batch *b, const char *name, const Tensor *t, double lo, double hi,
                     BertcError *err);
/* Every input of b was looked up (b->lookups): else an error naming the first
 * one nobody read and listing the names `model` reads. */
int bertc_batch_check_all_read(const Batch *b, const char *model, BertcError *err);

/* ------------------------------------------------------------------------ */
/* Outputs: the named results of one forward                                 */
/* ------------------------------------------------------------------------ */

typedef struct OutputItem {
    const char *name;
    Var *var;             /* float outputs */
    ITensor ids;          /* integer outputs (written as I64) */
    bool is_int;
} OutputItem;

typedef struct Outputs {
    int n;
    /* Set by a caller that reads only "loss" (training): a model may then
     * skip outputs that cost memory, e.g. BertForMaskedLM's (B, S, V) logits.
     * bertc_outputs_init clears it. */
    bool loss_only;
    /* Set by a caller that reads only the final outputs (logits, loss,
     * last_hidden_state, pooler_output; predict, a benchmark): a model may
     * then skip the per-layer maps ("layers.{l}.attention_probs", ...), which a
     * no_grad forward otherwise copies out of every layer's temporaries
     * (zoo/models/bert_inference.c). bertc_outputs_init clears it. */
    bool final_only;
    int cap;
    OutputItem *items;    /* in the graph's step arena, grown as outputs are put */
} Outputs;

void bertc_outputs_init(Outputs *o);
/* The name is copied into the graph's step arena (printf-style). */
void bertc_outputs_put(Outputs *o, Graph *g, Var *v, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void bertc_outputs_put_ids(Outputs *o, Graph *g, ITensor t, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
Var *bertc_outputs_get(const Outputs *o, const char *name);     /* NULL if absent */

#endif /* BERTC_ZOO_MODELS_BATCH_H */
