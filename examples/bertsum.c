/* examples/bertsum.c — extractive summarization with BertSum (`bertc train
 * bertsum`): train a small Summarizer from scratch to pick the sentences of a
 * short news story that carry its facts, and score the picks with ROUGE
 * against a written summary, beside the lead-3 baseline and the oracle.
 *
 *   generated "local news" stories, 5–8 sentences of real English
 *   -> WordPiece (bert-base-uncased vocabulary), a [CLS] ... [SEP] around
 *      every sentence, interval segments 0/1/0/1..., at most 160 tokens
 *   -> Summarizer: BERT 2 layers, H = 64, 2 inter-sentence layers
 *      (600 steps of 16 documents, AdamW)
 *   -> on 500 held-out stories: ROUGE-1/2 F1 and sentence accuracy of the
 *      model's top 3, of lead-3 and of the oracle; OUT/loss.svg, a
 *      checkpoint, and one held-out story with the chosen sentences marked.
 *
 * The task (also in docs/examples/bertsum.md). Story i is a pure function of
 * i: SplitMix64 (tensor.h) seeded with DATA_SEED + i draws
 *   - a topic (housing, jobs, police, storm, football, hospital, fees,
 *     charity), a town, a weekday, a month and three numbers;
 *   - the topic's three KEY FACTS (who did what, where, how many), filled in
 *     with those values and kept in that order;
 *   - 2–5 fillers from a shared pool of background, quotes and boilerplate,
 *     one of them, half the time, the topic's "old news" sentence, which
 *     shares the key facts' words but is not news;
 *   - positions: the facts take 3 of the N slots uniformly at random, the
 *     fillers the rest. Lead-3 is therefore right only by chance.
 * The REFERENCE summary is what a sub-editor would write from the facts, in
 * its own shorter words ("Leeds city council approves 40 new homes. ..."). As in
 * BertSum (data_builder.py greedy_selection), the training LABELS are the
 * oracle: greedily add the sentence that most raises ROUGE-1 F1 + ROUGE-2 F1
 * against the reference, at most 3, stopping when nothing raises it. The
 * oracle's ROUGE is the ceiling of any 3-sentence extract.
 *
 * At evaluation the model keeps its 3 highest sent_scores, in document order
 * (BertSum also skips a sentence that repeats a trigram of one already
 * picked, against redundant news copy; no story here repeats a sentence).
 *
 * The standard training flags (--steps, --out DIR, --resume, ...; see
 * zoo/train/train.h) apply; OUT defaults to build/bertsum. */
#include "examples/example_util.h"
#include "zoo/pictures/svg.h"
#include "zoo/train/train.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#define VOCAB "data/bert-base-uncased-vocab.txt"
#define DATA_SEED 2019u
#define N_TRAIN 4000
#define N_EVAL 500
#define MAX_LEN 160        /* tokens of a document: every story fits (checked) */
#define MAX_SENTS 8
#define N_FACTS 3
#define SUMMARY_SIZE 3     /* sentences picked by the model, lead-3 and the oracle */
#define TEXT_CAP 256       /* bytes of one filled-in sentence */

/* ---- the story generator ------------------------------------------------ */

/* One kind of story. Templates name their slots in braces: {place}, {day},
 * {month}, {n1}, {n2}, {n3}, {who}. */
typedef struct Topic {
    const char *name;
    const char *who;                 /* how quotes and boilerplate name the actor */
    int n1_lo, n1_hi, n2_lo, n2_hi;  /* ranges of the two numbers in the facts */
    const char *fact[N_FACTS];
    const char *reference;
    const char *old_news;            /* a distractor with the facts' words */
} Topic;

