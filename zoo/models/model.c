/* zoo/models/model.c — the Model life cycle: its size, build, forward and backward. */
#include "zoo/zoo.h"
#include "tensor/format_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- the size of a model, before it is built ------------------------- */

typedef struct SizeKey {
    const char *key;
    int value;
} SizeKey;

/* The integer config keys that may size a tensor: the common sizes and the
 * architecture's own integer keys. */
static int size_keys(const ModelArch *arch, const BertConfig *c, SizeKey *keys, int cap)
{
    int n = 0;
    keys[n++] = (SizeKey){"vocab_size", c->vocab_size};
    keys[n++] = (SizeKey){"hidden_size", c->hidden_size};
    keys[n++] = (SizeKey){"intermediate_size", c->intermediate_size};
    keys[n++] = (SizeKey){"max_position_embeddings", c->max_position_embeddings};
    keys[n++] = (SizeKey){"type_vocab_size", c->type_vocab_size};
    keys[n++] = (SizeKey){"num_labels", c->num_labels};
    for (int i = 0; i < arch->n_keys && n < cap; i++)
        if (arch->keys[i].kind == CONFIG_INT && arch->keys[i].range != RANGE_TOKEN_ID)
            keys[n++] = (SizeKey){arch->keys[i].key,
                                  (int)bertc_config_key_value(&arch->keys[i], c->model.bytes)};
    return n;
}

/* The largest dimension of t that key value v gives, directly or as a factor
 * (query_layer is [H, query_len·H], span_pos_emb [3·sbo_max_span_length,
 * H]); 0: none. A value of 1 gives no dimension worth naming. */
static int64_t dim_of(int64_t v, int64_t H, const Tensor *t)
{
    int64_t best = 0;
    for (int d = 0; v > 1 && d < t->ndim; d++) {
        int64_t x = t->shape[d];
        if (x > best && (x == v || x == 3 * v || x == v * H))
            best = x;
    }
    return best;
}

/* "pe_max_len 100000000, hidden_size 768": the keys whose value is a
 * dimension of t, or a factor of one, the largest dimension's first. */
static void keys_of(const ModelArch *arch, const BertConfig *c, const Tensor *t, char *buf,
                    size_t cap)
{
    SizeKey keys[32];
    int64_t dim[32];
    int n = size_keys(arch, c, keys, 32);
    for (int k = 0; k < n; k++)
        dim[k] = dim_of(keys[k].value, c->hidden_size, t);
    size_t at = 0;
    buf[0] = '\0';
    for (;;) {
        int best = -1;
        for (int k = 0; k < n; k++)
            if (dim[k] > 0 && (best < 0 || dim[k] > dim[best]))
                best = k;
        if (best < 0 || at >= cap)
            return;
        at += (size_t)snprintf(buf + at, cap - at, "%s%s %d", at ? ", " : "", keys[best].key,
                               keys[best].value);
        dim[best] = 0;
    }
}

/* Layer counts up to this are not measured: a dry run of them is cheap. */
#define MODEL_LAYERS_UNMEASURED 64

/* A key that counts layers: num_hidden_layers (key NULL) or one of the
 * architecture's RANGE_LAYERS keys. */
typedef struct LayerKey {
    const ConfigKey *key;
    const char *name;
    int64_t value;
} LayerKey;

static int layer_keys(const ModelArch *arch, const BertConfig *cfg, LayerKey *keys, int cap)
{
    int n = 0;
    keys[n++] = (LayerKey){NULL, "num_hidden_layers", cfg->num_hidden_layers};
    for (int i = 0; i < arch->n_keys && n < cap; i++) {
        const ConfigKey *k = &arch->keys[i];
        if (k->kind == CONFIG_INT && (k->range == RANGE_LAYERS || k->range == RANGE_LAYERS_OR_0))
            keys[n++] = (LayerKey){k, k->key, (int64_t)bertc_config_key_value(k, cfg->model.bytes)};
    }
    return n;
}

/* "'encoder.pos_emb.pe' [1, 200000000, 32], sized by pe_max_len 200000000":
 * the dry run's largest parameter and the keys behind its shape. */
