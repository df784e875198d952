#include "src/tensor_parallel/grad_norm.h"

#include "src/tensor_parallel/mappings.h"

namespace zt::tp {

double grad_sum_squares(comm::Communicator* tp, double split_local, double replicated_local) {
  if (!active(tp)) return split_local + replicated_local;
  // The communicator reduces fp32: one rounding of the sum (~6e-8 relative), far below what a
  // clipping threshold or a logged norm resolves.
  float part = static_cast<float>(split_local);
  all_reduce(cpu_backend(), tp, &part, 1);  // a host scalar: `tp` must move host memory
  return static_cast<double>(part) + replicated_local;
}

}  // namespace zt::tp
