/* test/test_export_c.c — `bertc export-c` as a porter meets it: the
 * generated model_data.c / model.c / model.h compiled with libbertc by the
 * host's cc, run on texts, give bit for bit the logits `bertc run` gives on
 * the same model and tokens (fp32, and int8 on the same int8 path, with the
 * portable fp32 path on both sides), in an arena of MODEL_ARENA_BYTES; and
 * bad inputs are one-line errors. Skipped when there is no cc. */
#include "test/test_util.h"
#include "bertc.h"

#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FIXTURE "test/data/predict_seqcls"
#define ENV "BERTC_ISA=scalar BERTC_INT8_ISA=scalar"

/* The library of a `make sanitize` build needs its runtime in the program. */
#if defined(__SANITIZE_ADDRESS__)
#define LINK_FLAGS "-fsanitize=address,undefined"
#else
#define LINK_FLAGS ""
#endif

static char tmp[128];
static char log_text[16384];

static void setup(void)
{
    snprintf(tmp, sizeof tmp, "/tmp/bertc_export_c_%d", (int)getpid());
    cr_assert_eq(mkdir(tmp, 0700), 0, "cannot create %s", tmp);
}

static void teardown(void)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    cr_expect_eq(system(cmd), 0);
}

TestSuite(export_c, .init = setup, .fini = teardown);

__attribute__((format(printf, 1, 2))) static int sh(const char *fmt, ...)
{
    char cmd[3000];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    return test_shell(cmd, TEST_STDOUT_AND_STDERR, log_text, sizeof log_text);
}

static bool have_cc(void)
{
    return system("command -v cc >/dev/null 2>&1") == 0;
}

static bool one_line(const char *s)
{
    const char *nl = strchr(s, '\n');
    return nl && nl[1] == '\0';
}

/* The firmware's main, as a host program: model_init on a static arena of
 * exactly MODEL_ARENA_BYTES, then each argument's logits, %a, one line each. */
static const char driver[] =
    "#include \"model.h\"\n#include <stdio.h>\n"
    "static unsigned char arena[MODEL_ARENA_BYTES] __attribute__((aligned(64)));\n"
    "int main(int argc, char **argv)\n{\n"
    "    if (model_init(arena, sizeof arena) != 0) {\n"
    "        fprintf(stderr, \"model_init: %s\\n\", model_error());\n        return 1;\n    }\n"
    "    for (int i = 1; i < argc; i++) {\n        float l[MODEL_N_LABELS];\n"
    "        int n = model_classify(argv[i], l, MODEL_N_LABELS);\n"
    "        if (n != MODEL_N_LABELS) {\n"
    "            fprintf(stderr, \"model_classify: %s\\n\", model_error());\n            return 1;\n"
    "        }\n        for (int j = 0; j < n; j++)\n"
    "            printf(\"%s%a\", j ? \" \" : \"\", l[j]);\n        printf(\"\\n\");\n    }\n"
    "    return 0;\n}\n";

/* Compiles out/ + the driver with libbertc (next to BERTC_CLI) into out/prog. */
static void build_program(const char *out)
{
    char lib[256], path[300];
    snprintf(lib, sizeof lib, "%s", BERTC_CLI);
    *strrchr(lib, '/') = '\0';
    snprintf(path, sizeof path, "%s/main.c", out);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fputs(driver, f);
    fclose(f);
    int rc = sh("cc -std=c11 -O1 -Wall -Werror -I. -I%s %s/model.c %s/model_data.c %s/main.c "
                "%s/libbertc.a " LINK_FLAGS " -lm -lpthread -o %s/prog", out, out, out, out, lib, out);
    cr_assert_eq(rc, 0, "the exported sources do not compile: %s", log_text);
}

/* Logits of `bertc run` on the tokens `bertc encode` makes of text. */
static void host_logits(const char *model, const char *text, float *logits, int n)
{
    int rc = sh("%s encode --model %s --output %s/in.st '%s' >/dev/null && " ENV " %s run --model %s "
                "--inputs %s/in.st --output %s/out.st", BERTC_CLI, model, tmp, text, BERTC_CLI,
                model, tmp, tmp);
    cr_assert_eq(rc, 0, "bertc encode/run failed: %s", log_text);
    char path[300];
    snprintf(path, sizeof path, "%s/out.st", tmp);
    SafeTensors *st;
    BertcError err;
    cr_assert_eq(bertc_st_open_file(NULL, path, &st, &err), 0, "%s", err.msg);
    const StTensorInfo *t = bertc_st_find(st, "logits");
    cr_assert(t && t->ndim == 2 && t->shape[1] == n, "%s has no (1, %d) logits", path, n);
    cr_assert_eq(bertc_st_read_f32(st, t, logits, (size_t)n, &err), 0, "%s", err.msg);
    bertc_st_close(st);
}