static const Topic topics[] = {
    {"housing", "council", 20, 400, 5, 90,
     {"The {place} city council approved {n1} new homes on {day} after a long debate.",
      "The building work is expected to cost {n2} million pounds.",
      "The first families should be able to move in by {month} next year."},
     "{place} city council approves {n1} new homes. The building work will cost {n2} "
     "million pounds. The first families will move in by {month} next year.",
     "Last year the council rejected a plan for {n3} homes on the same land."},
    {"jobs", "company", 50, 900, 2, 9,
     {"The car maker Nordia said on {day} that it will close its factory in {place}.",
      "About {n1} workers are expected to lose their jobs when the plant shuts.",
      "Production will move to a new site abroad over the next {n2} months."},
     "Car maker Nordia will close its factory in {place}. About {n1} workers will lose "
     "their jobs. Production will move abroad over the next {n2} months.",
     "The factory opened {n3} years ago and once employed twice as many workers."},
    {"police", "police", 3, 60, 2, 20,
     {"Police in {place} arrested {n1} people on {day} after a protest turned violent.",
      "{n2} officers were hurt during the clashes near the town hall.",
      "Those arrested will appear before magistrates in {month}."},
     "Police in {place} arrest {n1} people after a violent protest. {n2} officers were "
     "hurt in the clashes. Those arrested will appear before magistrates in {month}.",
     "A similar protest in the town {n3} years ago ended peacefully."},
    {"storm", "power company", 1000, 40000, 50, 90,
     {"A storm cut power to {n1} homes across {place} on {day} night.",
      "Winds of up to {n2} miles an hour brought down trees and power lines.",
      "Engineers hope to restore power to every home by the end of the week."},
     "A storm cut power to {n1} homes across {place}. Winds of up to {n2} miles an hour "
     "brought down trees. Engineers hope to restore power by the end of the week.",
     "The last storm of this size hit the region {n3} years ago."},
    {"football", "club", 2, 5, 18, 34,
     {"{place} Rovers won the county cup final by {n1} goals on {day}.",
      "The {n2} year old striker Sam Reid scored twice in the second half.",
      "The club will now play in the national cup from {month}."},
     "{place} Rovers win the county cup final by {n1} goals. {n2} year old striker Sam "
     "Reid scored twice. The club will play in the national cup from {month}.",
     "The club last won a cup {n3} years ago, before most of the team were born."},
    {"hospital", "health board", 5, 60, 10, 80,
     {"A new cancer ward opened at {place} general hospital on {day}.",
      "The ward cost {n1} million pounds and has {n2} beds.",
      "Health officials say waiting times should fall by {month}."},
     "A new cancer ward opens at {place} general hospital. The ward cost {n1} million "
     "pounds and has {n2} beds. Waiting times should fall by {month}.",
     "The hospital was built {n3} years ago and has not been extended since."},
    {"fees", "university", 3, 25, 200, 2000,
     {"The University of {place} said on {day} that it will cut its fees by {n1} percent.",
      "The change will help around {n2} students from poorer families.",
      "The lower fees will apply to courses starting in {month}."},
     "The University of {place} will cut its fees by {n1} percent. Around {n2} students "
     "from poorer families will benefit. The lower fees apply to courses from {month}.",
     "The university raised its fees {n3} years ago, which led to protests."},
    {"charity", "charity", 5, 95, 100, 900,
     {"A charity walk on {day} raised {n1} thousand pounds for the {place} food bank.",
      "More than {n2} people took part, some of them in fancy dress.",
      "The money will pay for food parcels until {month}."},
     "A charity walk raised {n1} thousand pounds for the {place} food bank. More than "
     "{n2} people took part. The money will pay for food parcels until {month}.",
     "The food bank was set up {n3} years ago in a church hall."},
};
#define N_TOPICS ((int)(sizeof topics / sizeof topics[0]))

