/* zoo/models/summarizer.c — BertSumExt with the inter-sentence Transformer (SPEC §6.5).
 * Liu 2019, "Fine-tune BERT for Extractive Summarization"; code layout of
 * nlpyang/BertSum (model_builder.py Summarizer, encoder.py
 * TransformerInterEncoder, neural.py MultiHeadedAttention/PositionwiseFeedForward).
 *
 * A document is one token sequence with a [CLS] in front of every sentence
 * and interval segments (0/1 alternating per sentence). BERT encodes it; the
 * vector at each sentence's [CLS] is that sentence's representation T_i.
 * The paper's summarization layer (§2.2, "Inter-sentence Transformer"):
 *
 *   h^0  = PosEmb(T)                     h~^l = LN(h^(l-1) + MHAtt(h^(l-1)))
 *   h^l  = LN(h~^l + FFN(h~^l))          Y^_i = σ(W_o h^L_i + b_o)
 *
 * and what the code (which the trained checkpoints come from) computes, with
 * the LayerNorms moved in front of each sublayer (OpenNMT's pre-norm):
 *
 *   top_vec   = BertModel_ppb(src, mask, segs)                   (B, S, H)   §6.1.2
 *   sents_vec = top_vec[b, clss[b, n]] · mask_cls[b, n]           (B, N, H)   T
 *   h^0       = sents_vec · mask_cls + pe[n]                      no √H scaling
 *   h~^l      = h^(l-1) + MHAtt(LN(h^(l-1)))                      no LN when l = 1
 *   h^l       = h~^l + FFN(LN(h~^l))
 *   sent_scores = σ(W_o LN(h^L) + b_o) · mask_cls                 (B, N)      Y^
 *   loss      = Σ mask_cls · BCE(sent_scores, labels)             trainer.py: a masked SUM
 *
 * SPEC §6.8 lists these departures from the paper: the first inter-sentence
 * layer has no pre-norm (its layer_norm exists and gets a zero gradient), the
 * positional encoding is added unscaled, padded sentences are masked by
 * REPLACING their attention scores with −1e18, the FFN uses the tanh GELU,
 * and every LayerNorm here has ε = 1e-6 (inter_layer_norm_eps).
 *
 * Three originals are config keys (docs/models/bertsum.md): "inter_norm":
 * "post" computes the paper's equations above (no final LN), "encoder":
 * "classifier" the code's Classifier, Y^_i = σ(W_o T_i + b_o) · mask_cls,
 * "pe_scale": "sqrt_hidden" the seed's PositionalEncoding.forward (T·√H).
 * The forward puts inter_hidden_states.{i} (h^i, (B, N, H)) and every
 * layer's inter.{l}.attention_probs ((B, heads, N, N)). */
#include "zoo/zoo.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

/* ---- config keys: the inter-sentence Transformer's sizes ---------------- */

/* The originals as options (docs/models/bertsum.md, "where the seed, the
 * paper and the original code differ"); the defaults are the code's. */
enum { ENCODER_TRANSFORMER, ENCODER_CLASSIFIER };   /* model_builder.py args.encoder */
enum { INTER_NORM_PRE, INTER_NORM_POST };           /* encoder.py's, or the paper's §2.2 */

static const char *const encoder_choices[] = {"transformer", "classifier", NULL};
static const char *const inter_norm_choices[] = {"pre", "post", NULL};
/* h^0: the encoder adds pe[:, :N] to the sentence vectors as they are; the
 * seed shows PositionalEncoding.forward, which first multiplies them by √H. */
enum { PE_SCALE_NONE, PE_SCALE_SQRT_HIDDEN };
static const char *const pe_scale_choices[] = {"none", "sqrt_hidden", NULL};

typedef struct SumKeys {
    int ff_size;                   /* d_ff of its feed-forward */
    int heads;                     /* its attention heads */
    int inter_layers;              /* its layers (0: BERT alone, then the classifier) */
    int pe_max_len;                /* rows of the positional encoding: most sentences */
    float inter_layer_norm_eps;    /* every LayerNorm above BERT */
    int encoder;                   /* ENCODER_*: the summarization layer */
    int inter_norm;                /* INTER_NORM_*: where each LayerNorm sits */
    int pe_scale;                  /* PE_SCALE_*: h^0 = T·mask (·√H) + pe */
} SumKeys;

