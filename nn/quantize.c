/* nn/quantize.c — which weights a quantised model holds as int8, and
 * quantising them in memory (docs/quantization.md).
 *
 * The plan (what `bertc quantize` writes as I8): every Linear weight of an
 * encoder (its full name contains "encoder."), untied, unless the caller
 * keeps it. The encoder's Linears hold nearly all of a forward's
 * multiply-adds (BERT-base: 72 of its 74 Linears, all but the pooler and the
 * classifier). The heads and the pooler stay float32: they run on one row
 * per sequence or have a handful of outputs, so int8 would save no time, and
 * their outputs are the logits a decision is read from. LayerNorms are not
 * Linears: they stay float32 too.
 *
 * On request (bertc_registry_int8_plan_embeddings, `bertc quantize
 * --embeddings`) the word embeddings too: not for speed (a lookup) but for
 * size, as they are most of a small model's bytes (V = 1000, H = 64: 256,000
 * bytes of float32, four times the 65,536 bytes of two layers' int8 Linear
 * weights with intermediate size 128). One scale per row (token), the
 * Linear weights' rounding. Position and token-type tables stay float32
 * (small, and added to every token). */
#include "nn/nn.h"

#include <string.h>

/* Module `name` (without ".weight") starts with `prefix` at a dot boundary. */
static bool under(const char *module, size_t len, const char *prefix)
{
    size_t n = strlen(prefix);
    return n > 0 && n <= len && strncmp(module, prefix, n) == 0 &&
           (n == len || module[n] == '.');
}

static bool tied(const Registry *r, int i)
{
    for (int j = 0; j < r->n_params; j++)
        if (r->params[j].alias_of == i)
            return true;
    return false;
}

/* Length of the module part of a Linear weight's name ("a.b.weight" -> 3). */
static size_t module_len(const char *name)
{
    size_t n = strlen(name), w = sizeof ".weight" - 1;
    return n > w && strcmp(name + n - w, ".weight") == 0 ? n - w : n;
}

int bertc_registry_int8_plan(const Registry *r, const char *const *keep, int n_keep,
                             bool *chosen, BertcError *err)
{
    int n = 0;
    for (int k = 0; k < n_keep; k++) {
        bool names_one = false;
        for (int i = 0; i < r->n_params && !names_one; i++)
            names_one = r->params[i].linear_weight &&
                        under(r->params[i].name, module_len(r->params[i].name), keep[k]);
        if (!names_one)
            return bertc_errorf(err, "--keep: '%.80s' names no Linear module of the model (give "
                                "a module's dotted name or a prefix of it, e.g. "
                                "bert.encoder.layer.11)", keep[k]);
    }
    for (int i = 0; i < r->n_params; i++) {
        const Param *p = &r->params[i];
        chosen[i] = p->linear_weight && !p->buffer && p->alias_of < 0 && !p->int8 &&
                    strstr(p->name, "encoder.") != NULL && !tied(r, i);
        for (int k = 0; k < n_keep && chosen[i]; k++)
            chosen[i] = !under(p->name, module_len(p->name), keep[k]);
        n += chosen[i];
    }
    return n;
}

int bertc_registry_int8_plan_embeddings(const Registry *r, bool *chosen, BertcError *err)
{
    int n = 0;
    for (int i = 0; i < r->n_params; i++) {
        const Param *p = &r->params[i];
        if (!p->word_embeddings || p->int8 || p->alias_of >= 0)
            continue;
        for (int j = 0; j < r->n_params; j++)
            if (r->params[j].alias_of == i)
                return bertc_errorf(err, "'%s' is tied to '%s' (an output layer multiplies by "
                                    "it as a Linear weight): tied word embeddings stay float32",
                                    p->name, r->params[j].name);
        chosen[i] = true;
        n++;
    }
    if (n == 0)
        return bertc_errorf(err, "the model has no word embeddings to quantise");
    return n;
}

/* A Linear weight (out, in): quantised per output channel and packed. */
static void quantize_packed(Registry *r, Param *p, Arena *scratch)
{
    Tensor *W = &p->var->value;   /* (out, in) */
    int64_t out = W->shape[0], in = W->shape[1];
    QuantPackedB *pb = bertc_arena_alloc(r->arena, sizeof *pb);
    void *packed = bertc_arena_alloc(r->arena, bertc_qgemm_packed_bytes(out, in));
    ArenaMark mark = bertc_arena_mark(scratch);
    int8_t *q = bertc_arena_alloc(scratch, (size_t)(out * in));
    float *scale = bertc_arena_alloc(scratch, sizeof(float) * (size_t)out);
    bertc_quantize_rows(W->data, out, in, in, q, scale);
    bertc_qgemm_pack_b(q, scale, out, in, packed, pb);
    bertc_arena_release(scratch, mark);
    p->qpacking = pb;
    p->var->qpacked = pb;
}

/* Word embeddings (V, H): quantised per row, kept as rows for the lookup.
 * A tied table (an MLM decoder reads it as a Linear weight) is misuse: the
 * plan never chooses it. */
static void quantize_table(Registry *r, Param *p)
{
    for (int j = 0; j < r->n_params; j++)
        if (r->params[j].var == p->var && r->params[j].alias_of >= 0)
            bertc_fatal("bertc_registry_quantize: '%s' is tied to '%s' and must stay float32 "
                        "(bertc_registry_int8_plan_embeddings refuses it)", p->name,
                        r->params[j].name);
    Tensor *E = &p->var->value;   /* (V, H) */
    int64_t V = E->shape[0], H = E->shape[1];
    int8_t *q = bertc_arena_alloc(r->arena, (size_t)(V * H));
    float *scale = bertc_arena_alloc(r->arena, sizeof(float) * (size_t)V);
    bertc_quantize_rows(E->data, V, H, H, q, scale);
    p->var->qrows = q;
    p->var->qrow_scale = scale;
}

int bertc_registry_quantize(Registry *r, const bool *chosen, Arena *scratch)
{
    bertc_registry_require_unpacked(r, "bertc_registry_quantize");
    int n = 0;
    for (int i = 0; i < r->n_params; i++) {
        Param *p = &r->params[i];
        if (!chosen[i] || !(p->linear_weight || p->word_embeddings) || p->int8 ||
            p->alias_of >= 0)
            continue;
        if (p->linear_weight)
            quantize_packed(r, p, scratch);
        else
            quantize_table(r, p);
        p->var->value.data = NULL;   /* its float values are no longer the model's */
        p->int8 = true;
        n++;
    }
    r->n_int8 += n;
    return n;
}
