/* test/test_real_checkpoints.c — fine-tuned BERTs that nobody on the bertc
 * team wrote, run through `bertc run` with their own architecture: ONNX
 * Runtime's test models (sliced BERT-base/large SQuAD and MRPC fine-tunes,
 * converted to Hugging Face names) in ../shared/real/<case>/hf/ (see its
 * README). Each folder holds config.json, model.safetensors and
 * expected.json: the inputs and the outputs ONNX Runtime recorded. Every
 * recorded output must match within 1e-4 max|ref| + 1e-6.
 *
 * The data is not part of the project: without the folder the test is
 * skipped, so `make test` passes without it. */
#include "nn/json.h"
#include "nn/safetensors.h"
#include "test/test_util.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define REAL_DIR "../shared/real"
#define MAX_INPUTS 8

static Arena *arena;

static void setup(void) { arena = bertc_arena_create("real", 1 << 20); }
static void teardown(void) { bertc_arena_destroy(arena); }

TestSuite(real_checkpoints, .init = setup, .fini = teardown);

static const JsonValue *read_json(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = bertc_arena_alloc(arena, (size_t)n + 1);
    cr_assert_eq(fread(text, 1, (size_t)n, f), (size_t)n, "cannot read %s", path);
    fclose(f);
    JsonDoc *doc;
    BertcError err;
    cr_assert_eq(bertc_json_parse(arena, path, text, (size_t)n, &doc, &err), 0, "%s", err.msg);
    return doc->root;
}

/* A JSON array of arrays of numbers: its shape (at most 3 dims) and values
 * as doubles in row-major order. false for anything else (such as
 * expected.json's list of ONNX input names). */
static bool json_matrix(const JsonValue *v, int *ndim, int64_t *shape, double **values)
{
    int d = 0;
    const JsonValue *x = v;
    for (; x && x->type == JSON_ARRAY && d < 3; x = bertc_json_at(x, 0))
        shape[d++] = x->length;
    if (d == 0 || !x || x->type != JSON_NUMBER)
        return false;
    int64_t n = 1;
    for (int i = 0; i < d; i++)
        n *= shape[i];
    *values = bertc_arena_alloc(arena, sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++) {
        const JsonValue *e = v;
        for (int k = 0, rest = (int)i; k < d; k++) {
            int64_t stride = 1;
            for (int j = k + 1; j < d; j++)
                stride *= shape[j];
            e = bertc_json_at(e, (size_t)(rest / stride));
            rest %= (int)stride;
        }
        cr_assert(e && e->type == JSON_NUMBER, "a ragged or non-numeric array in expected.json");
        (*values)[i] = bertc_json_number(e);
    }
    *ndim = d;
    return true;
}

/* expected.json's "inputs" -> an inputs.safetensors of integer tensors
 * (the ONNX graphs take int64 or int32; both load as ids). */
static void write_inputs(const JsonValue *inputs, const char *path)
{
    StEntry entries[MAX_INPUTS];
    size_t n = 0;
    for (size_t i = 0; i < inputs->length && n < MAX_INPUTS; i++) {
        const JsonValue *v = bertc_json_at(inputs, i);
        int ndim;
        int64_t *shape = bertc_arena_alloc(arena, sizeof(int64_t) * 3);
        double *values;
        if (!json_matrix(v, &ndim, shape, &values))
            continue;
        int64_t count = 1;
        for (int d = 0; d < ndim; d++)
            count *= shape[d];
        int32_t *ids = bertc_arena_alloc(arena, sizeof(int32_t) * (size_t)count);
        for (int64_t k = 0; k < count; k++)
            ids[k] = (int32_t)values[k];
        size_t len;
        entries[n++] = (StEntry){.name = bertc_json_key(v, &len), .dtype = ST_I64, .ndim = ndim,
                                 .shape = shape, .i32 = ids};
    }
    BertcError err;
    cr_assert_gt(n, 0, "expected.json has no integer inputs");
    cr_assert_eq(bertc_st_write_file(path, entries, n, NULL, 0, &err), 0, "%s", err.msg);
}

