/* test/test_zoo_spanbert_options.c — SpanBERT's "originals as options" and
 * its named intermediates: the paper's masking (masking.style "original")
 * by its statistics and invariants, the original SBO head (sbo_head
 * "original") by its parameters and its no-span case, and every sbo.*
 * output by its declared shape and by hand. PyTorch parity of both options
 * and of the sbo.* values is in test_zoo_parity.c (test/data/zoo/
 * spanbert_named, spanbert_original, spanbert_original_b). */
#include "test/test_util.h"
#include "zoo/zoo.h"
#include "zoo/models/spanbert_internal.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

TestSuite(zoo_spanbert_options);

enum { PAD = 0, UNK = 1, CLS = 2, SEP = 3, MASK = 4 };
enum { W = TOKEN_WORD_START, C = TOKEN_CONTINUATION, X = TOKEN_EXCLUDED };

/* V 200 (rows of distinct tokens), H 8, one layer, S <= 16. */
static BertConfig tiny_config(int masking_style, int sbo_head)
{
    BertConfig c = test_config_default("SpanBertForPreTraining");
    c.vocab_size = 200;
    c.hidden_size = 8;
    c.num_hidden_layers = 1;
    c.num_attention_heads = 2;
    c.intermediate_size = 16;
    c.max_position_embeddings = 16;
    test_config_set(&c, "sbo_dim_ffn", 12);
    test_config_set(&c, "sbo_max_span_length", 2);
    test_config_set(&c, "sbo_max_targets", 4);
    test_config_set(&c, "sbo_position_embedding_size", 5);
    test_config_set(&c, "sbo_head", sbo_head);
    c.pad_token_id = PAD;
    c.unk_token_id = UNK;
    c.cls_token_id = CLS;
    c.sep_token_id = SEP;
    c.mask_token_id = MASK;
    test_config_set(&c, "masking", true);
    test_config_set(&c, "masking.seed", 1);
    test_config_set(&c, "masking.style", masking_style);
    return c;
}

static int mask_row(const BertConfig *cfg, const int32_t *tokens, const int32_t *kinds,
                    int64_t l, Rng *rng, int32_t *raw)
{
    Arena *scratch = bertc_arena_create("scratch", 1 << 14);
    BertcError err = {{0}};
    int rc = bertc_span_mask_row(cfg, tokens, kinds, l, rng, scratch, raw, &err);
    cr_expect_eq(rc, 0, "%s", err.msg);
    bertc_arena_destroy(scratch);
    return rc;
}

/* [CLS] w ... w [SEP] of l tokens, distinct ids 10.., kinds from `kind`. */
static void word_row(int32_t *tokens, int32_t *kinds, int64_t l, Rng *gen, double p_continue)
{
    for (int64_t t = 0; t < l; t++) {
        tokens[t] = t == 0 ? CLS : t == l - 1 ? SEP : (int32_t)(10 + t);
        kinds[t] = gen && t > 1 && bertc_rng_uniform(gen) < p_continue ? C : W;
    }
}

/* ---- masking.style "original" -------------------------------------------- */

/* The span length in words follows p(1-p)^(k-1) / Z on [1, cap]: each
 * frequency over 200000 draws within 5 standard deviations of the
 * renormalised pmf, and nothing outside [1, cap]. The seed's clipped
 * Geo(p) would put 0.8^10 = 11 % on the cap, the renormalised pmf 3.0 %. */
Test(zoo_spanbert_options, span_length_is_the_renormalised_geometric)
{
    const struct { double p; int cap; } cases[] = {{0.2, 10}, {0.3, 6}, {1.0, 10}};
    enum { N = 200000 };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        SpanMaskingConfig mc = {.span_probability = cases[c].p,
                                .max_span_length_cap = cases[c].cap};
        long count[32] = {0};
        Rng rng = bertc_rng_seed(42 + c);
        for (int i = 0; i < N; i++) {
            int64_t k = bertc_span_length_words(&mc, &rng);
            cr_assert(k >= 1 && k <= cases[c].cap, "p %g cap %d: drew %lld", cases[c].p,
                      cases[c].cap, (long long)k);
            count[k]++;
        }
        double z = 0;
        for (int k = 1; k <= cases[c].cap; k++)
            z += cases[c].p * pow(1 - cases[c].p, k - 1);
        for (int k = 1; k <= cases[c].cap; k++) {
            double pk = cases[c].p * pow(1 - cases[c].p, k - 1) / z;
            double got = (double)count[k] / N, sd = sqrt(pk * (1 - pk) / N);
            cr_expect(fabs(got - pk) <= 5 * sd + 1e-12,
                      "p %g cap %d: P(length %d) = %.5f over %d draws, pmf %.5f (5 sd = %.5f)",
                      cases[c].p, cases[c].cap, k, got, N, pk, 5 * sd);
        }
    }
}

