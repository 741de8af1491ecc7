/* test/test_safetensors.c — nn/safetensors.h against the corpus made by
 * tools/make_bad_safetensors.py: every hostile file is rejected with a
 * specific message (from a path and from memory), the good files read back
 * their documented values for every dtype, the writer reproduces Hugging
 * Face's layout byte for byte, and writing is atomic. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "nn/safetensors.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BAD_DIR "test/data/bad/"

static Arena *arena;

static void setup(void) { arena = bertc_arena_create("test_safetensors", 1 << 16); }
static void teardown(void) { bertc_arena_destroy(arena); }

TestSuite(safetensors, .init = setup, .fini = teardown);

/* The whole file in an arena block; *len gets its size. */
static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    cr_assert_not_null(fp, "cannot open %s (run the tests from the repository root)", path);
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    uint8_t *buf = bertc_arena_alloc(arena, (size_t)n + 1);
    cr_assert_eq(fread(buf, 1, (size_t)n, fp), (size_t)n, "short read of %s", path);
    fclose(fp);
    *len = (size_t)n;
    return buf;
}

static SafeTensors *open_ok(const char *path)
{
    BertcError err;
    SafeTensors *st = NULL;
    cr_assert_eq(bertc_st_open_file(NULL, path, &st, &err), 0, "%s", err.msg);
    return st;
}

/* ------------------------------------------------------------------------ */
/* The hostile corpus                                                        */
/* ------------------------------------------------------------------------ */

/* Arrays, not pointers: Criterion copies parameters into each test's process,
 * where pointers into the parent's address space would dangle. */
typedef struct BadCase {
    char file[32];     /* in test/data/bad/, without .safetensors */
    char stage[8];     /* "open", or "f32"/"i32": reading tensor "x" fails */
    char want[48];     /* substring of the message */
} BadCase;

/* The same table as BAD in tools/make_bad_safetensors.py. */
static BadCase bad_cases[] = {
    {"empty", "open", "shorter than the 8-byte"},
    {"short", "open", "shorter than the 8-byte"},
    {"truncated", "open", "run past the end of the data section"},
    {"header_past_eof", "open", "runs past the end of the file"},
    {"header_2pow63", "open", "runs past the end of the file"},
    {"header_4gb", "open", "runs past the end of the file"},
    {"header_empty", "open", "expected a JSON value"},
    {"json_syntax", "open", "trailing comma"},
    {"json_garbage", "open", "after the end of the JSON value"},
    {"json_utf8", "open", "invalid UTF-8"},
    {"not_object", "open", "expected a JSON object"},
    {"entry_not_object", "open", "a tensor entry must be an object"},
    {"unknown_dtype", "open", "unknown dtype"},
    {"dtype_not_string", "open", "expected a string"},
    {"missing_offsets", "open", "has no \"data_offsets\""},
    {"unknown_field", "open", "unknown field"},
    {"offsets_not_pair", "open", "data_offsets must be an array"},
    {"overlap", "open", "overlap"},
    {"hole", "open", "[8, 12) belong to no tensor"},
    {"hole_at_start", "open", "[0, 4) belong to no tensor"},
    {"trailing_bytes", "open", "4 trailing bytes [8, 12)"},
    {"no_tensors_trailing", "open", "8 trailing bytes"},
    {"empty_inside", "open", "overlap"},
    {"offsets_out_of_range", "open", "run past the end of the data section"},
    {"begin_gt_end", "open", "begin > end"},
    {"shape_bytes_mismatch", "open", "needs 3 x 4 bytes"},
    {"negative_shape", "open", "non-negative"},
    {"shape_float", "open", "expected an integer"},
    {"shape_overflow", "open", "overflows"},
    {"too_many_dims", "open", "supports up to 6"},
    {"duplicate_key", "open", "duplicate key"},
    {"metadata_not_object", "open", "__metadata__ must be an object"},
    {"metadata_not_string", "open", "__metadata__ values must be strings"},
    {"nul_name", "open", "NUL"},
    {"dtype_nul", "open", "NUL character"},
    {"field_nul", "open", "unknown field"},
    {"metadata_key_nul", "open", "NUL character"},
    {"huge_tensor", "open", "run past the end of the data section"},
    {"deep_nesting", "open", "nesting deeper than 64"},
    {"header_1gb", "open", "runs past the end of the file"},
    {"tensor_1gb", "open", "run past the end of the data section"},
    {"shape_wraps_to_zero", "open", "overflows 2^63"},
    {"shape_beyond_int64", "open", "outside the int64 range"},
    {"shape_not_array", "open", "shape must be an array of integers"},
    {"offsets_negative", "open", "must be a non-negative integer"},
    {"offsets_float", "open", "written with a fraction or exponent"},
    {"header_nul_padding", "open", "unexpected byte 0x00 after the end"},
    {"bool_byte", "f32", "must be 0 or 1"},
    {"i64_out_of_int32", "i32", "outside the int32 range"},
    {"float_as_int", "i32", "cannot read as int32"},
    {"i8_unsupported", "f32", "cannot read as float32"},
    {"crc_flipped_bit", "open", "data section checksum mismatch"},
    {"crc_not_hex", "open", "\"bertc.crc32\" is \"0xcbf439\", not 8 hex digits"},
    {"crc_too_short", "open", "not 8 hex digits"},
};
#define N_BAD (sizeof bad_cases / sizeof bad_cases[0])

