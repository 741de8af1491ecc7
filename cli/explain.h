/* cli/explain.h — what `bertc explain` and `bertc attention` share: a model
 * output found by name among the architecture's declared outputs, and drawn
 * by its declared shape (zoo/pictures/svg.h), never by the model's name. Internal to
 * the CLI. */
#ifndef BERTC_CLI_EXPLAIN_H
#define BERTC_CLI_EXPLAIN_H

#include "cli/cli.h"
#include "zoo/pictures/svg.h"

/* The tokens of sequence 0 of a batch, as the model read them. */
typedef struct ExplainTokens {
    const ITensor *ids;          /* the first input (input_ids, BertSum's src) */
    const int32_t *row;          /* sequence 0's S ids */
    const char **labels;         /* S token strings */
    int64_t S;
    int64_t read;                /* tokens the mask keeps (S when there is no mask) */
    int64_t in_text;             /* tokens of TEXT [PAIR] with no length limit */
} ExplainTokens;

int explain_tokens(const Model *m, const Tokenizer *tok, const Batch *b, const TextExample *ex,
                   Arena *arena, ExplainTokens *t, BertcError *err);
/* For a model that reads sentence positions ("clss": BertSum), ex->text
 * split into its sentences (ex->sentences, in arena), as `bertc predict`
 * splits a document; other models read ex->text as it is. */
void explain_sentences(const Model *m, TextExample *ex, Arena *arena);
/* "" or, when the model read fewer tokens than the text has, a sentence
 * saying so (and, for a model with a query_len key, how to give it all). */
void explain_cut_note(const Model *m, const ExplainTokens *t, char *buf, size_t cap);

/* "layers.{l}.attention_probs (B, nh, S, S), sent_scores (B, N)": the
 * declared outputs bertc_svg_kind draws (matrices too when with_matrix). */
void explain_drawable(const ModelArch *arch, bool with_matrix, char *buf, size_t cap);

/* Output `name` (declared as o) of tensor t as a picture of sequence 0: the
 * tensor must have the declared shape (a token axis S of t->S tokens), else
 * an error naming the output, its declared and its actual shape. */
int explain_picture(const OutputSpec *o, const char *name, const Tensor *t,
                    const ExplainTokens *tk, SvgPicture *p, BertcError *err);

/* ---- cli/explain.c: bertc explain ---------------------------------------- */

extern const CliCommand cli_cmd_explain;

/* ---- cli/explain_page.c: the HTML --------------------------------------- */

/* What the page is written from: the model, its forward's inputs and
 * outputs (alive in the graph's step arena) and the text's tokens. */
typedef struct ExplainPage {
    const Model *m;
    const Tokenizer *tok;
    const TextExample *ex;
    const Batch *batch;
    const Outputs *out;
    const ExplainTokens *tk;
    const char *model_name;      /* --model DIR or --config, shown */
    /* A text longer than --max-len: what the page says ("the text is N
     * tokens; ..."), and the part of TEXT and TEXT_PAIR read; NULL: all. */
    const char *cut, *text_shown, *pair_shown;
    Arena *arena;                /* scratch for the page */
    int64_t cell_cap;            /* the most heat-map cells one picture draws (explain_cell_cap) */
} ExplainPage;

/* ---- cli/explain_budget.c: the page's cells ----------------------------- */

/* The heat-map cells of a whole page, all pictures together (a target: each
 * layer keeps at least one head). About 1 MB of paths. */
#define EXPLAIN_PAGE_MAX_CELLS 98304

/* How a picture fits under a cap: the panels (heads) it draws, 0 when it
 * cannot be drawn on a page; the bin its feature columns are pooled in (1:
 * none); the cells it then has. */
typedef struct PictureFit {
    int64_t panels, bin, cells;
} PictureFit;

/* Whether the columns of o's picture may be pooled: features of a matrix,
 * not tokens, class names or a vocabulary. */
bool explain_poolable(const OutputSpec *o, const SvgPicture *pic);
PictureFit explain_fit(const SvgPicture *pic, bool poolable, int64_t cap);
/* The cap under which the pictures of p's outputs draw at most
 * EXPLAIN_PAGE_MAX_CELLS cells in all (a water level). */
int64_t explain_cell_cap(const ExplainPage *p);

/* The page into path: one self-contained HTML file (inline CSS and SVG, no
 * script, nothing fetched). */
int explain_write_page(const ExplainPage *p, const char *path, BertcError *err);
/* The output of that name (float or integer), NULL if the forward put none. */
const OutputItem *explain_output(const Outputs *o, const char *name);
/* Its values as floats (integer outputs copied into arena). */
Tensor explain_values(const OutputItem *it, Arena *arena);
/* cli/explain_predict.c: the prediction section, from a's predict entries. */
int explain_predictions(FILE *f, const ExplainPage *p, const ModelExplain *a, BertcError *err);
int cmd_explain(int argc, char **argv);

#endif
