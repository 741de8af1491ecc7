/* examples/absa.c — targeted aspect-based sentiment, SentiHood style, with
 * CGBERT or QACGBERT (`bertc train absa [--model qacgbert]`), trained from
 * scratch (about two CPU minutes) on sentences from a small grammar. Results
 * and what they show: docs/examples/absa.md.
 *
 * The task (Wu & Ong 2021 evaluate on SentiHood): a sentence talks about
 * LOCATION1 and maybe LOCATION2. For each of 8 contexts
 *
 *     context_id = 4 · target + aspect     target 0 LOCATION1, 1 LOCATION2
 *                                          aspect 0 general, 1 price,
 *                                                 2 transit-location, 3 safety
 *
 * the model answers None (not discussed), Positive or Negative. Each of the
 * 8 (sentence, context) pairs is one input: the context goes in as
 * context_ids, which steers every attention layer, and also as an auxiliary
 * sentence, [CLS] sentence [SEP] LOCATION2 safety [SEP] (Sun et al. 2019's
 * NLI-M input for SentiHood). Trained from scratch, the context id alone
 * was learnt too slowly for a few-minute run: held-out macro-F1 stayed at
 * the baseline for 500 of 800 steps and ended at 0.37.
 *
 * The grammar (generate_sentence; the tables below hold the words):
 *
 *   sentence := opinion(L1) "."                                       3/12
 *             | opinion(L1) JOIN opinion(L2) "."                      3/12
 *             | opinion(L1) JOIN opinion-about-"it"(L1) "."           1/12
 *             | both "."                                              1/12
 *             | mention(L1) ". " (opinion(L2) | opinion-about-"It"(L1)) "."  1/12
 *             | opinion(L1) JOIN aside "."  or  aside JOIN opinion(L1) "."   1/12
 *             | mention(L1) "."  |  mention(L1) JOIN aside "."        2/12
 *   opinion(T) := T COPULA PHRASE            "LOCATION1 feels safe at night"
 *             | T COPULA-not PHRASE          "LOCATION1 isn't cheap"  (flips it)
 *             | T COPULA PHRASE and|but [not] PHRASE   two aspects of T
 *             | TEMPLATE(T)                  "rents in LOCATION1 are sky high"
 *   both     := L1 "and" L2 "are both" PHRASE | "neither" L1 "nor" L2 "is" PHRASE
 *   mention  := "I lived in L1 for two years", ...          (no opinion)
 *   aside    := "the weather was awful", ...    (an opinion, not on a location)
 *   JOIN     := ", but" | ", whereas" | ", while" | "although" A "," B
 *                                          when the two polarities differ,
 *               ", and" | "and" | ";"      when they agree.
 *
 * A (target, aspect) gets at most one opinion per sentence; every context
 * the sentence gives no opinion on is None. LOCATION1 is always the first
 * location named, as in SentiHood. 1,000 distinct sentences: the first 800
 * (6,400 pairs) train, the last 200 (1,600 pairs) are held out, so no
 * sentence is in both.
 *
 * Output: held-out accuracy and macro-F1 over the 3 classes against the
 * majority class (None), macro-F1 per aspect, OUT/loss.svg, OUT/attention.svg
 * (last layer, for one sentence and context), for QACGBERT also
 * OUT/quasi_attention.svg, a checkpoint, and the trained model's answers for
 * that sentence in all 8 contexts. OUT defaults to build/absa/MODEL; the
 * standard training flags of zoo/train/train.h apply. */
#include "examples/example_util.h"
#include "zoo/pictures/svg.h"
#include "zoo/train/train.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VOCAB "data/bert-base-uncased-vocab.txt"
#define MAX_LEN 48                  /* S; the longest generated sentence has 35 tokens */
#define N_SENTENCES 1000
#define N_TRAIN 800                 /* sentences 0..799 train, 800..999 are held out */
#define N_TARGETS 2
#define N_ASPECTS 4
#define N_CONTEXTS (N_TARGETS * N_ASPECTS)
#define N_CLASSES 3
#define TEXT_MAX 256                /* a sentence: two clauses and the words joining them */
#define CLAUSE_MAX 120

enum { GENERAL, PRICE, TRANSIT, SAFETY };
enum { NONE, POSITIVE, NEGATIVE };

static const char *const targets[N_TARGETS] = {"LOCATION1", "LOCATION2"};
static const char *const aspects[N_ASPECTS] = {"general", "price", "transit-location",
                                               "safety"};
/* The aspects in the auxiliary sentence: "transit" alone, as "location"
 * already names the targets. */
static const char *const aspect_words[N_ASPECTS] = {"general", "price", "transit", "safety"};
static const char *const classes[N_CLASSES] = {"None", "Positive", "Negative"};

/* ------------------------------------------------------------------------ */
/* The words of the grammar                                                  */
/* ------------------------------------------------------------------------ */

/* What follows a copula, "LOCATION1 is ___". ADJ: also reads well after
 * "feels", "looks" and "are both"; NEG: reads well after "not". */
enum { ADJ = 1, NEG = 2 };

