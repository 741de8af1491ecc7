/* nn/safetensors_file.c — safetensors on a POSIX file system: opening a path
 * (read through an StSource, tensors read on demand) and the atomic writer.
 * A bare-metal build leaves this file out and uses st_open_memory,
 * st_open_source and st_write_buffer. */
#include "nn/safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------------ */
/* Reading                                                                   */
/* ------------------------------------------------------------------------ */

typedef struct FileSource {
    FILE *fp;
    const char *path;
} FileSource;

static int file_read(void *ctx, uint64_t offset, void *dst, size_t n, BertcError *err)
{
    FileSource *f = ctx;
    if (fseeko(f->fp, (off_t)offset, SEEK_SET) != 0)
        return bertc_errorf(err, "%s: cannot seek to byte offset %" PRIu64 ": %s", f->path,
                            offset, strerror(errno));
    size_t got = fread(dst, 1, n, f->fp);
    if (got != n)
        return bertc_errorf(err, "%s: short read at byte offset %" PRIu64 ": wanted %zu "
                            "bytes, got %zu (%s)", f->path, offset, n, got,
                            ferror(f->fp) ? strerror(errno) : "the file shrank?");
    return 0;
}

static void file_close(void *ctx)
{
    fclose(((FileSource *)ctx)->fp);
}

int st_open_file(Arena *arena, const char *path, SafeTensors **out, BertcError *err)
{
    uint64_t length = 0;
    FILE *fp = bertc_open_read(path, &length, err);
    if (!fp)
        return -1;
    Arena *a = arena ? arena : arena_create("safetensors", 1 << 16);
    FileSource *f = arena_alloc(a, sizeof *f);
    *f = (FileSource){fp, path};
    StSource src = {.length = length, .read = file_read, .close = file_close, .ctx = f};
    if (st_open_source(a, path, src, out, err) != 0) {   /* closes fp on failure */
        if (!arena)
            arena_destroy(a);
        return -1;
    }
    f->path = (*out)->name; /* the copy that lives as long as the SafeTensors */
    (*out)->owns_arena = arena == NULL;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Atomic writing                                                            */
/* ------------------------------------------------------------------------ */

static int file_write(void *ctx, const void *data, size_t n, BertcError *err)
{
    if (fwrite(data, 1, n, ctx) != n)
        return bertc_errorf(err, "write failed: %s", strerror(errno));
    return 0;
}

/* fsync the directory holding path so the rename itself is durable. Some file
 * systems refuse to fsync a directory; that is not an error. */
static void sync_directory(const char *path)
{
    char dir[4096] = ".";
    const char *slash = strrchr(path, '/');
    if (slash) {
        size_t n = slash == path ? 1 : (size_t)(slash - path); /* "/f" is in "/" */
        if (n >= sizeof dir)
            return;
        memcpy(dir, path, n);
        dir[n] = '\0';
    }
    int fd = open(dir, O_RDONLY);
    if (fd < 0)
        return;
    fsync(fd);
    close(fd);
}

/* st_write with the caller's metadata plus {ST_CRC32_KEY, the data's CRC-32}.
 * The header comes before the data, so the CRC is computed first, in a pass
 * over the tensors in memory (cheap next to writing them). A value the caller
 * gave ST_CRC32_KEY (say, metadata copied from a file read earlier) is
 * replaced: it described other data. */
static int write_checksummed(StSink sink, const StEntry *entries, size_t n,
                             const StMetadata *meta, size_t n_meta, BertcError *err)
{
    uint32_t crc;
    if (st_data_crc32(entries, n, &crc, err) != 0)
        return -1;
    StMetadata *all = bertc_sys_alloc((n_meta + 1) * sizeof *all);
    if (!all)
        return bertc_errorf(err, "out of memory for %zu metadata entries", n_meta + 1);
    size_t k = 0;
    for (size_t i = 0; i < n_meta; i++)
        if (!meta[i].key || strcmp(meta[i].key, ST_CRC32_KEY) != 0)
            all[k++] = meta[i];
    char hex[9];
    snprintf(hex, sizeof hex, "%08" PRIx32, crc);
    all[k++] = (StMetadata){ST_CRC32_KEY, hex};
    int rc = st_write(sink, entries, n, all, k, err);
    bertc_sys_free(all);
    return rc;
}

/* Writes, flushes and fsyncs tmp; the message says which step failed. */
static int write_temp(const char *tmp, const StEntry *entries, size_t n,
                      const StMetadata *meta, size_t n_meta, BertcError *err)
{
    FILE *fp = fopen(tmp, "wb");
    if (!fp)
        return bertc_errorf(err, "%s: cannot create: %s", tmp, strerror(errno));
    BertcError inner;
    int rc = write_checksummed((StSink){file_write, fp}, entries, n, meta, n_meta, &inner);
    if (rc != 0)
        bertc_errorf(err, "%s: %s", tmp, inner.msg);
    if (rc == 0 && (fflush(fp) != 0 || fsync(fileno(fp)) != 0))
        rc = bertc_errorf(err, "%s: cannot flush to disk: %s", tmp, strerror(errno));
    if (fclose(fp) != 0 && rc == 0)
        rc = bertc_errorf(err, "%s: cannot close: %s", tmp, strerror(errno));
    return rc;
}

int st_write_file(const char *path, const StEntry *entries, size_t n,
                  const StMetadata *meta, size_t n_meta, BertcError *err)
{
    if (bertc_check_replaceable(path, err) != 0)
        return -1;
    char tmp[4096];
    int k = snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    if (k < 0 || (size_t)k >= sizeof tmp)
        return bertc_errorf(err, "%s: path too long", path);
    BertcError inner;   /* names the temporary file; the user asked for `path` */
    if (write_temp(tmp, entries, n, meta, n_meta, &inner) != 0) {
        remove(tmp);
        return bertc_errorf(err, "%s: cannot write it: %s", path, inner.msg);
    }
    if (rename(tmp, path) != 0) {
        int e = errno;
        remove(tmp);
        return bertc_errorf(err, "%s: cannot rename %s over it: %s", path, tmp, strerror(e));
    }
    sync_directory(path);
    return 0;
}
