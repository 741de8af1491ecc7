/* test/test_zoo_spanbert.c — SpanBERT's span masking (SPEC §6.7.2) by hand
 * and by its invariants, the bounded draw loop, and one test per wrong
 * input of SpanBertForPreTraining, each message naming the tensor and the
 * limit. PyTorch parity of the model and the masking is in test_zoo_parity.c
 * (test/data/zoo/spanbert_*). */
#include "test/test_util.h"
#include "zoo/zoo.h"
#include "zoo/models/spanbert_internal.h"

#include <criterion/criterion.h>
#include <string.h>

TestSuite(zoo_spanbert);

enum { PAD = 0, UNK = 1, CLS = 2, SEP = 3, MASK = 4 };
enum { W = TOKEN_WORD_START, C = TOKEN_CONTINUATION, X = TOKEN_EXCLUDED, P = TOKEN_PADDING };

/* A tiny SpanBERT config: V 50, H 8, one layer, S <= 16, span_pos_emb 6 rows. */
static BertConfig tiny_config(void)
{
    BertConfig c = test_config_default("SpanBertForPreTraining");
    c.vocab_size = 50;
    c.hidden_size = 8;
    c.num_hidden_layers = 1;
    c.num_attention_heads = 2;
    c.intermediate_size = 16;
    c.max_position_embeddings = 16;
    test_config_set(&c, "sbo_dim_ffn", 12);
    test_config_set(&c, "sbo_max_span_length", 2);
    c.pad_token_id = PAD;
    c.unk_token_id = UNK;
    c.cls_token_id = CLS;
    c.sep_token_id = SEP;
    c.mask_token_id = MASK;
    test_config_set(&c, "masking", true);
    test_config_set(&c, "masking.seed", 1);
    return c;
}

/* Masks one row; returns bertc_span_mask_row's status, the message in err. */
static int mask_row(const BertConfig *cfg, const int32_t *tokens, const int32_t *kinds,
                    int64_t l, Rng *rng, int32_t *raw, BertcError *err)
{
    Arena *scratch = bertc_arena_create("scratch", 1 << 12);
    int rc = bertc_span_mask_row(cfg, tokens, kinds, l, rng, scratch, raw, err);
    bertc_arena_destroy(scratch);
    return rc;
}

static void expect_mask(const int32_t *got, const int32_t *want, int64_t l, const char *what)
{
    for (int64_t t = 0; t < l; t++)
        cr_expect_eq(got[t], want[t], "%s: raw_mask[%lld] = %d, expected %d", what,
                     (long long)t, got[t], want[t]);
}

/* ---- the masking by hand --------------------------------------------- */

/* span_probability 1 makes every span 1 long (Geo(1) = 0, clipped to 1), so
 * the result does not depend on the draws: l = 20 gives a budget of
 * floor(0.15 · 20) = 3, spent on the three one-piece words 3, 7, 12. The
 * two-piece word at 15 never fits a span of 1; [CLS], [SEP] and excluded
 * tokens are never candidates. */
Test(zoo_spanbert, hand_checked_single_tokens)
{
    BertConfig cfg = tiny_config();
    test_config_set(&cfg, "masking.span_probability", 1.0);
    int32_t tokens[20], kinds[20], raw[20], want[20] = {0};
    for (int t = 0; t < 20; t++) {
        tokens[t] = 10 + t;
        kinds[t] = X;
    }
    tokens[0] = CLS;
    tokens[19] = SEP;
    kinds[0] = kinds[19] = W;       /* recognised by id, not by kind */
    kinds[3] = kinds[7] = kinds[12] = kinds[15] = W;
    kinds[16] = C;
    want[3] = want[7] = want[12] = 1;
    Rng rng = bertc_rng_seed(5);
    BertcError err;
    cr_assert_eq(mask_row(&cfg, tokens, kinds, 20, &rng, raw, &err), 0, "%s", err.msg);
    expect_mask(raw, want, 20, "single tokens");
}

/* Whole words: the only candidate is "w ##a ##b" at 3..5 with a budget of 3.
 * A span shorter than 3 is rejected (the word would not fit); a longer one
 * is cut to the budget (budget < 5), so the word is masked whole, and the
 * excluded token after it is not. */
