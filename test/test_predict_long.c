/* test/test_predict_long.c — `bertc predict` and `bertc embed` in pipelines
 * and on long documents, through the binary (issue #29): standard input,
 * several positional texts (a pair only with --pair or a text_pair column),
 * a TAB in plain text read as text, blank lines kept as blank results,
 * JSONL's line numbers, --stride windows with each --aggregate against the
 * same windows run one by one and combined by hand, and batches sorted by
 * length giving the results of batch size 1 in input order. */
#include "test/test_util.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char dir[256];
static char out[1 << 16];

/* dir/NAME: test/data/zoo/NAME as a model directory, its vocabulary the
 * fixtures' ([PAD] [CLS] [SEP] [MASK] [UNK], then t5 … t119: one token a word). */
static void make_model_dir(const char *name)
{
    char cmd[2048], vocab[600];
    snprintf(cmd, sizeof cmd, "mkdir -p %s/%s && cp test/data/zoo/%s/config.json %s/%s/ && "
             "cp test/data/zoo/%s/weights.safetensors %s/%s/model.safetensors", dir, name, name,
             dir, name, name, dir, name);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    snprintf(vocab, sizeof vocab, "%s/%s/vocab.txt", dir, name);
    FILE *f = fopen(vocab, "w");
    cr_assert(f, "cannot write %s", vocab);
    fputs("[PAD]\n[CLS]\n[SEP]\n[MASK]\n[UNK]\n", f);
    for (int i = 5; i < 120; i++)
        fprintf(f, "t%d\n", i);
    fclose(f);
}

static void setup(void)
{
    test_scratch_make(dir, sizeof dir, "predict_long");
    make_model_dir("bert_seqcls_single");
    make_model_dir("bert_seqcls_regression");
    make_model_dir("bert_model");
}

static void teardown(void) { test_scratch_remove(dir); }

TestSuite(predict_long, .init = setup, .fini = teardown);

/* The shell command `bertc ARGS` (printf-style; dir is the first %s of
 * ARGS when it names a model), its stdout in out; returns the exit code. */
static int bertc(const char *fmt, ...)
{
    char args[4096], cmd[4600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "%s %s 2>/dev/null", BERTC_CLI, args);
    return test_shell(cmd, TEST_STDOUT_AND_STDERR, out, sizeof out);
}

/* Like bertc, but stdin comes from `printf TEXT |` and out holds both streams. */
static int bertc_piped(const char *input, const char *fmt, ...)
{
    char args[4096], cmd[6000];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "printf '%s' | %s %s", input, BERTC_CLI, args);
    return test_shell(cmd, TEST_STDOUT_AND_STDERR, out, sizeof out);
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* The score column (the second) of each of out's TSV lines into v[0, n). */
static void scores(int n, double *v)
{
    const char *p = out;
    for (int i = 0; i < n; i++) {
        const char *tab = strchr(p, '\t');
        cr_assert(tab, "line %d has no score: %s", i + 1, out);
        v[i] = strtod(tab + 1, NULL);
        p = strchr(p, '\n');
        cr_assert(p, "fewer than %d lines: %s", n, out);
        p++;
    }
}

static void write_file(const char *name, const char *text, char *path, size_t cap)
{
    snprintf(path, cap, "%s/%s", dir, name);
    test_write_text(path, text);
}

/* ---- pipelines ---------------------------------------------------------------- */

Test(predict_long, standard_input_reads_like_a_file)
{
    char path[400], file_out[sizeof out];
    const char *text = "t5 t6 t7\nt8 t9\n\nt10 t11 t12 t13\n";
    write_file("in.txt", text, path, sizeof path);
    cr_assert_eq(bertc("predict --model %s/bert_seqcls_single --input %s", dir, path), 0);
    memcpy(file_out, out, sizeof out);
    cr_expect_eq(count_lines(file_out), 4, "one line per input line: %s", file_out);
    cr_assert_eq(bertc_piped("t5 t6 t7\\nt8 t9\\n\\nt10 t11 t12 t13\\n",
                             "predict --model %s/bert_seqcls_single --input - 2>/dev/null", dir),
                 0, "%s", out);
    cr_expect_str_eq(out, file_out, "--input - reads standard input as the file");
    cr_assert_eq(bertc_piped("t5 t6 t7\\n", "embed --model %s/bert_model --input - 2>/dev/null",
                             dir), 0, "%s", out);
    cr_expect(!strncmp(out, "t5 t6 t7\t", 9) && count_lines(out) == 1, "embed too: %s", out);
}

