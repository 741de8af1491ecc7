/* zoo/svg.c — loss curves and attention maps as SVG. */
#include "zoo/svg.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static FILE *open_svg(const char *path, int w, int h, BertcError *err)
{
    FILE *f = bertc_open_write(path, err);
    if (!f)
        return NULL;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
               "font-family=\"sans-serif\" font-size=\"12\">\n"
               "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", w, h);
    return f;
}

static int close_svg(FILE *f, const char *path, BertcError *err)
{
    fprintf(f, "</svg>\n");
    if (fclose(f) != 0)
        return bertc_errorf(err, "%s: write failed", path);
    return 0;
}

/* Text with the five XML specials escaped. */
static void put_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&apos;", f); break;
        default: fputc(*s, f);
        }
    }
}

/* ---- loss curve -------------------------------------------------------- */

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

int bertc_svg_loss_curve(const char *path, const TrainResult *res, const char *title,
                   BertcError *err)
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
    FILE *f = open_svg(path, 640, 380, err);
    if (!f)
        return -1;
    fprintf(f, "<text x=\"320\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">");
    put_text(f, title);
    fprintf(f, "</text>\n");
    axes(f, &p);
    polyline(f, &p, res, false, "#1f77b4");
    fprintf(f, "<text x=\"590\" y=\"60\" fill=\"#1f77b4\" text-anchor=\"end\">train loss</text>\n");
    if (has_eval) {
        polyline(f, &p, res, true, "#d62728");
        fprintf(f, "<text x=\"590\" y=\"78\" fill=\"#d62728\" text-anchor=\"end\">eval loss"
                   "</text>\n");
    }
    return close_svg(f, path, err);
}

/* ---- attention maps ---------------------------------------------------- */

/* One head's (S, S) map at (x, y); darker blue = more attention. */
static void heat_map(FILE *f, const float *a, int64_t S, int x, int y, int cell)
{
    for (int64_t i = 0; i < S; i++)
        for (int64_t j = 0; j < S; j++) {
            double v = fmin(1.0, fmax(0.0, a[i * S + j]));
            int shade = (int)(255 - 200 * sqrt(v));
            fprintf(f, "<rect x=\"%lld\" y=\"%lld\" width=\"%d\" height=\"%d\" "
                       "fill=\"rgb(%d,%d,255)\"><title>%.3f</title></rect>\n",
                    (long long)(x + j * cell), (long long)(y + i * cell), cell, cell, shade,
                    shade, v);
        }
}

static void labels(FILE *f, const char *const *tokens, int64_t S, int x, int y, int cell,
                   bool rows)
{
    for (int64_t i = 0; i < S; i++) {
        if (rows)
            fprintf(f, "<text x=\"%d\" y=\"%lld\" text-anchor=\"end\" font-size=\"10\">", x - 4,
                    (long long)(y + i * cell + cell * 3 / 4));
        else
            fprintf(f, "<text transform=\"translate(%lld,%d) rotate(-60)\" font-size=\"10\">",
                    (long long)(x + i * cell + cell * 3 / 4), y - 4);
        put_text(f, tokens[i]);
        fprintf(f, "</text>\n");
    }
}

int bertc_svg_attention(const char *path, const float *probs, int64_t nh, int64_t S,
                  const char *const *tokens, const char *title, BertcError *err)
{
    if (nh < 1 || nh > SVG_MAX_HEADS || S < 1 || S > SVG_MAX_TOKENS)   /* sizes fit in int */
        return bertc_errorf(err, "%s: cannot draw %lld heads of %lld tokens (1..%d heads, "
                            "1..%d tokens)", path, (long long)nh, (long long)S, SVG_MAX_HEADS,
                            SVG_MAX_TOKENS);
    int cell = S <= 16 ? 18 : S <= 32 ? 12 : 6, margin = 90, gap = 40;
    int per_row = nh <= 4 ? (int)nh : 4, rows = (int)((nh + per_row - 1) / per_row);
    int map = (int)S * cell;
    int w = margin + per_row * (map + gap + margin / 2), h = 40 + rows * (map + margin + gap);
    FILE *f = open_svg(path, w, h, err);
    if (!f)
        return -1;
    fprintf(f, "<text x=\"%d\" y=\"20\" font-size=\"15\">", margin);
    put_text(f, title);
    fprintf(f, "</text>\n");
    for (int64_t head = 0; head < nh; head++) {
        int x = margin + (int)(head % per_row) * (map + gap + margin / 2);
        int y = 40 + margin + (int)(head / per_row) * (map + margin + gap);
        fprintf(f, "<text x=\"%d\" y=\"%d\" font-weight=\"bold\">head %lld</text>\n", x,
                y - margin + 14, (long long)head);
        heat_map(f, probs + head * S * S, S, x, y, cell);
        labels(f, tokens, S, x, y, cell, true);
        labels(f, tokens, S, x, y, cell, false);
    }
    return close_svg(f, path, err);
}
