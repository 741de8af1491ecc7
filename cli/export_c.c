/* cli/export_c.c — `bertc export-c --model DIR --out DIR [--int8]
 * [--int8-path P] [--max-len N]`: a sequence classifier
 * as C sources a firmware compiles as they are (docs/embedded.md):
 *
 *   model_data.c  const data, read in place (flash): every parameter
 *                 (float32, or an int8 Linear weight already packed for the
 *                 int8 path P), the BertConfig, the tokenizer's text,
 *                 offsets and hash slots, and the ConstModelData tying them
 *   model.h       model_init(arena, size), model_classify(text, logits, n),
 *                 MODEL_ARENA_BYTES, MODEL_N_LABELS, MODEL_MAX_TOKENS
 *   model.c       the glue: bertc_const_model_init / _classify (zoo/models/model_const.c)
 *
 * MODEL_ARENA_BYTES is measured, not guessed: the export runs the same
 * bertc_const_model_init / _classify on the host, with the portable fp32
 * path and int8 path P (what the target runs), on a text that fills max_len
 * tokens: the GEMM buffers at the sizes that run asked for, the model's
 * bookkeeping, and one step region of max(forward, tokenizer, model_init's
 * scratch) where the tokenizer's part is its fixed work buffer
 * (bertc_tokenizer_work_bytes: any text length fits); it then checks that an
 * arena of exactly that size classifies the text. The m4dsp path cannot run here: its
 * weights are packed and measured on the scalar path, whose layout it
 * shares (panels of 8 channels) and whose buffers are no smaller (rows of A
 * in blocks of 4, m4dsp's 2), and then marked for m4dsp. */
#include "cli/export_c.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const CliOption export_options[] = {
    {"--model", "DIR", NULL, "the sequence classifier's model directory [required]"},
    {"--out", "DIR", NULL, "where to write model_data.c, model.h and model.c (created) "
     "[required]"},
    {"--int8", NULL, NULL, "quantise the encoder's Linear weights to int8 (a directory made "
     "by bertc quantize is int8 already; `bertc quantize --embeddings` makes the word "
     "embeddings int8 too, a quarter of their flash)"},
    {"--int8-path", "P", "scalar", "the int8 path the target runs, which the packed weights "
     "are laid out for: scalar, m4dsp (Cortex-M4 DSP), avx2, avxvnni, avx512vnni, neon, "
     "neondot"},
    {"--max-len", "N", NULL, "tokens per text (default: model_max_length, else "
     "max_position_embeddings); the arena is sized for it"},
};

const CliCommand cli_cmd_export_c = {
    .name = "export-c",
    .summary = "write a classifier as C sources for a microcontroller (weights in flash)",
    .usage = "--model DIR --out DIR [--int8] [--int8-path P] [--max-len N]",
    .description = "Writes model_data.c (the weights, config, vocabulary and tokenizer "
                   "index as const data, read in place), model.h (model_init, "
                   "model_classify, MODEL_ARENA_BYTES measured on the host) and model.c. "
                   "Build them with libbertc (FREESTANDING for bare metal). See "
                   "docs/embedded.md.",
    .options = export_options,
    .n_options = sizeof export_options / sizeof export_options[0],
    .example = "bertc export-c --model my-classifier-int8 --out firmware/model "
               "--int8-path m4dsp --max-len 32",
    .manual = "model.h declares model_init(arena, size), model_classify(text, logits, n), "
              "model_classify_bytes(text, len, logits, n), model_error(), MODEL_ARENA_BYTES "
              "and MODEL_N_LABELS; model.c is the glue to libbertc (bertc_const_model_init). "
              "Floats are written as hexadecimal literals, so the weights are bit for bit the "
              "host's; int8 Linear weights are already packed for --int8-path.\n\n"
              "MODEL_ARENA_BYTES is measured: the export runs the model on the host, with the "
              "portable fp32 path and the chosen int8 path, on a text filling --max-len "
              "tokens, adds the GEMM buffers, the model's bookkeeping and the largest of the "
              "forward's high-water mark, the tokenizer's fixed work buffer and the build's "
              "scratch, and checks that an arena of exactly that size classifies it. A text of "
              "any length is read (its first max-len - 2 wordpieces). --int8-path m4dsp uses "
              "the scalar path's packed layout: the same sources also run on any other core, "
              "on the scalar path, with the same logits.",
};

