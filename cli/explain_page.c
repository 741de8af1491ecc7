/* cli/explain_page.c — the HTML of `bertc explain`: one self-contained file
 * (inline CSS and SVG, no script, no URL) that walks a model's forward on one
 * text. Sections: the model, the tokens and ids, then each step the
 * architecture declares (ModelExplain, zoo/models/model.h: equation,
 * file:function, the output's shape and statistics, its picture by declared
 * shape), the outputs no step names (drawn by shape too: a newly declared
 * output shows up without a step), and the prediction
 * (cli/explain_predict.c). */
#include "cli/explain.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char css[] =
    "body{font-family:sans-serif;max-width:1200px;margin:1em auto;padding:0 1em;color:#222}"
    "h1{font-size:1.5em}h2{border-bottom:1px solid #ccc;margin-top:2em}"
    ".step{border:1px solid #ddd;border-radius:6px;padding:.5em 1em;margin:1em 0}"
    ".eq{font-family:serif;font-size:1.15em;background:#f6f8fa;padding:.4em .6em;margin:.4em 0}"
    ".where{font-family:monospace;color:#555}.note{color:#8a5a00;background:#fff8e6;"
    "padding:.3em .6em;border-left:3px solid #e0a800}"
    "table{border-collapse:collapse;font-size:.9em}td,th{border:1px solid #ddd;padding:2px 6px}"
    "th{background:#f0f0f0}.stats{font-family:monospace;font-size:.9em}"
    ".best{background:#e6f4ea;font-weight:bold}.bar{display:inline-block;height:10px;"
    "background:#3b6ea5}svg{display:block;margin:.5em 0;max-width:100%;height:auto}";

/* ---- outputs ------------------------------------------------------------- */

const OutputItem *explain_output(const Outputs *o, const char *name)
{
    for (int i = 0; i < o->n; i++)
        if (strcmp(o->items[i].name, name) == 0)
            return &o->items[i];
    return NULL;
}

/* A float view of an output (integer outputs, SpanBERT's masks, copied). */
Tensor explain_values(const OutputItem *it, Arena *arena)
{
    if (!it->is_int)
        return it->var->value;
    Tensor t = bertc_tensor_empty(arena, it->ids.ndim, it->ids.shape);
    for (int64_t i = 0; i < t.numel; i++)
        t.data[i] = (float)it->ids.data[i];
    return t;
}

static void stats(FILE *f, const Tensor *t)
{
    double lo = INFINITY, hi = -INFINITY, sum = 0, sq = 0;
    int64_t n = 0, bad = 0;
    for (int64_t i = 0; i < t->numel; i++) {
        double v = t->data[i];
        if (!isfinite(v)) {
            bad++;
            continue;
        }
        lo = fmin(lo, v);
        hi = fmax(hi, v);
        sum += v;   /* double: a float sum of many values drifts */
        sq += v * v;
        n++;
    }
    char shape[SHAPE_STR_LEN];
    fprintf(f, "<p class=\"stats\">shape %s &middot; ",
            bertc_shape_str(shape, sizeof shape, t->ndim, t->shape));
    if (n == 0) {
        fprintf(f, "no finite values</p>\n");
        return;
    }
    double mean = sum / (double)n, var = fmax(0.0, sq / (double)n - mean * mean);
    fprintf(f, "min %.5g &middot; max %.5g &middot; mean %.5g &middot; std %.5g", lo, hi, mean,
            sqrt(var));
    if (bad)
        fprintf(f, " &middot; %lld not finite", (long long)bad);
    fprintf(f, "</p>\n");
}

/* p's feature columns pooled in bins of `bin` columns, each the mean of
 * the bin's finite values (NaN when it has none; the last bin may be
 * shorter); bin 1 leaves p as it is. */
static void pool_features(SvgPicture *p, int64_t bin, Arena *arena)
{
    if (bin <= 1)
        return;
    int64_t bins = (p->cols + bin - 1) / bin;
    float *y = bertc_arena_alloc(arena, sizeof *y * (size_t)(p->panels * p->rows * bins));
    for (int64_t r = 0; r < p->panels * p->rows; r++)   /* (panels, rows, cols) -> bins */
        for (int64_t b = 0; b < bins; b++) {
            double sum = 0;   /* double: a bin of 48 float values */
            int64_t n = 0;
            for (int64_t j = b * bin; j < p->cols && j < (b + 1) * bin; j++)
                if (isfinite(p->x[r * p->cols + j])) {
                    sum += p->x[r * p->cols + j];
                    n++;
                }
            y[r * bins + b] = n ? (float)(sum / (double)n) : NAN;
        }
    p->x = y;
    p->cols = bins;
    p->col_bin = bin;
}

