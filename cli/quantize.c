/* cli/quantize.c — `bertc quantize --model DIR --out DIR [--dtype int8|bf16]
 * [--keep NAMES] [--embeddings] [--force]`: a float32 model directory -> an
 * int8 one, or a bf16 one (docs/quantization.md).
 *
 * The plan (nn/quantize.c) picks the encoder's Linear weights, and with
 * --embeddings the word embeddings; each becomes an I8 (rows, cols) tensor
 * "X.weight" and its F32 (rows) scales "X.weight_scale" (bertc_quantize_rows:
 * per output channel, or per token, symmetric); the rest is written as it
 * was, in float32. With --dtype bf16 the same Linear weights are stored
 * BF16 instead (rounded to nearest even), which the bf16 GEMM multiplies
 * (tensor/kernels.h). config.json is the source's text
 * with a quantization_config added; vocab.txt and tokenizer_config.json are
 * copied. The source directory is only read. */
#include "cli/cli.h"
#include "zoo/train/train.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const CliOption quantize_options[] = {
    {"--model", "DIR", NULL, "the float32 model directory to quantise [required]"},
    {"--out", "DIR", NULL, "the int8 model directory to write (created; must be empty "
     "unless --force) [required]"},
    {"--dtype", "T", "int8", "int8 (one scale per output channel) or bf16 (the weights "
     "rounded to bfloat16, run by the bf16 GEMM where the CPU has AVX512_BF16)"},
    {"--keep", "NAMES", NULL, "comma-separated Linear modules (dotted names or prefixes) to "
     "keep float32 too"},
    {"--embeddings", NULL, NULL, "also store the word-embedding table as int8, one scale per "
     "row (token): for flash-sized models, where it is most of the bytes"},
    {"--force", NULL, NULL, "write into a non-empty --out (its four model files are "
     "replaced; nothing else is removed)"},
};

const CliCommand cli_cmd_quantize = {
    .name = "quantize",
    .summary = "write an int8 (or bf16) copy of a model directory for faster inference",
    .usage = "--model DIR --out DIR [--dtype int8|bf16] [--keep NAMES] [--embeddings] [--force]",
    .description = "Stores the encoder's Linear weights as int8 with one float32 scale per "
                   "output channel (safetensors I8 + F32 \"<name>_scale\"); with "
                   "--embeddings the word embeddings too, one scale per row. Other "
                   "embeddings, LayerNorms, biases, the pooler and the heads stay float32. "
                   "Activations "
                   "are quantised per row when the model runs. --dtype bf16 stores the same "
                   "Linear weights as bfloat16 instead and runs them in bf16 with float32 "
                   "accumulation. Every command that reads "
                   "--model reads the result; training it is refused. "
                   "See docs/quantization.md.",
    .options = quantize_options,
    .n_options = sizeof quantize_options / sizeof quantize_options[0],
    .example = "bertc quantize --model my-classifier --out my-classifier-int8",
    .manual = "config.json gains a quantization_config (quant_method bertc_dynamic_int8), and "
              "the command prints how many weights it quantised and the sizes before and "
              "after. With --embeddings the lookup dequantises the rows it reads; position and "
              "token-type tables stay float32, and word embeddings tied to an output layer (a "
              "masked-LM decoder) are refused. --out is never the --model directory, and an "
              "already quantised model is refused. run, predict, embed, encode, summary and "
              "attention read the result as any model directory; finetune refuses it (train "
              "the float32 model, then quantise).",
};

#define MAX_KEEP 64

/* ---- the output directory ------------------------------------------------ */

/* --out: new, or an empty directory (any directory with --force), never
 * the source. Checked before the model is read; created after. */
static int check_out(const char *model, const char *out, bool force, BertcError *err)
{
    struct stat src;
    if (stat(model, &src) != 0 || !S_ISDIR(src.st_mode))
        return bertc_errorf(err, "--model %s: not a model directory", model);
    if (bertc_same_file(model, out))
        return bertc_errorf(err, "--out %s is the --model directory: bertc quantize never "
                            "writes over the model it reads", out);
    return bertc_train_check_out_empty(out, force, "to replace the model files in it", NULL,
                                       err);
}

