/* zoo/bert.c — the BERT encoder of SPEC §6.1, shared by every model but
 * CGBERT/QACGBERT. Devlin et al. 2019; code layout of HF's modeling_bert.py:
 *
 *   E     = LayerNorm(word[ids] + token_type[tt] + position[t])        embeddings
 *   X_0   = E
 *   Y     = LayerNorm(Dense(SelfAttention(X_l, M)) + X_l)             attention.output
 *   X_l+1 = LayerNorm(Dense(act(Dense(Y))) + Y)                       intermediate, output
 *   pool  = tanh(Dense(X_L[:, 0]))                                    pooler
 *
 * The two flavors differ only in the order of the embedding sum (float
 * addition is not associative, and parity is checked to 1e-4) and in the
 * mask value. */
#include "zoo/zoo.h"

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

Var *bert_activation(Graph *g, BertAct act, Var *x)
{
    switch (act) {
    case ACT_GELU_TANH: return ag_gelu_tanh(g, x);
    case ACT_RELU: return ag_relu(g, x);
    case ACT_GELU: break;
    }
    return ag_gelu(g, x);   /* erf form, as BERT */
}

/* LayerNorm(a + b), the residual "Add & Norm", as one op (ag_add_layernorm):
 * each row is summed and normalised while it is in cache, and the gradient of
 * the sum is never allocated. Same values as ag_layernorm(ag_add(a, b)). */
Var *bert_add_norm(Graph *g, const LayerNorm *ln, Var *a, Var *b)
{
    return ag_add_layernorm(g, a, b, ln->weight, ln->bias, ln->eps);
}

static void layer_init(BertLayer *l, Registry *r, const BertConfig *cfg, int index)
{
    int64_t H = cfg->hidden_size, I = cfg->intermediate_size;
    float eps = cfg->layer_norm_eps, p = cfg->hidden_dropout_prob;
    nn_push(r, nn_format(r, "%d", index), "BertLayer", false);
    nn_push(r, "attention", "BertAttention", false);
    nn_push(r, "self", "BertSelfAttention", false);
    bert_self_attention_init(&l->self, r, H, cfg->num_attention_heads,
                             cfg->attention_probs_dropout_prob);
    nn_pop(r);
    nn_push(r, "output", "BertSelfOutput", false);
    linear_init(&l->attn_out, r, "dense", H, H, true);
    layernorm_init(&l->attn_ln, r, "LayerNorm", H, eps);
    dropout_init(&l->attn_drop, r, "dropout", p);
    nn_pop(r);
    nn_pop(r);
    nn_push(r, "intermediate", "BertIntermediate", false);
    linear_init(&l->inter, r, "dense", H, I, true);
    nn_leaf(r, "intermediate_act_fn", act_repr(cfg->hidden_act));
    nn_pop(r);
    nn_push(r, "output", "BertOutput", false);
    linear_init(&l->out, r, "dense", I, H, true);
    layernorm_init(&l->out_ln, r, "LayerNorm", H, eps);
    dropout_init(&l->out_drop, r, "dropout", p);
    nn_pop(r);
    nn_pop(r);
}

void bert_model_init(BertModel *m, Registry *r, const BertConfig *cfg, BertFlavor flavor,
                     bool has_pooler)
{
    int64_t H = cfg->hidden_size;
    m->flavor = flavor;
    m->act = cfg->hidden_act;
    m->heads = cfg->num_attention_heads;
    m->n_layers = cfg->num_hidden_layers;
    m->has_pooler = has_pooler;
    nn_push(r, "embeddings", "BertEmbeddings", false);
    int padding = flavor == BERT_PPB ? 0 : cfg->pad_token_id;
    embedding_init(&m->word, r, "word_embeddings", cfg->vocab_size, H, padding);
    embedding_init(&m->position, r, "position_embeddings", cfg->max_position_embeddings, H, -1);
    embedding_init(&m->token_type, r, "token_type_embeddings", cfg->type_vocab_size, H, -1);
    layernorm_init(&m->emb_ln, r, "LayerNorm", H, cfg->layer_norm_eps);
    dropout_init(&m->emb_drop, r, "dropout", cfg->hidden_dropout_prob);
    nn_pop(r);
    nn_push(r, "encoder", "BertEncoder", false);
    nn_push(r, "layer", "ModuleList", false);
    m->layers = arena_calloc(r->arena, (size_t)m->n_layers, sizeof(BertLayer));
    for (int l = 0; l < m->n_layers; l++)
        layer_init(&m->layers[l], r, cfg, l);
    nn_pop(r);
    nn_pop(r);
    if (has_pooler) {
        nn_push(r, "pooler", "BertPooler", false);
        linear_init(&m->pooler, r, "dense", H, H, true);
        nn_leaf(r, "activation", "Tanh()");
        nn_pop(r);
    }
}

