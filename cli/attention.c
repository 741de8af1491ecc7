/* cli/attention.c — `bertc attention`: run any model (and its checkpoint) on
 * a sentence and draw one layer's attention, every head, as an SVG.
 *
 *   bertc attention (--model DIR | --config C.json --weights W.safetensors
 *                   --vocab vocab.txt) [--layer L] [--map NAME] [--context N]
 *                   [--output A.svg] TEXT [TEXT_PAIR]
 *
 * --map picks the output to draw, by its declared shape (cli/explain_draw.c):
 * attention_probs (default) or any other (B, nh, S, S) map of the layer as a
 * heat map per head (row the query, column the key); a (B, nh, S, 1) gate
 * (CGBERT's lambda_q) as bars per head and token; a (B, S) / (B, N) vector
 * (BertSum's sent_scores) as bars. Any other shape is refused in one line.
 * Every picture has a colour scale with the data's min and max; signed data
 * (QACGBERT's quasi-attention) a diverging one centred on 0. A model that
 * reads less of the text than it has (QAConv keeps TEXT, its question, to
 * query_len tokens) is said to on stderr and in the title. --context is the context id
 * of a model that reads one (CGBERT, QACGBERT). The architecture builds its
 * inputs from the text itself (bertc_model_batch_from_text). */
#include "cli/explain.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const CliOption attention_options[] = {
    {"--model", "DIR", NULL, "a model directory (config.json, model.safetensors, vocab.txt, "
                             "tokenizer_config.json) instead of --config, --weights, --vocab"},
    {"--config", "C.json", NULL, "the model's config.json"},
    {"--weights", "W.safetensors", NULL, "its weights"},
    {"--vocab", "V.txt", NULL, "the WordPiece vocabulary (with --model: replaces DIR's)"},
    {"--layer", "L", NULL, "the layer to draw, 0..num_hidden_layers-1 (default: the last)"},
    {"--map", "NAME", "attention_probs", "the output to draw: a per-layer map (B, nh, S, S), "
                                         "gate (B, nh, S, 1), or a (B, S) / (B, N) vector "
                                         "(lambda_q, quasi_attention_prob, sent_scores, ...)"},
    {"--context", "N", NULL, "the context id of a CGBERT/QACGBERT model (default: 0)"},
    {"--output", "A.svg", "attention.svg", "the picture"},
};

const CliCommand cli_cmd_attention = {
    .name = "attention",
    .summary = "draw one layer's attention (or any map, gate or score), every head (SVG)",
    .usage = "(--model DIR | --config C.json --weights W.safetensors --vocab V.txt) [--layer L] "
             "[--map NAME] [--context N] [--output A.svg] TEXT [TEXT_PAIR]",
    .description = "Runs the model on TEXT (and TEXT_PAIR), its inputs built by the "
                   "architecture from the text, and draws the layer's map of every head.",
    .options = attention_options,
    .n_options = sizeof attention_options / sizeof attention_options[0],
    .max_positional = 2,
    .positional = "TEXT [TEXT_PAIR]",
    .example = "bertc attention --model my-model --layer 0 --output a.svg 'the cat sat.'",
    .manual = "--map picks another output, drawn by the shape the architecture declares for it "
              "(bertc show and bertc run list them): a per-layer (B, nh, S, S) map (QACGBERT's "
              "quasi_attention_prob) as a heat map per head, row i the query token and column "
              "j the key; a (B, nh, S, 1) gate (CGBERT's lambda_q, lambda_k) as bars per head "
              "and token; a (B, S) or (B, N) vector (BertSum's sent_scores, QAConv's "
              "attention_rate) as bars over the tokens or sentences. NAME is looked up as "
              "layers.L.NAME, then as NAME itself. Any other shape, or a name the model does "
              "not declare, is refused in one line naming it and its shape (exit 1).\n\n"
              "Every picture has a colour scale with the data's min and max and names its "
              "axes. Values >= 0 go from white (0) to dark blue (the max); data that goes "
              "below 0 (QACGBERT's quasi-attention: context can take attention away) gets a "
              "diverging scale centred on 0, blue below and red above. A model that reads "
              "fewer tokens than the text has (QAConv reads TEXT as its question, kept to "
              "query_len tokens: give the context as TEXT_PAIR) says so on standard error and "
              "in the picture's title. A BertSum document is split into its sentences, a [CLS] "
              "each.",
};

/* --layer / --context: a whole number from 0 to INT32_MAX (the model's own
 * range is checked in check_args); absent: `absent`. */
