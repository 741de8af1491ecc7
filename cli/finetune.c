/* cli/finetune.c — `bertc finetune`: its flags, then bertc_finetune
 * (zoo/train/finetune.h: labelled texts in a CSV, TSV or JSONL file -> a
 * trained BertForSequenceClassification, BertForTokenClassification,
 * BertForQuestionAnswering or BertForMaskedLM saved as a Hugging Face model
 * directory), then its result in two lines. Everything the run does, and
 * refuses, is the library's; here are the flags as FinetuneOptions, the
 * note and the messages the command prints, and the exit status. */
#include "cli/cli.h"
#include "zoo/train/finetune.h"

#include <math.h>
#include <string.h>

static const CliOption finetune_options[] = {
    {"--model", "DIR", NULL, "pretrained model directory (config.json, model.safetensors, "
                             "vocab.txt); its encoder is loaded, the new head initialised"},
    {"--config", "C.json", NULL, "train from scratch with this config (needs --vocab)"},
    {"--vocab", "V.txt", NULL, "WordPiece vocabulary for --config"},
    {"--train", "FILE", NULL, "training data: .csv, .tsv or .jsonl with a header / keys; "
                              "token-cls also CoNLL columns (.conll, .txt)"},
    {"--eval", "FILE", NULL, "held-out data (default: 10 % of --train, after shuffling)"},
    {"--task", "TASK", "seq-cls", "seq-cls, multi-label (labels 'a|b'), regression, token-cls, "
                                  "qa or mlm (no labels)"},
    {"--out", "DIR", NULL, "output model directory (created; one holding anything needs "
                           "--force, or is the --model; see --force)"},
    {"--text-column", "NAME", "text", "column of the text ('sentence' if there is no 'text'; "
                                      "token-cls: 'tokens', a list of words; qa: 'question')"},
    {"--text-pair-column", "NAME", NULL, "column of the second text of a pair (qa: 'context')"},
    {"--label-column", "NAME", "label", "column of the label (token-cls: 'tags', a list; qa: "
                                        "'answers.text', with answers.answer_start)"},
    {"--steps", "N", NULL, "optimizer steps (default: --epochs over the training rows)"},
    {"--epochs", "N", "3", "passes over the training rows, when --steps is not given"},
    {"--batch-size", "N", "16", "examples a step"},
    {"--lr", "X", NULL, "peak learning rate [default: with --model by its width H, 5e-5 x "
                        "(768 / H)^1.5 up to 1e-3 (5e-5 for BERT-base); 5e-4 from scratch]"},
    {"--max-len", "N", NULL, "tokens an example is truncated to (qa: a window's tokens) "
                             "[default: the --model's model_max_length up to 512; 128 from "
                             "scratch]"},
    {"--doc-stride", "N", NULL, "qa: context tokens two windows of a long context share "
                                "[default: min(128, max-len / 2), capped to fit], as run_qa"},
    {"--stride", "N", NULL, "seq-cls, multi-label, regression: train on a text longer than "
                            "--max-len whole, in windows sharing N tokens (each with the "
                            "row's label); held-out rows by their windows' mean logits"},
    {"--seed", "S", "42", "shuffling, the held-out split, the new head's init, dropout"},
    {"--eval-every", "N", NULL, "steps between evaluations [default: a tenth of the run]"},
    {"--patience", "N", "0", "stop after N evaluations in a row without a better metric "
                             "(0: never; the best model is kept either way)"},
    {"--force", NULL, NULL, "train into a non-empty --out: the new model is written beside it "
                            "(OUT.bertc-staging) and replaces its model files only when the run "
                            "ends with a kept model; Ctrl-C or an error leaves --out as it was"},
    {"--resume", NULL, NULL, "continue the run whose checkpoint is in OUT.bertc-staging, else "
                             "in OUT/checkpoint.safetensors"},
    {"--stop-after", "N", NULL, "stop after N steps as a kill would (to try --resume)"},
    {"--nan-policy", "stop|skip", "stop", "a step with a non-finite loss or gradient: stop the "
                                          "run (the kept model stays), or skip the step"},
    {"--threads", "N", NULL, "worker threads"},
    {"--bf16", NULL, NULL, "mixed precision: the Linear products in bf16 with float32 sums; "
                           "weights, gradients and Adam stay float32 (needs AVX512_BF16, "
                           "AMX-BF16 or Arm BF16; without, says so and trains in float32)"},
    {"--quiet", NULL, NULL, "no progress bar"},
};