/* Opens st (already open) or fails at the read stage; checks the message. */
static void expect_read_failure(SafeTensors *st, const BadCase *c)
{
    BertcError err = {{0}};
    const StTensorInfo *x = bertc_st_find(st, "x");
    cr_assert_not_null(x, "%s: no tensor x", c->file);
    float f[8];
    int32_t i[8];
    int rc = strcmp(c->stage, "f32") == 0 ? bertc_st_read_f32(st, x, f, (size_t)x->numel, &err)
                                           : bertc_st_read_i32(st, x, i, (size_t)x->numel, &err);
    cr_expect_neq(rc, 0, "%s: reading x as %s should fail", c->file, c->stage);
    cr_expect(strstr(err.msg, c->want), "%s: message \"%s\" lacks \"%s\"", c->file, err.msg,
              c->want);
    cr_expect(strstr(err.msg, "\"x\""), "%s: message \"%s\" does not name the tensor",
              c->file, err.msg);
}

static void check_bad(const BadCase *c, SafeTensors *st, int rc, const BertcError *err,
                      const char *name, const char *how)
{
    if (strcmp(c->stage, "open") == 0) {
        cr_expect_neq(rc, 0, "%s (%s) should be rejected: %s", c->file, how, c->want);
        cr_expect(strstr(err->msg, c->want), "%s (%s): message \"%s\" lacks \"%s\"", c->file,
                  how, err->msg, c->want);
        cr_expect(strstr(err->msg, name), "%s (%s): message \"%s\" does not name the file",
                  c->file, how, err->msg);
        return;
    }
    cr_assert_eq(rc, 0, "%s (%s) should open: %s", c->file, how, err->msg);
    expect_read_failure(st, c);
    bertc_st_close(st);
}

ParameterizedTestParameters(safetensors, bad_file)
{
    return cr_make_param_array(BadCase, bad_cases, N_BAD);
}

ParameterizedTest(BadCase *c, safetensors, bad_file)
{
    char path[256];
    snprintf(path, sizeof path, BAD_DIR "%s.safetensors", c->file);
    BertcError err = {{0}};
    SafeTensors *st = NULL;
    int rc = bertc_st_open_file(NULL, path, &st, &err);
    check_bad(c, st, rc, &err, path, "file");

    size_t len;
    uint8_t *bytes = slurp(path, &len);
    rc = bertc_st_open_memory(NULL, "mem.safetensors", bytes, len, &st, &err);
    check_bad(c, st, rc, &err, "mem.safetensors", "memory");

    rc = bertc_st_open_memory(arena, "arena.safetensors", bytes, len, &st, &err);
    check_bad(c, st, rc, &err, "arena.safetensors", "caller arena");
}

Test(safetensors, corpus_and_table_agree)
{
    DIR *d = opendir(BAD_DIR);
    cr_assert_not_null(d, "cannot list " BAD_DIR);
    size_t files = 0;
    for (struct dirent *e; (e = readdir(d));) {
        char *dot = strstr(e->d_name, ".safetensors");
        if (!dot)
            continue;
        files++;
        bool known = false;
        for (size_t i = 0; i < N_BAD; i++)
            known |= strlen(bad_cases[i].file) == (size_t)(dot - e->d_name) &&
                     strncmp(bad_cases[i].file, e->d_name, (size_t)(dot - e->d_name)) == 0;
        cr_expect(known, "%s is not in bad_cases", e->d_name);
    }
    closedir(d);
    cr_expect_eq(files, N_BAD, "%zu files in " BAD_DIR ", %zu cases", files, N_BAD);
}

