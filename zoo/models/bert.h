/*
 * zoo/models/bert.h — the shared BERT encoder every architecture of the zoo
 * builds on (zoo/models/bert.c), its spellings and hooks, and the pieces the
 * heads share.
 */
#ifndef BERTC_ZOO_MODELS_BERT_H
#define BERTC_ZOO_MODELS_BERT_H

#include "zoo/models/model.h"

/* ------------------------------------------------------------------------ */
/* The shared BERT encoder (zoo/models/bert.c), SPEC §6.1                           */
/* ------------------------------------------------------------------------ */

typedef enum BertFlavor {
    BERT_HF,              /* §6.1.1: (word + token_type) + position, finfo.min mask */
    BERT_PPB              /* §6.1.2 pytorch_pretrained_bert: (word + position) + token_type, -10000 */
} BertFlavor;

/* word_embeddings' padding_idx (its row is zero at init and gets no gradient). */
typedef enum BertWordPadding {
    WORD_PAD_CONFIG,      /* HF: config pad_token_id */
    WORD_PAD_ZERO,        /* pytorch_pretrained_bert: 0 */
    WORD_PAD_NONE         /* CGBERT's BERTEmbeddings: none */
} BertWordPadding;

/* How one family of BERT code spells the encoder: the module classes its
 * tree prints, its LayerNorm, and the numerics that differ (the flavor).
 * The parameter names and shapes are otherwise the same in every family. */
/* The module classes a family's tree prints. */
typedef struct BertClasses {
    const char *embeddings, *encoder, *layer, *attention, *self_attention, *self_output,
        *intermediate, *output, *pooler;
} BertClasses;

typedef struct BertSpelling {
    BertFlavor flavor;
    const BertClasses *classes;
    const char *layernorm;            /* a leaf repr ("BERTLayerNorm()"), or NULL for
                                         nn's "LayerNorm((H,), eps=..., ...)" */
    const char *ln_weight, *ln_bias;  /* "weight", "bias" or "gamma", "beta" */
    BertWordPadding word_padding;
    bool act_leaf;                    /* intermediate prints (intermediate_act_fn) */
    /* Self-attention parameters a file may spell otherwise, {ours, theirs}
     * (bertc_bert_spelling_rename): CGBERT's Wq -> query, ... */
    const char *const (*attention_names)[2];
    int n_attention_names;
} BertSpelling;

/* HF's modeling_bert, and pytorch_pretrained_bert 0.6.2 (BertSum). */
extern const BertSpelling bertc_bert_spelling_hf, bertc_bert_spelling_ppb;

/* The shape of a per-layer output of a self-attention. */
typedef enum BertMapShape {
    BERT_MAP_SCORES,                  /* (B, nh, S, S): attention probabilities, scores */
    BERT_MAP_ROWS,                    /* (B, nh, S, 1): a gate per head and query row */
    BERT_MAP_HEADS,                   /* (B, nh, S, d): per-head vectors (CGBERT's Q̂) */
    BERT_MAP_HIDDEN                   /* (B, S, H): the layer's extra input (CGBERT's D) */
} BertMapShape;

/* One per-layer output of a self-attention, "layers.{l}.<name>". */
typedef struct BertMap {
    const char *name;
    BertMapShape shape;
} BertMap;

/* A self-attention that replaces BERT's in every layer (CGBERT, QACGBERT). */
typedef struct BertAttentionHook {
    /* Registers one layer's parameters under "...attention.self." and
     * returns its state (in r->arena). */
    void *(*init)(Registry *r, const BertConfig *cfg);
    /* x (B, S, H); extra the layer's input from BertHooks.before_attention
     * (CGBERT: the deep context D (B, S, H)); mask (B, 1, 1, S) additive.
     * Returns the context (B, S, H) and puts map i of `maps` in maps_out[i]. */
    Var *(*forward)(Graph *g, const void *self, Var *x, Var *extra, Var *mask, Var **maps_out);
    const BertMap *maps;              /* maps[0] is "attention_probs" */
    int n_maps;
} BertAttentionHook;

