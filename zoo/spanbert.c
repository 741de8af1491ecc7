/* zoo/spanbert.c — SpanBertForPreTraining (SPEC §6.7): HF BertModel without
 * the pooler, the HF masked-LM head, and the seed's Span Boundary Objective
 * head. Joshi et al. 2020, "SpanBERT: Improving Pre-training by
 * Representing and Predicting Spans", §3.2:
 *
 *   y_i = f(x_{s-1}, x_{e+1}, p_{i-s+1})           for every i in a span [s, e]
 *   h_0 = [x_{s-1}; p_{i-s+1}; x_{e+1}]             (the seed's order: left, position, right;
 *                                                    the paper/docstring write [x_{s-1}; x_{e+1}; p])
 *   h_1 = LayerNorm(GeLU(W_1 h_0))                  sbo_head.head.0, head.2
 *   y_i = LayerNorm(GeLU(W_2 h_1))                  sbo_head.head.3 (no bias), head.5
 *   L   = L_MLM + L_SBO                             both CE over the masked positions
 *
 * The seed's SBO head computes h = projector(X) for every position and
 * overwrites the rows of span positions with h_0; with the collator's
 * labels (-100 outside the spans) the other rows never reach the loss, so
 * sbo_head.projector.weight has a zero gradient. The seed's head uses nn.GELU() (erf) whatever hidden_act
 * says, and LayerNorm ε = sbo_layer_norm_eps (1e-5, PyTorch's default).
 *
 * Span borders (the seed indexes X[b, s-1] and X[b, e+1]): a span starting
 * at position 0 has no x_{s-1} (Python would silently wrap to X[b, -1], the
 * last position) and a span ending at S-1 has no x_{e+1} (the seed raises
 * IndexError). Both are input errors naming 'mask_labels'. The collator
 * never makes them: [CLS] opens and [SEP] closes every row. */
#include "zoo/zoo.h"
#include "tensor/format_internal.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* ---- config keys: the SBO head and the span masking ---------------------- */

#define SB_AT(member) offsetof(SpanBertKeys, member)
#define MASK_AT(member) (offsetof(SpanBertKeys, masking) + offsetof(SpanMaskingConfig, member))

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
};

SpanBertKeys bertc_spanbert_keys(const BertConfig *cfg)
{
    SpanBertKeys k;
    bertc_model_keys(cfg, &k, sizeof k);
    return k;
}

/* The masking needs the [MASK], [CLS], [SEP] and [UNK] ids. */
static int check_spanbert_keys(const BertConfig *cfg, BertcError *err)
{
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
    Linear projector;              /* sbo_head.projector: (3H, H), no bias */
    Embedding span_pos_emb;        /* sbo_head.span_pos_emb: (3 · sbo_max_span_length, H) */
    Linear head0;                  /* sbo_head.head.0: W_1 (I, 3H) + bias (I) */
    LayerNorm head2;               /* sbo_head.head.2: (I) */
    Linear head3;                  /* sbo_head.head.3: W_2 (H, I), no bias */
    LayerNorm head5;               /* sbo_head.head.5: (H) */
    Var *classifier;               /* sbo_head.classifier.weight: (V, H) */
    Var *bias;                     /* sbo_head.bias (V) = sbo_head.classifier.bias */
} SBOHead;

typedef struct SpanBert {
    BertModel bert;                /* bert. */
    BertLMHead mlm;                /* cls.predictions. */
    SBOHead sbo;                   /* sbo_head. */
} SpanBert;

/* The seed's SBOHead.__init__, in its order (the own parameter `bias`
 * comes first in the state_dict). The classifier is built without a bias and
 * then given `bias`, so it prints as bias=True. */