Test(zoo_spanbert, hand_checked_whole_word)
{
    BertConfig cfg = tiny_config();
    int32_t tokens[20], kinds[20], raw[20], want[20] = {0};
    for (int t = 0; t < 20; t++) {
        tokens[t] = 10 + t;
        kinds[t] = X;
    }
    tokens[0] = CLS;
    tokens[19] = SEP;
    kinds[3] = W;
    kinds[4] = kinds[5] = C;
    want[3] = want[4] = want[5] = 1;
    for (uint64_t seed = 0; seed < 20; seed++) {
        Rng rng = bertc_rng_seed(seed);
        BertcError err;
        cr_assert_eq(mask_row(&cfg, tokens, kinds, 20, &rng, raw, &err), 0, "%s", err.msg);
        expect_mask(raw, want, 20, "whole word");
    }
}

/* Cleaning and the batch: raw covers [UNK] (a word start, so a candidate);
 * mask_labels drops it; labels keep the original id, input_ids get [MASK];
 * the padded tail of row 1 stays 0 / -100 / PAD. */
Test(zoo_spanbert, hand_checked_batch_cleaning)
{
    BertConfig cfg = tiny_config();
    test_config_set(&cfg, "masking.span_probability", 1.0);
    int32_t ids[2][20], kinds[2][20], lengths[2] = {20, 7};
    for (int b = 0; b < 2; b++)
        for (int t = 0; t < 20; t++) {
            ids[b][t] = 10 + t;
            kinds[b][t] = X;
        }
    ids[0][0] = ids[1][0] = CLS;
    ids[0][19] = ids[1][6] = SEP;
    ids[0][1] = UNK;
    kinds[0][1] = kinds[0][5] = kinds[0][9] = W;     /* budget 3: 1, 5, 9 */
    kinds[1][2] = W;                                  /* budget floor(1.05) = 1: 2 */
    for (int t = 7; t < 20; t++) {
        ids[1][t] = PAD;
        kinds[1][t] = P;
    }
    int64_t bs[2] = {2, 20}, b2 = 2;
    ITensor tids = bertc_itensor_view(&ids[0][0], 2, bs), tkinds = bertc_itensor_view(&kinds[0][0], 2, bs);
    ITensor tlen = bertc_itensor_view(lengths, 1, &b2);
    Arena *a = bertc_arena_create("masking", 1 << 14);
    SpanMasking m;
    BertcError err;
    cr_assert_eq(bertc_span_masking(&cfg, &tids, &tkinds, &tlen, a, &m, &err), 0, "%s", err.msg);
    for (int64_t i = 0; i < 40; i++) {
        int b = (int)(i / 20), t = (int)(i % 20);
        bool raw = (b == 0 && (t == 1 || t == 5 || t == 9)) || (b == 1 && t == 2);
        bool masked = raw && !(b == 0 && t == 1);
        cr_expect_eq(m.raw_mask_labels.data[i], raw, "raw_mask_labels[%d, %d]", b, t);
        cr_expect_eq(m.mask_labels.data[i], masked, "mask_labels[%d, %d]", b, t);
        cr_expect_eq(m.labels.data[i], masked ? ids[b][t] : -100, "labels[%d, %d]", b, t);
        cr_expect_eq(m.input_ids.data[i], masked ? MASK : ids[b][t], "input_ids[%d, %d]", b, t);
    }
    bertc_arena_destroy(a);
}

/* ---- budget arithmetic ------------------------------------------------- */

/* A row of one-piece words: every draw can progress, so exactly the budget
 * floor(0.15 · l) is covered (by hand: 0.9, 1.05, 3, 6, 15, 76.8). A small
 * rest (< 5) is spent in one span; a long span never overshoots. */
Test(zoo_spanbert, budget_is_floor_of_fraction_times_length)
{
    static const int64_t lengths[] = {6, 7, 20, 40, 100, 512};
    static const int expected[] = {0, 1, 3, 6, 15, 76};
    static int32_t tokens[512], kinds[512], raw[512];
    BertConfig cfg = tiny_config();
    for (size_t k = 0; k < sizeof lengths / sizeof lengths[0]; k++) {
        int64_t l = lengths[k];
        for (int64_t t = 0; t < l; t++) {
            tokens[t] = t == 0 ? CLS : t == l - 1 ? SEP : 10;
            kinds[t] = W;
        }
        for (uint64_t seed = 0; seed < 10; seed++) {
            Rng rng = bertc_rng_seed(seed);
            BertcError err;
            cr_assert_eq(mask_row(&cfg, tokens, kinds, l, &rng, raw, &err), 0, "%s", err.msg);
            int covered = 0;
            for (int64_t t = 0; t < l; t++)
                covered += raw[t];
            cr_expect_eq(covered, expected[k], "l = %lld, seed %llu: %d covered, budget %d",
                         (long long)l, (unsigned long long)seed, covered, expected[k]);
            if (expected[k] == 0)   /* no budget: no draw */
                cr_expect_eq(rng.state, seed, "l = %lld drew from the RNG", (long long)l);
        }
    }
}