/* Every output under "expected" against bertc's tensor of that name. */
static void compare_outputs(const char *name, const JsonValue *expected, const char *path)
{
    SafeTensors *got;
    BertcError err;
    cr_assert_eq(bertc_st_open_file(NULL, path, &got, &err), 0, "%s", err.msg);
    for (size_t i = 0; i < expected->length; i++) {
        const JsonValue *v = bertc_json_at(expected, i);
        size_t len;
        const char *key = bertc_json_key(v, &len);
        int ndim;
        int64_t shape[3];
        double *ref;
        cr_assert(json_matrix(v, &ndim, shape, &ref), "%s: expected '%s' is not numeric", name,
                  key);
        const StTensorInfo *t = bertc_st_find(got, key);
        cr_assert(t, "%s: bertc run wrote no '%s'", name, key);
        cr_assert(bertc_shape_equal(t->ndim, t->shape, ndim, shape), "%s: '%s' has the wrong shape",
                  name, key);
        size_t n = (size_t)t->numel;
        float *x = bertc_arena_alloc(arena, sizeof(float) * n);
        cr_assert_eq(bertc_st_read_f32(got, t, x, n, &err), 0, "%s", err.msg);
        double max_ref = 0, max_err = 0;
        size_t worst = 0;
        for (size_t k = 0; k < n; k++) {
            max_ref = fmax(max_ref, fabs(ref[k]));
            double e = fabs((double)x[k] - ref[k]);
            e = isnan(e) ? INFINITY : e;
            if (e > max_err) {
                max_err = e;
                worst = k;
            }
        }
        double allowed = 1e-4 * max_ref + 1e-6;
        cr_expect(max_err <= allowed, "%s: '%s' max error %.3g at flat index %zu (bertc %.8g, "
                  "ONNX Runtime %.8g), allowed %.3g", name, key, max_err, worst, (double)x[worst],
                  ref[worst], allowed);
    }
    bertc_st_close(got);
}

static void run_real(const char *name)
{
    char hf[256], config[320], weights[320], expected[320];
    snprintf(hf, sizeof hf, REAL_DIR "/%s/hf", name);
    struct stat sb;
    if (stat(hf, &sb) != 0)
        cr_skip_test("%s is absent (the real checkpoints are not part of the project)", hf);
    snprintf(config, sizeof config, "%s/config.json", hf);
    snprintf(weights, sizeof weights, "%s/model.safetensors", hf);
    snprintf(expected, sizeof expected, "%s/expected.json", hf);
    const JsonValue *root = read_json(expected);
    const JsonValue *inputs = bertc_json_get(root, "inputs"), *outputs = bertc_json_get(root, "expected");
    cr_assert(inputs && outputs, "%s has no \"inputs\" or \"expected\"", expected);

    char dir[128], in_path[192], out_path[192], cmd[2048];
    snprintf(dir, sizeof dir, "/tmp/bertc_real_%d_%s", (int)getpid(), name);
    cr_assert_eq(mkdir(dir, 0700), 0, "cannot create %s", dir);
    snprintf(in_path, sizeof in_path, "%s/inputs.safetensors", dir);
    snprintf(out_path, sizeof out_path, "%s/outputs.safetensors", dir);
    write_inputs(inputs, in_path);
    snprintf(cmd, sizeof cmd, "%s run --config %s --weights %s --inputs %s --output %s",
             BERTC_CLI, config, weights, in_path, out_path);
    static char log[8192];
    int rc = test_shell(cmd, TEST_STDOUT_AND_STDERR, log, sizeof log);
    cr_assert_eq(rc, 0, "%s: bertc run failed (%d): %s", name, rc, log);
    compare_outputs(name, outputs, out_path);
    remove(in_path);
    remove(out_path);
    rmdir(dir);
}

/* BertForQuestionAnswering from PyTorch 1.4: 12 layers, H 8, no pooler. */
Test(real_checkpoints, ort_bert_squad_pt_tiny) { run_real("ort_bert_squad_pt_tiny"); }

/* TFBertForQuestionAnswering via keras2onnx: 24 layers, int32 inputs, 3
 * padded positions (attention_mask 0). */
Test(real_checkpoints, ort_bert_squad_keras_tiny) { run_real("ort_bert_squad_keras_tiny"); }

/* TFBertForSequenceClassification (MRPC): pooler and classifier names. */
Test(real_checkpoints, ort_bert_mrpc_tf_tiny) { run_real("ort_bert_mrpc_tf_tiny"); }
