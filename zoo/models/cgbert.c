/* zoo/models/cgbert.c — CGBertForSequenceClassification (SPEC §6.3) and what it
 * shares with QACGBERT (zoo/models/cgbert_internal.h). Wu & Ong 2021,
 * "Context-Guided BERT for Targeted Aspect-Based Sentiment Analysis",
 * section "Context-Guided Softmax-attention":
 *
 *   [Q̂; K̂]   = (1 − [λQ; λK]) ⊙ [Q; K] + [λQ; λK] ⊙ C [U_Q; U_K]
 *   [λQ; λK] = σ( [Q; K] [V_Q; V_K] + C [U_Q; U_K] [V_Q^C; V_K^C] )
 *   A        = softmax( Q̂ K̂ᵀ / √d + M )
 *
 * with C the per-head context D of the layer, U_Q = Wcq, U_K = Wck (shared by
 * every head), V_Q = lambda_Q, V_Q^C = lambda_Qc (likewise K). Numerics:
 * LayerNorm ε 1e-12 (BERTLayerNorm), erf GELU, an additive −10000 mask.
 *
 * Everything else is the BERT encoder of zoo/models/bert.c: this file gives it the
 * original repository's spelling, this self-attention (a hook), the deep
 * context D = Linear([C0; X_l]) + C0 before each layer's attention, the
 * context embedding, the attention-gate pooler and the classifier.
 *
 * Named outputs, per layer l: deep_context D (B, S, H); context_q, context_k
 * C U_Q, C U_K (B, nh, S, d); lambda_q, lambda_k (B, nh, S, 1); q_hat, k_hat
 * Q̂, K̂ (B, nh, S, d); attention_probs A (B, nh, S, S). And pooler_weights,
 * the pooler's token weights (B, S). docs/models/cgbert.md maps each step. */
#include "zoo/models/cgbert_internal.h"
#include "tensor/format_internal.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

/* ---- config keys, inputs and outputs shared with QACGBERT --------------- */

static const char *const pooler_types[] = {"attention_gate", "first_token", NULL};
static const char *const lambda_inits[] = {"initializer_range", "original", NULL};

#define CG_AT(field) offsetof(CgKeys, field)

const ConfigKey bertc_cg_keys[CG_N_KEYS + QA_N_KEYS] = {
    {.key = "context_vocab_size", .offset = CG_AT(context_vocab_size), .kind = CONFIG_INT,
     .range = RANGE_POSITIVE, .default_value = 8,
     .doc = "rows of the context (aspect/target) embedding"},
    {.key = "pooler_type", .offset = CG_AT(pooler_type), .kind = CONFIG_CHOICE,
     .default_value = POOLER_ATTENTION_GATE, .choices = pooler_types,
     .doc = "attention_gate (the seed's) or first_token (the original repository's)"},
    {.key = "lambda_init", .offset = CG_AT(lambda_init), .kind = CONFIG_CHOICE,
     .default_value = LAMBDA_INIT_RANGE, .choices = lambda_inits,
     .doc = "the gates' lambda_* weights: N(0, initializer_range), or original: N(0, 0.01)"},
    /* QACGBERT's own (CGBERT declares the first CG_N_KEYS) */
    {.key = "context_dropout_prob", .offset = CG_AT(context_dropout_prob),
     .kind = CONFIG_FLOAT, .range = RANGE_PROB, .default_value = 0,
     .doc = "dropout on the context query/key C_Q, C_K in training (the original's: "
            "attention_probs_dropout_prob)"},
    {.key = "quasi_scale", .offset = CG_AT(quasi_scale), .kind = CONFIG_FLOAT,
     .range = RANGE_NONNEG, .default_value = 1,
     .doc = "the paper's alpha: A_quasi = alpha * sigmoid(C_Q C_K^T / sqrt(d))"},
    {.key = "lambda_q_scale", .offset = CG_AT(lambda_q_scale), .kind = CONFIG_FLOAT,
     .range = RANGE_NONNEG, .default_value = 1,
     .doc = "the paper's beta: lambda_A = 1 - (beta lambda_Q + gamma lambda_K)"},
    {.key = "lambda_k_scale", .offset = CG_AT(lambda_k_scale), .kind = CONFIG_FLOAT,
     .range = RANGE_NONNEG, .default_value = 1,
     .doc = "the paper's gamma: lambda_A = 1 - (beta lambda_Q + gamma lambda_K)"},
};

