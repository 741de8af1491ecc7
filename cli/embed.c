/* cli/embed.c — bertc embed: sentence embeddings as sentence-transformers
 * computes them. Each text is encoded as the model's batch_from_text does,
 * texts run --batch-size at a time padded to the longest, and each is pooled
 * from last_hidden_state over its own attention mask (zoo/train/pipeline.h), so a
 * text's vector does not depend on the texts batched with it. */
#include "cli/cli.h"
#include "zoo/train/pipeline.h"

#include <string.h>

static const CliOption embed_options[] = {
    {"--model", "DIR", NULL, "a model directory: config.json, model.safetensors, vocab.txt, "
     "tokenizer_config.json"},
    {"--config", "C.json", NULL, "instead of --model: config.json (with --weights, --vocab)"},
    {"--weights", "W.safetensors", NULL, "instead of --model: the weights"},
    {"--vocab", "V.txt", NULL, "instead of --model: the vocabulary"},
    {"--pooling", "mean|cls|pooler", "mean", "mean of last_hidden_state over the attention "
     "mask; cls: the first token's; pooler: pooler_output"},
    {"--normalize", NULL, NULL, "divide each vector by its L2 norm"},
    {"--input", "FILE", NULL, "one text a line (instead of TEXT ...); - reads standard input"},
    {"--output", "FILE", NULL, "FILE.tsv (text, tab, the values) or FILE.safetensors (an "
     "(N, H) F32 tensor \"embeddings\"); default: TSV on stdout"},
    {"--batch-size", "N", "32", "texts per forward (the vectors do not depend on it)"},
    {"--max-len", "N", NULL, "tokens per text (default: the model's model_max_length); longer "
     "texts are truncated with a warning"},
    {"--threads", "N", NULL, "worker threads (default: BERTC_THREADS, else the cores)"},
};

const CliCommand cli_cmd_embed = {
    .name = "embed",
    .summary = "sentence embeddings of texts (mean, cls or pooler), as TSV or safetensors",
    .usage = "(--model DIR | --config C.json --weights W.safetensors --vocab V.txt) "
             "[--pooling mean|cls|pooler] [--normalize] [--input FILE] [--output FILE] "
             "[TEXT ...]",
    .description = "One vector per text, in input order. Mean pooling (the default) is "
                   "sentence-transformers' Pooling(pooling_mode_mean_tokens): the average of "
                   "the last hidden states of the text's real tokens ([CLS] and [SEP] "
                   "included, padding not).",
    .options = embed_options,
    .n_options = sizeof embed_options / sizeof embed_options[0],
    .max_positional = CLI_MAX_POSITIONAL,
    .positional = "TEXT ...",
    .example = "bertc embed --model my-model --normalize --output vectors.safetensors "
               "\"a first sentence\" \"a second one\"",
};

typedef enum EmbedPooling { EMBED_MEAN, EMBED_CLS, EMBED_POOLER } EmbedPooling;

typedef struct EmbedRun {
    CliModel *cm;
    EmbedPooling pooling;
    bool normalize;
    int32_t max_len;
    int batch_size;
    int64_t H;
    float *vectors;       /* (N, H) */
} EmbedRun;

static int parse_pooling(const char *value, EmbedPooling *p, BertcError *err)
{
    static const char *const names[] = {"mean", "cls", "pooler"};
    for (int i = 0; i < 3; i++)
        if (!strcmp(value, names[i])) {
            *p = (EmbedPooling)i;
            return 0;
        }
    char shown[BERTC_SHOWN];
    return bertc_errorf(err, "--pooling '%s': expected mean, cls or pooler",
                        bertc_shown(value, shown));
}

