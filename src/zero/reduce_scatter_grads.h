#pragma once
// The partitioned stages' gradient reducers, over the units of a Partition.
//   ReduceScatterAtStep (stage 1): the whole gradient kept in padded space; once the last
//     micro-batch has closed every span of a unit, its reduce-scatter starts in place, so the
//     own part of the sum lands where the rank's own part already is.
//   ReduceScatterUnits (stages 2-3): only the own shard kept; each unit is staged in the working
//     precision as its spans close and reduce-scattered the moment it is complete, every
//     micro-batch, and its part added (fp32, rounded once) into the shard. Off the device
//     (grad_tier) the shard is in host memory (category HostGrads) or on the NVMe tier
//     (SwappedGrads): each completed part is widened on the device, copied to the host and added
//     there by the same kernel on the host backend, so the device keeps only the staging and the
//     reductions in flight.
// Both are double-buffered, as DeepSpeed's reduce buckets: at most two units' reductions are
// staged or in flight (a half one holds an fp32 copy in the MPI communicator, so that staging is
// two units too). Two suffice because backward closes spans from the last element down (two
// spans at most open at once), so at most two units are ever filling together.
#include <optional>
#include <vector>

#include "kernels/backend.h"
#include "src/core/memory_pool.h"
#include "src/zero/grad_reducer.h"
#include "src/zero/grad_staging.h"
#include "src/zero/optimizer_states.h"
#include "src/zero/swapped_grads.h"
#include "src/zero/unit_groups.h"

namespace zt {

class ReduceScatterAtStep final : public GradReducer {
 public:
  static constexpr int kInFlight = 2;
  ReduceScatterAtStep(const ParamLayout& layout, const Partition& part, DType working,
                      const DeviceContext& ctx, const UnitGroups& groups, int64_t span_elems,
                      bool overlap);
  float* open(const Span& s) override;
  void close(const Span& s) override;
  void begin_microbatch(bool last) override;
  void zero() override;
  void finish() override;
  const void* grad(const ShardSegment& s) const override;
  bool replicated() const override { return false; }
  GradSyncTiming timing() const override;
  Tensor local_grads(int64_t layout_offset, int64_t len) override;

 private:
  bool half() const { return working_ != DType::F32; }
  void launch(int unit);

  const ParamLayout& layout_;
  const Partition& part_;
  DType working_;
  Backend& be_;
  comm::Communicator& dp_;  // the stamps of the overlap log
  UnitGroups groups_;       // each unit's collectives
  bool overlap_;
  Buffer grads_;  // padded space, working precision
  GradStaging staging_;
  std::vector<int64_t> pending_;  // per unit: gradient elements not yet closed
  std::vector<comm::Handle> handles_;
  std::vector<char> launched_;
  std::vector<int> order_;  // units launched, oldest first
  size_t waited_ = 0;
  bool last_microbatch_ = true;
  comm::OverlapLog log_;
};

class ReduceScatterUnits final : public GradReducer {
 public:
  static constexpr int kReductions = 2;  // units staged or in flight at once
  // `scratch`: fp32 workspace of at least the largest unit part, shared with the optimizer.
  // `tier`: where the own shard lives (grad_tier): the device, host memory, or the NVMe tier
  // (`swap` says where).
  ReduceScatterUnits(const ParamLayout& layout, const Partition& part, DType working,
                     const DeviceContext& ctx, const UnitGroups& groups, int64_t span_elems,
                     bool overlap, float* scratch, StateTier tier = StateTier::Device,
                     const StateTierConfig& swap = {});
  ~ReduceScatterUnits() override;
  float* open(const Span& s) override { return staging_.open(s); }
  void close(const Span& s) override;
  void begin_microbatch(bool) override {}
  void zero() override;
  void finish() override;
  const void* grad(const ShardSegment& s) const override;
  bool grads_on_host() const override { return on_host_; }
  bool grads_resident() const override { return !swapped_; }
  void read_grad(int64_t offset, int64_t len, void* host) const override;
  uint64_t swap_file_bytes() const override { return swapped_ ? swapped_->file_bytes() : 0; }
  bool replicated() const override { return false; }
  GradSyncTiming timing() const override;

 private:
  enum class Fill : uint8_t { Free, Filling, InFlight };
  struct Reduction {
    Buffer input, output;  // working precision: the unit, its own part of the sum
    comm::Handle handle;
    int unit = -1;
    Fill state = Fill::Free;
    uint64_t order = 0;
  };
  Reduction& filling(int unit);
  void poll();
  void launch(Reduction& r);
  void complete(Reduction& r);
  void land_host_part();

  const ParamLayout& layout_;
  const Partition& part_;
  DType working_;
  Backend& be_;
  comm::Communicator& dp_;  // the stamps of the overlap log
  UnitGroups groups_;       // each unit's collectives
  bool overlap_;
  float* scratch_;
  bool on_host_;
  Buffer shard_;  // the own shard, working precision (not on the NVMe tier)
  // The NVMe tier's (mutable: a read moves its buffer, not the gradient).
  mutable std::optional<SwappedGrads> swapped_;
  Buffer host_part_;  // on_host: one part widened to fp32, on the host
  int landing_ = -1;  // the unit whose part is on its way into host_part_
  GradStaging staging_;
  std::vector<int64_t> pending_;  // per unit
  std::vector<int> fill_;         // per unit: its Reduction while filling, else -1
  std::vector<Reduction> reductions_;
  uint64_t launches_ = 0;
  comm::OverlapLog log_;
  SideCopyGuard copies_{&be_};  // a part may be on its way into host_part_
};

}  // namespace zt
