/* zoo/pictures/svg.c — model outputs drawn by their declared shape, as SVG
 * (zoo/pictures/svg.h); the loss curve is zoo/train/loss_curve.c. */
#include "zoo/pictures/svg.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

FILE *bertc_svg_open(const char *path, int w, int h, BertcError *err)
{
    FILE *f = bertc_open_write(path, err);
    if (!f)
        return NULL;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
               "font-family=\"sans-serif\" font-size=\"12\">\n"
               "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", w, h);
    return f;
}

int bertc_svg_close(FILE *f, const char *path, BertcError *err)
{
    fprintf(f, "</svg>\n");
    if (fclose(f) != 0)
        return bertc_errorf(err, "%s: write failed", path);
    return 0;
}

void bertc_svg_put_text(FILE *f, const char *s)
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

/* ---- shapes ------------------------------------------------------------- */

const char bertc_svg_drawable[] = "(B, nh, S, S) maps, (B, nh, S, 1) gates, (B, S) / (B, N) / "
                                  "(S) / (B, S, 1) vectors";

#define SHAPE_MAX_DIMS 6

/* "(B, nh, S, 1)" -> dims "B", "nh", "S", "1" (each at most 31 characters);
 * returns how many, -1 if it is not such a list. */
static int shape_dims(const char *shape, char dims[SHAPE_MAX_DIMS][32])
{
    const char *s = shape;
    int n = 0;
    if (*s++ != '(')
        return -1;
    while (*s && *s != ')') {
        size_t len = strcspn(s, ",)");
        if (n == SHAPE_MAX_DIMS || len == 0 || len >= 32)
            return -1;
        memcpy(dims[n], s, len);
        dims[n++][len] = '\0';
        s += len;
        if (*s == ',')
            s += (s[1] == ' ') ? 2 : 1;
    }
    return *s == ')' && s[1] == '\0' ? n : -1;
}

/* A token or sentence axis: S or N. */
static bool is_seq(const char *d) { return strcmp(d, "S") == 0 || strcmp(d, "N") == 0; }
/* A batch axis: B, or a product such as "B·C". */
static bool is_batch(const char *d) { return d[0] == 'B'; }

SvgKind bertc_svg_kind(const char *shape)
{
    char d[SHAPE_MAX_DIMS][32];
    int n = shape ? shape_dims(shape, d) : -1;
    if (n == 4 && is_batch(d[0]) && is_seq(d[2]))   /* d[1]: the heads, nh or heads */
        return strcmp(d[3], d[2]) == 0 ? SVG_MAPS : strcmp(d[3], "1") == 0 ? SVG_GATES
             : is_seq(d[3]) ? SVG_UNDRAWABLE : SVG_MATRIX;   /* (B, nh, S, d): per head */
    if (n == 3 && is_batch(d[0]) && is_seq(d[1]))
        return strcmp(d[2], "1") == 0 ? SVG_VECTOR : SVG_MATRIX;
    if (n == 3 && is_batch(d[0]) && is_seq(d[2]))   /* (B, conv_filters, S) */
        return SVG_MATRIX;
    if (n == 2 && is_batch(d[0]))
        return is_seq(d[1]) ? SVG_VECTOR : SVG_MATRIX;   /* (B, H): one row */
    if (n == 1 && is_seq(d[0]))
        return SVG_VECTOR;
    /* (n_masked, H), (n_spans): one row per masked token or span */
    return (n == 1 || n == 2) && strncmp(d[0], "n_", 2) == 0 ? SVG_MATRIX : SVG_UNDRAWABLE;
}

/* ---- colour ------------------------------------------------------------- */

/* The data's range and how it maps to colour: sequential white (0) -> blue
 * (hi) when nothing is below 0, else diverging around 0 up to max |v|. */
typedef struct Scale {
    double min, max;      /* of the finite data */
    double hi;            /* |v| that gets the full colour */
    bool diverging;
} Scale;

