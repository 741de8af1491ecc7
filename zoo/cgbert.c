/* zoo/cgbert.c — CGBertForSequenceClassification (SPEC §6.3) and the model
 * skeleton it shares with QACGBERT (zoo/cgbert_internal.h). Wu & Ong 2021,
 * "Context-Guided BERT for Targeted Aspect-Based Sentiment Analysis",
 * section "Context-Guided Softmax-attention":
 *
 *   [Q̂; K̂]   = (1 − [λQ; λK]) ⊙ [Q; K] + [λQ; λK] ⊙ C [U_Q; U_K]
 *   [λQ; λK] = σ( [Q; K] [V_Q; V_K] + C [U_Q; U_K] [V_Q^C; V_K^C] )
 *   A        = softmax( Q̂ K̂ᵀ / √d + M )
 *
 * with C the per-head context D of the layer, U_Q = Wcq, U_K = Wck (shared by
 * every head), V_Q = lambda_Q, V_Q^C = lambda_Qc (likewise K). Numerics:
 * LayerNorm ε 1e-12 (BERTLayerNorm), erf GELU, an additive −10000 mask. */
#include "zoo/cgbert_internal.h"
#include "tensor/format_internal.h"

#include <math.h>
#include <string.h>

/* ---- helpers shared with QACGBERT ------------------------------------ */

Var *cg_one_minus(Graph *g, Var *x)
{
    int64_t one = 1;
    Var *ones = ag_tensor(g, 1, &one, false);
    ones->value.data[0] = 1.0f;
    return ag_sub(g, ones, x);
}

/* q (B, nh, S, d), k (B, nh, S, d), mask (B, 1, 1, S) -> (B, nh, S, S). */
Var *cg_scores(Graph *g, Var *q, Var *k, Var *mask)
{
    float scale = 1.0f / sqrtf((float)q->value.shape[3]);
    return ag_add(g, ag_scale(g, ag_matmul(g, q, k, false, true), scale), mask);
}

/* ---- the context-guided self-attention -------------------------------- */

static void cgbert_attention_init(CgSelfAttention *m, Registry *r, const BertConfig *cfg)
{
    int64_t H = cfg->hidden_size, d = H / cfg->num_attention_heads;
    m->heads = cfg->num_attention_heads;
    linear_init(&m->Wq, r, "Wq", H, H, true);
    linear_init(&m->Wk, r, "Wk", H, H, true);
    linear_init(&m->Wv, r, "Wv", H, H, true);
    linear_init(&m->Wcq, r, "Wcq", d, d, true);     /* per head, shared by the heads */
    linear_init(&m->Wck, r, "Wck", d, d, true);
    linear_init(&m->lambda_Qc, r, "lambda_Qc", d, 1, false);
    linear_init(&m->lambda_Q, r, "lambda_Q", d, 1, false);
    linear_init(&m->lambda_Kc, r, "lambda_Kc", d, 1, false);
    linear_init(&m->lambda_K, r, "lambda_K", d, 1, false);
    dropout_init(&m->dropout, r, "dropout", cfg->attention_probs_dropout_prob);
    nn_leaf(r, "lambda_act", "Sigmoid()");
}

/* λ = σ(context·V^C + x·V) (B, nh, S, 1), and (1 − λ) ⊙ x + λ ⊙ context. */
static Var *context_gate(Graph *g, const Linear *v_context, const Linear *v_x, Var *context,
                         Var *x, Var **lambda)
{
    *lambda = ag_sigmoid(g, ag_add(g, linear_forward(g, v_context, context),
                                   linear_forward(g, v_x, x)));
    return ag_add(g, ag_mul(g, cg_one_minus(g, *lambda), x), ag_mul(g, *lambda, context));
}

static CgAttention cgbert_attention_forward(Graph *g, const CgSelfAttention *m, Var *x, Var *D,
                                            Var *mask)
{
    CgAttention a = {0};
    Var *Q = nn_split_heads(g, linear_forward(g, &m->Wq, x), m->heads);   /* (B, nh, S, d) */
    Var *K = nn_split_heads(g, linear_forward(g, &m->Wk, x), m->heads);
    Var *V = nn_split_heads(g, linear_forward(g, &m->Wv, x), m->heads);
    Var *C = nn_split_heads(g, D, m->heads);       /* heads first, then Wcq/Wck (SPEC §6.8) */
    Var *Qc = linear_forward(g, &m->Wcq, C);
    Var *Kc = linear_forward(g, &m->Wck, C);
    Var *Q_hat = context_gate(g, &m->lambda_Qc, &m->lambda_Q, Qc, Q, &a.lambda_q);
    Var *K_hat = context_gate(g, &m->lambda_Kc, &m->lambda_K, Kc, K, &a.lambda_k);
    a.attention_probs = ag_softmax(g, cg_scores(g, Q_hat, K_hat, mask));  /* (B, nh, S, S) */
    Var *probs = dropout_forward(g, &m->dropout, a.attention_probs);
    a.context = nn_merge_heads(g, ag_matmul(g, probs, V, false, false));  /* (B, S, H) */
    return a;
}

