/* test/test_embed.c — `bertc embed` as a user runs it, on the bert_model
 * fixture made a model directory: mean pooling checked against the mean of
 * last_hidden_state over the real tokens computed here, cls and pooler
 * against the outputs they name, --normalize, vectors that do not depend on
 * --batch-size, the safetensors output, and one-line errors. */
#include "test/test_util.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define H 32

static char root[256];

static void make_model_dir(const char *name)
{
    char cmd[4096], path[1024];
    snprintf(cmd, sizeof cmd, "mkdir -p %s/%s && cp test/data/zoo/%s/config.json %s/%s/ && "
             "cp test/data/zoo/%s/weights.safetensors %s/%s/model.safetensors", root, name,
             name, root, name, name, root, name);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    snprintf(path, sizeof path, "%s/%s/vocab.txt", root, name);
    FILE *f = fopen(path, "w");
    cr_assert(f, "cannot write %s", path);
    fputs("[PAD]\n[CLS]\n[SEP]\n[MASK]\n[UNK]\n", f);   /* "tN" is id N */
    for (int i = 5; i < 120; i++)
        fprintf(f, "t%d\n", i);
    fclose(f);
}

static void setup(void)
{
    snprintf(root, sizeof root, "/tmp/bertc_embed_%d", (int)getpid());
    make_model_dir("bert_model");
    make_model_dir("bert_tokcls");
}

static void teardown(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(embed, .init = setup, .fini = teardown);

static char out[1 << 17];

static int bertc_out(const char *args)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "{ %s %s 2>/dev/null; }", BERTC_CLI, args);
    return test_shell(cmd, TEST_STDOUT_AND_STDERR, out, sizeof out);
}

static int bertc_err(const char *args)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s %s", BERTC_CLI, args);
    return test_shell(cmd, TEST_STDERR, out, sizeof out);
}

/* The vectors of a TSV output: n lines of text<TAB>H values. */
static void read_tsv(const char *text, int n, float (*v)[H])
{
    const char *p = text;
    for (int i = 0; i < n; i++) {
        p = strchr(p, '\t');
        cr_assert(p, "line %d has no tab: %s", i + 1, text);
        char *end;
        p++;
        for (int k = 0; k < H; k++) {
            v[i][k] = strtof(p, &end);
            cr_assert(end != p, "line %d: value %d missing", i + 1, k);
            p = end;
        }
        cr_assert(*p == '\n', "line %d: more than %d values", i + 1, H);
    }
}

/* last_hidden_state (1, S, H) and pooler_output (1, H) of one text. */
static void forward(const char *text, float *h, int64_t *S, float *pooled)
{
    char dir[512];
    BertcError err;
    snprintf(dir, sizeof dir, "%s/bert_model", root);
    Arena *a = bertc_arena_create("direct", 1 << 20);
    ModelDir d;
    cr_assert_eq(bertc_model_dir_open(&d, a, dir, &err), 0, "%s", err.msg);
    Graph *g = bertc_ag_graph_create(1 << 20, 0);
    bertc_ag_set_training(g, false);
    Batch b;
    Outputs o;
    bertc_batch_init(&b, "test");
    bertc_outputs_init(&o);
    TextExample ex = {.text = text, .context_id = -1};
    cr_assert_eq(bertc_model_batch_from_text(&d.model, &d.tok, &ex, 1, 0, g, &b, &err), 0, "%s",
                 err.msg);
    cr_assert_eq(bertc_model_forward(&d.model, g, &b, &o, &err), 0, "%s", err.msg);
    Tensor last = bertc_outputs_get(&o, "last_hidden_state")->value;
    *S = last.shape[1];
    memcpy(h, last.data, sizeof(float) * (size_t)last.numel);
    memcpy(pooled, bertc_outputs_get(&o, "pooler_output")->value.data, sizeof(float) * H);
    bertc_ag_graph_destroy(g);
    bertc_arena_destroy(a);
}

static void expect_close(const float *got, const float *want, const char *what, int i)
{
    for (int k = 0; k < H; k++)
        cr_expect(fabsf(got[k] - want[k]) <= 1e-5f + 1e-4f * fabsf(want[k]),
                  "%s, text %d, [%d]: %.9g, want %.9g", what, i, k, got[k], want[k]);
}

