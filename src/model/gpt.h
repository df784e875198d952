#pragma once
// Gpt: token (+ learned position) embedding -> layers -> final norm -> head (tied to the word
// embedding, or its own output layer under --untie-embeddings-and-output-weights) -> softmax
// cross-entropy. The architecture choices (rope, RMSNorm, SwiGLU, grouped-query attention, no
// biases) are the GptConfig's; docs/design/llama.md lists the parameters of each. Forward and
// backward are explicit; parameters come from a ParamSource and layer intermediates go to an
// ActivationStore, so the same code runs under every memory policy.
//
// Under tensor parallelism (layout.tp_size() > 1, `tp` its group) every rank computes on its
// shard: a vocab-parallel embedding, tensor-parallel layers (transformer_layer.h), a replicated
// final layernorm, the head tied to this rank's vocabulary shard (logits [N, Vp/tp] only) and the
// vocab-parallel cross-entropy. Per micro-batch the tp group all-reduces, in floats:
//   (4L + 2)·N·C + 3N   (per layer 2 forward + 2 backward [N, C]; the embedding's partial rows;
//                        the head's input gradient; the cross-entropy's max (N) and sums (2N))
//
// Under pipeline parallelism (layout.pipeline().size > 1) the model is one stage's part: its
// chunks' layers, the embedding on the first stage, the final layernorm, head and loss on the
// last (whose head weight is its own copy of the word embedding, the tied gradient summed with
// the first stage's by the caller). The pipeline runtime calls chunk_forward / chunk_backward
// per (micro-batch, chunk) in its schedule's order and moves their inputs and outputs.
#include <cstdint>
#include <vector>

