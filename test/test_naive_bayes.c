/* test/test_naive_bayes.c — the bag-of-words naive Bayes baseline
 * (zoo/train/naive_bayes.c): its words, priors and smoothed likelihoods
 * against a table worked out by hand, ties, refusals, and its held-out
 * accuracy on the demo's split of data/topics.tsv. */
#include "test/test_util.h"
#include "zoo/train/dataset.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

static Arena *arena;

static void setup(void) { arena = bertc_arena_create("naive Bayes test", 1 << 16); }
static void teardown(void) { bertc_arena_destroy(arena); }

TestSuite(naive_bayes, .init = setup, .fini = teardown);

static void expect_near(double got, double want, const char *what)
{
    cr_assert(fabs(got - want) <= 1e-12 + 1e-12 * fabs(want), "%s: expected %.15g, got %.15g",
              what, want, got);
}

static void fit(NaiveBayes *nb, const char *const *texts, const int32_t *labels, int64_t n,
                int C)
{
    BertcError err;
    cr_assert_eq(bertc_naive_bayes_fit(nb, arena, texts, labels, n, C, 1.0, &err), 0, "%s",
                 err.msg);
}

/* Class 0: "Apple apple pie", "apple tart"; class 1: "Law court".
 * Vocabulary: apple court law pie tart (V = 5). Class 0 has 5 words (apple
 * 3, pie 1, tart 1), class 1 has 2 (law 1, court 1); with alpha = 1:
 *   P(apple|0) = 4/10, P(court|0) = 1/10, P(law|0) = 1/10
 *   P(apple|1) = 1/7,  P(court|1) = 2/7,  P(law|1) = 2/7
 * and the priors are 2/3 and 1/3. */
static const char *const hand_texts[3] = {"Apple apple pie", "apple tart", "Law court"};
static const int32_t hand_labels[3] = {0, 0, 1};

Test(naive_bayes, fit_matches_the_hand_computation)
{
    NaiveBayes nb;
    fit(&nb, hand_texts, hand_labels, 3, 2);
    static const char *const vocabulary[5] = {"apple", "court", "law", "pie", "tart"};
    cr_assert_eq(nb.V, 5, "expected 5 distinct words, got %lld", (long long)nb.V);
    for (int v = 0; v < 5; v++)
        cr_assert_str_eq(nb.words[v], vocabulary[v], "word %d", v);
    expect_near(nb.log_prior[0], log(2.0 / 3), "log_prior[0]");
    expect_near(nb.log_prior[1], log(1.0 / 3), "log_prior[1]");
    expect_near(nb.log_p_word[0 * 5 + 0], log(4.0 / 10), "log P(apple | 0)");
    expect_near(nb.log_p_word[0 * 5 + 3], log(2.0 / 10), "log P(pie | 0)");
    expect_near(nb.log_p_word[0 * 5 + 2], log(1.0 / 10), "log P(law | 0)");
    expect_near(nb.log_p_word[1 * 5 + 0], log(1.0 / 7), "log P(apple | 1)");
    expect_near(nb.log_p_word[1 * 5 + 1], log(2.0 / 7), "log P(court | 1)");
    expect_near(nb.log_p_word[1 * 5 + 4], log(1.0 / 7), "log P(tart | 1)");
}

/* "APPLE court, zebra!": zebra is unknown and skipped;
 *   score 0 = log 2/3 + log 4/10 + log 1/10 = -3.624
 *   score 1 = log 1/3 + log 1/7  + log 2/7  = -4.297  -> class 0;
 * "court law court": 0: log 2/3 + 3 log 1/10 = -7.31, 1: log 1/3 + 3 log 2/7
 * = -4.86 -> class 1. */
Test(naive_bayes, scores_and_predictions_match_the_hand_computation)
{
    NaiveBayes nb;
    double s[2];
    fit(&nb, hand_texts, hand_labels, 3, 2);
    bertc_naive_bayes_scores(&nb, "APPLE court, zebra!", s);
    expect_near(s[0], log(2.0 / 3) + log(0.4) + log(0.1), "score 0 of 'APPLE court, zebra!'");
    expect_near(s[1], log(1.0 / 3) + log(1.0 / 7) + log(2.0 / 7),
                "score 1 of 'APPLE court, zebra!'");
    cr_assert_eq(bertc_naive_bayes_predict(&nb, "APPLE court, zebra!"), 0);
    bertc_naive_bayes_scores(&nb, "court law court", s);
    expect_near(s[0], log(2.0 / 3) + 3 * log(0.1), "score 0 of 'court law court'");
    expect_near(s[1], log(1.0 / 3) + 3 * log(2.0 / 7), "score 1 of 'court law court'");
    cr_assert_eq(bertc_naive_bayes_predict(&nb, "court law court"), 1);
    bertc_naive_bayes_scores(&nb, "", s);
    expect_near(s[0], log(2.0 / 3), "score 0 of no words: the prior");
}

