#pragma once
// A step's routing statistics of the MoE layers (docs/design/moe.md): what one rank's layers
// counted, packed for a sum over every rank, and the per-layer metrics that sum gives.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "src/model/gpt_config.h"

namespace zt {

// One layer's counts over a rank's micro-batches of a step.
struct MoeLayerTotals {
  double aux = 0;       // the load-balancing loss E · Σ_e f_e · P_e, summed over micro-batches
  double max_load = 0;  // the most choices an expert was routed over the mean, summed likewise
  int64_t dropped = 0;  // choices dropped over capacity
  int64_t routed = 0;   // choices routed (N · k per micro-batch)
  int micro_batches = 0;
  static constexpr size_t kValues = 5;  // as packed for the reduction
};

// One MoE layer's routing over a step, over every rank's micro-batches.
struct MoeLayerMetrics {
  int layer = 0;
  double aux_loss = 0;          // the load-balancing loss, mean over micro-batches
  double max_load = 0;          // the busiest expert's choices over the mean, mean likewise
  double dropped_fraction = 0;  // choices dropped over capacity, of all routed
};

struct MoeStepStats {
  std::vector<MoeLayerMetrics> layers;  // empty for a dense model
  double aux_loss = 0;                  // the layers' mean (Megatron's load_balancing_loss)
  bool empty() const { return layers.empty(); }
  // " load balancing loss: … | expert load max/mean: … |" (and the dropped share where any).
  std::string console_fields() const;
  // TensorBoard's tags and values: "load_balancing_loss" (Megatron's), and per layer
  // "moe/layer-<i>/{load_balancing_loss,max-load,dropped-fraction}".
  std::vector<std::pair<std::string, double>> scalars() const;
  // From `values`, every layer's totals packed (pack_moe_totals) and summed over the ranks:
  // tensor-parallel ranks repeat their group's counts and other stages hold zeros, so each mean
  // is over every micro-batch once.
  static MoeStepStats of(const GptConfig& c, std::span<const double> values);
};

// Values the packed totals of a model take (0 for a dense model).
inline size_t moe_metric_values(const GptConfig& c) {
  return c.moe() ? MoeLayerTotals::kValues * static_cast<size_t>(c.num_layers) : 0;
}
// Every layer's totals, packed into `values` (moe_metric_values of them), then reset.
void pack_moe_totals(std::vector<MoeLayerTotals>& totals, std::span<double> values);

}  // namespace zt
