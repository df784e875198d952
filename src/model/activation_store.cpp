#include "src/model/activation_store.h"

#include "src/core/error.h"

namespace zt {

size_t KeepAllActivations::bytes(const GptConfig& config, int micro_batch, int tp_size,
                                 const ActivationSlots& slots) {
  return LayerActivations::bytes(config, micro_batch, tp_size) *
         static_cast<size_t>(slots.per_slot(config)) * static_cast<size_t>(slots.slots);
}

KeepAllActivations::KeepAllActivations(MemoryPool& pool, const GptConfig& config, int micro_batch,
                                       int tp_size, const ActivationSlots& slots)
    : config_(config),
      shape_(slots),
      arena_(pool, bytes(config, micro_batch, tp_size, slots), MemCategory::Activations),
      per_slot_(slots.per_slot(config)),
      slots_(slots.slots),
      inputs_(static_cast<size_t>(per_slot_) * static_cast<size_t>(slots_)) {
  for (size_t i = 0; i < inputs_.size(); ++i)
    layers_.push_back(LayerActivations::carve(arena_, config, micro_batch, tp_size));
}

size_t KeepAllActivations::index(int layer) const {
  return static_cast<size_t>(slot_) * static_cast<size_t>(per_slot_) +
         static_cast<size_t>(shape_.local(config_, layer));
}

void KeepAllActivations::select_slot(int slot) {
  ZT_CHECK(slot >= 0 && slot < slots_, "activation slot {} of {}", slot, slots_);
  slot_ = slot;
}

LayerActivations& KeepAllActivations::begin_forward(int layer) {
  return layers_.at(index(layer));
}

void KeepAllActivations::end_forward(int layer, CRef input) {
  inputs_.at(index(layer)) = input;
}

ActivationStore::Restored KeepAllActivations::begin_backward(int layer) {
  return Restored{&layers_.at(index(layer)), inputs_.at(index(layer)), false, 0, CRef()};
}

}  // namespace zt
