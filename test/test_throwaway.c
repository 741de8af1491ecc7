/* test/test_throwaway.c — "an architecture is one file plus one table line"
 * (docs/adding-a-model.md), kept true: the Makefile adds
 * test/data/throwaway/toy_arch.c and one line to a copy of the list in
 * zoo/models/architectures.c, and links build/throwaway/bertc from it and
 * the unchanged library and CLI. That bertc runs the new architecture
 * through init, summary, run, predict, explain and finetune, each reading
 * only its descriptor: its task, fine-tuning role and explain steps. */
#include "test/test_util.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#define TOY_DIR "test/data/throwaway"
#define TOY_NAME "ThrowawayFirstTokenClassifier"
#define TOY_MODEL "--config " TOY_DIR "/config.json"
#define TOY_FILES TOY_MODEL " --vocab " TOY_DIR "/vocab.txt"

static char dir[256];
static char log_text[1 << 16];

static void setup(void) { test_scratch_make(dir, sizeof dir, "throwaway"); }
static void teardown(void) { test_scratch_remove(dir); }

TestSuite(throwaway, .init = setup, .fini = teardown, .timeout = 120);

/* `BIN ARGS` (%s of dir filled in): exit code, stdout and stderr in log_text. */
static int toy(const char *bin, const char *fmt)
{
    char args[2048], line[2300];
    snprintf(args, sizeof args, fmt, dir, dir, dir);
    snprintf(line, sizeof line, "%s %s", bin, args);
    return test_shell(line, TEST_STDOUT_AND_STDERR, log_text, sizeof log_text);
}

static void expect_run(const char *fmt, const char *want, const char *what)
{
    int rc = toy(BERTC_TOY_CLI, fmt);
    cr_expect_eq(rc, 0, "%s: exit %d: %s", what, rc, log_text);
    cr_expect(!want || strstr(log_text, want), "%s: no '%s' in: %s", what, want, log_text);
}

/* The copy of the list differs from the library's by one added line. */
Test(throwaway, is_one_file_plus_one_table_line)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "diff zoo/models/architectures.c %s", BERTC_TOY_TABLE);
    int rc = test_shell(cmd, TEST_STDOUT_AND_STDERR, log_text, sizeof log_text);
    cr_assert_eq(rc, 1, "diff exit %d: %s", rc, log_text);
    int added = 0, removed = 0;
    for (const char *l = log_text; *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : "") {
        added += l[0] == '>';
        removed += l[0] == '<';
    }
    cr_expect(added == 1 && removed == 0 && strstr(log_text, "X(bertc_arch_throwaway)"),
              "want one line added to the list, got: %s", log_text);
    /* the library's own bertc does not know it: the line is what adds it */
    rc = toy(BERTC_CLI, "summary " TOY_MODEL);
    cr_expect(rc != 0 && strstr(log_text, "unknown architecture \"" TOY_NAME "\""),
              "build/bertc knows the throw-away architecture: %s", log_text);
}

Test(throwaway, runs_every_command)
{
    expect_run("summary " TOY_MODEL, TOY_NAME "(", "summary");
    cr_expect(strstr(log_text, "(classifier): Linear(in_features=16, out_features=2") &&
              !strstr(log_text, "pooler"), "summary: not the throw-away's tree: %s", log_text);
    expect_run("init " TOY_MODEL " --output %s/w.safetensors --seed 1", NULL, "init");
    expect_run("encode " TOY_FILES " --output %s/in.safetensors 'the cat sat'", NULL, "encode");
    expect_run("run " TOY_MODEL " --weights %s/w.safetensors --inputs %s/in.safetensors "
               "--output %s/out.safetensors", NULL, "run");
    expect_run("show %s/out.safetensors", "logits  F32 [1, 2]", "run's outputs");
    /* its task (sequence classification) gives one label of id2label a text */
    expect_run("predict " TOY_FILES " --weights %s/w.safetensors --input " TOY_DIR "/train.tsv",
               NULL, "predict");
    cr_expect(strstr(log_text, "animal\t") || strstr(log_text, "place\t"),
              "predict: no label of id2label: %s", log_text);
    /* its explain steps, next to its code, on the page */
    expect_run("explain " TOY_FILES " --weights %s/w.safetensors --out %s/page.html "
               "'the cat sat'", NULL, "explain");
    char page[300];
    static char html[1 << 20];
    snprintf(page, sizeof page, "%s/page.html", dir);
    test_read_text(page, html, sizeof html);
    cr_expect(strstr(html, "test/data/throwaway/toy_arch.c:toy_forward") &&
              strstr(html, "A throw-away classifier") && strstr(html, "<h2 id=\"prediction\">") &&
              strstr(html, "layers.1.attention_probs</code>"),
              "explain: the page lacks the throw-away's steps or prediction");
}

/* Its descriptor says it is a fine-tuning head for sequence classification:
 * fine-tuning one keeps its architecture, and the result predicts. */
Test(throwaway, finetunes_as_itself)
{
    expect_run("finetune " TOY_FILES " --train " TOY_DIR "/train.tsv --task seq-cls "
               "--out %s/ft --epochs 2 --batch-size 4 --quiet", "best held-out accuracy",
               "finetune");
    char path[300];
    static char config[1 << 14];
    snprintf(path, sizeof path, "%s/ft/config.json", dir);
    test_read_text(path, config, sizeof config);
    cr_expect(strstr(config, "\"architectures\": [\"" TOY_NAME "\"]"),
              "finetune: the saved model is not the throw-away architecture: %s", config);
    expect_run("predict --model %s/ft 'the cat sat'", "\tthe cat sat", "predict the fine-tuned");
}