CgKeys bertc_cg_keys_of(const BertConfig *cfg)
{
    CgKeys k;
    bertc_model_keys(cfg, &k, sizeof k);
    return k;
}

const InputSpec bertc_cg_inputs[CG_N_INPUTS] = {
    {.name = "context_ids", .type = INPUT_IDS, .shape = "(B, 1)",
     .values = "[0, context_vocab_size)", .required = true},
    {.name = "labels", .type = INPUT_IDS, .shape = "(B)", .values = "[0, num_labels)",
     .label = true},
};

const OutputSpec bertc_cg_outputs[CG_N_OUTPUTS] = {
    {"logits", "(B, num_labels)"},
    {"pooled_output", "(B, H)"},
    {"pooler_weights", "(B, S)"},
    {"hidden_states.{i}", "(B, S, H)"},
    {"layers.{l}.attention_probs", "(B, nh, S, S)"},
    {"layers.{l}.lambda_q", "(B, nh, S, 1)"},
    {"layers.{l}.lambda_k", "(B, nh, S, 1)"},
    {"layers.{l}.deep_context", "(B, S, H)"},
    {"layers.{l}.context_q", "(B, nh, S, d)"},
    {"layers.{l}.context_k", "(B, nh, S, d)"},
    {"loss", "()"},
};

/* ---- helpers shared with QACGBERT ------------------------------------ */

Var *bertc_cg_one_minus(Graph *g, Var *x)
{
    int64_t one = 1;
    Var *ones = bertc_ag_tensor(g, 1, &one, false);
    ones->value.data[0] = 1.0f;
    return bertc_ag_sub(g, ones, x);
}

/* The gates' weights (lambda_*.weight) drawn with std 0.01 instead of
 * initializer_range when lambda_init is "original" (bertc_registry_init_weights
 * reads Param.init_std): CGBERT.py and QACGBERT.py redraw them after their
 * init_weights, "init_perturbation = 1e-2"; their biases stay 0. */
void bertc_cg_lambda_init(Registry *r, const BertConfig *cfg, const CgSelfAttention *m)
{
    if (bertc_cg_keys_of(cfg).lambda_init != LAMBDA_INIT_ORIGINAL)
        return;
    const Var *gates[4] = {m->lambda_Qc.weight, m->lambda_Q.weight, m->lambda_Kc.weight,
                           m->lambda_K.weight};
    for (int i = r->n_params - 1; i >= 0 && i >= r->n_params - 8; i--)   /* the last registered */
        for (int k = 0; k < 4; k++)
            if (r->params[i].var == gates[k])
                r->params[i].init_std = CG_ORIGINAL_LAMBDA_STD;
}

/* q (B, nh, S, d), k (B, nh, S, d), mask (B, 1, 1, S) -> (B, nh, S, S). */
Var *bertc_cg_scores(Graph *g, Var *q, Var *k, Var *mask)
{
    float scale = 1.0f / sqrtf((float)q->value.shape[3]);
    return bertc_ag_add(g, bertc_ag_scale(g, bertc_ag_matmul(g, q, k, false, true), scale), mask);
}

/* ---- the context-guided self-attention -------------------------------- */

