/* test/test_pretrain_cli.c — `bertc pretrain` refusing what it cannot run:
 * a missing --corpus, a bad --objective, --max-len 2 (usage: exit 2),
 * --whole-word-mask with span masking and a non-empty --out without
 * --force (the library's refusals: exit 1), each one line on stderr that
 * names the flag, with nothing written. */
#include "test/test_util.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[256];

static void setup(void)
{
    test_scratch_make(dir, sizeof dir, "pretrain_cli");
}

static void teardown(void)
{
    test_scratch_remove(dir);
}

TestSuite(pretrain_cli, .init = setup, .fini = teardown, .timeout = 60);

Test(pretrain_cli, refusals_are_one_line_naming_the_flag)
{
    char corpus[400], config[400], full[400], keep[500];
    snprintf(corpus, sizeof corpus, "%s/corpus.txt", dir);
    snprintf(config, sizeof config, "%s/cfg.json", dir);
    snprintf(full, sizeof full, "%s/full", dir);
    snprintf(keep, sizeof keep, "%s/notes.txt", full);
    test_write_text(corpus, "the cat sat on the mat\nthe dog ran\n");
    test_write_text(config, "{\"architectures\": [\"BertForMaskedLM\"], \"model_type\": \"bert\", "
                            "\"hidden_size\": 32, \"num_hidden_layers\": 1, "
                            "\"num_attention_heads\": 2, \"intermediate_size\": 64, "
                            "\"max_position_embeddings\": 32, \"vocab_size\": 30522}\n");
    cr_assert_eq(mkdir(full, 0755), 0);
    test_write_text(keep, "mine\n");
    char base[1200];
    snprintf(base, sizeof base, "--config %s --vocab data/bert-base-uncased-vocab.txt --quiet",
             config);
    struct {
        const char *args;
        int code;
        const char *says;
    } cases[] = {
        {"--out %s/a %s", 2, "--corpus is required"},
        {"--corpus %s/corpus.txt --out %s/b --objective bert", 2,
         "--objective must be mlm, mlm-nsp or span, got 'bert'"},
        {"--corpus %s/corpus.txt --out %s/c --whole-word-mask --objective span", 1,
         "--whole-word-mask goes with --objective mlm or mlm-nsp"},
        {"--corpus %s/corpus.txt --out %s/d --max-len 2", 2,
         "--max-len needs a whole number from 3"},
        {"--corpus %s/corpus.txt --out %s/full", 1, "--force"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char args[2600], cmd[4200], log[4096];
        if (i == 0)
            snprintf(args, sizeof args, cases[i].args, dir, base);
        else
            snprintf(args, sizeof args, cases[i].args, dir, dir);
        snprintf(cmd, sizeof cmd, "%s pretrain %s %s", BERTC_CLI, args, i ? base : "");
        int rc = test_shell(cmd, TEST_STDERR, log, sizeof log);
        const char *nl = strchr(log, '\n');
        cr_expect_eq(rc, cases[i].code, "case %zu: %s exited %d, expected %d:\n%s", i, cmd, rc,
                     cases[i].code, log);
        cr_expect(strstr(log, cases[i].says) && nl && !nl[1] &&
                      strncmp(log, "bertc pretrain: ", 16) == 0,
                  "case %zu: stderr is not one 'bertc pretrain:' line saying \"%s\":\n%s", i,
                  cases[i].says, log);
    }
    char made[500];
    for (const char *c = "abcd"; *c; c++) {
        snprintf(made, sizeof made, "%s/%c", dir, *c);
        cr_expect_neq(access(made, F_OK), 0, "a refused run made %s", made);
    }
    snprintf(made, sizeof made, "%s/model.safetensors", full);
    cr_expect_neq(access(made, F_OK), 0, "a refused run wrote %s", made);
}