Test(embed, mean_cls_and_pooler_are_the_outputs_they_name)
{
    const char *texts[2] = {"t104 t7 t25 t31 t105", "t12"};
    char args[1024];
    float mean[2][H], cls[2][H], pooler[2][H], got[2][H];
    for (int i = 0; i < 2; i++) {
        float h[40 * H];
        int64_t S;
        forward(texts[i], h, &S, pooler[i]);
        for (int k = 0; k < H; k++) {   /* one text alone: every token is real */
            double sum = 0;
            for (int64_t t = 0; t < S; t++)
                sum += h[t * H + k];
            mean[i][k] = (float)(sum / (double)S);
            cls[i][k] = h[k];
        }
    }
    static const char *const pooling[] = {"mean", "cls", "pooler"};
    float (*want[3])[H] = {mean, cls, pooler};
    for (int p = 0; p < 3; p++) {
        snprintf(args, sizeof args, "embed --model %s/bert_model --pooling %s '%s' '%s'", root,
                 pooling[p], texts[0], texts[1]);
        cr_assert_eq(bertc_out(args), 0, "%s", out);
        read_tsv(out, 2, got);
        for (int i = 0; i < 2; i++)
            expect_close(got[i], want[p][i], pooling[p], i);
        cr_expect(!strncmp(out, texts[0], strlen(texts[0])), "the text first: %s", out);
    }
    snprintf(args, sizeof args, "embed --model %s/bert_model --normalize '%s'", root, texts[0]);
    cr_assert_eq(bertc_out(args), 0, "%s", out);
    read_tsv(out, 1, got);
    double norm = 0, wnorm = 0;
    for (int k = 0; k < H; k++) {
        norm += (double)got[0][k] * got[0][k];
        wnorm += (double)mean[0][k] * mean[0][k];
    }
    cr_expect(fabs(norm - 1) < 1e-5, "--normalize: |v|^2 = %.9g", norm);
    cr_expect(fabsf(got[0][3] - mean[0][3] / (float)sqrt(wnorm)) < 1e-5f, "the mean's direction");
}

Test(embed, vectors_do_not_depend_on_the_batch_size)
{
    char input[300], args[2048], st_path[300];
    snprintf(input, sizeof input, "%s/texts.txt", root);
    FILE *f = fopen(input, "w");
    cr_assert(f);
    fputs("t5\nt104 t7 t25 t31 t105 t9 t10 t11 t12 t13\n\nt40 t41\nt99 t98 t97\nt5 t6 t7 t8\n", f);
    fclose(f);
    float one[5][H], all[5][H], mixed[5][H];
    snprintf(args, sizeof args, "embed --model %s/bert_model --input %s --batch-size 1", root,
             input);
    cr_assert_eq(bertc_out(args), 0, "%s", out);
    read_tsv(out, 5, one);
    snprintf(args, sizeof args, "embed --model %s/bert_model --input %s", root, input);
    cr_assert_eq(bertc_out(args), 0, "%s", out);
    read_tsv(out, 5, all);
    snprintf(args, sizeof args, "embed --model %s/bert_model --input %s --batch-size 2", root,
             input);
    cr_assert_eq(bertc_out(args), 0, "%s", out);
    read_tsv(out, 5, mixed);
    for (int i = 0; i < 5; i++) {
        expect_close(all[i], one[i], "--batch-size 32 against 1", i);
        expect_close(mixed[i], one[i], "--batch-size 2 against 1", i);
    }
    cr_expect(strstr(out, "t10 t11 t12 t13\t") && strstr(out, "\n\nt40 t41\t"),
              "the blank line 3 gives an empty line: %s", out);
    /* the same vectors, as an (N, H) F32 tensor "embeddings": a tensor has
     * no blank row, so the blank line is refused, naming it */
    snprintf(st_path, sizeof st_path, "%s/v.safetensors", root);
    snprintf(args, sizeof args, "embed --model %s/bert_model --input %s --output %s", root,
             input, st_path);
    cr_expect_eq(bertc_err(args), 1, "%s", out);
    cr_expect(strstr(out, "input 3 is blank") && strstr(out, "v.safetensors"), "%s", out);
    f = fopen(input, "w");
    cr_assert(f);
    fputs("t5\nt104 t7 t25 t31 t105 t9 t10 t11 t12 t13\nt40 t41\nt99 t98 t97\nt5 t6 t7 t8\n", f);
    fclose(f);
    cr_assert_eq(bertc_out(args), 0, "%s", out);
    cr_expect_eq(out[0], '\0', "nothing on stdout with --output: %s", out);
    Arena *a = bertc_arena_create("st", 1 << 16);
    SafeTensors *st;
    BertcError err;
    Tensor t;
    cr_assert_eq(bertc_st_open_file(a, st_path, &st, &err), 0, "%s", err.msg);
    cr_assert_eq(bertc_st_load_tensor(st, "embeddings", a, &t, &err), 0, "%s", err.msg);
    cr_assert(t.ndim == 2 && t.shape[0] == 5 && t.shape[1] == H, "embeddings (5, %d)", H);
    for (int i = 0; i < 5; i++)
        for (int k = 0; k < H; k++)
            cr_expect_eq(t.data[i * H + k], all[i][k], "[%d, %d]: %.9g in the file, %.9g in TSV",
                         i, k, t.data[i * H + k], all[i][k]);
    bertc_st_close(st);
    bertc_arena_destroy(a);
}

/* --input - and --input /dev/stdin read a pipe (issue #29: both were
 * refused), line for line as the file; a pipe's bad UTF-8 names it. */
