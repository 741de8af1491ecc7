/* zoo/models/bert.c — the BERT encoder of SPEC §6.1, shared by every model.
 * Devlin et al. 2019, read in the order of Hugging Face's modeling_bert.py:
 * BertEmbeddings, BertSelfAttention, BertSelfOutput, BertAttention,
 * BertIntermediate, BertOutput, BertLayer, BertEncoder, BertPooler, then
 * BertModel, each class's init beside its forward. B rows, S tokens,
 * H = hidden_size, nh = num_attention_heads, d = H / nh, I = intermediate_size:
 *
 *   (1) E      = LN_e(word[ids] + type[tt] + position[t])       (B, S, H)     BertEmbeddings
 *   (2) M      = (1 - attention_mask) min                        (B, 1, 1, S)  BertModel
 *       X_0 = E; for each layer l = 0 .. L-1:                                  BertEncoder
 *   (3) Q, K, V = Dense_q(X_l), Dense_k(X_l), Dense_v(X_l)       (B, S, H)     BertSelfAttention
 *   (4) C      = softmax(Q K^T / sqrt(d) + M) V, per head        (B, S, H)     BertSelfAttention
 *   (5) Y      = LN_a(Dense_o(C) + X_l)                          (B, S, H)     BertSelfOutput
 *   (6) F      = act(Dense_i(Y))                                 (B, S, I)     BertIntermediate
 *   (7) X_l+1  = LN_f(Dense_f(F) + Y)                            (B, S, H)     BertOutput
 *   (8) pool   = tanh(Dense_p(X_L[:, 0]))                        (B, H)        BertPooler
 *
 * Dense_n(x) = x W_n^T + b_n and LN_n, a LayerNorm (eps = layer_norm_eps),
 * are the parameters: Dense_q, _k, _v attention.self.{query,key,value};
 * Dense_o, LN_a attention.output.{dense,LayerNorm}; Dense_i
 * intermediate.dense; Dense_f, LN_f output.{dense,LayerNorm}; LN_e
 * embeddings.LayerNorm; Dense_p pooler.dense. act is hidden_act (the erf
 * GELU by default); min is finfo(float32).min or -10000 (the flavor). In
 * training, dropout follows (1), the probabilities of (4) and the Dense of
 * (5) and (7), as in HF. Each line of code below is tagged with the
 * equation it computes; (3) and (4) are zoo/models/bert_attention.c.
 *
 * The two flavors differ only in the order of the sum in (1) (float
 * addition is not associative, and parity is checked to 1e-4) and in min
 * in (2). A BertSpelling says how a family of code names the modules (HF,
 * pytorch_pretrained_bert, CGBERT's original); CGBERT and QACGBERT
 * (zoo/models/cgbert.c) replace (3)-(4) (BertAttentionHook) and add the
 * deep-context input and their pooler (BertHooks).
 *
 * Under no_grad the encoder runs in zoo/models/bert_inference.c instead: the
 * same X_L in less memory (one layer's temporaries at a time, or, lean, one
 * hidden-state buffer). bertc_bert_model_forward is the one place that
 * chooses. */
#include "zoo/models/bert_internal.h"
#include "zoo/zoo.h"
#include "tensor/format_internal.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* ---- spellings ----------------------------------------------------------- */

static const BertClasses hf_classes = {
    .embeddings = "BertEmbeddings", .encoder = "BertEncoder", .layer = "BertLayer",
    .attention = "BertAttention", .self_attention = "BertSelfAttention",
    .self_output = "BertSelfOutput", .intermediate = "BertIntermediate",
    .output = "BertOutput", .pooler = "BertPooler",
};

const BertSpelling bertc_bert_spelling_hf = {
    .flavor = BERT_HF, .classes = &hf_classes, .ln_weight = "weight", .ln_bias = "bias",
    .word_padding = WORD_PAD_CONFIG, .act_leaf = true,
};