static Scale scale_of(const float *x, int64_t n)
{
    Scale s = {INFINITY, -INFINITY, 1, false};
    for (int64_t i = 0; i < n; i++)
        if (isfinite(x[i])) {
            s.min = fmin(s.min, x[i]);
            s.max = fmax(s.max, x[i]);
        }
    if (s.min > s.max)   /* nothing finite */
        s.min = s.max = 0;
    s.diverging = s.min < 0;
    s.hi = s.diverging ? fmax(-s.min, fabs(s.max)) : s.max;
    if (!(s.hi > 0))
        s.hi = 1;
    return s;
}

/* rgb(...) of v: white at 0 towards dark blue (v > 0, sequential), or blue
 * (v < 0) and red (v > 0) when diverging; grey for NaN and infinities. */
static void colour(const Scale *s, double v, char out[32])
{
    static const int white[3] = {255, 255, 255}, blue[3] = {8, 48, 107},
                     neg[3] = {33, 102, 172}, pos[3] = {178, 24, 43};
    if (!isfinite(v)) {
        snprintf(out, 32, "rgb(160,160,160)");
        return;
    }
    double t = fmin(1.0, fabs(v) / s->hi);
    const int *to = !s->diverging ? blue : v < 0 ? neg : pos;
    if (!s->diverging && v < 0)
        t = 0;
    int c[3];
    for (int k = 0; k < 3; k++)
        c[k] = (int)lround(white[k] + (to[k] - white[k]) * t);
    snprintf(out, 32, "rgb(%d,%d,%d)", c[0], c[1], c[2]);
}

/* The colour scale at (x, y): a ramp of 20 steps from the scale's low end to
 * its high end, labelled with the data's min and max (and 0 when diverging). */
static void legend(FILE *f, const Scale *s, const char *value, int x, int y)
{
    double lo = s->diverging ? -s->hi : 0, hi = s->hi;
    char c[32];
    fprintf(f, "<g class=\"legend\"><text x=\"%d\" y=\"%d\" font-size=\"11\">colour: ", x, y);
    bertc_svg_put_text(f, value ? value : "value");
    fprintf(f, " (min %.4g, max %.4g%s)</text>\n", s->min, s->max,
            s->diverging ? "; diverging: blue &lt; 0 &lt; red" : "");
    for (int k = 0; k < 20; k++) {
        colour(s, lo + (hi - lo) * (k + 0.5) / 20, c);
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"10\" height=\"10\" fill=\"%s\"/>\n",
                x + k * 10, y + 6, c);
    }
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"200\" height=\"10\" fill=\"none\" "
               "stroke=\"#888\"/>\n", x, y + 6);
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"10\">%.3g</text>\n", x, y + 28, lo);
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"end\">%.3g</text>\n",
            x + 200, y + 28, hi);
    if (s->diverging)
        fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\">0</text>\n",
                x + 100, y + 28);
    fprintf(f, "</g>\n");
}

/* ---- layout ------------------------------------------------------------- */

/* Where things go: a title and legend band on top, then panels in a grid. */
typedef struct Layout {
    int cell_w, cell_h;       /* one heat-map cell, or one bar's width and the bars' height */
    int left, top;            /* room for row labels / the value axis, column labels */
    int panel_w, panel_h;     /* a panel with its labels */
    int per_row, grid_rows;
    int width, height;
} Layout;

#define HEADER 70         /* title + legend */
#define BAR_HEIGHT 120    /* the tallest bar */

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