/* Background, quotes and boilerplate: sentences a summary leaves out. */
static const char *const fillers[] = {
    "{place} is a market town of about {n3} thousand people.",
    "The town lies on a wide river and is popular with visitors in the summer.",
    "Many people here work in the nearby city and travel in by train each day.",
    "{place} was once famous for its wool trade and its old stone bridge.",
    "The area has changed a great deal over the past few decades.",
    "\"This is a very important day for all of us,\" said one local resident.",
    "\"We have waited a long time for this,\" a spokesperson for the {who} said.",
    "\"People in {place} deserve better,\" said a woman who has lived there for {n3} years.",
    "\"We will keep everyone informed,\" the {who} said in a statement.",
    "\"I never thought I would see this happen,\" one man told reporters.",
    "This story will be updated as more information becomes available.",
    "Sign up to our newsletter to get the latest local news every morning.",
    "Additional reporting by our {place} staff.",
    "Do you have a story to share? Send us an email.",
    "Photographs from the scene are shown below.",
};
#define N_FILLERS ((int)(sizeof fillers / sizeof fillers[0]))

static const char *const places[] = {"Leeds", "Bristol", "Norwich", "York", "Derby", "Bath",
                                     "Exeter", "Carlisle", "Dundee", "Swansea", "Preston",
                                     "Lincoln"};
static const char *const days[] = {"Monday", "Tuesday", "Wednesday", "Thursday", "Friday",
                                   "Saturday", "Sunday"};
static const char *const months[] = {"January", "February", "March", "April", "May", "June",
                                     "July", "August", "September", "October", "November",
                                     "December"};
#define PICK(rng, list) (list[bertc_rng_randint(rng, 0, (int64_t)(sizeof list / sizeof list[0]) - 1)])

/* The values a story's templates are filled with. */
typedef struct Slots {
    const Topic *topic;
    const char *place, *day, *month;
    int n1, n2, n3;
} Slots;

static bool slot_is(const char *name, size_t n, const char *slot)
{
    return strlen(slot) == n && strncmp(name, slot, n) == 0;
}

/* Copies `template` into out (cap bytes) with every {slot} filled in. */
static void fill_template(const char *template, const Slots *s, char *out, size_t cap)
{
    size_t len = 0;
    out[0] = '\0';
    for (const char *p = template; *p && len + 1 < cap;) {
        char value[64];
        const char *close = *p == '{' ? strchr(p, '}') : NULL;
        if (!close) {
            out[len++] = *p++;
            out[len] = '\0';
            continue;
        }
        size_t n = (size_t)(close - p - 1);
        const char *name = p + 1;
        value[0] = '\0';
        if (slot_is(name, n, "place")) snprintf(value, sizeof value, "%s", s->place);
        else if (slot_is(name, n, "day")) snprintf(value, sizeof value, "%s", s->day);
        else if (slot_is(name, n, "month")) snprintf(value, sizeof value, "%s", s->month);
        else if (slot_is(name, n, "who")) snprintf(value, sizeof value, "%s", s->topic->who);
        else if (slot_is(name, n, "n1")) snprintf(value, sizeof value, "%d", s->n1);
        else if (slot_is(name, n, "n2")) snprintf(value, sizeof value, "%d", s->n2);
        else if (slot_is(name, n, "n3")) snprintf(value, sizeof value, "%d", s->n3);
        len += (size_t)snprintf(out + len, cap - len, "%s", value);
        len = len < cap ? len : cap - 1;
        p = close + 1;
    }
}

/* The first k entries of a Fisher–Yates shuffle of 0..n-1 (n <= 32). */
static void sample_without_replacement(Rng *rng, int *out, int k, int n)
{
    int all[32];
    for (int i = 0; i < n; i++)
        all[i] = i;
    for (int i = 0; i < k; i++) {
        int j = (int)bertc_rng_randint(rng, i, n - 1), t = all[i];
        all[i] = all[j];
        all[j] = t;
        out[i] = all[i];
    }
}

/* A generated story: sentence texts, the reference summary, and which
 * sentences are the key facts (bit n = sentence n). */
typedef struct Story {
    int n_sents;
    char sent[MAX_SENTS][TEXT_CAP];
    char reference[TEXT_CAP * 2];
    uint32_t facts;
    const char *topic;
} Story;

