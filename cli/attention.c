/* cli/attention.c — `bertc attention`: run any model (and its checkpoint) on
 * a sentence and draw one layer's attention, every head, as an SVG.
 *
 *   bertc attention --config C.json --weights W.safetensors --vocab vocab.txt
 *                   [--layer L] [--map NAME] [--context N] [--output A.svg]
 *                   TEXT [TEXT_PAIR]
 *
 * --map picks the per-layer output to draw: attention_probs (default), or for
 * QACGBERT quasi_attention_prob / new_attention_probs. --context is CGBERT's
 * context id. The extra inputs some models need (BertSum's sentence
 * positions, SpanBERT's mask_labels, QAConv's minimum length) are filled in
 * for a single sentence. */
#include "cli/cli.h"
#include "zoo/svg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define USAGE "usage: bertc attention --config C.json --weights W.safetensors --vocab vocab.txt " \
              "[--layer L] [--map NAME] [--context N] [--output A.svg] TEXT [TEXT_PAIR]"

/* --layer / --context: a whole number from 0 to INT32_MAX (the model's own
 * range is checked in check_args). */
static int whole_number(const char *flag, const char *text, int *out, BertcError *err)
{
    int64_t v;
    char shown[CLI_SHOWN];
    if (!bertc_parse_i64(text, 0, INT32_MAX, &v))
        return bertc_errorf(err, "%s needs a whole number from 0 to %d, got '%s'", flag,
                            INT32_MAX, cli_shown(text, shown));
    *out = (int)v;
    return 0;
}

/* Where the value of flag f goes, or NULL if f takes none. */
static const char **text_slot(AttentionArgs *a, const char *f)
{
    return !strcmp(f, "--config")    ? &a->config
           : !strcmp(f, "--weights") ? &a->weights
           : !strcmp(f, "--vocab")   ? &a->vocab
           : !strcmp(f, "--output")  ? &a->output
           : !strcmp(f, "--map")     ? &a->map
                                     : NULL;
}

static int positional(AttentionArgs *a, const char *f, BertcError *err)
{
    char shown[CLI_SHOWN];
    if (f[0] == '-' && f[1] == '-')
        return bertc_errorf(err, "unknown option '%s'", cli_shown(f, shown));
    if (!a->text_a)
        a->text_a = f;
    else if (!a->text_b)
        a->text_b = f;
    else
        return bertc_errorf(err, "unexpected argument '%s' (at most TEXT and TEXT_PAIR)",
                            cli_shown(f, shown));
    return 0;
}

int attention_parse(int argc, char **argv, AttentionArgs *a, BertcError *err)
{
    memset(a, 0, sizeof *a);
    a->output = "attention.svg";
    a->map = "attention_probs";
    a->layer = -1;
    a->context = -1;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        const char **slot = text_slot(a, f);
        int *number = !strcmp(f, "--layer")     ? &a->layer
                      : !strcmp(f, "--context") ? &a->context
                                                : NULL;
        if ((slot || number) && i + 1 >= argc)
            return bertc_errorf(err, "%s needs a value", f);
        if (slot)
            *slot = argv[++i];
        else if (number ? whole_number(f, argv[++i], number, err) != 0
                        : positional(a, f, err) != 0)
            return -1;
    }
    if (!a->config || !a->weights || !a->vocab || !a->text_a)
        return bertc_errorf(err, "%s", USAGE);
    return 0;
}

/* A (1, S) tensor view of an encoding row. */
static ITensor row(int32_t *data, int64_t S)
{
    int64_t shape[2] = {1, S};
    return itensor_view(data, 2, shape);
}

static ITensor filled(Arena *a, int64_t S, int32_t value)
{
    int64_t shape[2] = {1, S};
    ITensor t = itensor_new(a, 2, shape);
    for (int64_t i = 0; i < S; i++)
        t.data[i] = value;
    return t;
}

