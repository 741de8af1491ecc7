/* tensor/format.c — bertc's own snprintf, so a FREESTANDING build needs no
 * stdio (and none of newlib's printf, whose float path calls malloc).
 *
 * Conversions: d i u x X o c s p % and f e g (E G), flags - + space 0,
 * width and precision (either may be *), length hh h l ll z j t.
 * Return value as C99: the length the whole result would have, whatever len
 * is; buf gets at most len - 1 characters and a NUL (buf may be NULL when
 * len is 0).
 *
 * Floats: the digits are round(x * 10^k) as a 64-bit integer, with the
 * product kept exact (Dekker's two-product) when 10^k is a double, i.e.
 * |k| <= 22. So they are glibc's digits for %g, %e, %.9g of any float and
 * %.17g of doubles in [1e-6, 1e38] (tested against glibc on 300,000 values);
 * beyond that the scaling rounds once and the 17th digit may be one off. At
 * most 17 significant digits are computed; %f pads the rest with zeros. */
#include "tensor/tensor.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

/* Appends to buf[0..len), counting every character. */
typedef struct Out {
    char *buf;
    size_t len, n;
} Out;

static void put_char(Out *o, char c)
{
    if (o->n + 1 < o->len)
        o->buf[o->n] = c;
    o->n++;
}

static void put_chars(Out *o, char c, int count)
{
    for (int i = 0; i < count; i++)
        put_char(o, c);
}

static void put_mem(Out *o, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        put_char(o, s[i]);
}

/* One conversion's flags, width and precision (-1: none). */
typedef struct Spec {
    bool left, plus, space, zero;
    int width, precision;
} Spec;

/* sign, then body: padded to the width on the left (spaces, or zeros after
 * the sign with the 0 flag) or on the right with the - flag. */
static void put_padded(Out *o, const Spec *s, const char *sign, const char *body, size_t n,
                       bool zero_ok)
{
    size_t sl = strlen(sign);
    int pad = s->width > (int)(sl + n) ? s->width - (int)(sl + n) : 0;
    if (!s->left && !(s->zero && zero_ok))
        put_chars(o, ' ', pad);
    put_mem(o, sign, sl);
    if (!s->left && s->zero && zero_ok)
        put_chars(o, '0', pad);
    put_mem(o, body, n);
    if (s->left)
        put_chars(o, ' ', pad);
}

static const char *sign_of(bool negative, const Spec *s)
{
    return negative ? "-" : s->plus ? "+" : s->space ? " " : "";
}

static void put_integer(Out *o, const Spec *s, uintmax_t v, bool negative, unsigned base,
                        bool upper)
{
    const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
    char tmp[72];
    int n = 0;
    while (v) {
        tmp[n++] = digits[v % base];
        v /= base;
    }
    int min_digits = s->precision >= 0 ? s->precision : 1;
    while (n < min_digits && n < (int)sizeof tmp)
        tmp[n++] = '0';
    char body[72];
    for (int i = 0; i < n; i++)
        body[i] = tmp[n - 1 - i];
    put_padded(o, s, sign_of(negative, s), body, (size_t)n, s->precision < 0);
}

/* ------------------------------------------------------------------------ */
/* Floating point                                                            */
/* ------------------------------------------------------------------------ */

#define MAX_SIG 17   /* significant digits a double holds */

/* 10^k for 0 <= k <= 308: exact up to 10^22, then one rounding per factor. */
static double pow10_of(int k)
{
    static const double p[] = {1e1, 1e2, 1e4, 1e8, 1e16, 1e32, 1e64, 1e128, 1e256};
    double r = 1.0;
    for (int i = 0; k; i++, k >>= 1)
        if (k & 1)
            r *= p[i];
    return r;
}

/* Dekker's exact product: a * b == *hi + *lo (no FMA needed, so every IEEE
 * double target agrees). */
static void two_product(double a, double b, double *hi, double *lo)
{
    const double split = 134217729.0;   /* 2^27 + 1 */
    double ta = split * a, ah = ta - (ta - a), al = a - ah;
    double tb = split * b, bh = tb - (tb - b), bl = b - bh;
    *hi = a * b;
    *lo = ((ah * bh - *hi) + ah * bl + al * bh) + al * bl;
}

