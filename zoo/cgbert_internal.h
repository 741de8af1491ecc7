/* zoo/cgbert_internal.h — the pieces CGBERT (zoo/cgbert.c) and QACGBERT
 * (zoo/qacgbert.c) share: Wu & Ong 2021, "Context-Guided BERT for Targeted
 * Aspect-Based Sentiment Analysis" (AAAI 2021). Everything but the
 * self-attention is the same in both models (SPEC §6.3, §6.4):
 *
 *   embeddings  E   = LN((word + position) + token_type)   gamma/beta, no padding_idx
 *   context     C0  = context_embeddings[context_ids] repeated over S       (B, S, H)
 *   per layer   D   = Linear([C0; X_l]; context_layer.l) + C0     deep context
 *               X_l+1 = BERT layer with a context-aware self-attention(X_l, D)
 *   pooler      attention_gate (seed) or first_token (original repository)
 *   classifier  logits = Linear(tanh(Linear(pool))),  loss = CE
 *
 * A model supplies its self-attention as a CgAttentionOps; the skeleton in
 * zoo/cgbert.c does the rest. */
#ifndef BERTC_ZOO_CGBERT_INTERNAL_H
#define BERTC_ZOO_CGBERT_INTERNAL_H

#include "zoo/zoo.h"

/* The pooler: the seed's attention gate, or the original repository's first
 * token (config "pooler_type"). */
typedef enum PoolerType {
    POOLER_ATTENTION_GATE,
    POOLER_FIRST_TOKEN
} PoolerType;

/* The config keys both models add to BERT's (cg_keys, cfg->model). */
typedef struct CgKeys {
    int context_vocab_size;            /* context_embeddings rows [8] */
    int pooler_type;                   /* PoolerType [attention_gate] */
} CgKeys;

#define CG_N_KEYS 2
extern const ConfigKey cg_keys[CG_N_KEYS];
/* Their inputs after BERT's (context_ids, labels), the same for both. */
#define CG_N_INPUTS 2
extern const InputSpec cg_inputs[CG_N_INPUTS];
CgKeys cg_keys_of(const BertConfig *cfg);

/* ContextBERTSelfAttention. CGBERT: Wcq/Wck (d, d), lambda_* without bias;
 * QACGBERT: Wcq/Wck (H, H), lambda_* with a bias. */
typedef struct CgSelfAttention {
    Linear Wq, Wk, Wv;                 /* (H, H) */
    Linear Wcq, Wck;                   /* context query / key projections */
    Linear lambda_Qc, lambda_Q, lambda_Kc, lambda_K;   /* (1, d) gates */
    Dropout dropout;
    int64_t heads;
} CgSelfAttention;

/* What one self-attention returns; the probability tensors are named outputs
 * "layers.{l}.<field>" (NULL: the model has no such output). */
typedef struct CgAttention {
    Var *context;                      /* (B, S, H), merged heads */
    Var *attention_probs;              /* (B, nh, S, S) */
    Var *lambda_q, *lambda_k;          /* (B, nh, S, 1) */
    Var *lambda_context;               /* QACGBERT: (B, nh, S, 1) */
    Var *new_attention_probs;          /* QACGBERT: (B, nh, S, S) */
    Var *quasi_attention_prob;         /* QACGBERT: (B, nh, S, S) */
} CgAttention;

typedef struct CgAttentionOps {
    /* Registers the attention's parameters under the current prefix
     * (".attention.self."). */
    void (*init)(CgSelfAttention *m, Registry *r, const BertConfig *cfg);
    /* x (B, S, H), D (B, S, H) the layer's context, mask (B, 1, 1, S) additive. */
    CgAttention (*forward)(Graph *g, const CgSelfAttention *m, Var *x, Var *D, Var *mask);
} CgAttentionOps;

/* Both architectures' build/forward/rename, parameterised by the attention. */
void *cg_build(Registry *r, const BertConfig *cfg, const CgAttentionOps *ops, BertcError *err);
int cg_forward(void *impl, const BertConfig *cfg, Graph *g, const Batch *in, Outputs *out,
               BertcError *err);
/* BERT's inputs, context_ids (B, 1) below context_vocab_size and, with
 * labels, labels (B) below num_labels. */
int cg_random_batch(const BertConfig *cfg, Graph *g, int64_t B, int64_t S, bool labels, Rng *rng,
                    Batch *out, BertcError *err);
/* BERT's inputs from the text, and context_ids (n, 1) from each example's
 * context_id (an error when it is outside [0, context_vocab_size)). */
int cg_batch_from_text(const Model *m, const Tokenizer *tok, const TextExample *ex, int n,
                       int32_t max_len, Graph *g, Batch *out, BertcError *err);
/* Original-repository spelling of a parameter (Wq -> query, Wcq -> context_for_q, ...). */
bool cg_rename(const char *name, char *alt, size_t len);

/* Helpers for the attentions: 1 - x (broadcast), and q k^T / sqrt(d) + mask. */
Var *cg_one_minus(Graph *g, Var *x);
Var *cg_scores(Graph *g, Var *q, Var *k, Var *mask);

#endif /* BERTC_ZOO_CGBERT_INTERNAL_H */
