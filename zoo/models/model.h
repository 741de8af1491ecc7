/*
 * zoo/models/model.h — the BERT variants of SPEC §6 and the one code path
 * that runs them (`bertc run`, the parity tests and the examples all go
 * through it):
 * architectures (ModelArch), config.json, Model, random and text batches,
 * the run path and model directories.
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
#ifndef BERTC_ZOO_MODELS_MODEL_H
#define BERTC_ZOO_MODELS_MODEL_H

#include "nn/nn.h"
#include "zoo/text/tokenizer.h"   /* the WordPiece tokenizer (SPEC §7) */
#include "zoo/models/batch.h"

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
    /* NULL: the text (and text_pair) is tokenized. Else its tokens, already
     * made (a window of a long text, bertc_encoding_window; an encoding a
     * caller sorted batches by): bertc_text_batch_encode takes them as they
     * are, text and text_pair unread. */
    const Encoding *encoding;
} TextExample;

/* What a model's outputs answer: what `bertc predict` does with them, and
 * (with ModelArch.finetune_head) what `bertc finetune --task` builds. Set
 * by each architecture, never guessed from its output shapes. */
typedef enum ModelTask {
    MODEL_TASK_ENCODER,         /* hidden states and a pooler only (BertModel): bertc embed */
    MODEL_TASK_SEQ_CLS,         /* "logits" (B, num_labels): labels or a value per text */
    MODEL_TASK_TOKEN_CLS,       /* "logits" (B, S, num_labels): a label per token */
    MODEL_TASK_QA_SPAN,         /* "start_logits", "end_logits" (B, S): an answer span */
    MODEL_TASK_MASKED_LM,       /* "logits" or "prediction_logits" (B, S, V): tokens for
                                   each [MASK] (BertForPreTraining's NSP rides along) */
    MODEL_TASK_SUMMARIZATION,   /* "sent_scores" (B, N): extractive, a score per sentence */
    MODEL_TASK_MULTIPLE_CHOICE, /* "logits" (B, C): one of C (text, pair) choices */
    MODEL_TASK_PRETRAINING      /* objectives on a masking of its own (SpanBERT): its
                                   forward replaces the tokens, so predict runs none */
} ModelTask;

/* "sequence classification", "fill-mask", ... */
const char *bertc_model_task_name(ModelTask task);

/* The pretraining objectives (zoo/train/pretrain.h): which loss an
 * architecture's forward computes from a masked batch. */
typedef enum ModelPretraining {
    MODEL_PRETRAIN_NONE,
    MODEL_PRETRAIN_MLM,         /* masked tokens: "labels" (B, S) */
    MODEL_PRETRAIN_MLM_NSP,     /* + next sentence prediction: "next_sentence_label" (B) */
    MODEL_PRETRAIN_SPAN         /* span masking + span boundary objective: "mask_labels" (B, S) */
} ModelPretraining;

/* ---- what `bertc explain` walks through (ModelArch.explain) ------------- */

/* One step of a forward: its title, its equation (HTML with Unicode maths:
 * the page is one file with nothing to fetch), the bertc function that
 * computes it ("zoo/models/bert.c:bertc_bert_layer_forward": test/test_explain.c checks
 * that the file defines it) and the output that holds its result. In
 * `output`, "{l}" runs over the encoder's layers (with "{i}" = l + 1 in the
 * same step, a layer's output hidden state), "{k}" over a second stack
 * (BertSum's inter-sentence layers) for as long as the forward put one. An
 * output the model does not declare (yet) is skipped with a note on the
 * page. Shapes use the SPEC's letters: B batch, S tokens, H hidden size,
 * nh heads, d = H / nh, N sentences, V vocabulary. */
typedef struct ExplainStep {
    const char *title, *equation, *where, *output;
} ExplainStep;

