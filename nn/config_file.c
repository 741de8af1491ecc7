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

int bert_config_read(const char *path, BertConfig *cfg, BertcError *err)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return bertc_errorf(err, "%s: cannot open: %s", path, strerror(errno));
    size_t n = 0;
    if (file_size(fp, path, &n, err) != 0) {
        fclose(fp);
        return -1;
    }
    Arena *a = arena_create("config", n * 4 + 4096);
    char *text = arena_alloc(a, n + 1);
    int rc = fread(text, 1, n, fp) == n
                 ? bert_config_parse(a, path, text, n, cfg, err)
                 : bertc_errorf(err, "%s: short read: %s", path, strerror(errno));
    fclose(fp);
    arena_destroy(a);
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
