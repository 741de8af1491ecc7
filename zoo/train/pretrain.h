/*
 * zoo/train/pretrain.h — pretraining as one library call, beside fine-tuning
 * (zoo/train/finetune.h): unlabelled plain text -> a BERT that has learnt
 * the language, saved as a Hugging Face model directory that `bertc
 * finetune --model`, `bertc predict` (fill-mask) and PyTorch load. `bertc
 * pretrain` is this call behind its flags (cli/pretrain.c).
 *
 *     PretrainOptions o = bertc_pretrain_defaults();
 *     o.corpus = "corpus.txt";            // one document a line, or blank-line separated
 *     o.config_file = "cfg.json";         // sizes; the architecture is the objective's
 *     o.vocab = "vocab.txt";              // e.g. from `bertc vocab` on the same corpus
 *     o.out = "my-bert";
 *     o.train.steps = 10000;
 *     PretrainResult r;
 *     BertcError err;
 *     if (bertc_pretrain(&o, &r, &err) != 0)
 *         fprintf(stderr, "%s\n", err.msg);
 *
 * What the call does:
 *   1. the corpus is tokenised once into a binary cache (zoo/train/pretrain_corpus.c):
 *      the documents' WordPiece ids one after another, a [SEP] after each.
 *      The cache is rebuilt when the corpus (its size, time and a sample of
 *      its bytes) or the tokenizer (its vocabulary's CRC-32, casing) changes,
 *      and read a row at a time, so memory does not grow with the corpus;
 *   2. the stream is cut into rows of max_len - 2 tokens, each [CLS] row [SEP]
 *      (Hugging Face's group_texts, RoBERTa's FULL-SENTENCES: texts packed
 *      across document boundaries, no padding); the last rows are held out
 *      for the perplexity;
 *   3. each batch is masked anew (dynamic masking, zoo/train/pretrain_mask.c):
 *      MLM as DataCollatorForLanguageModeling (15 %, of which 80 % [MASK],
 *      10 % a random token, 10 % unchanged), optionally whole words
 *      (DataCollatorForWholeWordMask), or SpanBERT's span masking with its
 *      span boundary objective; NSP (BertForPreTraining) cuts each row into
 *      a pair whose second part is, half the time, taken from elsewhere;
 *   4. the engine of zoo/train/train.h trains it: AdamW without decay on
 *      biases and LayerNorm, linear warmup then linear or cosine decay,
 *      gradient accumulation, checkpoints, exact resume, Ctrl-C saves;
 *      the held-out perplexity is measured every eval_every steps;
 *   5. out/ holds the final model (config.json, model.safetensors,
 *      vocab.txt, tokenizer_config.json), log.jsonl (one line an
 *      evaluation), loss.svg and checkpoint.safetensors.
 * Everything that can be refused is refused before anything is written.
 */
#ifndef BERTC_ZOO_PRETRAIN_H
#define BERTC_ZOO_PRETRAIN_H

#include "zoo/train/finetune.h"

typedef enum PretrainObjective {
    PT_MLM,        /* BertForMaskedLM: masked tokens */
    PT_MLM_NSP,    /* BertForPreTraining: masked tokens + next sentence prediction */
    PT_SPAN        /* SpanBertForPreTraining: span masking + the span boundary objective */
} PretrainObjective;

typedef struct PretrainOptions {
    const char *corpus;              /* plain UTF-8 text, any size */
    /* The model: a config (file or in memory) with a vocabulary, or a model
     * directory to go on pretraining (its encoder and LM head are loaded). */
    const char *config_file;
    const BertConfig *config;
    const char *vocab;
    const char *model;
    PretrainObjective objective;
    bool whole_word_mask;            /* mlm, mlm-nsp: mask whole words */
    double mlm_probability;          /* 0.15: the share of tokens predicted */
    int64_t max_len;                 /* tokens a row, [CLS] and [SEP] included; 0: 128,
                                        lowered to max_position_embeddings */
    int64_t eval_rows;               /* rows held out at the end of the corpus; -1: 5 %,
                                        at most 1000 */
    const char *cache;               /* the token cache; NULL: OUT/corpus.tokens */
    TrainOptions train;              /* steps, batch_size, grad_accum, lr, warmup, schedule,
                                        eval_every (-1: a tenth of the run), checkpoint_every
                                        (-1: = eval_every); checkpoint NULL:
                                        OUT/checkpoint.safetensors */
    const char *out;                 /* the model directory */
    FinetuneOutMode out_mode;        /* as bertc_finetune: NEW refuses a non-empty out */
    void (*note)(void *user, const char *msg);   /* "tokenising ..." (NULL: bertc_warn) */
    void *note_user;
} PretrainOptions;