static Layout layout_of(const SvgPicture *p)
{
    Layout l = {0};
    bool bars = p->kind == SVG_GATES || p->kind == SVG_VECTOR;
    int64_t longest = p->rows > p->cols ? p->rows : p->cols;
    l.cell_w = clampi((int)(480 / (bars ? p->cols : longest)), 2, bars ? 28 : 18);
    l.cell_h = bars ? BAR_HEIGHT : l.cell_w;
    l.left = bars ? 70 : 110;
    l.top = bars ? 40 : 110;
    int below = bars ? 70 : 10;   /* bars: the token labels go below */
    l.panel_w = l.left + (int)p->cols * l.cell_w + 30;
    l.panel_h = l.top + (bars ? BAR_HEIGHT : (int)p->rows * l.cell_h) + below;
    l.per_row = clampi(1100 / l.panel_w, 1, 4);
    if (l.per_row > p->panels)
        l.per_row = (int)p->panels;
    l.grid_rows = (int)((p->panels + l.per_row - 1) / l.per_row);
    l.width = (l.per_row * l.panel_w > 420 ? l.per_row * l.panel_w : 420) + 20;
    l.height = HEADER + l.grid_rows * l.panel_h + 10;
    return l;
}

/* ---- axis labels ---------------------------------------------------------- */

/* Axis labels never overlap, at any length: consecutive labels along an axis
 * are at least LABEL_GAP pixels apart, LABEL_FONT plus a little. Index axes
 * get numeric ticks thinned to a step of 1, 2, 5, 10, 20, 50, ...; token
 * axes show every k-th token, k the least that keeps the gap. Labels across
 * the axis run at 90 degrees (columns) or along it (rows), so the gap is
 * the font's height, not a word's width. */
#define LABEL_FONT 10
#define LABEL_GAP (LABEL_FONT + 2)

/* Every how many cells of `cell` pixels a label goes: numeric ticks step
 * through 1, 2, 5, 10, 20, 50, ...; token labels through 1, 2, 3, ... */
static int64_t label_step(int cell, bool numeric)
{
    if (cell >= LABEL_GAP)
        return 1;
    if (!numeric)
        return (LABEL_GAP + cell - 1) / cell;
    static const int64_t mantissa[] = {1, 2, 5};
    for (int64_t decade = 1;; decade *= 10)
        for (int m = 0; m < 3; m++)
            if (mantissa[m] * decade * cell >= LABEL_GAP)
                return mantissa[m] * decade;
}

/* Label i of an axis: its token, else its index times bin (a pooled axis
 * shows the first value of each bin). */
static void label_or_index(FILE *f, const char *const *labels, int64_t i, int64_t bin)
{
    if (labels && labels[i])
        bertc_svg_put_text(f, labels[i]);
    else
        fprintf(f, "%lld", (long long)(i * bin));
}

/* Row labels left of the cells (x is their right end), centred on their
 * row: <g class="ylabels">, every step-th row. */
static void row_labels(FILE *f, const SvgPicture *p, const Layout *l, int x, int y)
{
    int64_t step = label_step(l->cell_h, !p->row_labels);
    fprintf(f, "<g class=\"ylabels\" font-size=\"%d\" text-anchor=\"end\">\n", LABEL_FONT);
    for (int64_t i = 0; i < p->rows; i += step) {
        fprintf(f, "<text x=\"%d\" y=\"%lld\">", x,
                (long long)(y + i * l->cell_h + l->cell_h / 2 + LABEL_FONT * 7 / 20));
        label_or_index(f, p->row_labels, i, 1);
        fprintf(f, "</text>\n");
    }
    fprintf(f, "</g>\n");
}

/* Column labels at 90 degrees, centred on their column: rising from y
 * above a heat map, or hanging from y below a bar chart (below). */
static void col_labels(FILE *f, const SvgPicture *p, const Layout *l, int x, int y, bool below)
{
    int64_t step = label_step(l->cell_w, !p->col_labels);
    int64_t bin = p->col_bin > 1 ? p->col_bin : 1;
    fprintf(f, "<g class=\"xlabels\" font-size=\"%d\"%s>\n", LABEL_FONT,
            below ? " text-anchor=\"end\"" : "");
    for (int64_t j = 0; j < p->cols; j += step) {
        fprintf(f, "<text transform=\"translate(%lld,%d) rotate(-90)\">",
                (long long)(x + j * l->cell_w + l->cell_w / 2 + LABEL_FONT * 7 / 20), y);
        label_or_index(f, p->col_labels, j, bin);
        fprintf(f, "</text>\n");
    }
    fprintf(f, "</g>\n");
}

