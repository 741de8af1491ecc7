/* zoo/summarizer.c — placeholder until the Summarizer family lands (its build is NULL,
 * so model_build reports that the architecture is not available). */
#include "zoo/zoo.h"

const ModelArch arch_summarizer = {ARCH_SUMMARIZER, "Summarizer", NULL, NULL, NULL};