/* What a model adds around the encoder; each hook gets back the `owner`
 * given to bertc_bert_encoder_init (the model that holds the BertModel). */
typedef struct BertHooks {
    /* Registers, inside "encoder." after the layers, what before_attention
     * uses (CGBERT: context_layer.{l}). */
    void (*encoder_init)(void *owner, Registry *r, const BertConfig *cfg);
    /* Layer l's extra input to the attention hook from X_l (B, S, H) and
     * the forward's BertInputs.hook_input (CGBERT: D from C0). */
    Var *(*before_attention)(Graph *g, const void *owner, int l, Var *x, Var *hook_input);
    /* Registers, inside "pooler." before its dense, what pool uses. */
    void (*pooler_init)(void *owner, Registry *r, const BertConfig *cfg);
    /* The pooler's input (B, H) from X_L (B, S, H) and the 0/1 attention
     * mask (B, S), and in *weights the token weights it pooled with (B, S)
     * (BertOutput.pool_weights); without this hook, X_L[:, 0]
     * (bertc_bert_first_token). */
    Var *(*pool)(Graph *g, const void *owner, Var *x, const ITensor *mask, Var **weights);
} BertHooks;

/* BERT's self-attention, HF's BertSelfAttention (zoo/models/bert_attention.c):
 * separate query, key and value Linears (H -> H), scores Q K^T / sqrt(d) plus
 * an additive mask, softmax over keys, dropout on the probabilities, context
 * merged back. Registers `query`, `key`, `value` (and a `dropout`) under the
 * current prefix. */
typedef struct BertSelfAttention {
    Linear query, key, value;
    Dropout dropout;
    int64_t heads;
} BertSelfAttention;
void bertc_bert_self_attention_init(BertSelfAttention *m, Registry *r, int64_t H, int64_t heads,
                                    float attention_dropout);
/* x (B, S, H); mask_add (B, 1, 1, S) additive (0 keep, large negative pad) or
 * NULL; probs_out (may be NULL) receives the (B, nh, S, S) probabilities.
 * Returns the context (B, S, H). */
Var *bertc_bert_self_attention_forward(Graph *g, const BertSelfAttention *m, Var *x,
                                       Var *mask_add, Var **probs_out);

typedef struct BertLayer {
    BertSelfAttention self;           /* attention.self.{query,key,value} */
    void *hooked_self;                /* or the attention hook's state */
    Linear attn_out;                  /* attention.output.dense */
    LayerNorm attn_ln;                /* attention.output.LayerNorm */
    Dropout attn_drop;
    Linear inter;                     /* intermediate.dense */
    Linear out;                       /* output.dense */
    LayerNorm out_ln;                 /* output.LayerNorm */
    Dropout out_drop;
} BertLayer;

typedef struct BertModel {
    const BertSpelling *spelling;
    const BertAttentionHook *attention;   /* NULL: BERT's self-attention */
    const BertHooks *hooks;           /* NULL: none */
    void *owner;                      /* passed to the hooks */
    Embedding word, position, token_type;
    LayerNorm emb_ln;
    Dropout emb_drop;
    int n_layers;
    BertLayer *layers;
    bool has_pooler;
    Linear pooler;                    /* pooler.dense */
    BertAct act;
    int64_t heads;
} BertModel;

/* What bertc_bert_encoder_init builds: the spelling, and for a model that changes
 * the encoder its attention and hooks (NULL: BERT's). */
typedef struct BertEncoderSpec {
    const BertSpelling *spelling;
    const BertAttentionHook *attention;
    const BertHooks *hooks;
    void *owner;
    bool has_pooler;
} BertEncoderSpec;

/* Registers "embeddings.*", "encoder.layer.{l}.*" and (has_pooler)
 * "pooler.dense.*" under the current prefix of r (push "bert" first for
 * "bert.embeddings..."); the module tree prints as the spelling's family. */
