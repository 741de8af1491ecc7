/* zoo/train/naive_bayes.c — the bag-of-words multinomial naive Bayes of
 * zoo/train/dataset.h, the baseline `make demo` prints beside a fine-tuned
 * BERT (Manning, Raghavan & Schütze, Introduction to Information
 * Retrieval, 2008, §13.2: TrainMultinomialNB and ApplyMultinomialNB).
 *
 *   fit:     the vocabulary is every word of the training texts, sorted
 *            (all occurrences collected, sorted, duplicates dropped);
 *            T (C, V) counts word v in the texts of class c, and
 *            log_prior[c]       = log(N_c / N)
 *            log_p_word[c, v]   = log((T[c, v] + alpha) / (sum_w T[c, w] + alpha V));
 *   predict: argmax over c of log_prior[c] + sum over the text's words w
 *            that the vocabulary has of log_p_word[c, w] (binary search),
 *            the lower class on a tie.
 * Numerics: the scores are sums of logs in double. The product they stand
 * for, a few hundred probabilities near 1e-4, would underflow even a double;
 * the counts are exact in double up to 2^53. */
#include "zoo/train/dataset.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One word of a text: the bytes s[0..len), compared lowercased. */
typedef struct Word {
    const char *s;
    size_t len;
} Word;

static bool is_word_byte(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static int lower(unsigned char c)
{
    return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

/* The next word at or after *p, and *p moved past it; false at the end. */
static bool next_word(const char **p, Word *w)
{
    const char *s = *p;
    while (*s && !is_word_byte((unsigned char)*s))
        s++;
    w->s = s;
    while (is_word_byte((unsigned char)*s))
        s++;
    w->len = (size_t)(s - w->s);
    *p = s;
    return w->len > 0;
}

/* strcmp's order of the two words lowercased. */
static int word_cmp(const char *a, size_t na, const char *b, size_t nb)
{
    size_t n = na < nb ? na : nb;
    for (size_t i = 0; i < n; i++) {
        int d = lower((unsigned char)a[i]) - lower((unsigned char)b[i]);
        if (d)
            return d;
    }
    return na < nb ? -1 : na > nb;
}

static int cmp_words(const void *x, const void *y)
{
    const Word *a = x, *b = y;
    return word_cmp(a->s, a->len, b->s, b->len);
}

/* w's index in the vocabulary, -1 when the training texts never had it. */
static int64_t word_id(const NaiveBayes *nb, Word w)
{
    int64_t lo = 0, hi = nb->V - 1;
    while (lo <= hi) {
        int64_t mid = lo + (hi - lo) / 2;
        const char *v = nb->words[mid];
        int d = word_cmp(w.s, w.len, v, strlen(v));
        if (d == 0)
            return mid;
        if (d < 0)
            hi = mid - 1;
        else
            lo = mid + 1;
    }
    return -1;
}

/* The sorted distinct words of texts[0..n) into nb->words (lowercased, in
 * arena), nb->V of them. */
static int build_vocabulary(NaiveBayes *nb, Arena *arena, const char *const *texts, int64_t n,
                            BertcError *err)
{
    size_t n_words = 0, k = 0;
    Word w;
    for (int64_t i = 0; i < n; i++)
        for (const char *p = texts[i]; next_word(&p, &w);)
            n_words++;
    Word *all = malloc((n_words ? n_words : 1) * sizeof *all);
    if (!all)
        return bertc_errorf(err, "naive Bayes: out of memory for the %zu words of the training "
                            "texts", n_words);
    for (int64_t i = 0; i < n; i++)
        for (const char *p = texts[i]; next_word(&p, &w);)
            all[k++] = w;
    qsort(all, n_words, sizeof *all, cmp_words);
    nb->V = 0;
    nb->words = bertc_arena_alloc(arena, sizeof(char *) * (n_words ? n_words : 1));
    for (size_t i = 0; i < n_words; i++) {
        if (i > 0 && cmp_words(&all[i - 1], &all[i]) == 0)
            continue;
        char *copy = bertc_arena_alloc(arena, all[i].len + 1);
        for (size_t j = 0; j < all[i].len; j++)
            copy[j] = (char)lower((unsigned char)all[i].s[j]);
        copy[all[i].len] = '\0';
        nb->words[nb->V++] = copy;
    }
    free(all);
    return 0;
}

int bertc_naive_bayes_fit(NaiveBayes *nb, Arena *arena, const char *const *texts,
                          const int32_t *labels, int64_t n, int C, double alpha,
                          BertcError *err)
{
    if (n < 1 || C < 1)
        return bertc_errorf(err, "naive Bayes: %lld training texts of %d classes; it needs at "
                            "least one of each", (long long)n, C);
    if (!isfinite(alpha) || alpha <= 0)
        return bertc_errorf(err, "naive Bayes: alpha %g; the smoothing must be finite and > 0",
                            alpha);
    for (int64_t i = 0; i < n; i++)
        if (labels[i] < 0 || labels[i] >= C)
            return bertc_errorf(err, "naive Bayes: training text %lld has label %d, not one of "
                                "0..%d", (long long)i, (int)labels[i], C - 1);
    nb->C = C;
    if (build_vocabulary(nb, arena, texts, n, err) != 0)
        return -1;
    int64_t V = nb->V;
    double *rows = bertc_arena_calloc(arena, (size_t)C, sizeof(double));     /* N_c */
    double *total = bertc_arena_calloc(arena, (size_t)C, sizeof(double));    /* sum_w T[c, w] */
    nb->log_prior = bertc_arena_alloc(arena, sizeof(double) * (size_t)C);
    nb->log_p_word = bertc_arena_calloc(arena, (size_t)(C * (V ? V : 1)), sizeof(double));
    double *T = nb->log_p_word;   /* the counts first, their logs in place after */
    Word w;
    for (int64_t i = 0; i < n; i++) {
        int c = labels[i];
        rows[c] += 1;
        for (const char *p = texts[i]; next_word(&p, &w); total[c] += 1)
            T[c * V + word_id(nb, w)] += 1;
    }
    for (int c = 0; c < C; c++) {
        nb->log_prior[c] = rows[c] > 0 ? log(rows[c] / (double)n) : -INFINITY;
        double denominator = total[c] + alpha * (double)V;
        for (int64_t v = 0; v < V; v++)
            T[c * V + v] = log((T[c * V + v] + alpha) / denominator);
    }
    return 0;
}

void bertc_naive_bayes_scores(const NaiveBayes *nb, const char *text, double *scores)
{
    for (int c = 0; c < nb->C; c++)
        scores[c] = nb->log_prior[c];
    Word w;
    for (const char *p = text; next_word(&p, &w);) {
        int64_t v = word_id(nb, w);
        for (int c = 0; c < nb->C && v >= 0; c++)
            scores[c] += nb->log_p_word[c * nb->V + v];
    }
}

int32_t bertc_naive_bayes_predict(const NaiveBayes *nb, const char *text)
{
    double stack[16];
    double *scores = nb->C <= 16 ? stack : malloc(sizeof(double) * (size_t)nb->C);
    if (!scores)   /* LABELS_MAX classes at most: 8 KB */
        bertc_fatal("naive Bayes: out of memory for %d scores", nb->C);
    bertc_naive_bayes_scores(nb, text, scores);
    int32_t best = 0;
    for (int c = 1; c < nb->C; c++)
        if (scores[c] > scores[best])   /* strictly: a tie keeps the lower class */
            best = c;
    if (scores != stack)
        free(scores);
    return best;
}

/* The texts of column `column` of d, each row's cell, into texts (d->n_rows). */
static int text_cells(const Dataset *d, const char *column, const char **texts, BertcError *err)
{
    int col = bertc_dataset_column(d, column, err);
    if (col < 0)
        return -1;
    for (int64_t i = 0; i < d->n_rows; i++)
        if (!(texts[i] = bertc_dataset_cell(d, i, col)))
            return bertc_errorf(err, "%s:%lld: no '%s'", d->name, (long long)d->line[i],
                                column);
    return 0;
}

/* bertc_naive_bayes_accuracy's work, everything in arena. */
static int fit_and_score(const Dataset *train, const Dataset *held_out, const char *text_column,
                         const char *label_column, Arena *a, double *accuracy, BertcError *err)
{
    int64_t n = train->n_rows, m = held_out->n_rows;
    LabelSet set;
    NaiveBayes nb;
    int train_label = bertc_dataset_column(train, label_column, err);
    int eval_label = train_label < 0 ? -1 : bertc_dataset_column(held_out, label_column, err);
    const char **texts = bertc_arena_alloc(a, sizeof(char *) * (size_t)(n + m + 1));
    int32_t *ids = bertc_arena_alloc(a, sizeof(int32_t) * (size_t)(n + 2 * m + 1));
    if (eval_label < 0 || bertc_label_set_build(&set, a, train, train_label, false, err) != 0 ||
        text_cells(train, text_column, texts, err) != 0 ||
        text_cells(held_out, text_column, texts + n, err) != 0)
        return -1;
    for (int64_t i = 0; i < n; i++) {
        const char *name = bertc_dataset_cell(train, i, train_label);
        ids[i] = bertc_label_set_id(&set, name, strlen(name));
    }
    if (bertc_naive_bayes_fit(&nb, a, texts, ids, n, set.n, 1.0, err) != 0)
        return -1;
    int32_t *gold = ids + n, *pred = ids + n + m;
    for (int64_t i = 0; i < m; i++) {
        const char *name = bertc_dataset_cell(held_out, i, eval_label);
        gold[i] = name ? bertc_label_set_id(&set, name, strlen(name)) : -1;   /* -1: never right */
        pred[i] = bertc_naive_bayes_predict(&nb, texts[n + i]);
    }
    *accuracy = bertc_metric_accuracy(gold, pred, m);
    return 0;
}

int bertc_naive_bayes_accuracy(const Dataset *train, const Dataset *held_out,
                               const char *text_column, const char *label_column,
                               double *accuracy, BertcError *err)
{
    Arena *a = bertc_arena_create_checked("naive Bayes", 1 << 16, err);
    if (!a)
        return -1;
    int rc = fit_and_score(train, held_out, text_column, label_column, a, accuracy, err);
    bertc_arena_destroy(a);
    return rc;
}