/* mlm, 15 %, max_len 0 (128), eval_rows -1, batch size 32, lr 1e-3 (a small
 * model's: BERT-base's 1e-4 is for H = 768), warmup 0.06, linear decay,
 * weight decay 0.01, seed 42, FINETUNE_OUT_NEW. corpus, the model, steps and
 * out are the caller's. */
PretrainOptions bertc_pretrain_defaults(void);

typedef struct PretrainResult {
    TrainResult train;               /* steps done, time, tokens/s, the loss curve */
    int64_t n_tokens, n_docs;        /* the corpus, as tokenised */
    int64_t n_train, n_eval;         /* rows */
    int64_t max_len;
    bool cache_reused;               /* the cache was valid: no tokenisation */
    double perplexity;               /* the last evaluation's held-out perplexity (NaN: none) */
    int64_t n_parameters;
    char dir[BERTC_PATH_MAX];        /* where the run wrote (out or its staging directory) */
    bool kept;                       /* the model is in out */
} PretrainResult;

int bertc_pretrain(const PretrainOptions *o, PretrainResult *r, BertcError *err);

/* ---- the pieces, for tests and for callers who build their own loop ---- */

/* The token cache of a corpus (zoo/train/pretrain_corpus.c). */
typedef struct PretrainCorpus {
    int fd;                          /* the cache, open for reading */
    int width;                       /* bytes a token id: 2 or 4 */
    int64_t header_bytes;
    int64_t n_tokens, n_docs;
    int32_t cls_id, sep_id;
    char path[BERTC_PATH_MAX];
} PretrainCorpus;

/* Opens the cache at cache_path for corpus and tok, tokenising the corpus
 * into it first when it is missing or stale (*rebuilt says which). The
 * corpus is one document a line, or, when it holds a blank line, documents
 * separated by blank lines (their lines joined); NUL bytes are dropped and
 * a UTF-8 byte order mark is skipped, as the other readers do; a line of
 * invalid UTF-8 is an error naming the file and line. */
int bertc_pretrain_corpus_open(PretrainCorpus *c, const char *corpus, const Tokenizer *tok,
                               const char *cache_path, bool *rebuilt, BertcError *err);
void bertc_pretrain_corpus_close(PretrainCorpus *c);
/* n ids of the stream from token `first` into ids. */
int bertc_pretrain_corpus_read(const PretrainCorpus *c, int64_t first, int64_t n, int32_t *ids,
                               BertcError *err);
/* Rows of max_len ([CLS] + max_len - 2 tokens + [SEP]) the stream makes:
 * floor(n_tokens / (max_len - 2)), at least 1 when it holds a token (a
 * short last row is dropped, as group_texts does, unless it is the only one). */
int64_t bertc_pretrain_rows(const PretrainCorpus *c, int64_t max_len);
/* Row r: ids (max_len) and its length l (<= max_len; the rest [PAD]). */
int bertc_pretrain_row(const PretrainCorpus *c, int64_t r, int64_t max_len, int32_t pad_id,
                       int32_t *ids, int64_t *l, BertcError *err);

/* The masking of one row (zoo/train/pretrain_mask.c): ids (S, l real) in
 * place, labels (S) the original id at the predicted positions and -100
 * elsewhere; [CLS], [SEP] and [PAD] are never predicted. Returns how many
 * positions were picked. whole_words: pick whole words (a token and the
 * "##" pieces after it) until the budget round(p * candidates) is met, as
 * DataCollatorForWholeWordMask; else each token with probability p, as
 * DataCollatorForLanguageModeling. Either way a picked token becomes [MASK]
 * with probability 0.8, a random token (id from first_random..V-1) with 0.1,
 * and stays with 0.1. */
typedef struct MlmMasking {
    double probability;
    bool whole_words;
    const Tokenizer *tok;
    const uint8_t *continuation;     /* (V) 1 for "##" pieces */
    int32_t first_random;
} MlmMasking;

int64_t bertc_pretrain_mask_row(const MlmMasking *mm, int32_t *ids, int64_t l, int32_t *labels,
                                Rng *rng, int32_t *work);   /* work: 2 * l ints */

#endif /* BERTC_ZOO_PRETRAIN_H */