/* round(x * 10^k) for x * 10^k < 2^63: exact when |k| <= 22 (10^k is then a
 * double), one rounding of the scaling otherwise. */
static uint64_t scaled_round(double x, int k)
{
    double hi, lo;
    if (k > 22) {
        x *= pow10_of(k - 22);
        k = 22;
    } else if (k < -22) {
        x /= pow10_of(-k - 22);
        k = -22;
    }
    if (k >= 0) {
        two_product(x, pow10_of(k), &hi, &lo);
    } else {
        double p = pow10_of(-k), qh, ql;
        hi = x / p;
        two_product(hi, p, &qh, &ql);
        lo = ((x - qh) - ql) / p;       /* x - hi * p, exactly, over p */
    }
    /* hi + lo = whole + lw + f + lf with f, lf in [0, 1), all exact. */
    double whole = floor(hi), f = hi - whole, lw = floor(lo), lf = lo - lw;
    uint64_t m = (uint64_t)whole + (uint64_t)(int64_t)lw;
    /* Round f + lf (in [0, 2)) to even. Compared with 1/2 and 3/2 through
     * differences that are exact (Sterbenz), so a tiny lf is never lost in a
     * sum: 0.0005 * 1000 is 0.50000000000000001 and rounds up, as in glibc. */
    double vs_half = f >= 0.25 ? (f - 0.5) + lf : lf >= 0.25 ? (lf - 0.5) + f : -1.0;
    double vs_3half = f >= 0.5 && lf >= 0.5 ? (f - 0.5) + (lf - 1.0) : -1.0;
    if (vs_3half > 0.0 || (vs_3half == 0.0 && !(m & 1)))
        m += 2;
    else if (vs_3half == 0.0 || vs_half > 0.0 || (vs_half == 0.0 && (m & 1)))
        m += 1;
    return m;
}

/* x (finite, > 0) to n significant digits (1 <= n <= MAX_SIG), rounded:
 * x ~ d[0].d[1]..d[n-1] x 10^e. Returns e. */
static int float_digits(double x, int n, char *d)
{
    uint64_t lo = 1;
    for (int i = 1; i < n; i++)
        lo *= 10;
    int e = (int)floor(log10(x));
    for (int tries = 0; tries < 3; tries++) {
        uint64_t m = scaled_round(x, n - 1 - e);  /* the n digits as an integer */
        if (m >= lo * 10)
            e++;
        else if (m < lo)
            e--;
        else {
            for (int i = n - 1; i >= 0; i--, m /= 10)
                d[i] = (char)('0' + m % 10);
            return e;
        }
    }
    /* the estimate was off both ways: x rounds up to a power of ten */
    memset(d, '0', (size_t)n);
    d[0] = '1';
    return e + 1;
}

/* The digits of x in fixed notation with `prec` decimals: "123.450". */
static size_t format_fixed(double x, int prec, char *out, size_t cap)
{
    char d[MAX_SIG + 4];
    int n = 0, e;            /* x ~ d[0..n) with d[0] at 10^e */
    if (x == 0.0) {
        d[n++] = '0', e = 0;
    } else if (prec <= 22 && x * pow10_of(prec) < 1e17) {
        /* the digits down to the last decimal form one integer */
        char tmp[MAX_SIG + 4];
        for (uint64_t m = scaled_round(x, prec); m || n == 0; m /= 10)
            tmp[n++] = (char)('0' + m % 10);
        for (int i = 0; i < n; i++)
            d[i] = tmp[n - 1 - i];
        e = n - 1 - prec;
    } else {
        n = MAX_SIG;
        e = float_digits(x, n, d);
    }
    size_t len = 0;
    /* the digit at decimal position p (10^p) */
    for (int p = e > 0 ? e : 0; p >= -prec && len + 2 < cap; p--) {
        int i = e - p;
        out[len++] = i >= 0 && i < n ? d[i] : '0';
        if (p == 0 && prec > 0)
            out[len++] = '.';
    }
    return len;
}