static void *cgbert_attention_init(Registry *r, const BertConfig *cfg)
{
    CgSelfAttention *m = bertc_arena_calloc(r->arena, 1, sizeof *m);
    int64_t H = cfg->hidden_size, d = H / cfg->num_attention_heads;
    m->heads = cfg->num_attention_heads;
    bertc_linear_init(&m->Wq, r, "Wq", H, H, true);
    bertc_linear_init(&m->Wk, r, "Wk", H, H, true);
    bertc_linear_init(&m->Wv, r, "Wv", H, H, true);
    bertc_linear_init(&m->Wcq, r, "Wcq", d, d, true);     /* per head, shared by the heads */
    bertc_linear_init(&m->Wck, r, "Wck", d, d, true);
    bertc_linear_init(&m->lambda_Qc, r, "lambda_Qc", d, 1, false);
    bertc_linear_init(&m->lambda_Q, r, "lambda_Q", d, 1, false);
    bertc_linear_init(&m->lambda_Kc, r, "lambda_Kc", d, 1, false);
    bertc_linear_init(&m->lambda_K, r, "lambda_K", d, 1, false);
    bertc_cg_lambda_init(r, cfg, m);
    bertc_dropout_init(&m->dropout, r, "dropout", cfg->attention_probs_dropout_prob);
    bertc_nn_leaf(r, "lambda_act", "Sigmoid()");
    return m;
}

/* λ = σ(context·V^C + x·V) (B, nh, S, 1), and (1 − λ) ⊙ x + λ ⊙ context. */
static Var *context_gate(Graph *g, const Linear *v_context, const Linear *v_x, Var *context,
                         Var *x, Var **lambda)
{
    *lambda = bertc_ag_sigmoid(g, bertc_ag_add(g, bertc_linear_forward(g, v_context, context),
                                   bertc_linear_forward(g, v_x, x)));
    return bertc_ag_add(g, bertc_ag_mul(g, bertc_cg_one_minus(g, *lambda), x), bertc_ag_mul(g, *lambda, context));
}

/* x (B, S, H), D (B, S, H) the layer's deep context, mask (B, 1, 1, S). */
static Var *cgbert_attention_forward(Graph *g, const void *self, Var *x, Var *D, Var *mask,
                                     Var **maps)
{
    const CgSelfAttention *m = self;
    Var *Q = bertc_nn_split_heads(g, bertc_linear_forward(g, &m->Wq, x), m->heads);   /* (B, nh, S, d) */
    Var *K = bertc_nn_split_heads(g, bertc_linear_forward(g, &m->Wk, x), m->heads);
    Var *V = bertc_nn_split_heads(g, bertc_linear_forward(g, &m->Wv, x), m->heads);
    Var *C = bertc_nn_split_heads(g, D, m->heads);       /* heads first, then Wcq/Wck (SPEC §6.8) */
    Var *Qc = bertc_linear_forward(g, &m->Wcq, C);
    Var *Kc = bertc_linear_forward(g, &m->Wck, C);
    Var *Q_hat = context_gate(g, &m->lambda_Qc, &m->lambda_Q, Qc, Q, &maps[CG_LAMBDA_Q]);
    Var *K_hat = context_gate(g, &m->lambda_Kc, &m->lambda_K, Kc, K, &maps[CG_LAMBDA_K]);
    Var *A = bertc_ag_softmax(g, bertc_cg_scores(g, Q_hat, K_hat, mask));             /* (B, nh, S, S) */
    maps[CG_ATTENTION_PROBS] = A;
    maps[CG_DEEP_CONTEXT] = D;
    maps[CG_CONTEXT_Q] = Qc;
    maps[CG_CONTEXT_K] = Kc;
    maps[CG_Q_HAT] = Q_hat;
    maps[CG_K_HAT] = K_hat;
    Var *probs = bertc_dropout_forward(g, &m->dropout, A);
    return bertc_nn_merge_heads(g, bertc_ag_matmul(g, probs, V, false, false));      /* (B, S, H) */
}