static void generate_story(uint64_t index, Story *st)
{
    Rng rng = bertc_rng_seed(DATA_SEED + index);
    memset(st, 0, sizeof *st);
    Slots s = {.topic = &topics[bertc_rng_randint(&rng, 0, N_TOPICS - 1)]};
    s.place = PICK(&rng, places);
    s.day = PICK(&rng, days);
    s.month = PICK(&rng, months);
    s.n1 = (int)bertc_rng_randint(&rng, s.topic->n1_lo, s.topic->n1_hi);
    s.n2 = (int)bertc_rng_randint(&rng, s.topic->n2_lo, s.topic->n2_hi);
    s.n3 = (int)bertc_rng_randint(&rng, 2, 40);
    st->n_sents = (int)bertc_rng_randint(&rng, N_FACTS + 2, MAX_SENTS);
    st->topic = s.topic->name;
    int slot[MAX_SENTS], filler[MAX_SENTS], n_fill = st->n_sents - N_FACTS;
    sample_without_replacement(&rng, slot, N_FACTS, st->n_sents);
    sample_without_replacement(&rng, filler, n_fill, N_FILLERS);
    const char *text[MAX_SENTS] = {0};
    for (int f = 0; f < N_FACTS; f++)
        st->facts |= 1u << slot[f];
    for (int n = 0, f = 0, k = 0; n < st->n_sents; n++)   /* facts in their order */
        text[n] = st->facts >> n & 1 ? s.topic->fact[f++] : fillers[filler[k++]];
    if (bertc_rng_uniform(&rng) < 0.5) {                        /* old news replaces a filler */
        int n;
        do
            n = (int)bertc_rng_randint(&rng, 0, st->n_sents - 1);
        while (st->facts >> n & 1);
        text[n] = s.topic->old_news;
    }
    for (int n = 0; n < st->n_sents; n++)
        fill_template(text[n], &s, st->sent[n], TEXT_CAP);
    fill_template(s.topic->reference, &s, st->reference, sizeof st->reference);
}

/* ---- ROUGE-N ------------------------------------------------------------ */

/* ROUGE-N F1 (Lin 2004) on lowercased word tokens: a word is a maximal run
 * of ASCII letters and digits (ROUGE-1.5.5 maps everything else to spaces),
 * no stemming, no stop words. With the n-grams of candidate C and reference R
 * as multisets, overlap = Σ_g min(count_C(g), count_R(g)),
 * P = overlap / |C|, R = overlap / |R|, F1 = 2PR / (P + R) (0 when either is
 * empty). Scores are averaged over documents. */
#define MAX_WORDS 256
#define WORD_CAP 24        /* longer words are cut; the stories have none */

typedef struct Words {
    int n;
    char w[MAX_WORDS][WORD_CAP];
} Words;

static void words_append(Words *ws, const char *text)
{
    for (const char *p = text; *p && ws->n < MAX_WORDS;) {
        if (!isalnum((unsigned char)*p)) {
            p++;
            continue;
        }
        int len = 0;
        for (; isalnum((unsigned char)*p); p++)
            if (len + 1 < WORD_CAP)
                ws->w[ws->n][len++] = (char)tolower((unsigned char)*p);
        ws->w[ws->n++][len] = '\0';
    }
}

static bool ngram_equal(const Words *a, int i, const Words *b, int j, int n)
{
    for (int k = 0; k < n; k++)
        if (strcmp(a->w[i + k], b->w[j + k]) != 0)
            return false;
    return true;
}

