/* tensor/error.c — the one error hook of SPEC §3, and error messages for
 * functions that read user data. */
#include "tensor/tensor.h"
#include "tensor/format_internal.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdlib.h>

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

/* Rewrite msg (cap bytes) so that it is one line: a control character that
 * came in with user data (a path or flag value holding a newline, a key with
 * a \r) is written as \n, \r or \xNN. Messages are one line ("bertc: ..."),
 * and a line break from the input must not split one. A tab stays. */
static void one_line(char *msg, size_t cap)
{
    static const char hex[] = "0123456789abcdef";
    char in[BERTC_ERROR_LEN];
    size_t len = 0;
    bool clean = true;
    for (; msg[len] && len + 1 < sizeof in; len++) {
        in[len] = msg[len];
        clean = clean && ((unsigned char)msg[len] >= 0x20 || msg[len] == '\t') &&
                msg[len] != 0x7f;
    }
    if (clean)
        return;
    in[len] = '\0';
    size_t n = 0;
    for (const unsigned char *s = (const unsigned char *)in; *s; s++) {
        bool plain = (*s >= 0x20 && *s != 0x7f) || *s == '\t';
        if (n + (plain ? 1 : 4) >= cap)
            break;
        if (plain) {
            msg[n++] = (char)*s;
        } else if (*s == '\n' || *s == '\r') {
            msg[n++] = '\\';
            msg[n++] = *s == '\n' ? 'n' : 'r';
        } else {
            msg[n++] = '\\';
            msg[n++] = 'x';
            msg[n++] = hex[*s >> 4];
            msg[n++] = hex[*s & 15];
        }
    }
    msg[n] = '\0';
}

int bertc_errorf(BertcError *err, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        one_line(err->msg, sizeof err->msg);
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
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    one_line(msg, sizeof msg);
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
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    one_line(msg, sizeof msg);
    warn_hook(msg, warn_user);
}
