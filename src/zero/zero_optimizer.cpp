#include "src/zero/zero_optimizer.h"

namespace zt {

ZeroOptimizer::ZeroOptimizer(const ParamLayout& layout, DType working, const AdamConfig& adam,
                             const DeviceContext& ctx, uint64_t seed, const ZeroConfig& zero)
    : layout_(layout), working_(working), zero_(zero) {
  ZT_REQUIRE(zero.stage >= 0 && zero.stage <= 3, "--zero-stage must be 0, 1, 2 or 3, got {}",
             zero.stage);
  ZT_CHECK(zero.stage == 0 || zero.dp != nullptr, "ZeRO stage {} needs a data-parallel group",
           zero.stage);
  states_ = std::make_unique<ZeroStates>(layout, working, adam, ctx, seed, zero);
}

ZeroOptimizer::~ZeroOptimizer() = default;

}  // namespace zt
