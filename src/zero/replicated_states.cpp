#include "src/zero/replicated_states.h"

#include <algorithm>
#include <cmath>

#include "src/zero/precision.h"

namespace zt {
namespace {
constexpr int64_t kChunk = int64_t{1} << 20;  // optimizer staging: 4 MiB of fp32
}  // namespace

void init_parameters_on(const DeviceContext& ctx, const ParamLayout& layout, uint64_t seed,
                        float* dst) {
  if (!ctx.needs_staging()) {
    init_parameters(layout, seed, dst);
    return;
  }
  // The same values, parameter by parameter through one host chunk (init is a pure function of
  // the element's index, so chunking changes nothing).
  Buffer chunk = ctx.host().allocate({kChunk}, DType::F32, MemCategory::Buffers);
  auto* h = static_cast<float*>(chunk.data());
  for (const auto& p : layout.params())
    for (int64_t i = 0; i < p.numel(); i += kChunk) {
      const int64_t len = std::min(kChunk, p.numel() - i);
      init_parameter_range(p, seed, i, len, h);
      ctx.backend().copy_to_device(dst + p.offset + i, h, static_cast<size_t>(len) * 4);
    }
}

double global_sum(comm::ScalarReducer* reducer, double local) {
  if (reducer == nullptr) return local;
  double v[1] = {local};
  reducer->sum(v);
  return v[0];
}

AdamStep prepare_adam_step(const AdamConfig& adam, double sumsq, double lr, double loss_scale,
                           int64_t step) {
  AdamStep s;
  s.finite = std::isfinite(sumsq);
  s.grad_norm = s.finite ? std::sqrt(sumsq) / loss_scale : sumsq;
  // torch.nn.utils.clip_grad_norm_'s rule, so runs compare with PyTorch's.
  double coef = 1.0;
  if (s.finite && adam.clip_grad > 0) coef = std::min(1.0, adam.clip_grad / (s.grad_norm + 1e-6));
  s.params.lr = static_cast<float>(lr);
  s.params.beta1 = static_cast<float>(adam.beta1);
  s.params.beta2 = static_cast<float>(adam.beta2);
  s.params.eps = static_cast<float>(adam.eps);
  s.params.grad_scale = static_cast<float>(coef / loss_scale);
  s.params.step = step;
  return s;
}

ReplicatedStates::ReplicatedStates(const ParamLayout& layout, DType working, const AdamConfig& adam,
                                   const DeviceContext& ctx, uint64_t seed, const ZeroConfig& zero)
    : layout_(layout), working_(working), adam_(adam), zero_(zero), be_(ctx.backend()) {
  MemoryPool& pool = ctx.pool();
  const int64_t n = layout_.numel();
  params_ = pool.allocate({n}, working_, MemCategory::Params);
  grads_ = pool.allocate({n}, working_, MemCategory::Grads);
  m_ = pool.allocate({n}, DType::F32, MemCategory::Optimizer);
  v_ = pool.allocate({n}, DType::F32, MemCategory::Optimizer);
  if (half()) {
    master_ = pool.allocate({n}, DType::F32, MemCategory::Optimizer);
    staging_ = GradStaging(ctx, longest_chunk(layout_, zero.reduce_bucket_elems));
    chunk_ = pool.allocate({kChunk}, DType::F32, MemCategory::Buffers);
  }
  for (const auto& b : layout_.blocks()) pending_.push_back(b.numel());
  init_parameters_on(ctx, layout_, seed, master_params().f32());
  sync_working_from_master();
  if (zero.dp != nullptr && zero.dp->size() > 1 && half()) {
    const GradBuckets buckets(layout_, zero.reduce_bucket_elems);
    int64_t bucket = 0;
    for (const auto& k : buckets.buckets()) bucket = std::max(bucket, k.end - k.begin);
    zero.dp->reserve_staging(static_cast<size_t>(bucket), DpGradSync::kInFlight);
  }
  if (zero.dp != nullptr && zero.dp->size() > 1)
    sync_ = std::make_unique<DpGradSync>(*zero.dp, layout_, working_grads(),
                                         zero.reduce_bucket_elems, zero.overlap_comm);
  if (zero.world != nullptr && zero.world->size() > 1)
    norm_ = std::make_unique<comm::ScalarReducer>(*zero.world, ctx.host(), 1);
}

Tensor ReplicatedStates::master_params() const {
  return half() ? master_.view({layout_.numel()}, DType::F32)
                : params_.view({layout_.numel()}, DType::F32);
}

void ReplicatedStates::sync_working_from_master() {
  if (half()) from_f32(be_, params_.data(), working_, master_params().f32(), layout_.numel());
}

void ReplicatedStates::gather_master(float* full) {
  be_.copy_to_host(full, master_params().f32(), static_cast<size_t>(layout_.numel()) * 4);
}

void ReplicatedStates::set_master(const float* full) {
  be_.copy_to_device(master_params().f32(), full, static_cast<size_t>(layout_.numel()) * 4);
  sync_working_from_master();
}

std::vector<Tensor> ReplicatedStates::owned_state() {
  const int64_t n = layout_.numel();
  return {master_params(), m_.view({n}, DType::F32), v_.view({n}, DType::F32)};
}

void ReplicatedStates::set_state_from_layout_order(const float* master, const float* m,
                                                   const float* v) {
  const auto bytes = static_cast<size_t>(layout_.numel()) * 4;
  be_.copy_to_device(master_params().f32(), master, bytes);
  be_.copy_to_device(m_.data(), m, bytes);
  be_.copy_to_device(v_.data(), v, bytes);
}

void ReplicatedStates::after_load(int64_t adam_step) {
  sync_working_from_master();
  adam_step_ = adam_step;
}

void ReplicatedStates::begin_microbatch(bool last) {
  if (sync_) sync_->begin_backward(last);
}

GradSyncTiming ReplicatedStates::grad_sync_timing() const {
  return sync_ ? sync_->timing() : GradSyncTiming{};
}

CRef ReplicatedStates::acquire(const Span& s) {
  return {at(params_.data(), working_, begin(s)), working_};
}

void ReplicatedStates::release(const Span&) {}

float* ReplicatedStates::open_grads(const Span& s) {
  if (!half()) return static_cast<float*>(grads_.data()) + begin(s);
  return staging_.open(s);
}

void ReplicatedStates::close_grads(const Span& s) {
  if (half()) {
    accumulate_f32(be_, at(grads_.data(), working_, begin(s)), working_, staging_.find(s), s.len);
    staging_.close(s);
  }
  int64_t& left = pending_[static_cast<size_t>(s.block)];
  left -= s.len;
  ZT_CHECK(left >= 0, "block {}: gradient elements closed twice", s.block);
  if (left > 0) return;
  left = layout_.blocks()[static_cast<size_t>(s.block)].numel();
  if (sync_) sync_->block_done(s.block);
}

void ReplicatedStates::zero_grad() {
  be_.fill_zero(grads_.data(), grads_.bytes());
}

StepResult ReplicatedStates::step(double lr, double loss_scale) {
  if (sync_) sync_->finish();
  // After the all-reduce every data-parallel replica holds the same gradient: dp rank 0 speaks
  // for its replica; parameters replicated over tp speak on tp rank 0 only.
  double local = 0;
  const bool speaks = zero_.dp == nullptr || zero_.dp->rank() == 0;
  if (speaks)
    for (const auto& p : layout_.params())
      if (!p.tp_replicated || zero_.tp_rank == 0)
        local += sum_squares(be_, at(grads_.data(), working_, p.offset), working_, p.numel());
  const AdamStep a =
      prepare_adam_step(adam_, global_sum(norm_.get(), local), lr, loss_scale, adam_step_ + 1);
  StepResult r{a.grad_norm, !a.finite};
  if (r.skipped) return r;
  ++adam_step_;
  cpu::AdamWParams p = a.params;
  float* master = master_params().f32();
  float* m = m_.view({layout_.numel()}, DType::F32).f32();
  float* v = v_.view({layout_.numel()}, DType::F32).f32();
  for (const auto& spec : layout_.params()) {
    p.weight_decay = spec.weight_decay ? static_cast<float>(adam_.weight_decay) : 0.0f;
    if (!half()) {
      const float* g = static_cast<const float*>(grads_.data()) + spec.offset;
      be_.adamw(master + spec.offset, m + spec.offset, v + spec.offset, g, spec.numel(), p);
      continue;
    }
    auto* g32 = static_cast<float*>(chunk_.data());
    for (int64_t i = spec.offset; i < spec.offset + spec.numel(); i += kChunk) {
      const int64_t len = std::min(kChunk, spec.offset + spec.numel() - i);
      to_f32(be_, g32, at(grads_.data(), working_, i), working_, len);
      be_.adamw(master + i, m + i, v + i, g32, len, p);
      from_f32(be_, at(params_.data(), working_, i), working_, master + i, len);
    }
  }
  return r;
}

}  // namespace zt
