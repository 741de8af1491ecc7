/* zoo/qacgbert.c — placeholder until the QACGBertForSequenceClassification family lands (its build is NULL,
 * so model_build reports that the architecture is not available). */
#include "zoo/zoo.h"

const ModelArch arch_qacgbert = {ARCH_QACGBERT, "QACGBertForSequenceClassification", NULL, NULL, NULL};