static int whole_number(const CliArgs *args, const char *flag, int absent, int *out,
                        BertcError *err)
{
    const char *text = cli_value(&cli_cmd_attention, args, flag);
    int64_t v;
    char shown[BERTC_SHOWN];
    *out = absent;
    if (!text)
        return 0;
    if (!bertc_parse_i64(text, 0, INT32_MAX, &v))
        return bertc_errorf(err, "%s needs a whole number from 0 to %d, got '%s'", flag,
                            INT32_MAX, bertc_shown(text, shown));
    *out = (int)v;
    return 0;
}

int attention_parse(int argc, char **argv, AttentionArgs *a, BertcError *err)
{
    const CliCommand *c = &cli_cmd_attention;
    CliArgs args;
    memset(a, 0, sizeof *a);
    if (cli_parse(c, argc, argv, &args, err) != 0)
        return -1;
    a->help = args.help;
    a->model = cli_given(c, &args, "--model") ? cli_value(c, &args, "--model") : NULL;
    a->config = cli_value(c, &args, "--config");
    a->weights = cli_value(c, &args, "--weights");
    a->vocab = cli_value(c, &args, "--vocab");
    a->output = cli_value(c, &args, "--output");
    a->map = cli_value(c, &args, "--map");
    a->text_a = args.n_pos > 0 ? args.pos[0] : NULL;
    a->text_b = args.n_pos > 1 ? args.pos[1] : NULL;
    if (a->help)
        return 0;
    if (whole_number(&args, "--layer", -1, &a->layer, err) != 0 ||
        whole_number(&args, "--context", -1, &a->context, err) != 0)
        return -1;
    CliModelFiles f;
    if (cli_model_files(c, &args, &f, err) != 0)
        return -1;
    if (!a->model && (!a->weights || !a->vocab))
        return bertc_errorf(err, "%s is required with --config (see bertc attention --help)",
                            a->weights ? "--vocab" : "--weights");
    if (!a->text_a)
        return bertc_errorf(err, "TEXT is required (see bertc attention --help)");
    return 0;
}

/* --layer and --context against the model: a layer it has, and --context
 * only for a model that reads a context id (its range is batch_from_text's
 * to check). */
static int check_args(const AttentionArgs *a, const Model *m, BertcError *err)
{
    const BertConfig *cfg = &m->cfg;
    if (a->layer >= cfg->num_hidden_layers)
        return bertc_errorf(err, "--layer %d: %s has layers 0..%d", a->layer, m->arch->name,
                            cfg->num_hidden_layers - 1);
    if (a->context >= 0 && !bertc_model_reads_input(m->arch, "context_ids"))
        return bertc_errorf(err, "--context %d: %s takes no context id (it reads no "
                            "context_ids)", a->context, m->arch->name);
    return 0;
}

/* The output --map names: layer L's "layers.L.NAME" when the architecture
 * declares "layers.{l}.NAME", else NAME itself ("sent_scores",
 * "layers.0.lambda_q"); NULL (an error) when it declares neither. */
static const OutputSpec *find_map(const AttentionArgs *a, const Model *m, int layer, char *name,
                                  size_t cap, BertcError *err)
{
    char shown[BERTC_SHOWN], drawable[512];
    snprintf(name, cap, "layers.%d.%.100s", layer, a->map);
    const OutputSpec *o = bertc_model_output_named(m->arch, name);
    if (!o) {
        snprintf(name, cap, "%.100s", a->map);
        o = bertc_model_output_named(m->arch, name);
    }
    if (o && bertc_svg_kind(o->shape) != SVG_MATRIX && bertc_svg_kind(o->shape) != SVG_UNDRAWABLE)
        return o;
    explain_drawable(m->arch, false, drawable, sizeof drawable);
    if (!o)
        bertc_errorf(err, "%s has no output 'layers.%d.%s' nor '%s' (layers 0..%d; it draws %s)",
                     m->arch->name, layer, bertc_shown(a->map, shown), shown,
                     m->cfg.num_hidden_layers - 1, drawable);
    else
        bertc_errorf(err, "'%s' has shape %s: bertc attention draws %s (%s has %s)",
                     bertc_shown(name, shown), o->shape, bertc_svg_drawable, m->arch->name,
                     drawable);
    return NULL;
}

/* Draws output --map of layer `layer` by its declared shape: maps, gates as
 * bars per head and token, vectors as bars over tokens or sentences. */
