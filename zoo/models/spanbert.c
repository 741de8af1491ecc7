/* zoo/models/spanbert.c — SpanBertForPreTraining (SPEC §6.7): HF BertModel without
 * the pooler, the HF masked-LM head, and a Span Boundary Objective head.
 * Joshi et al. 2020, "SpanBERT: Improving Pre-training by Representing and
 * Predicting Spans", §3.2, for every token x_i of a masked span [s, e]:
 *
 *   h_0 = [x_{s-1}; x_{e+1}; p_{i-s+1}]             sbo.x_left, sbo.x_right, sbo.p -> sbo.h0
 *   h_1 = LayerNorm(GeLU(W_1 h_0))                  sbo.h1
 *   y_i = LayerNorm(GeLU(W_2 h_1))                  sbo.y
 *   L   = L_MLM + L_SBO                             both CE over the masked positions
 *
 * Two heads compute it (config.json "sbo_head"):
 *
 * "seed" (the default), the seed's SBOHead: h_0 in the order [x_{s-1};
 * p_{i-s+1}; x_{e+1}] with p from span_pos_emb (3 · sbo_max_span_length, H);
 * W_1 = sbo_head.head.0 (I, 3H) + bias, LN head.2, W_2 = head.3 (H, I) no
 * bias, LN head.5, nn.GELU() (erf) whatever hidden_act says, LN ε =
 * sbo_layer_norm_eps (1e-5), and an own classifier (V, H) + sbo_head.bias.
 * It computes h = projector(X) for every position and overwrites the rows of
 * span positions with h_0; with the collator's labels (-100 outside the
 * spans) the other rows never reach the loss, so sbo_head.projector.weight
 * has a zero gradient. sbo_logits is (B, S, V), every position.
 *
 * "original", facebookresearch/SpanBERT's BertPairTargetPredictionHead
 * (pretraining/fairseq/models/pair_bert.py): h_0 = [x_{s-1}; x_{e+1}; p] in
 * the paper's order, p from position_embeddings (sbo_max_targets, P = 200);
 * MLPWithLayerNorm: W_1 = linear1 (H, 2H + P) + bias, LN layer_norm1,
 * W_2 = linear2 (H, H) + bias, LN layer_norm2, the activation hidden_act,
 * LN ε layer_norm_eps (the original's BertLayerNorm, 1e-12, gamma/beta);
 * the decoder tied to the word embeddings, + sbo_head.bias. Only span
 * positions are computed: sbo.span_logits (n_masked, V), no sbo_logits.
 *
 * Both put the per-token intermediates sbo.* (n_masked rows, in span order),
 * the spans sbo.span_{row,start,end} and sbo.position = i - s + 1 (the
 * paper's subscript; the tables are read at row i - s).
 *
 * Span borders (the seed indexes X[b, s-1] and X[b, e+1]): a span starting
 * at position 0 has no x_{s-1} (Python would silently wrap to X[b, -1], the
 * last position) and a span ending at S-1 has no x_{e+1} (the seed raises
 * IndexError). Both are input errors naming 'mask_labels'. The collator
 * never makes them: [CLS] opens and [SEP] closes every row. */
#include "zoo/zoo.h"
#include "zoo/models/spanbert_internal.h"
#include "tensor/format_internal.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* ---- config keys: the SBO head and the span masking ---------------------- */

#define SB_AT(member) offsetof(SpanBertKeys, member)
#define MASK_AT(member) (offsetof(SpanBertKeys, masking) + offsetof(SpanMaskingConfig, member))

/* masking.style and sbo_head: the seed's (default) or the original code's */
static const char *const styles[] = {"seed", "original", NULL};

static const ConfigKey spanbert_keys_table[] = {
    {.key = "sbo_dim_ffn", .offset = SB_AT(sbo_dim_ffn), .kind = CONFIG_INT,
     .range = RANGE_POSITIVE, .default_from = "intermediate_size",
     .doc = "hidden size of the SBO head's MLP"},
    {.key = "sbo_layer_norm_eps", .offset = SB_AT(sbo_layer_norm_eps), .kind = CONFIG_FLOAT,
     .range = RANGE_NONNEG, .default_value = 1e-5, .doc = "epsilon of the SBO head's LayerNorms"},
    {.key = "sbo_max_span_length", .offset = SB_AT(sbo_max_span_length), .kind = CONFIG_INT,
     .range = RANGE_POSITIVE, .default_value = 10,
     .doc = "span_pos_emb has 3 x this many rows: the longest span"},
    {.key = "masking", .offset = MASK_AT(present), .kind = CONFIG_OBJECT,
     .doc = "span masking of raw token ids (optional)"},
    {.key = "masking.seed", .offset = MASK_AT(seed), .kind = CONFIG_U64, .required = true,
     .range = RANGE_NONNEG, .doc = "the masking's random stream"},
    {.key = "masking.masking_budget", .offset = MASK_AT(masking_budget), .kind = CONFIG_DOUBLE,
     .range = RANGE_PROB, .default_value = 0.15, .doc = "share of a row's tokens to mask"},
    {.key = "masking.span_probability", .offset = MASK_AT(span_probability),
     .kind = CONFIG_DOUBLE, .range = RANGE_PROB_POSITIVE, .default_value = 0.2,
     .doc = "p of the geometric span length"},
    {.key = "masking.max_span_length_cap", .offset = MASK_AT(max_span_length_cap),
     .kind = CONFIG_INT, .range = RANGE_POSITIVE, .default_value = 10,
     .doc = "the longest span drawn"},
    {.key = "masking.special_token_ids", .offset = MASK_AT(special_token_ids),
     .kind = CONFIG_TOKEN_IDS, .doc = "more ids never masked"},
    {.key = "masking.style", .offset = MASK_AT(style), .kind = CONFIG_CHOICE,
     .default_value = SPAN_MASKING_SEED, .choices = styles,
     .doc = "seed (tokens, floor budget, all [MASK]) or original (the paper's: words, "
            "renormalised Geo on [1, cap], ceil budget, 80/10/10 per span)"},
    {.key = "sbo_head", .offset = SB_AT(sbo_head), .kind = CONFIG_CHOICE,
     .default_value = SBO_HEAD_SEED, .choices = styles,
     .doc = "seed (the seed's SBOHead) or original (facebookresearch/SpanBERT's MLP with "
            "LayerNorm and a decoder tied to the word embeddings)"},
    {.key = "sbo_max_targets", .offset = SB_AT(sbo_max_targets), .kind = CONFIG_INT,
     .range = RANGE_NONNEG, .default_value = 15,
     .doc = "original head: rows of position_embeddings, the longest span (--max-pair-targets)"},
    {.key = "sbo_position_embedding_size", .offset = SB_AT(sbo_position_embedding_size),
     .kind = CONFIG_INT, .range = RANGE_NONNEG, .default_value = 200,
     .doc = "original head: width P of position_embeddings"},
};