/* Rows of one-piece words: exactly ceil(0.15 · n) tokens are covered, n
 * the l - 2 tokens between [CLS] and [SEP] (the seed would take
 * floor(0.15 · l): 1, 3, 3, 15, 76). */
Test(zoo_spanbert_options, budget_is_ceil_of_the_block)
{
    static const int64_t n[] = {10, 18, 33, 100, 510};
    static const int expected[] = {2, 3, 5, 15, 77};   /* math.ceil(0.15 * n) in Python */
    static int32_t tokens[512], kinds[512], raw[512];
    BertConfig cfg = tiny_config(SPAN_MASKING_ORIGINAL, SBO_HEAD_SEED);
    for (size_t k = 0; k < sizeof n / sizeof n[0]; k++) {
        int64_t l = n[k] + 2;
        word_row(tokens, kinds, l, NULL, 0);
        for (uint64_t seed = 0; seed < 10; seed++) {
            Rng rng = bertc_rng_seed(seed);
            mask_row(&cfg, tokens, kinds, l, &rng, raw);
            int covered = 0;
            for (int64_t t = 0; t < l; t++)
                covered += raw[t];
            cr_expect_eq(covered, expected[k], "n = %lld, seed %llu: %d covered, budget %d",
                         (long long)n[k], (unsigned long long)seed, covered, expected[k]);
            cr_expect(!raw[0] && !raw[l - 1], "n = %lld: [CLS] or [SEP] covered", (long long)n[k]);
        }
    }
}

/* Random rows of words with "##" pieces: a word is covered whole or not at
 * all (never split, not even by the end of the budget), and the covered
 * count overshoots ceil(0.15 · n) by less than one word. */
Test(zoo_spanbert_options, whole_words_are_never_split)
{
    enum { L = 80 };
    BertConfig cfg = tiny_config(SPAN_MASKING_ORIGINAL, SBO_HEAD_SEED);
    int32_t tokens[L], kinds[L], raw[L];
    Rng gen = bertc_rng_seed(7);
    long words_covered = 0;
    for (int row = 0; row < 300; row++) {
        word_row(tokens, kinds, L, &gen, 0.4);
        Rng rng = bertc_rng_seed((uint64_t)row);
        mask_row(&cfg, tokens, kinds, L, &rng, raw);
        int covered = 0, longest = 1;
        int s = 1;
        while (s < L - 1) {                 /* the word [s, e) */
            int e = s + 1;
            while (e < L - 1 && kinds[e] == C)
                e++;
            longest = e - s > longest ? e - s : longest;
            for (int t = s + 1; t < e; t++)
                cr_expect_eq(raw[t], raw[s], "row %d: word [%d, %d) split at %d", row, s, e, t);
            words_covered += raw[s];
            s = e;
        }
        for (int t = 0; t < L; t++)
            covered += raw[t];
        int budget = (int)ceil(0.15 * (L - 2));
        cr_expect(covered >= budget && covered < budget + longest,
                  "row %d: %d covered, budget %d, longest word %d", row, covered, budget, longest);
    }
    cr_expect_gt(words_covered, 1000, "only %ld words covered in 300 rows", words_covered);
}

/* 80/10/10 per span: every run of masked positions is all [MASK], all its
 * original tokens, or (random) no [MASK] at all; over ~4000 spans the three
 * shares are 0.8 / 0.1 / 0.1 within 5 standard deviations. A random token
 * equal to the original (1 in 98 here) moves a span from "random" to
 * "kept", inside the tolerance. */
