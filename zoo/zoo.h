/*
 * zoo/zoo.h — the BERT variants of SPEC §6 and the one code path that runs
 * them (`bertc run`, the parity tests and the examples all go through it).
 *
 * A model is an architecture (ModelArch: how to register its parameters and
 * how to run a forward) plus a config.json (BertConfig) plus a Registry that
 * holds its parameters under their PyTorch names. Inputs are named tensors
 * (a Batch); outputs are named Vars (Outputs), with the names of SPEC §6, so
 * "layers.0.attention_probs" or "hidden_states.2" can be looked at.
 *
 *     BertConfig cfg;  Model m;  BertcError err;
 *     bertc_bert_config_read("config.json", &cfg, &err);
 *     Arena *params = bertc_arena_create("params", 1 << 20);
 *     bertc_model_build(&m, params, &cfg, &err);           // registers every parameter
 *     bertc_model_load(&m, "weights.safetensors", false, &err);
 *     Graph *g = bertc_ag_graph_create(1 << 20, 0);
 *     bertc_ag_set_training(g, false);
 *     Batch in;  bertc_batch_init(&in, "inputs");
 *     bertc_batch_put_ids(&in, "input_ids", ids);           // (B, S)
 *     bertc_batch_put_ids(&in, "attention_mask", mask);     // (B, S)
 *     Outputs out;  bertc_outputs_init(&out);
 *     bertc_model_forward(&m, g, &in, &out, &err);          // out: "logits", "pooler_output", ...
 *     Var *logits = bertc_outputs_get(&out, "logits");
 */
#ifndef BERTC_ZOO_H
#define BERTC_ZOO_H

#include "nn/nn.h"
#include "zoo/tokenizer.h"   /* the WordPiece tokenizer (SPEC §7) */

/* ------------------------------------------------------------------------ */
/* Batch: the named inputs of one forward                                    */
/* ------------------------------------------------------------------------ */

#define BATCH_MAX 32

typedef struct BatchItem {
    const char *name;
    bool is_int;
    ITensor ids;          /* integer inputs (ids, masks, labels, positions) */
    Tensor f32;           /* float inputs (regression / multi-label labels) */
} BatchItem;

/* The names a model looked up in a batch (bertc_batch_find, bertc_batch_ids, bertc_batch_f32),
 * present in it or not: bertc_model_forward refuses an input the model never
 * looked up (a misspelled 'attention_masks' would otherwise be ignored) and
 * lists these as the names it reads. */
#define BATCH_LOOKUPS_MAX 64
typedef struct BatchLookups {
    int n;
    bool overflow;        /* more distinct names than fit: no check */
    const char *names[BATCH_LOOKUPS_MAX];
} BatchLookups;

typedef struct Batch {
    const char *source;   /* named in messages: the inputs file, or "batch" */
    int n;
    BatchItem items[BATCH_MAX];
    BatchLookups *lookups;   /* NULL, or where lookups are recorded (bertc_model_forward) */
} Batch;

void bertc_batch_init(Batch *b, const char *source);
void bertc_batch_put_ids(Batch *b, const char *name, ITensor t);
void bertc_batch_put_f32(Batch *b, const char *name, Tensor t);
/* Every tensor of a safetensors file: I64/I32/U8/BOOL become ITensor (range
 * checked), F32/F16/BF16/F64 become Tensor. */
int bertc_batch_from_safetensors(Batch *b, const SafeTensors *st, Arena *arena, BertcError *err);
const BatchItem *bertc_batch_find(const Batch *b, const char *name);

/* A required integer input with ndim dims; shape[i] == -1 accepts any size,
 * otherwise it must match. Errors name the source, the tensor and both
 * shapes ("inputs.safetensors: 'input_ids' must be (B, S) = [2, 16], got
 * [2, 17]"). A float tensor where ids are expected is an error too. */
int bertc_batch_ids(const Batch *b, const char *name, int ndim, const int64_t *shape, ITensor *out,
              BertcError *err);
int bertc_batch_f32(const Batch *b, const char *name, int ndim, const int64_t *shape, Tensor *out,
              BertcError *err);
/* Every value in [lo, hi): else an error naming the tensor, the position,
 * the value and the limit ("'input_ids'[1, 5] = 30522 is >= vocab_size 30522"). */
int bertc_batch_check_range(const Batch *b, const char *name, const ITensor *t, int64_t lo,
                      int64_t hi, const char *limit_name, BertcError *err);
/* Every value 0 or 1 (masks, 0/1 labels): else an error naming the tensor,
 * the position and the value ("'mask_cls'[1, 2] = 2 is neither 0 nor 1"). */
int bertc_batch_check_binary(const Batch *b, const char *name, const ITensor *t, BertcError *err);
/* Every value finite and in [lo, hi] (float labels: a NaN or infinite target
 * would only make the loss and every gradient NaN): else an error naming the
 * tensor, the position and the value ("'labels'[1, 2] = nan is not a finite
 * number"). */
int bertc_batch_check_real(const Batch *b, const char *name, const Tensor *t, double lo, double hi,
                     BertcError *err);
/* Every input of b was looked up (b->lookups): else an error naming the first
 * one nobody read and listing the names `model` reads. */
