/* cli/pretrain.c — `bertc pretrain`: its flags, then bertc_pretrain
 * (zoo/train/pretrain.h: a plain-text corpus -> a BERT pretrained with
 * masked language modelling, whole-word masking, SpanBERT's span masking
 * and boundary objective, or MLM + next sentence prediction, saved as a
 * Hugging Face model directory), then its result. Everything the run does,
 * and refuses, is the library's; here are the flags as PretrainOptions and
 * the lines the command prints. */
#include "cli/cli.h"
#include "zoo/train/pretrain.h"

#include <math.h>
#include <string.h>

static const CliOption pretrain_options[] = {
    {"--corpus", "FILE", NULL, "plain UTF-8 text: one document a line, or documents separated "
                               "by a blank line; tokenised once into a cache"},
    {"--config", "C.json", NULL, "the model's sizes (needs --vocab); the architecture is the "
                                 "objective's"},
    {"--vocab", "V.txt", NULL, "WordPiece vocabulary for --config (bertc vocab makes one)"},
    {"--model", "DIR", NULL, "go on pretraining this model directory instead"},
    {"--out", "DIR", NULL, "output model directory (created; one holding anything needs "
                           "--force)"},
    {"--objective", "OBJ", "mlm", "mlm (BertForMaskedLM), mlm-nsp (BertForPreTraining: + next "
                                  "sentence prediction) or span (SpanBERT: span masking + the "
                                  "span boundary objective)"},
    {"--whole-word-mask", NULL, NULL, "mask whole words (a token and its ## pieces), not "
                                      "single tokens"},
    {"--mlm-probability", "P", "0.15", "share of the tokens the model predicts"},
    {"--max-len", "N", "128", "tokens a row: the corpus is packed into rows of N, across "
                              "documents"},
    {"--steps", "N", NULL, "optimizer steps (default: one pass over the rows)"},
    {"--batch-size", "N", "32", "rows a micro-batch"},
    {"--grad-accum", "N", "1", "micro-batches summed into one step (a step sees "
                               "batch-size x N rows)"},
    {"--lr", "X", "1e-3", "peak learning rate (AdamW; a small model's: BERT-base used 1e-4)"},
    {"--warmup", "F", "0.06", "share of the steps the learning rate warms up over (linear)"},
    {"--schedule", "S", "linear", "after the warmup: linear or cosine decay to 0, or constant"},
    {"--weight-decay", "X", "0.01", "AdamW's decay (never on biases and LayerNorm)"},
    {"--eval-rows", "N", NULL, "rows held out at the end of the corpus for the perplexity "
                               "[default: 5 %, at most 1000]"},
    {"--eval-every", "N", NULL, "steps between evaluations [default: a tenth of the run]"},
    {"--cache", "PATH", NULL, "the token cache [default: OUT/corpus.tokens]; rebuilt when the "
                              "corpus or the vocabulary changes"},
    {"--seed", "S", "42", "init, masking, shuffling, dropout"},
    {"--force", NULL, NULL, "pretrain into a non-empty --out: the new model is written beside "
                            "it (OUT.bertc-staging) and replaces its model files only at the end"},
    {"--resume", NULL, NULL, "continue the run whose checkpoint is in --out"},
    {"--stop-after", "N", NULL, "stop after N steps as a kill would (to try --resume)"},
    {"--nan-policy", "stop|skip", "stop", "a step with a non-finite loss or gradient: stop, or "
                                          "skip the step"},
    {"--threads", "N", NULL, "worker threads"},
    {"--bf16", NULL, NULL, "mixed precision: the Linear products in bf16 with float32 sums; "
                           "weights, gradients and Adam stay float32 (needs AVX512_BF16, "
                           "AMX-BF16 or Arm BF16; without, says so and trains in float32)"},
    {"--quiet", NULL, NULL, "no progress bar"},
};