/* The vectors of batch rows [0, n) into out (n, H). */
static int pool_batch(const EmbedRun *r, const Batch *b, const Outputs *out, int n, float *vec,
                      BertcError *err)
{
    const char *arch = r->cm->model->arch->name;
    if (r->pooling == EMBED_POOLER) {
        Var *pooled = bertc_outputs_get(out, "pooler_output");
        if (!pooled)
            return bertc_errorf(err, "--pooling pooler: %s (%s) has no pooler_output; use "
                                "--pooling mean or cls", r->cm->name, arch);
        memcpy(vec, pooled->value.data, sizeof(float) * (size_t)(n * r->H));
        return 0;
    }
    Var *h = bertc_outputs_get(out, "last_hidden_state");
    const BatchItem *mask = bertc_batch_find(b, "attention_mask");
    if (!h || !mask || h->value.ndim != 3)
        return bertc_errorf(err, "%s (%s) gives no last_hidden_state (B, S, H) with an "
                            "attention_mask; bertc embed needs a BERT encoder", r->cm->name, arch);
    int64_t S = h->value.shape[1];
    for (int i = 0; i < n; i++)
        bertc_pool(r->pooling == EMBED_CLS ? POOL_CLS : POOL_MEAN, h->value.data + i * S * r->H,
                   mask->ids.data + i * S, S, r->H, vec + i * r->H);
    return 0;
}

/* Inputs [first, first + n): tokenized once, by the architecture's
 * batch_from_text, whose encodings (b.enc) say which were truncated. */
static int embed_batch(EmbedRun *r, Graph *g, const CliText *t, int first, int n, float *vec,
                       BertcError *err)
{
    TextExample *ex = bertc_arena_calloc(g->step, (size_t)n, sizeof *ex);
    for (int i = 0; i < n; i++)
        ex[i] = (TextExample){.text = t[i].text, .context_id = -1};
    Batch b;
    Outputs out;
    bertc_batch_init(&b, "the texts");
    bertc_outputs_init(&out);
    Model *m = r->cm->model;
    if (bertc_model_batch_from_text(m, r->cm->tok, ex, n, r->max_len, g, &b, err) != 0)
        return -1;
    for (int i = 0; i < b.n_enc && i < n; i++)
        if (b.enc[i].untruncated > r->max_len)
            cli_warn_truncated("embed", &t[i], first + i, b.enc[i].untruncated, r->max_len);
    if (cli_forward(m, g, &b, &out, err) != 0 || pool_batch(r, &b, &out, n, vec, err) != 0)
        return -1;
    for (int i = 0; r->normalize && i < n; i++)
        bertc_l2_normalize(vec + i * r->H, r->H);
    return 0;
}

static int embed_all(EmbedRun *r, const CliText *texts, int n, Arena *arena, BertcError *err)
{
    r->vectors = bertc_arena_calloc(arena, (size_t)n * (size_t)r->H, sizeof(float));
    Graph *g = bertc_ag_graph_create(1 << 20, 0);
    bertc_ag_set_training(g, false);
    bertc_ag_set_no_grad(g, true);
    int rc = 0;
    for (int i = 0; rc == 0 && i < n; i += r->batch_size) {
        int k = n - i < r->batch_size ? n - i : r->batch_size;
        rc = embed_batch(r, g, texts + i, i, k, r->vectors + (int64_t)i * r->H, err);
        bertc_ag_graph_reset(g);
    }
    bertc_ag_graph_destroy(g);
    return rc;
}

/* A text on one TSV field: tabs and line ends become spaces. */
static void print_field(FILE *f, const char *s)
{
    for (; *s; s++)
        fputc(*s == '\t' || *s == '\n' || *s == '\r' ? ' ' : *s, f);
}

