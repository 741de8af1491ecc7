/*
 * nn/config.h — the common keys of a Hugging Face config.json (BertConfig,
 * SPEC §5) and the key tables every architecture's own keys are read with.
 *
 * This layer knows no architecture: it reads the keys of transformers'
 * BertConfig and PretrainedConfig that every BERT model shares, keeps the
 * name in "architectures"[0], and leaves the model's own keys (CGBERT's
 * context_vocab_size, QAConv's query_len, ...) to the architecture, which
 * declares them as a ConfigKey table (zoo/models/model.h, ModelArch.keys) stored in
 * cfg->model. zoo/ puts the two together:
 *
 *     BertConfig cfg;
 *     BertcError err;
 *     if (bertc_bert_config_read("model/config.json", &cfg, &err) != 0) {   // zoo/models/model.h
 *         fprintf(stderr, "%s\n", err.msg);  // model/config.json: missing key "hidden_size"
 *         return 1;
 *     }
 *     printf("%s: H=%d, L=%d, nh=%d\n", cfg.architecture, cfg.hidden_size,
 *            cfg.num_hidden_layers, cfg.num_attention_heads);
 *
 * Required keys: architectures (its first entry selects the model),
 * vocab_size, hidden_size, num_hidden_layers, num_attention_heads,
 * intermediate_size, max_position_embeddings. The others take Hugging
 * Face's defaults (bertc_bert_config_default). num_labels comes from "num_labels",
 * else from the number of entries of "id2label", else 2; if both are present
 * they must agree, and label2id, when present, must be id2label's inverse.
 * A null value means "use the default", as HF does for problem_type,
 * classifier_dropout and the token ids. Unknown keys are ignored. A missing
 * required key, a wrong type or a value out of range is an error naming the
 * key (e.g. "masking.seed"). Sizes, layer counts included, are integers in
 * [1, 2^31 - 1] (what they add up to is bounded by memory: bertc_model_size);
 * token ids are below vocab_size; num_attention_heads divides hidden_size.
 */
#ifndef BERTC_NN_CONFIG_H
#define BERTC_NN_CONFIG_H

#include "nn/json.h"
#include "tensor/tensor.h"

typedef enum BertAct {
    ACT_GELU,                   /* "gelu": erf form */
    ACT_GELU_TANH,              /* "gelu_new", "gelu_pytorch_tanh" */
    ACT_RELU                    /* "relu" */
} BertAct;

/* quantization_config.quant_method of an int8 model (`bertc quantize`), and
 * of a bf16 one (`bertc quantize --dtype bf16`). */
#define CONFIG_QUANT_METHOD "bertc_dynamic_int8"
#define CONFIG_QUANT_METHOD_BF16 "bertc_bf16"

typedef enum ProblemType {
    PROBLEM_UNSET,              /* absent or null: the model infers it (SPEC §6.2) */
    PROBLEM_REGRESSION,
    PROBLEM_SINGLE_LABEL,       /* "single_label_classification" */
    PROBLEM_MULTI_LABEL         /* "multi_label_classification" */
} ProblemType;

/* architectures[0] is at most this long (with its NUL). */
#define CONFIG_ARCH_NAME_MAX 64
/* Room for an architecture's own keys in BertConfig.model. */
#define CONFIG_MODEL_BYTES 256
/* id2label's names, each with its NUL, are held in the config itself when
 * they fit this many bytes (so that a config copies by value and a
 * firmware's const config holds them); more go to the heap (hosted builds:
 * as many as memory holds). */
#define CONFIG_LABEL_BYTES 4096