static void largest_param(const ModelArch *arch, const BertConfig *cfg, const Registry *r,
                          char *buf, size_t cap)
{
    const Param *p = &r->params[r->dry_largest];
    char shape[SHAPE_STR_LEN], keys[256];
    bertc_shape_str(shape, sizeof shape, p->var->value.ndim, p->var->value.shape);
    keys_of(arch, cfg, &p->var->value, keys, sizeof keys);
    LayerKey layers[8];   /* many layers are many tensors: their counts are keys to lower too */
    int n = layer_keys(arch, cfg, layers, 8);
    for (int i = 0; i < n; i++) {
        size_t at = strlen(keys);
        if (layers[i].value > MODEL_LAYERS_UNMEASURED && at < sizeof keys)
            snprintf(keys + at, sizeof keys - at, "%s%s %lld", at ? ", " : "", layers[i].name,
                     (long long)layers[i].value);
    }
    snprintf(buf, cap, "'%s' %s, sized by %s", p->name, shape,
             keys[0] ? keys : "the layer counts");
}

static int too_big(const ModelArch *arch, const BertConfig *cfg, const Registry *r,
                   BertcError *err)
{
    char largest[BERTC_ERROR_LEN / 2];
    largest_param(arch, cfg, r, largest, sizeof largest);
    return bertc_errorf(err, "config: %s with num_hidden_layers %d asks for %.3g parameter "
                        "and buffer elements (%.3g GiB of float32), more than bertc's limit "
                        "of %.3g (64 GiB); the largest is %s: lower these keys",
                        cfg->architecture, cfg->num_hidden_layers, r->dry_floats,
                        r->dry_floats * 4.0 / 1073741824.0, MODEL_MAX_FLOATS, largest);
}

/* The dry run in `arena`: a registry that counts, and the architecture's
 * build into it (*r). */
static int dry_build(const ModelArch *arch, const BertConfig *cfg, Arena *arena, Registry **r,
                     BertcError *err)
{
    *r = bertc_registry_create_dry(arena, arch->name);
    return arch->build(*r, cfg, err) ? 0 : -1;
}

/* size_in's dry run, guarded: what it allocated in arena is released from
 * mark on whatever happens, so bertc_model_build can use the caller's arena
 * (a fixed one on bare metal, where there is no heap for another). */
static int dry_build_in(const ModelArch *arch, const BertConfig *cfg, Arena *arena,
                        ArenaMark mark, double *floats, BertcError *err)
{
    Registry *r = NULL;
    BertcCatch guard;
    bertc_catch_begin(&guard, err);
    if (setjmp(guard.env) != 0) {   /* a config too big for memory: err says so */
        bertc_arena_release(arena, mark);
        return -1;
    }
    int rc = dry_build(arch, cfg, arena, &r, err);
    bertc_catch_end(&guard);
    if (rc == 0 && r->dry_floats > MODEL_MAX_FLOATS)
        rc = too_big(arch, cfg, r, err);
    if (rc == 0)
        *floats = r->dry_floats;
    bertc_arena_release(arena, mark);
    return rc;
}

/* ---- the memory a config's layers take ------------------------------- */

static void set_layers(BertConfig *cfg, const LayerKey *k, int value)
{
    if (k->key)
        memcpy(bertc_config_key_ptr(cfg->model.bytes, k->key), &value, sizeof value);
    else
        cfg->num_hidden_layers = value;
}

/* The arena bytes a dry run of cfg takes (the arena is left as it was). */
static double dry_bytes(const ModelArch *arch, const BertConfig *cfg, Arena *arena,
                        BertcError *err)
{
    ArenaMark mark = bertc_arena_mark(arena);
    size_t before = bertc_arena_used(arena);
    Registry *r = NULL;
    BertcCatch guard;
    bertc_catch_begin(&guard, err);
    if (setjmp(guard.env) != 0) {   /* too big for memory: err says so */
        bertc_arena_release(arena, mark);
        return -1;
    }
    int rc = dry_build(arch, cfg, arena, &r, err);
    bertc_catch_end(&guard);
    double bytes = (double)bertc_arena_used(arena) - (double)before;
    bertc_arena_release(arena, mark);
    return rc == 0 ? bytes : -1;
}

/* HF bounds no layer count, and neither does bertc but by memory: each
 * layer registers its parameters (their names, shapes and records, ~12 KB
 * a BERT layer however narrow), so a count above MODEL_LAYERS_UNMEASURED is
 * measured, from dry runs of one and two layers, against the memory the
 * arenas may still take (and MODEL_MAX_FLOATS's 64 GiB) before its own dry
 * run would take it: an error naming the key. */