static int draw_map(const AttentionArgs *a, const Model *m, const ExplainTokens *tk,
                    const Outputs *out, int layer, BertcError *err)
{
    char name[160], title[512], note[256], shown[BERTC_SHOWN];
    const OutputSpec *o = find_map(a, m, layer, name, sizeof name, err);
    if (!o)
        return -1;
    Var *v = bertc_outputs_get(out, name);
    if (!v)
        return bertc_errorf(err, "%s declares '%s' %s but its forward did not put it here",
                            m->arch->name, bertc_shown(name, shown), o->shape);
    SvgPicture p;
    if (explain_picture(o, name, &v->value, tk, &p, err) != 0)
        return -1;
    explain_cut_note(m, tk, note, sizeof note);
    if (note[0])
        fprintf(stderr, "bertc attention: note: %s\n", note);
    snprintf(title, sizeof title, "%s: %s %s%s%s", m->arch->name, name, o->shape,
             note[0] ? " \xe2\x80\x94 " : "", note);
    p.title = title;
    return bertc_svg_write(a->output, &p, err);
}

int attention_draw(const AttentionArgs *a, Model *m, const Tokenizer *tok, Arena *arena,
                   BertcError *err)
{
    const BertConfig *cfg = &m->cfg;
    if (check_args(a, m, err) != 0)
        return -1;
    int32_t max_len = cfg->max_position_embeddings < 128 ? cfg->max_position_embeddings : 128;
    int specials = a->text_b ? 3 : 2;
    char shown[BERTC_SHOWN];
    if (max_len < specials)   /* [CLS] TEXT [SEP] (TEXT_PAIR [SEP]) */
        return bertc_errorf(err, "%s: max_position_embeddings %d leaves no room for the %d "
                            "special tokens of %s; bertc attention needs a model of at least "
                            "%d positions", bertc_shown(a->model ? a->model : a->config, shown),
                            max_len, specials,
                            a->text_b ? "TEXT and TEXT_PAIR" : "TEXT", specials);
    TextExample ex = {.text = a->text_a, .text_pair = a->text_b, .context_id = a->context};
    if (ex.context_id < 0 && bertc_model_reads_input(m->arch, "context_ids"))
        ex.context_id = 0;
    explain_sentences(m, &ex, arena);   /* BertSum: a [CLS] per sentence */
    Graph *g = bertc_ag_graph_create(1 << 20, 0);
    bertc_ag_set_training(g, false);
    bertc_ag_set_no_grad(g, true);
    /* the batch's name starts its errors: a token id beyond the model's
     * vocab_size means --vocab and the model do not belong together */
    size_t len = BERTC_SHOWN + 64;
    char *source = bertc_arena_alloc(arena, len);
    snprintf(source, len, "the text as tokenized with %s",
             bertc_shown(a->vocab ? a->vocab : a->model, shown));
    Batch b;
    Outputs out;
    bertc_batch_init(&b, source);
    bertc_outputs_init(&out);
    int layer = a->layer < 0 ? cfg->num_hidden_layers - 1 : a->layer;
    int rc = bertc_model_batch_from_text(m, tok, &ex, 1, max_len, g, &b, err);
    if (rc != 0 && a->context >= 0) {   /* the flag the value came from */
        char msg[BERTC_ERROR_LEN];
        snprintf(msg, sizeof msg, "%s", err->msg);
        bertc_errorf(err, "--context %d: %s", a->context, msg);
    }
    if (rc == 0)
        rc = cli_forward(m, g, &b, &out, err);
    ExplainTokens tk;
    if (rc == 0)
        rc = explain_tokens(m, tok, &b, &ex, arena, &tk, err);
    if (rc == 0)
        rc = draw_map(a, m, &tk, &out, layer, err);
    bertc_ag_graph_destroy(g);
    return rc;
}

int cmd_attention(int argc, char **argv)
{
    const CliCommand *c = &cli_cmd_attention;
    AttentionArgs a;
    CliArgs args;
    BertcError err;
    int rc = cli_start(c, argc, argv, &args);   /* --help, and the parse errors */
    if (rc >= 0)
        return rc;
    if (attention_parse(argc, argv, &a, &err) != 0) {
        fprintf(stderr, "bertc attention: %s\n", err.msg);
        return 2;
    }
    CliModelFiles f;   /* with --model: DIR/config.json and DIR/model.safetensors */
    if (cli_model_files(c, &args, &f, &err) != 0)
        return cli_fail(&err);
    const char *const flags[] = {f.dir ? "--model" : "--config", f.dir ? "--model" : "--weights",
                                 "--vocab"};
    const char *paths[] = {f.config, f.weights, a.vocab};
    if (cli_output_not_an_input("--output", a.output, 3, flags, paths, &err) != 0)
        return cli_fail(&err);
    Arena *arena = bertc_arena_create("attention", 1 << 20);
    CliTextModel t;
    rc = cli_open_text_model(c, &args, true, arena, &t, &err);
    if (rc == 0)
        rc = attention_draw(&a, t.model, t.tok, arena, &err);
    bertc_arena_destroy(arena);
    if (rc != 0)
        return cli_fail(&err);
    printf("wrote %s\n", a.output);
    return 0;
}