const CliCommand cli_cmd_finetune = {
    .name = "finetune",
    .summary = "train a classifier, tagger, QA or masked-LM model on your own CSV, TSV or JSONL",
    .usage = "(--model DIR | --config C.json --vocab V.txt) --train FILE [--eval FILE] "
             "--task seq-cls|multi-label|regression|token-cls|qa|mlm --out DIR [options]",
    .description = "Builds the label set from the training rows, trains with AdamW, "
                   "evaluates (accuracy and macro-F1; micro-F1; Pearson and MSE), keeps the "
                   "best model in OUT as a Hugging Face directory, writes OUT/log.jsonl and "
                   "OUT/loss.svg. token-cls reads JSONL \"tokens\"/\"tags\" lists or CoNLL "
                   "columns (.conll, .txt: word first, tag last) and "
                   "scores entity F1; qa reads SQuAD-style JSONL (question, context, "
                   "answers.text, answers.answer_start) and scores SQuAD F1 and exact match; "
                   "mlm masks 15 % of the tokens of unlabelled text and scores perplexity. "
                   "Under mpirun, make mpi's build/mpi/bertc trains data-parallel "
                   "(docs/distributed.md). See docs/finetune.md.",
    .options = finetune_options,
    .n_options = (int)(sizeof finetune_options / sizeof finetune_options[0]),
    .example = "bertc finetune --config cfg.json --vocab vocab.txt --train reviews.csv "
               "--task seq-cls --out model --epochs 5",
};

static const char *value(const CliArgs *a, const char *name)
{
    return cli_value(&cli_cmd_finetune, a, name);
}

static int count_flag(const CliArgs *a, const char *name, int64_t min, int64_t *out,
                      BertcError *err)
{
    const char *v = value(a, name);
    char shown[BERTC_SHOWN];
    if (v && !bertc_parse_i64(v, min, TRAIN_MAX_STEPS, out))
        return bertc_errorf(err, "%s needs a whole number from %lld to %lld, got '%s'", name,
                            (long long)min, TRAIN_MAX_STEPS, bertc_shown(v, shown));
    return 0;
}

static int parse_task(const char *task, FinetuneKind *kind, BertcError *err)
{
    char shown[BERTC_SHOWN];
    if (strcmp(task, "seq-cls") == 0)
        *kind = FT_SEQ_CLS;
    else if (strcmp(task, "multi-label") == 0)
        *kind = FT_MULTI_LABEL;
    else if (strcmp(task, "regression") == 0)
        *kind = FT_REGRESSION;
    else if (strcmp(task, "token-cls") == 0)
        *kind = FT_TOKEN_CLS;
    else if (strcmp(task, "qa") == 0)
        *kind = FT_QA;
    else if (strcmp(task, "mlm") == 0)
        *kind = FT_MLM;
    else
        return bertc_errorf(err, "--task must be seq-cls, multi-label, regression, token-cls, "
                            "qa or mlm, got '%s'", bertc_shown(task, shown));
    return 0;
}

static bool given(const CliArgs *a, const char *name)
{
    return cli_given(&cli_cmd_finetune, a, name);
}

/* The flags as the library's options (*o from bertc_finetune_defaults): a
 * column flag, --max-len, --lr and --eval-every not given leave the task's
 * default to the library. */