/* ---- whole-word spans on random rows ----------------------------------- */

/* Random rows of words, continuations and excluded tokens: every maximal
 * run of covered positions starts at a word start (never [CLS]/[SEP], a
 * continuation or an excluded token), and the contiguous "##" pieces of that
 * word are covered with it. */
Test(zoo_spanbert, spans_start_at_word_starts_and_cover_the_word)
{
    enum { L = 64 };
    BertConfig cfg = tiny_config();
    test_config_set(&cfg, "masking.masking_budget", 0.3);
    int32_t tokens[L], kinds[L], raw[L];
    Rng gen = bertc_rng_seed(99);
    int runs = 0;
    for (int row = 0; row < 200; row++) {
        for (int t = 0; t < L; t++) {
            int64_t r = bertc_rng_randint(&gen, 0, 9);
            tokens[t] = t == 0 ? CLS : (t == L - 1 || t == L / 2) ? SEP : 10;
            kinds[t] = r < 6 ? W : r < 9 ? C : X;
        }
        kinds[1] = W;
        Rng rng = bertc_rng_seed((uint64_t)row);
        BertcError err;
        cr_assert_eq(mask_row(&cfg, tokens, kinds, L, &rng, raw, &err), 0, "row %d: %s", row,
                     err.msg);
        for (int s = 1; s < L; s++) {
            if (!raw[s] || raw[s - 1])
                continue;
            runs++;
            cr_expect(kinds[s] == W && tokens[s] != SEP,
                      "row %d: a run starts at %d, kind %d, token %d", row, s, kinds[s],
                      tokens[s]);
            for (int t = s + 1; t < L && kinds[t] == C && tokens[t] != SEP; t++)
                cr_expect(raw[t], "row %d: word at %d masked without its piece %d", row, s, t);
        }
        cr_expect_eq(raw[0], 0, "row %d: [CLS] covered", row);
    }
    cr_expect_gt(runs, 1000, "only %d runs in 200 rows", runs);
}

/* ---- the bounded loop (SPEC §6.8) -------------------------------------- */

/* A positive budget and no candidate at all: randint(0, -1) cannot be drawn
 * (the seed raises ValueError); an error at once. */
Test(zoo_spanbert, no_candidate_is_an_error)
{
    BertConfig cfg = tiny_config();
    int32_t tokens[7] = {CLS, 10, 11, 12, 13, 14, SEP};
    int32_t kinds[7] = {W, X, X, C, X, X, W}, raw[7];
    Rng rng = bertc_rng_seed(1);
    BertcError err = {{0}};
    cr_assert_neq(mask_row(&cfg, tokens, kinds, 7, &rng, raw, &err), 0);
    cr_expect(strstr(err.msg, "budget of 1") && strstr(err.msg, "no span candidate"),
              "message: %s", err.msg);
}

/* The row of zoo.h's comment, where the seed spins forever: with span
 * probability 1 every span is 1 long, b is covered alone, the budget of
 * floor(0.3 · 9) = 2 keeps 1, and both other words are longer than 1. */
Test(zoo_spanbert, stuck_row_stops_after_the_draw_limit)
{
    BertConfig cfg = tiny_config();
    test_config_set(&cfg, "masking.masking_budget", 0.3);
    test_config_set(&cfg, "masking.span_probability", 1.0);
    int32_t tokens[9] = {CLS, MASK, 20, 21, SEP, 22, 23, 24, SEP};
    int32_t kinds[9] = {C, W, C, W, W, W, C, C, C}, raw[9];
    Rng rng = bertc_rng_seed(1);
    BertcError err = {{0}};
    cr_assert_neq(mask_row(&cfg, tokens, kinds, 9, &rng, raw, &err), 0);
    cr_expect(strstr(err.msg, "1048576 draws") && strstr(err.msg, "SPAN_MASKING_MAX_DRAWS") &&
                  strstr(err.msg, "left 1 of the budget"), "message: %s", err.msg);
    /* two draws (span, src) per iteration; each adds SplitMix64's odd constant
     * 0x9E3779B97F4A7C15 to the state, whose inverse mod 2^64 is below */
    uint64_t draws = (rng.state - 1) * 0xF1DE83E19937733Dull;
    cr_expect_eq(draws, 2 * (uint64_t)SPAN_MASKING_MAX_DRAWS, "%llu RNG draws",
                 (unsigned long long)draws);
}