Test(safetensors, missing_file)
{
    BertcError err;
    SafeTensors *st;
    cr_expect_neq(bertc_st_open_file(NULL, "test/data/no_such.safetensors", &st, &err), 0);
    cr_expect(strstr(err.msg, "test/data/no_such.safetensors: cannot open"), "%s", err.msg);
    cr_expect_neq(bertc_st_open_file(NULL, "test/data", &st, &err), 0);
    cr_expect(strstr(err.msg, "not a regular file"), "%s", err.msg);
}

/* ------------------------------------------------------------------------ */
/* Good files                                                                */
/* ------------------------------------------------------------------------ */

static void expect_f32(SafeTensors *st, const char *name, const float *want, size_t n)
{
    BertcError err;
    const StTensorInfo *t = bertc_st_find(st, name);
    cr_assert_not_null(t, "no tensor %s", name);
    cr_assert_eq((size_t)t->numel, n, "%s: numel %lld, expected %zu", name,
                 (long long)t->numel, n);
    float got[16];
    cr_assert_eq(bertc_st_read_f32(st, t, got, n, &err), 0, "%s", err.msg);
    for (size_t i = 0; i < n; i++)
        cr_expect(memcmp(&got[i], &want[i], sizeof(float)) == 0,
                  "%s[%zu]: expected %.9g, got %.9g (bitwise)", name, i, want[i], got[i]);
}

static void expect_i32(SafeTensors *st, const char *name, const int32_t *want, size_t n)
{
    BertcError err;
    const StTensorInfo *t = bertc_st_find(st, name);
    cr_assert_not_null(t, "no tensor %s", name);
    int32_t got[16];
    cr_assert_eq(bertc_st_read_i32(st, t, got, n, &err), 0, "%s", err.msg);
    for (size_t i = 0; i < n; i++)
        cr_expect_eq(got[i], want[i], "%s[%zu]: expected %d, got %d", name, i, want[i], got[i]);
}

Test(safetensors, good_all_dtypes_values)
{
    SafeTensors *st = open_ok("test/data/good_all_dtypes.safetensors");
    cr_expect_eq(st->n_tensors, 12);
    expect_f32(st, "f32", (float[]){0.0f, 1.5f, -2.25f, 1024.0f, 3.4028234663852886e38f,
                                    -1.1754943508222875e-38f}, 6);
    expect_f32(st, "f16", (float[]){1.0f, -2.0f, 0.5f, 65504.0f, 0x1p-24f, -0.0f}, 6);
    expect_f32(st, "f16inf", (float[]){INFINITY, -INFINITY}, 2);
    expect_f32(st, "bf16", (float[]){1.0f, -3.5f, 0x1p100f, 0.0078125f}, 4);
    expect_f32(st, "f64", (float[]){(float)0.1, (float)-1e10, (float)1e-3}, 3);
    expect_f32(st, "i64", (float[]){0.0f, -1.0f, 2147483647.0f, -2147483648.0f}, 4);
    expect_f32(st, "u8", (float[]){0, 1, 128, 255}, 4);
    expect_f32(st, "bool", (float[]){1, 0, 0, 1, 1}, 5);
    expect_f32(st, "scalar", (float[]){42.0f}, 1);
    expect_i32(st, "i64", (int32_t[]){0, -1, 2147483647, INT32_MIN}, 4);
    expect_i32(st, "i32", (int32_t[]){7, -7, 2147483647}, 3);
    expect_i32(st, "u8", (int32_t[]){0, 1, 128, 255}, 4);
    expect_i32(st, "bool", (int32_t[]){1, 0, 0, 1, 1}, 5);
    bertc_st_close(st);
}