typedef struct Phrase {
    const char *text;
    int aspect, polarity, flags;
} Phrase;

static const Phrase phrases[] = {
    {"lovely", GENERAL, POSITIVE, ADJ | NEG},
    {"a great place to live", GENERAL, POSITIVE, NEG},
    {"charming", GENERAL, POSITIVE, ADJ | NEG},
    {"really friendly", GENERAL, POSITIVE, ADJ},
    {"a fun place to live", GENERAL, POSITIVE, NEG},
    {"boring", GENERAL, NEGATIVE, ADJ | NEG},
    {"a bit of a dump", GENERAL, NEGATIVE, 0},
    {"grim", GENERAL, NEGATIVE, ADJ},
    {"depressing", GENERAL, NEGATIVE, ADJ | NEG},
    {"run down", GENERAL, NEGATIVE, ADJ | NEG},
    {"cheap", PRICE, POSITIVE, ADJ | NEG},
    {"affordable", PRICE, POSITIVE, ADJ | NEG},
    {"good value", PRICE, POSITIVE, NEG},
    {"reasonably priced", PRICE, POSITIVE, ADJ | NEG},
    {"cheap to rent in", PRICE, POSITIVE, NEG},
    {"expensive", PRICE, NEGATIVE, ADJ | NEG},
    {"overpriced", PRICE, NEGATIVE, ADJ | NEG},
    {"pricey", PRICE, NEGATIVE, ADJ | NEG},
    {"too expensive for students", PRICE, NEGATIVE, 0},
    {"a rip off", PRICE, NEGATIVE, 0},
    {"well connected", TRANSIT, POSITIVE, ADJ | NEG},
    {"close to the tube", TRANSIT, POSITIVE, NEG},
    {"handy for the station", TRANSIT, POSITIVE, NEG},
    {"convenient for commuting", TRANSIT, POSITIVE, ADJ | NEG},
    {"near good bus routes", TRANSIT, POSITIVE, NEG},
    {"badly connected", TRANSIT, NEGATIVE, ADJ | NEG},
    {"far from everything", TRANSIT, NEGATIVE, NEG},
    {"a long way from the tube", TRANSIT, NEGATIVE, 0},
    {"awkward to get to", TRANSIT, NEGATIVE, NEG},
    {"poorly served by buses", TRANSIT, NEGATIVE, 0},
    {"safe", SAFETY, POSITIVE, ADJ | NEG},
    {"safe at night", SAFETY, POSITIVE, ADJ | NEG},
    {"safe for kids", SAFETY, POSITIVE, ADJ | NEG},
    {"crime free", SAFETY, POSITIVE, NEG},
    {"a safe place to bring up kids", SAFETY, POSITIVE, NEG},
    {"unsafe at night", SAFETY, NEGATIVE, ADJ},
    {"dangerous", SAFETY, NEGATIVE, ADJ | NEG},
    {"a bit dodgy", SAFETY, NEGATIVE, ADJ},
    {"rough", SAFETY, NEGATIVE, ADJ | NEG},
    {"sketchy after dark", SAFETY, NEGATIVE, ADJ},
};

/* "T ___ PHRASE", plain and negated. */
typedef struct Copula {
    const char *plain, *negated;
    bool adjectives_only;
} Copula;

static const Copula copulas[] = {
    {"is", "is not", false},         {"is", "isn't", false},
    {"seems", "doesn't seem", false}, {"feels", "does not feel", true},
    {"looks", "doesn't look", true},  {"has always been", "has never been", false},
    {"is really", "is not really", false},
};

/* Whole clauses about one location (%s). "I would not walk ..." is negative
 * although it has a "not": negation is no surface cue. */
typedef struct Template {
    const char *text;
    int aspect, polarity;
} Template;

static const Template templates[] = {
    {"I love %s", GENERAL, POSITIVE},
    {"I really enjoyed living in %s", GENERAL, POSITIVE},
    {"%s has a great community feel", GENERAL, POSITIVE},
    {"I hate %s", GENERAL, NEGATIVE},
    {"I would never live in %s", GENERAL, NEGATIVE},
    {"%s has nothing going for it", GENERAL, NEGATIVE},
    {"rents in %s are low", PRICE, POSITIVE},
    {"you get a lot for your money in %s", PRICE, POSITIVE},
    {"%s has cheap rents", PRICE, POSITIVE},
    {"rents in %s are sky high", PRICE, NEGATIVE},
    {"you pay a fortune to live in %s", PRICE, NEGATIVE},
    {"%s has crazy rents", PRICE, NEGATIVE},
    {"getting into town from %s is easy", TRANSIT, POSITIVE},
    {"%s has great transport links", TRANSIT, POSITIVE},
    {"there is a station right in %s", TRANSIT, POSITIVE},
    {"getting anywhere from %s takes ages", TRANSIT, NEGATIVE},
    {"%s has terrible transport links", TRANSIT, NEGATIVE},
    {"the buses in %s never come", TRANSIT, NEGATIVE},
    {"I feel safe walking around %s at night", SAFETY, POSITIVE},
    {"there is very little crime in %s", SAFETY, POSITIVE},
    {"%s has a low crime rate", SAFETY, POSITIVE},
    {"I would not walk around %s at night", SAFETY, NEGATIVE},
    {"there is a lot of crime in %s", SAFETY, NEGATIVE},
    {"%s has a high crime rate", SAFETY, NEGATIVE},
};

