/* nn/state.c — a registry's parameters from an open safetensors, by name
 * (files and checkpoints: nn/state_file.c).
 *
 * Loading rules (SPEC §5): a missing parameter is an error naming it, unless
 * the caller asks to keep missing ones at their init (HF's fresh classifier
 * heads), and then one warning lists them; a shape mismatch is an error naming
 * the key and both shapes; keys the model does not use produce one warning
 * listing them; tied aliases and buffers in the file are accepted. */
#include "nn/state.h"
#include "tensor/format_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Append "name" to a comma-separated list in buf, eliding past the end. */
static void list_append(char *buf, size_t len, const char *name)
{
    size_t used = strlen(buf);
    if (used + 8 >= len)
        return;
    if (used + strlen(name) + 8 >= len) {
        if (!strstr(buf, ", ..."))
            snprintf(buf + used, len - used, ", ...");
        return;
    }
    snprintf(buf + used, len - used, "%s%s", used ? ", " : "", name);
}

/* The renames a load applies, the NULL entries of LoadOptions.renames left
 * out. Spelling `combo` of a name applies renames k whose bit k is set, in
 * order; combo 0 is the name itself. */
typedef struct Spellings {
    NameRename fn[LOAD_RENAMES_MAX];
    int n;
} Spellings;

#define NAME_LEN 512

static Spellings spellings_of(const LoadOptions *opts)
{
    Spellings sp = {.n = 0};
    for (int k = 0; opts && k < LOAD_RENAMES_MAX; k++)
        if (opts->renames[k])
            sp.fn[sp.n++] = opts->renames[k];
    return sp;
}

/* false when one of the renames of combo does not apply to the name. */
static bool spell(const Spellings *sp, unsigned combo, const char *name, char *out, size_t len)
{
    char tmp[NAME_LEN];
    if ((size_t)snprintf(out, len, "%s", name) >= len)
        return false;
    for (int k = 0; k < sp->n; k++) {
        if (!(combo >> k & 1u))
            continue;
        if (!sp->fn[k](out, tmp, sizeof tmp) || (size_t)snprintf(out, len, "%s", tmp) >= len)
            return false;
    }
    return true;
}

/* The file entry for parameter i: its own name or one other spelling
 * (another parameter's own name is not one), or for a tied owner the
 * alias's name. Two spellings in the file are an error; NULL *out: none. */
static int find_entry(const Registry *r, int i, const SafeTensors *st, const Spellings *sp,
                      const StTensorInfo **out, BertcError *err)
{
    const Param *p = &r->params[i];
    const StTensorInfo *t = NULL;
    char alt[NAME_LEN];
    for (unsigned combo = 0; combo < 1u << sp->n; combo++) {
        const StTensorInfo *f = spell(sp, combo, p->name, alt, sizeof alt) ? bertc_st_find(st, alt)
                                                                            : NULL;
        if (!f || f == t || (combo && bertc_registry_find(r, alt) >= 0))
            continue;
        if (t)
            return bertc_errorf(err, "%s: '%s' and '%s' are two spellings of parameter '%s': "
                                "the file must hold one", st->name, t->name, f->name, p->name);
        t = f;
    }
    for (int j = 0; !t && j < r->n_params; j++)
        if (r->params[j].alias_of == i)
            t = bertc_st_find(st, r->params[j].name);
    *out = t;
    return 0;
}

/* The file entry t must have the shape of parameter p (for a tied alias or
 * an alternative spelling, of the parameter it names). */
static int check_shape(const Param *p, const SafeTensors *st, const StTensorInfo *t,
                       BertcError *err)
{
    const Tensor *v = &p->var->value;
    if (bertc_shape_equal(v->ndim, v->shape, t->ndim, t->shape))
        return 0;
    char want[SHAPE_STR_LEN], got[SHAPE_STR_LEN];
    return bertc_errorf(err, "%s: '%s' has shape %s in the file but the model needs %s",
                        st->name, t->name, bertc_shape_str(got, sizeof got, t->ndim, t->shape),
                        bertc_shape_str(want, sizeof want, v->ndim, v->shape));
}

