#include "src/comm/mpi_communicator.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <optional>

#include "src/comm/mpi_check.h"
#include "src/core/half.h"
#include "src/core/log.h"

namespace zt::comm {

namespace detail {
void check_mpi(int rc, const char* call, std::source_location loc) {
  if (rc == MPI_SUCCESS) [[likely]]
    return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw Error(fmt::format("MPI call {} failed at {}:{} on rank {}: {}", call, loc.file_name(),
                          loc.line(), log::rank(),
                          std::string_view(text, static_cast<size_t>(len))));
}

std::vector<int> world_ranks_of(MPI_Comm comm) {
  int size = 0;
  ZT_MPI(MPI_Comm_size(comm, &size));
  MPI_Group mine = MPI_GROUP_NULL, world = MPI_GROUP_NULL;
  ZT_MPI(MPI_Comm_group(comm, &mine));
  ZT_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world));
  std::vector<int> local(static_cast<size_t>(size)), ranks(static_cast<size_t>(size));
  for (int i = 0; i < size; ++i) local[static_cast<size_t>(i)] = i;
  const int rc = MPI_Group_translate_ranks(mine, size, local.data(), world, ranks.data());
  MPI_Group_free(&mine);
  MPI_Group_free(&world);
  ZT_MPI(rc);
  return ranks;
}
}  // namespace detail

// ---------------------------------------------------------------------------------------------
// MpiProgress

MpiProgress::MpiProgress(ProgressMode mode, int poll_interval_us)
    : mode_(mode), poll_us_(poll_interval_us) {
  ops_.reserve(64);
  if (mode_ == ProgressMode::Thread) start_thread();
}

MpiProgress::~MpiProgress() {
  stop_thread();
}

void MpiProgress::set_mode(ProgressMode mode) {
  if (mode == mode_) return;
  ZT_CHECK(outstanding() == 0, "progress mode changed with {} operations outstanding",
           outstanding());
  if (mode_ == ProgressMode::Thread) stop_thread();
  mode_ = mode;
  if (mode_ == ProgressMode::Thread) start_thread();
}

void MpiProgress::start_thread() {
  {
    std::lock_guard lk(mu_);
    stop_ = false;
  }
  thread_ = std::thread([this] { loop(); });
}

void MpiProgress::stop_thread() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

std::shared_ptr<MpiProgress::Op> MpiProgress::track(MPI_Request req) {
  auto op = std::make_shared<Op>();
  op->req = req;
  {
    std::lock_guard lk(mu_);
    ops_.push_back(op);
  }
  cv_.notify_one();
  return op;
}

int MpiProgress::poll_locked() {
  int completed = 0;
  for (auto& op : ops_) {
    int flag = 0;
    ZT_MPI(MPI_Test(&op->req, &flag, MPI_STATUS_IGNORE));
    if (flag) {
      op->done = true;
      op->completed = std::chrono::steady_clock::now();
      ++completed;
    }
  }
  if (completed) std::erase_if(ops_, [](const std::shared_ptr<Op>& o) { return o->done; });
  return completed;
}

int MpiProgress::poll() {
  std::lock_guard lk(mu_);
  return poll_locked();
}

bool MpiProgress::test(Op& op) {
  std::lock_guard lk(mu_);
  if (!op.done) poll_locked();
  return op.done;
}

void MpiProgress::wait(Op& op) {
  {
    std::lock_guard lk(mu_);
    if (op.done) return;
    // Claim the request: the progress thread no longer touches it.
    std::erase_if(ops_, [&](const std::shared_ptr<Op>& o) { return o.get() == &op; });
  }
  ZT_MPI(MPI_Wait(&op.req, MPI_STATUS_IGNORE));
  std::lock_guard lk(mu_);
  op.done = true;
  op.completed = std::chrono::steady_clock::now();
}

size_t MpiProgress::outstanding() const {
  std::lock_guard lk(mu_);
  return ops_.size();
}

