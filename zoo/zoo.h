/*
 * zoo/zoo.h — the model zoo in one include: the BERT variants of SPEC §6 and
 * the tokenizer they read text with. An umbrella only; each concern has its
 * own header (docs/architecture.md has the layout and the include rules):
 *   zoo/text/tokenizer.h      the WordPiece tokenizer and vocabulary trainer
 *   zoo/models/batch.h        named inputs (Batch) and outputs (Outputs)
 *   zoo/models/model.h        architectures, config.json, Model, the run path
 *                             (the example program is there)
 *   zoo/models/bert.h         the shared BERT encoder
 *   zoo/models/spanbert.h     SpanBERT's keys and span masking of a row
 *   zoo/models/model_const.h  a classifier from const data (bertc export-c)
 * The training engine, datasets and the predict pipeline (zoo/train/) and
 * the pictures (zoo/pictures/) sit above it and have their own headers.
 */
#ifndef BERTC_ZOO_H
#define BERTC_ZOO_H

#include "zoo/text/tokenizer.h"
#include "zoo/models/batch.h"
#include "zoo/models/model.h"
#include "zoo/models/bert.h"
#include "zoo/models/spanbert.h"
#include "zoo/models/model_const.h"

#endif /* BERTC_ZOO_H */
