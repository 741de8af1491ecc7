/* autograd/op_table.c — every differentiable op, indexed by OpId. The forward
 * of each op is the public ag_* function; the backward is listed here. */
#include "autograd/ops_internal.h"

const OpDef ag_op_table[OP_COUNT] = {
    [OP_ADD]             = {.name = "add", .backward = add_backward},
    [OP_SUB]             = {.name = "sub", .backward = sub_backward},
    [OP_MUL]             = {.name = "mul", .backward = mul_backward},
    [OP_DIV]             = {.name = "div", .backward = div_backward},
    [OP_SCALE]           = {.name = "scale", .backward = scale_backward},
    [OP_MATMUL]          = {.name = "matmul", .backward = matmul_backward},
    [OP_LINEAR]          = {.name = "linear", .backward = linear_backward},
    [OP_RESHAPE]         = {.name = "reshape", .backward = reshape_backward},
    [OP_PERMUTE]         = {.name = "permute", .backward = permute_backward},
    [OP_CONCAT]          = {.name = "concat", .backward = concat_backward},
    [OP_SLICE]           = {.name = "slice", .backward = slice_backward},
    [OP_EMBEDDING]       = {.name = "embedding", .backward = embedding_backward},
    [OP_INDEX_SELECT]    = {.name = "index_select", .backward = index_select_backward},
    [OP_GATHER]          = {.name = "gather", .backward = gather_backward},
    [OP_SUM]             = {.name = "sum", .backward = sum_backward},
    [OP_MEAN]            = {.name = "mean", .backward = mean_backward},
    [OP_SOFTMAX]         = {.name = "softmax", .backward = softmax_backward},
    [OP_LOG_SOFTMAX]     = {.name = "log_softmax", .backward = log_softmax_backward},
    [OP_LAYERNORM]       = {.name = "layernorm", .backward = layernorm_backward},
    [OP_GELU]            = {.name = "gelu", .backward = gelu_backward},
    [OP_GELU_TANH]       = {.name = "gelu_tanh", .backward = gelu_tanh_backward},
    [OP_RELU]            = {.name = "relu", .backward = relu_backward},
    [OP_TANH]            = {.name = "tanh", .backward = tanh_backward},
    [OP_SIGMOID]         = {.name = "sigmoid", .backward = sigmoid_backward},
    [OP_EXP]             = {.name = "exp", .backward = exp_backward},
    [OP_LOG]             = {.name = "log", .backward = log_backward},
    [OP_SQRT]            = {.name = "sqrt", .backward = sqrt_backward},
    [OP_POW]             = {.name = "pow", .backward = pow_backward},
    [OP_MASKED_FILL]     = {.name = "masked_fill", .backward = masked_fill_backward},
    [OP_DROPOUT]         = {.name = "dropout", .backward = dropout_backward},
    [OP_CONV1D]          = {.name = "conv1d", .backward = conv1d_backward},
    [OP_CROSS_ENTROPY]   = {.name = "cross_entropy", .backward = cross_entropy_backward},
    [OP_BCE]             = {.name = "bce", .backward = bce_backward},
    [OP_BCE_WITH_LOGITS] = {.name = "bce_with_logits", .backward = bce_with_logits_backward},
    [OP_MSE]             = {.name = "mse", .backward = mse_backward},
    [OP_LINEAR_CROSS_ENTROPY] = {.name = "linear_cross_entropy",
                                 .backward = linear_cross_entropy_backward},
    [OP_ATTENTION_SCORES] = {.name = "attention_scores", .backward = attention_scores_backward},
    [OP_ATTENTION_CONTEXT] = {.name = "attention_context", .backward = attention_context_backward},
    [OP_ADD_LAYERNORM]   = {.name = "add_layernorm", .backward = add_layernorm_backward},
};

int ag_norm_dim(const char *op, int dim, int ndim)
{
    int d = dim < 0 ? dim + ndim : dim;
    if (d < 0 || d >= ndim)
        bertc_fatal("%s: dim %d out of range for a %d-dim tensor", op, dim, ndim);
    return d;
}
