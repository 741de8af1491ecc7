/* cli/explain_budget.c — how many heat-map cells one `bertc explain` page
 * draws, all its pictures together: EXPLAIN_PAGE_MAX_CELLS, shared out as
 * a water level. Each picture wants its cells (a feature map no more than
 * FEATURE_MAP_CELLS: its columns pooled beyond), and gets at most `cap` of
 * them, cap the largest with
 *
 *     sum over pictures i of  fit_i(cap)  <=  EXPLAIN_PAGE_MAX_CELLS,
 *
 * fit_i(cap) the cells picture i draws under cap: fewer heads for maps,
 * gates and bars (at least one), feature columns pooled into bins of their
 * mean for hidden states (at least MIN_BINS columns). A page then stays
 * about 1 MB at any text length and depth; only a model whose one head per
 * layer is already over the budget (12 layers of 128 x 128) goes past it. */
#include "cli/explain.h"

#include <string.h>

/* The most values one panel draws when its columns cannot be pooled ((B, S, V)
 * logits of a large vocabulary): statistics only beyond. */
#define PANEL_MAX_VALUES 20000
/* The most cells a feature map (hidden states (B, S, H)) wants: 64 tokens
 * of 64 columns. Beyond, its features are pooled even when the page has room:
 * the attention maps keep the room. */
#define FEATURE_MAP_CELLS 4096
/* A pooled feature axis keeps at least this many columns. */
#define MIN_BINS 8

static bool ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), t = strlen(tail);
    return n >= t && strcmp(s + n - t, tail) == 0;
}

bool explain_poolable(const OutputSpec *o, const SvgPicture *pic)
{
    /* columns of features: not tokens nor class names, and not a vocabulary
     * (the mean of the logits of neighbouring token ids is no feature) */
    return pic->kind == SVG_MATRIX && !pic->col_labels && !ends_with(o->shape, ", V)");
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

PictureFit explain_fit(const SvgPicture *pic, bool poolable, int64_t cap)
{
    int64_t per_panel = pic->rows * pic->cols;
    if (poolable) {   /* every panel, its columns pooled: panels x rows x bins */
        int64_t want = min64(cap, FEATURE_MAP_CELLS), rows = pic->panels * pic->rows;
        if (rows * pic->cols <= want)
            return (PictureFit){.panels = pic->panels, .bin = 1, .cells = rows * pic->cols};
        int64_t bins = min64(pic->cols, max64(MIN_BINS, want / rows));
        int64_t bin = (pic->cols + bins - 1) / bins;   /* ceil: bins of bin, the last shorter */
        bins = (pic->cols + bin - 1) / bin;
        return (PictureFit){.panels = pic->panels, .bin = bin, .cells = rows * bins};
    }
    if (per_panel > PANEL_MAX_VALUES)
        return (PictureFit){.panels = 0, .bin = 1, .cells = 0};
    int64_t panels = min64(pic->panels, max64(1, cap / per_panel));
    return (PictureFit){.panels = panels, .bin = 1, .cells = panels * per_panel};
}

/* The pictures of p's page: each drawable output's picture (its data
 * pointer unused), n of them, into pics/poolable (arena). */
static int page_pictures(const ExplainPage *p, SvgPicture **pics, bool **poolable)
{
    int n = 0;
    *pics = bertc_arena_alloc(p->arena, sizeof **pics * (size_t)(p->out->n + 1));
    *poolable = bertc_arena_alloc(p->arena, sizeof **poolable * (size_t)(p->out->n + 1));
    for (int i = 0; i < p->out->n; i++) {
        const OutputItem *it = &p->out->items[i];
        const OutputSpec *o = bertc_model_output_named(p->m->arch, it->name);
        BertcError err;
        if (!o || bertc_svg_kind(o->shape) == SVG_UNDRAWABLE)
            continue;
        Tensor t = it->is_int ? (Tensor){.ndim = it->ids.ndim} : it->var->value;
        if (it->is_int)   /* the shape is all a picture's size needs */
            memcpy(t.shape, it->ids.shape, sizeof t.shape[0] * (size_t)t.ndim);
        if (explain_picture(o, it->name, &t, p->tk, &(*pics)[n], &err) != 0)
            continue;
        (*poolable)[n] = explain_poolable(o, &(*pics)[n]);
        n++;
    }
    return n;
}

static int64_t page_cells(const SvgPicture *pics, const bool *poolable, int n, int64_t cap)
{
    int64_t sum = 0;
    for (int i = 0; i < n; i++)
        sum += explain_fit(&pics[i], poolable[i], cap).cells;
    return sum;
}

int64_t explain_cell_cap(const ExplainPage *p)
{
    SvgPicture *pics;
    bool *poolable;
    int n = page_pictures(p, &pics, &poolable);
    int64_t lo = 1, hi = 1;   /* the water level: page_cells(lo) fits, or lo = 1 */
    for (int i = 0; i < n; i++)
        hi = max64(hi, pics[i].panels * pics[i].rows * pics[i].cols);
    if (page_cells(pics, poolable, n, hi) <= EXPLAIN_PAGE_MAX_CELLS)
        return hi;
    while (lo + 1 < hi) {   /* page_cells is non-decreasing in cap: bisect */
        int64_t mid = lo + (hi - lo) / 2;
        if (page_cells(pics, poolable, n, mid) <= EXPLAIN_PAGE_MAX_CELLS)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}