static double rouge_n(const Words *cand, const Words *ref, int n)
{
    int n_cand = cand->n - n + 1, n_ref = ref->n - n + 1, overlap = 0;
    if (n_cand <= 0 || n_ref <= 0)
        return 0;
    bool used[MAX_WORDS] = {false};   /* reference n-grams already matched */
    for (int i = 0; i < n_cand; i++)
        for (int j = 0; j < n_ref; j++)
            if (!used[j] && ngram_equal(cand, i, ref, j, n)) {
                used[j] = true;
                overlap++;
                break;
            }
    if (overlap == 0)
        return 0;
    double p = (double)overlap / n_cand, r = (double)overlap / n_ref;
    return 2 * p * r / (p + r);
}

/* The words of the sentences in `pick` (bit n = sentence n), in order. */
static void selection_words(const Story *st, uint32_t pick, Words *ws)
{
    ws->n = 0;
    for (int n = 0; n < st->n_sents; n++)
        if (pick >> n & 1)
            words_append(ws, st->sent[n]);
}

/* BertSum's greedy_selection: the oracle extract, used as the labels. */
static uint32_t oracle_selection(const Story *st)
{
    Words ref, cand;
    ref.n = 0;
    words_append(&ref, st->reference);
    uint32_t pick = 0;
    double best = 0;
    for (int round = 0; round < SUMMARY_SIZE; round++) {
        int add = -1;
        for (int n = 0; n < st->n_sents; n++) {
            if (pick >> n & 1)
                continue;
            selection_words(st, pick | 1u << n, &cand);
            double gain = rouge_n(&cand, &ref, 1) + rouge_n(&cand, &ref, 2);
            if (gain > best) {
                best = gain;
                add = n;
            }
        }
        if (add < 0)
            break;
        pick |= 1u << add;
    }
    return pick;
}

/* ---- the data set --------------------------------------------------------- */

/* A tokenised story: [CLS] s_0 [SEP] [CLS] s_1 [SEP] ..., sentence n starting
 * at clss[n]. labels and facts are bit masks over the sentences. */
typedef struct Doc {
    int32_t ids[MAX_LEN], clss[MAX_SENTS];
    int32_t n_tokens, n_sents;
    uint32_t labels, facts;
} Doc;

typedef struct Corpus {
    int64_t n, n_train;
    Doc *docs;
    uint32_t *model_pick;    /* per held-out story: the latest evaluation's picks */
    int64_t batch_size;      /* the training batch, to put eval loss on its scale */
} Corpus;

static int tokenize_story(const Tokenizer *tok, Arena *scratch, const Story *st, Doc *d,
                          BertcError *err)
{
    d->n_tokens = 0;
    d->n_sents = st->n_sents;
    for (int n = 0; n < st->n_sents; n++) {
        Encoding enc;
        if (bertc_tokenizer_encode(tok, scratch, st->sent[n], strlen(st->sent[n]), NULL, 0, 0, false,
                             &enc, err) != 0)
            return -1;
        if (d->n_tokens + enc.S > MAX_LEN)
            return bertc_errorf(err, "a story needs more than MAX_LEN = %d tokens; raise "
                                "MAX_LEN in examples/bertsum.c", MAX_LEN);
        d->clss[n] = d->n_tokens;
        memcpy(d->ids + d->n_tokens, enc.input_ids, sizeof(int32_t) * (size_t)enc.S);
        d->n_tokens += enc.S;
    }
    return 0;
}

static int build_corpus(const Tokenizer *tok, Arena *a, Corpus *c, BertcError *err)
{
    c->n = N_TRAIN + N_EVAL;
    c->n_train = N_TRAIN;
    c->docs = bertc_arena_calloc(a, (size_t)c->n, sizeof(Doc));
    c->model_pick = bertc_arena_calloc(a, N_EVAL, sizeof(uint32_t));
    Arena *scratch = bertc_arena_create("tokenize", 1 << 16);
    Story st;
    int rc = 0;
    for (int64_t i = 0; i < c->n && rc == 0; i++) {
        generate_story((uint64_t)i, &st);
        bertc_arena_reset(scratch);
        rc = tokenize_story(tok, scratch, &st, &c->docs[i], err);
        c->docs[i].labels = oracle_selection(&st);
        c->docs[i].facts = st.facts;
    }
    bertc_arena_destroy(scratch);
    return rc;
}

