/*
 * nn/config.h — Hugging Face config.json -> BertConfig (SPEC §5).
 *
 *     BertConfig cfg;
 *     BertcError err;
 *     if (bert_config_read("model/config.json", &cfg, &err) != 0) {
 *         fprintf(stderr, "%s\n", err.msg);  // model/config.json: missing key "hidden_size"
 *         return 1;
 *     }
 *     printf("%s: H=%d, L=%d, nh=%d\n", bert_arch_name(cfg.arch), cfg.hidden_size,
 *            cfg.num_hidden_layers, cfg.num_attention_heads);
 *
 * Required keys: architectures (its first entry selects the model),
 * vocab_size, hidden_size, num_hidden_layers, num_attention_heads,
 * intermediate_size, max_position_embeddings. The other BertConfig keys take
 * Hugging Face's defaults (bert_config_default). num_labels comes from
 * "num_labels", else from the number of entries of "id2label", else 2; if
 * both are present they must agree. A null value means "use the default",
 * as HF does for problem_type and the token ids.
 *
 * Model keys are read only for their architecture (defaults in brackets):
 *   CGBert/QACGBert...  context_vocab_size [8], pooler_type [attention_gate]
 *   Summarizer          ff_size, heads, inter_layers (required),
 *                       inter_layer_norm_eps [1e-6], pe_max_len [5000]
 *   QAConvModelV2       sep_token_id (required), query_len [50], conv_filters [1024],
 *                       num_question_types [6], attention_temperature [10],
 *                       query_loss_divisor [5]
 *   SpanBertForPreTraining  mask_token_id, cls_token_id, sep_token_id,
 *                       unk_token_id (required), sbo_dim_ffn [intermediate_size],
 *                       sbo_layer_norm_eps [1e-5], sbo_max_span_length [10], and an
 *                       optional "masking" object: seed (required in it),
 *                       masking_budget [0.15], span_probability [0.2],
 *                       max_span_length_cap [10], special_token_ids [[]]
 * Unknown keys are ignored. A missing required key, a wrong type or a value
 * out of range is an error naming the key (e.g. "masking.seed"). Sizes are
 * integers in [1, 2^31 - 1] (inter_layers may be 0); the layer counts
 * num_hidden_layers and inter_layers are at most CONFIG_MAX_LAYERS; token ids
 * are below vocab_size; num_attention_heads (Summarizer: heads) divides
 * hidden_size; QAConv's query_len is at most max_position_embeddings. The
 * total (every parameter and buffer of the architecture, e.g. QAConv's
 * [H, query_len·H] query_layer or BertSum's [1, pe_max_len, H] pe) is
 * checked when the model is built (model_size in zoo/zoo.h).
 */
#ifndef BERTC_NN_CONFIG_H
#define BERTC_NN_CONFIG_H

#include "tensor/tensor.h"

typedef enum BertArch {
    ARCH_BERT_MODEL,            /* BertModel */
    ARCH_BERT_SEQCLS,           /* BertForSequenceClassification */
    ARCH_BERT_MLM,              /* BertForMaskedLM */
    ARCH_CGBERT,                /* CGBertForSequenceClassification */
    ARCH_QACGBERT,              /* QACGBertForSequenceClassification */
    ARCH_SUMMARIZER,            /* Summarizer (BertSumExt) */
    ARCH_QACONV,                /* QAConvModelV2 */
    ARCH_SPANBERT,              /* SpanBertForPreTraining */
    ARCH_COUNT
} BertArch;

typedef enum BertAct {
    ACT_GELU,                   /* "gelu": erf form */
    ACT_GELU_TANH,              /* "gelu_new", "gelu_pytorch_tanh" */
    ACT_RELU                    /* "relu" */
} BertAct;

typedef enum ProblemType {
    PROBLEM_UNSET,              /* absent or null: the model infers it (SPEC §6.2) */
    PROBLEM_REGRESSION,
    PROBLEM_SINGLE_LABEL,       /* "single_label_classification" */
    PROBLEM_MULTI_LABEL         /* "multi_label_classification" */
} ProblemType;