/* d.ddd e+XX with `prec` decimals. */
static size_t format_exp(double x, int prec, bool upper, char *out, size_t cap)
{
    char d[MAX_SIG];
    int n = prec + 1 > MAX_SIG ? MAX_SIG : prec + 1;
    int e = 0;
    if (x != 0.0)
        e = float_digits(x, n, d);
    else
        memset(d, '0', (size_t)n);
    size_t len = 0;
    out[len++] = d[0];
    if (prec > 0)
        out[len++] = '.';
    for (int i = 1; i <= prec && len + 8 < cap; i++)
        out[len++] = i < n ? d[i] : '0';
    out[len++] = upper ? 'E' : 'e';
    out[len++] = e < 0 ? '-' : '+';
    int ae = e < 0 ? -e : e;
    if (ae >= 100)
        out[len++] = (char)('0' + ae / 100);
    out[len++] = (char)('0' + ae / 10 % 10);
    out[len++] = (char)('0' + ae % 10);
    return len;
}

/* %g: prec significant digits, fixed if -4 <= exponent < prec, trailing
 * zeros removed. */
static size_t format_general(double x, int prec, bool upper, char *out, size_t cap)
{
    if (prec == 0)
        prec = 1;
    int e = 0;
    if (x != 0.0) {
        char d[MAX_SIG];
        e = float_digits(x, prec > MAX_SIG ? MAX_SIG : prec, d);
    }
    size_t len = e >= -4 && e < prec ? format_fixed(x, prec - 1 - e, out, cap)
                                     : format_exp(x, prec - 1, upper, out, cap);
    char *mark = memchr(out, upper ? 'E' : 'e', len);
    size_t mant = mark ? (size_t)(mark - out) : len;
    if (memchr(out, '.', mant)) {
        size_t keep = mant;
        while (out[keep - 1] == '0')
            keep--;
        if (out[keep - 1] == '.')
            keep--;
        memmove(out + keep, out + mant, len - mant);
        len -= mant - keep;
    }
    return len;
}

static void put_float(Out *o, const Spec *s, double x, char conv)
{
    bool upper = conv == 'E' || conv == 'G' || conv == 'F';
    bool negative = signbit(x);
    char body[720];
    size_t n;
    if (isnan(x) || isinf(x)) {
        memcpy(body, isnan(x) ? (upper ? "NAN" : "nan") : (upper ? "INF" : "inf"), 3);
        put_padded(o, s, sign_of(negative && !isnan(x), s), body, 3, false);
        return;
    }
    x = fabs(x);
    int prec = s->precision >= 0 ? s->precision : 6;
    if (prec > 350)
        prec = 350;
    if (conv == 'f' || conv == 'F')
        n = format_fixed(x, prec, body, sizeof body);
    else if (conv == 'e' || conv == 'E')
        n = format_exp(x, prec, upper, body, sizeof body);
    else
        n = format_general(x, prec, upper, body, sizeof body);
    put_padded(o, s, sign_of(negative, s), body, n, true);
}

/* ------------------------------------------------------------------------ */
/* The format string                                                         */
/* ------------------------------------------------------------------------ */

typedef enum Length { LEN_INT, LEN_CHAR, LEN_SHORT, LEN_LONG, LEN_LLONG, LEN_SIZE, LEN_MAX,
                      LEN_PTRDIFF } Length;

static Length parse_length(const char **f)
{
    const char *p = *f;
    Length l = LEN_INT;
    if (p[0] == 'h' && p[1] == 'h')
        l = LEN_CHAR, p += 2;
    else if (p[0] == 'h')
        l = LEN_SHORT, p++;
    else if (p[0] == 'l' && p[1] == 'l')
        l = LEN_LLONG, p += 2;
    else if (p[0] == 'l')
        l = LEN_LONG, p++;
    else if (p[0] == 'z')
        l = LEN_SIZE, p++;
    else if (p[0] == 'j')
        l = LEN_MAX, p++;
    else if (p[0] == 't')
        l = LEN_PTRDIFF, p++;
    *f = p;
    return l;
}

static intmax_t signed_arg(va_list *ap, Length l)
{
    switch (l) {
    case LEN_CHAR: return (signed char)va_arg(*ap, int);
    case LEN_SHORT: return (short)va_arg(*ap, int);
    case LEN_LONG: return va_arg(*ap, long);
    case LEN_LLONG: return va_arg(*ap, long long);
    case LEN_SIZE: return (intmax_t)va_arg(*ap, size_t);
    case LEN_MAX: return va_arg(*ap, intmax_t);
    case LEN_PTRDIFF: return va_arg(*ap, ptrdiff_t);
    default: return va_arg(*ap, int);
    }
}