/* The shared maps first, as in qacgbert.c's table (cgbert_internal.h). */
static const BertMap cgbert_maps[CG_CGBERT_MAPS] = {
    [CG_ATTENTION_PROBS] = {.name = "attention_probs", .shape = BERT_MAP_SCORES},
    [CG_LAMBDA_Q] = {.name = "lambda_q", .shape = BERT_MAP_ROWS},
    [CG_LAMBDA_K] = {.name = "lambda_k", .shape = BERT_MAP_ROWS},
    [CG_DEEP_CONTEXT] = {.name = "deep_context", .shape = BERT_MAP_HIDDEN},
    [CG_CONTEXT_Q] = {.name = "context_q", .shape = BERT_MAP_HEADS},
    [CG_CONTEXT_K] = {.name = "context_k", .shape = BERT_MAP_HEADS},
    [CG_Q_HAT] = {.name = "q_hat", .shape = BERT_MAP_HEADS},
    [CG_K_HAT] = {.name = "k_hat", .shape = BERT_MAP_HEADS},
};

/* ---- the model around the BERT encoder ---------------------------------- */

typedef struct CgModel {
    BertModel bert;                    /* bert.{embeddings, encoder.layer, pooler.dense} */
    Linear *context_layer;             /* bert.encoder.context_layer.{l}: (H, 2H) */
    Linear gate0, gate3;               /* bert.pooler.attention_gate.{0,3} */
    Dropout gate_drop;
    Embedding context;                 /* bert.context_embeddings: (context_vocab_size, H) */
    Dropout dropout;
    Linear classifier;                 /* (num_labels, H) */
    PoolerType pooler_type;
} CgModel;

/* The original repository's names (SPEC §6.3), {ours, theirs}. */
static const char *const original_attention_names[][2] = {
    {"Wq", "query"}, {"Wk", "key"}, {"Wv", "value"},
    {"Wcq", "context_for_q"}, {"Wck", "context_for_k"},
    {"lambda_Qc", "lambda_q_context_layer"}, {"lambda_Q", "lambda_q_query_layer"},
    {"lambda_Kc", "lambda_k_context_layer"}, {"lambda_K", "lambda_k_key_layer"},
};

/* The original's modeling.py: TF-style BERTLayerNorm (gamma, beta), no
 * padding_idx, and pytorch_pretrained_bert's sum order and −10000 mask. */
static const BertClasses cg_classes = {
    .embeddings = "BERTEmbeddings", .encoder = "ContextBERTEncoder",
    .layer = "ContextBERTLayer", .attention = "ContextBERTAttention",
    .self_attention = "ContextBERTSelfAttention", .self_output = "BERTSelfOutput",
    .intermediate = "BERTIntermediate", .output = "BERTOutput", .pooler = "ContextBERTPooler",
};

static const BertSpelling cg_spelling = {
    .flavor = BERT_PPB,
    .classes = &cg_classes,
    .layernorm = "BERTLayerNorm()", .ln_weight = "gamma", .ln_bias = "beta",
    .word_padding = WORD_PAD_NONE,
    .act_leaf = false,
    .attention_names = original_attention_names,
    .n_attention_names = sizeof original_attention_names / sizeof original_attention_names[0],
};

/* encoder.context_layer.{l}: Linear(2H, H), after the layers. */
static void context_layers_init(void *owner, Registry *r, const BertConfig *cfg)
{
    CgModel *m = owner;
    int64_t H = cfg->hidden_size;
    m->context_layer = bertc_arena_calloc(r->arena, (size_t)cfg->num_hidden_layers, sizeof(Linear));
    bertc_nn_push(r, "context_layer", "ModuleList", false);
    for (int l = 0; l < cfg->num_hidden_layers; l++)
        bertc_linear_init(&m->context_layer[l], r, bertc_nn_format(r, "%d", l), 2 * H, H, true);
    bertc_nn_pop(r);
}

/* Deep context D = Linear([C0; X_l]) + C0: context_layer.weight columns
 * 0..H−1 multiply C0, H..2H−1 multiply X_l. */
static Var *deep_context(Graph *g, const void *owner, int l, Var *x, Var *C0)
{
    const CgModel *m = owner;
    Var *both[2] = {C0, x};
    return bertc_ag_add(g, bertc_linear_forward(g, &m->context_layer[l], bertc_ag_concat(g, both, 2, 2)), C0);
}