static int make_out(const char *out, BertcError *err)
{
    if (mkdir(out, 0777) != 0 && errno != EEXIST)
        return bertc_errorf(err, "--out %s: cannot create the directory: %s", out,
                            strerror(errno));
    return 0;
}

/* ---- the weights --------------------------------------------------------- */

/* What is written: the entries, and the int8 buffers they point to. */
typedef struct QuantOut {
    StEntry *entries;
    size_t n;
    int n_quantised;                /* I8 (or BF16) tensors: Linear weights, word embeddings */
    double bytes_f32, bytes_after;  /* the quantised weights: before, after (int8 with scales) */
} QuantOut;

/* Weight i (rows, cols) as I8 "name" + F32 "name_scale" (rows), quantised
 * into arena: per output channel of a Linear, per token of an embedding. */
static void add_int8(QuantOut *q, const Param *p, Arena *arena)
{
    const Tensor *W = &p->var->value;
    int64_t out = W->shape[0], in = W->shape[1];
    int8_t *qw = bertc_arena_alloc(arena, (size_t)(out * in));
    float *scale = bertc_arena_alloc(arena, sizeof(float) * (size_t)out);
    bertc_quantize_rows(W->data, out, in, in, qw, scale);
    q->entries[q->n++] = (StEntry){.name = p->name, .dtype = ST_I8, .ndim = 2,
                                   .shape = W->shape, .i8 = qw};
    size_t len = strlen(p->name) + sizeof "_scale";
    char *name = bertc_arena_alloc(arena, len);
    snprintf(name, len, "%s_scale", p->name);
    q->entries[q->n++] = (StEntry){.name = name, .dtype = ST_F32, .ndim = 1, .shape = W->shape,
                                   .f32 = scale};
    q->n_quantised++;
    q->bytes_f32 += 4.0 * (double)(out * in);
    q->bytes_after += (double)(out * in) + 4.0 * (double)out;
}

/* Weight i as BF16 "name", rounded as it is written (the safetensors writer). */
static void add_bf16(QuantOut *q, const Param *p)
{
    const Tensor *W = &p->var->value;
    q->entries[q->n++] = (StEntry){.name = p->name, .dtype = ST_BF16, .ndim = W->ndim,
                                   .shape = W->shape, .f32 = W->data};
    q->n_quantised++;
    q->bytes_f32 += 4.0 * (double)W->numel;
    q->bytes_after += 2.0 * (double)W->numel;
}

/* Every parameter and tied alias, as bertc_registry_save_file writes them,
 * the chosen weights in int8 (or bf16). */
static void plan_entries(const Registry *r, const bool *chosen, bool bf16, Arena *arena,
                         QuantOut *q)
{
    q->entries = bertc_arena_calloc(arena, 2 * (size_t)r->n_params + 1, sizeof *q->entries);
    for (int i = 0; i < r->n_params; i++) {
        const Param *p = &r->params[i];
        if (chosen[i] && bf16)
            add_bf16(q, p);
        else if (chosen[i])
            add_int8(q, p, arena);
        else
            q->entries[q->n++] = bertc_st_entry_tensor(p->name, &p->var->value);
    }
}

/* ---- config.json and the tokenizer files ---------------------------------- */

/* The modules of the chosen Linear weights (linear) or word embeddings, as
 * the body of a JSON list, one a line after `indent`: "\n<indent>\"a.b\",...". */
static size_t module_list(char *dst, const Registry *r, const bool *chosen, bool linear,
                          const char *indent)
{
    size_t n = 0;
    const char *sep = "";
    for (int i = 0; i < r->n_params; i++) {
        if (!chosen[i] || r->params[i].linear_weight != linear)
            continue;
        const char *name = r->params[i].name;
        size_t len = strlen(name) - (sizeof ".weight" - 1);   /* the module's name */
        n += (size_t)sprintf(dst + n, "%s\n%s", sep, indent);
        n += bertc_json_quote(dst + n, bertc_json_quote(NULL, 0, name, len) + 1, name, len);
        sep = ",";
    }
    return n;
}

