/* cli/explain.c — `bertc explain`: one self-contained HTML page that walks a
 * model's forward on one text (cli/explain_page.c), step by step as the
 * architecture's descriptor lists them (ModelArch.explain, written next to
 * the code each step names).
 *
 *   bertc explain (--model DIR | --config C.json --weights W.safetensors
 *                 --vocab V.txt) [--context N] [--max-len N] --out PAGE.html TEXT
 *                 [TEXT_PAIR]
 *
 * The model's inputs are built from the text by the architecture
 * (bertc_model_batch_from_text), as `bertc attention` builds them. A model
 * that reads an input "mask_labels" (SpanBERT) gets 1 at every [MASK] the
 * text holds, so a learner masks a span by writing [MASK] [MASK]. */
#include "cli/explain.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const CliOption explain_options[] = {
    {"--model", "DIR", NULL, "a model directory (config.json, model.safetensors, vocab.txt, "
                             "tokenizer_config.json) instead of --config, --weights, --vocab"},
    {"--config", "C.json", NULL, "the model's config.json"},
    {"--weights", "W.safetensors", NULL, "its weights"},
    {"--vocab", "V.txt", NULL, "the WordPiece vocabulary (with --model: replaces DIR's)"},
    {"--context", "N", NULL, "the context id of a CGBERT/QACGBERT model (default: 0)"},
    {"--max-len", "N", NULL, "tokens read (default: 128, or max_position_embeddings when "
     "fewer); a longer text is cut with a warning and the page shows the part read"},
    {"--out", "PAGE.html", NULL, "the page to write (required)"},
};

const CliCommand cli_cmd_explain = {
    .name = "explain",
    .summary = "write an HTML page that walks a model's forward on a text, step by step",
    .usage = "(--model DIR | --config C.json --weights W.safetensors --vocab V.txt) "
             "[--context N] [--max-len N] --out PAGE.html TEXT [TEXT_PAIR]",
    .description = "Runs the model on TEXT (and TEXT_PAIR) and writes one self-contained "
                   "HTML file: the tokens and ids, each step's equation, the bertc function "
                   "that computes it, its output's shape and statistics, every layer's "
                   "attention and the variant's own mechanism drawn with colour scales, then "
                   "the prediction. Write [MASK] in the text to mask tokens.",
    .options = explain_options,
    .n_options = sizeof explain_options / sizeof explain_options[0],
    .max_positional = 2,
    .positional = "TEXT [TEXT_PAIR]",
    .example = "bertc explain --model my-model --out page.html 'the cat sat.'",
    .manual = "The page has inline CSS and SVG, no script and nothing to fetch, so it opens "
              "from a file anywhere. Each step shows its equation, the bertc file:function "
              "that computes it, and its output's declared and actual shape with min, max, "
              "mean and std. The variant's own mechanism (its descriptor's explain steps) is "
              "drawn from its outputs by their shapes: context gates per head and token, "
              "quasi-attention on a diverging scale, inter-sentence attention and sentence "
              "scores, query attention and conv features, masked spans and their "
              "predictions; the outputs no step names are drawn by shape too. The prediction "
              "closes the page: classes with their id2label names, a label per token, the best "
              "answer span, the sentences ranked, or the top tokens at each [MASK] (a [MASK] "
              "[MASK] run is a SpanBERT span). An output a step names that the model does not "
              "declare is skipped with a note on the page. A text longer than --max-len tokens "
              "(default 128) is cut: a warning on stderr and a note on the page say how many "
              "tokens it has and how many were read, and the page shows only the text read. "
              "Heat maps draw one path per colour level (32 shades a sign), and a page's maps "
              "share about 98,304 cells in all: a picture over its share draws fewer heads "
              "(one a layer at least) or pools feature dimensions into bins of their mean, as "
              "the page says, so a page stays near 1 MB at any length and depth; axis labels "
              "are thinned so none overlap. "
              "make browser-test opens the page of "
              "every architecture in headless Chromium.",
};

typedef struct ExplainArgs {
    const char *out;
    TextExample ex;
    int context;                  /* -1: not given */
    int32_t max_len;              /* --max-len, else 128 or the model's positions */
} ExplainArgs;

static int parse_args(const CliArgs *args, ExplainArgs *a, BertcError *err)
{
    const CliCommand *c = &cli_cmd_explain;
    const char *context = cli_value(c, args, "--context");
    char shown[BERTC_SHOWN];
    int64_t v;
    memset(a, 0, sizeof *a);
    a->out = cli_value(c, args, "--out");
    a->context = -1;
    if (context && !bertc_parse_i64(context, 0, INT32_MAX, &v))
        return bertc_errorf(err, "--context needs a whole number from 0 to %d, got '%s'",
                            INT32_MAX, bertc_shown(context, shown));
    if (context)
        a->context = (int)v;
    if (!a->out)
        return bertc_errorf(err, "--out PAGE.html is required (see bertc explain --help)");
    if (args->n_pos < 1)
        return bertc_errorf(err, "TEXT is required (see bertc explain --help)");
    a->ex = (TextExample){.text = args->pos[0], .text_pair = args->n_pos > 1 ? args->pos[1]
                                                                              : NULL,
                          .context_id = a->context};
    return 0;
}

/* mask_labels = 1 where the text says [MASK], for a model that reads them. */
static void mask_at_mask_tokens(const Batch *b, const ExplainTokens *tk, const Tokenizer *tok)
{
    const BatchItem *it = bertc_batch_find(b, "mask_labels");
    if (!it || !it->is_int || it->ids.numel < tk->S)
        return;
    for (int64_t t = 0; t < tk->S; t++)
        it->ids.data[t] = tk->row[t] == tok->mask_id;
}

