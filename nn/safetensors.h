/*
 * nn/safetensors.h — the Hugging Face safetensors weight format (SPEC §5).
 *
 * Layout: u64 little-endian header length N, N bytes of JSON
 *   {"__metadata__": {"k": "v"}, "name": {"dtype": "F32", "shape": [2, 3],
 *                                         "data_offsets": [begin, end]}, ...}
 * then the raw little-endian, C-order tensor data; offsets count from the
 * first byte after the header.
 *
 * Reading a model file and writing a checkpoint:
 *
 *     BertcError err;
 *     SafeTensors *st;
 *     if (bertc_st_open_file(NULL, "model.safetensors", &st, &err) != 0) {   // validates everything
 *         fprintf(stderr, "%s\n", err.msg);
 *         return 1;
 *     }
 *     for (size_t i = 0; i < st->n_tensors; i++)
 *         printf("%s %s\n", st->tensors[i].name, bertc_st_dtype_name(st->tensors[i].dtype));
 *     Tensor w;                                      // F32/F16/BF16/F64/... -> float32
 *     ITensor ids;                                   // I64/I32/U8/BOOL -> int32 (range-checked)
 *     if (bertc_st_load_tensor(st, "bert.pooler.dense.weight", params, &w, &err) != 0 ||
 *         bertc_st_load_itensor(st, "input_ids", params, &ids, &err) != 0)
 *         fprintf(stderr, "%s\n", err.msg);
 *     bertc_st_close(st);
 *
 *     StEntry out[2] = {bertc_st_entry_tensor("w", &w), bertc_st_entry_itensor("ids", &ids)};
 *     StMetadata meta[1] = {{"format", "pt"}};
 *     if (bertc_st_write_file("ckpt.safetensors", out, 2, meta, 1, &err) != 0)  // atomic
 *         fprintf(stderr, "%s\n", err.msg);
 *
 * Reading validates the whole header when the file is opened, before any
 * tensor is read: the header length against the file size (checked before
 * anything is allocated), the JSON syntax, the fields of every entry, dtype
 * names, shapes (non-negative, product without overflow, at most
 * TENSOR_MAX_DIMS dims), shape x dtype size == end - begin, ranges inside the
 * data section and not overlapping, tensor names (no duplicates, no NUL), and
 * that __metadata__ maps strings to strings. Gaps between tensors and bytes
 * after the last one are allowed (Hugging Face's reader rejects them; they
 * cannot make a read go wrong). Every message names the file, the tensor or
 * key and the sizes or byte offsets in question.
 *
 * Checksum: bertc_st_write_file stores in __metadata__ the key ST_CRC32_KEY
 * ("bertc.crc32") whose value is the CRC-32 (zlib's, see bertc_st_crc32) of the
 * data section, every byte after the header, as 8 lowercase hex digits:
 *     {"__metadata__":{"format":"pt","bertc.crc32":"cbf43926"}, ...}
 * Opening a file that has the key reads the data section once and checks it:
 * a mismatch is an error naming the file ("data section checksum mismatch
 * (stored crc32 ..., computed ...): the file is damaged"), and a value that is
 * not 8 hex digits is an error naming the key. Files without the key (from
 * PyTorch or Hugging Face) open as before, unchecked. Header damage and
 * truncation are caught by the header checks above whether or not the key is
 * there. bertc_st_write and bertc_st_write_buffer reproduce Hugging Face's layout and add
 * no key; a caller can add one with bertc_st_data_crc32.
 *
 * Entries of dtypes bertc does not convert (I16, U16, U32, U64, F8_E4M3,
 * F8_E5M2) are valid in a file; reading one of them is an error. I8 is read
 * only as itself, with bertc_st_read_i8 (the int8 weights of a quantised
 * model): never converted to float32 or int32.
 *
 * Byte order: all multi-byte values are assembled from bytes with shifts
 * (p[0] | p[1] << 8 | ...), which means the same on little- and big-endian
 * hosts, so no host detection or swapping step is needed on either side.
 */
#ifndef BERTC_NN_SAFETENSORS_H
#define BERTC_NN_SAFETENSORS_H

#include "tensor/tensor.h"

/* Hugging Face's dtypes in its order (increasing alignment), which the writer
 * uses to sort entries as huggingface/safetensors `prepare` does. */
typedef enum StDtype {
    ST_BOOL, ST_U8, ST_I8, ST_F8_E5M2, ST_F8_E4M3, ST_I16, ST_U16, ST_F16, ST_BF16,
    ST_I32, ST_U32, ST_F32, ST_F64, ST_I64, ST_U64,
    ST_DTYPE_COUNT
} StDtype;