Test(zoo_spanbert_options, replacement_is_decided_per_span)
{
    enum { B = 40, S = 100 };
    static int32_t ids[B][S], kinds[B][S];
    int32_t lengths[B];
    BertConfig cfg = tiny_config(SPAN_MASKING_ORIGINAL, SBO_HEAD_SEED);
    long mask = 0, kept = 0, random = 0;
    for (uint64_t seed = 0; seed < 20; seed++) {
        Rng gen = bertc_rng_seed(1000 + seed);
        for (int b = 0; b < B; b++) {
            word_row(ids[b], kinds[b], S, &gen, 0.3);
            lengths[b] = S;
        }
        test_config_set(&cfg, "masking.seed", (double)seed);
        int64_t bs[2] = {B, S}, b1 = B;
        ITensor tids = bertc_itensor_view(&ids[0][0], 2, bs);
        ITensor tkinds = bertc_itensor_view(&kinds[0][0], 2, bs), tlen = bertc_itensor_view(lengths, 1, &b1);
        Arena *a = bertc_arena_create("masking", 1 << 20);
        SpanMasking m;
        BertcError err;
        cr_assert_eq(bertc_span_masking(&cfg, &tids, &tkinds, &tlen, a, &m, &err), 0, "%s", err.msg);
        for (int64_t i = 0; i < B * S; i++) {
            if (!m.mask_labels.data[i] || (i % S && m.mask_labels.data[i - 1]))
                continue;
            int n_mask = 0, n_same = 0, n = 0;
            for (int64_t k = i; k < (i / S + 1) * S && m.mask_labels.data[k]; k++, n++) {
                n_mask += m.input_ids.data[k] == MASK;
                n_same += m.input_ids.data[k] == tids.data[k];
                cr_expect_eq(m.labels.data[k], tids.data[k], "labels[%lld]", (long long)k);
            }
            cr_expect(n_mask == 0 || n_mask == n, "seed %llu: a span at %lld mixes %d [MASK] "
                      "of %d", (unsigned long long)seed, (long long)i, n_mask, n);
            mask += n_mask == n;
            kept += n_same == n;
            random += n_mask == 0 && n_same < n;
        }
        bertc_arena_destroy(a);
    }
    double total = (double)(mask + kept + random);
    const struct { const char *what; long got; double want; } shares[] = {
        {"[MASK]", mask, 0.8}, {"kept", kept, 0.1}, {"random", random, 0.1}};
    cr_expect_gt(total, 2000, "only %.0f spans", total);
    for (int k = 0; k < 3; k++) {
        double sd = sqrt(shares[k].want * (1 - shares[k].want) / total);
        cr_expect(fabs(shares[k].got / total - shares[k].want) <= 5 * sd,
                  "%s spans: %.4f of %.0f, expected %.2f (5 sd = %.4f)", shares[k].what,
                  shares[k].got / total, total, shares[k].want, 5 * sd);
    }
}

/* The default is the seed's masking, and a fresh config has both options
 * at "seed". On [CLS] w1..w7 [SEP] (l = 9) the seed's budget is
 * floor(0.15 · 9) = 1, the original's ceil(0.15 · 7) = 2. */
Test(zoo_spanbert_options, default_is_the_seed_masking)
{
    int32_t tokens[9], kinds[9], raw[9];
    word_row(tokens, kinds, 9, NULL, 0);
    BertConfig seed_cfg = tiny_config(SPAN_MASKING_SEED, SBO_HEAD_SEED);
    BertConfig paper = tiny_config(SPAN_MASKING_ORIGINAL, SBO_HEAD_SEED);
    cr_expect_eq(bertc_model_config_get(&seed_cfg, "masking.style"), SPAN_MASKING_SEED);
    BertConfig fresh;
    BertcError err;
    cr_assert_eq(bertc_model_config_default(&fresh, "SpanBertForPreTraining", &err), 0, "%s",
                 err.msg);
    cr_expect_eq(bertc_model_config_get(&fresh, "masking.style"), SPAN_MASKING_SEED);
    cr_expect_eq(bertc_model_config_get(&fresh, "sbo_head"), SBO_HEAD_SEED);
    const struct { BertConfig *cfg; int want; } cases[] = {{&seed_cfg, 1}, {&paper, 2}};
    for (int c = 0; c < 2; c++) {
        Rng rng = bertc_rng_seed(3);
        mask_row(cases[c].cfg, tokens, kinds, 9, &rng, raw);
        int covered = 0;
        for (int t = 0; t < 9; t++)
            covered += raw[t];
        cr_expect_eq(covered, cases[c].want, "style %d: %d covered", c, covered);
    }
}