/* How the page reads the prediction from an output. */
typedef enum ExplainPredict {
    PREDICT_NONE,
    PREDICT_CLASSES,        /* (B, C) logits: softmax over the labels (id2label); one: a value */
    PREDICT_TOKEN_CLASSES,  /* (B, S, C): a label per token */
    PREDICT_SPAN,           /* (B, S) start and end logits: the best span */
    PREDICT_SENTENCES,      /* (B, N) scores: the sentences ranked */
    PREDICT_TOKENS,         /* (B, S, V): the top tokens at each [MASK] (else every position) */
    PREDICT_MASKED_ROWS     /* (n_masked, V) or (B, S, V): the top tokens of each masked token */
} ExplainPredict;

typedef struct ExplainPrediction {
    ExplainPredict kind;
    const char *output, *output2;        /* SPAN: start and end logits */
    const char *const *labels;           /* names when the config has none (NSP) */
} ExplainPrediction;

#define EXPLAIN_MAX_PREDICTIONS 2

typedef struct ModelExplain {
    const char *mechanism;               /* what this variant adds, one paragraph (HTML) */
    const ExplainStep *encoder;          /* the encoder's steps (bertc_bert_encoder_steps) */
    int n_encoder;
    const ExplainStep *steps;            /* then the architecture's own */
    int n_steps;
    ExplainPrediction predict[EXPLAIN_MAX_PREDICTIONS];
} ModelExplain;

/* A list and its length, in a ModelExplain initializer:
 *     {.mechanism = "...", EXPLAIN_ENCODER(bertc_bert_encoder_steps), EXPLAIN_STEPS(mine)} */
#define EXPLAIN_ENCODER(list) \
    .encoder = (list), .n_encoder = (int)(sizeof(list) / sizeof((list)[0]))
#define EXPLAIN_STEPS(list) .steps = (list), .n_steps = (int)(sizeof(list) / sizeof((list)[0]))

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
    /* What its outputs answer (bertc predict reads it). */
    ModelTask task;
    /* The head `bertc finetune --task` builds for its task: a base model of
     * another architecture gets this one (bertc_zoo_arch_for_task), a base
     * of this one keeps it. */
    bool finetune_head;
    /* `bertc export-c` writes it as a const-data text classifier
     * (zoo/models/model_const.h). */
    bool export_c;
    /* The pretraining objective it is the model of (`bertc pretrain
     * --objective`, bertc_zoo_arch_for_pretraining); MODEL_PRETRAIN_NONE for
     * the others. */
    ModelPretraining pretraining;
    /* The steps `bertc explain` shows, next to the code they name; NULL:
     * bertc_model_explain's generic page. */
    const ModelExplain *explain;
} ModelArch;

/* The architectures (zoo/models/architectures.c: one line each), by name; NULL if
 * none has it. */
const ModelArch *bertc_zoo_arch(const char *name);
/* The i-th architecture of the table, NULL past the end (for listings). */
const ModelArch *bertc_zoo_arch_at(int i);
/* The first architecture of the table that is the fine-tuning head for
 * task (ModelArch.finetune_head), NULL if none is. */
const ModelArch *bertc_zoo_arch_for_task(ModelTask task);
/* The architecture of a pretraining objective (ModelArch.pretraining), NULL
 * if none is. */
const ModelArch *bertc_zoo_arch_for_pretraining(ModelPretraining objective);
/* The C name of arch's ModelArch ("bertc_arch_bert_seqcls", what a
 * firmware's model_data.c links), NULL for one not in the table. */
const char *bertc_zoo_arch_symbol(const ModelArch *arch);
/* arch->explain, or for an architecture without one BERT's encoder steps,
 * a generic mechanism and no prediction. */
const ModelExplain *bertc_model_explain(const ModelArch *arch);
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
int bertc_bert_config_read(const char *path, BertConfig *cfg, BertcError *err);   /* zoo/models/config_file.c */
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
 * bertc_model_build_const (zoo/models/model_const.h). */

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
 * built, loaded model (zoo/models/model_file.c), as HF's from_pretrained: a
 * weights file without a pooler (pooler.dense.* under any prefix: saved
 * with add_pooling_layer=False) builds the model without one. Errors name
 * the file. */