const CliCommand cli_cmd_pretrain = {
    .name = "pretrain",
    .summary = "pretrain a BERT on plain text (masked LM, whole words, SpanBERT spans, NSP)",
    .usage = "--corpus FILE (--config C.json --vocab V.txt | --model DIR) --out DIR [options]",
    .description = "Tokenises the corpus once into a cache, packs it into rows of --max-len "
                   "tokens across documents, masks each batch anew, trains with AdamW "
                   "(warmup, then linear or cosine decay), measures the perplexity of the "
                   "held-out rows, and saves a Hugging Face model directory that bertc "
                   "finetune --model, bertc predict (fill-mask) and PyTorch load, with "
                   "OUT/log.jsonl, OUT/loss.svg and a checkpoint (Ctrl-C saves it, --resume "
                   "continues). Under mpirun, make mpi's build/mpi/bertc trains data-parallel: "
                   "each rank a slice of every batch (docs/distributed.md). See "
                   "docs/pretraining.md.",
    .options = pretrain_options,
    .n_options = (int)(sizeof pretrain_options / sizeof pretrain_options[0]),
    .example = "bertc pretrain --corpus corpus.txt --config cfg.json --vocab vocab.txt "
               "--out my-bert --steps 5000",
};

static const char *value(const CliArgs *a, const char *name)
{
    return cli_value(&cli_cmd_pretrain, a, name);
}

static bool given(const CliArgs *a, const char *name)
{
    return cli_given(&cli_cmd_pretrain, a, name);
}

static int count_flag(const CliArgs *a, const char *name, int64_t min, int64_t max, int64_t *out,
                      BertcError *err)
{
    const char *v = value(a, name);
    char shown[BERTC_SHOWN];
    if (v && !bertc_parse_i64(v, min, max, out))
        return bertc_errorf(err, "%s needs a whole number from %lld to %lld, got '%s'", name,
                            (long long)min, (long long)max, bertc_shown(v, shown));
    return 0;
}

static int real_flag(const CliArgs *a, const char *name, double lo, double hi, bool open_lo,
                     double *out, BertcError *err)
{
    const char *v = value(a, name);
    char shown[BERTC_SHOWN];
    if (v && !(bertc_parse_f64(v, out) && (open_lo ? *out > lo : *out >= lo) && *out <= hi))
        return bertc_errorf(err, "%s needs a number %s %g and <= %g, got '%s'", name,
                            open_lo ? ">" : ">=", lo, hi, bertc_shown(v, shown));
    return 0;
}

static int choice(const char *flag, const char *v, const char *const *names, int n, int *out,
                  BertcError *err)
{
    char shown[BERTC_SHOWN];
    for (int i = 0; i < n; i++)
        if (strcmp(v, names[i]) == 0) {
            *out = i;
            return 0;
        }
    return bertc_errorf(err, "%s must be %s, %s%s%s, got '%s'", flag, names[0], names[1],
                        n > 2 ? " or " : "", n > 2 ? names[2] : "", bertc_shown(v, shown));
}