/* config.json spells the options as words; a wrong one names the key. */
Test(zoo_spanbert_options, options_read_from_config_json)
{
    static const char good[] =
        "{\"architectures\": [\"SpanBertForPreTraining\"], \"vocab_size\": 50, "
        "\"hidden_size\": 8, \"num_hidden_layers\": 1, \"num_attention_heads\": 2, "
        "\"intermediate_size\": 16, \"max_position_embeddings\": 16, \"type_vocab_size\": 2, \"cls_token_id\": 2, \"sep_token_id\": 3, "
        "\"mask_token_id\": 4, \"unk_token_id\": 1, \"sbo_head\": \"original\", "
        "\"masking\": {\"seed\": 1, \"style\": \"original\"}}";
    BertConfig cfg;
    BertcError err;
    cr_assert_eq(bertc_bert_config_parse(NULL, "config.json", good, strlen(good), &cfg, &err), 0,
                 "%s", err.msg);
    cr_expect_eq(bertc_model_config_get(&cfg, "sbo_head"), SBO_HEAD_ORIGINAL);
    cr_expect_eq(bertc_model_config_get(&cfg, "masking.style"), SPAN_MASKING_ORIGINAL);
    char bad[sizeof good + 8];
    snprintf(bad, sizeof bad, "%s", good);
    memcpy(strstr(bad, "\"original\""), "\"paper\"   ", 10);
    cr_assert_neq(bertc_bert_config_parse(NULL, "config.json", bad, strlen(bad), &cfg, &err), 0);
    cr_expect(strstr(err.msg, "sbo_head"), "message: %s", err.msg);
}

/* ---- the sbo.* outputs ----------------------------------------------------- */

enum { B = 2, S = 8 };

typedef struct Run {
    Arena *params;
    Graph *g;
    Model m;
    Outputs out;
} Run;

/* Row 0 masked at 2..3, row 1 at 3 (labels there), row 1 padded at 6, 7. */
static void run_tiny(Run *r, const BertConfig *cfg, bool any_span)
{
    static int32_t ids[B][S] = {{CLS, 10, MASK, MASK, 11, 12, 13, SEP},
                                {CLS, 14, 15, MASK, 16, SEP, 0, 0}};
    static int32_t att[B][S] = {{1, 1, 1, 1, 1, 1, 1, 1}, {1, 1, 1, 1, 1, 1, 0, 0}};
    static int32_t labels[B][S] = {{-100, -100, 20, 21, -100, -100, -100, -100},
                                   {-100, -100, -100, 22, -100, -100, -100, -100}};
    static int32_t spans[B][S] = {{0, 0, 1, 1, 0, 0, 0, 0}, {0, 0, 0, 1, 0, 0, 0, 0}};
    static int32_t none[B][S];
    static const int64_t bs[2] = {B, S};
    Batch in;
    bertc_batch_init(&in, "inputs.safetensors");
    bertc_batch_put_ids(&in, "input_ids", bertc_itensor_view(&ids[0][0], 2, bs));
    bertc_batch_put_ids(&in, "attention_mask", bertc_itensor_view(&att[0][0], 2, bs));
    bertc_batch_put_ids(&in, "labels", bertc_itensor_view(&labels[0][0], 2, bs));
    bertc_batch_put_ids(&in, "mask_labels",
                        bertc_itensor_view(any_span ? &spans[0][0] : &none[0][0], 2, bs));
    r->params = bertc_arena_create("params", 1 << 17);
    BertcError err;
    cr_assert_eq(bertc_model_build(&r->m, r->params, cfg, &err), 0, "%s", err.msg);
    Rng rng = bertc_rng_seed(3);
    bertc_registry_init_weights(r->m.reg, &rng, 0.5f);
    r->g = bertc_ag_graph_create(1 << 18, 0);
    bertc_ag_set_training(r->g, false);
    bertc_outputs_init(&r->out);
    cr_assert_eq(bertc_model_forward(&r->m, r->g, &in, &r->out, &err), 0, "%s", err.msg);
}

