#include "src/model/layer_activations.h"

namespace zt {
namespace {

// Applies `f(ptr_member, numel)` to every field in one fixed order, so bytes() and carve() agree.
template <typename F>
void for_each_field(LayerActivations& a, const GptConfig& c, int micro_batch, F&& f) {
  const int64_t n = int64_t{micro_batch} * c.seq_length, h = c.hidden, f4 = c.ffn_hidden();
  const int64_t att = int64_t{micro_batch} * c.heads * c.seq_length * c.seq_length;
  f(a.ln1_mean, n);
  f(a.ln1_rstd, n);
  f(a.qkv, 3 * n * h);
  f(a.att, att);
  f(a.atty, n * h);
  f(a.res2, n * h);
  f(a.ln2_mean, n);
  f(a.ln2_rstd, n);
  f(a.fch, n * f4);
  f(a.out, n * h);
}

}  // namespace

size_t LayerActivations::bytes(const GptConfig& c, int micro_batch) {
  LayerActivations a;
  size_t total = 0;
  for_each_field(a, c, micro_batch,
                 [&](float*&, int64_t n) { total += Arena::aligned(static_cast<size_t>(n) * 4); });
  return total;
}

LayerActivations LayerActivations::carve(Arena& arena, const GptConfig& c, int micro_batch) {
  LayerActivations a;
  for_each_field(a, c, micro_batch,
                 [&](float*& p, int64_t n) { p = arena.carve({n}, DType::F32).f32(); });
  return a;
}

}  // namespace zt