Test(embed, input_from_a_pipe_is_the_input_from_a_file)
{
    char input[300], cmd[4096];
    snprintf(input, sizeof input, "%s/pipe.txt", root);
    FILE *f = fopen(input, "w");
    cr_assert(f);
    fputs("t5 t6\nt40 t41 t42\n", f);
    fclose(f);
    static char from_file[1 << 16];
    snprintf(cmd, sizeof cmd, "%s embed --model %s/bert_model --input %s", BERTC_CLI, root, input);
    cr_assert_eq(test_shell(cmd, TEST_STDOUT_AND_STDERR, from_file, sizeof from_file), 0, "%s",
                 from_file);
    const char *names[] = {"-", "/dev/stdin"};
    for (int i = 0; i < 2; i++) {
        snprintf(cmd, sizeof cmd, "cat %s | %s embed --model %s/bert_model --input %s", input,
                 BERTC_CLI, root, names[i]);
        cr_assert_eq(test_shell(cmd, TEST_STDOUT_AND_STDERR, out, sizeof out), 0, "%s: %s",
                     names[i], out);
        cr_expect_str_eq(out, from_file, "--input %s differs from the file", names[i]);
    }
    snprintf(cmd, sizeof cmd, "printf 't5\\n\\377\\n' | %s embed --model %s/bert_model --input -",
             BERTC_CLI, root);
    cr_assert_neq(test_shell(cmd, TEST_STDERR, out, sizeof out), 0);
    cr_expect(strstr(out, "standard input:2: not valid UTF-8"), "%s", out);
}

Test(embed, errors_are_one_line_naming_the_flag)
{
    /* exit 2 for a usage error (a flag or its value), 1 when the work fails
     * (a file, a model that does not fit the flags): issue #29 */
    static const struct {
        const char *args, *want;
        int status;
    } cases[] = {
        {"--model %s/bert_tokcls --pooling pooler t5", "--pooling pooler", 1},
        {"--model %s/bert_model --pooling max t5", "--pooling 'max'", 2},
        {"--model %s/bert_model --output %s/v.txt t5", "--output", 2},
        {"--model %s/bert_model --output %s/bert_model/model.safetensors t5", "--model", 2},
        {"--model %s/bert_model --batch-size 0 t5", "--batch-size '0'", 2},
        {"--model %s/bert_model --max-len 1 t5", "--max-len 1 leaves no room", 1},
        {"--model %s/bert_model --input %s/missing.txt", "missing.txt", 1},
        {"--weights x.safetensors t5", "--model DIR or --config C.json is required", 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char fmt[512], args[1024];
        snprintf(fmt, sizeof fmt, "embed %s", cases[i].args);
        snprintf(args, sizeof args, fmt, root, root);
        int rc = bertc_err(args);
        cr_expect_eq(rc, cases[i].status, "%s: exit %d, want %d", args, rc, cases[i].status);
        bool one_line = strchr(out, '\n') == out + strlen(out) - 1;
        cr_expect(one_line && strstr(out, cases[i].want), "%s: one line naming '%s', got: %s",
                  args, cases[i].want, out);
    }
}

/* Journey (b) of issue 15: a Hugging Face-style directory written by
 * tools/embed_ref.py with PyTorch's vectors for its texts (one padded batch,
 * float64): bertc embed gives them within the parity tolerance. */
Test(embed, equals_pytorch_on_a_hf_directory)
{
    static const struct {
        const char *flags, *name;
    } cases[] = {{"--pooling mean", "mean"}, {"--pooling cls", "cls"},
                 {"--pooling pooler", "pooler"}, {"--normalize", "mean_normalized"}};
    Arena *a = bertc_arena_create("st", 1 << 16);
    SafeTensors *ref;
    BertcError err;
    cr_assert_eq(bertc_st_open_file(a, "test/data/embed/expected.safetensors", &ref, &err), 0,
                 "%s", err.msg);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char path[300], args[1024];
        snprintf(path, sizeof path, "%s/%s.safetensors", root, cases[c].name);
        snprintf(args, sizeof args, "embed --model test/data/embed --input "
                 "test/data/embed/texts.txt %s --output %s", cases[c].flags, path);
        cr_assert_eq(bertc_out(args), 0, "%s: %s", args, out);
        SafeTensors *got;
        Tensor want, have;
        cr_assert_eq(bertc_st_open_file(a, path, &got, &err), 0, "%s", err.msg);
        cr_assert_eq(bertc_st_load_tensor(got, "embeddings", a, &have, &err), 0, "%s", err.msg);
        cr_assert_eq(bertc_st_load_tensor(ref, cases[c].name, a, &want, &err), 0, "%s", err.msg);
        cr_assert_eq(have.numel, want.numel, "%s: %lld values, PyTorch %lld", cases[c].name,
                     (long long)have.numel, (long long)want.numel);
        for (int64_t i = 0; i < want.numel; i++)
            cr_expect(fabsf(have.data[i] - want.data[i]) <= 1e-5f + 1e-4f * fabsf(want.data[i]),
                      "%s[%lld, %lld]: %.9g, PyTorch %.9g", cases[c].name,
                      (long long)(i / H), (long long)(i % H), have.data[i], want.data[i]);
        bertc_st_close(got);
    }
    bertc_st_close(ref);
    bertc_arena_destroy(a);
}