static const char *const texts[] = {"The cat sat on the mat.", "A dog ran!",
                                    "Birds sang in the morning, playing and played."};

/* Exports model (extra flags), builds, runs the texts; each text's logits
 * must equal bertc run's bit for bit. */
static void export_and_compare(const char *model, const char *flags)
{
    if (!have_cc()) {
        cr_skip_test("no cc on PATH: the exported sources cannot be compiled here");
        return;
    }
    char out[200];
    snprintf(out, sizeof out, "%s/export", tmp);
    int rc = sh("%s export-c --model %s --out %s %s", BERTC_CLI, model, out, flags);
    cr_assert_eq(rc, 0, "bertc export-c failed: %s", log_text);
    cr_expect(strstr(log_text, "arena ") && one_line(log_text), "its report: %s", log_text);
    build_program(out);
    rc = sh(ENV " %s/prog '%s' '%s' '%s'", out, texts[0], texts[1], texts[2]);
    cr_assert_eq(rc, 0, "the exported model failed: %s", log_text);
    char got[sizeof log_text];
    memcpy(got, log_text, sizeof got);
    char *line = got;
    for (int i = 0; i < 3; i++) {
        float want[3], have[3];
        host_logits(model, texts[i], want, 3);
        char *next = strchr(line, '\n');
        cr_assert(next, "line %d of the program's output is missing", i + 1);
        *next = '\0';
        char *p = line;
        for (int j = 0; j < 3; j++)
            have[j] = strtof(p, &p);
        for (int j = 0; j < 3; j++)
            cr_expect_eq(have[j], want[j], "'%s' logit %d: exported %.9g, bertc run %.9g",
                         texts[i], j, (double)have[j], (double)want[j]);
        line = next + 1;
    }
}

Test(export_c, fp32_logits_equal_bertc_run_bit_for_bit, .timeout = 120)
{
    export_and_compare(FIXTURE, "");
}

Test(export_c, quantised_directory_exports_int8_equal_to_host_int8, .timeout = 120)
{
    char q[200];
    snprintf(q, sizeof q, "%s/q8", tmp);
    cr_assert_eq(sh("%s quantize --model %s --out %s", BERTC_CLI, FIXTURE, q), 0, "%s", log_text);
    export_and_compare(q, "");
    char data[300];
    snprintf(data, sizeof data, "%s/export/model_data.c", tmp);
    cr_expect_eq(sh("grep -c 'static _Alignas(16) const int8_t q' %s", data), 0,
                 "no packed int8 weight arrays in %s", data);
    cr_expect_eq(atoi(log_text), 12, "12 int8 weights expected, %s", log_text);
}

Test(export_c, flag_int8_quantises_a_float_directory_as_bertc_quantize, .timeout = 120)
{
    char q[200];
    snprintf(q, sizeof q, "%s/q8", tmp);
    cr_assert_eq(sh("%s quantize --model %s --out %s", BERTC_CLI, FIXTURE, q), 0, "%s", log_text);
    /* Exported from the float directory with --int8, compared against the
     * quantised directory run by bertc run. */
    if (!have_cc()) {
        cr_skip_test("no cc on PATH");
        return;
    }
    char out[200];
    snprintf(out, sizeof out, "%s/export", tmp);
    cr_assert_eq(sh("%s export-c --model %s --int8 --out %s", BERTC_CLI, FIXTURE, out), 0, "%s",
                 log_text);
    cr_expect(strstr(log_text, "(12 int8, scalar path)"), "%s", log_text);
    build_program(out);
    cr_assert_eq(sh(ENV " %s/prog '%s'", out, texts[0]), 0, "%s", log_text);
    float have[3], want[3];
    char *p = log_text;
    for (int j = 0; j < 3; j++)
        have[j] = strtof(p, &p);
    host_logits(q, texts[0], want, 3);
    for (int j = 0; j < 3; j++)
        cr_expect_eq(have[j], want[j], "logit %d: %.9g vs %.9g", j, (double)have[j],
                     (double)want[j]);
}

