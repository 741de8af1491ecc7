/* zoo/models/config_file.c — reading config.json from a path (bare-metal builds leave
 * this file out and call bertc_bert_config_parse on text they hold). */
#include "zoo/zoo.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
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

/* A config is a few KB; with many labels (id2label and label2id) it may be
 * more: the text is measured first, then formatted into a buffer that fits. */
int bertc_bert_config_write(const char *path, const BertConfig *cfg, BertcError *err)
{
    size_t n;
    BertcError unused;
    bertc_bert_config_format(cfg, NULL, 0, &n, &unused);
    char *text = malloc(n + 1);
    if (!text)
        return bertc_errorf(err, "%s: out of memory for %zu bytes of config", path, n + 1);
    int rc = bertc_bert_config_format(cfg, text, n + 1, &n, err);
    if (rc == 0)
        rc = bertc_write_file(path, text, n, err);
    free(text);
    return rc;
}
