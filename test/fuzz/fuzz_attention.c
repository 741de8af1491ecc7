/* test/fuzz/fuzz_attention.c — libFuzzer target: `bertc attention` from its
 * flags to the picture. Byte 0 picks one of the fixture models of
 * test/data/zoo/ (built once; run from the repository root); the other
 * bytes, split at NUL bytes, are the arguments after the required --config,
 * --weights and --vocab (texts, --layer, --map, --context, ...). They go the
 * way cmd_attention takes them: attention_parse -> tokenize with a small
 * vocabulary -> bertc_model_forward -> the map's shape check -> bertc_svg_attention,
 * drawn into /dev/null. Any arguments must draw or give one error line; a
 * map of the wrong shape must never be read past its end. */
#include "cli/cli.h"
#include "test/fuzz/fuzz_util.h"

#define ARGS_MAX 32

static const char *const fixtures[] = {
    "bert_seqcls_single", "cgbert_gate", "qacgbert_gate", "bertsum_b", "qaconv_given",
    "spanbert_c",
};
#define N_MODELS (sizeof fixtures / sizeof fixtures[0])

/* Ids below every fixture's vocab_size. */
static const char vocab_text[] =
    "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\ncat\nsat\non\nmat\na\ndog\n.\nran\n,\n!\n?\n"
    "un\n##aff\n##able\nhello\nworld\n##s\nis\nit\nwho\n";

static Model models[N_MODELS];
static Tokenizer tok;
static Arena *vocab, *scratch;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    setenv("BERTC_THREADS", "1", 0);
    fuzz_load_fixtures(models, fixtures, N_MODELS);
    vocab = bertc_arena_create("vocab", 1 << 16);
    BertcError err;
    if (bertc_tokenizer_parse(&tok, vocab, "vocab.txt", vocab_text, strlen(vocab_text), &err) != 0)
        fuzz_setup_failed(&err);
    scratch = bertc_arena_create("attention", 1 << 20);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    char *text;
    char *argv[ARGS_MAX + 8] = {"attention", "--config", "c.json", "--weights",
                                "w.safetensors", "--vocab", "vocab.txt"};
    int argc = fuzz_split_args(data + 1, size - 1, &text, argv, 7, ARGS_MAX);
    AttentionArgs a;
    BertcError err = {{0}};
    int rc = attention_parse(argc, argv, &a, &err);
    if (rc == 0) {
        a.output = "/dev/null";
        rc = attention_draw(&a, &models[(data[0] & 127) % N_MODELS], &tok, scratch, &err);
    }
    if (rc != 0)
        fuzz_expect_one_line(&err);
    bertc_arena_reset(scratch);
    free(text);
    return 0;
}
