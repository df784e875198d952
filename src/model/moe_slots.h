#pragma once
// Where each routed token row goes among a rank's experts (docs/design/moe.md): rows ordered
// expert by expert, each expert's rows in token order, and — with a capacity — an expert's rows
// beyond it dropped, lowest router weight first (Megatron's "probs" policy). Host code: the
// dispatcher has the routing on the host for the grouped GEMM's row counts anyway.
#include <cstdint>
#include <span>
#include <vector>

#include "src/model/gpt_config.h"

namespace zt {

struct MoeSlots {
  std::vector<int32_t> slots;   // [N·k]: the row of token t's j-th choice, -1 when dropped
  std::vector<int64_t> rows;    // [E]: kept rows per expert
  std::vector<int64_t> picks;   // [E]: routed choices per expert before any drop
  int64_t dropped = 0;          // choices dropped over capacity
  std::vector<int32_t> order_;  // scratch: an expert's choices by weight
  std::vector<int64_t> next_;   // scratch: each expert's next row
  // Sizes every vector for N tokens of k choices among E experts (once; assign() reuses them).
  void reserve(int64_t N, int k, int E);
  // The rows an expert keeps of N·k choices at capacity factor `cf` (0: all of them):
  // ceil(cf · N · k / E), Megatron's capacity.
  static int64_t capacity(double cf, int64_t N, int k, int E);
  // Slots of `experts` / `weights` [N·k] (kernels' moe_route_forward output) at capacity `cap`
  // (< 0: none).
  void assign(std::span<const int32_t> experts, std::span<const float> weights, int64_t N, int k,
              int E, int64_t cap);
  int64_t total_rows() const;
};

// The most rows one rank's experts run for a micro-batch of `tokens` tokens per rank, what the
// constant dispatch buffers are sized by: its own tokens' N·k without expert parallelism; with
// it, every expert-parallel peer sending all its rows here (dropless), or at most each expert's
// capacity from each peer: E·cap over the rank's E/ep experts.
int64_t moe_expert_rows_max(const GptConfig& c, int64_t tokens);

}  // namespace zt
