/*
 * zoo/models/spanbert.h — SpanBERT's config keys and the span masking of one
 * row, what a pretraining collator calls (examples/spanbert.c). The batch
 * masking the model's forward runs is private (zoo/models/spanbert_internal.h).
 */
#ifndef BERTC_ZOO_MODELS_SPANBERT_H
#define BERTC_ZOO_MODELS_SPANBERT_H

#include "zoo/models/model.h"

/* ------------------------------------------------------------------------ */
/* SpanBERT span masking (zoo/models/span_masking.c), SPEC §6.7.2                   */
/* ------------------------------------------------------------------------ */

/* masking.style: whose span masking (zoo/models/span_masking.c). */
typedef enum SpanMaskingStyle {
    SPAN_MASKING_SEED = 0,      /* the seed's SpanCollator */
    SPAN_MASKING_ORIGINAL = 1   /* the paper's, as facebookresearch/SpanBERT's PairWithSpanMaskingScheme */
} SpanMaskingStyle;

/* The config's "masking" object (SPEC §6.7.2). */
typedef struct SpanMaskingConfig {
    bool present;               /* the config has a "masking" object */
    uint64_t seed;
    double masking_budget;      /* double: floor(budget * l) must match Python */
    double span_probability;
    int max_span_length_cap;
    ConfigTokenIds special_token_ids;
    int style;                  /* SpanMaskingStyle */
} SpanMaskingConfig;

/* sbo_head: whose Span Boundary Objective head (zoo/models/spanbert.c). */
typedef enum SboHeadKind {
    SBO_HEAD_SEED = 0,          /* the seed's SBOHead */
    SBO_HEAD_ORIGINAL = 1       /* facebookresearch/SpanBERT's BertPairTargetPredictionHead */
} SboHeadKind;

/* SpanBertForPreTraining's own config keys (zoo/models/spanbert.c). */
typedef struct SpanBertKeys {
    int sbo_dim_ffn;            /* the SBO head's hidden size [intermediate_size] */
    int sbo_max_span_length;    /* span_pos_emb has 3 x this many rows */
    float sbo_layer_norm_eps;
    SpanMaskingConfig masking;
    int sbo_head;               /* SboHeadKind */
    int sbo_max_targets;        /* original head: rows of position_embeddings */
    int sbo_position_embedding_size;   /* original head: their width P */
} SpanBertKeys;

SpanBertKeys bertc_spanbert_keys(const BertConfig *cfg);

/* masking.token_kinds: what each token may be in the candidate list. */
typedef enum TokenKind {
    TOKEN_PADDING = -1,
    TOKEN_WORD_START = 0,         /* a word's first WordPiece: may start a span */
    TOKEN_CONTINUATION = 1,       /* "##..": joins the word before it */
    TOKEN_EXCLUDED = 2            /* punctuation-initial: never a candidate */
} TokenKind;

/* The seed's loop `while budget:` spins forever once no candidate can start
 * a span any more, e.g. "[CLS] [MASK] ##a b [SEP] c ##d ##e [SEP]" with a
 * budget of 2: if b is covered alone, 1 is left and every other word is
 * longer than 1. We stop such a row with an error after this many draws.
 * A row that can still progress does so with probability >= 0.8^9/len(cand)
 * per draw (defaults p = 0.2, cap 10: the rarest useful span is 10 long),
 * >= 2.6e-4 for l <= 512; spending a 76-token budget then takes ~290k
 * draws on average and more than 2^20 with probability < 1e-30. Reaching
 * the bound costs ~20 ms. */
#define SPAN_MASKING_MAX_DRAWS (1L << 20)

/* One unpadded row, tokens[0..l-1] with kinds[0..l-1]: the span masking of
 * the seed's SpanCollator._whole_word_mask with cfg->masking's budget, span
 * probability and cap, drawn from rng (SPEC §6.7.1). Writes raw_mask[t] = 1
 * for covered positions, 0 elsewhere; the scratch (3 arrays of l) comes from
 * `scratch`. Errors: a positive budget with no candidate, or
 * SPAN_MASKING_MAX_DRAWS draws without spending the budget. With
 * masking.style "original", the paper's masking instead (zoo/models/span_masking.c):
 * whole words, ceil(budget * n) of the n tokens other than [CLS]/[SEP]. */
int bertc_span_mask_row(const BertConfig *cfg, const int32_t *tokens, const int32_t *kinds, int64_t l,
                  Rng *rng, Arena *scratch, int32_t *raw_mask, BertcError *err);

#endif /* BERTC_ZOO_MODELS_SPANBERT_H */
