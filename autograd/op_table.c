/* autograd/op_table.c — every differentiable op, indexed by OpId. The forward
 * of each op is the public ag_* function; the backward is listed here. */
#include "autograd/ops_internal.h"

const OpDef ag_op_table[OP_COUNT] = {
    [OP_ADD]             = {"add", add_backward},
    [OP_SUB]             = {"sub", sub_backward},
    [OP_MUL]             = {"mul", mul_backward},
    [OP_DIV]             = {"div", div_backward},
    [OP_SCALE]           = {"scale", scale_backward},
    [OP_MATMUL]          = {"matmul", matmul_backward},
    [OP_LINEAR]          = {"linear", linear_backward},
    [OP_RESHAPE]         = {"reshape", reshape_backward},
    [OP_PERMUTE]         = {"permute", permute_backward},
    [OP_CONCAT]          = {"concat", concat_backward},
    [OP_SLICE]           = {"slice", slice_backward},
    [OP_EMBEDDING]       = {"embedding", embedding_backward},
    [OP_INDEX_SELECT]    = {"index_select", index_select_backward},
    [OP_GATHER]          = {"gather", gather_backward},
    [OP_SUM]             = {"sum", sum_backward},
    [OP_MEAN]            = {"mean", mean_backward},
    [OP_SOFTMAX]         = {"softmax", softmax_backward},
    [OP_LOG_SOFTMAX]     = {"log_softmax", log_softmax_backward},
    [OP_LAYERNORM]       = {"layernorm", layernorm_backward},
    [OP_GELU]            = {"gelu", gelu_backward},
    [OP_GELU_TANH]       = {"gelu_tanh", gelu_tanh_backward},
    [OP_RELU]            = {"relu", relu_backward},
    [OP_TANH]            = {"tanh", tanh_backward},
    [OP_SIGMOID]         = {"sigmoid", sigmoid_backward},
    [OP_EXP]             = {"exp", exp_backward},
    [OP_LOG]             = {"log", log_backward},
    [OP_SQRT]            = {"sqrt", sqrt_backward},
    [OP_POW]             = {"pow", pow_backward},
    [OP_MASKED_FILL]     = {"masked_fill", masked_fill_backward},
    [OP_DROPOUT]         = {"dropout", dropout_backward},
    [OP_CONV1D]          = {"conv1d", conv1d_backward},
    [OP_CROSS_ENTROPY]   = {"cross_entropy", cross_entropy_backward},
    [OP_BCE]             = {"bce", bce_backward},
    [OP_BCE_WITH_LOGITS] = {"bce_with_logits", bce_with_logits_backward},
    [OP_MSE]             = {"mse", mse_backward},
    [OP_LINEAR_CROSS_ENTROPY] = {"linear_cross_entropy", linear_cross_entropy_backward},
    [OP_ATTENTION_SCORES] = {"attention_scores", attention_scores_backward},
    [OP_ATTENTION_CONTEXT] = {"attention_context", attention_context_backward},
    [OP_ADD_LAYERNORM]   = {"add_layernorm", add_layernorm_backward},
};

int ag_norm_dim(const char *op, int dim, int ndim)
{
    int d = dim < 0 ? dim + ndim : dim;
    if (d < 0 || d >= ndim)
        bertc_fatal("%s: dim %d out of range for a %d-dim tensor", op, dim, ndim);
    return d;
}
