#pragma once
// Where the trainer's samples come from. A source is an endless stream of samples addressed by
// global position: the trainer maps (step, micro-step, data-parallel rank) to positions, so a
// rank reads only its slice of each global batch, every DP layout sees the same global batches,
// and a run resumed at a consumed-samples position continues the same stream.
#include <cstdint>

namespace zt {

class BatchSource {
 public:
  virtual ~BatchSource() = default;
  // tokens[0..seq) and targets[0..seq) (= the tokens shifted by one) of the sample at global
  // position `index`. Const but not thread-safe: sources keep read scratch and lazy indices.
  virtual void sample(int64_t index, int32_t* tokens, int32_t* targets) const = 0;
};

}  // namespace zt
