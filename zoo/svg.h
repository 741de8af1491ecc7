/* zoo/svg.h — pictures people would rather look at than read: the loss curve
 * of a training run and the attention maps of a sentence, as standalone SVG
 * files (open them in any browser). */
#ifndef BERTC_ZOO_SVG_H
#define BERTC_ZOO_SVG_H

#include "zoo/train.h"

/* Train loss (and eval loss / metric where present) against the step. */
int bertc_svg_loss_curve(const char *path, const TrainResult *res, const char *title,
                   BertcError *err);

/* One heat map per head: probs is (nh, S, S) for one sequence of one layer
 * (row i = the query token, column j = the key it attends to); tokens[0..S-1]
 * label the rows and columns. At most SVG_MAX_HEADS heads of SVG_MAX_TOKENS
 * tokens (an error otherwise). */
#define SVG_MAX_HEADS 1024
#define SVG_MAX_TOKENS 4096
int bertc_svg_attention(const char *path, const float *probs, int64_t nh, int64_t S,
                  const char *const *tokens, const char *title, BertcError *err);

#endif
