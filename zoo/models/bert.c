/* zoo/models/bert.c — the BERT encoder of SPEC §6.1, shared by every model.
 * Devlin et al. 2019; code layout of HF's modeling_bert.py:
 *
 *   E     = LayerNorm(word[ids] + token_type[tt] + position[t])        embeddings
 *   X_0   = E
 *   Y     = LayerNorm(Dense(SelfAttention(X_l, M)) + X_l)             attention.output
 *   X_l+1 = LayerNorm(Dense(act(Dense(Y))) + Y)                       intermediate, output
 *   pool  = tanh(Dense(X_L[:, 0]))                                    pooler
 *
 * The two flavors differ only in the order of the embedding sum (float
 * addition is not associative, and parity is checked to 1e-4) and in the
 * mask value. A BertSpelling says how a family of code names the modules
 * (HF, pytorch_pretrained_bert, CGBERT's original); CGBERT and QACGBERT
 * (zoo/models/cgbert.c) replace the self-attention (BertAttentionHook) and add
 * the deep-context input and their pooler (BertHooks). */
#include "zoo/zoo.h"
#include "tensor/format_internal.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

static const char *act_repr(BertAct act)
{
    switch (act) {
    case ACT_GELU_TANH: return "NewGELUActivation()";
    case ACT_RELU: return "ReLU()";
    case ACT_GELU: break;
    }
    return "GELUActivation()";
}