static void panel_title(FILE *f, const SvgPicture *p, int64_t k, int x, int y)
{
    if (p->panels > 1 || p->panel) {
        fprintf(f, "<text x=\"%d\" y=\"%d\" font-weight=\"bold\">", x, y);
        bertc_svg_put_text(f, p->panel ? p->panel : "panel");
        fprintf(f, " %lld</text>\n", (long long)k);
    }
}

/* ---- heat-map cells ----------------------------------------------------- */

/* A heat map's cells are drawn as one <path> per colour level, not a <rect>
 * per cell: |v| / hi is quantized to HEAT_LEVELS steps (per sign when
 * diverging), level 0 is the white ground and is not drawn, and a run of
 * cells of one level along a row is one subpath "m dx dy h w v h h-w z"
 * (relative moves, whole pixels). A 64-token page went from 11 MB of
 * rects to well under 1 MB; hovering a colour shows its range of values. */
#define HEAT_LEVELS 32
#define LEVEL_NAN (2 * HEAT_LEVELS)   /* not finite: grey */

/* v's level: 0..HEAT_LEVELS-1 (v >= 0, or any v on a sequential scale,
 * where v < 0 is white), -1..-(HEAT_LEVELS-1) below 0 when diverging. */
static int heat_level(const Scale *s, double v)
{
    if (!isfinite(v))
        return LEVEL_NAN;
    if (!s->diverging && v < 0)
        return 0;
    int k = (int)lround(fmin(1.0, fabs(v) / s->hi) * (HEAT_LEVELS - 1));
    return v < 0 ? -k : k;
}

/* The value at the middle of level k, and the range it covers. */
static double level_value(const Scale *s, double k) { return k * s->hi / (HEAT_LEVELS - 1); }

/* The subpaths of the cells of level k of a (rows, cols) map at (cx, cy). */
static void level_path(FILE *f, const float *a, int64_t rows, int64_t cols, const Layout *l,
                       const Scale *s, int k, int cx, int cy)
{
    long px = 0, py = 0;   /* where the last subpath started: the next one moves from it */
    bool first = true;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) {
            if (heat_level(s, a[i * cols + j]) != k)
                continue;
            int64_t run = 1;
            while (j + run < cols && heat_level(s, a[i * cols + j + run]) == k)
                run++;
            long x = cx + (long)j * l->cell_w, y = cy + (long)i * l->cell_h;
            long w = (long)run * l->cell_w;
            fprintf(f, "%c%ld %ldh%ldv%dh-%ldz", first ? 'M' : 'm', first ? x : x - px,
                    first ? y : y - py, w, l->cell_h, w);
            px = x;
            py = y;
            first = false;
            j += run - 1;
        }
}

/* Every level present in the map as one <path>, its colour the level's
 * middle and its <title> the values it covers. */
static void heat_cells(FILE *f, const float *a, int64_t rows, int64_t cols, const Layout *l,
                       const Scale *s, int cx, int cy)
{
    bool present[2 * HEAT_LEVELS + 1] = {false};   /* level + HEAT_LEVELS */
    for (int64_t n = 0; n < rows * cols; n++) {
        int k = heat_level(s, a[n]);
        present[k == LEVEL_NAN ? 2 * HEAT_LEVELS : k + HEAT_LEVELS] = true;
    }
    char c[32];
    for (int k = -(HEAT_LEVELS - 1); k <= HEAT_LEVELS; k++) {
        int code = k == HEAT_LEVELS ? LEVEL_NAN : k;
        if (k == 0 || !present[k + HEAT_LEVELS])
            continue;
        colour(s, code == LEVEL_NAN ? NAN : level_value(s, k), c);
        fprintf(f, "<path fill=\"%s\" d=\"", c);
        level_path(f, a, rows, cols, l, s, code, cx, cy);
        if (code == LEVEL_NAN)
            fprintf(f, "\"><title>not finite</title></path>\n");
        else
            fprintf(f, "\"><title>%.3g to %.3g</title></path>\n", level_value(s, k - 0.5),
                    level_value(s, k + 0.5));
    }
}

