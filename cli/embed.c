/* cli/embed.c — bertc embed: sentence embeddings as sentence-transformers
 * computes them. Each text is tokenized once, the texts sorted by length
 * into batches of --batch-size (cli/text_batches.c), and each is pooled
 * from last_hidden_state over its own attention mask (zoo/train/pipeline.h),
 * so a text's vector does not depend on the texts batched with it. A text
 * longer than --max-len is truncated, or with --stride read in windows
 * whose vectors are aggregated (their mean, maximum, or the first). */
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
    {"--input", "FILE", NULL, "the texts: plain text, one a line (a TAB is text, unless "
     "--pair), or a .tsv/.csv/.jsonl table with a text (and text_pair) column; - reads "
     "standard input"},
    {"--input-format", "text|tsv|csv|jsonl", NULL, cli_help_input_format},
    {"--text-column", "NAME", NULL, cli_help_text_column},
    {"--text-pair-column", "NAME", NULL, cli_help_text_pair_column},
    {"--pair", NULL, NULL, "inputs are pairs, encoded as one sequence: positionals two by "
     "two (TEXT TEXT_PAIR ...), a plain-text line TEXT<TAB>TEXT_PAIR"},
    {"--output", "FILE", NULL, "FILE.tsv (text, tab, the values) or FILE.safetensors (an "
     "(N, H) F32 tensor \"embeddings\"); default: TSV on stdout"},
    {"--batch-size", "N", "32", "sequences per forward, sorted by length, at most 1,024 tokens "
     "in all (the vectors do not depend on it; the output keeps the input order)"},
    {"--max-len", "N", NULL, "tokens per text (default: the model's model_max_length); longer "
     "texts are truncated (one warning line for the run), or read in windows with --stride"},
    {"--stride", "N", NULL, "read a text longer than --max-len whole, in windows sharing N "
     "tokens, and aggregate their vectors"},
    {"--aggregate", "mean|max|first", "mean", "with --stride: a text's vector from its "
     "windows' (their mean, their element-wise maximum, the first window's)"},
    {"--stats", NULL, NULL, "print inputs, tokens, padding and tokens/s on stderr"},
    {"--threads", "N", NULL, "worker threads (default: BERTC_THREADS, else the cores)"},
};

const CliCommand cli_cmd_embed = {
    .name = "embed",
    .summary = "sentence embeddings of texts (mean, cls or pooler), as TSV or safetensors",
    .usage = "(--model DIR | --config C.json --weights W.safetensors --vocab V.txt) "
             "[--pooling mean|cls|pooler] [--normalize] [--input FILE] [--output FILE] "
             "[--pair] [TEXT ...]",
    .description = "One vector per text, in input order (a blank input: an empty TSV line; "
                   "a .safetensors output refuses one). Mean pooling (the default) is "
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
    int stride;           /* -1: truncate */
    WindowAggregate aggregate;
    int64_t H;
    float *vectors;       /* (N, H) */
    int *windows;         /* (N) windows pooled into each vector */
    CliRunStats stats;
} EmbedRun;

static int parse_choice(const char *flag, const char *value, const char *const *names, int n,
                        int *out, BertcError *err)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(value, names[i])) {
            *out = i;
            return 0;
        }
    char shown[BERTC_SHOWN];
    return bertc_errorf(err, "%s '%s': expected %s, %s or %s", flag, bertc_shown(value, shown),
                        names[0], names[1], names[2]);
}

/* The vector of batch row `row` into vec (H). */
static int pool_row(const EmbedRun *r, const Batch *b, const Outputs *out, int row, float *vec,
                    BertcError *err)
{
    const char *arch = r->cm->model->arch->name;
    if (r->pooling == EMBED_POOLER) {
        Var *pooled = bertc_outputs_get(out, "pooler_output");
        if (!pooled)
            return bertc_errorf(err, "--pooling pooler: %s (%s) has no pooler_output; use "
                                "--pooling mean or cls", r->cm->name, arch);
        memcpy(vec, pooled->value.data + row * r->H, sizeof(float) * (size_t)r->H);
        return 0;
    }
    Var *h = bertc_outputs_get(out, "last_hidden_state");
    const BatchItem *mask = bertc_batch_find(b, "attention_mask");
    if (!h || !mask || h->value.ndim != 3)
        return bertc_errorf(err, "%s (%s) gives no last_hidden_state (B, S, H) with an "
                            "attention_mask; bertc embed needs a BERT encoder", r->cm->name, arch);
    int64_t S = h->value.shape[1];
    bertc_pool(r->pooling == EMBED_CLS ? POOL_CLS : POOL_MEAN, h->value.data + row * S * r->H,
               mask->ids.data + row * S, S, r->H, vec);
    return 0;
}