/* ---- the model skeleton ----------------------------------------------- */

typedef struct CgLayer {
    CgSelfAttention self;              /* attention.self */
    Linear attn_out;                   /* attention.output.dense */
    LayerNorm attn_ln;                 /* attention.output.LayerNorm {gamma, beta} */
    Dropout attn_drop;
    Linear inter;                      /* intermediate.dense */
    Linear out;                        /* output.dense */
    LayerNorm out_ln;                  /* output.LayerNorm {gamma, beta} */
    Dropout out_drop;
} CgLayer;

typedef struct CgModel {
    const CgAttentionOps *ops;
    Embedding word, position, token_type;     /* bert.embeddings.* */
    LayerNorm emb_ln;
    Dropout emb_drop;
    int n_layers;
    CgLayer *layers;                   /* bert.encoder.layer.{l} */
    Linear *context_layer;             /* bert.encoder.context_layer.{l}: (H, 2H) */
    Linear gate0, gate3;               /* bert.pooler.attention_gate.{0,3} */
    Dropout gate_drop;
    Linear pooler;                     /* bert.pooler.dense */
    Embedding context;                 /* bert.context_embeddings: (context_vocab_size, H) */
    Dropout dropout;
    Linear classifier;                 /* (num_labels, H) */
    PoolerType pooler_type;
    BertAct act;
} CgModel;

/* The original's TF-style BERTLayerNorm: parameters gamma and beta. */
static void bert_layernorm_init(LayerNorm *m, Registry *r, const char *attr,
                                const BertConfig *cfg)
{
    int64_t H = cfg->hidden_size;
    m->dim = H;
    m->eps = cfg->layer_norm_eps;
    nn_push(r, attr, "BERTLayerNorm()", true);
    m->weight = nn_param(r, "gamma", 1, &H, INIT_ONES);
    m->bias = nn_param(r, "beta", 1, &H, INIT_ZEROS);
    nn_pop(r);
}

static void embeddings_init(CgModel *m, Registry *r, const BertConfig *cfg)
{
    int64_t H = cfg->hidden_size;
    nn_push(r, "embeddings", "BERTEmbeddings", false);
    embedding_init(&m->word, r, "word_embeddings", cfg->vocab_size, H, -1);  /* no padding_idx */
    embedding_init(&m->position, r, "position_embeddings", cfg->max_position_embeddings, H, -1);
    embedding_init(&m->token_type, r, "token_type_embeddings", cfg->type_vocab_size, H, -1);
    bert_layernorm_init(&m->emb_ln, r, "LayerNorm", cfg);
    dropout_init(&m->emb_drop, r, "dropout", cfg->hidden_dropout_prob);
    nn_pop(r);
}

static void layer_init(CgLayer *l, Registry *r, const BertConfig *cfg, const CgAttentionOps *ops,
                       int index)
{
    int64_t H = cfg->hidden_size, I = cfg->intermediate_size;
    float p = cfg->hidden_dropout_prob;
    nn_push(r, nn_format(r, "%d", index), "ContextBERTLayer", false);
    nn_push(r, "attention", "ContextBERTAttention", false);
    nn_push(r, "self", "ContextBERTSelfAttention", false);
    ops->init(&l->self, r, cfg);
    nn_pop(r);
    nn_push(r, "output", "BERTSelfOutput", false);
    linear_init(&l->attn_out, r, "dense", H, H, true);
    bert_layernorm_init(&l->attn_ln, r, "LayerNorm", cfg);
    dropout_init(&l->attn_drop, r, "dropout", p);
    nn_pop(r);
    nn_pop(r);
    nn_push(r, "intermediate", "BERTIntermediate", false);
    linear_init(&l->inter, r, "dense", H, I, true);
    nn_pop(r);
    nn_push(r, "output", "BERTOutput", false);
    linear_init(&l->out, r, "dense", I, H, true);
    bert_layernorm_init(&l->out_ln, r, "LayerNorm", cfg);
    dropout_init(&l->out_drop, r, "dropout", p);
    nn_pop(r);
    nn_pop(r);
}

