/* examples/qaconv.c — question answering over conversations (`bertc train
 * qaconv`): train QAConvModelV2 (zoo/models/qaconv.c, SPEC §6.6) from scratch to
 * find the answer of a question as a span of a short two-speaker chat, and
 * to tell which of six kinds of question it is.
 *
 *   generated conversations (below), one question per turn
 *   -> "[CLS] question [SEP] conversation [SEP]", S = 96 WordPieces
 *   -> QAConvModelV2: BERT 2 layers, H = 128, query_len 16, 128 filters,
 *      800 steps of 32 with AdamW
 *   -> SQuAD-style best-span search on held-out conversations: exact match
 *      and F1 against a random-span baseline, question-type accuracy,
 *      OUT/loss.svg, a checkpoint, and a few held-out answers.
 *
 * The generator (deterministic: SplitMix64 seeded with DATA_SEED, so every
 * run sees the same data whatever --seed says):
 *  - a conversation has 3 or 4 turns; two speakers, drawn from PERSON,
 *    alternate ("Anna: ... Ben: ... Anna: ...");
 *  - each turn is a different TEMPLATE, an English sentence with slots
 *    ("I'm meeting {person} at the {place} at {time}."). Every slot kind
 *    takes a different value in every turn of a conversation, so a turn's
 *    answer is never repeated in another turn: three people, two times and
 *    two cities may appear, and the question says which one it wants;
 *  - each turn gets one question, one of its template's three, each of a
 *    type: who, what, where, when, which, how many. The question names the
 *    speaker ({X}) or listener ({Y}) and other slots of the turn; the answer
 *    is a template too ("{color} {garment}") and must occur exactly once,
 *    at word boundaries, in its turn (checked: a broken template is an
 *    error, not a silently wrong label);
 *  - conversations 0 .. N_TRAIN_CONV-1 train, the rest are held out.
 * The answer's bytes become token positions through the tokenizer's
 * offsets: the first context token starting where the answer starts and the
 * last one ending where it ends, so names that split into WordPieces
 * ("siobhan" -> si ##ob ##han) span all their pieces. A question must fit in
 * the first query_len tokens ([CLS] question [SEP]) and a whole example in
 * S tokens (the longest generated are 15 and 89); anything longer is an
 * error naming the text rather than a truncated example.
 *
 * The standard training flags (--steps, --out DIR, --resume, ...; see
 * zoo/train/train.h) apply; OUT defaults to build/qaconv. */
#include "examples/example_util.h"
#include "zoo/pictures/svg.h"
#include "zoo/train/train.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VOCAB "data/bert-base-uncased-vocab.txt"
#define SEQ 96              /* S: tokens per example */
#define QUERY_LEN 16        /* Q: [CLS] question [SEP] must fit here */
#define MAX_ANSWER 10       /* longest predicted span, in tokens */
#define MAX_TURNS 4
#define MAX_TEXT 512        /* bytes of a conversation or a question */
#define N_CONV 2400
#define N_TRAIN_CONV 2160   /* the last 240 conversations are held out */
#define DATA_SEED 2021
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* ---- the vocabulary of the generated world ----------------------------- */

typedef enum QType { WHO, WHAT, WHERE, WHEN, WHICH, HOW_MANY, N_QTYPES } QType;
static const char *const qtype_names[N_QTYPES] = {"who",  "what",  "where",
                                                  "when", "which", "how many"};

typedef enum Slot {
    PERSON, PLACE, TIME, CITY, COLOR, GARMENT, NUMBER, EVENT, DAY, DAYPART, PLATFORM, GEAR,
    ROOM, BAG, SHOP, N_SLOTS
} Slot;

typedef struct Pool {
    const char *name;                 /* the placeholder: {name} */
    const char *const *values;
    int n;
} Pool;

static const char *const people[] = {
    "Anna", "Ben", "Tom", "Maria", "Priya", "Kwame", "Siobhan", "Dmitri", "Ingrid", "Yusuf",
    "Chloe", "Mateo", "Hannah", "Oliver", "Fatima", "Lars", "Akiko", "Nadia", "Omar", "Grace",
    "Leon", "Sofia", "Ravi", "Elena"};
