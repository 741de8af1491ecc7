/* test/test_hostile.c — the hostile files of tools/make_bad_files.py
 * (test/data/bad/{config,vocab,weights,inputs}/) are each rejected with a
 * specific message, through the library and through the `bertc` command
 * (exit status 1, one line on stderr, no signal); and opening any hostile
 * safetensors file is fast and takes memory bounded by the file's size, so
 * a 4 GB claim in a 1 KB file costs nothing. */
#include "nn/json.h"
#include "zoo/zoo.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BAD "test/data/bad/"
#define ZOO "test/data/zoo/bert_seqcls_single/"

/* Arrays, not pointers: Criterion may copy these into each test's process. */
typedef struct Hostile {
    char file[32];
    char want[72];      /* substring of the message */
} Hostile;

/* The same tables as tools/make_bad_files.py. */
static const Hostile configs[] = {
    {"empty.json", "expected a JSON value"},
    {"deep_nesting.json", "nesting deeper than 64"},
    {"nan_literal.json", "expected a JSON value"},
    {"infinity.json", "expected a JSON value"},
    {"number_overflow.json", "out of the range of a double"},
    {"int_beyond_int64.json", "outside the int64 range"},
    {"int_beyond_int32.json", "must be an integer in [1, 2147483647]"},
    {"negative_size.json", "found -2"},
    {"zero_heads.json", "num_attention_heads"},
    {"bom.json", "byte order mark"},
    {"invalid_utf8.json", "invalid UTF-8"},
    {"lone_surrogate.json", "surrogate"},
    {"comment.json", "expected ',' or '}'"},
    {"nul_byte.json", "after the end of the JSON value"},
    {"duplicate_key.json", "duplicate key \"vocab_size\""},
    {"architectures_not_list.json", "architectures"},
};

static const Hostile vocabs[] = {
    {"empty.txt", "empty file"},
    {"only_newlines.txt", "empty line"},
    {"invalid_utf8.txt", ":7: invalid UTF-8"},
    {"overlong_utf8.txt", ":6: invalid UTF-8"},
    {"nul_byte.txt", ":6: NUL byte"},
    {"duplicate.txt", ":8: duplicate token 'x' (first on line 6)"},
    {"no_unk.txt", "no [UNK] token"},
    {"binary.txt", "NUL byte"},
    {"utf16.txt", "invalid UTF-8"},
};

/* Weights for ZOO's model. */
static const Hostile weights[] = {
    {"nan_weight.safetensors", "'bert.embeddings.word_embeddings.weight'[7, 3] is nan"},
    {"inf_weight.safetensors", "'classifier.weight'[1, 8] is inf"},
    {"missing_param.safetensors", "missing parameter 'classifier.weight'"},
    {"wrong_shape.safetensors", "'classifier.weight' has shape [2, 32]"},
    {"crc_flipped_bit.safetensors", "data section checksum mismatch (stored crc32"},
};

/* Inputs for ZOO's model (B = 3, S = 16). */
static const Hostile inputs[] = {
    {"id_beyond_vocab.safetensors", "'input_ids'[0, 5] = 120 is >= vocab_size 120"},
    {"negative_id.safetensors", "'input_ids'[0, 0] = -1 is below 0"},
    {"id_beyond_int32.safetensors", "outside the int32 range"},
    {"mask_not_binary.safetensors", "'attention_mask'[0, 0] = 2 is neither 0 nor 1"},
    {"type_beyond.safetensors", "'token_type_ids'[0, 0] = 5 is >= type_vocab_size 2"},
    {"label_beyond.safetensors", "'labels'[1] = 3"},
    {"float_ids.safetensors", "'input_ids' must hold integers"},
    {"missing_ids.safetensors", "missing input tensor 'input_ids'"},
    {"wrong_rank.safetensors", "'input_ids' must have shape"},
    {"mask_shape.safetensors", "'attention_mask' must have shape [3, 16], got [3, 15]"},
    {"too_long.safetensors", "max_position_embeddings 40"},
    {"too_many_tensors.safetensors", "more than the 32 inputs"},
};