int bert_read_inputs(const BertConfig *cfg, Graph *g, const Batch *in, const char *ids_name,
                     const char *mask_name, const char *types_name, BertInputs *out,
                     BertcError *err)
{
    int64_t any2[2] = {-1, -1};
    if (batch_ids(in, ids_name, 2, any2, &out->input_ids, err) != 0)
        return -1;
    out->B = out->input_ids.shape[0];
    out->S = out->input_ids.shape[1];
    int64_t bs[2] = {out->B, out->S};
    if (out->S > cfg->max_position_embeddings)
        return bertc_errorf(err, "%s: '%s' has sequence length %lld, longer than "
                            "max_position_embeddings %d", in->source, ids_name,
                            (long long)out->S, cfg->max_position_embeddings);
    if (batch_check_range(in, ids_name, &out->input_ids, 0, cfg->vocab_size, "vocab_size",
                          err) != 0)
        return -1;
    if (batch_find(in, mask_name)) {
        if (batch_ids(in, mask_name, 2, bs, &out->attention_mask, err) != 0 ||
            batch_check_binary(in, mask_name, &out->attention_mask, err) != 0)
            return -1;
    } else {   /* absent: every token is real */
        out->attention_mask = itensor_new(g->step, 2, bs);
        for (int64_t i = 0; i < out->attention_mask.numel; i++)
            out->attention_mask.data[i] = 1;
    }
    if (types_name && batch_find(in, types_name)) {
        if (batch_ids(in, types_name, 2, bs, &out->token_type_ids, err) != 0 ||
            batch_check_range(in, types_name, &out->token_type_ids, 0, cfg->type_vocab_size,
                              "type_vocab_size", err) != 0)
            return -1;
    } else {
        out->token_type_ids = itensor_new(g->step, 2, bs);
    }
    return 0;
}

/* The additive mask M (B, 1, 1, S): 0 for real tokens and, for padding,
 * finfo(float32).min (HF) or -10000 (pytorch_pretrained_bert). */
static Var *additive_mask(Graph *g, BertFlavor flavor, const ITensor *mask)
{
    int64_t shape[4] = {mask->shape[0], 1, 1, mask->shape[1]};
    Var *m = ag_tensor(g, 4, shape, false);
    float pad = flavor == BERT_HF ? -3.40282346638528859812e38f : -10000.0f;
    for (int64_t i = 0; i < mask->numel; i++)
        m->value.data[i] = mask->data[i] ? 0.0f : pad;
    return m;
}

static Var *embeddings_forward(Graph *g, const BertModel *m, const BertInputs *in)
{
    int64_t S = in->S;
    ITensor positions = itensor_new(g->step, 1, &S);
    for (int64_t t = 0; t < S; t++)
        positions.data[t] = (int32_t)t;
    Var *word = embedding_forward(g, &m->word, &in->input_ids);           /* (B, S, H) */
    Var *type = embedding_forward(g, &m->token_type, &in->token_type_ids);
    Var *pos = embedding_forward(g, &m->position, &positions);            /* (S, H) */
    Var *sum = m->flavor == BERT_HF ? ag_add(g, ag_add(g, word, type), pos)
                                    : ag_add(g, ag_add(g, word, pos), type);
    return dropout_forward(g, &m->emb_drop, layernorm_forward(g, &m->emb_ln, sum));
}