/* Panel k of a heat map at (x, y), the panel's top left. */
static void heat_panel(FILE *f, const SvgPicture *p, const Layout *l, const Scale *s, int64_t k,
                       int x, int y)
{
    const float *a = p->x + k * p->rows * p->cols;
    int cx = x + l->left, cy = y + l->top;
    panel_title(f, p, k, x, y + 14);
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"11\" fill=\"#444\">", cx, y + 30);
    bertc_svg_put_text(f, p->col_axis ? p->col_axis : "column");
    fprintf(f, " &#8594;</text>\n");
    fprintf(f, "<text transform=\"translate(%d,%d) rotate(90)\" font-size=\"11\" "
               "fill=\"#444\">", x + 4, cy);
    bertc_svg_put_text(f, p->row_axis ? p->row_axis : "row");
    fprintf(f, " &#8594;</text>\n");
    heat_cells(f, a, p->rows, p->cols, l, s, cx, cy);
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%lld\" height=\"%lld\" fill=\"none\" "
               "stroke=\"#bbb\"/>\n", cx, cy, (long long)(p->cols * l->cell_w),
            (long long)(p->rows * l->cell_h));
    row_labels(f, p, l, cx - 4, cy);
    col_labels(f, p, l, cx, cy - 4, false);
}

/* Panel k of a bar chart: one bar per column from the zero line, up for
 * v > 0 and down for v < 0. */
static void bar_panel(FILE *f, const SvgPicture *p, const Layout *l, const Scale *s, int64_t k,
                      int x, int y)
{
    const float *a = p->x + k * p->cols;
    int cx = x + l->left, top = y + l->top;
    double lo = s->diverging ? -s->hi : 0;
    int zero = top + (int)lround(BAR_HEIGHT * s->hi / (s->hi - lo));
    char c[32];
    panel_title(f, p, k, x, y + 14);
    fprintf(f, "<text transform=\"translate(%d,%d) rotate(-90)\" font-size=\"11\" "
               "fill=\"#444\" text-anchor=\"middle\">", x + 12, top + BAR_HEIGHT / 2);
    bertc_svg_put_text(f, p->value ? p->value : "value");
    fprintf(f, "</text>\n");
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" font-size=\"10\">%.3g</text>\n"
               "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" font-size=\"10\">%.3g</text>\n",
            cx - 4, top + 8, s->hi, cx - 4, top + BAR_HEIGHT, lo);
    for (int64_t j = 0; j < p->cols; j++) {
        double v = a[j], h = isfinite(v) ? fmin(1.0, fabs(v) / s->hi) * BAR_HEIGHT * s->hi /
                                               (s->hi - lo) : 0;
        if (!s->diverging && v < 0)
            h = 0;
        colour(s, v, c);
        fprintf(f, "<rect x=\"%lld\" y=\"%.1f\" width=\"%d\" height=\"%.1f\" fill=\"%s\" "
                   "stroke=\"#666\" stroke-width=\"0.5\"><title>%.4g</title></rect>\n",
                (long long)(cx + j * l->cell_w + 1), v < 0 ? (double)zero : zero - h,
                l->cell_w - 2, h, c, v);
    }
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%lld\" y2=\"%d\" stroke=\"#444\"/>\n", cx, zero,
            (long long)(cx + p->cols * l->cell_w), zero);
    col_labels(f, p, l, cx, top + BAR_HEIGHT + 4, true);
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"11\" fill=\"#444\">", cx,
            top + BAR_HEIGHT + 66);
    bertc_svg_put_text(f, p->col_axis ? p->col_axis : "column");
    fprintf(f, " &#8594;</text>\n");
}

