#pragma once
// The memory and communication plan of one rank, computed by the same code that allocates and
// counts in a real run: ParamLayout (the tensor-parallel shard), Partition (ZeRO), the
// activation stores' and the model's own byte counts. `zerotron estimate` prints it; a test
// checks it against MemoryPool and CommStats of real runs.
#include <cstdint>

#include "src/core/dtype.h"
#include "src/model/gpt_config.h"

namespace zt {

struct PlanInput {
  GptConfig model;                    // padded_vocab_size already padded for tp
  int make_vocab_divisible_by = 128;  // the padding rule, to re-pad when the model or tp changes
  int tp = 1, dp = 1, zero_stage = 0;
  DType working = DType::F32;
  int micro_batch = 1, accumulation = 1;
  bool checkpoint_activations = false;
  int checkpoint_num_layers = 1;
  bool partition_activations = false, cpu_checkpointing = false;
  int64_t reduce_bucket_elems = 500'000'000;
  int64_t param_persistence_threshold = 100'000;
  int64_t max_live_parameters = 1'000'000'000;
  // Whether half-precision reductions are widened into fp32 staging by the communicator
  // (MpiCommunicator, the CPU backend); NCCL reduces half tensors natively and stages nothing.
  bool staged_half_reductions = true;
  // The CUDA backend: its GEMM workspace (buffers) and, with Pa+cpu, the device buffer the next
  // span's input is prefetched into (activations).
  bool cuda = false;
};

struct MemoryPlan {
  // Bytes per rank by MemoryPool category.
  size_t params = 0, grads = 0, optimizer = 0, activations = 0, checkpoints = 0,
         host_checkpoints = 0;
  // Constant-size buffers (category Buffers): staging slots, gradient slots, reduce buckets,
  // stage-3 gathered blocks, the communicators' staging, the scalar reducers.
  size_t buffers = 0;
  size_t model_states() const { return params + grads + optimizer; }
  // What the device holds at the peak: model states, activations, device checkpoints, buffers.
  size_t device_total() const { return model_states() + activations + checkpoints + buffers; }
  // Communication per optimizer step, the paper's convention (CommStats "bytes").
  uint64_t comm_dp = 0, comm_tp = 0;
  // comm_dp by when it can run: behind forward (stage 3's prefetched gathers), behind backward
  // (gradient reductions, stage 3's backward gathers), or after backward (the parameter
  // all-gather of stages 1-2, stage 3's persistent blocks).
  uint64_t comm_dp_forward = 0, comm_dp_backward = 0, comm_dp_after = 0;
  // Collective calls per step, for the latency term of the simulator.
  uint64_t dp_collectives = 0, tp_collectives = 0;
  int64_t num_parameters = 0;   // of the whole model
  int64_t rank_parameters = 0;  // this rank's tensor-parallel shard, before ZeRO
};

MemoryPlan plan_memory(const PlanInput& in);

}  // namespace zt