/* ---- the model, as a table of const parameters --------------------------- */

static int table(Export *x, BertcError *err)
{
    const Registry *r = x->cm.model->reg;
    int n = 0;
    for (int i = 0; i < r->n_params; i++) {
        const Param *p = &r->params[i];
        if (p->alias_of >= 0)
            continue;
        if (n == EXPORT_MAX_PARAMS)
            return bertc_errorf(err, "%s: more than %d parameters", x->cm.name, EXPORT_MAX_PARAMS);
        const QuantPackedB *pb = p->qpacking;
        ConstParam *e = &x->params[n++];
        *e = (ConstParam){.name = p->name, .numel = p->var->value.numel};
        if (p->int8 && !p->linear_weight) {   /* word embeddings: int8 rows, row scales */
            *e = (ConstParam){.name = p->name, .numel = p->var->value.numel,
                              .qdata = p->var->qrows, .scale = p->var->qrow_scale};
            x->int8_names[x->d.n_int8++] = p->name;
        } else if (p->int8) {
            *e = (ConstParam){.name = p->name, .numel = pb->N * pb->K, .qdata = pb->data,
                              .col_sum = pb->col_sum, .scale = pb->scale, .k_pad = pb->k_pad,
                              .nr = pb->nr, .isa = pb->isa};
            x->int8_names[x->d.n_int8++] = p->name;
        } else {
            e->values = p->var->value.data;
        }
    }
    x->d.params = x->params;
    x->d.n_params = n;
    return 0;
}

/* --int8 on a float32 directory: quantise as `bertc quantize` would. */
static int quantize(Export *x, Arena *scratch, BertcError *err)
{
    Registry *r = x->cm.model->reg;
    if (r->n_int8 > 0)
        return 0;
    bool *chosen = bertc_arena_calloc(scratch, (size_t)r->n_params, sizeof *chosen);
    if (bertc_registry_int8_plan(r, NULL, 0, chosen, err) < 0)
        return -1;
    bertc_registry_quantize(r, chosen, scratch);
    return 0;
}

/* ---- the arena, measured ------------------------------------------------- */

/* A text of exactly `bytes` bytes: words of the vocabulary, so that it
 * fills max_len tokens when long enough. */
static char *long_text(const Tokenizer *tok, size_t bytes)
{
    char *t = malloc(bytes + 1);
    if (!t)
        return NULL;
    const char *word = "a";   /* else the vocabulary's first word that is no special or ## piece */
    if (bertc_tokenizer_id(tok, "a", 1) < 0) {
        for (int32_t id = 0; id < tok->V; id++) {
            const char *s = bertc_tokenizer_token(tok, id);
            if (s[0] != '[' && s[0] != '#') {
                word = s;
                break;
            }
        }
    }
    size_t w = strlen(word), k = 0;
    for (k = 0; k < bytes; k++)
        t[k] = k % (w + 1) == w ? ' ' : word[k % (w + 1)];
    t[bytes] = '\0';
    return t;
}

static size_t round64(size_t n)
{
    return (n + 63) & ~(size_t)63;
}

static size_t max_size(size_t a, size_t b)
{
    return a > b ? a : b;
}

static int run_in(Export *x, void *mem, size_t size, const char *text, ConstModel *cm,
                  BertcError *err)
{
    float logits[64];
    if (bertc_const_model_init(cm, &x->d, mem, size, err) != 0)
        return -1;
    int C = bertc_const_model_classify(cm, text, logits, 64, err);
    if (C < 0)
        return -1;
    x->n_labels = C;
    return 0;
}

#define ROOMY_SCRATCH ((size_t)64 << 20)

/* The sizes of a roomy run, with no GEMM buffer taken at init (the pack
 * sizes 0: the run grows them in its first half). The batch region holds one
 * text's input_ids, attention_mask and token_type_ids (int32, max_len each). */
