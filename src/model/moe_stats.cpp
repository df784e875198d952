#include "src/model/moe_stats.h"

#include <fmt/format.h>

#include <algorithm>

namespace zt {

std::string MoeStepStats::console_fields() const {
  if (layers.empty()) return "";
  double load = 0, dropped = 0;
  for (const MoeLayerMetrics& l : layers) {
    load = std::max(load, l.max_load);
    dropped += l.dropped_fraction / static_cast<double>(layers.size());
  }
  return fmt::format(" load balancing loss: {:.6E} | expert load max/mean: {:.2f} |{}", aux_loss,
                     load, dropped > 0 ? fmt::format(" dropped: {:.2f}% |", 100 * dropped) : "");
}

std::vector<std::pair<std::string, double>> MoeStepStats::scalars() const {
  std::vector<std::pair<std::string, double>> out;
  if (layers.empty()) return out;
  out.emplace_back("load_balancing_loss", aux_loss);
  for (const MoeLayerMetrics& l : layers) {
    out.emplace_back(fmt::format("moe/layer-{}/load_balancing_loss", l.layer), l.aux_loss);
    out.emplace_back(fmt::format("moe/layer-{}/max-load", l.layer), l.max_load);
    out.emplace_back(fmt::format("moe/layer-{}/dropped-fraction", l.layer), l.dropped_fraction);
  }
  return out;
}

MoeStepStats MoeStepStats::of(const GptConfig& c, std::span<const double> values) {
  MoeStepStats s;
  for (int i = 0; i < c.num_layers; ++i) {
    const double* x = values.data() + MoeLayerTotals::kValues * static_cast<size_t>(i);
    if (!c.moe_layer(i) || x[4] == 0) continue;
    s.layers.push_back({i, x[0] / x[4], x[1] / x[4], x[3] > 0 ? x[2] / x[3] : 0.0});
    s.aux_loss += s.layers.back().aux_loss / static_cast<double>(c.moe_layers());
  }
  return s;
}

void pack_moe_totals(std::vector<MoeLayerTotals>& totals, std::span<double> values) {
  for (size_t i = 0; i < totals.size(); ++i) {
    const MoeLayerTotals& t = totals[i];
    double* x = values.data() + MoeLayerTotals::kValues * i;
    x[0] = t.aux;
    x[1] = t.max_load;
    x[2] = static_cast<double>(t.dropped);
    x[3] = static_cast<double>(t.routed);
    x[4] = t.micro_batches;
  }
  std::fill(totals.begin(), totals.end(), MoeLayerTotals{});
}

}  // namespace zt
