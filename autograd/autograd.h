/*
 * autograd/autograd.h — reverse-mode automatic differentiation on a tape.
 *
 * A Var is a tensor value plus (when it needs one) a gradient buffer of the
 * same shape. Every op whose inputs need a gradient appends one Node to the
 * Graph's tape: which op, its inputs, its output, and the few attributes its
 * backward needs. bertc_ag_backward(g, loss) walks the tape from the newest node to
 * the oldest and calls each op's backward, which ADDS into its inputs'
 * gradients (+=), so a Var used twice (a tied weight) receives the sum of its
 * uses, exactly like PyTorch. A node runs only after every consumer of its
 * output has added into that output's gradient. The first backward to reach a
 * step Var may WRITE its gradient instead of adding to zeros (bertc_ag_grad_full),
 * or hand it its own upstream buffer (bertc_ag_grad_share, reshape and add): the
 * same values without a zeroing or copying pass. So after backward a step
 * Var's ->grad may be shared with its input; only parameters' gradients are
 * meant to be read then.
 *
 * Memory: a Graph owns a step arena. Activations, nodes and the gradients of
 * non-leaf Vars live there and vanish at bertc_ag_graph_reset(). Parameters (made
 * with bertc_ag_param) live in a persistent arena with a persistent gradient that
 * accumulates across backward passes until bertc_ag_zero_grad(). A parameter's
 * gradient is allocated (in its persistent arena) by the first backward that
 * reaches it, so inference never pays for gradients: until then ->grad is
 * NULL, which every reader treats as zeros.
 *
 * A complete training step, on the tape:
 *
 *     Arena *params = bertc_arena_create("params", 1 << 20);
 *     Graph *g = bertc_ag_graph_create(1 << 20, 42);
 *     int64_t wshape[2] = {3, 4};
 *     Var *w = bertc_ag_param(params, 2, wshape, "w");            // (out=3, in=4)
 *     for (int step = 0; step < 100; step++) {
 *         int64_t xshape[2] = {8, 4};
 *         Var *x = bertc_ag_tensor(g, 2, xshape, false);           // fill x->value.data
 *         Var *logits = bertc_ag_linear(g, x, w, NULL);            // (8, 3)
 *         Var *loss = bertc_ag_cross_entropy(g, logits, &labels, -100);
 *         bertc_ag_zero_grad(w);
 *         bertc_ag_backward(g, loss);
 *         for (int64_t i = 0; i < w->value.numel; i++)      // plain SGD
 *             w->value.data[i] -= 0.1f * w->grad[i];
 *         bertc_ag_graph_reset(g);                                 // frees the step
 *     }
 */
#ifndef BERTC_AUTOGRAD_H
#define BERTC_AUTOGRAD_H

#include "tensor/tensor.h"

/* ------------------------------------------------------------------------ */
/* Vars and the graph                                                        */
/* ------------------------------------------------------------------------ */

typedef struct Var {
    Tensor value;
    float *grad;          /* numel floats, or NULL until a gradient arrives */
    bool requires_grad;   /* true for parameters and for results of ops on them */
    bool persistent;      /* lives in a persistent arena (parameters) */
    Arena *home;          /* a parameter's persistent arena, where its gradient is
                             allocated by the first backward that reaches it */
    const char *name;     /* optional; used in messages */
    const GemmPackedB *packed; /* non-NULL: a linear weight (out, in) pre-packed for
                             inference (nn's bertc_registry_prepack); value.data then
                             holds the GEMM's layout, which only bertc_ag_linear reads */
    const QuantPackedB *qpacked; /* non-NULL: a linear weight (out, in) held as int8 (a
                             quantised model, nn's bertc_registry_load); value.data is
                             then NULL and bertc_ag_linear runs bertc_qgemm on it */
    const Bf16PackedB *bpacked; /* non-NULL: a linear weight (out, in) of a bf16 model
                             (nn's bertc_registry_pack_bf16), packed for the bf16 GEMM:
                             bertc_ag_linear runs bertc_bgemm on it in a no-grad pass;
                             value.data keeps the float32 values for training */
    const int8_t *qrows;  /* non-NULL: an embedding table (V, H) held as int8 rows (a
                             quantised model's word embeddings): row v is
                             qrows[v*H .. v*H+H) * qrow_scale[v]; value.data is then NULL
                             and bertc_ag_embedding dequantises the rows it looks up */
    const float *qrow_scale;
} Var;

