/* zoo/models/model_const.c — a text classifier whose weights, config, vocabulary
 * and tokenizer index are const data (flash), run in one caller buffer:
 * what the model.c of `bertc export-c` calls (docs/embedded.md).
 *
 * The config is a const BertConfig too, read in place: no JSON parser on the
 * target. The buffer is split in fixed arenas:
 *   [0, packs)          GEMM pack buffers (fp32 A and B, int8 rows of A), taken
 *                       at init at the sizes the export measured, never grown
 *   model               what running the model needs of its build: a Var per
 *                       parameter (no weight data: flash; names point into
 *                       d->params), the model's structs, the int8 weights'
 *                       QuantPackedB, the copy of one text's inputs
 *   step                the rest, used three times: during model_init its top
 *                       d->scratch_bytes are the build's scratch (the registry
 *                       and its Params: dead once the weights are bound);
 *                       then per text the tokenizer's work, and once the
 *                       inputs are copied out, the forward
 * so it needs max(scratch, tokenizer, forward), not their sum, and the sizes
 * `bertc export-c` measured on the host are the sizes needed. The
 * architecture is d->arch itself, never looked up by name: a firmware built
 * with -ffunction-sections -Wl,--gc-sections links only it. */
#include "zoo/zoo.h"
#include "tensor/format_internal.h"

#include <string.h>

static size_t round64(size_t n)
{
    return (n + 63) & ~(size_t)63;
}

/* One pack buffer as the arena holds it: 64 bytes of alignment slack, then
 * rounded to the arena's 64-byte blocks (tensor/scratch_internal.h). */
static size_t pack_block(size_t bytes)
{
    return bytes ? round64(bytes + 64) : 0;
}

size_t bertc_const_model_pack_bytes(const ConstModelData *d)
{
    return pack_block(d->pack_a_bytes) + pack_block(d->pack_b_bytes) +
           pack_block(d->qgemm_bytes);
}

/* The packs, then the model arena, the build's scratch at the buffer's top. */
static int split(ConstModel *cm, void *mem, size_t size, Arena *scratch, BertcError *err)
{
    const ConstModelData *d = cm->d;
    size_t packs = bertc_const_model_pack_bytes(d), top = round64(d->scratch_bytes) + 64;
    if (((uintptr_t)mem & 63) != 0)
        return bertc_errorf(err, "model_init: the arena must be 64-byte aligned");
    if (size < packs + top + 4096)
        return bertc_errorf(err, "model_init: arena of %zu bytes is below the %zu the GEMM "
                            "buffers and the model's build alone need", size, packs + top);
    bertc_arena_init_fixed(&cm->params, "model", (char *)mem + packs, size - packs - top);
    bertc_arena_init_fixed(scratch, "model_init scratch", (char *)mem + size - top, top);
    bertc_threads_set_count(1);   /* the pack arenas serve one thread */
    bertc_cpu_set_isa(ISA_SCALAR);   /* the portable fp32 path the export measured (its
                                        pack sizes): the same bits on a PC and the board */
    if (packs == 0)
        return 0;   /* unmeasured (the export's measuring run): the caller's pack arena */
    bertc_arena_init_fixed(&cm->packs, "gemm packs", mem, packs);
    bertc_gemm_set_pack_arena(&cm->packs);
    bertc_qgemm_set_arena(&cm->packs);
    bertc_gemm_reserve_packs(d->pack_a_bytes, d->pack_b_bytes);
    bertc_qgemm_reserve(d->qgemm_bytes);
    return 0;
}

/* The path that runs d's int8 weights: the one they were packed for, or one
 * that reads the same layout (an m4dsp export runs scalar on a PC). */
static int select_int8_path(const ConstModelData *d, BertcError *err)
{
    if (d->n_int8 == 0)
        return 0;
    QgemmIsa path = bertc_qgemm_isa_for_pack((QgemmIsa)d->int8_isa);
    if (path == QGEMM_ISA_COUNT)
        return bertc_errorf(err, "model_init: the weights were packed for the %s int8 path, "
                            "which this build cannot run (export with --int8-path)",
                            bertc_qgemm_isa_name((QgemmIsa)d->int8_isa));
    bertc_qgemm_set_isa(path);
    return 0;
}

/* The model built and bound with its bookkeeping in scratch; what lives on
 * is in cm->params. The config is d's, in place (its rules checked). */
static int build(ConstModel *cm, Arena *scratch, BertcError *err)
{
    const ConstModelData *d = cm->d;
    ConstBuild cb = {.arch = d->arch, .table = d->params, .n_table = d->n_params,
                     .int8_names = d->int8_names, .n_int8 = d->n_int8, .scratch = scratch};
    if (bertc_model_build_const(&cm->m, &cm->params, d->config, &cb, err) != 0 ||
        bertc_registry_bind_const(cm->m.reg, d->params, d->n_params, err) != 0)
        return -1;
    cm->m.reg = NULL;   /* it lives in scratch, which the step region reuses */
    cm->scratch_used = bertc_arena_high_water(scratch);
    return 0;
}

/* The model in mem: its parameters' arena, the build, the step arena and
 * the graph of every forward. An arena too small for what the export
 * measured (a ConstModelData edited by hand, a smaller buffer) reaches
 * bertc_fatal. */
