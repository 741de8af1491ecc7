/* tensor/open_file.c — the one place bertc opens a path the user gave, for
 * reading or writing (bare-metal builds leave this file out).
 *
 * A path may name something that is not a file: a FIFO, whose open or first
 * read waits for a writer forever; a directory; a device (/dev/zero never ends,
 * /dev/stdin waits on the terminal); a socket. Every reader and writer opens
 * through here, so each of them refuses those before it can block: the open is
 * non-blocking, fstat decides, and only a regular file is handed on, with
 * O_NONBLOCK cleared again. */
#include "tensor/tensor.h"

/* A POSIX system lists directories and has symbolic links; a bare-metal
 * newlib build with files (NO_THREADS=1 on a Cortex-M, files by
 * semihosting) has neither (nn/safetensors_file.c says the same). */
#if defined(__unix__) || defined(__APPLE__)
#define BERTC_POSIX_FS
#include <dirent.h>
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* "a FIFO", "a directory", ... for the message. */
static const char *kind_of(mode_t mode)
{
    return S_ISFIFO(mode)   ? "a FIFO"
           : S_ISDIR(mode)  ? "a directory"
           : S_ISCHR(mode)  ? "a character device"
           : S_ISBLK(mode)  ? "a block device"
           : S_ISSOCK(mode) ? "a socket"
                            : "not a file";
}

static int not_regular(const char *path, mode_t mode, BertcError *err)
{
    return bertc_errorf(err, "%s: not a regular file (%s); give the path of a file", path,
                        kind_of(mode));
}

/* open() failed: a socket (ENXIO) or a FIFO with no reader (ENXIO when
 * writing) gets the same message as any other non-file; else errno's text. */
static int open_failed(const char *path, const char *doing, BertcError *err)
{
    int e = errno;
    struct stat sb;
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
        return not_regular(path, sb.st_mode, err);
    return bertc_errorf(err, "%s: cannot %s: %s", path, doing, strerror(e));
}

/* fd (opened O_NONBLOCK) as a FILE* once it is known to be a regular file;
 * closes fd on any failure. */
static FILE *regular_stream(int fd, const char *path, const char *mode, bool allow_chr,
                            uint64_t *size, BertcError *err)
{
    struct stat sb;
    int flags;
    if (fstat(fd, &sb) != 0) {
        bertc_errorf(err, "%s: cannot stat: %s", path, strerror(errno));
    } else if (!S_ISREG(sb.st_mode) && !(allow_chr && S_ISCHR(sb.st_mode))) {
        not_regular(path, sb.st_mode, err);
    } else if ((flags = fcntl(fd, F_GETFL)) < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
        bertc_errorf(err, "%s: cannot make the file blocking again: %s", path, strerror(errno));
    } else {
        FILE *fp = fdopen(fd, mode);
        if (fp) {
            if (size)
                *size = (uint64_t)sb.st_size;
            return fp;
        }
        bertc_errorf(err, "%s: cannot open: %s", path, strerror(errno));
    }
    close(fd);
    return NULL;
}

int bertc_check_replaceable(const char *path, BertcError *err)
{
    struct stat sb;
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
        return not_regular(path, sb.st_mode, err);
    return 0;
}

FILE *bertc_open_read(const char *path, uint64_t *size, BertcError *err)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        open_failed(path, "open", err);
        return NULL;
    }
    return regular_stream(fd, path, "rb", false, size, err);
}

/* O_NONBLOCK makes opening a FIFO that has no reader fail (ENXIO) instead of
 * waiting for one. The file is truncated only once it is known to be a
 * regular file. A character device (/dev/null) is a fine place to write. */
FILE *bertc_open_write(const char *path, BertcError *err)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_NONBLOCK | O_CLOEXEC, 0666);
    if (fd < 0) {
        open_failed(path, "write", err);
        return NULL;
    }
    FILE *fp = regular_stream(fd, path, "wb", true, NULL, err);
    if (fp && ftruncate(fd, 0) != 0 && errno != EINVAL) {
        bertc_errorf(err, "%s: cannot truncate: %s", path, strerror(errno));
        fclose(fp);
        return NULL;
    }
    return fp;
}

/* As bertc_open_write, but what is there stays and writes go at its end. */
FILE *bertc_open_append(const char *path, BertcError *err)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NONBLOCK | O_CLOEXEC, 0666);
    if (fd < 0) {
        open_failed(path, "append to", err);
        return NULL;
    }
    return regular_stream(fd, path, "ab", true, NULL, err);
}