typedef struct Node Node;

typedef struct Graph {
    Arena *step;          /* activations, nodes, non-leaf grads of one step */
    Node *tail;           /* newest node on the tape */
    int64_t n_nodes;
    bool no_grad;         /* record nothing (inference) */
    bool training;        /* dropout active */
    bool lean;            /* with no_grad: keep only the final outputs (bertc_ag_set_lean) */
    bool bf16;            /* mixed precision: Linear products in bf16 (bertc_ag_set_bf16) */
    bool final_only;      /* the pass's Outputs.final_only (set by bertc_model_forward) */
    Rng rng;              /* dropout draws come from here */
} Graph;

Graph *bertc_ag_graph_create(size_t step_bytes, uint64_t seed);
/* A graph in caller memory over a caller's arena (bare metal: a fixed one);
 * no allocation. bertc_ag_graph_destroy is not for these. */
void bertc_ag_graph_init(Graph *g, Arena *step, uint64_t seed);
void bertc_ag_graph_destroy(Graph *g);
/* Forget the tape and free every step allocation (keeps parameters). */
void bertc_ag_graph_reset(Graph *g);
/* no_grad mode: ops still compute but record nothing; returns the old mode. */
bool bertc_ag_set_no_grad(Graph *g, bool no_grad);
/* Mixed precision (bf16 autocast), returning the old mode: every linear and
 * linear_cross_entropy product, forward and backward (y = x w^T, dx = dy w,
 * dw = dy^T x), reads its two operands rounded to bf16 and sums in float32
 * (bertc_gemm_bf16); values, gradients, parameters and everything else stay
 * float32: the master weights and Adam's moments are never rounded. For
 * training on a CPU with a bf16 path (bertc_bgemm_isa() not scalar: on the
 * scalar path it is correct but slower than float32). */
bool bertc_ag_set_bf16(Graph *g, bool bf16);
/* Lean inference, for a memory-bound target (a microcontroller): models that
 * support it keep only what their final outputs need. The BERT encoder
 * (zoo/models/bert_inference.c) then keeps no hidden_states.{i} and no attention maps (they are
 * not put in the Outputs), works on a few rows at a time, releases each
 * step's temporaries once its result is written into the one hidden buffer,
 * and computes attention row by row (bertc_ag_attention_rows) without an
 * (nh, S, S) map: one forward's step arena holds about 3 S H floats per
 * sequence (the hidden state, K and V) plus a few rows' worth, instead of a
 * layer's temporaries plus every kept output. The values are the normal
 * no_grad forward's, bit for bit on the scalar path and within float
 * rounding on the SIMD ones (docs/embedded.md, "Lean inference"). Needs
 * no_grad and eval mode: a lean forward that would record a tape or draw
 * dropout is an error. Off by default; returns the old mode. */
bool bertc_ag_set_lean(Graph *g, bool lean);
void bertc_ag_set_training(Graph *g, bool training);

/* A parameter: value (zero-filled) in the persistent arena; its gradient is
 * allocated there too, zero-filled, on the first backward that reaches it. */
Var *bertc_ag_param(Arena *persistent, int ndim, const int64_t *shape, const char *name);
/* A step-arena Var with a zero-filled value, to be filled by the caller. */
Var *bertc_ag_tensor(Graph *g, int ndim, const int64_t *shape, bool requires_grad);
/* Wrap existing data (not copied) as a constant step Var. */
Var *bertc_ag_constant(Graph *g, Tensor value);

