#include "src/planner/step_model.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "src/model/param_layout.h"
#include "src/model/pipeline_split.h"
#include "src/pipeline/schedule.h"
#include "src/planner/event_sim.h"
#include "src/planner/max_model.h"
#include "src/planner/prefetch_model.h"
#include "src/zero/partition.h"

namespace zt {
namespace {

// The offloaded update runs behind the next forward (ZeroConfig::overlap_offloaded_step).
bool update_behind_forward(const PlanInput& in, const SimOptions& opt) {
  return in.optimizer_tier != StateTier::Device && in.zero_stage <= 2 && opt.overlap_offloaded_step;
}

struct Gemm {
  double m, n, k, count;  // `count` independent GEMMs of [m,k] x [k,n] (one batched launch)
};

// The share of a model's layers that are MoE (0 for a dense model).
double moe_share(const GptConfig& c) {
  return c.moe() ? static_cast<double>(c.moe_layers()) / c.num_layers : 0.0;
}

// The linear layers' GEMMs of one transformer layer's forward on one tensor-parallel rank:
// [N, in] x [in, out] as (m = N, n = out, k = in). For a mixture of experts the mean layer: its
// MLP GEMMs weighted by the share of dense and MoE layers, a MoE layer's being the router and
// each of the rank's E/ep experts on its rows at even routing (N·k of them over its experts:
// what it receives equals what it sends), and the shared expert.
std::vector<Gemm> layer_linear_gemms(const GptConfig& c, int micro_batch, int tp) {
  const double N = static_cast<double>(micro_batch) * c.local_seq(), h = c.hidden;
  // q of h rows and k, v of kv_hidden rows each (grouped-query attention: fewer); the MLP's
  // first product has 2f rows under SwiGLU (gate and up: with the second, 3 matrices).
  const double qkv = c.qkv_rows(), f = c.ffn_hidden(), f1 = c.fc_rows(), moe = moe_share(c);
  std::vector<Gemm> g{{N, qkv / tp, h, 1},       // qkv (column parallel)
                      {N, h, h / tp, 1},         // attention projection (row parallel)
                      {N, f1 / tp, h, 1 - moe},  // fc1 (column parallel; gate|up under SwiGLU)
                      {N, h, f / tp, 1 - moe}};  // fc2 (row parallel)
  if (moe == 0) return g;
  const double experts = c.local_experts(), rows = N * c.moe_topk / experts;
  g.push_back({N, static_cast<double>(c.num_experts), h, moe});  // the router
  g.push_back({rows, static_cast<double>(c.moe_fc_rows()) / tp, h, experts * moe});
  g.push_back({rows, h, static_cast<double>(c.moe_ffn_hidden()) / tp, experts * moe});
  if (c.moe_shared_ffn > 0) {
    g.push_back({N, static_cast<double>(c.moe_shared_fc_rows()) / tp, h, moe});
    g.push_back({N, h, static_cast<double>(c.moe_shared_ffn) / tp, moe});
  }
  return g;
}

// The attention's two batched products, for devices modelled as GEMMs (no measured table). A
// context rank attends whole sequences over 1/cp of its heads.
std::vector<Gemm> attention_gemms(const GptConfig& c, int micro_batch, int tp) {
  const double s = c.seq_length, hd = static_cast<double>(c.hidden) / c.heads;
  const double heads = static_cast<double>(c.heads) / tp / c.context_parallel;
  return {{s, s, hd, micro_batch * heads},   // q k^T
          {s, hd, s, micro_batch * heads}};  // p v
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
      : c_(c), dtype_(operands), act_bytes_(static_cast<double>(dtype_size(operands))) {
    peak_ = gemm_peak_tflops(c, operands) * 1e12;
    if (c.shared_compute) peak_ /= std::min(c.gpus_per_node, world);
    hbm_ = c.hbm_gbps * 1e9;
    if (c.shared_compute) hbm_ /= std::min(c.gpus_per_node, world);
  }
  double u(double x) const { return x / (x + c_.gemm_half_dim); }
  // A measured rate where the calibration has one for this pass, else a roofline with a
  // size-dependent ceiling plus one launch overhead.
  Cost gemm(const Gemm& g, std::string_view pass) const {
    const double flops = 2 * g.m * g.n * g.k * g.count;
    const double measured = table_gemm_ms(c_, dtype_, pass, g.m, g.n, g.k);
    if (measured >= 0) return {measured * g.count, flops, flops / peak_ * 1e3};
    const double eff = c_.gemm_efficiency * u(g.m) * u(g.n) * u(g.k);
    const double bytes = (g.m * g.k + g.k * g.n + g.m * g.n) * g.count * act_bytes_;
    const double s = std::max(flops / (peak_ * eff), bytes / hbm_) + c_.kernel_overhead_us * 1e-6;
    return {s * 1e3, flops, flops / peak_ * 1e3};
  }
  Cost forward(const Gemm& g) const { return gemm(g, "fwd"); }
  // The input gradient [m,n] x [n,k] and the weight gradient [k,m] x [m,n] of a forward GEMM:
  // the measured linear_backward of the forward's shape where calibrated.
  Cost backward(const Gemm& g) const {
    const double measured = table_gemm_ms(c_, dtype_, "linear_bwd", g.m, g.n, g.k);
    if (measured >= 0) {
      const double flops = 4 * g.m * g.n * g.k * g.count;
      // table_gemm_ms counts 2mnk at the measured rate, which counted 4mnk for both products.
      return {2 * measured * g.count, flops, flops / peak_ * 1e3};
    }
    Cost c = gemm({g.m, g.k, g.n, g.count}, "dgrad");
    c += gemm({g.k, g.n, g.m, g.count}, "wgrad");
    return c;
  }
  double memory_ms(double bytes) const { return bytes / hbm_ * 1e3; }
  double peak() const { return peak_; }
  DType dtype() const { return dtype_; }

 private:
  const ClusterSpec& c_;
  DType dtype_;
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
// is the device's bus bandwidth. Across nodes every group with members in a node leaves it
// (gpus_per_node / members-per-node of them) and they share the node's NICs; one group's rings
// use at most nics_per_collective of them.
double group_gbps(const ClusterSpec& c, int size, int stride, double* latency_us) {
  const int g = c.gpus_per_node;
  const double intra = c.intra_node_gbps * c.intra_node_efficiency;
  if (static_cast<int64_t>(size) * stride <= g) {
    *latency_us = c.intra_node_latency_us;
    return intra;
  }
  const double per_node = std::max(1, g / stride);  // members of one ring inside a node
  const double groups = g / per_node;               // groups leaving the node
  const double nics = std::max(1, c.nics_per_node);
  const double usable =
      c.nics_per_collective > 0 ? std::min<double>(nics, c.nics_per_collective) : nics;
  const double share = std::min(usable, nics / groups);  // NICs one group's rings get
  *latency_us = c.inter_node_latency_us;
  return std::min(intra, c.inter_node_gbps * c.inter_node_efficiency * share / nics);
}

// Collectives: the measured curve of the op and group size where the calibration has one, else
// the ring model over the group's bandwidth.
class CommModel {
 public:
  explicit CommModel(const ClusterSpec& c) : c_(c) {}
  // `calls` collectives of `op` moving `paper_bytes` in all (the paper's convention) over
  // `size` ranks `stride` apart, on tensors of `dtype` (a half curve where measured: the CPU
  // widens half reductions into fp32).
  double ms(std::string_view op, int size, int stride, double paper_bytes, double calls,
            DType dtype = DType::F32) const {
    if (size <= 1 || paper_bytes <= 0) return 0;
    calls = std::max(1.0, calls);
    const double per_call = paper_bytes / calls / (op == "all_reduce" ? 2 : 1);
    double t = -1;
    if (dtype != DType::F32)
      t = table_comm_ms(c_, std::string(op) + (dtype == DType::BF16 ? ":bf16" : ":fp16"), size,
                        per_call);
    if (t < 0) t = table_comm_ms(c_, op, size, per_call);
    if (t >= 0) return t * calls;
    double lat = 0;
    const double gbps = group_gbps(c_, size, stride, &lat);
    return ring_ms(paper_bytes, size, gbps, lat, calls, op == "all_reduce" ? 2 : 1);
  }
  // One point-to-point message of `bytes` between ranks `stride` apart.
  double p2p_ms(double bytes, int stride) const {
    const double t = table_comm_ms(c_, "p2p", 2, bytes);
    if (t >= 0) return t;
    double lat = 0;
    const double gbps = group_gbps(c_, 2, stride, &lat);
    return bytes / (gbps * 1e9) * 1e3 + lat * 1e-3;
  }
  // A host copy of `bytes` (Pa+cpu's checkpoints).
  double copy_ms(double bytes) const {
    const double t = table_comm_ms(c_, "memcpy", 1, bytes);
    if (t >= 0) return t;
    const double gbps = c_.memcpy_gbps > 0 ? c_.memcpy_gbps : c_.pcie_gbps;
    return gbps > 0 ? bytes / (gbps * 1e9) * 1e3 : 0;
  }

 private:
  const ClusterSpec& c_;
};

// One micro-batch's compute on one tp rank: a transformer layer's and the head's (with the
// loss), forward, recompute and backward, and their FLOPs.
struct UnitCompute {
  double layer_fwd = 0, layer_rec = 0, layer_bwd = 0, head_fwd = 0, head_bwd = 0;
  double layer_gemm_ms = 0, head_gemm_ms = 0, layer_gemm_flops = 0, head_gemm_flops = 0;
  double layer_gemm_ideal = 0, head_gemm_ideal = 0, layer_ew_fwd = 0, head_ew = 0;
  double layer_model_flops = 0, head_model_flops = 0;
  double layer_attn_fwd = 0, layer_attn_bwd = 0;  // attention's share of layer_fwd, layer_bwd
};

UnitCompute unit_compute(const PlanInput& in, const ClusterSpec& cl, const DeviceModel& dev) {
  const GptConfig& c = in.model;
  const double act_bytes = static_cast<double>(dtype_size(in.working));
  // A rank's tokens; attention over whole sequences of a context rank's 1/cp of the heads (the
  // same cost per token as at cp = 1).
  const double N = static_cast<double>(in.micro_batch) * c.local_seq(), h = c.hidden;
  const double s = c.seq_length, heads = static_cast<double>(c.heads) / in.tp / c.context_parallel;
  const double hd = h / c.heads;
  Cost fwd, bwd;
  for (const Gemm& g : layer_linear_gemms(c, in.micro_batch, in.tp)) {
    fwd += dev.forward(g);
    bwd += dev.backward(g);
  }
  // Attention: measured where the calibration has it (the backend's fused kernel), else its two
  // products as GEMMs plus the softmax's traffic below.
  double attn_fwd = table_attention_ms(cl, in.working, false, in.micro_batch, heads, s, hd);
  double attn_bwd = table_attention_ms(cl, in.working, true, in.micro_batch, heads, s, hd);
  const bool attention_measured = attn_fwd >= 0 && attn_bwd >= 0;
  Cost attn_f, attn_b;
  for (const Gemm& g : attention_gemms(c, in.micro_batch, in.tp)) {
    attn_f += dev.forward(g);
    attn_b += dev.backward(g);
  }
  if (attention_measured) {
    attn_f.ms = attn_fwd;
    attn_b.ms = attn_bwd;
  }
  fwd += attn_f;
  bwd += attn_b;
  UnitCompute u;
  u.layer_attn_fwd = attn_f.ms;
  u.layer_attn_bwd = attn_b.ms;
  // Memory-bound kernels of a layer's forward: two layernorms (read + write [N,h]), bias+GeLU
  // ([N,4h/tp]), two dropout+residual adds (2 reads + 1 write of [N,h]), the masked softmax with
  // dropout (read + write the scores, unless measured inside the attention); backward moves
  // about twice as much. The MLP's element-wise traffic scales with its width: 2 [N, f/tp] for
  // bias+GeLU, read 2f write f for SwiGLU. A calibration that measured the layer's elementwise
  // kernels per [N, h] element replaces the byte count.
  const double scores = attention_measured ? 0 : 2 * in.micro_batch * heads * s * s;
  // A MoE layer's experts see N·k rows of their width, and its dispatch and combine move them
  // (rows of h written and read by each).
  const double moe = moe_share(in.model), ew = c.swiglu ? 3 : 2;
  const double mlp_ew =
      ew * N / in.tp *
      ((1 - moe) * c.ffn_hidden() + moe * (c.moe_topk * c.moe_ffn_hidden() + c.moe_shared_ffn));
  const double moe_rows = moe * 4 * N * c.moe_topk * h;
  const double layer_bytes = act_bytes * (4 * N * h + mlp_ew + 6 * N * h + scores + moe_rows);
  const double ns_f = table_elementwise_ns(cl, in.working, "layer_fwd");
  const double ns_b = table_elementwise_ns(cl, in.working, "layer_bwd");
  const double ew_f = ns_f >= 0 ? ns_f * N * h * 1e-6 : dev.memory_ms(layer_bytes);
  const double ew_b = ns_b >= 0 ? ns_b * N * h * 1e-6 : dev.memory_ms(2 * layer_bytes);
  u.layer_fwd = fwd.ms + ew_f;
  u.layer_rec = in.checkpoint_activations ? u.layer_fwd : 0;
  u.layer_bwd = bwd.ms + ew_b;
  u.layer_ew_fwd = ew_f;
  u.layer_gemm_ms = fwd.ms + bwd.ms;
  u.layer_gemm_flops = fwd.flops + bwd.flops;
  u.layer_gemm_ideal = fwd.ideal_ms + bwd.ideal_ms;
  u.layer_model_flops = 3 * fwd.flops;
  // The head: its GEMM, and the logits (working precision) written by it, read and their
  // gradient written by the cross-entropy.
  const double V = static_cast<double>(c.padded_vocab_size) / in.tp;
  const Gemm head{N, V, h, 1};
  const Cost hf = dev.forward(head), hb = dev.backward(head);
  const double ns_ce = table_elementwise_ns(cl, in.working, "cross_entropy");
  const double logits_ms = ns_ce >= 0 ? ns_ce * N * V * 1e-6 : dev.memory_ms(3 * N * V * act_bytes);
  u.head_fwd = hf.ms + logits_ms / 3;
  u.head_bwd = hb.ms + 2 * logits_ms / 3;
  u.head_ew = logits_ms;
  u.head_gemm_ms = hf.ms + hb.ms;
  u.head_gemm_flops = hf.flops + hb.flops;
  u.head_gemm_ideal = hf.ideal_ms + hb.ideal_ms;
  u.head_model_flops = 3 * hf.flops;
  return u;
}

// Parameters (elements, one tp rank) of the units ZeRO gathers and reduces, in forward order,
// from the rank's layout: the embedding, each layer, and the blocks after the last layer (the
// final norm, an untied output layer) as one.
// Stages 1-2 gather whole partition units: the forward's first acquire waits for the update to
// pass the first unit, this share of it (stage 0 waits per span: none).
double first_unit_share(const PlanInput& in) {
  if (in.zero_stage == 0) return 0;
  const ParamLayout layout = ParamLayout::gpt(in.model, in.tp, 0);
  const Partition part(layout, in.dp, 0, in.reduce_bucket_elems);
  return static_cast<double>(part.units().front().real_len) /
         static_cast<double>(std::max<int64_t>(1, layout.numel()));
}

std::vector<int64_t> unit_elems(const PlanInput& in) {
  const auto layers = static_cast<size_t>(in.model.num_layers);
  const ParamLayout layout = ParamLayout::gpt(in.model, in.tp, 0);
  std::vector<int64_t> u;
  for (const BlockRange& b : layout.blocks()) {
    if (u.size() == layers + 2)
      u.back() += b.numel();
    else
      u.push_back(b.numel());
  }
  return u;
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
  const CommModel comm(cl);
  r.gemm_peak_tflops = dev.peak() / 1e12;
  const int a = in.accumulation;
  // Layers per stage: the split's (--decoder-first/last-pipeline-num-layers), evenly without.
  const PipelineSplit split{c.num_layers, in.pp, in.chunks, in.first_stage_layers,
                            in.last_stage_layers};
  auto layers_of = [&](size_t stage) { return stage_layer_count(split, static_cast<int>(stage)); };
  const int L = layers_of(0);  // without a pipeline: every layer
  const double e = static_cast<double>(dtype_size(in.working));
  const bool half = in.working != DType::F32;
  const UnitCompute uc = unit_compute(in, cl, dev);
  const bool sp = splits_sequence(c, in.tp);

  // Per stage: its compute per micro-batch, tensor-parallel time per micro-batch, the step's
  // data-parallel volumes and the optimizer.
  struct PerStage {
    double fwd = 0, rec = 0, bwd = 0, tp_mb = 0, optimizer_ms = 0;
    double gemm_ms = 0, gemm_flops = 0, gemm_ideal = 0, model_flops = 0, ew_ms = 0;
    bool first = false, last = false;
    OffloadTime tiers;
  };
  std::vector<PerStage> per(r.stages.size());
  for (size_t k = 0; k < per.size(); ++k) {
    const MemoryPlan& m = r.stages[k];
    PerStage& x = per[k];
    x.first = k == 0;
    x.last = static_cast<int>(k) == in.pp - 1;
    const double head = x.last ? 1 : 0;
    const int L = layers_of(k);
    x.fwd = L * uc.layer_fwd + head * uc.head_fwd;
    x.rec = L * uc.layer_rec;
    x.bwd = L * uc.layer_bwd + head * uc.head_bwd;
    x.gemm_ms = L * uc.layer_gemm_ms + head * uc.head_gemm_ms +
                (in.checkpoint_activations ? L * (uc.layer_fwd - uc.layer_ew_fwd) : 0);
    x.gemm_flops = L * uc.layer_gemm_flops + head * uc.head_gemm_flops +
                   (in.checkpoint_activations ? L * uc.layer_model_flops / 3 : 0);
    x.gemm_ideal = L * uc.layer_gemm_ideal + head * uc.head_gemm_ideal;
    x.model_flops = L * uc.layer_model_flops + head * uc.head_model_flops;
    x.ew_ms = x.fwd + x.rec + x.bwd - x.gemm_ms;
    // Tensor parallel on the critical path, as in Megatron (per micro-batch).
    x.tp_mb = comm.ms(sp ? "all_gather" : "all_reduce", in.tp, 1, static_cast<double>(m.comm_tp),
                      static_cast<double>(m.tp_collectives), in.working) /
              a;
    // The context group's all-to-alls too (ranks tp apart); the ring model takes the whole
    // tensor, (cp−1)/cp of which leaves a rank (the plan's count). Ring attention's hops instead
    // (context_ring.h): a key/value hop runs beside one step's blocks (1/cp of the layer's
    // attention) and costs what it takes longer; the key/value gradients' hops follow the blocks.
    if (in.cp > 1 && c.context_comm == ContextComm::Ring) {
      const double C = in.cp, N = static_cast<double>(in.micro_batch) * c.local_seq();
      const double kv = N * 2.0 * TpDims::of(c, in.tp, 0).kv_hidden;
      const double hop = comm.p2p_ms(kv * static_cast<double>(e), in.tp);
      const double exposed_fwd = (C - 1) * std::max(0.0, hop - uc.layer_attn_fwd / C);
      const double exposed_bwd =
          (C - 1) * std::max(0.0, hop - uc.layer_attn_bwd / C) + C * comm.p2p_ms(kv * 4.0, in.tp);
      x.tp_mb += L * ((in.checkpoint_activations ? 2 : 1) * exposed_fwd + exposed_bwd);
    } else if (in.cp > 1)
      x.tp_mb +=
          comm.ms("all_to_all", in.cp, in.tp, static_cast<double>(m.comm_cp) * in.cp / (in.cp - 1),
                  static_cast<double>(m.cp_collectives), in.working) /
          a;
    // Expert parallelism's all-to-alls (ranks tp apart, as the context group's): the dispatch
    // waits for them, so they are on the critical path.
    if (const int ep = c.expert_parallel; ep > 1)
      x.tp_mb += comm.ms("all_to_all", ep, in.tp, static_cast<double>(m.comm_ep) * ep / (ep - 1),
                         static_cast<double>(m.ep_collectives), in.working) /
                 a;
    // AdamW streams master, m, v (read and write), the gradient and the working copy.
    const double opt_elems = static_cast<double>(m.optimizer) / (half ? 12.0 : 8.0);
    const double ns_adam = table_elementwise_ns(cl, in.working, "adamw");
    x.optimizer_ms =
        ns_adam >= 0 ? ns_adam * opt_elems * 1e-6 : dev.memory_ms(opt_elems * (24 + 2 * e));
    if (in.optimizer_tier != StateTier::Device || in.param_tier != StateTier::Device) {
      x.tiers = offload_time(in, m, cl, ns_adam, std::min(cl.gpus_per_node, world));
      if (in.optimizer_tier != StateTier::Device) {
        x.optimizer_ms = x.tiers.update_ms();
        // Stages 0-2 stream the update behind the next forward, which waits only for the spans
        // (stages 1-2: the units, gathered as it reaches them) it needs; on the CPU the host
        // AdamW takes the forward's cores meanwhile.
        if (update_behind_forward(in, opt))
          x.optimizer_ms = std::max({x.optimizer_ms - x.fwd, in.cuda ? 0.0 : x.tiers.host_ms,
                                     x.optimizer_ms * first_unit_share(in)});
      }
      // The parameters' write-back at the step; their reads run behind the compute.
      x.optimizer_ms += x.tiers.param_write_ms +
                        std::max(0.0, x.tiers.param_read_ms - a * (x.fwd + x.rec + x.bwd));
    }
  }
  size_t slow = 0;
  auto stage_ms = [&](const PerStage& x) { return x.fwd + x.rec + x.bwd + x.tp_mb; };
  for (size_t k = 1; k < per.size(); ++k)
    if (stage_ms(per[k]) > stage_ms(per[slow])) slow = k;
  const PerStage& w = per[slow];
  r.forward_ms = a * w.fwd;
  r.recompute_ms = a * w.rec;
  r.backward_ms = a * w.bwd;
  r.tp_comm_ms = a * w.tp_mb;
  r.gemm_ms = a * w.gemm_ms;
  r.memory_bound_ms = a * w.ew_ms;
  double gemm_ideal = 0, gemm_all = 0, hardware = 0, model = 0;
  for (const PerStage& x : per) {
    gemm_ideal += a * x.gemm_ideal;
    gemm_all += a * x.gemm_ms;
    hardware += a * x.gemm_flops;
    model += a * x.model_flops;
  }
  r.gemm_efficiency = gemm_all > 0 ? std::min(1.0, gemm_ideal / gemm_all) : 0;
  r.hardware_flops = hardware / in.pp;
  r.model_flops = model / in.pp;
  for (const PerStage& x : per) r.optimizer_ms = std::max(r.optimizer_ms, x.optimizer_ms);
  r.tiers = per[static_cast<size_t>(r.largest_stage)].tiers;

  // The step as an event schedule. Communication streams share the compute's resource where
  // the cluster's collectives progress on its cores.
  sim::Schedule s;
  if (!cl.comm_overlaps_compute)
    for (const char* n : {"tp", "dp-gather", "dp-reduce", "host-copy", "p2p"})
      s.share(n, "compute");
  const std::string_view dp_reduce_op = in.zero_stage == 0 ? "all_reduce" : "reduce_scatter";
  double dp_total = 0, compute_total = 0, tp_total = 0;

  if (in.pp == 1) {
    const MemoryPlan& m = r.stages[0];
    const int C = s.resource("compute"), TP = s.resource("tp"), G = s.resource("dp-gather"),
              R = s.resource("dp-reduce"), H = s.resource("host-copy");
    const std::vector<int64_t> elems = unit_elems(in);
    const int U = static_cast<int>(elems.size());
    const bool z3 = in.zero_stage == 3 && in.dp > 1;
    // Units stage 3 gathers (the rest persist), and each unit's share of the gathers' bytes.
    std::vector<char> gathered(static_cast<size_t>(U), 0);
    int64_t gathered_elems = 0, all_elems = 0;
    for (int u = 0; u < U; ++u) {
      all_elems += elems[static_cast<size_t>(u)];
      if (z3 && elems[static_cast<size_t>(u)] > in.param_persistence_threshold) {
        gathered[static_cast<size_t>(u)] = 1;
        gathered_elems += elems[static_cast<size_t>(u)];
      }
    }
    const double fwd_gather_mb = static_cast<double>(m.comm_dp_forward) / a;
    const double reduce_total = static_cast<double>(m.comm_dp_backward) -
                                (z3 ? static_cast<double>(m.comm_dp_forward) : 0.0);
    auto gather_ms = [&](int u) {
      const double share = static_cast<double>(elems[static_cast<size_t>(u)]) /
                           static_cast<double>(std::max<int64_t>(1, gathered_elems));
      return comm.ms("all_gather", in.dp, in.tp, fwd_gather_mb * share, 1, in.working);
    };
    // The gradient reductions: stages 0-1 once per step (behind the last micro-batch's
    // backward with --overlap-comm), stages 2-3 every micro-batch; in buckets of the reduce
    // bucket size as backward produces the gradients (stage 0), or per unit (stages 1-3).
    const bool every_mb = in.zero_stage >= 2;
    const double reduce_per_round = reduce_total / (every_mb ? a : 1);
    const double calls_per_round = in.zero_stage == 0
                                       ? std::max<double>(1, static_cast<double>(m.dp_collectives))
                                       : static_cast<double>(U);
    const UnitCompute& k = uc;
    auto fwd_ms = [&](int u) { return u == 0 ? 0.0 : u <= L ? k.layer_fwd : k.head_fwd; };
    auto rec_ms = [&](int u) { return u >= 1 && u <= L ? k.layer_rec : 0.0; };
    auto bwd_ms = [&](int u) { return u == 0 ? 0.0 : u <= L ? k.layer_bwd : k.head_bwd; };
    const double tp_unit = L > 0 ? w.tp_mb / L : 0;
    const double layer_work = k.layer_fwd + k.layer_rec + k.layer_bwd;
    const double tp_f = layer_work > 0 ? tp_unit * k.layer_fwd / layer_work : 0;
    const double tp_b = tp_unit - tp_f;
    const std::vector<int> issue_f =
        zero3_gather_issue(elems, opt.prefetch_bucket_elems, opt.max_live_elems);
    std::vector<int64_t> rev(elems.rbegin(), elems.rend());
    const std::vector<int> issue_b =
        zero3_gather_issue(rev, opt.prefetch_bucket_elems, opt.max_live_elems);
    const double per_layer_host = L > 0 ? static_cast<double>(m.host_checkpoints) / L : 0;
    std::vector<int> reduce_tasks;
    int last = -1;                  // the last compute (or tp) task: the critical path so far
    std::vector<int> pending_sync;  // reductions the next micro-batch waits for (no overlap)
    for (int mb = 0; mb < a; ++mb) {
      // Forward.
      std::vector<int> starts(static_cast<size_t>(U), -1), gathers(static_cast<size_t>(U), -1);
      std::vector<int> copy_out(static_cast<size_t>(U), -1);
      auto start_dep = [&](std::vector<int>& v) {
        if (last >= 0) v.push_back(last);
      };
      std::vector<int> fwd_task(static_cast<size_t>(U), -1);
      for (int u = 0; u < U; ++u) {
        // Gathers issued at the start of unit issue_f[j] for every j it prefetches.
        for (int j = u; j < U; ++j) {
          if (issue_f[static_cast<size_t>(j)] != u || !gathered[static_cast<size_t>(j)]) continue;
          std::vector<int> d;
          start_dep(d);
          gathers[static_cast<size_t>(j)] = s.add(G, gather_ms(j), d);
          dp_total += gather_ms(j);
        }
        std::vector<int> d;
        start_dep(d);
        if (gathers[static_cast<size_t>(u)] >= 0) d.push_back(gathers[static_cast<size_t>(u)]);
        last = fwd_task[static_cast<size_t>(u)] = s.add(C, fwd_ms(u), d);
        compute_total += fwd_ms(u);
        if (u >= 1 && u <= L && tp_f > 0) {
          last = s.add(TP, tp_f, {last});
          tp_total += tp_f;
        }
        if (in.cpu_checkpointing && u >= 1 && u <= L)
          copy_out[static_cast<size_t>(u)] = s.add(H, comm.copy_ms(per_layer_host), {last});
      }
      // Backward, in reverse.
      std::fill(gathers.begin(), gathers.end(), -1);
      const bool reduce_now = every_mb || mb == a - 1;
      double round_bytes_left = reduce_per_round;
      int64_t since_reduce = 0;
      const int64_t per_call = std::max<int64_t>(
          1, static_cast<int64_t>(static_cast<double>(all_elems) / calls_per_round));
      std::vector<int> copy_in(static_cast<size_t>(U), -1);
      std::vector<double> held;  // reductions held until the backward ends (no overlap)
      for (int i = 0; i < U; ++i) {
        const int u = U - 1 - i;
        for (int jb = i; jb < U; ++jb) {
          const int j = U - 1 - jb;
          if (issue_b[static_cast<size_t>(jb)] != i || !gathered[static_cast<size_t>(j)]) continue;
          gathers[static_cast<size_t>(j)] = s.add(G, gather_ms(j), {last});
          dp_total += gather_ms(j);
        }
        // Pa+cpu: the checkpoint is copied back one layer ahead of its recompute.
        if (in.cpu_checkpointing) {
          for (int j : {u, u - 1})
            if (j >= 1 && j <= L && copy_in[static_cast<size_t>(j)] < 0)
              copy_in[static_cast<size_t>(j)] =
                  s.add(H, comm.copy_ms(per_layer_host), {copy_out[static_cast<size_t>(j)], last});
        }
        std::vector<int> d{last};
        if (gathers[static_cast<size_t>(u)] >= 0) d.push_back(gathers[static_cast<size_t>(u)]);
        if (copy_in[static_cast<size_t>(u)] >= 0) d.push_back(copy_in[static_cast<size_t>(u)]);
        const double work = rec_ms(u) + bwd_ms(u);
        last = s.add(C, work, d);
        compute_total += work;
        if (u >= 1 && u <= L && tp_b > 0) {
          last = s.add(TP, tp_b, {last});
          tp_total += tp_b;
        }
        if (reduce_now && in.dp > 1 && reduce_per_round > 0) {
          since_reduce += elems[static_cast<size_t>(u)];
          const bool final_unit = u == 0;
          if (since_reduce >= per_call || final_unit) {
            const double bytes =
                final_unit ? round_bytes_left
                           : std::min(round_bytes_left, reduce_per_round *
                                                            static_cast<double>(since_reduce) /
                                                            static_cast<double>(all_elems));
            round_bytes_left -= bytes;
            const double calls = std::max(
                1.0, std::round(static_cast<double>(since_reduce) / static_cast<double>(per_call)));
            const double t = comm.ms(dp_reduce_op, in.dp, in.tp, bytes, calls, in.grad_dtype());
            dp_total += t;
            // With --overlap-comm a bucket goes as soon as backward fills it; without, the
            // reductions start once the micro-batch's backward is done and the step waits.
            if (opt.overlap_comm)
              reduce_tasks.push_back(s.add(R, t, {last}));
            else
              held.push_back(t);
            since_reduce = 0;
          }
        }
      }
      for (double t : held) pending_sync.push_back(s.add(R, t, {last}));
      reduce_tasks.insert(reduce_tasks.end(), pending_sync.begin(), pending_sync.end());
      if (!pending_sync.empty()) {
        pending_sync.push_back(last);
        last = s.add(C, 0, pending_sync);
      }
      pending_sync.clear();
    }
    // The step's end: every reduction waited for, the optimizer, then the updated parameters'
    // all-gather (stages 1-2; stage 3's persistent ones).
    std::vector<int> d{last};
    d.insert(d.end(), reduce_tasks.begin(), reduce_tasks.end());
    last = s.add(C, r.optimizer_ms, d);
    const double after = comm.ms("all_gather", in.dp, in.tp, static_cast<double>(m.comm_dp_after),
                                 in.zero_stage == 3 ? 1.0 : static_cast<double>(U), in.working);
    if (after > 0) {
      // Behind the next forward where the update runs there: taken as this step's own forward.
      const bool behind = update_behind_forward(in, opt);
      s.add(G, after, behind ? std::vector<int>{} : std::vector<int>{last});
      dp_total += after;
    }
    if (in.cpu_checkpointing) r.offload_ms = 2 * a * L * comm.copy_ms(per_layer_host);
    const sim::Schedule::Result res = s.run();
    r.step_ms = res.makespan;
    r.dp_comm_ms = dp_total;
    r.compute_busy_ms = compute_total + r.optimizer_ms;
    r.comm_busy_ms = dp_total + tp_total;
    // Exposed: the time the step takes beyond its compute and its critical-path tp traffic.
    r.dp_exposed_ms = std::max(0.0, r.step_ms - r.compute_busy_ms - tp_total);
    r.dp_hidden_fraction = dp_total > 0 ? std::clamp(1 - r.dp_exposed_ms / dp_total, 0.0, 1.0) : 1;
  } else {
    // Every stage's schedule (1F1B or interleaved) against its data dependencies: a stage's
    // compute stream runs its steps in order; each hand-over is one [Nl, C] message on the
    // sender's p2p stream (stages are tp·dp ranks apart).
    const pipeline::ScheduleShape shape{in.pp, a, in.chunks};
    const double rows = sp ? static_cast<double>(in.micro_batch) * c.local_seq() / in.tp
                           : static_cast<double>(in.micro_batch) * c.local_seq();
    r.p2p_ms = comm.p2p_ms(rows * c.hidden * e, in.tp * in.dp);
    std::vector<double> f, b;
    for (const PerStage& x : per) {
      // The stage's compute per micro-batch, with its tp time split in proportion.
      const double work = std::max(1e-12, x.fwd + x.rec + x.bwd);
      f.push_back(x.fwd + x.tp_mb * x.fwd / work);
      b.push_back(x.rec + x.bwd + x.tp_mb * (x.rec + x.bwd) / work);
    }
    const sim::PipelineRun run =
        sim::pipeline_events(shape, f, b, r.p2p_ms, cl.comm_overlaps_compute);
    r.pipeline_ms = run.makespan;
    const double busy = run.busy;
    r.bubble_fraction = run.bubble_fraction;
    // Stages that share cores: a waiting stage's cores go to the busy ones, so the schedule
    // takes at least its mean busy time and its makespan shrinks by at most the speed-up.
    if (cl.shared_core_speedup > 1)
      r.pipeline_ms = std::max(busy / in.pp, r.pipeline_ms / cl.shared_core_speedup);
    // After the schedule (the trainer turns --overlap-comm off with a pipeline): the tied
    // embedding's all-reduce between the first and the last stage, the data-parallel
    // reduction, the optimizer.
    r.tied_ms = comm.ms("all_reduce", 2, (in.pp - 1) * in.tp * in.dp,
                        static_cast<double>(r.stages.front().tied_bytes), 1, in.working);
    for (const MemoryPlan& m : r.stages) {
      const double calls = std::max<double>(1, static_cast<double>(m.dp_collectives));
      const double t =
          comm.ms(dp_reduce_op, in.dp, in.tp, static_cast<double>(m.comm_dp_backward), calls) +
          comm.ms("all_gather", in.dp, in.tp, static_cast<double>(m.comm_dp_after), calls);
      r.dp_comm_ms = std::max(r.dp_comm_ms, t);
    }
    r.dp_exposed_ms = r.dp_comm_ms;
    if (in.cpu_checkpointing) {
      const int Lm = layers_of(static_cast<size_t>(r.largest_stage));
      r.offload_ms = 2 * a * Lm *
                     comm.copy_ms(static_cast<double>(r.memory.host_checkpoints) / std::max(1, Lm));
    }
    r.step_ms = r.pipeline_ms + r.tied_ms + r.optimizer_ms + r.dp_exposed_ms + r.offload_ms;
    r.compute_busy_ms = busy / in.pp;
    r.comm_busy_ms = r.dp_comm_ms + r.tp_comm_ms;
    r.dp_hidden_fraction = 0;
  }
  r.hardware_tflops_per_device = r.hardware_flops / (r.step_ms * 1e-3) / 1e12;
  r.model_tflops_per_device = r.model_flops / (r.step_ms * 1e-3) / 1e12;
  r.global_batch = static_cast<int64_t>(in.micro_batch) * in.accumulation * (in.dp / in.cp);
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
