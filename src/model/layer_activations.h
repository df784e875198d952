#pragma once
// The intermediates one transformer layer's forward writes and its backward reads.
// N = micro_batch * seq tokens, C = hidden, H = this rank's heads, C/tp and 4C/tp this rank's
// attention and MLP widths (tensor parallelism splits qkv, lse, atty and fch; the rest is
// replicated).
// The layernorm outputs and the GeLU output are not kept: backward recomputes them from what is
// kept (input, mean, rstd; the pre-GeLU values) for a few element-wise passes, which saves
// 6·N·C floats per layer.
#include "src/core/arena.h"
#include "src/core/typed_ref.h"
#include "src/model/gpt_config.h"

namespace zt {

// The statistics are fp32; the rest is in the working precision (config.dtype).
struct LayerActivations {
  float* ln1_mean = nullptr;  // [N]
  float* ln1_rstd = nullptr;  // [N]
  Ref qkv;                    // [N, (C + 2Ckv)/tp] q|k|v (q and k rotated under rope; under
                              // the all-to-all [N, context_qkv_width], head-split)
  float* lse = nullptr;       // [B, H, T] attention log-sum-exp per query row
  Ref atty;                   // [N, C/tp] attention output before the projection
  Ref res2;                   // [N, C] input + attention branch
  float* ln2_mean = nullptr;  // [N]
  float* ln2_rstd = nullptr;  // [N]
  Ref fch;                    // [N, F/tp] before GeLU; [N, 2F/tp] gate|up under SwiGLU
  Ref out;                    // [N, C] layer output (the next layer's input)
  // A mixture of experts (every layer of a MoE model; src/model/moe_mlp.h), k of E experts per
  // token, M = N·k rows at most: the router's scores [N, E], each token's experts, weights and
  // rows among the experts' [N, k], the rows per expert [E], the load-balancing loss's gradient
  // on every score [E], the experts' output rows [M, C]. fch is [M, 2F'/tp] in a MoE layer.
  float* moe_scores = nullptr;
  int32_t* moe_experts = nullptr;
  float* moe_weights = nullptr;
  int32_t* moe_slots = nullptr;
  int32_t* moe_rows = nullptr;  // [E] rows sent to each expert; with ep, [E] more received
  float* moe_dscores = nullptr;
  Ref moe_out;  // [M + N_s, C]: the shared expert's output rows follow the M routed ones
  // With a shared expert (kc = k + 1 per token: its output is one more combined row): the
  // combine's rows and weights [N, kc], its pre-activation [N, 2Fs/tp]; with its gate, the
  // gate's value and (the routing kernel's, all 0) index [N].
  int32_t* moe_cslots = nullptr;
  float* moe_cweights = nullptr;
  Ref moe_shared_pre;
  float* moe_gate = nullptr;
  int32_t* moe_gate_index = nullptr;

  // Bytes of one workspace for `micro_batch` sequences on one of `tp_size` tensor-parallel
  // ranks, as carve() lays it out.
  static size_t bytes(const GptConfig& c, int micro_batch, int tp_size = 1);
  static LayerActivations carve(Arena& arena, const GptConfig& c, int micro_batch, int tp_size = 1);
  // Elements of one layer input [N, C] a rank holds: N/tp rows under sequence parallelism.
  static int64_t input_elems(const GptConfig& c, int micro_batch, int tp_size = 1);
  // Whether every tensor-parallel rank holds the same layer input (what Pa slices).
  static bool input_replicated(const GptConfig& c, int tp_size) {
    return !splits_sequence(c, tp_size);
  }
};

}  // namespace zt
