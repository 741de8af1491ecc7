/* nn/safetensors_write.c — serializing F32, BF16, I8 and I64 tensors in the layout of
 * huggingface/safetensors `serialize` (see bertc_st_write in safetensors.h), to any
 * StSink or to a caller's buffer. No stdio streams: files are in
 * nn/safetensors_file.c. */
#include "nn/safetensors.h"

#include "nn/json.h"
#include "tensor/format_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

StEntry bertc_st_entry_tensor(const char *name, const Tensor *t)
{
    return (StEntry){.name = name, .dtype = ST_F32, .ndim = t->ndim, .shape = t->shape,
                     .f32 = t->data};
}

StEntry bertc_st_entry_itensor(const char *name, const ITensor *t)
{
    return (StEntry){.name = name, .dtype = ST_I64, .ndim = t->ndim, .shape = t->shape,
                     .i32 = t->data};
}

/* Little-endian stores by shifts: the same bytes on any host. */
static void store_u32le(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void store_u64le(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* ------------------------------------------------------------------------ */
/* Checking the entries                                                      */
/* ------------------------------------------------------------------------ */

static int64_t entry_numel(const StEntry *e)
{
    return bertc_shape_numel(e->ndim, e->shape);
}

static int check_entry(const StEntry *e, BertcError *err)
{
    if (!e->name || !bertc_utf8_valid(e->name, strlen(e->name)))
        return bertc_errorf(err, "safetensors writer: a tensor name is NULL or not valid UTF-8");
    if (strcmp(e->name, "__metadata__") == 0)
        return bertc_errorf(err, "safetensors writer: \"__metadata__\" is reserved and "
                            "cannot name a tensor");
    bool f32 = e->dtype == ST_F32 && e->f32, i64 = e->dtype == ST_I64 && (e->i64 || e->i32);
    bool i8 = e->dtype == ST_I8 && e->i8, bf16 = e->dtype == ST_BF16 && e->f32;
    if (!f32 && !i64 && !i8 && !bf16)
        return bertc_errorf(err, "safetensors writer: tensor \"%s\": write F32 or BF16 with .f32 "
                            "set, I64 with .i64 or .i32 set, or I8 with .i8 set (got dtype %s)",
                            e->name, bertc_st_dtype_name(e->dtype));
    if (e->ndim < 0 || e->ndim > TENSOR_MAX_DIMS)
        return bertc_errorf(err, "safetensors writer: tensor \"%s\" has %d dimensions "
                            "(0..%d allowed)", e->name, e->ndim, TENSOR_MAX_DIMS);
    for (int d = 0; d < e->ndim; d++)
        if (e->shape[d] < 0)
            return bertc_errorf(err, "safetensors writer: tensor \"%s\": dimension %d is "
                                "%" PRId64, e->name, d, e->shape[d]);
    return 0;
}

static int check_metadata(const StMetadata *meta, size_t n_meta, BertcError *err)
{
    for (size_t i = 0; i < n_meta; i++) {
        const StMetadata *m = &meta[i];
        if (!m->key || !m->value || !bertc_utf8_valid(m->key, strlen(m->key)) ||
            !bertc_utf8_valid(m->value, strlen(m->value)))
            return bertc_errorf(err, "safetensors writer: metadata entry %zu has a NULL or "
                                "non-UTF-8 key or value", i);
        for (size_t k = 0; k < i; k++)
            if (strcmp(meta[k].key, m->key) == 0)
                return bertc_errorf(err, "safetensors writer: metadata key \"%s\" appears "
                                    "twice", m->key);
    }
    return 0;
}

static int by_name(const void *pa, const void *pb)
{
    return strcmp((*(const StEntry *const *)pa)->name, (*(const StEntry *const *)pb)->name);
}

/* huggingface/safetensors order: dtype alignment descending, then name. */
static int by_dtype_then_name(const void *pa, const void *pb)
{
    const StEntry *a = *(const StEntry *const *)pa, *b = *(const StEntry *const *)pb;
    if (a->dtype != b->dtype)
        return a->dtype > b->dtype ? -1 : 1;
    return strcmp(a->name, b->name);
}

/* Checks everything, then fills order[] with the entries in file order. */
static int plan(const StEntry *entries, size_t n, const StMetadata *meta, size_t n_meta,
                const StEntry **order, BertcError *err)
{
    for (size_t i = 0; i < n; i++) {
        if (check_entry(&entries[i], err) != 0)
            return -1;
        order[i] = &entries[i];
    }
    qsort(order, n, sizeof *order, by_name);
    for (size_t i = 1; i < n; i++)
        if (strcmp(order[i - 1]->name, order[i]->name) == 0)
            return bertc_errorf(err, "safetensors writer: tensor name \"%s\" appears twice",
                                order[i]->name);
    qsort(order, n, sizeof *order, by_dtype_then_name);
    return check_metadata(meta, n_meta, err);
}

/* ------------------------------------------------------------------------ */
/* The header                                                                */
/* ------------------------------------------------------------------------ */

/* Appends to buf[0..cap) while counting every byte, so the same code measures
 * (buf == NULL) and writes. */
typedef struct Out {
    char *buf;
    size_t cap, n;
} Out;

static void out_bytes(Out *o, const char *s, size_t len)
{
    if (o->buf && o->n + len <= o->cap)
        memcpy(o->buf + o->n, s, len);
    o->n += len;
}

static void out_str(Out *o, const char *s) { out_bytes(o, s, strlen(s)); }

static void out_u64(Out *o, uint64_t v)
{
    char tmp[24];
    int k = snprintf(tmp, sizeof tmp, "%" PRIu64, v);
    out_bytes(o, tmp, (size_t)k);
}

static void out_quoted(Out *o, const char *s)
{
    size_t len = strlen(s), need = bertc_json_quote(NULL, 0, s, len);
    bool fits = o->buf && o->n + need + 1 <= o->cap;
    bertc_json_quote(fits ? o->buf + o->n : NULL, fits ? need + 1 : 0, s, len);
    o->n += need;
}

static void out_entry(Out *o, const StEntry *e, uint64_t begin, uint64_t end)
{
    out_quoted(o, e->name);
    out_str(o, ":{\"dtype\":\"");
    out_str(o, bertc_st_dtype_name(e->dtype));
    out_str(o, "\",\"shape\":[");
    for (int d = 0; d < e->ndim; d++) {
        if (d)
            out_str(o, ",");
        out_u64(o, (uint64_t)e->shape[d]);
    }
    out_str(o, "],\"data_offsets\":[");
    out_u64(o, begin);
    out_str(o, ",");
    out_u64(o, end);
    out_str(o, "]}");
}

/* The compact JSON header; returns its length and the data section size. */
static size_t header_text(Out *o, const StEntry *const *order, size_t n,
                          const StMetadata *meta, size_t n_meta, uint64_t *data_bytes)
{
    out_str(o, "{");
    if (n_meta) {
        out_str(o, "\"__metadata__\":{");
        for (size_t i = 0; i < n_meta; i++) {
            if (i)
                out_str(o, ",");
            out_quoted(o, meta[i].key);
            out_str(o, ":");
            out_quoted(o, meta[i].value);
        }
        out_str(o, "}");
    }
    uint64_t offset = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t bytes = (uint64_t)entry_numel(order[i]) * bertc_st_dtype_size(order[i]->dtype);
        if (i || n_meta)
            out_str(o, ",");
        out_entry(o, order[i], offset, offset + bytes);
        offset += bytes;
    }
    out_str(o, "}");
    *data_bytes = offset;
    return o->n;
}

/* ------------------------------------------------------------------------ */
/* Streaming                                                                 */
/* ------------------------------------------------------------------------ */

#define CHUNK 4096

static int write_data(StSink sink, const StEntry *e, BertcError *err)
{
    uint8_t chunk[CHUNK];
    size_t esz = bertc_st_dtype_size(e->dtype), per_chunk = CHUNK / esz;
    int64_t numel = entry_numel(e);
    for (int64_t first = 0; first < numel; first += (int64_t)per_chunk) {
        size_t n = numel - first < (int64_t)per_chunk ? (size_t)(numel - first) : per_chunk;
        for (size_t i = 0; i < n; i++) {
            int64_t at = first + (int64_t)i;
            if (e->dtype == ST_F32) {
                uint32_t bits;
                memcpy(&bits, &e->f32[at], sizeof bits);
                store_u32le(chunk + 4 * i, bits);
            } else if (e->dtype == ST_BF16) {   /* rounded to nearest even */
                uint16_t bits = bertc_bf16_from_f32(e->f32[at]);
                chunk[2 * i] = (uint8_t)bits;
                chunk[2 * i + 1] = (uint8_t)(bits >> 8);
            } else if (e->dtype == ST_I8) {
                chunk[i] = (uint8_t)e->i8[at];
            } else {
                store_u64le(chunk + 8 * i, (uint64_t)(e->i64 ? e->i64[at] : e->i32[at]));
            }
        }
        if (sink.write(sink.ctx, chunk, n * esz, err) != 0)
            return -1;
    }
    return 0;
}

/* The padded header in a heap block of *len bytes (caller frees). */
static char *make_header(const StEntry *const *order, size_t n, const StMetadata *meta,
                         size_t n_meta, size_t *len, uint64_t *data_bytes)
{
    Out measure = {0};
    size_t text = header_text(&measure, order, n, meta, n_meta, data_bytes);
    size_t padded = (text + 7) / 8 * 8;
    char *buf = bertc_sys_alloc(padded);
    if (!buf)
        return NULL;
    Out o = {buf, padded, 0};
    header_text(&o, order, n, meta, n_meta, data_bytes);
    memset(buf + text, ' ', padded - text);
    *len = padded;
    return buf;
}

/* Runs fn on the entries in file order with the padded header made. */
typedef int (*WithHeader)(void *ctx, const char *header, size_t header_len,
                          uint64_t data_bytes, const StEntry *const *order, size_t n,
                          BertcError *err);

static int with_header(const StEntry *entries, size_t n, const StMetadata *meta,
                       size_t n_meta, WithHeader fn, void *ctx, BertcError *err)
{
    const StEntry **order = bertc_sys_alloc((n + 1) * sizeof *order);
    char *header = NULL;
    size_t header_len = 0;
    uint64_t data_bytes = 0;
    int rc = -1;
    if (!order)
        rc = bertc_errorf(err, "safetensors writer: out of memory for %zu entries", n);
    else if (plan(entries, n, meta, n_meta, order, err) == 0) {
        header = make_header(order, n, meta, n_meta, &header_len, &data_bytes);
        rc = header ? fn(ctx, header, header_len, data_bytes, order, n, err)
                    : bertc_errorf(err, "safetensors writer: out of memory for the header");
    }
    bertc_sys_free(header);
    bertc_sys_free(order);
    return rc;
}

static int stream(void *ctx, const char *header, size_t header_len, uint64_t data_bytes,
                  const StEntry *const *order, size_t n, BertcError *err)
{
    (void)data_bytes;
    const StSink *sink = ctx;
    uint8_t len[8];
    store_u64le(len, header_len);
    if (sink->write(sink->ctx, len, 8, err) != 0 ||
        sink->write(sink->ctx, header, header_len, err) != 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (write_data(*sink, order[i], err) != 0)
            return -1;
    return 0;
}

int bertc_st_write(StSink sink, const StEntry *entries, size_t n, const StMetadata *meta,
             size_t n_meta, BertcError *err)
{
    return with_header(entries, n, meta, n_meta, stream, &sink, err);
}

/* ------------------------------------------------------------------------ */
/* The data section's CRC-32                                                 */
/* ------------------------------------------------------------------------ */

/* A sink that keeps no bytes, only their running CRC-32. */
static int crc_write(void *ctx, const void *data, size_t n, BertcError *err)
{
    (void)err;
    uint32_t *crc = ctx;
    *crc = bertc_st_crc32(*crc, data, n);
    return 0;
}

/* The data bytes in file order, exactly as `stream` produces them after the
 * header, into the CRC sink: one pass over the tensors in memory. */
static int data_crc(void *ctx, const char *header, size_t header_len, uint64_t data_bytes,
                    const StEntry *const *order, size_t n, BertcError *err)
{
    (void)header, (void)header_len, (void)data_bytes;
    StSink sink = {crc_write, ctx};
    for (size_t i = 0; i < n; i++)
        if (write_data(sink, order[i], err) != 0)
            return -1;
    return 0;
}

int bertc_st_data_crc32(const StEntry *entries, size_t n, uint32_t *crc, BertcError *err)
{
    *crc = 0;
    return with_header(entries, n, NULL, 0, data_crc, crc, err);
}

/* ------------------------------------------------------------------------ */
/* Into a caller's buffer                                                    */
/* ------------------------------------------------------------------------ */

typedef struct BufferSink {
    uint8_t *buf;
    size_t cap, used;
    size_t *size;
} BufferSink;

static int buffer_write(void *ctx, const void *data, size_t n, BertcError *err)
{
    BufferSink *b = ctx;
    if (n > b->cap - b->used)
        return bertc_errorf(err, "safetensors writer: buffer of %zu bytes is full", b->cap);
    memcpy(b->buf + b->used, data, n);
    b->used += n;
    return 0;
}

static int to_buffer(void *ctx, const char *header, size_t header_len, uint64_t data_bytes,
                     const StEntry *const *order, size_t n, BertcError *err)
{
    BufferSink *b = ctx;
    uint64_t total = 8 + (uint64_t)header_len + data_bytes;
    *b->size = (size_t)total;
    if (!b->buf)
        return 0;
    if (total > b->cap)
        return bertc_errorf(err, "safetensors writer: the file needs %" PRIu64 " bytes but "
                            "the buffer has %zu", total, b->cap);
    StSink sink = {buffer_write, b};
    return stream(&sink, header, header_len, data_bytes, order, n, err);
}

int bertc_st_write_buffer(const StEntry *entries, size_t n, const StMetadata *meta, size_t n_meta,
                    void *buf, size_t cap, size_t *size, BertcError *err)
{
    BufferSink b = {buf, cap, 0, size};
    return with_header(entries, n, meta, n_meta, to_buffer, &b, err);
}