Test(predict_long, positionals_are_several_texts_and_a_pair_needs_pair)
{
    double two[2], pair[1], one[2];
    cr_assert_eq(bertc("predict --model %s/bert_seqcls_single 't5 t6 t7' 't8 t9'", dir), 0);
    cr_expect_eq(count_lines(out), 2, "two texts, two results: %s", out);
    cr_expect(strstr(out, "\tt5 t6 t7\n") && strstr(out, "\tt8 t9\n"), "%s", out);
    scores(2, two);
    cr_assert_eq(bertc("predict --model %s/bert_seqcls_single 't5 t6 t7'", dir), 0);
    scores(1, one);
    cr_assert_eq(bertc("predict --model %s/bert_seqcls_single 't8 t9'", dir), 0);
    scores(1, one + 1);
    cr_expect(two[0] == one[0] && two[1] == one[1], "each as if alone: %g %g, %g %g", two[0],
              two[1], one[0], one[1]);
    cr_assert_eq(bertc("predict --model %s/bert_seqcls_single --pair 't5 t6 t7' 't8 t9'", dir),
                 0);
    cr_expect_eq(count_lines(out), 1, "--pair: one pair, one result: %s", out);
    scores(1, pair);
    cr_expect(fabs(pair[0] - two[0]) > 1e-6, "the pair is read as a pair (%g)", pair[0]);
    /* a table's text_pair column is a pair too */
    char path[400];
    write_file("pairs.tsv", "text\ttext_pair\nt5 t6 t7\tt8 t9\n", path, sizeof path);
    cr_assert_eq(bertc("predict --model %s/bert_seqcls_single --input %s", dir, path), 0);
    double table[1];
    scores(1, table);
    cr_expect_eq(table[0], pair[0], "the TSV's text_pair: %g, --pair's %g", table[0], pair[0]);
    /* an odd number with --pair is a usage error */
    cr_expect_eq(bertc("predict --model %s/bert_seqcls_single --pair a b c", dir), 2);
    cr_expect_eq(bertc("embed --model %s/bert_model 't5 t6' 't7'", dir), 0);
    cr_expect_eq(count_lines(out), 2, "embed: two texts, two vectors: %s", out);
}

Test(predict_long, a_tab_in_plain_text_is_text)
{
    char path[400];
    double tab[1], space[1];
    write_file("tab.txt", "t5 t6 t7\tt8 t9\n", path, sizeof path);
    cr_assert_eq(bertc("predict --model %s/bert_seqcls_single --input %s", dir, path), 0);
    cr_expect_eq(count_lines(out), 1, "%s", out);
    scores(1, tab);
    cr_assert_eq(bertc("predict --model %s/bert_seqcls_single 't5 t6 t7 t8 t9'", dir), 0);
    scores(1, space);
    cr_expect_eq(tab[0], space[0], "a TAB is white space in one text: %g, %g", tab[0], space[0]);
    cr_assert_eq(bertc("predict --model %s/bert_seqcls_single --pair --input %s", dir, path), 0);
    double pair[1];
    scores(1, pair);
    cr_expect(fabs(pair[0] - tab[0]) > 1e-6, "with --pair the TAB separates the pair");
}

Test(predict_long, jsonl_names_the_input_line_and_blank_lines_stay_blank)
{
    char path[400];
    write_file("in.txt", "t5 t6\n\nt7 t8 t9\n   \nt10\n", path, sizeof path);
    cr_assert_eq(bertc("predict --model %s/bert_seqcls_single --format jsonl --input %s", dir,
                       path), 0);
    cr_assert_eq(count_lines(out), 5, "one line per input line: %s", out);
    const char *line = out;
    for (int i = 1; i <= 5; i++) {
        char want[32];
        snprintf(want, sizeof want, "{\"line\": %d", i);
        cr_expect(!strncmp(line, want, strlen(want)), "line %d: %.60s", i, line);
        const char *end = strchr(line, '\n'), *label = strstr(line, "\"label\"");
        bool labelled = label && label < end, blank = i == 2 || i == 4;
        cr_expect(labelled != blank, "line %d %s a label: %.80s", i, blank ? "has no" : "has",
                  line);
        line = end + 1;
    }
    write_file("blank.txt", "\n  \n", path, sizeof path);
    cr_expect_eq(bertc("predict --model %s/bert_seqcls_single --input %s", dir, path), 1,
                 "nothing but blank lines is an error");
}

/* ---- long documents ----------------------------------------------------------- */

/* t5 … t14: ten tokens. With --max-len 6 a window holds 4 of them ([CLS]
 * and [SEP] take 2), and --stride 2 steps by 2: windows [0, 4), [2, 6),
 * [4, 8), [6, 10). */
static const char *const doc = "t5 t6 t7 t8 t9 t10 t11 t12 t13 t14";
static const char *const windows[4] = {"t5 t6 t7 t8", "t7 t8 t9 t10", "t9 t10 t11 t12",
                                       "t11 t12 t13 t14"};

