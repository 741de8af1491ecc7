/* zoo/config_file.c — reading config.json from a path (bare-metal builds leave
 * this file out and call bertc_bert_config_parse on text they hold). */
#include "zoo/zoo.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* A config.json is a few kilobytes; anything past this is not one. */
#define CONFIG_MAX_BYTES (16L << 20)

/* bertc_read_file refuses a FIFO or a directory and a file too big for
 * memory; the JSON tree is parsed into the same scratch arena. */
int bertc_bert_config_read(const char *path, BertConfig *cfg, BertcError *err)
{
    Arena *a;
    char *text;
    size_t n;
    int rc = bertc_read_file(path, CONFIG_MAX_BYTES, "a config.json", &a, &text, &n, err);
    if (rc == 0)
        rc = bertc_bert_config_parse(a, path, text, n, cfg, err);
    bertc_arena_destroy(a);
    return rc;
}

int bertc_bert_config_write(const char *path, const BertConfig *cfg, BertcError *err)
{
    char text[8192];
    size_t n;
    if (bertc_bert_config_format(cfg, text, sizeof text, &n, err) != 0)
        return -1;
    FILE *fp = bertc_open_write(path, err);
    if (!fp)
        return -1;
    bool ok = fwrite(text, 1, n, fp) == n;
    if (fclose(fp) != 0 || !ok)
        return bertc_errorf(err, "%s: write failed: %s", path, strerror(errno));
    return 0;
}
