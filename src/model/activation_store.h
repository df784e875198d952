#pragma once
// ActivationStore is where a layer's forward intermediates live between forward and backward.
// Keeping every layer's workspace is one policy; activation checkpointing (keep only the layer
// input, recompute in backward), partitioned checkpoints and CPU offload are others. The model
// calls the same three functions under each.
#include <vector>

#include "src/model/layer_activations.h"

namespace zt {

// How many micro-batches' activations a store holds at once, and of how many layers each.
// Without pipeline parallelism: one slot of every layer. A pipeline stage holds up to
// pipeline::max_in_flight micro-batches of one model chunk each (its forward ran, its backward
// has not), so `slots` of `layers` = the layers of one chunk; layer i sits at position
// local(i) of its slot: a stage's chunks hold consecutive layers starting at first_layer,
// first_layer + period, ... (pipeline_split.h; an uneven split does not align them to `layers`).
struct ActivationSlots {
  int slots = 1;
  int layers = 0;  // 0: config.num_layers
  // The caller keeps each slot's first layer input (a pipeline stage's received chunk input)
  // unchanged until that slot's backward: a checkpointing store keeps it as the slot's first
  // checkpoint, as megatron-core does with the received tensor, instead of copying it.
  bool inputs_kept = false;
  int first_layer = 0;  // the first layer of the stage's first chunk
  int period = 0;       // layers from one of its chunks to the next (0: per_slot)
  int per_slot(const GptConfig& c) const { return layers > 0 ? layers : c.num_layers; }
  // Layer `layer`'s position within its chunk.
  int local(const GptConfig& c, int layer) const {
    const int p = period > 0 ? period : per_slot(c);
    return ((layer - first_layer) % p + p) % p;
  }
};

class ActivationStore {
 public:
  virtual ~ActivationStore() = default;
  // The workspace layer `layer`'s forward writes into.
  virtual LayerActivations& begin_forward(int layer) = 0;
  // Layer `layer`'s forward finished; `input` [N, C] is what it consumed.
  virtual void end_forward(int layer, CRef input) = 0;
  struct Restored {
    LayerActivations* acts = nullptr;
    // The layer's input as it was in forward (valid once any recomputation below is done).
    CRef input;
    // When set, the caller first re-runs the forward of layers [recompute_from, layer] — a
    // checkpointed span — starting from recompute_input, each into begin_forward(j)'s workspace.
    bool recompute = false;
    int recompute_from = 0;
    CRef recompute_input;
  };
  virtual Restored begin_backward(int layer) = 0;
  // The slot the following begin_forward / end_forward / begin_backward calls refer to.
  virtual void select_slot(int slot) = 0;
};

// Keeps every layer's workspace resident: no recompute, most memory. One arena, category
// activations. Sized for one of `tp_size` tensor-parallel ranks.
class KeepAllActivations final : public ActivationStore {
 public:
  KeepAllActivations(MemoryPool& pool, const GptConfig& config, int micro_batch, int tp_size = 1,
                     const ActivationSlots& slots = {});
  LayerActivations& begin_forward(int layer) override;
  void end_forward(int layer, CRef input) override;
  Restored begin_backward(int layer) override;
  void select_slot(int slot) override;
  // What the constructor allocates.
  static size_t bytes(const GptConfig& config, int micro_batch, int tp_size,
                      const ActivationSlots& slots = {});

 private:
  size_t index(int layer) const;
  GptConfig config_;
  ActivationSlots shape_;
  Arena arena_;
  int per_slot_ = 0, slots_ = 1, slot_ = 0;
  std::vector<LayerActivations> layers_;  // slot-major
  std::vector<CRef> inputs_;
};

}  // namespace zt
