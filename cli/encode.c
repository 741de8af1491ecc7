/* cli/encode.c — `bertc encode`: text -> the inputs the model's architecture
 * reads, as a safetensors file `bertc run --inputs` takes, so running a model
 * on sentences needs no Python:
 *
 *   bertc encode --model DIR --output in.safetensors 'the cat sat.'
 *   bertc run --model DIR --inputs in.safetensors --output out.safetensors
 *
 * The architecture builds the batch itself (bertc_model_batch_from_text:
 * input_ids/attention_mask/token_type_ids for the BERT heads, BertSum's
 * src/segs/clss, QAConv's query and context, CGBERT's context_ids, ...);
 * integer inputs are written as I64, float ones as F32. A text longer than
 * --max-len tokens is truncated, with one warning line for the run. */
#include "cli/cli.h"

#include <stdio.h>
#include <string.h>

static const CliOption encode_options[] = {
    {"--model", "DIR", NULL, "a model directory (config.json, vocab.txt, "
                             "tokenizer_config.json) instead of --config and --vocab"},
    {"--config", "C.json", NULL, "the model's config.json (its architecture)"},
    {"--vocab", "V.txt", NULL, "the WordPiece vocabulary (with --model: replaces DIR's)"},
    {"--max-len", "N", NULL, "tokens per text at most (default: model_max_length, else "
                             "max_position_embeddings)"},
    {"--context", "N", NULL, "the context id of a CGBERT/QACGBERT model (default: 0)"},
    {"--input", "FILE", NULL, "one text per line; a TAB separates a text and its pair; - reads "
     "standard input"},
    {"--output", "I.safetensors", NULL, "where the inputs go [required]"},
};

const CliCommand cli_cmd_encode = {
    .name = "encode",
    .summary = "turn text into the inputs a model reads (for bertc run)",
    .usage = "(--model DIR | --config C.json --vocab V.txt) [--max-len N] [--context N] "
             "[--input FILE] --output I.safetensors [TEXT [TEXT_PAIR]]",
    .description = "Tokenizes TEXT (and TEXT_PAIR), or every line of --input, into one batch "
                   "of the inputs the model's architecture declares, padded to the longest, "
                   "and writes them (integers as I64) for bertc run --inputs. A text longer "
                   "than --max-len is truncated, with one warning line for the run.",
    .options = encode_options,
    .n_options = sizeof encode_options / sizeof encode_options[0],
    .max_positional = 2,
    .positional = "TEXT [TEXT_PAIR]",
    .example = "bertc encode --model my-model --output in.safetensors 'the cat sat.'",
    .manual = "An empty line of --input is an error naming it. The truncation warning counts "
              "the truncated lines and names the first (FILE:LINE), or TEXT.",
};

/* The texts to encode and where each came from, for the warnings. */
typedef struct Texts {
    TextExample *ex;
    int n;
    const char *file;   /* --input, or NULL: the command line */
} Texts;

/* --input FILE: one example per line, "text" or "text<TAB>pair"
 * (cli_read_lines); an empty line is an error naming it, so that example k
 * is line k + 1. */
static int read_lines(const char *path, Arena *arena, Texts *t, BertcError *err)
{
    CliText *lines;
    int n;
    if (cli_read_lines(path, true, arena, &lines, &n, err) != 0)
        return -1;
    if (n == 0)
        return bertc_errorf(err, "%s: no text in it (one text per line)", path);
    t->ex = bertc_arena_calloc(arena, (size_t)n, sizeof *t->ex);
    t->file = path;
    for (int k = 0; k < n; k++) {
        if (lines[k].text[0] == '\0' && !lines[k].pair)
            return bertc_errorf(err, "%s:%d: an empty line (one text per line)", path, k + 1);
        t->ex[k] = (TextExample){.text = lines[k].text, .text_pair = lines[k].pair,
                                 .context_id = -1};
    }
    t->n = n;
    return 0;
}

/* The texts of argv, or of --input: one of the two. */
static int gather_texts(const CliCommand *c, const CliArgs *a, Arena *arena, Texts *t,
                        BertcError *err)
{
    const char *input = cli_value(c, a, "--input");
    memset(t, 0, sizeof *t);
    if (input && a->n_pos > 0)
        return bertc_errorf(err, "give the texts either as arguments or in --input FILE, not "
                            "both");
    if (input)
        return read_lines(input, arena, t, err);
    if (a->n_pos == 0)
        return bertc_errorf(err, "TEXT or --input FILE is required (see bertc encode --help)");
    t->ex = bertc_arena_calloc(arena, 1, sizeof *t->ex);
    t->ex[0] = (TextExample){.text = a->pos[0], .text_pair = a->n_pos > 1 ? a->pos[1] : NULL,
                             .context_id = -1};
    t->n = 1;
    return 0;
}

/* The special tokens of the texts: 3 when any has a pair, else 2. */
static int specials(const Texts *t)
{
    for (int k = 0; k < t->n; k++)
        if (t->ex[k].text_pair)
            return 3;
    return 2;
}

/* One warning line for the texts longer than max_len tokens ([CLS] text
 * [SEP] (pair [SEP])), which the architecture truncates: how many, the
 * first of them and the longest. */