/* ---- batches ------------------------------------------------------------ */

/* Stories idx[0..n-1] -> src, segs, mask (n, S) with S the longest story,
 * and clss, mask_cls, labels (n, MAX_SENTS). segs is 0 on the even
 * sentences and 1 on the odd ones (BertSum's interval segments). */
static int make_batch(void *ctx, const int64_t *idx, int64_t n, Graph *g, Batch *b,
                      int64_t *tokens, BertcError *err)
{
    (void)err;
    const Corpus *c = ctx;
    int64_t S = 1;
    for (int64_t j = 0; j < n; j++)
        S = c->docs[idx[j]].n_tokens > S ? c->docs[idx[j]].n_tokens : S;
    int64_t bs[2] = {n, S}, bn[2] = {n, MAX_SENTS};
    ITensor src = bertc_itensor_new(g->step, 2, bs), segs = bertc_itensor_new(g->step, 2, bs);
    ITensor mask = bertc_itensor_new(g->step, 2, bs), clss = bertc_itensor_new(g->step, 2, bn);
    ITensor mask_cls = bertc_itensor_new(g->step, 2, bn), labels = bertc_itensor_new(g->step, 2, bn);
    *tokens = 0;
    for (int64_t j = 0; j < n; j++) {
        const Doc *d = &c->docs[idx[j]];
        for (int32_t t = 0, sent = 0; t < d->n_tokens; t++) {
            sent += sent + 1 < d->n_sents && t == d->clss[sent + 1];
            src.data[j * S + t] = d->ids[t];
            segs.data[j * S + t] = sent % 2;
            mask.data[j * S + t] = 1;
        }
        for (int32_t s = 0; s < d->n_sents; s++) {
            clss.data[j * MAX_SENTS + s] = d->clss[s];
            mask_cls.data[j * MAX_SENTS + s] = 1;
            labels.data[j * MAX_SENTS + s] = (int32_t)(d->labels >> s & 1);
        }
        *tokens += d->n_tokens;
    }
    bertc_batch_put_ids(b, "src", src);
    bertc_batch_put_ids(b, "segs", segs);
    bertc_batch_put_ids(b, "mask", mask);
    bertc_batch_put_ids(b, "clss", clss);
    bertc_batch_put_ids(b, "mask_cls", mask_cls);
    bertc_batch_put_ids(b, "labels", labels);
    return 0;
}

/* ---- choosing and scoring summaries -------------------------------------- */

/* The k highest-scoring sentences (ties: the earlier one), as a bit mask:
 * reading the bits from 0 up gives them in document order. */
static uint32_t top_k(const float *scores, int n_sents, int k)
{
    uint32_t pick = 0;
    for (int round = 0; round < k && round < n_sents; round++) {
        int best = -1;
        for (int n = 0; n < n_sents; n++)
            if (!(pick >> n & 1) && (best < 0 || scores[n] > scores[best]))
                best = n;
        pick |= 1u << best;
    }
    return pick;
}

static uint32_t lead(int n_sents)
{
    return (1u << (n_sents < SUMMARY_SIZE ? n_sents : SUMMARY_SIZE)) - 1;
}

/* Sums over held-out stories: ROUGE F1s, sentences whose picked/not-picked
 * matches the oracle label, and stories picked exactly as the oracle. */
typedef struct Scores {
    double rouge1, rouge2;
    int64_t sents_right, sents, exact, docs;
} Scores;

static void score_pick(Scores *sc, const Doc *d, int64_t index, uint32_t pick)
{
    Story st;
    Words ref, cand;
    generate_story((uint64_t)index, &st);
    ref.n = 0;
    words_append(&ref, st.reference);
    selection_words(&st, pick, &cand);
    sc->rouge1 += rouge_n(&cand, &ref, 1);
    sc->rouge2 += rouge_n(&cand, &ref, 2);
    for (int n = 0; n < d->n_sents; n++)
        sc->sents_right += (pick >> n & 1) == (d->labels >> n & 1);
    sc->sents += d->n_sents;
    sc->exact += pick == d->labels;
    sc->docs++;
}