/* The inputs of one sentence, with the extras each architecture requires. */
static void make_batch(const BertConfig *cfg, const AttentionArgs *a, const Encoding *e,
                       Arena *arena, Batch *b)
{
    ITensor ids = row(e->input_ids, e->S), mask = row(e->attention_mask, e->S);
    ITensor types = row(e->token_type_ids, e->S);
    /* the batch's name starts its errors: a token id beyond the model's
     * vocab_size means --vocab and the model do not belong together */
    char shown[CLI_SHOWN];
    size_t len = CLI_SHOWN + 64;
    char *source = arena_alloc(arena, len);
    snprintf(source, len, "the text as tokenized with %s", cli_shown(a->vocab, shown));
    batch_init(b, source);
    bool bertsum = cfg->arch == ARCH_SUMMARIZER;
    batch_put_ids(b, bertsum ? "src" : "input_ids", ids);
    batch_put_ids(b, bertsum ? "mask" : "attention_mask", mask);
    batch_put_ids(b, bertsum ? "segs" : "token_type_ids", types);
    if (cfg->arch == ARCH_CGBERT || cfg->arch == ARCH_QACGBERT)
        batch_put_ids(b, "context_ids", filled(arena, 1, a->context < 0 ? 0 : a->context));
    if (bertsum) {   /* one sentence, whose [CLS] is token 0 */
        batch_put_ids(b, "clss", filled(arena, 1, 0));
        batch_put_ids(b, "mask_cls", filled(arena, 1, 1));
    }
    if (cfg->arch == ARCH_SPANBERT)
        batch_put_ids(b, "mask_labels", filled(arena, e->S, 0));
}

/* --layer and --context against the model: a layer it has, a context id its
 * context embedding has, and --context only where there is one. */
static int check_args(const AttentionArgs *a, const Model *m, BertcError *err)
{
    const BertConfig *cfg = &m->cfg;
    bool context = cfg->arch == ARCH_CGBERT || cfg->arch == ARCH_QACGBERT;
    if (a->layer >= cfg->num_hidden_layers)
        return bertc_errorf(err, "--layer %d: %s has layers 0..%d", a->layer, m->arch->name,
                            cfg->num_hidden_layers - 1);
    if (a->context >= 0 && !context)
        return bertc_errorf(err, "--context %d: %s takes no context id (only CGBERT and "
                            "QACGBERT do)", a->context, m->arch->name);
    if (context && a->context >= cfg->context_vocab_size)
        return bertc_errorf(err, "--context %d: %s has context ids 0..%d (context_vocab_size)",
                            a->context, m->arch->name, cfg->context_vocab_size - 1);
    return 0;
}

/* The picture is one (nh, S, S) block per sentence: anything else (a gate
 * such as CGBERT's lambda_q, (B, nh, S, 1)) would be read past its end. */
static int check_map(const char *name, const Tensor *t, int64_t S, BertcError *err)
{
    if (t->ndim == 4 && t->shape[0] == 1 && t->shape[1] >= 1 && t->shape[2] == S &&
        t->shape[3] == S)
        return 0;
    char have[SHAPE_STR_LEN];
    return bertc_errorf(err, "'%s' has shape %s; bertc attention draws (B, nh, S, S) maps of "
                        "the S = %lld tokens (attention_probs; for QACGBERT also "
                        "quasi_attention_prob, new_attention_probs)", name,
                        shape_str(have, sizeof have, t->ndim, t->shape), (long long)S);
}

