#include "src/tensor_parallel/sequence_parallel.h"

#include "src/core/error.h"
#include "src/tensor_parallel/mappings.h"

namespace zt::tp {

int64_t sequence_rows(const comm::Communicator* tp, int64_t n) {
  const int k = size_of(tp);
  ZT_CHECK(n % k == 0, "sequence parallelism: {} rows do not split over {} ranks", n, k);
  return n / k;
}

int64_t sequence_first_row(const comm::Communicator* tp, int64_t n) {
  return sequence_rows(tp, n) * rank_of(tp);
}

void sequence_gather_forward(Backend& be, comm::Communicator* tp, Ref full, CRef local, int64_t n,
                             int64_t c) {
  const int64_t m = sequence_rows(tp, n) * c;
  const Ref own_rows = full + sequence_first_row(tp, n) * c;
  if (own_rows.p != local.p) be.copy(own_rows.p, local.p, local.bytes(m));
  if (active(tp)) tp->all_gather(Tensor(full.p, Shape{n * c}, full.t, be.device()));
}

void sequence_gather_backward(Backend& be, comm::Communicator* tp, Ref dlocal, CRef dfull,
                              int64_t n, int64_t c) {
  const int64_t m = sequence_rows(tp, n) * c;
  if (!active(tp)) {
    if (dlocal.p != dfull.p) be.copy(dlocal.p, dfull.p, dfull.bytes(m));
    return;
  }
  // The communicator's input is not written, but its interface takes a Tensor.
  tp->reduce_scatter(Tensor(const_cast<void*>(dfull.p), Shape{n * c}, dfull.t, be.device()),
                     Tensor(dlocal.p, Shape{m}, dlocal.t, be.device()));
}

void sequence_scatter_forward(Backend& be, comm::Communicator* tp, Ref local, CRef full, int64_t n,
                              int64_t c) {
  const int64_t m = sequence_rows(tp, n) * c;
  const CRef own_rows = full + sequence_first_row(tp, n) * c;
  if (own_rows.p != local.p) be.copy(local.p, own_rows.p, own_rows.bytes(m));
}

}  // namespace zt::tp
