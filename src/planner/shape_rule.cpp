#include "src/planner/shape_rule.h"

#include <algorithm>
#include <cmath>

namespace zt {

void shape_for_parameters(double target, GptConfig& model, int tp) {
  const int step = 128 * tp;
  const int h0 = static_cast<int>(std::round(std::cbrt(target * 128.0 / 12.0) / step)) * step;
  double best = -1;
  for (int h = std::max(step, h0 - 8 * step); h <= h0 + 8 * step; h += step) {
    GptConfig g = model;
    g.hidden = h;
    g.heads = h / 128;
    g.num_layers = 1;
    g.padded_vocab_size = g.vocab_size;
    const double one = static_cast<double>(g.num_parameters());
    g.num_layers = 2;
    const double layer = static_cast<double>(g.num_parameters()) - one;
    const double base = one - layer;  // embeddings and the final layernorm
    g.num_layers = std::max(1, static_cast<int>(std::lround((target - base) / layer)));
    const double err = std::abs(base + layer * g.num_layers - target);
    if (best < 0 || err < best) {
      best = err;
      model.hidden = g.hidden;
      model.heads = g.heads;
      model.num_layers = g.num_layers;
    }
  }
}

}  // namespace zt