#include "kernels/backend.h"
#include "kernels/backend_memory.h"
#include "src/comm/communicator.h"
#include "src/core/arena.h"
#include "src/model/activation_store.h"
#include "src/model/gpt_config.h"
#include "src/model/moe_mlp.h"
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
  // `tp`: the tensor-parallel group of size layout.tp_size(), null when that is 1; `cp` the
  // context-parallel group of size config.context_parallel, null when that is 1 (the model then
  // holds config.local_seq() tokens of each sample: context_split.h). The model's workspace comes
  // from ctx.pool() (activations) and it computes on ctx.backend().
  // `ep`: the expert-parallel group of size config.expert_parallel (null when that is 1), whose
  // rank is the layout's ep_rank().
  Gpt(const GptConfig& config, const ParamLayout& layout, int micro_batch, const DeviceContext& ctx,
      comm::Communicator* tp = nullptr, comm::Communicator* cp = nullptr,
      comm::Communicator* ep = nullptr);

  // One model chunk's pass of one micro-batch (pipeline parallelism). `input` and `output` are
  // [Nl, C] rows in the working precision (Nl = dims().Nl: this rank's rows).
  struct ChunkIO {
    int chunk = 0;
    const int32_t* tokens = nullptr;   // [B, T]: the first virtual stage (forward and backward)
    const int32_t* targets = nullptr;  // [B, T]: the last virtual stage (forward)
    Ref input;   // received from the previous virtual stage; the first embeds into it. Read by
                 // this chunk's backward again (the first layer's input): kept until then.
    Ref output;  // the chunk's output for the next virtual stage; on the last virtual stage the
                 // gradient of its last layer's output (the loss, head and final layernorm's
                 // backward run in its forward), which chunk_backward then takes as `dout`.
  };
  // Returns the micro-batch's mean loss on the last virtual stage, 0 elsewhere. Gradients of
  // the head and final layernorm are added here (the last virtual stage), scaled by `dloss`.
  // `rng` null: evaluation (dropout off, no gradient, no backward to follow).
  double chunk_forward(const ChunkIO& io, float dloss, ParamSource& params, ActivationStore& acts,
                       const DropoutSeeds* rng);
  // Backward of the chunk's layers from `dout` [Nl, C]; writes the gradient of its input to
  // `dinput` [Nl, C] except on the first virtual stage, which ends in the embedding's gradient.
  void chunk_backward(const ChunkIO& io, CRef dout, Ref dinput, ParamSource& params,
                      ActivationStore& acts, const DropoutSeeds& rng);

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
  // backward scratch) for one of `tp_size` ranks holding pipeline part `part`: what the
  // constructor allocates (the embedding's output on the first stage only, the final layernorm,
  // logits and losses on the last only).
  // The CPU kernels' scratch the model takes on the CPU backend (category activations, next to
  // the arena): attention's per-thread tiles for this rank's heads, for every OpenMP thread.
  static size_t kernel_scratch_bytes(const GptConfig& config, int micro_batch, int tp_size);
  static size_t arena_bytes(const GptConfig& config, int micro_batch, int tp_size,
                            const PipelinePart& part = {});
  // Whether backward acquires `p` again (the planner counts stage-3 gathers by it).
  static bool acquired_in_backward(const ParamSpec& p);
  // The most parameter elements the model (training, evaluation and GptDecoder) holds acquired
  // at once from a source of max_span() `max_span`, on the rank holding `layout`: one span (a
  // whole parameter or a chunk of its rows), or two whole parameters of one module held
  // together. A source that keeps no working parameters sizes its buffer by this.
  static int64_t held_params_elems(const GptConfig& config, const ParamLayout& layout,
                                   int64_t max_span);
  // [N, Vp/tp] in the backend's memory, in the working precision; dlogits after
  // forward_backward.
  CRef logits() const { return logits_; }
  // A mixture of experts' routing statistics of this part's MoE layers since the last
  // reset_totals() (training forwards only, not their recomputation).
  MoeHost& moe() { return moe_host_; }
  const LayerDims& dims() const { return dims_; }

 private:
  double forward(const int32_t* tokens, const int32_t* targets, float dloss, ParamSource& params,
                 ActivationStore& acts, const DropoutSeeds* rng);
  // Embedding, layers, final layernorm and head: leaves the logits in logits_.
  void forward_to_logits(const int32_t* tokens, ParamSource& params, ActivationStore& acts,
                         const DropoutSeeds* rng);
  void backward(const int32_t* tokens, ParamSource& params, ActivationStore& acts,
                const DropoutSeeds* rng);
  // The layers' forward from `x` (this rank's rows); returns the last one's output.
  CRef layers_forward(const std::vector<int>& layers, CRef x, ParamSource& params,
                      ActivationStore& acts, const DropoutSeeds* rng);
  // The final layernorm and the head from the last layer's output `x`: logits into logits_.
  void head_forward(CRef x, ParamSource& params);
  // The cross-entropy of logits_ (dlogits left in logits_, scaled by dloss): the mean loss.
  double loss(const int32_t* targets, float dloss);
  // The head's and the final layernorm's backward: the gradient of the last layer's output into
  // `dres` (this rank's rows; overwritten).
  void head_backward(ParamSource& params, Ref dres);
  // Backward of `layers` (reverse order), the residual gradient in `dres` (this rank's rows).
  void layers_backward(const std::vector<int>& layers, Ref dres, ParamSource& params,
                       ActivationStore& acts, const DropoutSeeds* rng);
  LayerDropout dropout(int layer, const DropoutSeeds* rng) const;
  // The vocab-parallel embedding of `tokens` into embed_out_, over the word embedding's chunks.
  void embed(const int32_t* tokens, ParamSource& params);
  // This rank's vocabulary rows of every token into embed_out_ (0 for the others), chunk by
  // chunk: the partial sum tensor parallelism then reduces.
  void embed_word_rows(const int32_t* tokens, ParamSource& params);
  // Rows per chunk of the learned position table (1 when there is none: rope).
  int64_t position_chunk(const ParamSource& params) const;
  // The embedding by word rows, then position rows run by run: into this rank's rows only under
  // sequence parallelism, at each token's place in the sample under context parallelism.
  void embed_split(const int32_t* tokens, ParamSource& params);
  // The tied embedding's gradient: the head's dlogitsᵀ·lnf_out (dlogits stay in logits_ through
  // backward; when this part holds the head) plus the lookup's rows and the position table
  // (when it holds the embedding), chunk by chunk, each element of the block once.
  void embedding_grads(const int32_t* tokens, ParamSource& params);

  GptConfig config_;
  Backend& be_;
  LayerDims dims_;
  PipelinePart part_;
  std::vector<std::vector<int>> chunk_layers_;  // per chunk: its layers, in forward order
  bool embeds_ = true, heads_ = true;  // holds the embedding / the final layernorm, head, loss
  int vocab_begin_ = 0;  // this rank's vocabulary rows [vocab_begin_, vocab_begin_ + vocab_local_)
  int vocab_local_ = 0;
  std::vector<LayerRefs> layers_;       // by model layer; only this part's are set
  ParamRef wte_, wpe_, lnf_w_, lnf_b_;  // wpe_ empty under rope, lnf_b_ under RMSNorm
  ParamRef out_;                        // the untied output layer [Vp/tp, C] (empty when tied)
  LinearRefs head_;        // the head's weight [Vp/tp, C] (the word embedding or out_), no bias
  Arena arena_;            // embedding output, final layernorm, logits, losses, backward scratch
  Buffer kernel_scratch_;  // kernel_scratch_bytes(), on the CPU backend
  KernelScratch kernel_scratch_binding_;
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
  MoeHost moe_host_;
};

}  // namespace zt