Var *bertc_bert_activation(Graph *g, BertAct act, Var *x)
{
    switch (act) {
    case ACT_GELU_TANH: return bertc_ag_gelu_tanh(g, x);
    case ACT_RELU: return bertc_ag_relu(g, x);
    case ACT_GELU: break;
    }
    return bertc_ag_gelu(g, x);   /* erf form, as BERT */
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

/* ---- registration ------------------------------------------------------ */

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

static void layer_init(BertLayer *l, Registry *r, const BertModel *m, const BertConfig *cfg,
                       int index)
{
    const BertSpelling *s = m->spelling;
    int64_t H = cfg->hidden_size, I = cfg->intermediate_size;
    float p = cfg->hidden_dropout_prob;
    bertc_nn_push(r, bertc_nn_format(r, "%d", index), s->classes->layer, false);
    bertc_nn_push(r, "attention", s->classes->attention, false);
    self_attention_init(l, r, m, cfg);
    bertc_nn_push(r, "output", s->classes->self_output, false);
    bertc_linear_init(&l->attn_out, r, "dense", H, H, true);
    norm_init(&l->attn_ln, r, s, cfg);
    bertc_dropout_init(&l->attn_drop, r, "dropout", p);
    bertc_nn_pop(r);
    bertc_nn_pop(r);
    bertc_nn_push(r, "intermediate", s->classes->intermediate, false);
    bertc_linear_init(&l->inter, r, "dense", H, I, true);
    if (s->act_leaf)
        bertc_nn_leaf(r, "intermediate_act_fn", act_repr(cfg->hidden_act));
    bertc_nn_pop(r);
    bertc_nn_push(r, "output", s->classes->output, false);
    bertc_linear_init(&l->out, r, "dense", I, H, true);
    norm_init(&l->out_ln, r, s, cfg);
    bertc_dropout_init(&l->out_drop, r, "dropout", p);
    bertc_nn_pop(r);
    bertc_nn_pop(r);
}

static void embeddings_init(BertModel *m, Registry *r, const BertConfig *cfg)
{
    const BertSpelling *s = m->spelling;
    int64_t H = cfg->hidden_size;
    int padding = s->word_padding == WORD_PAD_CONFIG ? cfg->pad_token_id
                  : s->word_padding == WORD_PAD_ZERO ? 0 : -1;
    bertc_nn_push(r, "embeddings", s->classes->embeddings, false);
    bertc_embedding_init(&m->word, r, "word_embeddings", cfg->vocab_size, H, padding);
    bertc_embedding_init(&m->position, r, "position_embeddings", cfg->max_position_embeddings, H, -1);
    bertc_embedding_init(&m->token_type, r, "token_type_embeddings", cfg->type_vocab_size, H, -1);
    norm_init(&m->emb_ln, r, s, cfg);
    bertc_dropout_init(&m->emb_drop, r, "dropout", cfg->hidden_dropout_prob);
    bertc_nn_pop(r);
}

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

static void pooler_init(BertModel *m, Registry *r, const BertConfig *cfg)
{
    bertc_nn_push(r, "pooler", m->spelling->classes->pooler, false);
    if (m->hooks && m->hooks->pooler_init)
        m->hooks->pooler_init(m->owner, r, cfg);
    bertc_linear_init(&m->pooler, r, "dense", cfg->hidden_size, cfg->hidden_size, true);
    bertc_nn_leaf(r, "activation", "Tanh()");
    bertc_nn_pop(r);
}

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

/* ---- forward ----------------------------------------------------------- */

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

/* The additive mask M (B, 1, 1, S): 0 for real tokens and, for padding,
 * finfo(float32).min (HF) or -10000 (pytorch_pretrained_bert, CGBERT). */
static Var *additive_mask(Graph *g, BertFlavor flavor, const ITensor *mask)
{
    int64_t shape[4] = {mask->shape[0], 1, 1, mask->shape[1]};
    Var *m = bertc_ag_tensor(g, 4, shape, false);
    float pad = flavor == BERT_HF ? -3.40282346638528859812e38f : -10000.0f;
    for (int64_t i = 0; i < mask->numel; i++)
        m->value.data[i] = mask->data[i] ? 0.0f : pad;
    return m;
}

static Var *embeddings_forward(Graph *g, const BertModel *m, const BertInputs *in)
{
    int64_t S = in->S;
    ITensor positions = bertc_itensor_new(g->step, 1, &S);
    for (int64_t t = 0; t < S; t++)
        positions.data[t] = (int32_t)t;
    Var *word = bertc_embedding_forward(g, &m->word, &in->input_ids);           /* (B, S, H) */
    Var *type = bertc_embedding_forward(g, &m->token_type, &in->token_type_ids);
    Var *pos = bertc_embedding_forward(g, &m->position, &positions);            /* (S, H) */
    Var *sum = m->spelling->flavor == BERT_HF ? bertc_ag_add(g, bertc_ag_add(g, word, type), pos)
                                              : bertc_ag_add(g, bertc_ag_add(g, word, pos), type);
    return bertc_dropout_forward(g, &m->emb_drop, bertc_layernorm_forward(g, &m->emb_ln, sum));
}

static const BertMap bert_maps[1] = {{.name = "attention_probs"}};

static const BertMap *layer_maps(const BertModel *m, int *n)
{
    *n = m->attention ? m->attention->n_maps : 1;
    return m->attention ? m->attention->maps : bert_maps;
}

/* SelfAttention(X_l, M): BERT's, or the hook's with the layer's extra input
 * (CGBERT: D from hooks->before_attention). maps receives the layer's maps. */
static Var *self_attention_forward(Graph *g, const BertModel *m, int l, Var *x, Var *mask,
                                   const BertInputs *in, Var **maps)
{
    const BertLayer *layer = &m->layers[l];
    if (!m->attention)
        return bertc_bert_self_attention_forward(g, &layer->self, x, mask, &maps[0]);
    Var *extra = m->hooks && m->hooks->before_attention
                     ? m->hooks->before_attention(g, m->owner, l, x, in->hook_input)
                     : NULL;
    return m->attention->forward(g, layer->hooked_self, x, extra, mask, maps);
}

/* One encoder layer, the equations at the top of this file. Each residual sum
 * and its LayerNorm are one fused op (bertc_bert_add_norm): one pass over the rows
 * instead of two, with the values of bertc_ag_layernorm(bertc_ag_add(...)). */
static Var *layer_forward(Graph *g, const BertModel *m, int l, Var *x, Var *mask,
                          const BertInputs *in, Var **maps)
{
    const BertLayer *layer = &m->layers[l];
    Var *context = self_attention_forward(g, m, l, x, mask, in, maps);
    Var *attn = bertc_dropout_forward(g, &layer->attn_drop, bertc_linear_forward(g, &layer->attn_out, context));
    Var *y = bertc_bert_add_norm(g, &layer->attn_ln, attn, x);             /* LN(attn + X_l) */
    Var *f = bertc_bert_activation(g, m->act, bertc_linear_forward(g, &layer->inter, y));    /* (B, S, I) */
    Var *o = bertc_dropout_forward(g, &layer->out_drop, bertc_linear_forward(g, &layer->out, f));
    return bertc_bert_add_norm(g, &layer->out_ln, o, y);                   /* LN(o + Y) */
}

/* A map of layer input x's batch, shaped as map->shape says. */
static Var *empty_map(Graph *g, const BertModel *m, const BertMap *map, const Var *x)
{
    int64_t B = x->value.shape[0], S = x->value.shape[1], H = x->value.shape[2];
    if (map->shape == BERT_MAP_HIDDEN)
        return bertc_ag_constant(g, bertc_tensor_empty(g->step, 3, x->value.shape));
    int64_t last = map->shape == BERT_MAP_SCORES ? S
                 : map->shape == BERT_MAP_ROWS   ? 1
                                                 : H / m->heads;
    int64_t shape[4] = {B, m->heads, S, last};
    return bertc_ag_constant(g, bertc_tensor_empty(g->step, 4, shape));
}

static void copy_down(Var *to, const Var *from, const char *name)
{
    if (from->value.numel != to->value.numel)
        bertc_fatal("encoder: the attention hook's map '%s' has %lld elements, not %lld", name,
                    (long long)from->value.numel, (long long)to->value.numel);
    memcpy(to->value.data, from->value.data, sizeof(float) * (size_t)from->value.numel);
}

/* Inference (no_grad) keeps only what the outputs need of a layer: its
 * output and its maps are allocated first, the layer runs above an arena
 * mark, they are copied down and the layer's temporaries (Q, K, V, scores,
 * the (B, S, I) intermediate, CGBERT's D, ...) are released. The step arena
 * then holds one layer's temporaries at a time instead of L layers'. */
static Var *layer_forward_inference(Graph *g, const BertModel *m, int l, Var *x, Var *mask,
                                    const BertInputs *in, Var **maps)
{
    int n_maps;
    const BertMap *info = layer_maps(m, &n_maps);
    Var *out = bertc_ag_constant(g, bertc_tensor_empty(g->step, 3, x->value.shape));
    Var **kept = bertc_arena_alloc(g->step, sizeof(Var *) * (size_t)n_maps);
    for (int i = 0; i < n_maps; i++)
        kept[i] = empty_map(g, m, &info[i], x);
    ArenaMark mark = bertc_arena_mark(g->step);
    Var *y = layer_forward(g, m, l, x, mask, in, maps);
    copy_down(out, y, "output");
    for (int i = 0; i < n_maps; i++) {
        copy_down(kept[i], maps[i], info[i].name);
        maps[i] = kept[i];
    }
    bertc_arena_release(g->step, mark);
    return out;
}

/* ---- lean inference (bertc_ag_set_lean) --------------------------------
 *
 * A forward that keeps only what the final outputs need, for a target whose
 * RAM is the limit (docs/embedded.md, "Lean inference"). The step arena is a
 * stack: a step's temporaries are allocated above a mark and released once
 * its result is written where the hidden state lives. One (B, S, H) buffer X
 * carries the hidden state through the embeddings and every layer, and the
 * layer works on LEAN_ROWS rows of it at a time (the arena from X upwards; H,
 * I, S as in the equations, R = LEAN_ROWS):
 *
 *   embeddings  [X][lookup]       X = word[ids]; X += type[tt]; X += position[t]
 *                                 in the flavor's order, each lookup released
 *                                 once added; X = LayerNorm(X) in place
 *   attention   [X][K][V]         K, V = Linear(X): every query row needs them
 *               [X][K][V][Q][A]   for each block of R rows of a sequence:
 *                                 Q = Linear(X rows); the context is written
 *                                 over Q (attention_rows: no (nh, S, S) map);
 *                                 A = Dense(context); X rows = LN(A + X rows),
 *                                 which holds Y (K and V already hold what the
 *                                 later rows need of X); Q, A released
 *   FFN         [X][F][O]         for each block of R rows: F = act(Dense(X
 *                                 rows)) in place (R, I); O = Dense(F); X rows
 *                                 = LN(O + X rows), which holds X_l+1
 *
 * so the arena peaks at max(3 S H + 2 R H, S H + R (I + H)) floats per
 * sequence (plus the mask, the ids and a few Var headers), whatever the
 * number of layers. Numerics: the Linears, LayerNorms and GELU are the same
 * kernels on fewer rows, and a + b is b + a in IEEE; attention, row by row,
 * sums its dot products and context in k order with separate multiplies and
 * adds, as the scalar GEMM does. So on the scalar path (the embedded
 * targets') the outputs are the normal forward's bit for bit; on the SIMD
 * paths, whose GEMMs fuse multiply-adds, within float rounding
 * (test/test_lean.c checks both). Only the plain encoder runs lean: an
 * encoder with hooks (CGBERT, QACGBERT) runs as without the flag. Lean keeps
 * no tape and no dropout buffers, so it needs no_grad and eval mode;
 * hidden_states and maps are left NULL and the put functions below skip them. */

/* Rows per step: fewer rows need less RAM (2 R H floats in attention,
 * R (I + H) in the FFN) but give the GEMMs thinner blocks. */
#define LEAN_ROWS 8

static bool lean_applies(const Graph *g, const BertModel *m)
{
    if (!g->lean || m->attention || m->hooks)
        return false;
    if (!g->no_grad)
        bertc_fatal("bert: lean inference keeps no tape; set no_grad "
                    "(bertc_ag_set_no_grad) or turn lean off (bertc_ag_set_lean) for gradients");
    if (g->training)
        bertc_fatal("bert: lean inference runs the eval forward; call bertc_ag_set_training(g, "
                    "false) or turn lean off (bertc_ag_set_lean) for dropout");
    return true;
}

/* x (B, S, H) += t, where t is (B, S, H) or one (S, H) shared by every batch entry. */
static void add_into(Var *x, const Var *t)
{
    int64_t n = t->value.numel;
    for (int64_t at = 0; at < x->value.numel; at += n)
        bertc_kernel_add_inplace(x->value.data + at, t->value.data, n);
}

/* x += table[ids] (B, S, H) or (S, H); the lookup is released once added. */
static void add_lookup(Graph *g, Var *x, const Embedding *table, const ITensor *ids)
{
    ArenaMark mark = bertc_arena_mark(g->step);
    add_into(x, bertc_embedding_forward(g, table, ids));
    bertc_arena_release(g->step, mark);
}

/* x = LayerNorm(x + other), row by row in x's own buffer: bertc_ag_add_layernorm's
 * values (the same sum, then the same row kernel) without a new buffer. */
static void add_norm_into(const LayerNorm *ln, Var *x, const Var *other)
{
    int64_t H = ln->dim, rows = x->value.numel / H;
    add_into(x, other);
    bertc_kernel_layernorm_rows(x->value.data, NULL, NULL, x->value.data, ln->weight->value.data,
                                ln->bias->value.data, rows, H, ln->eps);
}

/* E = LN(word + type + position), summed into the word lookup's buffer X. */
static Var *embeddings_forward_lean(Graph *g, const BertModel *m, const BertInputs *in)
{
    int64_t S = in->S;
    ITensor positions = bertc_itensor_new(g->step, 1, &S);
    for (int64_t t = 0; t < S; t++)
        positions.data[t] = (int32_t)t;
    Var *x = bertc_embedding_forward(g, &m->word, &in->input_ids);          /* X (B, S, H) */
    if (m->spelling->flavor == BERT_HF) {                    /* (word + type) + position */
        add_lookup(g, x, &m->token_type, &in->token_type_ids);
        add_lookup(g, x, &m->position, &positions);
    } else {                                                 /* (word + position) + type */
        add_lookup(g, x, &m->position, &positions);
        add_lookup(g, x, &m->token_type, &in->token_type_ids);
    }
    const LayerNorm *ln = &m->emb_ln;
    bertc_kernel_layernorm_rows(x->value.data, NULL, NULL, x->value.data, ln->weight->value.data,
                                ln->bias->value.data, x->value.numel / ln->dim, ln->dim,
                                ln->eps);
    return x;
}

/* Rows [r, r + n) of x (B, S, H), flattened to B S rows, as a (1, n, H) view. */
static Var *rows_of(Graph *g, Var *x, int64_t r, int64_t n)
{
    int64_t H = x->value.shape[2], shape[3] = {1, n, H};
    return bertc_ag_constant(g, bertc_tensor_view(x->value.data + r * H, 3, shape));
}

/* Batch entry b's (1, 1, 1, S) row of the additive mask (B, 1, 1, S). */
static Var *mask_of(Graph *g, Var *mask, int64_t b, int64_t S)
{
    int64_t shape[4] = {1, 1, 1, S};
    return bertc_ag_constant(g, bertc_tensor_view(mask->value.data + b * S, 4, shape));
}

static int64_t block_rows(int64_t r, int64_t end)
{
    return end - r < LEAN_ROWS ? end - r : LEAN_ROWS;
}

/* Y = LN(Dense(SelfAttention(X, M)) + X), left in X, R query rows at a time. */
static void attention_block_lean(Graph *g, const BertLayer *layer, Var *x, Var *mask)
{
    const BertSelfAttention *self = &layer->self;
    int64_t B = x->value.shape[0], S = x->value.shape[1], H = x->value.shape[2];
    float scale = 1.0f / sqrtf((float)(H / self->heads));
    ArenaMark block = bertc_arena_mark(g->step);
    Var *k = bertc_linear_forward(g, &self->key, x);                          /* (B, S, H) */
    Var *v = bertc_linear_forward(g, &self->value, x);
    for (int64_t b = 0; b < B; b++) {
        Var *kb = rows_of(g, k, b * S, S), *vb = rows_of(g, v, b * S, S);     /* (1, S, H) */
        Var *mb = mask_of(g, mask, b, S);
        for (int64_t i = 0; i < S; i += LEAN_ROWS) {
            ArenaMark rows = bertc_arena_mark(g->step);
            Var *xr = rows_of(g, x, b * S + i, block_rows(i, S));             /* (1, R, H) */
            Var *q = bertc_linear_forward(g, &self->query, xr);
            Var *context = bertc_ag_attention_rows(g, q, kb, vb, self->heads, scale, mb,
                                                   true);                     /* over Q */
            Var *a = bertc_linear_forward(g, &layer->attn_out, context);
            add_norm_into(&layer->attn_ln, xr, a);               /* X rows = LN(A + X rows) */
            bertc_arena_release(g->step, rows);                  /* Q, A */
        }
    }
    bertc_arena_release(g->step, block);                         /* K, V */
}

/* X_l+1 = LN(Dense(act(Dense(Y))) + Y), Y in X and X_l+1 left there, R rows at a time. */
static void ffn_block_lean(Graph *g, const BertModel *m, const BertLayer *layer, Var *x)
{
    int64_t rows = x->value.shape[0] * x->value.shape[1];
    for (int64_t r = 0; r < rows; r += LEAN_ROWS) {
        ArenaMark block = bertc_arena_mark(g->step);
        Var *xr = rows_of(g, x, r, block_rows(r, rows));                      /* (1, R, H) */
        Var *f = bertc_linear_forward(g, &layer->inter, xr);                  /* F (1, R, I) */
        Tensor *F = &f->value;
        switch (m->act) {                                        /* act(F) in place */
        case ACT_GELU_TANH: bertc_kernel_gelu_tanh(F->data, F->data, F->numel); break;
        case ACT_RELU:      /* bertc_ag_relu's x > 0 ? x : 0 */
            for (int64_t i = 0; i < F->numel; i++)
                F->data[i] = F->data[i] > 0.0f ? F->data[i] : 0.0f;
            break;
        case ACT_GELU: bertc_kernel_gelu(F->data, F->data, F->numel); break;
        }
        Var *o = bertc_linear_forward(g, &layer->out, f);                    /* O (1, R, H) */
        add_norm_into(&layer->out_ln, xr, o);                    /* X rows = LN(O + X rows) */
        bertc_arena_release(g->step, block);                     /* F, O */
    }
}

Var *bertc_bert_first_token(Graph *g, Var *x)
{
    int64_t bh[2] = {x->value.shape[0], x->value.shape[2]};
    return bertc_ag_reshape(g, bertc_ag_slice(g, x, 1, 0, 1), 2, bh);                /* X[:, 0] */
}

/* pool = tanh(Dense(h)), h = X_L[:, 0] or the pool hook's (and its token
 * weights in *weights). */
static Var *pooler_forward(Graph *g, const BertModel *m, Var *x, const ITensor *mask,
                           Var **weights)
{
    *weights = NULL;
    Var *h = m->hooks && m->hooks->pool ? m->hooks->pool(g, m->owner, x, mask, weights)
                                        : bertc_bert_first_token(g, x);
    return bertc_ag_tanh(g, bertc_linear_forward(g, &m->pooler, h));
}

BertOutput bertc_bert_model_forward(Graph *g, const BertModel *m, const BertInputs *in)
{
    BertOutput r;
    int n_maps;
    layer_maps(m, &n_maps);
    size_t L = (size_t)m->n_layers;
    r.hidden_states = bertc_arena_alloc(g->step, sizeof(Var *) * (L + 1));
    r.maps = bertc_arena_alloc(g->step, sizeof(Var *) * (L ? L * (size_t)n_maps : 1));
    Var *mask = additive_mask(g, m->spelling->flavor, &in->attention_mask);
    bool lean = lean_applies(g, m);
    Var *x = lean ? embeddings_forward_lean(g, m, in) : embeddings_forward(g, m, in);
    r.hidden_states[0] = lean ? NULL : x;           /* lean: X is overwritten by each layer */
    for (int l = 0; l < m->n_layers; l++) {
        Var **maps = r.maps + (size_t)l * (size_t)n_maps;
        if (lean) {
            attention_block_lean(g, &m->layers[l], x, mask);
            ffn_block_lean(g, m, &m->layers[l], x);
            for (int i = 0; i < n_maps; i++)
                maps[i] = NULL;
        } else {
            x = g->no_grad ? layer_forward_inference(g, m, l, x, mask, in, maps)
                           : layer_forward(g, m, l, x, mask, in, maps);
        }
        r.hidden_states[l + 1] = lean ? NULL : x;
    }
    r.last_hidden_state = x;
    r.pool_weights = NULL;
    r.pooler_output = m->has_pooler ? pooler_forward(g, m, x, &in->attention_mask, &r.pool_weights)
                                    : NULL;
    return r;
}

void bertc_bert_put_layer_maps(Outputs *o, Graph *g, const BertModel *m, const BertOutput *r, int l)
{
    int n_maps;
    const BertMap *info = layer_maps(m, &n_maps);
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
