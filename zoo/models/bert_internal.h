/* zoo/models/bert_internal.h — what the BERT encoder's two files share: the
 * steps of the readable forward (zoo/models/bert.c) that inference reruns,
 * and inference's encoder (zoo/models/bert_inference.c), which
 * bertc_bert_model_forward switches to under no_grad. Not public. */
#ifndef BERTC_ZOO_BERT_INTERNAL_H
#define BERTC_ZOO_BERT_INTERNAL_H

#include "zoo/models/bert.h"

/* bert.c's equation (1): E (B, S, H), HF's BertEmbeddings. */
Var *bertc_bert_embeddings_forward(Graph *g, const BertModel *m, const BertInputs *in);
/* bert.c's (3)-(7): X_l+1 (B, S, H) from X_l (B, S, H) and the additive
 * mask M (B, 1, 1, S), HF's BertLayer l; maps receives the layer's maps. */
Var *bertc_bert_layer_forward(Graph *g, const BertModel *m, int l, Var *x, Var *mask,
                              const BertInputs *in, Var **maps);
/* The per-layer maps of m's self-attention ("attention_probs", or the
 * hook's), *n of them. */
const BertMap *bertc_bert_layer_maps(const BertModel *m, int *n);

/* True when the forward keeps no tape (g->no_grad): the encoder then runs in
 * bert_inference.c. A lean graph (bertc_ag_set_lean) that lean cannot serve
 * (a tape, or training's dropout) is a fatal error naming the fix. */
bool bertc_bert_inference(const Graph *g, const BertModel *m);
/* (1), (3)-(7) under no_grad: X_L (B, S, H), with r's hidden_states and maps
 * as the readable encoder fills them (lean: NULL, not kept). */
Var *bertc_bert_encoder_inference(Graph *g, const BertModel *m, const BertInputs *in, Var *mask,
                                  BertOutput *r);

#endif /* BERTC_ZOO_BERT_INTERNAL_H */