typedef struct BertConfig {
    char architecture[CONFIG_ARCH_NAME_MAX];   /* "architectures"[0] */
    /* HF BertConfig */
    int vocab_size, hidden_size, num_hidden_layers, num_attention_heads, intermediate_size;
    BertAct hidden_act;
    float hidden_dropout_prob, attention_probs_dropout_prob;
    int max_position_embeddings, type_vocab_size;
    float initializer_range, layer_norm_eps;
    float classifier_dropout;   /* < 0: null, the heads use hidden_dropout_prob */
    /* HF PretrainedConfig: token ids, -1 when absent (pad defaults to 0) */
    int pad_token_id, sep_token_id, mask_token_id, cls_token_id, unk_token_id;
    int num_labels;
    ProblemType problem_type;
    /* id2label: num_labels names, each NUL-terminated, one after the other
     * (n_label_names 0: the config has none, HF's names are LABEL_0, ...),
     * in label_names when they fit, else in label_spill. Read them with
     * bertc_bert_config_label. */
    int n_label_names;
    char label_names[CONFIG_LABEL_BYTES];
    /* The names when they do not fit label_names (NULL: they do), in memory
     * held elsewhere: the heap when label_heap (set by bertc_bert_config_set_labels
     * or a config.json read; bertc_bert_config_free frees it), a model's arena
     * (bertc_model_build keeps its own copy), const data (export-c). A copy of
     * the config by value shares them: free only the config that set them. */
    const char *label_spill;
    bool label_heap;
    /* HF's add_pooling_layer=False, as BertModel and the token, QA and MLM
     * heads are saved without pooler.* (bertc's key; written when false) */
    bool add_pooling_layer;
    /* "quantization_config": {"quant_method": "bertc_dynamic_int8", ...}: a
     * model `bertc quantize` wrote (docs/quantization.md), whose Linear
     * weights are int8 in its model.safetensors. Any other quant_method is
     * an error when read. */
    bool int8_dynamic;
    /* "quant_method": "bertc_bf16": the Linear weights are BF16 in its
     * model.safetensors, and an inference run multiplies them by the bf16
     * GEMM (tensor/kernels.h); training reads them as float32. */
    bool bf16;
    /* The architecture's own keys: the struct its ConfigKey table describes
     * (read and written with memcpy, see bertc_config_key_ptr). */
    union {
        unsigned char bytes[CONFIG_MODEL_BYTES];
        double align_double;
        uint64_t align_u64;
    } model;
} BertConfig;

/* HF's defaults (bert-base-uncased sizes) for the common keys, with the
 * architecture's name; the model's own keys all zero (zoo/'s
 * bertc_model_config_default sets them). */
BertConfig bertc_bert_config_default(const char *architecture);

/* id2label[i], or NULL when the config names no labels. */
const char *bertc_bert_config_label(const BertConfig *cfg, int i);
/* Sets id2label from n names (n must equal num_labels when used by a
 * classifier), copied: into the config when they fit CONFIG_LABEL_BYTES,
 * else onto the heap (an error naming id2label when memory, or a
 * FREESTANDING build, has none). The names the config held on the heap are
 * freed. */
int bertc_bert_config_set_labels(BertConfig *cfg, const char *const *names, int n, BertcError *err);
/* The same with name i given by name(ctx, i), for i in [0, n). */
typedef const char *(*BertLabelFn)(void *ctx, int i);
int bertc_bert_config_set_labels_by(BertConfig *cfg, int n, BertLabelFn name, void *ctx,
                                    BertcError *err);
/* Frees the names cfg holds on the heap (label_heap), and forgets them; a
 * config without any is left as it is. */
void bertc_bert_config_free(BertConfig *cfg);
/* All the names, one after the other (n_label_names NUL-terminated
 * strings), and their bytes in *bytes; NULL when there are none. */
const char *bertc_bert_config_label_text(const BertConfig *cfg, size_t *bytes);

const char *bertc_bert_act_name(BertAct act);           /* "gelu", "gelu_new", "relu" */
/* config.json's spelling of a problem type ("single_label_classification");
 * NULL for PROBLEM_UNSET. */
const char *bertc_problem_type_name(ProblemType p);
/* The problem a sequence classifier solves, for its loss, its random labels
 * and how a prediction reads its logits: problem_type when the config sets
 * one, else Hugging Face's rule (BertForSequenceClassification.forward):
 * one label is regression; several are single-label when the labels are
 * integers, multi-label when they are floats. Prediction has no labels and
 * asks with int_labels true: several labels are single-label (softmax). */
ProblemType bertc_problem_type(const BertConfig *cfg, bool int_labels);

/* ------------------------------------------------------------------------ */
/* Key tables                                                                */
/* ------------------------------------------------------------------------ */

