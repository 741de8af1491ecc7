/* cli/explain_draw.c — a model's outputs found by name among the declared
 * ones (ModelArch.outputs, OutputSpec) and turned into pictures by their
 * declared shape: (B, nh, X, X) maps, (B, nh, X, 1) gates, (B, X) vectors,
 * (B, X, F) matrices (zoo/pictures/svg.h). The tensor must have that shape: a gate
 * is never read as a map (lambda_q (B, nh, S, 1) as nh S x S maps read far
 * past its end). */
#include "cli/explain.h"
#include "zoo/train/pipeline.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* ---- the tokens --------------------------------------------------------- */

/* The mask's count of real tokens in sequence 0 (attention_mask, BertSum's
 * mask), S when there is none. */
static int64_t tokens_read(const Batch *b, int64_t S)
{
    const BatchItem *it = bertc_batch_find(b, "attention_mask");
    if (!it)
        it = bertc_batch_find(b, "mask");
    if (!it || !it->is_int || it->ids.ndim < 1 || it->ids.shape[it->ids.ndim - 1] != S)
        return S;
    int64_t n = 0;
    for (int64_t t = 0; t < S; t++)
        n += it->ids.data[t] != 0;
    return n;
}

int explain_tokens(const Model *m, const Tokenizer *tok, const Batch *b, const TextExample *ex,
                   Arena *arena, ExplainTokens *t, BertcError *err)
{
    const BatchItem *it = bertc_batch_find(b, bertc_model_input(m->arch, 0)->name);
    if (!it || !it->is_int || it->ids.ndim < 1)
        return bertc_errorf(err, "%s: no token ids in its first input '%s'", m->arch->name,
                            bertc_model_input(m->arch, 0)->name);
    t->ids = &it->ids;
    t->S = it->ids.shape[it->ids.ndim - 1];   /* (B, S), or (B, C, S): sequence 0 */
    t->row = it->ids.data;
    t->labels = bertc_arena_alloc(arena, sizeof *t->labels * (size_t)t->S);
    for (int64_t i = 0; i < t->S; i++) {
        const char *s = bertc_tokenizer_token(tok, t->row[i]);
        t->labels[i] = s ? s : "?";
    }
    t->read = tokens_read(b, t->S);
    Encoding e;
    const char *a = ex->text ? ex->text : "", *p = ex->text_pair;
    if (bertc_tokenizer_encode(tok, arena, a, strlen(a), p, p ? strlen(p) : 0, 0, false, &e,
                               err) != 0)
        return -1;
    t->in_text = e.S;
    return 0;
}

#define MAX_SENTENCES 512

void explain_sentences(const Model *m, TextExample *ex, Arena *arena)
{
    int32_t start[MAX_SENTENCES], end[MAX_SENTENCES];
    if (!ex->text || !bertc_model_reads_input(m->arch, "clss"))
        return;
    int n = bertc_split_sentences(ex->text, strlen(ex->text), start, end, MAX_SENTENCES);
    if (n < 1)
        return;
    const char **sents = bertc_arena_alloc(arena, sizeof *sents * (size_t)n);
    for (int k = 0; k < n; k++) {
        size_t len = (size_t)(end[k] - start[k]);
        char *s = bertc_arena_alloc(arena, len + 1);
        memcpy(s, ex->text + start[k], len);
        s[len] = '\0';
        sents[k] = s;
    }
    ex->sentences = sents;
    ex->n_sentences = n;
}

void explain_cut_note(const Model *m, const ExplainTokens *t, char *buf, size_t cap)
{
    buf[0] = '\0';
    if (t->read >= t->in_text)
        return;
    int n = snprintf(buf, cap, "%s read %lld of the %lld tokens of the text", m->arch->name,
                     (long long)t->read, (long long)t->in_text);
    double query_len = bertc_model_config_get(&m->cfg, "query_len");
    if (n > 0 && (size_t)n < cap && query_len == query_len)   /* not NaN: it has the key */
        snprintf(buf + n, cap - (size_t)n, ": TEXT is its question, kept to query_len %.0f "
                 "tokens; give the context as TEXT_PAIR", query_len);
}

/* ---- names -------------------------------------------------------------- */

void explain_drawable(const ModelArch *arch, bool with_matrix, char *buf, size_t cap)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; bertc_model_output(arch, i) && at < cap; i++) {
        const OutputSpec *o = bertc_model_output(arch, i);
        SvgKind k = bertc_svg_kind(o->shape);
        if (k == SVG_UNDRAWABLE || (k == SVG_MATRIX && !with_matrix))
            continue;
        int n = snprintf(buf + at, cap - at, "%s%s %s", at ? ", " : "", o->name, o->shape);
        at += n > 0 ? (size_t)n : 0;
    }
}

/* ---- pictures ----------------------------------------------------------- */

/* The declared dimension d of o's shape ("(B, nh, S, 1)", 2 -> "S"), "" if
 * it has no such dimension. */
static const char *declared_dim(const char *shape, int d, char out[16])
{
    const char *s = shape + 1;
    for (int i = 0; i < d && s; i++) {
        s = strchr(s, ',');
        s = s ? s + 1 : NULL;
        while (s && *s == ' ')
            s++;
    }
    size_t len = s ? strcspn(s, ",)") : 0;
    len = len < 15 ? len : 15;
    memcpy(out, s ? s : "", len);
    out[len] = '\0';
    return out;
}

