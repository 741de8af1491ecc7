/* zoo/models/span_masking.c — SpanBERT's span masking (Joshi et al. 2020, §3.1),
 * in two styles (config.json "masking": {"style": ...}).
 *
 * "seed" (the default): the seed's SpanCollator (SPEC §6.7.2):
 *   - candidates are whole words: a word start and its "##" continuations;
 *   - the budget is floor(masking_budget · l) tokens (15 % in the paper);
 *   - span lengths follow Geo(p = 0.2) clipped to [1, 10], in tokens;
 *   - a span starts at a random candidate and covers consecutive positions;
 *   - every covered token becomes [MASK] (no 80/10/10 split).
 *
 * "original": the paper, as facebookresearch/SpanBERT does it
 * (pretraining/fairseq/data/masking.py, PairWithSpanMaskingScheme.mask and
 * span_masking with --replacement-method span):
 *   - the sentence is the block between [CLS] and [SEP]: the row's n tokens
 *     other than [CLS]/[SEP] (the original masks the block, then adds them);
 *   - the budget is ceil(masking_budget · n) tokens;
 *   - a span length ℓ is counted in WORDS, ℓ ~ p(1-p)^(ℓ-1) / Z on [1, 10]
 *     (the geometric truncated to [1, max_span_length_cap] and renormalised);
 *   - an anchor token is drawn uniformly (redrawn if already masked); the
 *     span is the anchor's whole word and the ℓ - 1 words after it;
 *   - each merged span is replaced as a unit: one U per span, U < 0.8 all
 *     [MASK], U < 0.9 all random tokens, else all kept (80/10/10 per span).
 *   The original stops mid-word when the budget runs out; bertc completes
 *   the word, as the paper says (§3.1: complete words only), so a row
 *   may exceed the budget by less than one word. Its random token comes
 *   from the corpus' token stream; here from the row's own block.
 *
 * The randomness is SplitMix64 (SPEC §6.7.1), one stream for the batch, so a
 * Python implementation with the same seed reproduces every mask exactly
 * (tools/fixtures_spanbert.py holds one of each style). */
#include "zoo/zoo.h"
#include "zoo/models/spanbert_internal.h"

#include <math.h>
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

static int mask_row_original(const BertConfig *cfg, const int32_t *tokens, const int32_t *kinds,
                             int64_t l, Rng *rng, Arena *scratch, int32_t *raw_mask,
                             BertcError *err);

