/* autograd/tape.c — Vars, the Graph, recording nodes and walking them back. */
#include "autograd/autograd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

Graph *bertc_ag_graph_create(size_t step_bytes, uint64_t seed)
{
    Arena *step = bertc_arena_create("step", step_bytes);   /* first: it may stop (bertc_fatal) */
    Graph *g = bertc_sys_alloc(sizeof *g);
    if (!g) {
        bertc_arena_destroy(step);
        bertc_fatal("bertc_ag_graph_create: out of memory");
    }
    bertc_ag_graph_init(g, step, seed);
    return g;
}

void bertc_ag_graph_init(Graph *g, Arena *step, uint64_t seed)
{
    memset(g, 0, sizeof *g);
    g->step = step;
    g->training = true;
    g->rng = bertc_rng_seed(seed);
}

void bertc_ag_graph_destroy(Graph *g)
{
    if (!g)
        return;
    bertc_arena_destroy(g->step);
    bertc_sys_free(g);
}

void bertc_ag_graph_reset(Graph *g)
{
    bertc_arena_reset(g->step);
    g->tail = NULL;
    g->n_nodes = 0;
}

bool bertc_ag_set_no_grad(Graph *g, bool no_grad)
{
    bool old = g->no_grad;
    g->no_grad = no_grad;
    return old;
}

bool bertc_ag_set_bf16(Graph *g, bool bf16)
{
    bool old = g->bf16;
    g->bf16 = bf16;
    return old;
}

bool bertc_ag_set_lean(Graph *g, bool lean)
{
    bool old = g->lean;
    g->lean = lean;
    return old;
}

void bertc_ag_set_training(Graph *g, bool training) { g->training = training; }

Var *bertc_ag_param(Arena *persistent, int ndim, const int64_t *shape, const char *name)
{
    Var *v = bertc_arena_calloc(persistent, 1, sizeof *v);
    v->value = bertc_tensor_new(persistent, ndim, shape);
    v->home = persistent;
    v->requires_grad = true;
    v->persistent = true;
    v->name = name;
    return v;
}

Var *bertc_ag_tensor(Graph *g, int ndim, const int64_t *shape, bool requires_grad)
{
    Var *v = bertc_arena_calloc(g->step, 1, sizeof *v);
    v->value = bertc_tensor_new(g->step, ndim, shape);
    v->requires_grad = requires_grad;
    return v;
}

Var *bertc_ag_constant(Graph *g, Tensor value)
{
    Var *v = bertc_arena_calloc(g->step, 1, sizeof *v);
    v->value = value;
    return v;
}

float *bertc_ag_grad(Graph *g, Var *v)
{
    if (v->home)
        return bertc_ag_param_grad(v);
    if (!v->grad)
        v->grad = bertc_arena_calloc(g->step, (size_t)v->value.numel, sizeof(float));
    return v->grad;
}

float *bertc_ag_grad_full(Graph *g, Var *v, bool *accumulate)
{
    *accumulate = v->home || v->grad;
    if (*accumulate)
        return bertc_ag_grad(g, v);
    v->grad = bertc_arena_alloc(g->step, sizeof(float) * (size_t)v->value.numel);
    return v->grad;
}

bool bertc_ag_grad_share(Var *v, float *grad)
{
    if (v->home || v->grad)
        return false;
    v->grad = grad;
    return true;
}

float *bertc_ag_param_grad(Var *param)
{
    if (!param->home)
        bertc_fatal("bertc_ag_param_grad: '%s' is not a parameter (make it with bertc_ag_param)",
                    param->name ? param->name : "?");
    if (!param->grad)
        param->grad = bertc_arena_calloc(param->home, (size_t)param->value.numel, sizeof(float));
    return param->grad;
}

void bertc_ag_zero_grad(Var *v)
{
    if (v->grad)
        memset(v->grad, 0, sizeof(float) * (size_t)v->value.numel);
}

Var *bertc_ag_result(Graph *g, int ndim, const int64_t *shape, Var **inputs, int n_in)
{
    Var *out = bertc_arena_calloc(g->step, 1, sizeof *out);
    out->value = bertc_tensor_empty(g->step, ndim, shape);
    for (int i = 0; i < n_in && !g->no_grad; i++)
        if (inputs[i] && inputs[i]->requires_grad)
            out->requires_grad = true;
    return out;
}

Node *bertc_ag_record(Graph *g, OpId op, Var *out, Var **inputs, int n_in)
{
    if (!out->requires_grad)
        return NULL;
    Node *node = bertc_arena_calloc(g->step, 1, sizeof *node);
    node->op = op;
    node->out = out;
    node->n_in = n_in;
    node->in = bertc_arena_alloc(g->step, sizeof(Var *) * (size_t)(n_in ? n_in : 1));
    memcpy(node->in, inputs, sizeof(Var *) * (size_t)n_in);
    node->prev = g->tail;
    g->tail = node;
    g->n_nodes++;
    return node;
}

_Noreturn void bertc_ag_shape_error(const char *op, const char *what, const Var *a, const Var *b)
{
    char sa[SHAPE_STR_LEN], sb[SHAPE_STR_LEN] = "";
    bertc_shape_str(sa, sizeof sa, a->value.ndim, a->value.shape);
    if (b)
        bertc_shape_str(sb, sizeof sb, b->value.ndim, b->value.shape);
    bertc_fatal("%s: %s (shapes %s%s%s)", op, what, sa, b ? " and " : "", sb);
}

/* Walk the tape newest-first. A node whose output never received a gradient
 * (it does not reach the loss) is skipped: its backward would add zeros. */
void bertc_ag_backward_seeded(Graph *g, Var *out, const float *seed)
{
    if (!out->requires_grad)
        bertc_fatal("backward: the output does not require grad (no parameter "
                    "reaches it, or it was computed in no_grad mode)");
    bool accumulate;
    float *grad = bertc_ag_grad_full(g, out, &accumulate);
    for (int64_t i = 0; i < out->value.numel; i++)
        grad[i] = (accumulate ? grad[i] : 0.0f) + seed[i];
    for (Node *node = g->tail; node; node = node->prev) {
        if (!node->out->grad)
            continue;
        bertc_ag_op_table[node->op].backward(g, node);
    }
}

void bertc_ag_backward(Graph *g, Var *loss)
{
    if (loss->value.numel != 1) {
        char s[SHAPE_STR_LEN];
        bertc_fatal("backward: loss must have one element, got shape %s; "
                    "reduce it with bertc_ag_sum or bertc_ag_mean first",
                    bertc_shape_str(s, sizeof s, loss->value.ndim, loss->value.shape));
    }
    const float one = 1.0f;
    bertc_ag_backward_seeded(g, loss, &one);
}
