/* cli/show.c — `bertc show FILE.safetensors [--values N]`: what a
 * safetensors file holds (weights, inputs, outputs: any of them), so that
 * `bertc run`'s results need no Python to read. The metadata, then per
 * tensor its name, dtype and shape, statistics over its finite values (min,
 * max, mean, std: the population's, numpy's default) with the count of NaN
 * and infinities, and its first N values in row-major order.
 *
 * Every dtype of the format is decoded here from its little-endian bytes
 * (floats of 8, 16, 32 and 64 bits, integers of 8 to 64, BOOL), read a
 * chunk at a time, so a tensor of any size takes a fixed amount of memory
 * and integers (ids, masks) are shown exactly. */
#include "cli/cli.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const CliOption show_options[] = {
    {"--values", "N", "6", "how many of each tensor's first values to print, 0.."},
};

const CliCommand cli_cmd_show = {
    .name = "show",
    .summary = "print the tensors of a safetensors file: dtypes, shapes, statistics, values",
    .usage = "FILE.safetensors [--values N]",
    .description = "Prints the file's __metadata__ and, for every tensor in the file's order, "
                   "its name, dtype and shape; min, max, mean and std (population) over its "
                   "finite values with the count of NaN and inf; and its first N values.",
    .options = show_options,
    .n_options = sizeof show_options / sizeof show_options[0],
    .max_positional = 1,
    .positional = "FILE.safetensors",
    .example = "bertc show out.safetensors --values 10",
    .manual = "Every dtype of the format is read (F64, F32, F16, BF16, F8, the signed and "
              "unsigned integers, BOOL); integers are shown exactly. It works on any "
              "safetensors file: weights, inputs, outputs.",
};

/* Elements read at a time. */
#define SHOW_CHUNK 4096

static double f16_value(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    double sign = (h & 0x8000) ? -1.0 : 1.0;
    if (e == 31)
        return m ? NAN : sign * INFINITY;
    if (e == 0)
        return sign * ldexp(m, -24);
    return sign * ldexp(m + 1024, e - 25);
}

/* float8 e4m3fn: bias 7, no infinities, S.1111.111 is NaN. */
static double f8_e4m3_value(uint8_t b)
{
    int e = (b >> 3) & 15, m = b & 7;
    double sign = (b & 0x80) ? -1.0 : 1.0;
    if (e == 15 && m == 7)
        return NAN;
    if (e == 0)
        return sign * ldexp(m, -9);
    return sign * ldexp(m + 8, e - 10);
}