typedef enum PoolerType {
    POOLER_ATTENTION_GATE,      /* the CGBERT seed's pooler */
    POOLER_FIRST_TOKEN          /* the original repository's: token 0 */
} PoolerType;

#define CONFIG_MAX_SPECIAL_IDS 16
/* The most layers a config may ask for (num_hidden_layers, inter_layers):
 * far above any BERT (bert-large has 24). It keeps registration cheap before
 * the model's size is checked (registry_find is linear per name, so a build
 * is quadratic in the number of parameters), and every model's outputs
 * within the Outputs table (CGBERT puts 7 a layer: 64 x 7 + 4 < 512). */
#define CONFIG_MAX_LAYERS 64

/* SpanBERT span masking (SPEC §6.7.2). */
typedef struct SpanMaskingConfig {
    bool present;               /* the config has a "masking" object */
    uint64_t seed;
    double masking_budget;      /* double: floor(budget * l) must match Python */
    double span_probability;
    int max_span_length_cap;
    int n_special_token_ids;
    int32_t special_token_ids[CONFIG_MAX_SPECIAL_IDS];
} SpanMaskingConfig;

typedef struct BertConfig {
    BertArch arch;
    /* HF BertConfig */
    int vocab_size, hidden_size, num_hidden_layers, num_attention_heads, intermediate_size;
    BertAct hidden_act;
    float hidden_dropout_prob, attention_probs_dropout_prob;
    int max_position_embeddings, type_vocab_size;
    float initializer_range, layer_norm_eps;
    int pad_token_id;
    int num_labels;
    ProblemType problem_type;
    /* CGBERT / QACGBERT */
    int context_vocab_size;
    PoolerType pooler_type;
    /* Summarizer */
    int ff_size, heads, inter_layers, pe_max_len;
    float inter_layer_norm_eps;
    /* QAConvModelV2 */
    int query_len, conv_filters, num_question_types;
    float attention_temperature, query_loss_divisor;
    /* token ids: -1 when absent and not required by the architecture */
    int sep_token_id, mask_token_id, cls_token_id, unk_token_id;
    /* SpanBertForPreTraining */
    int sbo_dim_ffn, sbo_max_span_length;
    float sbo_layer_norm_eps;
    SpanMaskingConfig masking;
} BertConfig;

/* bert-base-uncased sizes, HF defaults and the model defaults above. */
BertConfig bert_config_default(BertArch arch);

/* Parse config.json text (`name` is used in messages). The JSON tree lives in
 * `scratch` (NULL: a temporary arena of its own); the BertConfig holds no
 * pointers into it. */
int bert_config_parse(Arena *scratch, const char *name, const char *text, size_t length,
                      BertConfig *cfg, BertcError *err);
int bert_config_read(const char *path, BertConfig *cfg, BertcError *err);

/* The same rules on a BertConfig made or changed in code: every key of its
 * architecture in range, heads dividing hidden_size, query_len within
 * max_position_embeddings. Errors start with "config: " and name the key.
 * (The model's total size is checked by model_size in zoo/, which calls
 * this first.) */
int bert_config_check(const BertConfig *cfg, BertcError *err);

/* BertConfig -> config.json text (NUL-terminated) in buf[0..cap); *len gets
 * its length. Every key that bert_config_parse reads is written, so the
 * round trip is exact. */
int bert_config_format(const BertConfig *cfg, char *buf, size_t cap, size_t *len,
                       BertcError *err);
/* bert_config_format to a file (nn/config_file.c). */
int bert_config_write(const char *path, const BertConfig *cfg, BertcError *err);

const char *bert_arch_name(BertArch arch);        /* "BertModel", ... */
const char *bert_act_name(BertAct act);           /* "gelu", "gelu_new", "relu" */

#endif /* BERTC_NN_CONFIG_H */