static int draw_map(const AttentionArgs *a, const Model *m, const Tokenizer *tok,
                    const Encoding *e, const Outputs *out, int layer, Arena *arena,
                    BertcError *err)
{
    char name[128], shown[CLI_SHOWN + 32], map_shown[CLI_SHOWN], title[256];
    snprintf(name, sizeof name, "layers.%d.%.100s", layer, a->map);
    snprintf(shown, sizeof shown, "layers.%d.%s", layer, cli_shown(a->map, map_shown));
    Var *map = outputs_get(out, name);
    if (!map)
        return bertc_errorf(err, "%s has no output '%s' (layers 0..%d; maps attention_probs "
                            "and, for QACGBERT, quasi_attention_prob)", m->arch->name, shown,
                            m->cfg.num_hidden_layers - 1);
    if (check_map(shown, &map->value, e->S, err) != 0)
        return -1;
    const char **labels = arena_alloc(arena, sizeof *labels * (size_t)e->S);
    for (int32_t t = 0; t < e->S; t++)
        labels[t] = tokenizer_token(tok, e->input_ids[t]);
    snprintf(title, sizeof title, "%s, layer %d: %.100s", m->arch->name, layer, a->map);
    return svg_attention(a->output, map->value.data, map->value.shape[1], e->S, labels, title,
                         err);
}

int attention_draw(const AttentionArgs *a, Model *m, const Tokenizer *tok, Arena *arena,
                   BertcError *err)
{
    const BertConfig *cfg = &m->cfg;
    if (check_args(a, m, err) != 0)
        return -1;
    int32_t max_len = cfg->max_position_embeddings < 128 ? cfg->max_position_embeddings : 128;
    bool pad = cfg->arch == ARCH_QACONV;   /* QAConv reads query_len tokens at least */
    int32_t len = pad ? cfg->query_len : max_len, specials = a->text_b ? 3 : 2;
    char shown[CLI_SHOWN];
    if (len < specials)   /* [CLS] TEXT [SEP] (TEXT_PAIR [SEP]) */
        return bertc_errorf(err, "%s: %s %d leaves no room for the %d special tokens of %s; "
                            "bertc attention needs a model of at least %d positions",
                            cli_shown(a->config, shown),
                            pad ? "query_len" : "max_position_embeddings", len, specials,
                            a->text_b ? "TEXT and TEXT_PAIR" : "TEXT", specials);
    Encoding e;
    if (tokenizer_encode(tok, arena, a->text_a, strlen(a->text_a), a->text_b,
                         a->text_b ? strlen(a->text_b) : 0, len, pad, &e, err) != 0)
        return -1;
    Graph *g = ag_graph_create(1 << 20, 0);
    ag_set_training(g, false);
    ag_set_no_grad(g, true);
    Batch b;
    Outputs out;
    make_batch(cfg, a, &e, arena, &b);
    outputs_init(&out);
    int layer = a->layer < 0 ? cfg->num_hidden_layers - 1 : a->layer;
    int rc = model_forward(m, g, &b, &out, err);
    if (rc == 0)
        rc = draw_map(a, m, tok, &e, &out, layer, arena, err);
    ag_graph_destroy(g);
    return rc;
}

int cmd_attention(int argc, char **argv)
{
    AttentionArgs a;
    BertcError err;
    if (attention_parse(argc, argv, &a, &err) != 0) {
        fprintf(stderr, "bertc attention: %s\n", err.msg);
        return 2;
    }
    BertConfig cfg;
    static const char *const flags[] = {"--config", "--weights", "--vocab"};
    const char *paths[] = {a.config, a.weights, a.vocab};
    if (cli_output_not_an_input("--output", a.output, 3, flags, paths, &err) != 0) {
        fprintf(stderr, "bertc: %s\n", err.msg);
        return 1;
    }
    Arena *arena = arena_create("attention", 1 << 20);
    Tokenizer tok;
    Model m;
    int rc = bert_config_read(a.config, &cfg, &err);
    if (rc == 0 && model_build(&m, arena, &cfg, &err) != 0) {
        model_config_error(&err, a.config);
        rc = -1;
    }
    if (rc == 0)
        rc = model_load(&m, a.weights, false, &err);
    if (rc == 0)
        rc = tokenizer_load(&tok, arena, a.vocab, &err);
    if (rc == 0)
        rc = attention_draw(&a, &m, &tok, arena, &err);
    arena_destroy(arena);
    if (rc != 0) {
        fprintf(stderr, "bertc: %s\n", err.msg);
        return 1;
    }
    printf("wrote %s\n", a.output);
    return 0;
}
