/* zoo/cgbert_internal.h — the pieces CGBERT (zoo/cgbert.c) and QACGBERT
 * (zoo/qacgbert.c) share: Wu & Ong 2021, "Context-Guided BERT for Targeted
 * Aspect-Based Sentiment Analysis" (AAAI 2021). Both are the BERT encoder of
 * zoo/bert.c with (SPEC §6.3, §6.4):
 *
 *   spelling    the original repository's module classes, LayerNorm gamma/beta,
 *               no padding_idx, E = LN((word + position) + token_type), −10000 mask
 *   context     C0  = context_embeddings[context_ids] repeated over S       (B, S, H)
 *   per layer   D   = Linear([C0; X_l]; context_layer.l) + C0     deep context
 *               X_l+1 = BERT layer with a context-aware self-attention(X_l, D)
 *   pooler      attention_gate (seed) or first_token (original repository)
 *   classifier  logits = Linear(tanh(Linear(pool))),  loss = CE
 *
 * A model supplies its self-attention as a BertAttentionHook; zoo/cgbert.c
 * does the rest. */
#ifndef BERTC_ZOO_CGBERT_INTERNAL_H
#define BERTC_ZOO_CGBERT_INTERNAL_H

#include "zoo/zoo.h"

/* The pooler: the seed's attention gate, or the original repository's first
 * token (config "pooler_type"). */
typedef enum PoolerType {
    POOLER_ATTENTION_GATE,
    POOLER_FIRST_TOKEN
} PoolerType;

/* The config keys both models add to BERT's (bertc_cg_keys, cfg->model). */
typedef struct CgKeys {
    int context_vocab_size;            /* context_embeddings rows [8] */
    int pooler_type;                   /* PoolerType [attention_gate] */
} CgKeys;

#define CG_N_KEYS 2
extern const ConfigKey bertc_cg_keys[CG_N_KEYS];
/* Their inputs after BERT's (context_ids, labels), the same for both. */
#define CG_N_INPUTS 2
#define CG_N_OUTPUTS 7
extern const OutputSpec bertc_cg_outputs[CG_N_OUTPUTS];
extern const InputSpec bertc_cg_inputs[CG_N_INPUTS];
CgKeys bertc_cg_keys_of(const BertConfig *cfg);

/* ContextBERTSelfAttention. CGBERT: Wcq/Wck (d, d), lambda_* without bias;
 * QACGBERT: Wcq/Wck (H, H), lambda_* with a bias. */
typedef struct CgSelfAttention {
    Linear Wq, Wk, Wv;                 /* (H, H) */
    Linear Wcq, Wck;                   /* context query / key projections */
    Linear lambda_Qc, lambda_Q, lambda_Kc, lambda_K;   /* (1, d) gates */
    Dropout dropout;
    int64_t heads;
} CgSelfAttention;

/* The per-layer maps, "layers.{l}.<name>" (bertc_cg_maps): CGBERT puts the first
 * CG_CGBERT_MAPS, QACGBERT all CG_MAPS. */
enum {
    CG_ATTENTION_PROBS,                /* (B, nh, S, S) */
    CG_LAMBDA_Q, CG_LAMBDA_K,          /* (B, nh, S, 1) */
    CG_CGBERT_MAPS,
    CG_LAMBDA_CONTEXT = CG_CGBERT_MAPS,    /* QACGBERT: (B, nh, S, 1) */
    CG_NEW_ATTENTION_PROBS,            /* QACGBERT: (B, nh, S, S) */
    CG_QUASI_ATTENTION_PROB,           /* QACGBERT: (B, nh, S, S) */
    CG_MAPS
};
extern const BertMap bertc_cg_maps[CG_MAPS];

/* Both architectures' build/forward/rename, parameterised by the attention. */
void *bertc_cg_build(Registry *r, const BertConfig *cfg, const BertAttentionHook *attention,
               BertcError *err);
int bertc_cg_forward(void *impl, const BertConfig *cfg, Graph *g, const Batch *in, Outputs *out,
               BertcError *err);
/* BERT's inputs, context_ids (B, 1) below context_vocab_size and, with
 * labels, labels (B) below num_labels. */
int bertc_cg_random_batch(const BertConfig *cfg, Graph *g, int64_t B, int64_t S, bool labels, Rng *rng,
                    Batch *out, BertcError *err);
/* BERT's inputs from the text, and context_ids (n, 1) from each example's
 * context_id (an error when it is outside [0, context_vocab_size)). */
int bertc_cg_batch_from_text(const Model *m, const Tokenizer *tok, const TextExample *ex, int n,
                       int32_t max_len, Graph *g, Batch *out, BertcError *err);
/* Original-repository spelling of a parameter (Wq -> query, Wcq -> context_for_q, ...). */
bool bertc_cg_rename(const char *name, char *alt, size_t len);

/* Helpers for the attentions: 1 - x (broadcast), and q k^T / sqrt(d) + mask. */
Var *bertc_cg_one_minus(Graph *g, Var *x);
Var *bertc_cg_scores(Graph *g, Var *q, Var *k, Var *mask);

#endif /* BERTC_ZOO_CGBERT_INTERNAL_H */
