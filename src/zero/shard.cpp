#include "src/zero/shard.h"

namespace zt {

Shard Shard::whole(const ParamLayout& layout) {
  Shard s;
  s.numel = layout.numel();
  const auto& params = layout.params();
  for (size_t i = 0; i < params.size(); ++i)
    s.segments.push_back(ShardSegment{params[i].offset, params[i].offset, params[i].numel(),
                                      static_cast<int>(i), -1});
  return s;
}

Shard Shard::of(const Partition& part) {
  return Shard{part.shard_numel(), part.segments()};
}

}  // namespace zt
