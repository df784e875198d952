#include "src/planner/memory_plan.h"

#include <algorithm>
#include <array>
#include <utility>
#include <vector>

#include "kernels/backend_memory.h"
#include "src/checkpoint/host_staging.h"
#include "src/comm/mpi_communicator.h"
#include "src/comm/nccl_groups.h"
#include "src/comm/scalar_reducer.h"
#include "src/core/memory_pool.h"
#include "src/model/gpt.h"
#include "src/model/layer_activations.h"
#include "src/model/param_layout.h"
#include "src/pipeline/stage_runner.h"
#include "src/zero/activation_checkpointer.h"
#include "src/zero/cast_params.h"
#include "src/zero/dp_grad_sync.h"
#include "src/zero/gathered_params.h"
#include "src/zero/grad_buckets.h"
#include "src/zero/grad_staging.h"
#include "src/zero/partition.h"
#include "src/zero/prefetch_policy.h"
#include "src/zero/reduce_scatter_grads.h"
#include "src/zero/sharded_adam.h"
#include "src/zero/zero_optimizer.h"

namespace zt {
namespace {

// The constant-size buffers the trainer's components allocate (their sources give the reason
// for each size); tests/dist/planner_test.cpp checks the sum against MemoryPool.
constexpr size_t kTrainerScalars = kNumMemCategories + 2;  // Trainer's metrics reducer

// The ZeroConfig of the run the plan is for: the fields that size its model states.
ZeroConfig zero_config_of(const PlanInput& in) {
  ZeroConfig z;
  z.stage = in.zero_stage;
  z.reduce_bucket_elems = in.reduce_bucket_elems;
  z.param_persistence_threshold = in.param_persistence_threshold;
  z.prefetch_bucket_elems = in.prefetch_bucket_elems;
  z.max_live_parameters = in.max_live_parameters;
  z.fp32_grads = in.fp32_grads;
  z.cast_params = in.cast_params;
  z.optimizer_tier.tier = in.optimizer_tier;
  z.optimizer_tier.chunk_elems = in.sub_group_elems;
  z.param_tier.tier = in.param_tier;
  return z;
}

// The communicator's fp32 staging for `count` half reductions of up to `elems` elements
// (MpiCommunicator::reserve_staging).
size_t mpi_staging_bytes(size_t elems, size_t dp, size_t count) {
  return count * (elems + elems / dp + 1) * 4;
}

// `param_staging`: stage 3's parameter-tier staging (ModelStateBytes::param_staging).
size_t plan_buffers(const PlanInput& in, const ParamLayout& layout, const Partition& part,
                    size_t param_staging) {
  const size_t e = dtype_size(in.working), eg = dtype_size(in.grad_dtype());
  const bool half = in.working != DType::F32;
  const bool staged = half && in.staged_half_reductions;
  // The gradient's own precision: its staging slots and reductions.
  const bool half_grads = in.grad_dtype() != DType::F32;
  const bool staged_grads = half_grads && in.staged_half_reductions;
  const int world = in.tp * in.dp * in.pp;
  const auto dp = static_cast<size_t>(in.dp);
  // The experts' group (edp) stages its own half reductions, as dp does even at one rank.
  const auto edp = dp / static_cast<size_t>(in.model.expert_parallel);
  const size_t edp_stagings = in.model.expert_parallel > 1 ? 1 : 0;
  size_t b = 0;
  // The scalar reducers (the trainer's metrics, the global gradient norm) allocate from the host
  // pool (DeviceContext::host()): the device pool on the CPU backend, pinned host memory on CUDA.
  if (!in.cuda)
    b += comm::ScalarReducer::bytes(world, std::max(kTrainerScalars, moe_metric_values(in.model))) +
         comm::ScalarReducer::bytes(world, 1);
  // The tied word embedding's gradient all-reduce between the first and last stage
  // (ZeroOptimizer::tie_grads: chunk by chunk of whole rows, the largest first) on a communicator
  // of its own, which stages a half chunk in fp32 as the tensor-parallel one does.
  if (staged_grads && in.pp > 1 && layout.pipeline().size > 1 && !in.model.untie_embeddings &&
      (layout.pipeline().first() || layout.pipeline().last())) {
    const ParamSpec& word = layout.find("embedding.word");
    const auto chunk = static_cast<size_t>(
        std::min(word.numel(), word.chunk_rows(in.reduce_bucket_elems) * word.row_len()));
    b += std::min(chunk, static_cast<size_t>(comm::MpiCommunicator::kStagingSlice)) * 4;
  }
  // The tensor-parallel all-reduces of [N, h] activations are half: MPI stages them in fp32,
  // at most MpiCommunicator::kStagingSlice elements at a time. Sequence parallelism's
  // reduce-scatters stage their input and output chunk (n + n/tp) within the same bound.
  if (staged && in.tp > 1) {
    const size_t n = static_cast<size_t>(in.micro_batch) *
                     static_cast<size_t>(in.model.local_seq()) *
                     static_cast<size_t>(in.model.hidden);
    const size_t staged_elems =
        splits_sequence(in.model, in.tp) ? n + n / static_cast<size_t>(in.tp) : n;
    b += std::min(staged_elems, static_cast<size_t>(comm::MpiCommunicator::kStagingSlice)) * 4;
  }
  b += ShardedAdam::workspace_bytes();  // this rank's share of the gradient norm
  // Offloaded states: on the CPU backend, checkpoints reach them through the host window
  // (HostStaging), which that backend otherwise does without. On a device of its own their
  // chunks cross in host buffers (ShardedAdam, ZeroOptimizer), none on the device.
  if (in.optimizer_tier != StateTier::Device && !in.cuda) b += HostStaging::kBytes;
  const size_t staging = GradStaging::bytes(layout, in.reduce_bucket_elems);
  if (in.zero_stage == 0) {
    if (in.cast_params)
      b += CastParams::arena_bytes(Gpt::held_params_elems(in.model, layout, in.reduce_bucket_elems),
                                   in.working);
    if (half_grads) b += staging;
    if (staged_grads && in.dp > 1) {
      const GradBuckets buckets(layout, in.reduce_bucket_elems);
      size_t bucket = 0;
      for (const auto& k : buckets.buckets())
        bucket = std::max(bucket, static_cast<size_t>(k.end - k.begin));
      b += mpi_staging_bytes(bucket, dp, DpGradSync::kInFlight) +
           edp_stagings * mpi_staging_bytes(bucket, edp, DpGradSync::kInFlight);
    }
    return b;
  }
  const auto max_unit = static_cast<size_t>(part.max_unit());
  const auto max_part = static_cast<size_t>(part.max_part());
  const auto reductions = static_cast<size_t>(ReduceScatterUnits::kReductions);
  b += static_cast<size_t>(ZeroOptimizer::workspace_elems(part)) * 4;
  if (in.zero_stage >= 2 || half_grads) b += staging;
  if (staged_grads)
    b += mpi_staging_bytes(max_unit, dp, reductions) +
         edp_stagings * mpi_staging_bytes(max_unit, edp, reductions);
  if (in.zero_stage >= 2) b += reductions * (max_unit + max_part) * eg;
  if (in.zero_stage == 3) {
    int shared = 0;
    for (const auto& u : part.units()) {
      if (layout.blocks()[static_cast<size_t>(u.block)].numel() > in.param_persistence_threshold)
        ++shared;
      else
        b += static_cast<size_t>(u.padded_len) * e;
    }
    const PrefetchLimits limits{in.prefetch_bucket_elems, in.max_live_parameters};
    b += static_cast<size_t>(gathered_slots(shared, part.max_unit(), limits)) * max_unit * e;
    b += param_staging;
  }
  return b;
}

// Stage-3 all-gathers of one micro-batch: GatheredParams gathers a unit when the model
// acquires a span in it and it is not resident, and drops a released unit once another is
// acquired. The model reaches each unit in one run per pass: forward every unit (the word
// embedding's twice: lookup and head); backward the head's units again but the last (still
// resident), then per layer the units holding what backward acquires (Gpt::acquired_in_backward),
// after a checkpointed span's recomputed forward, which gathers all of its layers' units and
// leaves the last layer's last unit resident for its backward.
// A unit cut over a group of one (an expert unit when edp is 1) moves nothing.
struct Gathers {
  uint64_t count = 0, elems = 0;
  void add(const PartitionUnit& u, int64_t times = 1) {
    count += static_cast<uint64_t>(times);
    if (u.parts > 1) elems += static_cast<uint64_t>(times * u.padded_len);
  }
};

// Forward ([0]) and backward ([1]) gathers of one micro-batch.
std::array<Gathers, 2> stage3_gathers(const PlanInput& in, const ParamLayout& layout,
                                      const Partition& part) {
  std::array<Gathers, 2> g;
  auto persistent = [&](int block) {
    return layout.blocks()[static_cast<size_t>(block)].numel() <= in.param_persistence_threshold;
  };
  const auto& units = part.units();
  // Per unit: does it hold the head's weight (the word embedding, or the untied output layer,
  // which forward reaches once, not for the lookup too); does backward acquire in it.
  const bool tied = !in.model.untie_embeddings;
  const ParamSpec& word = layout.find(tied ? "embedding.word" : "output_layer.weight");
  std::vector<char> word_unit(units.size(), 0), bwd_unit(units.size(), 0);
  for (const auto& p : layout.params()) {
    if (p.numel() == 0) continue;
    const int first = part.unit_of(p.offset), last = part.unit_of(p.offset + p.numel() - 1);
    for (int k = first; k <= last; ++k) {
      if (&p == &word) word_unit[static_cast<size_t>(k)] = 1;
      if (Gpt::acquired_in_backward(p)) bwd_unit[static_cast<size_t>(k)] = 1;
    }
  }
  for (int b = 0; b < layout.num_blocks(); ++b) {
    if (persistent(b)) continue;
    const auto [first, last] = part.block_units(b);
    int last_word = -1;
    for (int k = first; k < last; ++k) {
      const auto& u = units[static_cast<size_t>(k)];
      const auto i = static_cast<size_t>(k);
      g[0].add(u);
      if (word_unit[i]) {
        if (tied) g[0].add(u);  // the head's forward (the lookup's is above)
        g[1].add(u);            // the head's backward
        last_word = k;
      } else if (b != layout.embedding_block() && bwd_unit[i]) {
        g[1].add(u);
      }
    }
    if (last_word >= 0) g[1].add(units[static_cast<size_t>(last_word)], -1);
  }
  if (in.checkpoint_activations) {
    const int L = in.model.num_layers, span = in.checkpoint_num_layers;
    for (int first_layer = 0; first_layer < L; first_layer += span) {
      const int last_layer = std::min(first_layer + span, L) - 1;
      for (int l = first_layer; l <= last_layer; ++l) {
        const int b = layout.layer_block(l);
        if (persistent(b)) continue;
        const auto [first, last] = part.block_units(b);
        for (int k = first; k < last; ++k) g[1].add(units[static_cast<size_t>(k)]);
      }
      const int b = layout.layer_block(last_layer);
      const auto [first, last] = part.block_units(b);
      if (!persistent(b) && last > first && bwd_unit[static_cast<size_t>(last - 1)])
        g[1].add(units[static_cast<size_t>(last - 1)], -1);
    }
  }
  return g;
}

}  // namespace

MemoryPlan plan_memory(const PlanInput& in) {
  MemoryPlan p;
  const PipelinePart stage{in.pp, in.stage, in.chunks, in.first_stage_layers, in.last_stage_layers};
  const ParamLayout layout = ParamLayout::gpt(in.model, in.tp, 0, stage);
  p.stage = in.stage;
  // Expert parameters are partitioned over edp, the dp ranks holding the same experts.
  const Partition part(layout, in.dp, 0, in.reduce_bucket_elems, in.dp / in.model.expert_parallel,
                       0);
  const size_t e = dtype_size(in.working), eg = dtype_size(in.grad_dtype());
  p.num_parameters = in.model.num_parameters();
  p.rank_parameters = layout.numel();
  // The model states as the stage's composition allocates them (ZeroOptimizer's stage table).
  const ModelStateBytes s =
      ZeroOptimizer::model_state_bytes(layout, part, in.working, zero_config_of(in), in.cuda);
  p.params = s.params;
  p.grads = s.grads;
  p.optimizer = s.optimizer;
  p.host_params = s.host_params;
  p.host_grads = s.host_grads;
  p.host_optimizer = s.host_optimizer;
  p.nvme_buffers = s.nvme_buffers;
  p.param_nvme_bytes = s.param_file;
  p.grad_nvme_bytes = s.grad_file;
  p.nvme_bytes = s.param_file + s.grad_file + s.optimizer_file;
  p.optimizer_elems = s.optimizer_elems;
  // --async-save's host copy of the master and moments the rank writes.
  p.host_snapshot = in.async_save ? 3 * static_cast<size_t>(s.optimizer_elems) * 4 : 0;
  // The model computes in the working precision: its activations and checkpoints are sized by it.
  GptConfig c = in.model;
  c.dtype = in.working;
  // A pipeline stage keeps one activation slot per micro-batch in flight (of one chunk's
  // layers), and the StageRunner's chunk inputs, output gradients, batches and send buffers.
  const pipeline::ScheduleShape shape{in.pp, in.accumulation, in.chunks};
  const ActivationSlots slots =
      in.pp > 1 ? pipeline::StageRunner::slots(c, shape, stage) : ActivationSlots{};
  p.activations = Gpt::arena_bytes(c, in.micro_batch, in.tp, stage) +
                  static_cast<size_t>(2 * in.micro_batch * c.local_seq()) * 4;  // the batch
  if (in.pp > 1)
    p.activations += pipeline::StageRunner::buffer_bytes(c, in.micro_batch, in.tp, shape, in.stage);
  if (in.checkpoint_activations) {
    CheckpointConfig cp;
    cp.span = in.checkpoint_num_layers;
    cp.partition = in.partition_activations;
    cp.cpu = in.cpu_checkpointing;
    p.activations += ActivationCheckpointer::workspace_bytes(c, in.micro_batch, in.tp, cp.span) +
                     ActivationCheckpointer::prefetch_bytes(c, in.micro_batch, cp, in.cuda);
    const size_t kept =
        ActivationCheckpointer::checkpoint_bytes(c, in.micro_batch, in.tp, cp, slots);
    (cp.cpu ? p.host_checkpoints : p.checkpoints) = kept;
  } else {
    p.activations += KeepAllActivations::bytes(c, in.micro_batch, in.tp, slots);
  }
  // The CPU kernels' per-thread scratch, which the model takes from the pool on the CPU backend.
  if (!in.cuda) p.activations += Gpt::kernel_scratch_bytes(c, in.micro_batch, in.tp);
  p.backend_buffers = in.cuda ? kCudaGemmWorkspaceBytes : 0;
  p.buffers = plan_buffers(in, layout, part, s.param_staging) + p.backend_buffers;
  p.nccl_communicators = in.cuda ? comm::nccl_communicators(in.tp, in.dp, in.pp, in.stage, in.cp,
                                                            in.model.expert_parallel)
                                 : 0;
  p.nccl_bytes = comm::nccl_planned_bytes(p.nccl_communicators);
  // Data parallel, per step: stage 0 all-reduces the gradient (2Ψ); stage 1 reduce-scatters
  // it once and all-gathers the parameters (2Ψ); stage 2 reduce-scatters every micro-batch;
  // stage 3 gathers every non-persistent block twice per micro-batch (forward, backward), the
  // persistent ones once per step, and reduce-scatters every micro-batch.
  // The experts' part runs over edp (GroupKind Edp), and moves nothing where edp is one rank.
  if (in.dp > 1) {
    const auto a = static_cast<uint64_t>(in.accumulation);
    const auto units = static_cast<uint64_t>(part.units().size());
    const bool experts_move = in.dp > in.model.expert_parallel;
    uint64_t moved = 0, padded_moved = 0;
    for (const auto& q : layout.params())
      moved += !q.expert || experts_move ? static_cast<uint64_t>(q.numel()) : 0;
    for (const auto& u : part.units())
      padded_moved += u.parts > 1 ? static_cast<uint64_t>(u.padded_len) : 0;
    if (in.zero_stage == 0) {
      p.comm_dp_backward = 2 * moved * eg;
      const GradBuckets buckets(layout, in.reduce_bucket_elems);
      p.dp_collectives = buckets.buckets().size();
    } else if (in.zero_stage == 1) {
      // reduce-scatter behind the last micro-batch's backward, all-gather of the updated
      // parameters
      p.comm_dp_backward = padded_moved * eg;
      p.comm_dp_after = padded_moved * e;
      p.dp_collectives = 2 * units;
    } else if (in.zero_stage == 2) {
      p.comm_dp_backward = a * padded_moved * eg;
      p.comm_dp_after = padded_moved * e;
      p.dp_collectives = (a + 1) * units;
    } else {
      uint64_t persistent = 0, persistent_units = 0;
      for (const auto& u : part.units())
        if (layout.blocks()[static_cast<size_t>(u.block)].numel() <=
            in.param_persistence_threshold) {
          persistent += u.parts > 1 ? static_cast<uint64_t>(u.padded_len) : 0;
          ++persistent_units;
        }
      const auto g = stage3_gathers(in, layout, part);
      p.comm_dp_forward = a * g[0].elems * e;
      p.comm_dp_backward = a * (g[1].elems * e + padded_moved * eg);  // gathers, reduce-scatters
      p.comm_dp_after = persistent * e;
      p.dp_collectives = a * (g[0].count + g[1].count + units) + persistent_units;
    }
    p.comm_dp = p.comm_dp_forward + p.comm_dp_backward + p.comm_dp_after;
  }
  // Tensor parallel, per micro-batch, over the stage's layers (all of them without a pipeline):
  // per layer 2 all-reduces of [N, h] in forward and 2 in backward; on the first stage the
  // embedding's, on the last the head's (all in the working precision) and the cross-entropy's
  // 3N (fp32); a recomputing store repeats the 2 forward ones per layer; Pa all-gathers each
  // span's input (working precision; spans counted per model chunk).
  // Sequence parallelism: per layer forward 2 all-gathers + 2 reduce-scatters of [N, h] (the
  // bytes of the 2 all-reduces); backward 4 all-gathers (2 output gradients, 2 recomputed
  // layernorm outputs), 2 reduce-scatters and 2 all-reduces of a layernorm's [2h] fp32
  // gradients ([h] under RMSNorm: no bias); the embedding (first stage) reduce-scatters forward
  // and all-gathers its gradient, the final layernorm (last stage) all-gathers forward,
  // reduce-scatters and all-reduces [2h] ([h]) backward; a recomputing store repeats the 4 forward
  // ones per layer; Pa moves nothing (the inputs are already split).
  const uint64_t first = stage.first() ? 1 : 0, last = stage.last() ? 1 : 0;
  const uint64_t N = static_cast<uint64_t>(in.micro_batch) * static_cast<uint64_t>(c.local_seq());
  const uint64_t h = static_cast<uint64_t>(c.hidden);
  const uint64_t L = static_cast<uint64_t>(stage_layer_count(stage.split(c), in.stage));
  const uint64_t a = static_cast<uint64_t>(in.accumulation);
  // Context parallel, per micro-batch and layer (context_attention.h): forward the q|k|v rows
  // [N, W] and the output [N, Cl]; backward the output, its gradient and the q|k|v gradient; a
  // recomputing store repeats the forward's. Each all-to-all of n elements counts (cp−1)/cp·n.
  // The ring (context_ring.h) instead: per micro-batch and layer forward C−1 hops of the keys and
  // values [N, 2Ckv] in the working precision, backward C−1 of them and C of their fp32
  // gradients; a recomputing store repeats the forward's. A hop is a send and a receive, each
  // counting its bytes.
  if (in.cp > 1 && c.context_comm == ContextComm::Ring) {
    const auto cp = static_cast<uint64_t>(in.cp);
    const uint64_t kv = N * 2 * static_cast<uint64_t>(TpDims::of(c, in.tp, 0).kv_hidden);
    const uint64_t fwd_hops = (in.checkpoint_activations ? 2 : 1) * (cp - 1);
    p.comm_cp = a * L * 2 * ((fwd_hops + cp - 1) * kv * e + cp * kv * 4);
    p.cp_collectives = a * L * 2 * (fwd_hops + cp - 1 + cp);
  } else if (in.cp > 1) {
    const auto cp = static_cast<uint64_t>(in.cp), t = static_cast<uint64_t>(in.tp);
    const auto W = static_cast<uint64_t>(context_qkv_width(c, in.tp));
    const uint64_t Cl = h / t;
    const uint64_t fwd = N * (W + Cl), bwd = N * (W + 2 * Cl);
    const uint64_t per_layer = (in.checkpoint_activations ? 2 : 1) * fwd + bwd;
    p.comm_cp = a * L * per_layer / cp * (cp - 1) * e;
    p.cp_collectives = a * L * (in.checkpoint_activations ? 7 : 5);
  }
  if (in.tp > 1 && splits_sequence(c, in.tp)) {
    const uint64_t recompute = in.checkpoint_activations ? 4 * L : 0;
    const uint64_t units = 10 * L + 2 * first + 2 * last + recompute;  // [N, h] moves, each n
    const uint64_t norm_params = c.rmsnorm() ? 1 : 2;  // a norm's parameter vectors of h
    const uint64_t bytes =
        units * N * h * e + (2 * L + last) * 2 * norm_params * h * 4 + last * 2 * 4 * 3 * N;
    p.comm_tp = bytes * a;
    p.tp_collectives = (12 * L + 2 * first + 3 * last + 3 * last + recompute) * a;
  } else if (in.tp > 1) {
    uint64_t elems = (4 * L + first + last) * N * h;
    if (in.checkpoint_activations) elems += 2 * L * N * h;
    uint64_t bytes = 2 * e * elems + last * 2 * 4 * 3 * N;  // all-reduce of n elements counts 2n
    uint64_t ops = 4 * L + first + last + 3 * last + (in.checkpoint_activations ? 2 * L : 0);
    if (in.checkpoint_activations && in.partition_activations) {
      const uint64_t per_chunk = L / static_cast<uint64_t>(in.chunks);
      const uint64_t span = static_cast<uint64_t>(in.checkpoint_num_layers);
      // A pipeline stage's first span of a chunk starts from the chunk input it keeps whole.
      const uint64_t spans = static_cast<uint64_t>(in.chunks) *
                             ((per_chunk + span - 1) / span - (slots.inputs_kept ? 1 : 0));
      bytes += spans * N * h * e;  // all-gather of n output elements counts n
      ops += spans;
    }
    p.comm_tp = bytes * a;
    p.tp_collectives = ops * a;
  }
  // A mixture of experts under tp: per MoE layer and micro-batch one all-reduce of the combine
  // weights' gradient [N, kc] fp32 in backward (kc: k, and the shared expert's; moe_mlp.h).
  uint64_t moe_layers = 0;
  for (int k = 0; k < stage.chunks; ++k)
    for (int i : stage.layers(c, k)) moe_layers += c.moe_layer(i) ? 1 : 0;
  if (in.tp > 1 && c.moe()) {
    p.comm_tp += a * moe_layers * 2 * N * static_cast<uint64_t>(c.moe_combine_width()) * 4;
    p.tp_collectives += a * moe_layers;
  }
  // Expert parallelism, per MoE layer and micro-batch (moe_mlp.cpp): forward one all-to-all of
  // the E row counts (fp32) and two of rows [·, C] in the working precision (to the experts and
  // back); backward three of rows (the gradient to the experts and back, the input rows again
  // for the first weight's gradient); a recomputing store repeats the forward's. What leaves a
  // rank is what routing sends to other ranks' experts: the plan takes routing even, (ep−1)/ep
  // of the N·k rows (exact when every token picks every expert).
  if (c.expert_parallel > 1) {
    const auto ep = static_cast<uint64_t>(c.expert_parallel);
    const uint64_t fwd = in.checkpoint_activations ? 2 : 1;
    const uint64_t rows = N * static_cast<uint64_t>(c.moe_topk) / ep * (ep - 1) * h * e;
    const uint64_t counts = static_cast<uint64_t>(c.num_experts) / ep * (ep - 1) * 4;
    p.comm_ep = a * moe_layers * (fwd * (counts + 2 * rows) + 3 * rows);
    p.ep_collectives = a * moe_layers * (3 * fwd + 3);
  }
  // Context parallelism sums each MoE layer's choices per expert over the context group (E fp32,
  // an all-reduce per forward, recomputed ones included): the load-balancing loss's counts.
  if (in.cp > 1 && c.moe()) {
    const uint64_t fwd = in.checkpoint_activations ? 2 : 1;
    p.comm_cp += a * moe_layers * fwd * 2 * static_cast<uint64_t>(c.num_experts) * 4;
    p.cp_collectives += a * moe_layers * fwd;
  }
  // Pipeline, per micro-batch and model chunk (virtual stage vs of V): the forward receives its
  // input unless vs is the first and sends its output unless it is the last; the backward
  // receives the output's gradient unless vs is the last and sends the input's unless it is the
  // first; each [Nl, C] in the working precision (Nl = N / tp under sequence parallelism). Once
  // per step the first and last stage all-reduce the tied word embedding's gradient.
  if (in.pp > 1) {
    const int V = in.pp * in.chunks;
    uint64_t messages = 0;
    for (int k = 0; k < in.chunks; ++k) {
      const int vs = stage.virtual_stage(k);
      messages += (vs > 0 ? 2 : 0) + (vs < V - 1 ? 2 : 0);
    }
    const uint64_t rows = splits_sequence(c, in.tp) ? N / static_cast<uint64_t>(in.tp) : N;
    p.pp_messages = messages * a;
    p.comm_pp = p.pp_messages * rows * h * e;
    if ((stage.first() || stage.last()) && !c.untie_embeddings) {
      // The tied word embedding's gradient, in its precision.
      p.tied_bytes = 2 * static_cast<uint64_t>(layout.find("embedding.word").numel()) *
                     dtype_size(in.grad_dtype());
      p.comm_pp += p.tied_bytes;
    }
  }
  return p;
}

std::vector<MemoryPlan> plan_stages(const PlanInput& in) {
  std::vector<MemoryPlan> stages;
  PlanInput one = in;
  for (one.stage = 0; one.stage < in.pp; ++one.stage) stages.push_back(plan_memory(one));
  return stages;
}

size_t largest_stage(const std::vector<MemoryPlan>& stages) {
  size_t best = 0;
  for (size_t k = 1; k < stages.size(); ++k)
    if (stages[k].device_total() > stages[best].device_total()) best = k;
  return best;
}

}  // namespace zt
