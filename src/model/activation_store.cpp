#include "src/model/activation_store.h"

namespace zt {

KeepAllActivations::KeepAllActivations(MemoryPool& pool, const GptConfig& config, int micro_batch,
                                       int tp_size)
    : arena_(pool, LayerActivations::bytes(config, micro_batch, tp_size) * config.num_layers,
             MemCategory::Activations),
      inputs_(static_cast<size_t>(config.num_layers)) {
  for (int i = 0; i < config.num_layers; ++i)
    layers_.push_back(LayerActivations::carve(arena_, config, micro_batch, tp_size));
}

LayerActivations& KeepAllActivations::begin_forward(int layer) {
  return layers_.at(static_cast<size_t>(layer));
}

void KeepAllActivations::end_forward(int layer, CRef input) {
  inputs_.at(static_cast<size_t>(layer)) = input;
}

ActivationStore::Restored KeepAllActivations::begin_backward(int layer) {
  return Restored{&layers_.at(static_cast<size_t>(layer)), inputs_.at(static_cast<size_t>(layer)),
                  false, 0, CRef()};
}

}  // namespace zt
