#include "src/comm/communicator.h"

namespace zt::comm {

std::string_view reduce_op_name(ReduceOp op) {
  return op == ReduceOp::Sum ? "sum" : "max";
}

Handle& Handle::operator=(Handle&& o) noexcept {
  if (this != &o) {
    if (work_) work_->wait();  // never drop an in-flight operation
    work_ = std::move(o.work_);
  }
  return *this;
}

Handle::~Handle() {
  // wait() only throws when MPI itself fails; the watchdog aborts the job on a hang.
  if (work_) work_->wait();
}

bool Handle::test() {
  if (!work_) return true;
  if (!work_->test()) return false;
  work_->wait();  // completes the bookkeeping (fp32 -> half conversion, staging release)
  work_.reset();
  return true;
}

void Handle::wait() {
  if (!work_) return;
  work_->wait();
  work_.reset();
}

void Communicator::all_gather(Tensor output) {
  const int64_t m = output.numel() / size();
  all_gather(output.slice(rank() * m, Shape{m}), output);
}

Handle Communicator::all_gather_async(Tensor output) {
  const int64_t m = output.numel() / size();
  return all_gather_async(output.slice(rank() * m, Shape{m}), output);
}

}  // namespace zt::comm