static int place(ConstModel *cm, void *mem, size_t size, BertcError *err)
{
    const ConstModelData *d = cm->d;
    Arena scratch;
    if (split(cm, mem, size, &scratch, err) != 0 || select_int8_path(d, err) != 0 ||
        build(cm, &scratch, err) != 0)
        return -1;
    cm->batch = bertc_arena_alloc(&cm->params, d->batch_bytes ? d->batch_bytes : 1);
    cm->model_bytes = bertc_arena_used(&cm->params);
    size_t start = bertc_const_model_pack_bytes(d) + round64(cm->model_bytes) + 64;
    if (start + 4096 > size)
        return bertc_errorf(err, "model_init: arena of %zu bytes has no room left for a "
                            "forward (the model took %zu)", size, start);
    bertc_arena_init_fixed(&cm->step, "step", (char *)mem + start, size - start);
    bertc_ag_graph_init(&cm->g, &cm->step, 0);
    bertc_ag_set_training(&cm->g, false);
    bertc_ag_set_no_grad(&cm->g, true);
    bertc_ag_set_lean(&cm->g, true);   /* only the logits are read: one hidden buffer */
    return 0;
}

int bertc_const_model_init(ConstModel *cm, const ConstModelData *d, void *mem, size_t size,
                           BertcError *err)
{
    memset(cm, 0, sizeof *cm);
    cm->d = d;
    BertcCatch guard;
    bertc_catch_begin(&guard, err);
    if (setjmp(guard.env) != 0) {   /* an arena too small: err says so */
        cm->g.step = NULL;          /* model_classify refuses to run */
        return -1;
    }
    int rc = place(cm, mem, size, err);
    bertc_catch_end(&guard);
    if (rc != 0)
        cm->g.step = NULL;
    return rc;
}

/* One text -> the (1, n) input_ids, attention_mask and token_type_ids of
 * BertForSequenceClassification (what its batch_from_text gives for one
 * text), in cm->batch. The tokenizer works in a fixed buffer from the step
 * arena whatever the text's length (bertc_tokenizer_encode_ids), dead once
 * the ids are out. */
static int encode_text(ConstModel *cm, const char *text, size_t len, Batch *b, BertcError *err)
{
    const ConstModelData *d = cm->d;
    int64_t S = d->max_len;
    if (d->batch_bytes < 3 * sizeof(int32_t) * (size_t)S)
        return bertc_errorf(err, "model_classify: %zu bytes for the inputs of %lld tokens, "
                            "%zu needed", d->batch_bytes, (long long)S,
                            3 * sizeof(int32_t) * (size_t)S);
    int32_t *ids = (int32_t *)cm->batch, *mask = ids + S, *types = mask + S, n;
    size_t work = bertc_tokenizer_work_bytes();
    if (bertc_tokenizer_encode_ids(d->tok, bertc_arena_alloc(&cm->step, work), work, text, len,
                                   (int32_t)S, ids, &n, err) != 0)
        return -1;
    for (int32_t i = 0; i < n; i++) {
        mask[i] = 1;
        types[i] = 0;
    }
    int64_t shape[2] = {1, n};
    bertc_batch_put_ids(b, "input_ids", bertc_itensor_view(ids, 2, shape));
    bertc_batch_put_ids(b, "attention_mask", bertc_itensor_view(mask, 2, shape));
    bertc_batch_put_ids(b, "token_type_ids", bertc_itensor_view(types, 2, shape));
    return 0;
}

int bertc_const_model_classify(ConstModel *cm, const char *text, float *logits, int n,
                               BertcError *err)
{
    return bertc_const_model_classify_bytes(cm, text, strlen(text), logits, n, err);
}

int bertc_const_model_classify_bytes(ConstModel *cm, const char *text, size_t len,
                                     float *logits, int n, BertcError *err)
{
    if (!cm->g.step)
        return bertc_errorf(err, "model_classify: model_init has not succeeded");
    bertc_ag_graph_reset(&cm->g);
    Batch b;
    bertc_batch_init(&b, "the text");
    bertc_outputs_init(&cm->out);
    if (encode_text(cm, text, len, &b, err) != 0)
        return -1;
    size_t text_bytes = bertc_arena_used(&cm->step);
    cm->text_bytes = text_bytes > cm->text_bytes ? text_bytes : cm->text_bytes;
    bertc_ag_graph_reset(&cm->g);   /* the tokenizer's work is dead: the forward reuses it */
    /* The architecture's forward, guarded as bertc_model_forward guards it
     * but on the batch itself: encode_text made exactly the three inputs
     * BertForSequenceClassification reads, so there is no unread input to
     * catch, and no 4.7 KB copy of the Batch on the stack to record the
     * lookups in. */
    Model *m = &cm->m;
    BertcCatch guard;
    bertc_catch_begin(&guard, err);
    if (setjmp(guard.env) != 0)
        return -1;   /* an arena too small: err says so */
    int rc = m->arch->forward(m->impl, &m->cfg, &cm->g, &b, &cm->out, err);
    bertc_catch_end(&guard);
    if (rc != 0)
        return -1;
    Var *v = bertc_outputs_get(&cm->out, "logits");
    if (!v || v->value.ndim != 2 || v->value.shape[0] != 1)
        return bertc_errorf(err, "model_classify: the model (%s) gave no (1, C) logits",
                            cm->m.arch->name);
    int C = (int)v->value.shape[1];
    for (int j = 0; j < C && j < n; j++)
        logits[j] = v->value.data[j];
    return C;
}
