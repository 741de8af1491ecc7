/* cli/export_c_write.c — the three sources of `bertc export-c`
 * (cli/export_c.c): model_data.c (const data), model.h and model.c.
 *
 * Floats are written as C99 hexadecimal literals ("%a"), so every weight
 * is bit-for-bit the host's; int8 weights as their packed bytes, for the
 * int8 path named in the data. Arrays are _Alignas(16) (the packed int8
 * parts) or 4 (floats); `const` puts them in flash. */
#include "cli/export_c.h"

#include <errno.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>

typedef struct Out {
    FILE *f;
    char path[BERTC_PATH_MAX];
} Out;

static int open_out(Out *o, const char *dir, const char *name, BertcError *err)
{
    o->f = NULL;
    if (bertc_path_join(o->path, dir, name, "--out", err) != 0)
        return -1;
    o->f = fopen(o->path, "w");
    if (!o->f)
        return bertc_errorf(err, "--out: cannot write %s: %s", o->path, strerror(errno));
    return 0;
}

static int close_out(Out *o, BertcError *err)
{
    bool bad = ferror(o->f) != 0;
    if (fclose(o->f) != 0 || bad)
        return bertc_errorf(err, "--out: writing %s failed: %s", o->path, strerror(errno));
    return 0;
}

/* ---- arrays --------------------------------------------------------------- */

/* Before element i of an initialiser with `per` elements a line. */
static const char *sep(int64_t i, int per)
{
    return i == 0 ? "\n    " : i % per ? ", " : ",\n    ";
}

static int floats(FILE *f, const char *name, const float *v, int64_t n, BertcError *err)
{
    fprintf(f, "static _Alignas(16) const float %s[%lld] = {", name, (long long)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(v[i]))
            return bertc_errorf(err, "export-c: %s[%lld] is %g: weights must be finite", name,
                                (long long)i, (double)v[i]);
        fprintf(f, "%s%af", sep(i, 6), (double)v[i]);
    }
    fprintf(f, "%s};\n", n ? "\n" : "0");
    return 0;
}

static void int8s(FILE *f, const char *name, const int8_t *v, int64_t n)
{
    fprintf(f, "static _Alignas(16) const int8_t %s[%lld] = {", name, (long long)n);
    for (int64_t i = 0; i < n; i++)
        fprintf(f, "%s%d", sep(i, 16), v[i]);
    fprintf(f, "\n};\n");
}

static void int32s(FILE *f, const char *type, const char *name, const void *v, int64_t n)
{
    fprintf(f, "static _Alignas(16) const %s %s[%lld] = {", type, name, (long long)n);
    for (int64_t i = 0; i < n; i++) {
        long long x = strcmp(type, "uint32_t") == 0 ? (long long)((const uint32_t *)v)[i]
                                                     : (long long)((const int32_t *)v)[i];
        fprintf(f, "%s%lld", sep(i, 10), x);
    }
    fprintf(f, "\n};\n");
}

static void bytes(FILE *f, const char *name, const char *v, size_t n)
{
    fprintf(f, "static const char %s[%zu] = {", name, n);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s%d", sep((int64_t)i, 20), (int)(signed char)v[i]);
    fprintf(f, "\n};\n");
}

