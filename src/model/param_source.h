#pragma once
// ParamSource is how the model reaches parameters it does not own. The model asks for one block
// (embedding, a layer, the final layernorm) at a time, in execution order; the policy behind it
// decides what that costs: a pointer into resident weights or an all-gather of ZeRO stage-3
// shards. The model never knows which.
#include "src/core/typed_ref.h"

namespace zt {

class ParamSource {
 public:
  virtual ~ParamSource() = default;
  // Parameters of `block` in the working precision, contiguous in ParamLayout order starting at
  // the block's first element; valid until release(block). A block may be acquired again after
  // release.
  virtual CRef acquire(int block) = 0;
  virtual void release(int block) = 0;
  // fp32 gradient region of `block` in the same order; the model adds its gradients into it
  // (possibly over several calls) and calls grads_done once the block's gradient for this
  // micro-batch is complete, which is when a policy may reduce or convert it.
  virtual float* grads(int block) = 0;
  virtual void grads_done(int block) = 0;
};

}  // namespace zt
