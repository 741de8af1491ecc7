/* nn/registry.c — the parameter registry: dotted names from a prefix stack,
 * init and counting (the printed module tree: nn/registry_file.c). */
#include "nn/nn.h"
#include "tensor/format_internal.h"

#include <stdarg.h>
#include <string.h>

/* Grow an arena-backed array to hold at least `need` items (the old copy is
 * left in the arena: registries are built once, at model construction). */
static void *grow(Arena *a, void *old, int *cap, int need, size_t item, int first)
{
    if (need <= *cap)
        return old;
    int new_cap = *cap ? *cap * 2 : first;
    while (new_cap < need)
        new_cap *= 2;
    void *fresh = bertc_arena_alloc(a, item * (size_t)new_cap);
    if (old)
        memcpy(fresh, old, item * (size_t)*cap);
    *cap = new_cap;
    return fresh;
}

static const char *arena_strdup(Arena *a, const char *s)
{
    size_t n = strlen(s) + 1;
    char *copy = bertc_arena_alloc(a, n);
    memcpy(copy, s, n);
    return copy;
}

const char *bertc_nn_format(Registry *r, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (!r->const_data || n < 0 || (size_t)n >= sizeof r->format_ring[0])
        return arena_strdup(r->arena, buf);
    char *slot = r->format_ring[r->format_next];
    r->format_next = (r->format_next + 1) % 4;
    memcpy(slot, buf, (size_t)n + 1);
    return slot;
}

static int add_module(Registry *r, const char *attr, const char *repr, bool leaf)
{
    if (r->const_data && r->n_modules > 0)
        return 0;   /* no tree: what nn_pop writes goes to the root's entry */
    r->modules = grow(r->book, r->modules, &r->cap_modules, r->n_modules + 1,
                      sizeof(ModuleInfo), r->const_data ? 1 : 64);
    ModuleInfo *m = &r->modules[r->n_modules];
    m->attr = attr ? arena_strdup(r->arena, attr) : NULL;
    m->repr = r->const_data ? "" : arena_strdup(r->arena, repr);
    m->depth = r->depth;
    m->leaf = leaf;
    m->first_param = m->end_param = r->n_params;
    return r->n_modules++;
}

Registry *bertc_registry_create(Arena *arena, const char *root_repr)
{
    Registry *r = bertc_arena_calloc(arena, 1, sizeof *r);
    r->arena = arena;
    r->book = arena;
    r->open[0] = add_module(r, NULL, root_repr, false);
    r->prefix_len[0] = 0;
    return r;
}

Registry *bertc_registry_create_const(Arena *arena, Arena *scratch, const char *root_repr,
                                      const struct ConstParam *table, int n)
{
    Arena *book = scratch ? scratch : arena;
    Registry *r = bertc_arena_calloc(book, 1, sizeof *r);
    r->arena = arena;
    r->book = book;
    r->const_data = true;
    r->const_table = table;
    r->n_const = table ? n : 0;
    r->open[0] = add_module(r, NULL, root_repr, false);
    r->prefix_len[0] = 0;
    return r;
}

Registry *bertc_registry_create_dry(Arena *arena, const char *root_repr)
{
    Registry *r = bertc_registry_create(arena, root_repr);
    r->dry_run = true;
    return r;
}

void bertc_nn_push(Registry *r, const char *attr, const char *repr, bool leaf)
{
    if (r->depth + 1 >= REGISTRY_MAX_DEPTH)
        bertc_fatal("bertc_nn_push: modules nested deeper than %d", REGISTRY_MAX_DEPTH);
    int len = r->prefix_len[r->depth];
    int n = snprintf(r->prefix + len, sizeof r->prefix - (size_t)len, "%s.", attr);
    if (n < 0 || (size_t)(len + n) >= sizeof r->prefix)
        bertc_fatal("bertc_nn_push: the dotted name under '%s' is too long", r->prefix);
    r->depth++;
    r->prefix_len[r->depth] = len + n;
    r->open[r->depth] = add_module(r, attr, repr, leaf);
}

void bertc_nn_pop(Registry *r)
{
    if (r->depth == 0)
        bertc_fatal("bertc_nn_pop: no module is open");
    r->modules[r->open[r->depth]].end_param = r->n_params;
    r->depth--;
    r->prefix[r->prefix_len[r->depth]] = '\0';
}

void bertc_nn_leaf(Registry *r, const char *attr, const char *repr)
{
    bertc_nn_push(r, attr, repr, true);
    bertc_nn_pop(r);
}

/* ---- the name index (Registry.by_name) ------------------------------- */