/* The declared shape's dimension count ("(B, nh, S, 1)": 4). */
static int declared_ndim(const char *shape)
{
    int n = 1;
    for (const char *c = shape; *c; c++)
        n += *c == ',';
    return n;
}

static int wrong_shape(const OutputSpec *o, const char *name, const Tensor *t, const char *why,
                       BertcError *err)
{
    char have[SHAPE_STR_LEN];
    return bertc_errorf(err, "'%s' is declared %s but is %s (%s); not drawn", name, o->shape,
                        bertc_shape_str(have, sizeof have, t->ndim, t->shape), why);
}

/* The picture's dimensions in the declared shape: its panels (-1: one),
 * rows (-1: one) and columns, from the kind and the dimension count nd. */
typedef struct PictureDims {
    int panels, rows, cols;
} PictureDims;

static PictureDims picture_dims(SvgKind k, const char *shape, int nd)
{
    if (k == SVG_MAPS)
        return (PictureDims){1, 2, 3};
    if (k == SVG_GATES)
        return (PictureDims){1, -1, 2};
    if (k == SVG_VECTOR)   /* (S), (B, S), (B, S, 1) */
        return (PictureDims){-1, -1, nd == 1 ? 0 : 1};
    int m = nd - (shape[1] == 'B');   /* SVG_MATRIX: the dimensions after the batch */
    return (PictureDims){m == 3 ? nd - 3 : -1, m >= 2 ? nd - 2 : -1, nd - 1};
}

/* panels x rows x cols of sequence 0 from t's actual shape, which must have
 * the declared number of dimensions. */
static int layout_from_tensor(SvgKind k, const OutputSpec *o, const char *name, const Tensor *t,
                              PictureDims d, SvgPicture *p, BertcError *err)
{
    int want = declared_ndim(o->shape);
    if (t->ndim != want)
        return wrong_shape(o, name, t, "another number of dimensions", err);
    for (int i = 0; i < t->ndim; i++)
        if (t->shape[i] < 1)
            return wrong_shape(o, name, t, "an empty dimension", err);
    p->panels = d.panels >= 0 ? t->shape[d.panels] : 1;
    p->rows = d.rows >= 0 ? t->shape[d.rows] : 1;
    p->cols = t->shape[d.cols];
    if (k == SVG_MAPS && t->shape[3] != t->shape[2])
        return wrong_shape(o, name, t, "not square", err);
    if ((k == SVG_GATES || (k == SVG_VECTOR && want == 3)) && t->shape[want - 1] != 1)
        return wrong_shape(o, name, t, "not one value per row", err);
    return 0;
}

int explain_picture(const OutputSpec *o, const char *name, const Tensor *t,
                    const ExplainTokens *tk, SvgPicture *p, BertcError *err)
{
    SvgKind k = bertc_svg_kind(o->shape);
    char axis[16];
    memset(p, 0, sizeof *p);
    if (k == SVG_UNDRAWABLE)
        return bertc_errorf(err, "'%s' has shape %s: not drawn (bertc draws %s)", name,
                            o->shape, bertc_svg_drawable);
    int nd = declared_ndim(o->shape);
    PictureDims d = picture_dims(k, o->shape, nd);
    if (layout_from_tensor(k, o, name, t, d, p, err) != 0)
        return -1;
    /* which picture axis, if any, runs over the tokens (S) or sentences (N) */
    bool row_seq = d.rows >= 0 && strchr("SN", declared_dim(o->shape, d.rows, axis)[0]) &&
                   axis[1] == '\0';
    bool row_tok = row_seq && axis[0] == 'S';
    bool col_seq = strchr("SN", declared_dim(o->shape, d.cols, axis)[0]) && axis[1] == '\0';
    bool col_tok = col_seq && axis[0] == 'S';
    if ((row_tok && p->rows != tk->S) || (col_tok && p->cols != tk->S))
        return bertc_errorf(err, "'%s' has %lld positions where the input has S = %lld tokens; "
                            "not drawn", name, (long long)(row_tok ? p->rows : p->cols),
                            (long long)tk->S);
    bool tokens = row_tok || col_tok;
    p->kind = k;
    p->x = t->data;   /* sequence 0 comes first */
    p->title = name;
    p->value = name;
    const char *const *labels = tokens ? (const char *const *)tk->labels : NULL;
    const char *unit = tokens ? "token" : "sentence";
    if (k == SVG_MAPS) {
        p->row_labels = p->col_labels = labels;
        p->panel = "head";
        p->row_axis = tokens ? "query token i (row)" : "query sentence i (row)";
        p->col_axis = tokens ? "key token j (column)" : "key sentence j (column)";
        p->value = "weight of key j for query i";
    } else if (k == SVG_MATRIX) {
        p->row_labels = row_tok ? labels : NULL;
        p->col_labels = col_tok ? labels : NULL;
        p->panel = p->panels > 1 ? "head" : NULL;
        p->row_axis = row_seq ? (row_tok ? "token (row)" : "sentence (row)") : "row";
        p->col_axis = col_seq ? (col_tok ? "token (column)" : "sentence (column)")
                              : "feature (column)";
    } else {
        p->col_labels = labels;
        p->panel = k == SVG_GATES ? "head" : NULL;
        p->col_axis = unit;
    }
    return 0;
}
