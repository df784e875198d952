#pragma once
// ParamSource is how the model reaches parameters it does not own. The model asks for spans of
// a block's parameters (a whole small tensor, or a chunk of whole rows of a large one) in
// execution order; the policy behind it decides what that costs: a pointer into resident weights
// or an all-gather of ZeRO stage-3 shards. The model never knows which.
//
// No span is longer than max_span() elements (one row, where a row is longer): the model cuts
// every parameter by ParamSpec::chunk_rows(max_span()), so the policy's buffers are sized by
// that bound, not by the largest layer or the vocabulary.
#include <cstdint>

#include "src/core/typed_ref.h"

namespace zt {

// Elements [offset, offset + len) of block `block`, offsets relative to the block's first
// element in ParamLayout order. Always whole rows of one parameter or whole parameters.
struct Span {
  int block = 0;
  int64_t offset = 0;
  int64_t len = 0;
};

class ParamSource {
 public:
  virtual ~ParamSource() = default;
  virtual int64_t max_span() const = 0;
  // The span's parameters in the working precision, contiguous; valid until release(span). At
  // most a few spans are held at once (a weight chunk and its bias, a layernorm's two vectors,
  // the layernorm held across the linear it feeds).
  virtual CRef acquire(const Span& s) = 0;
  virtual void release(const Span& s) = 0;
  // An fp32 region for the span's gradient: the model adds into it and closes it. Every element
  // of every block is opened and closed exactly once per micro-batch's backward, which is how a
  // policy knows a range is complete and may be reduced. At most two spans are open at once, at
  // most one of them of a matrix (a weight's chunk with its bias, a layernorm's two vectors).
  virtual float* open_grads(const Span& s) = 0;
  virtual void close_grads(const Span& s) = 0;
};

}  // namespace zt