static void run_free(Run *r)
{
    bertc_ag_graph_destroy(r->g);
    bertc_arena_destroy(r->params);
}

typedef struct Sym {
    const char *name;
    int64_t value;
} Sym;

/* The dims of a declared shape "(n_masked, D0)" under syms; -1 on a symbol
 * it does not know. */
static int declared_dims(const char *shape, const Sym *syms, int n_syms, int64_t *dims)
{
    int nd = 0;
    const char *p = shape + 1;
    while (*p && *p != ')') {
        size_t len = strcspn(p, ",)");
        int k = 0;
        while (k < n_syms && (strlen(syms[k].name) != len || strncmp(p, syms[k].name, len)))
            k++;
        if (k == n_syms)
            return -1;
        dims[nd++] = syms[k].value;
        p += len;
        p += *p == ',' ? 2 : 0;
    }
    return nd;
}

/* Every output the forward puts, except the encoder's, has the shape its
 * OutputSpec declares, with n_masked = 3 and n_spans = 2. */
static void check_declared_shapes(const Run *r, const Sym *syms, int n_syms)
{
    int checked = 0;
    for (int i = 0; i < r->out.n; i++) {
        const OutputItem *it = &r->out.items[i];
        const OutputSpec *spec = NULL;
        for (int k = 0; bertc_model_output(r->m.arch, k); k++)
            if (strcmp(bertc_model_output(r->m.arch, k)->name, it->name) == 0)
                spec = bertc_model_output(r->m.arch, k);
        if (!spec)
            continue;            /* hidden_states.{i}: the encoder's, checked elsewhere */
        int64_t want[4];
        int nd = declared_dims(spec->shape, syms, n_syms, want);
        cr_assert_geq(nd, 0, "'%s': declared %s has an unknown symbol", it->name, spec->shape);
        int ndim = it->is_int ? it->ids.ndim : it->var->value.ndim;
        const int64_t *shape = it->is_int ? it->ids.shape : it->var->value.shape;
        cr_expect(bertc_shape_equal(ndim, shape, nd, want), "'%s' is not its declared %s",
                  it->name, spec->shape);
        checked++;
    }
    cr_expect_geq(checked, 16, "only %d outputs checked", checked);
}

static const float *out_f(const Run *r, const char *name)
{
    Var *v = bertc_outputs_get(&r->out, name);
    cr_assert(v, "no output '%s'", name);
    return v->value.data;
}

static const int32_t *out_i(const Run *r, const char *name)
{
    for (int i = 0; i < r->out.n; i++)
        if (r->out.items[i].is_int && strcmp(r->out.items[i].name, name) == 0)
            return r->out.items[i].ids.data;
    cr_assert_fail("no integer output '%s'", name);
    return NULL;
}

static void expect_ints(const Run *r, const char *name, const int32_t *want, int n)
{
    const int32_t *got = out_i(r, name);
    for (int i = 0; i < n; i++)
        cr_expect_eq(got[i], want[i], "%s[%d] = %d, expected %d", name, i, got[i], want[i]);
}

/* a[row, col0 .. col0+n) == b[row2, 0 .. n) bitwise (the same values moved). */
static void expect_row(const float *a, int64_t lda, int64_t row, int64_t col0, const float *b,
                       int64_t ldb, int64_t row2, int64_t n, const char *what)
{
    for (int64_t j = 0; j < n; j++)
        cr_expect_eq(a[row * lda + col0 + j], b[row2 * ldb + j], "%s: element %lld: %g vs %g",
                     what, (long long)j, a[row * lda + col0 + j], b[row2 * ldb + j]);
}

/* The spans, i - s + 1, and h0 assembled from x_{s-1}, x_{e+1} and p in the
 * head's order, x_{s-1}/x_{e+1} being rows of last_hidden_state. */
