#pragma once
// A mixture-of-experts MLP (docs/design/moe.md): the router, top-k routing, the experts' two
// products as grouped GEMMs over the rows each expert received, and the weighted combine, with
// the load-balancing loss's gradient entering through the router's scores.
//
// Expert tensor parallelism equals tp: every tp rank routes all N tokens alike (the router is
// replicated) and runs its 1/tp of every expert's MLP width, so the combined output is a partial
// sum reduced over tp as the dense MLP's row-parallel output is; the combine weights' gradient
// (an inner product with that partial output) is all-reduced over tp.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "src/model/moe_slots.h"
#include "src/model/moe_stats.h"
#include "src/model/param_ref.h"
#include "src/model/transformer_layer.h"

namespace zt {

// The routing's host side, one per model, sized once: the dispatcher's slots and row counts, and
// what a step records.
class MoeHost {
 public:
  MoeHost(const GptConfig& c, int64_t tokens);
  MoeSlots slots;
  std::vector<int32_t> experts;  // [N·k]
  std::vector<float> weights;    // [N·k]
  std::vector<float> scores;     // [N·E] (what the statistics read)
  // Kept rows per expert as the activations keep them: [E] sent to each expert; with expert
  // parallelism [E] more, received from peer s for this rank's expert l at E + s·E/ep + l.
  std::vector<int32_t> rows32;
  // The rows this rank's experts run (all E, or its E/ep), and each one's first row; the last
  // entry: all rows.
  std::vector<int64_t> rows;
  std::vector<int64_t> first;
  // The counts' staging [2E] (expert parallelism's all-to-all, the context group's sum of the
  // picks), and with expert parallelism the elements sent to and received from each peer
  // (all_to_all_v's counts).
  std::vector<float> counts;
  std::vector<int64_t> send_elems, recv_elems;
  std::vector<int64_t> cursor;  // [E] the permutation's next row of each expert
  std::vector<float> dscores;   // [E]
  std::vector<int64_t> picks;   // [E] choices per expert over the context group's tokens
  // With a shared expert: the combine's rows and weights [N, k + 1], the gate's values [N].
  std::vector<int32_t> cslots;
  std::vector<float> cweights;
  std::vector<float> gate;
  // Set by the model per pass: the loss gradient's scale of a token (forward's dloss), and
  // whether this forward is training's first (not a recomputation, not evaluation).
  float dloss = 0;
  bool recording = false;
  std::vector<MoeLayerTotals> totals;  // by model layer
  void reset_totals() { std::fill(totals.begin(), totals.end(), MoeLayerTotals{}); }
};

// The MoE part of LayerScratch: its bytes, and carved from `arena` into s (nothing for a dense
// model), one walk for both.
size_t moe_scratch_bytes(const GptConfig& c, int micro_batch, int tp_size);
void carve_moe_scratch(Arena& arena, LayerScratch& s, const GptConfig& c, int micro_batch,
                       int tp_size);

// forward: y [N, C] (the scratch the dense path's row-parallel output takes) from x = the
// gathered normalised input [N, C]; returns where this rank's summed rows are (y, or `local`
// [Nl, C] under sequence parallelism). `layer`: the model layer (its statistics).
Ref moe_forward(const LayerDims& d, ParamSource& src, const MoeRefs& p, LayerActivations& a,
                const LayerScratch& s, CRef x, Ref y, Ref local, int layer);
// backward, first part: from dy [N, C] (gathered) to the experts' contribution to the input
// gradient, a partial sum over tp, into dx [N, C]; the experts' second weight's gradient.
void moe_backward_input(const LayerDims& d, ParamSource& src, const MoeRefs& p,
                        const LayerActivations& a, const LayerScratch& s, CRef dy, Ref dx);
// The router's part of the input gradient, added to this rank's summed rows dx_local [Nl, C].
void moe_router_input_grad(const LayerDims& d, ParamSource& src, const MoeRefs& p,
                           const LayerScratch& s, Ref dx_local);
// The first weight's and the router's gradients from x = the recomputed normalised input [N, C].
void moe_backward_params(const LayerDims& d, ParamSource& src, const MoeRefs& p,
                         const LayerActivations& a, const LayerScratch& s, CRef x);

}  // namespace zt
