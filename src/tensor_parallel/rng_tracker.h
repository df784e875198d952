#pragma once
// RngTracker: which dropout mask each site draws, under tensor parallelism.
//
// Masks are counter-based (kernels/common/dropout.h: keep(i) = f(stream, offset + i)), so a mask
// is fixed by naming, for every element, its stream and its counter. The tracker names them by
// the element's place in the *full* (tp = 1) tensor:
//   - replicated tensors ([N, C] residual branches): the same stream and counter on every TP
//     rank, so the ranks drop the same elements and the replicas stay identical;
//   - split tensors (attention probabilities [B, H, T, T] over this rank's heads): the counter
//     of local head hl is that of global head tp_rank·H_local + hl. Ranks draw different masks
//     (they hold different heads) and each element gets exactly the mask tp = 1 draws for it,
//     so tp = N reproduces tp = 1 with dropout on. Megatron instead seeds a separate
//     model-parallel generator per rank (seed + 2718 + tp_rank), which is deterministic but
//     tp-dependent.
// Everything is a pure function of (--seed, layer, site, global sample index): the same under
// any data-parallel split, micro-batching, recompute or resume.
#include <cstdint>

#include "kernels/common/dropout.h"

namespace zt::tp {

class RngTracker {
 public:
  RngTracker(uint64_t seed, int64_t first_sample) : seed_(seed), first_sample_(first_sample) {}

  // The stream of dropout site `site` (a small integer unique per layer and purpose).
  uint64_t stream(uint64_t site) const { return mix64(seed_, site); }
  // A mask over a tensor whose sample s covers counters [s·per_sample, (s+1)·per_sample):
  // the micro-batch starts at its first global sample.
  DropoutParams mask(uint64_t site, float p, uint64_t per_sample) const {
    return DropoutParams{p, stream(site), static_cast<uint64_t>(first_sample_) * per_sample};
  }

 private:
  uint64_t seed_;
  int64_t first_sample_;
};

// `whole` is the mask of the full attention probabilities [B, H, T, T] of a micro-batch (what
// tp = 1 uses). Returns the mask of sample b's local heads [H_local, T, T], global heads
// [head_begin, head_begin + H_local), as the attention kernel indexes them for B = 1.
inline DropoutParams head_slice(const DropoutParams& whole, int b, int heads, int head_begin,
                                int T) {
  DropoutParams d = whole;
  const uint64_t tt = static_cast<uint64_t>(T) * static_cast<uint64_t>(T);
  d.offset += (static_cast<uint64_t>(b) * static_cast<uint64_t>(heads) +
               static_cast<uint64_t>(head_begin)) *
              tt;
  return d;
}

}  // namespace zt::tp
