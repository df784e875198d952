#include "src/planner/step_model.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "src/pipeline/schedule.h"
#include "src/planner/max_model.h"

namespace zt {
namespace {

struct Gemm {
  double m, n, k, count;  // `count` independent GEMMs of [m,k] x [k,n] (one batched launch)
};

// The GEMMs of one transformer layer's forward on one tensor-parallel rank.
std::vector<Gemm> layer_gemms(const GptConfig& c, int micro_batch, int tp) {
  const double N = static_cast<double>(micro_batch) * c.seq_length, h = c.hidden;
  const double s = c.seq_length, hd = h / c.heads, heads = static_cast<double>(c.heads) / tp;
  // q of h rows and k, v of kv_hidden rows each (grouped-query attention: fewer); the MLP's
  // first product has 2f rows under SwiGLU (gate and up: with the second, 3 matrices).
  const double qkv = c.qkv_rows(), f = c.ffn_hidden(), f1 = c.fc_rows();
  return {{N, qkv / tp, h, 1},              // qkv (column parallel)
          {s, s, hd, micro_batch * heads},  // q k^T
          {s, hd, s, micro_batch * heads},  // p v
          {N, h, h / tp, 1},                // attention projection (row parallel)
          {N, f1 / tp, h, 1},               // fc1 (column parallel; gate|up under SwiGLU)
          {N, h, f / tp, 1}};               // fc2 (row parallel)
}

struct Cost {
  double ms = 0, flops = 0, ideal_ms = 0;
  Cost& operator+=(const Cost& o) {
    ms += o.ms;
    flops += o.flops;
    ideal_ms += o.ideal_ms;
    return *this;
  }
};

class DeviceModel {
 public:
  // GEMMs of `operands` (the working precision: weights and activations share it).
  DeviceModel(const ClusterSpec& c, int world, DType operands)
      : c_(c), act_bytes_(static_cast<double>(dtype_size(operands))) {
    peak_ = gemm_peak_tflops(c, operands) * 1e12;
    if (c.shared_compute) peak_ /= std::min(c.gpus_per_node, world);
    hbm_ = c.hbm_gbps * 1e9;
    if (c.shared_compute) hbm_ /= std::min(c.gpus_per_node, world);
  }
  double u(double x) const { return x / (x + c_.gemm_half_dim); }
  // Roofline with a size-dependent ceiling, plus one launch overhead.
  Cost gemm(const Gemm& g) const {
    const double flops = 2 * g.m * g.n * g.k * g.count;
    const double eff = c_.gemm_efficiency * u(g.m) * u(g.n) * u(g.k);
    const double bytes = (g.m * g.k + g.k * g.n + g.m * g.n) * g.count * act_bytes_;
    const double s = std::max(flops / (peak_ * eff), bytes / hbm_) + c_.kernel_overhead_us * 1e-6;
    return {s * 1e3, flops, flops / peak_ * 1e3};
  }
  // Forward GEMM and its two backward GEMMs (input gradient, weight gradient).
  Cost backward(const Gemm& g) const {
    Cost c = gemm({g.m, g.k, g.n, g.count});
    c += gemm({g.k, g.n, g.m, g.count});
    return c;
  }
  double memory_ms(double bytes) const { return bytes / hbm_ * 1e3; }
  double peak() const { return peak_; }