static const char *const places[] = {"station", "harbour", "library", "stadium",
                                     "airport", "cinema",  "market",  "town hall"};
static const char *const times[] = {"6 pm",  "7:30 am",  "noon",  "9 am",    "4:15 pm",
                                    "10:45 am", "midnight", "11 am", "1:20 pm", "6:40 pm"};
static const char *const cities[] = {"Oslo",   "Lisbon", "Nairobi", "Reykjavik",
                                     "Kyoto",  "Porto",  "Tbilisi", "Quito",
                                     "Glasgow", "Krakow", "Valencia", "Dublin"};
static const char *const colors[] = {"blue", "red",  "green",  "yellow", "black",
                                     "white", "grey", "orange", "purple"};
static const char *const garments[] = {"umbrella", "raincoat", "jacket", "scarf", "boots",
                                       "hat"};
static const char *const numbers[] = {"two",   "three", "four",   "five",
                                      "six",   "seven", "eight",  "nine",
                                      "ten",   "eleven", "twelve"};
static const char *const events[] = {"concert", "match",   "play",        "opera",
                                     "festival", "lecture", "comedy show", "ballet"};
static const char *const days[] = {"Monday", "Tuesday", "Wednesday", "Thursday",
                                   "Friday", "Saturday", "Sunday"};
static const char *const dayparts[] = {"morning", "afternoon", "evening", "week"};
static const char *const platforms[] = {"2", "3", "5", "8", "12", "14"};
static const char *const gear[] = {"tents",    "ladders", "bikes",          "sleeping bags",
                                   "lanterns", "drills",  "folding chairs"};
static const char *const rooms[] = {"garden", "kitchen", "garage", "attic", "basement",
                                    "living room"};
static const char *const bags[] = {"backpack", "suitcase", "handbag", "wallet", "laptop bag"};
static const char *const shops[] = {"bakery", "pharmacy", "post office", "bookshop", "bank",
                                    "museum"};

#define POOL(name, values) {name, values, COUNT(values)}
static const Pool pools[N_SLOTS] = {
    [PERSON] = POOL("person", people),     [PLACE] = POOL("place", places),
    [TIME] = POOL("time", times),          [CITY] = POOL("city", cities),
    [COLOR] = POOL("color", colors),       [GARMENT] = POOL("garment", garments),
    [NUMBER] = POOL("count", numbers),     [EVENT] = POOL("event", events),
    [DAY] = POOL("day", days),             [DAYPART] = POOL("daypart", dayparts),
    [PLATFORM] = POOL("platform", platforms), [GEAR] = POOL("gear", gear),
    [ROOM] = POOL("room", rooms),          [BAG] = POOL("bag", bags),
    [SHOP] = POOL("shop", shops),
};

/* A question about a turn: its type, its wording and its answer. {X} is the
 * speaker of the turn, {Y} the other speaker. */
typedef struct Ask {
    QType type;
    const char *question, *answer;
} Ask;

typedef struct Template {
    const char *text;                 /* what {X} says */
    Ask ask[3];
} Template;