/* The regression model's value of each window alone. */
static void window_values(double *v, const char *pair)
{
    for (int w = 0; w < 4; w++) {
        if (pair)
            cr_assert_eq(bertc("predict --model %s/bert_seqcls_regression --pair '%s' '%s'",
                               dir, windows[w], pair), 0);
        else
            cr_assert_eq(bertc("predict --model %s/bert_seqcls_regression '%s'", dir,
                               windows[w]), 0);
        scores(1, &v[w]);
    }
}

Test(predict_long, stride_windows_aggregate_as_by_hand)
{
    double v[4], got[1];
    window_values(v, NULL);
    double mean = (v[0] + v[1] + v[2] + v[3]) / 4;
    double max = fmax(fmax(v[0], v[1]), fmax(v[2], v[3]));
    const struct {
        const char *aggregate;
        double want;
    } cases[] = {{"mean", mean}, {"max", max}, {"first", v[0]}};
    for (size_t i = 0; i < 3; i++) {
        cr_assert_eq(bertc("predict --model %s/bert_seqcls_regression --max-len 6 --stride 2 "
                           "--aggregate %s '%s'", dir, cases[i].aggregate, doc), 0, "%s", out);
        cr_expect_eq(count_lines(out), 1, "one result for the document: %s", out);
        scores(1, got);
        cr_expect(fabs(got[0] - cases[i].want) < 2e-6, "--aggregate %s: %.6f, by hand %.6f",
                  cases[i].aggregate, got[0], cases[i].want);
    }
    /* mean is the default */
    cr_assert_eq(bertc("predict --model %s/bert_seqcls_regression --max-len 6 --stride 2 '%s'",
                       dir, doc), 0);
    scores(1, got);
    cr_expect(fabs(got[0] - mean) < 2e-6, "the default aggregate is mean");
    /* without --stride the document is cut to its first window */
    cr_assert_eq(bertc("predict --model %s/bert_seqcls_regression --max-len 6 '%s'", dir, doc),
                 0);
    scores(1, got);
    cr_expect(fabs(got[0] - v[0]) < 2e-6, "truncated: the first window's %.6f", got[0]);
}

/* [CLS] A [SEP] t40 [SEP]: --max-len 8 leaves the same 4 tokens of A a window. */
Test(predict_long, a_pair_is_whole_in_every_window)
{
    double v[4], got[1];
    window_values(v, "t40");
    cr_assert_eq(bertc("predict --model %s/bert_seqcls_regression --max-len 8 --stride 2 "
                       "--aggregate max --pair '%s' t40", dir, doc), 0, "%s", out);
    scores(1, got);
    double max = fmax(fmax(v[0], v[1]), fmax(v[2], v[3]));
    cr_expect(fabs(got[0] - max) < 2e-6, "max over the windows with the pair: %.6f, %.6f",
              got[0], max);
}

/* The probabilities of --top-k 3's last column ("LABEL_1:0.41 LABEL_0:0.33
 * ...") of out's first line into p[3]. */
static void class_probabilities(double *p)
{
    const char *q = strrchr(out, '\t');
    cr_assert(q, "%s", out);
    for (int j = 0; j < 3; j++) {
        int k;
        double s;
        int used;
        cr_assert_eq(sscanf(q + 1, "LABEL_%d:%lf%n", &k, &s, &used), 2, "%s", out);
        cr_assert(k >= 0 && k < 3, "%s", out);
        p[k] = s;
        q += 1 + used;
    }
}

/* A classifier's mean aggregates logits: softmax(mean_w z_w). Each window's
 * probabilities p_w = softmax(z_w) give z_w up to a constant, log p_w, and
 * a constant per window does not move the softmax of the mean. */
Test(predict_long, classifier_mean_is_the_softmax_of_mean_logits)
{
    double logp[3] = {0}, p[3], first[3], got[3];
    for (int w = 0; w < 4; w++) {
        cr_assert_eq(bertc("predict --model %s/bert_seqcls_single --top-k 3 '%s'", dir,
                           windows[w]), 0);
        class_probabilities(p);
        for (int k = 0; k < 3; k++)
            logp[k] += log(p[k]) / 4;
        if (w == 0)
            memcpy(first, p, sizeof first);
    }
    double z = 0;
    for (int k = 0; k < 3; k++)
        z += exp(logp[k]);
    for (int k = 0; k < 3; k++)
        p[k] = exp(logp[k]) / z;
    cr_assert_eq(bertc("predict --model %s/bert_seqcls_single --top-k 3 --max-len 6 --stride 2 "
                       "'%s'", dir, doc), 0);
    class_probabilities(got);
    for (int k = 0; k < 3; k++)
        cr_expect(fabs(got[k] - p[k]) < 1e-5, "mean, LABEL_%d: %.6f, by hand %.6f", k, got[k],
                  p[k]);
    cr_assert_eq(bertc("predict --model %s/bert_seqcls_single --top-k 3 --max-len 6 --stride 2 "
                       "--aggregate first '%s'", dir, doc), 0);
    class_probabilities(got);
    for (int k = 0; k < 3; k++)
        cr_expect(fabs(got[k] - first[k]) < 1e-6, "first, LABEL_%d: %.6f, window 0's %.6f", k,
                  got[k], first[k]);
}