void MpiProgress::loop() {
  std::unique_lock lk(mu_);
  while (true) {
    cv_.wait(lk, [&] { return stop_ || !ops_.empty(); });
    if (stop_) return;
    int completed = 0;
    try {
      completed = poll_locked();
    } catch (const std::exception& e) {
      // An MPI error on the progress thread: the waiting rank would never learn of it.
      log::error_line(e.what());
      std::terminate();
    }
    if (completed == 0) {
      const int us = poll_us_.load();
      lk.unlock();
      if (us > 0)
        std::this_thread::sleep_for(std::chrono::microseconds(us));
      else
        std::this_thread::yield();
      lk.lock();
    }
  }
}

// ---------------------------------------------------------------------------------------------
// StagingPool

StagingPool::Lease& StagingPool::Lease::operator=(Lease&& o) noexcept {
  if (this != &o) {
    reset();
    owner_ = o.owner_;
    slot_ = o.slot_;
    data_ = o.data_;
    o.owner_ = nullptr;
  }
  return *this;
}

void StagingPool::Lease::reset() {
  if (owner_) owner_->slots_[slot_].leased = false;
  owner_ = nullptr;
  data_ = nullptr;
}

StagingPool::Lease StagingPool::acquire(size_t floats) {
  const size_t bytes = std::max<size_t>(floats, 1) * sizeof(float);
  size_t best = slots_.size();  // smallest free buffer that fits
  size_t largest = slots_.size();
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].leased) continue;
    const size_t b = slots_[i].buf.bytes();
    if (b >= bytes && (best == slots_.size() || b < slots_[best].buf.bytes())) best = i;
    if (largest == slots_.size() || b > slots_[largest].buf.bytes()) largest = i;
  }
  if (best == slots_.size()) {
    if (largest == slots_.size()) {
      slots_.emplace_back();
      largest = slots_.size() - 1;
    }
    Slot& s = slots_[largest];
    s.buf.reset();
    s.buf = pool_->allocate(bytes, MemCategory::Buffers);
    ++allocations_;
    best = largest;
  }
  slots_[best].leased = true;
  return Lease(this, best, static_cast<float*>(slots_[best].buf.data()));
}

void StagingPool::reserve(size_t floats, int count) {
  const size_t bytes = std::max<size_t>(floats, 1) * sizeof(float);
  int have = 0;
  for (const Slot& s : slots_)
    if (!s.leased && s.buf.bytes() >= bytes) ++have;
  for (Slot& s : slots_) {  // grow the small free ones first
    if (have >= count) return;
    if (s.leased || s.buf.bytes() >= bytes) continue;
    s.buf.reset();
    s.buf = pool_->allocate(bytes, MemCategory::Buffers);
    ++allocations_;
    ++have;
  }
  for (; have < count; ++have) {
    slots_.emplace_back();
    slots_.back().buf = pool_->allocate(bytes, MemCategory::Buffers);
    ++allocations_;
  }
}

size_t StagingPool::bytes() const {
  size_t b = 0;
  for (const Slot& s : slots_) b += s.buf.bytes();
  return b;
}

// ---------------------------------------------------------------------------------------------
// MpiCommunicator

void MpiCommunicator::reserve_staging(size_t elements, int count) {
  // A reduce-scatter stages its input and its output chunk: at most elements + elements / size.
  staging_.reserve(elements + elements / static_cast<size_t>(size()) + 1, count);
}

