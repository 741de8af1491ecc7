/* test/test_cli_quantize.c — `bertc quantize` as a user meets it: what it
 * prints, where it refuses to write (an existing non-empty --out without
 * --force, the source itself, an already quantised model, a --keep that
 * names nothing), and that every command reading --model runs the int8
 * directory while finetune refuses it. The format: test/test_quantize.c. */
#include "test/test_util.h"

#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FIXTURE "test/data/finetuned"

static char tmp[128];

static void setup(void)
{
    test_scratch_make(tmp, sizeof tmp, "cli_quantize");
}

static void teardown(void)
{
    test_scratch_remove(tmp);
}

TestSuite(cli_quantize, .init = setup, .fini = teardown);

static char log_text[8192];

/* `bertc ARGS` (a printf format), its stdout and stderr in log_text; the exit code. */
__attribute__((format(printf, 1, 2))) static int bertc(const char *fmt, ...)
{
    char args[1500], cmd[1700];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "%s %s", BERTC_CLI, args);
    return test_shell(cmd, TEST_STDOUT_AND_STDERR, log_text, sizeof log_text);
}

/* A copy of the fixture the test may damage. */
static const char *fixture_copy(void)
{
    static char dir[256];
    char cmd[600];
    snprintf(dir, sizeof dir, "%s/fp32", tmp);
    snprintf(cmd, sizeof cmd, "cp -r %s %s", FIXTURE, dir);
    cr_assert_eq(system(cmd), 0);
    return dir;
}

static bool one_line(const char *s)
{
    const char *nl = strchr(s, '\n');
    return nl && nl[1] == '\0';
}

Test(cli_quantize, prints_what_it_quantised_and_writes_a_full_directory)
{
    int rc = bertc("quantize --model %s --out %s/q", FIXTURE, tmp);
    cr_assert_eq(rc, 0, "bertc quantize failed: %s", log_text);
    cr_expect(strstr(log_text, "quantised 12 Linear weights to int8") &&
              strstr(log_text, "MB float32 ->") && strstr(log_text, "model.safetensors:"),
              "the report lacks the count or the sizes: %s", log_text);
    static const char *const files[] = {"config.json", "model.safetensors", "vocab.txt",
                                        "tokenizer_config.json"};
    for (int i = 0; i < 4; i++) {
        char path[300];
        snprintf(path, sizeof path, "%s/q/%s", tmp, files[i]);
        cr_expect_eq(access(path, R_OK), 0, "%s was not written", path);
    }
    char config[300], text[8192];
    snprintf(config, sizeof config, "%s/q/config.json", tmp);
    test_read_text(config, text, sizeof text);
    cr_expect(strstr(text, "\"quant_method\": \"bertc_dynamic_int8\"") &&
              strstr(text, "\"bert.encoder.layer.1.output.dense\"") &&
              strstr(text, "\"id2label\""),
              "config.json lacks the quantization_config or the source's keys: %s", text);
}

Test(cli_quantize, a_non_empty_out_is_refused_without_force_and_kept_with_it)
{
    char keep[300];
    snprintf(keep, sizeof keep, "%s/q/notes.txt", tmp);
    cr_assert_eq(bertc("quantize --model %s --out %s/q", FIXTURE, tmp), 0, "%s", log_text);
    FILE *f = fopen(keep, "w");
    cr_assert(f);
    fputs("mine\n", f);
    fclose(f);
    int rc = bertc("quantize --model %s --out %s/q", FIXTURE, tmp);
    cr_expect_neq(rc, 0, "a non-empty --out was written over");
    cr_expect(strstr(log_text, "--out") && strstr(log_text, "not empty") &&
              strstr(log_text, "--force") && one_line(log_text), "the message: %s", log_text);
    rc = bertc("quantize --model %s --out %s/q --force", FIXTURE, tmp);
    cr_expect_eq(rc, 0, "--force did not write: %s", log_text);
    cr_expect_eq(access(keep, R_OK), 0, "--force removed a file that is not a model file");
}

Test(cli_quantize, the_source_is_never_written_over)
{
    const char *src = fixture_copy();
    char weights[300], before[300], cmd[700];
    snprintf(weights, sizeof weights, "%s/model.safetensors", src);
    snprintf(before, sizeof before, "%s/before.safetensors", tmp);
    snprintf(cmd, sizeof cmd, "cp %s %s", weights, before);
    cr_assert_eq(system(cmd), 0);
    int rc = bertc("quantize --model %s --out %s/./ --force", src, src);
    cr_expect_neq(rc, 0, "quantize wrote into its own --model");
    cr_expect(strstr(log_text, "is the --model directory") && one_line(log_text), "%s",
              log_text);
    cr_expect(test_same_file(weights, before), "the source weights changed");
}

Test(cli_quantize, an_already_quantised_model_is_refused)
{
    cr_assert_eq(bertc("quantize --model %s --out %s/q", FIXTURE, tmp), 0, "%s", log_text);
    int rc = bertc("quantize --model %s/q --out %s/qq", tmp, tmp);
    cr_expect_neq(rc, 0, "an int8 model was quantised again");
    cr_expect(strstr(log_text, "already quantised") && one_line(log_text), "%s", log_text);
    char out[300];
    snprintf(out, sizeof out, "%s/qq", tmp);
    cr_expect_neq(access(out, F_OK), 0, "the refused run created %s", out);
}