Test(naive_bayes, words_are_lowercase_runs_of_letters_and_digits)
{
    static const char *const texts[1] = {"Don't panic, 42!\tCaf\xc3\xa9 x-ray"};
    static const char *const want[7] = {"42", "caf", "don", "panic", "ray", "t", "x"};
    static const int32_t labels[1] = {0};
    NaiveBayes nb;
    fit(&nb, texts, labels, 1, 1);
    cr_assert_eq(nb.V, 7, "expected 7 distinct words, got %lld", (long long)nb.V);
    for (int v = 0; v < 7; v++)
        cr_assert_str_eq(nb.words[v], want[v], "word %d", v);
}

/* Equal priors and a text whose words say nothing (none, an unknown one,
 * punctuation only): every score is the prior and the lower class wins,
 * whichever class's rows come first. */
Test(naive_bayes, a_tie_goes_to_the_lower_class)
{
    static const char *const texts[2] = {"y", "x"};
    static const int32_t labels[2] = {1, 0};
    static const char *const queries[3] = {"", "unknown", "?!"};
    NaiveBayes nb;
    fit(&nb, texts, labels, 2, 2);
    for (int q = 0; q < 3; q++)
        cr_assert_eq(bertc_naive_bayes_predict(&nb, queries[q]), 0,
                     "'%s' ties; expected class 0", queries[q]);
    cr_assert_eq(bertc_naive_bayes_predict(&nb, "y"), 1);
}

Test(naive_bayes, refuses_bad_labels_alpha_and_no_rows)
{
    NaiveBayes nb;
    BertcError err;
    static const int32_t bad[3] = {0, 2, 1};
    cr_assert_neq(bertc_naive_bayes_fit(&nb, arena, hand_texts, bad, 3, 2, 1.0, &err), 0);
    cr_assert(strstr(err.msg, "training text 1 has label 2"), "%s", err.msg);
    cr_assert_neq(bertc_naive_bayes_fit(&nb, arena, hand_texts, hand_labels, 3, 2, 0.0, &err),
                  0);
    cr_assert(strstr(err.msg, "alpha 0"), "%s", err.msg);
    cr_assert_neq(bertc_naive_bayes_fit(&nb, arena, hand_texts, hand_labels, 0, 2, 1.0, &err),
                  0);
    cr_assert(strstr(err.msg, "0 training texts"), "%s", err.msg);
}

/* The demo's split (examples/topics.c): the first 915 of data/topics.tsv's
 * 1,144 "label<TAB>text" lines train, the last 229 are held out. Measured:
 * 154 of 229 right (67.2 %); the band allows a changed word rule a little
 * room and fails a broken count or prior. */
Test(naive_bayes, demo_split_accuracy_is_in_its_band)
{
    static const char *const columns[2] = {"label", "text"};
    Arena *file = NULL;
    char *text;
    size_t len;
    BertcError err;
    Dataset all;
    cr_assert_eq(bertc_read_file("data/topics.tsv", 1 << 24, "data/topics.tsv", &file, &text,
                                 &len, &err), 0, "%s (run from the repository root)", err.msg);
    cr_assert_eq(bertc_dataset_parse_columns(&all, arena, "data/topics.tsv", DATASET_TSV,
                                             columns, 2, text, len, &err), 0, "%s", err.msg);
    bertc_arena_destroy(file);
    cr_assert_eq(all.n_rows, 1144, "data/topics.tsv has %lld rows", (long long)all.n_rows);
    Dataset train = bertc_dataset_rows(&all, 0, 915);
    Dataset held_out = bertc_dataset_rows(&all, 915, 229);
    double accuracy;
    cr_assert_eq(bertc_naive_bayes_accuracy(&train, &held_out, "text", "label", &accuracy,
                                            &err), 0, "%s", err.msg);
    cr_assert(accuracy >= 0.65 && accuracy <= 0.70,
              "held-out accuracy %.4f (%.0f of 229), expected 0.65 .. 0.70 (measured 0.6725)",
              accuracy, accuracy * 229);
    cr_assert_neq(bertc_naive_bayes_accuracy(&train, &held_out, "sentence", "label", &accuracy,
                                             &err), 0);
    cr_assert(strstr(err.msg, "sentence"), "a missing column is named: %s", err.msg);
}