/* One encoder layer, the equations at the top of this file. Each residual sum
 * and its LayerNorm are one fused op (bert_add_norm): one pass over the rows
 * instead of two, with the values of ag_layernorm(ag_add(...)). */
static Var *layer_forward(Graph *g, const BertModel *m, const BertLayer *l, Var *x, Var *mask,
                          Var **probs)
{
    Var *context = bert_self_attention_forward(g, &l->self, x, mask, probs);
    Var *attn = dropout_forward(g, &l->attn_drop, linear_forward(g, &l->attn_out, context));
    Var *y = bert_add_norm(g, &l->attn_ln, attn, x);                 /* LN(attn + X_l) */
    Var *f = bert_activation(g, m->act, linear_forward(g, &l->inter, y));        /* (B, S, I) */
    Var *o = dropout_forward(g, &l->out_drop, linear_forward(g, &l->out, f));
    return bert_add_norm(g, &l->out_ln, o, y);                       /* LN(o + Y) */
}

/* Inference (no_grad) keeps only what the outputs need of a layer: its
 * output and its attention map are allocated first, the layer runs above an
 * arena mark, the two are copied down and the layer's temporaries (Q, K, V,
 * scores, the (B, S, I) intermediate, ...) are released. The step arena then
 * holds one layer's temporaries at a time instead of L layers'. */
static Var *layer_forward_inference(Graph *g, const BertModel *m, const BertLayer *l, Var *x,
                                    Var *mask, Var **probs)
{
    int64_t B = x->value.shape[0], S = x->value.shape[1];
    int64_t pshape[4] = {B, m->heads, S, S};
    Var *out = ag_constant(g, tensor_empty(g->step, 3, x->value.shape));
    *probs = ag_constant(g, tensor_empty(g->step, 4, pshape));
    ArenaMark mark = arena_mark(g->step);
    Var *p, *y = layer_forward(g, m, l, x, mask, &p);
    memcpy(out->value.data, y->value.data, sizeof(float) * (size_t)y->value.numel);
    memcpy((*probs)->value.data, p->value.data, sizeof(float) * (size_t)p->value.numel);
    arena_release(g->step, mark);
    return out;
}

BertOutput bert_model_forward(Graph *g, const BertModel *m, const BertInputs *in)
{
    BertOutput r;
    r.hidden_states = arena_alloc(g->step, sizeof(Var *) * (size_t)(m->n_layers + 1));
    r.attention_probs = arena_alloc(g->step, sizeof(Var *) * (size_t)(m->n_layers ? m->n_layers : 1));
    Var *mask = additive_mask(g, m->flavor, &in->attention_mask);
    Var *x = embeddings_forward(g, m, in);
    r.hidden_states[0] = x;
    for (int l = 0; l < m->n_layers; l++) {
        x = g->no_grad ? layer_forward_inference(g, m, &m->layers[l], x, mask,
                                                 &r.attention_probs[l])
                       : layer_forward(g, m, &m->layers[l], x, mask, &r.attention_probs[l]);
        r.hidden_states[l + 1] = x;
    }
    r.last_hidden_state = x;
    r.pooler_output = NULL;
    if (m->has_pooler) {
        int64_t bh[2] = {in->B, x->value.shape[2]};
        Var *first = ag_reshape(g, ag_slice(g, x, 1, 0, 1), 2, bh);          /* X_L[:, 0] */
        r.pooler_output = ag_tanh(g, linear_forward(g, &m->pooler, first));
    }
    return r;
}

void bert_put_attention(Outputs *o, Graph *g, const BertModel *m, const BertOutput *r)
{
    for (int l = 0; l < m->n_layers; l++)
        outputs_put(o, g, r->attention_probs[l], "layers.%d.attention_probs", l);
}

void bert_put_outputs(Outputs *o, Graph *g, const BertModel *m, const BertOutput *r)
{
    outputs_put(o, g, r->last_hidden_state, "last_hidden_state");
    if (r->pooler_output)
        outputs_put(o, g, r->pooler_output, "pooler_output");
    for (int l = 0; l <= m->n_layers; l++)
        outputs_put(o, g, r->hidden_states[l], "hidden_states.%d", l);
    bert_put_attention(o, g, m, r);
}
