#pragma once
// The parameter stores that keep every working parameter (stages 0-2); see param_store.h.
#include <cstdint>
#include <functional>

#include "kernels/backend.h"
#include "src/comm/communicator.h"
#include "src/core/memory_pool.h"
#include "src/zero/param_store.h"
#include "src/zero/partition.h"
#include "src/zero/unit_groups.h"

namespace zt {

// Stage 0: layout order. In fp32 the working parameters are the master parameters themselves.
class ResidentParams final : public ParamStore {
 public:
  ResidentParams(const ParamLayout& layout, DType working, const DeviceContext& ctx);
  CRef acquire(const Span& s) override;
  void release(const Span&) override {}
  void from_master(const float* master) override;
  void from_master_range(int64_t shard_offset, int64_t len, const float* master) override;
  void from_host_range(int64_t shard_offset, int64_t len, const void* host) override;
  void finish_from_master() override {}
  void from_full(const float*, const float* master) override { from_master(master); }
  // The shard is the layout: an acquire waits for its own span's elements.
  void defer_finish(std::function<void(int64_t)> written) override {
    written_ = std::move(written);
  }
  void finish_deferred() override { written_ = nullptr; }
  Tensor params() const { return params_.view({layout_.numel()}, working_); }
  Tensor layout_params() const override { return params(); }

 private:
  const ParamLayout& layout_;
  DType working_;
  Backend& be_;
  Buffer params_;
  std::function<void(int64_t)> written_;  // set while an update runs behind the forward
};

// Stages 1-2: the partition's padded space, made from the seed on every rank (no collective).
// `chunk`/`chunk_elems`: fp32 device workspace for conversions.
class PaddedParams final : public ParamStore {
 public:
  PaddedParams(const ParamLayout& layout, const Partition& part, DType working,
               const DeviceContext& ctx, const UnitGroups& groups, int64_t allgather_elems,
               uint64_t seed, float* chunk, int64_t chunk_elems);
  CRef acquire(const Span& s) override;
  void release(const Span&) override {}
  void from_master(const float* master) override;
  void from_master_range(int64_t shard_offset, int64_t len, const float* master) override;
  void from_host_range(int64_t shard_offset, int64_t len, const void* host) override;
  void finish_from_master() override;
  void from_full(const float* full, const float* master) override;
  void defer_finish(std::function<void(int64_t)> written) override;
  void finish_deferred() override;

 private:
  // All-gathers the units from gathered_ through `unit`, each once the update has written this
  // rank's part of it, and waits for them.
  void gather_through(int unit);
  // Where element `within` of this rank's part of `unit` lies in the padded space.
  void* own_part(int unit, int64_t within) const;

  const ParamLayout& layout_;
  const Partition& part_;
  DType working_;
  DeviceContext ctx_;
  Backend& be_;
  comm::Communicator& dp_;  // the stamps of the overlap log
  UnitGroups groups_;       // each unit's collectives
  int64_t allgather_elems_;
  float* chunk_;
  int64_t chunk_elems_;
  Buffer params_;
  std::function<void(int64_t)> written_;  // set while an update runs behind the forward
  int gathered_ = 0;                      // then: the units below it are gathered
};

}  // namespace zt
