#pragma once
// The communicator each partition unit (or gradient bucket) is reduced and gathered over:
// dense parameters are identical on the whole data-parallel group, a routed expert's only on its
// expert-data-parallel group (edp, a sub-group of dp holding the same experts;
// docs/design/moe.md). Without an expert group both are dp.
#include <cstddef>

#include "src/comm/communicator.h"
#include "src/zero/partition.h"

namespace zt {

class UnitGroups {
 public:
  UnitGroups(comm::Communicator& dp, comm::Communicator* edp)
      : dp_(&dp), edp_(edp != nullptr ? edp : &dp) {}
  comm::Communicator& dp() const { return *dp_; }
  comm::Communicator& edp() const { return *edp_; }
  comm::Communicator& of(const PartitionUnit& u) const { return u.expert ? *edp_ : *dp_; }
  // Half-precision reductions stage in the communicator that runs them: both groups.
  void reserve_staging(size_t elements, int count) const {
    dp_->reserve_staging(elements, count);
    if (edp_ != dp_) edp_->reserve_staging(elements, count);
  }

 private:
  comm::Communicator* dp_;
  comm::Communicator* edp_;
};

}  // namespace zt