SpanBertKeys bertc_spanbert_keys(const BertConfig *cfg)
{
    SpanBertKeys k;
    bertc_model_keys(cfg, &k, sizeof k);
    return k;
}

/* The masking needs the [MASK], [CLS], [SEP] and [UNK] ids. The original
 * head's sizes are checked only when it is chosen (0 elsewhere is fine: a
 * config built in code from bertc_bert_config_default leaves them 0). */
static int check_spanbert_keys(const BertConfig *cfg, BertcError *err)
{
    SpanBertKeys k = bertc_spanbert_keys(cfg);
    if (k.sbo_head == SBO_HEAD_ORIGINAL && (k.sbo_max_targets < 1 ||
                                             k.sbo_position_embedding_size < 1))
        return bertc_errorf(err, "config: sbo_head \"original\" needs sbo_max_targets >= 1 and "
                            "sbo_position_embedding_size >= 1, got %d and %d", k.sbo_max_targets,
                            k.sbo_position_embedding_size);
    const struct { int id; const char *key; } need[] = {
        {cfg->mask_token_id, "mask_token_id"}, {cfg->cls_token_id, "cls_token_id"},
        {cfg->sep_token_id, "sep_token_id"}, {cfg->unk_token_id, "unk_token_id"},
    };
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
        if (need[i].id < 0)
            return bertc_errorf(err, "config: SpanBertForPreTraining needs the special token "
                                "ids: missing key \"%s\"", need[i].key);
    return 0;
}

typedef struct SBOHead {
    SboHeadKind kind;
    /* sbo_head "seed" */
    Linear projector;              /* sbo_head.projector: (3H, H), no bias */
    Embedding span_pos_emb;        /* sbo_head.span_pos_emb: (3 · sbo_max_span_length, H) */
    Linear head0;                  /* sbo_head.head.0: W_1 (I, 3H) + bias (I) */
    LayerNorm head2;               /* sbo_head.head.2: (I) */
    Linear head3;                  /* sbo_head.head.3: W_2 (H, I), no bias */
    LayerNorm head5;               /* sbo_head.head.5: (H) */
    Var *classifier;               /* sbo_head.classifier.weight: (V, H) */
    /* sbo_head "original" (BertPairTargetPredictionHead) */
    Embedding position_embeddings; /* (sbo_max_targets, P) */
    Linear linear1;                /* mlp_layer_norm.linear1: W_1 (H, 2H + P) + bias */
    LayerNorm layer_norm1;         /* mlp_layer_norm.layer_norm1: gamma, beta (H) */
    Linear linear2;                /* mlp_layer_norm.linear2: W_2 (H, H) + bias */
    LayerNorm layer_norm2;         /* mlp_layer_norm.layer_norm2 (H) */
    Var *decoder;                  /* sbo_head.decoder.weight = bert.embeddings.word_embeddings.weight */
    BertAct act;                   /* the original's ACT2FN[hidden_act] */
    /* both */
    Var *bias;                     /* sbo_head.bias (V) (seed: = sbo_head.classifier.bias) */
} SBOHead;

typedef struct SpanBert {
    BertModel bert;                /* bert. */
    BertLMHead mlm;                /* cls.predictions. */
    SBOHead sbo;                   /* sbo_head. */
} SpanBert;

/* The seed's SBOHead.__init__, in its order (the own parameter `bias`
 * comes first in the state_dict). The classifier is built without a bias and
 * then given `bias`, so it prints as bias=True. */
static void sbo_head_init_seed(SBOHead *h, Registry *r, const BertConfig *cfg)
{
    SpanBertKeys k = bertc_spanbert_keys(cfg);
    int64_t H = cfg->hidden_size, I = k.sbo_dim_ffn, V = cfg->vocab_size;
    bertc_nn_push(r, "sbo_head", "SBOHead", false);
    h->bias = bertc_nn_param(r, "bias", 1, &V, INIT_ZEROS);
    bertc_linear_init(&h->projector, r, "projector", H, 3 * H, false);
    bertc_embedding_init(&h->span_pos_emb, r, "span_pos_emb", 3 * (int64_t)k.sbo_max_span_length,
                         H, -1);
    bertc_nn_push(r, "head", "Sequential", false);
    bertc_linear_init(&h->head0, r, "0", 3 * H, I, true);
    bertc_nn_leaf(r, "1", "GELU(approximate='none')");
    bertc_layernorm_init(&h->head2, r, "2", I, k.sbo_layer_norm_eps);
    bertc_linear_init(&h->head3, r, "3", I, H, false);
    bertc_nn_leaf(r, "4", "GELU(approximate='none')");
    bertc_layernorm_init(&h->head5, r, "5", H, k.sbo_layer_norm_eps);
    bertc_nn_pop(r);
    bertc_nn_push(r, "classifier", bertc_nn_format(r, "Linear(in_features=%lld, out_features=%lld, "
                                       "bias=True)", (long long)H, (long long)V), true);
    int64_t vh[2] = {V, H};
    h->classifier = bertc_nn_param(r, "weight", 2, vh, INIT_NORMAL);
    bertc_nn_tie(r, "sbo_head.classifier.bias", h->bias);
    bertc_nn_pop(r);
    bertc_nn_pop(r);
}