/* Model picks on the held-out stories (stored in c->model_pick), ROUGE-2 F1
 * as the engine's metric, and the loss per training batch: BertSum's loss is
 * a sum over the batch's sentences, so the mean loss of a story times the
 * batch size is what the training loss on the curve measures. */
static int evaluate(void *ctx, Model *m, Graph *g, double *metric, double *loss,
                    BertcError *err)
{
    Corpus *c = ctx;
    int64_t n_eval = c->n - c->n_train;
    double loss_sum = 0;
    Scores sc = {0};
    HeldOut h = held_out(c->n_train, n_eval, 64, "eval");
    while (held_out_next(&h, make_batch, c, m, g, err)) {
        const float *scores = bertc_outputs_get(&h.out, "sent_scores")->value.data;
        for (int64_t j = 0; j < h.n; j++) {
            int64_t i = h.row + j;
            c->model_pick[i - c->n_train] = top_k(scores + j * MAX_SENTS, c->docs[i].n_sents,
                                                  SUMMARY_SIZE);
            score_pick(&sc, &c->docs[i], i, c->model_pick[i - c->n_train]);
        }
        loss_sum += bertc_outputs_get(&h.out, "loss")->value.data[0];
    }
    if (h.failed)
        return -1;
    *metric = sc.rouge2 / (double)sc.docs;
    *loss = loss_sum / (double)n_eval * (double)c->batch_size;
    return 0;
}

/* ---- the report ----------------------------------------------------------- */

enum { BY_MODEL, BY_LEAD, BY_FACTS, BY_ORACLE, N_SYSTEMS };
static const char *const system_names[N_SYSTEMS] = {"model (top 3)", "lead-3", "key facts",
                                                    "oracle"};

static uint32_t system_pick(const Corpus *c, int system, int64_t i)
{
    const Doc *d = &c->docs[i];
    switch (system) {
    case BY_MODEL: return c->model_pick[i - c->n_train];
    case BY_LEAD: return lead(d->n_sents);
    case BY_FACTS: return d->facts;
    default: return d->labels;
    }
}

static void print_scores(const Corpus *c)
{
    printf("\n%-14s %8s %8s %10s %8s\n", "held out", "ROUGE-1", "ROUGE-2", "sent. acc", "exact");
    for (int s = 0; s < N_SYSTEMS; s++) {
        Scores sc = {0};
        for (int64_t i = c->n_train; i < c->n; i++)
            score_pick(&sc, &c->docs[i], i, system_pick(c, s, i));
        printf("%-14s %7.1f%% %7.1f%% %9.1f%% %7.1f%%\n", system_names[s],
               100 * sc.rouge1 / (double)sc.docs, 100 * sc.rouge2 / (double)sc.docs,
               100 * (double)sc.sents_right / (double)sc.sents,
               100 * (double)sc.exact / (double)sc.docs);
    }
}

/* One held-out story with a column per system: * = picked. */
static void print_story(const Corpus *c, int64_t i)
{
    Story st;
    generate_story((uint64_t)i, &st);
    printf("\nheld-out story %lld (%s). reference summary:\n  %s\n", (long long)i, st.topic,
           st.reference);
    printf("model lead oracle\n");
    for (int n = 0; n < st.n_sents; n++) {
        char mark[N_SYSTEMS];
        for (int s = 0; s < N_SYSTEMS; s++)
            mark[s] = system_pick(c, s, i) >> n & 1 ? '*' : '.';
        printf("  %c     %c     %c    %d. %s\n", mark[BY_MODEL], mark[BY_LEAD], mark[BY_ORACLE],
               n + 1, st.sent[n]);
    }
}