static int warn_truncated(const Tokenizer *tok, const Texts *t, int32_t max_len, Arena *scratch,
                          BertcError *err)
{
    int truncated = 0, first = -1, first_len = 0, longest = 0;
    for (int k = 0; k < t->n; k++) {
        const TextExample *ex = &t->ex[k];
        Encoding e;
        size_t pair_len = ex->text_pair ? strlen(ex->text_pair) : 0;
        if (bertc_tokenizer_encode(tok, scratch, ex->text, strlen(ex->text), ex->text_pair,
                                   pair_len, 0, false, &e, err) != 0)
            return -1;
        if (e.S > max_len) {
            first = first < 0 ? k : first;
            first_len = first == k ? (int)e.S : first_len;
            longest = (int)e.S > longest ? (int)e.S : longest;
            truncated++;
        }
        bertc_arena_reset(scratch);
    }
    if (truncated && t->file)
        fprintf(stderr, "bertc encode: warning: %d of %d texts are longer than %d tokens and "
                "were truncated to it (the first %s:%d, %d tokens; the longest %d) "
                "(--max-len)\n", truncated, t->n, (int)max_len, t->file, first + 1, first_len,
                longest);
    else if (truncated)
        fprintf(stderr, "bertc encode: warning: TEXT%s: %d tokens, truncated to %d "
                "(--max-len)\n", t->ex[0].text_pair ? " and TEXT_PAIR" : "", first_len,
                (int)max_len);
    return 0;
}

/* --context N for every text: only for a model that reads context_ids
 * (CGBERT, QACGBERT), which otherwise gets 0. */
static int set_context(const CliCommand *c, const CliArgs *a, const Model *m, Texts *t,
                       BertcError *err)
{
    const char *text = cli_value(c, a, "--context");
    bool reads = false;
    for (int i = 0; bertc_model_input(m->arch, i); i++)
        reads |= strcmp(bertc_model_input(m->arch, i)->name, "context_ids") == 0;
    int64_t id = 0;
    char shown[BERTC_SHOWN];
    if (text && !bertc_parse_i64(text, 0, INT32_MAX, &id))
        return bertc_errorf(err, "--context needs a whole number from 0 to %d, got '%s'",
                            INT32_MAX, bertc_shown(text, shown));
    if (text && !reads)
        return bertc_errorf(err, "--context %s: %s takes no context id (it reads no "
                            "context_ids)", bertc_shown(text, shown), m->arch->name);
    for (int k = 0; reads && k < t->n; k++)
        t->ex[k].context_id = (int)id;
    return 0;
}

static int write_batch(const char *path, const Batch *b, BertcError *err)
{
    StEntry entries[BATCH_MAX];
    for (int i = 0; i < b->n; i++) {
        const BatchItem *it = &b->items[i];
        entries[i] = it->is_int ? bertc_st_entry_itensor(it->name, &it->ids)
                                : bertc_st_entry_tensor(it->name, &it->f32);
    }
    return bertc_st_write_file(path, entries, (size_t)b->n, NULL, 0, err);
}

static int encode(const CliCommand *c, const CliArgs *a, const char *output, Arena *arena,
                  BertcError *err)
{
    CliTextModel m;
    Texts t;
    int32_t max_len;
    if (cli_open_text_model(c, a, false, arena, &m, err) != 0 ||
        gather_texts(c, a, arena, &t, err) != 0 ||
        cli_max_len(c, a, &m.max_len, &m.positions, specials(&t), &max_len, err) != 0 ||
        set_context(c, a, m.model, &t, err) != 0)
        return -1;
    Graph *g = bertc_ag_graph_create(1 << 20, 0);
    Batch b;
    bertc_batch_init(&b, t.file ? t.file : "the text");
    int rc = warn_truncated(m.tok, &t, max_len, g->step, err);
    if (rc == 0)
        rc = bertc_model_batch_from_text(m.model, m.tok, t.ex, t.n, max_len, g, &b, err);
    if (rc == 0)
        rc = write_batch(output, &b, err);
    bertc_ag_graph_destroy(g);
    return rc;
}

int cmd_encode(int argc, char **argv)
{
    const CliCommand *c = &cli_cmd_encode;
    CliArgs a;
    int rc = cli_start(c, argc, argv, &a);
    if (rc >= 0)
        return rc;
    const char *output = cli_value(c, &a, "--output");
    if (!output)
        return cli_required(c, "--output");
    BertcError err;
    CliModelFiles f;
    if (cli_model_files(c, &a, &f, &err) != 0) {
        fprintf(stderr, "bertc encode: %s\n", err.msg);
        return 2;
    }
    if (!f.dir && !cli_value(c, &a, "--vocab")) {
        fprintf(stderr, "bertc encode: --vocab is required with --config (see bertc encode "
                "--help)\n");
        return 2;
    }
    static const char *const flags[] = {"--config", "--vocab", "--input"};
    const char *paths[] = {f.config, cli_value(c, &a, "--vocab"), cli_value(c, &a, "--input")};
    if (cli_output_not_an_input("--output", output, 3, flags, paths, &err) != 0)
        return cli_fail(&err);
    Arena *arena = bertc_arena_create("encode", 1 << 20);
    rc = encode(c, &a, output, arena, &err);
    bertc_arena_destroy(arena);
    if (rc != 0)
        return cli_fail(&err);
    printf("wrote %s\n", output);
    return 0;
}
