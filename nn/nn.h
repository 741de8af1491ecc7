/*
 * nn/nn.h — modules that own parameters, the parameter registry, init,
 * optimizers, LR schedules and checkpoints. Losses are the autograd ops
 * (bertc_ag_cross_entropy, bertc_ag_bce, bertc_ag_bce_with_logits, bertc_ag_mse).
 *
 * The registry is the one descriptor of a model's parameters. A module
 * registers each parameter once, under its full dotted PyTorch state_dict name
 * (built from a stack of module prefixes), with its shape and its init rule.
 * That single list then drives allocation, init, loading, saving, the
 * optimizer state and the module-tree printer: nothing keeps a second list.
 *
 *     Arena *arena = bertc_arena_create("params", 1 << 20);
 *     Registry *reg = bertc_registry_create(arena, "Classifier");
 *     Linear fc1, fc2;
 *     bertc_linear_init(&fc1, reg, "fc1", 16, 32, true);   // fc1.weight (32,16), fc1.bias (32)
 *     bertc_linear_init(&fc2, reg, "fc2", 32, 3, true);
 *     Rng rng = bertc_rng_seed(0);
 *     bertc_registry_init_weights(reg, &rng, 0.02f);       // HF init: N(0, 0.02), zeros, ones
 *     bertc_registry_print(reg, stdout);                   // PyTorch-style repr with counts
 *     // forward: bertc_linear_forward(g, &fc2, bertc_ag_gelu(g, bertc_linear_forward(g, &fc1, x)))
 */
#ifndef BERTC_NN_H
#define BERTC_NN_H

#include "autograd/autograd.h"

#include <stdio.h>

/* ------------------------------------------------------------------------ */
/* The parameter registry                                                    */
/* ------------------------------------------------------------------------ */

typedef enum ParamInit {
    INIT_NORMAL,   /* N(0, initializer_range): Linear and Embedding weights */
    INIT_ZEROS,    /* biases, LayerNorm beta */
    INIT_ONES,     /* LayerNorm gamma */
    INIT_KEEP      /* buffers computed by their module (e.g. positional encodings) */
} ParamInit;

typedef struct Param {
    const char *name;      /* full dotted state_dict key */
    Var *var;              /* value + gradient (persistent) */
    ParamInit init;
    float init_std;        /* INIT_NORMAL's std when > 0, else initializer_range */
    int alias_of;          /* -1, or the index of the param this name ties to */
    bool buffer;           /* state, not trained (no gradient, not counted) */
    int64_t zero_row;      /* row set to 0 after init (Embedding padding_idx), or -1 */
    bool linear_weight;    /* a Linear's (out, in) weight: bertc_registry_prepack may pack it */
    GemmPackedB *packing;  /* its GemmPackedB while packed (var->packed points here) */
    bool word_embeddings;  /* the (V, H) table of the word-embedding module (an Embedding
                              registered as "word_embeddings"): the one table that may be int8 */
    /* An int8 weight of a quantised model (docs/quantization.md): it has no
     * float values (var->value.data is NULL). A Linear weight: bertc_registry_load
     * fills `qpacking` from the file's I8 weight and F32 "<name>_scale", and
     * var->qpacked points to it. Word embeddings: var->qrows and
     * var->qrow_scale hold the file's I8 rows and F32 row scales as they are. */
    bool int8;
    QuantPackedB *qpacking;
} Param;

/* One node of the module tree, for printing: "(attr): repr". */
typedef struct ModuleInfo {
    const char *attr;      /* attribute name in the parent, NULL for the root */
    const char *repr;      /* "Linear(in_features=4, out_features=3, bias=True)" */
    int depth;
    bool leaf;             /* printed on one line */
    int first_param, end_param;   /* params registered inside it: [first, end) */
} ModuleInfo;

#define REGISTRY_MAX_DEPTH 32