static int parse_args(const CliArgs *a, PretrainOptions *o, BertcError *err)
{
    TrainOptions *t = &o->train;
    o->corpus = value(a, "--corpus");
    o->config_file = value(a, "--config");
    o->vocab = value(a, "--vocab");
    o->model = value(a, "--model");
    o->out = value(a, "--out");
    o->cache = value(a, "--cache");
    o->whole_word_mask = given(a, "--whole-word-mask");
    o->out_mode = given(a, "--force") ? FINETUNE_OUT_SWAP : FINETUNE_OUT_NEW;
    t->resume = given(a, "--resume");
    t->quiet = given(a, "--quiet");
    if (!o->corpus || !o->out)
        return bertc_errorf(err, "%s is required (see bertc pretrain --help)",
                            o->corpus ? "--out" : "--corpus");
    if (!o->model == !o->config_file)
        return bertc_errorf(err, "give either --config C.json with --vocab, or --model DIR");
    if (o->config_file && !o->vocab)
        return bertc_errorf(err, "--config needs --vocab V.txt (the tokenizer's vocabulary)");
    if (o->model && o->vocab)
        return bertc_errorf(err, "--vocab goes with --config; --model DIR has its vocab.txt");
    static const char *const objectives[] = {"mlm", "mlm-nsp", "span"};
    static const char *const schedules[] = {"constant", "linear", "cosine"};
    int objective, schedule;
    if (choice("--objective", value(a, "--objective"), objectives, 3, &objective, err) != 0 ||
        choice("--schedule", value(a, "--schedule"), schedules, 3, &schedule, err) != 0)
        return -1;
    o->objective = (PretrainObjective)objective;
    t->schedule = (ScheduleKind)schedule;   /* the names in ScheduleKind's order */
    const char *seed = value(a, "--seed");
    char shown[BERTC_SHOWN];
    if (!bertc_parse_u64(seed, &t->seed))
        return bertc_errorf(err, "--seed needs a whole number >= 0, got '%s'",
                            bertc_shown(seed, shown));
    if (real_flag(a, "--lr", 0, 1e3, true, &t->lr, err) ||
        real_flag(a, "--warmup", 0, 1, false, &t->warmup, err) ||
        real_flag(a, "--weight-decay", 0, 1e3, false, &t->weight_decay, err) ||
        real_flag(a, "--mlm-probability", 0, 0.999, true, &o->mlm_probability, err) ||
        count_flag(a, "--steps", 1, TRAIN_MAX_STEPS, &t->steps, err) ||
        count_flag(a, "--batch-size", 1, TRAIN_MAX_BATCH, &t->batch_size, err) ||
        count_flag(a, "--grad-accum", 1, TRAIN_MAX_GRAD_ACCUM, &t->grad_accum, err) ||
        count_flag(a, "--max-len", 3, INT32_MAX, &o->max_len, err) ||
        count_flag(a, "--eval-rows", 0, TRAIN_MAX_STEPS, &o->eval_rows, err) ||
        count_flag(a, "--eval-every", 1, TRAIN_MAX_STEPS, &t->eval_every, err) ||
        count_flag(a, "--stop-after", 1, TRAIN_MAX_STEPS, &t->stop_after, err))
        return -1;
    if (!given(a, "--max-len"))
        o->max_len = 0;   /* 128, lowered to the model's positions */
    const char *nan = value(a, "--nan-policy");
    if (strcmp(nan, "stop") != 0 && strcmp(nan, "skip") != 0)
        return bertc_errorf(err, "--nan-policy needs stop or skip, got '%s'",
                            bertc_shown(nan, shown));
    t->nan_policy = strcmp(nan, "skip") == 0 ? TRAIN_NAN_SKIP : TRAIN_NAN_STOP;
    t->bf16 = cli_apply_bf16(&cli_cmd_pretrain, a);
    return cli_apply_threads(&cli_cmd_pretrain, a, err);
}

static void print_note(void *user, const char *msg)
{
    (void)user;
    fprintf(stderr, "bertc pretrain: %s\n", msg);
}

static void report(const PretrainOptions *o, const PretrainResult *r)
{
    const TrainResult *res = &r->train;
    if (!r->kept) {   /* --stop-after */
        cli_report_stop_after(res, res->steps_done, r->dir);
        return;
    }
    printf("pretrained %lld steps in %.0f s (%.0f tokens/s) on %lld rows of %lld tokens "
           "(%lld tokens, %lld documents)\n", (long long)res->steps_done, res->seconds,
           res->tokens_per_second, (long long)r->n_train, (long long)r->max_len,
           (long long)r->n_tokens, (long long)r->n_docs);
    if (!isnan(r->perplexity))
        printf("held-out perplexity %.2f (%lld rows)\n", r->perplexity, (long long)r->n_eval);
    printf("saved %s (config.json, model.safetensors, vocab.txt, tokenizer_config.json, "
           "log.jsonl, loss.svg)\n", o->out);
}

int cmd_pretrain(int argc, char **argv)
{
    CliArgs a;
    PretrainOptions o = bertc_pretrain_defaults();
    BertcError err;
    if (cli_parse(&cli_cmd_pretrain, argc, argv, &a, &err) != 0) {
        fprintf(stderr, "bertc pretrain: %s\n", err.msg);
        return 2;
    }
    if (a.help) {
        cli_print_help(&cli_cmd_pretrain, stdout);
        return 0;
    }
    if (parse_args(&a, &o, &err) != 0) {
        fprintf(stderr, "bertc pretrain: %s\n", err.msg);
        return 2;
    }
    o.note = print_note;
    o.train.collective = cli_collective();   /* mpirun: data-parallel */
    PretrainResult r;
    int rc = bertc_pretrain(&o, &r, &err);
    if (rc != 0) {
        fprintf(stderr, "bertc pretrain: %s\n", err.msg);
        return cli_train_failed(&r.train);
    }
    if (cli_is_rank0())
        report(&o, &r);
    return 0;
}