/* Through the batch the message names the row. */
Test(zoo_spanbert, failing_row_in_a_batch_names_the_row)
{
    BertConfig cfg = tiny_config();
    int32_t ids[2][8] = {{CLS, 10, 11, 12, 13, 14, 15, SEP}, {CLS, 10, 11, 12, 13, 14, SEP, PAD}};
    int32_t kinds[2][8] = {{W, W, W, W, W, W, W, W}, {W, X, X, X, X, X, W, P}};
    int32_t lengths[2] = {8, 7};
    int64_t bs[2] = {2, 8}, b2 = 2;
    ITensor tids = bertc_itensor_view(&ids[0][0], 2, bs), tkinds = bertc_itensor_view(&kinds[0][0], 2, bs);
    ITensor tlen = bertc_itensor_view(lengths, 1, &b2);
    Arena *a = bertc_arena_create("masking", 1 << 12);
    SpanMasking m;
    BertcError err = {{0}};
    cr_assert_neq(bertc_span_masking(&cfg, &tids, &tkinds, &tlen, a, &m, &err), 0);
    cr_expect(strstr(err.msg, "row 1 (length 7)") && strstr(err.msg, "no span candidate"),
              "message: %s", err.msg);
    bertc_arena_destroy(a);
}

/* ---- wrong inputs of the model --------------------------------------------- */

enum { B = 2, S = 8 };

/* Two rows, the second padded; masked at (0, 2..3) and (1, 3). */
typedef struct Inputs {
    int32_t input_ids[B][S], attention_mask[B][S], labels[B][S], mask_labels[B][S];
    int32_t original[B][S], kinds[B][S], lengths[B];
    float floats[B][S];
} Inputs;

static Inputs valid_inputs(void)
{
    Inputs x = {
        .input_ids = {{CLS, 10, MASK, MASK, 11, 12, 13, SEP}, {CLS, 14, 15, MASK, 16, SEP, 0, 0}},
        .attention_mask = {{1, 1, 1, 1, 1, 1, 1, 1}, {1, 1, 1, 1, 1, 1, 0, 0}},
        .labels = {{-100, -100, 20, 21, -100, -100, -100, -100},
                   {-100, -100, -100, 22, -100, -100, -100, -100}},
        .mask_labels = {{0, 0, 1, 1, 0, 0, 0, 0}, {0, 0, 0, 1, 0, 0, 0, 0}},
        .original = {{CLS, 10, 20, 21, 11, 12, 13, SEP}, {CLS, 14, 15, 22, 16, SEP, 0, 0}},
        .kinds = {{W, W, W, C, W, X, W, W}, {W, W, W, W, W, W, P, P}},
        .lengths = {8, 6},
    };
    return x;
}

/* A Batch over x; `skip` names an input to leave out (or NULL). */
static Batch batch_of(Inputs *x, const char *skip)
{
    static const int64_t bs[2] = {B, S}, b1 = B;
    struct { const char *name; int32_t *data; int ndim; } items[] = {
        {"input_ids", &x->input_ids[0][0], 2},
        {"attention_mask", &x->attention_mask[0][0], 2},
        {"labels", &x->labels[0][0], 2},
        {"mask_labels", &x->mask_labels[0][0], 2},
        {"masking.original_input_ids", &x->original[0][0], 2},
        {"masking.token_kinds", &x->kinds[0][0], 2},
        {"masking.lengths", x->lengths, 1},
    };
    Batch in;
    bertc_batch_init(&in, "inputs.safetensors");
    for (size_t i = 0; i < sizeof items / sizeof items[0]; i++)
        if (!skip || strcmp(skip, items[i].name) != 0)
            bertc_batch_put_ids(&in, items[i].name,
                          bertc_itensor_view(items[i].data, items[i].ndim, items[i].ndim == 2 ? bs : &b1));
    return in;
}

/* Runs the tiny model on `in`; returns its status and the message. On
 * success, every name of want[0..n_want) must be an output. */