static const Template templates[] = {
    {"I'm meeting {person} at the {place} at {time}.",
     {{WHO, "Who is {X} meeting at the {place}?", "{person}"},
      {WHERE, "Where is {X} meeting {person}?", "{place}"},
      {WHEN, "When is {X} meeting {person}?", "{time}"}}},
    {"Bring the {color} {garment}, it will rain in {city}.",
     {{WHAT, "What should {Y} bring?", "{color} {garment}"},
      {WHICH, "Which {garment} should {Y} bring?", "{color} {garment}"},
      {WHERE, "Where will it rain?", "{city}"}}},
    {"I bought {count} tickets for the {event} on {day}.",
     {{HOW_MANY, "How many tickets did {X} buy?", "{count}"},
      {WHAT, "What did {X} buy tickets for?", "{event}"},
      {WHEN, "When is the {event}?", "{day}"}}},
    {"{person} called me from {city} this {daypart}.",
     {{WHO, "Who called {X} from {city}?", "{person}"},
      {WHERE, "Where did {person} call from?", "{city}"},
      {WHEN, "When did {person} call {X}?", "this {daypart}"}}},
    {"My train to {city} leaves from platform {platform} at {time}.",
     {{WHICH, "Which platform does {X}'s train leave from?", "{platform}"},
      {WHEN, "When does the train to {city} leave?", "{time}"},
      {WHERE, "Where is {X}'s train going?", "{city}"}}},
    {"{person} lent me {count} {gear} for the weekend.",
     {{WHO, "Who lent {X} the {gear}?", "{person}"},
      {HOW_MANY, "How many {gear} did {person} lend {X}?", "{count}"},
      {WHAT, "What did {person} lend {X}?", "{count} {gear}"}}},
    {"Let's take the {color} car, the {shop} closes at {time}.",
     {{WHICH, "Which car should they take?", "{color} car"},
      {WHEN, "When does the {shop} close?", "{time}"},
      {WHAT, "What closes at {time}?", "{shop}"}}},
    {"We need {count} cakes for {person}'s party in the {room}.",
     {{HOW_MANY, "How many cakes are needed?", "{count}"},
      {WHO, "Who is the party for?", "{person}"},
      {WHERE, "Where is {person}'s party?", "{room}"}}},
    {"I left my {color} {bag} at {person}'s house on {day}.",
     {{WHAT, "What did {X} leave at {person}'s house?", "{color} {bag}"},
      {WHICH, "Which {bag} did {X} lose?", "{color} {bag}"},
      {WHEN, "When was {X} at {person}'s house?", "{day}"}}},
    {"The {event} starts at {time}, and {count} of us are going.",
     {{WHEN, "When does the {event} start?", "{time}"},
      {HOW_MANY, "How many people are going to the {event}?", "{count}"},
      {WHAT, "What starts at {time}?", "{event}"}}},
};

/* ---- the generator ----------------------------------------------------- */

typedef struct Turn {
    const Template *tpl;
    int value[N_SLOTS];               /* index into pools[k].values */
    int32_t begin, end;               /* bytes of the utterance in the text */
} Turn;

typedef struct Conversation {
    int speaker[2];                   /* index into people */
    int n_turns;
    Turn turn[MAX_TURNS];
    char text[MAX_TEXT];
    int32_t len;
} Conversation;

/* A value of pools[k] not used yet in this conversation (used: a bit set). */
static int draw_unused(Rng *rng, Slot k, uint64_t *used)
{
    int v;
    do
        v = (int)bertc_rng_randint(rng, 0, pools[k].n - 1);
    while (*used >> v & 1);
    *used |= 1ull << v;
    return v;
}

/* What a placeholder of turn t stands for ({X}, {Y} or a slot name). */
static const char *slot_value(const Conversation *c, int t, const char *name, size_t len)
{
    if (len == 1 && (name[0] == 'X' || name[0] == 'Y'))
        return people[c->speaker[(t + (name[0] == 'Y')) % 2]];
    for (int k = 0; k < N_SLOTS; k++)
        if (strlen(pools[k].name) == len && strncmp(pools[k].name, name, len) == 0)
            return pools[k].values[c->turn[t].value[k]];
    return NULL;
}

/* Appends template `tpl` with turn t's values to dst (holding *len bytes). */
static int render(const Conversation *c, int t, const char *tpl, char *dst, int32_t *len,
                  BertcError *err)
{
    for (const char *p = tpl; *p;) {
        const char *piece = p, *close = NULL;
        size_t n = 1;
        if (*p == '{' && (close = strchr(p, '}'))) {
            piece = slot_value(c, t, p + 1, (size_t)(close - p - 1));
            if (!piece)
                return bertc_errorf(err, "template \"%s\": unknown slot at \"%s\"", tpl, p);
            n = strlen(piece);
        }
        if (*len + n + 1 > MAX_TEXT)
            return bertc_errorf(err, "template \"%s\": the text outgrows %d bytes", tpl,
                                MAX_TEXT);
        memcpy(dst + *len, piece, n);
        *len += (int32_t)n;
        dst[*len] = '\0';
        p = close ? close + 1 : p + 1;
    }
    return 0;
}

