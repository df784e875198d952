#include "src/tensor_parallel/vocab_parallel_cross_entropy.h"

#include "src/core/error.h"
#include "src/tensor_parallel/mappings.h"

namespace zt::tp {

void vocab_parallel_cross_entropy(Backend& be, comm::Communicator* tp, Ref logits, float* losses,
                                  const int32_t* targets, int N, VocabRange range, int v_real,
                                  float dloss, float* scratch) {
  ZT_CHECK(N > 0 && range.local > 0 && v_real > 0, "vocab_parallel_cross_entropy: N={} V={}", N,
           range.local);
  const int V = range.local, begin = range.begin;
  float* mx = scratch;    // [N]
  float* sum_z = mx + N;  // [N] sum-exp, then [N] target logit: one all-reduce for both
  be.vocab_ce_max(logits, mx, N, V, begin, v_real);
  all_reduce(be, tp, mx, N, comm::ReduceOp::Max);
  be.vocab_ce_sum_exp(logits, sum_z, mx, targets, N, V, begin, v_real);
  all_reduce(be, tp, sum_z, 2 * int64_t{N}, comm::ReduceOp::Sum);
  be.vocab_ce_grad(logits, losses, mx, sum_z, targets, N, V, begin, v_real, dloss);
}

}  // namespace zt::tp