const char *bertc_st_dtype_name(StDtype dtype);   /* "F32", ... */
size_t bertc_st_dtype_size(StDtype dtype);        /* bytes per element */

/* Hugging Face's limit on the header length (MAX_HEADER_SIZE). */
#define ST_MAX_HEADER_BYTES 100000000ull

typedef struct StTensorInfo {
    const char *name;
    StDtype dtype;
    int ndim;                        /* 0 is a scalar (numel 1) */
    int64_t shape[TENSOR_MAX_DIMS];
    int64_t numel;
    uint64_t begin, end;             /* byte range in the data section */
} StTensorInfo;

typedef struct StMetadata {
    const char *key, *value;
} StMetadata;

/* Where the bytes of a file come from. `read` copies n bytes starting at
 * `offset` into dst (returning non-zero with a message on failure); `close`
 * (may be NULL) is called by bertc_st_close. bertc_st_open_file and bertc_st_open_memory make
 * one; an embedded port can read from flash by providing its own. */
typedef struct StSource {
    uint64_t length;
    int (*read)(void *ctx, uint64_t offset, void *dst, size_t n, BertcError *err);
    void (*close)(void *ctx);
    void *ctx;
} StSource;

typedef struct SafeTensors {
    const char *name;                /* path, or the name given to bertc_st_open_memory */
    size_t n_tensors;
    const StTensorInfo *tensors;     /* in header order */
    size_t n_metadata;
    const StMetadata *metadata;      /* in header order */
    uint64_t header_length;          /* N */
    uint64_t data_start;             /* 8 + N: file offset of the data section */
    uint64_t data_length;            /* bytes after the header */
    /* private */
    StSource source;
    const StTensorInfo **by_name;    /* sorted by name for bertc_st_find */
    Arena *arena;
    bool owns_arena;
} SafeTensors;

/* The __metadata__ key holding the data section's CRC-32 (see the top). */
#define ST_CRC32_KEY "bertc.crc32"

/* Open and validate. All bookkeeping (the header, its JSON tree, the entry
 * table: a few times the header length) comes from `arena`; pass NULL to let
 * the SafeTensors own an arena that bertc_st_close frees. Tensor data is read only
 * when asked for, except that a file with ST_CRC32_KEY has its data section
 * read once, 4 KB at a time, to check the checksum. */
int bertc_st_open_file(Arena *arena, const char *path, SafeTensors **out, BertcError *err);
/* `buffer` (the whole file's bytes) is not copied and must outlive *out. */
int bertc_st_open_memory(Arena *arena, const char *name, const void *buffer, size_t length,
                   SafeTensors **out, BertcError *err);
int bertc_st_open_source(Arena *arena, const char *name, StSource source, SafeTensors **out,
                   BertcError *err);
void bertc_st_close(SafeTensors *st);

/* The entry called name, or NULL. */
const StTensorInfo *bertc_st_find(const SafeTensors *st, const char *name);
/* The __metadata__ value for key, or NULL. */
const char *bertc_st_metadata_get(const SafeTensors *st, const char *key);

/* Read a tensor into caller memory of exactly `count` = numel elements.
 * bertc_st_read_f32 converts F32, F16, BF16, F64, I64, I32, U8 and BOOL (to 0/1);
 * integers above 2^24 in magnitude round to the nearest float.
 * bertc_st_read_i32 converts I64 and I32 (an element outside the int32 range is an
 * error naming it and its byte offset), U8 and BOOL; float dtypes are an
 * error. A BOOL byte other than 0 or 1 is an error. */
int bertc_st_read_f32(const SafeTensors *st, const StTensorInfo *t, float *dst, size_t count,
                BertcError *err);
int bertc_st_read_i32(const SafeTensors *st, const StTensorInfo *t, int32_t *dst, size_t count,
                BertcError *err);

/* An I8 tensor into count = numel int8_t, unconverted. Any other dtype is an
 * error naming the tensor and its dtype. */
int bertc_st_read_i8(const SafeTensors *st, const StTensorInfo *t, int8_t *dst, size_t count,
                     BertcError *err);

/* Find `name`, allocate a tensor of its shape in `arena` and read it. A
 * missing name is an error naming it. */
int bertc_st_load_tensor(const SafeTensors *st, const char *name, Arena *arena, Tensor *out,
                   BertcError *err);