static int write_tsv(const EmbedRun *r, const CliText *texts, int n, const char *path,
                     BertcError *err)
{
    FILE *f = path ? fopen(path, "w") : stdout;
    if (!f)
        return bertc_errorf(err, "--output %s: cannot create the file", path);
    for (int i = 0; i < n; i++) {
        print_field(f, texts[i].text);
        for (int64_t k = 0; k < r->H; k++)
            fprintf(f, "%c%.9g", k == 0 ? '\t' : ' ', r->vectors[i * r->H + k]);
        fputc('\n', f);
    }
    bool failed = ferror(f) != 0;
    if (path && fclose(f) != 0)
        failed = true;
    return failed ? bertc_errorf(err, "--output %s: write failed", path ? path : "stdout") : 0;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

static int write_output(const EmbedRun *r, const CliText *texts, int n, const char *path,
                        BertcError *err)
{
    if (!path || ends_with(path, ".tsv"))
        return write_tsv(r, texts, n, path, err);
    Tensor t = {.data = r->vectors, .ndim = 2, .shape = {n, r->H}, .numel = n * r->H};
    StEntry e = bertc_st_entry_tensor("embeddings", &t);
    StMetadata meta[1] = {{"format", "pt"}};
    return bertc_st_write_file(path, &e, 1, meta, 1, err);
}

static int check_output(const CliArgs *a, BertcError *err)
{
    const char *out = cli_value(&cli_cmd_embed, a, "--output");
    if (!out)
        return 0;
    char shown[BERTC_SHOWN];
    if (!ends_with(out, ".tsv") && !ends_with(out, ".safetensors"))
        return bertc_errorf(err, "--output '%s': the name must end in .tsv or .safetensors",
                            bertc_shown(out, shown));
    /* --model DIR's files count as inputs too: the output must not replace them */
    static const char *const flags[] = {"--config", "--weights", "--vocab", "--input",
                                        "--model", "--model", "--model", "--model"};
    static const char *const dir_files[] = {"config.json", "model.safetensors", "vocab.txt",
                                            "tokenizer_config.json"};
    const char *paths[8];
    char in_dir[4][BERTC_PATH_MAX];
    const char *dir = cli_value(&cli_cmd_embed, a, "--model");
    for (int i = 0; i < 4; i++) {
        paths[i] = cli_value(&cli_cmd_embed, a, flags[i]);
        if (dir && bertc_path_join(in_dir[i], dir, dir_files[i], "--model", err) != 0)
            return -1;
        paths[4 + i] = dir ? in_dir[i] : NULL;
    }
    return cli_output_not_an_input("--output", out, 8, flags, paths, err);
}

static int parse_run(const CliArgs *a, EmbedRun *r, BertcError *err)
{
    const CliCommand *c = &cli_cmd_embed;
    r->normalize = cli_given(c, a, "--normalize");
    if (parse_pooling(cli_value(c, a, "--pooling"), &r->pooling, err) != 0 ||
        cli_parse_int("--batch-size", cli_value(c, a, "--batch-size"), 1, 4096, &r->batch_size,
                      err) != 0 ||
        check_output(a, err) != 0)
        return -1;
    return cli_apply_threads(c, a, err);
}

static int embed(const CliArgs *a, Arena *arena, BertcError *err)
{
    const CliCommand *c = &cli_cmd_embed;
    CliModel cm;
    EmbedRun r = {.cm = &cm};
    CliText *texts;
    int n;
    CliModelFiles flags;   /* --model or --config, not both: the flags alone */
    if (parse_run(a, &r, err) != 0 || cli_model_files(c, a, &flags, err) != 0)
        return USAGE_ERROR;   /* a flag's value: exit status 2, as a bad flag */
    if (cli_texts(c, a, arena, false, &texts, &n, err) != 0 ||
        cli_model_open(c, a, arena, &cm, err) != 0 ||
        cli_model_max_len(c, a, &cm, texts, n, &r.max_len, err) != 0)
        return -1;
    r.H = cm.model->cfg.hidden_size;
    if (embed_all(&r, texts, n, arena, err) != 0)
        return -1;
    return write_output(&r, texts, n, cli_value(c, a, "--output"), err);
}

int cmd_embed(int argc, char **argv)
{
    CliArgs a;
    BertcError err;
    if (cli_parse(&cli_cmd_embed, argc, argv, &a, &err) != 0) {
        fprintf(stderr, "bertc embed: %s\n", err.msg);
        return 2;
    }
    if (a.help) {
        cli_print_help(&cli_cmd_embed, stdout);
        return 0;
    }
    Arena *arena = bertc_arena_create("embed", 1 << 20);
    int rc = embed(&a, arena, &err);
    bertc_arena_destroy(arena);
    if (rc != 0) {
        fprintf(stderr, "bertc embed: %s\n", err.msg);
        return rc == USAGE_ERROR ? 2 : 1;
    }
    return 0;
}
