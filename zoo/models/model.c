/* zoo/models/model.c — the Model life cycle: its size, build, forward and backward. */
#include "zoo/zoo.h"
#include "tensor/format_internal.h"

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

/* "hidden_size 768, pe_max_len 100000000": the keys whose value is a
 * dimension of t, or a factor of one (query_layer is [H, query_len·H],
 * span_pos_emb [3·sbo_max_span_length, H]). */
static void keys_of(const ModelArch *arch, const BertConfig *c, const Tensor *t, char *buf,
                    size_t cap)
{
    SizeKey keys[32];
    int n = size_keys(arch, c, keys, 32);
    size_t at = 0;
    buf[0] = '\0';
    for (int k = 0; k < n; k++) {
        int64_t v = keys[k].value, H = c->hidden_size;
        bool sizes = false;
        for (int d = 0; d < t->ndim; d++) {
            int64_t x = t->shape[d];
            sizes |= x > 1 && (x == v || x == 3 * v || x == v * H);
        }
        if (sizes && at < cap)
            at += (size_t)snprintf(buf + at, cap - at, "%s%s %d", at ? ", " : "", keys[k].key,
                                   keys[k].value);
    }
}

static int too_big(const ModelArch *arch, const BertConfig *cfg, const Registry *r,
                   BertcError *err)
{
    const Param *p = &r->params[r->dry_largest];
    char shape[SHAPE_STR_LEN], keys[256];
    bertc_shape_str(shape, sizeof shape, p->var->value.ndim, p->var->value.shape);
    keys_of(arch, cfg, &p->var->value, keys, sizeof keys);
    return bertc_errorf(err, "config: %s with num_hidden_layers %d asks for %.3g parameter "
                        "and buffer elements (%.3g GiB of float32), more than bertc's limit "
                        "of %.3g (64 GiB); the largest is '%s' %s, sized by %s: lower these "
                        "keys", cfg->architecture, cfg->num_hidden_layers,
                        r->dry_floats, r->dry_floats * 4.0 / 1073741824.0, MODEL_MAX_FLOATS,
                        p->name, shape, keys[0] ? keys : "the layer counts");
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

/* bertc_model_size with the dry run in `arena`; it leaves the arena as it was. */
static int size_in(const ModelArch *arch, const BertConfig *cfg, Arena *arena, double *floats,
                   BertcError *err)
{
    if (bertc_bert_config_check_as(arch, cfg, err) != 0)
        return -1;
    /* the dry run allocates names, Vars without data and the model's own
     * structs: a few KB per layer, the layer counts being bounded */
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

/* Every build, with the architecture in hand (never looked up here, so a
 * firmware that names its one architecture links no other); cb is a const
 * model's tables, or NULL. */
static int build_model(Model *m, Arena *arena, const ModelArch *arch, const BertConfig *cfg,
                       const char *const *int8_names, int n_int8, const ConstBuild *cb,
                       BertcError *err)
{
    /* A const model allocates no weights (they are in the caller's memory
     * already): the config's rules, without the dry run that sizes them. */
    double floats;
    if (cb ? bertc_bert_config_check_as(arch, cfg, err) != 0
           : size_in(arch, cfg, arena, &floats, err) != 0)
        return -1;
    m->cfg = *cfg;
    m->arch = arch;
    m->reg = NULL;
    m->impl = NULL;
    BertcCatch guard;
    bertc_catch_begin(&guard, err);
    if (setjmp(guard.env) != 0)
        return -1;   /* a model too big for memory: err says so */
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
    BertcCatch guard;
    bertc_catch_begin(&guard, err);
    if (setjmp(guard.env) != 0)
        return -1;   /* too big for memory, or shapes an op cannot take: err says so */
    int rc = m->arch->forward(m->impl, &m->cfg, g, &seen, out, err);
    bertc_catch_end(&guard);
    if (rc != 0)
        return -1;
    return bertc_batch_check_all_read(&seen, m->arch->name, err);
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
