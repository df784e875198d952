#pragma once
// Gpt: token + position embedding -> layers -> final layernorm -> head tied to the word
// embedding -> softmax cross-entropy. Forward and backward are explicit; parameters come from a
// ParamSource and layer intermediates go to an ActivationStore, so the same code runs under
// every memory policy.
//
// Under tensor parallelism (layout.tp_size() > 1, `tp` its group) every rank computes on its
// shard: a vocab-parallel embedding, tensor-parallel layers (transformer_layer.h), a replicated
// final layernorm, the head tied to this rank's vocabulary shard (logits [N, Vp/tp] only) and the
// vocab-parallel cross-entropy. Per micro-batch the tp group all-reduces, in floats:
//   (4L + 2)·N·C + 3N   (per layer 2 forward + 2 backward [N, C]; the embedding's partial rows;
//                        the head's input gradient; the cross-entropy's max (N) and sums (2N))
#include <cstdint>
#include <vector>

#include "kernels/backend.h"
#include "src/comm/communicator.h"
#include "src/core/arena.h"
#include "src/model/activation_store.h"
#include "src/model/gpt_config.h"
#include "src/model/param_layout.h"
#include "src/model/param_ref.h"
#include "src/model/param_source.h"
#include "src/model/transformer_layer.h"

namespace zt {

struct DropoutSeeds {
  uint64_t seed = 0;         // --seed
  int64_t first_sample = 0;  // global index of the micro-batch's first sample
};

class Gpt {
 public:
  // `tp`: the tensor-parallel group of size layout.tp_size(), null when that is 1. The model's
  // workspace comes from ctx.pool() (activations) and it computes on ctx.backend().
  Gpt(const GptConfig& config, const ParamLayout& layout, int micro_batch, const DeviceContext& ctx,
      comm::Communicator* tp = nullptr);

  // Forward and backward of one micro-batch of `micro_batch` sequences. tokens, targets: [B, T]
  // in the backend's memory.
  // Gradients are added into the ParamSource's grad regions, scaled by `dloss` per token (the
  // caller folds in 1/tokens, gradient accumulation and the loss scale). Returns the mean loss
  // over this micro-batch's tokens.
  double forward_backward(const int32_t* tokens, const int32_t* targets, float dloss,
                          ParamSource& params, ActivationStore& acts, const DropoutSeeds& rng);
  // Forward only, dropout off: writes this rank's logits [N, Vp/tp], widened to fp32, into host
  // memory `out`
  // (inference, tests; the columns of global vocabulary rows [tp_rank·Vp/tp, (tp_rank+1)·Vp/tp)).
  void forward_logits(const int32_t* tokens, ParamSource& params, ActivationStore& acts,
                      float* out);
  // Forward only (evaluation, dropout off). Returns the mean loss.
  double forward_loss(const int32_t* tokens, const int32_t* targets, ParamSource& params,
                      ActivationStore& acts);

  const GptConfig& config() const { return config_; }
  // Bytes of the model's own workspace arena (embedding output, final layernorm, logits,
  // backward scratch) for one of `tp_size` ranks: what the constructor allocates.
  static size_t arena_bytes(const GptConfig& config, int micro_batch, int tp_size);
  // Whether backward acquires `p` again (the planner counts stage-3 gathers by it).
  static bool acquired_in_backward(const ParamSpec& p);
  // [N, Vp/tp] in the backend's memory, in the working precision; dlogits after
  // forward_backward.
  CRef logits() const { return logits_; }
  const LayerDims& dims() const { return dims_; }

 private:
  double forward(const int32_t* tokens, const int32_t* targets, float dloss, ParamSource& params,
                 ActivationStore& acts, const DropoutSeeds* rng);
  // Embedding, layers, final layernorm and head: leaves the logits in logits_.
  void forward_to_logits(const int32_t* tokens, ParamSource& params, ActivationStore& acts,
                         const DropoutSeeds* rng);
  void backward(const int32_t* tokens, ParamSource& params, ActivationStore& acts,
                const DropoutSeeds* rng);
  LayerDropout dropout(int layer, const DropoutSeeds* rng) const;
  // The vocab-parallel embedding of `tokens` into embed_out_, over the word embedding's chunks.
  void embed(const int32_t* tokens, ParamSource& params);
  // This rank's vocabulary rows of every token into embed_out_ (0 for the others), chunk by
  // chunk: the partial sum tensor parallelism then reduces.
  void embed_word_rows(const int32_t* tokens, ParamSource& params);
  // The embedding into this rank's rows only (sequence parallelism).
  void embed_sequence_parallel(const int32_t* tokens, ParamSource& params);
  // The tied embedding's gradient, at the end of backward: the head's dlogitsᵀ·lnf_out (dlogits
  // stay in logits_ through backward) plus the lookup's rows, chunk by chunk, each element of
  // the block once.
  void embedding_grads(const int32_t* tokens, ParamSource& params);

  GptConfig config_;
  Backend& be_;
  LayerDims dims_;
  int vocab_begin_ = 0;  // this rank's vocabulary rows [vocab_begin_, vocab_begin_ + vocab_local_)
  int vocab_local_ = 0;
  std::vector<LayerRefs> layers_;
  ParamRef wte_, wpe_, lnf_w_, lnf_b_;
  LinearRefs head_;  // the word embedding as the head's weight [Vp/tp, C], no bias
  Arena arena_;      // embedding output, final layernorm, logits, losses, backward scratch
  LayerScratch scratch_;
  Ref embed_out_;                // [N, C]
  Ref lnf_out_;                  // [N, C]
  float* lnf_mean_ = nullptr;    // [N]
  float* lnf_rstd_ = nullptr;    // [N]
  Ref logits_;                   // [N, Vp/tp]
  float* ce_scratch_ = nullptr;  // [3N] the vocab-parallel cross-entropy's reductions
  float* losses_ = nullptr;      // [N]
  Ref dres_;                     // [N, C]
  Ref final_in_;                 // [N, C] last layer's output, the final layernorm's input
  // Host staging where the host cannot read the device (none on the CPU): the losses read back
  // each micro-batch.
  Buffer host_staging_;
  float* losses_host_ = nullptr;  // [N]
};

}  // namespace zt