int bertc_batch_check_all_read(const Batch *b, const char *model, BertcError *err);

/* ------------------------------------------------------------------------ */
/* Outputs: the named results of one forward                                 */
/* ------------------------------------------------------------------------ */

typedef struct OutputItem {
    const char *name;
    Var *var;             /* float outputs */
    ITensor ids;          /* integer outputs (written as I64) */
    bool is_int;
} OutputItem;

typedef struct Outputs {
    int n;
    /* Set by a caller that reads only "loss" (training): a model may then
     * skip outputs that cost memory, e.g. BertForMaskedLM's (B, S, V) logits.
     * bertc_outputs_init clears it. */
    bool loss_only;
    int cap;
    OutputItem *items;    /* in the graph's step arena, grown as outputs are put */
} Outputs;

void bertc_outputs_init(Outputs *o);
/* The name is copied into the graph's step arena (printf-style). */
void bertc_outputs_put(Outputs *o, Graph *g, Var *v, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void bertc_outputs_put_ids(Outputs *o, Graph *g, ITensor t, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
Var *bertc_outputs_get(const Outputs *o, const char *name);     /* NULL if absent */

/* ------------------------------------------------------------------------ */
/* Architectures and models                                                  */
/* ------------------------------------------------------------------------ */

/* What one input of an architecture is: its name in the batch, its type,
 * its shape and values (as the SPEC writes them), and whether it must be
 * given. Labels are read only for the loss. `bertc show` and the docs print
 * these; test/test_zoo_schema.c checks them against what the forward reads. */
typedef enum InputType {
    INPUT_IDS,            /* integers (ids, masks, positions, class labels) */
    INPUT_FLOAT,          /* floats (regression or multi-label targets) */
    INPUT_IDS_OR_FLOAT    /* either, by the config (BertForSequenceClassification labels) */
} InputType;

typedef struct InputSpec {
    const char *name;     /* "input_ids" */
    InputType type;
    const char *shape;    /* "(B, S)" */
    const char *values;   /* "[0, vocab_size)", "0 or 1", "-100 or [0, num_labels)" */
    bool required;        /* false: optional (a default is used) or a label */
    bool label;           /* read for the loss only */
} InputSpec;

/* One output (a name with "{l}" stands for one per layer, l = 0 .. L-1;
 * "{i}" for hidden states 0 .. L) and its shape. Outputs shaped
 * "(B, nh, S, S)" are attention maps `bertc attention` can draw. */
typedef struct OutputSpec {
    const char *name;     /* "layers.{l}.attention_probs" */
    const char *shape;    /* "(B, nh, S, S)" */
} OutputSpec;

/* Raw text for an architecture's batch_from_text: one example each. */
typedef struct TextExample {
    const char *text;                 /* the sentence, or the document's first sentence */
    const char *text_pair;            /* NULL, or the second text (a pair, a context) */
    const char *const *sentences;     /* BertSum: the document's sentences (n_sentences) */
    int n_sentences;
    int context_id;                   /* CGBERT/QACGBERT: the aspect/target id; -1 none */
} TextExample;

struct Tokenizer;
struct Model;

typedef struct ModelArch {
    const char *name;     /* architectures[0], also the printed root module */
    const char *summary;  /* one line: what it is and where it comes from */
    /* Its own config.json keys, stored in cfg->model (nn/config.h): the
     * model reads them with bertc_model_keys. The common BertConfig keys are
     * nn/'s. n_keys entries; size_t model_bytes the struct they fill. */
    const ConfigKey *keys;
    int n_keys;
    /* Rules between keys the table cannot say (a head count dividing
     * hidden_size, a length within max_position_embeddings); errors start
     * with "config: ". NULL: none. */
    int (*check_config)(const BertConfig *cfg, BertcError *err);
    /* Its inputs and outputs, and its loss in words: a family's shared
     * ones first (e.g. bertc_bert_inputs, bertc_bert_outputs: the encoder's), then the
     * model's own. bertc_model_input/model_output walk both. */
    const InputSpec *shared_inputs;
    int n_shared_inputs;
    const InputSpec *inputs;
    int n_inputs;
    const OutputSpec *shared_outputs;
    int n_shared_outputs;
    const OutputSpec *outputs;
    int n_outputs;
    const char *loss;
    /* Register every parameter (SPEC §6 names) and return the model's own
     * struct, allocated in r->arena. */
    void *(*build)(Registry *r, const BertConfig *cfg, BertcError *err);
    /* Validate the inputs against the config, run the forward, and put every
     * output (and "loss" when the labels are given). */
    int (*forward)(void *impl, const BertConfig *cfg, Graph *g, const Batch *in, Outputs *out,
                   BertcError *err);
    /* Optional: another spelling of a parameter name in weight files. */
    bool (*rename)(const char *name, char *alt, size_t len);
    /* A valid random batch of B sequences of S tokens (bertc_model_random_batch):
     * every input the forward reads and, with labels, what its loss needs. */
    int (*random_batch)(const BertConfig *cfg, Graph *g, int64_t B, int64_t S, bool labels,
                        Rng *rng, Batch *out, BertcError *err);
    /* Optional: the batch of n examples of raw text, tokenized with tok to
     * at most max_len tokens each, in g->step (bertc_model_batch_from_text). */
    int (*batch_from_text)(const struct Model *m, const struct Tokenizer *tok,
                           const TextExample *ex, int n, int32_t max_len, Graph *g, Batch *out,
                           BertcError *err);
} ModelArch;

/* The architectures (zoo/architectures.c: one line each), by name; NULL if
 * none has it. */
const ModelArch *bertc_zoo_arch(const char *name);
/* The i-th architecture of the table, NULL past the end (for listings). */
const ModelArch *bertc_zoo_arch_at(int i);
/* Input i (the shared ones first), NULL past the end; output likewise. */
const InputSpec *bertc_model_input(const ModelArch *arch, int i);
const OutputSpec *bertc_model_output(const ModelArch *arch, int i);
/* Whether the architecture declares an input of this name ("context_ids"). */
bool bertc_model_reads_input(const ModelArch *arch, const char *name);
/* Whether an output's name fits a declared one, where "{l}" and "{i}" stand
 * for a number: "layers.{l}.attention_probs" fits "layers.3.attention_probs". */
bool bertc_output_name_matches(const char *declared, const char *name);
/* The declaration that output `name` fits, NULL if none does. */
const OutputSpec *bertc_model_output_named(const ModelArch *arch, const char *name);

/* ------------------------------------------------------------------------ */
/* config.json: the common keys (nn/config.h) and the architecture's own     */
/* ------------------------------------------------------------------------ */

/* HF's defaults for the common keys and the architecture's defaults for
 * its own; an error for an unknown architecture (listing the known ones). */
int bertc_model_config_default(BertConfig *cfg, const char *architecture, BertcError *err);
/* config.json text -> BertConfig: the common keys, then the architecture's
 * (`name` is used in messages; the JSON tree lives in `scratch`, NULL: an
 * arena of its own). id2label's names too many for the config itself are
 * on the heap: bertc_bert_config_free frees them (nn/config.h). */
int bertc_bert_config_parse(Arena *scratch, const char *name, const char *text, size_t length,
                      BertConfig *cfg, BertcError *err);
int bertc_bert_config_read(const char *path, BertConfig *cfg, BertcError *err);   /* zoo/config_file.c */
/* Every rule of bertc_bert_config_parse on a BertConfig made or changed in code.
 * Errors start with "config: " and name the key. */
int bertc_bert_config_check(const BertConfig *cfg, BertcError *err);
/* The same with cfg's architecture given. */
int bertc_bert_config_check_as(const ModelArch *arch, const BertConfig *cfg, BertcError *err);
/* BertConfig -> config.json text in buf[0..cap), NUL-terminated, *len its
 * length: every key bertc_bert_config_parse reads, so the round trip is exact. */
int bertc_bert_config_format(const BertConfig *cfg, char *buf, size_t cap, size_t *len,
                       BertcError *err);
int bertc_bert_config_write(const char *path, const BertConfig *cfg, BertcError *err);
/* One of the architecture's own keys by name ("query_len", "masking.seed"),
 * as a number: set (range-checked; an error names the key and the
 * architecture's keys) and get (NaN if it has no such key). */
int bertc_model_config_set(BertConfig *cfg, const char *key, double value, BertcError *err);
double bertc_model_config_get(const BertConfig *cfg, const char *key);
/* The architecture's own keys, copied out of cfg->model into the struct
 * its table describes (bytes of it). */
void bertc_model_keys(const BertConfig *cfg, void *keys, size_t bytes);
/* A CONFIG_TOKEN_IDS key of the architecture; none (n = 0) if it has no
 * such key. */
ConfigTokenIds bertc_model_config_token_ids(const BertConfig *cfg, const char *key);

typedef struct Model {
    BertConfig cfg;
    const ModelArch *arch;
    Registry *reg;
    void *impl;
} Model;

/* Checks the config (bertc_bert_config_check), then the model's size
 * (bertc_model_size), then registers every parameter in `arena`. Errors about the
 * config start with "config: " (bertc_model_config_error puts the file there). */
int bertc_model_build(Model *m, Arena *arena, const BertConfig *cfg, BertcError *err);
/* The same, with the Linear weights named in int8_weights (n full names,
 * which must outlive the model) held as int8 without float values: a
 * quantised model (docs/quantization.md), filled by bertc_registry_load from
 * its I8 weights and F32 scales. bertc_model_open does this when config.json
 * has a quantization_config. */
int bertc_model_build_int8(Model *m, Arena *arena, const BertConfig *cfg,
                           const char *const *int8_weights, int n, BertcError *err);
/* The same with the weights read in place from const memory:
 * bertc_model_build_const (zoo/model_const.h). */

/* The most elements the parameters and buffers of a model may have: 2^34
 * float32, 64 GiB (bert-large has 3.4e8). A config above it is refused
 * before anything is allocated. */
#define MODEL_MAX_FLOATS 17179869184.0

/* The number of parameter and buffer elements the config's model would have,
 * counted by the architecture's own build code in a dry-run registry
 * (bertc_registry_create_dry), so it cannot drift from the real model; nothing of
 * the model's size is allocated. Above MODEL_MAX_FLOATS: an error naming the
 * largest tensor and the config keys that size it. The dry run takes a few
 * KB per layer from an arena of its own (the heap); bertc_model_build counts in
 * the caller's arena instead and gives that memory back, so it also works
 * on a fixed arena with no heap. A layer count (num_hidden_layers, or an
 * architecture's own) above 64 is first measured, from dry runs of one and
 * two layers: one whose layers' records alone would not fit in the memory
 * the arenas may still take (at most 64 GiB) is an error naming the key. */
int bertc_model_size(const BertConfig *cfg, double *floats, BertcError *err);

/* An error from bertc_model_build that starts with "config: " gets the config
 * file's path in its place, so the one-line message names the file. */
void bertc_model_config_error(BertcError *err, const char *config_path);
/* Load weights by name (SPEC §5 rules). init_missing: keep parameters the
 * file lacks at their init, with one warning listing them. */
int bertc_model_load(Model *m, const char *path, bool init_missing, BertcError *err);
/* config.json + weights (NULL: none, the model stays at its init) -> a
 * built, loaded model (zoo/model_file.c), as HF's from_pretrained: a
 * weights file without a pooler (pooler.dense.* under any prefix: saved
 * with add_pooling_layer=False) builds the model without one. Errors name
 * the file. */
int bertc_model_open(Model *m, Arena *arena, const char *config_path, const char *weights_path,
               BertcError *err);
/* Runs the model on the named inputs. An input the model does not read is an
 * error naming it and the inputs the model reads, caught after the forward
 * (the model's own lookups say what it reads) and before any output is used. */
int bertc_model_forward(Model *m, Graph *g, const Batch *in, Outputs *out, BertcError *err);
/* bertc_ag_backward(g, loss) for a loss bertc_model_forward produced, as an error (not
 * an abort) when the step's gradients do not fit in memory. */
int bertc_model_backward(Graph *g, Var *loss, BertcError *err);

/* ------------------------------------------------------------------------ */
/* Random batches (zoo/random_batch.c): benches and smoke tests              */
/* ------------------------------------------------------------------------ */

/* A valid random batch of B x S for m's architecture, tensors in g->step,
 * drawn from rng: token ids uniform over the real vocabulary
 * (bertc_random_first_token), no padding, one segment, the architecture's other
 * inputs in their ranges and, with labels, targets that give a finite loss
 * (BertModel has no loss). Errors: B or S below 1, or an S the architecture
 * cannot fill (QAConv: S <= query_len; SpanBERT: S < 3). */
int bertc_model_random_batch(const Model *m, Graph *g, int64_t B, int64_t S, bool labels, Rng *rng,
                       Batch *out, BertcError *err);
/* What a step on such a batch trains: the model's "loss" or, for a model
 * without one (BertModel), a stand-in whose backward runs through the whole
 * encoder (not the pooler): mean(last_hidden_state^2), the MSE against zeros.
 * NULL when there is neither. */
Var *bertc_model_step_loss(Graph *g, const Outputs *out);

/* The first id of the "real" vocabulary: 1000 when vocab_size > 1000
 * (bert-base-uncased keeps [PAD], [unusedN], [UNK], [CLS], [SEP], [MASK]
 * below 999), else one past the largest special token id of the config
 * (pad, unk, cls, sep, mask, masking.special_token_ids); 0 if none is left. */
int32_t bertc_random_first_token(const BertConfig *cfg);

/* ids (B, S) uniform in [bertc_random_first_token, V) and, drawn in the same
 * stream position by position, mlm_labels (B, S): the token at 15% of the
 * positions (position 0 of every row excluded), -100 elsewhere, and at
 * least one labelled position when S > 1. The same numbers as
 * tools/bench_torch.py draws for vocab_size > 1000. */
void bertc_random_tokens(const BertConfig *cfg, Graph *g, int64_t B, int64_t S, Rng *rng,
                   ITensor *ids, ITensor *mlm_labels);

/* bertc_random_tokens put under ids_name, an all-ones mask_name and all-zero
 * types_name (B, S); *mlm_labels as bertc_random_tokens'. */
void bertc_random_bert_inputs(const BertConfig *cfg, Graph *g, int64_t B, int64_t S, Rng *rng,
                        const char *ids_name, const char *mask_name, const char *types_name,
                        Batch *out, ITensor *mlm_labels);

/* (n) class indices uniform in [0, C). */
ITensor bertc_random_classes(Graph *g, int64_t n, int64_t C, Rng *rng);

/* ------------------------------------------------------------------------ */
/* The shared BERT encoder (zoo/bert.c), SPEC §6.1                           */
/* ------------------------------------------------------------------------ */

typedef enum BertFlavor {
    BERT_HF,              /* §6.1.1: (word + token_type) + position, finfo.min mask */
    BERT_PPB              /* §6.1.2 pytorch_pretrained_bert: (word + position) + token_type, -10000 */
} BertFlavor;

/* word_embeddings' padding_idx (its row is zero at init and gets no gradient). */
typedef enum BertWordPadding {
    WORD_PAD_CONFIG,      /* HF: config pad_token_id */
    WORD_PAD_ZERO,        /* pytorch_pretrained_bert: 0 */
    WORD_PAD_NONE         /* CGBERT's BERTEmbeddings: none */
} BertWordPadding;

/* How one family of BERT code spells the encoder: the module classes its
 * tree prints, its LayerNorm, and the numerics that differ (the flavor).
 * The parameter names and shapes are otherwise the same in every family. */
/* The module classes a family's tree prints. */
typedef struct BertClasses {
    const char *embeddings, *encoder, *layer, *attention, *self_attention, *self_output,
        *intermediate, *output, *pooler;
} BertClasses;

typedef struct BertSpelling {
    BertFlavor flavor;
    const BertClasses *classes;
    const char *layernorm;            /* a leaf repr ("BERTLayerNorm()"), or NULL for
                                         nn's "LayerNorm((H,), eps=..., ...)" */
    const char *ln_weight, *ln_bias;  /* "weight", "bias" or "gamma", "beta" */
    BertWordPadding word_padding;
    bool act_leaf;                    /* intermediate prints (intermediate_act_fn) */
    /* Self-attention parameters a file may spell otherwise, {ours, theirs}
     * (bertc_bert_spelling_rename): CGBERT's Wq -> query, ... */
    const char *const (*attention_names)[2];
    int n_attention_names;
} BertSpelling;

/* HF's modeling_bert, and pytorch_pretrained_bert 0.6.2 (BertSum). */
extern const BertSpelling bertc_bert_spelling_hf, bertc_bert_spelling_ppb;

/* The shape of a per-layer output of a self-attention. */
typedef enum BertMapShape {
    BERT_MAP_SCORES,                  /* (B, nh, S, S): attention probabilities, scores */
    BERT_MAP_ROWS,                    /* (B, nh, S, 1): a gate per head and query row */
    BERT_MAP_HEADS,                   /* (B, nh, S, d): per-head vectors (CGBERT's Q̂) */
    BERT_MAP_HIDDEN                   /* (B, S, H): the layer's extra input (CGBERT's D) */
} BertMapShape;

/* One per-layer output of a self-attention, "layers.{l}.<name>". */
typedef struct BertMap {
    const char *name;
    BertMapShape shape;
} BertMap;

/* A self-attention that replaces BERT's in every layer (CGBERT, QACGBERT). */
typedef struct BertAttentionHook {
    /* Registers one layer's parameters under "...attention.self." and
     * returns its state (in r->arena). */
    void *(*init)(Registry *r, const BertConfig *cfg);
    /* x (B, S, H); extra the layer's input from BertHooks.before_attention
     * (CGBERT: the deep context D (B, S, H)); mask (B, 1, 1, S) additive.
     * Returns the context (B, S, H) and puts map i of `maps` in maps_out[i]. */
    Var *(*forward)(Graph *g, const void *self, Var *x, Var *extra, Var *mask, Var **maps_out);
    const BertMap *maps;              /* maps[0] is "attention_probs" */
    int n_maps;
} BertAttentionHook;

/* What a model adds around the encoder; each hook gets back the `owner`
 * given to bertc_bert_encoder_init (the model that holds the BertModel). */
typedef struct BertHooks {
    /* Registers, inside "encoder." after the layers, what before_attention
     * uses (CGBERT: context_layer.{l}). */
    void (*encoder_init)(void *owner, Registry *r, const BertConfig *cfg);
    /* Layer l's extra input to the attention hook from X_l (B, S, H) and
     * the forward's BertInputs.hook_input (CGBERT: D from C0). */
    Var *(*before_attention)(Graph *g, const void *owner, int l, Var *x, Var *hook_input);
    /* Registers, inside "pooler." before its dense, what pool uses. */
    void (*pooler_init)(void *owner, Registry *r, const BertConfig *cfg);
    /* The pooler's input (B, H) from X_L (B, S, H) and the 0/1 attention
     * mask (B, S), and in *weights the token weights it pooled with (B, S)
     * (BertOutput.pool_weights); without this hook, X_L[:, 0]
     * (bertc_bert_first_token). */
    Var *(*pool)(Graph *g, const void *owner, Var *x, const ITensor *mask, Var **weights);
} BertHooks;

typedef struct BertLayer {
    BertSelfAttention self;           /* attention.self.{query,key,value} */
    void *hooked_self;                /* or the attention hook's state */
    Linear attn_out;                  /* attention.output.dense */
    LayerNorm attn_ln;                /* attention.output.LayerNorm */
    Dropout attn_drop;
    Linear inter;                     /* intermediate.dense */
    Linear out;                       /* output.dense */
    LayerNorm out_ln;                 /* output.LayerNorm */
    Dropout out_drop;
} BertLayer;

typedef struct BertModel {
    const BertSpelling *spelling;
    const BertAttentionHook *attention;   /* NULL: BERT's self-attention */
    const BertHooks *hooks;           /* NULL: none */
    void *owner;                      /* passed to the hooks */
    Embedding word, position, token_type;
    LayerNorm emb_ln;
    Dropout emb_drop;
    int n_layers;
    BertLayer *layers;
    bool has_pooler;
    Linear pooler;                    /* pooler.dense */
    BertAct act;
    int64_t heads;
} BertModel;

/* What bertc_bert_encoder_init builds: the spelling, and for a model that changes
 * the encoder its attention and hooks (NULL: BERT's). */
typedef struct BertEncoderSpec {
    const BertSpelling *spelling;
    const BertAttentionHook *attention;
    const BertHooks *hooks;
    void *owner;
    bool has_pooler;
} BertEncoderSpec;

/* Registers "embeddings.*", "encoder.layer.{l}.*" and (has_pooler)
 * "pooler.dense.*" under the current prefix of r (push "bert" first for
 * "bert.embeddings..."); the module tree prints as the spelling's family. */
void bertc_bert_encoder_init(BertModel *m, Registry *r, const BertConfig *cfg,
                       const BertEncoderSpec *spec);
/* The plain encoder of a flavor (HF's or pytorch_pretrained_bert's). */
void bertc_bert_model_init(BertModel *m, Registry *r, const BertConfig *cfg, BertFlavor flavor,
                     bool has_pooler);

/* The validated inputs of a BERT forward. */
typedef struct BertInputs {
    ITensor input_ids;                /* (B, S) */
    ITensor attention_mask;           /* (B, S): 1 keep, 0 pad */
    ITensor token_type_ids;           /* (B, S): zeros when absent */
    int64_t B, S;
    Var *hook_input;                  /* for BertHooks.before_attention (CGBERT: C0), or NULL */
} BertInputs;

/* Reads input_ids, attention_mask (all ones if absent) and token_type_ids
 * (zeros if absent) from the batch (names may be changed, e.g. BertSum's
 * "src", "mask", "segs"), checking shapes, S <= max_position_embeddings,
 * ids < vocab_size and types < type_vocab_size. */
int bertc_bert_read_inputs(const BertConfig *cfg, Graph *g, const Batch *in, const char *ids_name,
                     const char *mask_name, const char *types_name, BertInputs *out,
                     BertcError *err);

typedef struct BertOutput {
    Var *last_hidden_state;           /* (B, S, H) */
    Var *pooler_output;               /* (B, H) or NULL */
    Var *pool_weights;                /* the pool hook's token weights (B, S), or NULL */
    Var **hidden_states;              /* L + 1 of them, (B, S, H); NULL when lean */
    Var **maps;                       /* layer l's map i at [l * n_maps + i] (BertMap);
                                         NULL when lean */
} BertOutput;

/* Runs the embeddings, the encoder and the pooler; hidden states and
 * attention maps are kept for the outputs. In no_grad mode each layer's
 * temporaries are released once its output and maps are copied out; in lean
 * mode (bertc_ag_set_lean) neither is kept (zoo/bert.c). */
BertOutput bertc_bert_model_forward(Graph *g, const BertModel *m, const BertInputs *in);
/* X (B, S, H) -> X[:, 0] (B, H). */
Var *bertc_bert_first_token(Graph *g, Var *x);
/* Adds "hidden_states.{0..L}", "last_hidden_state", "pooler_output" and
 * the attention maps of bertc_bert_put_attention. */
void bertc_bert_put_outputs(Outputs *o, Graph *g, const BertModel *m, const BertOutput *r);
/* The inputs every BERT head reads (input_ids, attention_mask,
 * token_type_ids) and the outputs bertc_bert_put_outputs puts (last_hidden_state,
 * hidden_states.{i}, layers.{l}.attention_probs; pooler_output is each
 * model's own): a ModelArch's shared_inputs and shared_outputs. */
#define BERT_N_INPUTS 3
#define BERT_N_OUTPUTS 3
extern const InputSpec bertc_bert_inputs[BERT_N_INPUTS];
extern const OutputSpec bertc_bert_outputs[BERT_N_OUTPUTS];
/* Adds "layers.{l}.attention_probs" (B, nh, S, S) (and a hook's other maps)
 * for every layer: what `bertc attention` draws. */
void bertc_bert_put_attention(Outputs *o, Graph *g, const BertModel *m, const BertOutput *r);
/* The same for layer l only. */
void bertc_bert_put_layer_maps(Outputs *o, Graph *g, const BertModel *m, const BertOutput *r, int l);

/* Another spelling of a parameter in files, for LoadOptions.renames:
 * bertc_bert_spelling_rename, the spelling's attention_names ({ours, theirs}, in
 * "...attention.self.<ours>.*"); bertc_bert_layernorm_rename, as HF's
 * from_pretrained, "LayerNorm.gamma"/"beta" for "weight"/"bias" and back
 * (TF-era and original-repository checkpoints). */
bool bertc_bert_spelling_rename(const BertSpelling *s, const char *name, char *alt, size_t len);
bool bertc_bert_layernorm_rename(const char *name, char *alt, size_t len);
/* The options bertc_model_load uses for m: its architecture's rename and the
 * legacy LayerNorm names (every zoo model is a BERT). */
LoadOptions bertc_model_load_options(const Model *m, bool init_missing);

/* HF BertLMPredictionHead (zoo/bert_heads.c), used by BertForMaskedLM and
 * SpanBERT: t = LN(act(Dense(X))), logits = t E^T + bias with E the word
 * embeddings (tied: "cls.predictions.decoder.weight" names the same tensor,
 * "cls.predictions.decoder.bias" the same as "cls.predictions.bias"). */
typedef struct BertLMHead {
    Linear transform;                 /* cls.predictions.transform.dense */
    LayerNorm transform_ln;           /* cls.predictions.transform.LayerNorm */
    Var *decoder_weight;              /* = bert.embeddings.word_embeddings.weight */
    Var *bias;                        /* cls.predictions.bias (V) */
    BertAct act;
} BertLMHead;

/* Registers "cls.predictions.*" at the root of r, tied to word_embeddings. */
void bertc_bert_lm_head_init(BertLMHead *h, Registry *r, const BertConfig *cfg, Var *word_embeddings);
Var *bertc_bert_lm_head_forward(Graph *g, const BertLMHead *h, Var *x);   /* (B,S,H) -> (B,S,V) */
/* The activation named by hidden_act (gelu = erf form). */
Var *bertc_bert_activation(Graph *g, BertAct act, Var *x);
/* LayerNorm(a + b), the residual Add & Norm, as one op (bertc_ag_add_layernorm). */
Var *bertc_bert_add_norm(Graph *g, const LayerNorm *ln, Var *a, Var *b);

/* ------------------------------------------------------------------------ */
/* SpanBERT span masking (zoo/span_masking.c), SPEC §6.7.2                   */
/* ------------------------------------------------------------------------ */

/* masking.style: whose span masking (zoo/span_masking.c). */
typedef enum SpanMaskingStyle {
    SPAN_MASKING_SEED = 0,      /* the seed's SpanCollator */
    SPAN_MASKING_ORIGINAL = 1   /* the paper's, as facebookresearch/SpanBERT's PairWithSpanMaskingScheme */
} SpanMaskingStyle;

/* The config's "masking" object (SPEC §6.7.2). */
typedef struct SpanMaskingConfig {
    bool present;               /* the config has a "masking" object */
    uint64_t seed;
    double masking_budget;      /* double: floor(budget * l) must match Python */
    double span_probability;
    int max_span_length_cap;
    ConfigTokenIds special_token_ids;
    int style;                  /* SpanMaskingStyle */
} SpanMaskingConfig;

/* sbo_head: whose Span Boundary Objective head (zoo/spanbert.c). */
typedef enum SboHeadKind {
    SBO_HEAD_SEED = 0,          /* the seed's SBOHead */
    SBO_HEAD_ORIGINAL = 1       /* facebookresearch/SpanBERT's BertPairTargetPredictionHead */
} SboHeadKind;

/* SpanBertForPreTraining's own config keys (zoo/spanbert.c). */
typedef struct SpanBertKeys {
    int sbo_dim_ffn;            /* the SBO head's hidden size [intermediate_size] */
    int sbo_max_span_length;    /* span_pos_emb has 3 x this many rows */
    float sbo_layer_norm_eps;
    SpanMaskingConfig masking;
    int sbo_head;               /* SboHeadKind */
    int sbo_max_targets;        /* original head: rows of position_embeddings */
    int sbo_position_embedding_size;   /* original head: their width P */
} SpanBertKeys;

SpanBertKeys bertc_spanbert_keys(const BertConfig *cfg);

/* masking.token_kinds: what each token may be in the candidate list. */
typedef enum TokenKind {
    TOKEN_PADDING = -1,
    TOKEN_WORD_START = 0,         /* a word's first WordPiece: may start a span */
    TOKEN_CONTINUATION = 1,       /* "##..": joins the word before it */
    TOKEN_EXCLUDED = 2            /* punctuation-initial: never a candidate */
} TokenKind;

/* The seed's loop `while budget:` spins forever once no candidate can start
 * a span any more, e.g. "[CLS] [MASK] ##a b [SEP] c ##d ##e [SEP]" with a
 * budget of 2: if b is covered alone, 1 is left and every other word is
 * longer than 1. We stop such a row with an error after this many draws.
 * A row that can still progress does so with probability >= 0.8^9/len(cand)
 * per draw (defaults p = 0.2, cap 10: the rarest useful span is 10 long),
 * >= 2.6e-4 for l <= 512; spending a 76-token budget then takes ~290k
 * draws on average and more than 2^20 with probability < 1e-30. Reaching
 * the bound costs ~20 ms. */
#define SPAN_MASKING_MAX_DRAWS (1L << 20)

/* One unpadded row, tokens[0..l-1] with kinds[0..l-1]: the span masking of
 * the seed's SpanCollator._whole_word_mask with cfg->masking's budget, span
 * probability and cap, drawn from rng (SPEC §6.7.1). Writes raw_mask[t] = 1
 * for covered positions, 0 elsewhere; the scratch (3 arrays of l) comes from
 * `scratch`. Errors: a positive budget with no candidate, or
 * SPAN_MASKING_MAX_DRAWS draws without spending the budget. With
 * masking.style "original", the paper's masking instead (zoo/span_masking.c):
 * whole words, ceil(budget * n) of the n tokens other than [CLS]/[SEP]. */
int bertc_span_mask_row(const BertConfig *cfg, const int32_t *tokens, const int32_t *kinds, int64_t l,
                  Rng *rng, Arena *scratch, int32_t *raw_mask, BertcError *err);

/* masking.style "original", draw 1: a span length in words, from the
 * geometric pmf p(1-p)^(k-1) truncated to [1, max_span_length_cap] and
 * renormalised (the original's len_distrib). */
int64_t bertc_span_length_words(const SpanMaskingConfig *mc, Rng *rng);

typedef struct SpanMasking {
    ITensor raw_mask_labels;      /* (B, S) covered positions, before cleaning */
    ITensor mask_labels;          /* (B, S) 0 on special tokens and padding */
    ITensor input_ids;            /* (B, S) [MASK] where mask_labels == 1 */
    ITensor labels;               /* (B, S) original id where mask_labels == 1, else -100 */
} SpanMasking;

/* The padded batch: original_input_ids (B, S), token_kinds (B, S) and
 * lengths (B), rows in order from one stream seeded with cfg->masking.seed.
 * Special tokens (cleaned out of mask_labels): pad, unk, cls, sep, mask ids
 * and masking.special_token_ids. Inputs are assumed validated. */
int bertc_span_masking(const BertConfig *cfg, const ITensor *original_input_ids,
                 const ITensor *token_kinds, const ITensor *lengths, Arena *arena,
                 SpanMasking *out, BertcError *err);
/* bertc_span_masking drawing from the caller's stream instead of one seeded with
 * masking.seed: a new mask for every random batch. */
int bertc_span_masking_rng(const BertConfig *cfg, const ITensor *original_input_ids,
                     const ITensor *token_kinds, const ITensor *lengths, Rng *rng,
                     Arena *arena, SpanMasking *out, BertcError *err);

/* ------------------------------------------------------------------------ */
/* The run path of `bertc run` (zoo/run.c)                                   */
/* ------------------------------------------------------------------------ */

typedef struct RunArgs {
    const char *config, *weights, *inputs, *output;
    bool grad;            /* backward of "loss", and grad.<name> for every parameter */
    bool stats;           /* print arena high-water marks */
} RunArgs;

/* config + weights + inputs -> every output (F32; integer outputs I64) and,
 * with grad, "grad.<key>" for every parameter key (tied aliases under both
 * names) into args->output, written atomically. Eval mode. */
int bertc_zoo_run(const RunArgs *args, BertcError *err);

/* ------------------------------------------------------------------------ */
/* Raw text -> a model's batch (zoo/text_batch.c)                            */
/* ------------------------------------------------------------------------ */

/* The batch of n examples of raw text for m's architecture
 * (ModelArch.batch_from_text), in g->step: each example tokenized to at most
 * max_len tokens (0: max_position_embeddings), truncated LongestFirst, and
 * padded to the longest. An error for an architecture without one, and for
 * text its inputs cannot hold (a question longer than QAConv's query_len,
 * no context id for CGBERT). The batch's source (in its errors) is set by
 * the caller (bertc_batch_init) before. */
int bertc_model_batch_from_text(const Model *m, const Tokenizer *tok, const TextExample *ex, int n,
                          int32_t max_len, Graph *g, Batch *out, BertcError *err);

/* The pieces architectures build theirs from: n encodings stacked (n, S),
 * S the longest and at least min_len, [PAD] after each. */
typedef struct TextBatch {
    Encoding *enc;                    /* n of them */
    ITensor input_ids, attention_mask, token_type_ids;   /* (n, S) */
} TextBatch;

int bertc_text_batch_encode(const BertConfig *cfg, const Tokenizer *tok, const TextExample *ex, int n,
                      int32_t max_len, int32_t min_len, Graph *g, TextBatch *tb,
                      BertcError *err);
/* Puts the three (n, S) tensors under the given names. */
void bertc_text_batch_put(const TextBatch *tb, const char *ids, const char *mask, const char *types,
                    Batch *out);
/* The BERT heads' batch_from_text: [CLS] text [SEP] (text_pair [SEP]) as
 * input_ids, attention_mask, token_type_ids. */
int bertc_bert_batch_from_text(const Model *m, const Tokenizer *tok, const TextExample *ex, int n,
                         int32_t max_len, Graph *g, Batch *out, BertcError *err);

/* ------------------------------------------------------------------------ */
/* Model directories                                                         */
/* ------------------------------------------------------------------------ */

/* A Hugging Face model directory as one unit (zoo/model_dir_file.c):
 * config.json, model.safetensors (absent: the model keeps its init),
 * vocab.txt (absent: no tokenizer) and tokenizer_config.json (do_lower_case,
 * strip_accents null or equal to it, the special tokens, model_max_length). */
typedef struct ModelDir {
    char dir[BERTC_PATH_MAX];
    Model model;
    bool has_weights;
    bool has_tokenizer;
    Tokenizer tok;
    int32_t model_max_length;         /* at most max_position_embeddings */
} ModelDir;

/* A dir longer than a directory path may be (bertc_path_check_dir) is an
 * error naming it, for both bertc_model_dir_open and bertc_model_dir_save. */
int bertc_model_dir_open(ModelDir *d, Arena *arena, const char *dir, BertcError *err);
/* Writes config.json (with id2label/label2id), model.safetensors (HF's
 * names, atomically) and, with tok, vocab.txt and tokenizer_config.json,
 * into dir (created if needed): what from_pretrained, AutoTokenizer and
 * bertc_model_dir_open read back. */
int bertc_model_dir_save(const char *dir, const Model *m, const Tokenizer *tok,
                         BertcError *err);

#include "zoo/model_const.h"   /* a classifier from const data (bertc export-c) */

#endif /* BERTC_ZOO_H */