/* The original's BertPairTargetPredictionHead.__init__ under sbo_head.
 * (its cls.pair_target_predictions.): the own `bias` first, as the
 * state_dict lists it; the decoder is the word embedding matrix. */
static void sbo_head_init_original(SBOHead *h, Registry *r, const BertConfig *cfg, Var *word)
{
    SpanBertKeys k = bertc_spanbert_keys(cfg);
    int64_t H = cfg->hidden_size, P = k.sbo_position_embedding_size, V = cfg->vocab_size;
    h->act = cfg->hidden_act;
    bertc_nn_push(r, "sbo_head", "BertPairTargetPredictionHead", false);
    h->bias = bertc_nn_param(r, "bias", 1, &V, INIT_ZEROS);
    bertc_embedding_init(&h->position_embeddings, r, "position_embeddings", k.sbo_max_targets, P,
                         -1);
    bertc_nn_push(r, "mlp_layer_norm", "MLPWithLayerNorm", false);
    bertc_linear_init(&h->linear1, r, "linear1", 2 * H + P, H, true);
    bertc_layernorm_init_named(&h->layer_norm1, r, "layer_norm1", H, cfg->layer_norm_eps, "gamma",
                               "beta");
    bertc_linear_init(&h->linear2, r, "linear2", H, H, true);
    bertc_layernorm_init_named(&h->layer_norm2, r, "layer_norm2", H, cfg->layer_norm_eps, "gamma",
                               "beta");
    bertc_nn_pop(r);
    bertc_nn_push(r, "decoder", bertc_nn_format(r, "Linear(in_features=%lld, out_features=%lld, "
                                    "bias=False)", (long long)H, (long long)V), true);
    bertc_nn_tie(r, "sbo_head.decoder.weight", word);
    bertc_nn_pop(r);
    h->decoder = word;
    bertc_nn_pop(r);
}

static void *spanbert_build(Registry *r, const BertConfig *cfg, BertcError *err)
{
    (void)err;
    SpanBert *m = bertc_arena_calloc(r->arena, 1, sizeof *m);
    bertc_nn_push(r, "bert", "BertModel", false);
    bertc_bert_model_init(&m->bert, r, cfg, BERT_HF, false);
    bertc_nn_pop(r);
    bertc_bert_lm_head_init(&m->mlm, r, cfg, m->bert.word.weight);
    m->sbo.kind = (SboHeadKind)bertc_spanbert_keys(cfg).sbo_head;
    if (m->sbo.kind == SBO_HEAD_ORIGINAL)
        sbo_head_init_original(&m->sbo, r, cfg, m->bert.word.weight);
    else
        sbo_head_init_seed(&m->sbo, r, cfg);
    return m;
}

/* ---- the span positions of the SBO head ------------------------------- */

/* Every position i of every span [s, e], flattened over (B, S) as b·S + t.
 * A span is a maximal run of mask_labels == 1 (adjacent spans merge, as the
 * seed's find_consecutive_groups and the original's merge_intervals). The
 * seed's h takes row r of [projector(X); h_0]: r = b·S + t (the projector
 * output) outside spans, B·S + g for the g-th span position. */
typedef struct SpanPositions {
    int64_t n;                     /* G = n_masked: positions inside spans */
    int64_t n_spans;
    ITensor left;                  /* (G) b·S + s − 1: x_{s-1} */
    ITensor right;                 /* (G) b·S + e + 1: x_{e+1} */
    ITensor offset;                /* (G) i − s: the row of the position table (0-based p_{i-s+1}) */
    ITensor at;                    /* (G) b·S + i: the masked token itself */
    ITensor rows;                  /* (B·S) the row of [projector(X); h_0] that h takes */
    /* what `bertc run` shows: */
    ITensor position;              /* (G) i − s + 1, the paper's subscript */
    ITensor token_position;        /* (G) i, in its row */
    ITensor span_index;            /* (G) the span of token g */
    ITensor span_row, span_start, span_end;   /* (n_spans) b, s, e */
} SpanPositions;

/* The position table of the head: its rows and how a message names them. */
static int64_t sbo_table_rows(const BertConfig *cfg)
{
    SpanBertKeys k = bertc_spanbert_keys(cfg);
    return k.sbo_head == SBO_HEAD_ORIGINAL ? k.sbo_max_targets : 3 * (int64_t)k.sbo_max_span_length;
}

static const char *sbo_table_name(const BertConfig *cfg)
{
    return bertc_spanbert_keys(cfg).sbo_head == SBO_HEAD_ORIGINAL
               ? "sbo_head.position_embeddings (sbo_max_targets)"
               : "sbo_head.span_pos_emb (3 x sbo_max_span_length)";
}

/* Checks the span [s, e] of row b against the borders and the table size,
 * then appends it and its positions. */