static int parse_args(const CliArgs *a, FinetuneOptions *o, BertcError *err)
{
    TrainOptions *t = &o->train;
    o->model = value(a, "--model");
    o->config_file = value(a, "--config");
    o->vocab = value(a, "--vocab");
    o->train_file = value(a, "--train");
    o->eval_file = value(a, "--eval");
    o->out = value(a, "--out");
    o->text_column = given(a, "--text-column") ? value(a, "--text-column") : NULL;
    o->text_pair_column = value(a, "--text-pair-column");
    o->label_column = given(a, "--label-column") ? value(a, "--label-column") : NULL;
    o->out_mode = given(a, "--force") ? FINETUNE_OUT_SWAP : FINETUNE_OUT_NEW;
    t->resume = given(a, "--resume");
    t->quiet = given(a, "--quiet");
    if (parse_task(value(a, "--task"), &o->task, err) != 0)
        return -1;
    if (!o->train_file || !o->out)
        return bertc_errorf(err, "%s is required (see bertc finetune --help)",
                            o->train_file ? "--out" : "--train");
    if (!o->model == !o->config_file)
        return bertc_errorf(err, "give either --model DIR or --config C.json with --vocab");
    if (o->config_file && !o->vocab)
        return bertc_errorf(err, "--config needs --vocab V.txt (the tokenizer's vocabulary)");
    if (o->model && o->vocab)
        return bertc_errorf(err, "--vocab goes with --config; --model DIR has its vocab.txt");
    if (given(a, "--steps") && given(a, "--epochs"))
        return bertc_errorf(err, "give --steps or --epochs, not both");
    const char *lr = value(a, "--lr"), *seed = value(a, "--seed");
    char shown[BERTC_SHOWN];
    if (lr && !(bertc_parse_f64(lr, &t->lr) && t->lr > 0))
        return bertc_errorf(err, "--lr needs a number > 0, got '%s'", bertc_shown(lr, shown));
    if (!bertc_parse_u64(seed, &t->seed))
        return bertc_errorf(err, "--seed needs a whole number >= 0, got '%s'",
                            bertc_shown(seed, shown));
    if (count_flag(a, "--steps", 1, &t->steps, err) || count_flag(a, "--epochs", 1, &o->epochs, err) ||
        count_flag(a, "--batch-size", 1, &t->batch_size, err) ||
        count_flag(a, "--max-len", 3, &o->max_len, err) ||
        count_flag(a, "--eval-every", 1, &t->eval_every, err) ||
        count_flag(a, "--patience", 0, &o->patience, err) ||
        count_flag(a, "--stop-after", 1, &t->stop_after, err) ||
        count_flag(a, "--doc-stride", 0, &o->doc_stride, err) ||
        count_flag(a, "--stride", 0, &o->stride, err))
        return -1;
    if (!given(a, "--max-len"))
        o->max_len = 0;   /* 128, lowered to the model's positions */
    if (o->doc_stride >= 0 && o->task != FT_QA)
        return bertc_errorf(err, "--doc-stride goes with --task qa");
    if (o->stride >= 0 && o->task != FT_SEQ_CLS && o->task != FT_MULTI_LABEL &&
        o->task != FT_REGRESSION)
        return bertc_errorf(err, "--stride goes with --task seq-cls, multi-label or regression "
                            "(qa: --doc-stride)");
    if (t->batch_size > TRAIN_MAX_BATCH)
        return bertc_errorf(err, "--batch-size must be at most %d", TRAIN_MAX_BATCH);
    const char *nan = value(a, "--nan-policy");
    if (strcmp(nan, "stop") != 0 && strcmp(nan, "skip") != 0)
        return bertc_errorf(err, "--nan-policy needs stop or skip, got '%s'",
                            bertc_shown(nan, shown));
    t->nan_policy = strcmp(nan, "skip") == 0 ? TRAIN_NAN_SKIP : TRAIN_NAN_STOP;
    t->bf16 = cli_apply_bf16(&cli_cmd_finetune, a);
    return cli_apply_threads(&cli_cmd_finetune, a, err);
}

/* "bertc finetune: note: --batch-size 64 is more than ..." */
static void print_note(void *user, const char *msg)
{
    (void)user;
    fprintf(stderr, "bertc finetune: note: %s\n", msg);
}

static void report(const FinetuneOptions *o, const FinetuneResult *r)
{
    const TrainResult *res = &r->train;
    if (res->steps_done < r->steps && !res->stopped_early) {   /* --stop-after */
        cli_report_stop_after(res, r->steps, r->dir);
        return;
    }
    printf("trained %lld steps%s in %.0f s (%.0f tokens/s); %lld train, %lld held-out rows\n",
           (long long)res->steps_done, res->stopped_early ? " (stopped early: plateau)" : "",
           res->seconds, res->tokens_per_second, (long long)r->n_train, (long long)r->n_eval);
    if (r->n_eval > 0)
        printf("best held-out %s %.4f", r->metric_name, r->best_metric);
    if (!isnan(r->baseline))
        printf(" (majority-class baseline %.4f)", r->baseline);
    printf("%ssaved %s (config.json, model.safetensors, vocab.txt, tokenizer_config.json, "
           "log.jsonl, loss.svg)\n", r->n_eval > 0 ? "\n" : "", o->out);
}

int cmd_finetune(int argc, char **argv)
{
    CliArgs a;
    FinetuneOptions o = bertc_finetune_defaults();
    BertcError err;
    if (cli_parse(&cli_cmd_finetune, argc, argv, &a, &err) != 0) {
        fprintf(stderr, "bertc finetune: %s\n", err.msg);
        return 2;
    }
    if (a.help) {
        cli_print_help(&cli_cmd_finetune, stdout);
        return 0;
    }
    if (parse_args(&a, &o, &err) != 0) {
        fprintf(stderr, "bertc finetune: %s\n", err.msg);
        return 2;
    }
    o.note = print_note;
    o.train.collective = cli_collective();   /* mpirun: data-parallel */
    FinetuneResult r;
    int rc = bertc_finetune(&o, &r, &err);
    if (rc != 0)
        fprintf(stderr, "bertc finetune: %s\n", err.msg);
    if (r.out_untouched)
        fprintf(stderr, "bertc finetune: --out %s is as it was (this run kept no model); its "
                "checkpoint and files are in %s, where --resume continues it\n", o.out, r.dir);
    if (rc == 0) {
        if (cli_is_rank0())
            report(&o, &r);
        return 0;
    }
    return cli_train_failed(&r.train);
}
