#pragma once
// ResidentWeights: a ParamSource over every parameter of a layout, held in one buffer in the
// working precision: what generation of a loaded model computes on, with no optimizer states
// and no gradients. By default nothing is cut (max_span is the largest parameter), so the
// model's GEMMs are its fused ops. Asking for gradients is a programming error.
#include <cstdint>
#include <vector>

#include "kernels/backend.h"
#include "src/core/memory_pool.h"
#include "src/model/param_layout.h"
#include "src/model/param_source.h"

namespace zt {

class ResidentWeights final : public ParamSource {
 public:
  // Zeros, in ctx.pool() (MemCategory::Params), in `dtype`. `max_span` > 0 cuts the parameters
  // into chunks of at most that many elements, as a ZeRO source's bucket does (tests of the
  // model's chunked paths); 0: nothing is cut.
  ResidentWeights(const ParamLayout& layout, DType dtype, const DeviceContext& ctx,
                  int64_t max_span = 0);

  // Elements [offset, offset + n) of the layout's flat order from fp32 host values, rounded to
  // the working precision.
  void set(int64_t offset, const float* host, int64_t n);

  int64_t max_span() const override { return max_span_; }
  CRef acquire(const Span& s) override;
  void release(const Span&) override {}
  float* open_grads(const Span& s) override;
  void close_grads(const Span&) override {}

 private:
  ParamLayout layout_;
  DType dtype_;
  Backend& be_;
  Buffer data_;
  int64_t max_span_ = 1;
  std::vector<char> staging_;
};

}  // namespace zt
