/* nn/safetensors.c — opening and validating safetensors files, and reading
 * tensors with dtype conversion. No stdio: files are read through an
 * StSource (nn/safetensors_file.c makes one for a path). */
#include "nn/safetensors.h"

#include "nn/json.h"
#include "tensor/format_internal.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Tensor data is read (and decoded, and checksummed) CHUNK bytes at a time,
 * so reading needs no buffer beyond the caller's destination whatever the
 * dtype. */
#define CHUNK 4096

/* ------------------------------------------------------------------------ */
/* Dtypes and little-endian loads                                            */
/* ------------------------------------------------------------------------ */

static const struct {
    const char *name;
    size_t size;
} dtypes[ST_DTYPE_COUNT] = {
    [ST_BOOL] = {"BOOL", 1}, [ST_U8] = {"U8", 1},     [ST_I8] = {"I8", 1},
    [ST_F8_E5M2] = {"F8_E5M2", 1}, [ST_F8_E4M3] = {"F8_E4M3", 1},
    [ST_I16] = {"I16", 2},   [ST_U16] = {"U16", 2},   [ST_F16] = {"F16", 2},
    [ST_BF16] = {"BF16", 2}, [ST_I32] = {"I32", 4},   [ST_U32] = {"U32", 4},
    [ST_F32] = {"F32", 4},   [ST_F64] = {"F64", 8},   [ST_I64] = {"I64", 8},
    [ST_U64] = {"U64", 8},
};

const char *bertc_st_dtype_name(StDtype dtype) { return dtypes[dtype].name; }
size_t bertc_st_dtype_size(StDtype dtype) { return dtypes[dtype].size; }

static bool dtype_from_name(const char *name, StDtype *out)
{
    for (int d = 0; d < ST_DTYPE_COUNT; d++)
        if (strcmp(dtypes[d].name, name) == 0) {
            *out = (StDtype)d;
            return true;
        }
    return false;
}

/* Assembling values from bytes with shifts reads little-endian data correctly
 * on any host, big-endian included. */
