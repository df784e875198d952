#pragma once
// Vocab-parallel word embedding (Megatron's VocabParallelEmbedding). Rank r holds rows
// [v_begin, v_begin + v_local) of the (padded) table. Forward looks up the tokens it owns
// (zero rows for the others), all-reduces the partial embeddings over tp — exactly one rank
// contributes a non-zero row per token, so the sum is that row bit for bit — then adds the
// position embedding once. Backward needs no communication: the output gradient is replicated,
// each rank scatters it into the rows it owns, and the position gradient is identical on all.
#include <cstdint>

#include "kernels/backend.h"
#include "src/comm/communicator.h"

namespace zt::tp {

struct VocabRange {
  int begin = 0;  // first global row held here
  int local = 0;  // rows held here
};
// This rank's rows of a padded vocabulary of `padded_vocab` rows (divisible by the tp size).
VocabRange vocab_range(int padded_vocab, int tp_size, int tp_rank);

// out [B*T, C] = wte[tok] + wpe[t]. wte: this rank's [range.local, C] rows; wpe [T, C].
void vocab_parallel_embedding_forward(Backend& be, comm::Communicator* tp, Ref out,
                                      const int32_t* tokens, CRef wte, CRef wpe, int B, int T,
                                      int C, VocabRange range);
// dwte (local rows) += ..., dwpe += ... from the replicated dout [B*T, C].
void vocab_parallel_embedding_backward(Backend& be, float* dwte, float* dwpe, CRef dout,
                                       const int32_t* tokens, int B, int T, int C,
                                       VocabRange range);

}  // namespace zt::tp