static int load_param(const Param *p, const SafeTensors *st, const StTensorInfo *t,
                      BertcError *err)
{
    const Tensor *v = &p->var->value;
    if (check_shape(p, st, t, err) != 0)
        return -1;
    if (t->dtype == ST_I8)
        return bertc_errorf(err, "%s: '%s' is int8 (I8) in the file where the model reads "
                            "float32: int8 weights are read only for a Linear weight or the word "
                            "embeddings of a model whose config.json has a quantization_config "
                            "(docs/quantization.md)", st->name, t->name);
    if (bertc_st_read_f32(st, t, v->data, (size_t)v->numel, err) != 0)
        return -1;
    /* A NaN or an infinity in a weight can only make the outputs NaN, and
     * training would spread it to every weight: refuse it, naming where. */
    for (int64_t k = 0; k < v->numel; k++) {
        if (isfinite(v->data[k]))
            continue;
        char at[SHAPE_STR_LEN];
        return bertc_errorf(err, "%s: '%s'%s is %g: weights must be finite", st->name, t->name,
                            bertc_index_str(at, sizeof at, v->ndim, v->shape, k), v->data[k]);
    }
    return 0;
}

/* The parameter a file key names (itself, a tied alias or another spelling
 * of it), or -1 if the model does not know the key. */
static int key_param(const Registry *r, const char *key, const Spellings *sp)
{
    int i = bertc_registry_find(r, key);
    if (i >= 0)
        return i;
    char alt[NAME_LEN];
    for (i = 0; i < r->n_params; i++)
        for (unsigned combo = 1; combo < 1u << sp->n; combo++)
            if (spell(sp, combo, r->params[i].name, alt, sizeof alt) && strcmp(alt, key) == 0)
                return i;
    return -1;
}

int bertc_registry_load(Registry *r, const SafeTensors *st, const LoadOptions *opts, BertcError *err)
{
    bertc_registry_require_unpacked(r, "bertc_registry_load");
    Spellings sp = spellings_of(opts);
    char missing[BERTC_ERROR_LEN - 128] = "";
    int n_missing = 0;
    for (int i = 0; i < r->n_params; i++) {
        const Param *p = &r->params[i];
        if (p->alias_of >= 0)
            continue;
        const StTensorInfo *t = NULL;
        if (find_entry(r, i, st, &sp, &t, err) != 0)
            return -1;
        if (!t) {
            if (p->buffer)   /* computed by its module, e.g. positional encodings */
                continue;
            if (!opts || !opts->init_missing || p->int8) {
                char s[SHAPE_STR_LEN];
                const Tensor *v = &p->var->value;
                return bertc_errorf(err, "%s: missing parameter '%s' (shape %s)", st->name,
                                    p->name, bertc_shape_str(s, sizeof s, v->ndim, v->shape));
            }
            list_append(missing, sizeof missing, p->name);
            n_missing++;
            continue;
        }
        if (p->int8 ? bertc_registry_load_int8(r, i, st, t, err) != 0
                    : load_param(p, st, t, err) != 0)
            return -1;
    }
    if (n_missing)
        bertc_warn("%s: %d parameters not in the file were initialised: %s", st->name,
                   n_missing, missing);
    char unused[BERTC_ERROR_LEN - 128] = "";
    int n_unused = 0;
    /* A key the model knows but did not read (a tied alias beside its owner)
     * is not silently skipped: it must at least have its parameter's shape,
     * as PyTorch's load_state_dict checks every key. */
    for (size_t k = 0; k < st->n_tensors; k++) {
        const StTensorInfo *t = &st->tensors[k];
        int i = key_param(r, t->name, &sp);
        if (i >= 0 && check_shape(&r->params[i], st, t, err) != 0)
            return -1;
        if (i < 0 && bertc_registry_int8_scale_key(r, t->name))
            continue;
        if (i < 0) {
            list_append(unused, sizeof unused, t->name);
            n_unused++;
        }
    }
    if (n_unused && !(opts && opts->quiet_unused))
        bertc_warn("%s: %d unused keys: %s", st->name, n_unused, unused);
    return 0;
}