/* ContextBERTPooler: attention_gate = Sequential(Linear(H, 32), ReLU, Dropout,
 * Linear(32, 1)) before the dense + tanh. Both pooler types register it. */
static void attention_gate_init(void *owner, Registry *r, const BertConfig *cfg)
{
    CgModel *m = owner;
    bertc_nn_push(r, "attention_gate", "Sequential", false);
    bertc_linear_init(&m->gate0, r, "0", cfg->hidden_size, 32, true);
    bertc_nn_leaf(r, "1", "ReLU()");
    bertc_dropout_init(&m->gate_drop, r, "2", cfg->hidden_dropout_prob);
    bertc_linear_init(&m->gate3, r, "3", 32, 1, true);
    bertc_nn_pop(r);
}

/* The seed's local context attention: s = gate(X_L) (B, S, 1), −1e9 at
 * padding, a = softmax over t (*weights, (B, S)), h = Σ_t a[t] X_L[t]. */
static Var *attention_gate_pool(Graph *g, const CgModel *m, Var *x, const ITensor *mask,
                                Var **weights)
{
    int64_t B = x->value.shape[0], S = x->value.shape[1], H = x->value.shape[2];
    Var *s = bertc_linear_forward(g, &m->gate0, x);
    s = bertc_linear_forward(g, &m->gate3, bertc_dropout_forward(g, &m->gate_drop, bertc_ag_relu(g, s)));
    int64_t bs1[3] = {B, S, 1}, b1s[3] = {B, 1, S}, bh[2] = {B, H};
    ITensor pad = bertc_itensor_new(g->step, 3, bs1);
    for (int64_t i = 0; i < pad.numel; i++)
        pad.data[i] = mask->data[i] == 0;
    Var *a = bertc_ag_softmax(g, bertc_ag_reshape(g, bertc_ag_masked_fill(g, s, &pad, -1e9f), 3, b1s));
    int64_t bs[2] = {B, S};
    *weights = bertc_ag_reshape(g, a, 2, bs);
    return bertc_ag_reshape(g, bertc_ag_matmul(g, a, x, false, false), 2, bh);        /* (B, H) */
}

/* First-token pooling's weights: one at t = 0 (B, S), a constant. */
static Var *first_token_weights(Graph *g, const Var *x)
{
    int64_t bs[2] = {x->value.shape[0], x->value.shape[1]};
    Tensor w = bertc_tensor_new(g->step, 2, bs);       /* zeros */
    for (int64_t b = 0; b < bs[0]; b++)
        w.data[b * bs[1]] = 1.0f;
    return bertc_ag_constant(g, w);
}

/* The pooler's input h (B, H), pooler_type's, and its token weights (B, S). */
static Var *pool(Graph *g, const void *owner, Var *x, const ITensor *mask, Var **weights)
{
    const CgModel *m = owner;
    if (m->pooler_type == POOLER_FIRST_TOKEN) {
        *weights = first_token_weights(g, x);
        return bertc_bert_first_token(g, x);
    }
    return attention_gate_pool(g, m, x, mask, weights);
}

static const BertHooks cg_hooks = {
    .encoder_init = context_layers_init,
    .before_attention = deep_context,
    .pooler_init = attention_gate_init,
    .pool = pool,
};

void *bertc_cg_build(Registry *r, const BertConfig *cfg, const BertAttentionHook *attention,
               BertcError *err)
{
    (void)err;   /* bertc_bert_config_check has checked every key */
    CgKeys keys = bertc_cg_keys_of(cfg);
    CgModel *m = bertc_arena_calloc(r->arena, 1, sizeof *m);
    m->pooler_type = (PoolerType)keys.pooler_type;
    bertc_nn_push(r, "bert", "ContextBertModel", false);
    bertc_bert_encoder_init(&m->bert, r, cfg,
                      &(BertEncoderSpec){.spelling = &cg_spelling, .attention = attention,
                                         .hooks = &cg_hooks, .owner = m, .has_pooler = true});
    bertc_embedding_init(&m->context, r, "context_embeddings", keys.context_vocab_size,
                   cfg->hidden_size, -1);
    bertc_nn_pop(r);
    bertc_dropout_init(&m->dropout, r, "dropout", cfg->hidden_dropout_prob);
    bertc_linear_init(&m->classifier, r, "classifier", cfg->hidden_size, cfg->num_labels, true);
    return m;
}

