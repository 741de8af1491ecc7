/* examples/topics.c — the main job (`make demo`, also `bertc train topics`):
 * fine-tune the small pretrained BERT shipped in data/pretrained/ into a
 * topic classifier in about a minute on a laptop CPU, through the library's
 * fine-tuning call, show what the pretraining bought, then use it.
 *
 *   1. load the data set: data/topics.tsv, 1,144 fortunes labelled
 *      computers / science / law / food ("label<TAB>text" lines), as a table
 *      (zoo/train/dataset.h); the first 80 % train, the last 20 % are held out;
 *   2. fine-tune: bertc_finetune (zoo/train/finetune.h) puts a
 *      BertForSequenceClassification head on the pretrained model PRETRAINED
 *      (a model directory: config.json, model.safetensors, its own
 *      vocab.txt) and trains it (AdamW, linear warmup and decay, the
 *      model's own dropout), evaluates 10 % of the training rows every 50
 *      steps and keeps the best model in OUT as a Hugging Face model
 *      directory (config.json with the topic names, model.safetensors,
 *      vocab.txt), with OUT/loss.svg and a checkpoint; then trains the same
 *      config and vocabulary from a random init with the same options, into
 *      OUT/scratch;
 *   3. evaluate: each saved model classifies the held-out texts, which
 *      neither saw; their accuracies beside a bag-of-words naive Bayes
 *      (zoo/train/naive_bayes.c) trained on the same rows;
 *   4. predict one sentence: the saved directory opened as any model is
 *      (bertc_model_dir_open), the sentence classified, and the last layer's
 *      attention drawn to OUT/attention.svg.
 *
 * Everything is embedded: no flags needed, no downloads. The standard
 * training flags (--steps, --lr, --out DIR, --resume, ...; see
 * zoo/train/train.h) apply to both fine-tunings; OUT defaults to
 * build/demo. BERTC_THREADS sets the thread count. */
#include "examples/example_util.h"
#include "zoo/pictures/svg.h"
#include "zoo/train/finetune.h"
#include "zoo/train/pipeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The pretrained model, a model directory (`make pretrained` rebuilds it;
 * data/pretrained/bertc-docs/README.md is its model card). */
#define PRETRAINED "data/pretrained/bertc-docs"
#define DATA "data/topics.tsv"
#define MAX_LEN 64
#define MAX_EXAMPLES 4096

/* 1. "label<TAB>text" lines as a table of columns "label" and "text". */
static int load_topics(Arena *arena, Dataset *d, BertcError *err)
{
    static const char *const columns[2] = {"label", "text"};
    size_t len;
    const char *path = example_data_path(DATA);
    char *text = example_read_file(path, &len, err);
    if (!text)
        return -1;
    int rc = bertc_dataset_parse_columns(d, arena, path, DATASET_TSV, columns, 2, text, len, err);
    free(text);
    return rc == 0 ? example_check_rows(path, d->n_rows, MAX_EXAMPLES, d->n_rows > MAX_EXAMPLES,
                                        err)
                   : -1;
}

/* 2. What bertc_finetune is asked, before the flags: the training flags
 * (--steps, --lr, --resume, ...) then apply to o.train. The same options
 * train the pretrained model and the one from scratch. Chosen for the
 * pretrained model on this split (best evaluation, seed 42): lr 1e-3 78.2 %,
 * 2e-3 76.0 %, 3e-4 72.9 %; 800 steps 75.5 %; 128 tokens 77.3 %, slower
 * (seed 1 at these settings: 76.9 %). */
static FinetuneOptions demo_options(void)
{
    FinetuneOptions o = bertc_finetune_defaults();
    o.task = FT_SEQ_CLS;
    o.max_len = MAX_LEN;
    o.out_mode = FINETUNE_OUT_IN_PLACE;   /* build/demo is rewritten by every run */
    o.train.steps = 400;
    o.train.batch_size = 32;
    o.train.lr = 1e-3;
    o.train.weight_decay = 0.1;
    o.train.eval_every = 50;
    o.train.checkpoint_every = 0;         /* the checkpoint at the end (and on Ctrl-C) */
    return o;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* 2. One fine-tuning run of o, timed; what it starts from is o's (a model
 * directory, or a config and a vocabulary). */
static int finetune(const FinetuneOptions *o, FinetuneResult *r, double *seconds,
                    BertcError *err)
{
    double start = now_seconds();
    int rc = bertc_finetune(o, r, err);
    *seconds = now_seconds() - start;
    return rc;
}

/* The model PRETRAINED is, from its config.json. */
static int describe_model(const char *config, BertcError *err)
{
    BertConfig c;
    if (bertc_bert_config_read(config, &c, err) != 0)
        return -1;
    printf("pretrained model: %s (%s, %d layers, H=%d, a vocabulary of %d tokens)\n",
           example_data_path(PRETRAINED), c.architecture, c.num_hidden_layers, c.hidden_size,
           c.vocab_size);
    bertc_bert_config_free(&c);
    return 0;
}

