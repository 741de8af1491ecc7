/*
 * bertc.h — everything in one include. A complete small program: fit
 * y = 3x - 1 with one Linear layer, trained by SGD on the tape.
 *
 *     #include "bertc.h"
 *     #include <stdio.h>
 *
 *     int main(void)
 *     {
 *         Arena *params = bertc_arena_create("params", 1 << 16);
 *         Graph *g = bertc_ag_graph_create(1 << 16, 42);      // step arena + RNG seed
 *         int64_t ws[2] = {1, 1}, bs[1] = {1}, xs[2] = {8, 1};
 *         Var *w = bertc_ag_param(params, 2, ws, "w");         // (out=1, in=1)
 *         Var *b = bertc_ag_param(params, 1, bs, "b");         // (1)
 *         Tensor x = bertc_tensor_new(params, 2, xs), y = bertc_tensor_new(params, 2, xs);
 *         for (int i = 0; i < 8; i++) {
 *             x.data[i] = (float)i / 8;
 *             y.data[i] = 3 * x.data[i] - 1;
 *         }
 *         for (int step = 0; step < 500; step++) {
 *             Var *pred = bertc_ag_linear(g, bertc_ag_constant(g, x), w, b);   // (8, 1)
 *             Var *loss = bertc_ag_mse(g, pred, &y);
 *             bertc_ag_backward(g, loss);
 *             w->value.data[0] -= 0.5f * w->grad[0];
 *             b->value.data[0] -= 0.5f * b->grad[0];
 *             bertc_ag_zero_grad(w);
 *             bertc_ag_zero_grad(b);
 *             bertc_ag_graph_reset(g);                         // frees the step's memory
 *         }
 *         printf("w = %.3f, b = %.3f\n", w->value.data[0], b->value.data[0]);
 *         bertc_ag_graph_destroy(g);
 *         bertc_arena_destroy(params);
 *         return 0;
 *     }
 *
 * Layers, bottom up (these are the public headers; make install copies
 * exactly them, and the *_internal.h files stay private to the library):
 *   tensor/tensor.h      arenas, shapes, RNG, kernels, GEMM
 *   autograd/autograd.h  the tape and every differentiable op
 *   nn/nn.h              modules, parameter registry, optimizers; with
 *     nn/config.h, nn/json.h, nn/safetensors.h, nn/state.h:
 *                        config.json, JSON, safetensors files, training state
 *   zoo/zoo.h            the model zoo: an umbrella over zoo/text/tokenizer.h
 *                        (the tokenizer) and zoo/models/ (batch.h, model.h,
 *                        bert.h, spanbert.h, model_const.h: the BERT
 *                        variants and the run path)
 *   zoo/pictures/svg.h   pictures: attention maps, outputs drawn by their shape
 *   zoo/train/train.h, zoo/train/dataset.h, zoo/train/finetune.h,
 *   zoo/train/pipeline.h the training engine and its loss curve, datasets
 *                        and metrics, fine-tuning as one call, the predict
 *                        pipeline (hosted builds); docs/architecture.md
 */
#ifndef BERTC_H
#define BERTC_H

#include "tensor/tensor.h"
#include "autograd/autograd.h"
#include "nn/nn.h"
#include "nn/config.h"
#include "nn/json.h"
#include "nn/safetensors.h"
#include "nn/state.h"
#include "zoo/text/tokenizer.h"
#include "zoo/zoo.h"
#include "zoo/models/model_const.h"
#include "zoo/train/pipeline.h"
#include "zoo/train/train.h"
#include "zoo/train/dataset.h"
#include "zoo/train/finetune.h"
#include "zoo/train/pretrain.h"
#include "zoo/pictures/svg.h"

#endif
