/* zoo/metrics.c — the scores `bertc finetune` reports on held-out data
 * (zoo/dataset.h): accuracy and macro-F1 (single-label), micro-F1
 * (multi-label), MSE and Pearson's r (regression). Counts are exact
 * integers; sums of floats are taken in double. */
#include "zoo/dataset.h"

#include <math.h>
#include <stdlib.h>

double bertc_metric_accuracy(const int32_t *gold, const int32_t *pred, int64_t n)
{
    int64_t right = 0;
    for (int64_t i = 0; i < n; i++)
        right += gold[i] == pred[i];
    return n ? (double)right / (double)n : 0.0;
}

/* F1 = 2 TP / (2 TP + FP + FN), the same as 2PR / (P + R); 0 when nothing
 * was predicted or expected. */
static double f1(int64_t tp, int64_t fp, int64_t fn)
{
    return tp ? 2.0 * (double)tp / (double)(2 * tp + fp + fn) : 0.0;
}

double bertc_metric_macro_f1(const int32_t *gold, const int32_t *pred, int64_t n, int C)
{
    int64_t *count = calloc(3 * (size_t)C, sizeof *count);   /* tp, fp, fn per class */
    if (!count)
        return NAN;
    for (int64_t i = 0; i < n; i++) {
        if (gold[i] == pred[i]) {
            count[3 * gold[i]]++;
        } else {
            count[3 * pred[i] + 1]++;
            count[3 * gold[i] + 2]++;
        }
    }
    double sum = 0;
    int present = 0;
    for (int c = 0; c < C; c++) {
        const int64_t *k = count + 3 * c;
        if (k[0] + k[1] + k[2] == 0)   /* neither expected nor predicted */
            continue;
        sum += f1(k[0], k[1], k[2]);
        present++;
    }
    free(count);
    return present ? sum / present : 0.0;
}

double bertc_metric_micro_f1(const uint8_t *gold, const uint8_t *pred, int64_t n, int C)
{
    int64_t tp = 0, fp = 0, fn = 0;
    for (int64_t i = 0; i < n * C; i++) {
        tp += gold[i] && pred[i];
        fp += !gold[i] && pred[i];
        fn += gold[i] && !pred[i];
    }
    return tp + fp + fn == 0 ? 1.0 : f1(tp, fp, fn);
}

double bertc_metric_mse(const float *gold, const float *pred, int64_t n)
{
    double sum = 0;
    for (int64_t i = 0; i < n; i++) {
        double e = (double)pred[i] - (double)gold[i];
        sum += e * e;
    }
    return n ? sum / (double)n : 0.0;
}

/* r = cov(x, y) / (sd(x) sd(y)), from centred sums (two passes: no
 * cancellation in sum(x^2) - n mean^2). */
double bertc_metric_pearson(const float *gold, const float *pred, int64_t n)
{
    if (n < 2)
        return 0.0;
    double mx = 0, my = 0;
    for (int64_t i = 0; i < n; i++) {
        mx += gold[i];
        my += pred[i];
    }
    mx /= (double)n;
    my /= (double)n;
    double sxy = 0, sxx = 0, syy = 0;
    for (int64_t i = 0; i < n; i++) {
        double dx = gold[i] - mx, dy = pred[i] - my;
        sxy += dx * dy;
        sxx += dx * dx;
        syy += dy * dy;
    }
    return sxx > 0 && syy > 0 ? sxy / sqrt(sxx * syy) : 0.0;
}
