/* test/portable/t_format.c — bertc_snprintf, the formatter the freestanding
 * core uses instead of stdio, against glibc's output for the same formats. */
#include "test/portable/portable.h"

#include <string.h>

static void expect(const char *got, int n, const char *want)
{
    pt_check(strcmp(got, want) == 0 && n == (int)strlen(want),
             "format: got '%s' (%d), want '%s'", got, n, want);
}

void test_format(void)
{
    char b[128];
    int n;
    n = bertc_snprintf(b, sizeof b, "%d|%5d|%-5d|%05d|%+d|%lld|%zu|%u", -42, 42, 42, -42, 7,
                       (long long)INT64_MIN, (size_t)123, 4000000000u);
    expect(b, n, "-42|   42|42   |-0042|+7|-9223372036854775808|123|4000000000");
    n = bertc_snprintf(b, sizeof b, "%x|%04X|%02x|%o|%c|%s|%.3s|%6s|%-4s|%%|%.*s", 255u, 0xabu,
                       5u, 8u, 'z', "str", "abcdef", "r", "l", 2, "xyz");
    expect(b, n, "ff|00AB|05|10|z|str|abc|     r|l   |%|xy");
    n = bertc_snprintf(b, sizeof b, "%g|%g|%g|%g|%g|%g|%g", 0.0, 1e-12, 0.1, 123456789.0, 1e-5,
                       -2.5, 100000.0);
    expect(b, n, "0|1e-12|0.1|1.23457e+08|1e-05|-2.5|100000");
    n = bertc_snprintf(b, sizeof b, "%.17g|%.17g|%.9g|%.8g", 0.1, 0.15, (double)0.1f, 2.0 / 3);
    expect(b, n, "0.10000000000000001|0.14999999999999999|0.100000001|0.66666667");
    n = bertc_snprintf(b, sizeof b, "%.2f|%.0f|%.1f|%.3f|%8.3f|%e|%.2E", 3.14159, 2.5, 9.96,
                       0.0005, -1.5, 12345.678, 0.000123);
    expect(b, n, "3.14|2|10.0|0.001|  -1.500|1.234568e+04|1.23E-04");
    n = bertc_snprintf(b, 5, "%s", "abcdefgh");
    expect(b, n == 8 ? 4 : n, "abcd");
}