typedef struct Registry {
    Arena *arena;                  /* persistent: params, grads, names, optimizer state */
    Arena *book;                   /* this struct, its Params and module tree: `arena`, or
                                      a const registry's scratch (bertc_registry_create_const) */
    Param *params;
    int n_params, cap_params;
    ModuleInfo *modules;
    int n_modules, cap_modules;
    char prefix[512];              /* "bert.encoder.layer.3." while registering */
    int prefix_len[REGISTRY_MAX_DEPTH];
    int open[REGISTRY_MAX_DEPTH];  /* module indices of the open modules */
    int depth;
    int n_packed;                  /* Linear weights now pre-packed (bertc_registry_prepack) */
    int n_bf16;                    /* Linear weights packed for the bf16 GEMM as well */
    /* Linear weights and word embeddings to hold as int8 (full names, set
     * before the model is built: bertc_model_build_int8), and how many were
     * loaded (or quantised) as int8. */
    const char *const *int8_names;
    int n_int8_names;
    int n_int8;
    /* A dry run (bertc_registry_create_dry) registers names and shapes but
     * allocates no tensor data: params and buffers have data == NULL. */
    bool dry_run;
    double dry_floats;             /* elements of every param and buffer, in double:
                                      a product of config sizes cannot wrap */
    int dry_largest;               /* index of the param or buffer with the most elements */
    double dry_largest_floats;
    /* Set before the model is built (bertc_model_build_const): parameters
     * get a shape and no data; bertc_registry_bind_const points them at the
     * caller's const memory (weights read in place from flash). */
    bool const_data;
    /* With const_data, the table bertc_registry_bind_const will bind (NULL:
     * none yet): a parameter's name then points at its entry's name rather
     * than a copy, Params are allocated for n_const at once, and no module
     * tree is kept beyond the root (a const model is run, not printed). */
    const struct ConstParam *const_table;
    int n_const;
    /* With const_data, Vars are taken from blocks of REGISTRY_VAR_BLOCK (one
     * arena allocation each, rounded to 64 bytes once, not per Var) */
    struct Var *var_block;
    int var_block_left;
    /* bertc_nn_format's results in a const registry, in turn (not kept) */
    char format_ring[4][128];
    int format_next;
    /* The params by name, for bertc_registry_find: an open-addressing table
     * of index + 1 (0: empty), at most half full, in `book`; NULL in a const
     * registry (its few params are searched in turn, its RAM kept small).
     * Registering and finding stay linear in the number of params, so a
     * model of thousands of layers builds in the time of its layers. */
    int *by_name;
    int by_name_cap;
} Registry;

/* A registry whose root module prints as `root_repr` (the architecture's name). */
Registry *bertc_registry_create(Arena *arena, const char *root_repr);
/* The same, for a dry run: a model built into it records every parameter's
 * name and shape and counts their elements without allocating them, so a
 * model's size is known from its own build code before it is allocated
 * (bertc_model_size in zoo/). Build code must not touch the data of its params in
 * a dry run (it is NULL). */
Registry *bertc_registry_create_dry(Arena *arena, const char *root_repr);
/* The same for a model whose weights stay in const memory (const_data, the
 * table bertc_registry_bind_const will bind, n entries, may be NULL): what
 * bertc_model_build_const makes. It keeps only what running the model needs:
 * no module tree beyond the root, names pointing into the table. With a
 * `scratch` arena (NULL: arena) the registry itself and its Params live
 * there: they are dead once bertc_registry_bind_const has run, while the
 * Vars and the model's structs (in `arena`) live on. */
Registry *bertc_registry_create_const(Arena *arena, Arena *scratch, const char *root_repr,
                                      const struct ConstParam *table, int n);

/* Enter a submodule named `attr` (dotted names gain "attr."). repr is the
 * module's printed type, e.g. "Embeddings" or a full leaf repr when
 * leaf is true. Every bertc_nn_push has its bertc_nn_pop. */