namespace {

MPI_Datatype raw_type(DType t) {
  return t == DType::F32 ? MPI_FLOAT : MPI_UINT16_T;
}
MPI_Op mpi_op(ReduceOp op) {
  return op == ReduceOp::Sum ? MPI_SUM : MPI_MAX;
}

int mpi_count(int64_t n) {
  ZT_CHECK(n >= 0 && n <= INT_MAX, "{} elements exceed MPI's int count; split the buffer", n);
  return static_cast<int>(n);
}

void widen(const Tensor& t, float* dst) {
  const int64_t n = t.numel();
  if (t.dtype() == DType::BF16) {
    const bf16* s = t.as<bf16>();
    for (int64_t i = 0; i < n; ++i) dst[i] = to_float(s[i]);
  } else {
    const fp16* s = t.as<fp16>();
    for (int64_t i = 0; i < n; ++i) dst[i] = to_float(s[i]);
  }
}

void narrow(const float* src, const Tensor& t) {
  const int64_t n = t.numel();
  if (t.dtype() == DType::BF16) {
    bf16* d = t.as<bf16>();
    for (int64_t i = 0; i < n; ++i) d[i] = to_bf16(src[i]);
  } else {
    fp16* d = t.as<fp16>();
    for (int64_t i = 0; i < n; ++i) d[i] = to_fp16(src[i]);
  }
}

// Work of one MPI request.
class MpiWork final : public Work {
 public:
  MpiWork(MpiProgress& progress, Watchdog& dog, std::shared_ptr<MpiProgress::Op> op, CommOp kind,
          GroupKind group, MpiCommunicator::Finish finish, const Watchdog::Where& where,
          std::optional<DeviceAccess> access)
      : access_(std::move(access)),
        progress_(&progress),
        dog_(&dog),
        op_(std::move(op)),
        kind_(kind),
        group_(group),
        finish_(std::move(finish)),
        where_(where) {}
  ~MpiWork() override {
    if (!finished_) {
      try {
        wait();
      } catch (const std::exception& e) {
        log::error_line(e.what());
        std::terminate();
      }
    }
  }
  bool test() override { return finished_ || progress_->test(*op_); }
  void wait() override {
    if (finished_) return;
    {
      auto guard = dog_->arm(comm_op_name(kind_), group_kind_name(group_), where_);
      progress_->wait(*op_);
    }
    finished_ = true;
    finish_.run();
    access_.reset();
  }

  StampRef started() const override { return HostStamp::at(op_->issued); }
  // Read after wait(): the progress thread no longer touches the op.
  StampRef finished() const override { return finished_ ? HostStamp::at(op_->completed) : nullptr; }

 private:
  // Held from the start until the operation finished: MPI reads and writes its tensors, which may
  // be device memory, at any moment in between.
  std::optional<DeviceAccess> access_;
  MpiProgress* progress_;
  Watchdog* dog_;
  std::shared_ptr<MpiProgress::Op> op_;
  CommOp kind_;
  GroupKind group_;
  MpiCommunicator::Finish finish_;
  Watchdog::Where where_;  // its number on the group, counted when issued
  bool finished_ = false;
};

}  // namespace

void MpiCommunicator::Finish::run() {
  if (narrow_src) narrow(narrow_src, narrow_dst);
  if (move_bytes && move_src != move_dst) std::memmove(move_dst, move_src, move_bytes);
  lease.reset();
}

// The buffers and count of one reduction / gather, after staging.
struct MpiCommunicator::Plan {
  const void* send = nullptr;  // MPI_IN_PLACE where in place
  void* recv = nullptr;
  int count = 0;
  MPI_Datatype type = MPI_FLOAT;
  Finish finish;
};

MpiCommunicator::MpiCommunicator(MPI_Comm comm, GroupKind kind, MpiContext ctx)
    : comm_(comm), kind_(kind), ctx_(ctx), staging_(*ctx.pool) {
  ZT_CHECK(ctx.pool && ctx.stats && ctx.progress && ctx.watchdog, "incomplete MpiContext");
  ZT_MPI(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  ZT_MPI(MPI_Comm_rank(comm_, &rank_));
  ZT_MPI(MPI_Comm_size(comm_, &size_));
  world_ranks_ = detail::world_ranks_of(comm_);
  key_ = group_key(kind_, world_ranks_);
}

MpiCommunicator::~MpiCommunicator() {
  if (comm_ != MPI_COMM_NULL) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
  }
}

