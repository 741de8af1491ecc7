/* nn/config_file.c — reading config.json from a path (bare-metal builds leave
 * this file out and call bert_config_parse on text they hold). */
#include "nn/config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* A config.json is a few kilobytes; anything past this is not one. */
#define CONFIG_MAX_BYTES (16L << 20)

/* The file's size, checked against CONFIG_MAX_BYTES. */
static int file_size(FILE *fp, const char *path, size_t *out, BertcError *err)
{
    long n = fseek(fp, 0, SEEK_END) == 0 ? ftell(fp) : -1;
    if (n < 0 || fseek(fp, 0, SEEK_SET) != 0)
        return bertc_errorf(err, "%s: cannot find the file size: %s", path, strerror(errno));
    if (n > CONFIG_MAX_BYTES)
        return bertc_errorf(err, "%s: %ld bytes, more than the %ld a config.json may have",
                            path, n, CONFIG_MAX_BYTES);
    *out = (size_t)n;
    return 0;
}

/* The part of bert_config_read that allocates, run under bertc_try while
 * the file is open, so that running out of memory still closes it. */
typedef struct ConfigRead {
    BertConfig *cfg;
    Arena *a;
    FILE *fp;
    const char *path;
    size_t n;
} ConfigRead;

static int read_config(void *ctx, BertcError *err)
{
    ConfigRead *c = ctx;
    c->a = arena_create("config", c->n * 4 + 4096);
    char *text = arena_alloc(c->a, c->n + 1);
    if (fread(text, 1, c->n, c->fp) != c->n)
        return bertc_errorf(err, "%s: short read: %s", c->path, strerror(errno));
    return bert_config_parse(c->a, c->path, text, c->n, c->cfg, err);
}

int bert_config_read(const char *path, BertConfig *cfg, BertcError *err)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return bertc_errorf(err, "%s: cannot open: %s", path, strerror(errno));
    ConfigRead c = {.cfg = cfg, .fp = fp, .path = path};
    int rc = file_size(fp, path, &c.n, err) == 0 ? bertc_try(read_config, &c, err) : -1;
    fclose(fp);
    arena_destroy(c.a);
    return rc;
}

int bert_config_write(const char *path, const BertConfig *cfg, BertcError *err)
{
    char text[8192];
    size_t n;
    if (bert_config_format(cfg, text, sizeof text, &n, err) != 0)
        return -1;
    FILE *fp = fopen(path, "wb");
    if (!fp)
        return bertc_errorf(err, "%s: cannot write: %s", path, strerror(errno));
    bool ok = fwrite(text, 1, n, fp) == n;
    if (fclose(fp) != 0 || !ok)
        return bertc_errorf(err, "%s: write failed: %s", path, strerror(errno));
    return 0;
}