/* ---- inputs ------------------------------------------------------------ */

typedef struct CgInputs {
    BertInputs bert;                   /* input_ids, attention_mask, token_type_ids (B, S) */
    ITensor context_ids;               /* (B, 1) */
    bool has_labels;
    ITensor labels;                    /* (B) */
} CgInputs;

static int read_inputs(const BertConfig *cfg, Graph *g, const Batch *in, CgInputs *x,
                       BertcError *err)
{
    if (bertc_bert_read_inputs(cfg, g, in, "input_ids", "attention_mask", "token_type_ids",
                         &x->bert, err) != 0)
        return -1;
    int64_t b1[2] = {x->bert.B, 1}, b[1] = {x->bert.B};
    if (bertc_batch_ids(in, "context_ids", 2, b1, &x->context_ids, err) != 0 ||
        bertc_batch_check_range(in, "context_ids", &x->context_ids, 0,
                          bertc_cg_keys_of(cfg).context_vocab_size,
                          "context_vocab_size", err) != 0)
        return -1;
    x->has_labels = bertc_batch_find(in, "labels") != NULL;
    if (x->has_labels &&
        (bertc_batch_ids(in, "labels", 1, b, &x->labels, err) != 0 ||
         bertc_batch_check_range(in, "labels", &x->labels, 0, cfg->num_labels, "num_labels",
                           err) != 0))
        return -1;
    return 0;
}

int bertc_cg_random_batch(const BertConfig *cfg, Graph *g, int64_t B, int64_t S, bool labels, Rng *rng,
                    Batch *out, BertcError *err)
{
    (void)err;
    int64_t b1[2] = {B, 1};
    ITensor unused;
    bertc_random_bert_inputs(cfg, g, B, S, rng, "input_ids", "attention_mask", "token_type_ids", out,
                       &unused);
    ITensor context_ids = bertc_random_classes(g, B, bertc_cg_keys_of(cfg).context_vocab_size, rng);
    bertc_batch_put_ids(out, "context_ids", bertc_itensor_view(context_ids.data, 2, b1));
    if (labels)
        bertc_batch_put_ids(out, "labels", bertc_random_classes(g, B, cfg->num_labels, rng));
    return 0;
}

/* BERT's inputs and each example's context id (the aspect or target). */
int bertc_cg_batch_from_text(const Model *m, const Tokenizer *tok, const TextExample *ex, int n,
                       int32_t max_len, Graph *g, Batch *out, BertcError *err)
{
    int context_vocab_size = bertc_cg_keys_of(&m->cfg).context_vocab_size;
    int64_t n1[2] = {n, 1};
    ITensor context_ids = bertc_itensor_new(g->step, 2, n1);
    for (int i = 0; i < n; i++) {
        if (ex[i].context_id < 0 || ex[i].context_id >= context_vocab_size)
            return bertc_errorf(err, "%s needs a context id in [0, %d) (context_vocab_size), "
                                "got %d (example %d)", m->arch->name, context_vocab_size,
                                ex[i].context_id, i);
        context_ids.data[i] = ex[i].context_id;
    }
    if (bertc_bert_batch_from_text(m, tok, ex, n, max_len, g, out, err) != 0)
        return -1;
    bertc_batch_put_ids(out, "context_ids", context_ids);
    return 0;
}

/* ---- forward ----------------------------------------------------------- */

/* C0[b, t] = context_embeddings[context_ids[b, 0]] for every t: (B, S, H). */
static Var *context_forward(Graph *g, const CgModel *m, const CgInputs *x)
{
    int64_t bs[2] = {x->bert.B, x->bert.S};
    ITensor ids = bertc_itensor_new(g->step, 2, bs);
    for (int64_t i = 0; i < ids.numel; i++)
        ids.data[i] = x->context_ids.data[i / x->bert.S];
    return bertc_embedding_forward(g, &m->context, &ids);
}