/* Speakers, 3-4 distinct templates, distinct slot values, and the text
 * "Anna: ... Ben: ..." with the bytes of every utterance. */
static int generate_conversation(Rng *rng, Conversation *c, BertcError *err)
{
    uint64_t used[N_SLOTS] = {0}, used_templates = 0;
    c->speaker[0] = draw_unused(rng, PERSON, &used[PERSON]);
    c->speaker[1] = draw_unused(rng, PERSON, &used[PERSON]);
    c->n_turns = (int)bertc_rng_randint(rng, 3, MAX_TURNS);
    c->len = 0;
    for (int t = 0; t < c->n_turns; t++) {
        Turn *turn = &c->turn[t];
        int k;
        do
            k = (int)bertc_rng_randint(rng, 0, COUNT(templates) - 1);
        while (used_templates >> k & 1);
        used_templates |= 1ull << k;
        turn->tpl = &templates[k];
        for (int s = 0; s < N_SLOTS; s++)
            turn->value[s] = draw_unused(rng, (Slot)s, &used[s]);
        if (render(c, t, t ? " {X}: " : "{X}: ", c->text, &c->len, err) != 0)
            return -1;
        turn->begin = c->len;
        if (render(c, t, turn->tpl->text, c->text, &c->len, err) != 0)
            return -1;
        turn->end = c->len;
    }
    return 0;
}

static bool is_word_char(char ch) { return isalnum((unsigned char)ch) != 0; }

/* The one occurrence of answer, at word boundaries, in text[begin, end). */
static int find_answer(const char *text, int32_t begin, int32_t end, const char *answer,
                       int32_t *at, BertcError *err)
{
    int32_t n = (int32_t)strlen(answer), found = 0;
    for (int32_t i = begin; i + n <= end; i++)
        if (strncmp(text + i, answer, (size_t)n) == 0 &&
            (i == begin || !is_word_char(text[i - 1])) &&
            (i + n == end || !is_word_char(text[i + n]))) {
            *at = i;
            found++;
        }
    if (found != 1)
        return bertc_errorf(err, "answer \"%s\" occurs %d times in \"%.*s\"", answer, found,
                            (int)(end - begin), text + begin);
    return 0;
}

/* ---- examples: tokenised questions with their answer tokens ------------ */

typedef struct Example {
    int32_t ids[SEQ], types[SEQ], mask[SEQ];
    int32_t from[SEQ], to[SEQ];       /* bytes of each context token in the conversation */
    int32_t first, last;              /* the context tokens: first .. last */
    int32_t start, end;               /* the answer tokens */
    int32_t answer_from, answer_to;   /* the answer's bytes */
    QType type;
    const char *question, *conversation;
    int32_t pred_from, pred_to;       /* the prediction of the latest evaluation */
    int pred_type;
} Example;

typedef struct QAData {
    int64_t n, n_train;               /* examples; the first n_train are for training */
    Example *ex;
    double exact_match, f1, type_accuracy;   /* of the latest evaluation */
} QAData;

static char *arena_strdup(Arena *a, const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(bertc_arena_alloc(a, n), s, n);
}

/* The answer's bytes -> its first and last context token. */
static int answer_tokens(Example *e, BertcError *err)
{
    e->start = e->end = -1;
    for (int32_t t = e->first; t <= e->last; t++) {
        if (e->from[t] == e->answer_from)
            e->start = t;
        if (e->to[t] == e->answer_to)
            e->end = t;
    }
    if (e->start < 0 || e->end < e->start)
        return bertc_errorf(err, "the answer \"%.*s\" does not fall on token boundaries in "
                            "\"%s\"", (int)(e->answer_to - e->answer_from),
                            e->conversation + e->answer_from, e->conversation);
    return 0;
}

/* Encodes "[CLS] question [SEP] conversation [SEP]" unpadded, checks it fits,
 * and pads it to SEQ by hand ([PAD] = id 0, type 0, mask 0). */