/* The source's config.json text with "quantization_config" added as the
 * last key of its object (the text was parsed as a config: it is one). The
 * int8 word embeddings, when chosen, are listed in its "embeddings" object
 * (docs/quantization.md). */
static int write_config(const char *src, const char *dst, const Registry *r, const bool *chosen,
                        int n_embeddings, bool bf16, BertcError *err)
{
    Arena *a;
    char *text;
    size_t len;
    if (bertc_read_file(src, 1 << 24, "a config.json", &a, &text, &len, err) != 0) {
        bertc_arena_destroy(a);
        return -1;
    }
    size_t close = len;
    while (close > 0 && text[close - 1] != '}')
        close--;
    size_t body = close ? close - 1 : 0;
    while (body > 0 && strchr(" \t\r\n", text[body - 1]))
        body--;
    size_t cap = len + 768;
    for (int i = 0; i < r->n_params; i++)
        cap += chosen[i] ? 6 * strlen(r->params[i].name) + 16 : 0;
    char *outb = bertc_arena_alloc(a, cap);
    memcpy(outb, text, body);
    size_t n = body;
    const char *scheme = bf16 ? "\"quant_method\": \"" CONFIG_QUANT_METHOD_BF16 "\",\n"
                                "    \"weights\": \"bfloat16, rounded to nearest even\",\n"
                                "    \"activations\": \"bfloat16 per GEMM, float32 "
                                "accumulation\",\n"
                              : "\"quant_method\": \"" CONFIG_QUANT_METHOD "\",\n"
                                "    \"weights\": \"int8 per-output-channel symmetric\",\n"
                                "    \"activations\": \"int8 per-row dynamic\",\n";
    n += (size_t)sprintf(outb + n, "%s\n  \"quantization_config\": {\n    %s    \"modules\": [",
                         body > 0 && text[body - 1] != '{' ? "," : "", scheme);
    n += module_list(outb + n, r, chosen, true, "      ");
    n += (size_t)sprintf(outb + n, "\n    ]");
    if (n_embeddings > 0) {
        n += (size_t)sprintf(outb + n, ",\n    \"embeddings\": {\n      \"weights\": \"int8 "
                             "per-row symmetric\",\n      \"modules\": [");
        n += module_list(outb + n, r, chosen, false, "        ");
        n += (size_t)sprintf(outb + n, "\n      ]\n    }");
    }
    n += (size_t)sprintf(outb + n, "\n  }\n}\n");
    int rc = bertc_write_file(dst, outb, n, err);
    bertc_arena_destroy(a);
    return rc;
}

/* dir/name copied to out/name when it exists. */
static int copy_if_present(const char *dir, const char *out, const char *name, BertcError *err)
{
    char src[BERTC_PATH_MAX], dst[BERTC_PATH_MAX];
    if (bertc_path_join(src, dir, name, "--model", err) != 0 ||
        bertc_path_join(dst, out, name, "--out", err) != 0)
        return -1;
    struct stat st;
    if (stat(src, &st) != 0)
        return 0;
    Arena *a;
    char *text;
    size_t len;
    int rc = bertc_read_file(src, 1 << 28, "a tokenizer file", &a, &text, &len, err);
    if (rc == 0)
        rc = bertc_write_file(dst, text, len, err);
    bertc_arena_destroy(a);
    return rc;
}

/* ---- the command ---------------------------------------------------------- */

/* --keep a,b,c -> keep[] (pointers into buf). */
static int split_keep(const char *value, char *buf, size_t cap, const char **keep,
                      BertcError *err)
{
    if (!value)
        return 0;
    if (strlen(value) >= cap)
        return bertc_errorf(err, "--keep: the list is longer than %zu bytes", cap - 1);
    snprintf(buf, cap, "%s", value);
    int n = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        if (n == MAX_KEEP)
            return bertc_errorf(err, "--keep: more than %d names", MAX_KEEP);
        keep[n++] = tok;
    }
    return n;
}

