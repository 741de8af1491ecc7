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

/* ---- cli/explain_steps.c: what the page shows, per architecture ---------- */

/* One step of a forward: its title, its equation (HTML with Unicode maths),
 * the bertc function that computes it ("zoo/models/bert.c:bertc_bert_layer_forward") and the
 * output that holds its result. In `output`, "{l}" runs over the encoder's
 * layers (with "{i}" = l + 1 in the same step, a layer's output hidden
 * state), "{k}" over a second stack (BertSum's inter-sentence layers) for as
 * long as the forward put one. An output the model does not declare (yet)
 * is skipped with a note on the page. */
typedef struct ExplainStep {
    const char *title, *equation, *where, *output;
} ExplainStep;

/* How the prediction is read from an output. */
typedef enum ExplainPredict {
    PREDICT_NONE,
    PREDICT_CLASSES,        /* (B, C) logits: softmax over the labels (id2label); one: a value */
    PREDICT_TOKEN_CLASSES,  /* (B, S, C): a label per token */
    PREDICT_SPAN,           /* (B, S) start and end logits: the best span */
    PREDICT_SENTENCES,      /* (B, N) scores: the sentences ranked */
    PREDICT_TOKENS,         /* (B, S, V): the top tokens at each [MASK] (else every position) */
    PREDICT_MASKED_ROWS     /* (n_masked, V) or (B, S, V): the top tokens of each masked token */
} ExplainPredict;

typedef struct ExplainPrediction {
    ExplainPredict kind;
    const char *output, *output2;        /* SPAN: start and end logits */
    const char *const *labels;           /* names when the config has none (NSP) */
} ExplainPrediction;

#define EXPLAIN_MAX_PREDICTIONS 2

typedef struct ExplainArch {
    const char *arch;                    /* ModelArch.name */
    const char *mechanism;               /* what this variant adds, one paragraph (HTML) */
    const ExplainStep *encoder;          /* the encoder's steps (shared lists) */
    int n_encoder;
    const ExplainStep *steps;            /* then the architecture's own */
    int n_steps;
    ExplainPrediction predict[EXPLAIN_MAX_PREDICTIONS];
} ExplainArch;

/* The table's entry for an architecture; an architecture with none gets
 * BERT's encoder steps and no prediction (its outputs are still drawn). */
const ExplainArch *explain_arch(const char *name);
/* The i-th entry, NULL past the end (the tests walk it). */
const ExplainArch *explain_arch_at(int i);

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
    Arena *arena;                /* scratch for the page */
} ExplainPage;

/* The page into path: one self-contained HTML file (inline CSS and SVG, no
 * script, nothing fetched). */
int explain_write_page(const ExplainPage *p, const char *path, BertcError *err);
/* The output of that name (float or integer), NULL if the forward put none. */
const OutputItem *explain_output(const Outputs *o, const char *name);
/* Its values as floats (integer outputs copied into arena). */
Tensor explain_values(const OutputItem *it, Arena *arena);
/* cli/explain_predict.c: the prediction section, from a's predict entries. */
int explain_predictions(FILE *f, const ExplainPage *p, const ExplainArch *a, BertcError *err);
int cmd_explain(int argc, char **argv);

#endif