int bertc_cg_forward(void *impl, const BertConfig *cfg, Graph *g, const Batch *in, Outputs *out,
               BertcError *err)
{
    const CgModel *m = impl;
    CgInputs x;
    if (read_inputs(cfg, g, in, &x, err) != 0)
        return -1;
    x.bert.hook_input = context_forward(g, m, &x);                       /* C0 */
    BertOutput r = bertc_bert_model_forward(g, &m->bert, &x.bert);
    bertc_outputs_put(out, g, r.hidden_states[0], "hidden_states.0");
    for (int l = 0; l < m->bert.n_layers; l++) {
        bertc_outputs_put(out, g, r.hidden_states[l + 1], "hidden_states.%d", l + 1);
        bertc_bert_put_layer_maps(out, g, &m->bert, &r, l);
    }
    Var *pooled = r.pooler_output;                                        /* (B, H) */
    Var *logits = bertc_linear_forward(g, &m->classifier, bertc_dropout_forward(g, &m->dropout, pooled));
    bertc_outputs_put(out, g, pooled, "pooled_output");
    bertc_outputs_put(out, g, r.pool_weights, "pooler_weights");
    bertc_outputs_put(out, g, logits, "logits");
    if (x.has_labels)
        bertc_outputs_put(out, g, bertc_ag_cross_entropy(g, logits, &x.labels, -100), "loss");
    return 0;
}

/* ---- original-repository names ---------------------------------------- */

bool bertc_cg_rename(const char *name, char *alt, size_t len)
{
    return bertc_bert_spelling_rename(&cg_spelling, name, alt, len);
}

/* ---- the architecture --------------------------------------------------- */

static const BertAttentionHook cgbert_attention = {
    .init = cgbert_attention_init,
    .forward = cgbert_attention_forward,
    .maps = cgbert_maps,
    .n_maps = CG_CGBERT_MAPS,
};

static void *cgbert_build(Registry *r, const BertConfig *cfg, BertcError *err)
{
    return bertc_cg_build(r, cfg, &cgbert_attention, err);
}

/* The shared outputs (bertc_cg_outputs) and the context-infused Q̂, K̂. */
static const OutputSpec cgbert_outputs[] = {
    {"layers.{l}.q_hat", "(B, nh, S, d)"},
    {"layers.{l}.k_hat", "(B, nh, S, d)"},
};


const ExplainStep bertc_cg_head_steps[CG_N_HEAD_STEPS] = {
    {.title = "Pooler token weights (attention-gate pooler)",
     .equation = "a = softmax<sub>t</sub>(gate(X<sub>L</sub>)), &nbsp; h = &Sigma;<sub>t</sub> "
                 "a<sub>t</sub> X<sub>L</sub>[t]  &nbsp; (B, S)",
     .where = "zoo/models/cgbert.c:attention_gate_pool", .output = "pooler_weights"},
    {.title = "Pooled output",
     .equation = "p = tanh(h W<sub>P</sub> + b<sub>P</sub>)  &nbsp; (B, H)",
     .where = "zoo/models/cgbert.c:pool", .output = "pooled_output"},
    {.title = "Classifier",
     .equation = "z = p W<sub>C</sub> + b<sub>C</sub>  &nbsp; (B, num_labels)",
     .where = "zoo/models/cgbert.c:bertc_cg_forward", .output = "logits"},
};