static int run_tiny(const BertConfig *cfg, const Batch *in, BertcError *err,
                    const char *const *want, size_t n_want)
{
    Arena *params = bertc_arena_create("params", 1 << 16);
    Model m;
    cr_assert_eq(bertc_model_build(&m, params, cfg, err), 0, "%s", err->msg);
    Rng rng = bertc_rng_seed(3);
    bertc_registry_init_weights(m.reg, &rng, 0.02f);
    Graph *g = bertc_ag_graph_create(1 << 18, 0);
    bertc_ag_set_training(g, false);
    Outputs out;
    bertc_outputs_init(&out);
    int rc = bertc_model_forward(&m, g, in, &out, err);
    for (size_t i = 0; rc == 0 && i < n_want; i++) {
        bool found = false;
        for (int k = 0; k < out.n; k++)
            found |= strcmp(out.items[k].name, want[i]) == 0;
        cr_expect(found, "no output '%s'", want[i]);
    }
    bertc_ag_graph_destroy(g);
    bertc_arena_destroy(params);
    return rc;
}

static void fails_with(const BertConfig *cfg, const Batch *in, const char *want1,
                       const char *want2)
{
    BertcError err = {{0}};
    cr_assert_neq(run_tiny(cfg, in, &err, NULL, 0), 0, "expected an error with \"%s\"", want1);
    cr_expect(strstr(err.msg, want1), "message \"%s\" lacks \"%s\"", err.msg, want1);
    cr_expect(strstr(err.msg, want2), "message \"%s\" lacks \"%s\"", err.msg, want2);
}

Test(zoo_spanbert, valid_inputs_give_every_output)
{
    BertConfig cfg = tiny_config();
    Inputs x = valid_inputs();
    Batch in = batch_of(&x, NULL);
    BertcError err;
    static const char *const names[] = {
        "mlm_logits", "sbo_logits", "last_hidden_state", "hidden_states.0", "hidden_states.1",
        "mlm_loss", "sbo_loss", "loss", "masking.raw_mask_labels", "masking.mask_labels",
        "masking.input_ids", "masking.labels"};
    cr_expect_eq(run_tiny(&cfg, &in, &err, names, sizeof names / sizeof names[0]), 0, "%s",
                 err.msg);
}

/* span_pos_emb has 3 · sbo_max_span_length rows (the seed's
 * nn.Embedding(max_span_length*3, dim_model)), and the tied aliases exist. */
Test(zoo_spanbert, span_pos_emb_rows_follow_the_config)
{
    BertConfig cfg = tiny_config();
    test_config_set(&cfg, "sbo_max_span_length", 4);
    Arena *params = bertc_arena_create("params", 1 << 16);
    Model m;
    BertcError err;
    cr_assert_eq(bertc_model_build(&m, params, &cfg, &err), 0, "%s", err.msg);
    int i = bertc_registry_find(m.reg, "sbo_head.span_pos_emb.weight");
    cr_assert_geq(i, 0);
    cr_expect_eq(m.reg->params[i].var->value.shape[0], 12);
    static const char *aliases[][2] = {
        {"cls.predictions.decoder.weight", "bert.embeddings.word_embeddings.weight"},
        {"cls.predictions.decoder.bias", "cls.predictions.bias"},
        {"sbo_head.classifier.bias", "sbo_head.bias"},
    };
    for (int k = 0; k < 3; k++) {
        int alias = bertc_registry_find(m.reg, aliases[k][0]), owner = bertc_registry_find(m.reg, aliases[k][1]);
        cr_assert(alias >= 0 && owner >= 0, "%s or %s missing", aliases[k][0], aliases[k][1]);
        cr_expect_eq(m.reg->params[alias].alias_of, owner, "%s is not tied to %s",
                     aliases[k][0], aliases[k][1]);
    }
    bertc_arena_destroy(params);
}

Test(zoo_spanbert, missing_inputs)
{
    BertConfig cfg = tiny_config();
    Inputs x = valid_inputs();
    Batch in = batch_of(&x, "input_ids");
    fails_with(&cfg, &in, "missing input tensor 'input_ids'", "inputs.safetensors");
    in = batch_of(&x, "mask_labels");
    fails_with(&cfg, &in, "missing input tensor 'mask_labels'", "inputs.safetensors");
    in = batch_of(&x, "masking.lengths");
    fails_with(&cfg, &in, "missing input tensor 'masking.lengths'", "inputs.safetensors");
}

Test(zoo_spanbert, wrong_dtype)
{
    BertConfig cfg = tiny_config();
    Inputs x = valid_inputs();
    Batch in = batch_of(&x, NULL);
    int64_t bs[2] = {B, S};
    bertc_batch_put_f32(&in, "mask_labels", bertc_tensor_view(&x.floats[0][0], 2, bs));
    fails_with(&cfg, &in, "'mask_labels'", "must hold integers (I64 or I32)");
}