void MpiCommunicator::check_tensor(const Tensor& t, const char* what) const {
  ZT_CHECK(t.defined() || t.numel() == 0, "{}: undefined tensor on group {}", what, name());
  ZT_CHECK(t.device() == Device::Cpu, "{}: MpiCommunicator needs host memory, got a {} tensor",
           what, device_name(t.device()));
}

Handle MpiCommunicator::make_handle(CommOp op, MPI_Request req, Finish finish,
                                    const Watchdog::Where& where,
                                    std::optional<DeviceAccess> access) {
  auto tracked = ctx_.progress->track(req);
  return Handle(std::make_unique<MpiWork>(*ctx_.progress, *ctx_.watchdog, std::move(tracked), op,
                                          kind_, std::move(finish), where, std::move(access)));
}

Watchdog::Where MpiCommunicator::place(std::string_view op, int peer) {
  const uint64_t seq = ctx_.watchdog->issue(op, kind_, key_);
  if (peer < 0) return Watchdog::Where{kind_, seq, world_ranks_, -1, key_};
  const int world = peer < size_ ? world_ranks_[static_cast<size_t>(peer)] : -1;
  return Watchdog::Where{kind_, seq, {}, world, key_};
}

// all_reduce ----------------------------------------------------------------------------------

MpiCommunicator::Plan MpiCommunicator::plan_all_reduce(Tensor t) {
  check_tensor(t, "all_reduce");
  ctx_.stats->record(kind_, CommOp::AllReduce, static_cast<uint64_t>(t.numel()),
                     dtype_size(t.dtype()), size_);
  Plan p;
  p.send = MPI_IN_PLACE;
  p.count = mpi_count(t.numel());
  if (t.dtype() == DType::F32) {
    p.recv = t.data();
  } else {
    p.finish.lease = staging_.acquire(static_cast<size_t>(t.numel()));
    float* s = p.finish.lease.data();
    widen(t, s);
    p.recv = s;
    p.finish.narrow_src = s;
    p.finish.narrow_dst = t;
  }
  return p;
}

void MpiCommunicator::all_reduce(Tensor t, ReduceOp op) {
  DeviceAccess access;  // the tensors may be device memory (the staging backend's)
  if (t.dtype() != DType::F32 && t.numel() > kStagingSlice) {
    // A large half tensor (tensor parallelism's [N, h] activations) is reduced slice by slice
    // through one constant-size fp32 staging buffer: the same sums, element by element.
    check_tensor(t, "all_reduce");
    ctx_.stats->record(kind_, CommOp::AllReduce, static_cast<uint64_t>(t.numel()),
                       dtype_size(t.dtype()), size_);
    const auto lease = staging_.acquire(static_cast<size_t>(kStagingSlice));
    float* s = lease.data();
    auto guard = ctx_.watchdog->arm("all_reduce", name(), place("all_reduce"));
    for (int64_t at = 0; at < t.numel(); at += kStagingSlice) {
      const Tensor part = t.slice(at, {std::min(kStagingSlice, t.numel() - at)});
      widen(part, s);
      ZT_MPI(MPI_Allreduce(MPI_IN_PLACE, s, mpi_count(part.numel()), MPI_FLOAT, mpi_op(op), comm_));
      narrow(s, part);
    }
    return;
  }
  Plan p = plan_all_reduce(t);
  {
    auto guard = ctx_.watchdog->arm("all_reduce", name(), place("all_reduce"));
    ZT_MPI(MPI_Allreduce(p.send, p.recv, p.count, MPI_FLOAT, mpi_op(op), comm_));
  }
  p.finish.run();
}