/* 3. The held-out accuracy of the model directory `dir`: every held-out text
 * classified as `bertc predict` would (classify, below), its top label
 * compared with the row's. The held-out rows took no part in the
 * fine-tuning, not even in choosing its best evaluation. */
static int held_out_accuracy(const char *dir_path, const Dataset *held_out, Arena *arena,
                             double *accuracy, BertcError *err);

/* 2-3. The pretrained model fine-tuned into OUT, the same config from
 * scratch into OUT/scratch, the bag-of-words baseline; their held-out
 * accuracies side by side. */
static int compare(const FinetuneOptions *o, const Dataset *train, const Dataset *held_out,
                   Arena *arena, BertcError *err)
{
    char config[BERTC_PATH_MAX], vocab[BERTC_PATH_MAX], scratch_out[BERTC_PATH_MAX];
    const char *model = example_data_path(PRETRAINED);
    FinetuneOptions pretrained = *o, scratch = *o;
    pretrained.model = model;
    if (bertc_path_join(config, model, "config.json", "the pretrained model", err) != 0 ||
        bertc_path_join(vocab, model, "vocab.txt", "the pretrained model", err) != 0 ||
        bertc_path_join(scratch_out, o->out, "scratch", "--out", err) != 0 ||
        describe_model(config, err) != 0)
        return -1;
    scratch.config_file = config;         /* the same sizes and vocabulary, a random init */
    scratch.vocab = vocab;
    scratch.out = scratch_out;
    scratch.train.checkpoint = NULL;      /* its own: OUT/scratch/checkpoint.safetensors */
    FinetuneResult r_pretrained, r_scratch;
    double t_pretrained, t_scratch, t_bayes, bayes, acc_pretrained, acc_scratch;
    if (finetune(&pretrained, &r_pretrained, &t_pretrained, err) != 0 ||
        finetune(&scratch, &r_scratch, &t_scratch, err) != 0 ||
        held_out_accuracy(o->out, held_out, arena, &acc_pretrained, err) != 0 ||
        held_out_accuracy(scratch_out, held_out, arena, &acc_scratch, err) != 0)
        return -1;
    double start = now_seconds();
    if (bertc_naive_bayes_accuracy(train, held_out, "text", "label", &bayes, err) != 0)
        return -1;
    t_bayes = now_seconds() - start;
    printf("held-out accuracy on %lld texts (%lld steps of %lld, lr %g, %lld tokens each):\n",
           (long long)held_out->n_rows, (long long)r_pretrained.steps,
           (long long)r_pretrained.batch_size, o->train.lr, (long long)o->max_len);
    printf("  BERT fine-tuned from the pretrained model  %5.1f%%  in %3.0f s\n",
           100 * acc_pretrained, t_pretrained);
    printf("  the same BERT trained from scratch          %5.1f%%  in %3.0f s\n",
           100 * acc_scratch, t_scratch);
    printf("  bag-of-words naive Bayes                    %5.1f%%  in %3.1f s\n", 100 * bayes,
           t_bayes);
    return 0;
}

/* 4. One sentence through the saved model (eval mode): the topic's
 * probability and, for the picture, the last layer's attention. */
static int classify(Model *m, const Tokenizer *tok, const char *text, Graph *g, float *probs,
                    Encoding *enc, Var **attention, BertcError *err)
{
    bertc_ag_graph_reset(g);
    bertc_ag_set_training(g, false);
    TextExample ex = {.text = text, .context_id = -1};
    TextBatch tb;
    Batch b;
    Outputs out;
    bertc_batch_init(&b, "sentence");
    bertc_outputs_init(&out);
    if (bertc_text_batch_encode(&m->cfg, tok, &ex, 1, MAX_LEN, 0, g, &tb, err) != 0)
        return -1;
    bertc_text_batch_put(&tb, "input_ids", "attention_mask", "token_type_ids", &b);
    *enc = tb.enc[0];
    if (bertc_model_forward(m, g, &b, &out, err) != 0)
        return -1;
    bertc_softmax(bertc_outputs_get(&out, "logits")->value.data, m->cfg.num_labels, probs);
    char name[64];
    snprintf(name, sizeof name, "layers.%d.attention_probs", m->cfg.num_hidden_layers - 1);
    *attention = bertc_outputs_get(&out, name);
    return 0;
}