static int check_layers(const ModelArch *arch, const BertConfig *cfg, Arena *arena,
                        BertcError *err)
{
    LayerKey keys[8];
    int n = layer_keys(arch, cfg, keys, 8);
    BertConfig small = *cfg;
    bool big = false;
    for (int i = 0; i < n; i++)
        if (keys[i].value > MODEL_LAYERS_UNMEASURED) {
            set_layers(&small, &keys[i], 1);
            big = true;
        }
    if (!big)
        return 0;
    double base = dry_bytes(arch, &small, arena, err), need = base, worst = 0;
    int top = 0;
    for (int i = 0; i < n && base >= 0; i++) {
        if (keys[i].value <= MODEL_LAYERS_UNMEASURED)
            continue;
        BertConfig two = small;
        set_layers(&two, &keys[i], 2);
        double per = dry_bytes(arch, &two, arena, err) - base;
        if (per < 0)
            return -1;
        double all = per * (double)(keys[i].value - 1);
        need += all;
        if (all >= worst)
            worst = all, top = i;
    }
    if (base < 0)
        return -1;
    size_t limit = bertc_arena_memory_limit(), held = bertc_arena_memory_total();
    double budget = limit > held ? (double)(limit - held) : 0;
    if (budget > MODEL_MAX_FLOATS * 4)
        budget = MODEL_MAX_FLOATS * 4;
    if (need <= budget)
        return 0;
    return bertc_errorf(err, "config: %s %lld needs %.3g GiB for its layers' parameter records "
                        "alone (%.3g KiB a layer), more than the %.3g GiB bertc may take (the "
                        "memory there is, at most 64 GiB): lower %s", keys[top].name,
                        (long long)keys[top].value, need / 1073741824.0,
                        worst / (double)(keys[top].value - 1) / 1024.0, budget / 1073741824.0,
                        keys[top].name);
}

/* bertc_model_size with the dry run in `arena`; it leaves the arena as it was. */
static int size_in(const ModelArch *arch, const BertConfig *cfg, Arena *arena, double *floats,
                   BertcError *err)
{
    if (bertc_bert_config_check_as(arch, cfg, err) != 0 || check_layers(arch, cfg, arena, err) != 0)
        return -1;
    /* the dry run allocates names, Vars without data and the model's own
     * structs: ~12 KB a layer, the layer counts checked by check_layers */
    return dry_build_in(arch, cfg, arena, bertc_arena_mark(arena), floats, err);
}

/* The architecture cfg names; NULL and the config check's error (which
 * lists the known ones) when it names none. */
static const ModelArch *arch_named(const BertConfig *cfg, BertcError *err)
{
    const ModelArch *arch = bertc_zoo_arch(cfg->architecture);
    if (!arch && bertc_bert_config_check(cfg, err) == 0)
        bertc_errorf(err, "config: unknown architecture \"%.60s\"", cfg->architecture);
    return arch;
}

int bertc_model_size(const BertConfig *cfg, double *floats, BertcError *err)
{
    const ModelArch *arch = arch_named(cfg, err);
    if (!arch)
        return -1;
    Arena *arena = bertc_arena_create_checked("bertc_model_size", 1 << 16, err);
    if (!arena)
        return -1;
    int rc = size_in(arch, cfg, arena, floats, err);
    bertc_arena_destroy(arena);
    return rc;
}

void bertc_model_config_error(BertcError *err, const char *config_path)
{
    static const char prefix[] = "config: ";
    if (strncmp(err->msg, prefix, sizeof prefix - 1) != 0)
        return;
    char rest[BERTC_ERROR_LEN];
    snprintf(rest, sizeof rest, "%s", err->msg + sizeof prefix - 1);
    bertc_errorf(err, "%s: %s", config_path, rest);
}

/* ---- the life cycle ---------------------------------------------------- */

/* Each entry point below guards the call that runs the user's data
 * (bertc_catch_begin, tensor/tensor.h): a config or a batch too big for the
 * machine's memory, or an op that meets shapes a missing check let through,
 * is an error here, never an abort. */

/* The label names m->cfg shares with the config it was built from, when
 * they are not in the config itself, copied into the model's arena: the
 * model keeps them for its life, whatever happens to that config. */
static void keep_labels(Model *m, Arena *arena)
{
    size_t bytes;
    const char *text = bertc_bert_config_label_text(&m->cfg, &bytes);
    if (!m->cfg.label_spill || !text)
        return;
    char *copy = bertc_arena_alloc(arena, bytes);
    memcpy(copy, text, bytes);
    m->cfg.label_spill = copy;
    m->cfg.label_heap = false;
}