static int add_span(const Batch *in, const BertConfig *cfg, int64_t b, int64_t s, int64_t e,
                    int64_t S, SpanPositions *sp, BertcError *err)
{
    int64_t BS = sp->rows.numel, max_len = sbo_table_rows(cfg);
    if (s == 0)
        return bertc_errorf(err, "%s: 'mask_labels'[%lld, 0] = 1: a span starting at position "
                            "0 has no left boundary x_{s-1} (spans need s >= 1)", in->source,
                            (long long)b);
    if (e == S - 1)
        return bertc_errorf(err, "%s: 'mask_labels'[%lld, %lld] = 1: a span ending at the last "
                            "position has no right boundary x_{e+1} (spans need e <= S-2 = %lld)",
                            in->source, (long long)b, (long long)e, (long long)(S - 2));
    if (e - s + 1 > max_len)
        return bertc_errorf(err, "%s: 'mask_labels' row %lld has a span [%lld, %lld] of %lld "
                            "positions, more than the %lld rows of %s", in->source, (long long)b,
                            (long long)s, (long long)e, (long long)(e - s + 1),
                            (long long)max_len, sbo_table_name(cfg));
    int64_t k = sp->n_spans++;
    sp->span_row.data[k] = (int32_t)b;
    sp->span_start.data[k] = (int32_t)s;
    sp->span_end.data[k] = (int32_t)e;
    for (int64_t i = s; i <= e; i++) {
        int64_t g = sp->n++;
        sp->left.data[g] = (int32_t)(b * S + s - 1);
        sp->right.data[g] = (int32_t)(b * S + e + 1);
        sp->offset.data[g] = (int32_t)(i - s);
        sp->position.data[g] = (int32_t)(i - s + 1);
        sp->at.data[g] = (int32_t)(b * S + i);
        sp->token_position.data[g] = (int32_t)i;
        sp->span_index.data[g] = (int32_t)k;
        sp->rows.data[b * S + i] = (int32_t)(BS + g);
    }
    return 0;
}

/* (n) views of the first n entries of the (B·S) arrays. */
static void shrink(ITensor *t, int64_t n)
{
    *t = bertc_itensor_view(t->data, 1, &n);
}

/* mask_labels (B, S), already checked to be 0/1. */
static int find_spans(const Batch *in, const BertConfig *cfg, const ITensor *mask_labels, Arena *a,
                      SpanPositions *sp, BertcError *err)
{
    int64_t B = mask_labels->shape[0], S = mask_labels->shape[1], BS = B * S;
    ITensor *per_g[] = {&sp->left, &sp->right, &sp->offset, &sp->at, &sp->position,
                        &sp->token_position, &sp->span_index};
    ITensor *per_span[] = {&sp->span_row, &sp->span_start, &sp->span_end};
    sp->n = sp->n_spans = 0;
    for (size_t i = 0; i < sizeof per_g / sizeof per_g[0]; i++)
        *per_g[i] = bertc_itensor_new(a, 1, &BS);    /* G <= B·S; shrunk to G below */
    for (size_t i = 0; i < sizeof per_span / sizeof per_span[0]; i++)
        *per_span[i] = bertc_itensor_new(a, 1, &BS);
    sp->rows = bertc_itensor_new(a, 1, &BS);
    for (int64_t i = 0; i < BS; i++)
        sp->rows.data[i] = (int32_t)i;
    for (int64_t b = 0; b < B; b++) {
        const int32_t *m = mask_labels->data + b * S;
        for (int64_t s = 0; s < S; s++) {
            if (!m[s])
                continue;
            int64_t e = s;
            while (e + 1 < S && m[e + 1])
                e++;
            if (add_span(in, cfg, b, s, e, S, sp, err) != 0)
                return -1;
            s = e;
        }
    }
    for (size_t i = 0; i < sizeof per_g / sizeof per_g[0]; i++)
        shrink(per_g[i], sp->n);
    for (size_t i = 0; i < sizeof per_span / sizeof per_span[0]; i++)
        shrink(per_span[i], sp->n_spans);
    return 0;
}

/* ---- the SBO heads ------------------------------------------------------ */

/* The head's named intermediates, one row per masked token (G rows). */
typedef struct SboOut {
    Var *x_left, *x_right;         /* (G, H) x_{s-1}, x_{e+1} */
    Var *p;                        /* (G, Dp) p_{i-s+1}: Dp = H (seed), P (original) */
    Var *h0;                       /* (G, D0) D0 = 3H (seed), 2H + P (original) */
    Var *h1;                       /* (G, D1) D1 = sbo_dim_ffn (seed), H (original) */
    Var *y;                        /* (G, H) */
    Var *span_logits;              /* (G, V) */
    Var *logits;                   /* seed: (B, S, V), every position; original: NULL */
} SboOut;

/* x (B, S, H) -> the seed's sbo_logits (B, S, V) and, for G > 0, h_0 and,
 * when named, the rows of the span positions of h_1, y and the logits. */
static SboOut sbo_forward_seed(Graph *g, const SBOHead *h, Var *x, const SpanPositions *sp,
                               bool named)
{
    int64_t B = x->value.shape[0], S = x->value.shape[1], H = x->value.shape[2];
    int64_t flat[2] = {B * S, H};
    SboOut o = {0};
    Var *xf = bertc_ag_reshape(g, x, 2, flat);                             /* (B·S, H) */
    Var *hid = bertc_ag_linear(g, xf, h->projector.weight, NULL);          /* (B·S, 3H) */
    if (sp->n > 0) {
        o.x_left = bertc_ag_index_select(g, xf, 0, &sp->left);             /* x_{s-1}   (G, H) */
        o.p = bertc_embedding_forward(g, &h->span_pos_emb, &sp->offset);   /* p_{i-s+1} (G, H) */
        o.x_right = bertc_ag_index_select(g, xf, 0, &sp->right);           /* x_{e+1}   (G, H) */
        Var *parts[3] = {o.x_left, o.p, o.x_right};                        /* the seed's order */
        o.h0 = bertc_ag_concat(g, parts, 3, 1);                            /* h_0 (G, 3H) */
        Var *rows[2] = {hid, o.h0};
        hid = bertc_ag_index_select(g, bertc_ag_concat(g, rows, 2, 0), 0, &sp->rows);  /* (B·S, 3H) */
    }
    /* nn.GELU(): erf form; LayerNorm eps sbo_layer_norm_eps */
    Var *h1 = bertc_layernorm_forward(g, &h->head2, bertc_ag_gelu(g, bertc_linear_forward(g, &h->head0, hid)));
    Var *y = bertc_layernorm_forward(g, &h->head5, bertc_ag_gelu(g, bertc_linear_forward(g, &h->head3, h1)));
    Var *logits = bertc_ag_linear(g, y, h->classifier, h->bias);           /* (B·S, V) */
    if (sp->n > 0 && named) {       /* the span rows, for `bertc run` (off the loss's path) */
        o.h1 = bertc_ag_index_select(g, h1, 0, &sp->at);                   /* (G, I) */
        o.y = bertc_ag_index_select(g, y, 0, &sp->at);                     /* (G, H) */
        o.span_logits = bertc_ag_index_select(g, logits, 0, &sp->at);      /* (G, V) */
    }
    int64_t bsv[3] = {B, S, h->bias->value.shape[0]};
    o.logits = bertc_ag_reshape(g, logits, 3, bsv);
    return o;
}