/* loss must hold a single element; its gradient is seeded with 1. */
void bertc_ag_backward(Graph *g, Var *loss);
/* General seed: out's gradient is seeded with `seed` (out->value.numel floats). */
void bertc_ag_backward_seeded(Graph *g, Var *out, const float *seed);
void bertc_ag_zero_grad(Var *v);
/* A parameter's gradient buffer, allocated zero-filled in its persistent
 * arena if no backward has reached it yet (e.g. to seed or inspect it). */
float *bertc_ag_param_grad(Var *param);
/* The gradient buffer of v, allocated zero-filled if absent: in the
 * parameter's persistent arena (bertc_ag_param_grad), else in the step arena. */
float *bertc_ag_grad(Graph *g, Var *v);
/* Only for a backward that stores EVERY element of v's gradient (linear's dx,
 * an elementwise op, layernorm's dx, permute...). Returns the buffer and sets
 * *accumulate: true when v is a parameter or already has a gradient (add into
 * it, as with bertc_ag_grad); false when the buffer is a fresh step allocation, NOT
 * zeroed: store every element, read none. Writing
 *     g[i] = (accumulate ? g[i] : 0.0f) + d
 * (or a GEMM with beta = accumulate ? 1 : 0) gives the values that adding d
 * into a zeroed buffer gives. A backward that reaches only some elements
 * (slice, embedding, gather, masked_fill, a broadcast operand) uses bertc_ag_grad. */
float *bertc_ag_grad_full(Graph *g, Var *v, bool *accumulate);
/* For a backward whose gradient for v is the upstream gradient `grad` itself,
 * element for element (reshape; add). If v is not a parameter and has no
 * gradient yet, v's gradient becomes that very buffer (no copy) and it returns
 * true; otherwise false, and the caller adds grad in as usual. Only for the
 * running node's node->out->grad: every consumer of out has run, so from now
 * on only v's own consumers write to it. Share it with one input only.
 * (A -0.0 in grad stays -0.0 where 0 + -0.0 gives +0.0; parameter gradients,
 * which start from zeros, come out bit for bit the same either way.) */
bool bertc_ag_grad_share(Var *v, float *grad);

/* ------------------------------------------------------------------------ */
/* The tape and the op table (for op implementers; users rarely need it)     */
/* ------------------------------------------------------------------------ */

typedef enum OpId {
    OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_SCALE,
    OP_MATMUL, OP_LINEAR,
    OP_RESHAPE, OP_PERMUTE, OP_CONCAT, OP_SLICE,
    OP_EMBEDDING, OP_INDEX_SELECT, OP_GATHER,
    OP_SUM, OP_MEAN,
    OP_SOFTMAX, OP_LOG_SOFTMAX, OP_LAYERNORM,
    OP_GELU, OP_GELU_TANH, OP_RELU, OP_TANH, OP_SIGMOID, OP_EXP, OP_LOG, OP_SQRT, OP_POW,
    OP_MASKED_FILL, OP_DROPOUT, OP_CONV1D,
    OP_CROSS_ENTROPY, OP_BCE, OP_BCE_WITH_LOGITS, OP_MSE, OP_LINEAR_CROSS_ENTROPY,
    OP_ATTENTION_SCORES, OP_ATTENTION_CONTEXT,
    OP_ADD_LAYERNORM,
    OP_COUNT
} OpId;

/* What an op's forward keeps for its backward, one struct per op (or family
 * of ops), in the Node's attr union under the op's name: matmul's backward
 * reads node->attr.matmul.trans_b. Saved arrays live in the step arena. */