Handle MpiCommunicator::all_reduce_async(Tensor t, ReduceOp op) {
  DeviceAccess access;  // the tensors may be device memory (the staging backend's)
  Plan p = plan_all_reduce(t);
  const Watchdog::Where at = place("all_reduce");
  MPI_Request req = MPI_REQUEST_NULL;
  ZT_MPI(MPI_Iallreduce(p.send, p.recv, p.count, MPI_FLOAT, mpi_op(op), comm_, &req));
  return make_handle(CommOp::AllReduce, req, std::move(p.finish), at, std::move(access));
}

// reduce_scatter ------------------------------------------------------------------------------

MpiCommunicator::Plan MpiCommunicator::plan_reduce_scatter(Tensor in, Tensor out) {
  check_tensor(in, "reduce_scatter");
  check_tensor(out, "reduce_scatter");
  const int64_t m = out.numel();
  const size_t e = dtype_size(in.dtype());
  const bool in_place = check_reduce_scatter(in, out);
  ctx_.stats->record(kind_, CommOp::ReduceScatter, static_cast<uint64_t>(in.numel()), e, size_);
  Plan p;
  p.count = mpi_count(m);
  if (in.dtype() == DType::F32) {
    if (in_place) {
      // MPI's in-place reduce-scatter leaves the result at the start of the buffer.
      p.send = MPI_IN_PLACE;
      p.recv = in.data();
      p.finish.move_src = in.data();
      p.finish.move_dst = out.data();
      p.finish.move_bytes = static_cast<size_t>(m) * e;
    } else {
      p.send = in.data();
      p.recv = out.data();
    }
  } else {
    p.finish.lease = staging_.acquire(static_cast<size_t>(in.numel() + m));
    float* s = p.finish.lease.data();
    widen(in, s);
    p.send = s;
    p.recv = s + in.numel();
    p.finish.narrow_src = s + in.numel();
    p.finish.narrow_dst = out;
  }
  return p;
}

void MpiCommunicator::reduce_scatter(Tensor input, Tensor output, ReduceOp op) {
  DeviceAccess access;  // the tensors may be device memory (the staging backend's)
  const int64_t m = output.numel();
  if (input.dtype() != DType::F32 && input.numel() + m > kStagingSlice) {
    // A large half tensor (sequence parallelism's [N, h] row-parallel outputs) is reduced piece
    // by piece through one constant-size fp32 staging buffer: every rank's chunk in pieces of
    // `piece` elements, staged side by side, so the same sums, element by element. An output
    // inside the input (its own chunk) is written only after that piece has been read.
    check_tensor(input, "reduce_scatter");
    check_tensor(output, "reduce_scatter");
    check_reduce_scatter(input, output);
    ctx_.stats->record(kind_, CommOp::ReduceScatter, static_cast<uint64_t>(input.numel()),
                       dtype_size(input.dtype()), size_);
    const int64_t piece = std::max<int64_t>(1, kStagingSlice / (size_ + 1));
    const auto lease = staging_.acquire(static_cast<size_t>(kStagingSlice));
    float* s = lease.data();
    auto guard = ctx_.watchdog->arm("reduce_scatter", name(), place("reduce_scatter"));
    for (int64_t at = 0; at < m; at += piece) {
      const int64_t n = std::min(piece, m - at);
      for (int r = 0; r < size_; ++r) widen(input.slice(r * m + at, {n}), s + r * n);
      ZT_MPI(
          MPI_Reduce_scatter_block(s, s + size_ * n, mpi_count(n), MPI_FLOAT, mpi_op(op), comm_));
      narrow(s + size_ * n, output.slice(at, {n}));
    }
    return;
  }
  Plan p = plan_reduce_scatter(input, output);
  {
    auto guard = ctx_.watchdog->arm("reduce_scatter", name(), place("reduce_scatter"));
    ZT_MPI(MPI_Reduce_scatter_block(p.send, p.recv, p.count, MPI_FLOAT, mpi_op(op), comm_));
  }
  p.finish.run();
}

