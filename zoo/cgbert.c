/* zoo/cgbert.c — placeholder until the CGBertForSequenceClassification family lands (its build is NULL,
 * so model_build reports that the architecture is not available). */
#include "zoo/zoo.h"

const ModelArch arch_cgbert = {ARCH_CGBERT, "CGBertForSequenceClassification", NULL, NULL, NULL};
