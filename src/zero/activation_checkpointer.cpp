#include "src/zero/activation_checkpointer.h"

#include <algorithm>

namespace zt {

namespace {
// Pa slices an input every tensor-parallel rank holds whole; one already split (sequence
// parallelism) is kept as it is.
bool sliced(const GptConfig& c, int tp_size, const CheckpointConfig& cp) {
  return cp.partition && tp_size > 1 && LayerActivations::input_replicated(c, tp_size);
}
int64_t kept_elems(const GptConfig& c, int micro_batch, int tp_size, const CheckpointConfig& cp) {
  const int64_t input = LayerActivations::input_elems(c, micro_batch, tp_size);
  return sliced(c, tp_size, cp) ? input / tp_size : input;
}
}  // namespace

size_t ActivationCheckpointer::workspace_bytes(const GptConfig& c, int micro_batch, int tp_size,
                                               int span) {
  const auto input = static_cast<size_t>(LayerActivations::input_elems(c, micro_batch, tp_size));
  return LayerActivations::bytes(c, micro_batch, tp_size) * static_cast<size_t>(span + 1) +
         Arena::aligned(input * dtype_size(c.dtype));
}

size_t ActivationCheckpointer::checkpoint_bytes(const GptConfig& c, int micro_batch, int tp_size,
                                                const CheckpointConfig& cp,
                                                const ActivationSlots& slots) {
  const int spans = (slots.per_slot(c) + cp.span - 1) / cp.span - (slots.inputs_kept ? 1 : 0);
  return Arena::aligned(static_cast<size_t>(kept_elems(c, micro_batch, tp_size, cp)) *
                        dtype_size(c.dtype)) *
         static_cast<size_t>(spans) * static_cast<size_t>(slots.slots);
}

size_t ActivationCheckpointer::prefetch_bytes(const GptConfig& c, int micro_batch,
                                              const CheckpointConfig& cp, bool staging) {
  if (!cp.cpu || !staging) return 0;
  return static_cast<size_t>(micro_batch) * static_cast<size_t>(c.local_seq()) *
         static_cast<size_t>(c.hidden) * dtype_size(c.dtype);
}

ActivationCheckpointer::ActivationCheckpointer(const DeviceContext& ctx, const GptConfig& config,
                                               int micro_batch, int tp_size,
                                               const CheckpointConfig& cp,
                                               const ActivationSlots& slots)
    : be_(ctx.backend()),
      config_(config),
      cp_(cp),
      tp_size_(tp_size),
      tp_rank_(cp.tp ? cp.tp->rank() : 0),
      per_slot_(slots.per_slot(config)),
      spans_((per_slot_ + cp.span - 1) / cp.span),
      slots_(slots.slots),
      stored_spans_(spans_ - (slots.inputs_kept ? 1 : 0)),
      shape_(slots),
      inputs_kept_(slots.inputs_kept),
      kept_inputs_(static_cast<size_t>(slots.inputs_kept ? slots.slots : 0)) {
  MemoryPool& device = ctx.pool();
  MemoryPool& host = ctx.host();
  ZT_REQUIRE(cp.span >= 1, "--checkpoint-num-layers must be positive, got {}", cp.span);
  ZT_CHECK(!cp.partition || tp_size == 1 || cp.tp != nullptr,
           "partitioned activations need the tensor-parallel group");
  input_elems_ = LayerActivations::input_elems(config, micro_batch, tp_size);
  const bool split = sliced(config, tp_size, cp);
  ZT_REQUIRE(!split || input_elems_ % tp_size == 0,
             "--partition-activations: micro_batch x seq x hidden ({}) must divide by the "
             "tensor-parallel size {}",
             input_elems_, tp_size);
  checkpoint_elems_ = kept_elems(config, micro_batch, tp_size, cp);
  workspace_arena_ = Arena(device, workspace_bytes(config, micro_batch, tp_size, cp.span),
                           MemCategory::Activations);
  for (int i = 0; i <= cp.span; ++i)
    workspaces_.push_back(LayerActivations::carve(workspace_arena_, config, micro_batch, tp_size));
  const DType t = config.dtype;
  restored_ = Ref(workspace_arena_.carve({input_elems_}, t).data(), t);
  checkpoint_arena_ =
      Arena(cp.cpu ? host : device, checkpoint_bytes(config, micro_batch, tp_size, cp, slots),
            cp.cpu ? MemCategory::HostCheckpoints : MemCategory::Checkpoints);
  for (int s = 0; s < stored_spans_ * slots_; ++s)
    checkpoints_.emplace_back(checkpoint_arena_.carve({checkpoint_elems_}, t).data(), t);
  restore_buffers_[0] = restored_;
  if (const size_t b = prefetch_bytes(config, micro_batch, cp, ctx.needs_staging()); b > 0) {
    prefetch_buffer_ = device.allocate(b, MemCategory::Activations);
    restore_buffers_[1] = Ref(prefetch_buffer_.data(), t);
  }
}

void ActivationCheckpointer::join_offload() {
  if (!offload_src_) return;
  be_.join_copies();
  offload_src_ = CRef();
}

LayerActivations& ActivationCheckpointer::workspace(int layer) {
  // span + 1 workspaces: the layers of one span never share one, and a layer's output (the
  // next layer's input) survives the next layer's forward.
  return workspaces_[static_cast<size_t>(shape_.local(config_, layer) % (cp_.span + 1))];
}

LayerActivations& ActivationCheckpointer::begin_forward(int layer) {
  LayerActivations& w = workspace(layer);
  // The offload in flight reads a layer output: it must finish before that workspace is
  // written again, and need not finish any earlier.
  if (offload_src_.p == w.out.p) join_offload();
  return w;
}

void ActivationCheckpointer::select_slot(int slot) {
  ZT_CHECK(slot >= 0 && slot < slots_, "activation slot {} of {}", slot, slots_);
  slot_ = slot;
}

Ref ActivationCheckpointer::checkpoint(int span_index) const {
  const int first = inputs_kept_ ? 1 : 0;
  ZT_CHECK(span_index >= first, "span {} has no checkpoint of its own", span_index);
  return checkpoints_[static_cast<size_t>(slot_ * stored_spans_ + span_index - first)];
}

void ActivationCheckpointer::end_forward(int layer, CRef input) {
  const int local = shape_.local(config_, layer);
  if (local % cp_.span != 0) return;
  if (local == 0 && inputs_kept_) {  // the caller keeps it whole until the slot's backward
    kept_inputs_[static_cast<size_t>(slot_)] = input;
    return;
  }
  // Pa: the input is identical on every tp rank; this rank keeps its slice.
  const int64_t offset = checkpoint_elems_ == input_elems_ ? 0 : tp_rank_ * checkpoint_elems_;
  const Ref kept = checkpoint(local / cp_.span);
  const size_t bytes = kept.bytes(checkpoint_elems_);
  if (!cp_.cpu) {
    be_.copy(kept.p, (input + offset).p, bytes);
    return;
  }
  join_offload();  // at most one in flight: its source is known
  be_.offload(kept.p, (input + offset).p, bytes);
  offload_src_ = input;
}

void ActivationCheckpointer::fetch(int span_index, Ref buffer) {
  const Ref kept = checkpoint(span_index);
  const int64_t offset = checkpoint_elems_ == input_elems_ ? 0 : tp_rank_ * checkpoint_elems_;
  const size_t bytes = kept.bytes(checkpoint_elems_);
  if (cp_.cpu)
    be_.fetch((buffer + offset).p, kept.p, bytes);
  else
    be_.copy((buffer + offset).p, kept.p, bytes);
}

void ActivationCheckpointer::restore(int span_index) {
  restored_span_ = span_index;
  if (span_index == 0 && inputs_kept_) {
    span_input_ = kept_inputs_[static_cast<size_t>(slot_)];
    prefetched_span_ = -1;
    return;
  }
  const bool ahead = static_cast<bool>(restore_buffers_[1]);  // Pa+cpu with a second restore buffer
  restored_ = restore_buffers_[ahead ? span_index % 2 : 0];
  if (!ahead || prefetched_span_ != span_index) fetch(span_index, restored_);
  if (cp_.cpu) be_.join_copies();
  if (checkpoint_elems_ != input_elems_)
    cp_.tp->all_gather(Tensor(restored_.p, {input_elems_}, restored_.t, be_.device()));
  span_input_ = restored_;
  prefetched_span_ = -1;
  if (ahead && span_index > (inputs_kept_ ? 1 : 0)) {
    // The other buffer last served the span after this one, whose backward is enqueued already.
    fetch(span_index - 1, restore_buffers_[(span_index - 1) % 2]);
    prefetched_span_ = span_index - 1;
  }
}

ActivationStore::Restored ActivationCheckpointer::begin_backward(int layer) {
  // Spans count within the slot's layers; the layers returned are the model's.
  const int base = layer - shape_.local(config_, layer);
  const int span = (layer - base) / cp_.span;
  const int first = base + span * cp_.span;
  const int last = std::min(first + cp_.span, base + per_slot_) - 1;
  join_offload();
  Restored r;
  r.acts = &workspace(layer);
  if (layer == last) {
    restore(span);
    r.recompute = true;
    r.recompute_from = first;
    r.recompute_input = span_input_;
  }
  r.input = layer == first ? span_input_ : workspace(layer - 1).out;
  return r;
}

}  // namespace zt
