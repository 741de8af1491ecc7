/* test/support_io_fault.c — see test_io_arm in test_util.h.
 *
 * The linker routes the file-system calls of the test binary's own objects
 * (the tests and libbertc.a; not shared libraries) through these wrappers
 * (-Wl,--wrap=open,... in the Makefile). Unarmed they only pass the call on. */
#include "test/test_util.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

int __real_open(const char *path, int flags, ...);
ssize_t __real_write(int fd, const void *buf, size_t n);
int __real_fchmod(int fd, mode_t mode);
int __real_fsync(int fd);
int __real_close(int fd);
int __real_rename(const char *from, const char *to);

static bool armed, kill_mode;
static int nth, calls;
static const char *hit;

void test_io_arm(int n, bool kill)
{
    armed = true;
    kill_mode = kill;
    nth = n;
    calls = 0;
    hit = NULL;
}

int test_io_disarm(void)
{
    armed = false;
    return calls;
}

const char *test_io_hit(void) { return hit; }

/* Is this call the one to fail? In kill mode it does not return. */
static bool fault(const char *name)
{
    if (!armed || ++calls != nth)
        return false;
    hit = name;
    if (kill_mode)
        raise(SIGKILL);
    errno = EIO;
    return true;
}

int __wrap_open(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = (flags & O_CREAT) ? (mode_t)va_arg(ap, int) : 0;
    va_end(ap);
    return fault("open") ? -1 : __real_open(path, flags, mode);
}

ssize_t __wrap_write(int fd, const void *buf, size_t n)
{
    return fault("write") ? -1 : __real_write(fd, buf, n);
}

int __wrap_fchmod(int fd, mode_t mode)
{
    return fault("fchmod") ? -1 : __real_fchmod(fd, mode);
}

int __wrap_fsync(int fd)
{
    return fault("fsync") ? -1 : __real_fsync(fd);
}

/* A failed close still closes the descriptor, as on Linux. */
int __wrap_close(int fd)
{
    bool fail = fault("close");
    int rc = __real_close(fd);
    return fail ? -1 : rc;
}

int __wrap_rename(const char *from, const char *to)
{
    return fault("rename") ? -1 : __real_rename(from, to);
}
