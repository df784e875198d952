#pragma once
// The memory and communication plan of one rank, computed by the same code that allocates and
// counts in a real run: ParamLayout (the tensor-parallel shard), Partition (ZeRO), the
// activation stores' and the model's own byte counts. `zerotron estimate` prints it; a test
// checks it against MemoryPool and CommStats of real runs.
#include <cstdint>
#include <vector>

#include "src/config/options.h"
#include "src/core/dtype.h"
#include "src/model/gpt_config.h"
#include "src/zero/optimizer_states.h"

namespace zt {

// What a plan needs to know of a run; the defaults are the training options' (option_defaults).
struct PlanInput {
  GptConfig model;  // padded_vocab_size already padded for tp
  // The padding rule, to re-pad when the model or tp changes.
  int make_vocab_divisible_by = option_defaults::make_vocab_size_divisible_by;
  // dp: the data × context ranks (what gradients are summed over and ZeRO partitions over);
  // cp: the context ranks among them (--context-parallel-size, model.context_parallel).
  int tp = 1, dp = 1, zero_stage = 0, cp = 1;
  // Pipeline parallelism: `pp` stages of `chunks` model chunks each (the interleaved schedule
  // when > 1); a plan is that of one stage, `stage` (plan_stages: every one).
  int pp = 1, chunks = 1, stage = 0;
  // The first / last stage's layers (PipelineSplit: 0, an even split).
  int first_stage_layers = 0, last_stage_layers = 0;
  DType working = DType::F32;
  // The kept gradient in fp32 under half parameters (--accumulate-allreduce-grads-in-fp32).
  bool fp32_grads = false;
  DType grad_dtype() const { return fp32_grads ? DType::F32 : working; }
  // Stage 0 in half precision with no working copy (--working-params cast): the parameters the
  // model holds at once are cast into a buffer (Gpt::held_params_elems), none are kept.
  bool cast_params = false;
  int micro_batch = option_defaults::micro_batch_size;
  int accumulation = 1;  // micro-batches per step (pipeline: m)
  bool checkpoint_activations = false;
  int checkpoint_num_layers = option_defaults::checkpoint_num_layers;
  bool partition_activations = false, cpu_checkpointing = false;
  int64_t reduce_bucket_elems = option_defaults::reduce_bucket_size;
  int64_t param_persistence_threshold = option_defaults::param_persistence_threshold;
  // Stage 3's gather slots (zero/prefetch_policy.h).
  int64_t prefetch_bucket_elems = option_defaults::prefetch_bucket_size;
  int64_t max_live_parameters = option_defaults::max_live_parameters;
  // Whether half-precision reductions are widened into fp32 staging by the communicator
  // (MpiCommunicator, the CPU backend); NCCL reduces half tensors natively and stages nothing.
  bool staged_half_reductions = true;
  // The CUDA backend: its GEMM workspace (buffers) and, with Pa+cpu, the device buffer the next
  // span's input is prefetched into (activations).
  bool cuda = false;
  // --async-save with --save: the host snapshot of the writing rank's states.
  bool async_save = false;
  // --offload-optimizer: where the fp32 master parameters and Adam moments live, and the chunk
  // the step streams them in (--sub-group-size).
  StateTier optimizer_tier = StateTier::Device;
  int64_t sub_group_elems = option_defaults::sub_group_size;
  // --offload-param (stage 3): where the own shard of the working parameters lives.
  StateTier param_tier = StateTier::Device;
};

struct MemoryPlan {
  // Bytes per rank by MemoryPool category.
  size_t params = 0, grads = 0, optimizer = 0, activations = 0, checkpoints = 0,
         host_checkpoints = 0;
  // --async-save: the host copy of the fp32 master and Adam moments a checkpoint writes in the
  // background, on a rank that writes a shard (at ZeRO stage 0 one data-parallel rank per
  // tensor-parallel rank and stage: the plan is that rank's).
  size_t host_snapshot = 0;
  // --offload-optimizer cpu: the fp32 master and Adam moments in host memory (HostOptimizer);
  // nvme: the host buffers they stream through (NvmeBuffers) and the swap file's bytes. None of
  // them is device memory (on the CPU backend the host pool is the device's).
  // --offload-param cpu: stage 3's own shard of the working parameters in host memory
  // (HostParams); nvme: its swap file and buffers are in nvme_bytes and nvme_buffers too.
  // Stages 2-3 with the optimizer offloaded from CUDA: the gradient shard on the host
  // (HostGrads, grad_tier), or with the optimizer on NVMe its swap file and buffers in
  // nvme_bytes and nvme_buffers.
  size_t host_optimizer = 0, host_params = 0, host_grads = 0, nvme_buffers = 0;
  uint64_t nvme_bytes = 0;
  // Of nvme_bytes, the parameters' swap file (stage 3, --offload-param nvme) and the gradients'
  // (grad_tier Nvme).
  uint64_t param_nvme_bytes = 0, grad_nvme_bytes = 0;
  // The elements the rank's optimizer steps: its shard (the whole layout at stage 0).
  int64_t optimizer_elems = 0;
  // Constant-size buffers (category Buffers): staging slots, gradient slots, reduce buckets,
  // stage-3 gathered blocks, the communicators' staging, the scalar reducers (on the CPU backend:
  // on CUDA they are in pinned host memory, not counted here).
  size_t buffers = 0;
  // Of `buffers`, what the CUDA backend takes for itself rather than the training stack: its
  // GEMM workspace (kernels/backend_memory.h). 0 on the CPU backend.
  size_t backend_buffers = 0;
  // NCCL communicators this rank creates (CUDA; comm/nccl_groups.h: none for a group of one)
  // and the device memory planned for them (comm::nccl_planned_bytes): NCCL's own, outside the
  // MemoryPool, --device-memory and device_total(); TrainDevice measures it beside this figure.
  int nccl_communicators = 0;
  size_t nccl_bytes = 0;
  size_t model_states() const { return params + grads + optimizer; }
  // What the device holds at the peak: model states, activations, device checkpoints, buffers.
  size_t device_total() const { return model_states() + activations + checkpoints + buffers; }
  // Communication per optimizer step, the paper's convention (CommStats "bytes"). comm_pp: the
  // pipeline group's point-to-point activations and gradients (each send and each receive
  // counts its bytes) and, on the first and last stage, the tied word embedding's gradient
  // all-reduce. comm_cp: the context group's all-to-alls (src/model/context_attention.h) or ring
  // hops (src/model/context_ring.h; each send and each receive counts its bytes).
  // comm_ep: expert parallelism's all-to-alls (src/model/moe_mlp.cpp) at even routing.
  uint64_t comm_dp = 0, comm_tp = 0, comm_pp = 0, comm_cp = 0, comm_ep = 0;
  // comm_dp by when it can run: behind forward (stage 3's prefetched gathers), behind backward
  // (gradient reductions, stage 3's backward gathers), or after backward (the parameter
  // all-gather of stages 1-2, stage 3's persistent blocks).
  uint64_t comm_dp_forward = 0, comm_dp_backward = 0, comm_dp_after = 0;
  // Collective calls per step, for the latency term of the simulator (cp_collectives in the ring:
  // its sends and receives).
  uint64_t dp_collectives = 0, tp_collectives = 0, cp_collectives = 0, ep_collectives = 0;
  uint64_t pp_messages = 0;     // point-to-point sends and receives per step (comm_pp's)
  uint64_t tied_bytes = 0;      // comm_pp's tied-embedding all-reduce part (first and last stage)
  int stage = 0;                // the pipeline stage this plan is for
  int64_t num_parameters = 0;   // of the whole model
  int64_t rank_parameters = 0;  // this rank's tensor-parallel shard of its stage, before ZeRO
};

// The plan of pipeline stage in.stage (the whole model when in.pp is 1).
MemoryPlan plan_memory(const PlanInput& in);
// Every stage's plan, in stage order (one for pp 1); in.stage is ignored.
std::vector<MemoryPlan> plan_stages(const PlanInput& in);
// The stage whose device memory is the largest (the first such): what decides whether a layout
// fits, since every rank must.
size_t largest_stage(const std::vector<MemoryPlan>& stages);

}  // namespace zt