void bertc_bert_encoder_init(BertModel *m, Registry *r, const BertConfig *cfg,
                       const BertEncoderSpec *spec);
/* The plain encoder of a flavor (HF's or pytorch_pretrained_bert's). */
void bertc_bert_model_init(BertModel *m, Registry *r, const BertConfig *cfg, BertFlavor flavor,
                     bool has_pooler);

/* The validated inputs of a BERT forward. */
typedef struct BertInputs {
    ITensor input_ids;                /* (B, S) */
    ITensor attention_mask;           /* (B, S): 1 keep, 0 pad */
    ITensor token_type_ids;           /* (B, S): zeros when absent */
    int64_t B, S;
    Var *hook_input;                  /* for BertHooks.before_attention (CGBERT: C0), or NULL */
} BertInputs;

/* Reads input_ids, attention_mask (all ones if absent) and token_type_ids
 * (zeros if absent) from the batch (names may be changed, e.g. BertSum's
 * "src", "mask", "segs"), checking shapes, S <= max_position_embeddings,
 * ids < vocab_size and types < type_vocab_size. */
int bertc_bert_read_inputs(const BertConfig *cfg, Graph *g, const Batch *in, const char *ids_name,
                     const char *mask_name, const char *types_name, BertInputs *out,
                     BertcError *err);

typedef struct BertOutput {
    Var *last_hidden_state;           /* (B, S, H) */
    Var *pooler_output;               /* (B, H) or NULL */
    Var *pool_weights;                /* the pool hook's token weights (B, S), or NULL */
    Var **hidden_states;              /* L + 1 of them, (B, S, H); NULL when lean */
    Var **maps;                       /* layer l's map i at [l * n_maps + i] (BertMap);
                                         NULL when lean */
} BertOutput;

/* Runs the embeddings, the encoder and the pooler; hidden states and
 * attention maps are kept for the outputs. In no_grad mode each layer's
 * temporaries are released once its output and maps are copied out; in lean
 * mode (bertc_ag_set_lean) neither is kept (zoo/models/bert.c). */
BertOutput bertc_bert_model_forward(Graph *g, const BertModel *m, const BertInputs *in);
/* X (B, S, H) -> X[:, 0] (B, H). */
Var *bertc_bert_first_token(Graph *g, Var *x);
/* Adds "hidden_states.{0..L}", "last_hidden_state", "pooler_output" and
 * the attention maps of bertc_bert_put_attention. */
void bertc_bert_put_outputs(Outputs *o, Graph *g, const BertModel *m, const BertOutput *r);
/* The inputs every BERT head reads (input_ids, attention_mask,
 * token_type_ids) and the outputs bertc_bert_put_outputs puts (last_hidden_state,
 * hidden_states.{i}, layers.{l}.attention_probs; pooler_output is each
 * model's own): a ModelArch's shared_inputs and shared_outputs. */
#define BERT_N_INPUTS 3
#define BERT_N_OUTPUTS 3
extern const InputSpec bertc_bert_inputs[BERT_N_INPUTS];
extern const OutputSpec bertc_bert_outputs[BERT_N_OUTPUTS];

/* The encoder's steps for `bertc explain` (ModelExplain, zoo/models/model.h):
 * the embeddings, BERT's self-attention and a layer's output, the list a
 * BERT-family model gives as its encoder; the macros are the steps a model
 * that changes the attention (CGBERT) and the heads with a pooler reuse. */
#define BERT_STEP_EMBEDDINGS                                                                  \
    {.title = "Embeddings",                                                                   \
     .equation = "X<sub>0</sub> = LayerNorm(E<sub>word</sub>[ids] + E<sub>type</sub>[types] " \
                 "+ E<sub>pos</sub>[0..S&minus;1])  &nbsp; (B, S, H)",                        \
     .where = "zoo/models/bert.c:bertc_bert_embeddings_forward", .output = "hidden_states.0"}

