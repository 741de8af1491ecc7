/* test/test_cli_messages.c — messages of the commands that read text, each
 * one line naming what caused it (issue #24): a token limit too small for
 * the special tokens names the flag, tokenizer_config.json's
 * model_max_length or config.json's max_position_embeddings that set it,
 * with no truncation warning before it. */
#include "test/test_util.h"

#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char dir[256];

static void setup(void) { test_scratch_make(dir, sizeof dir, "cli_messages"); }
static void teardown(void) { test_scratch_remove(dir); }

TestSuite(cli_messages, .init = setup, .fini = teardown);

#define SEQCLS "test/data/predict_seqcls"

/* `bertc ARGS` (printf-style) from the repository root: its exit code,
 * stdout and stderr in log. */
static int bertc(char *log, size_t cap, const char *fmt, ...)
{
    char args[3000], cmd[3200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "%s %s", BERTC_CLI, args);
    return test_shell(cmd, TEST_STDOUT_AND_STDERR, log, cap);
}

/* The shell command line (printf-style), which must succeed. */
static void sh(const char *fmt, ...)
{
    char cmd[2400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
}

/* The run failed with exactly one line holding every one of want (NULL-ended). */
static void expect_one_line(int rc, const char *log, const char *what, const char *const *want)
{
    const char *nl = strchr(log, '\n');
    cr_expect(rc == 1 || rc == 2, "%s: exit %d: %s", what, rc, log);
    cr_expect(nl && !nl[1], "%s: not one line: %s", what, log);
    for (int i = 0; want[i]; i++)
        cr_expect(strstr(log, want[i]), "%s: no '%s' in: %s", what, want[i], log);
}

/* SEQCLS copied to dir/name, with tokenizer_config.json's model_max_length 1. */
static void tiny_tokenizer_config(char *md, size_t cap, const char *name)
{
    snprintf(md, cap, "%s/%s", dir, name);
    sh("cp -r %s %s", SEQCLS, md);
    sh("printf '{\"do_lower_case\": true, \"model_max_length\": 1}' > %s/tokenizer_config.json",
       md);
}

/* SEQCLS's config and vocab in dir/name, its max_position_embeddings set to
 * positions and its weights made by `bertc init`. */
static void short_model(char *md, size_t cap, const char *name, const char *positions)
{
    snprintf(md, cap, "%s/%s", dir, name);
    sh("mkdir -p %s && cp " SEQCLS "/vocab.txt %s", md, md);
    sh("sed 's/\"max_position_embeddings\": 64/\"max_position_embeddings\": %s/' " SEQCLS
       "/config.json > %s/config.json && %s init --config %s/config.json --output "
       "%s/model.safetensors > /dev/null", positions, md, BERTC_CLI, md, md);
}

/* model_max_length 1 in tokenizer_config.json: predict, embed, encode and
 * export-c printed a truncation warning, then the tokenizer's "max_len 1
 * leaves no room for the 2 special tokens", naming neither the file nor the
 * key. */
Test(cli_messages, model_max_length_too_small_names_tokenizer_config)
{
    char md[300], file[400], log[8192];
    tiny_tokenizer_config(md, sizeof md, "tiny");
    snprintf(file, sizeof file, "%s/tokenizer_config.json", md);
    const char *const want[] = {file, "model_max_length 1", "2 special tokens", NULL};
    expect_one_line(bertc(log, sizeof log, "predict --model %s 'hello world'", md), log,
                    "predict", want);
    expect_one_line(bertc(log, sizeof log, "embed --model %s 'hello world'", md), log, "embed",
                    want);
    expect_one_line(bertc(log, sizeof log, "encode --model %s --output %s/e.st 'hello world'",
                          md, dir), log, "encode", want);
    expect_one_line(bertc(log, sizeof log, "export-c --model %s --out %s/x", md, dir), log,
                    "export-c", want);
    /* --max-len overrides it */
    cr_expect_eq(bertc(log, sizeof log, "predict --model %s --max-len 8 'hello world'", md), 0,
                 "%s", log);
}

/* --max-len 1, or 2 with a TEXT_PAIR (3 special tokens): one line naming
 * --max-len before any text is tokenized (predict and embed said "expected
 * a whole number in [2, 64]" and nothing for a pair; encode and tokenize
 * warned first). */
Test(cli_messages, max_len_flag_too_small_names_the_flag)
{
    char log[8192];
    const char *const single[] = {"--max-len 1", "2 special tokens", NULL};
    const char *const pair[] = {"--max-len 2", "3 special tokens", NULL};
    expect_one_line(bertc(log, sizeof log, "predict --model " SEQCLS " --max-len 1 hello"), log,
                    "predict", single);
    expect_one_line(bertc(log, sizeof log, "embed --model " SEQCLS " --max-len 1 hello"), log,
                    "embed", single);
    expect_one_line(bertc(log, sizeof log, "encode --model " SEQCLS " --max-len 1 --output "
                          "%s/e.st 'hello world'", dir), log, "encode", single);
    expect_one_line(bertc(log, sizeof log, "export-c --model " SEQCLS " --max-len 1 --out %s/x",
                          dir), log, "export-c", single);
    expect_one_line(bertc(log, sizeof log, "tokenize --vocab " SEQCLS "/vocab.txt --max-len 1 "
                          "'hello world'"), log, "tokenize", single);
    expect_one_line(bertc(log, sizeof log, "predict --model " SEQCLS " --max-len 2 --pair hello "
                          "world"),
                    log, "predict pair", pair);
    expect_one_line(bertc(log, sizeof log, "encode --model " SEQCLS " --max-len 2 --output "
                          "%s/e.st hello world", dir), log, "encode pair", pair);
    expect_one_line(bertc(log, sizeof log, "tokenize --vocab " SEQCLS "/vocab.txt --max-len 2 "
                          "hello world"), log, "tokenize pair", pair);
    /* 2 is enough for one text: a truncation warning, not an error */
    cr_expect_eq(bertc(log, sizeof log, "embed --model " SEQCLS " --max-len 2 'hello world'"), 0,
                 "%s", log);
}

/* A model of 1 position (2 with a pair): every command that reads text
 * names the config and its max_position_embeddings in one line; finetune
 * said only "max_len 1 leaves no room". */
Test(cli_messages, too_few_positions_names_the_config, .timeout = 60)
{
    char md[300], config[400], log[8192];
    short_model(md, sizeof md, "one", "1");
    snprintf(config, sizeof config, "%s/config.json", md);
    const char *const want[] = {config, "max_position_embeddings 1", NULL};
    expect_one_line(bertc(log, sizeof log, "predict --model %s hello", md), log, "predict",
                    want);
    expect_one_line(bertc(log, sizeof log, "embed --model %s hello", md), log, "embed", want);
    expect_one_line(bertc(log, sizeof log, "encode --model %s --output %s/e.st hello", md, dir),
                    log, "encode", want);
    expect_one_line(bertc(log, sizeof log, "explain --model %s --out %s/e.html hello", md, dir),
                    log, "explain", want);
    expect_one_line(bertc(log, sizeof log, "export-c --model %s --out %s/x", md, dir), log,
                    "export-c", want);
    char train[400];
    snprintf(train, sizeof train, "%s/train.csv", dir);
    sh("printf 'text,label\\nhello world,a\\ngood day,b\\nbad day,c\\n' > %s", train);
    expect_one_line(bertc(log, sizeof log, "finetune --model %s --train %s --eval %s --out %s/ft "
                          "--steps 1 --quiet", md, train, train, dir), log, "finetune", want);

    short_model(md, sizeof md, "two", "2");
    snprintf(config, sizeof config, "%s/config.json", md);
    const char *const pair[] = {config, "max_position_embeddings 2", "3 special tokens", NULL};
    snprintf(train, sizeof train, "%s/pairs.csv", dir);
    sh("printf 'text,pair,label\\nhello,world,a\\ngood,day,b\\nbad,day,c\\n' > %s", train);
    expect_one_line(bertc(log, sizeof log, "finetune --config %s --vocab %s/vocab.txt --train %s "
                          "--eval %s --text-pair-column pair --out %s/ft2 --steps 1 --quiet",
                          config, md, train, train, dir), log, "finetune pair", pair);
    expect_one_line(bertc(log, sizeof log, "predict --model %s --pair hello world", md),
                    log, "predict pair", pair);
}

/* A vocab.txt longer than the model's vocab_size: a text with a token past
 * it was refused as "the texts: 'input_ids'[0, 2] = 42 is >= vocab_size 32",
 * naming neither the vocabulary nor its size. Now predict (a classifier, and
 * question answering's windows), embed and encode name the vocab.txt, both
 * sizes and the token; a text of tokens below vocab_size still runs. */
Test(cli_messages, vocab_longer_than_vocab_size_names_the_vocab, .timeout = 60)
{
    char md[300], qa[300], vocab[400], log[8192];
    snprintf(md, sizeof md, "%s/long_vocab", dir);
    snprintf(vocab, sizeof vocab, "%s/vocab.txt", md);
    sh("cp -r " SEQCLS " %s && printf 'zz1\\nzz2\\nzebra\\n' >> %s", md, vocab);
    const char *const want[] = {vocab, "35 tokens", "vocab_size 32", "'zebra'", NULL};
    expect_one_line(bertc(log, sizeof log, "predict --model %s 'hello zebra'", md), log,
                    "predict", want);
    expect_one_line(bertc(log, sizeof log, "embed --model %s 'hello zebra'", md), log, "embed",
                    want);
    expect_one_line(bertc(log, sizeof log, "encode --model %s --output %s/e.st 'hello zebra'",
                          md, dir), log, "encode", want);
    cr_expect_eq(bertc(log, sizeof log, "predict --model %s 'hello world'", md), 0, "%s", log);
    char train[400];
    snprintf(train, sizeof train, "%s/train.csv", dir);
    sh("printf 'text,label\\nhello,a\\nworld,b\\nday,c\\n' > %s", train);
    const char *const want_ft[] = {vocab, "35 tokens", "vocab_size is 32", NULL};
    expect_one_line(bertc(log, sizeof log, "finetune --model %s --train %s --eval %s --out "
                          "%s/ft --steps 1 --quiet", md, train, train, dir), log, "finetune",
                    want_ft);

    /* a QA fixture of vocab_size 120 and a vocabulary of 125 */
    snprintf(qa, sizeof qa, "%s/qa", dir);
    snprintf(vocab, sizeof vocab, "%s/vocab.txt", qa);
    sh("mkdir -p %s && cp test/data/zoo/bert_qa/config.json %s && cp "
       "test/data/zoo/bert_qa/weights.safetensors %s/model.safetensors && (printf "
       "'[PAD]\\n[UNK]\\n[CLS]\\n[SEP]\\n[MASK]\\n'; seq 1 119; echo zebra) > %s",
       qa, qa, qa, vocab);
    const char *const want_qa[] = {vocab, "125 tokens", "vocab_size 120", "'zebra'", NULL};
    expect_one_line(bertc(log, sizeof log, "predict --model %s 'what 1' 'zebra 2 3'", qa), log,
                    "predict qa", want_qa);
}

/* SEQCLS with layer_norm_eps 0 (PyTorch and HF accept it) and zero
 * embeddings, so every embedding LayerNorm sees a constant row: 0/0. */
static void constant_rows_model(char *md, size_t cap)
{
    snprintf(md, cap, "%s/eps0", dir);
    Arena *a = bertc_arena_create("eps0", 1 << 20);
    ModelDir *d = bertc_arena_alloc(a, sizeof *d);
    BertcError err;
    cr_assert_eq(bertc_model_dir_open(d, a, SEQCLS, &err), 0, "%s", err.msg);
    const Registry *r = d->model.reg;
    int zeroed = 0;
    for (int i = 0; i < r->n_params; i++) {
        Tensor *t = &r->params[i].var->value;
        if (strstr(r->params[i].name, "embeddings") && !strstr(r->params[i].name, "LayerNorm")) {
            memset(t->data, 0, sizeof(float) * (size_t)t->numel);
            zeroed++;
        }
    }
    cr_assert_eq(zeroed, 3, "word, position and token type embeddings");
    d->model.cfg.layer_norm_eps = 0;
    cr_assert_eq(bertc_model_dir_save(md, &d->model, &d->tok, &err), 0, "%s", err.msg);
    bertc_arena_destroy(a);
}

/* A LayerNorm ε of 0 on a constant row: predict printed "negative -nan",
 * embed a row of -nan, run wrote NaN outputs, explain and attention drew
 * them, all with exit 0. Each now fails in one line naming the output and
 * layer_norm_eps. */
Test(cli_messages, nan_outputs_from_a_zero_layer_norm_eps_are_refused, .timeout = 60)
{
    char md[300], log[8192];
    constant_rows_model(md, sizeof md);
    const char *const want[] = {"is NaN", "layer_norm_eps is 0", NULL};
    expect_one_line(bertc(log, sizeof log, "predict --model %s 'hello world'", md), log,
                    "predict", want);
    expect_one_line(bertc(log, sizeof log, "embed --model %s 'hello world'", md), log, "embed",
                    want);
    expect_one_line(bertc(log, sizeof log, "explain --model %s --out %s/e.html hello", md, dir),
                    log, "explain", want);
    expect_one_line(bertc(log, sizeof log, "attention --model %s --output %s/a.svg hello", md,
                          dir), log, "attention", want);
    cr_assert_eq(bertc(log, sizeof log, "encode --model %s --output %s/in.st hello", md, dir), 0,
                 "%s", log);
    expect_one_line(bertc(log, sizeof log, "run --model %s --inputs %s/in.st --output %s/o.st",
                          md, dir, dir), log, "run", want);
}

/* finetune --bf16 trains in mixed precision where the CPU has a bf16 path
 * and keeps a float32 model; where it has none (forced here with
 * BERTC_BF16_ISA=scalar) it says so in one line and trains in float32. */
Test(cli_messages, bf16_training_runs_or_says_why_not, .timeout = 120)
{
    char train[400], log[8192];
    snprintf(train, sizeof train, "%s/train.csv", dir);
    sh("printf 'text,label\\nhello world,a\\ngood day,b\\nbad day,c\\nnice day,b\\n' > %s", train);
    int rc = bertc(log, sizeof log, "finetune --model " SEQCLS " --train %s --eval %s --out "
                   "%s/ft --steps 2 --quiet --bf16", train, train, dir);
    cr_expect_eq(rc, 0, "%s", log);
    bool has_bf16 = bertc_bgemm_isa() != BGEMM_ISA_SCALAR;
    cr_expect(has_bf16 == !strstr(log, "no bf16 instructions"), "%s", log);
    char st[600];
    snprintf(st, sizeof st, "grep -q '\"dtype\": *\"F32\"' %s/ft/model.safetensors", dir);
    cr_expect_eq(system(st), 0, "the model of a --bf16 run is float32");
    char cmd[2000];
    snprintf(cmd, sizeof cmd, "BERTC_BF16_ISA=scalar %s finetune --model " SEQCLS " --train %s "
             "--eval %s --out %s/ft2 --steps 1 --quiet --bf16", BERTC_CLI, train, train, dir);
    rc = test_shell(cmd, TEST_STDOUT_AND_STDERR, log, sizeof log);
    cr_expect_eq(rc, 0, "%s", log);
    cr_expect(strstr(log, "bertc finetune: --bf16: this CPU has no bf16 instructions") &&
              strstr(log, "training in float32"), "%s", log);
}
