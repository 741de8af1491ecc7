/* zoo/train/dataset_file.c — a data file read whole (bertc_read_file: regular files
 * only, so a FIFO or a device cannot block the reader) and parsed from
 * memory by zoo/train/dataset.c. */
#include "zoo/train/dataset.h"

/* format -1: by bertc_dataset_guess_format. */
static int read_as(Dataset *d, Arena *arena, const char *path, int format, BertcError *err)
{
    Arena *file;
    char *text;
    size_t len;
    int rc = bertc_read_file(path, DATASET_MAX_BYTES, "a data file", &file, &text, &len, err);
    if (rc == 0)
        rc = bertc_dataset_parse(d, arena, path, format < 0 ? bertc_dataset_guess_format(path, text, len)
                                                   : (DatasetFormat)format, text,
                                 len, err);
    if (file)
        bertc_arena_destroy(file);
    return rc;
}

int bertc_dataset_read(Dataset *d, Arena *arena, const char *path, BertcError *err)
{
    return read_as(d, arena, path, -1, err);
}

int bertc_dataset_read_format(Dataset *d, Arena *arena, const char *path, DatasetFormat format,
                              BertcError *err)
{
    return read_as(d, arena, path, (int)format, err);
}