static const ConfigKey sum_keys_table[] = {
    {.key = "ff_size", .offset = offsetof(SumKeys, ff_size), .kind = CONFIG_INT,
     .required = true, .range = RANGE_POSITIVE, .doc = "feed-forward size of the "
     "inter-sentence Transformer"},
    {.key = "heads", .offset = offsetof(SumKeys, heads), .kind = CONFIG_INT, .required = true,
     .range = RANGE_POSITIVE, .doc = "attention heads of the inter-sentence Transformer"},
    {.key = "inter_layers", .offset = offsetof(SumKeys, inter_layers), .kind = CONFIG_INT,
     .required = true, .range = RANGE_LAYERS_OR_0, .doc = "inter-sentence Transformer layers"},
    {.key = "inter_layer_norm_eps", .offset = offsetof(SumKeys, inter_layer_norm_eps),
     .kind = CONFIG_FLOAT, .range = RANGE_NONNEG, .default_value = 1e-6,
     .doc = "epsilon of every LayerNorm above BERT"},
    {.key = "pe_max_len", .offset = offsetof(SumKeys, pe_max_len), .kind = CONFIG_INT,
     .range = RANGE_POSITIVE, .default_value = 5000, .doc = "most sentences a document may have"},
    {.key = "encoder", .offset = offsetof(SumKeys, encoder), .kind = CONFIG_CHOICE,
     .default_value = ENCODER_TRANSFORMER, .choices = encoder_choices,
     .doc = "transformer (the inter-sentence Transformer) or classifier (the original's "
     "Classifier: sigmoid(linear1 T_i), no positional encoding, no LayerNorm)"},
    {.key = "inter_norm", .offset = offsetof(SumKeys, inter_norm), .kind = CONFIG_CHOICE,
     .default_value = INTER_NORM_PRE, .choices = inter_norm_choices,
     .doc = "pre (the code: LN before each sublayer, a final LN) or post (the paper's "
     "equations: LN(x + sublayer(x)), no final LN)"},
    {.key = "pe_scale", .offset = offsetof(SumKeys, pe_scale), .kind = CONFIG_CHOICE,
     .default_value = PE_SCALE_NONE, .choices = pe_scale_choices,
     .doc = "none (the code: h0 = T + pe) or sqrt_hidden (the seed's "
     "PositionalEncoding.forward: h0 = T·sqrt(H) + pe)"},
};

static SumKeys sum_keys(const BertConfig *cfg)
{
    SumKeys k;
    bertc_model_keys(cfg, &k, sizeof k);
    return k;
}

/* heads divides hidden_size: each head gets hidden_size / heads dims. */
static int check_sum_keys(const BertConfig *cfg, BertcError *err)
{
    SumKeys k = sum_keys(cfg);
    if (cfg->hidden_size % k.heads != 0)
        return bertc_errorf(err, "config: hidden_size %d is not a multiple of heads %d",
                            cfg->hidden_size, k.heads);
    return 0;
}

/* ---- the model: parameters under the names of the original state_dict --- */

typedef struct FeedForward {       /* neural.py PositionwiseFeedForward */
    Linear w_1;                    /* (ff, H) */
    Linear w_2;                    /* (H, ff) */
    LayerNorm layer_norm;
    Dropout dropout_1, dropout_2;
} FeedForward;

typedef struct InterLayer {        /* encoder.py TransformerEncoderLayer */
    OnmtAttention self_attn;
    FeedForward feed_forward;
    LayerNorm layer_norm;          /* the pre-norm of layers l >= 1 */
    Dropout dropout;
} InterLayer;

typedef struct Summarizer {
    BertModel bert;                /* bert.model. */
    int encoder;                   /* ENCODER_*; the rest is the transformer's */
    int inter_norm;                /* INTER_NORM_* */
    int pe_scale;                  /* PE_SCALE_* */
    Var *pe;                       /* encoder.pos_emb.pe (1, pe_max_len, H), a buffer */
    int n_inter;
    InterLayer *inter;             /* encoder.transformer_inter.{l} */
    LayerNorm layer_norm;          /* encoder.layer_norm */
    Linear wo;                     /* encoder.wo (1, H) */
    Linear linear1;                /* encoder.linear1 (1, H): the Classifier's */
} Summarizer;

/* The sinusoids of "Attention Is All You Need" §3.5, computed in float32 as
 * PositionalEncoding.__init__ does:
 *   pe[0, p, 2k] = sin(p · exp(2k · −ln(10000)/H)),  pe[0, p, 2k+1] = cos(same).
 * A weights file that carries the buffer overwrites these values: SPEC §6.5
 * asks to load it, since exp/sin/cos implementations differ in the last bits. */
static void positional_encoding_fill(Var *pe)
{
    int64_t P = pe->value.shape[1], H = pe->value.shape[2];
    float rate = (float)(-log(10000.0) / (double)H);
    for (int64_t p = 0; p < P; p++)
        for (int64_t j = 0; j < H; j++) {
            float angle = (float)p * expf((float)(j - j % 2) * rate);
            pe->value.data[p * H + j] = j % 2 ? cosf(angle) : sinf(angle);
        }
}

