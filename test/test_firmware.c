/* test/test_firmware.c — the porting kit's example firmware
 * (examples/firmware/main.c, docs/porting.md) built for the host with
 * host/board.c and an exported classifier: every line of texts.c gets a
 * `text I: label K logits ...` line whose float bits are `bertc run`'s and
 * whose label is their arg max, a text far longer than MODEL_MAX_TOKENS
 * included (read in place, cut as bertc encode cuts it); a text that is not
 * UTF-8 is an error line for that text, not a crash, and fails the run; the `ram:`
 * line reports an arena high water inside MODEL_ARENA_BYTES. The same lines
 * are what `make cross-test` compares between the firmware and the host.
 * Skipped when there is no cc. */
#include "test/test_util.h"
#include "bertc.h"

#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FIXTURE "test/data/finetuned"   /* topics: 4 labels */
#define KIT "examples/firmware"
#define ENV "BERTC_ISA=scalar BERTC_INT8_ISA=scalar"

#if defined(__SANITIZE_ADDRESS__)
#define LINK_FLAGS "-fsanitize=address,undefined"
#else
#define LINK_FLAGS ""
#endif

static char tmp[128];
static char log_text[16384];

/* Labels law (2) and computers (0): a label that is not always the first.
 * texts[1] is ~150 tokens, more than the model's 64. */
static const char *const texts[] = {
    "the court ruled on the law",
    "Birds sang in the morning, playing and played. Birds sang in the morning, playing and "
    "played. Birds sang in the morning, playing and played. Birds sang in the morning, "
    "playing and played. Birds sang in the morning, playing and played. Birds sang in the "
    "morning, playing and played. Birds sang in the morning, playing and played. Birds sang "
    "in the morning, playing and played. Birds sang in the morning, playing and played.",
    "the computer program crashed"};
/* written after them: not UTF-8 (a lone continuation byte) */
#define BAD_TEXT "caf\\251 au lait"

static void setup(void)
{
    test_scratch_make(tmp, sizeof tmp, "firmware");
}

static void teardown(void)
{
    test_scratch_remove(tmp);
}

TestSuite(firmware, .init = setup, .fini = teardown);

__attribute__((format(printf, 1, 2))) static int sh(const char *fmt, ...)
{
    char cmd[3000];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    return test_shell(cmd, TEST_STDOUT_AND_STDERR, log_text, sizeof log_text);
}

/* texts[] as texts.c: one const string, a line each, as the kit's texts.c. */
static void write_texts(void)
{
    char path[200];
    snprintf(path, sizeof path, "%s/texts.c", tmp);
    FILE *f = fopen(path, "w");
    cr_assert(f, "cannot write %s", path);
    fputs("const unsigned char firmware_texts[] =", f);
    for (int i = 0; i < 3; i++)
        fprintf(f, "\n    \"%s\\n\"", texts[i]);
    fprintf(f, "\n    \"%s\\n\"", BAD_TEXT);
    fputs(";\nconst unsigned long firmware_texts_len = sizeof firmware_texts - 1;\n", f);
    fclose(f);
}

/* Exports the fixture int8 into tmp/model and builds main.c for the host. */
static void build_firmware(void)
{
    int rc = sh("%s export-c --model " FIXTURE " --int8 --out %s/model", BERTC_CLI, tmp);
    cr_assert_eq(rc, 0, "bertc export-c failed: %s", log_text);
    write_texts();
    char lib[256];
    snprintf(lib, sizeof lib, "%s", BERTC_CLI);
    *strrchr(lib, '/') = '\0';
    rc = sh("cc -std=c11 -O1 -Wall -Wextra -Werror -I. -I" KIT " -I%s/model " KIT "/main.c "
            KIT "/host/board.c %s/model/model.c %s/model/model_data.c %s/texts.c %s/libbertc.a "
            LINK_FLAGS " -lm -lpthread -o %s/firmware", tmp, tmp, tmp, tmp, lib, tmp);
    cr_assert_eq(rc, 0, "the example firmware does not compile for the host: %s", log_text);
}