 private:
  const ClusterSpec& c_;
  double act_bytes_, peak_ = 0, hbm_ = 0;
};

// Ring collectives over `p` ranks: `bytes` in the paper's convention (an all-reduce of n counts
// 2n), which a ring moves as (p-1)/p of it per rank; `steps` latency hops per call.
double ring_ms(double bytes, double p, double gbps, double latency_us, double calls,
               double steps_per_call) {
  if (p <= 1 || bytes <= 0) return 0;
  return ((p - 1) / p * bytes / (gbps * 1e9) +
          calls * steps_per_call * (p - 1) * latency_us * 1e-6) *
         1e3;
}

// Per-ring bandwidth of a group whose members are `stride` apart in rank order: inside a node it
// is the device's bus bandwidth; across nodes the node's NICs are shared by every ring that
// leaves the node (gpus_per_node / members-per-node of them).
double group_gbps(const ClusterSpec& c, int size, int stride, double* latency_us) {
  const int g = c.gpus_per_node;
  if (static_cast<int64_t>(size) * stride <= g) {
    *latency_us = c.intra_node_latency_us;
    return c.intra_node_gbps;
  }
  const double per_node = std::max(1, g / stride);  // members of one ring inside a node
  *latency_us = c.inter_node_latency_us;
  return std::min(c.intra_node_gbps, c.inter_node_gbps * per_node / g);
}

}  // namespace

namespace {

// The compute of one micro-batch on one stage holding `layers` layers (and the head when
// `head`), one tp rank.
struct StageCompute {
  double fwd = 0, rec = 0, bwd = 0;  // ms
  double gemm_ms = 0, memory_bound_ms = 0, gemm_flops = 0, gemm_ideal_ms = 0, model_flops = 0;
};

StageCompute stage_compute(const PlanInput& in, const DeviceModel& dev, double L, bool has_head) {
  const GptConfig& c = in.model;
  const double act_bytes = static_cast<double>(dtype_size(in.working));
  const double N = static_cast<double>(in.micro_batch) * c.seq_length, h = c.hidden;
  const double s = c.seq_length, heads = static_cast<double>(c.heads) / in.tp;
  Cost layer_fwd, layer_bwd;
  for (const Gemm& g : layer_gemms(c, in.micro_batch, in.tp)) {
    layer_fwd += dev.gemm(g);
    layer_bwd += dev.backward(g);
  }
  const Gemm head{N, static_cast<double>(c.padded_vocab_size) / in.tp, h, 1};
  Cost head_fwd, head_bwd;
  if (has_head) {
    head_fwd = dev.gemm(head);
    head_bwd = dev.backward(head);
  }
  // Memory-bound kernels of a layer's forward: two layernorms (read + write [N,h]), bias+GeLU
  // ([N,4h/tp]), two dropout+residual adds (2 reads + 1 write of [N,h]), the masked softmax with
  // dropout (read + write the scores); backward moves about twice as much.
  // (The MLP's element-wise traffic scales with its width: 2 [N, f/tp] for bias+GeLU, read 2f
  // write f for SwiGLU.)
  const double f = c.ffn_hidden(), mlp_ew = c.swiglu ? 3 * N * f / in.tp : 2 * N * f / in.tp;
  const double layer_bytes =
      act_bytes * (4 * N * h + mlp_ew + 6 * N * h + 2 * in.micro_batch * heads * s * s);
  // The logits are in the working precision too; cross-entropy reads them once, writes their
  // gradient once, and the head's output writes them once.
  const double logits_bytes =
      has_head ? 3 * N * static_cast<double>(c.padded_vocab_size) / in.tp * act_bytes : 0;
  const double ew_fwd = dev.memory_ms(L * layer_bytes + logits_bytes / 3);
  const double ew_bwd = dev.memory_ms(2 * L * layer_bytes + 2 * logits_bytes / 3);
  const bool ckpt = in.checkpoint_activations;
  StageCompute r;
  r.fwd = L * layer_fwd.ms + head_fwd.ms + ew_fwd;
  r.rec = ckpt ? L * layer_fwd.ms + dev.memory_ms(L * layer_bytes) : 0;
  r.bwd = L * layer_bwd.ms + head_bwd.ms + ew_bwd;
  r.gemm_flops = L * (layer_fwd.flops + layer_bwd.flops) + head_fwd.flops + head_bwd.flops +
                 (ckpt ? L * layer_fwd.flops : 0);
  r.gemm_ideal_ms = L * (layer_fwd.ideal_ms + layer_bwd.ideal_ms) + head_fwd.ideal_ms +
                    head_bwd.ideal_ms + (ckpt ? L * layer_fwd.ideal_ms : 0);
  r.gemm_ms =
      L * (layer_fwd.ms + layer_bwd.ms) + head_fwd.ms + head_bwd.ms + (ckpt ? L * layer_fwd.ms : 0);
  r.memory_bound_ms = ew_fwd + ew_bwd + (ckpt ? dev.memory_ms(L * layer_bytes) : 0);
  r.model_flops = 3 * (L * layer_fwd.flops + head_fwd.flops);
  return r;
}

}  // namespace

StepEstimate simulate_step(const PlanInput& in, const ClusterSpec& cl, const SimOptions& opt) {
  StepEstimate r;
  r.stages = plan_stages(in);
  r.largest_stage = static_cast<int>(largest_stage(r.stages));
  r.memory = r.stages[static_cast<size_t>(r.largest_stage)];
  const GptConfig& c = in.model;
  const int world = in.tp * in.dp * in.pp;
  const DeviceModel dev(cl, world, in.working);
  r.gemm_peak_tflops = dev.peak() / 1e12;
  const double a = in.accumulation;
  const double stage_layers = static_cast<double>(c.num_layers / in.pp);
  double lat = 0;
  const double tp_gbps = group_gbps(cl, in.tp, 1, &lat);
  const double tp_lat = lat;
  const double dp_gbps = group_gbps(cl, in.dp, in.tp, &lat);
  const double dp_lat = lat;
  const double dp_steps = in.zero_stage == 0 ? 2 : 1;
  // Per stage: one micro-batch's compute and tensor-parallel time, the step's data-parallel
  // time, the optimizer. Without a pipeline the one stage is the whole model.
  struct PerStage {
    StageCompute compute;
    double tp_ms = 0, dp_f = 0, dp_b = 0, dp_a = 0, optimizer_ms = 0;
  };
  std::vector<PerStage> per(r.stages.size());
  const double e = static_cast<double>(dtype_size(in.working));
  const bool half = in.working != DType::F32;
  for (size_t k = 0; k < per.size(); ++k) {
    const MemoryPlan& m = r.stages[k];
    PerStage& x = per[k];
    x.compute = stage_compute(in, dev, stage_layers, static_cast<int>(k) == in.pp - 1);
    // Tensor parallel on the critical path, as in Megatron.
    x.tp_ms = ring_ms(static_cast<double>(m.comm_tp), in.tp, tp_gbps, tp_lat,
                      static_cast<double>(m.tp_collectives), 2);
    const double calls = static_cast<double>(m.dp_collectives);
    const double total = static_cast<double>(m.comm_dp);
    auto dp_ms = [&](uint64_t bytes) {
      return total > 0 ? ring_ms(static_cast<double>(bytes), in.dp, dp_gbps, dp_lat,
                                 calls * static_cast<double>(bytes) / total, dp_steps)
                       : 0.0;
    };
    x.dp_f = dp_ms(m.comm_dp_forward);
    x.dp_b = dp_ms(m.comm_dp_backward);
    x.dp_a = dp_ms(m.comm_dp_after);
    // AdamW streams master, m, v (read and write), the gradient and the working copy.
    const double opt_elems = static_cast<double>(m.optimizer) / (half ? 12.0 : 8.0);
    x.optimizer_ms = dev.memory_ms(opt_elems * (24 + 2 * e));
  }
  // The slowest stage sets the pipeline's pace (all stages but the last hold the same layers;
  // the last adds the head and the loss).
  size_t slow = 0;
  auto stage_ms = [&](const PerStage& x) {
    return x.compute.fwd + x.compute.rec + x.compute.bwd + x.tp_ms / a;
  };
  for (size_t k = 1; k < per.size(); ++k)
    if (stage_ms(per[k]) > stage_ms(per[slow])) slow = k;
  const PerStage& w = per[slow];
  r.forward_ms = a * w.compute.fwd;
  r.recompute_ms = a * w.compute.rec;
  r.backward_ms = a * w.compute.bwd;
  r.tp_comm_ms = w.tp_ms;
  double gemm_ideal = 0, hardware = 0, model = 0;
  for (const PerStage& x : per) {
    gemm_ideal += a * x.compute.gemm_ideal_ms;
    hardware += a * x.compute.gemm_flops;
    model += a * x.compute.model_flops;
  }
  // Per device: the mean over the stages (every stage has tp·dp devices).
  const double P = in.pp;
  r.gemm_ms = a * w.compute.gemm_ms;
  r.memory_bound_ms = a * w.compute.memory_bound_ms;
  double gemm_all = 0;
  for (const PerStage& x : per) gemm_all += a * x.compute.gemm_ms;
  r.gemm_efficiency = gemm_all > 0 ? gemm_ideal / gemm_all : 0;
  r.hardware_flops = hardware / P;
  r.model_flops = model / P;
  r.optimizer_ms = 0;
  r.dp_comm_ms = 0;
  for (const PerStage& x : per) {
    r.optimizer_ms = std::max(r.optimizer_ms, x.optimizer_ms);
    r.dp_comm_ms = std::max(r.dp_comm_ms, x.dp_f + x.dp_b + x.dp_a);
  }
  if (in.cpu_checkpointing && cl.pcie_gbps > 0)
    r.offload_ms =
        2 * static_cast<double>(r.memory.host_checkpoints) * a / (cl.pcie_gbps * 1e9) * 1e3;

  if (in.pp == 1) {
    // Data parallel behind forward/backward where the stage allows and overlap is on.
    if (opt.overlap_comm) {
      // Stages 0-1 reduce during the last micro-batch's backward only; stages 2-3 during each.
      const double bwd = w.compute.bwd, rec = w.compute.rec;
      const double bwd_window = in.zero_stage <= 1 ? bwd + rec : a * (bwd + rec);
      r.dp_exposed_ms =
          std::max(0.0, w.dp_f - r.forward_ms) + std::max(0.0, w.dp_b - bwd_window) + w.dp_a;
    } else {
      r.dp_exposed_ms = r.dp_comm_ms;
    }
    r.step_ms = r.forward_ms + r.recompute_ms + r.backward_ms + r.optimizer_ms + r.tp_comm_ms +
                r.dp_exposed_ms + r.offload_ms;
  } else {
    // The schedule against its data dependencies (pipeline::simulate) with each stage's time
    // per micro-batch: its compute plus its tensor-parallel time, split between forward and
    // backward in proportion to the compute; each hand-over one [Nl, C] message over the
    // pipeline group (stages are tp·dp ranks apart). The data-parallel reduction waits for the
    // schedule (the trainer turns overlap off with a pipeline), after the tied embedding's
    // all-reduce between the first and the last stage.
    pipeline::Timing t;
    for (const PerStage& x : per) {
      const double tp_mb = x.tp_ms / a;
      const double work = x.compute.fwd + x.compute.rec + x.compute.bwd;
      t.stage_forward.push_back(x.compute.fwd + (work > 0 ? tp_mb * x.compute.fwd / work : 0));
      t.stage_backward.push_back(x.compute.rec + x.compute.bwd +
                                 (work > 0 ? tp_mb * (x.compute.rec + x.compute.bwd) / work : 0));
    }
    const double pp_gbps = group_gbps(cl, in.pp, in.tp * in.dp, &lat);
    const double rows = splits_sequence(c, in.tp) ? in.micro_batch * c.seq_length / in.tp
                                                  : in.micro_batch * c.seq_length;
    r.p2p_ms = rows * c.hidden * e / (pp_gbps * 1e9) * 1e3 + lat * 1e-3;
    t.transfer = r.p2p_ms;
    const pipeline::SimResult sim = pipeline::simulate({in.pp, in.accumulation, in.chunks}, t);
    r.pipeline_ms = sim.makespan;
    r.bubble_fraction = sim.bubble_fraction();
    double tied_lat = 0;
    const double tied_gbps = group_gbps(cl, 2, (in.pp - 1) * in.tp * in.dp, &tied_lat);
    r.tied_ms =
        ring_ms(static_cast<double>(r.stages.front().tied_bytes), 2, tied_gbps, tied_lat, 1, 2);
    r.dp_exposed_ms = r.dp_comm_ms;
    r.step_ms = r.pipeline_ms + r.tied_ms + r.optimizer_ms + r.dp_exposed_ms + r.offload_ms;
  }
  r.hardware_tflops_per_device = r.hardware_flops / (r.step_ms * 1e-3) / 1e12;
  r.model_tflops_per_device = r.model_flops / (r.step_ms * 1e-3) / 1e12;
  r.global_batch = static_cast<int64_t>(in.micro_batch) * in.accumulation * in.dp;
  r.tokens_per_s = static_cast<double>(r.global_batch) * c.seq_length / (r.step_ms * 1e-3);
  r.device_bytes = static_cast<double>(r.memory.device_total());
  r.fits = cl.hbm_bytes <= 0 || plan_fits(r.memory, cl.hbm_bytes, FitCriterion::Device);
  return r;
}

int max_micro_batch(PlanInput in, const ClusterSpec& cluster, const SimOptions& opt, int limit) {
  int best = 0;
  for (int b = 1; b <= limit; ++b) {
    in.micro_batch = b;
    if (!simulate_step(in, cluster, opt).fits) break;
    best = b;
  }
  return best;
}

}  // namespace zt
