#pragma once
// ParamShard: where ZeRO stage 3 keeps the rank's own shard of the working parameters (its parts
// of every partition unit, in shard order) — the tier of --offload-param:
//   Device  the backend's memory (MemoryPool category Params): a unit's part is all-gathered
//           from where it lies.
//   Host    host memory (category HostParams) where the device's is separate (the CUDA backend,
//           the CPU staging backend): a unit's part is copied into its gather slot's device
//           buffer before the all-gather.
//   Nvme    a swap file per rank under --nvme-path (ZeRO-Infinity's parameter partitions): each
//           unit's part in whole pages of its own, read ahead into its slot's host buffer
//           (category NvmeBuffers) when the prefetch policy gathers it ahead, and written back
//           a unit at a time as the optimizer's updated master arrives.
// The gather slots are GatheredParams' (its shared slots and one per persistent unit); a fetch
// fills slot `slot` with unit `unit`'s part. The working precision's bits are the same on every
// tier: the conversion from the fp32 master is the one from_f32.
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/backend.h"
#include "src/core/tensor.h"
#include "src/zero/optimizer_states.h"
#include "src/zero/partition.h"

namespace zt {

class ParamShard {
 public:
  virtual ~ParamShard() = default;
  virtual StateTier tier() const = 0;
  // Starts bringing unit `unit`'s part into slot `slot` (nothing to do on the Device tier).
  virtual void begin_fetch(int unit, int slot) = 0;
  // Unit `unit`'s part in the backend's memory, for the all-gather's input: waits for the
  // slot's fetch (checking every page read) and stages it to the device where needed.
  virtual Tensor part(int unit, int slot) = 0;
  // Ends a fetch whose part is no longer wanted (its unit dropped or stale).
  virtual void cancel_fetch(int slot) = 0;
  // Shard elements [offset, offset + len) from the fp32 master in the backend's memory, rounded
  // to the working precision; finish_write() once a step's ranges are all in.
  virtual void write(int64_t offset, int64_t len, const float* master) = 0;
  // The same elements already rounded, in host memory (ParamStore::from_host_range).
  virtual void write_host(int64_t offset, int64_t len, const void* host) = 0;
  virtual void finish_write() {}
  // The swap file's bytes (Nvme), 0 elsewhere.
  virtual uint64_t file_bytes() const { return 0; }
};

// The elements each gather slot's part buffer holds: GatheredParams' slot order.
std::unique_ptr<ParamShard> make_param_shard(const StateTierConfig& cfg, const Partition& part,
                                             DType working, const DeviceContext& ctx,
                                             const std::vector<int64_t>& slot_parts);

// What make_param_shard allocates, by where (the plan): device bytes in category Params and in
// Buffers, host bytes in HostParams and NvmeBuffers, and the swap file's bytes.
struct ParamShardBytes {
  size_t params = 0, buffers = 0, host_params = 0, nvme_buffers = 0;
  uint64_t nvme_file = 0;
};
ParamShardBytes param_shard_bytes(StateTier tier, const Partition& part, DType working,
                                  bool needs_staging, const std::vector<int64_t>& slot_parts);

}  // namespace zt