Test(export_c, too_small_arena_and_too_long_text_are_errors, .timeout = 120)
{
    if (!have_cc()) {
        cr_skip_test("no cc on PATH");
        return;
    }
    char out[200];
    snprintf(out, sizeof out, "%s/export", tmp);
    cr_assert_eq(sh("%s export-c --model %s --out %s --max-text-bytes 64", BERTC_CLI, FIXTURE,
                    out), 0, "%s", log_text);
    build_program(out);
    char text[100];
    memset(text, 'a', 99);
    text[99] = '\0';
    cr_expect_neq(sh(ENV " %s/prog '%s'", out, text), 0, "a 99-byte text ran");
    cr_expect(strstr(log_text, "longer than the 64") && one_line(log_text), "%s", log_text);
    /* The same program with a quarter of the arena: an error, not a crash. */
    cr_assert_eq(sh("sed -i 's/sizeof arena) != 0/sizeof arena \\/ 4) != 0/' %s/main.c", out), 0);
    char lib[256];
    snprintf(lib, sizeof lib, "%s", BERTC_CLI);
    *strrchr(lib, '/') = '\0';
    cr_assert_eq(sh("cc -std=c11 -I. -I%s %s/*.c %s/libbertc.a " LINK_FLAGS " -lm -lpthread "
                    "-o %s/prog", out,
                    out, lib, out), 0, "%s", log_text);
    cr_expect_neq(sh(ENV " %s/prog '%s'", out, texts[0]), 0, "a quarter arena ran");
    cr_expect(one_line(log_text) && strstr(log_text, "arena"), "%s", log_text);
}

Test(export_c, bad_inputs_are_one_line_errors)
{
    char file[200];
    snprintf(file, sizeof file, "%s/a_file", tmp);
    cr_assert_eq(sh("touch %s", file), 0);
    cr_expect_neq(sh("%s export-c --model %s --out %s", BERTC_CLI, FIXTURE, file), 0);
    cr_expect(one_line(log_text) && strstr(log_text, "is not a directory"), "%s", log_text);
    cr_expect_neq(sh("%s export-c --model %s --out %s/x", BERTC_CLI, FIXTURE, file), 0);
    cr_expect(one_line(log_text) && strstr(log_text, "--out"), "%s", log_text);
    char model[200];
    snprintf(model, sizeof model, "%s/m", tmp);
    cr_assert_eq(sh("cp -r %s %s && rm %s/model.safetensors", FIXTURE, model, model), 0);
    cr_expect_neq(sh("%s export-c --model %s --out %s/o", BERTC_CLI, model, tmp), 0);
    cr_expect(one_line(log_text) && strstr(log_text, "model.safetensors"), "%s", log_text);
    cr_expect_neq(sh("%s export-c --model %s --out %s/o --int8-path vax", BERTC_CLI, FIXTURE,
                     tmp), 0);
    cr_expect(one_line(log_text) && strstr(log_text, "--int8-path 'vax'"), "%s", log_text);
}

/* The library check behind model_init: a table entry of the wrong size. */
Test(export_c, bind_const_checks_sizes)
{
    Arena *a = bertc_arena_create("t", 1 << 20);
    BertConfig cfg;
    BertcError err;
    cr_assert_eq(bertc_bert_config_read(FIXTURE "/config.json", &cfg, &err), 0, "%s", err.msg);
    Model m;
    cr_assert_eq(bertc_model_build_const(&m, a, bertc_zoo_arch(cfg.architecture), &cfg, NULL, 0,
                                         NULL, 0, &err), 0, "%s", err.msg);
    const Registry *r = m.reg;
    cr_expect_null(r->params[0].var->value.data, "a const build allocated weight data");
    ConstParam *t = bertc_arena_calloc(a, (size_t)r->n_params, sizeof *t);
    float *zeros = bertc_arena_calloc(a, 1 << 16, sizeof(float));
    for (int i = 0; i < r->n_params; i++)
        t[i] = (ConstParam){.name = r->params[i].name, .numel = r->params[i].var->value.numel,
                            .values = zeros};
    t[3].numel += 1;
    cr_expect_neq(bertc_registry_bind_const(m.reg, t, r->n_params, &err), 0);
    cr_expect(strstr(err.msg, r->params[3].name) && strstr(err.msg, "values, the model needs"),
              "%s", err.msg);
    t[3].numel -= 1;
    t[5].name = "nothing";
    cr_expect_neq(bertc_registry_bind_const(m.reg, t, r->n_params, &err), 0);
    cr_expect(strstr(err.msg, "no entry for"), "%s", err.msg);
    t[5].name = r->params[5].name;
    cr_expect_eq(bertc_registry_bind_const(m.reg, t, r->n_params, &err), 0, "%s", err.msg);
    cr_expect_eq(r->params[0].var->value.data, zeros, "not read in place");
    bertc_arena_destroy(a);
}