/* The registry m's parameters go into: a const model's over its tables, or
 * one that allocates them in arena. */
static Registry *new_registry(Arena *arena, const ModelArch *arch, const ConstBuild *cb,
                              const char *const *int8_names, int n_int8)
{
    Registry *r = cb ? bertc_registry_create_const(arena, cb->scratch, arch->name, cb->table,
                                                   cb->n_table)
                     : bertc_registry_create(arena, arch->name);
    r->int8_names = int8_names;
    r->n_int8_names = n_int8;
    return r;
}

int bertc_model_build(Model *m, Arena *arena, const BertConfig *cfg, BertcError *err)
{
    return bertc_model_build_int8(m, arena, cfg, NULL, 0, err);
}

/* The build ran out of memory (the arena's error, naming only the arena):
 * the error names instead the size, the memory free, and the largest
 * parameter with the config keys that sized it, from a dry run of its own. */
static void no_room(const ModelArch *arch, const BertConfig *cfg, double floats,
                    BertcError *err)
{
    BertcError dry_err;
    char largest[BERTC_ERROR_LEN / 2];
    Arena *arena = bertc_arena_create_checked("dry run", 1 << 16, &dry_err);
    if (!arena)
        return;   /* no memory even for that: the arena's error stays */
    Registry *r = NULL;
    BertcCatch guard;
    bertc_catch_begin(&guard, &dry_err);
    if (setjmp(guard.env) != 0) {
        bertc_arena_destroy(arena);
        return;
    }
    int rc = dry_build(arch, cfg, arena, &r, &dry_err);
    bertc_catch_end(&guard);
    if (rc == 0)
        largest_param(arch, cfg, r, largest, sizeof largest);
    bertc_arena_destroy(arena);
    if (rc != 0)
        return;
    bertc_errorf(err, "config: %s with num_hidden_layers %d needs %.3g GiB for its %.3g "
                 "parameter and buffer elements, more than the %.3g GiB of memory free; the "
                 "largest is %s: lower these keys", cfg->architecture, cfg->num_hidden_layers,
                 floats * 4.0 / 1073741824.0, floats,
                 (double)bertc_arena_memory_limit() / 1073741824.0, largest);
}

/* Every build, with the architecture in hand (never looked up here, so a
 * firmware that names its one architecture links no other); cb is a const
 * model's tables, or NULL. */
static int build_model(Model *m, Arena *arena, const ModelArch *arch, const BertConfig *cfg,
                       const char *const *int8_names, int n_int8, const ConstBuild *cb,
                       BertcError *err)
{
    /* A const model allocates no weights (they are in the caller's memory
     * already): the config's rules, without the dry run that sizes them. */
    double floats = 0;
    if (cb ? bertc_bert_config_check_as(arch, cfg, err) != 0
           : size_in(arch, cfg, arena, &floats, err) != 0)
        return -1;
    m->cfg = *cfg;
    m->cfg.label_heap = false;   /* the caller's to free: keep_labels copies them */
    m->arch = arch;
    m->reg = NULL;
    m->impl = NULL;
    BertcCatch guard;
    bertc_catch_begin(&guard, err);
    if (setjmp(guard.env) != 0) {   /* a model too big for memory: err says so */
        if (!cb && strstr(err->msg, "out of memory"))
            no_room(arch, cfg, floats, err);
        return -1;
    }
    if (!cb)   /* a const model's config is const data already */
        keep_labels(m, arena);
    m->reg = new_registry(arena, arch, cb, int8_names, n_int8);
    m->impl = arch->build(m->reg, &m->cfg, err);
    bertc_catch_end(&guard);
    return m->impl ? 0 : -1;
}

int bertc_model_build_int8(Model *m, Arena *arena, const BertConfig *cfg,
                           const char *const *int8_weights, int n, BertcError *err)
{
    const ModelArch *arch = arch_named(cfg, err);
    return arch ? build_model(m, arena, arch, cfg, int8_weights, n, NULL, err) : -1;
}

int bertc_model_build_const(Model *m, Arena *arena, const BertConfig *cfg, const ConstBuild *cb,
                            BertcError *err)
{
    if (strcmp(cb->arch->name, cfg->architecture) != 0)
        return bertc_errorf(err, "config: the architecture is %.60s, the model is built as %s",
                            cfg->architecture, cb->arch->name);
    return build_model(m, arena, cb->arch, cfg, cb->int8_names, cb->n_int8, cb, err);
}

