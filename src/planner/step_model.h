#pragma once
// The step-time model behind `zerotron simulate`: compute from the model's GEMMs and memory-bound
// kernels (with recompute), communication from the plan's exact per-group volumes through an
// alpha-beta ring model, overlap as configured. It models what the trainer does: GEMM operands,
// activations, checkpoints and tensor-parallel traffic in the working precision, so a half run's
// GEMMs go at the device's half peak (tensor cores) and an fp32 run's at its fp32 (or TF32) peak.
// GEMM efficiency depends on the GEMM sizes (see ClusterSpec), so a bigger micro batch — which
// ZeRO's freed memory buys — runs closer to peak. With pipeline parallelism each stage is planned
// on its own, and the step is the schedule's makespan (pipeline::simulate: 1F1B or interleaved,
// with its bubble) at the slowest stage's time per micro-batch.
#include <cstdint>
#include <vector>

#include "src/planner/cluster.h"
#include "src/planner/memory_plan.h"
#include "src/planner/offload_model.h"

namespace zt {

struct SimOptions {
  bool overlap_comm = true;
  // ZeRO-3's gather policy (DeepSpeed's meaning; src/planner/prefetch_model.h).
  int64_t prefetch_bucket_elems = 50'000'000;
  int64_t max_live_elems = 1'000'000'000;
  // ZeRO 0 with the optimizer offloaded: its update runs behind the next forward.
  bool overlap_offloaded_step = true;
};

struct StepEstimate {
  double forward_ms = 0, backward_ms = 0, recompute_ms = 0, optimizer_ms = 0;
  double gemm_ms = 0, memory_bound_ms = 0;  // compute split by kind (summed over the step)
  double tp_comm_ms = 0, dp_comm_ms = 0, dp_exposed_ms = 0, offload_ms = 0;
  // The offload tiers' parts of the largest stage's step (optimizer_ms holds what is exposed).
  OffloadTime tiers;
  double step_ms = 0;
  // Pipeline (pp > 1): the schedule's makespan (forward, recompute, backward and tp comm of every
  // micro-batch, with the bubble), its bubble fraction (idle / (P · makespan)), one hand-over's
  // time and the tied embedding's all-reduce. forward/recompute/backward/tp above: the slowest
  // stage's, summed over the micro-batches.
  double pipeline_ms = 0, bubble_fraction = 0, p2p_ms = 0, tied_ms = 0;
  // The step's event schedule (src/planner/event_sim.h): busy time of the compute stream and of
  // the communication streams, and how much of the data-parallel communication ran while the
  // compute stream was busy (1 = fully hidden).
  double compute_busy_ms = 0, comm_busy_ms = 0, dp_hidden_fraction = 0;
  double hardware_flops = 0;  // per device per step, recompute included
  double model_flops = 0;     // per device per step, 3 x forward
  double hardware_tflops_per_device = 0, model_tflops_per_device = 0;
  double tokens_per_s = 0;      // whole job
  double gemm_efficiency = 0;   // achieved GEMM FLOP/s over peak, FLOP-weighted
  double gemm_peak_tflops = 0;  // per device (after shared_compute), for the working precision
  int64_t global_batch = 0;
  MemoryPlan memory;               // the largest stage's plan (the only one for pp 1)
  std::vector<MemoryPlan> stages;  // every stage's
  int largest_stage = 0;
  double device_bytes = 0;  // device memory needed: the plan's device_total()
  bool fits = true;
};

StepEstimate simulate_step(const PlanInput& in, const ClusterSpec& cluster,
                           const SimOptions& opt = {});
// The largest micro batch (1..max_micro_batch) whose plan fits the cluster's device memory;
// 0 when even 1 does not fit.
int max_micro_batch(PlanInput in, const ClusterSpec& cluster, const SimOptions& opt,
                    int limit = 1024);

}  // namespace zt