/* pytorch_pretrained_bert 0.6.2 prints HF's classes. */
const BertSpelling bertc_bert_spelling_ppb = {
    .flavor = BERT_PPB, .classes = &hf_classes, .ln_weight = "weight", .ln_bias = "bias",
    .word_padding = WORD_PAD_ZERO, .act_leaf = true,
};

/* "LayerNorm" with the spelling's parameter names and printed repr. */
static void norm_init(LayerNorm *ln, Registry *r, const BertSpelling *s, const BertConfig *cfg)
{
    int64_t H = cfg->hidden_size;
    if (!s->layernorm) {
        bertc_layernorm_init_named(ln, r, "LayerNorm", H, cfg->layer_norm_eps, s->ln_weight,
                                   s->ln_bias);
        return;
    }
    ln->dim = H;
    ln->eps = cfg->layer_norm_eps;
    bertc_nn_push(r, "LayerNorm", s->layernorm, true);
    ln->weight = bertc_nn_param(r, s->ln_weight, 1, &H, INIT_ONES);
    ln->bias = bertc_nn_param(r, s->ln_bias, 1, &H, INIT_ZEROS);
    bertc_nn_pop(r);
}

/* ---- BertEmbeddings: (1) ------------------------------------------------- */

static void embeddings_init(BertModel *m, Registry *r, const BertConfig *cfg)
{
    const BertSpelling *s = m->spelling;
    int64_t H = cfg->hidden_size;
    int padding = s->word_padding == WORD_PAD_CONFIG ? cfg->pad_token_id
                  : s->word_padding == WORD_PAD_ZERO ? 0 : -1;
    bertc_nn_push(r, "embeddings", s->classes->embeddings, false);
    bertc_embedding_init(&m->word, r, "word_embeddings", cfg->vocab_size, H, padding);
    bertc_embedding_init(&m->position, r, "position_embeddings", cfg->max_position_embeddings, H,
                         -1);
    bertc_embedding_init(&m->token_type, r, "token_type_embeddings", cfg->type_vocab_size, H, -1);
    norm_init(&m->emb_ln, r, s, cfg);
    bertc_dropout_init(&m->emb_drop, r, "dropout", cfg->hidden_dropout_prob);
    bertc_nn_pop(r);
}

Var *bertc_bert_embeddings_forward(Graph *g, const BertModel *m, const BertInputs *in)
{
    int64_t S = in->S;
    ITensor positions = bertc_itensor_new(g->step, 1, &S);            /* t = 0 .. S-1 */
    for (int64_t t = 0; t < S; t++)
        positions.data[t] = (int32_t)t;
    Var *word = bertc_embedding_forward(g, &m->word, &in->input_ids);   /* word[ids] (B, S, H) */
    Var *type = bertc_embedding_forward(g, &m->token_type, &in->token_type_ids);   /* type[tt] */
    Var *pos = bertc_embedding_forward(g, &m->position, &positions);    /* position[t] (S, H) */
    Var *sum = m->spelling->flavor == BERT_HF
                   ? bertc_ag_add(g, bertc_ag_add(g, word, type), pos)  /* (word + type) + pos */
                   : bertc_ag_add(g, bertc_ag_add(g, word, pos), type); /* (word + pos) + type */
    Var *e = bertc_layernorm_forward(g, &m->emb_ln, sum);               /* (1) E = LN_e(sum) */
    return bertc_dropout_forward(g, &m->emb_drop, e);
}

/* ---- BertSelfAttention: (3), (4) ------------------------------------------
 * BERT's is zoo/models/bert_attention.c; a model may replace it with its
 * own in every layer (BertAttentionHook: CGBERT, QACGBERT). */

static void self_attention_init(BertLayer *l, Registry *r, const BertModel *m,
                                const BertConfig *cfg)
{
    bertc_nn_push(r, "self", m->spelling->classes->self_attention, false);
    if (m->attention)
        l->hooked_self = m->attention->init(r, cfg);
    else
        bertc_bert_self_attention_init(&l->self, r, cfg->hidden_size, cfg->num_attention_heads,
                                       cfg->attention_probs_dropout_prob);
    bertc_nn_pop(r);
}