int bertc_span_mask_row(const BertConfig *cfg, const int32_t *tokens, const int32_t *kinds, int64_t l,
                  Rng *rng, Arena *scratch, int32_t *raw_mask, BertcError *err)
{
    SpanBertKeys keys = bertc_spanbert_keys(cfg);
    const SpanMaskingConfig *mc = &keys.masking;
    if (mc->style == SPAN_MASKING_ORIGINAL)
        return mask_row_original(cfg, tokens, kinds, l, rng, scratch, raw_mask, err);
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

/* ---- masking.style "original": the paper's masking --------------------- */

/* The block the original masks: the row's n tokens other than [CLS]/[SEP],
 * at[j] their row positions, starts[j] whether token j opens a word (every
 * kind but a "##" continuation: the original has no excluded tokens). */
typedef struct Block {
    int64_t *at;          /* (n) row position of block token j */
    bool *starts;         /* (n) ParagraphInfo.get_word_piece_map */
    int64_t n;
} Block;

static Block find_block(const BertConfig *cfg, const int32_t *tokens, const int32_t *kinds,
                        int64_t l, Arena *scratch)
{
    Block b = {bertc_arena_alloc(scratch, sizeof(int64_t) * (size_t)(l ? l : 1)),
               bertc_arena_alloc(scratch, sizeof(bool) * (size_t)(l ? l : 1)), 0};
    for (int64_t t = 0; t < l; t++) {
        if (is_cls_or_sep(cfg, tokens[t]))
            continue;
        b.at[b.n] = t;
        b.starts[b.n] = kinds[t] != TOKEN_CONTINUATION;
        b.n++;
    }
    return b;
}

/* get_word_start: back to the token that opens j's word (or 0). */
static int64_t word_start(const Block *b, int64_t j)
{
    while (j > 0 && !b->starts[j])
        j--;
    return j;
}

/* get_word_end: one past j's word, i.e. the next word start (or n). */
static int64_t word_end(const Block *b, int64_t j)
{
    int64_t r = j + 1;
    while (r < b->n && !b->starts[r])
        r++;
    return r;
}

/* P(k) = w_k / Z, w_k = p(1-p)^(k-1), k in [1, cap] (len_distrib); drawn as
 * np.random.choice does, the first k whose cumulative P exceeds U. The sum
 * runs left to right so that Python's loop gives the same doubles. */
int64_t bertc_span_length_words(const SpanMaskingConfig *mc, Rng *rng)
{
    double p = mc->span_probability, z = 0.0, cum = 0.0;
    int64_t cap = mc->max_span_length_cap;
    for (int64_t k = 1; k <= cap; k++)
        z += p * pow(1.0 - p, (double)(k - 1));
    double u = bertc_rng_uniform(rng);
    for (int64_t k = 1; k < cap; k++) {
        cum += p * pow(1.0 - p, (double)(k - 1)) / z;
        if (u < cum)
            return k;
    }
    return cap;
}

/* Covers the word [left, right) of the block; returns how many were new. */
static int64_t cover_word(bool *covered, int64_t left, int64_t right)
{
    int64_t added = 0;
    for (int64_t j = left; j < right; j++) {
        added += !covered[j];
        covered[j] = true;
    }
    return added;
}

/* PairWithSpanMaskingScheme.mask on one row (words completed, see the file
 * head): until ceil(budget · n) block tokens are covered, draw ℓ words and
 * an anchor; a covered anchor is redrawn; else cover the anchor's word and
 * the words after it, up to ℓ words, the block's end or the budget. */
static int mask_row_original(const BertConfig *cfg, const int32_t *tokens, const int32_t *kinds,
                             int64_t l, Rng *rng, Arena *scratch, int32_t *raw_mask,
                             BertcError *err)
{
    SpanBertKeys keys = bertc_spanbert_keys(cfg);
    Block b = find_block(cfg, tokens, kinds, l, scratch);
    bool *covered = bertc_arena_calloc(scratch, (size_t)(b.n ? b.n : 1), sizeof(bool));
    /* ceil in double, as Python's math.ceil(sent_length * mask_ratio) */
    int64_t budget = (int64_t)ceil(keys.masking.masking_budget * (double)b.n), count = 0;
    for (long draws = 0; count < budget; draws++) {
        if (draws == SPAN_MASKING_MAX_DRAWS)
            return bertc_errorf(err, "%ld draws (the limit SPAN_MASKING_MAX_DRAWS) left %lld "
                                "of the budget unspent", draws, (long long)(budget - count));
        int64_t words = bertc_span_length_words(&keys.masking, rng);     /* draw 1 */
        int64_t anchor = bertc_rng_randint(rng, 0, b.n - 1);             /* draw 2 */
        if (covered[anchor])
            continue;
        int64_t right = word_end(&b, anchor);
        count += cover_word(covered, word_start(&b, anchor), right);
        for (int64_t w = 1; w < words && right < b.n && count < budget; w++) {
            int64_t left = right;
            right = word_end(&b, left);
            count += cover_word(covered, left, right);
        }
    }
    for (int64_t t = 0; t < l; t++)
        raw_mask[t] = 0;
    for (int64_t j = 0; j < b.n; j++)
        raw_mask[b.at[j]] = covered[j];
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

/* mask_labels, labels and the masked input_ids of row b (S positions, the
 * padding too) from raw_mask_labels. */
static void apply_mask(const BertConfig *cfg, const ITensor *ids, int64_t b, SpanMasking *out)
{
    int64_t S = ids->shape[1];
    for (int64_t i = b * S; i < (b + 1) * S; i++) {
        int32_t id = ids->data[i];
        bool masked = out->raw_mask_labels.data[i] && !is_special(cfg, id);
        out->mask_labels.data[i] = masked;
        out->labels.data[i] = masked ? id : -100;
        out->input_ids.data[i] = masked ? cfg->mask_token_id : id;
    }
}

/* span_masking(replacement='span') on row b, after apply_mask: each merged
 * span (a maximal run of covered block tokens) draws one U: U < 0.8 keeps
 * the [MASK]s, U < 0.9 puts a random token at each of its masked positions
 * (one randint each, a token of the row's block), else the originals. */
static void replace_row(const BertConfig *cfg, const ITensor *ids, int64_t b, const int32_t *kinds,
                        int64_t l, Rng *rng, Arena *scratch, SpanMasking *out)
{
    int64_t S = ids->shape[1];
    const int32_t *row = ids->data + b * S;
    Block blk = find_block(cfg, row, kinds, l, scratch);
    const int32_t *raw = out->raw_mask_labels.data + b * S;
    int32_t *input = out->input_ids.data + b * S;
    const int32_t *masked = out->mask_labels.data + b * S;
    for (int64_t j = 0; j < blk.n; j++) {
        if (!raw[blk.at[j]] || (j > 0 && raw[blk.at[j - 1]]))
            continue;                                   /* not the start of a span */
        double u = bertc_rng_uniform(rng);
        for (int64_t k = j; k < blk.n && raw[blk.at[k]]; k++) {
            int64_t t = blk.at[k];
            if (!masked[t] || u < 0.8)
                continue;
            input[t] = u < 0.9 ? row[blk.at[bertc_rng_randint(rng, 0, blk.n - 1)]] : row[t];
        }
    }
}

int bertc_span_masking_rng(const BertConfig *cfg, const ITensor *original_input_ids,
                     const ITensor *token_kinds, const ITensor *lengths, Rng *rng,
                     Arena *arena, SpanMasking *out, BertcError *err)
{
    int64_t B = original_input_ids->shape[0], S = original_input_ids->shape[1];
    const int64_t *bs = original_input_ids->shape;
    bool original = bertc_spanbert_keys(cfg).masking.style == SPAN_MASKING_ORIGINAL;
    out->raw_mask_labels = bertc_itensor_new(arena, 2, bs);        /* padding stays 0 */
    out->mask_labels = bertc_itensor_new(arena, 2, bs);
    out->input_ids = bertc_itensor_new(arena, 2, bs);
    out->labels = bertc_itensor_new(arena, 2, bs);
    for (int64_t b = 0; b < B; b++) {
        const int32_t *row = original_input_ids->data + b * S, *kinds = token_kinds->data + b * S;
        BertcError why;
        if (bertc_span_mask_row(cfg, row, kinds, lengths->data[b], rng, arena,
                          out->raw_mask_labels.data + b * S, &why) != 0)
            return bertc_errorf(err, "span masking of row %lld (length %d): %s", (long long)b,
                                (int)lengths->data[b], why.msg);
        apply_mask(cfg, original_input_ids, b, out);
        if (original)      /* the row's replacement draws follow its mask draws */
            replace_row(cfg, original_input_ids, b, kinds, lengths->data[b], rng, arena, out);
    }
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
