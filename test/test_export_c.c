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
static char log_text[65536];

static void setup(void)
{
    test_scratch_make(tmp, sizeof tmp, "export_c");
}

static void teardown(void)
{
    test_scratch_remove(tmp);
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

/* `bertc quantize --embeddings`: the int8 word embeddings are exported as
 * const rows and row scales (read in place), and the logits stay bertc run's. */
Test(export_c, int8_word_embeddings_export_equal_to_host_int8, .timeout = 120)
{
    char q[200];
    snprintf(q, sizeof q, "%s/q8e", tmp);
    cr_assert_eq(sh("%s quantize --model %s --out %s --embeddings", BERTC_CLI, FIXTURE, q), 0,
                 "%s", log_text);
    export_and_compare(q, "");
    char data[300];
    snprintf(data, sizeof data, "%s/export/model_data.c", tmp);
    cr_expect_eq(sh("grep -c 'word_embeddings.weight\", .numel = [0-9]*, .qdata = q[0-9]*, "
                    ".scale = s[0-9]*}' %s", data), 0, "the word embeddings are not an int8 "
                 "rows entry in %s", data);
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

/* The tokenizer works in a fixed buffer: a text far longer than max_len
 * tokens runs in the measured arena and is cut as bertc encode cuts it. */
Test(export_c, long_text_runs_and_too_small_arena_is_an_error, .timeout = 120)
{
    if (!have_cc()) {
        cr_skip_test("no cc on PATH");
        return;
    }
    char out[200];
    snprintf(out, sizeof out, "%s/export", tmp);
    cr_assert_eq(sh("%s export-c --model %s --out %s", BERTC_CLI, FIXTURE, out), 0, "%s",
                 log_text);
    build_program(out);
    static char text[921];   /* 240 tokens; max_len is 64 */
    for (int i = 0; i < 920; i++)
        text[i] = "the cat sat on the mat "[i % 23];
    cr_assert_eq(sh(ENV " %s/prog '%s'", out, text), 0, "a 920-byte text: %s", log_text);
    float have[3], want[3];
    char *p = log_text;
    for (int j = 0; j < 3; j++)
        have[j] = strtof(p, &p);
    host_logits(FIXTURE, text, want, 3);
    for (int j = 0; j < 3; j++)
        cr_expect_eq(have[j], want[j], "logit %d: %.9g vs %.9g", j, (double)have[j],
                     (double)want[j]);
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
    ConstBuild cb = {.arch = bertc_zoo_arch(cfg.architecture)};
    cr_assert_eq(bertc_model_build_const(&m, a, &cfg, &cb, &err), 0, "%s", err.msg);
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

/* ---- the footprint: arena, GEMM buffers, bookkeeping, flash --------------- */

typedef struct Report {
    size_t arena, gemm, model, step, forward, tokenizer, init;
    int tokens;
} Report;

/* export-c's line: "..., N tokens, arena A bytes (gemm G, model M, step S =
 * max(forward F, tokenizer bound T, init I))". */
static Report parse_report(const char *line)
{
    Report r = {0};
    const char *p = strstr(line, " tokens, arena ");
    cr_assert(p, "no ' tokens, arena ' in: %s", line);
    while (p > line && p[-1] >= '0' && p[-1] <= '9')
        p--;
    cr_assert_eq(sscanf(p, "%d tokens, arena %zu bytes (gemm %zu, model %zu, step %zu = "
                           "max(forward %zu, tokenizer bound %zu, init %zu))", &r.tokens,
                        &r.arena, &r.gemm, &r.model, &r.step, &r.forward, &r.tokenizer,
                        &r.init), 8,
                 "unreadable report: %s", line);
    return r;
}

/* The tokenizer's work is dead once the ids are copied out: the step region
 * is max(tokenizer, forward), the arena packs + model + that, and the
 * exported program classifies in exactly MODEL_ARENA_BYTES
 * (export_and_compare). The sum was what the arena used to be. */
Test(export_c, step_region_is_the_max_of_tokenizer_and_forward, .timeout = 120)
{
    char q[200];
    snprintf(q, sizeof q, "%s/q8", tmp);
    cr_assert_eq(sh("%s quantize --model %s --out %s", BERTC_CLI, FIXTURE, q), 0, "%s", log_text);
    cr_assert_eq(sh("%s export-c --model %s --out %s/report", BERTC_CLI, q, tmp), 0, "%s",
                 log_text);
    Report r = parse_report(log_text);
    export_and_compare(q, "");   /* and it classifies in exactly that arena */
    size_t max = r.forward > r.tokenizer ? r.forward : r.tokenizer;
    max = r.init > max ? r.init : max;
    cr_expect_eq(r.step, max, "step %zu, forward %zu, tokenizer %zu, init %zu", r.step,
                 r.forward, r.tokenizer, r.init);
    cr_expect_eq(r.arena, r.gemm + r.model + r.step, "arena %zu != %zu + %zu + %zu", r.arena,
                 r.gemm, r.model, r.step);
    cr_expect_lt(r.arena, r.gemm + r.model + r.forward + r.tokenizer,
                 "the arena (%zu) holds the tokenizer's work and the forward side by side",
                 r.arena);
    cr_expect_lt(r.arena, r.gemm + r.model + r.init + r.forward,
                 "the arena (%zu) holds the build's scratch and the forward side by side",
                 r.arena);
}

/* --max-len N: the arena is sized for N tokens, and a longer text is cut to
 * N as `bertc encode --max-len N` cuts it, bit for bit. */
Test(export_c, max_len_sizes_the_arena_and_cuts_as_encode, .timeout = 120)
{
    if (!have_cc()) {
        cr_skip_test("no cc on PATH");
        return;
    }
    char out[200];
    snprintf(out, sizeof out, "%s/export", tmp);
    cr_assert_eq(sh("%s export-c --model %s --out %s", BERTC_CLI, FIXTURE, out), 0, "%s",
                 log_text);
    Report full = parse_report(log_text);
    cr_assert_eq(sh("%s export-c --model %s --out %s --max-len 6", BERTC_CLI, FIXTURE, out), 0,
                 "%s", log_text);
    Report six = parse_report(log_text);
    cr_expect_eq(six.tokens, 6, "%s", log_text);
    cr_expect_lt(six.arena, full.arena, "6 tokens: %zu bytes, %d tokens: %zu", six.arena,
                 full.tokens, full.arena);
    cr_expect_eq(sh("grep -c 'define MODEL_MAX_TOKENS 6$' %s/model.h", out), 0, "%s", log_text);
    build_program(out);
    cr_assert_eq(sh(ENV " %s/prog '%s'", out, texts[2]), 0, "%s", log_text);
    float have[3], want[3];
    char *p = log_text;
    for (int j = 0; j < 3; j++)
        have[j] = strtof(p, &p);
    cr_assert_eq(sh("%s encode --model %s --max-len 6 --output %s/in.st '%s' >/dev/null && " ENV
                    " %s run --model %s --inputs %s/in.st --output %s/out.st", BERTC_CLI, FIXTURE,
                    tmp, texts[2], BERTC_CLI, FIXTURE, tmp, tmp), 0, "%s", log_text);
    char path[300];
    snprintf(path, sizeof path, "%s/out.st", tmp);
    SafeTensors *st;
    BertcError err;
    cr_assert_eq(bertc_st_open_file(NULL, path, &st, &err), 0, "%s", err.msg);
    cr_assert_eq(bertc_st_read_f32(st, bertc_st_find(st, "logits"), want, 3, &err), 0, "%s",
                 err.msg);
    bertc_st_close(st);
    for (int j = 0; j < 3; j++)
        cr_expect_eq(have[j], want[j], "logit %d: exported %.9g, bertc run %.9g", j,
                     (double)have[j], (double)want[j]);
    cr_expect_neq(sh("%s export-c --model %s --out %s --max-len 100000", BERTC_CLI, FIXTURE,
                     out), 0);
    cr_expect(one_line(log_text) && strstr(log_text, "--max-len"), "%s", log_text);
}

/* --int8-path m4dsp: packed on the layout the scalar path shares, measured
 * there, marked for m4dsp. The scalar path reads that layout too, so the
 * same sources run on a PC (scalar) and give the scalar export's logits bit
 * for bit: one export for the board and the desk. */
Test(export_c, m4dsp_export_runs_on_the_scalar_path_elsewhere, .timeout = 120)
{
    if (!have_cc()) {
        cr_skip_test("no cc on PATH");
        return;
    }
    char out[200], scalar[200];
    snprintf(out, sizeof out, "%s/export", tmp);
    snprintf(scalar, sizeof scalar, "%s/scalar", tmp);
    cr_assert_eq(sh("%s export-c --model %s --int8 --int8-path m4dsp --out %s", BERTC_CLI,
                    FIXTURE, out), 0, "%s", log_text);
    cr_expect(strstr(log_text, "(12 int8, m4dsp path)"), "%s", log_text);
    cr_expect_eq(sh("grep -c '.isa = %d}' %s/model_data.c", (int)QGEMM_ISA_M4DSP, out), 0,
                 "%s", log_text);
    cr_expect_eq(atoi(log_text), 12, "12 entries packed for m4dsp expected, %s", log_text);
    cr_assert_eq(sh("%s export-c --model %s --int8 --out %s", BERTC_CLI, FIXTURE, scalar), 0,
                 "%s", log_text);
    build_program(out);
    build_program(scalar);
    cr_assert_eq(sh("%s/prog '%s' '%s' '%s' > %s/m4dsp.txt", out, texts[0], texts[1], texts[2],
                    tmp), 0, "the m4dsp export did not run on the host: %s", log_text);
    cr_assert_eq(sh("%s/prog '%s' '%s' '%s' > %s/scalar.txt", scalar, texts[0], texts[1],
                    texts[2], tmp), 0, "%s", log_text);
    cr_expect_eq(sh("cmp %s/m4dsp.txt %s/scalar.txt", tmp, tmp), 0, "%s", log_text);
}

/* The m4dsp export on the Cortex-M4F (qemu-system-arm) when the cross tools
 * are here, built with the porting kit (examples/firmware): it binds and
 * gives the host build's logits bit for bit (one exact int32 sum per output
 * either way), and the firmware links only the model's architecture. */
Test(export_c, m4dsp_export_binds_on_the_cortex_m4, .timeout = 600)
{
    if (!have_cc() || system("command -v arm-none-eabi-gcc >/dev/null 2>&1 && "
                             "command -v qemu-system-arm >/dev/null 2>&1") != 0) {
        cr_skip_test("no cc, arm-none-eabi-gcc or qemu-system-arm");
        return;
    }
    char out[200], m4[200];
    snprintf(out, sizeof out, "%s/export", tmp);
    snprintf(m4, sizeof m4, "%s/m4", tmp);
    cr_assert_eq(sh("%s export-c --model %s --int8 --int8-path m4dsp --out %s", BERTC_CLI,
                    FIXTURE, out), 0, "%s", log_text);
    const char *flags = "-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16";
    cr_assert_eq(sh("make -s --no-print-directory BUILD=%s FREESTANDING=1 NO_THREADS=1 "
                    "CC=arm-none-eabi-gcc AR=arm-none-eabi-ar CFLAGS='%s' lib", m4, flags), 0,
                 "%s", log_text);
    const char *kit = "examples/firmware";
    cr_assert_eq(sh("arm-none-eabi-gcc -std=c11 -O2 -I. -I%s -I%s -DBERTC_FREESTANDING "
                    "-DBERTC_NO_THREADS %s --specs=nano.specs --specs=rdimon.specs "
                    "-nostartfiles -T %s/cortex-m4f/link.ld -Wl,--gc-sections %s/main.c "
                    "%s/texts.c %s/model.c %s/model_data.c %s/cortex-m4f/startup.c "
                    "%s/libbertc.a -lm -o %s/fw.elf", kit, out, flags, kit, kit, kit, out, out,
                    kit, m4, m4), 0, "%s", log_text);
    cr_expect_neq(sh("arm-none-eabi-nm %s/fw.elf | grep -E ' (qaconv_run|spanbert_run|"
                     "summarizer_run|bertc_zoo_arch)$'", m4), 0, "linked: %s", log_text);
    cr_assert_eq(sh("{ timeout 300 qemu-system-arm -M mps2-an386 -nographic "
                    "-semihosting-config enable=on,target=native -kernel %s/fw.elf "
                    "> %s/m4.log 2>&1; }", m4, m4), 0, "%s", log_text);
    /* the same sources on the host (scalar path, the same layout) */
    char lib[256];
    snprintf(lib, sizeof lib, "%s", BERTC_CLI);
    *strrchr(lib, '/') = '\0';
    cr_assert_eq(sh("cc -std=c11 -O1 -I. -I%s -I%s %s/main.c %s/host/board.c %s/texts.c "
                    "%s/model.c %s/model_data.c %s/libbertc.a " LINK_FLAGS " -lm -lpthread "
                    "-o %s/prog", kit, out, kit, kit, kit, out, out, lib, tmp), 0, "%s",
                 log_text);
    cr_assert_eq(sh("{ " ENV " %s/prog > %s/host.log 2>&1; }", tmp, tmp), 0, "%s", log_text);
    /* the text lines without their ticks */
    cr_assert_eq(sh("sed -n 's/^\\(text .*\\) ticks .*/\\1/p' %s/m4.log > %s/m4.txt && "
                    "sed -n 's/^\\(text .*\\) ticks .*/\\1/p' %s/host.log > %s/host.txt && "
                    "grep -c '^text ' %s/m4.txt", m4, m4, tmp, tmp, m4), 0, "%s", log_text);
    cr_expect_gt(atoi(log_text), 0, "the firmware classified no text: %s", log_text);
    cr_expect_eq(sh("cmp %s/host.txt %s/m4.txt", tmp, m4), 0, "%s", log_text);
}

/* A const model keeps no copy of what its table holds (names point into
 * it, no module tree beyond the root), and its registry and Params live in
 * the scratch arena, which the step region reuses once the model is bound:
 * what lives on in the model's arena is the Vars and the model's structs. */
Test(export_c, const_registry_keeps_its_bookkeeping_out_of_the_model_arena)
{
    Arena *a = bertc_arena_create("t", 1 << 20), *scratch = bertc_arena_create("s", 1 << 20);
    BertConfig cfg;
    BertcError err;
    cr_assert_eq(bertc_bert_config_read(FIXTURE "/config.json", &cfg, &err), 0, "%s", err.msg);
    Model ref, m;
    ConstBuild cb = {.arch = bertc_zoo_arch(cfg.architecture)};
    cr_assert_eq(bertc_model_build_const(&ref, a, &cfg, &cb, &err), 0, "%s", err.msg);
    int n = ref.reg->n_params;
    ConstParam *t = bertc_arena_calloc(a, (size_t)n, sizeof *t);
    for (int i = 0; i < n; i++) {   /* the table's own copies of the names, reversed */
        const char *name = ref.reg->params[n - 1 - i].name;
        char *copy = bertc_arena_alloc(a, strlen(name) + 1);
        memcpy(copy, name, strlen(name) + 1);
        t[i] = (ConstParam){.name = copy};
    }
    Arena *model = bertc_arena_create("model", 1 << 20);
    cb = (ConstBuild){.arch = cb.arch, .table = t, .n_table = n, .scratch = scratch};
    cr_assert_eq(bertc_model_build_const(&m, model, &cfg, &cb, &err), 0, "%s", err.msg);
    int copied = 0;
    for (int i = 0; i < n; i++)
        copied += m.reg->params[i].name != t[n - 1 - i].name;
    cr_expect_eq(copied, 0, "%d of %d names were copied, not pointed into the table (e.g. '%s')",
                 copied, n, m.reg->params[0].name);
    cr_expect_eq(m.reg->n_modules, 1, "a const model kept %d modules", m.reg->n_modules);
    cr_expect_eq(m.reg->cap_params, n, "Params for %d allocated, %d needed", m.reg->cap_params,
                 n);
    size_t per_param = sizeof(Param) + sizeof(Var);
    cr_expect_geq(bertc_arena_used(scratch), (size_t)n * sizeof(Param),
                  "the Params are not in the scratch arena (%zu bytes used there)",
                  bertc_arena_used(scratch));
    cr_expect_lt(bertc_arena_used(model), (size_t)n * per_param,
                 "the model's arena holds %zu bytes for %d parameters: Params too?",
                 bertc_arena_used(model), n);
    bertc_arena_destroy(model);
    bertc_arena_destroy(scratch);
    bertc_arena_destroy(a);
}

/* Compiles a program that formats the config of the model exported into
 * out (model_data.config) and expects the text `want`. */
static void expect_exported_config(const char *out, const char *want)
{
    char path[300];
    snprintf(path, sizeof path, "%s/main.c", out);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fputs("#include \"bertc.h\"\n#include <stdio.h>\nextern const ConstModelData model_data;\n"
          "static char buf[65536];\n"
          "int main(void)\n{\n    size_t n;\n    BertcError err;\n"
          "    if (bertc_bert_config_format(model_data.config, buf, sizeof buf, &n, &err))\n"
          "        return 1;\n    fputs(buf, stdout);\n    return 0;\n}\n", f);
    fclose(f);
    char lib[256];
    snprintf(lib, sizeof lib, "%s", BERTC_CLI);
    *strrchr(lib, '/') = '\0';
    cr_assert_eq(sh("cc -std=c11 -O1 -Wall -Werror -I. -I%s %s/model_data.c %s/main.c "
                    "%s/libbertc.a " LINK_FLAGS " -lm -lpthread -o %s/prog", out, out, out, lib,
                    out), 0, "%s", log_text);
    cr_assert_eq(sh("%s/prog", out), 0, "%s", log_text);
    cr_expect_str_eq(log_text, want, "the exported BertConfig differs from the model's");
}

/* The config is written as a const BertConfig (no JSON on the target): it
 * formats to the same config.json text as the model's own, every key
 * bertc_bert_config_format writes, label names included. */
Test(export_c, exported_config_formats_as_the_models, .timeout = 120)
{
    if (!have_cc()) {
        cr_skip_test("no cc on PATH");
        return;
    }
    char out[200], model[200];
    snprintf(out, sizeof out, "%s/export", tmp);
    snprintf(model, sizeof model, "%s/m", tmp);
    cr_assert_eq(sh("cp -r %s %s", FIXTURE, model), 0, "%s", log_text);
    char path[300], want[4096];
    snprintf(path, sizeof path, "%s/config.json", model);
    BertConfig cfg;
    BertcError err;
    size_t n;
    /* labels with a non-ASCII byte and a problem type: every kind of field */
    cr_assert_eq(bertc_bert_config_read(path, &cfg, &err), 0, "%s", err.msg);
    const char *labels[] = {"n\xc3\xa9g", "neutral", "pos"};
    cr_assert_eq(bertc_bert_config_set_labels(&cfg, labels, 3, &err), 0, "%s", err.msg);
    cfg.problem_type = PROBLEM_SINGLE_LABEL;
    cr_assert_eq(bertc_bert_config_write(path, &cfg, &err), 0, "%s", err.msg);
    cr_assert_eq(sh("%s export-c --model %s --int8 --out %s", BERTC_CLI, model, out), 0, "%s",
                 log_text);
    cr_assert_eq(bertc_bert_config_read(path, &cfg, &err), 0, "%s", err.msg);
    cr_assert_eq(cfg.n_label_names, 3, "the labels did not reach %s", path);
    cfg.int8_dynamic = true;   /* --int8: the exported model is quantised */
    cr_assert_eq(bertc_bert_config_format(&cfg, want, sizeof want, &n, &err), 0, "%s", err.msg);
    expect_exported_config(out, want);
}

/* 300 label names of 24 characters, more than a BertConfig holds in itself:
 * export-c writes them as an array of their own that the const config
 * points to, and the target formats the same config.json. */
Test(export_c, three_hundred_long_labels_are_exported, .timeout = 120)
{
    if (!have_cc()) {
        cr_skip_test("no cc on PATH");
        return;
    }
    enum { N = 300 };
    char out[200], model[200], path[300];
    snprintf(out, sizeof out, "%s/export", tmp);
    snprintf(model, sizeof model, "%s/m", tmp);
    cr_assert_eq(sh("cp -r %s %s", FIXTURE, model), 0, "%s", log_text);
    snprintf(path, sizeof path, "%s/config.json", model);
    BertConfig cfg;
    BertcError err;
    cr_assert_eq(bertc_bert_config_read(path, &cfg, &err), 0, "%s", err.msg);
    static char text[N][40];
    const char *labels[N];
    for (int i = 0; i < N; i++) {
        snprintf(text[i], sizeof text[i], "label-%03d-abcdefghijklmn", i);
        labels[i] = text[i];
    }
    cfg.num_labels = N;
    cr_assert_eq(bertc_bert_config_set_labels(&cfg, labels, N, &err), 0, "%s", err.msg);
    cr_assert_eq(bertc_bert_config_write(path, &cfg, &err), 0, "%s", err.msg);
    cr_assert_eq(sh("%s init --config %s --output %s/model.safetensors && %s export-c --model %s "
                    "--out %s", BERTC_CLI, path, model, BERTC_CLI, model, out), 0, "%s",
                 log_text);
    static char want[65536];
    size_t n;
    cr_assert_eq(bertc_bert_config_format(&cfg, want, sizeof want, &n, &err), 0, "%s", err.msg);
    bertc_bert_config_free(&cfg);
    expect_exported_config(out, want);
}

/* The GEMM buffers of a bare-metal run: reserved once at measured sizes,
 * later GEMMs within them take nothing more from the arena; and a GEMM
 * with one block of A (M <= MC) packs op(B) in one panel's room, not K x N
 * floats. */
Test(export_c, gemm_buffers_are_taken_once_at_their_measured_size)
{
    bertc_threads_set_count(1);
    CpuIsa old_isa = bertc_cpu_isa();
    bertc_cpu_set_isa(ISA_SCALAR);
    static _Alignas(64) unsigned char mem[1 << 18];
    Arena packs;
    bertc_arena_init_fixed(&packs, "packs", mem, sizeof mem);
    bertc_gemm_set_pack_arena(&packs);
    int64_t K = 64, N = 64;
    static float A[64 * 64], B[64 * 64], C[64 * 64];
    for (int i = 0; i < 64 * 64; i++)
        A[i] = (float)(i % 7) - 3.0f, B[i] = (float)(i % 5) - 2.0f;
    bertc_gemm(false, true, 1, N, K, 1.0f, A, K, B, K, 0.0f, C, N);   /* a Linear at M = 1 */
    size_t a_bytes, b_bytes;
    bertc_gemm_pack_sizes(&a_bytes, &b_bytes);
    cr_expect_lt(b_bytes, (size_t)(K * N) * sizeof(float),
                 "op(B) of a one-row GEMM took %zu bytes, all of (%lld, %lld)", b_bytes,
                 (long long)K, (long long)N);
    bertc_gemm(false, true, 32, N, K, 1.0f, A, K, B, K, 0.0f, C, N);
    bertc_gemm_pack_sizes(&a_bytes, &b_bytes);
    bertc_gemm_set_pack_arena(&packs);   /* forgets the buffers */
    bertc_arena_reset(&packs);
    bertc_gemm_reserve_packs(a_bytes, b_bytes);
    size_t reserved = bertc_arena_used(&packs);
    bertc_gemm(false, true, 1, N, K, 1.0f, A, K, B, K, 0.0f, C, N);
    bertc_gemm(false, false, 32, N, K, 1.0f, A, K, B, N, 0.0f, C, N);
    bertc_gemm(false, true, 32, N, K, 1.0f, A, K, B, K, 0.0f, C, N);
    cr_expect_eq(bertc_arena_used(&packs), reserved, "the buffers grew from %zu to %zu bytes",
                 reserved, bertc_arena_used(&packs));
    bertc_gemm_set_pack_arena(NULL);
    bertc_cpu_set_isa(old_isa);
}

/* bertc_qgemm with a fixed arena (bare metal) quantises A a register tile of
 * rows at a time: its buffer holds a few rows, not M x k_pad bytes, and Y
 * is bitwise the heap run's (M x K quantised at once). */
Test(export_c, qgemm_with_an_arena_holds_a_few_rows_of_a)
{
    bertc_threads_set_count(1);
    enum { M = 32, N = 24, K = 128 };
    static float A[M * K], Y_heap[M * N], Y_arena[M * N], bias[N], scale[N];
    static int8_t W[N * K];
    static _Alignas(64) unsigned char packed[1 << 16], mem[1 << 16];
    for (int i = 0; i < M * K; i++)
        A[i] = (float)((i * 37) % 101) / 17.0f - 3.0f;
    for (int i = 0; i < N * K; i++)
        W[i] = (int8_t)((i * 53) % 255 - 127);
    for (int j = 0; j < N; j++)
        bias[j] = (float)j / 8.0f, scale[j] = 0.01f + (float)j / 1000.0f;
    cr_assert_leq(bertc_qgemm_packed_bytes(N, K), sizeof packed);
    QuantPackedB pb;
    bertc_qgemm_pack_b(W, scale, N, K, packed, &pb);
    bertc_qgemm_set_arena(NULL);
    bertc_qgemm(M, A, K, &pb, bias, Y_heap, N);
    Arena a;
    bertc_arena_init_fixed(&a, "qgemm", mem, sizeof mem);
    bertc_qgemm_set_arena(&a);
    bertc_qgemm(M, A, K, &pb, bias, Y_arena, N);
    size_t held = bertc_qgemm_scratch_bytes();
    bertc_qgemm_set_arena(NULL);
    cr_expect_lt(held, (size_t)(M * K) / 2, "the arena run held %zu bytes of A's rows (all "
                 "of A: %d)", held, M * K);
    int differ = 0;
    for (int i = 0; i < M * N; i++)
        differ += memcmp(&Y_heap[i], &Y_arena[i], sizeof(float)) != 0;
    cr_expect_eq(differ, 0, "%d of %d outputs differ from the heap run (first: %.9g vs %.9g)",
                 differ, M * N, (double)Y_arena[0], (double)Y_heap[0]);
}
