/* test/fuzz/fuzz_model_dir.c — libFuzzer target: a Hugging Face model
 * directory as bertc_model_dir_open reads it for predict, embed, encode,
 * explain, export-c and finetune --model. The directory (made once under
 * /tmp) holds the bert_model fixture's config.json and, when byte 0's bit 0
 * is set, its weights as model.safetensors; the rest of the input is
 * vocab.txt, then after the first NUL byte tokenizer_config.json (bit 1
 * clear: no vocab.txt; bit 2 clear: no tokenizer_config.json). A directory
 * that opens must be consistent: a tokenizer exactly when there is a
 * vocab.txt, special-token ids inside it, 1 <= model_max_length <=
 * max_position_embeddings. Errors must be one line. */
#include "test/fuzz/fuzz_util.h"

#include <unistd.h>

#define FIXTURE "test/data/zoo/bert_model/"

static char dir[64], config[128], weights[128], vocab[128], tokenizer[128];

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void remove_dir(void)
{
    unlink(config);
    unlink(weights);
    unlink(vocab);
    unlink(tokenizer);
    rmdir(dir);
}

/* bytes[0, n) as path; n < 0: no such file. */
static void put_file(const char *path, const void *bytes, long n)
{
    unlink(path);
    if (n < 0)
        return;
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(bytes, 1, (size_t)n, f) != (size_t)n || fclose(f) != 0) {
        fprintf(stderr, "%s: cannot write\n", path);
        exit(1);
    }
}

/* The fixture's file `name` whole, in a malloc'd buffer. */
static char *read_fixture(const char *name, long *n)
{
    char path[256];
    snprintf(path, sizeof path, FIXTURE "%s", name);
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    if (!f || fseek(f, 0, SEEK_END) != 0 || (*n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0 ||
        !(buf = malloc((size_t)*n)) || fread(buf, 1, (size_t)*n, f) != (size_t)*n) {
        fprintf(stderr, "%s: cannot read (run from the repository root)\n", path);
        exit(1);
    }
    fclose(f);
    return buf;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    setenv("BERTC_THREADS", "1", 0);
    snprintf(dir, sizeof dir, "/tmp/bertc_fuzz_model_dir_XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        exit(1);
    }
    snprintf(config, sizeof config, "%s/config.json", dir);
    snprintf(weights, sizeof weights, "%s/model.safetensors", dir);
    snprintf(vocab, sizeof vocab, "%s/vocab.txt", dir);
    snprintf(tokenizer, sizeof tokenizer, "%s/tokenizer_config.json", dir);
    long n;
    char *text = read_fixture("config.json", &n);
    put_file(config, text, n);
    free(text);
    atexit(remove_dir);
    return 0;
}

static void check_dir(const ModelDir *d, bool has_vocab)
{
    const Tokenizer *t = &d->tok;
    int32_t ids[5] = {t->pad_id, t->unk_id, t->cls_id, t->sep_id, t->mask_id};
    bool ok = d->has_tokenizer == has_vocab && d->model_max_length >= 1 &&
              d->model_max_length <= d->model.cfg.max_position_embeddings;
    for (int k = 0; k < 5 && d->has_tokenizer; k++)
        ok = ok && ids[k] >= 0 && ids[k] < t->V;
    if (!ok) {
        fprintf(stderr, "inconsistent directory: tokenizer %d (vocab %d), max_length %d of %d, "
                "special ids %d %d %d %d %d of %d\n", d->has_tokenizer, has_vocab,
                d->model_max_length, d->model.cfg.max_position_embeddings, ids[0], ids[1], ids[2],
                ids[3], ids[4], t->V);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char *fixture_weights;
    static long n_weights;
    if (!fixture_weights)
        fixture_weights = read_fixture("weights.safetensors", &n_weights);
    if (size < 1)
        return 0;
    const char *rest = (const char *)data + 1;
    size_t n = size - 1;
    const char *nul = memchr(rest, '\0', n);
    size_t n_vocab = nul ? (size_t)(nul - rest) : n;
    bool has_vocab = data[0] & 2;
    put_file(weights, fixture_weights, data[0] & 1 ? n_weights : -1);
    put_file(vocab, rest, has_vocab ? (long)n_vocab : -1);
    put_file(tokenizer, nul ? nul + 1 : "", data[0] & 4 ? (long)(nul ? n - n_vocab - 1 : 0) : -1);
    Arena *arena = bertc_arena_create("fuzz_model_dir", 1 << 20);
    ModelDir d;
    BertcError err = {{0}};
    if (bertc_model_dir_open(&d, arena, dir, &err) == 0)
        check_dir(&d, has_vocab);
    else
        fuzz_expect_one_line(&err);
    bertc_arena_destroy(arena);
    return 0;
}
