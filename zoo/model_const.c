/* zoo/model_const.c — a text classifier whose weights, config, vocabulary
 * and tokenizer index are const data (flash), run in one caller buffer:
 * what the model.c of `bertc export-c` calls (docs/embedded.md).
 *
 * The buffer is split in three fixed arenas:
 *   [0, pack_bytes)          GEMM pack buffers (fp32 and int8), sized by the export
 *   params                   config tree, registry, Vars (no weight data: flash)
 *   step                     the rest: one text's tokens, batch and forward graph
 * so the sizes `bertc export-c` measured on the host are the sizes needed. */
#include "zoo/zoo.h"
#include "tensor/format_internal.h"

#include <string.h>

static int split(ConstModel *cm, void *mem, size_t size, BertcError *err)
{
    const ConstModelData *d = cm->d;
    if (((uintptr_t)mem & 63) != 0)
        return bertc_errorf(err, "model_init: the arena must be 64-byte aligned");
    if (size < d->pack_bytes + 4096)
        return bertc_errorf(err, "model_init: arena of %zu bytes is below the %zu the GEMM "
                            "buffers alone need", size, d->pack_bytes);
    bertc_arena_init_fixed(&cm->packs, "gemm packs", mem, d->pack_bytes);
    bertc_arena_init_fixed(&cm->params, "model", (char *)mem + d->pack_bytes,
                           size - d->pack_bytes);
    bertc_threads_set_count(1);   /* the pack arenas serve one thread */
    bertc_gemm_set_pack_arena(&cm->packs);
    bertc_qgemm_set_arena(&cm->packs);
    return 0;
}

static int select_int8_path(const ConstModelData *d, BertcError *err)
{
    if (d->n_int8 == 0)
        return 0;
    if (!bertc_qgemm_isa_supported((QgemmIsa)d->int8_isa))
        return bertc_errorf(err, "model_init: the weights were packed for the %s int8 path, "
                            "which this build cannot run (export with --int8-path)",
                            bertc_qgemm_isa_name((QgemmIsa)d->int8_isa));
    bertc_qgemm_set_isa((QgemmIsa)d->int8_isa);
    return 0;
}

int bertc_const_model_init(ConstModel *cm, const ConstModelData *d, void *mem, size_t size,
                           BertcError *err)
{
    memset(cm, 0, sizeof *cm);
    cm->d = d;
    BertConfig cfg;
    if (split(cm, mem, size, err) != 0 || select_int8_path(d, err) != 0 ||
        bertc_bert_config_parse(&cm->params, "config.json", d->config_json, d->config_len, &cfg,
                                err) != 0 ||
        bertc_model_build_const(&cm->m, &cm->params, &cfg, d->int8_names, d->n_int8, err) != 0 ||
        bertc_registry_bind_const(cm->m.reg, d->params, d->n_params, err) != 0)
        return -1;
    size_t used = bertc_arena_used(&cm->params) + 128, cap = size - d->pack_bytes;
    if (used + 4096 > cap)
        return bertc_errorf(err, "model_init: arena of %zu bytes has no room left for a "
                            "forward (the model took %zu)", size, d->pack_bytes + used);
    size_t rest = cap - used;
    cm->model_bytes = bertc_arena_high_water(&cm->params);
    bertc_arena_init_fixed(&cm->step, "step", bertc_arena_alloc(&cm->params, rest), rest);
    bertc_ag_graph_init(&cm->g, &cm->step, 0);
    bertc_ag_set_training(&cm->g, false);
    bertc_ag_set_no_grad(&cm->g, true);
    return 0;
}

int bertc_const_model_classify(ConstModel *cm, const char *text, float *logits, int n,
                               BertcError *err)
{
    const ConstModelData *d = cm->d;
    if (!cm->g.step)
        return bertc_errorf(err, "model_classify: model_init has not succeeded");
    size_t len = strlen(text);
    if (len > d->max_text_bytes)
        return bertc_errorf(err, "model_classify: text of %zu bytes is longer than the %zu "
                            "the arena was sized for (export --max-text-bytes)", len,
                            d->max_text_bytes);
    bertc_ag_graph_reset(&cm->g);
    TextExample ex = {.text = text, .context_id = -1};
    Batch b;
    bertc_batch_init(&b, "the text");
    bertc_outputs_init(&cm->out);
    if (bertc_model_batch_from_text(&cm->m, d->tok, &ex, 1, d->max_len, &cm->g, &b, err) != 0 ||
        bertc_model_forward(&cm->m, &cm->g, &b, &cm->out, err) != 0)
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