static void sbo_head_init(SBOHead *h, Registry *r, const BertConfig *cfg)
{
    int64_t H = cfg->hidden_size, I = bertc_spanbert_keys(cfg).sbo_dim_ffn, V = cfg->vocab_size;
    float eps = bertc_spanbert_keys(cfg).sbo_layer_norm_eps;
    bertc_nn_push(r, "sbo_head", "SBOHead", false);
    h->bias = bertc_nn_param(r, "bias", 1, &V, INIT_ZEROS);
    bertc_linear_init(&h->projector, r, "projector", H, 3 * H, false);
    bertc_embedding_init(&h->span_pos_emb, r, "span_pos_emb", 3 * (int64_t)bertc_spanbert_keys(cfg).sbo_max_span_length,
                   H, -1);
    bertc_nn_push(r, "head", "Sequential", false);
    bertc_linear_init(&h->head0, r, "0", 3 * H, I, true);
    bertc_nn_leaf(r, "1", "GELU(approximate='none')");
    bertc_layernorm_init(&h->head2, r, "2", I, eps);
    bertc_linear_init(&h->head3, r, "3", I, H, false);
    bertc_nn_leaf(r, "4", "GELU(approximate='none')");
    bertc_layernorm_init(&h->head5, r, "5", H, eps);
    bertc_nn_pop(r);
    bertc_nn_push(r, "classifier", bertc_nn_format(r, "Linear(in_features=%lld, out_features=%lld, "
                                       "bias=True)", (long long)H, (long long)V), true);
    int64_t vh[2] = {V, H};
    h->classifier = bertc_nn_param(r, "weight", 2, vh, INIT_NORMAL);
    bertc_nn_tie(r, "sbo_head.classifier.bias", h->bias);
    bertc_nn_pop(r);
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
    sbo_head_init(&m->sbo, r, cfg);
    return m;
}

/* ---- the span positions of the SBO head ------------------------------- */

/* Every position i of every span [s, e], flattened over (B, S) as b·S + t.
 * A span is a maximal run of mask_labels == 1 (adjacent spans merge, as the
 * seed's find_consecutive_groups). h takes row r of [projector(X); h_0]:
 * r = b·S + t (the projector output) outside spans, B·S + g for the g-th
 * span position. */
typedef struct SpanPositions {
    int64_t n;                     /* G: positions inside spans */
    ITensor left;                  /* (G) b·S + s − 1: x_{s-1} */
    ITensor right;                 /* (G) b·S + e + 1: x_{e+1} */
    ITensor offset;                /* (G) i − s: the row of span_pos_emb (0-based p_{i-s+1}) */
    ITensor rows;                  /* (B·S) the row of [projector(X); h_0] that h takes */
} SpanPositions;

/* Checks the span [s, e] of row b against the borders and the table size,
 * then appends its positions. */
static int add_span(const Batch *in, int64_t b, int64_t s, int64_t e, int64_t S,
                    int64_t max_len, SpanPositions *sp, BertcError *err)
{
    int64_t BS = sp->rows.numel;
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
                            "positions, more than the %lld rows of sbo_head.span_pos_emb "
                            "(3 x sbo_max_span_length)", in->source, (long long)b, (long long)s,
                            (long long)e, (long long)(e - s + 1), (long long)max_len);
    for (int64_t i = s; i <= e; i++) {
        int64_t g = sp->n++;
        sp->left.data[g] = (int32_t)(b * S + s - 1);
        sp->right.data[g] = (int32_t)(b * S + e + 1);
        sp->offset.data[g] = (int32_t)(i - s);
        sp->rows.data[b * S + i] = (int32_t)(BS + g);
    }
    return 0;
}

/* mask_labels (B, S), already checked to be 0/1. */
static int find_spans(const Batch *in, const ITensor *mask_labels, int64_t max_len, Arena *a,
                      SpanPositions *sp, BertcError *err)
{
    int64_t B = mask_labels->shape[0], S = mask_labels->shape[1], BS = B * S;
    sp->n = 0;
    sp->left = bertc_itensor_new(a, 1, &BS);     /* G <= B·S; the views below shrink to G */
    sp->right = bertc_itensor_new(a, 1, &BS);
    sp->offset = bertc_itensor_new(a, 1, &BS);
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
            if (add_span(in, b, s, e, S, max_len, sp, err) != 0)
                return -1;
            s = e;
        }
    }
    sp->left = bertc_itensor_view(sp->left.data, 1, &sp->n);
    sp->right = bertc_itensor_view(sp->right.data, 1, &sp->n);
    sp->offset = bertc_itensor_view(sp->offset.data, 1, &sp->n);
    return 0;
}

/* ---- the SBO head ------------------------------------------------------ */

