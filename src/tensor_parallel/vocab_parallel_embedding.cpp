#include "src/tensor_parallel/vocab_parallel_embedding.h"

#include "src/tensor_parallel/mappings.h"

namespace zt::tp {

VocabRange vocab_range(int padded_vocab, int tp_size, int tp_rank) {
  ZT_CHECK(tp_size > 0 && padded_vocab % tp_size == 0,
           "padded vocabulary {} does not split over {} tensor-parallel ranks", padded_vocab,
           tp_size);
  const int local = padded_vocab / tp_size;
  return VocabRange{tp_rank * local, local};
}

void vocab_parallel_embedding_forward(Backend& be, comm::Communicator* tp, Ref out,
                                      const int32_t* tokens, CRef wte, CRef wpe, int B, int T,
                                      int C, VocabRange range) {
  if (!active(tp)) {
    // tp = 1: one fused pass, the same bits as before tensor parallelism existed.
    be.embedding_forward(out, tokens, wte, wpe, B, T, C, range.begin, range.local);
    return;
  }
  be.embedding_forward(out, tokens, wte, CRef(nullptr, wte.t), B, T, C, range.begin, range.local);
  reduce_from_tp_forward(be, tp, out, int64_t{B} * T * C);
  // After the reduction, not before: added on every rank before the sum it would count tp times.
  // (wte row + 0 + … + wpe row rounds exactly like tp = 1's wte row + wpe row.)
  if (wpe.p != nullptr) be.add_broadcast(out, wpe, B, int64_t{T} * C);  // none under rope
}

void vocab_parallel_embedding_backward(Backend& be, float* dwte, float* dwpe, CRef dout,
                                       const int32_t* tokens, int B, int T, int C,
                                       VocabRange range) {
  be.embedding_backward(dwte, dwpe, dout, tokens, B, T, C, range.begin, range.local);
}

}  // namespace zt::tp
