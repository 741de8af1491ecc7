/* autograd/ops_internal.h — shared by the op files and the op table; not part
 * of the public API. Each backward function reads node->out->grad and ADDS into
 * the gradients of the node's inputs that require grad; one that stores every
 * element of an input's gradient gets it from ag_grad_full and writes it when
 * that is the first gradient to arrive. */
#ifndef BERTC_OPS_INTERNAL_H
#define BERTC_OPS_INTERNAL_H

#include "autograd/autograd.h"

/* ops_elementwise.c */
void add_backward(Graph *g, Node *node);
void sub_backward(Graph *g, Node *node);
void mul_backward(Graph *g, Node *node);
void div_backward(Graph *g, Node *node);
void scale_backward(Graph *g, Node *node);
/* ops_unary.c */
void gelu_backward(Graph *g, Node *node);
void gelu_tanh_backward(Graph *g, Node *node);
void relu_backward(Graph *g, Node *node);
void tanh_backward(Graph *g, Node *node);
void sigmoid_backward(Graph *g, Node *node);
void exp_backward(Graph *g, Node *node);
void log_backward(Graph *g, Node *node);
void sqrt_backward(Graph *g, Node *node);
void pow_backward(Graph *g, Node *node);
/* ops_matmul.c */
void matmul_backward(Graph *g, Node *node);
void linear_backward(Graph *g, Node *node);
/* ops_shape.c */
void reshape_backward(Graph *g, Node *node);
void permute_backward(Graph *g, Node *node);
void concat_backward(Graph *g, Node *node);
void slice_backward(Graph *g, Node *node);
/* ops_index.c */
void embedding_backward(Graph *g, Node *node);
void index_select_backward(Graph *g, Node *node);
void gather_backward(Graph *g, Node *node);
void masked_fill_backward(Graph *g, Node *node);
/* ops_reduce.c */
void sum_backward(Graph *g, Node *node);
void mean_backward(Graph *g, Node *node);
void softmax_backward(Graph *g, Node *node);
void log_softmax_backward(Graph *g, Node *node);
void layernorm_backward(Graph *g, Node *node);
/* ops_layers.c */
void dropout_backward(Graph *g, Node *node);
void conv1d_backward(Graph *g, Node *node);
/* ops_loss.c */
void cross_entropy_backward(Graph *g, Node *node);
void bce_backward(Graph *g, Node *node);
void bce_with_logits_backward(Graph *g, Node *node);
void mse_backward(Graph *g, Node *node);
/* ops_attention.c */
void attention_scores_backward(Graph *g, Node *node);
void attention_context_backward(Graph *g, Node *node);
/* ops_linear_ce.c */
void linear_cross_entropy_backward(Graph *g, Node *node);
/* ops_fused.c */
void add_layernorm_backward(Graph *g, Node *node);

/* Normalise a possibly negative dim (-1 = last) against ndim; fatal if out of
 * range, naming the op. */
int ag_norm_dim(const char *op, int dim, int ndim);

#endif