typedef struct ScaleAttrs { float s; } ScaleAttrs;   /* scale: out = s a */
typedef struct UnaryAttrs { float p; } UnaryAttrs;   /* pow's exponent (out = a^p) */
typedef struct MatmulAttrs { bool trans_a, trans_b; } MatmulAttrs;
typedef struct AttentionScoresAttrs {
    int64_t nh;           /* heads */
    float alpha;          /* the scale of q k^T */
} AttentionScoresAttrs;
typedef struct PermuteAttrs { int perm[TENSOR_MAX_DIMS]; } PermuteAttrs;
typedef struct ConcatAttrs { int dim; } ConcatAttrs;
typedef struct SliceAttrs {
    int dim;
    int64_t start;        /* out = a[..., start:start + out's size, ...] along dim */
} SliceAttrs;
typedef struct EmbeddingAttrs {
    const int32_t *ids;   /* (n_ids) the looked-up rows */
    int64_t n_ids;
    int64_t padding_idx;  /* its row gets no gradient; < 0: none */
} EmbeddingAttrs;
typedef struct IndexAttrs {   /* index_select and gather */
    const int32_t *idx;
    int dim;
} IndexAttrs;
typedef struct MaskedFillAttrs {
    const int32_t *mask;                     /* the mask as given, int32 */
    int64_t mask_strides[TENSOR_MAX_DIMS];   /* broadcast to out: 0 on broadcast dims */
} MaskedFillAttrs;
typedef struct ReduceAttrs {  /* sum and mean over one dim: a is (outer, n, inner) */
    int64_t outer, n, inner;
    float scale;          /* 1 (sum) or 1/n (mean) */
} ReduceAttrs;
typedef struct LayerNormAttrs {
    const float *mean, *rstd;   /* (rows) each */
} LayerNormAttrs;
typedef struct AddLayerNormAttrs {
    const float *s;             /* s = a + b, the LayerNorm input */
    const float *mean, *rstd;   /* (rows) each */
} AddLayerNormAttrs;
typedef struct DropoutAttrs {
    const uint8_t *keep;  /* which elements were kept */
    float scale;          /* 1 / (1 - p) */
} DropoutAttrs;
typedef struct Conv1dAttrs { const float *cols; } Conv1dAttrs;   /* the unfolded input */
typedef struct CrossEntropyAttrs {
    const int32_t *target;
    int64_t ignore_index;
    int64_t counted;      /* targets not equal to ignore_index: the mean's divisor */
} CrossEntropyAttrs;
typedef struct BceAttrs {
    const float *target;
    float scale;          /* 1 (sum) or 1/n (mean) */
} BceAttrs;
typedef struct TargetAttrs { const float *target; } TargetAttrs;   /* bce_with_logits, mse */
struct LceGrads;
typedef struct LinearCrossEntropyAttrs {
    const struct LceGrads *grads;   /* for an upstream gradient of 1 (ops_linear_ce.c) */
} LinearCrossEntropyAttrs;

struct Node {
    OpId op;
    Var *out;
    Var **in;             /* n_in inputs (step-arena array) */
    int n_in;
    union {               /* the member of node->op, set by its forward */
        ScaleAttrs scale;
        UnaryAttrs unary;
        MatmulAttrs matmul;
        AttentionScoresAttrs attention_scores;
        PermuteAttrs permute;
        ConcatAttrs concat;
        SliceAttrs slice;
        EmbeddingAttrs embedding;
        IndexAttrs index;
        MaskedFillAttrs masked_fill;
        ReduceAttrs reduce;
        LayerNormAttrs layernorm;
        AddLayerNormAttrs add_layernorm;
        DropoutAttrs dropout;
        Conv1dAttrs conv1d;
        CrossEntropyAttrs cross_entropy;
        BceAttrs bce;
        TargetAttrs target;
        LinearCrossEntropyAttrs linear_ce;
    } attr;
    Node *prev;
};

typedef void (*BackwardFn)(Graph *g, Node *node);

typedef struct OpDef {
    const char *name;
    BackwardFn backward;
} OpDef;

/* The op table (autograd/op_table.c), indexed by OpId. */
extern const OpDef bertc_ag_op_table[OP_COUNT];

/* For op implementers: make the output Var of an op. requires_grad is the OR of
 * the inputs' and false in no_grad mode. */
