/* test/test_zoo_parity.c — every model against PyTorch, through bertc_zoo_run(),
 * the function behind `bertc run --grad`. One parameterised test per
 * directory of test/data/zoo/ (written by tools/fixtures_*.py): every tensor
 * of expected.safetensors (outputs, loss, grad.<key> for every parameter key)
 * must match within max|x - ref| <= 1e-4 max|ref| + 1e-6 (SPEC §6); integer
 * outputs exactly. */
#include "test/test_util.h"
#include "zoo/zoo.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>


ParameterizedTestParameters(zoo, parity)
{
    TestName *cases;
    size_t n = test_zoo_cases(&cases);
    return cr_make_param_array(TestName, cases, n);
}

static void path_of(char *buf, size_t len, const char *c, const char *file)
{
    snprintf(buf, len, "%s/%s/%s", TEST_ZOO_DIR, c, file);
}

static void compare_f32(const char *c, const char *name, const SafeTensors *out,
                        const StTensorInfo *want_info, const SafeTensors *want)
{
    const StTensorInfo *got_info = bertc_st_find(out, name);
    cr_assert(got_info, "%s: bertc run wrote no '%s'", c, name);
    cr_assert(bertc_shape_equal(got_info->ndim, got_info->shape, want_info->ndim, want_info->shape),
              "%s: '%s' has the wrong shape", c, name);
    size_t n = (size_t)want_info->numel;
    float *got = malloc(sizeof(float) * (n ? n : 1)), *ref = malloc(sizeof(float) * (n ? n : 1));
    BertcError err;
    cr_assert_eq(bertc_st_read_f32(out, got_info, got, n, &err), 0, "%s", err.msg);
    cr_assert_eq(bertc_st_read_f32(want, want_info, ref, n, &err), 0, "%s", err.msg);
    double max_ref = 0, max_err = 0;
    size_t worst = 0;
    for (size_t i = 0; i < n; i++) {
        max_ref = fmax(max_ref, fabs(ref[i]));
        double e = fabs((double)got[i] - ref[i]);
        if (isnan(e))
            e = INFINITY;
        if (e > max_err) {
            max_err = e;
            worst = i;
        }
    }
    double allowed = 1e-4 * max_ref + 1e-6;
    cr_expect(max_err <= allowed,
              "%s: '%s' max error %.3g at flat index %zu (bertc %.8g, PyTorch %.8g), "
              "allowed %.3g", c, name, max_err, worst, (double)got[worst], (double)ref[worst],
              allowed);
    free(got);
    free(ref);
}

static void compare_int(const char *c, const char *name, const SafeTensors *out,
                        const StTensorInfo *want_info, const SafeTensors *want)
{
    const StTensorInfo *got_info = bertc_st_find(out, name);
    cr_assert(got_info, "%s: bertc run wrote no '%s'", c, name);
    size_t n = (size_t)want_info->numel;
    int32_t *got = malloc(sizeof(int32_t) * (n ? n : 1)), *ref = malloc(sizeof(int32_t) * (n ? n : 1));
    BertcError err;
    cr_assert(bertc_shape_equal(got_info->ndim, got_info->shape, want_info->ndim, want_info->shape),
              "%s: '%s' has the wrong shape", c, name);
    cr_assert_eq(bertc_st_read_i32(out, got_info, got, n, &err), 0, "%s", err.msg);
    cr_assert_eq(bertc_st_read_i32(want, want_info, ref, n, &err), 0, "%s", err.msg);
    for (size_t i = 0; i < n; i++)
        cr_expect_eq(got[i], ref[i], "%s: '%s'[%zu] = %d, PyTorch %d", c, name, i, got[i],
                     ref[i]);
    free(got);
    free(ref);
}

/* bertc summary's total must equal PyTorch's sum(p.numel() for p in
 * model.parameters()), stored by the fixture generator. */
static void check_param_count(const char *c, const char *config, const SafeTensors *want)
{
    const char *count = bertc_st_metadata_get(want, "param_count");
    cr_assert(count, "%s: expected.safetensors has no param_count metadata", c);
    Arena *arena = bertc_arena_create("params", 1 << 16);
    Model m;
    test_model_build(&m, arena, config, NULL);
    long long ours = (long long)bertc_registry_count(m.reg), torch = atoll(count);
    bertc_arena_destroy(arena);
    cr_expect_eq(ours, torch, "%s: %lld parameters, PyTorch counts %lld", c, ours, torch);
}

ParameterizedTest(TestName *zc, zoo, parity)
{
    char config[512], weights[512], inputs[512], expected[512], output[512];
    path_of(config, sizeof config, zc->name, "config.json");
    path_of(weights, sizeof weights, zc->name, "weights.safetensors");
    path_of(inputs, sizeof inputs, zc->name, "inputs.safetensors");
    path_of(expected, sizeof expected, zc->name, "expected.safetensors");
    snprintf(output, sizeof output, "/tmp/bertc_zoo_%d_%s.safetensors", (int)getpid(), zc->name);

    BertcError err;
    SafeTensors *want;
    cr_assert_eq(bertc_st_open_file(NULL, expected, &want, &err), 0, "%s", err.msg);
    check_param_count(zc->name, config, want);
    RunArgs args = {config, weights, inputs, output, bertc_st_find(want, "loss") != NULL, false};
    cr_assert_eq(bertc_zoo_run(&args, &err), 0, "%s: bertc run failed: %s", zc->name, err.msg);
    SafeTensors *got;
    cr_assert_eq(bertc_st_open_file(NULL, output, &got, &err), 0, "%s", err.msg);
    for (size_t i = 0; i < want->n_tensors; i++) {
        const StTensorInfo *t = &want->tensors[i];
        if (t->dtype == ST_I64 || t->dtype == ST_I32)
            compare_int(zc->name, t->name, got, t, want);
        else
            compare_f32(zc->name, t->name, got, t, want);
    }
    bertc_st_close(got);
    bertc_st_close(want);
    remove(output);
}