/* embed --stride: the windows' vectors, averaged (or maxed) element-wise. */
Test(predict_long, embed_windows_aggregate_their_vectors)
{
    enum { H = 32 };
    float win[4][H], got[H];
    for (int w = 0; w < 4; w++) {
        cr_assert_eq(bertc("embed --model %s/bert_model '%s'", dir, windows[w]), 0);
        const char *p = strchr(out, '\t');
        cr_assert(p);
        for (int k = 0; k < H; k++)
            win[w][k] = strtof(p + 1, (char **)&p);
    }
    const char *rules[] = {"mean", "max", "first"};
    for (int r = 0; r < 3; r++) {
        cr_assert_eq(bertc("embed --model %s/bert_model --max-len 6 --stride 2 --aggregate %s "
                           "'%s'", dir, rules[r], doc), 0, "%s", out);
        cr_expect_eq(count_lines(out), 1, "%s", out);
        const char *p = strchr(out, '\t');
        cr_assert(p);
        for (int k = 0; k < H; k++)
            got[k] = strtof(p + 1, (char **)&p);
        cr_expect_eq(*p, '\n', "%d values", H);
        for (int k = 0; k < H; k++) {
            float want = r == 2 ? win[0][k] : r == 1 ? fmaxf(fmaxf(win[0][k], win[1][k]),
                                                            fmaxf(win[2][k], win[3][k]))
                                                    : (win[0][k] + win[1][k] + win[2][k] +
                                                       win[3][k]) / 4;
            cr_expect(fabsf(got[k] - want) < 1e-5f, "%s [%d]: %.7f, by hand %.7f", rules[r], k,
                      got[k], want);
        }
    }
}

/* ---- batches sorted by length ------------------------------------------------- */

Test(predict_long, sorted_batches_keep_input_order_and_batch_1_results)
{
    char text[4096] = "", path[400], batch1[sizeof out];
    size_t len = 0;
    for (int i = 0; i < 23; i++) {   /* lengths 1 … 30 words, shuffled by 7·i mod 30 */
        int words = 1 + (7 * i) % 30;
        for (int w = 0; w < words; w++)
            len += (size_t)snprintf(text + len, sizeof text - len, "%st%d", w ? " " : "",
                                    5 + (i * 13 + w * 3) % 110);
        len += (size_t)snprintf(text + len, sizeof text - len, "\n");
    }
    write_file("mixed.txt", text, path, sizeof path);
    cr_assert_eq(bertc("predict --model %s/bert_seqcls_single --input %s --batch-size 1", dir,
                       path), 0);
    memcpy(batch1, out, sizeof out);
    cr_assert_eq(count_lines(batch1), 23, "%s", batch1);
    const int sizes[] = {2, 8, 32};
    for (int s = 0; s < 3; s++) {
        cr_assert_eq(bertc("predict --model %s/bert_seqcls_single --input %s --batch-size %d",
                           dir, path, sizes[s]), 0);
        /* the text column in input order; the scores to the printed digits, or
         * within float noise of a different batch shape */
        const char *a = batch1, *b = out;
        for (int i = 0; i < 23; i++) {
            const char *ea = strchr(a, '\n'), *eb = strchr(b, '\n');
            cr_assert(ea && eb, "--batch-size %d: fewer lines", sizes[s]);
            const char *xa = memchr(a, '\t', (size_t)(ea - a)), *xb = memchr(b, '\t',
                                                                             (size_t)(eb - b));
            cr_assert(xa && xb);
            const char *txa = memchr(xa + 1, '\t', (size_t)(ea - xa - 1));
            const char *txb = memchr(xb + 1, '\t', (size_t)(eb - xb - 1));
            cr_assert(txa && txb);
            cr_expect((ea - txa) == (eb - txb) && !memcmp(txa, txb, (size_t)(ea - txa)),
                      "--batch-size %d, line %d: another text (%.40s)", sizes[s], i + 1, txb);
            cr_expect((xa - a) == (xb - b) && !memcmp(a, b, (size_t)(xa - a)),
                      "--batch-size %d, line %d: another label", sizes[s], i + 1);
            double sa = strtod(xa + 1, NULL), sb = strtod(xb + 1, NULL);
            cr_expect(fabs(sa - sb) < 2e-6, "--batch-size %d, line %d: %.6f, batch 1 %.6f",
                      sizes[s], i + 1, sb, sa);
            a = ea + 1;
            b = eb + 1;
        }
    }
}