static int held_out_accuracy(const char *dir_path, const Dataset *held_out, Arena *arena,
                             double *accuracy, BertcError *err)
{
    ModelDir *dir = bertc_arena_alloc(arena, sizeof *dir);
    int text = bertc_dataset_column(held_out, "text", err);
    int label = text < 0 ? -1 : bertc_dataset_column(held_out, "label", err);
    if (label < 0 || bertc_model_dir_open(dir, arena, dir_path, err) != 0)
        return -1;
    Graph *g = bertc_ag_graph_create(1 << 20, 0);
    float *probs = bertc_arena_alloc(arena, sizeof(float) * (size_t)dir->model.cfg.num_labels);
    int64_t right = 0;
    int rc = 0;
    for (int64_t i = 0; i < held_out->n_rows && rc == 0; i++) {
        Encoding enc;
        Var *attention;
        rc = classify(&dir->model, &dir->tok, bertc_dataset_cell(held_out, i, text), g, probs,
                      &enc, &attention, err);
        int best = (int)example_argmax(probs, dir->model.cfg.num_labels);
        right += rc == 0 && strcmp(bertc_bert_config_label(&dir->model.cfg, best),
                                   bertc_dataset_cell(held_out, i, label)) == 0;
    }
    bertc_ag_graph_destroy(g);
    *accuracy = held_out->n_rows ? (double)right / (double)held_out->n_rows : 0;
    return rc;
}

static int draw_attention(const char *out, const Tokenizer *tok, const Encoding *enc,
                          const Var *attention, BertcError *err)
{
    const char *labels[MAX_LEN];
    char path[BERTC_PATH_MAX];
    for (int32_t t = 0; t < enc->S; t++)
        labels[t] = bertc_tokenizer_token(tok, enc->input_ids[t]);
    if (bertc_path_join(path, out, "attention.svg", "--out", err) != 0)
        return -1;
    return bertc_svg_attention(path, attention->value.data, attention->value.shape[1], enc->S,
                               labels, "last layer, every head: who attends to whom", err);
}

/* 4. The model directory bertc_finetune saved, as any program opens one. */
static int predict_one(const char *out, Arena *arena, BertcError *err)
{
    const char *sentence = "My computer crashed again after the kernel update.";
    ModelDir *dir = bertc_arena_alloc(arena, sizeof *dir);
    if (bertc_model_dir_open(dir, arena, out, err) != 0)
        return -1;
    Graph *g = bertc_ag_graph_create(1 << 20, 0);
    float *probs = bertc_arena_alloc(arena, sizeof(float) * (size_t)dir->model.cfg.num_labels);
    Encoding enc;
    Var *attention;
    int rc = classify(&dir->model, &dir->tok, sentence, g, probs, &enc, &attention, err);
    if (rc == 0)
        rc = draw_attention(out, &dir->tok, &enc, attention, err);
    if (rc == 0) {
        int best = (int)example_argmax(probs, dir->model.cfg.num_labels);
        printf("\"%s\" -> %s (%.0f%%)\n", sentence, bertc_bert_config_label(&dir->model.cfg, best),
               100 * probs[best]);
    }
    bertc_ag_graph_destroy(g);
    return rc;
}

/* Everything after the flags; what it allocates comes from `arena`, which
 * run() frees on every path. */
static int train_and_use(FinetuneOptions *o, Arena *arena, BertcError *err)
{
    Dataset all;
    if (example_need_data(DATA, err) != 0 ||
        example_need_data(PRETRAINED "/config.json", err) != 0 ||
        load_topics(arena, &all, err) != 0)
        return -1;
    int64_t n_train = all.n_rows * 4 / 5;   /* the file is shuffled: the last 20 % is held out */
    Dataset train = bertc_dataset_rows(&all, 0, n_train);
    Dataset held_out = bertc_dataset_rows(&all, n_train, all.n_rows - n_train);
    printf("bertc demo: topic classification of %lld fortunes (%lld train, %lld held out)\n",
           (long long)all.n_rows, (long long)train.n_rows, (long long)held_out.n_rows);
    o->train_data = &train;   /* bertc_finetune holds 10 % of it out to keep its best model */
    if (compare(o, &train, &held_out, arena, err) != 0 || predict_one(o->out, arena, err) != 0)
        return -1;
    printf("wrote %s/loss.svg, %s/attention.svg, the model directory %s (config.json, "
           "model.safetensors, vocab.txt), %s and the model from scratch in %s/scratch\n",
           o->out, o->out, o->out, o->train.checkpoint, o->out);
    return 0;
}

static int run(int argc, char **argv, BertcError *err)
{
    FinetuneOptions o = demo_options();
    o.out = "build/demo";
    char checkpoint[BERTC_PATH_MAX];
    if (example_flags(argc, argv, &o.train, &o.out, checkpoint, err) != 0)
        return -1;
    Arena *arena = bertc_arena_create("demo", 1 << 20);
    int rc = train_and_use(&o, arena, err);
    bertc_arena_destroy(arena);
    return rc;
}

int main(int argc, char **argv)
{
    return example_main("topics", argc, argv, run);
}
