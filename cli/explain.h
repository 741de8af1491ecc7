/* cli/explain.h — what `bertc explain` and `bertc attention` share: a model
 * output found by name among the architecture's declared outputs, and drawn
 * by its declared shape (zoo/svg.h), never by the model's name. Internal to
 * the CLI. */
#ifndef BERTC_CLI_EXPLAIN_H
#define BERTC_CLI_EXPLAIN_H

#include "cli/cli.h"
#include "zoo/svg.h"

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
/* "" or, when the model read fewer tokens than the text has, a sentence
 * saying so (and, for a model with a query_len key, how to give it all). */
void explain_cut_note(const Model *m, const ExplainTokens *t, char *buf, size_t cap);

/* Whether a concrete name ("layers.1.lambda_q") is the declared one
 * ("layers.{l}.lambda_q": {l} and {i} stand for a number). */
bool explain_name_matches(const char *declared, const char *name);
/* The declared output of that concrete name, NULL if none. */
const OutputSpec *explain_declared(const ModelArch *arch, const char *name);
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
int cmd_explain(int argc, char **argv);

#endif