/* Window s's vector into its text's: the first window's, or their running
 * sum (mean) or maximum (max). */
static int embed_row(void *ctx, const CliSeq *s, const Batch *b, const Outputs *out, int row,
                     Graph *g, BertcError *err)
{
    EmbedRun *r = ctx;
    float *v = bertc_arena_alloc(g->step, sizeof(float) * (size_t)r->H);
    if (pool_row(r, b, out, row, v, err) != 0)
        return -1;
    float *acc = r->vectors + (int64_t)s->input * r->H;
    bertc_windows_add(r->aggregate, acc, v, r->H, r->windows[s->input]++, s->window);
    return 0;
}

#define CHUNK_INPUTS 1024

static int embed_all(EmbedRun *r, const CliText *texts, int n, Arena *arena, BertcError *err)
{
    r->vectors = bertc_arena_calloc(arena, (size_t)n * (size_t)r->H, sizeof(float));
    r->windows = bertc_arena_calloc(arena, (size_t)n, sizeof(int));
    CliSeqPlan plan = {.max_len = r->max_len, .stride = r->stride, .batch_size = r->batch_size,
                       .context = -1};
    for (int i = 0; i < n; i += CHUNK_INPUTS) {   /* a chunk's tokens at a time */
        int k = n - i < CHUNK_INPUTS ? n - i : CHUNK_INPUTS;
        if (cli_run_texts(r->cm, &plan, texts + i, i, k, embed_row, r, &r->stats, err) != 0)
            return -1;
    }
    for (int i = 0; i < n; i++) {
        float *v = r->vectors + (int64_t)i * r->H;
        bertc_windows_finish(r->aggregate, v, r->H, r->windows[i]);
        if (r->normalize && r->windows[i] > 0)
            bertc_l2_normalize(v, r->H);
    }
    return 0;
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
        if (cli_text_blank(&texts[i])) {   /* a blank result, so line k answers line k */
            fputc('\n', f);
            continue;
        }
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
    for (int i = 0; i < n; i++)   /* a tensor has no blank row */
        if (cli_text_blank(&texts[i]))
            return bertc_errorf(err, "--output %s: input %d is blank, and an (N, H) tensor has "
                                "no blank row; drop blank lines (grep .) or write .tsv", path,
                                cli_text_number(&texts[i], i));
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
    static const char *const poolings[] = {"mean", "cls", "pooler"};
    int pooling = 0;
    r->normalize = cli_given(c, a, "--normalize");
    r->stride = -1;
    if (cli_aggregate(c, a, &r->aggregate, err) != 0 ||
        parse_choice("--pooling", cli_value(c, a, "--pooling"), poolings, 3, &pooling,
                     err) != 0 ||
        (cli_given(c, a, "--stride") &&
         cli_parse_int("--stride", cli_value(c, a, "--stride"), 0, 1 << 20, &r->stride, err) != 0) ||
        cli_parse_int("--batch-size", cli_value(c, a, "--batch-size"), 1, 4096, &r->batch_size,
                      err) != 0 ||
        check_output(a, err) != 0)
        return -1;
    r->pooling = (EmbedPooling)pooling;
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
    CliInputs in = {.pairs = cli_given(c, a, "--pair"),
                    .format = cli_value(c, a, "--input-format"),
                    .text_column = cli_value(c, a, "--text-column"),
                    .pair_column = cli_value(c, a, "--text-pair-column")};
    int rc = cli_texts(c, a, &in, arena, &texts, &n, err);
    if (rc != 0)
        return rc;
    if (cli_model_open(c, a, arena, &cm, err) != 0 ||
        cli_model_max_len(c, a, &cm, texts, n, &r.max_len, err) != 0)
        return -1;
    r.H = cm.model->cfg.hidden_size;
    cli_model_prepack(&cm);
    rc = embed_all(&r, texts, n, arena, err);
    cli_warn_truncation("embed", &r.stats, r.max_len, true);
    if (rc != 0)
        return -1;
    if (cli_given(c, a, "--stats"))
        cli_print_stats("embed", &r.stats);
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
