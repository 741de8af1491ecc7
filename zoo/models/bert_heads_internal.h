/* zoo/models/bert_heads_internal.h — what the Hugging Face BERT heads share
 * (zoo/models/bert_head_parts.c): the "bert." prefix rule of their checkpoints, the
 * classifier_dropout rule and the checks of class labels. Not public. */
#ifndef BERTC_ZOO_BERT_HEADS_INTERNAL_H
#define BERTC_ZOO_BERT_HEADS_INTERNAL_H

#include "zoo/zoo.h"

/* As HF's from_pretrained (base_model_prefix "bert"): a BertModel loads the
 * "bert.*" weights of a checkpoint with heads (bertc_bert_add_prefix is its
 * rename), and a model with heads loads a bare BertModel checkpoint (its
 * heads then come from init_missing; bertc_bert_drop_prefix). */
bool bertc_bert_add_prefix(const char *name, char *alt, size_t len);
bool bertc_bert_drop_prefix(const char *name, char *alt, size_t len);

/* The BertModel of a head, registered as "bert.*" (has_pooler: with
 * bert.pooler; HF's add_pooling_layer). */
void bertc_bert_head_encoder_init(BertModel *m, Registry *r, const BertConfig *cfg, bool has_pooler);

/* bertc_bert_read_inputs with HF's input names: input_ids, attention_mask,
 * token_type_ids (B, S). */
int bertc_bert_head_read_inputs(const BertConfig *cfg, Graph *g, const Batch *in, BertInputs *x,
                          BertcError *err);

/* bertc_random_bert_inputs under HF's input names (B, S); *mlm_labels as there. */
void bertc_bert_head_random_inputs(const BertConfig *cfg, Graph *g, int64_t B, int64_t S, Rng *rng,
                             Batch *out, ITensor *mlm_labels);

/* HF's rule for the dropout before a classifier: classifier_dropout when
 * config.json sets it, else hidden_dropout_prob. */
float bertc_bert_classifier_dropout(const BertConfig *cfg);

/* The integer input `name` of the given shape, every value a class in
 * [0, C) or, with ignore, -100 (CrossEntropyLoss's ignore_index): else an
 * error naming the tensor, the position, the value and `limit` ("'labels'[1,
 * 3] = 9 is outside [0, num_labels 5)"). */
int bertc_bert_read_classes(const Batch *in, const char *name, int ndim, const int64_t *shape,
                      int64_t C, const char *limit, bool ignore, ITensor *out, BertcError *err);

/* CE over the rows of logits (..., C) against targets of the same leading
 * shape, ignoring -100: targets flattened to (N) and logits to (N, C). */
Var *bertc_bert_class_loss(Graph *g, Var *logits, const ITensor *target);

/* bertc_bert_lm_head_init without its "cls" module: registers "predictions.*"
 * under the current prefix (BertForPreTraining's cls holds it beside
 * seq_relationship), the decoder tied to word_embeddings. */
void bertc_bert_lm_predictions_init(BertLMHead *h, Registry *r, const BertConfig *cfg,
                              Var *word_embeddings);

/* The names of the next-sentence classes, 0 and 1 (HF: 0 = B follows A):
 * what `bertc explain` shows for BertForNextSentencePrediction and
 * BertForPreTraining, whose configs name no labels. */
extern const char *const bertc_bert_nsp_labels[2];

#endif /* BERTC_ZOO_BERT_HEADS_INTERNAL_H */