static void feed_forward_init(FeedForward *f, Registry *r, const BertConfig *cfg, float p)
{
    int64_t H = cfg->hidden_size;
    bertc_nn_push(r, "feed_forward", "PositionwiseFeedForward", false);
    bertc_linear_init(&f->w_1, r, "w_1", H, sum_keys(cfg).ff_size, true);
    bertc_linear_init(&f->w_2, r, "w_2", sum_keys(cfg).ff_size, H, true);
    bertc_layernorm_init(&f->layer_norm, r, "layer_norm", H, sum_keys(cfg).inter_layer_norm_eps);
    bertc_dropout_init(&f->dropout_1, r, "dropout_1", p);
    bertc_dropout_init(&f->dropout_2, r, "dropout_2", p);
    bertc_nn_pop(r);
}

static void inter_layer_init(InterLayer *l, Registry *r, const BertConfig *cfg, int index,
                             float p)
{
    bertc_nn_push(r, bertc_nn_format(r, "%d", index), "TransformerEncoderLayer", false);
    bertc_onmt_attention_init(&l->self_attn, r, "self_attn", cfg->hidden_size, sum_keys(cfg).heads, p);
    feed_forward_init(&l->feed_forward, r, cfg, p);
    bertc_layernorm_init(&l->layer_norm, r, "layer_norm", cfg->hidden_size, sum_keys(cfg).inter_layer_norm_eps);
    bertc_dropout_init(&l->dropout, r, "dropout", p);
    bertc_nn_pop(r);
}

/* encoder.*: the TransformerInterEncoder. Its dropout is BertSum's
 * args.dropout; the config has no key for it, so hidden_dropout_prob (0.1 in
 * both) stands in. It only matters in training. */
static void inter_encoder_init(Summarizer *m, Registry *r, const BertConfig *cfg)
{
    int64_t H = cfg->hidden_size, pe_shape[3] = {1, sum_keys(cfg).pe_max_len, H};
    float p = cfg->hidden_dropout_prob;
    const char *dropout_repr = bertc_nn_format(r, "Dropout(p=%g, inplace=False)", (double)p);
    bertc_nn_push(r, "encoder", "TransformerInterEncoder", false);
    bertc_nn_push(r, "pos_emb", "PositionalEncoding", false);
    m->pe = bertc_nn_buffer(r, "pe", 3, pe_shape);
    if (!r->dry_run)   /* a dry run (bertc_model_size) only counts it */
        positional_encoding_fill(m->pe);
    bertc_nn_leaf(r, "dropout", dropout_repr);   /* the encoder adds pe itself, undropped */
    bertc_nn_pop(r);
    bertc_nn_push(r, "transformer_inter", "ModuleList", false);
    m->n_inter = sum_keys(cfg).inter_layers;
    m->inter = bertc_arena_calloc(r->arena, (size_t)(m->n_inter ? m->n_inter : 1), sizeof(InterLayer));
    for (int l = 0; l < m->n_inter; l++)
        inter_layer_init(&m->inter[l], r, cfg, l, p);
    bertc_nn_pop(r);
    bertc_nn_leaf(r, "dropout", dropout_repr);   /* unused by TransformerInterEncoder.forward */
    bertc_layernorm_init(&m->layer_norm, r, "layer_norm", H, sum_keys(cfg).inter_layer_norm_eps);
    bertc_linear_init(&m->wo, r, "wo", H, 1, true);
    bertc_nn_leaf(r, "sigmoid", "Sigmoid()");
    bertc_nn_pop(r);
}

/* encoder.*: the original's Classifier (encoder.py), the paper's "simple
 * classifier" Y^_i = σ(W_o T_i + b_o). */
static void classifier_init(Summarizer *m, Registry *r, const BertConfig *cfg)
{
    bertc_nn_push(r, "encoder", "Classifier", false);
    bertc_linear_init(&m->linear1, r, "linear1", cfg->hidden_size, 1, true);
    bertc_nn_leaf(r, "sigmoid", "Sigmoid()");
    bertc_nn_pop(r);
}

static void *summarizer_build(Registry *r, const BertConfig *cfg, BertcError *err)
{
    (void)err;   /* nn/config.c has checked heads | hidden_size and the sizes */
    Summarizer *m = bertc_arena_calloc(r->arena, 1, sizeof *m);
    m->encoder = sum_keys(cfg).encoder;
    m->inter_norm = sum_keys(cfg).inter_norm;
    m->pe_scale = sum_keys(cfg).pe_scale;
    bertc_nn_push(r, "bert", "Bert", false);
    bertc_nn_push(r, "model", "BertModel", false);
    bertc_bert_model_init(&m->bert, r, cfg, BERT_PPB, true);   /* the pooler is never used */
    bertc_nn_pop(r);
    bertc_nn_pop(r);
    if (m->encoder == ENCODER_CLASSIFIER)
        classifier_init(m, r, cfg);
    else
        inter_encoder_init(m, r, cfg);
    return m;
}