static void encoder_init(CgModel *m, Registry *r, const BertConfig *cfg)
{
    int64_t H = cfg->hidden_size;
    m->n_layers = cfg->num_hidden_layers;
    m->layers = arena_calloc(r->arena, (size_t)m->n_layers, sizeof(CgLayer));
    m->context_layer = arena_calloc(r->arena, (size_t)m->n_layers, sizeof(Linear));
    nn_push(r, "encoder", "ContextBERTEncoder", false);
    nn_push(r, "layer", "ModuleList", false);
    for (int l = 0; l < m->n_layers; l++)
        layer_init(&m->layers[l], r, cfg, m->ops, l);
    nn_pop(r);
    nn_push(r, "context_layer", "ModuleList", false);
    for (int l = 0; l < m->n_layers; l++)
        linear_init(&m->context_layer[l], r, nn_format(r, "%d", l), 2 * H, H, true);
    nn_pop(r);
    nn_pop(r);
}

/* ContextBERTPooler: attention_gate = Sequential(Linear(H, 32), ReLU, Dropout,
 * Linear(32, 1)), then dense + tanh. Both pooler types register the gate. */
static void pooler_init(CgModel *m, Registry *r, const BertConfig *cfg)
{
    int64_t H = cfg->hidden_size;
    nn_push(r, "pooler", "ContextBERTPooler", false);
    nn_push(r, "attention_gate", "Sequential", false);
    linear_init(&m->gate0, r, "0", H, 32, true);
    nn_leaf(r, "1", "ReLU()");
    dropout_init(&m->gate_drop, r, "2", cfg->hidden_dropout_prob);
    linear_init(&m->gate3, r, "3", 32, 1, true);
    nn_pop(r);
    linear_init(&m->pooler, r, "dense", H, H, true);
    nn_leaf(r, "activation", "Tanh()");
    nn_pop(r);
}

void *cg_build(Registry *r, const BertConfig *cfg, const CgAttentionOps *ops, BertcError *err)
{
    if (cfg->num_labels < 1 || cfg->context_vocab_size < 1 ||
        cfg->hidden_size % cfg->num_attention_heads != 0) {
        bertc_errorf(err, "config: %s needs num_labels >= 1 (got %d), context_vocab_size >= 1 "
                     "(got %d) and hidden_size %d a multiple of num_attention_heads %d",
                     bert_arch_name(cfg->arch), cfg->num_labels, cfg->context_vocab_size,
                     cfg->hidden_size, cfg->num_attention_heads);
        return NULL;
    }
    CgModel *m = arena_calloc(r->arena, 1, sizeof *m);
    m->ops = ops;
    m->pooler_type = cfg->pooler_type;
    m->act = cfg->hidden_act;
    nn_push(r, "bert", "ContextBertModel", false);
    embeddings_init(m, r, cfg);
    encoder_init(m, r, cfg);
    pooler_init(m, r, cfg);
    embedding_init(&m->context, r, "context_embeddings", cfg->context_vocab_size,
                   cfg->hidden_size, -1);
    nn_pop(r);
    dropout_init(&m->dropout, r, "dropout", cfg->hidden_dropout_prob);
    linear_init(&m->classifier, r, "classifier", cfg->hidden_size, cfg->num_labels, true);
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
    if (bert_read_inputs(cfg, g, in, "input_ids", "attention_mask", "token_type_ids",
                         &x->bert, err) != 0)
        return -1;
    int64_t b1[2] = {x->bert.B, 1}, b[1] = {x->bert.B};
    if (batch_ids(in, "context_ids", 2, b1, &x->context_ids, err) != 0 ||
        batch_check_range(in, "context_ids", &x->context_ids, 0, cfg->context_vocab_size,
                          "context_vocab_size", err) != 0)
        return -1;
    x->has_labels = batch_find(in, "labels") != NULL;
    if (x->has_labels &&
        (batch_ids(in, "labels", 1, b, &x->labels, err) != 0 ||
         batch_check_range(in, "labels", &x->labels, 0, cfg->num_labels, "num_labels",
                           err) != 0))
        return -1;
    return 0;
}

