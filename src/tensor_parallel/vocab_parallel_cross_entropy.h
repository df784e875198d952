#pragma once
// Vocab-parallel softmax cross-entropy (Megatron's _VocabParallelCrossEntropy). Each rank holds
// the logits of its vocabulary shard only, [N, v_local] for global columns
// [v_begin, v_begin + v_local); no rank ever forms the full [N, V] logits. Per row:
//   1. m = max over the real columns of every shard      — all-reduce (Max) of N floats
//   2. s = Σ exp(l - m) over the real columns, and z = l[target] - m from the shard owning the
//      target (0 elsewhere)                               — one all-reduce (Sum) of 2N floats
//   3. loss = log s - z; dlogits = (exp(l - m) / s - onehot(target)) · dloss, locally.
// Columns >= v_real (Megatron's vocabulary padding) get probability 0 and gradient 0.
// Communication per call: 3N floats all-reduced (N + 2N).
//
// The passes are Backend kernels (kernels/ops.inc vocab_ce_*) on the backend's memory: nothing
// goes through the host, on any backend.
#include <cstdint>

#include "kernels/backend.h"
#include "src/comm/communicator.h"
#include "src/tensor_parallel/vocab_parallel_embedding.h"

namespace zt::tp {

// logits [N, range.local] (fp32 or the working precision) are overwritten with dlogits; losses [N]
// (identical on every rank).
// scratch: 3N floats of the backend's memory. targets are global token ids in [0, v_real).
void vocab_parallel_cross_entropy(Backend& be, comm::Communicator* tp, Ref logits, float* losses,
                                  const int32_t* targets, int N, VocabRange range, int v_real,
                                  float dloss, float* scratch);

}  // namespace zt::tp
