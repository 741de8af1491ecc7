/*
 * zoo/models/spanbert_internal.h — SpanBERT's masking internals, shared by
 * zoo/models/spanbert.c, zoo/models/span_masking.c and their tests; not
 * installed.
 */
#ifndef BERTC_ZOO_MODELS_SPANBERT_INTERNAL_H
#define BERTC_ZOO_MODELS_SPANBERT_INTERNAL_H

#include "zoo/models/spanbert.h"

/* masking.style "original", draw 1: a span length in words, from the
 * geometric pmf p(1-p)^(k-1) truncated to [1, max_span_length_cap] and
 * renormalised (the original's len_distrib). */
int64_t bertc_span_length_words(const SpanMaskingConfig *mc, Rng *rng);

typedef struct SpanMasking {
    ITensor raw_mask_labels;      /* (B, S) covered positions, before cleaning */
    ITensor mask_labels;          /* (B, S) 0 on special tokens and padding */
    ITensor input_ids;            /* (B, S) [MASK] where mask_labels == 1 */
    ITensor labels;               /* (B, S) original id where mask_labels == 1, else -100 */
} SpanMasking;

/* The padded batch: original_input_ids (B, S), token_kinds (B, S) and
 * lengths (B), rows in order from one stream seeded with cfg->masking.seed.
 * Special tokens (cleaned out of mask_labels): pad, unk, cls, sep, mask ids
 * and masking.special_token_ids. Inputs are assumed validated. */
int bertc_span_masking(const BertConfig *cfg, const ITensor *original_input_ids,
                 const ITensor *token_kinds, const ITensor *lengths, Arena *arena,
                 SpanMasking *out, BertcError *err);
/* bertc_span_masking drawing from the caller's stream instead of one seeded with
 * masking.seed: a new mask for every random batch. */
int bertc_span_masking_rng(const BertConfig *cfg, const ITensor *original_input_ids,
                     const ITensor *token_kinds, const ITensor *lengths, Rng *rng,
                     Arena *arena, SpanMasking *out, BertcError *err);

#endif /* BERTC_ZOO_MODELS_SPANBERT_INTERNAL_H */