static int measure_roomy(Export *x, void *mem, size_t roomy, const char *text, ConstModel *cm,
                         BertcError *err)
{
    x->d.pack_a_bytes = x->d.pack_b_bytes = x->d.qgemm_bytes = 0;
    x->d.batch_bytes = round64(3 * sizeof(int32_t) * (size_t)x->d.max_len);
    x->d.scratch_bytes = ROOMY_SCRATCH;
    bertc_gemm_set_pack_arena(NULL);
    bertc_qgemm_set_arena(NULL);
    Arena packs;
    bertc_arena_init_fixed(&packs, "gemm packs (measuring)", mem, roomy / 2);
    bertc_gemm_set_pack_arena(&packs);
    bertc_qgemm_set_arena(&packs);
    int rc = run_in(x, (char *)mem + roomy / 2, roomy / 2, text, cm, err);
    bertc_gemm_pack_sizes(&x->d.pack_a_bytes, &x->d.pack_b_bytes);
    x->d.qgemm_bytes = bertc_qgemm_scratch_bytes();
    x->d.scratch_bytes = cm->scratch_used;
    return rc;
}

/* Bytes for a text that fills max_len tokens: the sizes of a roomy run,
 * then a run in exactly that many bytes as the check. */
static int measure(Export *x, BertcError *err)
{
    static ConstModel cm;
    size_t roomy = (size_t)1 << 30;
    void *mem = aligned_alloc(64, roomy);
    char *text = long_text(x->cm.tok, 16 * (size_t)x->d.max_len);
    int rc = mem && text ? measure_roomy(x, mem, roomy, text, &cm, err)
                         : bertc_errorf(err, "export-c: out of memory for the %zu-byte arena "
                                        "the measurement runs in", roomy);
    if (rc == 0) {
        /* The tokenizer's fixed work buffer (zoo/text/tokenizer.h), whatever the
         * text; the ids go straight to the batch region. */
        size_t tokenizer = round64(bertc_tokenizer_work_bytes()) + 64;
        x->pack_bytes = bertc_const_model_pack_bytes(&x->d);
        x->model_bytes = round64(cm.model_bytes) + 64;
        x->forward_bytes = round64(bertc_arena_high_water(&cm.step));
        x->text_bytes = round64(cm.text_bytes);
        x->tokenizer_bytes = round64(max_size(tokenizer, x->text_bytes));
        x->scratch_bytes = round64(x->d.scratch_bytes) + 64;
        x->step_bytes = max_size(max_size(x->forward_bytes, x->tokenizer_bytes),
                                 x->scratch_bytes);
        x->arena_bytes = x->pack_bytes + x->model_bytes + x->step_bytes;
        rc = run_in(x, mem, x->arena_bytes, text, &cm, err);
        if (rc != 0)
            bertc_errorf(err, "export-c: the measured arena (%zu bytes) failed its own check: "
                         "%.200s", x->arena_bytes, err->msg);
    }
    bertc_gemm_set_pack_arena(NULL);
    bertc_qgemm_set_arena(NULL);
    free(text);
    free(mem);
    return rc;
}

/* --int8-path m4dsp: packed and measured as scalar (see the head). */
static int int8_path(const CliCommand *c, const CliArgs *a, QgemmIsa *target, QgemmIsa *host,
                     BertcError *err)
{
    const char *path = cli_value(c, a, "--int8-path");
    if (!bertc_qgemm_isa_from_name(path, target))
        return bertc_errorf(err, "--int8-path '%.40s': not an int8 path (scalar, m4dsp, avx2, "
                            "avxvnni, avx512vnni, neon, neondot)", path);
    *host = *target == QGEMM_ISA_M4DSP && !bertc_qgemm_isa_supported(*target) ? QGEMM_ISA_SCALAR
                                                                              : *target;
    if (!bertc_qgemm_isa_supported(*host))
        return bertc_errorf(err, "--int8-path %s: this machine cannot run it, so the export "
                            "cannot pack for it nor measure it", path);
    return 0;
}