int cg_random_batch(const BertConfig *cfg, Graph *g, int64_t B, int64_t S, bool labels, Rng *rng,
                    Batch *out, BertcError *err)
{
    (void)err;
    int64_t b1[2] = {B, 1};
    ITensor unused;
    random_bert_inputs(cfg, g, B, S, rng, "input_ids", "attention_mask", "token_type_ids", out,
                       &unused);
    ITensor context_ids = random_classes(g, B, cfg->context_vocab_size, rng);
    batch_put_ids(out, "context_ids", itensor_view(context_ids.data, 2, b1));
    if (labels)
        batch_put_ids(out, "labels", random_classes(g, B, cfg->num_labels, rng));
    return 0;
}

/* ---- forward ----------------------------------------------------------- */

/* M = (1 − attention_mask)[:, None, None, :] · (−10000), (B, 1, 1, S). */
static Var *additive_mask(Graph *g, const ITensor *mask)
{
    int64_t shape[4] = {mask->shape[0], 1, 1, mask->shape[1]};
    Var *m = ag_tensor(g, 4, shape, false);
    for (int64_t i = 0; i < mask->numel; i++)
        m->value.data[i] = mask->data[i] ? 0.0f : -10000.0f;
    return m;
}

/* E = LN((word + position) + token_type): the original's summation order. */
static Var *embeddings_forward(Graph *g, const CgModel *m, const BertInputs *in)
{
    int64_t S = in->S;
    ITensor positions = itensor_new(g->step, 1, &S);
    for (int64_t t = 0; t < S; t++)
        positions.data[t] = (int32_t)t;
    Var *word = embedding_forward(g, &m->word, &in->input_ids);           /* (B, S, H) */
    Var *pos = embedding_forward(g, &m->position, &positions);            /* (S, H) */
    Var *type = embedding_forward(g, &m->token_type, &in->token_type_ids);
    Var *sum = ag_add(g, ag_add(g, word, pos), type);
    return dropout_forward(g, &m->emb_drop, layernorm_forward(g, &m->emb_ln, sum));
}

/* C0[b, t] = context_embeddings[context_ids[b, 0]] for every t: (B, S, H). */
static Var *context_forward(Graph *g, const CgModel *m, const CgInputs *x)
{
    int64_t bs[2] = {x->bert.B, x->bert.S};
    ITensor ids = itensor_new(g->step, 2, bs);
    for (int64_t i = 0; i < ids.numel; i++)
        ids.data[i] = x->context_ids.data[i / x->bert.S];
    return embedding_forward(g, &m->context, &ids);
}

/* Deep context D = Linear([C0; X_l]) + C0: context_layer.weight columns
 * 0..H−1 multiply C0, H..2H−1 multiply X_l. */
static Var *deep_context(Graph *g, const Linear *context_layer, Var *C0, Var *x)
{
    Var *both[2] = {C0, x};
    return ag_add(g, linear_forward(g, context_layer, ag_concat(g, both, 2, 2)), C0);
}

static Var *layer_forward(Graph *g, const CgModel *m, const CgLayer *l, Var *x, Var *D,
                          Var *mask, CgAttention *a)
{
    *a = m->ops->forward(g, &l->self, x, D, mask);
    Var *attn = dropout_forward(g, &l->attn_drop, linear_forward(g, &l->attn_out, a->context));
    Var *y = bert_add_norm(g, &l->attn_ln, attn, x);                 /* LN(attn + X_l) */
    Var *f = bert_activation(g, m->act, linear_forward(g, &l->inter, y));  /* (B, S, I) */
    Var *o = dropout_forward(g, &l->out_drop, linear_forward(g, &l->out, f));
    return bert_add_norm(g, &l->out_ln, o, y);                       /* LN(o + Y) */
}

/* The seed's local context attention: s = gate(X_L) (B, S, 1), −1e9 at
 * padding, a = softmax over t, h = Σ_t a[t] X_L[t]. */
static Var *attention_gate_pool(Graph *g, const CgModel *m, Var *x, const ITensor *mask)
{
    int64_t B = x->value.shape[0], S = x->value.shape[1], H = x->value.shape[2];
    Var *s = linear_forward(g, &m->gate0, x);
    s = linear_forward(g, &m->gate3, dropout_forward(g, &m->gate_drop, ag_relu(g, s)));
    int64_t bs1[3] = {B, S, 1}, b1s[3] = {B, 1, S}, bh[2] = {B, H};
    ITensor pad = itensor_new(g->step, 3, bs1);
    for (int64_t i = 0; i < pad.numel; i++)
        pad.data[i] = mask->data[i] == 0;
    Var *a = ag_softmax(g, ag_reshape(g, ag_masked_fill(g, s, &pad, -1e9f), 3, b1s));
    return ag_reshape(g, ag_matmul(g, a, x, false, false), 2, bh);        /* (B, H) */
}

