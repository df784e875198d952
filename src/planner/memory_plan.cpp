#include "src/planner/memory_plan.h"

#include <algorithm>

#include "src/core/memory_pool.h"
#include "src/model/gpt.h"
#include "src/model/layer_activations.h"
#include "src/model/param_layout.h"
#include "src/zero/activation_checkpointer.h"
#include "src/zero/grad_buckets.h"
#include "src/zero/partition.h"

namespace zt {
namespace {

// Mirrors of the constant-size buffers the trainer's components allocate (their sources give the
// reason for each size); tests/dist/planner_test.cpp checks the sum against MemoryPool.
constexpr size_t kStagingChunk = size_t{1} << 20;  // fp32 elements: Replicated/PartitionedStates
constexpr size_t kReductionsInFlight = 2;          // PartitionedStates' double-buffered buckets
constexpr size_t kGradSlots = 2;                   // GradSlots: the block in backward + the next
constexpr size_t kTrainerScalars = kNumMemCategories + 2;  // Trainer's metrics reducer

// ScalarReducer: every rank's values as two fp32 words each.
size_t scalar_reducer_bytes(int world, size_t values) {
  return static_cast<size_t>(world) * values * 2 * 4;
}

size_t plan_buffers(const PlanInput& in, const ParamLayout& layout, const Partition& part) {
  const size_t e = dtype_size(in.working);
  const bool half = in.working != DType::F32;
  const bool staged = half && in.staged_half_reductions;
  const int world = in.tp * in.dp;
  size_t b = scalar_reducer_bytes(world, kTrainerScalars);
  // The tensor-parallel all-reduces of [N, h] activations are half: MPI stages one in fp32.
  if (staged && in.tp > 1)
    b += static_cast<size_t>(in.micro_batch) * static_cast<size_t>(in.model.seq_length) *
         static_cast<size_t>(in.model.hidden) * 4;
  if (world > 1) b += scalar_reducer_bytes(world, 1);  // the global gradient norm
  if (in.zero_stage == 0) {
    size_t block = 0;
    for (const auto& blk : layout.blocks())
      block = std::max(block, static_cast<size_t>(blk.numel()));
    if (half) b += kGradSlots * block * 4 + kStagingChunk * 4;
    // Every gradient bucket's all-reduce may be in flight at once; each stages its fp32 copy.
    if (staged && in.dp > 1) {
      const GradBuckets buckets(layout, in.reduce_bucket_elems);
      for (const auto& k : buckets.buckets()) b += static_cast<size_t>(k.end - k.begin) * 4;
    }
    return b;
  }
  const auto block = static_cast<size_t>(part.max_padded_block());
  size_t max_unit = 0, max_part = 0;
  for (const auto& u : part.units()) {
    max_unit = std::max(max_unit, static_cast<size_t>(u.padded_len));
    max_part = std::max(max_part, static_cast<size_t>(u.part_len));
  }
  b += std::max(kStagingChunk, max_part) * 4;  // fp32 optimizer chunk
  if (in.zero_stage >= 2 || half) b += kGradSlots * block * 4;
  if (in.zero_stage >= 2) {
    b += kReductionsInFlight * (max_unit + max_part) * e;
    // reserve_staging(max_unit, 2): room for the reduce-scatter's input and output in fp32.
    if (staged)
      b += kReductionsInFlight * (max_unit + max_unit / static_cast<size_t>(in.dp) + 1) * 4;
  }
  if (in.zero_stage == 1 && staged)  // every unit's in-place reduce-scatter at once
    for (const auto& u : part.units()) b += static_cast<size_t>(u.padded_len + u.part_len) * 4;
  if (in.zero_stage == 3) {
    for (int k = 0; k < layout.num_blocks(); ++k)
      if (layout.blocks()[static_cast<size_t>(k)].numel() <= in.param_persistence_threshold)
        b += static_cast<size_t>(part.padded_block_len(k)) * e;
    const int64_t slots =
        std::clamp<int64_t>(in.max_live_parameters / static_cast<int64_t>(block), 1, 3);
    b += static_cast<size_t>(slots) * block * e;
  }
  return b;
}

}  // namespace

MemoryPlan plan_memory(const PlanInput& in) {
  MemoryPlan p;
  const ParamLayout layout = ParamLayout::gpt(in.model, in.tp, 0);
  const Partition part(layout, in.dp, 0, in.reduce_bucket_elems);
  const size_t e = dtype_size(in.working);
  const auto numel = static_cast<size_t>(layout.numel());
  const auto padded = static_cast<size_t>(part.padded_numel());
  const auto shard = static_cast<size_t>(part.shard_numel());
  const bool half = in.working != DType::F32;
  p.num_parameters = in.model.num_parameters();
  p.rank_parameters = layout.numel();
  switch (in.zero_stage) {
    case 0:  // ReplicatedStates: all on every rank; fp32 master only beside half weights
      p.params = p.grads = numel * e;
      p.optimizer = (half ? 3 : 2) * numel * 4;
      break;
    case 1:  // full working params and grads (padded space), shard of master/m/v
      p.params = p.grads = padded * e;
      p.optimizer = 3 * shard * 4;
      break;
    case 2:
      p.params = padded * e;
      p.grads = shard * e;
      p.optimizer = 3 * shard * 4;
      break;
    default:
      p.params = p.grads = shard * e;
      p.optimizer = 3 * shard * 4;
  }
  // The model computes in the working precision: its activations and checkpoints are sized by it.
  GptConfig c = in.model;
  c.dtype = in.working;
  p.activations = Gpt::arena_bytes(c, in.micro_batch, in.tp) +
                  static_cast<size_t>(2 * in.micro_batch * c.seq_length) * 4;  // the batch
  if (in.checkpoint_activations) {
    CheckpointConfig cp;
    cp.span = in.checkpoint_num_layers;
    cp.partition = in.partition_activations;
    cp.cpu = in.cpu_checkpointing;
    p.activations += ActivationCheckpointer::workspace_bytes(c, in.micro_batch, in.tp, cp.span);
    const size_t kept = ActivationCheckpointer::checkpoint_bytes(c, in.micro_batch, in.tp, cp);
    (cp.cpu ? p.host_checkpoints : p.checkpoints) = kept;
  } else {
    p.activations +=
        LayerActivations::bytes(c, in.micro_batch, in.tp) * static_cast<size_t>(c.num_layers);
  }
  p.buffers = plan_buffers(in, layout, part);
  // Data parallel, per step: stage 0 all-reduces the gradient (2Ψ); stage 1 reduce-scatters
  // it once and all-gathers the parameters (2Ψ); stage 2 reduce-scatters every micro-batch;
  // stage 3 gathers every non-persistent block twice per micro-batch (forward, backward), the
  // persistent ones once per step, and reduce-scatters every micro-batch.
  if (in.dp > 1) {
    const uint64_t a = static_cast<uint64_t>(in.accumulation);
    const auto units = static_cast<uint64_t>(part.units().size());
    if (in.zero_stage == 0) {
      p.comm_dp_backward = 2 * numel * e;
      const GradBuckets buckets(layout, in.reduce_bucket_elems);
      p.dp_collectives = buckets.buckets().size();
    } else if (in.zero_stage == 1) {
      p.comm_dp_backward = padded * e;  // reduce-scatter behind the last micro-batch's backward
      p.comm_dp_after = padded * e;     // all-gather of the updated parameters
      p.dp_collectives = 2 * units;
    } else if (in.zero_stage == 2) {
      p.comm_dp_backward = a * padded * e;
      p.comm_dp_after = padded * e;
      p.dp_collectives = (a + 1) * units;
    } else {
      uint64_t persistent = 0, gathered_blocks = 0;
      for (int b = 0; b < layout.num_blocks(); ++b) {
        if (layout.blocks()[static_cast<size_t>(b)].numel() <= in.param_persistence_threshold)
          persistent += static_cast<uint64_t>(part.padded_block_len(b));
        else
          ++gathered_blocks;
      }
      p.comm_dp_forward = a * (padded - persistent) * e;
      p.comm_dp_backward = a * ((padded - persistent) + padded) * e;
      p.comm_dp_after = persistent * e;
      p.dp_collectives = a * (2 * gathered_blocks + units) + (persistent > 0 ? 1 : 0);
    }
    p.comm_dp = p.comm_dp_forward + p.comm_dp_backward + p.comm_dp_after;
  }
  // Tensor parallel, per micro-batch: per layer 2 all-reduces of [N, h] in forward and 2 in
  // backward, the embedding's and the head's (all in the working precision), the
  // cross-entropy's 3N (fp32); a recomputing store repeats the 2 forward ones per layer; Pa
  // all-gathers each span's input (working precision).
  if (in.tp > 1) {
    const uint64_t N = static_cast<uint64_t>(in.micro_batch) * static_cast<uint64_t>(c.seq_length);
    const uint64_t h = static_cast<uint64_t>(c.hidden), L = static_cast<uint64_t>(c.num_layers);
    uint64_t elems = (4 * L + 2) * N * h;
    if (in.checkpoint_activations) elems += 2 * L * N * h;
    uint64_t bytes = 2 * e * elems + 2 * 4 * 3 * N;  // all-reduce of n elements counts 2n
    if (in.checkpoint_activations && in.partition_activations) {
      const uint64_t spans = (L + static_cast<uint64_t>(in.checkpoint_num_layers) - 1) /
                             static_cast<uint64_t>(in.checkpoint_num_layers);
      bytes += spans * N * h * e;  // all-gather of n output elements counts n
    }
    p.comm_tp = bytes * static_cast<uint64_t>(in.accumulation);
    uint64_t ops = (4 * L + 2) + 3 + (in.checkpoint_activations ? 2 * L : 0);
    if (in.checkpoint_activations && in.partition_activations)
      ops += (L + static_cast<uint64_t>(in.checkpoint_num_layers) - 1) /
             static_cast<uint64_t>(in.checkpoint_num_layers);
    p.tp_collectives = ops * static_cast<uint64_t>(in.accumulation);
  }
  return p;
}

}  // namespace zt
