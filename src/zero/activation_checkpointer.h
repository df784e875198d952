#pragma once
// ActivationCheckpointer: ZeRO-R's ActivationStore (docs/design/architecture.md, Layout).
//   --checkpoint-activations     keep only the input of every span of --checkpoint-num-layers
//                                layers; backward recomputes the span's forward first.
//   --partition-activations (Pa) a layer input is replicated across the tensor-parallel group,
//                                so each tp rank keeps only its 1/tp slice; the slices are
//                                all-gathered on the tp group just before recomputation. An
//                                input the model already splits over tp (sequence parallelism,
//                                LayerActivations::input_replicated) is kept as it is.
//   --cpu-checkpointing (Pa+cpu) the kept slices live in host memory (category
//                                host_checkpoints), none in the device's checkpoints category.
// Checkpoints and workspaces are carved from arenas sized from the plan at construction (ZeRO-R's
// MD): nothing is allocated while training, so long- and short-lived memory never interleave.
//
// Checkpoints come from their own pool (ctx.host() for Pa+cpu). With Pa+cpu the copy out
// (end_forward) is an asynchronous device->host copy on the backend's side stream (Backend::
// offload), joined only before the compute stream overwrites its source; in backward each span's
// checkpoint is fetched back while the span after it (in backward order) still computes: one
// span ahead, into a second restore buffer. On the CPU both are plain copies and there is no
// second buffer (the host reads the checkpoint where it is).
#include <vector>

#include "kernels/backend.h"
#include "src/comm/communicator.h"
#include "src/core/arena.h"
#include "src/model/activation_store.h"

namespace zt {

struct CheckpointConfig {
  int span = 1;                      // layers per checkpoint (--checkpoint-num-layers)
  bool partition = false;            // Pa
  bool cpu = false;                  // Pa+cpu
  comm::Communicator* tp = nullptr;  // required with partition when tp > 1
};

class ActivationCheckpointer final : public ActivationStore {
 public:
  // ctx.pool() holds workspaces (and checkpoints without cpu); ctx.host() holds checkpoints with
  // cpu.
  // With `slots` (pipeline parallelism) the checkpoints are kept per slot and the workspaces,
  // used by one micro-batch at a time, are shared.
  ActivationCheckpointer(const DeviceContext& ctx, const GptConfig& config, int micro_batch,
                         int tp_size, const CheckpointConfig& checkpoint,
                         const ActivationSlots& slots = {});

  LayerActivations& begin_forward(int layer) override;
  void end_forward(int layer, CRef input) override;
  Restored begin_backward(int layer) override;
  void select_slot(int slot) override;

  // What the constructor allocates, for the planner: the workspace arena (activations) and the
  // checkpoint arena ((layers / span) · micro_batch · seq · hidden elements of the working
  // precision, / tp with Pa; spans counted per slot's layers, times the slots; with
  // slots.inputs_kept each slot's first span keeps nothing here: its input is the caller's).
  static size_t workspace_bytes(const GptConfig& config, int micro_batch, int tp_size, int span);
  static size_t checkpoint_bytes(const GptConfig& config, int micro_batch, int tp_size,
                                 const CheckpointConfig& checkpoint,
                                 const ActivationSlots& slots = {});
  // The device buffer Pa+cpu prefetches the next span's input into where the backend stages
  // host copies (`staging`: CUDA; the CPU reads host checkpoints in place); 0 otherwise.
  static size_t prefetch_bytes(const GptConfig& config, int micro_batch,
                               const CheckpointConfig& checkpoint, bool staging);

 private:
  LayerActivations& workspace(int layer);
  void restore(int span_index);
  // Starts bringing span `span_index`'s checkpoint into restore buffer `buffer`.
  void fetch(int span_index, Ref buffer);
  // Span `span_index`'s checkpoint of the selected slot.
  Ref checkpoint(int span_index) const;
  void join_offload();

  Backend& be_;
  GptConfig config_;
  CheckpointConfig cp_;
  int tp_size_, tp_rank_;
  int per_slot_ = 0, spans_ = 0, slot_ = 0, slots_ = 1;  // layers and spans of one slot
  // Spans whose input is kept here per slot: spans_, or spans_ - 1 when the caller keeps the
  // first span's input (kept_inputs_, per slot).
  int stored_spans_ = 0;
  ActivationSlots shape_;
  bool inputs_kept_ = false;
  std::vector<CRef> kept_inputs_;
  int64_t input_elems_ = 0;       // N·C of one layer input
  int64_t checkpoint_elems_ = 0;  // kept per checkpoint (input_elems_ / tp with Pa)
  Arena workspace_arena_, checkpoint_arena_;
  std::vector<LayerActivations> workspaces_;  // span + 1: a span plus the input it consumed
  std::vector<Ref> checkpoints_;              // in the working precision, slot-major
  Ref restored_;     // [N·C] the gathered input of the span being recomputed
  CRef span_input_;  // that span's input: restored_, or the caller's kept input
  int restored_span_ = -1;
  // Pa+cpu where the host cannot reach the device: the second restore buffer, the span fetched
  // into it ahead of time (-1: none), and the source of the offload still in flight.
  Buffer prefetch_buffer_;
  Ref restore_buffers_[2];
  int prefetched_span_ = -1;
  CRef offload_src_;
  // Last: before the checkpoints and buffers go, no offload or fetch still reads or writes them.
  SideCopyGuard side_copies_{&be_};
};

}  // namespace zt