Test(zoo_spanbert, sequence_longer_than_positions)
{
    BertConfig cfg = tiny_config();
    cfg.max_position_embeddings = 7;
    Inputs x = valid_inputs();
    Batch in = batch_of(&x, NULL);
    fails_with(&cfg, &in, "'input_ids' has sequence length 8", "max_position_embeddings 7");
}

Test(zoo_spanbert, id_beyond_vocab)
{
    BertConfig cfg = tiny_config();
    Inputs x = valid_inputs();
    x.input_ids[1][2] = 50;
    Batch in = batch_of(&x, NULL);
    fails_with(&cfg, &in, "'input_ids'[1, 2] = 50", "vocab_size 50");
    x = valid_inputs();
    x.original[0][4] = 77;
    in = batch_of(&x, NULL);
    fails_with(&cfg, &in, "'masking.original_input_ids'[0, 4] = 77", "vocab_size 50");
}

Test(zoo_spanbert, labels_neither_ignored_nor_an_id)
{
    BertConfig cfg = tiny_config();
    Inputs x = valid_inputs();
    x.labels[0][5] = 50;
    Batch in = batch_of(&x, NULL);
    fails_with(&cfg, &in, "'labels'[0, 5] = 50 is neither -100", "vocab_size 50");
    x = valid_inputs();
    x.labels[1][0] = -1;
    in = batch_of(&x, NULL);
    fails_with(&cfg, &in, "'labels'[1, 0] = -1 is neither -100", "vocab_size 50");
}

Test(zoo_spanbert, mask_labels_not_binary)
{
    BertConfig cfg = tiny_config();
    Inputs x = valid_inputs();
    x.mask_labels[1][4] = 2;
    Batch in = batch_of(&x, NULL);
    fails_with(&cfg, &in, "'mask_labels'[1, 4] = 2", "neither 0 nor 1");
}

/* The SBO head needs x_{s-1} and x_{e+1} inside the row and at most
 * 3 · sbo_max_span_length positions per span. */
Test(zoo_spanbert, spans_at_the_borders_or_too_long)
{
    BertConfig cfg = tiny_config();
    Inputs x = valid_inputs();
    x.mask_labels[1][0] = 1;
    Batch in = batch_of(&x, NULL);
    fails_with(&cfg, &in, "'mask_labels'[1, 0] = 1", "no left boundary x_{s-1} (spans need s >= 1)");
    x = valid_inputs();
    x.mask_labels[0][7] = 1;
    in = batch_of(&x, NULL);
    fails_with(&cfg, &in, "'mask_labels'[0, 7] = 1", "spans need e <= S-2 = 6");
    test_config_set(&cfg, "sbo_max_span_length", 1);    /* 3 rows */
    x = valid_inputs();
    for (int t = 1; t <= 4; t++)
        x.mask_labels[0][t] = 1;
    in = batch_of(&x, NULL);
    fails_with(&cfg, &in, "'mask_labels' row 0 has a span [1, 4] of 4",
               "the 3 rows of sbo_head.span_pos_emb");
    x.mask_labels[0][4] = 0;        /* 3 positions fit */
    in = batch_of(&x, NULL);
    BertcError err;
    cr_expect_eq(run_tiny(&cfg, &in, &err, NULL, 0), 0, "%s", err.msg);
}

Test(zoo_spanbert, masking_lengths_beyond_the_row)
{
    BertConfig cfg = tiny_config();
    Inputs x = valid_inputs();
    x.lengths[1] = 9;
    Batch in = batch_of(&x, NULL);
    fails_with(&cfg, &in, "'masking.lengths'[1] = 9", "[0, S = 8]");
}

Test(zoo_spanbert, token_kinds_outside_the_four)
{
    BertConfig cfg = tiny_config();
    Inputs x = valid_inputs();
    x.kinds[0][3] = 3;
    Batch in = batch_of(&x, NULL);
    fails_with(&cfg, &in, "'masking.token_kinds'[0, 3] = 3", "outside {-1 padding, 0 word start");
    x.kinds[0][3] = -2;
    in = batch_of(&x, NULL);
    fails_with(&cfg, &in, "'masking.token_kinds'[0, 3] = -2", "2 excluded}");
}

Test(zoo_spanbert, masking_inputs_need_the_config_block)
{
    BertConfig cfg = tiny_config();
    test_config_set(&cfg, "masking", false);
    Inputs x = valid_inputs();
    Batch in = batch_of(&x, NULL);
    fails_with(&cfg, &in, "masking.* inputs", "\"masking\" object");
}