Var *bertc_ag_result(Graph *g, int ndim, const int64_t *shape, Var **inputs, int n_in);
/* Record a node for `out` if it requires grad; returns it (or NULL). */
Node *bertc_ag_record(Graph *g, OpId op, Var *out, Var **inputs, int n_in);
/* bertc_fatal with "op: message" and the shapes of a and b. */
_Noreturn void bertc_ag_shape_error(const char *op, const char *what, const Var *a, const Var *b);

/* ------------------------------------------------------------------------ */
/* Ops (SPEC §3). Shapes in PyTorch order. Each op's backward sits next to   */
/* its forward in autograd/ops_*.c.                                          */
/* ------------------------------------------------------------------------ */

/* Elementwise with broadcasting (ops_elementwise.c) */
Var *bertc_ag_add(Graph *g, Var *a, Var *b);
Var *bertc_ag_sub(Graph *g, Var *a, Var *b);
Var *bertc_ag_mul(Graph *g, Var *a, Var *b);
Var *bertc_ag_div(Graph *g, Var *a, Var *b);
Var *bertc_ag_scale(Graph *g, Var *a, float s);                 /* s * a */

/* Unary (ops_unary.c) */
Var *bertc_ag_gelu(Graph *g, Var *a);        /* erf form */
Var *bertc_ag_gelu_tanh(Graph *g, Var *a);   /* tanh approximation */
Var *bertc_ag_relu(Graph *g, Var *a);
Var *bertc_ag_tanh(Graph *g, Var *a);
Var *bertc_ag_sigmoid(Graph *g, Var *a);
Var *bertc_ag_exp(Graph *g, Var *a);
Var *bertc_ag_log(Graph *g, Var *a);
Var *bertc_ag_sqrt(Graph *g, Var *a);
Var *bertc_ag_pow(Graph *g, Var *a, float p);  /* a^p */

/* Matrix products (ops_matmul.c)
 * matmul: a (..., M, K), b (..., K, N) -> (..., M, N), with op(a) = a^T when
 * trans_a (a is (..., K, M)), likewise b. Batch dims must be equal, or b is
 * 2-D and shared by every batch entry. */
Var *bertc_ag_matmul(Graph *g, Var *a, Var *b, bool trans_a, bool trans_b);
/* linear: x (..., in), w (out, in), bias (out) or NULL -> (..., out) = x w^T + b */
Var *bertc_ag_linear(Graph *g, Var *x, Var *w, Var *bias);
/* The activations a Linear may be followed by; bertc_ag_act is bertc_ag_gelu,
 * bertc_ag_gelu_tanh or bertc_ag_relu. */
typedef enum AgAct { AG_ACT_GELU, AG_ACT_GELU_TANH, AG_ACT_RELU } AgAct;
Var *bertc_ag_act(Graph *g, AgAct act, Var *x);
/* act(x w^T + b), the values of bertc_ag_act(bertc_ag_linear(...)). With an
 * int8 w (no gradient) the GELUs run inside the int8 GEMM on each work
 * item's part of the result while it is in L2 (bertc_qgemm_many): two
 * passes over a (..., out) that may not fit in cache fewer. */
Var *bertc_ag_linear_act(Graph *g, Var *x, Var *w, Var *bias, AgAct act);
/* out[i] = x w[i]^T + bias[i] for i < n (bias[i] may be NULL): n Linears of
 * one x, as attention's Q, K and V. With int8 weights x is quantised once for
 * all of them and the threads wake once; otherwise n bertc_ag_linear. */
void bertc_ag_linears(Graph *g, Var *x, int n, Var *const *w, Var *const *bias, Var **out);

/* Multi-head attention products on heads read in place (ops_attention.c).
 * q, k, v (B, S, H) hold nh heads of d = H / nh columns each.
 * attention_scores: alpha q_bh k_bh^T + mask -> (B, nh, S, S); mask is the
 * additive (B, 1, 1, S) mask (no gradient) or NULL.
 * attention_context: p (B, nh, S, S), v -> (B, S, H), head h of row (b, s) =
 * p[b, h, s] v_bh: the merged context, no permute. */