#define COUNT(a) (sizeof a / sizeof a[0])

static char out_dir[64];

static void setup(void)
{
    snprintf(out_dir, sizeof out_dir, "/tmp/bertc_hostile_%d", (int)getpid());
    cr_assert_eq(mkdir(out_dir, 0755), 0, "cannot create %s", out_dir);
}

static void teardown(void)
{
    char path[128];
    static const char *const files[] = {"stderr", "out.safetensors"};
    for (size_t i = 0; i < COUNT(files); i++) {
        snprintf(path, sizeof path, "%s/%s", out_dir, files[i]);
        remove(path);
    }
    rmdir(out_dir);
}

TestSuite(hostile, .init = setup, .fini = teardown);

/* Every file in dir must be in the table and vice versa. */
static void table_matches_dir(const char *dir, const Hostile *table, size_t n)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "cannot list %s (run from the repository root)", dir);
    size_t files = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        files++;
        bool known = false;
        for (size_t i = 0; i < n; i++)
            known |= strcmp(table[i].file, e->d_name) == 0;
        cr_expect(known, "%s%s is not in the table of test/test_hostile.c", dir, e->d_name);
    }
    closedir(d);
    cr_expect_eq(files, n, "%zu files in %s, %zu in the table", files, dir, n);
}

/* Runs `bertc args...` (NULL-terminated); the file must be refused: exit
 * status 1, no signal, one line on stderr holding `want` and the path. */
static void cli_refuses(const char *path, const char *want, char *const args[])
{
    char err_path[128], *argv[16] = {BERTC_CLI};
    snprintf(err_path, sizeof err_path, "%s/stderr", out_dir);
    int n = 1;
    for (; args[n - 1]; n++)
        argv[n] = args[n - 1];
    argv[n] = NULL;
    pid_t pid = fork();
    cr_assert_geq(pid, 0, "fork failed");
    if (pid == 0) {
        int fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644), null = open("/dev/null", O_WRONLY);
        dup2(fd, 2);
        dup2(null, 1);
        execv(BERTC_CLI, argv);
        _exit(127);
    }
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(!WIFSIGNALED(status), "bertc on %s died of signal %d", path, WTERMSIG(status));
    char text[2048] = "";
    FILE *f = fopen(err_path, "r");
    size_t len = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f)
        fclose(f);
    text[len] = '\0';
    cr_expect_eq(WEXITSTATUS(status), 1, "bertc on %s: exit status %d, stderr: %s", path,
                 WEXITSTATUS(status), text);
    cr_expect(strstr(text, want) && strstr(text, path),
              "bertc on %s: stderr \"%s\" lacks \"%s\" or the path", path, text, want);
    cr_expect(len > 0 && strchr(text, '\n') == text + len - 1,
              "bertc on %s: not one line on stderr: \"%s\"", path, text);
}

static void expect_message(int rc, const BertcError *err, const char *path, const char *want)
{
    cr_expect_neq(rc, 0, "%s was accepted; it should fail with \"%s\"", path, want);
    cr_expect(strstr(err->msg, want) && strstr(err->msg, path),
              "%s: message \"%s\" lacks \"%s\" or the path", path, err->msg, want);
}

Test(hostile, config_files)
{
    table_matches_dir(BAD "config/", configs, COUNT(configs));
    for (size_t i = 0; i < COUNT(configs); i++) {
        char path[320];
        snprintf(path, sizeof path, BAD "config/%.31s", configs[i].file);
        BertConfig cfg;
        BertcError err = {{0}};
        expect_message(bertc_bert_config_read(path, &cfg, &err), &err, path, configs[i].want);
        cli_refuses(path, configs[i].want, (char *[]){"summary", "--config", path, NULL});
    }
}

