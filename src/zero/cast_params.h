#pragma once
// Stage 0's parameter store without a working copy (see param_store.h): every rank holds the
// whole fp32 master of its shard, and a half-precision working parameter is exactly that master
// rounded, so none is kept. acquire() rounds the span's master elements into an arena, released
// spans free their room last-in first-out (the model releases in reverse acquire order), and the
// arena holds the most the model holds at once (Gpt::held_params_elems): allocated once, 2 bytes
// per element of that bound instead of 2 per parameter, for one cast per acquire.
#include <cstdint>
#include <vector>

#include "kernels/backend.h"
#include "src/core/error.h"
#include "src/core/memory_pool.h"
#include "src/model/param_layout.h"
#include "src/zero/param_store.h"

namespace zt {

class CastParams final : public ParamStore {
 public:
  // `arena_elems`: the most elements held at once; `master`: the fp32 master in layout order.
  CastParams(const ParamLayout& layout, DType working, const DeviceContext& ctx,
             int64_t arena_elems, const float* master);
  CRef acquire(const Span& s) override;
  void release(const Span& s) override;
  // Nothing to refresh: the next acquire reads the updated master.
  void from_master(const float* master) override { master_ = master; }
  // Only the whole resident master (it is read on every acquire: offloaded states are refused).
  void from_master_range(int64_t shard_offset, int64_t, const float* master) override {
    ZT_CHECK(shard_offset == 0, "cast working parameters need the master resident");
    master_ = master;
  }
  void finish_from_master() override {}
  void from_full(const float*, const float* master) override { master_ = master; }
  const CastStats* cast_stats() const override { return &stats_; }
  // The arena's bytes for `elems` held elements in `working` (what the constructor allocates).
  static size_t arena_bytes(int64_t elems, DType working);

 private:
  struct Held {
    int64_t layout_offset = 0, len = 0;
    int64_t at = 0;  // first arena element
    bool released = false;
  };
  const ParamLayout& layout_;
  DType working_;
  Backend& be_;
  const float* master_;
  int64_t capacity_;
  Buffer arena_;
  std::vector<Held> held_;  // in acquire order
  int64_t top_ = 0;         // arena elements in use
  CastStats stats_;
};

}  // namespace zt