/* ---- a whole file into an arena ----------------------------------------- */

/* The file's bytes, NUL-terminated, into a new arena (*arena, made here: a
 * file too big for memory reaches bertc_fatal, after which the caller still
 * closes fp and frees *arena). */
static int read_into_arena(FILE *fp, const char *path, size_t size, Arena **arena, char **text,
                           BertcError *err)
{
    *arena = bertc_arena_create("file", size + 4096);
    char *bytes = bertc_arena_alloc(*arena, size + 1);
    if (fread(bytes, 1, size, fp) != size)
        return bertc_errorf(err, "%s: short read: %s", path,
                            ferror(fp) ? strerror(errno) : "the file shrank");
    bytes[size] = '\0';
    *text = bytes;
    return 0;
}

int bertc_read_file(const char *path, size_t max_bytes, const char *what, Arena **arena,
                    char **text, size_t *len, BertcError *err)
{
    *arena = NULL;
    uint64_t size = 0;
    FILE *fp = bertc_open_read(path, &size, err);
    if (!fp)
        return -1;
    if (size > max_bytes) {
        fclose(fp);
        return bertc_errorf(err, "%s: %llu bytes, more than the %zu %s may have", path,
                            (unsigned long long)size, max_bytes, what);
    }
    *len = (size_t)size;
    BertcCatch guard;
    bertc_catch_begin(&guard, err);
    if (setjmp(guard.env) != 0) {   /* out of memory: err says so */
        fclose(fp);
        return -1;
    }
    int rc = read_into_arena(fp, path, *len, arena, text, err);
    bertc_catch_end(&guard);
    fclose(fp);
    return rc;
}

int bertc_write_file(const char *path, const void *bytes, size_t n, BertcError *err)
{
    FILE *fp = bertc_open_write(path, err);
    if (!fp)
        return -1;
    bool ok = fwrite(bytes, 1, n, fp) == n;
    if (fclose(fp) != 0 || !ok)
        return bertc_errorf(err, "%s: write failed: %s", path, strerror(errno));
    return 0;
}

/* ---- paths ------------------------------------------------------------- */

int bertc_path_join(char out[BERTC_PATH_MAX], const char *dir, const char *name,
                    const char *what, BertcError *err)
{
    size_t n = strlen(dir), k = strlen(name);
    bool slash = n > 0 && dir[n - 1] == '/';
    size_t len = n + (slash ? 0 : 1) + k;
    out[0] = '\0';
    if (len >= BERTC_PATH_MAX)
        return bertc_errorf(err, "%s: the path of %s in it would be %zu bytes, more than the "
                            "%d a path may have (PATH_MAX): '%s'",
                            what, name, len, BERTC_PATH_MAX - 1, dir);
    memcpy(out, dir, n);
    if (!slash)
        out[n++] = '/';
    memcpy(out + n, name, k + 1);
    return 0;
}

int bertc_path_check(const char *path, const char *what, BertcError *err)
{
    size_t n = strlen(path);
    if (n >= BERTC_PATH_MAX)
        return bertc_errorf(err, "%s: the path is %zu bytes, more than the %d a path may have "
                            "(PATH_MAX): '%s'", what, n, BERTC_PATH_MAX - 1, path);
    return 0;
}

int bertc_path_check_dir(const char *dir, const char *what, BertcError *err)
{
    size_t n = strlen(dir), max = BERTC_PATH_MAX - 1 - BERTC_PATH_DIR_ROOM;
    if (n > max)
        return bertc_errorf(err, "%s: the directory path is %zu bytes; a directory may have "
                            "at most %zu (PATH_MAX %d, less room for the files bertc puts in "
                            "it): '%s'", what, n, max, BERTC_PATH_MAX, dir);
    return 0;
}

bool bertc_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

int bertc_dir_each(const char *dir, int (*each)(const char *name, void *ctx), void *ctx,
                   BertcError *err)
{
#if !defined(BERTC_POSIX_FS)
    (void)each, (void)ctx;
    return bertc_errorf(err, "%s: this platform's C library lists no directories", dir);
#else
    DIR *d = opendir(dir);
    if (!d)
        return bertc_errorf(err, "%s: cannot list it: %s", dir, strerror(errno));
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            rc = each(e->d_name, ctx);
    closedir(d);
    return rc;
#endif
}

int bertc_link_stat(const char *path, struct stat *sb)
{
#if defined(BERTC_POSIX_FS)
    return lstat(path, sb);
#else
    return stat(path, sb);
#endif
}
