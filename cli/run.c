/* cli/run.c — the commands on a model's files: `bertc run` (inputs ->
 * outputs), `init` (fresh weights), `summary` (the parameter table) and
 * `tokenize` (a text's WordPiece ids). Each has its table (cli/cli.h,
 * CliCommand) next to its code: what --help prints is what it parses. */
#include "cli/cli.h"

#include <stdio.h>
#include <string.h>

/* ---- bertc run ---------------------------------------------------------- */

static const CliOption run_options[] = {
    {"--model", "DIR", NULL, "a model directory: DIR/config.json and DIR/model.safetensors "
                             "(instead of --config and --weights)"},
    {"--config", "C.json", NULL, "the model's config.json"},
    {"--weights", "W.safetensors", NULL, "its weights (Hugging Face or bertc names)"},
    {"--inputs", "I.safetensors", NULL, "the inputs the architecture reads (bertc encode "
                                        "writes them from text) [required]"},
    {"--output", "O.safetensors", NULL, "where every output goes [required]"},
    {"--grad", NULL, NULL, "also the loss's gradient of every parameter, as grad.<name>"},
    {"--threads", "N", NULL, "worker threads, 1..64 (default: BERTC_THREADS, else the cores)"},
    {"--stats", NULL, NULL, "print memory high-water marks and the SIMD path to stderr"},
};

const CliCommand cli_cmd_run = {
    .name = "run",
    .summary = "run a model on its inputs and write every output",
    .usage = "(--model DIR | --config C.json --weights W.safetensors) --inputs I.safetensors "
             "--output O.safetensors [--grad] [--threads N] [--stats]",
    .description = "Reads the inputs the architecture declares (input_ids, attention_mask, ...; "
                   "see bertc encode) and writes every output it computes (logits, "
                   "hidden_states.{i}, layers.{l}.attention_probs, loss when labels are "
                   "given), in eval mode. bertc show prints the result.",
    .options = run_options,
    .n_options = sizeof run_options / sizeof run_options[0],
    .example = "bertc run --model my-model --inputs in.safetensors --output out.safetensors",
    .manual = "An input the model does not read is an error listing the ones it reads. Float "
              "outputs are written as F32, integer ones as I64.",
};

int cmd_run(int argc, char **argv)
{
    const CliCommand *c = &cli_cmd_run;
    CliArgs a;
    int rc = cli_start(c, argc, argv, &a);
    if (rc >= 0)
        return rc;
    CliModelFiles f;
    BertcError err;
    if (cli_model_files(c, &a, &f, &err) != 0) {
        fprintf(stderr, "bertc run: %s\n", err.msg);
        return 2;
    }
    if (!f.weights)
        return cli_required(c, "--weights");
    const char *inputs = cli_value(c, &a, "--inputs"), *output = cli_value(c, &a, "--output");
    if (!inputs)
        return cli_required(c, "--inputs");
    if (!output)
        return cli_required(c, "--output");
    if (cli_apply_threads(c, &a, &err) != 0) {
        fprintf(stderr, "bertc: %s\n", err.msg);
        return 2;
    }
    const char *const flags[] = {f.dir ? "--model" : "--config", f.dir ? "--model" : "--weights",
                                 "--inputs"};
    const char *paths[] = {f.config, f.weights, inputs};
    RunArgs args = {f.config, f.weights, inputs, output, cli_given(c, &a, "--grad"),
                    cli_given(c, &a, "--stats")};
    if (cli_output_not_an_input("--output", output, 3, flags, paths, &err) != 0)
        return cli_fail(&err);
    return bertc_zoo_run(&args, &err) == 0 ? 0 : cli_fail(&err);
}

/* ---- bertc init --------------------------------------------------------- */

static const CliOption init_options[] = {
    {"--config", "C.json", NULL, "the model's config.json [required]"},
    {"--output", "W.safetensors", NULL, "where the weights go [required]"},
    {"--seed", "S", "0", "the random stream, a whole number 0..2^64-1"},
};

const CliCommand cli_cmd_init = {
    .name = "init",
    .summary = "write freshly initialised weights for a config",
    .usage = "--config C.json --output W.safetensors [--seed S]",
    .description = "Builds the architecture the config names and writes its weights, drawn "
                   "as the original does (normal with initializer_range, zero biases, unit "
                   "LayerNorm).",
    .options = init_options,
    .n_options = sizeof init_options / sizeof init_options[0],
    .example = "bertc init --config examples/configs/bert-base-uncased.json --output "
               "w.safetensors --seed 42",
};