/* ---- inputs ------------------------------------------------------------ */

/* The sentence-level inputs, checked against the token-level ones. */
typedef struct SentenceInputs {
    ITensor clss;                  /* (B, N): [CLS] position of sentence n, 0 when padded */
    ITensor mask_cls;              /* (B, N): 1 real sentence, 0 padding */
    ITensor labels;                /* (B, N): 0/1, or numel 0 when absent */
    int64_t N;
} SentenceInputs;

static int require_inputs(const Batch *in, BertcError *err)
{
    static const char *const names[] = {"src", "segs", "clss", "mask", "mask_cls"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!bertc_batch_find(in, names[i]))
            return bertc_errorf(err, "%s: missing input tensor '%s' (Summarizer needs src, "
                                "segs, clss, mask, mask_cls and, for a loss, labels)",
                                in->source, names[i]);
    return 0;
}


static int read_sentences(const BertConfig *cfg, const Batch *in, const BertInputs *x,
                          SentenceInputs *s, BertcError *err)
{
    int64_t b_any[2] = {x->B, -1};
    if (bertc_batch_ids(in, "clss", 2, b_any, &s->clss, err) != 0)
        return -1;
    s->N = s->clss.shape[1];
    if (s->N < 1)
        return bertc_errorf(err, "%s: 'clss' has no sentences (N = 0); a document needs at "
                            "least one", in->source);
    if (s->N > sum_keys(cfg).pe_max_len)
        return bertc_errorf(err, "%s: 'clss' has N = %lld sentences, more than pe_max_len %d "
                            "(the rows of encoder.pos_emb.pe)", in->source, (long long)s->N,
                            sum_keys(cfg).pe_max_len);
    if (bertc_batch_check_range(in, "clss", &s->clss, 0, x->S, "the sequence length S", err) != 0)
        return -1;
    int64_t bn[2] = {x->B, s->N};
    if (bertc_batch_ids(in, "mask_cls", 2, bn, &s->mask_cls, err) != 0 ||
        bertc_batch_check_binary(in, "mask_cls", &s->mask_cls, err) != 0)
        return -1;
    s->labels.numel = 0;
    if (!bertc_batch_find(in, "labels"))
        return 0;
    if (bertc_batch_ids(in, "labels", 2, bn, &s->labels, err) != 0 ||
        bertc_batch_check_binary(in, "labels", &s->labels, err) != 0)
        return -1;
    return 0;
}

/* ---- forward ----------------------------------------------------------- */

/* sents_vec[b, n] = top_vec[b, clss[b, n]]: rows b·S + clss[b, n] of top_vec
 * seen as (B·S, H). (B, S, H) -> (B, N, H) */
static Var *gather_sentences(Graph *g, Var *top_vec, const ITensor *clss)
{
    int64_t B = top_vec->value.shape[0], S = top_vec->value.shape[1];
    int64_t H = top_vec->value.shape[2], N = clss->shape[1], BN = B * N;
    ITensor rows = bertc_itensor_new(g->step, 1, &BN);
    for (int64_t i = 0; i < BN; i++)
        rows.data[i] = (int32_t)((i / N) * S + clss->data[i]);
    int64_t flat[2] = {B * S, H}, bnh[3] = {B, N, H};
    Var *picked = bertc_ag_index_select(g, bertc_ag_reshape(g, top_vec, 2, flat), 0, &rows);
    return bertc_ag_reshape(g, picked, 3, bnh);
}

/* mask_cls as floats (B, N, 1), to broadcast over H. */
static Var *mask_cls_var(Graph *g, const ITensor *mask_cls)
{
    int64_t shape[3] = {mask_cls->shape[0], mask_cls->shape[1], 1};
    Var *m = bertc_ag_tensor(g, 3, shape, false);
    for (int64_t i = 0; i < mask_cls->numel; i++)
        m->value.data[i] = (float)mask_cls->data[i];
    return m;
}

/* (B, 1, 1, N): 1 where sentence j is padding, the keys no query may see. */
static ITensor key_padding(Graph *g, const ITensor *mask_cls)
{
    int64_t shape[4] = {mask_cls->shape[0], 1, 1, mask_cls->shape[1]};
    ITensor pad = bertc_itensor_new(g->step, 4, shape);
    for (int64_t i = 0; i < mask_cls->numel; i++)
        pad.data[i] = mask_cls->data[i] == 0;
    return pad;
}