Var *bertc_ag_attention_scores(Graph *g, Var *q, Var *k, int64_t nh, float alpha, Var *mask);
Var *bertc_ag_attention_context(Graph *g, Var *p, Var *v);
/* attention_heads: attention_context(softmax(attention_scores(q, k, nh, alpha,
 * mask)), v) with the same bits, each (b, h) block's scores kept only while
 * it is computed (bertc_kernel_attention_heads): no (B, nh, S, S) tensor, for
 * inference that keeps no maps. No backward: q, k or v requiring grad
 * outside no_grad is a fatal error naming the op. */
Var *bertc_ag_attention_heads(Graph *g, Var *q, Var *k, Var *v, int64_t nh, float alpha,
                              Var *mask);
/* attention_rows: the context of the three above, attention_context(softmax(
 * attention_scores(q, k, nh, alpha, mask)), v), computed one query row at a
 * time (bertc_kernel_attention_rows) without storing the (B, nh, S, S) maps,
 * for inference. q (B, Sq, H) may be a block of Sq query rows of each
 * sequence; k, v (B, S, H) and the mask cover all S keys. No backward, so q,
 * k or v requiring grad outside no_grad is a fatal error naming the op.
 * over_q: the context is written over q's values and q is returned (q is
 * consumed); else a new (B, Sq, H) Var. */
Var *bertc_ag_attention_rows(Graph *g, Var *q, Var *k, Var *v, int64_t nh, float alpha,
                             Var *mask, bool over_q);

/* Shape (ops_shape.c). reshape shares storage; permute copies. */
Var *bertc_ag_reshape(Graph *g, Var *a, int ndim, const int64_t *shape); /* one dim may be -1 */
Var *bertc_ag_permute(Graph *g, Var *a, const int *perm);
Var *bertc_ag_transpose(Graph *g, Var *a, int dim0, int dim1);
Var *bertc_ag_concat(Graph *g, Var **xs, int n, int dim);
Var *bertc_ag_slice(Graph *g, Var *a, int dim, int64_t start, int64_t end); /* [start, end) */
/* split a along dim into n pieces of the given sizes (which sum to the dim). */
void bertc_ag_split(Graph *g, Var *a, int dim, int n, const int64_t *sizes, Var **out);

/* Indexing (ops_index.c) */
/* table (V, H), ids any shape -> (ids..., H). Rows equal to padding_idx get no
 * gradient (padding_idx < 0: none). An id outside [0, V) is a fatal error.
 * An int8 table (Var.qrows) gives q[id, :] * scale[id] and no gradient. */
Var *bertc_ag_embedding(Graph *g, Var *table, const ITensor *ids, int padding_idx);
/* torch.index_select: picks idx (1-D) along dim. */
Var *bertc_ag_index_select(Graph *g, Var *a, int dim, const ITensor *idx);
/* torch.gather: out[i][j][k] = a[i][idx[i][j][k]][k] for dim 1 (and so on);
 * idx has a's number of dims, its shape is the output shape. */
Var *bertc_ag_gather(Graph *g, Var *a, int dim, const ITensor *idx);
/* out = a where mask == 0, value where mask != 0; mask broadcasts to a. */
Var *bertc_ag_masked_fill(Graph *g, Var *a, const ITensor *mask, float value);

/* Reductions and row ops (ops_reduce.c). dim = AG_ALL_DIMS reduces to a scalar
 * (shape [] with numel 1). */
#define AG_ALL_DIMS (-100)
Var *bertc_ag_sum(Graph *g, Var *a, int dim, bool keepdim);
Var *bertc_ag_mean(Graph *g, Var *a, int dim, bool keepdim);
Var *bertc_ag_softmax(Graph *g, Var *a);       /* over the last dim */
Var *bertc_ag_log_softmax(Graph *g, Var *a);   /* over the last dim */
/* LayerNorm over the last dim; gamma, beta (H) may be NULL. */
Var *bertc_ag_layernorm(Graph *g, Var *x, Var *gamma, Var *beta, float eps);