static const BertMap bert_maps[1] = {{.name = "attention_probs"}};

const BertMap *bertc_bert_layer_maps(const BertModel *m, int *n)
{
    *n = m->attention ? m->attention->n_maps : 1;
    return m->attention ? m->attention->maps : bert_maps;
}

/* C = SelfAttention(X_l, M): BERT's, or the hook's with the layer's extra
 * input (CGBERT: D from hooks->before_attention). maps receives the layer's
 * maps (BERT's: P, "attention_probs"). */
static Var *self_attention_forward(Graph *g, const BertModel *m, int l, Var *x, Var *mask,
                                   const BertInputs *in, Var **maps)
{
    const BertLayer *layer = &m->layers[l];
    if (!m->attention)
        return bertc_bert_self_attention_forward(g, &layer->self, x, mask, &maps[0]); /* (3) (4) */
    Var *extra = m->hooks && m->hooks->before_attention
                     ? m->hooks->before_attention(g, m->owner, l, x, in->hook_input)
                     : NULL;
    return m->attention->forward(g, layer->hooked_self, x, extra, mask, maps);
}

/* ---- BertSelfOutput: (5) -------------------------------------------------- */

static void self_output_init(BertLayer *l, Registry *r, const BertSpelling *s,
                             const BertConfig *cfg)
{
    int64_t H = cfg->hidden_size;
    bertc_nn_push(r, "output", s->classes->self_output, false);
    bertc_linear_init(&l->attn_out, r, "dense", H, H, true);
    norm_init(&l->attn_ln, r, s, cfg);
    bertc_dropout_init(&l->attn_drop, r, "dropout", cfg->hidden_dropout_prob);
    bertc_nn_pop(r);
}

/* LayerNorm(a + b), the residual "Add & Norm", as one op (bertc_ag_add_layernorm):
 * each row is summed and normalised while it is in cache, and the gradient of
 * the sum is never allocated. Same values as bertc_ag_layernorm(bertc_ag_add(a, b)),
 * the two ops BERTC_NAIVE=1 takes instead (bertc_naive, nn/attention.c). */
Var *bertc_bert_add_norm(Graph *g, const LayerNorm *ln, Var *a, Var *b)
{
    if (bertc_naive())
        return bertc_ag_layernorm(g, bertc_ag_add(g, a, b), ln->weight, ln->bias, ln->eps);
    return bertc_ag_add_layernorm(g, a, b, ln->weight, ln->bias, ln->eps);
}

static Var *self_output_forward(Graph *g, const BertLayer *layer, Var *context, Var *x)
{
    Var *a = bertc_linear_forward(g, &layer->attn_out, context);        /* Dense_o(C) */
    a = bertc_dropout_forward(g, &layer->attn_drop, a);
    return bertc_bert_add_norm(g, &layer->attn_ln, a, x);               /* (5) Y = LN_a(a + X_l) */
}

/* ---- BertAttention: (3)-(5) ----------------------------------------------- */

static void attention_init(BertLayer *l, Registry *r, const BertModel *m, const BertConfig *cfg)
{
    bertc_nn_push(r, "attention", m->spelling->classes->attention, false);
    self_attention_init(l, r, m, cfg);
    self_output_init(l, r, m->spelling, cfg);
    bertc_nn_pop(r);
}

static Var *attention_forward(Graph *g, const BertModel *m, int l, Var *x, Var *mask,
                              const BertInputs *in, Var **maps)
{
    Var *context = self_attention_forward(g, m, l, x, mask, in, maps);  /* (3) (4) C */
    return self_output_forward(g, &m->layers[l], context, x);           /* (5) Y */
}

/* ---- BertIntermediate: (6) ------------------------------------------------ */

