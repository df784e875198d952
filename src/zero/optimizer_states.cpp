#include "src/zero/optimizer_states.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "src/core/error.h"
#include "src/zero/swapped_states.h"

namespace zt {
namespace {

// Device: the backend's memory, one chunk. Host: host memory, streamed in chunks so that the
// gradient and parameter copies between host and device go through chunk-sized staging.
class ResidentStates final : public OptimizerStates {
 public:
  ResidentStates(StateTier tier, int64_t numel, const DeviceContext& ctx, float* master,
                 int64_t chunk_elems)
      : OptimizerStates(numel), tier_(tier), be_(ctx.backend()), chunk_elems_(chunk_elems) {
    const bool device = tier == StateTier::Device;
    MemoryPool& pool = device ? ctx.pool() : ctx.host();
    const MemCategory cat = device ? MemCategory::Optimizer : MemCategory::HostOptimizer;
    for (int k = 0; k < kStates; ++k) {
      if (k == kMaster && master != nullptr) {
        ptr_[k] = master;
        continue;
      }
      own_[k] = pool.allocate({numel}, DType::F32, cat);
      ptr_[k] = static_cast<float*>(own_[k].data());
    }
  }
  StateTier tier() const override { return tier_; }
  float* resident(int k) const override {
    return tier_ == StateTier::Device ? ptr_.at(static_cast<size_t>(k)) : nullptr;
  }
  void stream(bool, const std::function<void(const StateChunk&)>& fn) override {
    const int64_t step = tier_ == StateTier::Device ? std::max<int64_t>(numel(), 1) : chunk_elems_;
    for (int64_t at = 0; at < numel(); at += step) {
      StateChunk c;
      c.offset = at;
      c.len = std::min(step, numel() - at);
      for (int k = 0; k < kStates; ++k) c.state[k] = ptr_[static_cast<size_t>(k)] + at;
      fn(c);
    }
  }
  void read(int k, int64_t offset, int64_t n, float* host) override {
    const float* src = ptr_.at(static_cast<size_t>(k)) + offset;
    if (tier_ == StateTier::Device)
      be_.copy_to_host(host, src, static_cast<size_t>(n) * 4);
    else
      std::memcpy(host, src, static_cast<size_t>(n) * 4);
  }
  void write(int k, int64_t offset, int64_t n, const float* host) override {
    float* dst = ptr_.at(static_cast<size_t>(k)) + offset;
    if (tier_ == StateTier::Device)
      be_.copy_to_device(dst, host, static_cast<size_t>(n) * 4);
    else
      std::memcpy(dst, host, static_cast<size_t>(n) * 4);
  }

 private:
  StateTier tier_;
  Backend& be_;
  int64_t chunk_elems_;
  std::array<Buffer, kStates> own_;
  std::array<float*, kStates> ptr_{};
};

}  // namespace

bool grads_offloaded(int zero_stage, StateTier optimizer_tier, bool needs_staging) {
  return zero_stage >= 2 && optimizer_tier != StateTier::Device && needs_staging;
}

StateTier grad_tier(int zero_stage, StateTier optimizer_tier, bool needs_staging) {
  if (!grads_offloaded(zero_stage, optimizer_tier, needs_staging)) return StateTier::Device;
  return optimizer_tier;
}

StateTier parse_state_tier(const std::string& name) {
  if (name == "none") return StateTier::Device;
  if (name == "cpu") return StateTier::Host;
  ZT_CHECK(name == "nvme", "unknown offload tier '{}'", name);
  return StateTier::Nvme;
}

const char* state_tier_flag_value(StateTier t) {
  switch (t) {
    case StateTier::Device:
      return "none";
    case StateTier::Host:
      return "cpu";
    case StateTier::Nvme:
      return "nvme";
  }
  return "none";
}

std::unique_ptr<OptimizerStates> make_optimizer_states(const StateTierConfig& cfg, int64_t numel,
                                                       const DeviceContext& ctx, float* master) {
  ZT_CHECK(cfg.tier == StateTier::Device || master == nullptr,
           "offloaded optimizer states keep their own master parameters");
  ZT_CHECK(cfg.tier != StateTier::Host || ctx.needs_staging(),
           "host-tier optimizer states on a backend whose memory is the host's");
  if (cfg.tier == StateTier::Nvme) return make_swapped_states(cfg, numel, ctx);
  return std::make_unique<ResidentStates>(cfg.tier, numel, ctx, master, cfg.chunk_elems);
}

}  // namespace zt