Test(safetensors, good_all_dtypes_shapes_and_metadata)
{
    SafeTensors *st = open_ok("test/data/good_all_dtypes.safetensors");
    const StTensorInfo *t = bertc_st_find(st, "i64");
    cr_assert_not_null(t);
    cr_expect_eq(t->dtype, ST_I64);
    cr_expect_eq(t->ndim, 2);
    cr_expect_eq(t->shape[0], 2);
    cr_expect_eq(t->shape[1], 2);
    cr_expect_eq(bertc_st_find(st, "scalar")->ndim, 0);
    cr_expect_eq(bertc_st_find(st, "scalar")->numel, 1);
    cr_expect_eq(bertc_st_find(st, "empty")->numel, 0);
    cr_expect_str_eq(st->tensors[0].name, "f32", "header order is kept");
    cr_expect_str_eq(st->tensors[11].name, "i8");
    cr_expect_eq(st->n_metadata, 2);
    cr_expect_str_eq(bertc_st_metadata_get(st, "format"), "pt");
    cr_expect_str_eq(bertc_st_metadata_get(st, "source"), "make_bad_safetensors.py");
    cr_expect_null(bertc_st_metadata_get(st, "nope"));
    cr_expect_null(bertc_st_find(st, "nope"));
    cr_expect_eq(st->data_start % 8, 0, "header padded to 8");
    bertc_st_close(st);
}

Test(safetensors, load_into_arena)
{
    SafeTensors *st = open_ok("test/data/good_all_dtypes.safetensors");
    BertcError err;
    Tensor t;
    ITensor it;
    cr_assert_eq(bertc_st_load_tensor(st, "f32", arena, &t, &err), 0, "%s", err.msg);
    cr_expect_eq(t.ndim, 2);
    cr_expect_eq(t.shape[1], 3);
    cr_expect_eq(t.data[3], 1024.0f);
    cr_assert_eq(bertc_st_load_tensor(st, "empty", arena, &t, &err), 0, "%s", err.msg);
    cr_expect_eq(t.numel, 0);
    cr_assert_eq(bertc_st_load_itensor(st, "i64", arena, &it, &err), 0, "%s", err.msg);
    cr_expect_eq(it.data[3], INT32_MIN);
    cr_expect_neq(bertc_st_load_tensor(st, "bert.missing.weight", arena, &t, &err), 0);
    cr_expect(strstr(err.msg, "no tensor named \"bert.missing.weight\" (the file has 12 "
                              "tensors)"), "%s", err.msg);
    cr_expect_neq(bertc_st_load_itensor(st, "f16", arena, &it, &err), 0);
    cr_expect(strstr(err.msg, "tensor \"f16\" has dtype F16"), "%s", err.msg);
    bertc_st_close(st);
}

Test(safetensors, count_mismatch_is_an_error)
{
    SafeTensors *st = open_ok("test/data/good_all_dtypes.safetensors");
    BertcError err;
    float buf[8];
    cr_expect_neq(bertc_st_read_f32(st, bertc_st_find(st, "f32"), buf, 5, &err), 0);
    cr_expect(strstr(err.msg, "has 6 elements (shape [2, 3]) but the destination holds 5"),
              "%s", err.msg);
    bertc_st_close(st);
}

Test(safetensors, good_spaced_unsorted_and_unicode)
{
    SafeTensors *st = open_ok("test/data/good_spaced.safetensors");
    cr_expect_eq(st->n_tensors, 2);
    expect_f32(st, "z", (float[]){-1.0f, 1.0f}, 2);
    expect_i32(st, "caf\xc3\xa9", (int32_t[]){10, 20, 30}, 3);
    cr_expect_eq(st->data_length, 20);
    bertc_st_close(st);
}

Test(safetensors, memory_open_without_malloc)
{
    size_t len;
    uint8_t *bytes = slurp("test/data/good_hf_layout.safetensors", &len);
    static uint8_t buffer[1 << 16];
    Arena fixed;
    bertc_arena_init_fixed(&fixed, "embedded", buffer, sizeof buffer);
    size_t allocs = bertc_sys_alloc_count();
    BertcError err;
    SafeTensors *st;
    cr_assert_eq(bertc_st_open_memory(&fixed, "flash", bytes, len, &st, &err), 0, "%s", err.msg);
    int32_t b[2];
    cr_assert_eq(bertc_st_read_i32(st, bertc_st_find(st, "b"), b, 2, &err), 0, "%s", err.msg);
    cr_expect_eq(b[1], -2);
    bertc_st_close(st);
    cr_expect_eq(bertc_sys_alloc_count(), allocs, "opening from memory with a fixed arena "
                 "must not allocate");
    cr_expect_lt(bertc_arena_high_water(&fixed), 8192, "used %zu bytes", bertc_arena_high_water(&fixed));
}

/* ------------------------------------------------------------------------ */
/* CRC-32                                                                    */
/* ------------------------------------------------------------------------ */

