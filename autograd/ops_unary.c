/* autograd/ops_unary.c — elementwise functions y = f(x) and their derivatives.
 * Each backward is dx += dy * f'(x), with f' written from x or from y,
 * whichever is cheaper and more accurate; it stores every element of dx, so a
 * new dx is written rather than added to (bertc_ag_grad_full). */
#include "autograd/ops_internal.h"

#include <math.h>

typedef enum { U_RELU, U_TANH, U_SIGMOID, U_EXP, U_LOG, U_SQRT, U_POW } UnaryKind;

static const OpId unary_op_ids[] = {OP_RELU, OP_TANH, OP_SIGMOID, OP_EXP,
                                    OP_LOG,  OP_SQRT, OP_POW};

static float unary_forward(UnaryKind kind, float x, float p)
{
    switch (kind) {
    case U_RELU: return x > 0.0f ? x : 0.0f;
    case U_TANH: return tanhf(x);
    case U_SIGMOID: return 1.0f / (1.0f + expf(-x));
    case U_EXP: return expf(x);
    case U_LOG: return logf(x);
    case U_SQRT: return sqrtf(x);
    case U_POW: return powf(x, p);
    }
    return 0.0f;
}

/* f'(x), given x and y = f(x). */
static float unary_derivative(UnaryKind kind, float x, float y, float p)
{
    switch (kind) {
    case U_RELU: return x > 0.0f ? 1.0f : 0.0f;  /* PyTorch: 0 at x == 0 */
    case U_TANH: return 1.0f - y * y;
    case U_SIGMOID: return y * (1.0f - y);
    case U_EXP: return y;
    case U_LOG: return 1.0f / x;
    case U_SQRT: return 0.5f / y;
    /* x^0 is constant: 0 everywhere, not 0 * x^-1 = NaN at x = 0 (as PyTorch) */
    case U_POW: return p == 0.0f ? 0.0f : p * powf(x, p - 1.0f);
    }
    return 0.0f;
}

static Var *unary(Graph *g, UnaryKind kind, Var *a, float p)
{
    Var *out = bertc_ag_result(g, a->value.ndim, a->value.shape, &a, 1);
    for (int64_t i = 0; i < a->value.numel; i++)
        out->value.data[i] = unary_forward(kind, a->value.data[i], p);
    Node *node = bertc_ag_record(g, unary_op_ids[kind], out, &a, 1);
    if (node)
        node->attr.unary.p = p;
    return out;
}

static void unary_backward(Graph *g, Node *node, UnaryKind kind)
{
    Var *a = node->in[0];
    if (!a->requires_grad)
        return;
    bool accumulate;
    float *dx = bertc_ag_grad_full(g, a, &accumulate), p = node->attr.unary.p;
    const float *x = a->value.data, *y = node->out->value.data, *dy = node->out->grad;
    for (int64_t i = 0; i < a->value.numel; i++)
        dx[i] = (accumulate ? dx[i] : 0.0f) + dy[i] * unary_derivative(kind, x[i], y[i], p);
}

Var *bertc_ag_relu(Graph *g, Var *a) { return unary(g, U_RELU, a, 0.0f); }
Var *bertc_ag_tanh(Graph *g, Var *a) { return unary(g, U_TANH, a, 0.0f); }
Var *bertc_ag_sigmoid(Graph *g, Var *a) { return unary(g, U_SIGMOID, a, 0.0f); }
Var *bertc_ag_exp(Graph *g, Var *a) { return unary(g, U_EXP, a, 0.0f); }
Var *bertc_ag_log(Graph *g, Var *a) { return unary(g, U_LOG, a, 0.0f); }
Var *bertc_ag_sqrt(Graph *g, Var *a) { return unary(g, U_SQRT, a, 0.0f); }
Var *bertc_ag_pow(Graph *g, Var *a, float p) { return unary(g, U_POW, a, p); }

void bertc_relu_backward(Graph *g, Node *node) { unary_backward(g, node, U_RELU); }
void bertc_tanh_backward(Graph *g, Node *node) { unary_backward(g, node, U_TANH); }
void bertc_sigmoid_backward(Graph *g, Node *node) { unary_backward(g, node, U_SIGMOID); }
void bertc_exp_backward(Graph *g, Node *node) { unary_backward(g, node, U_EXP); }
void bertc_log_backward(Graph *g, Node *node) { unary_backward(g, node, U_LOG); }
void bertc_sqrt_backward(Graph *g, Node *node) { unary_backward(g, node, U_SQRT); }
void bertc_pow_backward(Graph *g, Node *node) { unary_backward(g, node, U_POW); }

/* GELU (erf, as BERT) and its tanh approximation (BertSum) run on the row
 * kernels of tensor/, which have SIMD paths. */
Var *bertc_ag_gelu(Graph *g, Var *a)
{
    Var *out = bertc_ag_result(g, a->value.ndim, a->value.shape, &a, 1);
    bertc_kernel_gelu(out->value.data, a->value.data, a->value.numel);
    bertc_ag_record(g, OP_GELU, out, &a, 1);
    return out;
}

void bertc_gelu_backward(Graph *g, Node *node)
{
    Var *a = node->in[0];
    if (!a->requires_grad)
        return;
    bool accumulate;
    float *dx = bertc_ag_grad_full(g, a, &accumulate);
    bertc_kernel_gelu_backward(dx, a->value.data, node->out->grad, a->value.numel, accumulate);
}

Var *bertc_ag_gelu_tanh(Graph *g, Var *a)
{
    Var *out = bertc_ag_result(g, a->value.ndim, a->value.shape, &a, 1);
    bertc_kernel_gelu_tanh(out->value.data, a->value.data, a->value.numel);
    bertc_ag_record(g, OP_GELU_TANH, out, &a, 1);
    return out;
}

void bertc_gelu_tanh_backward(Graph *g, Node *node)
{
    Var *a = node->in[0];
    if (!a->requires_grad)
        return;
    bool accumulate;
    float *dx = bertc_ag_grad_full(g, a, &accumulate);
    bertc_kernel_gelu_tanh_backward(dx, a->value.data, node->out->grad, a->value.numel, accumulate);
}