/* Layers (ops_layers.c) */
/* Inverted dropout: in training, zero each element with probability p (drawn
 * from g->rng) and scale the survivors by 1/(1-p); identity in eval. */
Var *bertc_ag_dropout(Graph *g, Var *a, float p);
/* x (B, Cin, L), w (Cout, Cin, k), bias (Cout) or NULL -> (B, Cout, L);
 * stride 1, zero padding (k-1)/2 on both sides (k odd). */
Var *bertc_ag_conv1d(Graph *g, Var *x, Var *w, Var *bias);

/* Losses (ops_loss.c). Each returns a scalar Var. Accumulation in double. */
/* logits (N, C), target (N): mean over rows whose target != ignore_index. */
Var *bertc_ag_cross_entropy(Graph *g, Var *logits, const ITensor *target, int ignore_index);
/* p, target same shape; mean of -(y ln p + (1-y) ln(1-p)) with logs clamped at
 * -100, as torch.nn.BCELoss. reduction_sum: sum instead of mean. */
Var *bertc_ag_bce(Graph *g, Var *p, const Tensor *target, bool reduction_sum);
/* z, target same shape: mean of max(z,0) - z y + log(1 + exp(-|z|)). */
Var *bertc_ag_bce_with_logits(Graph *g, Var *z, const Tensor *target);
/* a, target same shape: mean of (a - target)^2. */
Var *bertc_ag_mse(Graph *g, Var *a, const Tensor *target);
/* x (N, H), w (V, H), bias (V) or NULL, target (N): the value of
 * bertc_ag_cross_entropy(bertc_ag_linear(x, w, bias), target, ignore_index) without
 * storing the (N, V) logits (ops_linear_ce.c): the MLM decoder's loss. */
Var *bertc_ag_linear_cross_entropy(Graph *g, Var *x, Var *w, Var *bias, const ITensor *target,
                             int ignore_index);

/* Fused ops (ops_fused.c).
 * add_layernorm: a, b (..., H) of one shape, gamma, beta (H) or NULL ->
 * bertc_ag_layernorm(bertc_ag_add(a, b), gamma, beta, eps) in one pass over the rows; a
 * and b get the same gradient. The residual Add & Norm of a BERT layer. */
Var *bertc_ag_add_layernorm(Graph *g, Var *a, Var *b, Var *gamma, Var *beta, float eps);

/* ------------------------------------------------------------------------ */
/* Gradient checking (gradcheck.c)                                           */
/* ------------------------------------------------------------------------ */

/* Builds the op under test from its inputs and returns its output Var. */
typedef Var *(*GradcheckFn)(Graph *g, Var **inputs, void *user);

typedef struct GradcheckResult {
    bool ok;
    int input;            /* first failing input (or -1) */
    int64_t index;        /* flat index in it */
    double analytic, numeric;
    double max_abs_err;   /* over all checked entries */
    char msg[256];
} GradcheckResult;

/* Compares the tape's gradient of f(x) = sum_i w_i out_i (w fixed random
 * weights) with central differences (f(x+eps) - f(x-eps)) / 2eps evaluated in
 * double, for every entry of every input whose requires_grad is set.
 * Passes when |analytic - numeric| <= atol + rtol * |numeric| everywhere.
 * The graph RNG is re-seeded before every evaluation so dropout masks repeat.
 * The graph is reset between evaluations, so inputs (and anything `user`
 * points to) must live outside it: make them with bertc_ag_param. An input whose
 * requires_grad is false is passed through unchecked. */
GradcheckResult bertc_ag_gradcheck(Graph *g, GradcheckFn fn, Var **inputs, int n_inputs,
                             void *user, float eps, double atol, double rtol);

#endif /* BERTC_AUTOGRAD_H */