static double file_bytes(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (double)st.st_size : 0.0;
}

/* The source's config: refused when the model is already quantised. */
static int check_source(const char *model, BertcError *err)
{
    char config[BERTC_PATH_MAX];
    BertConfig cfg;
    if (bertc_path_join(config, model, "config.json", "--model", err) != 0 ||
        bertc_bert_config_read(config, &cfg, err) != 0)
        return -1;
    bertc_bert_config_free(&cfg);   /* only int8_dynamic and bf16 are asked */
    if (cfg.int8_dynamic || cfg.bf16)
        return bertc_errorf(err, "%s: the model is already quantised (it has a "
                            "quantization_config); quantise its float32 original", config);
    return 0;
}

/* The source model, float32, with its weights. */
static int open_source(const char *model, Arena *arena, ModelDir *d, BertcError *err)
{
    if (bertc_model_dir_open(d, arena, model, err) != 0)
        return -1;
    if (!d->has_weights)
        return bertc_errorf(err, "%s: no model.safetensors to quantise", model);
    return 0;
}

/* What the flags ask for beside the encoder's Linear weights. */
typedef struct QuantAsk {
    const char **keep;     /* --keep */
    int n_keep;
    bool embeddings;       /* --embeddings */
    bool bf16;             /* --dtype bf16 */
} QuantAsk;

/* chosen[i] per parameter: the plan of nn/quantize.c for the flags. Returns
 * how many word-embedding tables it holds, -1 on an error. */
static int plan(const char *model, const Registry *r, const QuantAsk *ask, bool *chosen,
                BertcError *err)
{
    int n = bertc_registry_int8_plan(r, ask->keep, ask->n_keep, chosen, err);
    if (n == 0)
        return bertc_errorf(err, "%s: no Linear weight left to quantise (the plan takes the "
                            "encoder's; --keep kept them all)", model);
    if (n < 0 || !ask->embeddings)
        return n < 0 ? -1 : 0;
    int n_tables = bertc_registry_int8_plan_embeddings(r, chosen, err);
    if (n_tables < 0) {
        BertcError inner = *err;
        return bertc_errorf(err, "%s: --embeddings: %s", model, inner.msg);
    }
    return n_tables;
}


/* A small model is mostly its word embeddings (8000 x 128 floats are 4 MB
 * of an 8 MB BERT-tiny): int8 Linears alone shrink it little. Say where the
 * bytes are when the table is a third of the file or more (issue #29). */
static void embeddings_hint(const Registry *r, double file)
{
    double bytes = 0;
    for (int i = 0; i < r->n_params; i++) {
        if (!r->params[i].word_embeddings || r->params[i].alias_of >= 0)
            continue;
        for (int j = 0; j < r->n_params; j++)
            if (r->params[j].alias_of == i)
                return;   /* tied to an output layer: --embeddings refuses it */
        bytes += 4.0 * (double)r->params[i].var->value.numel;
    }
    if (file > 0 && bytes >= file / 3)
        printf("note: the word embeddings are %.1f MB of the %.1f MB (%.0f %%), kept float32: "
               "--embeddings stores them as int8 too\n", bytes / 1e6, file / 1e6,
               100.0 * bytes / file);
}