static uint16_t load_u16le(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

static uint32_t load_u32le(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t load_u64le(const uint8_t *p)
{
    return (uint64_t)load_u32le(p) | (uint64_t)load_u32le(p + 4) << 32;
}

static float f32_from_bits(uint32_t bits)
{
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static double f64_from_bits(uint64_t bits)
{
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

/* IEEE 754 binary16 -> binary32, exact (subnormals, infinities, NaN payloads). */
static float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
    if (exp == 0) {
        float f = (float)mant * 0x1p-24f; /* subnormal or zero: mant * 2^-24 */
        return sign ? -f : f;
    }
    if (exp == 31)
        return f32_from_bits(sign | 0x7F800000u | mant << 13);
    return f32_from_bits(sign | (exp + 112) << 23 | mant << 13);
}

/* ------------------------------------------------------------------------ */
/* Opening: header length, JSON, entries, ranges                             */
/* ------------------------------------------------------------------------ */

static int st_errorf(BertcError *err, const SafeTensors *st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int st_errorf(BertcError *err, const SafeTensors *st, const char *fmt, ...)
{
    char what[BERTC_ERROR_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return bertc_errorf(err, "%s: %s", st->name, what);
}

/* Reads and checks the 8-byte length field: the header must fit in the file
 * (checked before anything is allocated for it). */
static int read_header_length(SafeTensors *st, BertcError *err)
{
    uint64_t file_len = st->source.length;
    if (file_len < 8)
        return st_errorf(err, st, "file is %" PRIu64 " bytes, shorter than the 8-byte "
                         "header length field; it is not a safetensors file", file_len);
    uint8_t field[8];
    if (st->source.read(st->source.ctx, 0, field, 8, err) != 0)
        return -1;
    uint64_t n = load_u64le(field);
    if (n > file_len - 8)
        return st_errorf(err, st, "header length %" PRIu64 " bytes runs past the end of "
                         "the file: only %" PRIu64 " bytes follow the length field "
                         "(file is %" PRIu64 " bytes; truncated or not safetensors?)",
                         n, file_len - 8, file_len);
    if (n > ST_MAX_HEADER_BYTES)
        return st_errorf(err, st, "header length %" PRIu64 " bytes exceeds the limit of "
                         "%llu bytes", n, ST_MAX_HEADER_BYTES);
    st->header_length = n;
    st->data_start = 8 + n;
    st->data_length = file_len - 8 - n;
    return 0;
}

static int parse_header(SafeTensors *st, JsonDoc **doc, BertcError *err)
{
    size_t n = (size_t)st->header_length;
    char *text = bertc_arena_alloc(st->arena, n + 1);
    if (st->source.read(st->source.ctx, 8, text, n, err) != 0)
        return -1;
    char name[BERTC_ERROR_LEN / 2];
    snprintf(name, sizeof name, "%s: header (file bytes 8..%" PRIu64 ")", st->name,
             st->data_start);
    if (bertc_json_parse(st->arena, name, text, n, doc, err) != 0)
        return -1;
    if ((*doc)->root->type != JSON_OBJECT)
        return st_errorf(err, st, "header is %s; expected a JSON object of tensor entries",
                         bertc_json_type_name((*doc)->root->type));
    return 0;
}

static int read_metadata(SafeTensors *st, const JsonValue *m, BertcError *err)
{
    if (m->type != JSON_OBJECT)
        return bertc_json_errorf(err, m, "__metadata__ must be an object of strings, found %s",
                           bertc_json_type_name(m->type));
    StMetadata *meta = bertc_arena_alloc(st->arena, (m->length + 1) * sizeof *meta);
    for (size_t i = 0; i < m->length; i++) {
        const JsonValue *v = bertc_json_at(m, i);
        size_t key_len;
        const char *key = bertc_json_key(v, &key_len);
        if (v->type != JSON_STRING || strlen(bertc_json_string(v)) != v->length ||
            strlen(key) != key_len)
            return bertc_json_errorf(err, v, "__metadata__ values must be strings without NUL "
                               "characters, found %s", bertc_json_type_name(v->type));
        meta[i] = (StMetadata){key, bertc_json_string(v)};
    }
    st->metadata = meta;
    st->n_metadata = m->length;
    return 0;
}

/* A non-negative integer (shape entry or offset). */
static int read_u64(const JsonValue *v, uint64_t *out, BertcError *err)
{
    int64_t x = 0;
    if (bertc_json_as_int(v, &x, err) != 0)
        return -1;
    if (x < 0)
        return bertc_json_errorf(err, v, "must be a non-negative integer, found %" PRId64, x);
    *out = (uint64_t)x;
    return 0;
}

static int read_dtype(const JsonValue *entry, StTensorInfo *t, BertcError *err)
{
    const char *name;
    if (bertc_json_get_string(entry, "dtype", &name, err) != 0)
        return -1;
    if (!dtype_from_name(name, &t->dtype))
        return bertc_json_errorf(err, bertc_json_get(entry, "dtype"), "unknown dtype \"%.32s\" (known: "
                           "BOOL U8 I8 F8_E5M2 F8_E4M3 I16 U16 F16 BF16 I32 U32 F32 F64 "
                           "I64 U64)", name);
    return 0;
}

static int read_shape(const SafeTensors *st, const JsonValue *entry, StTensorInfo *t,
                      BertcError *err)
{
    const JsonValue *shape = bertc_json_get(entry, "shape");
    if (!shape)
        return bertc_json_errorf(err, entry, "tensor entry has no \"shape\"");
    if (shape->type != JSON_ARRAY)
        return bertc_json_errorf(err, shape, "shape must be an array of integers, found %s",
                           bertc_json_type_name(shape->type));
    if (shape->length > TENSOR_MAX_DIMS)
        return bertc_json_errorf(err, shape, "shape has %u dimensions; bertc supports up to %d",
                           (unsigned)shape->length, TENSOR_MAX_DIMS);
    bool has_zero = false;
    for (size_t d = 0; d < shape->length; d++) {
        uint64_t dim = 0;
        if (read_u64(bertc_json_at(shape, d), &dim, err) != 0)
            return -1;
        t->shape[d] = (int64_t)dim;
        has_zero |= dim == 0;
    }
    t->ndim = (int)shape->length;
    uint64_t numel = 1;
    for (int d = 0; d < t->ndim && !has_zero; d++) {
        uint64_t dim = (uint64_t)t->shape[d];
        if (numel > (uint64_t)INT64_MAX / dim) {
            char s[SHAPE_STR_LEN];
            return st_errorf(err, st, "tensor \"%s\": the element count of shape %s "
                             "overflows 2^63", t->name,
                             bertc_shape_str(s, sizeof s, t->ndim, t->shape));
        }
        numel *= dim;
    }
    if (has_zero)
        numel = 0;
    t->numel = (int64_t)numel;
    return 0;
}

static int read_offsets(const SafeTensors *st, const JsonValue *entry, StTensorInfo *t,
                        BertcError *err)
{
    const JsonValue *off = bertc_json_get(entry, "data_offsets");
    if (!off)
        return bertc_json_errorf(err, entry, "tensor entry has no \"data_offsets\"");
    if (off->type != JSON_ARRAY || off->length != 2)
        return bertc_json_errorf(err, off, "data_offsets must be an array [begin, end] of two "
                           "integers");
    if (read_u64(bertc_json_at(off, 0), &t->begin, err) != 0 ||
        read_u64(bertc_json_at(off, 1), &t->end, err) != 0)
        return -1;
    if (t->begin > t->end)
        return st_errorf(err, st, "tensor \"%s\": data_offsets [%" PRIu64 ", %" PRIu64 "] "
                         "have begin > end", t->name, t->begin, t->end);
    if (t->end > st->data_length)
        return st_errorf(err, st, "tensor \"%s\": data_offsets [%" PRIu64 ", %" PRIu64 "] "
                         "run past the end of the data section, which has %" PRIu64
                         " bytes (file bytes %" PRIu64 "..%" PRIu64 ")", t->name, t->begin,
                         t->end, st->data_length, st->data_start,
                         st->data_start + st->data_length);
    return 0;
}

/* shape x dtype size must equal the byte range. */
static int check_size(const SafeTensors *st, const StTensorInfo *t, BertcError *err)
{
    uint64_t esz = bertc_st_dtype_size(t->dtype), have = t->end - t->begin;
    char s[SHAPE_STR_LEN];
    bertc_shape_str(s, sizeof s, t->ndim, t->shape);
    if ((uint64_t)t->numel > UINT64_MAX / esz || (uint64_t)t->numel * esz != have)
        return st_errorf(err, st, "tensor \"%s\": shape %s of %s needs %" PRIu64 " x %" PRIu64
                         " bytes but data_offsets [%" PRIu64 ", %" PRIu64 "] hold %" PRIu64
                         " bytes", t->name, s, bertc_st_dtype_name(t->dtype), (uint64_t)t->numel,
                         esz, t->begin, t->end, have);
    return 0;
}

static int check_fields(const JsonValue *entry, BertcError *err)
{
    if (entry->type != JSON_OBJECT)
        return bertc_json_errorf(err, entry, "a tensor entry must be an object {\"dtype\", "
                           "\"shape\", \"data_offsets\"}, found %s",
                           bertc_json_type_name(entry->type));
    for (size_t i = 0; i < entry->length; i++) {
        const JsonValue *f = bertc_json_at(entry, i);   /* its key compared whole, NULs and all */
        if (bertc_json_get(entry, "dtype") != f && bertc_json_get(entry, "shape") != f &&
            bertc_json_get(entry, "data_offsets") != f)
            return bertc_json_errorf(err, f, "unknown field in a tensor entry "
                               "(expected only dtype, shape, data_offsets)");
    }
    return 0;
}

static int read_entry(const SafeTensors *st, const JsonValue *entry, StTensorInfo *t,
                      BertcError *err)
{
    t->name = bertc_json_key(entry, NULL);   /* check_entry_fields: no NUL inside */
    if (read_dtype(entry, t, err) != 0 ||
        read_shape(st, entry, t, err) != 0 || read_offsets(st, entry, t, err) != 0)
        return -1;
    return check_size(st, t, err);
}

static int cmp_begin(const void *pa, const void *pb)
{
    const StTensorInfo *a = *(const StTensorInfo *const *)pa, *b = *(const StTensorInfo *const *)pb;
    if (a->begin != b->begin)
        return a->begin < b->begin ? -1 : 1;
    return (a->end > b->end) - (a->end < b->end);
}

static int cmp_name(const void *pa, const void *pb)
{
    return strcmp((*(const StTensorInfo *const *)pa)->name, (*(const StTensorInfo *const *)pb)->name);
}

/* The data section must be the tensors' byte ranges laid end to end, as the
 * reference library requires (huggingface/safetensors, Metadata::validate):
 * sorted by [begin, end), each tensor, an empty one too, begins where the one
 * before it ends, the first at 0, and the last ends where the file does. A
 * hole or trailing bytes would be data no tensor owns: a damaged or forged
 * file, refused as the reference refuses it. Entries may be listed in any
 * order. */
static int check_layout(const SafeTensors *st, const StTensorInfo **order, BertcError *err)
{
    for (size_t i = 0; i < st->n_tensors; i++)
        order[i] = &st->tensors[i];
    qsort(order, st->n_tensors, sizeof *order, cmp_begin);
    uint64_t at = 0;
    for (size_t i = 0; i < st->n_tensors; i++) {
        const StTensorInfo *a = i ? order[i - 1] : NULL, *b = order[i];
        if (b->begin < at)
            return st_errorf(err, st, "tensors \"%s\" [%" PRIu64 ", %" PRIu64 ") and \"%s\" "
                             "[%" PRIu64 ", %" PRIu64 ") overlap in the data section",
                             a->name, a->begin, a->end, b->name, b->begin, b->end);
        if (b->begin > at)
            return st_errorf(err, st, "data section bytes [%" PRIu64 ", %" PRIu64 ") belong "
                             "to no tensor (a hole before \"%s\"); safetensors files have "
                             "none, write the file again", at, b->begin, b->name);
        at = b->end;
    }
    if (at != st->data_length)
        return st_errorf(err, st, "data section has %" PRIu64 " trailing bytes [%" PRIu64
                         ", %" PRIu64 ") after the last tensor; safetensors files have none, "
                         "write the file again", st->data_length - at, at, st->data_length);
    return 0;
}

/* Each entry an object of exactly dtype, shape and data_offsets. Checked for
 * every entry before the tensor table is allocated, so the table (about 100
 * bytes a tensor) is bounded by the header's size: a valid entry takes more
 * than 40 bytes of text, where {"a":0,"b":0,...} would take 6. */
static int check_entry_fields(const JsonValue *entry, BertcError *err)
{
    static const char *const fields[] = {"shape", "data_offsets"};
    size_t name_len;
    if (strlen(bertc_json_key(entry, &name_len)) != name_len)
        return bertc_json_errorf(err, entry, "tensor name contains a NUL character");
    if (check_fields(entry, err) != 0)
        return -1;
    const char *unused;
    if (!bertc_json_get(entry, "dtype"))
        return bertc_json_get_string(entry, "dtype", &unused, err);   /* "missing key ..." */
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        if (!bertc_json_get(entry, fields[i]))
            return bertc_json_errorf(err, entry, "tensor entry has no \"%s\"", fields[i]);
    return 0;
}

static bool is_metadata(const JsonValue *v)
{
    size_t key_len;
    return strcmp(bertc_json_key(v, &key_len), "__metadata__") == 0 && key_len == 12;
}

static int read_entries(SafeTensors *st, const JsonValue *root, BertcError *err)
{
    for (size_t i = 0; i < root->length; i++)
        if (!is_metadata(bertc_json_at(root, i)) && check_entry_fields(bertc_json_at(root, i), err) != 0)
            return -1;
    StTensorInfo *tensors = bertc_arena_calloc(st->arena, root->length + 1, sizeof *tensors);
    st->tensors = tensors;
    for (size_t i = 0; i < root->length; i++) {
        const JsonValue *v = bertc_json_at(root, i);
        int rc = is_metadata(v) ? read_metadata(st, v, err)
                     : read_entry(st, v, &tensors[st->n_tensors++], err);
        if (rc != 0)
            return -1;
    }
    const StTensorInfo **by_name = bertc_arena_alloc(st->arena, (st->n_tensors + 1) * sizeof *by_name);
    if (check_layout(st, by_name, err) != 0)
        return -1;
    for (size_t i = 0; i < st->n_tensors; i++)
        by_name[i] = &st->tensors[i];
    qsort(by_name, st->n_tensors, sizeof *by_name, cmp_name);
    st->by_name = by_name;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* The data section's CRC-32 (ST_CRC32_KEY, written by bertc_st_write_file)        */
/* ------------------------------------------------------------------------ */

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* The stored value: exactly 8 hex digits. */
static int parse_crc32(const SafeTensors *st, const char *text, uint32_t *out, BertcError *err)
{
    bool ok = strlen(text) == 8;
    uint32_t v = 0;
    for (int i = 0; ok && i < 8; i++) {
        int d = hex_digit(text[i]);
        ok = d >= 0;
        v = v << 4 | (uint32_t)(ok ? d : 0);
    }
    if (!ok)
        return st_errorf(err, st, "__metadata__ \"" ST_CRC32_KEY "\" is \"%.40s\", not 8 "
                         "hex digits; it should hold the CRC-32 of the data section: the "
                         "file is damaged; write it again or restore a copy", text);
    *out = v;
    return 0;
}

/* One pass over the data section through the source, a chunk at a time. */
static int compute_crc32(const SafeTensors *st, uint32_t *crc, BertcError *err)
{
    uint8_t chunk[CHUNK];
    *crc = 0;
    for (uint64_t done = 0; done < st->data_length;) {
        size_t n = st->data_length - done < CHUNK ? (size_t)(st->data_length - done) : CHUNK;
        if (st->source.read(st->source.ctx, st->data_start + done, chunk, n, err) != 0)
            return -1;
        *crc = bertc_st_crc32(*crc, chunk, n);
        done += n;
    }
    return 0;
}

/* Files without the key (PyTorch, Hugging Face) pass unchecked. */
static int verify_crc32(const SafeTensors *st, BertcError *err)
{
    const char *text = bertc_st_metadata_get(st, ST_CRC32_KEY);
    uint32_t stored = 0, computed = 0;
    if (!text)
        return 0;
    if (parse_crc32(st, text, &stored, err) != 0 || compute_crc32(st, &computed, err) != 0)
        return -1;
    if (computed != stored)
        return st_errorf(err, st, "data section checksum mismatch (stored crc32 %08" PRIx32
                         ", computed %08" PRIx32 "): the file is damaged; write it again "
                         "or restore a copy", stored, computed);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Opening                                                                   */
/* ------------------------------------------------------------------------ */

/* The header of source, read and checked into a new SafeTensors in arena
 * (*out, set first). A header that needs more memory than there is reaches
 * bertc_fatal. */
static int read_source(Arena *arena, const char *name, StSource source, SafeTensors **out,
                       BertcError *err)
{
    size_t name_len = strlen(name);
    SafeTensors *st = bertc_arena_calloc(arena, 1, sizeof *st + name_len + 1);
    memcpy((char *)(st + 1), name, name_len + 1);
    st->name = (const char *)(st + 1);
    st->source = source;
    st->arena = arena;
    *out = st;
    JsonDoc *doc;
    if (read_header_length(st, err) != 0 || parse_header(st, &doc, err) != 0 ||
        read_entries(st, doc->root, err) != 0 || verify_crc32(st, err) != 0)
        return -1;
    return 0;
}

/* After a failed open: the source is closed and the arena made for it freed. */
static void open_failed(StSource source, Arena *own)
{
    if (source.close)
        source.close(source.ctx);
    bertc_arena_destroy(own);
}

/* The open in arena, which the SafeTensors owns when it was made for it. */
static int open_in(Arena *arena, bool owned, const char *name, StSource source,
                   SafeTensors **out, BertcError *err)
{
    SafeTensors *st = NULL;
    BertcCatch guard;
    bertc_catch_begin(&guard, err);
    if (setjmp(guard.env) != 0) {   /* a header too big for memory: err says so */
        open_failed(source, owned ? arena : NULL);
        return -1;
    }
    int rc = read_source(arena, name, source, &st, err);
    bertc_catch_end(&guard);
    if (rc != 0) {
        open_failed(source, owned ? arena : NULL);
        return -1;
    }
    st->owns_arena = owned;
    *out = st;
    return 0;
}

int bertc_st_open_source(Arena *arena, const char *name, StSource source, SafeTensors **out,
                   BertcError *err)
{
    if (arena)
        return open_in(arena, false, name, source, out, err);
    BertcError why;
    Arena *own = bertc_arena_create_checked("safetensors", 1 << 16, &why);
    if (!own) {
        open_failed(source, NULL);
        return bertc_errorf(err, "%s: %s", name, why.msg);
    }
    return open_in(own, true, name, source, out, err);
}

void bertc_st_close(SafeTensors *st)
{
    if (!st)
        return;
    if (st->source.close)
        st->source.close(st->source.ctx);
    if (st->owns_arena)
        bertc_arena_destroy(st->arena);
}

/* --- memory source ------------------------------------------------------- */

typedef struct MemorySource {
    const uint8_t *bytes;
    uint64_t length;
    const char *name;
} MemorySource;

static int memory_read(void *ctx, uint64_t offset, void *dst, size_t n, BertcError *err)
{
    const MemorySource *m = ctx;
    if (offset > m->length || n > m->length - offset)
        return bertc_errorf(err, "%s: read of %zu bytes at byte offset %" PRIu64 " is past "
                            "the end of the %" PRIu64 "-byte buffer", m->name, n, offset,
                            m->length);
    memcpy(dst, m->bytes + offset, n);
    return 0;
}

int bertc_st_open_memory(Arena *arena, const char *name, const void *buffer, size_t length,
                   SafeTensors **out, BertcError *err)
{
    Arena *a = arena ? arena : bertc_arena_create("safetensors", 1 << 16);
    MemorySource *m = bertc_arena_alloc(a, sizeof *m);
    *m = (MemorySource){buffer, length, name};
    StSource src = {.length = length, .read = memory_read, .ctx = m};
    if (bertc_st_open_source(a, name, src, out, err) != 0) {
        if (!arena)
            bertc_arena_destroy(a);
        return -1;
    }
    (*out)->owns_arena = arena == NULL;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Lookup                                                                    */
/* ------------------------------------------------------------------------ */

const StTensorInfo *bertc_st_find(const SafeTensors *st, const char *name)
{
    size_t lo = 0, hi = st->n_tensors;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(st->by_name[mid]->name, name);
        if (c == 0)
            return st->by_name[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

const char *bertc_st_metadata_get(const SafeTensors *st, const char *key)
{
    for (size_t i = 0; i < st->n_metadata; i++)
        if (strcmp(st->metadata[i].key, key) == 0)
            return st->metadata[i].value;
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Reading tensor data                                                       */
/* ------------------------------------------------------------------------ */


typedef struct ReadJob {
    const SafeTensors *st;
    const StTensorInfo *t;
    uint64_t first;            /* index of the chunk's first element */
    BertcError *err;
} ReadJob;

static uint64_t file_offset(const ReadJob *j, size_t i)
{
    return j->st->data_start + j->t->begin + (j->first + i) * bertc_st_dtype_size(j->t->dtype);
}

static int bad_bool(const ReadJob *j, size_t i, uint8_t byte)
{
    return st_errorf(j->err, j->st, "tensor \"%s\": BOOL element %" PRIu64 " (file byte "
                     "%" PRIu64 ") is %u; a BOOL byte must be 0 or 1", j->t->name,
                     j->first + i, file_offset(j, i), byte);
}

static int decode_f32(const ReadJob *j, const uint8_t *src, size_t n, float *dst)
{
    for (size_t i = 0; i < n; i++) {
        switch (j->t->dtype) {
        case ST_F32: dst[i] = f32_from_bits(load_u32le(src + 4 * i)); break;
        case ST_F16: dst[i] = f16_to_f32(load_u16le(src + 2 * i)); break;
        case ST_BF16: dst[i] = f32_from_bits((uint32_t)load_u16le(src + 2 * i) << 16); break;
        case ST_F64: dst[i] = (float)f64_from_bits(load_u64le(src + 8 * i)); break;
        case ST_I64: dst[i] = (float)(int64_t)load_u64le(src + 8 * i); break;
        case ST_I32: dst[i] = (float)(int32_t)load_u32le(src + 4 * i); break;
        case ST_U8: dst[i] = (float)src[i]; break;
        case ST_BOOL:
            if (src[i] > 1)
                return bad_bool(j, i, src[i]);
            dst[i] = (float)src[i];
            break;
        default: return -1; /* excluded by can_read */
        }
    }
    return 0;
}

static int decode_i32(const ReadJob *j, const uint8_t *src, size_t n, int32_t *dst)
{
    for (size_t i = 0; i < n; i++) {
        int64_t v;
        switch (j->t->dtype) {
        case ST_I64: v = (int64_t)load_u64le(src + 8 * i); break;
        case ST_I32: v = (int32_t)load_u32le(src + 4 * i); break;
        case ST_U8: v = src[i]; break;
        case ST_BOOL:
            if (src[i] > 1)
                return bad_bool(j, i, src[i]);
            v = src[i];
            break;
        default: return -1; /* excluded by can_read */
        }
        if (v < INT32_MIN || v > INT32_MAX)
            return st_errorf(j->err, j->st, "tensor \"%s\": element %" PRIu64 " (file byte "
                             "%" PRIu64 ") is %" PRId64 ", outside the int32 range",
                             j->t->name, j->first + i, file_offset(j, i), v);
        dst[i] = (int32_t)v;
    }
    return 0;
}

static int can_read(const SafeTensors *st, const StTensorInfo *t, bool to_float,
                    size_t count, BertcError *err)
{
    StDtype d = t->dtype;
    bool ints = d == ST_I64 || d == ST_I32 || d == ST_U8 || d == ST_BOOL;
    bool floats = d == ST_F32 || d == ST_F16 || d == ST_BF16 || d == ST_F64;
    if (!ints && !(floats && to_float))
        return st_errorf(err, st, "tensor \"%s\" has dtype %s, which bertc cannot read as "
                         "%s (it reads %s)", t->name, bertc_st_dtype_name(d),
                         to_float ? "float32" : "int32",
                         to_float ? "F32 F16 BF16 F64 I64 I32 U8 BOOL" : "I64 I32 U8 BOOL");
    if (count != (uint64_t)t->numel) {
        char s[SHAPE_STR_LEN];
        return st_errorf(err, st, "tensor \"%s\" has %" PRId64 " elements (shape %s) but the "
                         "destination holds %zu", t->name, t->numel,
                         bertc_shape_str(s, sizeof s, t->ndim, t->shape), count);
    }
    return 0;
}

static int read_elements(const SafeTensors *st, const StTensorInfo *t, void *dst,
                         bool to_float, BertcError *err)
{
    uint8_t chunk[CHUNK];
    size_t esz = bertc_st_dtype_size(t->dtype), per_chunk = CHUNK / esz;
    ReadJob j = {st, t, 0, err};
    for (; j.first < (uint64_t)t->numel; j.first += per_chunk) {
        size_t n = (uint64_t)t->numel - j.first < per_chunk ? (size_t)((uint64_t)t->numel - j.first)
                                                            : per_chunk;
        if (st->source.read(st->source.ctx, file_offset(&j, 0), chunk, n * esz, err) != 0)
            return -1;
        int rc = to_float ? decode_f32(&j, chunk, n, (float *)dst + j.first)
                          : decode_i32(&j, chunk, n, (int32_t *)dst + j.first);
        if (rc != 0)
            return -1;
    }
    return 0;
}

int bertc_st_read_f32(const SafeTensors *st, const StTensorInfo *t, float *dst, size_t count,
                BertcError *err)
{
    if (can_read(st, t, true, count, err) != 0)
        return -1;
    return read_elements(st, t, dst, true, err);
}

int bertc_st_read_i32(const SafeTensors *st, const StTensorInfo *t, int32_t *dst, size_t count,
                BertcError *err)
{
    if (can_read(st, t, false, count, err) != 0)
        return -1;
    return read_elements(st, t, dst, false, err);
}

int bertc_st_read_i8(const SafeTensors *st, const StTensorInfo *t, int8_t *dst, size_t count,
                     BertcError *err)
{
    if (t->dtype != ST_I8)
        return st_errorf(err, st, "tensor \"%s\" has dtype %s where int8 (I8) is expected",
                         t->name, bertc_st_dtype_name(t->dtype));
    if (count != (uint64_t)t->numel) {
        char s[SHAPE_STR_LEN];
        return st_errorf(err, st, "tensor \"%s\" has %" PRId64 " elements (shape %s) but the "
                         "destination holds %zu", t->name, t->numel,
                         bertc_shape_str(s, sizeof s, t->ndim, t->shape), count);
    }
    for (size_t first = 0; first < count; first += CHUNK) {
        size_t n = count - first < CHUNK ? count - first : CHUNK;
        if (st->source.read(st->source.ctx, st->data_start + t->begin + first, dst + first, n,
                            err) != 0)
            return -1;
    }
    return 0;
}

static const StTensorInfo *find_or_error(const SafeTensors *st, const char *name,
                                         BertcError *err)
{
    const StTensorInfo *t = bertc_st_find(st, name);
    if (!t)
        st_errorf(err, st, "no tensor named \"%s\" (the file has %zu tensors)", name,
                  st->n_tensors);
    return t;
}

int bertc_st_load_tensor(const SafeTensors *st, const char *name, Arena *arena, Tensor *out,
                   BertcError *err)
{
    const StTensorInfo *t = find_or_error(st, name, err);
    if (!t || can_read(st, t, true, (size_t)t->numel, err) != 0)
        return -1;
    *out = bertc_tensor_empty(arena, t->ndim, t->shape);
    return read_elements(st, t, out->data, true, err);
}

int bertc_st_load_itensor(const SafeTensors *st, const char *name, Arena *arena, ITensor *out,
                    BertcError *err)
{
    const StTensorInfo *t = find_or_error(st, name, err);
    if (!t || can_read(st, t, false, (size_t)t->numel, err) != 0)
        return -1;
    *out = bertc_itensor_new(arena, t->ndim, t->shape);
    return read_elements(st, t, out->data, false, err);
}
