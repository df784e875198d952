#include "src/zero/sharded_adam.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "src/zero/precision.h"

namespace zt {
namespace {

constexpr int64_t kHostChunk = model_state_defaults::kHostChunkElems;

// Σ over the world group of each rank's share of the squared gradient norm (exact, rank order).
double global_sum(comm::ScalarReducer* reducer, double local) {
  if (reducer == nullptr) return local;
  double v[1] = {local};
  reducer->sum(v);
  return v[0];
}

}  // namespace

void init_parameters_on(const DeviceContext& ctx, const ParamLayout& layout, uint64_t seed,
                        float* dst) {
  if (!ctx.needs_staging()) {
    init_parameters(layout, seed, dst);
    return;
  }
  // The same values, parameter by parameter through one host chunk (init is a pure function of
  // the element's index, so chunking changes nothing).
  Buffer chunk = ctx.host().allocate({kHostChunk}, DType::F32, MemCategory::Buffers);
  auto* h = static_cast<float*>(chunk.data());
  for (const auto& p : layout.params())
    for (int64_t i = 0; i < p.numel(); i += kHostChunk) {
      const int64_t len = std::min(kHostChunk, p.numel() - i);
      init_parameter_range(p, seed, i, len, h);
      ctx.backend().copy_to_device(dst + p.offset + i, h, static_cast<size_t>(len) * 4);
    }
}

size_t ShardedAdam::workspace_bytes() {
  return (kNormPartials + 1) * sizeof(double);
}

ShardedAdam::ShardedAdam(const ParamLayout& layout, Shard shard, const AdamConfig& adam,
                         const DeviceContext& ctx, float* master, const StateTierConfig& tier)
    : layout_(layout),
      shard_(std::move(shard)),
      adam_(adam),
      be_(ctx.backend()),
      staged_(ctx.needs_staging()),
      states_(make_optimizer_states(tier, shard_.numel, ctx, master)) {
  norm_ws_ = ctx.pool().allocate(workspace_bytes(), MemCategory::Buffers);
  if (states_->tier() != StateTier::Device) {
    // Each chunk's gradients come to the host through chunk-sized staging where the host cannot
    // reach the device's memory (its master parameters go to the store from the host).
    if (staged_) {
      host_norm_ws_ = ctx.host().allocate(workspace_bytes(), MemCategory::Buffers);
      const int64_t n = offload_stage_elems(tier.chunk_elems, shard_.numel);
      grad_stage_ = ctx.host().allocate({2 * n}, DType::F32, MemCategory::Buffers);
    }
    return;
  }
  float* m = states_->resident(OptimizerStates::kM);
  float* v = states_->resident(OptimizerStates::kV);
  for (const auto& seg : shard_.segments) {
    const ParamSpec& p = layout_.params()[static_cast<size_t>(seg.param)];
    const int64_t o = seg.shard_offset;
    adam_table_.push_back({this->master() + o, m + o, v + o, nullptr, seg.len,
                           p.weight_decay ? static_cast<float>(adam_.weight_decay) : 0.0f});
  }
}

ShardedAdam::~ShardedAdam() = default;

std::vector<Tensor> ShardedAdam::state() const {
  if (states_->tier() != StateTier::Device) return {};
  const int64_t n = shard_.numel;
  std::vector<Tensor> out;
  for (int k = 0; k < OptimizerStates::kStates; ++k)
    out.emplace_back(states_->resident(k), Shape{n}, DType::F32, be_.device());
  return out;
}

void ShardedAdam::set_from_layout_order(const float* master, const float* m, const float* v) {
  const float* src[3] = {master, m, v};
  for (int k = 0; k < OptimizerStates::kStates; ++k)
    for (const auto& s : shard_.segments)
      states_->write(k, s.shard_offset, s.len, src[k] + s.layout_offset);
}

size_t ShardedAdam::segment_buffer_bytes(const Shard& shard, DType grad_dtype) {
  int64_t longest = 0;
  for (const ShardSegment& s : shard.segments) longest = std::max(longest, s.len);
  return static_cast<size_t>(longest) * dtype_size(grad_dtype);
}

void ShardedAdam::read_grads_by_segment(MemoryPool& host, DType grad_dtype) {
  ZT_CHECK(staged_ && states_->tier() != StateTier::Device,
           "a gradient on the NVMe tier needs the optimizer offloaded from a device of its own");
  segment_ = host.allocate(segment_buffer_bytes(shard_, grad_dtype), MemCategory::NvmeBuffers);
}

int ShardedAdam::first_nonfinite_grad(const GradReducer& grads, DType grad_dtype) const {
  Backend& be = grads.grads_on_host() ? cpu_backend() : be_;
  for (const ShardSegment& s : shard_.segments) {
    const void* g = segment_.data();
    if (grads.grads_resident())
      g = grads.grad(s);
    else
      grads.read_grad(s.shard_offset, s.len, segment_.data());
    const bool bad =
        grad_dtype == DType::BF16  ? be.has_inf_or_nan(static_cast<const bf16*>(g), s.len)
        : grad_dtype == DType::F16 ? be.has_inf_or_nan(static_cast<const fp16*>(g), s.len)
                                   : be.has_inf_or_nan(static_cast<const float*>(g), s.len);
    if (bad) return s.param;
  }
  return -1;
}

bool ShardedAdam::master_finite() const {
  if (shard_.numel == 0) return true;
  if (states_->tier() == StateTier::Device) return !be_.has_inf_or_nan(master(), shard_.numel);
  bool finite = true;
  states_->stream(false, [&](const StateChunk& c) {
    finite = finite && !cpu_backend().has_inf_or_nan(c.state[OptimizerStates::kMaster], c.len);
  });
  return finite;
}

// fn(segment, lo, hi) for every segment of the shard overlapping chunk c, [lo, hi) in shard
// elements.
template <typename Fn>
void ShardedAdam::for_overlaps(const StateChunk& c, Fn&& fn) const {
  const int64_t end = c.offset + c.len;
  for (const ShardSegment& s : shard_.segments) {
    const int64_t lo = std::max(s.shard_offset, c.offset);
    const int64_t hi = std::min(s.shard_offset + s.len, end);
    if (lo < hi) fn(s, lo, hi);
  }
}

void ShardedAdam::visit_master(const MasterChunkFn& fn) {
  states_->stream(false, [&](const StateChunk& c) {
    fn(c.offset, c.len, c.state[OptimizerStates::kMaster],
       staged_ && states_->tier() != StateTier::Device);
  });
}

void ShardedAdam::init_master(uint64_t seed) {
  states_->stream(true, [&](const StateChunk& c) {
    for_overlaps(c, [&](const ShardSegment& s, int64_t lo, int64_t hi) {
      const ParamSpec& p = layout_.params()[static_cast<size_t>(s.param)];
      init_parameter_range(p, seed, s.layout_offset - p.offset + (lo - s.shard_offset), hi - lo,
                           c.state[OptimizerStates::kMaster] + (lo - c.offset));
    });
  });
}

// The AdamW of the device tier's one launch, on the host over each streamed chunk: the segments
// that overlap the chunk, with their gradients (brought to the host through the staging chunk
// where the host cannot read them); then the chunk's new master parameters to `updated`.
void ShardedAdam::adamw_offloaded(const GradReducer& grads, DType grad_dtype, const AdamWParams& p,
                                  const MasterChunkFn& updated) {
  const auto gsize = static_cast<int64_t>(dtype_size(grad_dtype));
  // The device tier's table is not used here: it holds each chunk's, rebuilt per chunk.
  std::vector<AdamWSegment>& table = adam_table_;
  // Device-resident gradients the host cannot read: each chunk's come to one half of grad_stage_
  // on the side stream while the chunk before is updated from the other half. Chunks are of one
  // length but the last, so the next one's range is known before the stream hands it over.
  const bool copied = staged_ && grads.grads_resident() && !grads.grads_on_host();
  const int64_t half_elems = static_cast<int64_t>(grad_stage_.bytes() / 8);
  int chunk_index = 0;
  StateChunk sent;  // the range on its way into half (chunk_index % 2)
  // A failure mid-stream leaves no copy running into the buffer.
  const SideCopyGuard done(copied ? &be_ : nullptr);
  const auto send = [&](int64_t offset, int64_t len, int into) {
    sent = StateChunk{offset, len};
    void* base = at(grad_stage_.data(), DType::F32, into * half_elems);
    for_overlaps(sent, [&](const ShardSegment& s, int64_t lo, int64_t hi) {
      be_.offload(at(base, grad_dtype, lo - offset),
                  at(grads.grad(s), grad_dtype, lo - s.shard_offset),
                  static_cast<size_t>((hi - lo) * gsize));
    });
  };
  states_->stream(true, [&](const StateChunk& c) {
    table.clear();
    void* stage = nullptr;
    if (copied) {
      const int into = chunk_index++ % 2;
      if (sent.offset != c.offset || sent.len != c.len) send(c.offset, c.len, into);
      be_.wait_copies();
      stage = at(grad_stage_.data(), DType::F32, into * half_elems);
      const int64_t next = c.offset + c.len;
      if (next < shard_.numel) send(next, std::min(c.len, shard_.numel - next), 1 - into);
    }
    // The segment's run [lo, hi) of this chunk, its gradient at g.
    const auto push = [&](const ShardSegment& s, int64_t lo, int64_t hi, const void* g) {
      const ParamSpec& spec = layout_.params()[static_cast<size_t>(s.param)];
      const int64_t o = lo - c.offset;
      table.push_back({c.state[OptimizerStates::kMaster] + o, c.state[OptimizerStates::kM] + o,
                       c.state[OptimizerStates::kV] + o, g, hi - lo,
                       spec.weight_decay ? static_cast<float>(adam_.weight_decay) : 0.0f});
    };
    for_overlaps(c, [&](const ShardSegment& s, int64_t lo, int64_t hi) {
      if (!grads.grads_resident()) {
        void* h = at(grad_stage_.data(), grad_dtype, lo - c.offset);
        grads.read_grad(lo, hi - lo, h);
        push(s, lo, hi, h);
        return;
      }
      const void* g = copied ? at(stage, grad_dtype, lo - c.offset)
                             : at(grads.grad(s), grad_dtype, lo - s.shard_offset);
      push(s, lo, hi, g);
    });
    cpu_backend().adamw_multi(table.data(), static_cast<int>(table.size()), p, grad_dtype);
    updated(c.offset, c.len, c.state[OptimizerStates::kMaster], staged_);
  });
}

StepResult ShardedAdam::step(const GradReducer& grads, DType working, double lr, double loss_scale,
                             int tp_rank, comm::ScalarReducer* norm,
                             const std::vector<char>& norm_excluded, const MasterChunkFn& updated,
                             const UpdateRunner& run) {
  const auto& params = layout_.params();
  norm_table_.clear();
  counted_.clear();
  const bool device = states_->tier() == StateTier::Device;
  const bool resident = grads.grads_resident();
  for (size_t k = 0; k < shard_.segments.size(); ++k) {
    const ShardSegment& s = shard_.segments[k];
    if (device) adam_table_[k].grad = grads.grad(s);
    // A tp-replicated parameter's gradient counts once in the global norm: on tp rank 0.
    const ParamSpec& p = params[static_cast<size_t>(s.param)];
    if ((p.tp_replicated && tp_rank != 0) || norm_excluded[static_cast<size_t>(s.param)] != 0)
      continue;
    if (resident)
      norm_table_.push_back({grads.grad(s), s.len});
    else
      counted_.push_back(static_cast<int>(k));
  }
  // This rank's share of the squared norm in a few launches, and the step's one read of it: the
  // skip decision and the clipping coefficient are made on the host. A gradient on the NVMe
  // tier: segment by segment through the host buffer, added in table order from 0, which is
  // the multi-tensor kernel's sum bit for bit (kernels/ops.inc).
  double local = 0;
  for (const int k : counted_) {
    const ShardSegment& s = shard_.segments[static_cast<size_t>(k)];
    grads.read_grad(s.shard_offset, s.len, segment_.data());
    const NormSegment one{segment_.data(), s.len};
    auto* ws = static_cast<double*>(host_norm_ws_.data());
    cpu_backend().sum_squares_multi(ws + kNormPartials, ws, &one, 1, working);
    local += ws[kNormPartials];
  }
  if (!norm_table_.empty()) {
    // Gradients in host memory: the same kernel on the host, into the host workspace.
    const bool host = grads.grads_on_host();
    Backend& be = host ? cpu_backend() : be_;
    auto* ws = static_cast<double*>((host ? host_norm_ws_ : norm_ws_).data());
    be.sum_squares_multi(ws + kNormPartials, ws, norm_table_.data(),
                         static_cast<int>(norm_table_.size()), working);
    be.copy_to_host(&local, ws + kNormPartials, sizeof(double));
  }
  local_sumsq_ = local;
  const double sumsq = global_sum(norm, local);
  StepResult r;
  const bool finite = std::isfinite(sumsq);
  r.grad_norm = finite ? std::sqrt(sumsq) / loss_scale : sumsq;
  r.skipped = !finite;
  if (r.skipped) return r;
  ++steps_;
  // torch.nn.utils.clip_grad_norm_'s rule, so runs compare with PyTorch's.
  double coef = 1.0;
  if (adam_.clip_grad > 0) coef = std::min(1.0, adam_.clip_grad / (r.grad_norm + 1e-6));
  AdamWParams p;
  p.lr = static_cast<float>(lr);
  p.beta1 = static_cast<float>(adam_.beta1);
  p.beta2 = static_cast<float>(adam_.beta2);
  p.eps = static_cast<float>(adam_.eps);
  p.grad_scale = static_cast<float>(coef / loss_scale);
  p.step = steps_;
  if (!device) {
    if (run)
      run([this, &grads, working, p, updated] { adamw_offloaded(grads, working, p, updated); });
    else
      adamw_offloaded(grads, working, p, updated);
    return r;
  }
  // Every segment in one launch, half gradients read as they are (widening is exact).
  be_.adamw_multi(adam_table_.data(), static_cast<int>(adam_table_.size()), p, working);
  updated(0, shard_.numel, master(), false);
  return r;
}

}  // namespace zt