/* A location named without an opinion (%s), and opinions on other things:
 * distractors, every context stays None. */
static const char *const mentions[] = {
    "I lived in %s for two years", "my sister just moved to %s",
    "we are thinking of moving to %s", "I grew up near %s", "my office is in %s",
};

static const char *const asides[] = {
    "the weather was awful", "my landlord was really friendly", "the flat itself was tiny",
    "the estate agent was useless", "the garden is lovely", "my job is boring",
};

#define COUNT(table) ((int)(sizeof(table) / sizeof((table)[0])))
#define PICK(r, table) (&(table)[bertc_rng_randint(r, 0, COUNT(table) - 1)])

/* ------------------------------------------------------------------------ */
/* The generator                                                             */
/* ------------------------------------------------------------------------ */

typedef struct Sentence {
    char text[TEXT_MAX];
    int8_t label[N_CONTEXTS];       /* NONE, POSITIVE or NEGATIVE, by context id */
} Sentence;

/* A piece of a sentence and the polarity of its first opinion (NONE for
 * mentions and asides), which picks the word that joins two pieces. */
typedef struct Clause {
    char text[CLAUSE_MAX];
    int polarity;
} Clause;

static int flip(int polarity) { return polarity == POSITIVE ? NEGATIVE : POSITIVE; }

static bool is_free(const Sentence *s, int target, int aspect)
{
    return s->label[N_ASPECTS * target + aspect] == NONE;
}

static void opine(Sentence *s, int target, int aspect, int polarity)
{
    s->label[N_ASPECTS * target + aspect] = (int8_t)polarity;
}

/* A phrase with the wanted flags on an aspect `target` has no opinion on
 * yet (a sentence gives a target at most 4 opinions, so one exists). */
static const Phrase *pick_phrase(Rng *r, const Sentence *s, int target, int flags)
{
    for (;;) {
        const Phrase *p = PICK(r, phrases);
        if ((p->flags & flags) == flags && is_free(s, target, p->aspect))
            return p;
    }
}

/* "SUBJECT COPULA [not] PHRASE": one opinion on target. */
static void copula_clause(Rng *r, Sentence *s, int target, const char *subject, Clause *c)
{
    const Copula *cop = PICK(r, copulas);
    bool negate = bertc_rng_uniform(r) < 0.3;
    const Phrase *p = pick_phrase(r, s, target,
                                  (cop->adjectives_only ? ADJ : 0) | (negate ? NEG : 0));
    c->polarity = negate ? flip(p->polarity) : p->polarity;
    opine(s, target, p->aspect, c->polarity);
    snprintf(c->text, sizeof c->text, "%s %s %s", subject, negate ? cop->negated : cop->plain,
             p->text);
}

/* "SUBJECT COPULA PHRASE and|but [not] PHRASE": two aspects of target. */
static void pair_clause(Rng *r, Sentence *s, int target, const char *subject, Clause *c)
{
    const Copula *cop = PICK(r, copulas);
    int adj = cop->adjectives_only ? ADJ : 0;
    const Phrase *first = pick_phrase(r, s, target, adj);
    opine(s, target, first->aspect, first->polarity);
    bool negate = bertc_rng_uniform(r) < 0.3;
    const Phrase *second = pick_phrase(r, s, target, adj | (negate ? NEG : 0));
    int polarity = negate ? flip(second->polarity) : second->polarity;
    opine(s, target, second->aspect, polarity);
    c->polarity = first->polarity;
    snprintf(c->text, sizeof c->text, "%s %s %s %s %s%s", subject, cop->plain, first->text,
             polarity == first->polarity ? "and" : "but", negate ? "not " : "", second->text);
}

static void template_clause(Rng *r, Sentence *s, int target, Clause *c)
{
    const Template *t = PICK(r, templates);
    while (!is_free(s, target, t->aspect))
        t = PICK(r, templates);
    c->polarity = t->polarity;
    opine(s, target, t->aspect, t->polarity);
    snprintf(c->text, sizeof c->text, t->text, targets[target]);
}

/* One opinion clause on target; about "it" (the location just named) only
 * the copula forms read well. */
static void opinion_clause(Rng *r, Sentence *s, int target, bool as_it, Clause *c)
{
    const char *subject = as_it ? "it" : targets[target];
    switch (as_it ? 2 * bertc_rng_randint(r, 0, 1) : bertc_rng_randint(r, 0, 4)) {
    case 0:
    case 1: copula_clause(r, s, target, subject, c); break;
    case 2: pair_clause(r, s, target, subject, c); break;
    default: template_clause(r, s, target, c); break;
    }
}

/* "L1 and L2 are both PHRASE" or "neither L1 nor L2 is PHRASE": the same
 * opinion on both locations (called on a fresh sentence). */