/* Check values of zlib's crc32() (the catalogue's CRC-32/ISO-HDLC). */
Test(safetensors, crc32_known_vectors)
{
    static const struct {
        const char *text;
        uint32_t crc;
    } known[] = {
        {"", 0x00000000u},
        {"a", 0xe8b7be43u},
        {"123456789", 0xcbf43926u},
        {"The quick brown fox jumps over the lazy dog", 0x414fa339u},
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        size_t n = strlen(known[i].text);
        cr_expect_eq(bertc_st_crc32(0, known[i].text, n), known[i].crc, "bertc_st_crc32(\"%s\") = %08x, "
                     "expected %08x", known[i].text, bertc_st_crc32(0, known[i].text, n), known[i].crc);
        cr_expect_eq(bertc_st_crc32_bitwise(0, known[i].text, n), known[i].crc,
                     "bertc_st_crc32_bitwise(\"%s\") = %08x, expected %08x", known[i].text,
                     bertc_st_crc32_bitwise(0, known[i].text, n), known[i].crc);
    }
    /* chaining: "1234" then "56789" is "123456789" */
    cr_expect_eq(bertc_st_crc32(bertc_st_crc32(0, "1234", 4), "56789", 5), 0xcbf43926u);
}

/* The tables against the bit-at-a-time form: every byte value, every length
 * 0..64 at every start offset 0..7 (the 8-byte steps and the byte tail), and
 * 64 KB of pseudo-random bytes. */
Test(safetensors, crc32_table_matches_bitwise)
{
    uint32_t fast = 0, slow = 0;
    for (int b = 0; b < 256; b++) {
        uint8_t byte = (uint8_t)b;
        cr_assert_eq(bertc_st_crc32(0, &byte, 1), bertc_st_crc32_bitwise(0, &byte, 1), "byte 0x%02x", b);
        fast = bertc_st_crc32(fast, &byte, 1);
        slow = bertc_st_crc32_bitwise(slow, &byte, 1);
        cr_assert_eq(fast, slow, "after bytes 0..0x%02x: %08x vs bitwise %08x", b, fast, slow);
    }
    uint8_t *bytes = bertc_arena_alloc(arena, 1 << 16);
    uint64_t x = 0x9E3779B97F4A7C15u;
    for (size_t i = 0; i < 1 << 16; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64 */
        bytes[i] = (uint8_t)(x >> 56);
    }
    for (size_t start = 0; start < 8; start++)
        for (size_t n = 0; n <= 64; n++)
            cr_assert_eq(bertc_st_crc32(0x12345678u, bytes + start, n),
                         bertc_st_crc32_bitwise(0x12345678u, bytes + start, n),
                         "%zu bytes from offset %zu", n, start);
    cr_expect_eq(bertc_st_crc32(0, bytes, 1 << 16), bertc_st_crc32_bitwise(0, bytes, 1 << 16));
}

/* ------------------------------------------------------------------------ */
/* Writing                                                                   */
/* ------------------------------------------------------------------------ */

static const int64_t shape_a[2] = {2, 2}, shape_b[1] = {2}, shape_c[1] = {1};
static const float data_a[4] = {1, 2, 3, 4}, data_c[1] = {0.5f};
static const int64_t data_b[2] = {1, -2};

Test(safetensors, writer_matches_huggingface_layout)
{
    /* Given in an order HF would change: the writer must sort. */
    StEntry e[3] = {
        {.name = "c", .dtype = ST_F32, .ndim = 1, .shape = shape_c, .f32 = data_c},
        {.name = "a", .dtype = ST_F32, .ndim = 2, .shape = shape_a, .f32 = data_a},
        {.name = "b", .dtype = ST_I64, .ndim = 1, .shape = shape_b, .i64 = data_b},
    };
    StMetadata meta[1] = {{"format", "pt"}};
    BertcError err;
    size_t size = 0, want_len;
    cr_assert_eq(bertc_st_write_buffer(e, 3, meta, 1, NULL, 0, &size, &err), 0, "%s", err.msg);
    uint8_t *want = slurp("test/data/good_hf_layout.safetensors", &want_len);
    cr_assert_eq(size, want_len, "size %zu, HF file %zu", size, want_len);
    uint8_t *got = bertc_arena_alloc(arena, size);
    cr_assert_eq(bertc_st_write_buffer(e, 3, meta, 1, got, size, &size, &err), 0, "%s", err.msg);
    for (size_t i = 0; i < size; i++)
        cr_assert_eq(got[i], want[i], "byte %zu: wrote 0x%02x, HF has 0x%02x", i, got[i], want[i]);
    cr_expect_neq(bertc_st_write_buffer(e, 3, meta, 1, got, size - 1, &size, &err), 0);
    cr_expect(strstr(err.msg, "needs 244 bytes but the buffer has 243"), "%s", err.msg);
}