/* Logits of `bertc run` (int8, as export-c --int8 quantises) on text: (1, 4). */
static void run_logits(const char *text, float *logits)
{
    int rc = sh("%s quantize --model " FIXTURE " --out %s/int8 --force >/dev/null && "
                "%s encode --model %s/int8 --output %s/in.st '%s' >/dev/null && " ENV
                " %s run --model %s/int8 --inputs %s/in.st --output %s/out.st", BERTC_CLI, tmp,
                BERTC_CLI, tmp, tmp, text, BERTC_CLI, tmp, tmp, tmp);
    cr_assert_eq(rc, 0, "bertc quantize/encode/run failed: %s", log_text);
    char path[300];
    snprintf(path, sizeof path, "%s/out.st", tmp);
    SafeTensors *st;
    BertcError err;
    cr_assert_eq(bertc_st_open_file(NULL, path, &st, &err), 0, "%s", err.msg);
    const StTensorInfo *t = bertc_st_find(st, "logits");
    cr_assert(t && t->ndim == 2 && t->shape[1] == 4, "%s has no (1, 4) logits", path);
    cr_assert_eq(bertc_st_read_f32(st, t, logits, 4, &err), 0, "%s", err.msg);
    bertc_st_close(st);
}

/* The line of the output that starts with prefix, or fails. */
static const char *line_of(const char *out, const char *prefix)
{
    for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (strncmp(p, prefix, strlen(prefix)) == 0)
            return p;
    cr_assert_fail("no line '%s' in the firmware's output:\n%s", prefix, out);
    return NULL;
}

static void expect_text_line(const char *out, int i)
{
    char prefix[32];
    snprintf(prefix, sizeof prefix, "text %d: label ", i);
    const char *line = line_of(out, prefix);
    float want[4];
    run_logits(texts[i], want);
    unsigned long bits[4];
    int label;
    cr_assert_eq(sscanf(line + strlen(prefix), "%d logits %lx %lx %lx %lx", &label, &bits[0],
                        &bits[1], &bits[2], &bits[3]), 5, "text %d: unreadable line: %.200s", i,
                 line);
    int k = 0;
    for (int j = 0; j < 4; j++) {
        uint32_t b = (uint32_t)bits[j];
        float have;
        memcpy(&have, &b, 4);
        cr_expect_eq(have, want[j], "text %d logit %d: firmware %.9g, bertc run %.9g", i, j,
                     (double)have, (double)want[j]);
        k = want[j] > want[k] ? j : k;
    }
    cr_expect_eq(label, k, "text %d: label %d, but the largest logit is %d", i, label, k);
}

Test(firmware, host_build_prints_bertc_runs_logits_and_the_ram_it_used, .timeout = 180)
{
    if (system("command -v cc >/dev/null 2>&1") != 0) {
        cr_skip_test("no cc on PATH: the example firmware cannot be compiled here");
        return;
    }
    build_firmware();
    int rc = sh(ENV " timeout 60 %s/firmware", tmp);
    char out[sizeof log_text];
    memcpy(out, log_text, sizeof out);
    cr_expect_neq(rc, 0, "a text that is not UTF-8 must fail the run:\n%s", out);
    for (int i = 0; i < 3; i++)
        expect_text_line(out, i);
    const char *bad = line_of(out, "text 3: error: ");
    cr_expect(strstr(bad, "UTF-8") && strchr(bad, '\n') == strstr(bad, "\n"), "%.200s", bad);
    cr_expect(strstr(out, "texts: 4 classified, with errors\n"), "%s", out);
    unsigned long used, reserved;
    cr_assert_eq(sscanf(line_of(out, "ram: "), "ram: arena %lu B of %lu", &used, &reserved), 2,
                 "%s", out);
    cr_expect(used > 0 && used <= reserved, "arena high water %lu B of %lu", used, reserved);
}
