#include "src/zero/zero_optimizer.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/cpu/ops.h"

namespace zt {
namespace {

constexpr int64_t kChunk = int64_t{1} << 20;  // optimizer staging: 4 MiB of fp32

void cast_to_f32(float* dst, const void* src, DType t, int64_t n) {
  if (t == DType::BF16)
    cpu::cast(dst, static_cast<const bf16*>(src), n);
  else if (t == DType::F16)
    cpu::cast(dst, static_cast<const fp16*>(src), n);
  else
    std::memcpy(dst, src, static_cast<size_t>(n) * 4);
}

void cast_from_f32(void* dst, DType t, const float* src, int64_t n) {
  if (t == DType::BF16)
    cpu::cast(static_cast<bf16*>(dst), src, n);
  else if (t == DType::F16)
    cpu::cast(static_cast<fp16*>(dst), src, n);
  else
    std::memcpy(dst, src, static_cast<size_t>(n) * 4);
}

double sum_squares(const void* x, DType t, int64_t n) {
  if (t == DType::BF16) return cpu::sum_squares(static_cast<const bf16*>(x), n);
  if (t == DType::F16) return cpu::sum_squares(static_cast<const fp16*>(x), n);
  return cpu::sum_squares(static_cast<const float*>(x), n);
}

}  // namespace

ZeroOptimizer::ZeroOptimizer(const ParamLayout& layout, DType working, const AdamConfig& adam,
                             MemoryPool& pool, uint64_t seed, const DataParallelConfig& dp)
    : layout_(layout), working_(working), adam_(adam) {
  const int64_t n = layout_.numel();
  params_ = pool.allocate({n}, working_, MemCategory::Params);
  grads_ = pool.allocate({n}, working_, MemCategory::Grads);
  m_ = pool.allocate({n}, DType::F32, MemCategory::Optimizer);
  v_ = pool.allocate({n}, DType::F32, MemCategory::Optimizer);
  if (half()) {
    master_ = pool.allocate({n}, DType::F32, MemCategory::Optimizer);
    const int64_t slot = max_block_numel();
    param_slot_.buffer = pool.allocate({slot}, DType::F32, MemCategory::Buffers);
    for (auto& s : grad_slots_) s.buffer = pool.allocate({slot}, DType::F32, MemCategory::Buffers);
    chunk_ = pool.allocate({kChunk}, DType::F32, MemCategory::Buffers);
  }
  init_parameters(layout_, seed, master_params().f32());
  sync_working_from_master();
  if (dp.group != nullptr && dp.group->size() > 1)
    sync_ = std::make_unique<DpGradSync>(*dp.group, layout_, working_grads(),
                                         dp.reduce_bucket_elems, dp.overlap_comm);
}

ZeroOptimizer::~ZeroOptimizer() = default;

void ZeroOptimizer::begin_microbatch(bool last) {
  if (sync_) sync_->begin_backward(last);
}

GradSyncTiming ZeroOptimizer::grad_sync_timing() const {
  return sync_ ? sync_->timing() : GradSyncTiming{};
}

Tensor ZeroOptimizer::master_params() const {
  return half() ? master_.view({layout_.numel()}, DType::F32)
                : params_.view({layout_.numel()}, DType::F32);
}

int64_t ZeroOptimizer::max_block_numel() const {
  int64_t m = 0;
  for (const auto& b : layout_.blocks()) m = std::max(m, b.numel());
  return m;
}

const float* ZeroOptimizer::acquire(int block) {
  const BlockRange& b = layout_.blocks().at(static_cast<size_t>(block));
  if (!half()) return static_cast<const float*>(params_.data()) + b.begin;
  ZT_CHECK(param_slot_.block < 0, "block {} acquired while block {} is held", block,
           param_slot_.block);
  param_slot_.block = block;
  float* dst = static_cast<float*>(param_slot_.buffer.data());
  cast_to_f32(dst, static_cast<const char*>(params_.data()) + b.begin * 2, working_, b.numel());
  return dst;
}

void ZeroOptimizer::release(int block) {
  if (!half()) return;
  ZT_CHECK(param_slot_.block == block, "release of block {} which is not held", block);
  param_slot_.block = -1;
}

ZeroOptimizer::Slot& ZeroOptimizer::grad_slot(int block) {
  for (auto& s : grad_slots_)
    if (s.block == block) return s;
  for (auto& s : grad_slots_) {
    if (s.block >= 0) continue;
    s.block = block;
    const int64_t n = layout_.blocks().at(static_cast<size_t>(block)).numel();
    std::fill_n(static_cast<float*>(s.buffer.data()), n, 0.0f);
    return s;
  }
  throw Error("more than two gradient blocks open at once");
}

float* ZeroOptimizer::grads(int block) {
  const BlockRange& b = layout_.blocks().at(static_cast<size_t>(block));
  if (!half()) return static_cast<float*>(grads_.data()) + b.begin;
  return static_cast<float*>(grad_slot(block).buffer.data());
}

void ZeroOptimizer::grads_done(int block) {
  if (!half()) {
    if (sync_) sync_->block_done(block);
    return;
  }
  const BlockRange& b = layout_.blocks().at(static_cast<size_t>(block));
  Slot& s = grad_slot(block);
  char* dst = static_cast<char*>(grads_.data()) + b.begin * 2;
  const float* src = static_cast<const float*>(s.buffer.data());
  if (working_ == DType::BF16)
    cpu::accumulate(reinterpret_cast<bf16*>(dst), src, b.numel());
  else
    cpu::accumulate(reinterpret_cast<fp16*>(dst), src, b.numel());
  s.block = -1;
  if (sync_) sync_->block_done(block);
}

void ZeroOptimizer::sync_working_from_master() {
  if (half())
    cast_from_f32(params_.data(), working_, static_cast<const float*>(master_.data()),
                  layout_.numel());
}

void ZeroOptimizer::zero_grad() {
  std::memset(grads_.data(), 0, grads_.bytes());
}

StepResult ZeroOptimizer::step(double lr, double loss_scale) {
  StepResult r;
  if (sync_) sync_->finish();
  const int64_t n = layout_.numel();
  const double sumsq = sum_squares(grads_.data(), working_, n);
  if (!std::isfinite(sumsq)) {
    r.skipped = true;
    r.grad_norm = sumsq;
    return r;
  }
  r.grad_norm = std::sqrt(sumsq) / loss_scale;
  double coef = 1.0;
  // torch.nn.utils.clip_grad_norm_'s rule, so runs compare with PyTorch bit for bit in spirit.
  if (adam_.clip_grad > 0) coef = std::min(1.0, adam_.clip_grad / (r.grad_norm + 1e-6));
  ++adam_step_;
  cpu::AdamWParams p;
  p.lr = static_cast<float>(lr);
  p.beta1 = static_cast<float>(adam_.beta1);
  p.beta2 = static_cast<float>(adam_.beta2);
  p.eps = static_cast<float>(adam_.eps);
  p.grad_scale = static_cast<float>(coef / loss_scale);
  p.step = adam_step_;
  float* master = master_params().f32();
  float* m = adam_m().f32();
  float* v = adam_v().f32();
  for (const auto& spec : layout_.params()) {
    p.weight_decay = spec.weight_decay ? static_cast<float>(adam_.weight_decay) : 0.0f;
    if (!half()) {
      const float* g = static_cast<const float*>(grads_.data()) + spec.offset;
      cpu::adamw(master + spec.offset, m + spec.offset, v + spec.offset, g, spec.numel(), p);
      continue;
    }
    float* g32 = static_cast<float*>(chunk_.data());
    for (int64_t at = spec.offset; at < spec.offset + spec.numel(); at += kChunk) {
      const int64_t len = std::min(kChunk, spec.offset + spec.numel() - at);
      cast_to_f32(g32, static_cast<const char*>(grads_.data()) + at * 2, working_, len);
      cpu::adamw(master + at, m + at, v + at, g32, len, p);
      cast_from_f32(static_cast<char*>(params_.data()) + at * 2, working_, master + at, len);
    }
  }
  return r;
}

}  // namespace zt
