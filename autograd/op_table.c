/* autograd/op_table.c — every differentiable op, indexed by OpId. The forward
 * of each op is the public ag_* function; the backward is listed here. */
#include "autograd/ops_internal.h"

const OpDef bertc_ag_op_table[OP_COUNT] = {
    [OP_ADD]             = {.name = "add", .backward = bertc_add_backward},
    [OP_SUB]             = {.name = "sub", .backward = bertc_sub_backward},
    [OP_MUL]             = {.name = "mul", .backward = bertc_mul_backward},
    [OP_DIV]             = {.name = "div", .backward = bertc_div_backward},
    [OP_SCALE]           = {.name = "scale", .backward = bertc_scale_backward},
    [OP_MATMUL]          = {.name = "matmul", .backward = bertc_matmul_backward},
    [OP_LINEAR]          = {.name = "linear", .backward = bertc_linear_backward},
    [OP_RESHAPE]         = {.name = "reshape", .backward = bertc_reshape_backward},
    [OP_PERMUTE]         = {.name = "permute", .backward = bertc_permute_backward},
    [OP_CONCAT]          = {.name = "concat", .backward = bertc_concat_backward},
    [OP_SLICE]           = {.name = "slice", .backward = bertc_slice_backward},
    [OP_EMBEDDING]       = {.name = "embedding", .backward = bertc_embedding_backward},
    [OP_INDEX_SELECT]    = {.name = "index_select", .backward = bertc_index_select_backward},
    [OP_GATHER]          = {.name = "gather", .backward = bertc_gather_backward},
    [OP_SUM]             = {.name = "sum", .backward = bertc_sum_backward},
    [OP_MEAN]            = {.name = "mean", .backward = bertc_mean_backward},
    [OP_SOFTMAX]         = {.name = "softmax", .backward = bertc_softmax_backward},
    [OP_LOG_SOFTMAX]     = {.name = "log_softmax", .backward = bertc_log_softmax_backward},
    [OP_LAYERNORM]       = {.name = "layernorm", .backward = bertc_layernorm_backward},
    [OP_GELU]            = {.name = "gelu", .backward = bertc_gelu_backward},
    [OP_GELU_TANH]       = {.name = "gelu_tanh", .backward = bertc_gelu_tanh_backward},
    [OP_RELU]            = {.name = "relu", .backward = bertc_relu_backward},
    [OP_TANH]            = {.name = "tanh", .backward = bertc_tanh_backward},
    [OP_SIGMOID]         = {.name = "sigmoid", .backward = bertc_sigmoid_backward},
    [OP_EXP]             = {.name = "exp", .backward = bertc_exp_backward},
    [OP_LOG]             = {.name = "log", .backward = bertc_log_backward},
    [OP_SQRT]            = {.name = "sqrt", .backward = bertc_sqrt_backward},
    [OP_POW]             = {.name = "pow", .backward = bertc_pow_backward},
    [OP_MASKED_FILL]     = {.name = "masked_fill", .backward = bertc_masked_fill_backward},
    [OP_DROPOUT]         = {.name = "dropout", .backward = bertc_dropout_backward},
    [OP_CONV1D]          = {.name = "conv1d", .backward = bertc_conv1d_backward},
    [OP_CROSS_ENTROPY]   = {.name = "cross_entropy", .backward = bertc_cross_entropy_backward},
    [OP_BCE]             = {.name = "bce", .backward = bertc_bce_backward},
    [OP_BCE_WITH_LOGITS] = {.name = "bce_with_logits", .backward = bertc_bce_with_logits_backward},
    [OP_MSE]             = {.name = "mse", .backward = bertc_mse_backward},
    [OP_LINEAR_CROSS_ENTROPY] = {.name = "linear_cross_entropy",
                                 .backward = bertc_linear_cross_entropy_backward},
    [OP_ATTENTION_SCORES] = {.name = "attention_scores", .backward = bertc_attention_scores_backward},
    [OP_ATTENTION_CONTEXT] = {.name = "attention_context", .backward = bertc_attention_context_backward},
    [OP_ADD_LAYERNORM]   = {.name = "add_layernorm", .backward = bertc_add_layernorm_backward},
};

int bertc_ag_norm_dim(const char *op, int dim, int ndim)
{
    int d = dim < 0 ? dim + ndim : dim;
    if (d < 0 || d >= ndim)
        bertc_fatal("%s: dim %d out of range for a %d-dim tensor", op, dim, ndim);
    return d;
}
