#pragma once
// Stage 0's gradient reducer: the whole gradient in the working precision, summed over the
// data-parallel group in constant-size buckets started as backward completes them (DpGradSync).
// In half precision each span is added in fp32 staging and rounded once into the kept gradient.
// The expert parameters' buckets are summed over `expert_dp` instead (null: dp).
#include <memory>
#include <vector>

#include "kernels/backend.h"
#include "src/core/memory_pool.h"
#include "src/zero/grad_reducer.h"
#include "src/zero/grad_staging.h"

namespace zt {

class AllReduceGrads final : public GradReducer {
 public:
  AllReduceGrads(const ParamLayout& layout, DType working, const DeviceContext& ctx,
                 comm::Communicator* dp, int64_t bucket_elems, bool overlap,
                 comm::Communicator* expert_dp = nullptr);
  float* open(const Span& s) override;
  void close(const Span& s) override;
  void begin_microbatch(bool last) override;
  void zero() override;
  void finish() override;
  const void* grad(const ShardSegment& s) const override;
  bool replicated() const override { return true; }
  GradSyncTiming timing() const override;
  Tensor grads() const { return grads_.view({layout_.numel()}, working_); }
  Tensor local_grads(int64_t layout_offset, int64_t len) override;
  Tensor layout_grads() const override { return grads(); }

 private:
  bool half() const { return working_ != DType::F32; }

  ParamLayout layout_;
  DType working_;
  Backend& be_;
  Buffer grads_;
  GradStaging staging_;           // half precision only
  std::vector<int64_t> pending_;  // per block: gradient elements not yet closed this backward
  std::unique_ptr<DpGradSync> sync_;
};

}  // namespace zt