static int encode_example(const Tokenizer *tok, Arena *scratch, Example *e, BertcError *err)
{
    Encoding enc;
    if (bertc_tokenizer_encode(tok, scratch, e->question, strlen(e->question), e->conversation,
                         strlen(e->conversation), 0, false, &enc, err) != 0)
        return -1;
    if (enc.n_a + 2 > QUERY_LEN || enc.S > SEQ)
        return bertc_errorf(err, "\"%s\" + \"%s\": %d question and %d total tokens, the "
                            "limits are %d and %d", e->question, e->conversation, enc.n_a + 2,
                            enc.S, QUERY_LEN, SEQ);
    memcpy(e->ids, enc.input_ids, sizeof(int32_t) * (size_t)enc.S);
    memcpy(e->types, enc.token_type_ids, sizeof(int32_t) * (size_t)enc.S);
    memcpy(e->mask, enc.attention_mask, sizeof(int32_t) * (size_t)enc.S);
    memcpy(e->from, enc.byte_start, sizeof(int32_t) * (size_t)enc.S);
    memcpy(e->to, enc.byte_end, sizeof(int32_t) * (size_t)enc.S);
    e->first = enc.n_a + 2;
    e->last = e->first + enc.n_b - 1;
    return answer_tokens(e, err);
}

/* One question about turn t of conversation c. */
static int make_example(const Tokenizer *tok, Arena *a, Arena *scratch, Rng *rng,
                        const Conversation *c, const char *text, int t, Example *e,
                        BertcError *err)
{
    const Ask *ask = &c->turn[t].tpl->ask[bertc_rng_randint(rng, 0, 2)];
    memset(e, 0, sizeof *e);
    char question[MAX_TEXT] = "", answer[MAX_TEXT] = "";
    int32_t qlen = 0, alen = 0;
    if (render(c, t, ask->question, question, &qlen, err) != 0 ||
        render(c, t, ask->answer, answer, &alen, err) != 0 ||
        find_answer(c->text, c->turn[t].begin, c->turn[t].end, answer, &e->answer_from,
                    err) != 0)
        return -1;
    e->answer_to = e->answer_from + alen;
    e->type = ask->type;
    e->question = arena_strdup(a, question);
    e->conversation = text;
    bertc_arena_reset(scratch);
    return encode_example(tok, scratch, e, err);
}

/* One more conversation, with a question about each of its turns. */
static int add_conversation(const Tokenizer *tok, Arena *a, Arena *scratch, Rng *rng,
                            QAData *d, BertcError *err)
{
    Conversation c;
    if (generate_conversation(rng, &c, err) != 0)
        return -1;
    const char *text = arena_strdup(a, c.text);
    for (int t = 0; t < c.n_turns; t++)
        if (make_example(tok, a, scratch, rng, &c, text, t, &d->ex[d->n++], err) != 0)
            return -1;
    return 0;
}

static int generate_data(const Tokenizer *tok, Arena *a, QAData *d, BertcError *err)
{
    d->ex = bertc_arena_alloc(a, sizeof(Example) * N_CONV * MAX_TURNS);
    d->n = 0;
    Arena *scratch = bertc_arena_create("tokenize", 1 << 16);
    Rng rng = bertc_rng_seed(DATA_SEED);
    int rc = 0;
    for (int i = 0; i < N_CONV && rc == 0; i++) {
        if (i == N_TRAIN_CONV)
            d->n_train = d->n;
        rc = add_conversation(tok, a, scratch, &rng, d, err);
    }
    bertc_arena_destroy(scratch);
    return rc;
}

/* ---- batches ----------------------------------------------------------- */

