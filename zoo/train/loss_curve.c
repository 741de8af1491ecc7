/* zoo/train/loss_curve.c — a training run's loss curve as SVG: the train
 * loss, and the eval loss where there is one, against the step, and (by
 * bertc_svg_training_curve) the evaluations' metric on its own axis with
 * its best step marked
 * (bertc_svg_loss_curve, zoo/train/train.h), drawn with the SVG primitives
 * of zoo/pictures/svg.h. */
#include "zoo/train/train.h"
#include "zoo/pictures/svg.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct Plot {
    double x0, x1, y0, y1;          /* data range */
    int left, top, width, height;   /* plot area in pixels */
} Plot;

static double px(const Plot *p, double x) { return p->left + (x - p->x0) / (p->x1 - p->x0) * p->width; }
static double py(const Plot *p, double y) { return p->top + (1 - (y - p->y0) / (p->y1 - p->y0)) * p->height; }

static void polyline(FILE *f, const Plot *p, const TrainResult *res, bool eval,
                     const char *colour)
{
    fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", colour);
    for (int i = 0; i < res->n_points; i++) {
        double y = eval ? res->points[i].eval_loss : res->points[i].train_loss;
        if (isfinite(y))
            fprintf(f, "%.1f,%.1f ", px(p, (double)res->points[i].step), py(p, y));
    }
    fprintf(f, "\"/>\n");
}

static void axes(FILE *f, const Plot *p)
{
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" "
               "stroke=\"#888\"/>\n", p->left, p->top, p->width, p->height);
    for (int k = 0; k <= 4; k++) {
        double y = p->y0 + (p->y1 - p->y0) * k / 4, x = p->x0 + (p->x1 - p->x0) * k / 4;
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.2f</text>\n", p->left - 6,
                py(p, y) + 4, y);
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%.0f</text>\n", px(p, x),
                p->top + p->height + 18, x);
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">step</text>\n",
            p->left + p->width / 2, p->top + p->height + 36);
}

/* Lower is better for these metrics (perplexity, MSE), higher for the rest
 * (accuracy, F1, exact match, Pearson). */
static bool lower_is_better(const char *metric)
{
    return strstr(metric, "perplexity") || strstr(metric, "mse") || strstr(metric, "MSE") ||
           strstr(metric, "loss");
}

/* The metric on its own scale (right-hand axis, green), its best point
 * ringed and its step written beside it. */
static void metric_curve(FILE *f, const Plot *loss, const TrainResult *res, const char *metric)
{
    Plot p = *loss;
    p.y0 = INFINITY, p.y1 = -INFINITY;
    int best = -1;
    bool lower = lower_is_better(metric);
    for (int i = 0; i < res->n_points; i++) {
        double m = res->points[i].metric;
        if (!isfinite(m))
            continue;
        p.y0 = fmin(p.y0, m), p.y1 = fmax(p.y1, m);
        if (best < 0 || (lower ? m < res->points[best].metric : m > res->points[best].metric))
            best = i;
    }
    if (best < 0)
        return;
    double pad = p.y1 > p.y0 ? 0.05 * (p.y1 - p.y0) : fmax(fabs(p.y0) * 0.05, 1e-3);
    p.y0 -= pad, p.y1 += pad;
    fprintf(f, "<polyline fill=\"none\" stroke=\"#2ca02c\" stroke-width=\"2\" "
               "stroke-dasharray=\"6 3\" points=\"");
    for (int i = 0; i < res->n_points; i++)
        if (isfinite(res->points[i].metric))
            fprintf(f, "%.1f,%.1f ", px(&p, (double)res->points[i].step),
                    py(&p, res->points[i].metric));
    fprintf(f, "\"/>\n");
    for (int k = 0; k <= 4; k++) {
        double y = p.y0 + (p.y1 - p.y0) * k / 4;
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" fill=\"#2ca02c\">%.3g</text>\n",
                p.left + p.width + 6, py(&p, y) + 4, y);
    }
    const TrainPoint *b = &res->points[best];
    double bx = px(&p, (double)b->step), by = py(&p, b->metric);
    fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"none\" stroke=\"#2ca02c\" "
               "stroke-width=\"2\"/>\n", bx, by);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#2ca02c\" text-anchor=\"%s\">best %.4g at "
               "step %lld</text>\n", bx + (bx > p.left + p.width / 2 ? -8 : 8), by - 9,
            bx > p.left + p.width / 2 ? "end" : "start", b->metric, (long long)b->step);
    fprintf(f, "<text x=\"590\" y=\"96\" fill=\"#2ca02c\" text-anchor=\"end\">");
    bertc_svg_put_text(f, metric);
    fprintf(f, " (right axis)</text>\n");
}

int bertc_svg_training_curve(const char *path, const TrainResult *res, const char *title,
                             const char *metric, BertcError *err)
{
    Plot p = {0, 1, 0, 1e-9, 60, 40, 520, 280};
    bool has_eval = false;
    for (int i = 0; i < res->n_points; i++) {
        const TrainPoint *t = &res->points[i];
        p.x1 = fmax(p.x1, (double)t->step);
        if (isfinite(t->train_loss))
            p.y1 = fmax(p.y1, t->train_loss);
        if (isfinite(t->eval_loss)) {
            p.y1 = fmax(p.y1, t->eval_loss);
            has_eval = true;
        }
    }
    p.y1 *= 1.05;
    FILE *f = bertc_svg_open(path, 640, 380, err);
    if (!f)
        return -1;
    fprintf(f, "<text x=\"320\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">");
    bertc_svg_put_text(f, title);
    fprintf(f, "</text>\n");
    axes(f, &p);
    polyline(f, &p, res, false, "#1f77b4");
    fprintf(f, "<text x=\"590\" y=\"60\" fill=\"#1f77b4\" text-anchor=\"end\">train loss</text>\n");
    if (has_eval) {
        polyline(f, &p, res, true, "#d62728");
        fprintf(f, "<text x=\"590\" y=\"78\" fill=\"#d62728\" text-anchor=\"end\">eval loss"
                   "</text>\n");
    }
    if (metric)
        metric_curve(f, &p, res, metric);
    return bertc_svg_close(f, path, err);
}

int bertc_svg_loss_curve(const char *path, const TrainResult *res, const char *title,
                         BertcError *err)
{
    return bertc_svg_training_curve(path, res, title, NULL, err);
}