/* Columns that are the classes of a (B, num_labels) output get their
 * id2label names (config.json), when the config has them. */
static void class_names(SvgPicture *pic, const OutputSpec *o, const BertConfig *cfg,
                        Arena *arena)
{
    size_t n = strlen(o->shape), tail = strlen("num_labels)");
    if (pic->col_labels || n < tail || strcmp(o->shape + n - tail, "num_labels)") != 0 ||
        pic->cols != cfg->num_labels || !bertc_bert_config_label(cfg, 0))
        return;
    const char **names = bertc_arena_alloc(arena, sizeof *names * (size_t)pic->cols);
    for (int64_t j = 0; j < pic->cols; j++)
        names[j] = bertc_bert_config_label(cfg, (int)j);
    pic->col_labels = names;
    pic->col_axis = "class (column), by its id2label name";
}

/* An output's statistics and its picture by its declared shape; a shape
 * with nothing to draw (a loss, (n_masked, V)) gets statistics only. */
static void show_output(FILE *f, const ExplainPage *p, const OutputSpec *o, const char *name,
                        const OutputItem *it)
{
    Tensor t = explain_values(it, p->arena);
    fprintf(f, "<p>output <code>");
    bertc_svg_put_text(f, name);
    fprintf(f, "</code>, declared <code>");
    bertc_svg_put_text(f, o->shape);
    fprintf(f, "</code></p>\n");
    stats(f, &t);
    SvgKind k = bertc_svg_kind(o->shape);
    if (k == SVG_UNDRAWABLE)
        return;
    SvgPicture pic;
    BertcError err;
    int rc = explain_picture(o, name, &t, p->tk, &pic, &err);
    if (rc == 0)
        class_names(&pic, o, &p->m->cfg, p->arena);
    int64_t panels = pic.panels;
    PictureFit fit = {.panels = 1, .bin = 1};
    if (rc == 0)   /* its share of the page's cells (cli/explain_budget.c) */
        fit = explain_fit(&pic, explain_poolable(o, &pic), p->cell_cap);
    if (rc == 0 && fit.panels == 0)
        rc = bertc_errorf(&err, "%lld x %lld values are too many for a picture on a page: "
                          "statistics only", (long long)pic.rows, (long long)pic.cols);
    if (rc == 0) {
        pool_features(&pic, fit.bin, p->arena);
        pic.panels = fit.panels;
    }
    if (rc == 0 && bertc_svg_draw(f, &pic, false, &err) == 0) {
        if (fit.bin > 1)
            fprintf(f, "<p class=\"note\">Feature dimensions pooled in bins of %lld: column "
                       "j is the mean of dimensions %lld j .. %lld j + %lld (a page keeps its "
                       "maps to about %d cells in all).</p>\n", (long long)fit.bin,
                    (long long)fit.bin, (long long)fit.bin, (long long)fit.bin - 1,
                    EXPLAIN_PAGE_MAX_CELLS);
        if (pic.panels < panels)
            fprintf(f, "<p class=\"note\">Heads 0..%lld of %lld drawn (a page keeps its maps "
                       "to about %d cells in all); bertc attention draws them all.</p>\n",
                    (long long)pic.panels - 1, (long long)panels, EXPLAIN_PAGE_MAX_CELLS);
        return;
    }
    fprintf(f, "<p class=\"note\">Not drawn: ");
    bertc_svg_put_text(f, err.msg);
    fprintf(f, "</p>\n");
}

/* ---- steps --------------------------------------------------------------- */

/* The step's output with its placeholders replaced: {l} by l, {i} by l + 1,
 * {k} by k and {k+1} by k + 1. */
static void concrete(const char *pattern, int l, int k, char *buf, size_t cap)
{
    static const struct { const char *text; int add; bool layer; } marks[] = {
        {"{l}", 0, true}, {"{i}", 1, true}, {"{k}", 0, false}, {"{k+1}", 1, false}};
    size_t at = 0;
    while (*pattern && at + 12 < cap) {
        size_t m = 0;
        while (m < 4 && strncmp(pattern, marks[m].text, strlen(marks[m].text)) != 0)
            m++;
        if (m < 4) {
            at += (size_t)snprintf(buf + at, cap - at, "%d",
                                   (marks[m].layer ? l : k) + marks[m].add);
            pattern += strlen(marks[m].text);
        } else {
            buf[at++] = *pattern++;
        }
    }
    buf[at] = '\0';
}