/* The FFN's sublayer W_2 gelu_tanh(W_1 x), dropouts included. (B, N, H) */
static Var *ffn(Graph *g, const FeedForward *f, Var *x)
{
    Var *inter = bertc_ag_gelu_tanh(g, bertc_linear_forward(g, &f->w_1, x));                 /* (B, N, ff) */
    Var *out = bertc_linear_forward(g, &f->w_2, bertc_dropout_forward(g, &f->dropout_1, inter));
    return bertc_dropout_forward(g, &f->dropout_2, out);
}

/* FFN with its residual. pre (the code): x + FFN(LN(x)); post (the paper):
 * LN(x + FFN(x)), with the same feed_forward.layer_norm. (B, N, H) */
static Var *feed_forward(Graph *g, const FeedForward *f, int norm, Var *x)
{
    if (norm == INTER_NORM_POST)
        return bertc_layernorm_forward(g, &f->layer_norm, bertc_ag_add(g, ffn(g, f, x), x));
    return bertc_ag_add(g, ffn(g, f, bertc_layernorm_forward(g, &f->layer_norm, x)), x);
}

/* One inter-sentence layer (h^(l-1) -> h^l); *probs receives its attention
 * (B, heads, N, N). pre: layer 0 attends over x itself (BertSum skips the
 * pre-norm there, `if (iter != 0)`), layer l > 0 over LN(x); post: every
 * layer over x, then h~^l = LN(x + MHAtt(x)) with the layer's layer_norm. */
static Var *inter_layer_forward(Graph *g, const InterLayer *l, int norm, int index, Var *x,
                                const ITensor *key_pad, Var **probs)
{
    bool pre_norm = norm == INTER_NORM_PRE && index != 0;
    Var *x_norm = pre_norm ? bertc_layernorm_forward(g, &l->layer_norm, x) : x;
    Var *context = bertc_onmt_attention_forward(g, &l->self_attn, x_norm, x_norm, x_norm, key_pad,
                                                probs);
    Var *out = bertc_ag_add(g, bertc_dropout_forward(g, &l->dropout, context), x);            /* h~^l */
    if (norm == INTER_NORM_POST)
        out = bertc_layernorm_forward(g, &l->layer_norm, out);
    return feed_forward(g, &l->feed_forward, norm, out);
}

/* TransformerInterEncoder.forward: sents_vec (B, N, H) -> sent_scores (B, N).
 * Puts inter_hidden_states.0 = h^0 and .{l+1} = h^(l+1) (B, N, H), and each
 * layer's attention inter.{l}.attention_probs (B, heads, N, N). */
static Var *inter_encoder_forward(Graph *g, const Summarizer *m, Var *sents_vec, Var *mask,
                                  const ITensor *key_pad, Outputs *out)
{
    int64_t B = sents_vec->value.shape[0], N = sents_vec->value.shape[1];
    Var *pos_emb = bertc_ag_slice(g, m->pe, 1, 0, N);                         /* (1, N, H) */
    Var *x = bertc_ag_mul(g, sents_vec, mask);
    if (m->pe_scale == PE_SCALE_SQRT_HIDDEN)   /* emb * math.sqrt(self.dim) */
        x = bertc_ag_scale(g, x, sqrtf((float)sents_vec->value.shape[2]));
    x = bertc_ag_add(g, x, pos_emb);                                          /* h^0 */
    bertc_outputs_put(out, g, x, "inter_hidden_states.0");
    for (int l = 0; l < m->n_inter; l++) {
        Var *probs;
        x = inter_layer_forward(g, &m->inter[l], m->inter_norm, l, x, key_pad, &probs);
        bertc_outputs_put(out, g, probs, "inter.%d.attention_probs", l);
        bertc_outputs_put(out, g, x, "inter_hidden_states.%d", l + 1);
    }
    if (m->inter_norm == INTER_NORM_PRE)   /* post: h^L is normed already (the paper) */
        x = bertc_layernorm_forward(g, &m->layer_norm, x);
    Var *logit = bertc_linear_forward(g, &m->wo, x);                          /* (B, N, 1) */
    int64_t bn[2] = {B, N};
    return bertc_ag_reshape(g, bertc_ag_mul(g, bertc_ag_sigmoid(g, logit), mask), 2, bn);  /* Y^ */
}

/* Classifier.forward: σ(linear1(sents_vec)) · mask_cls. (B, N) */
static Var *classifier_forward(Graph *g, const Summarizer *m, Var *sents_vec, Var *mask)
{
    int64_t bn[2] = {sents_vec->value.shape[0], sents_vec->value.shape[1]};
    Var *logit = bertc_linear_forward(g, &m->linear1, sents_vec);            /* (B, N, 1) */
    return bertc_ag_reshape(g, bertc_ag_mul(g, bertc_ag_sigmoid(g, logit), mask), 2, bn);
}