Test(hostile, vocab_files)
{
    table_matches_dir(BAD "vocab/", vocabs, COUNT(vocabs));
    Arena *a = bertc_arena_create("vocab", 1 << 16);
    for (size_t i = 0; i < COUNT(vocabs); i++) {
        char path[320];
        snprintf(path, sizeof path, BAD "vocab/%.31s", vocabs[i].file);
        Tokenizer t;
        BertcError err = {{0}};
        expect_message(bertc_tokenizer_load(&t, a, path, &err), &err, path, vocabs[i].want);
        cli_refuses(path, vocabs[i].want,
                    (char *[]){"tokenize", "--vocab", path, "hello", NULL});
        bertc_arena_reset(a);
    }
    bertc_arena_destroy(a);
}

/* bertc_zoo_run (what `bertc run` calls) and the command itself. */
static void run_refuses(const char *weights_path, const char *inputs_path, const char *path,
                        const char *want)
{
    char out[128];
    snprintf(out, sizeof out, "%s/out.safetensors", out_dir);
    RunArgs args = {.config = ZOO "config.json", .weights = weights_path,
                    .inputs = inputs_path, .output = out};
    BertcError err = {{0}};
    expect_message(bertc_zoo_run(&args, &err), &err, path, want);
    cr_expect_neq(access(out, F_OK), 0, "%s: an output was written", path);
    cli_refuses(path, want,
                (char *[]){"run", "--config", ZOO "config.json", "--weights",
                           (char *)weights_path, "--inputs", (char *)inputs_path, "--output",
                           out, NULL});
}

Test(hostile, weights_files)
{
    table_matches_dir(BAD "weights/", weights, COUNT(weights));
    for (size_t i = 0; i < COUNT(weights); i++) {
        char path[320];
        snprintf(path, sizeof path, BAD "weights/%.31s", weights[i].file);
        run_refuses(path, ZOO "inputs.safetensors", path, weights[i].want);
    }
}

Test(hostile, inputs_files)
{
    table_matches_dir(BAD "inputs/", inputs, COUNT(inputs));
    for (size_t i = 0; i < COUNT(inputs); i++) {
        char path[320];
        snprintf(path, sizeof path, BAD "inputs/%.31s", inputs[i].file);
        run_refuses(ZOO "weights.safetensors", path, path, inputs[i].want);
    }
}

/* Every hostile safetensors file, opened from memory into an arena of ours:
 * at most 16 bytes of bookkeeping per byte of file (plus 64 KB), whatever
 * sizes its header claims (header_4gb, huge_tensor: 4 GB claimed in a 1 KB
 * file; header_2pow63; tensor_1gb). Work that followed a claimed size would
 * show as a timeout; no wall-clock figure is asserted (a test under valgrind
 * or on a loaded machine is slow, and speed is the benches' job). */
Test(hostile, safetensors_memory_bounded_by_file_size, .timeout = 60)
{
    DIR *d = opendir(BAD);
    cr_assert_not_null(d);
    int files = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (!strstr(e->d_name, ".safetensors"))
            continue;
        char path[320];
        snprintf(path, sizeof path, BAD "%s", e->d_name);
        FILE *f = fopen(path, "rb");
        cr_assert_not_null(f, "%s", path);
        fseek(f, 0, SEEK_END);
        size_t size = (size_t)ftell(f);
        fseek(f, 0, SEEK_SET);
        char *bytes = malloc(size + 1);
        cr_assert_eq(fread(bytes, 1, size, f), size);
        fclose(f);
        Arena *a = bertc_arena_create("bounded", 4096);
        SafeTensors *st;
        BertcError err;
        if (bertc_st_open_memory(a, path, bytes, size, &st, &err) == 0)
            bertc_st_close(st);
        size_t used = bertc_arena_high_water(a);
        cr_expect_leq(used, 16 * size + 65536, "%s (%zu bytes) took %zu bytes to open", path,
                      size, used);
        bertc_arena_destroy(a);
        free(bytes);
        files++;
    }
    closedir(d);
    cr_expect_geq(files, 40, "only %d hostile safetensors files", files);
}