static const char *act_repr(BertAct act)
{
    switch (act) {
    case ACT_GELU_TANH: return "NewGELUActivation()";
    case ACT_RELU: return "ReLU()";
    case ACT_GELU: break;
    }
    return "GELUActivation()";
}

static void intermediate_init(BertLayer *l, Registry *r, const BertSpelling *s,
                              const BertConfig *cfg)
{
    bertc_nn_push(r, "intermediate", s->classes->intermediate, false);
    bertc_linear_init(&l->inter, r, "dense", cfg->hidden_size, cfg->intermediate_size, true);
    if (s->act_leaf)
        bertc_nn_leaf(r, "intermediate_act_fn", act_repr(cfg->hidden_act));
    bertc_nn_pop(r);
}

/* The config's hidden_act as the autograd activation. */
static AgAct ag_act(BertAct act)
{
    switch (act) {
    case ACT_GELU_TANH: return AG_ACT_GELU_TANH;
    case ACT_RELU: return AG_ACT_RELU;
    case ACT_GELU: break;
    }
    return AG_ACT_GELU;   /* erf form, as BERT */
}

Var *bertc_bert_activation(Graph *g, BertAct act, Var *x)
{
    return bertc_ag_act(g, ag_act(act), x);
}

/* act(Dense_i(Y)) in one call: an int8 Dense_i applies act to its results
 * while they are in cache. */
static Var *intermediate_forward(Graph *g, const BertModel *m, const BertLayer *layer, Var *y)
{
    return bertc_linear_act_forward(g, &layer->inter, y, ag_act(m->act)); /* (6) F (B, S, I) */
}

/* ---- BertOutput: (7) ------------------------------------------------------ */

static void output_init(BertLayer *l, Registry *r, const BertSpelling *s, const BertConfig *cfg)
{
    bertc_nn_push(r, "output", s->classes->output, false);
    bertc_linear_init(&l->out, r, "dense", cfg->intermediate_size, cfg->hidden_size, true);
    norm_init(&l->out_ln, r, s, cfg);
    bertc_dropout_init(&l->out_drop, r, "dropout", cfg->hidden_dropout_prob);
    bertc_nn_pop(r);
}

static Var *output_forward(Graph *g, const BertLayer *layer, Var *f, Var *y)
{
    Var *o = bertc_linear_forward(g, &layer->out, f);                   /* Dense_f(F) (B, S, H) */
    o = bertc_dropout_forward(g, &layer->out_drop, o);
    return bertc_bert_add_norm(g, &layer->out_ln, o, y);                /* (7) LN_f(o + Y) */
}

/* ---- BertLayer: (3)-(7) --------------------------------------------------- */

static void layer_init(BertLayer *l, Registry *r, const BertModel *m, const BertConfig *cfg,
                       int index)
{
    bertc_nn_push(r, bertc_nn_format(r, "%d", index), m->spelling->classes->layer, false);
    attention_init(l, r, m, cfg);
    intermediate_init(l, r, m->spelling, cfg);
    output_init(l, r, m->spelling, cfg);
    bertc_nn_pop(r);
}

/* Each residual sum and its LayerNorm, (5) and (7), are one fused op
 * (bertc_bert_add_norm): one pass over the rows instead of two, with the
 * values of bertc_ag_layernorm(bertc_ag_add(...)). */
Var *bertc_bert_layer_forward(Graph *g, const BertModel *m, int l, Var *x, Var *mask,
                              const BertInputs *in, Var **maps)
{
    const BertLayer *layer = &m->layers[l];
    Var *y = attention_forward(g, m, l, x, mask, in, maps);             /* (3)-(5) Y */
    Var *f = intermediate_forward(g, m, layer, y);                      /* (6) F (B, S, I) */
    return output_forward(g, layer, f, y);                              /* (7) X_l+1 */
}

/* ---- BertEncoder ---------------------------------------------------------- */