/* loss = Σ_{b,n} mask_cls · BCE(sent_scores, labels), BCE's logs clamped at
 * −100 (torch.nn.BCELoss). A padded sentence has sent_scores exactly 0, so
 * its term mask_cls·BCE(0, y) = 0 equals BCE(0, 0) = 0, also in the gradient
 * ((0 − 0)/max(0, 1e-12) = 0): the mask is applied to the labels and the
 * sum taken by bertc_ag_bce. */
static Var *summarizer_loss(Graph *g, Var *sent_scores, const SentenceInputs *s)
{
    Tensor y = bertc_tensor_empty(g->step, 2, s->labels.shape);
    for (int64_t i = 0; i < y.numel; i++)
        y.data[i] = (float)(s->labels.data[i] * s->mask_cls.data[i]);
    return bertc_ag_bce(g, sent_scores, &y, true);
}

static int summarizer_run(void *impl, const BertConfig *cfg, Graph *g, const Batch *in,
                          Outputs *out, BertcError *err)
{
    Summarizer *m = impl;
    BertInputs x;
    SentenceInputs s;
    if (require_inputs(in, err) != 0 ||
        bertc_bert_read_inputs(cfg, g, in, "src", "mask", "segs", &x, err) != 0 ||
        read_sentences(cfg, in, &x, &s, err) != 0)
        return -1;
    BertOutput r = bertc_bert_model_forward(g, &m->bert, &x);
    Var *top_vec = r.last_hidden_state;                                 /* (B, S, H) */
    Var *mask = mask_cls_var(g, &s.mask_cls);                           /* (B, N, 1) */
    ITensor key_pad = key_padding(g, &s.mask_cls);
    Var *sents_vec = bertc_ag_mul(g, gather_sentences(g, top_vec, &s.clss), mask);   /* (B, N, H) */
    Var *sent_scores = m->encoder == ENCODER_CLASSIFIER
                           ? classifier_forward(g, m, sents_vec, mask)
                           : inter_encoder_forward(g, m, sents_vec, mask, &key_pad, out); /* (B, N) */
    bertc_outputs_put(out, g, top_vec, "top_vec");
    bertc_outputs_put(out, g, sents_vec, "sents_vec");
    bertc_outputs_put(out, g, sent_scores, "sent_scores");
    bertc_bert_put_attention(out, g, &m->bert, &r);
    if (s.labels.numel)
        bertc_outputs_put(out, g, summarizer_loss(g, sent_scores, &s), "loss");
    return 0;
}

/* ---- a random document --------------------------------------------------- */

/* Random documents have a sentence every RANDOM_SENTENCE_TOKENS tokens (the
 * CNN/DailyMail articles BertSum reads average ~25 WordPieces a sentence;
 * shorter ones give a small S several sentences). */
#define RANDOM_SENTENCE_TOKENS 8

/* N = ceil(S / 8) sentences (at most pe_max_len, the last one then runs to
 * the end), clss at their first tokens, interval segments 0/1 alternating
 * per sentence, every sentence real (mask_cls 1), labels 0/1 at random. */
static int summarizer_random_batch(const BertConfig *cfg, Graph *g, int64_t B, int64_t S,
                                   bool labels, Rng *rng, Batch *out, BertcError *err)
{
    (void)err;
    int64_t N = (S + RANDOM_SENTENCE_TOKENS - 1) / RANDOM_SENTENCE_TOKENS;
    N = N < sum_keys(cfg).pe_max_len ? N : sum_keys(cfg).pe_max_len;
    int64_t bs[2] = {B, S}, bn[2] = {B, N};
    ITensor unused, segs = bertc_itensor_new(g->step, 2, bs);
    ITensor clss = bertc_itensor_new(g->step, 2, bn), mask_cls = bertc_itensor_new(g->step, 2, bn);
    ITensor y = bertc_itensor_new(g->step, 2, bn);
    bertc_random_bert_inputs(cfg, g, B, S, rng, "src", "mask", "segs", out, &unused);
    for (int64_t i = 0; i < B * S; i++) {
        int64_t sentence = (i % S) / RANDOM_SENTENCE_TOKENS;
        sentence = sentence < N ? sentence : N - 1;
        segs.data[i] = (int32_t)(sentence % cfg->type_vocab_size);
    }
    for (int64_t i = 0; i < B * N; i++) {
        clss.data[i] = (int32_t)((i % N) * RANDOM_SENTENCE_TOKENS);
        mask_cls.data[i] = 1;
        y.data[i] = bertc_rng_uniform(rng) < 0.5;
    }
    bertc_batch_put_ids(out, "segs", segs);
    bertc_batch_put_ids(out, "clss", clss);
    bertc_batch_put_ids(out, "mask_cls", mask_cls);
    if (labels)
        bertc_batch_put_ids(out, "labels", y);
    return 0;
}

