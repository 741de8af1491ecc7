/* zoo/models/cgbert_internal.h — the pieces CGBERT (zoo/models/cgbert.c) and QACGBERT
 * (zoo/models/qacgbert.c) share: Wu & Ong 2021, "Context-Guided BERT for Targeted
 * Aspect-Based Sentiment Analysis" (AAAI 2021). Both are the BERT encoder of
 * zoo/models/bert.c with (SPEC §6.3, §6.4):
 *
 *   spelling    the original repository's module classes, LayerNorm gamma/beta,
 *               no padding_idx, E = LN((word + position) + token_type), −10000 mask
 *   context     C0  = context_embeddings[context_ids] repeated over S       (B, S, H)
 *   per layer   D   = Linear([C0; X_l]; context_layer.l) + C0     deep context
 *               X_l+1 = BERT layer with a context-aware self-attention(X_l, D)
 *   pooler      attention_gate (seed) or first_token (original repository)
 *   classifier  logits = Linear(tanh(Linear(pool))),  loss = CE
 *
 * Where the seed, the paper and the original code differ, config.json
 * chooses (default: the seed's): pooler_type, lambda_init (the gates' init
 * std), and for QACGBERT context_dropout_prob and the paper's α, β, γ
 * (docs/models/cgbert.md, docs/models/qacgbert.md).
 *
 * A model supplies its self-attention as a BertAttentionHook; zoo/models/cgbert.c
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

/* How the gates' weights lambda_* are drawn (config "lambda_init"). */
typedef enum LambdaInit {
    LAMBDA_INIT_RANGE,                 /* N(0, initializer_range), as every Linear */
    LAMBDA_INIT_ORIGINAL               /* N(0, 0.01): the original's init_perturbation */
} LambdaInit;

/* The original repository's init_perturbation (CGBERT.py, QACGBERT.py). */
#define CG_ORIGINAL_LAMBDA_STD 1e-2f

/* The config keys the models add to BERT's (cfg->model): CGBERT reads the
 * first CG_N_KEYS of bertc_cg_keys, QACGBERT all CG_N_KEYS + QA_N_KEYS. */
typedef struct CgKeys {
    int context_vocab_size;            /* context_embeddings rows [8] */
    int pooler_type;                   /* PoolerType [attention_gate] */
    int lambda_init;                   /* LambdaInit [initializer_range] */
    /* QACGBERT only */
    float context_dropout_prob;        /* dropout on C_Q, C_K in training [0] */
    float quasi_scale;                 /* α [1] */
    float lambda_q_scale;              /* β [1] */
    float lambda_k_scale;              /* γ [1] */
} CgKeys;

#define CG_N_KEYS 3
#define QA_N_KEYS 4
extern const ConfigKey bertc_cg_keys[CG_N_KEYS + QA_N_KEYS];
CgKeys bertc_cg_keys_of(const BertConfig *cfg);

/* Their inputs after BERT's (context_ids, labels), the same for both, and
 * the outputs both put (CGBERT and QACGBERT add their own). */
#define CG_N_INPUTS 2
#define CG_N_OUTPUTS 11
extern const OutputSpec bertc_cg_outputs[CG_N_OUTPUTS];
extern const InputSpec bertc_cg_inputs[CG_N_INPUTS];

/* ContextBERTSelfAttention. CGBERT: Wcq/Wck (d, d), lambda_* without bias;
 * QACGBERT: Wcq/Wck (H, H), lambda_* with a bias. */
typedef struct CgSelfAttention {
    Linear Wq, Wk, Wv;                 /* (H, H) */
    Linear Wcq, Wck;                   /* context query / key projections */
    Linear lambda_Qc, lambda_Q, lambda_Kc, lambda_K;   /* (1, d) gates */
    Dropout dropout;
    Dropout context_dropout;           /* QACGBERT: on C_Q, C_K (not a module of its own) */
    float alpha, beta, gamma;          /* QACGBERT: quasi_scale, lambda_q_scale, lambda_k_scale */
    int64_t heads;
} CgSelfAttention;

/* The per-layer maps, "layers.{l}.<name>": both models put the first
 * CG_SHARED_MAPS, then CGBERT its Q̂, K̂ (CG_CGBERT_MAPS in all), QACGBERT its
 * quasi-attention (QA_MAPS in all). Each file holds its table (BertMap), the
 * shared entries first and alike (test_zoo_cgbert checks what is put against
 * what is declared). */
enum {
    CG_ATTENTION_PROBS,                /* (B, nh, S, S) */
    CG_LAMBDA_Q, CG_LAMBDA_K,          /* (B, nh, S, 1) */
    CG_DEEP_CONTEXT,                   /* (B, S, H): D of the layer */
    CG_CONTEXT_Q, CG_CONTEXT_K,        /* (B, nh, S, d): the context's query and key */
    CG_SHARED_MAPS,
    CG_Q_HAT = CG_SHARED_MAPS, CG_K_HAT,   /* CGBERT: (B, nh, S, d) */
    CG_CGBERT_MAPS,
    QA_LAMBDA_CONTEXT = CG_SHARED_MAPS,    /* QACGBERT: λ_A (B, nh, S, 1) */
    QA_QUASI_ATTENTION_SCORES,         /* QACGBERT: α σ(...) before the gate (B, nh, S, S) */
    QA_QUASI_ATTENTION_PROB,           /* QACGBERT: λ_A ⊙ A_quasi (B, nh, S, S) */
    QA_NEW_ATTENTION_PROBS,            /* QACGBERT: Â (B, nh, S, S) */
    QA_MAPS
};

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

/* Helpers for the attentions: 1 - x (broadcast), q k^T / sqrt(d) + mask,
 * and the gates' weights drawn with lambda_init's std. */
Var *bertc_cg_one_minus(Graph *g, Var *x);
Var *bertc_cg_scores(Graph *g, Var *q, Var *k, Var *mask);
void bertc_cg_lambda_init(Registry *r, const BertConfig *cfg, const CgSelfAttention *m);

/* `bertc explain` (ModelExplain): the deep-context step both encoders
 * show, and the head's steps (pooler weights, pooled output, classifier),
 * bertc_cg_head_steps, in zoo/models/cgbert.c. The context C enters every
 * layer's attention, as gates on the queries and keys (both) and as a
 * quasi-attention (QACGBERT). */
#define CG_STEP_DEEP_CONTEXT                                                                  \
    {.title = "Deep context",                                                                 \
     .equation = "D<sub>l</sub> = [C<sub>0</sub>; X<sub>l</sub>] W<sub>D</sub> + C<sub>0</sub>" \
                 "  &nbsp; (B, S, H)",                                                        \
     .where = "zoo/models/cgbert.c:deep_context", .output = "layers.{l}.deep_context"}

#define CG_N_HEAD_STEPS 3
extern const ExplainStep bertc_cg_head_steps[CG_N_HEAD_STEPS];

#endif /* BERTC_ZOO_CGBERT_INTERNAL_H */
