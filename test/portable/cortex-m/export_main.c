/* test/portable/cortex-m/export_main.c — the firmware of the export-c step
 * of `make cross-test` (tools/cross_test.sh): the sources `bertc export-c`
 * wrote (model.h, model.c, model_data.c) in one static arena of
 * MODEL_ARENA_BYTES, classifying three texts. The same file builds for the
 * host, whose "logits" lines the firmware's must equal. Floats are printed
 * with bertc_snprintf: newlib-nano's printf has no %g without
 * _printf_float. */
#include "bertc.h"
#include "model.h"

#include <stdio.h>

static unsigned char arena[MODEL_ARENA_BYTES] __attribute__((aligned(64)));

static const char *const texts[] = {"The cat sat on the mat.", "A dog ran!",
                                    "Birds sang in the morning, playing and played."};

int main(void)
{
    if (model_init(arena, sizeof arena) != 0) {
        printf("model_init: %s\n", model_error());
        return 1;
    }
    for (int i = 0; i < 3; i++) {
        float logits[MODEL_N_LABELS];
        int n = model_classify(texts[i], logits, MODEL_N_LABELS);
        if (n != MODEL_N_LABELS) {
            printf("model_classify: %s\n", model_error());
            return 1;
        }
        char line[256];
        int k = 0;
        for (int j = 0; j < n; j++)
            k += bertc_snprintf(line + k, sizeof line - (size_t)k, " %.9g", (double)logits[j]);
        printf("logits%s\n", line);
    }
    return 0;
}