/* FNV-1a: a name's slot in the table. */
static uint32_t name_hash(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static void index_insert(Registry *r, int i)
{
    uint32_t mask = (uint32_t)r->by_name_cap - 1, k = name_hash(r->params[i].name) & mask;
    while (r->by_name[k])
        k = (k + 1) & mask;
    r->by_name[k] = i + 1;
}

/* Param i (the newest) into the index, which doubles (and is refilled) when
 * it would be more than half full. */
static void index_add(Registry *r, int i)
{
    if (r->const_data)
        return;
    if (2 * r->n_params > r->by_name_cap) {
        int cap = r->by_name_cap ? 2 * r->by_name_cap : 128;
        while (2 * r->n_params > cap)
            cap *= 2;
        r->by_name = bertc_arena_calloc(r->book, (size_t)cap, sizeof *r->by_name);
        r->by_name_cap = cap;
        for (int j = 0; j < r->n_params; j++)
            index_insert(r, j);
        return;
    }
    index_insert(r, i);
}

/* full_name's entry in the const table (NULL: none, or no table). */
static const char *const_name(const Registry *r, const char *full_name)
{
    for (int i = 0; i < r->n_const; i++)
        if (r->const_table[i].name && strcmp(r->const_table[i].name, full_name) == 0)
            return r->const_table[i].name;
    return NULL;
}

static Param *add_param(Registry *r, const char *full_name)
{
    if (bertc_registry_find(r, full_name) >= 0)
        bertc_fatal("bertc_nn_param: '%s' is registered twice", full_name);
    r->params = grow(r->book, r->params, &r->cap_params, r->n_params + 1, sizeof(Param),
                     r->n_const > 0 ? r->n_const : 64);
    Param *p = &r->params[r->n_params++];
    memset(p, 0, sizeof *p);
    p->name = const_name(r, full_name);
    if (!p->name)
        p->name = arena_strdup(r->arena, full_name);
    p->alias_of = -1;
    p->zero_row = -1;
    index_add(r, r->n_params - 1);
    return p;
}

static const char *full_name(Registry *r, const char *name, char *buf, size_t len)
{
    snprintf(buf, len, "%.*s%s", r->prefix_len[r->depth], r->prefix, name);
    return buf;
}

/* A const model's Vars, 8 at a time: a Var alone would be rounded up to the
 * arena's 64-byte blocks (136 -> 192 bytes on x86-64), 8 fill 17 exactly;
 * on a microcontroller that is kilobytes of RAM. */
enum { REGISTRY_VAR_BLOCK = 8 };

static Var *new_var(Registry *r)
{
    if (!r->const_data)
        return bertc_arena_calloc(r->arena, 1, sizeof(Var));
    if (r->var_block_left == 0) {
        r->var_block = bertc_arena_calloc(r->arena, REGISTRY_VAR_BLOCK, sizeof(Var));
        r->var_block_left = REGISTRY_VAR_BLOCK;
    }
    r->var_block_left--;
    return r->var_block++;
}

/* A dry run's Var: the shape without data, its element count in double. */
static Var *dry_param(Registry *r, int index, int ndim, const int64_t *shape)
{
    Var *v = new_var(r);
    double n = 1;
    v->value.ndim = ndim;
    for (int i = 0; i < ndim; i++) {
        v->value.shape[i] = shape[i];
        n *= (double)shape[i];
    }
    v->value.numel = n < 9e18 ? (int64_t)n : -1;   /* -1: beyond int64 */
    v->home = r->arena;
    v->requires_grad = true;
    v->persistent = true;
    v->name = r->params[index].name;
    r->dry_floats += n;
    if (n > r->dry_largest_floats) {
        r->dry_largest_floats = n;
        r->dry_largest = index;
    }
    return v;
}

Var *bertc_nn_param(Registry *r, const char *name, int ndim, const int64_t *shape, ParamInit init)
{
    char buf[600];
    Param *p = add_param(r, full_name(r, name, buf, sizeof buf));
    if (r->dry_run || r->const_data) {
        double floats = r->dry_floats;
        p->var = dry_param(r, r->n_params - 1, ndim, shape);
        if (r->const_data) {   /* filled by bertc_registry_bind_const */
            r->dry_floats = floats;
            p->var->requires_grad = false;
        }
    } else {
        p->var = bertc_ag_param(r->arena, ndim, shape, p->name);
    }
    p->init = init;
    r->modules[0].end_param = r->n_params;
    return p->var;
}

static bool held_int8(const Registry *r, const char *full)
{
    for (int i = 0; i < r->n_int8_names; i++)
        if (strcmp(r->int8_names[i], full) == 0)
            return true;
    return false;
}

/* An int8 weight's Var: its shape, no float data (the int8 values and
 * scales come with the load: Param.qpacking for a Linear weight, the Var's
 * qrows and qrow_scale for word embeddings). */
static Var *int8_param(Registry *r, const Param *p, int64_t out, int64_t in)
{
    Var *v = bertc_arena_calloc(r->arena, 1, sizeof *v);
    int64_t shape[2] = {out, in};
    v->value = bertc_tensor_view(NULL, 2, shape);
    v->home = r->arena;
    v->requires_grad = true;   /* so that a gradient pass through it is refused */
    v->persistent = true;
    v->name = p->name;
    return v;
}

/* A (rows, cols) weight of kind linear_weight or word_embeddings: a float32
 * parameter, or, when r->int8_names holds its full name, int8 without float
 * values. The Param is the last registered when it returns. */
static Var *weight_maybe_int8(Registry *r, const char *name, int64_t rows, int64_t cols)
{
    char buf[600];
    const char *full = full_name(r, name, buf, sizeof buf);
    if (r->dry_run || !held_int8(r, full)) {   /* const_data: bertc_nn_param leaves data NULL */
        int64_t shape[2] = {rows, cols};
        return bertc_nn_param(r, name, 2, shape, INIT_NORMAL);
    }
    Param *p = add_param(r, full);
    p->var = int8_param(r, p, rows, cols);
    p->init = INIT_KEEP;
    p->int8 = true;
    r->modules[0].end_param = r->n_params;
    return p->var;
}

Var *bertc_nn_linear_weight(Registry *r, const char *name, int64_t out, int64_t in)
{
    Var *v = weight_maybe_int8(r, name, out, in);
    r->params[r->n_params - 1].linear_weight = true;
    return v;
}

Var *bertc_nn_word_embedding_weight(Registry *r, const char *name, int64_t V, int64_t H)
{
    Var *v = weight_maybe_int8(r, name, V, H);
    r->params[r->n_params - 1].word_embeddings = true;
    return v;
}

Var *bertc_nn_buffer(Registry *r, const char *name, int ndim, const int64_t *shape)
{
    Var *v = bertc_nn_param(r, name, ndim, shape, INIT_KEEP);
    r->params[r->n_params - 1].buffer = true;
    v->requires_grad = false;
    return v;
}

void bertc_nn_tie(Registry *r, const char *name, Var *target)
{
    int owner = -1;
    for (int i = 0; i < r->n_params && owner < 0; i++)
        if (r->params[i].var == target && r->params[i].alias_of < 0)
            owner = i;
    if (owner < 0)
        bertc_fatal("bertc_nn_tie: '%s' ties to a tensor that is not registered", name);
    Param *p = add_param(r, name);
    p->var = target;
    p->alias_of = owner;
    p->init = INIT_KEEP;
    r->modules[0].end_param = r->n_params;
}

int bertc_registry_find(const Registry *r, const char *name)
{
    if (!r->by_name) {   /* a const registry */
        for (int i = 0; i < r->n_params; i++)
            if (strcmp(r->params[i].name, name) == 0)
                return i;
        return -1;
    }
    uint32_t mask = (uint32_t)r->by_name_cap - 1, k = name_hash(name) & mask;
    for (; r->by_name[k]; k = (k + 1) & mask)
        if (strcmp(r->params[r->by_name[k] - 1].name, name) == 0)
            return r->by_name[k] - 1;
    return -1;
}

void bertc_registry_init_weights(Registry *r, Rng *rng, float initializer_range)
{
    bertc_registry_require_unpacked(r, "bertc_registry_init_weights");
    for (int i = 0; i < r->n_params; i++) {
        Param *p = &r->params[i];
        Tensor *t = &p->var->value;
        if (p->alias_of >= 0)
            continue;
        float std = p->init_std > 0.0f ? p->init_std : initializer_range;
        for (int64_t k = 0; k < t->numel; k++) {
            switch (p->init) {
            case INIT_NORMAL: t->data[k] = (float)(std * bertc_rng_normal(rng)); break;
            case INIT_ZEROS: t->data[k] = 0.0f; break;
            case INIT_ONES: t->data[k] = 1.0f; break;
            case INIT_KEEP: break;
            }
        }
        if (p->zero_row >= 0) {
            int64_t row = t->numel / t->shape[0];
            memset(t->data + p->zero_row * row, 0, sizeof(float) * (size_t)row);
        }
    }
}

void bertc_registry_zero_grad(Registry *r)
{
    for (int i = 0; i < r->n_params; i++)
        if (r->params[i].alias_of < 0)
            bertc_ag_zero_grad(r->params[i].var);
}

int64_t bertc_registry_count(const Registry *r)
{
    int64_t n = 0;
    for (int i = 0; i < r->n_params; i++)
        if (!r->params[i].buffer && r->params[i].alias_of < 0)
            n += r->params[i].var->value.numel;
    return n;
}