static int check_picture(const SvgPicture *p, BertcError *err)
{
    const char *what = p->title ? p->title : "picture";
    if (p->kind == SVG_UNDRAWABLE)
        return bertc_errorf(err, "%s: not a shape bertc can draw (it draws %s)", what,
                            bertc_svg_drawable);
    if (p->panels < 1 || p->panels > SVG_MAX_HEADS || p->rows < 1 || p->cols < 1 ||
        p->rows > SVG_MAX_TOKENS || p->cols > SVG_MAX_TOKENS ||
        p->panels * p->rows * p->cols > SVG_MAX_VALUES)
        return bertc_errorf(err, "%s: cannot draw %lld x %lld x %lld values (1..%d panels of "
                            "1..%d x 1..%d, %ld values)", what, (long long)p->panels,
                            (long long)p->rows, (long long)p->cols, SVG_MAX_HEADS,
                            SVG_MAX_TOKENS, SVG_MAX_TOKENS, SVG_MAX_VALUES);
    return 0;
}

int bertc_svg_draw(FILE *f, const SvgPicture *p, bool standalone, BertcError *err)
{
    if (check_picture(p, err) != 0)
        return -1;
    Layout l = layout_of(p);
    Scale s = scale_of(p->x, p->panels * p->rows * p->cols);
    fprintf(f, "<svg %swidth=\"%d\" height=\"%d\" font-family=\"sans-serif\" "
               "font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            standalone ? "xmlns=\"http://www.w3.org/2000/svg\" " : "", l.width, l.height);
    fprintf(f, "<text x=\"10\" y=\"20\" font-size=\"15\">");
    bertc_svg_put_text(f, p->title ? p->title : "");
    fprintf(f, "</text>\n");
    legend(f, &s, p->value, 10, 38);
    bool bars = p->kind == SVG_GATES || p->kind == SVG_VECTOR;
    for (int64_t k = 0; k < p->panels; k++) {
        int x = 10 + (int)(k % l.per_row) * l.panel_w;
        int y = HEADER + (int)(k / l.per_row) * l.panel_h;
        if (bars)
            bar_panel(f, p, &l, &s, k, x, y);
        else
            heat_panel(f, p, &l, &s, k, x, y);
    }
    fprintf(f, "</svg>\n");
    return 0;
}

int bertc_svg_write(const char *path, const SvgPicture *p, BertcError *err)
{
    if (check_picture(p, err) != 0)
        return -1;
    FILE *f = bertc_open_write(path, err);
    if (!f)
        return -1;
    int rc = bertc_svg_draw(f, p, true, err);
    if (fclose(f) != 0 && rc == 0)
        return bertc_errorf(err, "%s: write failed", path);
    return rc;
}

int bertc_svg_attention(const char *path, const float *probs, int64_t nh, int64_t S,
                  const char *const *tokens, const char *title, BertcError *err)
{
    SvgPicture p = {.kind = SVG_MAPS, .x = probs, .panels = nh, .rows = S, .cols = S,
                    .row_labels = tokens, .col_labels = tokens, .title = title,
                    .panel = "head", .row_axis = "query token i (row)",
                    .col_axis = "key token j (column)", .value = "P(query i attends to key j)"};
    if (nh < 1 || nh > SVG_MAX_HEADS || S < 1 || S > SVG_MAX_TOKENS)   /* sizes fit in int */
        return bertc_errorf(err, "%s: cannot draw %lld heads of %lld tokens (1..%d heads, "
                            "1..%d tokens)", path, (long long)nh, (long long)S, SVG_MAX_HEADS,
                            SVG_MAX_TOKENS);
    return bertc_svg_write(path, &p, err);
}
