/* zoo/spanbert.c — placeholder until the SpanBertForPreTraining family lands (its build is NULL,
 * so model_build reports that the architecture is not available). */
#include "zoo/zoo.h"

const ModelArch arch_spanbert = {ARCH_SPANBERT, "SpanBertForPreTraining", NULL, NULL, NULL};