void bertc_nn_push(Registry *r, const char *attr, const char *repr, bool leaf);
void bertc_nn_pop(Registry *r);
/* printf-style helper for reprs and names built from numbers. In a const
 * registry the result is not copied to the arena: it lives until the fourth
 * next call (long enough to name a module or parameter, which copies it). */
const char *bertc_nn_format(Registry *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Register a parameter `name` (relative to the current prefix). */
Var *bertc_nn_param(Registry *r, const char *name, int ndim, const int64_t *shape, ParamInit init);
/* Register the (out, in) weight of a Linear under `name`: a parameter that
 * bertc_registry_prepack may pack, or, when r->int8_names holds its full
 * name, an int8 weight without float values (Param.int8). */
Var *bertc_nn_linear_weight(Registry *r, const char *name, int64_t out, int64_t in);
/* Register the (V, H) table of a word-embedding module under `name`: a
 * float32 parameter, or, when r->int8_names holds its full name, int8 rows
 * without float values (Param.int8, Var.qrows). */
Var *bertc_nn_word_embedding_weight(Registry *r, const char *name, int64_t V, int64_t H);
/* Register a buffer: loaded and saved, never trained nor counted. */
Var *bertc_nn_buffer(Registry *r, const char *name, int ndim, const int64_t *shape);
/* A second name for an existing parameter (tied weights). full_name is the
 * complete dotted key, not relative to the prefix. */
void bertc_nn_tie(Registry *r, const char *full_name, Var *target);

int bertc_registry_find(const Registry *r, const char *full_name);   /* index or -1 */
/* HF init of every parameter, in registration order, from one RNG stream
 * (a Param's init_std, when set, replaces initializer_range for it). */
void bertc_registry_init_weights(Registry *r, Rng *rng, float initializer_range);
void bertc_registry_zero_grad(Registry *r);
/* Number of trainable scalars, each tied tensor counted once (as PyTorch's
 * sum(p.numel() for p in model.parameters())). */
int64_t bertc_registry_count(const Registry *r);
/* The module tree in PyTorch's repr format, each module followed by its
 * parameter count, and the total. */
void bertc_registry_print(const Registry *r, FILE *out);

/* Inference: lay out every Linear weight once in the order the GEMM reads it
 * (tensor/tensor.h, GemmPackedB), in place — no second copy, so BERT-base
 * stays within its 418 MiB of weights — so that no forward packs it again.
 * Results are bitwise those of the unpacked weights. A weight is packed only
 * when its packed form is exactly its size (out_features a multiple of the
 * kernel's NR, 48 with AVX-512) and it is not tied; the others stay as they
 * are. Uses K x N floats of `scratch` while packing (released before it
 * returns; bertc_registry_unpack needs as much). Returns how many were packed.
 *
 * While packed, the weights hold no plain values: a gradient through them,
 * optimizer steps, init, loading, saving and checkpoints stop with an error
 * that says to call bertc_registry_unpack, which restores the exact values. */
int bertc_registry_prepack(Registry *r, Arena *scratch);
void bertc_registry_unpack(Registry *r, Arena *scratch);
/* bf16 inference (nn/prepack.c, docs/quantization.md): each Linear weight
 * with chosen[i] (the plan of bertc_registry_int8_plan below, as `bertc
 * quantize --dtype bf16` stores them) is also packed for the bf16 GEMM
 * (tensor/kernels.h, Bf16PackedB: rounded to nearest even), in the
 * registry's arena, and var->bpacked points to it. A forward without
 * gradients then multiplies it in bf16 (activations rounded per row,
 * float32 sums); one with gradients reads the float32 value, which stays.
 * Returns how many were packed (r->n_bf16 counts them all). */
int bertc_registry_pack_bf16(Registry *r, const bool *chosen);
/* Int8 inference (nn/quantize.c, docs/quantization.md). The plan: which
 * Linear weights `bertc quantize` makes int8 — every untied Linear weight
 * of an encoder (full name containing "encoder."), except those under a
 * module named in keep[0..n_keep) (a dotted module name or a prefix of one,
 * e.g. "bert.encoder.layer.11"); heads, pooler, embeddings and LayerNorms
 * stay float32. Sets chosen[i] per parameter and returns how many; a keep
 * name that names no Linear module is an error (-1). */
int bertc_registry_int8_plan(const Registry *r, const char *const *keep, int n_keep,
                             bool *chosen, BertcError *err);
/* Adds the word embeddings (Param.word_embeddings) to chosen (after
 * bertc_registry_int8_plan, which sets every entry): int8 with one scale per
 * row (token), what `bertc quantize --embeddings` writes. Returns
 * how many tables; -1 when they are tied to an output layer (an MLM decoder
 * reads them as a Linear weight: they stay float32) or the model has none. */
int bertc_registry_int8_plan_embeddings(const Registry *r, bool *chosen, BertcError *err);
/* Quantises the chosen weights in memory, as a quantised model's file holds
 * them (bertc_quantize_rows per output channel, or per row of the word
 * embeddings), packing Linear weights for bertc_qgemm: afterwards the model
 * runs as if loaded from its int8 directory. Their float values are dropped
 * (still allocated in the params arena); the int8 word embeddings take
 * V x H bytes and V floats more of it. Uses one Linear weight's int8 of
 * `scratch` at a time. Returns how many. */
int bertc_registry_quantize(Registry *r, const bool *chosen, Arena *scratch);

/* Weights read in place from const memory (nn/registry_const.c,
 * docs/embedded.md): one entry per parameter, as `bertc export-c` writes
 * them. A float32 parameter: `values` (numel floats, 4-byte aligned). An
 * int8 Linear weight (out, in) = (N, K): its QuantPackedB parts as
 * bertc_qgemm_pack_b made them for path `isa` (data n_pad * k_pad bytes,
 * col_sum and scale n_pad each, n_pad = N rounded up to nr; 16-byte
 * aligned). Int8 word embeddings (V, H): qdata their V * H bytes, row-major
 * as in the file, scale their V row scales (4-byte aligned), col_sum NULL,
 * k_pad, nr and isa 0 (not packed: any int8 path reads them). Nothing is
 * copied; the memory must outlive the model. */
typedef struct ConstParam {
    const char *name;            /* full dotted state_dict key */
    int64_t numel;               /* float32: elements; int8: N * K (V * H) */
    const float *values;         /* float32 parameter, else NULL */
    const int8_t *qdata;         /* int8 weight or word embeddings, else NULL */
    const int32_t *col_sum;
    const float *scale;
    int64_t k_pad;
    int nr, isa;
} ConstParam;
/* Points every parameter and buffer of r (built with const_data) at its
 * entry of table[0..n): names must match, sizes and alignment are checked,
 * an int8 entry's isa must be the active int8 path (bertc_qgemm_isa) and
 * its parameter int8. A parameter with no entry is an error naming it. */
int bertc_registry_bind_const(Registry *r, const ConstParam *table, int n, BertcError *err);

/* Stops with a message naming `what` if the registry is pre-packed, or holds
 * int8 weights (a quantised model: inference only, never trained, saved as
 * float32 nor re-initialised). */
void bertc_registry_require_unpacked(const Registry *r, const char *what);

/* ------------------------------------------------------------------------ */
/* Modules                                                                   */
/* ------------------------------------------------------------------------ */

/* torch.nn.Linear: y = x W^T + b. weight (out, in), bias (out). */
typedef struct Linear {
    Var *weight, *bias;    /* bias may be NULL */
    int64_t in_features, out_features;
} Linear;
void bertc_linear_init(Linear *m, Registry *r, const char *attr, int64_t in, int64_t out, bool bias);
Var *bertc_linear_forward(Graph *g, const Linear *m, Var *x);   /* x (..., in) -> (..., out) */
/* act(Linear(x)) (bertc_ag_linear_act: with int8 weights act runs in the GEMM). */
Var *bertc_linear_act_forward(Graph *g, const Linear *m, Var *x, AgAct act);
/* out[i] = ms[i](x) for i < n, Linears that read the same x (attention's Q, K,
 * V): with int8 weights x is quantised once for all (bertc_ag_linears). */
void bertc_linears_forward(Graph *g, const Linear *const *ms, int n, Var *x, Var **out);

/* torch.nn.Embedding: weight (V, H); the padding row (if >= 0) starts at 0
 * and gets no gradient from lookups. */
typedef struct Embedding {
    Var *weight;
    int64_t num_embeddings, dim;
    int padding_idx;
} Embedding;
void bertc_embedding_init(Embedding *m, Registry *r, const char *attr, int64_t V, int64_t H,
                    int padding_idx);
Var *bertc_embedding_forward(Graph *g, const Embedding *m, const ITensor *ids); /* -> (ids..., H) */

/* torch.nn.LayerNorm over the last dim. Parameter names are usually
 * "weight"/"bias"; some checkpoints (CGBERT) use "gamma"/"beta". */
typedef struct LayerNorm {
    Var *weight, *bias;
    int64_t dim;
    float eps;
} LayerNorm;
void bertc_layernorm_init(LayerNorm *m, Registry *r, const char *attr, int64_t H, float eps);
void bertc_layernorm_init_named(LayerNorm *m, Registry *r, const char *attr, int64_t H, float eps,
                          const char *weight_name, const char *bias_name);
Var *bertc_layernorm_forward(Graph *g, const LayerNorm *m, Var *x);

typedef struct Dropout {
    float p;
} Dropout;
void bertc_dropout_init(Dropout *m, Registry *r, const char *attr, float p);
Var *bertc_dropout_forward(Graph *g, const Dropout *m, Var *x);   /* identity in eval */

/* torch.nn.Conv1d(in, out, k, padding=(k-1)//2): x (B, Cin, L) -> (B, Cout, L). */
typedef struct Conv1d {
    Var *weight, *bias;    /* (Cout, Cin, k), (Cout) */
    int64_t in_channels, out_channels, kernel_size;
} Conv1d;
void bertc_conv1d_init(Conv1d *m, Registry *r, const char *attr, int64_t in, int64_t out, int64_t k);
Var *bertc_conv1d_forward(Graph *g, const Conv1d *m, Var *x);

/* A module with no parameters that should still appear in the printed tree
 * (activations: "GELUActivation()", "ReLU()", "Tanh()"). */
void bertc_nn_leaf(Registry *r, const char *attr, const char *repr);

/* ------------------------------------------------------------------------ */
/* Multi-head attention                                                      */
/* ------------------------------------------------------------------------ */

/* BERTC_NAIVE=1 in the environment (read once, at the first forward that
 * asks): attention, add-and-norm and the MLM loss take the unfused ops
 * (matmul, scale, add, softmax, dropout, matmul; add then layernorm; linear
 * then cross_entropy) instead of the fused ones: slower, the same numbers
 * within rounding, a tape a learner can follow op by op.
 * bertc_set_naive overrides the environment (tests). */
bool bertc_naive(void);
void bertc_set_naive(bool on);

/* Split (B, S, H) into heads (B, nh, S, d) and merge back; d = H / nh. */
Var *bertc_nn_split_heads(Graph *g, Var *x, int64_t nh);
Var *bertc_nn_merge_heads(Graph *g, Var *x);

/* OpenNMT-style multi-headed attention as BertSum uses it: linear_keys,
 * linear_values, linear_query, final_linear; the query is divided by sqrt(d)
 * BEFORE the product, and padded keys are REPLACED by -1e18 (masked_fill),
 * not added to. */
typedef struct OnmtAttention {
    Linear linear_keys, linear_values, linear_query, final_linear;
    Dropout dropout;
    int64_t heads;
} OnmtAttention;
void bertc_onmt_attention_init(OnmtAttention *m, Registry *r, const char *attr, int64_t H,
                         int64_t heads, float dropout);
/* key/value/query (B, S, H); key_pad (B, 1, 1, S) with 1 where the key is
 * padding, or NULL. Returns final_linear(context) (B, S, H). */
Var *bertc_onmt_attention_forward(Graph *g, const OnmtAttention *m, Var *key, Var *value,
                            Var *query, const ITensor *key_pad, Var **probs_out);

/* ------------------------------------------------------------------------ */
/* Optimizers and schedules (PyTorch semantics)                              */
/* ------------------------------------------------------------------------ */

typedef enum OptimizerKind { OPT_SGD, OPT_ADAM, OPT_ADAMW } OptimizerKind;

/* Hyperparameters are doubles, as Python floats are in torch.optim: the
 * coefficients (1 - beta1, lr / bias correction, ...) are formed in double and
 * rounded to float once, which is what makes 10 steps match PyTorch. */
typedef struct OptimizerConfig {
    OptimizerKind kind;
    double lr;
    double weight_decay;   /* SGD/Adam: L2 added to the gradient; AdamW: decoupled */
    double momentum;       /* SGD */
    double dampening;      /* SGD */
    bool nesterov;         /* SGD */
    double beta1, beta2, eps;  /* Adam/AdamW */
    /* Hugging Face Trainer's two parameter groups: weight_decay only on the
     * parameters of two or more dimensions (Linear weights, embeddings), none
     * on the vectors (every bias, LayerNorm's weight and bias), as
     * get_decay_parameter_names picks them in a BERT. false (torch.optim, and
     * bertc_optimizer_defaults): every parameter decays. */
    bool no_decay_vectors;
} OptimizerConfig;

/* PyTorch's defaults for each optimizer (lr must still be set). */
OptimizerConfig bertc_optimizer_defaults(OptimizerKind kind, double lr);

typedef struct Optimizer {
    OptimizerConfig cfg;
    Registry *reg;
    float **state1;       /* per param: SGD momentum buffer / Adam exp_avg */
    float **state2;       /* per param: Adam exp_avg_sq */
    int64_t step;         /* optimizer steps taken */
} Optimizer;

/* State lives in the registry's persistent arena (zero-filled). */
void bertc_optimizer_init(Optimizer *o, Registry *r, OptimizerConfig cfg);
/* One update of every trainable parameter with learning rate lr (from a
 * schedule); gradients are left as they are (call bertc_registry_zero_grad). */
void bertc_optimizer_step(Optimizer *o, double lr);
/* torch.nn.utils.clip_grad_norm_: scales all gradients by
 * max_norm / (total_norm + 1e-6) when that is < 1. Returns the total norm. */
float bertc_clip_grad_norm(Registry *r, float max_norm);
/* Every trainable parameter's gradient times factor (gradient accumulation's
 * mean over the micro-batches of a step). */
void bertc_scale_grads(Registry *r, float factor);

typedef enum ScheduleKind { SCHED_CONSTANT, SCHED_LINEAR, SCHED_COSINE } ScheduleKind;
typedef struct Schedule {
    ScheduleKind kind;
    double base_lr;
    int64_t warmup_steps, total_steps;
} Schedule;
/* LR for optimizer step `step` (0-based), as HF's get_constant_schedule,
 * get_linear_schedule_with_warmup, get_cosine_schedule_with_warmup. */
double bertc_schedule_lr(const Schedule *s, int64_t step);

/* The rest of the nn layer: file formats and model state. */
#include "nn/config.h"
#include "nn/json.h"
#include "nn/safetensors.h"
#include "nn/state.h"

#endif /* BERTC_NN_H */