/* A C string literal of s (n bytes) for a name or the config text. */
static void literal(FILE *f, const char *s, size_t n)
{
    fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch == '\n')
            fputs("\\n\"\n    \"", f);
        else if (ch < 32 || ch >= 127)
            fprintf(f, "\\%03o", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

/* ---- model_data.c --------------------------------------------------------- */

static int64_t n_pad(const ConstParam *e, int64_t N)
{
    return (N + e->nr - 1) / e->nr * e->nr;
}

static int param_arrays(FILE *f, const Export *x, BertcError *err)
{
    const Registry *r = x->cm.model->reg;
    for (int i = 0; i < x->d.n_params; i++) {
        const ConstParam *e = &x->d.params[i];
        char name[32];
        if (e->values) {
            snprintf(name, sizeof name, "p%d", i);
            if (floats(f, name, e->values, e->numel, err) != 0)
                return -1;
            continue;
        }
        int64_t N = r->params[bertc_registry_find(r, e->name)].var->value.shape[0];
        if (!e->col_sum) {   /* int8 word embeddings (V, H): rows and row scales */
            snprintf(name, sizeof name, "q%d", i);
            int8s(f, name, e->qdata, e->numel);
            snprintf(name, sizeof name, "s%d", i);
            if (floats(f, name, e->scale, N, err) != 0)
                return -1;
            continue;
        }
        int64_t np = n_pad(e, N);
        snprintf(name, sizeof name, "q%d", i);
        int8s(f, name, e->qdata, np * e->k_pad);
        snprintf(name, sizeof name, "c%d", i);
        int32s(f, "int32_t", name, e->col_sum, np);
        snprintf(name, sizeof name, "s%d", i);
        if (floats(f, name, e->scale, np, err) != 0)
            return -1;
    }
    return 0;
}

static void param_table(FILE *f, const Export *x)
{
    fprintf(f, "\nstatic const ConstParam params[%d] = {\n", x->d.n_params);
    for (int i = 0; i < x->d.n_params; i++) {
        const ConstParam *e = &x->d.params[i];
        fputs("    {.name = ", f);
        literal(f, e->name, strlen(e->name));
        if (e->values)
            fprintf(f, ", .numel = %lld, .values = p%d},\n", (long long)e->numel, i);
        else if (!e->col_sum)
            fprintf(f, ", .numel = %lld, .qdata = q%d, .scale = s%d},\n", (long long)e->numel,
                    i, i);
        else
            fprintf(f, ", .numel = %lld, .qdata = q%d, .col_sum = c%d, .scale = s%d, "
                    ".k_pad = %lld, .nr = %d, .isa = %d},\n", (long long)e->numel, i, i, i,
                    (long long)e->k_pad, e->nr, e->isa);
    }
    fputs("};\n", f);
    fprintf(f, "\nstatic const char *const int8_names[%d] = {\n", x->d.n_int8 ? x->d.n_int8 : 1);
    for (int i = 0; i < x->d.n_int8; i++) {
        fputs("    ", f);
        literal(f, x->d.int8_names[i], strlen(x->d.int8_names[i]));
        fputs(",\n", f);
    }
    fputs(x->d.n_int8 ? "};\n" : "    0\n};\n", f);
}

/* The tokenizer as it is in memory: its text (tokens, NUL-separated), the
 * id -> offset array and the hash slots; nothing is built at run time. */
static void tokenizer(FILE *f, const Tokenizer *t)
{
    const char *last = t->text + t->offset[t->V - 1];
    size_t text_len = (size_t)(last - t->text) + strlen(last) + 1;
    bytes(f, "tok_text", t->text, text_len);
    int32s(f, "uint32_t", "tok_offset", t->offset, t->V);
    int32s(f, "int32_t", "tok_slots", t->slots, (int64_t)t->slot_mask + 1);
    fprintf(f, "\nstatic const Tokenizer tok = {\n    .name = \"vocab.txt\", .V = %ld, "
            ".text = tok_text, .offset = tok_offset, .slots = tok_slots,\n"
            "    .slot_mask = %lu, .max_chars = %ld, .pad_id = %ld, .unk_id = %ld, "
            ".cls_id = %ld,\n    .sep_id = %ld, .mask_id = %ld, .do_lower_case = %s,\n};\n",
            (long)t->V, (unsigned long)t->slot_mask, (long)t->max_chars, (long)t->pad_id,
            (long)t->unk_id, (long)t->cls_id, (long)t->sep_id, (long)t->mask_id,
            t->do_lower_case ? "true" : "false");
}

/* The model's BertConfig as a const initialiser: the target reads it in
 * place (no JSON parser, no config tree, no BertConfig copy on the stack).
 * The architecture's own keys (cfg->model) are not written: export-c
 * writes architectures that have none (cli/export_c.c). */
static void config_struct(FILE *f, const BertConfig *c)
{
    size_t n;   /* the label names, each NUL-terminated, one after the other */
    const char *names = bertc_bert_config_label_text(c, &n);
    bool inline_names = n <= sizeof c->label_names;
    if (!inline_names) {   /* too many for the struct: an array of their own */
        fputs("\nstatic const char label_names[] = {", f);
        for (size_t i = 0; i < n; i++)
            fprintf(f, "%s%d", sep((int64_t)i, 20), (int)(signed char)names[i]);
        fputs("\n};\n", f);
    }
    fputs("\nstatic const BertConfig config = {\n    .architecture = ", f);
    literal(f, c->architecture, strlen(c->architecture));
    fprintf(f, ",\n    .vocab_size = %d, .hidden_size = %d, .num_hidden_layers = %d,\n"
            "    .num_attention_heads = %d, .intermediate_size = %d,\n"
            "    .hidden_act = (BertAct)%d, .hidden_dropout_prob = %af,\n"
            "    .attention_probs_dropout_prob = %af, .max_position_embeddings = %d,\n"
            "    .type_vocab_size = %d, .initializer_range = %af, .layer_norm_eps = %af,\n"
            "    .classifier_dropout = %af, .pad_token_id = %d, .sep_token_id = %d,\n"
            "    .mask_token_id = %d, .cls_token_id = %d, .unk_token_id = %d,\n"
            "    .num_labels = %d, .problem_type = (ProblemType)%d, .n_label_names = %d,\n"
            "    .add_pooling_layer = %s, .int8_dynamic = %s,\n    %s",
            c->vocab_size, c->hidden_size, c->num_hidden_layers, c->num_attention_heads,
            c->intermediate_size, (int)c->hidden_act, (double)c->hidden_dropout_prob,
            (double)c->attention_probs_dropout_prob, c->max_position_embeddings,
            c->type_vocab_size, (double)c->initializer_range, (double)c->layer_norm_eps,
            (double)c->classifier_dropout, c->pad_token_id, c->sep_token_id, c->mask_token_id,
            c->cls_token_id, c->unk_token_id, c->num_labels, (int)c->problem_type,
            c->n_label_names, c->add_pooling_layer ? "true" : "false",
            c->int8_dynamic ? "true" : "false",
            inline_names ? ".label_names = {" : ".label_spill = label_names,\n};\n");
    if (!inline_names)
        return;
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s%d", sep((int64_t)i, 20), (int)(signed char)names[i]);
    fputs(n ? "\n    },\n};\n" : "0},\n};\n", f);
}

static int write_data(const Export *x, const char *dir, BertcError *err)
{
    Out o;
    if (open_out(&o, dir, "model_data.c", err) != 0)
        return -1;
    FILE *f = o.f;
    fprintf(f, "/* model_data.c — written by bertc export-c from %s: the model as const "
            "data,\n * read in place (docs/embedded.md). Do not edit. */\n"
            "#include \"bertc.h\"\n#include \"model.h\"\n\n", x->cm.name);
    int rc = param_arrays(f, x, err);
    if (rc == 0) {
        param_table(f, x);
        tokenizer(f, x->d.tok);
        config_struct(f, x->d.config);
        const char *arch = bertc_zoo_arch_symbol(x->d.arch);   /* the firmware links it alone */
        fprintf(f, "\nextern const ModelArch %s;\n\nconst ConstModelData model_data = {\n"
                "    .arch = &%s, .config = &config,\n"
                "    .int8_names = int8_names, .n_int8 = %d, .int8_isa = %d,\n"
                "    .params = params, .n_params = %d, .tok = &tok, .max_len = %ld,\n"
                "    .pack_a_bytes = %zu, .pack_b_bytes = %zu, .qgemm_bytes = %zu,\n"
                "    .batch_bytes = %zu, .scratch_bytes = %zu,\n};\n",
                arch, arch, x->d.n_int8, x->d.int8_isa, x->d.n_params, (long)x->d.max_len,
                x->d.pack_a_bytes, x->d.pack_b_bytes, x->d.qgemm_bytes, x->d.batch_bytes,
                x->d.scratch_bytes);
    }
    int rc2 = close_out(&o, err);
    return rc != 0 ? rc : rc2;
}

/* ---- model.h and model.c -------------------------------------------------- */

static int write_header(const Export *x, const char *dir, BertcError *err)
{
    Out o;
    if (open_out(&o, dir, "model.h", err) != 0)
        return -1;
    fprintf(o.f, "/* model.h — written by bertc export-c from %s. Do not edit.\n"
            " *\n *     static unsigned char arena[MODEL_ARENA_BYTES] __attribute__((aligned(64)));\n"
            " *     model_init(arena, sizeof arena);                // 0, or -1: model_error()\n"
            " *     float logits[MODEL_N_LABELS];\n"
            " *     model_classify(\"a text\", logits, MODEL_N_LABELS);  // -> MODEL_N_LABELS\n"
            " *\n * MODEL_ARENA_BYTES was measured by running this model on the host on a\n"
            " * text of MODEL_MAX_TOKENS tokens (int8 path %s, portable fp32); a text of\n"
            " * any length fits (its first MODEL_MAX_TOKENS - 2 wordpieces are read). */\n"
            "#ifndef MODEL_H\n#define MODEL_H\n\n#include <stddef.h>\n\n"
            "#define MODEL_ARENA_BYTES %zu\n#define MODEL_N_LABELS %d\n"
            "#define MODEL_MAX_TOKENS %ld\n\n"
            "int model_init(void *arena, size_t size);\n"
            "/* The logits of text: the first n written; returns their number, -1 on an error. */\n"
            "int model_classify(const char *text, float *logits, int n);\n"
            "/* The same for the len bytes at text (no NUL needed, nothing copied). */\n"
            "int model_classify_bytes(const char *text, size_t len, float *logits, int n);\n"
            "const char *model_error(void);   /* the last error, one line */\n\n#endif\n",
            x->cm.name, bertc_qgemm_isa_name((QgemmIsa)x->d.int8_isa), x->arena_bytes,
            x->n_labels, (long)x->d.max_len);
    return close_out(&o, err);
}

static const char model_c[] =
    "/* model.c — written by bertc export-c: the glue between model.h and libbertc. */\n"
    "#include \"bertc.h\"\n#include \"model.h\"\n\n"
    "extern const ConstModelData model_data;\n\n"
    "static ConstModel model;\n"
    "static BertcError error;\n\n"
    "int model_init(void *arena, size_t size)\n{\n"
    "    return bertc_const_model_init(&model, &model_data, arena, size, &error);\n}\n\n"
    "int model_classify(const char *text, float *logits, int n)\n{\n"
    "    return bertc_const_model_classify(&model, text, logits, n, &error);\n}\n\n"
    "int model_classify_bytes(const char *text, size_t len, float *logits, int n)\n{\n"
    "    return bertc_const_model_classify_bytes(&model, text, len, logits, n, &error);\n}\n\n"
    "const char *model_error(void)\n{\n    return error.msg;\n}\n";

int write_sources(const Export *x, const char *dir, BertcError *err)
{
    struct stat st;
    if (stat(dir, &st) != 0 && mkdir(dir, 0777) != 0)
        return bertc_errorf(err, "--out %s: cannot create it: %s", dir, strerror(errno));
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return bertc_errorf(err, "--out %s exists and is not a directory", dir);
    Out o;
    if (write_data(x, dir, err) != 0 || write_header(x, dir, err) != 0 ||
        open_out(&o, dir, "model.c", err) != 0)
        return -1;
    fputs(model_c, o.f);
    return close_out(&o, err);
}