int cmd_init(int argc, char **argv)
{
    const CliCommand *c = &cli_cmd_init;
    CliArgs a;
    int rc = cli_start(c, argc, argv, &a);
    if (rc >= 0)
        return rc;
    const char *config = cli_value(c, &a, "--config"), *output = cli_value(c, &a, "--output");
    const char *seed_text = cli_value(c, &a, "--seed");
    if (!config)
        return cli_required(c, "--config");
    if (!output)
        return cli_required(c, "--output");
    uint64_t seed = 0;
    char shown[BERTC_SHOWN];
    if (!bertc_parse_u64(seed_text, &seed)) {
        fprintf(stderr, "bertc init: --seed needs a whole number from 0 to %llu, got '%s'\n",
                (unsigned long long)UINT64_MAX, bertc_shown(seed_text, shown));
        return 2;
    }
    BertConfig cfg;
    BertcError err;
    static const char *const flags[] = {"--config"};
    if (cli_output_not_an_input("--output", output, 1, flags, &config, &err) != 0 ||
        bertc_bert_config_read(config, &cfg, &err) != 0)
        return cli_fail(&err);
    Arena *arena = bertc_arena_create("params", 1 << 20);
    Model m;
    rc = bertc_model_build(&m, arena, &cfg, &err);
    bertc_bert_config_free(&cfg);
    if (rc != 0)
        bertc_model_config_error(&err, config);
    if (rc == 0) {
        Rng rng = bertc_rng_seed(seed);
        bertc_registry_init_weights(m.reg, &rng, cfg.initializer_range);
        rc = bertc_registry_save_file(m.reg, output, &err);
    }
    bertc_arena_destroy(arena);
    return rc == 0 ? 0 : cli_fail(&err);
}

/* ---- bertc summary ------------------------------------------------------ */

static const CliOption summary_options[] = {
    {"--model", "DIR", NULL, "a model directory: its config.json (instead of --config)"},
    {"--config", "C.json", NULL, "the model's config.json"},
};

const CliCommand cli_cmd_summary = {
    .name = "summary",
    .summary = "print a model's parameters, their shapes and the total",
    .usage = "(--model DIR | --config C.json)",
    .description = "Builds the architecture the config names (no weights are read) and "
                   "prints one line per parameter and the total count.",
    .options = summary_options,
    .n_options = sizeof summary_options / sizeof summary_options[0],
    .example = "bertc summary --config examples/configs/bert-base-uncased.json",
    .manual = "bert-base-uncased has 109,514,298 parameters.",
};

/* A quantised model (docs/quantization.md): how many of its weights are
 * int8, counted in its weights file's header when there is one. */
static int print_int8(const CliModelFiles *f, BertcError *err)
{
    static const char word[] = "word_embeddings.weight";
    int n = -1, n_tables = 0;
    SafeTensors *st = NULL;
    if (f->weights) {
        if (bertc_st_open_file(NULL, f->weights, &st, err) != 0)
            return -1;
        n = 0;
        for (size_t i = 0; i < st->n_tensors; i++) {
            size_t len = strlen(st->tensors[i].name);
            bool table = len >= sizeof word - 1 &&
                         strcmp(st->tensors[i].name + len - (sizeof word - 1), word) == 0;
            n += st->tensors[i].dtype == ST_I8 && !table;
            n_tables += st->tensors[i].dtype == ST_I8 && table;
        }
        bertc_st_close(st);
    }
    if (n >= 0)
        printf("Quantised: int8 (" CONFIG_QUANT_METHOD "): %d Linear weights int8 with one "
               "scale per output channel%s, activations int8 per row; the rest float32\n", n,
               n_tables ? ", the word embeddings int8 with one scale per token" : "");
    else
        printf("Quantised: int8 (" CONFIG_QUANT_METHOD "): Linear weights int8 with one scale "
               "per output channel, activations int8 per row; the rest float32\n");
    return 0;
}

/* A bf16 model's line: how many Linear weights its file stores as BF16. */
static int print_bf16(const CliModelFiles *f, BertcError *err)
{
    SafeTensors *st = NULL;
    int n = 0;
    if (f->weights && bertc_st_open_file(NULL, f->weights, &st, err) != 0)
        return -1;
    for (size_t i = 0; st && i < st->n_tensors; i++)
        n += st->tensors[i].dtype == ST_BF16;
    if (st)
        bertc_st_close(st);
    printf("Quantised: bf16 (" CONFIG_QUANT_METHOD_BF16 "): %d Linear weights bf16, run by the "
           "bf16 GEMM (%s path) with float32 sums; the rest float32\n", n,
           bertc_bgemm_isa_name(bertc_bgemm_isa()));
    return 0;
}