static Var *pool(Graph *g, const CgModel *m, Var *x, const ITensor *mask)
{
    int64_t bh[2] = {x->value.shape[0], x->value.shape[2]};
    Var *h = m->pooler_type == POOLER_FIRST_TOKEN
                 ? ag_reshape(g, ag_slice(g, x, 1, 0, 1), 2, bh)          /* X_L[:, 0] */
                 : attention_gate_pool(g, m, x, mask);
    return ag_tanh(g, linear_forward(g, &m->pooler, h));
}

static void put_attention(Outputs *out, Graph *g, const CgAttention *a, int l)
{
    const struct { Var *v; const char *name; } named[] = {
        {a->attention_probs, "attention_probs"}, {a->lambda_q, "lambda_q"},
        {a->lambda_k, "lambda_k"}, {a->lambda_context, "lambda_context"},
        {a->new_attention_probs, "new_attention_probs"},
        {a->quasi_attention_prob, "quasi_attention_prob"},
    };
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
        if (named[i].v)
            outputs_put(out, g, named[i].v, "layers.%d.%s", l, named[i].name);
}

int cg_forward(void *impl, const BertConfig *cfg, Graph *g, const Batch *in, Outputs *out,
               BertcError *err)
{
    const CgModel *m = impl;
    CgInputs x;
    if (read_inputs(cfg, g, in, &x, err) != 0)
        return -1;
    Var *mask = additive_mask(g, &x.bert.attention_mask);
    Var *C0 = context_forward(g, m, &x);
    Var *h = embeddings_forward(g, m, &x.bert);
    outputs_put(out, g, h, "hidden_states.0");
    for (int l = 0; l < m->n_layers; l++) {
        CgAttention a;
        Var *D = deep_context(g, &m->context_layer[l], C0, h);
        h = layer_forward(g, m, &m->layers[l], h, D, mask, &a);
        outputs_put(out, g, h, "hidden_states.%d", l + 1);
        put_attention(out, g, &a, l);
    }
    Var *pooled = pool(g, m, h, &x.bert.attention_mask);                  /* (B, H) */
    Var *logits = linear_forward(g, &m->classifier, dropout_forward(g, &m->dropout, pooled));
    outputs_put(out, g, pooled, "pooled_output");
    outputs_put(out, g, logits, "logits");
    if (x.has_labels)
        outputs_put(out, g, ag_cross_entropy(g, logits, &x.labels, -100), "loss");
    return 0;
}

/* ---- original-repository names ---------------------------------------- */

bool cg_rename(const char *name, char *alt, size_t len)
{
    static const char *const names[][2] = {
        {"Wq", "query"}, {"Wk", "key"}, {"Wv", "value"},
        {"Wcq", "context_for_q"}, {"Wck", "context_for_k"},
        {"lambda_Qc", "lambda_q_context_layer"}, {"lambda_Q", "lambda_q_query_layer"},
        {"lambda_Kc", "lambda_k_context_layer"}, {"lambda_K", "lambda_k_key_layer"},
    };
    const char *self = strstr(name, ".attention.self.");
    if (!self)
        return false;
    const char *module = self + strlen(".attention.self.");
    const char *dot = strchr(module, '.');
    if (!dot)
        return false;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strlen(names[i][0]) != (size_t)(dot - module) ||
            strncmp(module, names[i][0], (size_t)(dot - module)) != 0)
            continue;
        int n = snprintf(alt, len, "%.*s%s%s", (int)(module - name), name, names[i][1], dot);
        return n > 0 && (size_t)n < len;
    }
    return false;
}

/* ---- the architecture --------------------------------------------------- */

static const CgAttentionOps cgbert_attention = {cgbert_attention_init,
                                                cgbert_attention_forward};

static void *cgbert_build(Registry *r, const BertConfig *cfg, BertcError *err)
{
    return cg_build(r, cfg, &cgbert_attention, err);
}

const ModelArch arch_cgbert = {ARCH_CGBERT, "CGBertForSequenceClassification", cgbert_build,
                               cg_forward, cg_rename, cg_random_batch};
