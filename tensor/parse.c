/* tensor/parse.c — numbers from user text (command-line flags, environment
 * variables), parsed strictly: the whole string is the number, written in
 * decimal, and in range. strtoll and friends are too lenient for that on
 * their own: they skip leading spaces, accept a '+' (and strtoull a '-',
 * which it wraps around), stop quietly at trailing garbage ("10x") and clamp
 * on overflow. */
#include "tensor/tensor.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>

/* The digits of s as an unsigned 64-bit value: at least one digit, nothing
 * else, no overflow. */
static bool parse_digits(const char *s, uint64_t *out)
{
    if (*s < '0' || *s > '9')
        return false;
    uint64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return false;
        uint64_t d = (uint64_t)(*s - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

bool bertc_parse_u64(const char *s, uint64_t *out)
{
    return s && parse_digits(s, out);
}

bool bertc_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out)
{
    if (!s)
        return false;
    bool negative = *s == '-';
    uint64_t magnitude;
    if (!parse_digits(s + negative, &magnitude))
        return false;
    int64_t v;
    if (!negative && magnitude <= (uint64_t)INT64_MAX)
        v = (int64_t)magnitude;
    else if (negative && magnitude <= (uint64_t)INT64_MAX)
        v = -(int64_t)magnitude;
    else if (negative && magnitude == (uint64_t)INT64_MAX + 1)
        v = INT64_MIN;
    else
        return false;
    if (v < min || v > max)
        return false;
    *out = v;
    return true;
}

bool bertc_parse_f64(const char *s, double *out)
{
    /* strtod's own syntax (1e-3, .5, 0x1p-4), but no leading space or '+',
     * nothing after the number, and only finite values ("inf", "nan" and
     * overflow to infinity are refused). Underflow is kept: strtod sets
     * ERANGE for it too (glibc does for a subnormal result such as 1e-310,
     * not only for one rounded to 0), and a result of magnitude <= DBL_MIN
     * is a valid finite value, as Python's float("1e-310") is. */
    if (!s || !((*s >= '0' && *s <= '9') || *s == '-' || *s == '.'))
        return false;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || !isfinite(v) || (errno == ERANGE && fabs(v) > DBL_MIN))
        return false;
    *out = v;
    return true;
}