static void both_clause(Rng *r, Sentence *s, Clause *c)
{
    bool neither = bertc_rng_uniform(r) < 0.4;
    const Phrase *p = pick_phrase(r, s, 0, neither ? NEG : ADJ);
    c->polarity = neither ? flip(p->polarity) : p->polarity;
    opine(s, 0, p->aspect, c->polarity);
    opine(s, 1, p->aspect, c->polarity);
    snprintf(c->text, sizeof c->text, neither ? "neither %s nor %s is %s" : "%s and %s are both %s",
             targets[0], targets[1], p->text);
}

static void mention_clause(Rng *r, Clause *c)
{
    snprintf(c->text, sizeof c->text, *PICK(r, mentions), targets[0]);
    c->polarity = NONE;
}

static void aside_clause(Rng *r, Clause *c)
{
    snprintf(c->text, sizeof c->text, "%s", *PICK(r, asides));
    c->polarity = NONE;
}

/* "A, but B" (or "although A, B", ...) when the polarities differ, "A, and
 * B" when they agree. */
static void join(Rng *r, Sentence *s, const Clause *a, const Clause *b)
{
    static const char *const contrast[] = {"%s, but %s.", "although %s, %s.", "%s, whereas %s.",
                                           "%s, while %s."};
    static const char *const agree[] = {"%s, and %s.", "%s and %s.", "%s; %s."};
    const char *fmt = a->polarity != b->polarity ? *PICK(r, contrast) : *PICK(r, agree);
    snprintf(s->text, sizeof s->text, fmt, a->text, b->text);
}

/* Upper-case the first letter of each sentence ("x. y." -> "X. Y."). */
static void capitalise(char *text)
{
    for (char *p = text; *p; p++)
        if (p == text || (p >= text + 2 && p[-1] == ' ' && p[-2] == '.'))
            *p = (char)toupper((unsigned char)*p);
}

/* "A." or, with b, "A. B.". */
static void full_stops(Sentence *s, const Clause *a, const Clause *b)
{
    if (b)
        snprintf(s->text, sizeof s->text, "%s. %s.", a->text, b->text);
    else
        snprintf(s->text, sizeof s->text, "%s.", a->text);
}

/* One sentence of the grammar at the top of the file, with its 8 labels. */
static void generate_sentence(Rng *r, Sentence *s)
{
    memset(s, 0, sizeof *s);
    Clause a, b;
    int64_t plan = bertc_rng_randint(r, 0, 11), about = bertc_rng_randint(r, 0, 1);
    if (plan <= 2) {                                   /* one opinion */
        opinion_clause(r, s, 0, false, &a);
        full_stops(s, &a, NULL);
    } else if (plan <= 6) {                            /* two; plan 6: L1 then "it" */
        opinion_clause(r, s, 0, false, &a);
        opinion_clause(r, s, plan == 6 ? 0 : 1, plan == 6, &b);
        join(r, s, &a, &b);
    } else if (plan == 7) {                            /* both locations */
        both_clause(r, s, &a);
        full_stops(s, &a, NULL);
    } else if (plan == 8) {                            /* a mention, then an opinion */
        mention_clause(r, &a);
        opinion_clause(r, s, (int)about, about == 0, &b);
        full_stops(s, &a, &b);
    } else if (plan == 9) {                            /* an opinion and an aside */
        opinion_clause(r, s, 0, false, &a);
        aside_clause(r, &b);
        join(r, s, about ? &a : &b, about ? &b : &a);
    } else {                                           /* distractors only */
        mention_clause(r, &a);
        aside_clause(r, &b);
        if (plan == 10)
            full_stops(s, &a, NULL);
        else
            join(r, s, &a, &b);
    }
    capitalise(s->text);
}

/* n distinct sentences: a repeat is drawn again, so no sentence can be in
 * both the training and the held-out part. */
static void generate(Sentence *s, int n, uint64_t seed)
{
    Rng r = bertc_rng_seed(seed);
    for (int i = 0; i < n; i++) {
        bool repeat;
        do {
            generate_sentence(&r, &s[i]);
            repeat = false;
            for (int j = 0; j < i && !repeat; j++)
                repeat = strcmp(s[i].text, s[j].text) == 0;
        } while (repeat);
    }
}

/* ------------------------------------------------------------------------ */
/* The data set: sentences tokenised once, pairs indexed                    */
/* ------------------------------------------------------------------------ */

/* Pair p is sentence p / 8 in context p % 8, encoded as
 * [CLS] sentence [SEP] auxiliary [SEP]; the training pairs are
 * 0..8·N_TRAIN−1. Scores are those of the latest evaluation. */
typedef struct Absa {
    int32_t *ids, *types, *mask;    /* (N_SENTENCES · N_CONTEXTS, S) */
    int8_t label[N_SENTENCES][N_CONTEXTS];
    int64_t confusion[N_ASPECTS][N_CLASSES][N_CLASSES];   /* [aspect][true][predicted] */
} Absa;

/* [CLS] sentence [SEP] auxiliary [SEP], the auxiliary sentence naming the
 * context ("LOCATION2 safety"), as Sun et al. 2019 do for SentiHood (NLI-M).
 * A sentence that would be cut is an error: the grammar must fit in S. */