Handle MpiCommunicator::reduce_scatter_async(Tensor input, Tensor output, ReduceOp op) {
  DeviceAccess access;  // the tensors may be device memory (the staging backend's)
  Plan p = plan_reduce_scatter(input, output);
  const Watchdog::Where at = place("reduce_scatter");
  MPI_Request req = MPI_REQUEST_NULL;
  ZT_MPI(MPI_Ireduce_scatter_block(p.send, p.recv, p.count, MPI_FLOAT, mpi_op(op), comm_, &req));
  return make_handle(CommOp::ReduceScatter, req, std::move(p.finish), at, std::move(access));
}

// all_gather ----------------------------------------------------------------------------------

MpiCommunicator::Plan MpiCommunicator::plan_all_gather(Tensor in, Tensor out) {
  check_tensor(in, "all_gather");
  check_tensor(out, "all_gather");
  const int64_t m = in.numel();
  const size_t e = dtype_size(in.dtype());
  const bool in_place = check_all_gather(in, out);
  ctx_.stats->record(kind_, CommOp::AllGather, static_cast<uint64_t>(out.numel()), e, size_);
  Plan p;
  p.send = in_place ? MPI_IN_PLACE : in.data();
  p.recv = out.data();
  p.count = mpi_count(m);
  p.type = raw_type(in.dtype());
  return p;
}

void MpiCommunicator::all_gather(Tensor input, Tensor output) {
  DeviceAccess access;  // the tensors may be device memory (the staging backend's)
  Plan p = plan_all_gather(input, output);
  auto guard = ctx_.watchdog->arm("all_gather", name(), place("all_gather"));
  if (p.send == MPI_IN_PLACE)
    ZT_MPI(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, p.recv, p.count, p.type, comm_));
  else
    ZT_MPI(MPI_Allgather(p.send, p.count, p.type, p.recv, p.count, p.type, comm_));
}

Handle MpiCommunicator::all_gather_async(Tensor input, Tensor output) {
  DeviceAccess access;  // the tensors may be device memory (the staging backend's)
  Plan p = plan_all_gather(input, output);
  const Watchdog::Where at = place("all_gather");
  MPI_Request req = MPI_REQUEST_NULL;
  if (p.send == MPI_IN_PLACE)
    ZT_MPI(
        MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, p.recv, p.count, p.type, comm_, &req));
  else
    ZT_MPI(MPI_Iallgather(p.send, p.count, p.type, p.recv, p.count, p.type, comm_, &req));
  return make_handle(CommOp::AllGather, req, {}, at, std::move(access));
}

// all_to_all ----------------------------------------------------------------------------------

MpiCommunicator::Plan MpiCommunicator::plan_all_to_all(Tensor in, Tensor out) {
  check_tensor(in, "all_to_all");
  check_tensor(out, "all_to_all");
  check_all_to_all(in, out);
  ctx_.stats->record(kind_, CommOp::AllToAll, static_cast<uint64_t>(in.numel()),
                     dtype_size(in.dtype()), size_);
  Plan p;
  p.send = in.data();
  p.recv = out.data();
  p.count = mpi_count(in.numel() / size_);
  p.type = raw_type(in.dtype());
  return p;
}

void MpiCommunicator::all_to_all(Tensor input, Tensor output) {
  DeviceAccess access;  // the tensors may be device memory (the staging backend's)
  Plan p = plan_all_to_all(input, output);
  auto guard = ctx_.watchdog->arm("all_to_all", name(), place("all_to_all"));
  ZT_MPI(MPI_Alltoall(p.send, p.count, p.type, p.recv, p.count, p.type, comm_));
}

Handle MpiCommunicator::all_to_all_async(Tensor input, Tensor output) {
  DeviceAccess access;  // the tensors may be device memory (the staging backend's)
  Plan p = plan_all_to_all(input, output);
  const Watchdog::Where at = place("all_to_all");
  MPI_Request req = MPI_REQUEST_NULL;
  ZT_MPI(MPI_Ialltoall(p.send, p.count, p.type, p.recv, p.count, p.type, comm_, &req));
  return make_handle(CommOp::AllToAll, req, {}, at, std::move(access));
}