static void encoder_init(BertModel *m, Registry *r, const BertConfig *cfg)
{
    bertc_nn_push(r, "encoder", m->spelling->classes->encoder, false);
    bertc_nn_push(r, "layer", "ModuleList", false);
    m->layers = bertc_arena_calloc(r->arena, (size_t)m->n_layers, sizeof(BertLayer));
    for (int l = 0; l < m->n_layers; l++)
        layer_init(&m->layers[l], r, m, cfg, l);
    bertc_nn_pop(r);
    if (m->hooks && m->hooks->encoder_init)
        m->hooks->encoder_init(m->owner, r, cfg);
    bertc_nn_pop(r);
}

/* X_0 = E, X_l+1 = Layer_l(X_l): every X_l kept (hidden_states.{l}) and
 * every layer's maps (layer l's at r->maps[l n_maps ...]). Returns X_L. */
static Var *encoder_forward(Graph *g, const BertModel *m, Var *x, Var *mask,
                            const BertInputs *in, BertOutput *r)
{
    int n_maps;
    bertc_bert_layer_maps(m, &n_maps);
    r->hidden_states[0] = x;                                            /* X_0 = E */
    for (int l = 0; l < m->n_layers; l++) {
        Var **maps = r->maps + (size_t)l * (size_t)n_maps;
        x = bertc_bert_layer_forward(g, m, l, x, mask, in, maps);       /* X_l+1 */
        r->hidden_states[l + 1] = x;
    }
    return x;
}

/* ---- BertPooler: (8) ------------------------------------------------------ */

static void pooler_init(BertModel *m, Registry *r, const BertConfig *cfg)
{
    bertc_nn_push(r, "pooler", m->spelling->classes->pooler, false);
    if (m->hooks && m->hooks->pooler_init)
        m->hooks->pooler_init(m->owner, r, cfg);
    bertc_linear_init(&m->pooler, r, "dense", cfg->hidden_size, cfg->hidden_size, true);
    bertc_nn_leaf(r, "activation", "Tanh()");
    bertc_nn_pop(r);
}

Var *bertc_bert_first_token(Graph *g, Var *x)
{
    int64_t bh[2] = {x->value.shape[0], x->value.shape[2]};
    return bertc_ag_reshape(g, bertc_ag_slice(g, x, 1, 0, 1), 2, bh);   /* X[:, 0] (B, H) */
}

/* pool = tanh(Dense_p(h)), h = X_L[:, 0] or the pool hook's (and its token
 * weights in *weights). */
static Var *pooler_forward(Graph *g, const BertModel *m, Var *x, const ITensor *mask,
                           Var **weights)
{
    *weights = NULL;
    Var *h = m->hooks && m->hooks->pool ? m->hooks->pool(g, m->owner, x, mask, weights)
                                        : bertc_bert_first_token(g, x);
    return bertc_ag_tanh(g, bertc_linear_forward(g, &m->pooler, h));    /* (8) tanh(Dense_p(h)) */
}

/* ---- BertModel ------------------------------------------------------------ */

void bertc_bert_encoder_init(BertModel *m, Registry *r, const BertConfig *cfg,
                             const BertEncoderSpec *spec)
{
    m->spelling = spec->spelling;
    m->attention = spec->attention;
    m->hooks = spec->hooks;
    m->owner = spec->owner;
    m->act = cfg->hidden_act;
    m->heads = cfg->num_attention_heads;
    m->n_layers = cfg->num_hidden_layers;
    m->has_pooler = spec->has_pooler;
    embeddings_init(m, r, cfg);
    encoder_init(m, r, cfg);
    if (m->has_pooler)
        pooler_init(m, r, cfg);
}

void bertc_bert_model_init(BertModel *m, Registry *r, const BertConfig *cfg, BertFlavor flavor,
                           bool has_pooler)
{
    const BertSpelling *s = flavor == BERT_PPB ? &bertc_bert_spelling_ppb : &bertc_bert_spelling_hf;
    bertc_bert_encoder_init(m, r, cfg, &(BertEncoderSpec){.spelling = s, .has_pooler = has_pooler});
}

