/* nn/safetensors_file.c — safetensors on a POSIX file system: opening a path
 * (read through an StSource, tensors read on demand) and the atomic writer.
 * A bare-metal build leaves this file out and uses bertc_st_open_memory,
 * bertc_st_open_source and bertc_st_write_buffer. */
#include "nn/safetensors.h"

/* A POSIX system has directory listings, lstat and clock_gettime; a
 * bare-metal newlib build with files (NO_THREADS=1 on a Cortex-M, files by
 * semihosting) has none of them: there the writer does not sweep stale
 * temporaries, and it checks the target with stat. */
#if defined(__unix__) || defined(__APPLE__)
#define BERTC_POSIX_FS
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
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

int bertc_st_open_file(Arena *arena, const char *path, SafeTensors **out, BertcError *err)
{
    /* allocated before the file is open: an allocation that stops
     * (bertc_fatal, caught by a caller's guard) must not leave it open */
    Arena *a = arena ? arena : bertc_arena_create("safetensors", 1 << 16);
    FileSource *f = bertc_arena_alloc(a, sizeof *f);
    uint64_t length = 0;
    FILE *fp = bertc_open_read(path, &length, err);
    if (!fp) {
        if (!arena)
            bertc_arena_destroy(a);
        return -1;
    }
    *f = (FileSource){fp, path};
    StSource src = {.length = length, .read = file_read, .close = file_close, .ctx = f};
    if (bertc_st_open_source(a, path, src, out, err) != 0) {   /* closes fp on failure */
        if (!arena)
            bertc_arena_destroy(a);
        return -1;
    }
    f->path = (*out)->name; /* the copy that lives as long as the SafeTensors */
    (*out)->owns_arena = arena == NULL;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Atomic writing                                                            */
/* ------------------------------------------------------------------------ */

/* The sequence, each step able to fail (or the process to be killed) with the
 * file at `path` still the old one, whole, until the rename:
 *
 *   1. lstat(path): a regular file or nothing; a symbolic link, directory,
 *      FIFO or device is refused, never followed or replaced.
 *   2. Remove stale temporaries of `path` left by killed writers (below).
 *   3. open("<path>.tmp.<pid>.<12 random letters>",
 *           O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600): a new file that
 *      nobody else can have made or guessed, in the target's directory (so
 *      the rename cannot cross file systems), readable by nobody else while
 *      it is incomplete.
 *   4. write() the whole file; fchmod() it to the mode the file will keep
 *      (the old file's, or 0666 & ~umask as for any new file); fsync(); close().
 *   5. rename() it over path: atomic, so a reader sees the old file or the
 *      new one, never a mix.
 *   6. fsync() the directory, so the rename itself survives a power cut.
 *
 * On any failure before 5 the temporary is removed and path is untouched.
 *
 * Stale temporaries: a writer killed between 3 and 5 leaves its temporary
 * behind. Its name carries the writer's pid; the next save of the same path
 * removes every "<path>.tmp.<pid>[.<letters>]" that is a regular file and
 * whose writer is gone (no such process) or is this very process (a pid
 * reused by a restarted job: this process is not writing it, as bertc never
 * saves one path from two threads at once). A temporary of a live writer
 * elsewhere is left alone. */

#define TMP_TAG ".tmp."
#define TMP_RANDOM 12

/* dirname and basename of path into dir / *base ("f" -> ".", "f"). */
static int split_path(const char *path, char *dir, size_t len, const char **base,
                      BertcError *err)
{
    const char *slash = strrchr(path, '/');
    size_t n = !slash ? 1 : slash == path ? 1 : (size_t)(slash - path);
    if (n >= len)
        return bertc_errorf(err, "the directory of a file is %zu bytes, more than the %zu a "
                            "path may have (PATH_MAX): '%s'", n, len - 1, path);
    memcpy(dir, slash ? path : ".", n);
    dir[n] = '\0';
    *base = slash ? slash + 1 : path;
    if (!**base)
        return bertc_errorf(err, "'%s': not a file name (empty, or ends in '/')", path);
    return 0;
}

/* The mode a new file gets from open(..., 0666): 0666 minus the umask. umask
 * can only be read by setting it, so it is set back at once. */
static mode_t new_file_mode(void)
{
    mode_t mask = umask(077);
    umask(mask);
    return 0666 & ~mask;
}


/* Refuse a target that is not a regular file (or absent); *mode receives the
 * existing file's permissions, or those of a new file when there is none. */
static int check_target(const char *path, mode_t *mode, BertcError *err)
{
    struct stat sb;
    *mode = new_file_mode();
    if (bertc_link_stat(path, &sb) != 0)
        return errno == ENOENT ? 0
                               : bertc_errorf(err, "%s: cannot stat: %s", path, strerror(errno));
    /* a link is not followed (the rename would replace the link, not its
     * target); anything else that is not a file gets bertc_open_read's words */
    if (S_ISLNK(sb.st_mode))
        return bertc_errorf(err, "%s: not a regular file (a symbolic link); give the path of "
                            "a file", path);
    if (bertc_check_replaceable(path, err) != 0)
        return -1;
    *mode = sb.st_mode & 07777;
    return 0;
}

/* 64 unpredictable bits: /dev/urandom, mixed with the time and the pid so a
 * system without it still gets distinct names. */
static uint64_t random_bits(void)
{
    static uint64_t counter;
    struct timespec ts = {time(NULL), 0};
#if defined(BERTC_POSIX_FS)
    clock_gettime(CLOCK_REALTIME, &ts);
#endif
    uint64_t x = (uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 30 ^ (uint64_t)getpid() << 40;
    x ^= rng_mix(++counter * RNG_GAMMA);
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    uint64_t u = 0;
    if (fd >= 0) {
        if (read(fd, &u, sizeof u) == (ssize_t)sizeof u)
            x ^= u;
        close(fd);
    }
    return rng_mix(x);
}

/* Create "<path>.tmp.<pid>.<random>" (step 3 above); its name into tmp. */
static int create_temp(const char *path, char *tmp, size_t len, BertcError *err)
{
    static const char letters[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    for (int attempt = 0; attempt < 32; attempt++) {
        uint64_t bits = random_bits();
        char suffix[TMP_RANDOM + 1];
        for (int i = 0; i < TMP_RANDOM; i++, bits /= 62)
            suffix[i] = letters[bits % 62];
        suffix[TMP_RANDOM] = '\0';
        int k = snprintf(tmp, len, "%s" TMP_TAG "%ld.%s", path, (long)getpid(), suffix);
        if (k < 0 || (size_t)k >= len)
            return bertc_errorf(err, "%s: the temporary file beside it (the name + "
                                "\"" TMP_TAG "%ld.%s\") would be %d bytes, more than the %zu "
                                "a path may have (PATH_MAX); give a shorter path", path,
                                (long)getpid(), suffix, k, len - 1);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0 || errno != EEXIST)
            return fd >= 0 ? fd
                           : bertc_errorf(err, "%s: cannot write it: cannot create a "
                                          "temporary file beside it (%s): %s", path, tmp,
                                          strerror(errno));
    }
    return bertc_errorf(err, "%s: cannot find a free temporary name beside it", path);
}

#if defined(BERTC_POSIX_FS)
/* Is `name` (in the target's directory) a temporary of target `base`, and
 * whose? "<base>.tmp.<pid>" (older bertc) or "<base>.tmp.<pid>.<letters>". */
static bool temp_of(const char *name, const char *base, long *pid)
{
    size_t n = strlen(base), tag = strlen(TMP_TAG);
    if (strncmp(name, base, n) != 0 || strncmp(name + n, TMP_TAG, tag) != 0)
        return false;
    const char *p = name + n + tag;
    long v = 0;
    if (*p < '1' || *p > '9')
        return false;
    for (; *p >= '0' && *p <= '9' && v < 100000000; p++)
        v = v * 10 + (*p - '0');
    if (*p == '.') {
        size_t k = 0;
        for (p++; (p[k] >= 'A' && p[k] <= 'Z') || (p[k] >= 'a' && p[k] <= 'z') ||
                  (p[k] >= '0' && p[k] <= '9');)
            k++;
        p += k == TMP_RANDOM ? k : 0;
        if (k != TMP_RANDOM)
            return false;
    }
    *pid = v;
    return *p == '\0';
}

typedef struct StaleTemps {
    const char *dir, *base;
} StaleTemps;

/* One entry of the target's directory: removed when it is a temporary of
 * base whose writer is gone (this process, or a pid that no longer runs). */
static int remove_if_stale(const char *name, void *ctx)
{
    const StaleTemps *t = ctx;
    long pid;
    if (!temp_of(name, t->base, &pid))
        return 0;
    bool gone = pid == (long)getpid() || (kill((pid_t)pid, 0) != 0 && errno == ESRCH);
    char full[BERTC_PATH_MAX];
    struct stat sb;
    if (gone && bertc_path_join(full, t->dir, name, t->dir, NULL) == 0 &&
        lstat(full, &sb) == 0 && S_ISREG(sb.st_mode))
        unlink(full);
    return 0;
}

/* Step 2: remove the temporaries of base in dir whose writer is gone (a dir
 * that cannot be listed: nothing to sweep). */
static void remove_stale_temps(const char *dir, const char *base)
{
    StaleTemps t = {dir, base};
    BertcError unused;
    bertc_dir_each(dir, remove_if_stale, &t, &unused);
}
#else
/* No directory listing here: nothing to sweep. */
static void remove_stale_temps(const char *dir, const char *base)
{
    (void)dir, (void)base;
}
#endif

/* A sink writing through one 64 KB buffer to a file descriptor. */
typedef struct FdSink {
    int fd;
    size_t used;
    uint8_t buf[1 << 16];
} FdSink;

static int write_all(int fd, const uint8_t *p, size_t n, BertcError *err)
{
    while (n > 0) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return bertc_errorf(err, "write failed: %s", k < 0 ? strerror(errno) : "no progress");
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static int fd_flush(FdSink *s, BertcError *err)
{
    int rc = write_all(s->fd, s->buf, s->used, err);
    s->used = 0;
    return rc;
}

static int fd_write(void *ctx, const void *data, size_t n, BertcError *err)
{
    FdSink *s = ctx;
    const uint8_t *p = data;
    while (n > 0) {
        if (s->used == sizeof s->buf && fd_flush(s, err) != 0)
            return -1;
        size_t k = sizeof s->buf - s->used < n ? sizeof s->buf - s->used : n;
        memcpy(s->buf + s->used, p, k);
        s->used += k;
        p += k;
        n -= k;
    }
    return 0;
}

/* bertc_st_write with the caller's metadata plus {ST_CRC32_KEY, the data's CRC-32}.
 * The header comes before the data, so the CRC is computed first, in a pass
 * over the tensors in memory (cheap next to writing them). A value the caller
 * gave ST_CRC32_KEY (say, metadata copied from a file read earlier) is
 * replaced: it described other data. */
static int write_checksummed(StSink sink, const StEntry *entries, size_t n,
                             const StMetadata *meta, size_t n_meta, BertcError *err)
{
    uint32_t crc;
    if (bertc_st_data_crc32(entries, n, &crc, err) != 0)
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
    int rc = bertc_st_write(sink, entries, n, all, k, err);
    bertc_sys_free(all);
    return rc;
}

/* Step 4 into the open temporary fd; the message says which call failed. */
static int fill_temp(int fd, mode_t mode, const StEntry *entries, size_t n,
                     const StMetadata *meta, size_t n_meta, BertcError *err)
{
    FdSink *s = bertc_sys_alloc(sizeof *s);
    if (!s)
        return bertc_errorf(err, "out of memory for a write buffer");
    s->fd = fd;
    s->used = 0;
    int rc = write_checksummed((StSink){fd_write, s}, entries, n, meta, n_meta, err);
    if (rc == 0)
        rc = fd_flush(s, err);
    bertc_sys_free(s);
    if (rc == 0 && fchmod(fd, mode) != 0)
        rc = bertc_errorf(err, "cannot set its mode: %s", strerror(errno));
    if (rc == 0 && fsync(fd) != 0)
        rc = bertc_errorf(err, "cannot flush to disk: %s", strerror(errno));
    return rc;
}

/* Step 6. A file system that cannot fsync a directory (EINVAL) is not an
 * error; a failing disk is. */
static int sync_directory(const char *dir, BertcError *err)
{
    int fd = open(dir, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return bertc_errorf(err, "cannot open its directory %s to flush it: %s", dir,
                            strerror(errno));
    int rc = fsync(fd) != 0 && errno != EINVAL && errno != ENOTSUP
                 ? bertc_errorf(err, "cannot flush its directory %s: %s", dir, strerror(errno))
                 : 0;
    close(fd);
    return rc;
}

/* Steps 1 to 3: the target checked, stale temporaries gone, a new temporary
 * open (its name in tmp). Returns the descriptor, or -1. */
static int prepare(const char *path, char *dir, size_t dir_len, char *tmp, size_t tmp_len,
                   mode_t *mode, BertcError *err)
{
    const char *base = path;
    if (split_path(path, dir, dir_len, &base, err) != 0 || check_target(path, mode, err) != 0)
        return -1;
    remove_stale_temps(dir, base);
    return create_temp(path, tmp, tmp_len, err);
}

int bertc_st_write_file(const char *path, const StEntry *entries, size_t n,
                  const StMetadata *meta, size_t n_meta, BertcError *err)
{
    char dir[BERTC_PATH_MAX], tmp[BERTC_PATH_MAX];
    mode_t mode;
    int fd = prepare(path, dir, sizeof dir, tmp, sizeof tmp, &mode, err);
    if (fd < 0)
        return -1;
    BertcError inner;
    int rc = fill_temp(fd, mode, entries, n, meta, n_meta, &inner);
    if (close(fd) != 0 && rc == 0)
        rc = bertc_errorf(&inner, "cannot close: %s", strerror(errno));
    if (rc == 0 && rename(tmp, path) != 0)
        rc = bertc_errorf(&inner, "cannot rename the temporary over it: %s", strerror(errno));
    if (rc != 0) {
        unlink(tmp);
        return bertc_errorf(err, "%s: cannot write it (the previous file, if any, is "
                            "untouched): %s: %s", path, tmp, inner.msg);
    }
    if (sync_directory(dir, &inner) != 0)
        return bertc_errorf(err, "%s: written, but %s", path, inner.msg);
    return 0;
}

int bertc_st_check_writable(const char *path, BertcError *err)
{
    char dir[BERTC_PATH_MAX], tmp[BERTC_PATH_MAX];
    mode_t mode;
    int fd = prepare(path, dir, sizeof dir, tmp, sizeof tmp, &mode, err);
    if (fd < 0)
        return -1;
    close(fd);
    unlink(tmp);
    return 0;
}
