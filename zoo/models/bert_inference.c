/* zoo/models/bert_inference.c — the BERT encoder when no gradient is wanted
 * (no_grad): the numbers of zoo/models/bert.c's readable forward, equations
 * (1) and (3)-(7), in less memory. bertc_bert_model_forward switches here
 * (bertc_bert_inference); nothing else in the encoder knows about memory.
 *
 * Two levels:
 *  - no_grad: each layer is bert.c's bertc_bert_layer_forward run above an
 *    arena mark; its output and maps are copied down and its temporaries
 *    released, so the step arena holds one layer's temporaries at a time.
 *  - lean (bertc_ag_set_lean, for a target whose RAM is the limit): the
 *    embeddings and the layers are computed in place in one hidden-state
 *    buffer, a few rows at a time, calling the Linears and the tensor kernels
 *    directly; no hidden_states.{i} and no maps are kept.
 * The plain forward with a tape never comes here. */
#include "zoo/models/bert_internal.h"

#include <math.h>
#include <string.h>

/* ---- no_grad: one layer's temporaries at a time ------------------------- */

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
 * output and its maps (none when the caller reads only the final outputs,
 * Outputs.final_only) are allocated first, the layer runs above an arena
 * mark, they are copied down and the layer's temporaries (Q, K, V, scores,
 * the (B, S, I) intermediate, CGBERT's D, ...) are released. The step arena
 * then holds one layer's temporaries at a time instead of L layers'. */
static Var *layer_forward_no_grad(Graph *g, const BertModel *m, int l, Var *x, Var *mask,
                                  const BertInputs *in, Var **maps)
{
    int n_maps;
    const BertMap *info = bertc_bert_layer_maps(m, &n_maps);
    int n_kept = g->final_only ? 0 : n_maps;   /* Outputs.final_only: the caller reads none */
    Var *out = bertc_ag_constant(g, bertc_tensor_empty(g->step, 3, x->value.shape));
    Var **kept = bertc_arena_alloc(g->step, sizeof(Var *) * (size_t)n_maps);
    for (int i = 0; i < n_kept; i++)
        kept[i] = empty_map(g, m, &info[i], x);
    ArenaMark mark = bertc_arena_mark(g->step);
    Var *y = bertc_bert_layer_forward(g, m, l, x, mask, in, maps);      /* X_l+1, bert.c */
    copy_down(out, y, "output");
    for (int i = 0; i < n_maps; i++) {
        if (i < n_kept)
            copy_down(kept[i], maps[i], info[i].name);
        maps[i] = i < n_kept ? kept[i] : NULL;   /* NULL: released with the temporaries */
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
 * hidden_states and maps are left NULL and bert.c's put functions skip them. */

/* Rows per step: fewer rows need less RAM (2 R H floats in attention,
 * R (I + H) in the FFN) but give the GEMMs thinner blocks. */
#define LEAN_ROWS 8

static bool lean_applies(const Graph *g, const BertModel *m)
{
    return g->lean && !m->attention && !m->hooks;
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

/* (1) E = LN_e(word + type + position), summed into the word lookup's buffer X. */
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

/* (3)-(5) Y = LN_a(Dense_o(C) + X), C = SelfAttention(X, M); Y left in X, R query rows
 * at a time. */
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

/* (6) (7) X_l+1 = LN_f(Dense_f(act(Dense_i(Y))) + Y), Y in X and X_l+1 left there, R rows
 * at a time. */
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

/* E = X_0, then every layer lean; X_L is left in E's buffer. Nothing else
 * is kept: r's hidden_states and maps are NULL. */
static Var *encoder_lean(Graph *g, const BertModel *m, const BertInputs *in, Var *mask,
                         BertOutput *r)
{
    int n_maps;
    bertc_bert_layer_maps(m, &n_maps);
    Var *x = embeddings_forward_lean(g, m, in);                         /* (1) X_0 = E */
    r->hidden_states[0] = NULL;                 /* not kept: X is overwritten by each layer */
    for (int l = 0; l < m->n_layers; l++) {
        attention_block_lean(g, &m->layers[l], x, mask);                /* (3)-(5) Y in X */
        ffn_block_lean(g, m, &m->layers[l], x);                         /* (6) (7) X_l+1 in X */
        for (int i = 0; i < n_maps; i++)
            r->maps[(size_t)l * (size_t)n_maps + (size_t)i] = NULL;
        r->hidden_states[l + 1] = NULL;
    }
    return x;
}

/* ---- the switch ----------------------------------------------------------- */

bool bertc_bert_inference(const Graph *g, const BertModel *m)
{
    if (lean_applies(g, m) && !g->no_grad)
        bertc_fatal("bert: lean inference keeps no tape; set no_grad "
                    "(bertc_ag_set_no_grad) or turn lean off (bertc_ag_set_lean) for gradients");
    if (lean_applies(g, m) && g->training)
        bertc_fatal("bert: lean inference runs the eval forward; call bertc_ag_set_training(g, "
                    "false) or turn lean off (bertc_ag_set_lean) for dropout");
    return g->no_grad;
}

Var *bertc_bert_encoder_inference(Graph *g, const BertModel *m, const BertInputs *in, Var *mask,
                                  BertOutput *r)
{
    if (lean_applies(g, m))
        return encoder_lean(g, m, in, mask, r);
    int n_maps;
    bertc_bert_layer_maps(m, &n_maps);
    Var *x = bertc_bert_embeddings_forward(g, m, in);                   /* (1) X_0 = E */
    r->hidden_states[0] = x;
    for (int l = 0; l < m->n_layers; l++) {
        Var **maps = r->maps + (size_t)l * (size_t)n_maps;
        x = layer_forward_no_grad(g, m, l, x, mask, in, maps);          /* X_l+1 */
        r->hidden_states[l + 1] = x;
    }
    return x;
}