int bertc_bert_read_inputs(const BertConfig *cfg, Graph *g, const Batch *in, const char *ids_name,
                     const char *mask_name, const char *types_name, BertInputs *out,
                     BertcError *err)
{
    int64_t any2[2] = {-1, -1};
    out->hook_input = NULL;
    if (bertc_batch_ids(in, ids_name, 2, any2, &out->input_ids, err) != 0)
        return -1;
    out->B = out->input_ids.shape[0];
    out->S = out->input_ids.shape[1];
    int64_t bs[2] = {out->B, out->S};
    if (out->S > cfg->max_position_embeddings)
        return bertc_errorf(err, "%s: '%s' has sequence length %lld, longer than "
                            "max_position_embeddings %d", in->source, ids_name,
                            (long long)out->S, cfg->max_position_embeddings);
    if (bertc_batch_check_range(in, ids_name, &out->input_ids, 0, cfg->vocab_size, "vocab_size",
                          err) != 0)
        return -1;
    if (bertc_batch_find(in, mask_name)) {
        if (bertc_batch_ids(in, mask_name, 2, bs, &out->attention_mask, err) != 0 ||
            bertc_batch_check_binary(in, mask_name, &out->attention_mask, err) != 0)
            return -1;
    } else {   /* absent: every token is real */
        out->attention_mask = bertc_itensor_new(g->step, 2, bs);
        for (int64_t i = 0; i < out->attention_mask.numel; i++)
            out->attention_mask.data[i] = 1;
    }
    if (types_name && bertc_batch_find(in, types_name)) {
        if (bertc_batch_ids(in, types_name, 2, bs, &out->token_type_ids, err) != 0 ||
            bertc_batch_check_range(in, types_name, &out->token_type_ids, 0, cfg->type_vocab_size,
                              "type_vocab_size", err) != 0)
            return -1;
    } else {
        out->token_type_ids = bertc_itensor_new(g->step, 2, bs);
    }
    return 0;
}

/* (2) M (B, 1, 1, S): 0 for real tokens and, for padding, min =
 * finfo(float32).min (HF's get_extended_attention_mask) or -10000
 * (pytorch_pretrained_bert, CGBERT). */
static Var *additive_mask(Graph *g, BertFlavor flavor, const ITensor *mask)
{
    int64_t shape[4] = {mask->shape[0], 1, 1, mask->shape[1]};
    Var *m = bertc_ag_tensor(g, 4, shape, false);
    float pad = flavor == BERT_HF ? -3.40282346638528859812e38f : -10000.0f;
    for (int64_t i = 0; i < mask->numel; i++)
        m->value.data[i] = mask->data[i] ? 0.0f : pad;
    return m;
}

/* Room for every X_l and every layer's maps. */
static BertOutput output_new(Graph *g, const BertModel *m)
{
    BertOutput r;
    int n_maps;
    bertc_bert_layer_maps(m, &n_maps);
    size_t L = (size_t)m->n_layers;
    r.hidden_states = bertc_arena_alloc(g->step, sizeof(Var *) * (L + 1));
    r.maps = bertc_arena_alloc(g->step, sizeof(Var *) * (L ? L * (size_t)n_maps : 1));
    r.pool_weights = NULL;
    return r;
}

/* HF's BertModel.forward: the mask, the embeddings, the encoder, the pooler.
 * The one switch between the readable encoder above and inference's
 * memory engineering is here. */
BertOutput bertc_bert_model_forward(Graph *g, const BertModel *m, const BertInputs *in)
{
    BertOutput r = output_new(g, m);
    Var *mask = additive_mask(g, m->spelling->flavor, &in->attention_mask);   /* (2) M */
    Var *x;
    if (bertc_bert_inference(g, m)) {   /* no tape: the same X_L in less memory */
        x = bertc_bert_encoder_inference(g, m, in, mask, &r);        /* bert_inference.c */
    } else {
        Var *e = bertc_bert_embeddings_forward(g, m, in);            /* (1) E */
        x = encoder_forward(g, m, e, mask, in, &r);                  /* (3)-(7) X_L */
    }
    r.last_hidden_state = x;
    r.pooler_output = NULL;
    if (m->has_pooler)
        r.pooler_output = pooler_forward(g, m, x, &in->attention_mask, &r.pool_weights); /* (8) */
    return r;
}

