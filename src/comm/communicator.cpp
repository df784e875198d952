#include "src/comm/communicator.h"

namespace zt::comm {

std::string_view reduce_op_name(ReduceOp op) {
  return op == ReduceOp::Sum ? "sum" : "max";
}

Handle& Handle::operator=(Handle&& o) noexcept {
  if (this != &o) {
    if (work_) work_->wait();  // never drop an in-flight operation
    work_ = std::move(o.work_);
    started_ = std::move(o.started_);
    finished_ = std::move(o.finished_);
  }
  return *this;
}

Handle::~Handle() {
  // wait() only throws when MPI itself fails; the watchdog aborts the job on a hang.
  if (work_) work_->wait();
}

void Handle::keep_stamps() {
  started_ = work_->started();
  finished_ = work_->finished();
  work_.reset();
}

bool Handle::test() {
  if (!work_) return true;
  if (!work_->test()) return false;
  work_->wait();  // completes the bookkeeping (fp32 -> half conversion, staging release)
  keep_stamps();
  return true;
}

void Handle::wait() {
  if (!work_) return;
  work_->wait();
  keep_stamps();
}

std::pair<Handle, Handle> Communicator::send_recv_async(Tensor send, int send_peer, int send_tag,
                                                        Tensor recv, int recv_peer, int recv_tag) {
  Handle r = recv_async(recv, recv_peer, recv_tag);
  Handle s = send_async(send, send_peer, send_tag);
  return {std::move(s), std::move(r)};
}

std::vector<Handle> Communicator::batch_async(std::span<const PeerOp> ops) {
  std::vector<Handle> out(ops.size());
  for (bool sends : {false, true})
    for (size_t i = 0; i < ops.size(); ++i)
      if (ops[i].send == sends)
        out[i] = sends ? send_async(ops[i].t, ops[i].peer, ops[i].tag)
                       : recv_async(ops[i].t, ops[i].peer, ops[i].tag);
  return out;
}

void Communicator::all_gather(Tensor output) {
  const int64_t m = output.numel() / size();
  all_gather(output.slice(rank() * m, Shape{m}), output);
}

Handle Communicator::all_gather_async(Tensor output) {
  const int64_t m = output.numel() / size();
  return all_gather_async(output.slice(rank() * m, Shape{m}), output);
}

namespace {

bool overlap(const Tensor& a, const Tensor& b) {
  const char* a0 = static_cast<const char*>(a.data());
  const char* b0 = static_cast<const char*>(b.data());
  return a0 < b0 + b.bytes() && b0 < a0 + a.bytes();
}

// Whether `part` is chunk `rank` of `whole`, or else disjoint from it (anything else throws).
bool chunk_or_disjoint(const Tensor& whole, const Tensor& part, int rank, const char* message) {
  const size_t e = dtype_size(part.dtype());
  const bool in_place = static_cast<const char*>(part.data()) ==
                        static_cast<const char*>(whole.data()) +
                            static_cast<size_t>(int64_t{rank} * part.numel()) * e;
  ZT_CHECK(in_place || part.numel() == 0 || !overlap(whole, part), "{}", message);
  return in_place;
}

}  // namespace

void Communicator::check_all_to_all(const Tensor& in, const Tensor& out) const {
  ZT_CHECK(in.dtype() == out.dtype(), "all_to_all on group {}: input {} and output {} differ",
           name(), dtype_name(in.dtype()), dtype_name(out.dtype()));
  ZT_CHECK(in.numel() == out.numel() && in.numel() % size() == 0,
           "all_to_all on group {} of {}: input {} and output {} elements must be equal and "
           "divisible by the group size",
           name(), size(), in.numel(), out.numel());
  ZT_CHECK(!overlap(in, out), "all_to_all on group {}: input and output overlap", name());
}

int64_t Communicator::check_all_to_all_v(const Tensor& in, std::span<const int64_t> send_counts,
                                         const Tensor& out,
                                         std::span<const int64_t> recv_counts) const {
  ZT_CHECK(in.dtype() == out.dtype(), "all_to_all_v on group {}: input {} and output {} differ",
           name(), dtype_name(in.dtype()), dtype_name(out.dtype()));
  const auto n = static_cast<size_t>(size());
  ZT_CHECK(send_counts.size() == n && recv_counts.size() == n,
           "all_to_all_v on group {} of {}: {} send and {} receive counts", name(), n,
           send_counts.size(), recv_counts.size());
  int64_t sent = 0, received = 0;
  for (size_t r = 0; r < n; ++r) {
    ZT_CHECK(send_counts[r] >= 0 && recv_counts[r] >= 0,
             "all_to_all_v on group {}: a negative count for rank {}", name(), r);
    sent += send_counts[r];
    received += recv_counts[r];
  }
  ZT_CHECK(sent == in.numel() && received == out.numel(),
           "all_to_all_v on group {}: counts sum to {} sent and {} received, the tensors hold {} "
           "and {}",
           name(), sent, received, in.numel(), out.numel());
  ZT_CHECK(!overlap(in, out), "all_to_all_v on group {}: input and output overlap", name());
  return sent - send_counts[static_cast<size_t>(rank())];
}

bool Communicator::check_reduce_scatter(const Tensor& in, const Tensor& out) const {
  ZT_CHECK(in.dtype() == out.dtype(), "reduce_scatter: input {} vs output {}",
           dtype_name(in.dtype()), dtype_name(out.dtype()));
  ZT_CHECK(in.numel() == out.numel() * size(),
           "reduce_scatter on group {}: input has {} elements, expected {} ranks x {}", name(),
           in.numel(), size(), out.numel());
  return chunk_or_disjoint(in, out, rank(),
                           "reduce_scatter: output overlaps input but is not this rank's chunk");
}

bool Communicator::check_all_gather(const Tensor& in, const Tensor& out) const {
  ZT_CHECK(in.dtype() == out.dtype(), "all_gather: input {} vs output {}", dtype_name(in.dtype()),
           dtype_name(out.dtype()));
  ZT_CHECK(out.numel() == in.numel() * size(),
           "all_gather on group {}: output has {} elements, expected {} ranks x {}", name(),
           out.numel(), size(), in.numel());
  return chunk_or_disjoint(out, in, rank(),
                           "all_gather: input overlaps output but is not this rank's chunk");
}

}  // namespace zt::comm