int cmd_summary(int argc, char **argv)
{
    const CliCommand *c = &cli_cmd_summary;
    CliArgs a;
    int rc = cli_start(c, argc, argv, &a);
    if (rc >= 0)
        return rc;
    CliModelFiles f;
    BertcError err;
    if (cli_model_files(c, &a, &f, &err) != 0) {
        fprintf(stderr, "bertc summary: %s\n", err.msg);
        return 2;
    }
    BertConfig cfg;
    if (bertc_bert_config_read(f.config, &cfg, &err) != 0)
        return cli_fail(&err);
    Arena *arena = bertc_arena_create("params", 1 << 20);
    Model m;
    rc = bertc_model_build(&m, arena, &cfg, &err);
    bertc_bert_config_free(&cfg);
    if (rc != 0)
        bertc_model_config_error(&err, f.config);
    if (rc == 0)
        bertc_registry_print(m.reg, stdout);
    if (rc == 0 && cfg.int8_dynamic)
        rc = print_int8(&f, &err);
    if (rc == 0 && cfg.bf16)
        rc = print_bf16(&f, &err);
    bertc_arena_destroy(arena);
    return rc == 0 ? 0 : cli_fail(&err);
}

/* ---- bertc tokenize ----------------------------------------------------- */

static const CliOption tokenize_options[] = {
    {"--vocab", "V.txt", NULL, "the WordPiece vocabulary, one token a line [required]"},
    {"--max-len", "N", NULL, "truncate (longest first) and pad to N tokens (default: no limit)"},
    {"--cased", NULL, NULL, "keep case and accents (do_lower_case=False, for cased vocabs)"},
};

const CliCommand cli_cmd_tokenize = {
    .name = "tokenize",
    .summary = "print the WordPiece tokens of a text (and a text pair)",
    .usage = "--vocab V.txt [--max-len N] [--cased] TEXT [TEXT_PAIR]",
    .description = "One line per token: index, id, token, token type, attention mask and its "
                   "span [start, end) in code points of the text it came from ((0, 0) for "
                   "[CLS], [SEP] and [PAD]), as Hugging Face's BertTokenizerFast.",
    .options = tokenize_options,
    .n_options = sizeof tokenize_options / sizeof tokenize_options[0],
    .max_positional = 2,
    .positional = "TEXT [TEXT_PAIR]",
    .example = "bertc tokenize --vocab data/bert-base-uncased-vocab.txt 'Hello, world!'",
};

/* One line per token: index, id, token, type, mask, and its span of the
 * text it came from in code points [start, end) ((0, 0) for specials). */
static void print_encoding(const Tokenizer *t, const Encoding *e)
{
    printf("index     id  %-16s type mask  start   end\n", "token");
    for (int32_t i = 0; i < e->S; i++)
        printf("%5d %6d  %-16s %4d %4d  %5d %5d\n", i, e->input_ids[i],
               bertc_tokenizer_token(t, e->input_ids[i]), e->token_type_ids[i],
               e->attention_mask[i], e->start[i], e->end[i]);
}

int cmd_tokenize(int argc, char **argv)
{
    const CliCommand *c = &cli_cmd_tokenize;
    CliArgs a;
    int rc = cli_start(c, argc, argv, &a);
    if (rc >= 0)
        return rc;
    const char *vocab = cli_value(c, &a, "--vocab"), *max_text = cli_value(c, &a, "--max-len");
    if (!vocab)
        return cli_required(c, "--vocab");
    if (a.n_pos == 0) {
        fprintf(stderr, "bertc tokenize: TEXT is required\n");
        return 2;
    }
    int32_t max_len = 0;
    BertcError err;
    if (max_text && (cli_parse_max_len(max_text, &max_len, &err) != 0 ||
                     bertc_max_len_room(&(MaxLen){.n = max_len, .key = "--max-len"},
                                      a.n_pos > 1 ? 3 : 2, &err) != 0)) {
        fprintf(stderr, "bertc tokenize: %s\n", err.msg);
        return 2;
    }
    const char *ta = a.pos[0], *tb = a.n_pos > 1 ? a.pos[1] : NULL;
    Arena *arena = bertc_arena_create("tokenize", 1 << 20);
    Tokenizer t;
    Encoding e;
    rc = bertc_tokenizer_load(&t, arena, vocab, &err);
    t.do_lower_case = !cli_given(c, &a, "--cased");
    if (rc == 0)
        rc = bertc_tokenizer_encode(&t, arena, ta, strlen(ta), tb, tb ? strlen(tb) : 0, max_len,
                                    max_len > 0, &e, &err);
    if (rc == 0)
        print_encoding(&t, &e);
    bertc_arena_destroy(arena);
    return rc == 0 ? 0 : cli_fail(&err);
}
