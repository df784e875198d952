#pragma once
// Host memory of a checkpoint's chunked copies between the optimizer states and the files:
// where the host reaches the device's memory directly (CPU) and the states are resident there,
// there is none; elsewhere (a device of its own, or states offloaded below the device) kBytes
// from the host pool (category Buffers), allocated once when the run is built so that its peak,
// and the planner's count, include it before the first save.
#include <cstddef>

#include "kernels/backend.h"
#include "src/core/memory_pool.h"

namespace zt {

class HostStaging {
 public:
  static constexpr size_t kBytes = size_t{4} << 20;
  HostStaging() = default;  // none: the host reaches the states directly
  explicit HostStaging(const DeviceContext& ctx);
  // Null when there is none.
  void* data() const { return buf_.data(); }
  size_t bytes() const { return buf_.bytes(); }

 private:
  Buffer buf_;
};

}  // namespace zt