/* A safetensors file whose 30 MB header is (a) one long array [0,0,...],
 * (b) a tensor entry with a 15-million-entry shape, (c) a million tiny
 * members: each is refused, taking at most JSON_BYTES_PER_INPUT_BYTE (the
 * parser's documented bound) + 1 (the header's own copy) bytes of arena per
 * byte of file, not gigabytes. */
Test(hostile, long_json_headers_take_memory_bounded_by_their_size, .timeout = 900)
{
    static const char *const want[] = {"expected a JSON object of tensor entries",
                                       "shape has 15", "a tensor entry must be an object"};
    size_t header = 30u << 20;
    char *file = malloc(8 + header);
    cr_assert_not_null(file);
    for (int kind = 0; kind < 3; kind++) {
        char *h = file + 8;
        size_t n = 0;
        static const char *const open[] = {"[", "{\"t\": {\"dtype\": \"F32\", \"data_offsets\": "
                                                 "[0, 0], \"shape\": [", "{"};
        n += (size_t)sprintf(h, "%s", open[kind]);
        for (size_t k = 0; n + 24 < header; k++)
            n += kind < 2 ? (size_t)sprintf(h + n, "0,") : (size_t)sprintf(h + n, "\"%zx\":0,", k);
        n += (size_t)sprintf(h + n, kind == 0 ? "0]" : kind == 1 ? "0]}}" : "\"x\":0}");
        uint64_t len = n;
        for (int i = 0; i < 8; i++)
            file[i] = (char)(len >> (8 * i));
        Arena *a = bertc_arena_create("bounded", 4096);
        SafeTensors *st;
        BertcError err = {{0}};
        cr_expect_neq(bertc_st_open_memory(a, "long.safetensors", file, 8 + n, &st, &err), 0);
        cr_expect(strstr(err.msg, want[kind]), "kind %d: message \"%.200s\" lacks \"%s\"", kind,
                  err.msg, want[kind]);
        size_t used = bertc_arena_high_water(a);
        cr_expect_leq(used, (JSON_BYTES_PER_INPUT_BYTE + 1) * (8 + n) + 65536,
                      "kind %d: %zu MB of arena for a %zu MB header (%.1f a byte)", kind,
                      used >> 20, n >> 20, (double)used / (double)n);
        bertc_arena_destroy(a);
    }
    free(file);
}

/* Each architecture's own size keys through the command: `bertc summary`
 * and `bertc init` refuse a model above the limit in one line naming the
 * config file and the key, before allocating it (they would die in the
 * arena otherwise). */
Test(hostile, config_sizes_through_the_command)
{
    static const struct {
        char keys[120];
        char want[40];
    } cases[] = {
        {"\"architectures\": [\"Summarizer\"], \"ff_size\": 8, \"heads\": 4, \"inter_layers\": 1, "
         "\"pe_max_len\": 2000000000", "pe_max_len 2000000000"},
        {"\"architectures\": [\"QAConvModelV2\"], \"sep_token_id\": 1, "
         "\"conv_filters\": 2000000000", "conv_filters 2000000000"},
        {"\"architectures\": [\"BertForSequenceClassification\"], \"num_labels\": 2000000000",
         "num_labels 2000000000"},
    };
    for (size_t i = 0; i < COUNT(cases); i++) {
        char path[128];
        snprintf(path, sizeof path, "%s/config.json", out_dir);
        FILE *f = fopen(path, "w");
        cr_assert_not_null(f);
        fprintf(f, "{%s, \"vocab_size\": 100, \"hidden_size\": 32, \"num_hidden_layers\": 1, "
                   "\"num_attention_heads\": 4, \"intermediate_size\": 37, "
                   "\"max_position_embeddings\": 64}", cases[i].keys);
        fclose(f);
        cli_refuses(path, cases[i].want, (char *[]){"summary", "--config", path, NULL});
        char out[128];
        snprintf(out, sizeof out, "%s/out.safetensors", out_dir);
        cli_refuses(path, cases[i].want,
                    (char *[]){"init", "--config", path, "--output", out, NULL});
        remove(path);
    }
}