static uint64_t le_bits(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* Element p (of dtype d) as a double: exact for every integer below 2^53. */
static double element(StDtype d, const uint8_t *p)
{
    float f;
    double x;
    uint32_t u32;
    uint64_t u64;
    switch (d) {
    case ST_BOOL: case ST_U8: return p[0];
    case ST_I8: return (int8_t)p[0];
    case ST_I16: return (int16_t)le_bits(p, 2);
    case ST_U16: return (double)le_bits(p, 2);
    case ST_I32: return (int32_t)le_bits(p, 4);
    case ST_U32: return (double)le_bits(p, 4);
    case ST_I64: return (double)(int64_t)le_bits(p, 8);
    case ST_U64: return (double)le_bits(p, 8);
    case ST_F16: return f16_value((uint16_t)le_bits(p, 2));
    case ST_F8_E5M2: return f16_value((uint16_t)(p[0] << 8));
    case ST_F8_E4M3: return f8_e4m3_value(p[0]);
    case ST_BF16:
        u32 = (uint32_t)le_bits(p, 2) << 16;
        memcpy(&f, &u32, 4);
        return f;
    case ST_F32:
        u32 = (uint32_t)le_bits(p, 4);
        memcpy(&f, &u32, 4);
        return f;
    case ST_F64:
        u64 = le_bits(p, 8);
        memcpy(&x, &u64, 8);
        return x;
    default: return NAN;
    }
}

static bool is_float(StDtype d)
{
    return d == ST_F16 || d == ST_BF16 || d == ST_F32 || d == ST_F64 || d == ST_F8_E5M2 ||
           d == ST_F8_E4M3;
}

/* Welford's running mean and variance over the finite values. */
typedef struct Stats {
    int64_t n, nan, inf;
    double min, max, mean, m2;
} Stats;

static void stats_add(Stats *s, double x)
{
    if (isnan(x)) {
        s->nan++;
        return;
    }
    if (isinf(x)) {
        s->inf++;
        return;
    }
    if (s->n == 0 || x < s->min)
        s->min = x;
    if (s->n == 0 || x > s->max)
        s->max = x;
    s->n++;
    double delta = x - s->mean;
    s->mean += delta / (double)s->n;
    s->m2 += delta * (x - s->mean);
}

static void print_value(StDtype d, double x, const char *sep)
{
    if (is_float(d))
        printf("%s%.9g", sep, x);
    else
        printf("%s%.0f", sep, x);
}

static void print_stats(StDtype d, const Stats *s)
{
    if (s->n == 0) {
        printf("  no finite values");
    } else {
        printf("  min");
        print_value(d, s->min, " ");
        printf("  max");
        print_value(d, s->max, " ");
        printf("  mean %.9g  std %.9g", s->mean, sqrt(s->m2 / (double)s->n));
    }
    printf("  nan %lld  inf %lld\n", (long long)s->nan, (long long)s->inf);
}

/* One tensor: its header line, its statistics and its first n_values values. */
static int show_tensor(const SafeTensors *st, const StTensorInfo *t, int64_t n_values,
                       uint8_t *buf, BertcError *err)
{
    char shape[SHAPE_STR_LEN];
    size_t size = bertc_st_dtype_size(t->dtype);
    printf("%s  %s %s  (%lld values)\n", t->name, bertc_st_dtype_name(t->dtype),
           bertc_shape_str(shape, sizeof shape, t->ndim, t->shape), (long long)t->numel);
    Stats s = {0};
    int64_t shown = 0, want = n_values < t->numel ? n_values : t->numel;
    if (want > 0)
        printf("  first %lld:", (long long)want);
    for (int64_t at = 0; at < t->numel; at += SHOW_CHUNK) {
        int64_t n = t->numel - at < SHOW_CHUNK ? t->numel - at : SHOW_CHUNK;
        if (st->source.read(st->source.ctx, st->data_start + t->begin + (uint64_t)at * size, buf,
                            (size_t)n * size, err) != 0)
            return -1;
        for (int64_t i = 0; i < n; i++) {
            double x = element(t->dtype, buf + (size_t)i * size);
            stats_add(&s, x);
            if (shown < want)
                print_value(t->dtype, x, shown++ ? ", " : " ");
        }
    }
    if (want > 0)
        printf("\n");
    print_stats(t->dtype, &s);
    return 0;
}

static int show_file(const char *path, int64_t n_values, BertcError *err)
{
    SafeTensors *st;
    if (bertc_st_open_file(NULL, path, &st, err) != 0)
        return -1;
    static uint8_t buf[SHOW_CHUNK * 8];
    printf("%s: %zu tensors, %llu bytes of data\n", path, st->n_tensors,
           (unsigned long long)st->data_length);
    if (st->n_metadata)
        printf("metadata:\n");
    for (size_t i = 0; i < st->n_metadata; i++)
        printf("  %s: %s\n", st->metadata[i].key, st->metadata[i].value);
    int rc = 0;
    for (size_t i = 0; i < st->n_tensors && rc == 0; i++)
        rc = show_tensor(st, &st->tensors[i], n_values, buf, err);
    if (rc != 0) {   /* a read that failed: name the file */
        char msg[BERTC_ERROR_LEN];
        snprintf(msg, sizeof msg, "%s", err->msg);
        if (!strstr(msg, path))
            bertc_errorf(err, "%s: %s", path, msg);
    }
    bertc_st_close(st);
    return rc;
}

int cmd_show(int argc, char **argv)
{
    const CliCommand *c = &cli_cmd_show;
    CliArgs a;
    int rc = cli_start(c, argc, argv, &a);
    if (rc >= 0)
        return rc;
    if (a.n_pos == 0) {
        fprintf(stderr, "bertc show: FILE.safetensors is required\n");
        return 2;
    }
    const char *values = cli_value(c, &a, "--values");
    int64_t n_values;
    char shown[BERTC_SHOWN];
    if (!bertc_parse_i64(values, 0, INT32_MAX, &n_values)) {
        fprintf(stderr, "bertc show: --values needs a count from 0 to %d, got '%s'\n", INT32_MAX,
                bertc_shown(values, shown));
        return 2;
    }
    BertcError err;
    fflush(stdout);
    return show_file(a.pos[0], n_values, &err) == 0 ? 0 : cli_fail(&err);
}