static bool per_layer(const ExplainStep *s) { return strstr(s->output, "{l}") || strstr(s->output, "{i}"); }
static bool per_stack(const ExplainStep *s) { return strstr(s->output, "{k"); }

/* One step: its title, equation, function and output (or why it is not
 * shown). shown[] marks the outputs the steps covered. */
static void step(FILE *f, const ExplainPage *p, const ExplainStep *s, const char *name)
{
    fprintf(f, "<div class=\"step\"><h3>%s</h3>\n<div class=\"eq\">%s</div>\n"
               "<p>computed by <span class=\"where\">%s</span></p>\n", s->title, s->equation,
            s->where);
    const OutputSpec *o = bertc_model_output_named(p->m->arch, name);
    const OutputItem *it = explain_output(p->out, name);
    if (!o || !it) {
        fprintf(f, "<p class=\"note\">Skipped: %s <code>", p->m->arch->name);
        bertc_svg_put_text(f, name);
        fprintf(f, "</code> %s.</p>\n", o ? "is declared but this forward did not put it"
                                         : "is not (yet) one of its outputs");
    } else {
        show_output(f, p, o, name, it);
    }
    fprintf(f, "</div>\n");
}

/* Steps [from, to) of list, once per encoder layer ({l}) or per layer of a
 * second stack ({k}, for as long as its first step's output exists). */
static void step_run(FILE *f, const ExplainPage *p, const ExplainStep *list, int from, int to,
                     bool layers)
{
    char name[160];
    int n = layers ? p->m->cfg.num_hidden_layers : 64;
    for (int l = 0; l < n; l++) {
        concrete(list[from].output, l, l, name, sizeof name);
        if (!layers && l > 0 && !explain_output(p->out, name))
            break;
        fprintf(f, "<h3 id=\"%s-%d\">%s %d</h3>\n", layers ? "layer" : "stack", l,
                layers ? "Layer" : "Layer (second stack)", l);
        for (int i = from; i < to; i++) {
            concrete(list[i].output, l, l, name, sizeof name);
            step(f, p, &list[i], name);
        }
    }
}

static void steps(FILE *f, const ExplainPage *p, const ExplainStep *list, int n)
{
    for (int i = 0; i < n;) {
        bool layers = per_layer(&list[i]), stack = per_stack(&list[i]);
        if (!layers && !stack) {
            step(f, p, &list[i], list[i].output);
            i++;
            continue;
        }
        int j = i;
        while (j < n && (layers ? per_layer(&list[j]) : per_stack(&list[j])))
            j++;
        step_run(f, p, list, i, j, layers);
        i = j;
    }
}

/* Whether a step of a names this output (any layer). */
static bool covered(const ModelExplain *a, const char *name)
{
    char c[160];
    for (int pass = 0; pass < 2; pass++) {
        const ExplainStep *list = pass ? a->steps : a->encoder;
        int n = pass ? a->n_steps : a->n_encoder;
        for (int i = 0; i < n; i++)
            for (int l = 0; l < (per_layer(&list[i]) || per_stack(&list[i]) ? 64 : 1); l++) {
                concrete(list[i].output, l, l, c, sizeof c);
                if (strcmp(c, name) == 0)
                    return true;
            }
    }
    return false;
}

/* Every output the steps did not show, drawn by its declared shape. */
static void other_outputs(FILE *f, const ExplainPage *p, const ModelExplain *a)
{
    bool any = false;
    for (int i = 0; i < p->out->n; i++) {
        const OutputItem *it = &p->out->items[i];
        const OutputSpec *o = bertc_model_output_named(p->m->arch, it->name);
        if (covered(a, it->name) || !o || strcmp(o->shape, "()") == 0)
            continue;
        if (!any)
            fprintf(f, "<h2 id=\"other\">Other outputs</h2>\n<p>What else %s declares, drawn "
                       "by its shape.</p>\n", p->m->arch->name);
        any = true;
        fprintf(f, "<div class=\"step\"><h3>");
        bertc_svg_put_text(f, it->name);
        fprintf(f, "</h3>\n");
        show_output(f, p, o, it->name, it);
        fprintf(f, "</div>\n");
    }
}

/* ---- the page ------------------------------------------------------------ */

