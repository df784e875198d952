#pragma once
// GptDecoder: the model's forward for generation, one sequence at a time, with a key/value
// cache. append() runs only the new tokens through the layers: each layer's keys and values of
// every earlier position are kept (this rank's key/value heads, [max_positions, kv_hidden/tp] per
// layer and each of k and v; fewer than the query heads under grouped-query attention), so a step
// costs one row of every GEMM and one cached attention row (attention_cached_forward), not a
// forward over the prefix. The math is Gpt's forward with dropout off, reached through the same
// ParamSource and the same chunked GEMMs, so a trained model's parameters serve as they are, under
// any policy (resident weights, or a ZeRO stage). Every architecture GptConfig expresses: learned
// positions or rotary embeddings (applied to the new rows' q and k at their absolute positions
// before k is cached), LayerNorm or RMSNorm, GeLU or SwiGLU, multi-head or grouped-query attention,
// with or without linear biases, tied or untied head, and mixture-of-experts layers, run by
// training's moe_forward over the new rows (B = 1, T = n): dropless routing is per token, so
// their logits are training's; with a capacity, an append's tokens compete for it among
// themselves.
//
// Tensor parallelism as in training: column-parallel qkv and fc, row-parallel proj and mlp proj
// (all-reduced over `tp`), the vocab-parallel embedding, and the head (the word embedding or the
// untied output layer) on this rank's vocabulary
// shard; the last position's logits are all-gathered over `tp`, so every rank holds the whole
// row and picks the same next token. Sequence parallelism does not apply (a step has one row).
// One pipeline stage only: the layout must hold every layer.
//
// Memory: one arena from ctx.pool() in MemCategory::KvCache, the cache and the workspace of up to
// max_positions rows (a MoE layer's of max_positions · topk routed rows), sized by bytes().
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/backend.h"
#include "src/comm/communicator.h"
#include "src/core/arena.h"
#include "src/model/chunked_linear.h"
#include "src/model/gpt_config.h"
#include "src/model/layer_activations.h"
#include "src/model/moe_mlp.h"
#include "src/model/param_layout.h"
#include "src/model/param_source.h"
#include "src/model/transformer_layer.h"

namespace zt {

class GptDecoder {
 public:
  // `max_positions`: the longest sequence it holds, at most config.seq_length (the position
  // table, or the sequences a rope model was trained on). `tp`: the tensor-parallel group of
  // layout.tp_size() ranks (null at 1).
  GptDecoder(const GptConfig& config, const ParamLayout& layout, int max_positions,
             const DeviceContext& ctx, comm::Communicator* tp = nullptr);

  // Runs `tokens` (host memory, ids in [0, vocab_size)) at positions [length(), length() + n)
  // and keeps their keys and values; logits() becomes the last one's. Collective over tp (and
  // over whatever the ParamSource gathers on).
  void append(std::span<const int32_t> tokens, ParamSource& params);
  // The logits of the last appended position over the real vocabulary (padding left out), fp32,
  // host memory; identical on every tensor-parallel rank.
  std::span<const float> logits() const {
    return {logits_host_.data(), static_cast<size_t>(config_.vocab_size)};
  }
  int length() const { return length_; }
  int capacity() const { return max_positions_; }
  // Forgets the sequence (the cache is overwritten from position 0).
  void clear() { length_ = 0; }

  // Bytes of the arena for one of `tp_size` ranks.
  static size_t bytes(const GptConfig& config, int max_positions, int tp_size);

 private:
  void embed(int n, ParamSource& params);
  void layer(int i, int n, ParamSource& params);
  // y [n, C] = the row-parallel layer `l` of x, summed over tp, with its bias.
  void row_parallel(const LinearRefs& l, Ref y, CRef x, int n, ParamSource& params);
  void head(int n, ParamSource& params);

  GptConfig config_;
  Backend& be_;
  comm::Communicator* tp_;
  int max_positions_ = 0;
  int length_ = 0;
  TpDims dims_;
  RopeFreqs rope_freqs_;  // the rotary inverse frequencies (rope only)
  std::vector<LayerRefs> layers_;
  ParamRef wte_, wpe_, lnf_w_, lnf_b_;  // wpe_ absent under rope, lnf_b_ under RMSNorm
  LinearRefs head_;
  Arena arena_;
  std::vector<Ref> k_cache_, v_cache_;                     // per layer [max_positions, Ckv]
  Ref x_, res2_, y_, ln_, qkv_, att_, ff_, pre_, logits_;  // pre_: the fc output [T, F1]
  // MoE layers (moe_forward's forward fields only): the routing, the experts' rows and output
  // (fch is pre_, sized for T·k rows of the experts' first product), the host side.
  LayerDims moe_dims_{};
  LayerActivations moe_acts_;
  LayerScratch moe_scratch_;
  MoeHost moe_host_;
  float* mean_ = nullptr;  // [max_positions]
  float* rstd_ = nullptr;
  int32_t* tokens_ = nullptr;       // [max_positions] the step's tokens, in the backend's memory
  std::vector<float> logits_host_;  // [padded vocabulary]
};

}  // namespace zt
