/* tensor/error.c — the one error hook of SPEC §3, and error messages for
 * functions that read user data. */
#include "tensor/tensor.h"
#include "tensor/format_internal.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#if defined(BERTC_FREESTANDING)
/* No stderr on bare metal: errors abort silently and warnings are dropped
 * unless the program installs hooks (e.g. ones that print over a UART). */
static void default_hook(const char *msg, void *user) { (void)msg, (void)user; }
static void default_warn_hook(const char *msg, void *user) { (void)msg, (void)user; }
#else
#include <stdio.h>

static void default_hook(const char *msg, void *user)
{
    (void)user;
    fprintf(stderr, "bertc: %s\n", msg);
}

static void default_warn_hook(const char *msg, void *user)
{
    (void)user;
    fprintf(stderr, "bertc: warning: %s\n", msg);
}
#endif

/* The one-line form of s: a control character that came in with user data
 * (a path or flag value holding a newline, a key with a \r) is written as
 * \n, \r or \xNN. Messages are one line ("bertc: ..."), and a line break
 * from the input must not split one. A tab stays. Writes what fits of it
 * into out (cap bytes, NUL-terminated; cap 0: nothing) and returns its
 * whole length. */
static size_t escape(const char *s, char *out, size_t cap)
{
    static const char hex[] = "0123456789abcdef";
    size_t n = 0;
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        char put[4];
        size_t k = 0;
        if ((*c >= 0x20 && *c != 0x7f) || *c == '\t') {
            put[k++] = (char)*c;
        } else {
            put[k++] = '\\';
            if (*c == '\n' || *c == '\r') {
                put[k++] = *c == '\n' ? 'n' : 'r';
            } else {
                put[k++] = 'x';
                put[k++] = hex[*c >> 4];
                put[k++] = hex[*c & 15];
            }
        }
        for (size_t i = 0; i < k; i++, n++)
            if (n + 1 < cap)
                out[n] = put[i];
    }
    if (cap)
        out[n < cap ? n : cap - 1] = '\0';
    return n;
}

#if !defined(BERTC_FREESTANDING)
/* A word shortened in its middle keeps at least this many bytes of its start
 * and end together (with the "..." between). */
#define FIT_KEEP 48

/* Is byte c inside a UTF-8 sequence (not its first byte)? */
static bool continuation(char c) { return ((unsigned char)c & 0xc0) == 0x80; }

/* msg (len bytes, NUL-terminated) shortened in place to at most max bytes:
 * the middle of its longest word (a run without spaces: a path) becomes
 * "...", then the next longest, each keeping FIT_KEEP bytes, until it fits;
 * what is still too long keeps its start and its end. So a long path never
 * pushes the reason after it out of the message. */
static void fit(char *msg, size_t len, size_t max)
{
    while (len > max) {
        size_t best = 0, best_len = 0;
        for (size_t i = 0; i < len;) {
            size_t j = i;
            while (j < len && msg[j] != ' ')
                j++;
            if (j - i > best_len)
                best = i, best_len = j - i;
            i = j + 1;
        }
        if (best_len <= FIT_KEEP)
            break;
        size_t need = len - max, keep = best_len > need + FIT_KEEP ? best_len - need : FIT_KEEP;
        size_t head = (keep - 3) / 2, tail = best + best_len - (keep - 3 - head);
        while (head > 0 && continuation(msg[best + head]))
            head--;
        while (tail < best + best_len && continuation(msg[tail]))
            tail++;
        memcpy(msg + best + head, "...", 3);
        memmove(msg + best + head + 3, msg + tail, len - tail + 1);
        len -= tail - (best + head + 3);
    }
    if (len > max) {   /* no long word left: the message's start, "...", its end */
        size_t end = max / 3, start = max - end - 3, from = len - end;
        while (from < len && continuation(msg[from]))
            from++;
        memcpy(msg + start, "...", 3);
        memmove(msg + start + 3, msg + from, len - from + 1);
    }
}
#endif

/* fmt's message into dst (cap bytes, cap > 64): one line (escape), and, when
 * it is longer than cap, shortened in the middle of its long words (fit)
 * rather than cut at the end. A FREESTANDING build, which has no heap, cuts
 * it at the end. */