static int encode_pair(const Tokenizer *tok, Arena *a, const char *text, int context,
                       int32_t max_len, bool pad, Encoding *enc, BertcError *err)
{
    char aux[64];
    snprintf(aux, sizeof aux, "%s %s", targets[context / N_ASPECTS],
             aspect_words[context % N_ASPECTS]);
    if (bertc_tokenizer_encode(tok, a, text, strlen(text), aux, strlen(aux), max_len, pad, enc,
                         err) != 0)
        return -1;
    if (enc->attention_mask[enc->S - 1] && enc->S == max_len)
        return bertc_errorf(err, "\"%s\" does not fit in %d tokens", text, max_len);
    return 0;
}

static int load_absa(const Tokenizer *tok, Arena *a, Absa *d, BertcError *err)
{
    Sentence *s = malloc(sizeof(Sentence) * N_SENTENCES);
    if (!s)
        return bertc_errorf(err, "out of memory for %d sentences", N_SENTENCES);
    generate(s, N_SENTENCES, 2021);
    size_t bytes = sizeof(int32_t) * N_SENTENCES * N_CONTEXTS * MAX_LEN;
    d->ids = bertc_arena_alloc(a, bytes);
    d->types = bertc_arena_alloc(a, bytes);
    d->mask = bertc_arena_alloc(a, bytes);
    Arena *scratch = bertc_arena_create("tokenize", 1 << 16);
    int rc = 0;
    for (int64_t p = 0; p < (int64_t)N_SENTENCES * N_CONTEXTS && rc == 0; p++) {
        const char *text = s[p / N_CONTEXTS].text;
        Encoding enc;
        bertc_arena_reset(scratch);
        rc = encode_pair(tok, scratch, text, (int)(p % N_CONTEXTS), MAX_LEN, true, &enc, err);
        memcpy(d->ids + p * MAX_LEN, enc.input_ids, sizeof(int32_t) * MAX_LEN);
        memcpy(d->types + p * MAX_LEN, enc.token_type_ids, sizeof(int32_t) * MAX_LEN);
        memcpy(d->mask + p * MAX_LEN, enc.attention_mask, sizeof(int32_t) * MAX_LEN);
        d->label[p / N_CONTEXTS][p % N_CONTEXTS] = s[p / N_CONTEXTS].label[p % N_CONTEXTS];
    }
    bertc_arena_destroy(scratch);
    free(s);
    return rc;
}

static int label_of(const Absa *d, int64_t pair)
{
    return d->label[pair / N_CONTEXTS][pair % N_CONTEXTS];
}

/* Real tokens of a pair: its mask is 1 for a prefix, then 0. */
static int64_t pair_length(const Absa *d, int64_t pair)
{
    int64_t len = 0;
    while (len < MAX_LEN && d->mask[pair * MAX_LEN + len])
        len++;
    return len;
}

/* pairs idx[0..n-1] -> input_ids, token_type_ids, attention_mask (B, S),
 * context_ids (B, 1), labels (B). S is the longest pair of the batch, not
 * MAX_LEN: about half the work on these short sentences. */
