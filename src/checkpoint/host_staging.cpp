#include "src/checkpoint/host_staging.h"

namespace zt {

HostStaging::HostStaging(const DeviceContext& ctx) {
  buf_ = ctx.host().allocate(kBytes, MemCategory::Buffers);
}

}  // namespace zt