Test(safetensors, empty_file_layout)
{
    uint8_t buf[16];
    size_t size;
    BertcError err;
    cr_assert_eq(bertc_st_write_buffer(NULL, 0, NULL, 0, buf, sizeof buf, &size, &err), 0, "%s", err.msg);
    cr_assert_eq(size, 16);
    cr_expect_eq(memcmp(buf, "\x08\0\0\0\0\0\0\0{}      ", 16), 0, "as HF's test_empty");
}

Test(safetensors, writer_rejects_bad_entries)
{
    BertcError err;
    size_t size;
    StEntry dup[2] = {
        {.name = "w", .dtype = ST_F32, .ndim = 1, .shape = shape_c, .f32 = data_c},
        {.name = "w", .dtype = ST_I64, .ndim = 1, .shape = shape_b, .i64 = data_b},
    };
    cr_expect_neq(bertc_st_write_buffer(dup, 2, NULL, 0, NULL, 0, &size, &err), 0);
    cr_expect(strstr(err.msg, "\"w\" appears twice"), "%s", err.msg);
    StEntry reserved = {.name = "__metadata__", .dtype = ST_F32, .ndim = 1, .shape = shape_c,
                        .f32 = data_c};
    cr_expect_neq(bertc_st_write_buffer(&reserved, 1, NULL, 0, NULL, 0, &size, &err), 0);
    cr_expect(strstr(err.msg, "reserved"), "%s", err.msg);
    StEntry f16 = {.name = "h", .dtype = ST_F16, .ndim = 1, .shape = shape_c, .f32 = data_c};
    cr_expect_neq(bertc_st_write_buffer(&f16, 1, NULL, 0, NULL, 0, &size, &err), 0);
    cr_expect(strstr(err.msg, "got dtype F16"), "%s", err.msg);
    StEntry bad_utf8 = {.name = "\xff", .dtype = ST_F32, .ndim = 1, .shape = shape_c,
                        .f32 = data_c};
    cr_expect_neq(bertc_st_write_buffer(&bad_utf8, 1, NULL, 0, NULL, 0, &size, &err), 0);
    cr_expect(strstr(err.msg, "not valid UTF-8"), "%s", err.msg);
    StMetadata meta[2] = {{"k", "1"}, {"k", "2"}};
    cr_expect_neq(bertc_st_write_buffer(NULL, 0, meta, 2, NULL, 0, &size, &err), 0);
    cr_expect(strstr(err.msg, "metadata key \"k\" appears twice"), "%s", err.msg);
}

/* A fresh directory under /tmp for file tests. */
static char *temp_dir(void)
{
    char *dir = bertc_arena_alloc(arena, 64);
    strcpy(dir, "/tmp/bertc_st_XXXXXX");
    cr_assert_not_null(mkdtemp(dir), "mkdtemp failed");
    return dir;
}

static size_t count_entries(const char *dir, const char *containing)
{
    DIR *d = opendir(dir);
    size_t n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += strstr(e->d_name, containing) != NULL;
    if (d)
        closedir(d);
    return n;
}

static void remove_dir(const char *dir, const char *file)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    remove(path);
    rmdir(dir);
}

/* bertc_st_write_file's ST_CRC32_KEY: after the caller's metadata, 8 lowercase hex
 * digits, the CRC-32 of every byte after the header. */
static void expect_crc32_of_data(const SafeTensors *st, const char *path)
{
    const char *stored = bertc_st_metadata_get(st, ST_CRC32_KEY);
    cr_assert_not_null(stored, "%s has no " ST_CRC32_KEY, path);
    cr_expect_str_eq(st->metadata[st->n_metadata - 1].key, ST_CRC32_KEY, "the key comes last");
    size_t len;
    uint8_t *bytes = slurp(path, &len);
    char want[9];
    snprintf(want, sizeof want, "%08x", bertc_st_crc32(0, bytes + st->data_start, len - st->data_start));
    cr_expect_str_eq(stored, want, "%s: stored %s, CRC-32 of the data %s", path, stored, want);
}

