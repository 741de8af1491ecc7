/* nn/config_file.c — reading config.json from a path (bare-metal builds leave
 * this file out and call bert_config_parse on text they hold). */
#include "nn/config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* A config.json is a few kilobytes; anything past this is not one. */
#define CONFIG_MAX_BYTES (16L << 20)

int bert_config_read(const char *path, BertConfig *cfg, BertcError *err)
{
    uint64_t size = 0;
    FILE *fp = bertc_open_read(path, &size, err);
    if (!fp)
        return -1;
    if (size > CONFIG_MAX_BYTES) {
        fclose(fp);
        return bertc_errorf(err, "%s: %" PRIu64 " bytes, more than the %ld a config.json may "
                            "have", path, size, CONFIG_MAX_BYTES);
    }
    size_t n = (size_t)size;
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
    FILE *fp = bertc_open_write(path, err);
    if (!fp)
        return -1;
    bool ok = fwrite(text, 1, n, fp) == n;
    if (fclose(fp) != 0 || !ok)
        return bertc_errorf(err, "%s: write failed: %s", path, strerror(errno));
    return 0;
}