static int quantize(const char *model, const char *out, const QuantAsk *ask, Arena *arena,
                    BertcError *err)
{
    ModelDir d;
    if (open_source(model, arena, &d, err) != 0)
        return -1;
    Registry *r = d.model.reg;
    bool *chosen = bertc_arena_calloc(arena, (size_t)r->n_params, sizeof *chosen);
    int n_embeddings = plan(model, r, ask, chosen, err);
    if (n_embeddings < 0 || make_out(out, err) != 0)
        return -1;
    QuantOut q = {0};
    plan_entries(r, chosen, ask->bf16, arena, &q);
    char src[BERTC_PATH_MAX], dst[BERTC_PATH_MAX];
    StMetadata meta[2] = {{"format", "pt"},
                          {"quantization", ask->bf16 ? CONFIG_QUANT_METHOD_BF16
                                                     : CONFIG_QUANT_METHOD}};
    if (bertc_path_join(dst, out, "model.safetensors", "--out", err) != 0 ||
        bertc_st_write_file(dst, q.entries, q.n, meta, 2, err) != 0 ||
        bertc_path_join(src, model, "config.json", "--model", err) != 0 ||
        bertc_path_join(dst, out, "config.json", "--out", err) != 0 ||
        write_config(src, dst, r, chosen, n_embeddings, ask->bf16, err) != 0 ||
        copy_if_present(model, out, "vocab.txt", err) != 0 ||
        copy_if_present(model, out, "tokenizer_config.json", err) != 0 ||
        bertc_path_join(src, model, "model.safetensors", "--model", err) != 0 ||
        bertc_path_join(dst, out, "model.safetensors", "--out", err) != 0)
        return -1;
    if (ask->bf16)
        printf("stored %d Linear weights as bf16 (%.1f MB float32 -> %.1f MB bf16); %d other "
               "tensors kept float32\n", q.n_quantised, q.bytes_f32 / 1e6, q.bytes_after / 1e6,
               (int)q.n - q.n_quantised);
    else
        printf("quantised %d Linear weights%s to int8 (%.1f MB float32 -> %.1f MB int8 with "
               "scales); %d other tensors kept float32\n", q.n_quantised - n_embeddings,
               n_embeddings ? " and the word embeddings" : "", q.bytes_f32 / 1e6,
               q.bytes_after / 1e6, (int)q.n - 2 * q.n_quantised);
    printf("model.safetensors: %.1f MB -> %.1f MB (%.0f -> %.0f bytes); wrote %s\n",
           file_bytes(src) / 1e6, file_bytes(dst) / 1e6, file_bytes(src), file_bytes(dst), out);
    if (!ask->bf16 && n_embeddings == 0)
        embeddings_hint(r, file_bytes(src));
    return 0;
}

int cmd_quantize(int argc, char **argv)
{
    const CliCommand *c = &cli_cmd_quantize;
    CliArgs a;
    int rc = cli_start(c, argc, argv, &a);
    if (rc >= 0)
        return rc;
    const char *model = cli_value(c, &a, "--model"), *out = cli_value(c, &a, "--out");
    if (!model)
        return cli_required(c, "--model");
    if (!out)
        return cli_required(c, "--out");
    BertcError err;
    char keep_buf[4096];
    const char *keep[MAX_KEEP];
    QuantAsk ask = {.keep = keep, .embeddings = cli_given(c, &a, "--embeddings")};
    const char *dtype = cli_value(c, &a, "--dtype");
    if (dtype && strcmp(dtype, "int8") != 0 && strcmp(dtype, "bf16") != 0) {
        fprintf(stderr, "bertc quantize: --dtype %s: expected int8 or bf16\n", dtype);
        return 2;
    }
    ask.bf16 = dtype && strcmp(dtype, "bf16") == 0;
    if (ask.bf16 && ask.embeddings) {
        fprintf(stderr, "bertc quantize: --embeddings stores the word embeddings as int8; "
                "it does not go with --dtype bf16\n");
        return 2;
    }
    ask.n_keep = split_keep(cli_value(c, &a, "--keep"), keep_buf, sizeof keep_buf, keep, &err);
    if (ask.n_keep < 0) {
        fprintf(stderr, "bertc quantize: %s\n", err.msg);
        return 2;
    }
    if (check_source(model, &err) != 0 ||
        check_out(model, out, cli_given(c, &a, "--force"), &err) != 0)
        return cli_fail(&err);
    Arena *arena = bertc_arena_create("quantize", 1 << 20);
    rc = quantize(model, out, &ask, arena, &err);
    bertc_arena_destroy(arena);
    return rc == 0 ? 0 : cli_fail(&err);
}
