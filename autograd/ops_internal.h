/* autograd/ops_internal.h — shared by the op files and the op table; not part
 * of the public API. Each backward function reads node->out->grad and ADDS into
 * the gradients of the node's inputs that require grad; one that stores every
 * element of an input's gradient gets it from bertc_ag_grad_full and writes it when
 * that is the first gradient to arrive. */
#ifndef BERTC_OPS_INTERNAL_H
#define BERTC_OPS_INTERNAL_H

#include "autograd/autograd.h"

/* ops_elementwise.c */
void bertc_add_backward(Graph *g, Node *node);
void bertc_sub_backward(Graph *g, Node *node);
void bertc_mul_backward(Graph *g, Node *node);
void bertc_div_backward(Graph *g, Node *node);
void bertc_scale_backward(Graph *g, Node *node);
/* ops_unary.c */
void bertc_gelu_backward(Graph *g, Node *node);
void bertc_gelu_tanh_backward(Graph *g, Node *node);
void bertc_relu_backward(Graph *g, Node *node);
void bertc_tanh_backward(Graph *g, Node *node);
void bertc_sigmoid_backward(Graph *g, Node *node);
void bertc_exp_backward(Graph *g, Node *node);
void bertc_log_backward(Graph *g, Node *node);
void bertc_sqrt_backward(Graph *g, Node *node);
void bertc_pow_backward(Graph *g, Node *node);
/* ops_matmul.c */
void bertc_matmul_backward(Graph *g, Node *node);
void bertc_linear_backward(Graph *g, Node *node);
/* ops_shape.c */
void bertc_reshape_backward(Graph *g, Node *node);
void bertc_permute_backward(Graph *g, Node *node);
void bertc_concat_backward(Graph *g, Node *node);
void bertc_slice_backward(Graph *g, Node *node);
/* ops_index.c */
void bertc_embedding_backward(Graph *g, Node *node);
void bertc_index_select_backward(Graph *g, Node *node);
void bertc_gather_backward(Graph *g, Node *node);
void bertc_masked_fill_backward(Graph *g, Node *node);
/* ops_reduce.c */
void bertc_sum_backward(Graph *g, Node *node);
void bertc_mean_backward(Graph *g, Node *node);
void bertc_softmax_backward(Graph *g, Node *node);
void bertc_log_softmax_backward(Graph *g, Node *node);
void bertc_layernorm_backward(Graph *g, Node *node);
/* ops_layers.c */
void bertc_dropout_backward(Graph *g, Node *node);
void bertc_conv1d_backward(Graph *g, Node *node);
/* ops_loss.c */
void bertc_cross_entropy_backward(Graph *g, Node *node);
void bertc_bce_backward(Graph *g, Node *node);
void bertc_bce_with_logits_backward(Graph *g, Node *node);
void bertc_mse_backward(Graph *g, Node *node);
/* ops_attention.c */
void bertc_attention_scores_backward(Graph *g, Node *node);
void bertc_attention_context_backward(Graph *g, Node *node);
/* ops_linear_ce.c */
void bertc_linear_cross_entropy_backward(Graph *g, Node *node);
/* ops_fused.c */
void bertc_add_layernorm_backward(Graph *g, Node *node);

/* A Linear's product (ops_matmul.c; linear_cross_entropy's too): C =
 * op(A) op(B) + beta C in float32 (bertc_gemm), or with bf16 operands and
 * float32 sums when bf16 (the graph's mixed precision, bertc_gemm_bf16). */
void bertc_ag_product(bool bf16, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                      const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                      float *C, int64_t ldc);

/* Normalise a possibly negative dim (-1 = last) against ndim; fatal if out of
 * range, naming the op. */
int bertc_ag_norm_dim(const char *op, int dim, int ndim);

#endif