/* A copy of the first `bytes` bytes of s, in arena. */
static const char *prefix(const char *s, size_t bytes, Arena *arena)
{
    char *c = bertc_arena_alloc(arena, bytes + 1);
    memcpy(c, s, bytes);
    c[bytes] = '\0';
    return c;
}

/* When the text has more than max_len tokens: the warning (on stderr, and
 * as a note on the page, in cut[]) and the part of TEXT and TEXT_PAIR that
 * was read, as the tokenizer truncates them (LongestFirst) for the model. */
static int cut_to_max_len(const Tokenizer *tok, const TextExample *ex, const ExplainTokens *tk,
                          int32_t max_len, Arena *arena, ExplainPage *page, char *cut,
                          size_t cap, BertcError *err)
{
    if (tk->in_text <= max_len)
        return 0;
    Encoding e;
    const char *a = ex->text ? ex->text : "", *b = ex->text_pair;
    if (bertc_tokenizer_encode(tok, arena, a, strlen(a), b, b ? strlen(b) : 0, max_len, false,
                               &e, err) != 0)
        return -1;
    /* [CLS] A1..A_na [SEP] B1..B_nb [SEP]: the last token read of each text */
    page->text_shown = prefix(a, e.n_a > 0 ? (size_t)e.byte_end[e.n_a] : 0, arena);
    if (b)
        page->pair_shown = prefix(b, e.n_b > 0 ? (size_t)e.byte_end[e.n_a + 1 + e.n_b] : 0,
                                  arena);
    snprintf(cut, cap, "the text is %lld tokens; the page shows the first %d (--max-len)",
             (long long)tk->in_text, (int)max_len);
    page->cut = cut;
    fprintf(stderr, "bertc explain: warning: %s\n", cut);
    return 0;
}

/* The forward on the text, then the page, while the graph holds its outputs. */
static int explain_run(const ExplainArgs *a, Model *m, const Tokenizer *tok,
                       const char *model_name, Arena *arena, BertcError *err)
{
    TextExample ex = a->ex;
    if (a->context >= 0 && !bertc_model_reads_input(m->arch, "context_ids"))
        return bertc_errorf(err, "--context %d: %s takes no context id (it reads no "
                            "context_ids)", a->context, m->arch->name);
    if (ex.context_id < 0 && bertc_model_reads_input(m->arch, "context_ids"))
        ex.context_id = 0;
    explain_sentences(m, &ex, arena);
    int32_t max_len = a->max_len;
    char cut[160];
    Graph *g = bertc_ag_graph_create(1 << 20, 0);
    bertc_ag_set_training(g, false);
    bertc_ag_set_no_grad(g, true);
    Batch b;
    Outputs out;
    ExplainTokens tk;
    bertc_batch_init(&b, "the text");
    bertc_outputs_init(&out);
    int rc = bertc_model_batch_from_text(m, tok, &ex, 1, max_len, g, &b, err);
    if (rc != 0 && a->context >= 0) {
        char msg[BERTC_ERROR_LEN];
        snprintf(msg, sizeof msg, "%s", err->msg);
        bertc_errorf(err, "--context %d: %s", a->context, msg);
    }
    if (rc == 0)
        rc = explain_tokens(m, tok, &b, &ex, arena, &tk, err);
    if (rc == 0) {
        mask_at_mask_tokens(&b, &tk, tok);
        rc = cli_forward(m, g, &b, &out, err);
    }
    ExplainPage page = {.m = m, .tok = tok, .ex = &ex, .batch = &b, .out = &out, .tk = &tk,
                        .model_name = model_name, .arena = arena};
    if (rc == 0)
        rc = cut_to_max_len(tok, &ex, &tk, max_len, arena, &page, cut, sizeof cut, err);
    if (rc == 0)
        rc = explain_write_page(&page, a->out, err);
    bertc_ag_graph_destroy(g);
    return rc;
}

int cmd_explain(int argc, char **argv)
{
    const CliCommand *c = &cli_cmd_explain;
    CliArgs args;
    BertcError err;
    ExplainArgs a;
    int rc = cli_start(c, argc, argv, &args);   /* --help, and the parse errors */
    if (rc >= 0)
        return rc;
    CliModelFiles f;
    if (parse_args(&args, &a, &err) != 0 || cli_model_files(c, &args, &f, &err) != 0) {
        fprintf(stderr, "bertc explain: %s\n", err.msg);
        return 2;
    }
    const char *vocab = cli_value(c, &args, "--vocab");
    const char *const flags[] = {f.dir ? "--model" : "--config", f.dir ? "--model" : "--weights",
                                 "--vocab"};
    const char *paths[] = {f.config, f.weights, vocab};
    if (cli_output_not_an_input("--out", a.out, 3, flags, paths, &err) != 0)
        return cli_fail(&err);
    Arena *arena = bertc_arena_create("explain", 1 << 20);
    CliTextModel t;
    char shown[BERTC_SHOWN];
    rc = cli_open_text_model(c, &args, true, arena, &t, &err);
    MaxLen dflt = t.positions;   /* explain reads up to 128 of the model's positions */
    if (rc == 0 && dflt.n > 128)
        dflt = (MaxLen){.n = 128, .key = "bertc explain's default"};
    if (rc == 0)
        rc = cli_max_len(c, &args, &dflt, &t.positions, a.ex.text_pair ? 3 : 2, &a.max_len,
                         &err);
    if (rc == 0)
        rc = explain_run(&a, t.model, t.tok, bertc_shown(f.dir ? f.dir : f.config, shown), arena,
                         &err);
    bertc_arena_destroy(arena);
    if (rc != 0)
        return cli_fail(&err);
    printf("wrote %s\n", a.out);
    return 0;
}