/* x (B, S, H) -> the original's pair target scores for the G span
 * positions (G, V); nothing for G = 0. */
static SboOut sbo_forward_original(Graph *g, const SBOHead *h, Var *x, const SpanPositions *sp)
{
    int64_t B = x->value.shape[0], S = x->value.shape[1], H = x->value.shape[2];
    int64_t flat[2] = {B * S, H};
    SboOut o = {0};
    if (sp->n == 0)
        return o;
    Var *xf = bertc_ag_reshape(g, x, 2, flat);                             /* (B·S, H) */
    o.x_left = bertc_ag_index_select(g, xf, 0, &sp->left);                 /* x_{s-1}   (G, H) */
    o.x_right = bertc_ag_index_select(g, xf, 0, &sp->right);               /* x_{e+1}   (G, H) */
    o.p = bertc_embedding_forward(g, &h->position_embeddings, &sp->offset);   /* (G, P) */
    Var *parts[3] = {o.x_left, o.x_right, o.p};                            /* the paper's order */
    o.h0 = bertc_ag_concat(g, parts, 3, 1);                                /* h_0 (G, 2H + P) */
    o.h1 = bertc_layernorm_forward(g, &h->layer_norm1,
                                   bertc_bert_activation(g, h->act, bertc_linear_forward(g, &h->linear1, o.h0)));
    o.y = bertc_layernorm_forward(g, &h->layer_norm2,
                                  bertc_bert_activation(g, h->act, bertc_linear_forward(g, &h->linear2, o.h1)));
    o.span_logits = bertc_ag_linear(g, o.y, h->decoder, h->bias);          /* y E^T + b (G, V) */
    return o;
}

/* The spans and every intermediate of the head, by the names of the page
 * docs/models/spanbert.md. */
static void put_sbo_outputs(Outputs *out, Graph *g, const SpanPositions *sp, const SboOut *o)
{
    if (sp->n == 0)
        return;
    bertc_outputs_put_ids(out, g, sp->span_row, "sbo.span_row");
    bertc_outputs_put_ids(out, g, sp->span_start, "sbo.span_start");
    bertc_outputs_put_ids(out, g, sp->span_end, "sbo.span_end");
    bertc_outputs_put_ids(out, g, sp->span_index, "sbo.span_index");
    bertc_outputs_put_ids(out, g, sp->token_position, "sbo.token_position");
    bertc_outputs_put_ids(out, g, sp->position, "sbo.position");
    bertc_outputs_put(out, g, o->x_left, "sbo.x_left");
    bertc_outputs_put(out, g, o->x_right, "sbo.x_right");
    bertc_outputs_put(out, g, o->p, "sbo.p");
    bertc_outputs_put(out, g, o->h0, "sbo.h0");
    bertc_outputs_put(out, g, o->h1, "sbo.h1");
    bertc_outputs_put(out, g, o->y, "sbo.y");
    bertc_outputs_put(out, g, o->span_logits, "sbo.span_logits");
}

/* ---- inputs ------------------------------------------------------------ */


/* labels (B, S): -100 (ignored) or a token id below vocab_size. */
static int read_labels(const BertConfig *cfg, const Batch *in, const int64_t *bs, ITensor *labels,
                       BertcError *err)
{
    if (bertc_batch_ids(in, "labels", 2, bs, labels, err) != 0)
        return -1;
    for (int64_t i = 0; i < labels->numel; i++) {
        int32_t v = labels->data[i];
        if (v != -100 && (v < 0 || v >= cfg->vocab_size))
            return bertc_errorf(err, "%s: 'labels'[%lld, %lld] = %d is neither -100 (ignored) "
                                "nor a token id below vocab_size %d", in->source,
                                (long long)(i / bs[1]), (long long)(i % bs[1]), (int)v,
                                cfg->vocab_size);
    }
    return 0;
}

/* CE over the B·S positions, ignoring label -100. logits (B, S, V). */
static Var *token_loss(Graph *g, Var *logits, const ITensor *labels)
{
    int64_t n = labels->numel, flat[2] = {n, logits->value.shape[2]};
    ITensor target = bertc_itensor_view(labels->data, 1, &n);
    return bertc_ag_cross_entropy(g, bertc_ag_reshape(g, logits, 2, flat), &target, -100);
}

/* ---- the span masking test vectors (SPEC §6.7.2) ----------------------- */

static bool has_masking_inputs(const Batch *in)
{
    return bertc_batch_find(in, "masking.original_input_ids") || bertc_batch_find(in, "masking.token_kinds")
        || bertc_batch_find(in, "masking.lengths");
}

