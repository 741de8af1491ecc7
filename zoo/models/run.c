/* zoo/models/run.c — `bertc run`: config + weights + inputs -> outputs (+ gradients).
 * The parity tests call this same function, so what they check is exactly
 * what the command line does. */
#include "zoo/zoo.h"

#include <stdio.h>
#include <string.h>

/* Room for every output, and with --grad one "grad.<key>" per parameter key. */
static int output_file_reserve(EntryList *f, const Outputs *o, const Registry *r,
                               BertcError *err)
{
    size_t names = 1;
    for (int i = 0; i < r->n_params; i++)
        names += strlen(r->params[i].name) + 6;
    return bertc_entry_list_reserve(f, (size_t)(o->n + r->n_params + 1), names, err);
}

static void add_outputs(EntryList *f, const Outputs *o)
{
    for (int i = 0; i < o->n; i++) {
        const OutputItem *it = &o->items[i];
        bertc_entry_list_add(f, it->is_int ? bertc_st_entry_itensor(it->name, &it->ids)
                                     : bertc_st_entry_tensor(it->name, &it->var->value));
    }
}

/* grad.<key> for every parameter key; a tied alias repeats its owner's total
 * gradient under its own name. Buffers have no gradient. A parameter the
 * loss never reached has no gradient buffer (autograd allocates them
 * lazily): it gets `zeros`, which holds the largest parameter's size. */
static void add_gradients(EntryList *f, const Registry *r, const float *zeros)
{
    for (int i = 0; i < r->n_params; i++) {
        const Param *p = &r->params[i];
        if (!p->buffer)
            bertc_entry_list_add_f32(f, bertc_entry_list_name(f, "grad.", p->name), &p->var->value,
                               p->var->grad ? p->var->grad : zeros);
    }
}

/* Zeros the size of the largest parameter, in the step arena. */
static const float *zero_gradient(const Registry *r, Graph *g)
{
    int64_t n = 1;
    for (int i = 0; i < r->n_params; i++)
        if (r->params[i].var->value.numel > n)
            n = r->params[i].var->value.numel;
    return bertc_arena_calloc(g->step, (size_t)n, sizeof(float));
}

static int read_inputs(const char *path, Arena *arena, Batch *in, BertcError *err)
{
    SafeTensors *st;
    if (bertc_st_open_file(NULL, path, &st, err) != 0)
        return -1;
    bertc_batch_init(in, path);
    int rc = bertc_batch_from_safetensors(in, st, arena, err);
    bertc_st_close(st);
    return rc;
}

static void print_stats(const Arena *params, const Arena *inputs, const Graph *g)
{
    fprintf(stderr, "memory: parameters %.2f MiB, inputs %.2f MiB, step high-water %.2f MiB\n",
            bertc_arena_high_water(params) / 1048576.0, bertc_arena_high_water(inputs) / 1048576.0,
            bertc_arena_high_water(g->step) / 1048576.0);
    fprintf(stderr, "path: %s, %d thread%s\n", bertc_cpu_isa_name(bertc_cpu_isa()), bertc_threads_count(),
            bertc_threads_count() == 1 ? "" : "s");
}

static int run_model(const RunArgs *args, Model *m, Arena *inputs_arena, Graph *g,
                     BertcError *err)
{
    Batch in;
    Outputs out;
    if (read_inputs(args->inputs, inputs_arena, &in, err) != 0)
        return -1;
    bertc_ag_set_training(g, false);
    bertc_ag_set_no_grad(g, !args->grad);
    bertc_outputs_init(&out);
    if (bertc_model_forward(m, g, &in, &out, err) != 0 ||
        bertc_outputs_check_finite(m, &in, &out, err) != 0)
        return -1;
    if (args->grad) {
        Var *loss = bertc_outputs_get(&out, "loss");
        if (!loss)
            return bertc_errorf(err, "%s: --grad needs a loss: give the labels the model "
                                "needs", args->inputs);
        bertc_registry_zero_grad(m->reg);
        if (bertc_model_backward(g, loss, err) != 0)
            return -1;
    }
    /* allocated before the list, whose malloc must not be held across a
     * call that may stop (bertc_fatal, caught by bertc_zoo_run's guard) */
    const float *zeros = args->grad ? zero_gradient(m->reg, g) : NULL;
    EntryList f;
    int rc = output_file_reserve(&f, &out, m->reg, err);
    if (rc == 0) {
        add_outputs(&f, &out);
        if (args->grad)
            add_gradients(&f, m->reg, zeros);
        rc = bertc_st_write_file(args->output, f.entries, f.n, NULL, 0, err);
    }
    bertc_entry_list_free(&f);
    return rc;
}

/* What bertc_zoo_run creates, released by bertc_zoo_run whatever happens inside. */
typedef struct RunState {
    Arena *params, *inputs;
    Graph *g;
} RunState;

/* The model of args, run on its inputs, into s's arenas and graph. */
static int run_all(const RunArgs *args, RunState *s, BertcError *err)
{
    s->params = bertc_arena_create("params", 1 << 20);
    s->inputs = bertc_arena_create("inputs", 1 << 16);
    s->g = bertc_ag_graph_create(1 << 20, 0);
    Model m;
    if (bertc_model_open(&m, s->params, args->config, args->weights, err) != 0)
        return -1;
    if (run_model(args, &m, s->inputs, s->g, err) != 0)
        return -1;
    if (args->stats)
        print_stats(s->params, s->inputs, s->g);
    return 0;
}

/* run_all, guarded: a batch or model too big for memory is an error. s is
 * the caller's, so what run_all made before a fatal is still there to free
 * (a local here would be indeterminate after the jump). */
static int run_all_guarded(const RunArgs *args, RunState *s, BertcError *err)
{
    BertcCatch guard;
    bertc_catch_begin(&guard, err);
    if (setjmp(guard.env) != 0)
        return -1;   /* out of memory: err says so */
    int rc = run_all(args, s, err);
    bertc_catch_end(&guard);
    return rc;
}

int bertc_zoo_run(const RunArgs *args, BertcError *err)
{
    RunState s = {0};
    int rc = run_all_guarded(args, &s, err);
    bertc_ag_graph_destroy(s.g);
    bertc_arena_destroy(s.inputs);
    bertc_arena_destroy(s.params);
    return rc;
}
