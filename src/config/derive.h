#pragma once
// What the training options mean for a run on `world` ranks, computed in one place: the
// parallel layout, the model, ZeRO, Adam and loss-scaler configurations, the batch and its
// accumulation, the working dtype and the activation-checkpoint configuration. The trainer, the
// planner and the apps read these instead of deriving them from the options again.
#include <cstdint>
#include <optional>

#include "src/config/options.h"
#include "src/core/dtype.h"
#include "src/model/gpt_config.h"
#include "src/zero/activation_checkpointer.h"
#include "src/zero/loss_scaler.h"
#include "src/zero/sharded_adam.h"
#include "src/zero/zero_optimizer.h"

namespace zt {

struct BatchConfig {
  int micro = 1;         // sequences per rank per forward/backward
  int64_t global = 0;    // sequences per optimizer step over all ranks
  int accumulation = 1;  // micro-batches per step and data-parallel rank (pipeline: m)
};

struct DerivedConfig {
  int world = 1, tp = 1, pp = 1, dp = 1, cp = 1;  // dp: data-parallel, without the context ranks
  int chunks = 1;                                 // model chunks per pipeline stage
  // --decoder-first/last-pipeline-num-layers (0: even split; PipelineSplit's meaning).
  int first_stage_layers = 0, last_stage_layers = 0;
  BatchConfig batch;
  int lr_decay_iters = 0;  // --lr-decay-iters, or --train-iters when 0
  DType working = DType::F32;
  GptConfig model;
  // The options' part of each: the process groups and the pipeline's tied parameters are the
  // trainer's to fill in.
  ZeroConfig zero;
  AdamConfig adam;
  LossScalerConfig scaler;
  bool checkpoint_activations = false;
  CheckpointConfig checkpoint;  // read with checkpoint_activations
};

// Validates `o` for `world` ranks (every option and their combinations: the stage range, batch
// divisibility, the pipeline checks, ...) and derives the run's configuration. Throws
// InputError with one line naming the problem.
DerivedConfig derive(const TrainOptions& o, int world);
// The same configuration for options already validated on `dp` data-parallel ranks (what a
// Trainer gets), without the checks.
DerivedConfig derive_validated(const TrainOptions& o, int dp);

// DP = world / (TP·PP); throws InputError when it does not divide.
int data_parallel_size(const TrainOptions& o, int world);
// Model chunks per pipeline stage: 1, or (layers / PP) / --num-layers-per-virtual-pipeline-stage.
int model_chunks(const TrainOptions& o);
// The pipeline checks (layers dividing over stages and chunks, ZeRO stage <= 1, the
// interleaved schedule's micro-batch rule) for `micro_batches` per step and data-parallel rank.
void validate_pipeline_options(const TrainOptions& o, int micro_batches);
// The checks of the model's shape and the layout on `data_parallel_size` ranks (heads dividing
// hidden and tp, precision, batch divisibility, activation checkpointing, ZeRO stage, the
// pipeline): what a plan of the options must pass too.
void validate_layout_options(const TrainOptions& o, int data_parallel_size);
// The layout's checks and the rest of training's (data, learning rate, loss scale); derive()
// runs them.
void validate_train_options(const TrainOptions& o, int data_parallel_size);

// The pieces, for what needs one before the whole (no checks):
// --micro-batch-size and --global-batch-size (0: micro x dp) on `dp` data-parallel ranks.
BatchConfig batch_config(const TrainOptions& o, int dp);
// --lr-decay-iters, or --train-iters when 0.
int lr_decay_iters(const TrainOptions& o);
// --ckpt-step as the checkpoint loader takes it: nothing when not given (`latest`'s iteration).
std::optional<int64_t> checkpoint_step(const TrainOptions& o);
// bf16, fp16 or fp32.
DType working_dtype(const TrainOptions& o);
// The model: shape, padded vocabulary (for the tensor-parallel size), dropout, dtype.
GptConfig gpt_config_from(const TrainOptions& o);

}  // namespace zt
