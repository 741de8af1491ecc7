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

typedef struct AttentionArgs {
    const char *config, *weights, *vocab, *output, *map;
    const char *text_a, *text_b;
    int layer;            /* -1: the last */
    int context;
} AttentionArgs;

static int parse(int argc, char **argv, AttentionArgs *a)
{
    memset(a, 0, sizeof *a);
    a->output = "attention.svg";
    a->map = "attention_probs";
    a->layer = -1;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        const char **slot = !strcmp(f, "--config")    ? &a->config
                            : !strcmp(f, "--weights") ? &a->weights
                            : !strcmp(f, "--vocab")   ? &a->vocab
                            : !strcmp(f, "--output")  ? &a->output
                            : !strcmp(f, "--map")     ? &a->map
                                                      : NULL;
        bool number = !strcmp(f, "--layer") || !strcmp(f, "--context");
        if ((slot || number) && i + 1 >= argc) {
            fprintf(stderr, "bertc attention: %s needs a value\n", f);
            return -1;
        }
        if (slot)
            *slot = argv[++i];
        else if (number)
            *(!strcmp(f, "--layer") ? &a->layer : &a->context) = atoi(argv[++i]);
        else if (f[0] == '-' && f[1] == '-') {
            fprintf(stderr, "bertc attention: unknown option '%s'\n", f);
            return -1;
        } else if (!a->text_a)
            a->text_a = f;
        else if (!a->text_b)
            a->text_b = f;
        else {
            fprintf(stderr, "bertc attention: unexpected argument '%s'\n", f);
            return -1;
        }
    }
    if (!a->config || !a->weights || !a->vocab || !a->text_a) {
        fprintf(stderr, "usage: bertc attention --config C.json --weights W.safetensors "
                        "--vocab vocab.txt [--layer L] [--map NAME] [--context N] "
                        "[--output A.svg] TEXT [TEXT_PAIR]\n");
        return -1;
    }
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
    batch_init(b, "sentence");
    bool bertsum = cfg->arch == ARCH_SUMMARIZER;
    batch_put_ids(b, bertsum ? "src" : "input_ids", ids);
    batch_put_ids(b, bertsum ? "mask" : "attention_mask", mask);
    batch_put_ids(b, bertsum ? "segs" : "token_type_ids", types);
    if (cfg->arch == ARCH_CGBERT || cfg->arch == ARCH_QACGBERT)
        batch_put_ids(b, "context_ids", filled(arena, 1, a->context));
    if (bertsum) {   /* one sentence, whose [CLS] is token 0 */
        batch_put_ids(b, "clss", filled(arena, 1, 0));
        batch_put_ids(b, "mask_cls", filled(arena, 1, 1));
    }
    if (cfg->arch == ARCH_SPANBERT)
        batch_put_ids(b, "mask_labels", filled(arena, e->S, 0));
}

static int draw(const AttentionArgs *a, Model *m, const Tokenizer *tok, Arena *arena,
                BertcError *err)
{
    const BertConfig *cfg = &m->cfg;
    int32_t max_len = cfg->max_position_embeddings < 128 ? cfg->max_position_embeddings : 128;
    bool pad = cfg->arch == ARCH_QACONV;   /* QAConv reads query_len tokens at least */
    if (pad && cfg->query_len > max_len)
        max_len = cfg->query_len;
    Encoding e;
    if (tokenizer_encode(tok, arena, a->text_a, strlen(a->text_a), a->text_b,
                         a->text_b ? strlen(a->text_b) : 0, pad ? cfg->query_len : max_len, pad,
                         &e, err) != 0)
        return -1;
    Graph *g = ag_graph_create(1 << 20, 0);
    ag_set_training(g, false);
    ag_set_no_grad(g, true);
    Batch b;
    Outputs out;
    make_batch(cfg, a, &e, arena, &b);
    outputs_init(&out);
    int rc = model_forward(m, g, &b, &out, err);
    int layer = a->layer < 0 ? cfg->num_hidden_layers - 1 : a->layer;
    char name[128];
    snprintf(name, sizeof name, "layers.%d.%s", layer, a->map);
    Var *map = rc == 0 ? outputs_get(&out, name) : NULL;
    if (rc == 0 && !map)
        rc = bertc_errorf(err, "%s has no output '%s' (layers 0..%d; maps attention_probs and, "
                          "for QACGBERT, quasi_attention_prob)", m->arch->name, name,
                          cfg->num_hidden_layers - 1);
    if (rc == 0) {
        const char *labels[512];
        for (int32_t t = 0; t < e.S && t < 512; t++)
            labels[t] = tokenizer_token(tok, e.input_ids[t]);
        char title[256];
        snprintf(title, sizeof title, "%s, layer %d: %s", m->arch->name, layer, a->map);
        rc = svg_attention(a->output, map->value.data, map->value.shape[1], e.S, labels, title,
                           err);
    }
    ag_graph_destroy(g);
    return rc;
}

int cmd_attention(int argc, char **argv)
{
    AttentionArgs a;
    if (parse(argc, argv, &a) != 0)
        return 2;
    BertConfig cfg;
    BertcError err;
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
        rc = draw(&a, &m, &tok, arena, &err);
    arena_destroy(arena);
    if (rc != 0) {
        fprintf(stderr, "bertc: %s\n", err.msg);
        return 1;
    }
    printf("wrote %s\n", a.output);
    return 0;
}