/* ---- outputs ------------------------------------------------------------- */

void bertc_bert_put_layer_maps(Outputs *o, Graph *g, const BertModel *m, const BertOutput *r, int l)
{
    int n_maps;
    const BertMap *info = bertc_bert_layer_maps(m, &n_maps);
    for (int i = 0; i < n_maps; i++) {
        Var *map = r->maps[(size_t)l * (size_t)n_maps + (size_t)i];
        if (map)   /* NULL: not kept (lean inference) */
            bertc_outputs_put(o, g, map, "layers.%d.%s", l, info[i].name);
    }
}

void bertc_bert_put_attention(Outputs *o, Graph *g, const BertModel *m, const BertOutput *r)
{
    for (int l = 0; l < m->n_layers; l++)
        bertc_bert_put_layer_maps(o, g, m, r, l);
}

void bertc_bert_put_outputs(Outputs *o, Graph *g, const BertModel *m, const BertOutput *r)
{
    bertc_outputs_put(o, g, r->last_hidden_state, "last_hidden_state");
    if (r->pooler_output)
        bertc_outputs_put(o, g, r->pooler_output, "pooler_output");
    for (int l = 0; l <= m->n_layers; l++)
        if (r->hidden_states[l])   /* NULL: not kept (lean inference) */
            bertc_outputs_put(o, g, r->hidden_states[l], "hidden_states.%d", l);
    bertc_bert_put_attention(o, g, m, r);
}

/* ---- other spellings in weight files ------------------------------------ */

/* name with its segment [at, end) replaced by `with`. */
static bool replace_segment(const char *name, const char *at, const char *end, const char *with,
                            char *alt, size_t len)
{
    int n = snprintf(alt, len, "%.*s%s%s", (int)(at - name), name, with, end);
    return n > 0 && (size_t)n < len;
}

bool bertc_bert_spelling_rename(const BertSpelling *s, const char *name, char *alt, size_t len)
{
    const char *self = strstr(name, ".attention.self.");
    if (!self)
        return false;
    const char *module = self + strlen(".attention.self.");
    const char *dot = strchr(module, '.');
    if (!dot)
        return false;
    for (int i = 0; i < s->n_attention_names; i++) {
        const char *ours = s->attention_names[i][0];
        if (strlen(ours) == (size_t)(dot - module) && strncmp(module, ours, strlen(ours)) == 0)
            return replace_segment(name, module, dot, s->attention_names[i][1], alt, len);
    }
    return false;
}

bool bertc_bert_layernorm_rename(const char *name, char *alt, size_t len)
{
    /* {HF's name, the TF-era and CGBERT BERTLayerNorm name}, both ways */
    static const char *const names[][2] = {{"weight", "gamma"}, {"bias", "beta"}};
    const char *leaf = strrchr(name, '.');
    size_t ln = strlen("LayerNorm");
    if (!leaf || (size_t)(leaf - name) < ln || strncmp(leaf - ln, "LayerNorm", ln) != 0 ||
        (leaf - ln != name && leaf[-(ptrdiff_t)ln - 1] != '.'))
        return false;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        for (int side = 0; side < 2; side++)
            if (strcmp(leaf + 1, names[i][side]) == 0)
                return replace_segment(name, leaf + 1, "", names[i][!side], alt, len);
    return false;
}

LoadOptions bertc_model_load_options(const Model *m, bool init_missing)
{
    return (LoadOptions){.init_missing = init_missing,
                         .renames = {m->arch->rename, bertc_bert_layernorm_rename}};
}