static void check_named(const Run *r, int64_t Dp, bool paper_order)
{
    static const int32_t row[] = {0, 1}, start[] = {2, 3}, end[] = {3, 3};
    static const int32_t index[] = {0, 0, 1}, tok[] = {2, 3, 3}, pos[] = {1, 2, 1};
    expect_ints(r, "sbo.span_row", row, 2);
    expect_ints(r, "sbo.span_start", start, 2);
    expect_ints(r, "sbo.span_end", end, 2);
    expect_ints(r, "sbo.span_index", index, 3);
    expect_ints(r, "sbo.token_position", tok, 3);
    expect_ints(r, "sbo.position", pos, 3);
    const int64_t H = 8, D0 = 2 * H + Dp;
    const float *x = out_f(r, "last_hidden_state"), *h0 = out_f(r, "sbo.h0");
    const float *xl = out_f(r, "sbo.x_left"), *xr = out_f(r, "sbo.x_right"), *p = out_f(r, "sbo.p");
    static const int64_t left[] = {0 * S + 1, 0 * S + 1, 1 * S + 2}, right[] = {4, 4, S + 4};
    for (int64_t g = 0; g < 3; g++) {
        expect_row(xl, H, g, 0, x, H, left[g], H, "x_left = x_{s-1}");
        expect_row(xr, H, g, 0, x, H, right[g], H, "x_right = x_{e+1}");
        expect_row(h0, D0, g, 0, xl, H, g, H, "h0 opens with x_{s-1}");
        expect_row(h0, D0, g, paper_order ? H : H + Dp, xr, H, g, H, "h0's x_{e+1}");
        expect_row(h0, D0, g, paper_order ? 2 * H : H, p, Dp, g, Dp, "h0's p_{i-s+1}");
    }
}

Test(zoo_spanbert_options, seed_head_outputs_and_shapes)
{
    BertConfig cfg = tiny_config(SPAN_MASKING_SEED, SBO_HEAD_SEED);
    Run r;
    run_tiny(&r, &cfg, true);
    const Sym syms[] = {{"B", B}, {"S", S}, {"V", 200}, {"H", 8}, {"n_masked", 3},
                        {"n_spans", 2}, {"Dp", 8}, {"D0", 24}, {"D1", 12}};
    check_declared_shapes(&r, syms, sizeof syms / sizeof syms[0]);
    check_named(&r, 8, false);
    /* the span rows of the full (B, S, V) sbo_logits */
    const float *all = out_f(&r, "sbo_logits"), *rows = out_f(&r, "sbo.span_logits");
    static const int64_t at[] = {2, 3, S + 3};
    for (int g = 0; g < 3; g++)
        expect_row(rows, 200, g, 0, all, 200, at[g], 200, "sbo.span_logits row");
    run_free(&r);
}

Test(zoo_spanbert_options, original_head_outputs_and_shapes)
{
    BertConfig cfg = tiny_config(SPAN_MASKING_SEED, SBO_HEAD_ORIGINAL);
    Run r;
    run_tiny(&r, &cfg, true);
    const Sym syms[] = {{"B", B}, {"S", S}, {"V", 200}, {"H", 8}, {"n_masked", 3},
                        {"n_spans", 2}, {"Dp", 5}, {"D0", 21}, {"D1", 8}};
    check_declared_shapes(&r, syms, sizeof syms / sizeof syms[0]);
    check_named(&r, 5, true);
    cr_expect_null(bertc_outputs_get(&r.out, "sbo_logits"), "the original head has no "
                   "(B, S, V) sbo_logits");
    run_free(&r);
}

/* The original head's parameters: position_embeddings (sbo_max_targets, P),
 * linear1 (H, 2H + P), LayerNorms as gamma/beta, the decoder tied to the
 * word embeddings, and none of the seed's projector/classifier. */
