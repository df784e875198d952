#pragma once
// OptimizerStates: where a rank's fp32 master parameters and Adam moments (its Shard's, in shard
// order) live — the tier a ZeRO run keeps them on (--offload-optimizer):
//   Device  the backend's memory (MemoryPool category Optimizer); AdamW runs on the backend over
//           the whole shard in one multi-tensor launch.
//   Host    host memory (category HostOptimizer) where the device's is separate (ZeRO-Offload:
//           the CUDA backend, the CPU staging backend); AdamW runs on the host, chunk by chunk.
//   Nvme    a swap file per rank under --nvme-path (ZeRO-Infinity), streamed through host
//           buffers (category NvmeBuffers): chunk k+1 is read and chunk k−1 written while chunk k
//           is updated.
// AdamW is element-wise, so streaming in chunks computes the bits of the one-launch step.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "kernels/backend.h"
#include "src/core/memory_pool.h"

namespace zt {

enum class StateTier : uint8_t { Device, Host, Nvme };
StateTier parse_state_tier(const std::string& name);  // "none" is Device
const char* state_tier_flag_value(StateTier t);       // "none", "cpu", "nvme"

// One run of the shard as a chunk in memory the stepping side reads and writes: master, m, v
// (index OptimizerStates::kMaster, kM, kV) for shard elements [offset, offset + len).
struct StateChunk {
  int64_t offset = 0;
  int64_t len = 0;
  float* state[3] = {nullptr, nullptr, nullptr};
};

struct StateTierConfig {
  StateTier tier = StateTier::Device;
  std::string nvme_path;              // Nvme: the directory the swap file goes in
  int64_t chunk_elems = 1 << 22;      // Host, Nvme: elements per streamed chunk
  int aio_queue_depth = 32;           // Nvme: requests in flight
  int64_t aio_block_bytes = 1 << 20;  // Nvme: bytes per request
  // Nvme: called as each streamed chunk's write-back starts (the failure tests kill a rank
  // there); empty: nothing.
  std::function<void()> on_write_back;
};

class OptimizerStates {
 public:
  static constexpr int kMaster = 0, kM = 1, kV = 2, kStates = 3;
  virtual ~OptimizerStates() = default;
  virtual StateTier tier() const = 0;
  int64_t numel() const { return numel_; }
  // Device tier: state k resident in the backend's memory; null on the other tiers.
  virtual float* resident(int k) const = 0;
  // Every chunk of the shard in order through fn, in host memory (Host, Nvme; the Device tier
  // gives one chunk of backend memory, the whole shard). With write_back what fn changed is kept.
  virtual void stream(bool write_back, const std::function<void(const StateChunk&)>& fn) = 0;
  // Elements [offset, offset + n) of state k to or from host memory (checkpoints, set-up).
  virtual void read(int k, int64_t offset, int64_t n, float* host) = 0;
  virtual void write(int k, int64_t offset, int64_t n, const float* host) = 0;
  // The bytes of the swap file (Nvme), 0 elsewhere.
  virtual uint64_t file_bytes() const { return 0; }

 protected:
  explicit OptimizerStates(int64_t numel) : numel_(numel) {}

 private:
  int64_t numel_;
};

// Whether a ZeRO stage keeps its gradient shard in host memory: stages 2-3 (which keep only the
// shard) with the optimizer off a device of its own (ZeRO-Offload: each reduced part goes to the
// host as backward completes it, and the host optimizer reads it there).
bool grads_offloaded(int zero_stage, StateTier optimizer_tier, bool needs_staging);
// Where that gradient shard lives: the device (not offloaded), host memory, or with the
// optimizer on NVMe the NVMe tier (ZeRO-Infinity: a trillion-parameter model's gradient shards
// outgrow a node's host memory; swapped_grads.h).
StateTier grad_tier(int zero_stage, StateTier optimizer_tier, bool needs_staging);

// `master`: device memory the Device tier uses for the master instead of its own (stage 0 in
// fp32, where the working parameters are the master), or null.
std::unique_ptr<OptimizerStates> make_optimizer_states(const StateTierConfig& cfg, int64_t numel,
                                                       const DeviceContext& ctx, float* master);

}  // namespace zt
