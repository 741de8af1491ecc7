/*
 * zoo/models/model_const.h — a classifier whose weights, config, vocabulary and
 * tokenizer index are const data (flash), run in one caller buffer
 * (zoo/models/model_const.c): what the model.c of `bertc export-c` calls
 * (docs/embedded.md). Included by zoo/zoo.h.
 */
#ifndef BERTC_ZOO_MODEL_CONST_H
#define BERTC_ZOO_MODEL_CONST_H

#include "zoo/models/model.h"

/* The same with no parameter data allocated: the weights are then read in
 * place from const memory, bound by bertc_registry_bind_const (nn/nn.h);
 * what `bertc export-c`'s model.c does (zoo/models/model_const.c). */
typedef struct ConstBuild {
    const ModelArch *arch;            /* cfg's, given rather than looked up: a firmware
                                         links only it */
    const ConstParam *table;          /* what bertc_registry_bind_const will bind (n_table;
                                         may be NULL): names point into it, not copied */
    int n_table;
    const char *const *int8_names;    /* as bertc_model_build_int8's */
    int n_int8;
    Arena *scratch;                   /* NULL, or where the registry and its Params go:
                                         dead once the weights are bound, when m->reg must
                                         no longer be used. (No dry-run size check: the
                                         weights exist; the config's rules are checked.) */
} ConstBuild;
int bertc_model_build_const(Model *m, Arena *arena, const BertConfig *cfg, const ConstBuild *cb,
                            BertcError *err);

/* ------------------------------------------------------------------------ */
/* A classifier from const data (zoo/models/model_const.c): `bertc export-c`        */
/* ------------------------------------------------------------------------ */

/* Everything of a sequence classifier as const data (flash): what the
 * model_data.c of `bertc export-c` holds. */
typedef struct ConstModelData {
    const ModelArch *arch;            /* its architecture (bertc_arch_bert_seqcls, ...) */
    const BertConfig *config;         /* read in place: no JSON on the target */
    const char *const *int8_names;    /* the int8 Linear weights (n_int8) */
    int n_int8;
    int int8_isa;                     /* QgemmIsa they were packed for */
    const ConstParam *params;         /* every parameter, in place */
    int n_params;
    const Tokenizer *tok;             /* its index arrays const too */
    int32_t max_len;                  /* tokens per text (model_max_length) */
    /* GEMM buffers, measured by the export (bertc_gemm_pack_sizes,
     * bertc_qgemm_scratch_bytes) and taken at init at these sizes */
    size_t pack_a_bytes, pack_b_bytes, qgemm_bytes;
    size_t batch_bytes;               /* one text's inputs at max_len tokens */
    size_t scratch_bytes;             /* model_init's scratch: the registry and its
                                         Params (measured; reused by the step) */
} ConstModelData;

typedef struct ConstModel {
    const ConstModelData *d;
    Arena packs, params, step;
    size_t model_bytes;               /* params used when step was carved */
    size_t scratch_used;              /* the init scratch's high water */
    size_t text_bytes;                /* step's high water once the text was tokenized */
    unsigned char *batch;             /* d->batch_bytes: the inputs of one text */
    Model m;
    Graph g;
    Outputs out;
} ConstModel;

/* The bytes at the start of the arena that hold d's GEMM buffers. */
size_t bertc_const_model_pack_bytes(const ConstModelData *d);

/* Builds the model in mem (size bytes, 64-byte aligned): GEMM buffers,
 * then the model's bookkeeping (its weights stay in d), the rest for one
 * forward. Selects, for the whole process, d's int8 path (or scalar where
 * the same layout must run without it), the portable fp32 path the export
 * measured, and one thread: a PC then computes the board's bits. */
int bertc_const_model_init(ConstModel *cm, const ConstModelData *d, void *mem, size_t size,
                           BertcError *err);
/* One text -> its logits: the first min(n, C) written, C returned; -1 and
 * err on an error (invalid UTF-8, an arena too small). A text of any length is
 * read: its first max_len - 2 wordpieces. */
int bertc_const_model_classify(ConstModel *cm, const char *text, float *logits, int n,
                               BertcError *err);
/* The same for the len bytes at text, which need no NUL (a line inside a
 * text in flash, a UART buffer): no copy is made. */
int bertc_const_model_classify_bytes(ConstModel *cm, const char *text, size_t len,
                                     float *logits, int n, BertcError *err);

#endif /* BERTC_ZOO_MODEL_CONST_H */