Test(zoo_spanbert_options, original_head_parameters)
{
    BertConfig cfg = tiny_config(SPAN_MASKING_SEED, SBO_HEAD_ORIGINAL);
    Arena *params = bertc_arena_create("params", 1 << 17);
    Model m;
    BertcError err;
    cr_assert_eq(bertc_model_build(&m, params, &cfg, &err), 0, "%s", err.msg);
    const struct { const char *name; int64_t d0, d1; } want[] = {
        {"sbo_head.position_embeddings.weight", 4, 5},
        {"sbo_head.mlp_layer_norm.linear1.weight", 8, 21},
        {"sbo_head.mlp_layer_norm.linear1.bias", 8, 0},
        {"sbo_head.mlp_layer_norm.layer_norm1.gamma", 8, 0},
        {"sbo_head.mlp_layer_norm.linear2.weight", 8, 8},
        {"sbo_head.mlp_layer_norm.layer_norm2.beta", 8, 0},
        {"sbo_head.bias", 200, 0},
    };
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        int i = bertc_registry_find(m.reg, want[k].name);
        cr_assert_geq(i, 0, "no parameter %s", want[k].name);
        const Tensor *t = &m.reg->params[i].var->value;
        cr_expect(t->shape[0] == want[k].d0 && (want[k].d1 == 0 || t->shape[1] == want[k].d1),
                  "%s has the wrong shape", want[k].name);
    }
    int dec = bertc_registry_find(m.reg, "sbo_head.decoder.weight");
    int word = bertc_registry_find(m.reg, "bert.embeddings.word_embeddings.weight");
    cr_assert(dec >= 0 && word >= 0);
    cr_expect_eq(m.reg->params[dec].alias_of, word, "the decoder is not tied to the embeddings");
    cr_expect_lt(bertc_registry_find(m.reg, "sbo_head.projector.weight"), 0);
    cr_expect_lt(bertc_registry_find(m.reg, "sbo_head.classifier.weight"), 0);
    bertc_arena_destroy(params);
}

/* No span: the original's dummy pair target adds nothing, so the loss is
 * L_MLM and there is no sbo_loss (the seed's head would give NaN). */
Test(zoo_spanbert_options, original_head_without_spans)
{
    BertConfig cfg = tiny_config(SPAN_MASKING_SEED, SBO_HEAD_ORIGINAL);
    Run r;
    run_tiny(&r, &cfg, false);
    cr_expect_null(bertc_outputs_get(&r.out, "sbo_loss"));
    cr_expect_null(bertc_outputs_get(&r.out, "sbo.h0"));
    float loss = out_f(&r, "loss")[0], mlm = out_f(&r, "mlm_loss")[0];
    cr_expect(isfinite(loss) && loss == mlm, "loss %g, mlm_loss %g", loss, mlm);
    run_free(&r);
}

/* A span longer than the original head's table names its key. */
Test(zoo_spanbert_options, original_table_limit_names_its_key)
{
    BertConfig cfg = tiny_config(SPAN_MASKING_SEED, SBO_HEAD_ORIGINAL);
    test_config_set(&cfg, "sbo_max_targets", 1);
    Arena *params = bertc_arena_create("params", 1 << 17);
    Model m;
    BertcError err;
    cr_assert_eq(bertc_model_build(&m, params, &cfg, &err), 0, "%s", err.msg);
    static int32_t ids[1][S] = {{CLS, 10, MASK, MASK, 11, 12, 13, SEP}};
    static int32_t spans[1][S] = {{0, 0, 1, 1, 0, 0, 0, 0}};
    static const int64_t bs[2] = {1, S};
    Batch in;
    bertc_batch_init(&in, "inputs.safetensors");
    bertc_batch_put_ids(&in, "input_ids", bertc_itensor_view(&ids[0][0], 2, bs));
    bertc_batch_put_ids(&in, "mask_labels", bertc_itensor_view(&spans[0][0], 2, bs));
    Graph *g = bertc_ag_graph_create(1 << 18, 0);
    Outputs out;
    bertc_outputs_init(&out);
    cr_assert_neq(bertc_model_forward(&m, g, &in, &out, &err), 0);
    cr_expect(strstr(err.msg, "span [2, 3] of 2") && strstr(err.msg, "sbo_max_targets"),
              "message: %s", err.msg);
    bertc_ag_graph_destroy(g);
    bertc_arena_destroy(params);
}

/* The original head's sizes are checked when it is chosen, and only then (a
 * config built in code may leave them 0 for the seed's head). */
Test(zoo_spanbert_options, original_head_sizes_checked_when_chosen)
{
    BertConfig cfg = tiny_config(SPAN_MASKING_SEED, SBO_HEAD_SEED);
    test_config_set(&cfg, "sbo_max_targets", 0);
    BertcError err = {{0}};
    cr_expect_eq(bertc_bert_config_check(&cfg, &err), 0, "%s", err.msg);
    test_config_set(&cfg, "sbo_head", SBO_HEAD_ORIGINAL);
    cr_assert_neq(bertc_bert_config_check(&cfg, &err), 0);
    cr_expect(strstr(err.msg, "config: sbo_head \"original\" needs sbo_max_targets >= 1"),
              "message: %s", err.msg);
}