/* After the measurement on the scalar path: the entries marked for m4dsp. */
static void mark_int8_path(Export *x, QgemmIsa target)
{
    x->d.int8_isa = (int)target;
    for (int i = 0; i < x->d.n_params; i++)
        if (x->params[i].qdata)
            x->params[i].isa = (int)target;
}

/* "A, B": the architectures whose descriptor says export-c writes them. */
static const char *exportable(Arena *arena)
{
    size_t cap = 1, used = 0;
    for (int i = 0; bertc_zoo_arch_at(i); i++)
        cap += strlen(bertc_zoo_arch_at(i)->name) + 2;
    char *list = bertc_arena_alloc(arena, cap);
    list[0] = '\0';
    for (int i = 0; bertc_zoo_arch_at(i); i++)
        if (bertc_zoo_arch_at(i)->export_c)
            used += (size_t)snprintf(list + used, cap - used, "%s%s", used ? ", " : "",
                                     bertc_zoo_arch_at(i)->name);
    return list;
}

static int prepare(const CliCommand *c, const CliArgs *a, Export *x, Arena *arena,
                   BertcError *err)
{
    QgemmIsa host = QGEMM_ISA_SCALAR;
    if (int8_path(c, a, &x->target_isa, &host, err) != 0)
        return -1;
    bertc_threads_set_count(1);
    bertc_cpu_set_isa(ISA_SCALAR);   /* the target's fp32 path: its pack sizes */
    bertc_qgemm_set_isa(host);       /* int8 weights load packed for it */
    const char *model = cli_value(c, a, "--model");
    if (cli_model_open(c, a, arena, &x->cm, err) != 0 ||
        cli_model_max_len(c, a, &x->cm, NULL, 0, &x->d.max_len, err) != 0)
        return -1;
    const ModelArch *arch = x->cm.model->arch;
    if (!arch->batch_from_text)
        return bertc_errorf(err, "%s: %s takes no raw text; export-c writes text classifiers",
                            model, arch->name);
    if (!arch->export_c || arch->n_keys > 0)
        return bertc_errorf(err, "%s: export-c does not write %s (it writes %s)", model,
                            arch->name, exportable(arena));
    if (cli_given(c, a, "--int8") && quantize(x, arena, err) != 0)
        return -1;
    x->d.arch = arch;
    x->config = x->cm.model->cfg;
    x->d.config = &x->config;
    x->d.int8_isa = (int)host;
    x->d.int8_names = x->int8_names;
    x->d.tok = x->cm.tok;
    if (table(x, err) != 0)
        return -1;
    x->config.int8_dynamic = x->d.n_int8 > 0;   /* --int8 made it a quantised model */
    return 0;
}

int cmd_export_c(int argc, char **argv)
{
    const CliCommand *c = &cli_cmd_export_c;
    CliArgs a;
    int rc = cli_start(c, argc, argv, &a);
    if (rc >= 0)
        return rc;
    const char *out = cli_value(c, &a, "--out");
    if (!cli_value(c, &a, "--model"))
        return cli_required(c, "--model");
    if (!out)
        return cli_required(c, "--out");
    BertcError err;
    static Export x;
    Arena *arena = bertc_arena_create("export-c", 1 << 20);
    rc = prepare(c, &a, &x, arena, &err);
    if (rc == 0)
        rc = measure(&x, &err);
    if (rc == 0) {
        mark_int8_path(&x, x.target_isa);
        rc = write_sources(&x, out, &err);
    }
    if (rc == 0)
        printf("export-c: %s -> %s: %d parameters (%d int8, %s path), %d tokens, arena %zu "
               "bytes (gemm %zu, model %zu, step %zu = max(forward %zu, tokenizer bound %zu, "
               "init %zu))\n", x.cm.name, out, x.d.n_params, x.d.n_int8,
               bertc_qgemm_isa_name((QgemmIsa)x.d.int8_isa), (int)x.d.max_len, x.arena_bytes,
               x.pack_bytes, x.model_bytes, x.step_bytes, x.forward_bytes, x.tokenizer_bytes,
               x.scratch_bytes);
    bertc_arena_destroy(arena);
    return rc == 0 ? 0 : cli_fail(&err);
}
