#include "src/checkpoint/weights.h"

#include <algorithm>
#include <vector>

#include "src/checkpoint/layout_map.h"
#include "src/core/error.h"

namespace zt {

void read_weights(SavedCheckpoint& saved, const ParamLayout& layout, const WeightSink& sink,
                  int64_t chunk) {
  for (const ParamSpec& p : layout.params()) {
    const SavedTensor* st = saved.find(p.name);
    ZT_REQUIRE(st != nullptr, "the checkpoint has no tensor '{}'", p.name);
    const Shape& s = st->spec->full_shape;
    // Only the vocabulary padding may differ: its rows carry no signal.
    ZT_REQUIRE(s == p.full_shape || (p.name == "embedding.word" && s.rank() == 2 &&
                                     p.full_shape.rank() == 2 && s[1] == p.full_shape[1]),
               "checkpoint tensor '{}' has shape {}, the model {}", p.name, s.str(),
               p.full_shape.str());
  }
  std::vector<float> buf;
  for (const ParamSpec& p : layout.params()) {
    const SavedTensor& st = *saved.find(p.name);
    const int64_t saved_numel = st.spec->full_numel();
    for (int64_t i = 0; i < p.numel();) {
      const int64_t f = p.full_index(i);
      const int64_t run = std::min({full_run(p, i), p.numel() - i, chunk});
      const int64_t have = std::clamp<int64_t>(saved_numel - f, 0, run);
      if (have > 0) {
        buf.resize(static_cast<size_t>(have));
        saved.read_full(st, 0, f, have, buf.data());
        sink(p.offset + i, buf.data(), have);
      }
      i += run;
    }
  }
}

}  // namespace zt