#define BERT_STEP_LAYER_OUTPUT                                                              \
    {.title = "Add &amp; norm, feed-forward, add &amp; norm",                               \
     .equation = "Y = LN(X<sub>l</sub> + Attn W<sub>O</sub>); &nbsp; X<sub>l+1</sub> = "    \
                 "LN(Y + GELU(Y W<sub>1</sub>) W<sub>2</sub>)  &nbsp; (B, S, H)",           \
     .where = "zoo/models/bert.c:bertc_bert_layer_forward", .output = "hidden_states.{i}"}

#define BERT_STEP_POOLER                                                                      \
    {.title = "Pooler",                                                                       \
     .equation = "p = tanh(X<sub>L</sub>[:, 0] W<sub>P</sub> + b<sub>P</sub>)  &nbsp; (B, H)", \
     .where = "zoo/models/bert.c:pooler_forward", .output = "pooler_output"}

#define BERT_N_ENCODER_STEPS 3
extern const ExplainStep bertc_bert_encoder_steps[BERT_N_ENCODER_STEPS];
/* Adds "layers.{l}.attention_probs" (B, nh, S, S) (and a hook's other maps)
 * for every layer: what `bertc attention` draws. */
void bertc_bert_put_attention(Outputs *o, Graph *g, const BertModel *m, const BertOutput *r);
/* The same for layer l only. */
void bertc_bert_put_layer_maps(Outputs *o, Graph *g, const BertModel *m, const BertOutput *r, int l);

/* Another spelling of a parameter in files, for LoadOptions.renames:
 * bertc_bert_spelling_rename, the spelling's attention_names ({ours, theirs}, in
 * "...attention.self.<ours>.*"); bertc_bert_layernorm_rename, as HF's
 * from_pretrained, "LayerNorm.gamma"/"beta" for "weight"/"bias" and back
 * (TF-era and original-repository checkpoints). */
bool bertc_bert_spelling_rename(const BertSpelling *s, const char *name, char *alt, size_t len);
bool bertc_bert_layernorm_rename(const char *name, char *alt, size_t len);
/* The options bertc_model_load uses for m: its architecture's rename and the
 * legacy LayerNorm names (every zoo model is a BERT). */
LoadOptions bertc_model_load_options(const Model *m, bool init_missing);

/* HF BertLMPredictionHead (zoo/models/bert_heads.c), used by BertForMaskedLM and
 * SpanBERT: t = LN(act(Dense(X))), logits = t E^T + bias with E the word
 * embeddings (tied: "cls.predictions.decoder.weight" names the same tensor,
 * "cls.predictions.decoder.bias" the same as "cls.predictions.bias"). */
typedef struct BertLMHead {
    Linear transform;                 /* cls.predictions.transform.dense */
    LayerNorm transform_ln;           /* cls.predictions.transform.LayerNorm */
    Var *decoder_weight;              /* = bert.embeddings.word_embeddings.weight */
    Var *bias;                        /* cls.predictions.bias (V) */
    BertAct act;
} BertLMHead;

/* Registers "cls.predictions.*" at the root of r, tied to word_embeddings. */
void bertc_bert_lm_head_init(BertLMHead *h, Registry *r, const BertConfig *cfg, Var *word_embeddings);
Var *bertc_bert_lm_head_forward(Graph *g, const BertLMHead *h, Var *x);   /* (B,S,H) -> (B,S,V) */
/* The activation named by hidden_act (gelu = erf form). */
Var *bertc_bert_activation(Graph *g, BertAct act, Var *x);
/* LayerNorm(a + b), the residual Add & Norm, as one op (bertc_ag_add_layernorm). */
Var *bertc_bert_add_norm(Graph *g, const LayerNorm *ln, Var *a, Var *b);

#endif /* BERTC_ZOO_MODELS_BERT_H */