/* token kinds: -1 padding, 0 word start, 1 continuation, 2 excluded. */
static int check_kinds(const Batch *in, const ITensor *kinds, BertcError *err)
{
    for (int64_t i = 0; i < kinds->numel; i++)
        if (kinds->data[i] < TOKEN_PADDING || kinds->data[i] > TOKEN_EXCLUDED)
            return bertc_errorf(err, "%s: 'masking.token_kinds'[%lld, %lld] = %d is outside "
                                "{-1 padding, 0 word start, 1 continuation, 2 excluded}",
                                in->source, (long long)(i / kinds->shape[1]),
                                (long long)(i % kinds->shape[1]), (int)kinds->data[i]);
    return 0;
}

static int check_lengths(const Batch *in, const ITensor *lengths, int64_t S, BertcError *err)
{
    for (int64_t b = 0; b < lengths->numel; b++)
        if (lengths->data[b] < 0 || lengths->data[b] > S)
            return bertc_errorf(err, "%s: 'masking.lengths'[%lld] = %d is outside [0, S = %lld], "
                                "S the row length of 'masking.original_input_ids'", in->source,
                                (long long)b, (int)lengths->data[b], (long long)S);
    return 0;
}

/* Runs the span masking of the config's `masking` block on the masking.*
 * inputs and puts masking.{raw_mask_labels, mask_labels, input_ids, labels}. */
static int run_masking(const BertConfig *cfg, Graph *g, const Batch *in, Outputs *out,
                       BertcError *err)
{
    int64_t any2[2] = {-1, -1};
    ITensor ids, kinds, lengths;
    if (!bertc_spanbert_keys(cfg).masking.present)
        return bertc_errorf(err, "%s: the masking.* inputs need a \"masking\" object (with its "
                            "\"seed\") in config.json", in->source);
    if (bertc_batch_ids(in, "masking.original_input_ids", 2, any2, &ids, err) != 0 ||
        bertc_batch_check_range(in, "masking.original_input_ids", &ids, 0, cfg->vocab_size,
                          "vocab_size", err) != 0 ||
        bertc_batch_ids(in, "masking.token_kinds", 2, ids.shape, &kinds, err) != 0 ||
        check_kinds(in, &kinds, err) != 0 ||
        bertc_batch_ids(in, "masking.lengths", 1, ids.shape, &lengths, err) != 0 ||
        check_lengths(in, &lengths, ids.shape[1], err) != 0)
        return -1;
    SpanMasking m;
    if (bertc_span_masking(cfg, &ids, &kinds, &lengths, g->step, &m, err) != 0) {
        char why[BERTC_ERROR_LEN];
        snprintf(why, sizeof why, "%s", err ? err->msg : "");
        return bertc_errorf(err, "%s: %s", in->source, why);   /* name the inputs file */
    }
    bertc_outputs_put_ids(out, g, m.raw_mask_labels, "masking.raw_mask_labels");
    bertc_outputs_put_ids(out, g, m.mask_labels, "masking.mask_labels");
    bertc_outputs_put_ids(out, g, m.input_ids, "masking.input_ids");
    bertc_outputs_put_ids(out, g, m.labels, "masking.labels");
    return 0;
}

/* ---- the model --------------------------------------------------------- */

/* The model's own inputs: BERT's, mask_labels (required: they place the
 * spans) and labels (optional: labels->data is NULL without them, and then
 * there is no loss). */
static int read_inputs(const BertConfig *cfg, Graph *g, const Batch *in, BertInputs *x,
                       SpanPositions *sp, ITensor *labels, BertcError *err)
{
    ITensor mask_labels;
    if (bertc_bert_read_inputs(cfg, g, in, "input_ids", "attention_mask", "token_type_ids", x,
                         err) != 0)
        return -1;
    int64_t bs[2] = {x->B, x->S};
    if (bertc_batch_ids(in, "mask_labels", 2, bs, &mask_labels, err) != 0 ||
        bertc_batch_check_binary(in, "mask_labels", &mask_labels, err) != 0 ||
        find_spans(in, cfg, &mask_labels, g->step, sp, err) != 0)
        return -1;
    labels->data = NULL;
    if (bertc_batch_find(in, "labels") && read_labels(cfg, in, bs, labels, err) != 0)
        return -1;
    return 0;
}

/* The original's pair_loss target: labels at the G span positions (G). */
static ITensor span_labels(Graph *g, const ITensor *labels, const SpanPositions *sp)
{
    ITensor t = bertc_itensor_new(g->step, 1, &sp->n);
    for (int64_t k = 0; k < sp->n; k++)
        t.data[k] = labels->data[sp->at.data[k]];
    return t;
}

/* L_SBO: the seed's CE over all B·S rows of sbo_logits (labels -100 outside
 * the spans), the original's over the G span rows; NULL when the original
 * head has no span (its dummy pair target adds 0). */
static Var *sbo_loss(Graph *g, const SboOut *o, const ITensor *labels, const SpanPositions *sp)
{
    if (o->logits)
        return token_loss(g, o->logits, labels);
    if (sp->n == 0)
        return NULL;
    ITensor target = span_labels(g, labels, sp);
    return bertc_ag_cross_entropy(g, o->span_logits, &target, -100);
}

static int spanbert_run(void *impl, const BertConfig *cfg, Graph *g, const Batch *in,
                        Outputs *out, BertcError *err)
{
    SpanBert *m = impl;
    BertInputs x;
    SpanPositions sp;
    ITensor labels;
    if (read_inputs(cfg, g, in, &x, &sp, &labels, err) != 0)
        return -1;
    if (has_masking_inputs(in) && run_masking(cfg, g, in, out, err) != 0)
        return -1;
    BertOutput r = bertc_bert_model_forward(g, &m->bert, &x);
    Var *mlm_logits = bertc_bert_lm_head_forward(g, &m->mlm, r.last_hidden_state);   /* (B, S, V) */
    SboOut sbo = m->sbo.kind == SBO_HEAD_ORIGINAL
                     ? sbo_forward_original(g, &m->sbo, r.last_hidden_state, &sp)
                     : sbo_forward_seed(g, &m->sbo, r.last_hidden_state, &sp, !out->loss_only);
    bertc_outputs_put(out, g, mlm_logits, "mlm_logits");
    if (sbo.logits)
        bertc_outputs_put(out, g, sbo.logits, "sbo_logits");
    if (!out->loss_only)
        put_sbo_outputs(out, g, &sp, &sbo);
    bertc_bert_put_outputs(out, g, &m->bert, &r);
    if (labels.data) {
        Var *mlm_loss = token_loss(g, mlm_logits, &labels);
        Var *l_sbo = sbo_loss(g, &sbo, &labels, &sp);
        bertc_outputs_put(out, g, mlm_loss, "mlm_loss");
        if (l_sbo)
            bertc_outputs_put(out, g, l_sbo, "sbo_loss");
        bertc_outputs_put(out, g, l_sbo ? bertc_ag_add(g, mlm_loss, l_sbo) : mlm_loss, "loss");
    }
    return 0;
}