int bertc_st_load_itensor(const SafeTensors *st, const char *name, Arena *arena, ITensor *out,
                    BertcError *err);

/* ------------------------------------------------------------------------ */
/* Writing (F32, I64 and I8)                                                 */
/* ------------------------------------------------------------------------ */

/* One tensor to write: dtype ST_F32 with `f32` set, ST_BF16 with `f32` set
 * (each value rounded to bf16 as it is written: bertc_bf16_from_f32,
 * tensor/kernels.h), ST_I64 with `i64` set (or `i32`, widened to I64), or
 * ST_I8 with `i8` set (int8 weights of a quantised model,
 * docs/quantization.md). */
typedef struct StEntry {
    const char *name;
    StDtype dtype;
    int ndim;
    const int64_t *shape;
    const float *f32;
    const int64_t *i64;
    const int32_t *i32;
    const int8_t *i8;
} StEntry;

StEntry bertc_st_entry_tensor(const char *name, const Tensor *t);    /* F32 */
StEntry bertc_st_entry_itensor(const char *name, const ITensor *t);  /* I64 */

/* Receives the bytes of a file being written, in order. */
typedef struct StSink {
    int (*write)(void *ctx, const void *data, size_t n, BertcError *err);
    void *ctx;
} StSink;

/* The file layout follows huggingface/safetensors `serialize`: entries sorted
 * by dtype (I64 before F32, so every tensor stays aligned) and then by name
 * (bytewise), "__metadata__" first in the header when n_meta > 0 (in the
 * caller's order), compact JSON with the fields dtype, shape, data_offsets,
 * padded with spaces to a multiple of 8 bytes. Names and metadata must be
 * valid UTF-8 and unique; "__metadata__" is not a tensor name. */
int bertc_st_write(StSink sink, const StEntry *entries, size_t n, const StMetadata *meta,
             size_t n_meta, BertcError *err);
/* Into buf[0..cap); *size gets the file size. With buf == NULL only *size is
 * computed (so a caller can allocate exactly). */
int bertc_st_write_buffer(const StEntry *entries, size_t n, const StMetadata *meta, size_t n_meta,
                    void *buf, size_t cap, size_t *size, BertcError *err);
/* Atomically (nn/safetensors_file.c has the steps): refuses a path that is a
 * symbolic link, a directory, a FIFO or anything but a regular file; removes
 * temporaries of path that killed writers left; writes a new temporary
 * "<path>.tmp.<pid>.<12 random letters>" (created O_EXCL | O_NOFOLLOW, mode
 * 0600 until complete, then the old file's mode or 0666 & ~umask) with
 * ST_CRC32_KEY added to the caller's metadata (replacing any value the caller
 * gave it), fsyncs it, renames it over path and fsyncs the directory. On
 * failure the temporary is removed, an existing file at path is untouched
 * and the message names path and the step that failed. */
int bertc_st_write_file(const char *path, const StEntry *entries, size_t n,
                  const StMetadata *meta, size_t n_meta, BertcError *err);

/* Would bertc_st_write_file(path) get as far as writing? The same checks of path
 * and a temporary created and removed beside it, so a training run can find
 * an unwritable checkpoint path before its first step, not at its first save. */
int bertc_st_check_writable(const char *path, BertcError *err);

/* The CRC-32 bertc_st_write would compute over the data section it writes for these
 * entries (they are checked as bertc_st_write checks them). Store it as
 * {ST_CRC32_KEY, 8 lowercase hex digits} in the metadata passed to bertc_st_write or
 * bertc_st_write_buffer; bertc_st_write_file does this itself. */
int bertc_st_data_crc32(const StEntry *entries, size_t n, uint32_t *crc, BertcError *err);

/* ------------------------------------------------------------------------ */
/* CRC-32 (nn/crc32.c)                                                       */
/* ------------------------------------------------------------------------ */

/* CRC-32 of zlib, PNG and gzip (reflected polynomial 0xEDB88320), updated
 * over data[0..n): start from 0 and chain, crc = bertc_st_crc32(crc, chunk, len).
 * bertc_st_crc32(0, "123456789", 9) == 0xCBF43926. Table-driven (slicing-by-8),
 * about 2.5 GB/s; bertc_st_crc32_bitwise is the bit-at-a-time form it is tested
 * against. */
uint32_t bertc_st_crc32(uint32_t crc, const void *data, size_t n);
uint32_t bertc_st_crc32_bitwise(uint32_t crc, const void *data, size_t n);

#endif /* BERTC_NN_SAFETENSORS_H */