static const ExplainStep cgbert_encoder_steps[] = {
    BERT_STEP_EMBEDDINGS,
    CG_STEP_DEEP_CONTEXT,
    {.title = "Context gate on the queries &lambda;<sub>Q</sub>",
     .equation = "&lambda;<sub>Q</sub> = &sigma;(Q V<sub>Q</sub> + C U<sub>Q</sub> "
                 "V<sub>Q</sub><sup>C</sup>)  &nbsp; (B, nh, S, 1): one gate per head and token",
     .where = "zoo/models/cgbert.c:context_gate", .output = "layers.{l}.lambda_q"},
    {.title = "Context gate on the keys &lambda;<sub>K</sub>",
     .equation = "&lambda;<sub>K</sub> = &sigma;(K V<sub>K</sub> + C U<sub>K</sub> "
                 "V<sub>K</sub><sup>C</sup>)  &nbsp; (B, nh, S, 1)",
     .where = "zoo/models/cgbert.c:context_gate", .output = "layers.{l}.lambda_k"},
    {.title = "Context queries C U<sub>Q</sub> (the context as each head sees it)",
     .equation = "C<sub>Q</sub> = D<sub>l</sub> U<sub>Q</sub>  &nbsp; (B, nh, S, d)",
     .where = "zoo/models/cgbert.c:cgbert_attention_forward", .output = "layers.{l}.context_q"},
    {.title = "Context keys C U<sub>K</sub>",
     .equation = "C<sub>K</sub> = D<sub>l</sub> U<sub>K</sub>  &nbsp; (B, nh, S, d)",
     .where = "zoo/models/cgbert.c:cgbert_attention_forward", .output = "layers.{l}.context_k"},
    {.title = "Context-guided queries Q&#770;",
     .equation = "Q&#770; = (1 &minus; &lambda;<sub>Q</sub>) &odot; Q + &lambda;<sub>Q</sub> "
                 "&odot; C U<sub>Q</sub>",
     .where = "zoo/models/cgbert.c:cgbert_attention_forward", .output = "layers.{l}.q_hat"},
    {.title = "Context-guided keys K&#770;",
     .equation = "K&#770; = (1 &minus; &lambda;<sub>K</sub>) &odot; K + &lambda;<sub>K</sub> "
                 "&odot; C U<sub>K</sub>",
     .where = "zoo/models/cgbert.c:cgbert_attention_forward", .output = "layers.{l}.k_hat"},
    {.title = "Attention",
     .equation = "A = softmax(Q&#770; K&#770;<sup>T</sup> / &radic;d + M)  &nbsp; (B, nh, S, S)",
     .where = "zoo/models/cgbert.c:cgbert_attention_forward", .output = "layers.{l}.attention_probs"},
    BERT_STEP_LAYER_OUTPUT,
};

static const ModelExplain cgbert_explain = {
    .mechanism = "Context-guided attention (Wu &amp; Ong 2021): a context (--context, the "
                 "aspect) is mixed into every head's queries and keys through gates "
                 "&lambda;<sub>Q</sub>, &lambda;<sub>K</sub> in (0, 1), one per head and "
                 "token: a tall bar means that token's query (key) is taken mostly from the "
                 "context.",
    EXPLAIN_ENCODER(cgbert_encoder_steps), EXPLAIN_STEPS(bertc_cg_head_steps),
    .predict = {{.kind = PREDICT_CLASSES, .output = "logits"}},
};

const ModelArch bertc_arch_cgbert = {
    .name = "CGBertForSequenceClassification",
    .summary = "Context-Guided BERT for targeted aspect-based sentiment (Wu & Ong 2021)",
    .keys = bertc_cg_keys,
    .n_keys = CG_N_KEYS,
    .shared_inputs = bertc_bert_inputs,
    .n_shared_inputs = BERT_N_INPUTS,
    .inputs = bertc_cg_inputs,
    .n_inputs = CG_N_INPUTS,
    .shared_outputs = bertc_cg_outputs,
    .n_shared_outputs = CG_N_OUTPUTS,
    .outputs = cgbert_outputs,
    .n_outputs = sizeof cgbert_outputs / sizeof cgbert_outputs[0],
    .loss = "cross-entropy of logits against labels",
    .build = cgbert_build,
    .forward = bertc_cg_forward,
    .rename = bertc_cg_rename,
    .random_batch = bertc_cg_random_batch,
    .batch_from_text = bertc_cg_batch_from_text,
    .task = MODEL_TASK_SEQ_CLS,
    .explain = &cgbert_explain,
};
