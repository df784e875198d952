#include "src/model/layer_activations.h"

#include <algorithm>
#include <type_traits>

#include "src/model/moe_slots.h"

namespace zt {
namespace {

// Applies `f(ptr_member, numel)` to every field in one fixed order, so bytes() and carve() agree.
template <typename F>
void for_each_field(LayerActivations& a, const GptConfig& c, int micro_batch, int tp, F&& f) {
  const TpDims d = TpDims::of(c, tp, 0);
  const int64_t n = int64_t{micro_batch} * c.local_seq(), h = c.hidden, hl = d.hidden;
  // q|k|v of this rank's heads; under context parallelism as the head groups hold them
  const int64_t qkv =
      c.context_parallel > 1 ? context_qkv_width(c, tp) : hl + 2 * int64_t{d.kv_hidden};
  // The MLP's first product: a dense layer's [n, f4], or the rows this rank's experts run.
  const int64_t f4 = c.swiglu ? 2 * int64_t{d.ffn} : d.ffn;
  const int64_t E = c.num_experts, k = c.moe_topk;
  int64_t fch = n * f4;
  if (c.moe())
    fch =
        std::max(fch, moe_expert_rows_max(c, n) * (c.swiglu ? 2 * int64_t{d.moe_ffn} : d.moe_ffn));
  const int64_t nl = local_rows(c, n, tp);  // the rows outside the tensor-parallel regions
  const int64_t rows = int64_t{micro_batch} * d.heads * c.local_seq();  // attention query rows
  f(a.ln1_mean, nl);
  f(a.ln1_rstd, nl);
  f(a.qkv, n * qkv);
  f(a.lse, rows);
  f(a.atty, n * hl);
  f(a.res2, nl * h);
  f(a.ln2_mean, nl);
  f(a.ln2_rstd, nl);
  f(a.fch, fch);
  f(a.out, nl * h);
  if (!c.moe()) return;
  f(a.moe_scores, n * E);
  f(a.moe_experts, n * k);
  f(a.moe_weights, n * k);
  f(a.moe_slots, n * k);
  f(a.moe_rows, c.expert_parallel > 1 ? 2 * E : E);
  f(a.moe_dscores, E);
  const int64_t shared = c.moe_shared_ffn > 0 ? n : 0;
  f(a.moe_out, (n * k + shared) * h);
  if (shared == 0) return;
  f(a.moe_cslots, n * (k + 1));
  f(a.moe_cweights, n * (k + 1));
  f(a.moe_shared_pre, n * (c.swiglu ? 2 : 1) * int64_t{d.moe_shared});
  if (!c.moe_shared_gate) return;
  f(a.moe_gate, n);
  f(a.moe_gate_index, n);
}

}  // namespace

int64_t LayerActivations::input_elems(const GptConfig& c, int micro_batch, int tp_size) {
  return local_rows(c, int64_t{micro_batch} * c.local_seq(), tp_size) * c.hidden;
}

size_t LayerActivations::bytes(const GptConfig& c, int micro_batch, int tp_size) {
  LayerActivations a;
  size_t total = 0;
  for_each_field(a, c, micro_batch, tp_size, [&](auto& field, int64_t n) {
    const size_t e = std::is_same_v<std::decay_t<decltype(field)>, Ref> ? dtype_size(c.dtype) : 4;
    total += Arena::aligned(static_cast<size_t>(n) * e);
  });
  return total;
}

LayerActivations LayerActivations::carve(Arena& arena, const GptConfig& c, int micro_batch,
                                         int tp_size) {
  LayerActivations a;
  for_each_field(a, c, micro_batch, tp_size, [&](auto& field, int64_t n) {
    if constexpr (std::is_same_v<std::decay_t<decltype(field)>, Ref>)
      field = Ref(arena.carve({n}, c.dtype).data(), c.dtype);
    else if constexpr (std::is_same_v<std::decay_t<decltype(field)>, int32_t*>)
      field = reinterpret_cast<int32_t*>(arena.carve({n}, DType::F32).f32());
    else
      field = arena.carve({n}, DType::F32).f32();
  });
  return a;
}

}  // namespace zt
