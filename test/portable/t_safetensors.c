/* test/portable/t_safetensors.c — safetensors from memory, with the bytes
 * spelled out here, so a big-endian target (mips) proves it reads and writes
 * the little-endian format: known values from every converted dtype, and the
 * writer's bytes. */
#include "test/portable/portable.h"

#include <string.h>

static const char header[] =
    "{\"f32\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]},"
    "\"i64\":{\"dtype\":\"I64\",\"shape\":[3],\"data_offsets\":[16,40]},"
    "\"f16\":{\"dtype\":\"F16\",\"shape\":[3],\"data_offsets\":[40,46]},"
    "\"bf16\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[46,50]},"
    "\"i32\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[50,58]},"
    "\"f64\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[58,66]}}";

/* The data section, little-endian as the format says (from Python's struct). */
static const unsigned char data[66] = {
    /* f32 [1.5, -2.25, 3e-05, 65504]: bytes 0..16 */
    0x00, 0x00, 0xc0, 0x3f, 0x00, 0x00, 0x10, 0xc0, 0x82, 0xa8, 0xfb, 0x37, 0x00, 0xe0, 0x7f, 0x47,
    /* i64 [-1, 2^40, 7]: bytes 16..40 */
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00,
    0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    /* f16 [1, -0.5, 65504]: bytes 40..46 */
    0x00, 0x3c, 0x00, 0xb8, 0xff, 0x7b,
    /* bf16 [1, -2]: bytes 46..50 */
    0x80, 0x3f, 0x00, 0xc0,
    /* i32 [123456789, -5]: bytes 50..58 */
    0x15, 0xcd, 0x5b, 0x07, 0xfb, 0xff, 0xff, 0xff,
    /* f64 [0.1]: bytes 58..66 */
    0x9a, 0x99, 0x99, 0x99, 0x99, 0x99, 0xb9, 0x3f,
};

/* u64 LE header length, the header, the data: the file's bytes. */
static size_t build_file(unsigned char *buf)
{
    uint64_t n = sizeof header - 1;
    for (int i = 0; i < 8; i++)
        buf[i] = (unsigned char)(n >> (8 * i));
    memcpy(buf + 8, header, (size_t)n);
    memcpy(buf + 8 + n, data, sizeof data);
    return 8 + (size_t)n + sizeof data;
}

static void expect_f32(const SafeTensors *st, const char *name, const float *want, size_t n)
{
    float got[4];
    BertcError err;
    const StTensorInfo *t = bertc_st_find(st, name);
    if (!pt_check(t && bertc_st_read_f32(st, t, got, n, &err) == 0, "read %s: %s", name,
                  t ? err.msg : "missing"))
        return;
    for (size_t i = 0; i < n; i++)
        pt_check(got[i] == want[i], "%s[%zu] = %.9g, want %.9g", name, i, (double)got[i],
                 (double)want[i]);
}

static void read_known_file(Arena *a)
{
    static unsigned char file[512];
    size_t len = build_file(file);
    SafeTensors *st;
    BertcError err;
    if (!pt_check(bertc_st_open_memory(a, "known.safetensors", file, len, &st, &err) == 0,
                  "bertc_st_open_memory: %s", err.msg))
        return;
    pt_check(st->n_tensors == 6, "6 tensors, got %zu", st->n_tensors);
    expect_f32(st, "f32", (const float[]){1.5f, -2.25f, 3.0e-5f, 65504.0f}, 4);
    expect_f32(st, "i64", (const float[]){-1.0f, 1099511627776.0f, 7.0f}, 3);
    expect_f32(st, "f16", (const float[]){1.0f, -0.5f, 65504.0f}, 3);
    expect_f32(st, "bf16", (const float[]){1.0f, -2.0f}, 2);
    expect_f32(st, "i32", (const float[]){123456789.0f, -5.0f}, 2);
    expect_f32(st, "f64", (const float[]){0.1f}, 1);
    int32_t ids[2];
    pt_check(bertc_st_read_i32(st, bertc_st_find(st, "i32"), ids, 2, &err) == 0 && ids[0] == 123456789 &&
                 ids[1] == -5, "i32 as ids: %d %d", (int)ids[0], (int)ids[1]);
    /* 2^40 does not fit an int32 id: an error naming the element, not a wrap */
    pt_check(bertc_st_read_i32(st, bertc_st_find(st, "i64"), (int32_t[3]){0}, 3, &err) != 0 &&
                 strstr(err.msg, "element 1"), "I64 2^40 as an id: %s", err.msg);
}

#if !defined(BERTC_FREESTANDING)
/* The writer's file, read back and compared byte for byte where the format
 * fixes the bytes: 1.5f is 00 00 c0 3f, the I64 7 is 07 00 .. 00. (Hosted
 * only: bertc_st_write takes its header buffer from bertc_sys_alloc.) */
static void write_known_values(Arena *a)
{
    int64_t s2[1] = {2}, s1[1] = {1};
    float f[2] = {1.5f, -2.25f};
    int64_t i[1] = {7};
    StEntry e[2] = {{.name = "a", .dtype = ST_F32, .ndim = 1, .shape = s2, .f32 = f},
                    {.name = "b", .dtype = ST_I64, .ndim = 1, .shape = s1, .i64 = i}};
    size_t size = 0;
    BertcError err;
    unsigned char *buf = bertc_arena_alloc(a, 512);
    if (!pt_check(bertc_st_write_buffer(e, 2, NULL, 0, buf, 512, &size, &err) == 0, "write: %s",
                  err.msg))
        return;
    uint64_t n = 0;
    for (int k = 7; k >= 0; k--)
        n = n << 8 | buf[k];
    const unsigned char *d = buf + 8 + n;   /* I64 first (HF's order), then F32 */
    const unsigned char want[16] = {0x07, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x00, 0xc0, 0x3f,
                                    0x00, 0x00, 0x10, 0xc0};
    pt_check(size == 8 + n + 16 && memcmp(d, want, 16) == 0,
             "writer data bytes differ from the little-endian layout");
    SafeTensors *st;
    pt_check(bertc_st_open_memory(a, "written", buf, size, &st, &err) == 0, "reopen: %s", err.msg);
}
#endif

void test_safetensors(void)
{
    Arena *a = pt_arena();
    read_known_file(a);
#if !defined(BERTC_FREESTANDING)
    write_known_values(a);
#endif
}
