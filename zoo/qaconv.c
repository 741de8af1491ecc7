/* zoo/qaconv.c — placeholder until the QAConvModelV2 family lands (its build is NULL,
 * so model_build reports that the architecture is not available). */
#include "zoo/zoo.h"

const ModelArch arch_qaconv = {ARCH_QACONV, "QAConvModelV2", NULL, NULL, NULL};
