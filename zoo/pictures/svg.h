/* zoo/pictures/svg.h — pictures people would rather look at than read: any
 * output of a model drawn by its declared shape (attention maps, gates,
 * per-token or per-sentence scores), as standalone SVG files or inline in an
 * HTML page (bertc explain). They need only tensor/; the loss curve of a
 * training run (bertc_svg_loss_curve, zoo/train/train.h) is drawn with the
 * primitives here.
 *
 * Every picture of values carries a colour scale with the data's min and
 * max, and names its axes (which is the query, which the key). Values that
 * go below zero (QACGBERT's quasi-attention: context can take attention
 * away) get a diverging palette centred on 0: blue below, white at 0, red
 * above; values >= 0 go from white (0) to dark blue (the max). */
#ifndef BERTC_ZOO_SVG_H
#define BERTC_ZOO_SVG_H

#include "tensor/tensor.h"

#include <stdio.h>

/* s with the five XML specials (< > & " ') escaped: text for SVG and HTML. */
void bertc_svg_put_text(FILE *f, const char *s);

/* A standalone SVG file of width x height pixels on a white ground, opened
 * for the elements to come; bertc_svg_close ends and closes it (a failed
 * write is an error naming the path). */
FILE *bertc_svg_open(const char *path, int width, int height, BertcError *err);
int bertc_svg_close(FILE *f, const char *path, BertcError *err);

/* How an output is drawn, read from its declared shape (OutputSpec.shape):
 *   SVG_MAPS    (B, nh, X, X)  one heat map per head, X = S tokens or N
 *                              sentences: row i the query, column j the key
 *   SVG_GATES   (B, nh, X, 1)  one bar chart per head, a bar per token
 *   SVG_VECTOR  (B, X), (X), (B, X, 1)   one bar chart, a bar per token
 *   SVG_MATRIX  (B, X, F), (B, F, X), (B, F), (B, nh, X, F), (n_k, F), (n_k)
 *                              heat maps: a row per token and a column per
 *                              feature (hidden states), or the other way round
 *                              (conv features), one row, one map per head, or
 *                              a row per masked token or span (n_masked)
 * with X = S or N, B any leading batch dimension ("B·C") and the heads of a
 * map any name (nh, heads); everything else is SVG_UNDRAWABLE. Only
 * sequence 0 of the batch is drawn. */
typedef enum SvgKind {
    SVG_UNDRAWABLE,
    SVG_MAPS,
    SVG_GATES,
    SVG_VECTOR,
    SVG_MATRIX
} SvgKind;

SvgKind bertc_svg_kind(const char *shape);
/* "(B, nh, S, S) maps, ...": what `bertc attention` draws (SVG_MATRIX only
 * `bertc explain`), for errors. */
extern const char bertc_svg_drawable[];

/* One picture: panels x rows x cols values at x (row-major). SVG_MAPS:
 * panels = nh, rows = cols = X; SVG_GATES: panels = nh, rows = 1, cols = X;
 * SVG_VECTOR: panels = rows = 1, cols = X; SVG_MATRIX: panels = 1, rows = X,
 * cols = F. row_labels (rows of them) and col_labels (cols) may be NULL:
 * indices are shown, column j as j * col_bin when columns are bins of
 * col_bin values (0: 1). Axis labels never overlap: a label goes every
 * k-th row or column, k the least that keeps them a font height apart. */
typedef struct SvgPicture {
    SvgKind kind;
    const float *x;
    int64_t panels, rows, cols;
    const char *const *row_labels, *const *col_labels;
    int64_t col_bin;            /* column j is values j*col_bin .. (0: 1) */
    const char *title;          /* above everything */
    const char *panel;          /* "head": panels are "head 0", "head 1", ... */
    const char *row_axis;       /* "query token i (row)" */
    const char *col_axis;       /* "key token j (column)" */
    const char *value;          /* what a colour or a bar height is: "P(i attends to j)" */
} SvgPicture;

/* The most a picture may hold (an error names the limit otherwise). */
#define SVG_MAX_HEADS 1024
#define SVG_MAX_TOKENS 4096
#define SVG_MAX_VALUES (1L << 22)

/* The picture as an <svg> element on f: standalone adds the XML namespace a
 * file needs (inline in HTML5 it needs none, and names no URL). */
int bertc_svg_draw(FILE *f, const SvgPicture *p, bool standalone, BertcError *err);
/* The picture as a standalone SVG file. */
int bertc_svg_write(const char *path, const SvgPicture *p, BertcError *err);

/* One heat map per head: probs is (nh, S, S) for one sequence of one layer
 * (row i = the query token, column j = the key it attends to); tokens[0..S-1]
 * label the rows and columns (bertc_svg_write with SVG_MAPS). */
int bertc_svg_attention(const char *path, const float *probs, int64_t nh, int64_t S,
                  const char *const *tokens, const char *title, BertcError *err);

#endif