/* x (B, S, H) -> sbo_logits (B, S, V). */
static Var *sbo_head_forward(Graph *g, const SBOHead *h, Var *x, const SpanPositions *sp)
{
    int64_t B = x->value.shape[0], S = x->value.shape[1], H = x->value.shape[2];
    int64_t flat[2] = {B * S, H};
    Var *xf = bertc_ag_reshape(g, x, 2, flat);                             /* (B·S, H) */
    Var *hid = bertc_ag_linear(g, xf, h->projector.weight, NULL);          /* (B·S, 3H) */
    if (sp->n > 0) {
        Var *parts[3] = {
            bertc_ag_index_select(g, xf, 0, &sp->left),                    /* x_{s-1}   (G, H) */
            bertc_embedding_forward(g, &h->span_pos_emb, &sp->offset),     /* p_{i-s+1} (G, H) */
            bertc_ag_index_select(g, xf, 0, &sp->right),                   /* x_{e+1}   (G, H) */
        };
        Var *rows[2] = {hid, bertc_ag_concat(g, parts, 3, 1)};             /* h_0 (G, 3H) */
        hid = bertc_ag_index_select(g, bertc_ag_concat(g, rows, 2, 0), 0, &sp->rows);  /* (B·S, 3H) */
    }
    /* nn.GELU(): erf form; LayerNorm eps sbo_layer_norm_eps */
    Var *z = bertc_layernorm_forward(g, &h->head2, bertc_ag_gelu(g, bertc_linear_forward(g, &h->head0, hid)));
    z = bertc_layernorm_forward(g, &h->head5, bertc_ag_gelu(g, bertc_linear_forward(g, &h->head3, z)));
    Var *logits = bertc_ag_linear(g, z, h->classifier, h->bias);           /* (B·S, V) */
    int64_t bsv[3] = {B, S, h->bias->value.shape[0]};
    return bertc_ag_reshape(g, logits, 3, bsv);
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
        find_spans(in, &mask_labels, 3 * (int64_t)bertc_spanbert_keys(cfg).sbo_max_span_length, g->step, sp,
                   err) != 0)
        return -1;
    labels->data = NULL;
    if (bertc_batch_find(in, "labels") && read_labels(cfg, in, bs, labels, err) != 0)
        return -1;
    return 0;
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
    Var *sbo_logits = sbo_head_forward(g, &m->sbo, r.last_hidden_state, &sp);  /* (B, S, V) */
    bertc_outputs_put(out, g, mlm_logits, "mlm_logits");
    bertc_outputs_put(out, g, sbo_logits, "sbo_logits");
    bertc_bert_put_outputs(out, g, &m->bert, &r);
    if (labels.data) {
        Var *mlm_loss = token_loss(g, mlm_logits, &labels);
        Var *sbo_loss = token_loss(g, sbo_logits, &labels);
        bertc_outputs_put(out, g, mlm_loss, "mlm_loss");
        bertc_outputs_put(out, g, sbo_loss, "sbo_loss");
        bertc_outputs_put(out, g, bertc_ag_add(g, mlm_loss, sbo_loss), "loss");
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
 * the 3 x sbo_max_span_length rows of span_pos_emb: such a run is cut by
 * unmasking the position past the limit. And a batch with no masked
 * position (a budget that floors to 0) gets position 1 masked, so that the
 * loss is defined. */
static void fit_spans(const BertConfig *cfg, const ITensor *original, SpanMasking *m)
{
    int64_t S = original->shape[1], max_len = 3 * (int64_t)bertc_spanbert_keys(cfg).sbo_max_span_length;
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
    bertc_random_bert_inputs(cfg, g, B, S, rng, "input_ids", "attention_mask", "token_type_ids", out,
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

static const OutputSpec spanbert_outputs[] = {
    {"mlm_logits", "(B, S, V)"},
    {"sbo_logits", "(n_masked, V)"},
    {"masking.raw_mask_labels", "(B, S)"},
    {"masking.mask_labels", "(B, S)"},
    {"masking.input_ids", "(B, S)"},
    {"masking.labels", "(B, S)"},
    {"mlm_loss", "()"},
    {"sbo_loss", "()"},
    {"loss", "()"},
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
};