static void compose(char *dst, size_t cap, const char *fmt, va_list ap)
{
    char text[BERTC_ERROR_LEN];
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(text, sizeof text, fmt, ap);
    const char *whole = text;
#if !defined(BERTC_FREESTANDING)
    char *big = n >= (int)sizeof text ? malloc((size_t)n + 1) : NULL;
    if (big) {
        vsnprintf(big, (size_t)n + 1, fmt, again);
        whole = big;
    }
#endif
    va_end(again);
    size_t len = escape(whole, dst, cap);
#if !defined(BERTC_FREESTANDING)
    char *line = len >= cap ? malloc(len + 1) : NULL;
    if (line) {
        escape(whole, line, len + 1);
        fit(line, len, cap - 1);
        memcpy(dst, line, strlen(line) + 1);
    }
    free(line);
    free(big);
#else
    (void)n, (void)len;
#endif
}

const char *bertc_shown(const char *arg, char buf[BERTC_SHOWN])
{
    static const char hex[] = "0123456789abcdef";
    size_t n = 0;
    for (const unsigned char *s = (const unsigned char *)arg; *s && n + 5 < BERTC_SHOWN; s++) {
        if (*s >= 0x20 && *s != 0x7f) {
            buf[n++] = (char)*s;
            continue;
        }
        buf[n++] = '\\';
        if (*s == '\n' || *s == '\t' || *s == '\r') {
            buf[n++] = *s == '\n' ? 'n' : *s == '\t' ? 't' : 'r';
        } else {
            buf[n++] = 'x';
            buf[n++] = hex[*s >> 4];
            buf[n++] = hex[*s & 15];
        }
    }
    buf[n] = '\0';
    return buf;
}

int bertc_errorf(BertcError *err, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        compose(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static BertcErrorHook current_hook = default_hook;
static void *current_user = NULL;

BertcErrorHook bertc_set_error_hook(BertcErrorHook hook, void *user)
{
    BertcErrorHook previous = current_hook;
    current_hook = hook ? hook : default_hook;
    current_user = user;
    return previous;
}

/* The innermost guard of this thread: where bertc_fatal jumps back to. */
#if defined(BERTC_NO_THREADS)
static BertcCatch *catcher;
#else
static _Thread_local BertcCatch *catcher;
#endif

void bertc_catch_begin(BertcCatch *guard, BertcError *err)
{
    guard->err = err;
    guard->outer = catcher;
    catcher = guard;
}

void bertc_catch_end(BertcCatch *guard) { catcher = guard->outer; }

int bertc_try(BertcTryFn fn, void *ctx, BertcError *err)
{
    BertcCatch guard;
    bertc_catch_begin(&guard, err);
    if (setjmp(guard.env) != 0)
        return -1;   /* bertc_fatal jumped here: its message is in err */
    int rc = fn(ctx, err);
    bertc_catch_end(&guard);
    return rc;
}

_Noreturn void bertc_fatal(const char *fmt, ...)
{
    char msg[BERTC_ERROR_LEN];
    va_list ap;
    va_start(ap, fmt);
    compose(msg, sizeof msg, fmt, ap);
    va_end(ap);
    BertcCatch *guard = catcher;
    if (guard) {
        catcher = guard->outer;   /* the guard ends: the jump leaves its call */
        if (guard->err)
            snprintf(guard->err->msg, sizeof guard->err->msg, "%s", msg);
        longjmp(guard->env, 1);
    }
    current_hook(msg, current_user);
    abort(); /* a hook that returns has nowhere to go back to */
}

static BertcWarnHook warn_hook = default_warn_hook;
static void *warn_user = NULL;

BertcWarnHook bertc_set_warn_hook(BertcWarnHook hook, void *user)
{
    BertcWarnHook previous = warn_hook;
    warn_hook = hook ? hook : default_warn_hook;
    warn_user = user;
    return previous;
}

void bertc_warn(const char *fmt, ...)
{
    char msg[BERTC_ERROR_LEN];
    va_list ap;
    va_start(ap, fmt);
    compose(msg, sizeof msg, fmt, ap);
    va_end(ap);
    warn_hook(msg, warn_user);
}
