/* test/fuzz/fuzz_dataset.c — libFuzzer target: any bytes as a data file of
 * `bertc finetune` (bertc_dataset_parse) in each format: CSV, TSV, JSONL
 * (and the SQuAD JSON it recognises), CoNLL. A table that parses must be
 * whole: every row has its line, every cell is NULL or a string, and the
 * line numbers never go down. */
#include "zoo/train/dataset.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_table(const Dataset *d)
{
    int64_t last = 0;
    for (int64_t r = 0; r < d->n_rows; r++) {
        if (d->line[r] < last || d->line[r] < 1) {
            fprintf(stderr, "row %lld: line %lld after %lld\n", (long long)r,
                    (long long)d->line[r], (long long)last);
            abort();
        }
        last = d->line[r];
        for (int k = 0; k < d->n_columns; k++) {
            const char *cell = d->cells[r * d->n_columns + k];
            if (cell)
                (void)strlen(cell);   /* a string ASan can read to its end */
        }
    }
    for (int k = 0; k < d->n_columns; k++)
        if (!d->columns[k])
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const DatasetFormat formats[] = {DATASET_CSV, DATASET_TSV, DATASET_JSONL,
                                            DATASET_CONLL};
    for (size_t f = 0; f < sizeof formats / sizeof formats[0]; f++) {
        Arena *arena = bertc_arena_create("fuzz_dataset", 1 << 16);
        Dataset d;
        BertcError err = {{0}};
        if (bertc_dataset_parse(&d, arena, "fuzz.data", formats[f], (const char *)data, size,
                                &err) == 0)
            check_table(&d);
        else if (!err.msg[0] || strchr(err.msg, '\n'))
            abort();   /* an error is one line */
        bertc_arena_destroy(arena);
    }
    return 0;
}