int bertc_model_open(Model *m, Arena *arena, const char *config_path, const char *weights_path,
               BertcError *err);
/* Runs the model on the named inputs. An input the model does not read is an
 * error naming it and the inputs the model reads, caught after the forward
 * (the model's own lookups say what it reads) and before any output is used. */
int bertc_model_forward(Model *m, Graph *g, const Batch *in, Outputs *out, BertcError *err);
/* Every float output of out finite, else an error naming the batch's
 * source, the first output that is not, its index and value, and the likely
 * cause: a LayerNorm ε of 0 (a constant row gives 0/0), or, for a loss,
 * labels that are all ignored (a mean over no row), naming the batch's label
 * inputs. A forward that was valid but degenerate thus never passes NaN on
 * silently; callers that print or write outputs check them. */
int bertc_outputs_check_finite(const Model *m, const Batch *in, const Outputs *out,
                               BertcError *err);
/* bertc_ag_backward(g, loss) for a loss bertc_model_forward produced, as an error (not
 * an abort) when the step's gradients do not fit in memory. */
int bertc_model_backward(Graph *g, Var *loss, BertcError *err);

/* ------------------------------------------------------------------------ */
/* Random batches (zoo/models/random_batch.c): benches and smoke tests              */
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
 * (pad, unk, cls, sep, mask); 0 if none is left. */
int32_t bertc_random_first_token(const BertConfig *cfg);
/* The same past `more` special ids too (NULL: none): an architecture's own,
 * which its random_batch hook passes (SpanBERT's masking.special_token_ids). */
int32_t bertc_random_first_token_past(const BertConfig *cfg, const ConfigTokenIds *more);

/* ids (B, S) uniform in [first, V) and, drawn in the same stream position
 * by position, mlm_labels (B, S): the token at 15% of the positions
 * (position 0 of every row excluded), -100 elsewhere, and at least one
 * labelled position when S > 1. With first = bertc_random_first_token, the
 * same numbers as tools/bench_torch.py draws for vocab_size > 1000. */
void bertc_random_tokens(const BertConfig *cfg, int32_t first, Graph *g, int64_t B, int64_t S,
                         Rng *rng, ITensor *ids, ITensor *mlm_labels);

/* bertc_random_tokens from bertc_random_first_token put under ids_name, an
 * all-ones mask_name and all-zero types_name (B, S); *mlm_labels as
 * bertc_random_tokens'. */
void bertc_random_bert_inputs(const BertConfig *cfg, Graph *g, int64_t B, int64_t S, Rng *rng,
                        const char *ids_name, const char *mask_name, const char *types_name,
                        Batch *out, ITensor *mlm_labels);
/* The same with the ids drawn from [first, V). */
void bertc_random_bert_inputs_from(const BertConfig *cfg, int32_t first, Graph *g, int64_t B,
                                   int64_t S, Rng *rng, const char *ids_name,
                                   const char *mask_name, const char *types_name, Batch *out,
                                   ITensor *mlm_labels);

/* (n) class indices uniform in [0, C). */
ITensor bertc_random_classes(Graph *g, int64_t n, int64_t C, Rng *rng);

/* ------------------------------------------------------------------------ */
/* The run path of `bertc run` (zoo/models/run.c)                                   */
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
/* Raw text -> a model's batch (zoo/models/text_batch.c)                            */
/* ------------------------------------------------------------------------ */

/* The batch of n examples of raw text for m's architecture
 * (ModelArch.batch_from_text), in g->step: each example tokenized to at most
 * max_len tokens (0: max_position_embeddings), truncated LongestFirst, and
 * padded to the longest. An error for an architecture without one, and for
 * text its inputs cannot hold (a question longer than QAConv's query_len,
 * no context id for CGBERT). The batch's source (in its errors) is set by
 * the caller (bertc_batch_init) before. An architecture that builds it with
 * bertc_text_batch_put leaves the n encodings in out->enc (every one but
 * BertSum, whose documents are sentences, and multiple choice). */
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
/* An id of e at or beyond cfg's vocab_size, which only a vocabulary longer
 * than the model's embedding table (tok->V > vocab_size) makes: an error
 * naming that vocabulary, both sizes and the token. bertc_text_batch_encode
 * checks every encoding; a caller that builds its batch from encodings of
 * its own calls it. */