/* The forward runs on a shallow copy of the batch (the tensors are shared)
 * that records every name the model looks up; an input it never looked up
 * is then an error rather than silently ignored. */
int bertc_model_forward(Model *m, Graph *g, const Batch *in, Outputs *out, BertcError *err)
{
    BatchLookups asked = {0};
    Batch seen = *in;
    seen.lookups = &asked;
    const bool final_only = g->final_only;   /* set before setjmp: restored either way */
    BertcCatch guard;
    bertc_catch_begin(&guard, err);
    if (setjmp(guard.env) != 0) {
        g->final_only = final_only;
        return -1;   /* too big for memory, or shapes an op cannot take: err says so */
    }
    g->final_only = out->final_only;   /* what the model's layers may skip (batch.h) */
    int rc = m->arch->forward(m->impl, &m->cfg, g, &seen, out, err);
    g->final_only = final_only;
    bertc_catch_end(&guard);
    if (rc != 0)
        return -1;
    return bertc_batch_check_all_read(&seen, m->arch->name, err);
}

/* ---- outputs that are not finite --------------------------------------- */

/* A LayerNorm ε of 0 (layer_norm_eps, or an architecture's own *_eps key):
 * PyTorch accepts it, but a constant row then normalizes 0 by sqrt(0). */
static bool zero_eps(const Model *m, char *cause, size_t cap)
{
    const char *key = m->cfg.layer_norm_eps <= 0 ? "layer_norm_eps" : NULL;
    for (int i = 0; !key && i < m->arch->n_keys; i++) {
        const ConfigKey *k = &m->arch->keys[i];
        if (k->kind == CONFIG_FLOAT && strstr(k->key, "eps") &&
            bertc_config_key_value(k, m->cfg.model.bytes) <= 0)
            key = k->key;
    }
    if (key)
        snprintf(cause, cap, "%s is 0, so a LayerNorm over a constant row computes 0/0; give "
                 "it a small positive value (BERT's is 1e-12)", key);
    return key != NULL;
}

/* A loss over no counted row is 0/0, as in PyTorch: the label inputs of
 * the batch and what the architecture says of their values. */
static void ignored_labels(const Model *m, const Batch *in, char *cause, size_t cap)
{
    size_t at = (size_t)snprintf(cause, cap, "a loss over no counted row is 0/0 (as in "
                                 "PyTorch): are all the labels ignored?");
    for (int i = 0; bertc_model_input(m->arch, i) && at < cap; i++) {
        const InputSpec *s = bertc_model_input(m->arch, i);
        if (s->label && bertc_batch_find(in, s->name))
            at += (size_t)snprintf(cause + at, cap - at, " %s: %s;", s->name, s->values);
    }
    if (at < cap && cause[at - 1] == ';')
        cause[at - 1] = '\0';
}

int bertc_outputs_check_finite(const Model *m, const Batch *in, const Outputs *out,
                               BertcError *err)
{
    for (int i = 0; i < out->n; i++) {
        const OutputItem *it = &out->items[i];
        const Tensor *t = it->is_int ? NULL : &it->var->value;
        int64_t k = 0;
        while (t && k < t->numel && isfinite(t->data[k]))
            k++;
        if (!t || k == t->numel)
            continue;
        char at[SHAPE_STR_LEN], cause[BERTC_ERROR_LEN / 2];
        at[0] = '\0';
        if (t->ndim > 0)
            bertc_index_str(at, sizeof at, t->ndim, t->shape, k);
        if (!zero_eps(m, cause, sizeof cause)) {
            if (strstr(it->name, "loss"))
                ignored_labels(m, in, cause, sizeof cause);
            else
                snprintf(cause, sizeof cause, "no known cause: do the weights or the inputs "
                         "hold values too large for float32?");
        }
        float v = t->data[k];
        return bertc_errorf(err, "%s: %s's output '%s'%s is %s: %s", in->source, m->arch->name,
                            it->name, at, isnan(v) ? "NaN" : v > 0 ? "+inf" : "-inf", cause);
    }
    return 0;
}

int bertc_model_backward(Graph *g, Var *loss, BertcError *err)
{
    BertcCatch guard;
    bertc_catch_begin(&guard, err);
    if (setjmp(guard.env) != 0)
        return -1;   /* a gradient too big for memory: err says so */
    bertc_ag_backward(g, loss);
    bertc_catch_end(&guard);
    return 0;
}
