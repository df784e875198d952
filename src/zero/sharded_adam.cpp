#include "src/zero/sharded_adam.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace zt {
namespace {

constexpr int64_t kHostChunk = int64_t{1} << 20;  // host staging for initialisation: 4 MiB

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
                         const DeviceContext& ctx, float* master)
    : layout_(layout), shard_(std::move(shard)), adam_(adam), be_(ctx.backend()), master_(master) {
  MemoryPool& pool = ctx.pool();
  if (master_ == nullptr) {
    own_master_ = pool.allocate({shard_.numel}, DType::F32, MemCategory::Optimizer);
    master_ = static_cast<float*>(own_master_.data());
  }
  m_ = pool.allocate({shard_.numel}, DType::F32, MemCategory::Optimizer);
  v_ = pool.allocate({shard_.numel}, DType::F32, MemCategory::Optimizer);
  norm_ws_ = pool.allocate(workspace_bytes(), MemCategory::Buffers);
  for (const auto& seg : shard_.segments) {
    const ParamSpec& p = layout_.params()[static_cast<size_t>(seg.param)];
    const int64_t o = seg.shard_offset;
    adam_table_.push_back({master_ + o, static_cast<float*>(m_.data()) + o,
                           static_cast<float*>(v_.data()) + o, nullptr, seg.len,
                           p.weight_decay ? static_cast<float>(adam_.weight_decay) : 0.0f});
  }
}

std::vector<Tensor> ShardedAdam::state() const {
  const int64_t n = shard_.numel;
  return {Tensor(master_, {n}, DType::F32, be_.device()), m_.view({n}, DType::F32),
          v_.view({n}, DType::F32)};
}

void ShardedAdam::set_from_layout_order(const float* master, const float* m, const float* v) {
  float* dst[3] = {master_, static_cast<float*>(m_.data()), static_cast<float*>(v_.data())};
  const float* src[3] = {master, m, v};
  for (int k = 0; k < 3; ++k)
    for (const auto& s : shard_.segments)
      be_.copy_to_device(dst[k] + s.shard_offset, src[k] + s.layout_offset,
                         static_cast<size_t>(s.len) * 4);
}

int ShardedAdam::first_nonfinite_grad(const GradReducer& grads, DType grad_dtype) const {
  for (const ShardSegment& s : shard_.segments) {
    const void* g = grads.grad(s);
    const bool bad =
        grad_dtype == DType::BF16  ? be_.has_inf_or_nan(static_cast<const bf16*>(g), s.len)
        : grad_dtype == DType::F16 ? be_.has_inf_or_nan(static_cast<const fp16*>(g), s.len)
                                   : be_.has_inf_or_nan(static_cast<const float*>(g), s.len);
    if (bad) return s.param;
  }
  return -1;
}

bool ShardedAdam::master_finite() const {
  return shard_.numel == 0 || !be_.has_inf_or_nan(static_cast<const float*>(master_), shard_.numel);
}

StepResult ShardedAdam::step(const GradReducer& grads, DType working, double lr, double loss_scale,
                             bool counts_in_norm, int tp_rank, comm::ScalarReducer* norm,
                             const std::vector<char>& norm_excluded) {
  const auto& params = layout_.params();
  norm_table_.clear();
  for (size_t k = 0; k < shard_.segments.size(); ++k) {
    const ShardSegment& s = shard_.segments[k];
    adam_table_[k].grad = grads.grad(s);
    // A tp-replicated parameter's gradient counts once in the global norm: on tp rank 0.
    const ParamSpec& p = params[static_cast<size_t>(s.param)];
    if (counts_in_norm && (!p.tp_replicated || tp_rank == 0) &&
        norm_excluded[static_cast<size_t>(s.param)] == 0)
      norm_table_.push_back({grads.grad(s), s.len});
  }
  // This rank's share of the squared norm in a few launches, and the step's one read of it: the
  // skip decision and the clipping coefficient are made on the host.
  double local = 0;
  if (!norm_table_.empty()) {
    auto* ws = static_cast<double*>(norm_ws_.data());
    be_.sum_squares_multi(ws + kNormPartials, ws, norm_table_.data(),
                          static_cast<int>(norm_table_.size()), working);
    be_.copy_to_host(&local, ws + kNormPartials, sizeof(double));
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
  // Every segment in one launch, half gradients read as they are (widening is exact).
  be_.adamw_multi(adam_table_.data(), static_cast<int>(adam_table_.size()), p, working);
  return r;
}

}  // namespace zt
