/* cli/cli.h — the `bertc` command's pieces that live outside its main
 * (cli/bertc.c, the registry of commands): the flag parser and its tables,
 * each command's table and entry (cli/run.c, show.c, encode.c, attention.c),
 * kept apart so the tests and the fuzz targets (test/fuzz/fuzz_cli_flags.c,
 * fuzz_attention.c) run them without exec'ing bertc. Parsers print nothing:
 * an error is one line in err, naming the flag. */
#ifndef BERTC_CLI_H
#define BERTC_CLI_H

#include "zoo/zoo.h"

#include <stdio.h>

/* ---- cli/options.c: one flag parser and help printer for every command ---- */

/* One option of a command: its name, the placeholder of its value (NULL: a
 * switch), its default as --help shows it (and cli_value returns when it
 * is not given), and one line of help. */
typedef struct CliOption {
    const char *name;          /* "--max-len" */
    const char *arg;           /* "N"; NULL for a switch */
    const char *def;           /* "128", or NULL */
    const char *help;
} CliOption;

/* A command as `bertc help` and its parser see it. */
typedef struct CliCommand {
    const char *name;          /* "predict" */
    const char *summary;       /* one line */
    const char *usage;         /* after "bertc predict " */
    const char *description;   /* a paragraph, or NULL */
    const CliOption *options;
    int n_options;
    int max_positional;        /* positional arguments it takes */
    const char *positional;    /* "TEXT [TEXT_PAIR]", for the error message */
    const char *example;       /* one command line */
    /* Paragraphs only the manual page carries (bertc help --man), plain
     * text, a blank line between two; NULL: none. */
    const char *manual;
} CliCommand;

#define CLI_MAX_OPTIONS 48
#define CLI_MAX_POSITIONAL 256

typedef struct CliArgs {
    const char *values[CLI_MAX_OPTIONS];   /* as given, "1" for a switch; NULL: absent */
    const char *pos[CLI_MAX_POSITIONAL];
    int n_pos;
    bool help;                             /* --help or -h */
} CliArgs;

/* argv[0] is the command's name. --flag value, --flag=value, switches, "--"
 * then positionals only. Errors (one line): an unknown option (with the
 * nearest known one), a flag given twice, a missing value, a value given to
 * a switch, too many positionals. */
int cli_parse(const CliCommand *c, int argc, char **argv, CliArgs *a, BertcError *err);
/* The value of option `name`: as given, else its default, else NULL. */
const char *cli_value(const CliCommand *c, const CliArgs *a, const char *name);
bool cli_given(const CliCommand *c, const CliArgs *a, const char *name);
/* `bertc CMD --help`: usage, description, every option with its default,
 * an example. */
void cli_print_help(const CliCommand *c, FILE *out);
/* bertc(1) in troff (cli/man.c), from the n commands' tables: each one's
 * usage, summary, description, manual paragraphs, options with their
 * arguments, help and defaults, and example, between the page's fixed
 * sections. `bertc help --man` prints it; `make man` writes docs/bertc.1. */
void cli_print_man(const CliCommand *const *commands, int n, FILE *out);

/* ---- the commands (cli/bertc.c keeps their registry) -------------------- */

/* Each command: its table (for `bertc help` and its parser) and its entry,
 * which takes argv[0] = the command's name and returns the exit status. */
extern const CliCommand cli_cmd_run, cli_cmd_init, cli_cmd_summary, cli_cmd_tokenize,
    cli_cmd_attention, cli_cmd_show, cli_cmd_encode;
