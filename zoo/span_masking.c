/* zoo/span_masking.c — SpanBERT's span masking (Joshi et al. 2020, §3.1),
 * as the seed's SpanCollator does it (SPEC §6.7.2):
 *
 *   - candidates are whole words: a word start and its "##" continuations;
 *   - the budget is floor(masking_budget · l) tokens (15 % in the paper);
 *   - span lengths follow Geo(p = 0.2) clipped to [1, 10] (paper: ℓ ~ Geo(p));
 *   - a span starts at a random candidate and covers consecutive positions;
 *   - every covered token becomes [MASK] (no 80/10/10 split).
 *
 * The randomness is SplitMix64 (SPEC §6.7.1), one stream for the batch, so a
 * Python implementation with the same seed reproduces every mask exactly
 * (tools/fixtures_spanbert.py holds one). */
#include "zoo/zoo.h"

#include <string.h>

/* The seed's candidate list `cand_indexes`. The algorithm only reads each
 * entry's first index and its length, so that is all we keep. */
typedef struct Candidates {
    int64_t *first;       /* (n) cand[i][0] */
    int64_t *count;       /* (n) len(cand[i]) */
    int64_t n;
} Candidates;

static bool is_cls_or_sep(const BertConfig *cfg, int32_t id)
{
    return id == cfg->cls_token_id || id == cfg->sep_token_id;
}

/* [CLS]/[SEP] are skipped; a continuation joins the last word; a word start
 * opens a new word; excluded tokens (and a continuation with no word before
 * it) are skipped. A skipped token does not end a word: "a , ##b" gives
 * the candidate [a, ##b], as the seed. */
static Candidates find_candidates(const BertConfig *cfg, const int32_t *tokens,
                                  const int32_t *kinds, int64_t l, Arena *scratch)
{
    Candidates c = {bertc_arena_alloc(scratch, sizeof(int64_t) * (size_t)(l ? l : 1)),
                    bertc_arena_alloc(scratch, sizeof(int64_t) * (size_t)(l ? l : 1)), 0};
    for (int64_t i = 0; i < l; i++) {
        if (is_cls_or_sep(cfg, tokens[i]))
            continue;
        if (c.n > 0 && kinds[i] == TOKEN_CONTINUATION) {
            c.count[c.n - 1]++;
        } else if (kinds[i] == TOKEN_WORD_START) {
            c.first[c.n] = i;
            c.count[c.n] = 1;
            c.n++;
        }
    }
    return c;
}

/* Draw 1: the span length, Geo(p) clipped to [1, cap]. */
static int64_t draw_span_length(const SpanMaskingConfig *mc, Rng *rng)
{
    int64_t span = bertc_rng_geometric(rng, mc->span_probability);
    if (span > mc->max_span_length_cap)
        span = mc->max_span_length_cap;
    return span < 1 ? 1 : span;
}

int bertc_span_mask_row(const BertConfig *cfg, const int32_t *tokens, const int32_t *kinds, int64_t l,
                  Rng *rng, Arena *scratch, int32_t *raw_mask, BertcError *err)
{
    SpanBertKeys keys = bertc_spanbert_keys(cfg);
    const SpanMaskingConfig *mc = &keys.masking;
    Candidates cand = find_candidates(cfg, tokens, kinds, l, scratch);
    bool *covered = bertc_arena_calloc(scratch, (size_t)(l ? l : 1), sizeof(bool));
    /* floor in double, as Python's int(masking_budget * l) */
    int64_t budget = (int64_t)(mc->masking_budget * (double)l);
    if (budget > 0 && cand.n == 0)
        return bertc_errorf(err, "a budget of %lld tokens but no span candidate (every token "
                            "is [CLS]/[SEP], excluded or a continuation)", (long long)budget);
    for (long draws = 0; budget > 0; draws++) {
        if (draws == SPAN_MASKING_MAX_DRAWS)
            return bertc_errorf(err, "%ld draws (the limit SPAN_MASKING_MAX_DRAWS) left %lld "
                                "of the budget unspent: no candidate can start a span",
                                draws, (long long)budget);
        int64_t span = draw_span_length(mc, rng);
        int64_t src = bertc_rng_randint(rng, 0, cand.n - 1);      /* draw 2, always drawn */
        if (span > budget) {
            if (budget >= 5)
                continue;
            span = budget;         /* the seed: a small rest is spent in one span */
        }
        if (cand.first[src] + span > l - 1)                  /* past the last token */
            continue;
        if (cand.count[src] > span)                          /* the word would not fit */
            continue;
        for (int64_t pos = cand.first[src]; span > 0 && !covered[pos]; pos++) {
            covered[pos] = true;     /* a covered position ends the span early */
            span--;
            budget--;
        }
    }
    for (int64_t t = 0; t < l; t++)
        raw_mask[t] = covered[t];
    return 0;
}

/* SpanCollator.get_mask_tokens: never predict a special token or padding. */
static bool is_special(const BertConfig *cfg, int32_t id)
{
    SpanBertKeys keys = bertc_spanbert_keys(cfg);
    const SpanMaskingConfig *mc = &keys.masking;
    if (id == cfg->pad_token_id || id == cfg->unk_token_id || id == cfg->mask_token_id ||
        is_cls_or_sep(cfg, id))
        return true;
    for (int i = 0; i < mc->special_token_ids.n; i++)
        if (id == mc->special_token_ids.ids[i])
            return true;
    return false;
}

/* mask_labels, labels and the masked input_ids from raw_mask_labels. */
static void apply_mask(const BertConfig *cfg, const ITensor *ids, SpanMasking *out)
{
    for (int64_t i = 0; i < ids->numel; i++) {
        int32_t id = ids->data[i];
        bool masked = out->raw_mask_labels.data[i] && !is_special(cfg, id);
        out->mask_labels.data[i] = masked;
        out->labels.data[i] = masked ? id : -100;
        out->input_ids.data[i] = masked ? cfg->mask_token_id : id;
    }
}

int bertc_span_masking_rng(const BertConfig *cfg, const ITensor *original_input_ids,
                     const ITensor *token_kinds, const ITensor *lengths, Rng *rng,
                     Arena *arena, SpanMasking *out, BertcError *err)
{
    int64_t B = original_input_ids->shape[0], S = original_input_ids->shape[1];
    const int64_t *bs = original_input_ids->shape;
    out->raw_mask_labels = bertc_itensor_new(arena, 2, bs);        /* padding stays 0 */
    out->mask_labels = bertc_itensor_new(arena, 2, bs);
    out->input_ids = bertc_itensor_new(arena, 2, bs);
    out->labels = bertc_itensor_new(arena, 2, bs);
    for (int64_t b = 0; b < B; b++) {
        const int32_t *row = original_input_ids->data + b * S;
        BertcError why;
        if (bertc_span_mask_row(cfg, row, token_kinds->data + b * S, lengths->data[b], rng, arena,
                          out->raw_mask_labels.data + b * S, &why) != 0)
            return bertc_errorf(err, "span masking of row %lld (length %d): %s", (long long)b,
                                (int)lengths->data[b], why.msg);
    }
    apply_mask(cfg, original_input_ids, out);
    return 0;
}

int bertc_span_masking(const BertConfig *cfg, const ITensor *original_input_ids,
                 const ITensor *token_kinds, const ITensor *lengths, Arena *arena,
                 SpanMasking *out, BertcError *err)
{
    Rng rng = bertc_rng_seed(bertc_spanbert_keys(cfg).masking.seed);
    return bertc_span_masking_rng(cfg, original_input_ids, token_kinds, lengths, &rng, arena, out,
                            err);
}