/* examples idx[0..n-1] -> the inputs and labels of SPEC §6.6 */
static int make_batch(void *ctx, const int64_t *idx, int64_t n, Graph *g, Batch *b,
                      int64_t *tokens, BertcError *err)
{
    (void)err;
    const QAData *d = ctx;
    int64_t bs[2] = {n, SEQ};
    ITensor ids = bertc_itensor_new(g->step, 2, bs), types = bertc_itensor_new(g->step, 2, bs);
    ITensor mask = bertc_itensor_new(g->step, 2, bs), start = bertc_itensor_new(g->step, 1, &n);
    ITensor end = bertc_itensor_new(g->step, 1, &n), qtype = bertc_itensor_new(g->step, 1, &n);
    *tokens = 0;
    for (int64_t j = 0; j < n; j++) {
        const Example *e = &d->ex[idx[j]];
        memcpy(ids.data + j * SEQ, e->ids, sizeof e->ids);
        memcpy(types.data + j * SEQ, e->types, sizeof e->types);
        memcpy(mask.data + j * SEQ, e->mask, sizeof e->mask);
        for (int t = 0; t < SEQ; t++)
            *tokens += e->mask[t];
        start.data[j] = e->start;
        end.data[j] = e->end;
        qtype.data[j] = (int32_t)e->type;
    }
    bertc_batch_put_ids(b, "input_ids", ids);
    bertc_batch_put_ids(b, "attention_mask", mask);
    bertc_batch_put_ids(b, "token_type_ids", types);
    bertc_batch_put_ids(b, "start_positions", start);
    bertc_batch_put_ids(b, "end_positions", end);
    bertc_batch_put_ids(b, "question_type", qtype);
    return 0;
}

/* ---- SQuAD-style scoring ------------------------------------------------ */

#define MAX_WORDS 32

typedef struct Words {
    int n;
    const char *w[MAX_WORDS];
    char text[MAX_TEXT];
} Words;

/* SQuAD's normalize_answer: lower case, drop punctuation, drop the articles
 * a / an / the, split on white space. */
static void normalize(const char *s, size_t len, Words *out)
{
    size_t k = 0;
    for (size_t i = 0; i < len && k + 1 < sizeof out->text; i++)
        if (!ispunct((unsigned char)s[i]))
            out->text[k++] = (char)tolower((unsigned char)s[i]);
    out->text[k] = '\0';
    out->n = 0;
    char *save;
    for (char *w = strtok_r(out->text, " \t\n", &save); w && out->n < MAX_WORDS;
         w = strtok_r(NULL, " \t\n", &save))
        if (strcmp(w, "a") != 0 && strcmp(w, "an") != 0 && strcmp(w, "the") != 0)
            out->w[out->n++] = w;
}

/* Exact match and the F1 of the bag of normalised words (SQuAD v1.1). */
static void squad_scores(const char *pred, size_t pred_len, const char *gold, size_t gold_len,
                         double *exact, double *f1)
{
    Words p, g;
    normalize(pred, pred_len, &p);
    normalize(gold, gold_len, &g);
    bool taken[MAX_WORDS] = {false};
    int common = 0;
    for (int i = 0; i < p.n; i++)
        for (int j = 0; j < g.n; j++)
            if (!taken[j] && strcmp(p.w[i], g.w[j]) == 0) {
                taken[j] = true;
                common++;
                break;
            }
    *exact = p.n == g.n && common == g.n;
    if (p.n == 0 || g.n == 0)
        *f1 = p.n == g.n;
    else
        *f1 = common ? 2.0 * common / (p.n + g.n) : 0.0;   /* 2PR/(P+R), P = c/|p|, R = c/|g| */
}

/* The context span s <= e < s + MAX_ANSWER that maximises start[s] + end[e]. */
static void best_span(const float *start, const float *end, const Example *e, int32_t *s_out,
                      int32_t *e_out)
{
    float best = -INFINITY;
    *s_out = *e_out = e->first;
    for (int32_t s = e->first; s <= e->last; s++)
        for (int32_t t = s; t <= e->last && t < s + MAX_ANSWER; t++)
            if (start[s] + end[t] > best) {
                best = start[s] + end[t];
                *s_out = s;
                *e_out = t;
            }
}

/* Scores one evaluated batch: predictions go into the examples, sums into
 * sum[0..2] (exact match, F1, correct question types). */