int cmd_run(int argc, char **argv);        /* cli/run.c */
int cmd_init(int argc, char **argv);
int cmd_summary(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_show(int argc, char **argv);       /* cli/show.c */
int cmd_encode(int argc, char **argv);     /* cli/encode.c */

/* The start of every command: parse argv with c. Returns -1 to go on;
 * otherwise the exit status to return at once: 0 after --help (printed to
 * stdout), 2 after a parse error (one line on stderr, "bertc CMD: ..."). */
int cli_start(const CliCommand *c, int argc, char **argv, CliArgs *a);
/* An option the command needs and was not given: "bertc CMD: --flag is
 * required" on stderr; returns 2. */
int cli_required(const CliCommand *c, const char *flag);
/* A library error: "bertc: MSG" on stderr; returns 1. */
int cli_fail(const BertcError *err);

/* ---- cli/flags.c: values of the shared flags ----------------------------- */

/* s[0..len) as a JSON string, quoted and escaped (bertc_json_quote), to f:
 * every string of the JSON the CLI prints or writes goes through here. */
void cli_json_string(FILE *f, const char *s, size_t len);
/* --threads N: 1..THREADS_MAX. */
int cli_parse_threads(const char *value, int *n, BertcError *err);
/* The command's --threads N, when given, as the thread count. */
int cli_apply_threads(const CliCommand *c, const CliArgs *a, BertcError *err);
/* --bf16 (mixed-precision training): true when given and the CPU has a bf16
 * path; given on a CPU without one, says so in one line on stderr ("...;
 * training in float32") and returns false. */
bool cli_apply_bf16(const CliCommand *c, const CliArgs *a);
/* What a run cut short by --stop-after did: its steps, and the checkpoint
 * it leaves in dir (its step, or that none was written yet, so --resume
 * would start afresh) - cli/flags.c. steps: the run's planned steps (0:
 * unknown). */
struct TrainResult;
void cli_report_stop_after(const struct TrainResult *res, int64_t steps, const char *dir);
/* The exit status of a training command that failed: 128 + the signal that
 * stopped it (this process's, or another rank's), else 1. */
int cli_train_failed(const struct TrainResult *res);

/* ---- cli/mpi.c: data-parallel training (make mpi, docs/distributed.md) ---- */

/* MPI_Init when this is the MPI build started by mpirun on 2+ ranks; else
 * nothing. main calls it first and returns cli_mpi_finish(its status),
 * which ends the whole job at once (MPI_Abort) when this rank failed alone
 * (status 1), else MPI_Finalize. */
void cli_mpi_start(int *argc, char ***argv);
int cli_mpi_finish(int status);
/* finetune's and pretrain's TrainOptions.collective: this process's rank,
 * or NULL (one process). */
struct TrainCollective;
const struct TrainCollective *cli_collective(void);
/* True unless this is a data-parallel rank > 0 (which prints no report). */
bool cli_is_rank0(void);

/* tokenize --max-len N: 1..CLI_MAX_LEN tokens. */
#define CLI_MAX_LEN (1L << 20)
int cli_parse_max_len(const char *value, int32_t *n, BertcError *err);

/* The limit of a command with --max-len: --max-len N (1 .. positions.n),
 * else dflt; then bertc_max_len_room. */
int cli_max_len(const CliCommand *c, const CliArgs *a, const MaxLen *dflt,
                const MaxLen *positions, int specials, int32_t *out, BertcError *err);

/* The model files of a command that takes --model DIR as the alternative to
 * --config (and --weights, when the command has it): with --model,
 * DIR/config.json and DIR/model.safetensors. --model with --config or
 * --weights is an error naming both; neither --model nor --config, one
 * naming both. */
typedef struct CliModelFiles {
    const char *dir;                  /* --model, or NULL */
    const char *config, *weights;     /* weights NULL: not given */
    char config_buf[BERTC_PATH_MAX], weights_buf[BERTC_PATH_MAX];
} CliModelFiles;

int cli_model_files(const CliCommand *c, const CliArgs *a, CliModelFiles *f, BertcError *err);

/* A model and its tokenizer, for a command that reads text (attention,
 * encode), in arena: --model DIR (bertc_model_dir_open: its vocab.txt and
 * tokenizer_config.json; --vocab, if given, replaces the vocabulary) or
 * --config C.json [--weights W.safetensors] --vocab V.txt. need_weights:
 * the weights are required (without them the model keeps its init). */
typedef struct CliTextModel {
    Model *model;
    Tokenizer *tok;
    MaxLen max_len;                   /* model_max_length, else max_position_embeddings */
    MaxLen positions;                 /* max_position_embeddings and its config.json */
} CliTextModel;

int cli_open_text_model(const CliCommand *c, const CliArgs *a, bool need_weights, Arena *arena,
                        CliTextModel *t, BertcError *err);

/* An output path that names the same file as one of the command's inputs
 * (`flags[i]` given as `paths[i]`, NULL when not given; a link or another
 * spelling of the path counts) is an error naming both flags: the command
 * would replace the file it reads (its weights, its config) with its output. */
int cli_output_not_an_input(const char *output_flag, const char *output, int n,
                            const char *const *flags, const char *const *paths, BertcError *err);

/* ---- cli/quantize.c: bertc quantize (docs/quantization.md) -------------- */

extern const CliCommand cli_cmd_quantize;
int cmd_quantize(int argc, char **argv);
extern const CliCommand cli_cmd_export_c;
int cmd_export_c(int argc, char **argv);

/* ---- cli/vocab.c: bertc vocab (docs/tokenizer.md) ---------------------- */

extern const CliCommand cli_cmd_vocab;
int cmd_vocab(int argc, char **argv);

/* ---- cli/finetune.c: bertc finetune (docs/finetune.md) ------------------ */

extern const CliCommand cli_cmd_finetune;
/* bertc finetune ...: argv[0] is "finetune". Returns the exit status. */
int cmd_finetune(int argc, char **argv);

/* ---- cli/evaluate.c: bertc evaluate (docs/finetune.md) ------------------ */

extern const CliCommand cli_cmd_evaluate;
/* bertc evaluate ...: argv[0] is "evaluate". Returns the exit status. */
int cmd_evaluate(int argc, char **argv);

/* ---- cli/pretrain.c: bertc pretrain (docs/pretraining.md) ---------------- */

extern const CliCommand cli_cmd_pretrain;
/* bertc pretrain ...: argv[0] is "pretrain". Returns the exit status. */
int cmd_pretrain(int argc, char **argv);

/* ---- cli/attention.c: bertc attention ----------------------------------- */

typedef struct AttentionArgs {
    const char *model;    /* --model DIR, or NULL */
    const char *config, *weights, *vocab, *output, *map;
    bool help;            /* --help: nothing else is checked */
    const char *text_a, *text_b;
    int layer;            /* -1: the last */
    int context;          /* CGBERT/QACGBERT context id; -1: not given (0) */
} AttentionArgs;

/* argv[0] is "attention"; parsed with cli_cmd_attention (cli_parse). --layer
 * and --context are whole numbers (checked against the model in
 * attention_draw); --model DIR or --config, --weights and --vocab; TEXT. */
int attention_parse(int argc, char **argv, AttentionArgs *a, BertcError *err);
/* Runs model m on the sentence(s) of `a`, tokenized by tok, and draws layer
 * a->layer's map a->map, every head, into a->output. The map must be
 * (1, nh, S, S) for the S tokens: anything else is refused, naming the map
 * and its shape. */
int attention_draw(const AttentionArgs *a, Model *m, const Tokenizer *tok, Arena *arena,
                   BertcError *err);
/* bertc attention ...: argv[0] is "attention". Returns the exit status. */
int cmd_attention(int argc, char **argv);

/* ---- cli/text_model.c: what predict and embed share ------------------------ */

/* A model with its tokenizer, from --model DIR (bertc_model_dir_open) or
 * --config, --weights and --vocab; `name` (the directory or the config)
 * is named in messages. */
typedef struct CliModel {
    Model *model;
    Tokenizer *tok;
    MaxLen max_len;                   /* the directory's model_max_length, else positions */
    MaxLen positions;                 /* max_position_embeddings and its config.json */
    const char *name;                 /* --model DIR, else --config */
} CliModel;

int cli_model_open(const CliCommand *c, const CliArgs *a, Arena *arena, CliModel *cm,
                   BertcError *err);
/* Inference only (predict, embed): the model's Linear weights packed once,
 * in place, in the order the GEMM's micro-kernel reads them
 * (bertc_registry_prepack), instead of on every call: a tenth to a fifth of
 * a forward at batch 1. The weights hold no plain values afterwards. */
void cli_model_prepack(CliModel *cm);
/* A flag's whole number in [lo, hi], else an error naming the flag. */
int cli_parse_int(const char *flag, const char *value, long lo, long hi, int *out,
                  BertcError *err);

/* bertc_model_forward, then bertc_outputs_check_finite: what a command
 * prints or writes never holds a NaN that a degenerate model made. */
int cli_forward(Model *m, Graph *g, const Batch *b, Outputs *out, BertcError *err);

/* ---- cli/text_input.c: the texts of predict and embed --------------------- */

/* One input: a text, its pair (NULL: none) and its line in --input (a
 * table's record: the line it starts on; 0: from the command line). */
typedef struct CliText {
    const char *text, *pair;
    int line;
} CliText;

/* Every line of the text file at path ("\n" or "\r\n" ends one; a last line
 * without it counts), numbered from 1; with split_tab, the first TAB of a
 * line separates its text and pair, else a TAB is text. What reads --input
 * for predict, embed and encode. A UTF-8 byte order mark at the start is
 * dropped, and so are NUL bytes (as the tokenizer's clean_text would: the
 * rest of the line is kept); a line that is not valid UTF-8 is an error
 * naming it. */
int cli_read_lines(const char *path, bool split_tab, Arena *arena, CliText **lines, int *n,
                   BertcError *err);
/* What a command's inner function returns for a flag's bad value, so that
 * the command exits 2 for it, as for a bad flag (1: the work failed). */
#define USAGE_ERROR 2

/* "-" or /dev/stdin: cli_read_lines reads standard input (a pipe). */
bool cli_is_stdin(const char *path);

/* How a command reads its inputs. */
typedef struct CliInputs {
    bool pairs;                   /* --pair, or question answering: positionals two by two
                                     (TEXT TEXT_PAIR), a plain-text line's first TAB between */
    bool qa;                      /* a table's columns "question" and "context" first */
    const char *format;           /* --input-format text|tsv|csv|jsonl; NULL: by the name
                                     (.tsv, .csv, .jsonl/.json: a table; else plain text) */
    const char *text_column;      /* a table's; NULL: text, sentence, sentence1, question */
    const char *pair_column;      /* NULL: text_pair, sentence2 or context when there is one */
} CliInputs;

/* The help of --input-format, --text-column and --text-pair-column. */
extern const char cli_help_input_format[];
extern const char cli_help_text_column[];
extern const char cli_help_text_pair_column[];

/* The inputs: the positionals or every line (record) of --input, blank ones
 * included. A positional that is not valid UTF-8 is an error naming it, as
 * a line is; so are inputs that are all blank. Returns 0, -1, or
 * USAGE_ERROR for flags and arguments that do not fit (no text, an odd
 * number of them with pairs, --input and texts). */
int cli_texts(const CliCommand *c, const CliArgs *a, const CliInputs *in, Arena *arena,
              CliText **texts, int *n, BertcError *err);
/* Nothing but white space in the text and the pair: the input's result is
 * blank (an empty TSV line, a JSON object without results). */
bool cli_text_blank(const CliText *t);
/* The input's number in messages and JSONL: its line, else index + 1. */
int cli_text_number(const CliText *t, int index);
/* cli_max_len for cm's limits: specials 3 when any of the n texts has a pair. */
int cli_model_max_len(const CliCommand *c, const CliArgs *a, const CliModel *cm,
                      const CliText *texts, int n, int32_t *max_len, BertcError *err);

/* ---- cli/text_batches.c: the sequences of the inputs, batched by length ---- */

/* One sequence the model reads: input `input`'s tokens (window 0), or
 * window `window` of a long one. */
typedef struct CliSeq {
    int input;                    /* its index among the inputs of the call */
    int window;
    Encoding enc;
} CliSeq;

typedef struct CliSeqPlan {
    int32_t max_len;              /* tokens a sequence, special ones included */
    int stride;                   /* -1: a longer input is truncated; else read in windows
                                     sharing stride tokens */
    int batch_size;               /* sequences a forward */
    int context;                  /* CGBERT/QACGBERT's context id of every input; -1 */
} CliSeqPlan;

/* What the runs of a command did, for its warning and --stats line. */
typedef struct CliRunStats {
    int64_t inputs, truncated, windowed;   /* inputs run (not blank), cut, in windows */
    int32_t longest;                       /* tokens of the longest input, untruncated */
    int64_t cut;                           /* tokens truncation dropped */
    int64_t sequences, tokens, tokens_padded;   /* run; their tokens; with the padding */
    double seconds;
} CliRunStats;

/* What a row of a batch gives: sequence s is row `row` of batch b, whose
 * outputs are out; g's step arena lives until the batch ends. */
typedef int (*CliSeqRow)(void *ctx, const CliSeq *s, const Batch *b, const Outputs *out,
                         int row, Graph *g, BertcError *err);

/* --aggregate mean|max|first (its default when not given) into rule; an
 * error naming the flag for another value, or for --aggregate without
 * --stride (a text is one window then: nothing to aggregate). */
int cli_aggregate(const CliCommand *c, const CliArgs *a, WindowAggregate *rule,
                  BertcError *err);

/* Inputs t[0, n) (numbered from first + 1 in messages) through cm's model:
 * each non-blank one tokenized once and truncated or windowed by p, the
 * sequences sorted by length and run p->batch_size at a time, fn called
 * for every row. Adds to *st. */
int cli_run_texts(const CliModel *cm, const CliSeqPlan *p, const CliText *t, int first, int n,
                  CliSeqRow fn, void *ctx, CliRunStats *st, BertcError *err);
/* One line for the whole run when inputs were truncated:
 * "bertc predict: warning: 649 of 894 inputs are longer than 64 tokens and
 * were truncated to it (the longest is 1203; 51234 tokens unread); --stride
 * N reads a long text whole, in windows". */
void cli_warn_truncation(const char *command, const CliRunStats *st, int32_t max_len,
                         bool can_stride);
/* --stats: inputs, sequences, tokens, padding, seconds and tokens/s. */
void cli_print_stats(const char *command, const CliRunStats *st);

/* ---- cli/predict.c, cli/embed.c ------------------------------------------ */

extern const CliCommand cli_cmd_predict, cli_cmd_embed;
/* bertc predict|embed ...: argv[0] is the command. Returns the exit status. */
int cmd_predict(int argc, char **argv);
int cmd_embed(int argc, char **argv);

#endif