Test(safetensors, file_round_trip_f32_i64_metadata)
{
    char *dir = temp_dir(), path[256];
    snprintf(path, sizeof path, "%s/ckpt.safetensors", dir);
    int64_t shape_w[3] = {2, 1, 3}, shape_ids[2] = {2, 2}, shape_s[1] = {0};
    float w[6] = {0.1f, -0.2f, 3e-8f, 1e30f, -0.0f, INFINITY};
    int32_t ids[4] = {101, 2023, -100, INT32_MAX};
    int64_t step[1] = {INT64_MAX};
    Tensor tw = bertc_tensor_view(w, 3, shape_w);
    ITensor tids = bertc_itensor_view(ids, 2, shape_ids);
    StEntry e[4] = {
        bertc_st_entry_tensor("bert.w", &tw),
        bertc_st_entry_itensor("input_ids", &tids),
        {.name = "step", .dtype = ST_I64, .ndim = 0, .shape = shape_s, .i64 = step},
        {.name = "nothing", .dtype = ST_F32, .ndim = 1, .shape = shape_s, .f32 = w},
    };
    StMetadata meta[2] = {{"format", "pt"}, {"note", "quote \" and caf\xc3\xa9"}};
    BertcError err;
    cr_assert_eq(bertc_st_write_file(path, e, 4, meta, 2, &err), 0, "%s", err.msg);
    cr_expect_eq(count_entries(dir, ".tmp"), 0, "a temporary file was left in %s", dir);

    SafeTensors *st = open_ok(path);
    cr_expect_eq(st->n_tensors, 4);
    cr_expect_str_eq(st->tensors[0].name, "input_ids", "I64 entries first, by name");
    cr_expect_str_eq(st->tensors[1].name, "step");
    cr_expect_str_eq(st->tensors[2].name, "bert.w");
    expect_f32(st, "bert.w", w, 6);
    expect_i32(st, "input_ids", ids, 4);
    cr_expect_eq(bertc_st_find(st, "input_ids")->dtype, ST_I64);
    cr_expect_eq(bertc_st_find(st, "nothing")->numel, 0);
    cr_expect_str_eq(bertc_st_metadata_get(st, "note"), "quote \" and caf\xc3\xa9");
    cr_expect_eq(st->header_length % 8, 0);
    expect_crc32_of_data(st, path);
    /* The I64 step keeps all 64 bits: check the raw little-endian bytes. */
    size_t len;
    uint8_t *bytes = slurp(path, &len);
    const StTensorInfo *s = bertc_st_find(st, "step");
    cr_expect_eq(memcmp(bytes + st->data_start + s->begin, "\xff\xff\xff\xff\xff\xff\xff\x7f", 8), 0);
    bertc_st_close(st);
    remove_dir(dir, "ckpt.safetensors");
}

/* A caller's own ST_CRC32_KEY (metadata copied from a file read earlier) is
 * replaced by the value for the data being written. */
Test(safetensors, writer_owns_the_crc32_key)
{
    char *dir = temp_dir(), path[256];
    snprintf(path, sizeof path, "%s/w.safetensors", dir);
    StEntry one = {.name = "a", .dtype = ST_F32, .ndim = 2, .shape = shape_a, .f32 = data_a};
    StMetadata meta[2] = {{ST_CRC32_KEY, "00000000"}, {"format", "pt"}};
    BertcError err;
    cr_assert_eq(bertc_st_write_file(path, &one, 1, meta, 2, &err), 0, "%s", err.msg);
    SafeTensors *st = open_ok(path);
    cr_expect_eq(st->n_metadata, 2, "the key is there once");
    cr_expect_str_eq(bertc_st_metadata_get(st, "format"), "pt");
    expect_crc32_of_data(st, path);
    bertc_st_close(st);
    remove_dir(dir, "w.safetensors");
}

/* bertc_st_data_crc32 gives bertc_st_write_buffer's callers the same checksum, and
 * bertc_st_open_memory checks it: one flipped bit anywhere in the data is caught. */
