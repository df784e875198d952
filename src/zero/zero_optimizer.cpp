#include "src/zero/zero_optimizer.h"

#include "src/zero/partitioned_states.h"

namespace zt {

ZeroOptimizer::ZeroOptimizer(const ParamLayout& layout, DType working, const AdamConfig& adam,
                             const DeviceContext& ctx, uint64_t seed, const ZeroConfig& zero)
    : layout_(layout), working_(working), zero_(zero) {
  ZT_REQUIRE(zero.stage >= 0 && zero.stage <= 3, "--zero-stage must be 0, 1, 2 or 3, got {}",
             zero.stage);
  if (zero.stage == 0) {
    states_ = std::make_unique<ReplicatedStates>(layout, working, adam, ctx, seed, zero);
  } else {
    ZT_CHECK(zero.dp != nullptr, "ZeRO stage {} needs a data-parallel group", zero.stage);
    states_ = std::make_unique<PartitionedStates>(layout, working, adam, ctx, seed, zero);
  }
}

ZeroOptimizer::~ZeroOptimizer() = default;

ReplicatedStates& ZeroOptimizer::replicated() {
  auto* r = dynamic_cast<ReplicatedStates*>(states_.get());
  ZT_CHECK(r != nullptr, "stage {} keeps no full tensors; use gather_master()", zero_.stage);
  return *r;
}

}  // namespace zt