static void score_batch(QAData *d, int64_t first, int64_t n, const Outputs *out, double *sum)
{
    const float *start = bertc_outputs_get(out, "start_logits")->value.data;
    const float *end = bertc_outputs_get(out, "end_logits")->value.data;
    const float *types = bertc_outputs_get(out, "query_logits")->value.data;
    for (int64_t j = 0; j < n; j++) {
        Example *e = &d->ex[first + j];
        int32_t s, t;
        best_span(start + j * SEQ, end + j * SEQ, e, &s, &t);
        e->pred_from = e->from[s];
        e->pred_to = e->to[t];
        e->pred_type = (int)example_argmax(types + j * N_QTYPES, N_QTYPES);
        double exact, f1;
        squad_scores(e->conversation + e->pred_from, (size_t)(e->pred_to - e->pred_from),
                     e->conversation + e->answer_from, (size_t)(e->answer_to - e->answer_from),
                     &exact, &f1);
        sum[0] += exact;
        sum[1] += f1;
        sum[2] += e->pred_type == (int)e->type;
    }
}

/* F1 (the engine's metric), exact match, type accuracy and mean loss over
 * the held-out examples, in batches of 64. */
static int evaluate(void *ctx, Model *m, Graph *g, double *metric, double *loss, BertcError *err)
{
    QAData *d = ctx;
    int64_t n_eval = d->n - d->n_train;
    double loss_sum = 0, sum[3] = {0, 0, 0};
    HeldOut h = held_out(d->n_train, n_eval, 64, "eval");
    while (held_out_next(&h, make_batch, d, m, g, err)) {
        score_batch(d, h.row, h.n, &h.out, sum);
        loss_sum += bertc_outputs_get(&h.out, "loss")->value.data[0] * (double)h.n;
    }
    if (h.failed)
        return -1;
    d->exact_match = sum[0] / (double)n_eval;
    d->f1 = *metric = sum[1] / (double)n_eval;
    d->type_accuracy = sum[2] / (double)n_eval;
    *loss = loss_sum / (double)n_eval;
    return 0;
}

/* What guessing gets: a random context span of 1-3 tokens, and always
 * answering the most frequent question type. */
static void baselines(const QAData *d, double *exact, double *f1, double *type_accuracy)
{
    Rng rng = bertc_rng_seed(DATA_SEED + 1);
    int64_t n_eval = d->n - d->n_train, per_type[N_QTYPES] = {0};
    double sum_exact = 0, sum_f1 = 0;
    for (int64_t i = d->n_train; i < d->n; i++) {
        const Example *e = &d->ex[i];
        int32_t s = (int32_t)bertc_rng_randint(&rng, e->first, e->last);
        int32_t t = s + (int32_t)bertc_rng_randint(&rng, 0, 2);
        t = t > e->last ? e->last : t;
        double x, f;
        squad_scores(e->conversation + e->from[s], (size_t)(e->to[t] - e->from[s]),
                     e->conversation + e->answer_from, (size_t)(e->answer_to - e->answer_from),
                     &x, &f);
        sum_exact += x;
        sum_f1 += f;
        per_type[e->type]++;
    }
    int64_t most = 0;
    for (int k = 0; k < N_QTYPES; k++)
        most = per_type[k] > most ? per_type[k] : most;
    *exact = sum_exact / (double)n_eval;
    *f1 = sum_f1 / (double)n_eval;
    *type_accuracy = (double)most / (double)n_eval;
}

/* ---- the run ------------------------------------------------------------ */

static int qaconv_config(const Tokenizer *tok, BertConfig *out, BertcError *err)
{
    BertConfig c;
    if (bertc_model_config_default(&c, "QAConvModelV2", err) != 0)
        return -1;
    c.vocab_size = tok->V;
    c.hidden_size = 128;
    c.num_hidden_layers = 2;
    c.num_attention_heads = 4;
    c.intermediate_size = 256;
    c.max_position_embeddings = SEQ;
    c.sep_token_id = tok->sep_id;
    if (bertc_model_config_set(&c, "query_len", QUERY_LEN, err) != 0 ||
        bertc_model_config_set(&c, "conv_filters", 128, err) != 0 ||
        bertc_model_config_set(&c, "num_question_types", N_QTYPES, err) != 0)
        return -1;
    *out = c;
    return 0;
}