int bertc_encoding_check_vocab(const BertConfig *cfg, const Tokenizer *tok, const Encoding *e,
                               BertcError *err);
/* A text's token limit and what set it, so that a limit too small is
 * refused naming it: key "--max-len" (file NULL), "model_max_length"
 * (file: DIR/tokenizer_config.json) or "max_position_embeddings" (file:
 * the config.json, or NULL for a config in memory). */
typedef struct MaxLen {
    int32_t n;
    const char *key;
    const char *file;
} MaxLen;

/* A limit that leaves no room for a text's special tokens (specials: 2 for
 * [CLS] TEXT [SEP], 3 with a TEXT_PAIR) is refused in one line naming what
 * set it; callers check it before they tokenize anything, so that no
 * truncation warning comes first. */
int bertc_max_len_room(const MaxLen *m, int specials, BertcError *err);
/* Window `first` .. first + n - 1 of text A's tokens of e (an encoding
 * without truncation) as an encoding of its own, in arena: [CLS] those n
 * tokens [SEP], then text B's tokens and [SEP] as in e, with their offsets
 * into the original texts; untruncated stays e's. What a long text's
 * overlapping windows are made of, as the tokenizer's
 * return_overflowing_tokens with a stride makes them (cli/text_batches.c). */
void bertc_encoding_window(const Encoding *e, int32_t first, int32_t n, Arena *arena,
                           Encoding *out);
/* The overlapping windows of full (an encoding without truncation) for a
 * limit of max_len tokens, as Hugging Face's tokenizer makes them with
 * return_overflowing_tokens and stride: window w holds text A's tokens
 * [w·step, w·step + L) with the whole pair after them, L = max_len less the
 * special tokens and the pair, step = L − stride, the last one ending with
 * the text (one window when A fits). *windows, *n in arena; an error when
 * the pair leaves no room for text A or stride is not in [0, L). */
int bertc_encoding_windows(const Encoding *full, int32_t max_len, int32_t stride, Arena *arena,
                           Encoding **windows, int32_t *n, BertcError *err);
/* How a long text's windows' outputs (logits, or vectors) make the text's:
 * their mean (finetune's evaluation, predict's default), the element-wise
 * maximum, or the first window's (what truncation reads). */
typedef enum WindowAggregate { WINDOWS_MEAN, WINDOWS_MAX, WINDOWS_FIRST } WindowAggregate;
/* Window `window`'s n outputs z into the text's acc, of which `seen`
 * windows are in already (in any order): the first seen is copied, then
 * summed (mean), kept where larger (max), or replaced by window 0's
 * (first). bertc_windows_finish divides a mean's sum by the count. */
void bertc_windows_add(WindowAggregate rule, float *acc, const float *z, int64_t n, int seen,
                       int32_t window);
void bertc_windows_finish(WindowAggregate rule, float *acc, int64_t n, int count);
/* Puts the three (n, S) tensors under the given names, and the n encodings
 * as the batch's enc. */
void bertc_text_batch_put(const TextBatch *tb, const char *ids, const char *mask, const char *types,
                    Batch *out);
/* The BERT heads' batch_from_text: [CLS] text [SEP] (text_pair [SEP]) as
 * input_ids, attention_mask, token_type_ids. */
int bertc_bert_batch_from_text(const Model *m, const Tokenizer *tok, const TextExample *ex, int n,
                         int32_t max_len, Graph *g, Batch *out, BertcError *err);

/* ------------------------------------------------------------------------ */
/* Model directories                                                         */
/* ------------------------------------------------------------------------ */

/* A Hugging Face model directory as one unit (zoo/models/model_dir_file.c):
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

#endif /* BERTC_ZOO_MODELS_MODEL_H */