/* ---- the run ------------------------------------------------------------ */

static int summarizer_config(const Tokenizer *tok, BertConfig *out, BertcError *err)
{
    BertConfig c;
    if (bertc_model_config_default(&c, "Summarizer", err) != 0)
        return -1;
    c.vocab_size = tok->V;   /* the full vocabulary, so any English text can be read */
    c.hidden_size = 64;
    c.num_hidden_layers = 2;
    c.num_attention_heads = 4;
    c.intermediate_size = 256;
    c.max_position_embeddings = MAX_LEN;
    if (bertc_model_config_set(&c, "ff_size", 128, err) != 0 ||
        bertc_model_config_set(&c, "heads", 4, err) != 0 ||
        bertc_model_config_set(&c, "inter_layers", 2, err) != 0 ||
        bertc_model_config_set(&c, "pe_max_len", 32, err) != 0)   /* sentence positions: MAX_SENTS would do */
        return -1;
    *out = c;
    return 0;
}

static TrainOptions summarizer_options(void)
{
    TrainOptions opt = bertc_train_defaults();
    opt.steps = 600;
    opt.batch_size = 16;
    opt.lr = 1e-3;
    opt.eval_every = 50;
    return opt;
}

/* Everything after the flags; what it allocates comes from `arena`, which
 * run() frees on every path. */
static int train_and_report(TrainOptions opt, const char *out, Arena *arena, BertcError *err)
{
    char picture[BERTC_PATH_MAX];
    Tokenizer tok;
    Corpus corpus;
    if (example_need_data(VOCAB, err) != 0 ||
        bertc_tokenizer_load(&tok, arena, example_data_path(VOCAB), err) != 0 ||
        build_corpus(&tok, arena, &corpus, err) != 0)
        return -1;
    printf("bertsum: pick the 3 summary sentences of generated news stories "
           "(%d train, %d held out)\n", N_TRAIN, N_EVAL);
    BertConfig cfg;
    Model m;
    if (summarizer_config(&tok, &cfg, err) != 0 || example_model(&m, arena, &cfg, err) != 0)
        return -1;
    printf("model: Summarizer, BERT %d layers, H=%d, %d inter-sentence layers, %lld "
           "parameters\n", cfg.num_hidden_layers, cfg.hidden_size, (int)bertc_model_config_get(&cfg, "inter_layers"),
           (long long)bertc_registry_count(m.reg));

    corpus.batch_size = opt.batch_size;
    TrainTask task = {.n_train = corpus.n_train, .make_batch = make_batch,
                      .evaluate = evaluate, .metric_name = "ROUGE-2 F1", .ctx = &corpus};
    TrainResult res;
    if (bertc_train_run(&m, &task, &opt, &res, err) != 0)
        return -1;
    printf("trained %lld steps in %.0f s at %.0f tokens/s\n", (long long)res.steps_done,
           res.seconds, res.tokens_per_second);
    print_scores(&corpus);
    print_story(&corpus, corpus.n_train);
    if (bertc_path_join(picture, out, "loss.svg", "--out", err) != 0 ||
        bertc_svg_loss_curve(picture, &res, "bertsum: extractive summarizer", err) != 0)
        return -1;
    printf("\nwrote %s and %s\n", picture, opt.checkpoint);
    return 0;
}

static int run(int argc, char **argv, BertcError *err)
{
    TrainOptions opt = summarizer_options();
    const char *out = "build/bertsum";
    char checkpoint[BERTC_PATH_MAX];
    if (example_flags(argc, argv, &opt, &out, checkpoint, err) != 0)
        return -1;
    Arena *arena = bertc_arena_create("bertsum", 1 << 20);
    int rc = train_and_report(opt, out, arena, err);
    bertc_arena_destroy(arena);
    return rc;
}

int main(int argc, char **argv)
{
    return example_main("bertsum", argc, argv, run);
}