void MpiCommunicator::all_to_all_v(Tensor input, std::span<const int64_t> send_counts,
                                   Tensor output, std::span<const int64_t> recv_counts) {
  DeviceAccess access;  // the tensors may be device memory (the staging backend's)
  check_tensor(input, "all_to_all_v");
  check_tensor(output, "all_to_all_v");
  const int64_t leaving = check_all_to_all_v(input, send_counts, output, recv_counts);
  ctx_.stats->record(kind_, CommOp::AllToAll,
                     all_to_all_v_cost(static_cast<uint64_t>(input.numel()),
                                       static_cast<uint64_t>(leaving), dtype_size(input.dtype())));
  // MPI's int counts and displacements: send, send displacements, receive, receive
  // displacements, size() each, kept across calls.
  const auto n = static_cast<size_t>(size_);
  v_args_.resize(4 * n);
  int* sc = v_args_.data();
  int* sd = sc + n;
  int* rc = sd + n;
  int* rd = rc + n;
  int64_t s_at = 0, r_at = 0;
  for (size_t r = 0; r < n; ++r) {
    sc[r] = mpi_count(send_counts[r]);
    sd[r] = mpi_count(s_at);
    rc[r] = mpi_count(recv_counts[r]);
    rd[r] = mpi_count(r_at);
    s_at += send_counts[r];
    r_at += recv_counts[r];
  }
  const MPI_Datatype t = raw_type(input.dtype());
  auto guard = ctx_.watchdog->arm("all_to_all_v", name(), place("all_to_all_v"));
  ZT_MPI(MPI_Alltoallv(input.data(), sc, sd, t, output.data(), rc, rd, t, comm_));
}

// broadcast, send/recv, barrier ---------------------------------------------------------------

void MpiCommunicator::broadcast(Tensor t, int root) {
  DeviceAccess access;  // the tensors may be device memory (the staging backend's)
  check_tensor(t, "broadcast");
  ZT_CHECK(root >= 0 && root < size_, "broadcast root {} outside group {} of {}", root, name(),
           size_);
  ctx_.stats->record(kind_, CommOp::Broadcast, static_cast<uint64_t>(t.numel()),
                     dtype_size(t.dtype()), size_);
  auto guard = ctx_.watchdog->arm("broadcast", name(), place("broadcast"));
  ZT_MPI(MPI_Bcast(t.data(), mpi_count(t.numel()), raw_type(t.dtype()), root, comm_));
}

Handle MpiCommunicator::broadcast_async(Tensor t, int root) {
  DeviceAccess access;  // the tensors may be device memory (the staging backend's)
  check_tensor(t, "broadcast");
  ZT_CHECK(root >= 0 && root < size_, "broadcast root {} outside group {} of {}", root, name(),
           size_);
  ctx_.stats->record(kind_, CommOp::Broadcast, static_cast<uint64_t>(t.numel()),
                     dtype_size(t.dtype()), size_);
  const Watchdog::Where at = place("broadcast");
  MPI_Request req = MPI_REQUEST_NULL;
  ZT_MPI(MPI_Ibcast(t.data(), mpi_count(t.numel()), raw_type(t.dtype()), root, comm_, &req));
  return make_handle(CommOp::Broadcast, req, {}, at, std::move(access));
}

void MpiCommunicator::send(Tensor t, int peer, int tag) {
  DeviceAccess access;  // the tensors may be device memory (the staging backend's)
  check_tensor(t, "send");
  ctx_.stats->record(kind_, CommOp::Send, static_cast<uint64_t>(t.numel()), dtype_size(t.dtype()),
                     2);
  auto guard = ctx_.watchdog->arm("send", name(), place("send", peer));
  if (ctx_.synchronous_sends)
    ZT_MPI(MPI_Ssend(t.data(), mpi_count(t.numel()), raw_type(t.dtype()), peer, tag, comm_));
  else
    ZT_MPI(MPI_Send(t.data(), mpi_count(t.numel()), raw_type(t.dtype()), peer, tag, comm_));
}