static void tokens_table(FILE *f, const ExplainPage *p)
{
    const ExplainTokens *tk = p->tk;
    const BatchItem *types = bertc_batch_find(p->batch, bertc_model_input(p->m->arch, 2)
                                                            ? bertc_model_input(p->m->arch, 2)->name
                                                            : "token_type_ids");
    fprintf(f, "<h2 id=\"tokens\">Tokens</h2>\n<p>The text as WordPiece tokens, the ids the "
               "embedding looks up, and their segment (token type). %lld tokens (sequence 0 "
               "of the batch).</p>\n<table><tr><th>position</th><th>token</th><th>id</th>"
               "<th>type</th></tr>\n", (long long)tk->S);
    for (int64_t t = 0; t < tk->S; t++) {
        fprintf(f, "<tr><td>%lld</td><td>", (long long)t);
        bertc_svg_put_text(f, tk->labels[t]);
        fprintf(f, "</td><td>%d</td><td>", (int)tk->row[t]);
        if (types && types->is_int && types->ids.numel >= tk->S &&
            types->ids.shape[types->ids.ndim - 1] == tk->S)
            fprintf(f, "%d", (int)types->ids.data[t]);
        fprintf(f, "</td></tr>\n");
    }
    fprintf(f, "</table>\n");
    char note[256];
    explain_cut_note(p->m, tk, note, sizeof note);
    if (p->cut)   /* --max-len cut the text: that is why the model read less */
        snprintf(note, sizeof note, "T%s", p->cut + 1);   /* "The text is ..." */
    if (note[0]) {
        fprintf(f, "<p class=\"note\">");
        bertc_svg_put_text(f, note);
        fprintf(f, ".</p>\n");
    }
}

static void header(FILE *f, const ExplainPage *p, const ModelExplain *a)
{
    const BertConfig *c = &p->m->cfg;
    fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
               "<title>bertc explain: %s</title>\n<style>%s</style></head><body>\n"
               "<h1>%s on one text</h1>\n<p>", p->m->arch->name, css, p->m->arch->name);
    bertc_svg_put_text(f, p->m->arch->summary ? p->m->arch->summary : "");
    fprintf(f, ". Model <code>");
    bertc_svg_put_text(f, p->model_name);
    fprintf(f, "</code>: %d layers, %d heads, hidden size H = %d, vocabulary V = %d.</p>\n"
               "<p>%s</p>\n<p>Text: <q>", c->num_hidden_layers, c->num_attention_heads,
            c->hidden_size, c->vocab_size, a->mechanism);
    bertc_svg_put_text(f, p->text_shown ? p->text_shown : p->ex->text ? p->ex->text : "");
    fprintf(f, "</q>");
    if (p->ex->text_pair) {
        fprintf(f, " &middot; pair: <q>");
        bertc_svg_put_text(f, p->pair_shown ? p->pair_shown : p->ex->text_pair);
        fprintf(f, "</q>");
    }
    if (p->ex->context_id >= 0)
        fprintf(f, " &middot; context id %d", p->ex->context_id);
    if (p->cut) {
        fprintf(f, "</p>\n<p class=\"note\">T");
        bertc_svg_put_text(f, p->cut + 1);
        fprintf(f, ": the text above is the part read.");
    }
    fprintf(f, "</p>\n<p>Maps: row i is the query token, column j the key it attends to. "
               "Colours: white is 0; blue rises to the max for values &ge; 0; values below 0 "
               "turn the scale diverging (blue &lt; 0 &lt; red); a map has 32 shades a sign. "
               "Hover a colour for the values it covers.</p>\n");
}

int explain_write_page(const ExplainPage *page, const char *path, BertcError *err)
{
    ExplainPage with_cap = *page;
    with_cap.cell_cap = explain_cell_cap(page);   /* before the first picture */
    const ExplainPage *p = &with_cap;
    const ModelExplain *a = bertc_model_explain(p->m->arch);
    FILE *f = bertc_open_write(path, err);
    if (!f)
        return -1;
    header(f, p, a);
    tokens_table(f, p);
    fprintf(f, "<h2 id=\"forward\">The forward, step by step</h2>\n");
    steps(f, p, a->encoder, a->n_encoder);
    steps(f, p, a->steps, a->n_steps);
    other_outputs(f, p, a);
    int rc = explain_predictions(f, p, a, err);
    fprintf(f, "<hr><p>Written by <code>bertc explain</code>.</p>\n</body></html>\n");
    if (fclose(f) != 0 && rc == 0)
        return bertc_errorf(err, "%s: write failed", path);
    return rc;
}