/* ---- a random batch: the collator's span masking ---------------------- */

/* Position i of the masked batch back to its original token. */
static void unmask(SpanMasking *m, const ITensor *original, int64_t i)
{
    m->mask_labels.data[i] = 0;
    m->labels.data[i] = -100;
    m->input_ids.data[i] = original->data[i];
}

/* Adjacent spans merge into one (find_spans), which may then be longer than
 * the rows of the head's position table (sbo_table_rows): such a run is cut by
 * unmasking the position past the limit. And a batch with no masked
 * position (a budget that floors to 0) gets position 1 masked, so that the
 * loss is defined. */
static void fit_spans(const BertConfig *cfg, const ITensor *original, SpanMasking *m)
{
    int64_t S = original->shape[1], max_len = sbo_table_rows(cfg);
    int64_t run = 0, masked = 0;
    for (int64_t i = 0; i < original->numel; i++) {
        run = i % S && m->mask_labels.data[i] ? run + 1 : 0;
        if (run > max_len) {
            unmask(m, original, i);
            run = 0;
        }
        masked += m->mask_labels.data[i];
    }
    if (masked == 0) {
        m->mask_labels.data[1] = 1;
        m->labels.data[1] = original->data[1];
        m->input_ids.data[1] = cfg->mask_token_id;
    }
}

/* Rows [CLS] w_1 .. w_{S-2} [SEP] of random words (every token a word
 * start), masked by bertc_span_masking_rng with the config's masking block
 * (budget, span lengths) from rng: input_ids with [MASK]s, mask_labels and,
 * with labels, the original tokens at the masked positions. */
static int spanbert_random_batch(const BertConfig *cfg, Graph *g, int64_t B, int64_t S,
                                 bool labels, Rng *rng, Batch *out, BertcError *err)
{
    if (S < 3)
        return bertc_errorf(err, "random batch: SpanBertForPreTraining needs S >= 3 ([CLS], a "
                            "word, [SEP]), got S = %lld", (long long)S);
    int64_t bs[2] = {B, S};
    ITensor unused, kinds = bertc_itensor_new(g->step, 2, bs), lengths = bertc_itensor_new(g->step, 1, &B);
    /* words past the special tokens, its own masking.special_token_ids too */
    ConfigTokenIds specials = bertc_spanbert_keys(cfg).masking.special_token_ids;
    bertc_random_bert_inputs_from(cfg, bertc_random_first_token_past(cfg, &specials), g, B, S,
                                  rng, "input_ids", "attention_mask", "token_type_ids", out,
                                  &unused);
    ITensor original = bertc_batch_find(out, "input_ids")->ids;
    for (int64_t b = 0; b < B; b++) {
        original.data[b * S] = cfg->cls_token_id;
        original.data[b * S + S - 1] = cfg->sep_token_id;
        lengths.data[b] = (int32_t)S;
    }
    for (int64_t i = 0; i < B * S; i++)
        kinds.data[i] = TOKEN_WORD_START;
    SpanMasking m;
    if (bertc_span_masking_rng(cfg, &original, &kinds, &lengths, rng, g->step, &m, err) != 0)
        return -1;
    fit_spans(cfg, &original, &m);
    bertc_batch_put_ids(out, "input_ids", m.input_ids);
    bertc_batch_put_ids(out, "mask_labels", m.mask_labels);
    if (labels)
        bertc_batch_put_ids(out, "labels", m.labels);
    return 0;
}

/* BERT's inputs and no masked span (mask_labels all 0): the encoder and
 * the MLM head on the text as it is. */
static int spanbert_batch_from_text(const Model *m, const Tokenizer *tok, const TextExample *ex,
                                    int n, int32_t max_len, Graph *g, Batch *out,
                                    BertcError *err)
{
    TextBatch tb;
    if (bertc_text_batch_encode(&m->cfg, tok, ex, n, max_len, 0, g, &tb, err) != 0)
        return -1;
    bertc_text_batch_put(&tb, "input_ids", "attention_mask", "token_type_ids", out);
    bertc_batch_put_ids(out, "mask_labels", bertc_itensor_new(g->step, 2, tb.input_ids.shape));
    return 0;
}

static const InputSpec spanbert_inputs[] = {
    {.name = "mask_labels", .type = INPUT_IDS, .shape = "(B, S)",
     .values = "1 on masked spans, else 0", .required = true},
    {.name = "labels", .type = INPUT_IDS, .shape = "(B, S)",
     .values = "the original id where masked, else -100", .label = true},
    {.name = "masking.original_input_ids", .type = INPUT_IDS, .shape = "(B, S)",
     .values = "[0, vocab_size): with the masking.* inputs, the model masks them itself"},
    {.name = "masking.token_kinds", .type = INPUT_IDS, .shape = "(B, S)",
     .values = "0 word start, 1 continuation, 2 excluded, -1 padding"},
    {.name = "masking.lengths", .type = INPUT_IDS, .shape = "(B)", .values = "[1, S]"},
};