static uintmax_t unsigned_arg(va_list *ap, Length l)
{
    switch (l) {
    case LEN_CHAR: return (unsigned char)va_arg(*ap, unsigned);
    case LEN_SHORT: return (unsigned short)va_arg(*ap, unsigned);
    case LEN_LONG: return va_arg(*ap, unsigned long);
    case LEN_LLONG: return va_arg(*ap, unsigned long long);
    case LEN_SIZE: return va_arg(*ap, size_t);
    case LEN_MAX: return va_arg(*ap, uintmax_t);
    case LEN_PTRDIFF: return (uintmax_t)va_arg(*ap, ptrdiff_t);
    default: return va_arg(*ap, unsigned);
    }
}

/* Width or precision: digits, or '*' taken from the arguments. */
static int parse_number(const char **f, va_list *ap)
{
    if (**f == '*') {
        (*f)++;
        return va_arg(*ap, int);
    }
    int v = 0;
    while (**f >= '0' && **f <= '9')
        v = v * 10 + (*(*f)++ - '0');
    return v;
}

static void convert(Out *o, const char **f, va_list *ap)
{
    Spec s = {.precision = -1};
    for (;; (*f)++) {
        if (**f == '-') s.left = true;
        else if (**f == '+') s.plus = true;
        else if (**f == ' ') s.space = true;
        else if (**f == '0') s.zero = true;
        else break;
    }
    s.width = parse_number(f, ap);
    if (s.width < 0)                       /* a negative * width means the - flag */
        s.left = true, s.width = -s.width;
    if (**f == '.') {
        (*f)++;
        s.precision = parse_number(f, ap);
        if (s.precision < 0)
            s.precision = -1;
    }
    Length l = parse_length(f);
    char c = *(*f)++;
    switch (c) {
    case 'd': case 'i': {
        intmax_t v = signed_arg(ap, l);
        put_integer(o, &s, v < 0 ? (uintmax_t)0 - (uintmax_t)v : (uintmax_t)v, v < 0, 10, false);
        break;
    }
    case 'u': put_integer(o, &s, unsigned_arg(ap, l), false, 10, false); break;
    case 'x': case 'X': case 'o': {
        Spec u = s;
        u.plus = u.space = false;
        put_integer(o, &u, unsigned_arg(ap, l), false, c == 'o' ? 8 : 16, c == 'X');
        break;
    }
    case 'p': {
        Spec u = {.precision = -1};
        put_mem(o, "0x", 2);
        put_integer(o, &u, (uintptr_t)va_arg(*ap, void *), false, 16, false);
        break;
    }
    case 'c': {
        char ch = (char)va_arg(*ap, int);
        put_padded(o, &s, "", &ch, 1, false);
        break;
    }
    case 's': {
        const char *str = va_arg(*ap, const char *);
        if (!str)
            str = "(null)";
        size_t n = 0;
        while ((s.precision < 0 || n < (size_t)s.precision) && str[n])
            n++;
        put_padded(o, &s, "", str, n, false);
        break;
    }
    case 'f': case 'F': case 'e': case 'E': case 'g': case 'G':
        put_float(o, &s, va_arg(*ap, double), c);
        break;
    case '%': put_char(o, '%'); break;
    default:                               /* unknown: print it as written */
        put_char(o, '%');
        if (c)
            put_char(o, c);
        else
            (*f)--;
    }
}

int bertc_vsnprintf(char *buf, size_t len, const char *fmt, va_list ap)
{
    Out o = {.buf = buf, .len = len};
    va_list args;
    va_copy(args, ap);
    for (const char *f = fmt; *f;) {
        if (*f != '%') {
            put_char(&o, *f++);
            continue;
        }
        f++;
        convert(&o, &f, &args);
    }
    va_end(args);
    if (len)
        buf[o.n < len ? o.n : len - 1] = '\0';
    return (int)o.n;
}

int bertc_snprintf(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = bertc_vsnprintf(buf, len, fmt, ap);
    va_end(ap);
    return n;
}