Test(cli_quantize, keep_leaves_modules_float32_and_must_name_one)
{
    int rc = bertc("quantize --model %s --out %s/q --keep bert.encoder.layer.1", FIXTURE, tmp);
    cr_assert_eq(rc, 0, "%s", log_text);
    cr_expect(strstr(log_text, "quantised 6 Linear weights"), "--keep of one layer of two: %s",
              log_text);
    rc = bertc("quantize --model %s --out %s/q3 --keep bert.encoder", FIXTURE, tmp);
    cr_expect_neq(rc, 0, "a model with nothing left to quantise was written");
    cr_expect(strstr(log_text, "no Linear weight left") && one_line(log_text), "%s", log_text);
    rc = bertc("quantize --model %s --out %s/q2 --keep bert.encoder.layer.7", FIXTURE, tmp);
    cr_expect_neq(rc, 0, "a --keep naming no module was accepted");
    cr_expect(strstr(log_text, "--keep") && strstr(log_text, "bert.encoder.layer.7") &&
              one_line(log_text), "%s", log_text);
}

Test(cli_quantize, missing_flags_name_the_flag)
{
    cr_expect_eq(bertc("quantize --out %s/q", tmp), 2);
    cr_expect(strstr(log_text, "--model"), "%s", log_text);
    cr_expect_eq(bertc("quantize --model %s", FIXTURE), 2);
    cr_expect(strstr(log_text, "--out"), "%s", log_text);
}

/* Every command that reads --model runs the int8 directory unchanged;
 * summary says int8; finetune refuses it in one line. */
Test(cli_quantize, model_commands_read_the_int8_directory)
{
    cr_assert_eq(bertc("quantize --model %s --out %s/q", FIXTURE, tmp), 0, "%s", log_text);
    const char *q = tmp;
    cr_expect_eq(bertc("predict --model %s/q 'a text about computers'", q), 0, "predict: %s",
                 log_text);
    cr_expect(!strstr(log_text, "unused") && !strstr(log_text, "warning"),
              "the scales are not read as weights of the model: %s", log_text);
    cr_expect_eq(bertc("embed --model %s/q 'a text'", q), 0, "embed: %s", log_text);
    cr_expect_eq(bertc("encode --model %s/q --output %s/in.safetensors 'a text'", q, q), 0,
                 "encode: %s", log_text);
    cr_expect_eq(bertc("run --model %s/q --inputs %s/in.safetensors --output %s/o.safetensors",
                       q, q, q), 0, "run: %s", log_text);
    cr_expect_eq(bertc("attention --model %s/q --output %s/a.svg 'a text'", q, q), 0,
                 "attention: %s", log_text);
    cr_expect_eq(bertc("summary --model %s/q", q), 0, "summary: %s", log_text);
    cr_expect(strstr(log_text, "int8") && strstr(log_text, "12 Linear weights"),
              "summary does not say the model is int8: %s", log_text);
    cr_expect_eq(bertc("summary --model %s", FIXTURE), 0);
    cr_expect(!strstr(log_text, "int8"), "summary calls a float32 model int8: %s", log_text);
    char data[300];
    snprintf(data, sizeof data, "%s/train.csv", tmp);
    FILE *f = fopen(data, "w");
    cr_assert(f);
    fputs("text,label\ngood,a\nbad,b\nfine,a\nawful,b\n", f);
    fclose(f);
    int rc = bertc("finetune --model %s/q --train %s --out %s/ft --steps 1 --quiet", q, data, q);
    cr_expect_neq(rc, 0, "finetune trained an int8 model");
    cr_expect(strstr(log_text, "int8") && strstr(log_text, "float32 original"),
              "finetune's refusal: %s", log_text);
}

/* A classifier on the shipped model's sizes is a third word embeddings:
 * quantize says so and points to --embeddings, and says nothing of it once
 * they are int8, nor for the shipped masked-LM model, whose table is tied
 * to its decoder (issue #29: 8.1 MB became 7.9 MB without a word on where
 * the bytes were). */
Test(cli_quantize, points_to_embeddings_when_they_are_the_bulk)
{
    const char *shipped = "data/pretrained/bertc-docs";
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "mkdir -p %s/cls && sed 's/BertForMaskedLM/BertForSequenceClassification/' "
             "%s/config.json > %s/cls/config.json && cp %s/vocab.txt %s/cls/", tmp, shipped, tmp,
             shipped, tmp);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    cr_assert_eq(bertc("init --config %s/cls/config.json --output %s/cls/model.safetensors", tmp,
                       tmp), 0, "%s", log_text);
    cr_assert_eq(bertc("quantize --model %s/cls --out %s/small", tmp, tmp), 0, "%s", log_text);
    cr_expect(strstr(log_text, "note: the word embeddings are") &&
              strstr(log_text, "--embeddings stores them as int8 too"),
              "no pointer to --embeddings: %s", log_text);
    cr_assert_eq(bertc("quantize --model %s/cls --out %s/small-emb --embeddings", tmp, tmp), 0,
                 "%s", log_text);
    cr_expect(!strstr(log_text, "note: the word embeddings"), "said again with --embeddings: %s",
              log_text);
    cr_assert_eq(bertc("quantize --model %s --out %s/tied", shipped, tmp), 0, "%s", log_text);
    cr_expect(!strstr(log_text, "note: the word embeddings"),
              "pointed to --embeddings for a tied table: %s", log_text);
}