void MpiCommunicator::recv(Tensor t, int peer, int tag) {
  DeviceAccess access;  // the tensors may be device memory (the staging backend's)
  check_tensor(t, "recv");
  ctx_.stats->record(kind_, CommOp::Recv, static_cast<uint64_t>(t.numel()), dtype_size(t.dtype()),
                     2);
  MPI_Status st;
  {
    auto guard = ctx_.watchdog->arm("recv", name(), place("recv", peer));
    ZT_MPI(MPI_Recv(t.data(), mpi_count(t.numel()), raw_type(t.dtype()), peer, tag, comm_, &st));
  }
  int got = 0;
  ZT_MPI(MPI_Get_count(&st, raw_type(t.dtype()), &got));
  ZT_CHECK(got == t.numel(), "recv on group {} from {}: got {} elements, expected {}", name(), peer,
           got, t.numel());
}

Handle MpiCommunicator::send_async(Tensor t, int peer, int tag) {
  DeviceAccess access;  // the tensors may be device memory (the staging backend's)
  check_tensor(t, "send");
  ctx_.stats->record(kind_, CommOp::Send, static_cast<uint64_t>(t.numel()), dtype_size(t.dtype()),
                     2);
  const Watchdog::Where at = place("send", peer);
  MPI_Request req = MPI_REQUEST_NULL;
  if (ctx_.synchronous_sends)
    ZT_MPI(MPI_Issend(t.data(), mpi_count(t.numel()), raw_type(t.dtype()), peer, tag, comm_, &req));
  else
    ZT_MPI(MPI_Isend(t.data(), mpi_count(t.numel()), raw_type(t.dtype()), peer, tag, comm_, &req));
  return make_handle(CommOp::Send, req, {}, at, std::move(access));
}

Handle MpiCommunicator::recv_async(Tensor t, int peer, int tag) {
  DeviceAccess access;  // the tensors may be device memory (the staging backend's)
  check_tensor(t, "recv");
  ctx_.stats->record(kind_, CommOp::Recv, static_cast<uint64_t>(t.numel()), dtype_size(t.dtype()),
                     2);
  const Watchdog::Where at = place("recv", peer);
  MPI_Request req = MPI_REQUEST_NULL;
  ZT_MPI(MPI_Irecv(t.data(), mpi_count(t.numel()), raw_type(t.dtype()), peer, tag, comm_, &req));
  return make_handle(CommOp::Recv, req, {}, at, std::move(access));
}

void MpiCommunicator::barrier() {
  ctx_.stats->record(kind_, CommOp::Barrier, 0, 0, size_);
  auto guard = ctx_.watchdog->arm("barrier", name(), place("barrier"));
  ZT_MPI(MPI_Barrier(comm_));
}

Handle MpiCommunicator::barrier_async() {
  ctx_.stats->record(kind_, CommOp::Barrier, 0, 0, size_);
  const Watchdog::Where at = place("barrier");
  MPI_Request req = MPI_REQUEST_NULL;
  ZT_MPI(MPI_Ibarrier(comm_, &req));
  return make_handle(CommOp::Barrier, req, {}, at, std::nullopt);
}

void MpiCommunicator::progress() {
  ctx_.progress->poll();
}

std::unique_ptr<Communicator> MpiCommunicator::split(int color, int key, GroupKind kind) {
  MPI_Comm c = MPI_COMM_NULL;
  {
    auto guard = ctx_.watchdog->arm("split", name(), place("split"));
    ZT_MPI(MPI_Comm_split(comm_, color, key, &c));
  }
  return std::make_unique<MpiCommunicator>(c, kind, ctx_);
}

}  // namespace zt::comm