/* ---- a document from its sentences ---------------------------------------- */

/* The sentences of one example: its list, or its text as one sentence. */
static int example_sentences(const TextExample *ex, const char *const **sents)
{
    static const char *const empty = "";
    if (ex->sentences && ex->n_sentences > 0) {
        *sents = ex->sentences;
        return ex->n_sentences;
    }
    *sents = ex->text ? &ex->text : &empty;
    return 1;
}

/* BertSum's input: "[CLS] s_0 [SEP] [CLS] s_1 [SEP] ..." with interval
 * segments (sentence n has type n % 2) and clss at each [CLS]; sentences
 * past max_len tokens are left out (the first is truncated to fit). */
typedef struct Document {
    int32_t *ids;                  /* S of them */
    int32_t *segs;
    int32_t *clss;                 /* n_sents of them */
    int32_t S, n_sents;
} Document;

static int encode_document(const BertConfig *cfg, const Tokenizer *tok, const TextExample *ex,
                           int32_t limit, Graph *g, Document *d, BertcError *err)
{
    const char *const *sents;
    int n = example_sentences(ex, &sents), pe_max_len = sum_keys(cfg).pe_max_len;
    d->ids = bertc_arena_alloc(g->step, sizeof(int32_t) * (size_t)limit);
    d->segs = bertc_arena_alloc(g->step, sizeof(int32_t) * (size_t)limit);
    d->clss = bertc_arena_alloc(g->step, sizeof(int32_t) * (size_t)n);
    d->S = d->n_sents = 0;
    for (int k = 0; k < n && d->n_sents < pe_max_len; k++) {
        Encoding e;
        if (bertc_tokenizer_encode(tok, g->step, sents[k], strlen(sents[k]), NULL, 0,
                             k == 0 ? limit : 0, false, &e, err) != 0)
            return -1;
        if (d->S + e.S > limit)
            break;
        d->clss[d->n_sents] = d->S;
        for (int32_t t = 0; t < e.S; t++) {
            d->ids[d->S + t] = e.input_ids[t];
            d->segs[d->S + t] = d->n_sents % 2;
        }
        d->S += e.S;
        d->n_sents++;
    }
    return 0;
}

static int summarizer_batch_from_text(const Model *m, const Tokenizer *tok, const TextExample *ex,
                                      int n, int32_t max_len, Graph *g, Batch *out,
                                      BertcError *err)
{
    int32_t limit = m->cfg.max_position_embeddings;
    limit = max_len > 0 && max_len < limit ? max_len : limit;
    if (n < 1 || limit < 2)
        return bertc_errorf(err, "no document to encode (%d examples, %d tokens each)", n,
                            (int)limit);
    Document *docs = bertc_arena_alloc(g->step, sizeof(Document) * (size_t)n);
    int64_t S = 1, N = 1;
    for (int i = 0; i < n; i++) {
        if (encode_document(&m->cfg, tok, &ex[i], limit, g, &docs[i], err) != 0)
            return -1;
        S = docs[i].S > S ? docs[i].S : S;
        N = docs[i].n_sents > N ? docs[i].n_sents : N;
    }
    int64_t bs[2] = {n, S}, bn[2] = {n, N};
    ITensor src = bertc_itensor_new(g->step, 2, bs), segs = bertc_itensor_new(g->step, 2, bs);
    ITensor mask = bertc_itensor_new(g->step, 2, bs);
    ITensor clss = bertc_itensor_new(g->step, 2, bn), mask_cls = bertc_itensor_new(g->step, 2, bn);
    for (int i = 0; i < n; i++) {
        for (int64_t t = 0; t < S; t++) {
            bool real = t < docs[i].S;
            src.data[i * S + t] = real ? docs[i].ids[t] : tok->pad_id;
            segs.data[i * S + t] = real ? docs[i].segs[t] : 0;
            mask.data[i * S + t] = real;
        }
        for (int64_t k = 0; k < docs[i].n_sents; k++) {
            clss.data[i * N + k] = docs[i].clss[k];
            mask_cls.data[i * N + k] = 1;
        }
    }
    bertc_batch_put_ids(out, "src", src);
    bertc_batch_put_ids(out, "segs", segs);
    bertc_batch_put_ids(out, "mask", mask);
    bertc_batch_put_ids(out, "clss", clss);
    bertc_batch_put_ids(out, "mask_cls", mask_cls);
    return 0;
}