/* n_masked = sum(mask_labels), the rows of sbo.*; n_spans its maximal runs.
 * Dp = H (seed) or P = sbo_position_embedding_size (original); D0 = 3H or
 * 2H + P; D1 = sbo_dim_ffn or H. */
static const OutputSpec spanbert_outputs[] = {
    {"mlm_logits", "(B, S, V)"},
    {"sbo_logits", "(B, S, V)"},
    {"sbo.span_row", "(n_spans)"},
    {"sbo.span_start", "(n_spans)"},
    {"sbo.span_end", "(n_spans)"},
    {"sbo.span_index", "(n_masked)"},
    {"sbo.token_position", "(n_masked)"},
    {"sbo.position", "(n_masked)"},
    {"sbo.x_left", "(n_masked, H)"},
    {"sbo.x_right", "(n_masked, H)"},
    {"sbo.p", "(n_masked, Dp)"},
    {"sbo.h0", "(n_masked, D0)"},
    {"sbo.h1", "(n_masked, D1)"},
    {"sbo.y", "(n_masked, H)"},
    {"sbo.span_logits", "(n_masked, V)"},
    {"masking.raw_mask_labels", "(B, S)"},
    {"masking.mask_labels", "(B, S)"},
    {"masking.input_ids", "(B, S)"},
    {"masking.labels", "(B, S)"},
    {"mlm_loss", "()"},
    {"sbo_loss", "()"},
    {"loss", "()"},
};

static const ExplainStep spanbert_steps[] = {
    {.title = "Masked spans",
     .equation = "1 on the tokens of a masked span (write [MASK] in the text to mask it)",
     .where = "zoo/models/spanbert.c:run_masking", .output = "masking.mask_labels"},
    {.title = "Span boundaries",
     .equation = "each span (s, e) and the tokens just outside it, s &minus; 1 and e + 1",
     .where = "zoo/models/spanbert.c:find_spans", .output = "sbo.span_start"},
    {.title = "Span offsets", .equation = "p<sub>i</sub> = i &minus; s + 1 for each masked token "
     "x<sub>i</sub> of span (s, e)",
     .where = "zoo/models/spanbert.c:find_spans", .output = "sbo.position"},
    {.title = "Left boundary vectors",
     .equation = "x<sub>s&minus;1</sub>: the encoder's output just left of the span  &nbsp; "
                 "(n_masked, H)",
     .where = "zoo/models/spanbert.c:sbo_forward_seed", .output = "sbo.x_left"},
    {.title = "Right boundary vectors",
     .equation = "x<sub>e+1</sub>: just right of the span  &nbsp; (n_masked, H)",
     .where = "zoo/models/spanbert.c:sbo_forward_seed", .output = "sbo.x_right"},
    {.title = "SBO input h<sub>0</sub>",
     .equation = "h<sub>0</sub> = [x<sub>s&minus;1</sub>; x<sub>e+1</sub>; "
                 "p<sub>i&minus;s+1</sub>]  &nbsp; (n_masked, D0)",
     .where = "zoo/models/spanbert.c:sbo_forward_seed", .output = "sbo.h0"},
    {.title = "MLM predictions",
     .equation = "z = LN(GELU(X<sub>L</sub> W<sub>T</sub>)) E<sub>word</sub><sup>T</sup> + b  "
                 "&nbsp; (B, S, V)",
     .where = "zoo/models/bert_heads.c:bertc_bert_lm_head_forward", .output = "mlm_logits"},
    {.title = "SBO predictions from the boundaries",
     .equation = "y<sub>i</sub> = LN(GELU(W<sub>2</sub> LN(GELU(W<sub>1</sub> h<sub>0</sub>))))"
                 "; &nbsp; z<sub>i</sub> = y<sub>i</sub> E<sup>T</sup>  &nbsp; (B, S, V)",
     .where = "zoo/models/spanbert.c:sbo_forward_seed", .output = "sbo_logits"},
};

static const ModelExplain spanbert_explain = {
    .mechanism = "SpanBERT (Joshi et al. 2020): whole spans are masked and each masked token "
                 "is predicted twice, by the MLM head from its own position and by the span "
                 "boundary objective (SBO) from the two tokens just outside the span and its "
                 "offset inside it. Write [MASK] [MASK] in the text to mask a span.",
    EXPLAIN_ENCODER(bertc_bert_encoder_steps), EXPLAIN_STEPS(spanbert_steps),
    .predict = {{.kind = PREDICT_TOKENS, .output = "mlm_logits"},
                {.kind = PREDICT_MASKED_ROWS, .output = "sbo_logits"}},
};

const ModelArch bertc_arch_spanbert = {
    .name = "SpanBertForPreTraining",
    .summary = "SpanBERT: masked spans and the Span Boundary Objective (Joshi et al. 2020)",
    .keys = spanbert_keys_table,
    .n_keys = sizeof spanbert_keys_table / sizeof spanbert_keys_table[0],
    .check_config = check_spanbert_keys,
    .shared_inputs = bertc_bert_inputs,
    .n_shared_inputs = BERT_N_INPUTS,
    .inputs = spanbert_inputs,
    .n_inputs = sizeof spanbert_inputs / sizeof spanbert_inputs[0],
    .shared_outputs = bertc_bert_outputs,
    .n_shared_outputs = BERT_N_OUTPUTS,
    .outputs = spanbert_outputs,
    .n_outputs = sizeof spanbert_outputs / sizeof spanbert_outputs[0],
    .loss = "CE of mlm_logits + CE of sbo_logits, over the masked positions",
    .build = spanbert_build,
    .forward = spanbert_run,
    .random_batch = spanbert_random_batch,
    .batch_from_text = spanbert_batch_from_text,
    .task = MODEL_TASK_PRETRAINING,
    .pretraining = MODEL_PRETRAIN_SPAN,
    .explain = &spanbert_explain,
};
