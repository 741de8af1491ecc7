/* zoo/train/metrics.c — the scores `bertc finetune` reports on held-out data
 * (zoo/train/dataset.h): accuracy and macro-F1 (single-label), micro-F1
 * (multi-label), MSE and Pearson's r (regression). Counts are exact
 * integers; sums of floats are taken in double. */
#include "zoo/train/dataset.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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

void bertc_metric_prf(int64_t tp, int64_t fp, int64_t fn, double *precision, double *recall,
                      double *f1_score)
{
    *precision = tp ? (double)tp / (double)(tp + fp) : 0.0;
    *recall = tp ? (double)tp / (double)(tp + fn) : 0.0;
    *f1_score = f1(tp, fp, fn);
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

/* ---- entity-level F1 (seqeval) ------------------------------------------ */

/* "B-PER" -> prefix 'B', type "PER"; "O" -> 'O'; a tag without a prefix is
 * an inside tag of its own type (as seqeval reads "PER"). */
static char tag_prefix(const char *tag, const char **type)
{
    if (strcmp(tag, "O") == 0) {
        *type = "";
        return 'O';
    }
    if (strlen(tag) >= 2 && tag[1] == '-' && strchr("BIES", tag[0])) {
        *type = tag + 2;
        return tag[0];
    }
    *type = tag;
    return 'I';
}

/* Whether a chunk starts at tag i given the tag before it (conlleval's
 * start_of_chunk): B or S always; I or E after O, after an E or S, or
 * after another type. */
static bool chunk_starts(char prev, const char *prev_type, char cur, const char *type)
{
    if (cur == 'O')
        return false;
    if (cur == 'B' || cur == 'S' || prev == 'O' || prev == 'E' || prev == 'S')
        return true;
    return strcmp(prev_type, type) != 0;
}

/* The chunks of tags[0..n) as [start, end), written to start[]/end[] (the
 * type is that of the tag at start); returns how many. */
static int64_t chunks(const char *const *tags, int64_t n, int64_t *start, int64_t *end)
{
    int64_t k = 0;
    char prev = 'O';
    const char *prev_type = "";
    for (int64_t i = 0; i < n; i++) {
        const char *type;
        char cur = tag_prefix(tags[i], &type);
        bool starts = chunk_starts(prev, prev_type, cur, type);
        /* the open chunk ends before i unless i continues it */
        if (k && end[k - 1] < 0 && (starts || cur == 'O'))
            end[k - 1] = i;
        if (starts) {
            start[k] = i;
            end[k++] = -1;
        }
        prev = cur;
        prev_type = type;
        if ((cur == 'E' || cur == 'S') && k && end[k - 1] < 0)
            end[k - 1] = i + 1;   /* E and S close their chunk */
    }
    if (k && end[k - 1] < 0)
        end[k - 1] = n;
    return k;
}

static bool same_chunk(const char *const *gold, const char *const *pred, int64_t s)
{
    const char *tg, *tp;
    tag_prefix(gold[s], &tg);
    tag_prefix(pred[s], &tp);
    return strcmp(tg, tp) == 0;
}

double bertc_metric_entity_f1(const char *const *gold, const char *const *pred,
                              const int64_t *lengths, int64_t n_seqs)
{
    int64_t tp = 0, n_gold = 0, n_pred = 0, total = 0;
    for (int64_t s = 0; s < n_seqs; s++)
        total = lengths[s] > total ? lengths[s] : total;
    int64_t *buf = malloc(sizeof *buf * 4 * (size_t)(total + 1));
    if (!buf)
        return NAN;
    int64_t *gs = buf, *ge = buf + total + 1, *ps = ge + total + 1, *pe = ps + total + 1;
    for (int64_t s = 0, off = 0; s < n_seqs; off += lengths[s++]) {
        int64_t ng = chunks(gold + off, lengths[s], gs, ge);
        int64_t np = chunks(pred + off, lengths[s], ps, pe);
        for (int64_t i = 0, j = 0; i < ng && j < np;) {   /* both sorted by start */
            if (gs[i] == ps[j]) {
                tp += ge[i] == pe[j] && same_chunk(gold + off, pred + off, gs[i]);
                i++;
                j++;
            } else if (gs[i] < ps[j]) {
                i++;
            } else {
                j++;
            }
        }
        n_gold += ng;
        n_pred += np;
    }
    free(buf);
    return n_gold + n_pred == 0 ? 1.0 : 2.0 * (double)tp / (double)(n_gold + n_pred);
}

/* ---- SQuAD exact match and F1 ------------------------------------------- */

/* SQuAD's normalize_answer: lowercase, drop ASCII punctuation, drop the
 * articles a/an/the, split on whitespace. The words are written into buf
 * NUL-separated; returns how many (start offsets in starts[]). */
static int squad_words(const char *s, char *buf, int *starts)
{
    size_t n = 0;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c < 128 && ispunct(c))
            continue;
        buf[n++] = (char)(c < 128 ? tolower(c) : c);
    }
    buf[n] = '\0';
    int k = 0;
    for (char *w = buf, *save = NULL; (w = strtok_r(w, " \t\n\r\f\v", &save)); w = NULL)
        if (strcmp(w, "a") != 0 && strcmp(w, "an") != 0 && strcmp(w, "the") != 0)
            starts[k++] = (int)(w - buf);
    return k;
}

/* The two texts' words, in one allocation (free *mem). */
static void squad_pair(const char *pred, const char *gold, void **mem, char **pb, int **ps,
                       int *np, char **gb, int **gs, int *ng)
{
    size_t lp = strlen(pred) + 1, lg = strlen(gold) + 1;
    int *m = malloc(sizeof(int) * (lp + lg) + lp + lg);   /* the ints first: aligned */
    *mem = m;
    if (!m) {
        *np = *ng = -1;
        return;
    }
    *ps = m;
    *gs = m + lp;
    *pb = (char *)(m + lp + lg);
    *gb = *pb + lp;
    *np = squad_words(pred, *pb, *ps);
    *ng = squad_words(gold, *gb, *gs);
}

double bertc_metric_squad_em(const char *pred, const char *gold)
{
    void *mem;
    char *pb, *gb;
    int *ps, *gs, np, ng;
    squad_pair(pred, gold, &mem, &pb, &ps, &np, &gb, &gs, &ng);
    bool same = np == ng && np >= 0;
    for (int i = 0; same && i < np; i++)
        same = strcmp(pb + ps[i], gb + gs[i]) == 0;
    free(mem);
    return same ? 1.0 : 0.0;
}

double bertc_metric_squad_f1(const char *pred, const char *gold)
{
    void *mem;
    char *pb, *gb;
    int *ps, *gs, np, ng;
    squad_pair(pred, gold, &mem, &pb, &ps, &np, &gb, &gs, &ng);
    if (np <= 0 || ng <= 0) {   /* SQuAD 2.0: no words on a side scores 1 only if both */
        free(mem);
        return np == 0 && ng == 0 ? 1.0 : 0.0;
    }
    int same = 0;   /* the multiset intersection: each gold word used once */
    for (int i = 0; i < np; i++)
        for (int j = 0; j < ng; j++)
            if (gs[j] >= 0 && strcmp(pb + ps[i], gb + gs[j]) == 0) {
                gs[j] = -1;
                same++;
                break;
            }
    free(mem);
    if (same == 0)
        return 0.0;
    double precision = (double)same / np, recall = (double)same / ng;
    return 2 * precision * recall / (precision + recall);
}
