/* zoo/train/pretrain_mask.c — what a pretraining batch hides from the model
 * (zoo/train/pretrain.h, bertc_pretrain_mask_row).
 *
 * BERT's masked language model (Devlin et al. 2019, section 3.1; Hugging
 * Face's DataCollatorForLanguageModeling.torch_mask_tokens):
 *
 *     pick   each real token with probability p = 0.15      (never [CLS], [SEP], [PAD])
 *     then   a picked token becomes [MASK]     with probability 0.8,
 *                           a random token     with probability 0.1,
 *                           stays as it was    with probability 0.1;
 *     labels the original id at the picked positions, -100 elsewhere.
 *
 * The random tenth keeps the model from learning that only [MASK] positions
 * matter; the unchanged tenth makes it keep a good vector for every token.
 *
 * Whole-word masking (DataCollatorForWholeWordMask, BERT's 2019 update):
 * a word is a token and the "##" pieces after it; words are shuffled and
 * taken whole while the tokens taken stay within round(p * candidates),
 * so that the model cannot guess "##ing" from "play" beside it. */
#include "zoo/train/pretrain.h"

#include <math.h>

static bool is_special(const Tokenizer *tok, int32_t id)
{
    return id == tok->cls_id || id == tok->sep_id || id == tok->pad_id;
}

/* BERT's 80/10/10 on one picked position. */
static void corrupt(const MlmMasking *mm, int32_t *id, Rng *rng)
{
    double r = bertc_rng_uniform(rng);
    if (r < 0.8)
        *id = mm->tok->mask_id;
    else if (r < 0.9)
        *id = (int32_t)bertc_rng_randint(rng, mm->first_random, mm->tok->V - 1);
}

static int64_t mask_tokens(const MlmMasking *mm, int32_t *ids, int64_t l, int32_t *labels,
                           Rng *rng)
{
    int64_t n = 0;
    for (int64_t t = 0; t < l; t++) {
        if (is_special(mm->tok, ids[t]) || bertc_rng_uniform(rng) >= mm->probability)
            continue;
        labels[t] = ids[t];
        corrupt(mm, &ids[t], rng);
        n++;
    }
    return n;
}

/* Whole words: start[w] is the first token of word w, words end where the
 * next begins (or at a special token). */
static int64_t mask_words(const MlmMasking *mm, int32_t *ids, int64_t l, int32_t *labels,
                          Rng *rng, int32_t *work)
{
    int32_t *start = work, *len = work + l;
    int64_t n_words = 0, candidates = 0;
    for (int64_t t = 0; t < l; t++) {
        if (is_special(mm->tok, ids[t]))
            continue;
        candidates++;
        bool joins = mm->continuation[ids[t]] && n_words > 0 &&
                     start[n_words - 1] + len[n_words - 1] == t;
        if (joins) {
            len[n_words - 1]++;
        } else {
            start[n_words] = (int32_t)t;
            len[n_words++] = 1;
        }
    }
    /* Fisher-Yates, as random.shuffle(cand_indexes) */
    for (int64_t i = n_words - 1; i > 0; i--) {
        int64_t j = bertc_rng_randint(rng, 0, i);
        int32_t s = start[i], k = len[i];
        start[i] = start[j];
        len[i] = len[j];
        start[j] = s;
        len[j] = k;
    }
    int64_t budget = (int64_t)llround(mm->probability * (double)candidates), n = 0;
    if (budget < 1 && candidates > 0)
        budget = 1;
    for (int64_t w = 0; w < n_words && n < budget; w++) {
        if (n + len[w] > budget)
            continue;
        for (int32_t k = 0; k < len[w]; k++) {
            int64_t t = start[w] + k;
            labels[t] = ids[t];
            corrupt(mm, &ids[t], rng);
        }
        n += len[w];
    }
    return n;
}

int64_t bertc_pretrain_mask_row(const MlmMasking *mm, int32_t *ids, int64_t l, int32_t *labels,
                                Rng *rng, int32_t *work)
{
    for (int64_t t = 0; t < l; t++)
        labels[t] = -100;
    return mm->whole_words ? mask_words(mm, ids, l, labels, rng, work)
                           : mask_tokens(mm, ids, l, labels, rng);
}