typedef enum ConfigKind {
    CONFIG_INT,                 /* int */
    CONFIG_FLOAT,               /* float */
    CONFIG_DOUBLE,              /* double (span masking: floor(budget * l) as Python) */
    CONFIG_U64,                 /* uint64_t (seeds) */
    CONFIG_CHOICE,              /* int: the index of the string in .choices */
    CONFIG_TOKEN_IDS,           /* ConfigTokenIds: an array of token ids */
    CONFIG_OBJECT               /* bool: the object "key" is present; its keys
                                 * are the entries "key.name" that follow */
} ConfigKind;

typedef enum ConfigRange {
    RANGE_POSITIVE,             /* ints >= 1, floats > 0 */
    RANGE_NONNEG,               /* >= 0 */
    RANGE_PROB,                 /* 0 <= p <= 1 */
    RANGE_PROB_POSITIVE,        /* 0 < p <= 1 */
    RANGE_TOKEN_ID,             /* 0 <= id < vocab_size */
    RANGE_LAYERS,               /* a layer count, >= 1 (bertc_model_size bounds it by memory) */
    RANGE_LAYERS_OR_0           /* a layer count, >= 0 */
} ConfigRange;

#define CONFIG_MAX_TOKEN_IDS 16
typedef struct ConfigTokenIds {
    int n;
    int32_t ids[CONFIG_MAX_TOKEN_IDS];
} ConfigTokenIds;

/* One key of config.json: where it is stored (an offset into the
 * architecture's struct), its kind, whether it must be given, its range and
 * its default. A key "masking.seed" lives in the object "masking", which
 * has an entry of its own (CONFIG_OBJECT) before its keys; a required key
 * of an object is required only when the object is there. */
typedef struct ConfigKey {
    const char *key;
    size_t offset;
    ConfigKind kind;
    bool required;
    ConfigRange range;
    double default_value;         /* CONFIG_CHOICE: the index */
    const char *default_from;     /* or: the value of this common key ("intermediate_size") */
    const char *const *choices;   /* CONFIG_CHOICE: the names, NULL-terminated */
    const char *doc;              /* one line, for `bertc show` and the docs */
} ConfigKey;

/* A pointer to the key's value inside base (an unaligned spot of bytes: read
 * and write it with memcpy). */
void *bertc_config_key_ptr(void *base, const ConfigKey *k);
const void *bertc_config_key_cptr(const void *base, const ConfigKey *k);

/* The defaults of n keys into base (default_from keys from cfg). */
void bertc_config_default_keys(const ConfigKey *keys, int n, void *base, const BertConfig *cfg);
/* Reads the keys from a config.json object into base; absent (or null)
 * optional keys keep what is there. Token ids are checked against
 * cfg->vocab_size. */
int bertc_config_read_keys(const JsonValue *root, const ConfigKey *keys, int n, void *base,
                     const BertConfig *cfg, BertcError *err);
/* The same ranges on values set in code: "config: <key> = ... is outside ...". */
int bertc_config_check_keys(const ConfigKey *keys, int n, const void *base, const BertConfig *cfg,
                      BertcError *err);
/* Appends ",\n  \"key\": value" for every key (objects nested, absent
 * objects left out) to buf[*len..cap) (*len grows past cap on overflow). */
void bertc_config_format_keys(const ConfigKey *keys, int n, const void *base, char *buf, size_t cap,
                        size_t *len);
/* The key named `key` (NULL if none), and its value as a number. */
const ConfigKey *bertc_config_find_key(const ConfigKey *keys, int n, const char *key);
double bertc_config_key_value(const ConfigKey *k, const void *base);
/* Sets a number-valued key, range-checked: an error names it. */
int bertc_config_set_key(const ConfigKey *k, void *base, double value, const BertConfig *cfg,
                   BertcError *err);

/* ------------------------------------------------------------------------ */
/* The common keys                                                           */
/* ------------------------------------------------------------------------ */

/* Reads architectures[0] and every common key from a parsed config.json. */
int bertc_bert_config_read_common(const JsonValue *root, BertConfig *cfg, BertcError *err);
/* The common rules on a BertConfig made or changed in code. Errors start
 * with "config: " and name the key. */
int bertc_bert_config_check_common(const BertConfig *cfg, BertcError *err);
/* The common keys as config.json lines: "{\n  \"architectures\": ..." with
 * no closing brace, appended to buf[*len..cap) as bertc_config_format_keys. */
void bertc_bert_config_format_common(const BertConfig *cfg, char *buf, size_t cap, size_t *len);

#endif /* BERTC_NN_CONFIG_H */
