/* autograd/gradcheck.c — compare the tape's gradients with central finite
 * differences.
 *
 * The checked function is f(x) = sum_i w_i out_i(x) with fixed random weights
 * w in [-1, 1]: a random projection catches a wrong gradient for any output
 * element, not just for their sum. f is accumulated in double outside the
 * graph, so the only float rounding in a difference quotient is the op's own. */
#include "autograd/autograd.h"
#include "tensor/format_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define GRADCHECK_SEED 0x5eedULL

/* One forward evaluation: f = sum w_i out_i, on a fresh graph. */
static double evaluate(Graph *g, GradcheckFn fn, Var **inputs, void *user,
                       const float *w, int64_t n_out)
{
    bertc_ag_graph_reset(g);
    g->rng = bertc_rng_seed(GRADCHECK_SEED);
    bool old = bertc_ag_set_no_grad(g, true);
    Var *out = fn(g, inputs, user);
    bertc_ag_set_no_grad(g, old);
    if (out->value.numel != n_out)
        bertc_fatal("gradcheck: the function's output size changed (%lld then %lld)",
                    (long long)n_out, (long long)out->value.numel);
    double f = 0.0;
    for (int64_t i = 0; i < n_out; i++)
        f += (double)w[i] * out->value.data[i];
    return f;
}

static void record_failure(GradcheckResult *r, int input, int64_t index, double analytic,
                           double numeric, const char *name)
{
    r->ok = false;
    r->input = input;
    r->index = index;
    r->analytic = analytic;
    r->numeric = numeric;
    snprintf(r->msg, sizeof r->msg,
             "gradient of input %d (%s) at flat index %lld: backward %.8g, "
             "finite differences %.8g",
             input, name ? name : "unnamed", (long long)index, analytic, numeric);
}

GradcheckResult bertc_ag_gradcheck(Graph *g, GradcheckFn fn, Var **inputs, int n_inputs,
                             void *user, float eps, double atol, double rtol)
{
    GradcheckResult r = {.ok = true, .input = -1, .index = -1};
    for (int k = 0; k < n_inputs; k++)
        if (!inputs[k]->persistent)
            bertc_fatal("gradcheck: input %d is not persistent; make inputs with bertc_ag_param", k);

    /* Analytic gradients: one backward with the random seed w. */
    bertc_ag_graph_reset(g);
    g->rng = bertc_rng_seed(GRADCHECK_SEED);
    for (int k = 0; k < n_inputs; k++)
        bertc_ag_zero_grad(inputs[k]);
    Var *out = fn(g, inputs, user);
    int64_t n_out = out->value.numel;
    /* w must survive the graph resets below, so it is not in the step arena. */
    float *w = bertc_sys_alloc(sizeof(float) * (size_t)n_out);
    if (!w)
        bertc_fatal("gradcheck: out of memory");
    Rng wr = bertc_rng_seed(12345);
    for (int64_t i = 0; i < n_out; i++)
        w[i] = (float)(2.0 * bertc_rng_uniform(&wr) - 1.0);
    bertc_ag_backward_seeded(g, out, w);

    for (int k = 0; k < n_inputs; k++) {
        Var *x = inputs[k];
        if (!x->requires_grad)
            continue;
        for (int64_t i = 0; i < x->value.numel; i++) {
            float saved = x->value.data[i];
            x->value.data[i] = saved + eps;
            double f_plus = evaluate(g, fn, inputs, user, w, n_out);
            x->value.data[i] = saved - eps;
            double f_minus = evaluate(g, fn, inputs, user, w, n_out);
            x->value.data[i] = saved;
            /* divide by the step actually taken (x +- eps rounds in float) */
            double h = (double)(saved + eps) - (double)(saved - eps);
            double numeric = (f_plus - f_minus) / h;
            double analytic = x->grad ? x->grad[i] : 0.0;   /* NULL: never reached */
            double err = fabs(analytic - numeric);
            if (err > r.max_abs_err)
                r.max_abs_err = err;
            if (r.ok && !(err <= atol + rtol * fabs(numeric)))
                record_failure(&r, k, i, analytic, numeric, x->name);
        }
    }
    bertc_sys_free(w);
    bertc_ag_graph_reset(g);
    return r;
}