static const InputSpec summarizer_inputs[] = {
    {.name = "src", .type = INPUT_IDS, .shape = "(B, S)", .values = "[0, vocab_size)",
     .required = true},
    {.name = "mask", .type = INPUT_IDS, .shape = "(B, S)", .values = "0 or 1", .required = true},
    {.name = "segs", .type = INPUT_IDS, .shape = "(B, S)", .values = "[0, type_vocab_size)",
     .required = true},
    {.name = "clss", .type = INPUT_IDS, .shape = "(B, N)", .values = "[0, S)", .required = true},
    {.name = "mask_cls", .type = INPUT_IDS, .shape = "(B, N)", .values = "0 or 1",
     .required = true},
    {.name = "labels", .type = INPUT_IDS, .shape = "(B, N)", .values = "0 or 1", .label = true},
};

static const OutputSpec summarizer_outputs[] = {
    {"sent_scores", "(B, N)"},
    {"top_vec", "(B, S, H)"},
    {"sents_vec", "(B, N, H)"},
    {"inter_hidden_states.{i}", "(B, N, H)"},
    {"inter.{l}.attention_probs", "(B, heads, N, N)"},
    {"layers.{l}.attention_probs", "(B, nh, S, S)"},
    {"loss", "()"},
};

static const ExplainStep summarizer_steps[] = {
    {.title = "Sentence vectors at each [CLS]",
     .equation = "T<sub>n</sub> = top_vec[clss<sub>n</sub>] &middot; mask_cls<sub>n</sub>  "
                 "&nbsp; (B, N, H)",
     .where = "zoo/models/summarizer.c:gather_sentences", .output = "sents_vec"},
    {.title = "Inter-sentence input h<sup>0</sup>",
     .equation = "h<sup>0</sup> = T + PE[n]  &nbsp; (B, N, H)",
     .where = "zoo/models/summarizer.c:inter_encoder_forward", .output = "inter_hidden_states.0"},
    {.title = "Inter-sentence attention",
     .equation = "A = softmax(Q K<sup>T</sup> / &radic;d<sub>k</sub>), sentences attend to "
                 "sentences  &nbsp; (B, heads, N, N)",
     .where = "zoo/models/summarizer.c:inter_layer_forward", .output = "inter.{k}.attention_probs"},
    {.title = "Inter-sentence layer output",
     .equation = "h&#771;<sup>l</sup> = h<sup>l&minus;1</sup> + MHAtt(LN(h<sup>l&minus;1</sup>)); "
                 "&nbsp; h<sup>l</sup> = h&#771;<sup>l</sup> + FFN(LN(h&#771;<sup>l</sup>))",
     .where = "zoo/models/summarizer.c:inter_layer_forward", .output = "inter_hidden_states.{k+1}"},
    {.title = "Sentence scores",
     .equation = "&Ycirc;<sub>n</sub> = &sigma;(LN(h<sup>L</sup><sub>n</sub>) W<sub>o</sub> + "
                 "b<sub>o</sub>) &middot; mask_cls<sub>n</sub>  &nbsp; (B, N)",
     .where = "zoo/models/summarizer.c:inter_encoder_forward", .output = "sent_scores"},
};

static const ModelExplain summarizer_explain = {
    .mechanism = "Extractive summarization (Liu 2019): each sentence's [CLS] vector goes "
                 "through an inter-sentence Transformer where sentences attend to sentences, "
                 "then gets a score; the top sentences are the summary. Separate sentences "
                 "with a period.",
    EXPLAIN_ENCODER(bertc_bert_encoder_steps), EXPLAIN_STEPS(summarizer_steps),
    .predict = {{.kind = PREDICT_SENTENCES, .output = "sent_scores"}},
};

const ModelArch bertc_arch_summarizer = {
    .name = "Summarizer",
    .summary = "BertSumExt: extractive summarization with an inter-sentence Transformer "
               "(Liu 2019)",
    .keys = sum_keys_table,
    .n_keys = sizeof sum_keys_table / sizeof sum_keys_table[0],
    .check_config = check_sum_keys,
    .inputs = summarizer_inputs,
    .n_inputs = sizeof summarizer_inputs / sizeof summarizer_inputs[0],
    .outputs = summarizer_outputs,
    .n_outputs = sizeof summarizer_outputs / sizeof summarizer_outputs[0],
    .loss = "sum over real sentences of BCE(sent_scores, labels)",
    .build = summarizer_build,
    .forward = summarizer_run,
    .random_batch = summarizer_random_batch,
    .batch_from_text = summarizer_batch_from_text,
    .task = MODEL_TASK_SUMMARIZATION,
    .explain = &summarizer_explain,
};
