/* test/test_registry.c — dotted names, tied parameters, HF init, counts and
 * the PyTorch-style module tree. */
#include "test/test_util.h"
#include "nn/nn.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

static Arena *arena;

static void setup(void) { arena = bertc_arena_create("params", 1 << 16); }
static void teardown(void) { bertc_arena_destroy(arena); }
TestSuite(registry, .init = setup, .fini = teardown);

typedef struct Tiny {
    Embedding word;
    LayerNorm ln;
    Linear query, decoder_dense;
    Dropout dropout;
} Tiny;

/* embeddings.word_embeddings (10,4, padding 0), embeddings.LayerNorm,
 * encoder.layer.0.attention.self.query, head.dense; head.decoder tied to
 * the word embeddings. */
static Registry *build(Tiny *m)
{
    Registry *r = bertc_registry_create(arena, "Tiny");
    bertc_nn_push(r, "embeddings", "Embeddings", false);
    bertc_embedding_init(&m->word, r, "word_embeddings", 10, 4, 0);
    bertc_layernorm_init(&m->ln, r, "LayerNorm", 4, 1e-12f);
    bertc_dropout_init(&m->dropout, r, "dropout", 0.1f);
    bertc_nn_pop(r);
    bertc_nn_push(r, "encoder", "Encoder", false);
    bertc_nn_push(r, "layer", "ModuleList", false);
    bertc_nn_push(r, "0", "Layer", false);
    bertc_nn_push(r, "attention", "Attention", false);
    bertc_nn_push(r, "self", "SelfAttention", false);
    bertc_linear_init(&m->query, r, "query", 4, 4, true);
    bertc_nn_pop(r);
    bertc_nn_pop(r);
    bertc_nn_pop(r);
    bertc_nn_pop(r);
    bertc_nn_pop(r);
    bertc_nn_push(r, "head", "Head", false);
    bertc_linear_init(&m->decoder_dense, r, "dense", 4, 4, false);
    bertc_nn_tie(r, "head.decoder.weight", m->word.weight);
    bertc_nn_pop(r);
    return r;
}

Test(registry, dotted_names_in_registration_order)
{
    Tiny m;
    Registry *r = build(&m);
    const char *expect[] = {"embeddings.word_embeddings.weight", "embeddings.LayerNorm.weight",
                            "embeddings.LayerNorm.bias",
                            "encoder.layer.0.attention.self.query.weight",
                            "encoder.layer.0.attention.self.query.bias", "head.dense.weight",
                            "head.decoder.weight"};
    cr_assert_eq(r->n_params, 7, "%d params", r->n_params);
    for (int i = 0; i < 7; i++)
        cr_assert_str_eq(r->params[i].name, expect[i]);
    cr_assert_eq(bertc_registry_find(r, "head.decoder.weight"), 6);
    cr_assert_eq(r->params[6].var, m.word.weight, "the alias is not the same tensor");
    cr_assert_eq(bertc_registry_find(r, "nope"), -1);
}

Test(registry, count_counts_tied_weights_once)
{
    Tiny m;
    Registry *r = build(&m);
    /* 10*4 + 4 + 4 + (16 + 4) + 16, the tied decoder not again */
    cr_assert_eq(bertc_registry_count(r), 84, "count %lld", (long long)bertc_registry_count(r));
}

Test(registry, hf_init)
{
    Tiny m;
    Registry *r = build(&m);
    Rng rng = bertc_rng_seed(3);
    bertc_registry_init_weights(r, &rng, 0.02f);
    for (int j = 0; j < 4; j++)
        cr_assert_eq(m.word.weight->value.data[j], 0.0f, "padding row not zero");
    for (int j = 0; j < 4; j++) {
        cr_assert_eq(m.ln.weight->value.data[j], 1.0f);
        cr_assert_eq(m.ln.bias->value.data[j], 0.0f);
        cr_assert_eq(m.query.bias->value.data[j], 0.0f);
    }
    double sum2 = 0;
    int n = 0;
    for (int64_t i = 4; i < 40; i++, n++)
        sum2 += (double)m.word.weight->value.data[i] * m.word.weight->value.data[i];
    double std = sqrt(sum2 / n);
    cr_assert(std > 0.01 && std < 0.03, "embedding std %g, expected ~0.02", std);
    /* same seed, same weights */
    float first = m.query.weight->value.data[5];
    rng = bertc_rng_seed(3);
    bertc_registry_init_weights(r, &rng, 0.02f);
    cr_assert_eq(m.query.weight->value.data[5], first);
}

Test(registry, prints_like_pytorch_with_counts)
{
    Tiny m;
    Registry *r = build(&m);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    bertc_registry_print(r, f);
    fclose(f);
    const char *expect =
        "Tiny(  # 84 params\n"
        "  (embeddings): Embeddings(  # 48 params\n"
        "    (word_embeddings): Embedding(10, 4, padding_idx=0)  # 40 params\n"
        "    (LayerNorm): LayerNorm((4,), eps=1e-12, elementwise_affine=True)  # 8 params\n"
        "    (dropout): Dropout(p=0.1, inplace=False)\n"
        "  )\n"
        "  (encoder): Encoder(  # 20 params\n"
        "    (layer): ModuleList(  # 20 params\n"
        "      (0): Layer(  # 20 params\n"
        "        (attention): Attention(  # 20 params\n"
        "          (self): SelfAttention(  # 20 params\n"
        "            (query): Linear(in_features=4, out_features=4, bias=True)  # 20 params\n"
        "          )\n"
        "        )\n"
        "      )\n"
        "    )\n"
        "  )\n"
        /* head.decoder.weight is tied to a tensor registered outside head, so
         * it counts here, as it would in head.parameters() */
        "  (head): Head(  # 56 params\n"
        "    (dense): Linear(in_features=4, out_features=4, bias=False)  # 16 params\n"
        "  )\n"
        ")\n"
        "Total parameters: 84\n";
    cr_assert_str_eq(text, expect, "printed:\n%s", text);
    free(text);
}

static void register_twice(void *ctx)
{
    Registry *r = ctx;
    int64_t s[1] = {2};
    bertc_nn_param(r, "w", 1, s, INIT_ZEROS);
    bertc_nn_param(r, "w", 1, s, INIT_ZEROS);
}

Test(registry, duplicate_name_is_an_error)
{
    char msg[BERTC_ERROR_LEN];
    cr_assert(test_catch_fatal(register_twice, bertc_registry_create(arena, "M"), msg, sizeof msg));
    cr_assert(strstr(msg, "'w'") && strstr(msg, "twice"), "message: %s", msg);
}