Test(safetensors, buffer_with_crc32_and_every_flipped_data_bit)
{
    StEntry e[3] = {
        {.name = "c", .dtype = ST_F32, .ndim = 1, .shape = shape_c, .f32 = data_c},
        {.name = "a", .dtype = ST_F32, .ndim = 2, .shape = shape_a, .f32 = data_a},
        {.name = "b", .dtype = ST_I64, .ndim = 1, .shape = shape_b, .i64 = data_b},
    };
    BertcError err;
    uint32_t crc;
    cr_assert_eq(bertc_st_data_crc32(e, 3, &crc, &err), 0, "%s", err.msg);
    char hex[9];
    snprintf(hex, sizeof hex, "%08x", crc);
    StMetadata meta[1] = {{ST_CRC32_KEY, hex}};
    uint8_t buf[512];
    size_t size;
    cr_assert_eq(bertc_st_write_buffer(e, 3, meta, 1, buf, sizeof buf, &size, &err), 0, "%s", err.msg);
    SafeTensors *st;
    cr_assert_eq(bertc_st_open_memory(arena, "crc.safetensors", buf, size, &st, &err), 0, "%s",
                 err.msg);
    uint64_t start = st->data_start;
    cr_expect_eq(crc, bertc_st_crc32(0, buf + start, size - start), "bertc_st_data_crc32 is the data's");
    bertc_st_close(st);
    for (size_t at = start; at < size; at++)
        for (int bit = 0; bit < 8; bit++) {
            buf[at] ^= (uint8_t)(1 << bit);
            int rc = bertc_st_open_memory(arena, "crc.safetensors", buf, size, &st, &err);
            buf[at] ^= (uint8_t)(1 << bit);
            cr_assert_neq(rc, 0, "byte %zu bit %d flipped and the file opened", at, bit);
            cr_assert(strstr(err.msg, "crc.safetensors: data section checksum mismatch "
                                      "(stored crc32 ") && strstr(err.msg, hex),
                      "byte %zu bit %d: %s", at, bit, err.msg);
        }
}

/* A file from PyTorch or Hugging Face has no key and opens unchecked. */
Test(safetensors, foreign_file_without_crc32_opens)
{
    SafeTensors *st = open_ok("test/data/good_hf_layout.safetensors");
    cr_expect_null(bertc_st_metadata_get(st, ST_CRC32_KEY));
    expect_i32(st, "b", (int32_t[]){1, -2}, 2);
    bertc_st_close(st);
}

Test(safetensors, atomic_write_replaces_or_keeps)
{
    char *dir = temp_dir(), path[256];
    snprintf(path, sizeof path, "%s/w.safetensors", dir);
    StEntry one = {.name = "a", .dtype = ST_F32, .ndim = 2, .shape = shape_a, .f32 = data_a};
    BertcError err;
    cr_assert_eq(bertc_st_write_file(path, &one, 1, NULL, 0, &err), 0, "%s", err.msg);
    StEntry two = {.name = "c", .dtype = ST_F32, .ndim = 1, .shape = shape_c, .f32 = data_c};
    cr_assert_eq(bertc_st_write_file(path, &two, 1, NULL, 0, &err), 0, "%s", err.msg);
    SafeTensors *st = open_ok(path);
    cr_expect_eq(st->n_tensors, 1);
    cr_expect_not_null(bertc_st_find(st, "c"), "the second write replaced the file");
    bertc_st_close(st);

    /* A failing write leaves the old file and no temporary behind. */
    StEntry dup[2] = {one, one};
    cr_expect_neq(bertc_st_write_file(path, dup, 2, NULL, 0, &err), 0);
    cr_expect(strstr(err.msg, "w.safetensors.tmp."), "%s", err.msg);
    cr_expect(strstr(err.msg, "appears twice"), "%s", err.msg);
    cr_expect_eq(count_entries(dir, ".tmp"), 0, "a temporary file was left in %s", dir);
    st = open_ok(path);
    cr_expect_not_null(bertc_st_find(st, "c"), "the old file is intact");
    bertc_st_close(st);
    remove_dir(dir, "w.safetensors");
}

Test(safetensors, write_into_missing_directory)
{
    StEntry one = {.name = "a", .dtype = ST_F32, .ndim = 2, .shape = shape_a, .f32 = data_a};
    BertcError err;
    cr_expect_neq(bertc_st_write_file("/nonexistent_dir_bertc/x.safetensors", &one, 1, NULL, 0, &err), 0);
    cr_expect(strstr(err.msg, "/nonexistent_dir_bertc/x.safetensors.tmp."), "%s", err.msg);
    cr_expect(strstr(err.msg, "cannot create"), "%s", err.msg);
}