static TrainOptions qaconv_options(void)
{
    TrainOptions opt = bertc_train_defaults();
    opt.steps = 800;
    opt.batch_size = 32;
    opt.lr = 5e-4;
    opt.weight_decay = 0.01;
    opt.eval_every = 100;
    return opt;
}

/* A few held-out questions with the answer and what the model said. */
static void show_examples(const QAData *d)
{
    int64_t n_eval = d->n - d->n_train;
    for (int k = 0; k < 3; k++) {
        const Example *e = &d->ex[d->n_train + k * n_eval / 3];
        printf("\n  %s\n  Q: %s  [%s]\n  gold: \"%.*s\"   predicted: \"%.*s\" [%s]\n",
               e->conversation, e->question, qtype_names[e->type],
               (int)(e->answer_to - e->answer_from), e->conversation + e->answer_from,
               (int)(e->pred_to - e->pred_from), e->conversation + e->pred_from,
               qtype_names[e->pred_type]);
    }
}

static int train(QAData *d, Model *m, TrainOptions *opt, const char *out,
                 BertcError *err)
{
    TrainTask task = {.n_train = d->n_train, .make_batch = make_batch,
                      .evaluate = evaluate, .metric_name = "F1", .ctx = d};
    TrainResult res;
    if (bertc_train_run(m, &task, opt, &res, err) != 0)
        return -1;
    double base_exact, base_f1, base_type;
    baselines(d, &base_exact, &base_f1, &base_type);
    printf("held out: exact match %.1f%%, F1 %.1f%% (random span: %.1f%%, %.1f%%), "
           "question type %.1f%% (most frequent type: %.1f%%)\ntrained in %.0f s at %.0f "
           "tokens/s\n", 100 * d->exact_match, 100 * d->f1, 100 * base_exact, 100 * base_f1,
           100 * d->type_accuracy, 100 * base_type, res.seconds, res.tokens_per_second);
    char picture[BERTC_PATH_MAX];
    if (bertc_path_join(picture, out, "loss.svg", "--out", err) != 0 ||
        bertc_svg_loss_curve(picture, &res, "bertc qaconv: answer spans in conversations", err) != 0)
        return -1;
    show_examples(d);
    printf("\nwrote %s and %s\n", picture, opt->checkpoint);
    return 0;
}

/* Everything after the flags; what it allocates comes from `arena`, which
 * run() frees on every path. */
static int generate_and_train(TrainOptions opt, const char *out, Arena *arena,
                              BertcError *err)
{
    Tokenizer tok;
    QAData data;
    if (example_need_data(VOCAB, err) != 0 ||
        bertc_tokenizer_load(&tok, arena, example_data_path(VOCAB), err) != 0 ||
        generate_data(&tok, arena, &data, err))
        return -1;
    printf("bertc qaconv: %lld questions about %d generated conversations (%lld train, %lld "
           "held out)\n  e.g. %s\n", (long long)data.n, N_CONV, (long long)data.n_train,
           (long long)(data.n - data.n_train), data.ex[0].conversation);
    BertConfig cfg;
    Model m;
    if (qaconv_config(&tok, &cfg, err) != 0 || example_model(&m, arena, &cfg, err) != 0)
        return -1;
    printf("model: QAConvModelV2, %d layers, H=%d, query_len %d, %d filters, %lld parameters\n",
           cfg.num_hidden_layers, cfg.hidden_size, (int)bertc_model_config_get(&cfg, "query_len"),
           (int)bertc_model_config_get(&cfg, "conv_filters"),
           (long long)bertc_registry_count(m.reg));
    return train(&data, &m, &opt, out, err);
}

static int run(int argc, char **argv, BertcError *err)
{
    TrainOptions opt = qaconv_options();
    const char *out = "build/qaconv";
    char checkpoint[BERTC_PATH_MAX];
    if (example_flags(argc, argv, &opt, &out, checkpoint, err) != 0)
        return -1;
    Arena *arena = bertc_arena_create("qaconv", 1 << 20);
    int rc = generate_and_train(opt, out, arena, err);
    bertc_arena_destroy(arena);
    return rc;
}

int main(int argc, char **argv)
{
    return example_main("qaconv", argc, argv, run);
}