static int make_batch(void *ctx, const int64_t *idx, int64_t n, Graph *g, Batch *b,
                      int64_t *tokens, BertcError *err)
{
    (void)err;
    const Absa *d = ctx;
    int64_t S = 0;
    *tokens = 0;
    for (int64_t j = 0; j < n; j++) {
        int64_t len = pair_length(d, idx[j]);
        S = len > S ? len : S;
        *tokens += len;
    }
    int64_t bs[2] = {n, S}, b1[2] = {n, 1};
    ITensor ids = bertc_itensor_new(g->step, 2, bs), types = bertc_itensor_new(g->step, 2, bs);
    ITensor mask = bertc_itensor_new(g->step, 2, bs);
    ITensor context = bertc_itensor_new(g->step, 2, b1), labels = bertc_itensor_new(g->step, 1, &n);
    for (int64_t j = 0; j < n; j++) {
        int64_t pair = idx[j];
        size_t row = sizeof(int32_t) * (size_t)S;
        memcpy(ids.data + j * S, d->ids + pair * MAX_LEN, row);
        memcpy(types.data + j * S, d->types + pair * MAX_LEN, row);
        memcpy(mask.data + j * S, d->mask + pair * MAX_LEN, row);
        context.data[j] = (int32_t)(pair % N_CONTEXTS);
        labels.data[j] = label_of(d, pair);
    }
    bertc_batch_put_ids(b, "input_ids", ids);
    bertc_batch_put_ids(b, "token_type_ids", types);
    bertc_batch_put_ids(b, "attention_mask", mask);
    bertc_batch_put_ids(b, "context_ids", context);
    bertc_batch_put_ids(b, "labels", labels);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Scores                                                                    */
/* ------------------------------------------------------------------------ */

static double accuracy(const int64_t c[N_CLASSES][N_CLASSES])
{
    int64_t right = 0, all = 0;
    for (int t = 0; t < N_CLASSES; t++)
        for (int p = 0; p < N_CLASSES; p++) {
            all += c[t][p];
            right += t == p ? c[t][p] : 0;
        }
    return all ? (double)right / (double)all : 0;
}

/* The mean over the 3 classes of F1 = 2·TP / (2·TP + FP + FN), 0 for a
 * class nobody has or predicts. */
static double macro_f1(const int64_t c[N_CLASSES][N_CLASSES])
{
    double sum = 0;
    for (int k = 0; k < N_CLASSES; k++) {
        int64_t tp = c[k][k], fp = -c[k][k], fn = -c[k][k];
        for (int j = 0; j < N_CLASSES; j++) {
            fp += c[j][k];
            fn += c[k][j];
        }
        sum += tp ? 2.0 * (double)tp / (double)(2 * tp + fp + fn) : 0;
    }
    return sum / N_CLASSES;
}

/* The confusion matrix over every aspect. */
static void total_confusion(const Absa *d, int64_t c[N_CLASSES][N_CLASSES])
{
    memset(c, 0, sizeof(int64_t) * N_CLASSES * N_CLASSES);
    for (int a = 0; a < N_ASPECTS; a++)
        for (int t = 0; t < N_CLASSES; t++)
            for (int p = 0; p < N_CLASSES; p++)
                c[t][p] += d->confusion[a][t][p];
}

/* Macro-F1 over the held-out pairs (the engine's metric) and the mean loss,
 * in batches of 64; d->confusion keeps the details. */
static int evaluate(void *ctx, Model *m, Graph *g, double *metric, double *loss, BertcError *err)
{
    Absa *d = ctx;
    int64_t first = (int64_t)N_TRAIN * N_CONTEXTS;
    int64_t n_eval = (int64_t)(N_SENTENCES - N_TRAIN) * N_CONTEXTS;
    double loss_sum = 0;
    memset(d->confusion, 0, sizeof d->confusion);
    HeldOut h = held_out(first, n_eval, 64, "eval");
    while (held_out_next(&h, make_batch, d, m, g, err)) {
        const float *logits = bertc_outputs_get(&h.out, "logits")->value.data;
        for (int64_t j = 0; j < h.n; j++) {
            int64_t pair = h.row + j;
            d->confusion[pair % N_ASPECTS][label_of(d, pair)]
                        [example_argmax(logits + j * N_CLASSES, N_CLASSES)]++;
        }
        loss_sum += bertc_outputs_get(&h.out, "loss")->value.data[0] * (double)h.n;
    }
    if (h.failed)
        return -1;
    int64_t c[N_CLASSES][N_CLASSES];
    total_confusion(d, c);
    *metric = macro_f1(c);
    *loss = loss_sum / (double)n_eval;
    return 0;
}

/* Always answering the most frequent training label (None), scored on the
 * held-out pairs. */
static void majority_baseline(const Absa *d, double *acc, double *f1)
{
    int64_t count[N_CLASSES] = {0}, c[N_CLASSES][N_CLASSES] = {{0}};
    int majority = 0;
    for (int64_t p = 0; p < (int64_t)N_TRAIN * N_CONTEXTS; p++)
        count[label_of(d, p)]++;
    for (int k = 1; k < N_CLASSES; k++)
        majority = count[k] > count[majority] ? k : majority;
    for (int64_t p = (int64_t)N_TRAIN * N_CONTEXTS; p < (int64_t)N_SENTENCES * N_CONTEXTS; p++)
        c[label_of(d, p)][majority]++;
    *acc = accuracy(c);
    *f1 = macro_f1(c);
}

static void report(const Absa *d, const TrainResult *res)
{
    int64_t c[N_CLASSES][N_CLASSES];
    double base_acc, base_f1;
    total_confusion(d, c);
    majority_baseline(d, &base_acc, &base_f1);
    printf("held-out pairs: accuracy %.1f%%, macro-F1 %.3f (always None: accuracy %.1f%%, "
           "macro-F1 %.3f); trained in %.0f s at %.0f tokens/s\n",
           100 * accuracy(c), macro_f1(c), 100 * base_acc, base_f1, res->seconds,
           res->tokens_per_second);
    printf("macro-F1 by aspect:");
    for (int a = 0; a < N_ASPECTS; a++)
        printf(" %s %.3f", aspects[a], macro_f1(d->confusion[a]));
    printf("\n");
}

/* ------------------------------------------------------------------------ */
/* The model and the pictures                                                */
/* ------------------------------------------------------------------------ */

static int absa_config(const char *arch, const Tokenizer *tok, BertConfig *out, BertcError *err)
{
    BertConfig c;
    if (bertc_model_config_default(&c, arch, err) != 0)
        return -1;
    c.vocab_size = tok->V;          /* the whole bert-base-uncased vocabulary */
    c.hidden_size = 128;
    c.num_hidden_layers = 2;
    c.num_attention_heads = 4;
    c.intermediate_size = 256;
    c.max_position_embeddings = MAX_LEN;
    c.num_labels = N_CLASSES;
    c.problem_type = PROBLEM_SINGLE_LABEL;
    if (bertc_model_config_set(&c, "context_vocab_size", N_CONTEXTS, err) != 0)
        return -1;
    *out = c;
    return 0;
}

static const char CGBERT[] = "CGBertForSequenceClassification";
static const char QACGBERT[] = "QACGBertForSequenceClassification";

static bool is_qacgbert(const char *arch) { return strcmp(arch, QACGBERT) == 0; }

/* One sentence in one context through the model (eval mode): the class
 * probabilities; `out` keeps every output for the pictures. */
static int classify(Model *m, const Tokenizer *tok, const char *text, int context, Graph *g,
                    float *probs, Encoding *enc, Outputs *out, BertcError *err)
{
    bertc_ag_graph_reset(g);
    bertc_ag_set_training(g, false);
    if (encode_pair(tok, g->step, text, context, MAX_LEN, false, enc, err) != 0)
        return -1;
    int64_t shape[2] = {1, enc->S}, one[2] = {1, 1};
    ITensor context_ids = bertc_itensor_new(g->step, 2, one);
    context_ids.data[0] = context;
    Batch b;
    bertc_batch_init(&b, "sentence");
    bertc_batch_put_ids(&b, "input_ids", bertc_itensor_view(enc->input_ids, 2, shape));
    bertc_batch_put_ids(&b, "token_type_ids", bertc_itensor_view(enc->token_type_ids, 2, shape));
    bertc_batch_put_ids(&b, "attention_mask", bertc_itensor_view(enc->attention_mask, 2, shape));
    bertc_batch_put_ids(&b, "context_ids", context_ids);
    bertc_outputs_init(out);
    if (bertc_model_forward(m, g, &b, out, err) != 0)
        return -1;
    bertc_kernel_softmax_rows(probs, bertc_outputs_get(out, "logits")->value.data, 1, N_CLASSES);
    return 0;
}

/* Last layer's map `name` (1, nh, S, S) -> DIR/file.svg. */
static int draw(const char *dir, const char *file, const Model *m, const Tokenizer *tok,
                const Encoding *enc, const Outputs *out, const char *name, const char *title,
                BertcError *err)
{
    char key[64], path[BERTC_PATH_MAX];
    const char *labels[MAX_LEN];
    snprintf(key, sizeof key, "layers.%d.%s", m->cfg.num_hidden_layers - 1, name);
    const Var *v = bertc_outputs_get(out, key);
    for (int32_t t = 0; t < enc->S; t++)
        labels[t] = bertc_tokenizer_token(tok, enc->input_ids[t]);
    if (bertc_path_join(path, dir, file, "--out", err) != 0)
        return -1;
    return bertc_svg_attention(path, v->value.data, v->value.shape[1], enc->S, labels, title, err);
}

/* Λ⊙Qs lies in (−1, 1) and a heat map shows [0, 1]: the first nh maps are
 * the attention each head adds (max(Λ⊙Qs, 0)), the next nh the attention
 * it takes away (max(−Λ⊙Qs, 0)). */
static int draw_quasi(const char *dir, const Model *m, const Tokenizer *tok,
                      const Encoding *enc, Outputs *out, Graph *g, const char *title,
                      BertcError *err)
{
    char key[64];
    snprintf(key, sizeof key, "layers.%d.quasi_attention_prob", m->cfg.num_hidden_layers - 1);
    const Tensor *q = &bertc_outputs_get(out, key)->value;               /* (1, nh, S, S) */
    int64_t nh = q->shape[1], S = q->shape[2], shape[4] = {1, 2 * nh, S, S};
    Var *split = bertc_ag_tensor(g, 4, shape, false);
    for (int64_t i = 0; i < q->numel; i++) {
        split->value.data[i] = q->data[i] > 0 ? q->data[i] : 0;
        split->value.data[q->numel + i] = q->data[i] < 0 ? -q->data[i] : 0;
    }
    bertc_outputs_put(out, g, split, "layers.%d.quasi_split", m->cfg.num_hidden_layers - 1);
    return draw(dir, "quasi_attention.svg", m, tok, enc, out, "quasi_split", title, err);
}

/* The example sentence in all 8 contexts, then its pictures in the
 * context LOCATION2 / safety. */
static int show_sentence(Model *m, const Tokenizer *tok, const char *dir, BertcError *err)
{
    const char *text = "Although LOCATION1 is not expensive, LOCATION2 feels unsafe at night.";
    bool quasi = is_qacgbert(m->arch->name);
    const char *name = quasi ? "QACGBERT" : "CGBERT";
    int shown = N_ASPECTS * 1 + SAFETY;
    Graph *g = bertc_ag_graph_create(1 << 20, 0);
    float probs[N_CLASSES];
    Encoding enc;
    Outputs out;
    char title[256];
    int rc = 0;
    printf("\"%s\"\n", text);
    for (int k = 0; k < N_CONTEXTS && rc == 0; k++) {
        rc = classify(m, tok, text, k, g, probs, &enc, &out, err);
        int64_t best = example_argmax(probs, N_CLASSES);
        if (rc == 0)
            printf("  %s %-16s -> %-8s (%.0f%%)\n", targets[k / N_ASPECTS],
                   aspects[k % N_ASPECTS], classes[best], 100 * probs[best]);
    }
    if (rc == 0)
        rc = classify(m, tok, text, shown, g, probs, &enc, &out, err);
    snprintf(title, sizeof title, "%s last layer, context LOCATION2 / safety: who attends to whom",
             name);
    if (rc == 0)
        rc = draw(dir, "attention.svg", m, tok, &enc, &out, "attention_probs", title, err);
    snprintf(title, sizeof title, "QACGBERT quasi-attention, last layer, LOCATION2 / safety: "
             "maps 0-3 = what heads 0-3 add, maps 4-7 = what they subtract");
    if (rc == 0 && quasi)
        rc = draw_quasi(dir, m, tok, &enc, &out, g, title, err);
    bertc_ag_graph_destroy(g);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* The run                                                                   */
/* ------------------------------------------------------------------------ */

/* --model cgbert|qacgbert is this example's own flag: it is taken out of
 * argv before the standard flags are parsed. */
static int take_model_flag(int *argc, char **argv, const char **arch, BertcError *err)
{
    *arch = CGBERT;
    for (int i = 1; i < *argc; i++) {
        if (strcmp(argv[i], "--model") != 0)
            continue;
        const char *v = i + 1 < *argc ? argv[i + 1] : "";
        if (strcmp(v, "cgbert") != 0 && strcmp(v, "qacgbert") != 0)
            return bertc_errorf(err, "--model '%s': expected cgbert or qacgbert", v);
        *arch = strcmp(v, "cgbert") == 0 ? CGBERT : QACGBERT;
        memmove(argv + i, argv + i + 2, sizeof(char *) * (size_t)(*argc - i - 1));
        *argc -= 2;
        i--;
    }
    return 0;
}

static TrainOptions absa_options(void)
{
    TrainOptions opt = bertc_train_defaults();
    opt.steps = 2000;
    opt.batch_size = 32;
    opt.lr = 1e-3;
    opt.weight_decay = 0.01;
    opt.eval_every = 250;
    return opt;
}

/* Everything after the flags; what it allocates comes from `arena` and
 * `data`, which run() frees on every path. */
static int train_and_report(const char *arch, TrainOptions opt, const char *out, Arena *arena,
                            Absa *data, BertcError *err)
{
    char picture[BERTC_PATH_MAX];
    Tokenizer tok;
    if (example_need_data(VOCAB, err) != 0 ||
        bertc_tokenizer_load(&tok, arena, example_data_path(VOCAB), err) != 0 ||
        load_absa(&tok, arena, data, err) != 0)
        return -1;
    printf("bertc absa: %d generated sentences x %d contexts (%d train, %d held out)\n",
           N_SENTENCES, N_CONTEXTS, N_TRAIN * N_CONTEXTS, (N_SENTENCES - N_TRAIN) * N_CONTEXTS);
    BertConfig cfg;
    Model m;
    if (absa_config(arch, &tok, &cfg, err) != 0 || example_model(&m, arena, &cfg, err) != 0)
        return -1;
    printf("model: %s, %d layers, H=%d, %lld parameters\n", m.arch->name,
           cfg.num_hidden_layers, cfg.hidden_size, (long long)bertc_registry_count(m.reg));

    TrainTask task = {.n_train = (int64_t)N_TRAIN * N_CONTEXTS, .make_batch = make_batch,
                      .evaluate = evaluate, .metric_name = "macro-F1", .ctx = data};
    TrainResult res;
    if (bertc_train_run(&m, &task, &opt, &res, err) != 0)
        return -1;
    report(data, &res);
    int rc = bertc_path_join(picture, out, "loss.svg", "--out", err);
    if (rc == 0)
        rc = bertc_svg_loss_curve(picture, &res, "bertc absa: aspect-based sentiment", err);
    if (rc == 0)
        rc = show_sentence(&m, &tok, out, err);
    if (rc == 0)
        printf("wrote %s/loss.svg, %s/attention.svg%s and %s\n", out, out,
               is_qacgbert(arch) ? ", quasi_attention.svg" : "", opt.checkpoint);
    return rc;
}

static int run(int argc, char **argv, BertcError *err)
{
    const char *arch;
    TrainOptions opt = absa_options();
    char checkpoint[BERTC_PATH_MAX];
    if (take_model_flag(&argc, argv, &arch, err) != 0)
        return -1;
    const char *out = is_qacgbert(arch) ? "build/absa/qacgbert" : "build/absa/cgbert";
    if (example_flags(argc, argv, &opt, &out, checkpoint, err) != 0)
        return -1;
    Absa *data = calloc(1, sizeof *data);
    if (!data)
        return bertc_errorf(err, "out of memory for the data set");
    Arena *arena = bertc_arena_create("absa", 1 << 20);
    int rc = train_and_report(arch, opt, out, arena, data, err);
    bertc_arena_destroy(arena);
    free(data);
    return rc;
}

int main(int argc, char **argv)
{
    return example_main("absa", argc, argv, run);
}
