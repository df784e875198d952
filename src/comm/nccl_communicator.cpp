#include "src/comm/nccl_communicator.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <mutex>
#include <string>
#include <thread>

#include "src/comm/mpi_check.h"
#include "src/comm/nccl_check.h"
#include "src/comm/nccl_groups.h"
#include "src/comm/self_communicator.h"
#include "src/core/cuda_check.h"
#include "src/core/log.h"

namespace zt::comm {

namespace detail {
void check_nccl(ncclResult_t rc, const char* call, std::source_location loc) {
  if (rc == ncclSuccess) [[likely]]
    return;
  const char* last = ncclGetLastError(nullptr);
  throw Error(fmt::format("NCCL call {} failed at {}:{} on rank {}: {}{}{}", call, loc.file_name(),
                          loc.line(), log::rank(), ncclGetErrorString(rc),
                          last && *last ? "; " : "", last ? last : ""));
}
}  // namespace detail

namespace {

// Calls on a non-blocking communicator may answer ncclInProgress: issued, not yet settled.
#define ZT_NCCL_ISSUE(call)                                                           \
  do {                                                                                \
    const ncclResult_t zt_rc_ = (call);                                               \
    if (zt_rc_ != ncclInProgress)                                                     \
      ::zt::comm::detail::check_nccl(zt_rc_, #call, std::source_location::current()); \
  } while (false)

// How long an abort waits for the thread using the communicator to let go of it; past that the
// process ends without ncclCommAbort (the watchdog's exit follows).
constexpr auto kAbortLockWait = std::chrono::seconds(5);

// A device point for the overlap metrics (timeline.h): a timing event recorded on a stream.
class CudaStamp final : public Stamp {
 public:
  explicit CudaStamp(cudaStream_t s) : e_(std::make_shared<cuda::Event>(cuda::Event::Timing{})) {
    e_->record(s);
  }
  // A timing event already recorded.
  explicit CudaStamp(std::shared_ptr<cuda::Event> e) : e_(std::move(e)) {}
  double ms_since(const Stamp& origin) const override {
    const auto* o = dynamic_cast<const CudaStamp*>(&origin);
    ZT_CHECK(o != nullptr, "a device time compared with a host time");
    return e_->elapsed_ms(*o->e_);
  }

 private:
  std::shared_ptr<cuda::Event> e_;
};

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::F32:
      return ncclFloat32;
    case DType::BF16:
      return ncclBfloat16;
    case DType::F16:
      return ncclFloat16;
  }
  return ncclFloat32;
}

ncclRedOp_t nccl_op(ReduceOp op) {
  return op == ReduceOp::Sum ? ncclSum : ncclMax;
}

}  // namespace

// The NCCL communicator, its stream and whether it was aborted. Shared by the NcclCommunicator
// and its in-flight Work, so a handle outliving its communicator still finds a valid comm.
struct NcclCommunicator::State {
  State(GroupKind k, int group_rank, Watchdog* w)
      : stream(cuda::Stream::greatest_priority()), kind(k), rank(group_rank), dog(w) {
    ZT_CUDA_CHECK(cudaGetDevice(&device));
  }
  ~State() {
    if (comm == nullptr) return;
    // Destructors report nothing (the results below are deliberately ignored).
    // Unwinding after an error: a peer may be gone, and finalize would wait for it forever.
    if (aborted.load() || std::uncaught_exceptions() > 0) {
      dog->forget(this);
      abort_once();
      return;
    }
    // The work still queued finishes first, under the watchdog (its entries are still tracked,
    // so a peer that never comes ends the job at the timeout); then the monitor lets go of us.
    (void)cudaStreamSynchronize(stream.get());
    dog->forget(this);
    auto guard = dog->arm("nccl_finalize", group_kind_name(kind));
    if (ncclCommFinalize(comm) == ncclInProgress) (void)settle();  // flushes (nothing is left)
    std::lock_guard lk(use);
    (void)ncclCommDestroy(comm);
  }
  State(const State&) = delete;
  State& operator=(const State&) = delete;

  // ncclCommAbort unless this or another thread already did (it frees the communicator). It
  // waits for a thread inside an NCCL call on the communicator to leave it (NCCL's calls on one
  // communicator are not safe against each other), at most kAbortLockWait: a call that never
  // returns leaves the communicator to the process's end, which follows at once.
  void abort_once() {
    if (aborted.exchange(true)) return;
    std::unique_lock lk(use, std::defer_lock);
    if (!lk.try_lock_for(kAbortLockWait)) {
      std::fprintf(stderr,
                   "zerotron: error: the NCCL communicator of group %s is still in a call after "
                   "%lld s; ending without ncclCommAbort\n",
                   std::string(group_kind_name(kind)).c_str(),
                   static_cast<long long>(kAbortLockWait.count()));
      return;
    }
    (void)ncclCommAbort(comm);
  }
  // Non-blocking communicator: waits until the calls issued so far are settled (enqueued on the
  // stream, or failed), polling ncclCommGetAsyncError with the lock released in between, so an
  // abort can take it; the caller arms the watchdog. Returns the final state.
  ncclResult_t settle() {
    while (true) {
      ncclResult_t async = ncclSuccess;
      {
        std::lock_guard lk(use);
        if (aborted.load()) return ncclInvalidUsage;
        const ncclResult_t rc = ncclCommGetAsyncError(comm, &async);
        if (rc != ncclSuccess) return rc;
      }
      if (async != ncclInProgress) return async;
      std::this_thread::yield();
    }
  }
  // `what`: "timed out" or "failed"; `detail` follows the rank.
  [[noreturn]] void abort_and_throw(std::string_view op, std::string_view what,
                                    const std::string& detail) {
    abort_once();  // its own failure would hide the cause reported below
    throw Error(fmt::format(
        "NCCL {} on group {} {} on rank {} (group rank {}): {}; the NCCL communicator was aborted",
        op, group_kind_name(kind), what, log::rank(), rank, detail));
  }
  void check_usable(std::string_view op) const {
    if (aborted.load())
      throw Error(
          fmt::format("NCCL {} on group {} on rank {}: the communicator was aborted after "
                      "an earlier error",
                      op, group_kind_name(kind), log::rank()));
  }
  // Throws (after aborting) when NCCL reports an asynchronous error.
  void check_async(std::string_view op) {
    ncclResult_t async = ncclSuccess, rc = ncclSuccess;
    {
      std::lock_guard lk(use);
      check_usable(op);
      rc = ncclCommGetAsyncError(comm, &async);
    }
    if (rc != ncclSuccess) async = rc;
    if (async != ncclSuccess && async != ncclInProgress)
      abort_and_throw(op, "failed",
                      fmt::format("asynchronous NCCL error: {}", ncclGetErrorString(async)));
  }
  // The watchdog's view of one issued op (monitor thread; never throws, never blocks).
  Watchdog::Poll poll(cudaEvent_t done, std::string& why) {
    if (aborted.load()) return Watchdog::Poll::Done;  // whoever aborted has reported it
    // The monitor thread's current device: without it the runtime would create a context on
    // device 0 for that thread (memory on another rank's GPU).
    (void)cudaSetDevice(device);
    const cudaError_t q = cudaEventQuery(done);
    if (q == cudaSuccess) return Watchdog::Poll::Done;
    if (q != cudaErrorNotReady) {
      why = fmt::format("CUDA error while it ran: {}", cudaGetErrorString(q));
      return Watchdog::Poll::Failed;
    }
    // The issuing thread may be inside an NCCL call: never wait for it here (the event above
    // still bounds the op); its error is seen at the next poll.
    std::unique_lock lk(use, std::try_to_lock);
    if (!lk.owns_lock() || aborted.load()) return Watchdog::Poll::Pending;
    ncclResult_t async = ncclSuccess;
    const ncclResult_t rc = ncclCommGetAsyncError(comm, &async);
    if (rc != ncclSuccess || (async != ncclSuccess && async != ncclInProgress)) {
      why = fmt::format("asynchronous NCCL error: {}",
                        ncclGetErrorString(rc != ncclSuccess ? rc : async));
      return Watchdog::Poll::Failed;
    }
    return Watchdog::Poll::Pending;
  }

  ncclComm_t comm = nullptr;
  cuda::Stream stream;
  GroupKind kind;
  int rank;
  Watchdog* dog;
  int device = 0;
  std::atomic<bool> aborted{false};  // also set by the watchdog's thread
  // Held around every NCCL call on `comm` (issuing thread, watchdog's poll, abort).
  std::timed_mutex use;
};

namespace {

class NcclWork final : public Work {
 public:
  NcclWork(std::shared_ptr<NcclCommunicator::State> state, const NcclContext* ctx, CommOp op,
           std::shared_ptr<cuda::Event> done, StampRef started, StampRef finished)
      : state_(std::move(state)),
        ctx_(ctx),
        op_(op),
        done_(std::move(done)),
        started_(std::move(started)),
        finished_(std::move(finished)) {}
  StampRef started() const override { return started_; }
  StampRef finished() const override { return finished_; }
  ~NcclWork() override {
    if (!waited_) {
      try {
        wait();
      } catch (const std::exception& e) {
        log::error_line(e.what());
        std::terminate();
      }
    }
  }
  bool test() override {
    if (waited_) return true;
    state_->check_usable(comm_op_name(op_));
    if (done_->query()) return true;
    state_->check_async(comm_op_name(op_));
    return false;
  }
  // Orders the compute stream after the op; the host goes on (the watchdog bounds the op).
  void wait() override {
    if (waited_) return;
    state_->check_usable(comm_op_name(op_));
    done_->wait(ctx_->compute);
    waited_ = true;
  }

 private:
  std::shared_ptr<NcclCommunicator::State> state_;
  const NcclContext* ctx_;
  CommOp op_;
  std::shared_ptr<cuda::Event> done_;
  StampRef started_, finished_;  // timing events around the op on the comm stream
  bool waited_ = false;
};

}  // namespace

NcclCommunicator::OwnedMpiComm::~OwnedMpiComm() {
  if (c == MPI_COMM_NULL) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Comm_free(&c);
}

NcclCommunicator::NcclCommunicator(MPI_Comm comm, GroupKind kind, NcclContext& ctx)
    : comm_{comm}, kind_(kind), ctx_(&ctx) {
  ZT_CHECK(ctx.stats && ctx.watchdog, "incomplete NcclContext");
  ZT_MPI(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
  ZT_MPI(MPI_Comm_rank(comm, &rank_));
  ZT_MPI(MPI_Comm_size(comm, &size_));
  world_ranks_ = detail::world_ranks_of(comm);

  ncclUniqueId id{};
  if (rank_ == 0) ZT_NCCL_CHECK(ncclGetUniqueId(&id));
  state_ = std::make_shared<State>(kind, rank_, ctx.watchdog);
  {
    auto guard = ctx.watchdog->arm("nccl_init", name());
    ZT_MPI(MPI_Bcast(&id, static_cast<int>(sizeof id), MPI_BYTE, 0, comm));
    // Non-blocking: no NCCL call holds this thread (connection set-up, a peer that never comes),
    // so the watchdog's abort finds the communicator free and the hang surfaces at its op.
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ZT_NCCL_ISSUE(ncclCommInitRankConfig(&state_->comm, size_, id, rank_, &config));
    ZT_NCCL_CHECK(state_->settle());
  }
}

NcclCommunicator::~NcclCommunicator() = default;

std::unique_ptr<NcclCommunicator> NcclCommunicator::world(NcclContext& ctx) {
  int rank = 0;
  ZT_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  cuda_detail::error_rank() = rank;
  MPI_Comm c = MPI_COMM_NULL;
  ZT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &c));
  return std::make_unique<NcclCommunicator>(c, GroupKind::World, ctx);
}

cudaStream_t NcclCommunicator::comm_stream() const {
  return state_->stream.get();
}

ncclComm_t NcclCommunicator::native() const {
  return state_->comm;
}

void NcclCommunicator::abort() {
  state_->abort_once();  // its own result would say nothing: the comm is unusable either way
}

StampRef NcclCommunicator::stamp() {
  return std::make_shared<CudaStamp>(ctx_->compute);
}

bool NcclCommunicator::aborted() const {
  return state_->aborted.load();
}

void NcclCommunicator::check_tensor(const Tensor& t, const char* what) const {
  ZT_CHECK(t.defined() || t.numel() == 0, "{}: undefined tensor on group {}", what, name());
  ZT_CHECK(t.device() == Device::Cuda,
           "{}: NcclCommunicator needs device memory, got a {} tensor on group {}", what,
           device_name(t.device()), name());
}

void NcclCommunicator::check_peer(int peer, const char* what) const {
  ZT_CHECK(peer >= 0 && peer < size_ && peer != rank_, "{}: peer {} invalid on group {} of {}",
           what, peer, name(), size_);
}

template <typename Enqueue>
NcclCommunicator::Issued NcclCommunicator::enqueue(std::string_view what, Enqueue&& enqueue) {
  state_->check_usable(what);
  const cudaStream_t s = state_->stream.get();
  Issued in;
  {
    auto guard = ctx_->watchdog->arm(what, name());
    {
      std::lock_guard lk(state_->use);
      state_->check_usable(what);
      ready_.record(ctx_->compute);
      ready_.wait(s);
      // The op can begin here, once the stream has waited for compute (NCCL enqueues its
      // kernel behind this when the group settles).
      in.started = std::make_shared<CudaStamp>(s);
      ZT_NCCL_ISSUE(ncclGroupStart());
      enqueue(state_->comm, s);
      ZT_NCCL_ISSUE(ncclGroupEnd());
    }
    // Enqueued on the stream only once settled.
    const ncclResult_t rc = state_->settle();
    if (rc != ncclSuccess)
      state_->abort_and_throw(what, "failed",
                              fmt::format("NCCL error while issuing: {}", ncclGetErrorString(rc)));
  }
  in.done = std::make_shared<cuda::Event>(cuda::Event::Timing{});
  in.done->record(s);
  in.finished = std::make_shared<CudaStamp>(in.done);
  State* st = state_.get();  // ~State forgets its entries before it goes
  auto done = in.done;
  ctx_->watchdog->track(
      st, what, group_kind_name(kind_),
      [st, done](std::string& why) { return st->poll(done->get(), why); },
      [st] { st->abort_once(); });
  return in;
}

template <typename Enqueue>
Handle NcclCommunicator::issue(CommOp op, Enqueue&& enqueue_op) {
  Issued in = enqueue(comm_op_name(op), std::forward<Enqueue>(enqueue_op));
  return work(op, in);
}

Handle NcclCommunicator::work(CommOp op, const Issued& in) {
  return Handle(std::make_unique<NcclWork>(state_, ctx_, op, in.done, in.started, in.finished));
}

// all_reduce ----------------------------------------------------------------------------------

Handle NcclCommunicator::all_reduce_async(Tensor t, ReduceOp op) {
  check_tensor(t, "all_reduce");
  ctx_->stats->record(kind_, CommOp::AllReduce, static_cast<uint64_t>(t.numel()),
                      dtype_size(t.dtype()), size_);
  return issue(CommOp::AllReduce, [&](ncclComm_t c, cudaStream_t s) {
    ZT_NCCL_ISSUE(ncclAllReduce(t.data(), t.data(), static_cast<size_t>(t.numel()),
                                nccl_type(t.dtype()), nccl_op(op), c, s));
  });
}

void NcclCommunicator::all_reduce(Tensor t, ReduceOp op) {
  all_reduce_async(t, op).wait();
}

// reduce_scatter ------------------------------------------------------------------------------

Handle NcclCommunicator::reduce_scatter_async(Tensor in, Tensor out, ReduceOp op) {
  check_tensor(in, "reduce_scatter");
  check_tensor(out, "reduce_scatter");
  const int64_t m = out.numel();
  const size_t e = dtype_size(in.dtype());
  // NCCL's in-place form is exactly ours (recvbuff == sendbuff + rank * recvcount): nothing to
  // do with the answer beyond the check.
  check_reduce_scatter(in, out);
  ctx_->stats->record(kind_, CommOp::ReduceScatter, static_cast<uint64_t>(in.numel()), e, size_);
  return issue(CommOp::ReduceScatter, [&](ncclComm_t c, cudaStream_t s) {
    ZT_NCCL_ISSUE(ncclReduceScatter(in.data(), out.data(), static_cast<size_t>(m),
                                    nccl_type(in.dtype()), nccl_op(op), c, s));
  });
}

void NcclCommunicator::reduce_scatter(Tensor input, Tensor output, ReduceOp op) {
  reduce_scatter_async(input, output, op).wait();
}

// all_gather ----------------------------------------------------------------------------------

Handle NcclCommunicator::all_gather_async(Tensor in, Tensor out) {
  check_tensor(in, "all_gather");
  check_tensor(out, "all_gather");
  const int64_t m = in.numel();
  const size_t e = dtype_size(in.dtype());
  check_all_gather(in, out);  // in place or disjoint: NCCL takes either as is
  ctx_->stats->record(kind_, CommOp::AllGather, static_cast<uint64_t>(out.numel()), e, size_);
  return issue(CommOp::AllGather, [&](ncclComm_t c, cudaStream_t s) {
    ZT_NCCL_ISSUE(
        ncclAllGather(in.data(), out.data(), static_cast<size_t>(m), nccl_type(in.dtype()), c, s));
  });
}

void NcclCommunicator::all_gather(Tensor input, Tensor output) {
  all_gather_async(input, output).wait();
}

// all_to_all ----------------------------------------------------------------------------------

// NCCL has no all-to-all of its own: one group of a send and a receive per peer (NCCL's
// documented pattern), this rank's own chunk a copy on the same stream.
Handle NcclCommunicator::all_to_all_async(Tensor in, Tensor out) {
  check_tensor(in, "all_to_all");
  check_tensor(out, "all_to_all");
  check_all_to_all(in, out);
  const int64_t m = in.numel() / size_;
  const size_t e = dtype_size(in.dtype());
  ctx_->stats->record(kind_, CommOp::AllToAll, static_cast<uint64_t>(in.numel()), e, size_);
  return issue(CommOp::AllToAll, [&](ncclComm_t c, cudaStream_t s) {
    const auto* src = static_cast<const char*>(in.data());
    auto* dst = static_cast<char*>(out.data());
    const size_t bytes = static_cast<size_t>(m) * e;
    ZT_NCCL_ISSUE(ncclGroupStart());
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      ZT_NCCL_ISSUE(ncclSend(src + static_cast<size_t>(r) * bytes, static_cast<size_t>(m),
                             nccl_type(in.dtype()), r, c, s));
      ZT_NCCL_ISSUE(ncclRecv(dst + static_cast<size_t>(r) * bytes, static_cast<size_t>(m),
                             nccl_type(in.dtype()), r, c, s));
    }
    ZT_NCCL_ISSUE(ncclGroupEnd());
    const size_t own = static_cast<size_t>(rank_) * bytes;
    ZT_CUDA_CHECK(cudaMemcpyAsync(dst + own, src + own, bytes, cudaMemcpyDeviceToDevice, s));
  });
}

void NcclCommunicator::all_to_all(Tensor input, Tensor output) {
  all_to_all_async(input, output).wait();
}

// The same pattern with a count per peer; a peer with nothing to send or receive posts nothing.
void NcclCommunicator::all_to_all_v(Tensor in, std::span<const int64_t> send_counts, Tensor out,
                                    std::span<const int64_t> recv_counts) {
  check_tensor(in, "all_to_all_v");
  check_tensor(out, "all_to_all_v");
  const int64_t leaving = check_all_to_all_v(in, send_counts, out, recv_counts);
  const size_t e = dtype_size(in.dtype());
  ctx_->stats->record(
      kind_, CommOp::AllToAll,
      all_to_all_v_cost(static_cast<uint64_t>(in.numel()), static_cast<uint64_t>(leaving), e));
  issue(CommOp::AllToAll, [&](ncclComm_t c, cudaStream_t s) {
    const auto* src = static_cast<const char*>(in.data());
    auto* dst = static_cast<char*>(out.data());
    size_t s_at = 0, r_at = 0, own_src = 0, own_dst = 0;
    ZT_NCCL_ISSUE(ncclGroupStart());
    for (int r = 0; r < size_; ++r) {
      const auto sn = static_cast<size_t>(send_counts[static_cast<size_t>(r)]);
      const auto rn = static_cast<size_t>(recv_counts[static_cast<size_t>(r)]);
      if (r == rank_) {
        own_src = s_at;
        own_dst = r_at;
      } else {
        if (sn > 0) ZT_NCCL_ISSUE(ncclSend(src + s_at * e, sn, nccl_type(in.dtype()), r, c, s));
        if (rn > 0) ZT_NCCL_ISSUE(ncclRecv(dst + r_at * e, rn, nccl_type(in.dtype()), r, c, s));
      }
      s_at += sn;
      r_at += rn;
    }
    ZT_NCCL_ISSUE(ncclGroupEnd());
    const auto own = static_cast<size_t>(send_counts[static_cast<size_t>(rank_)]) * e;
    if (own > 0)
      ZT_CUDA_CHECK(
          cudaMemcpyAsync(dst + own_dst * e, src + own_src * e, own, cudaMemcpyDeviceToDevice, s));
  }).wait();
}

// broadcast, send/recv, barrier ---------------------------------------------------------------

Handle NcclCommunicator::broadcast_async(Tensor t, int root) {
  check_tensor(t, "broadcast");
  ZT_CHECK(root >= 0 && root < size_, "broadcast root {} outside group {} of {}", root, name(),
           size_);
  ctx_->stats->record(kind_, CommOp::Broadcast, static_cast<uint64_t>(t.numel()),
                      dtype_size(t.dtype()), size_);
  return issue(CommOp::Broadcast, [&](ncclComm_t c, cudaStream_t s) {
    ZT_NCCL_ISSUE(ncclBroadcast(t.data(), t.data(), static_cast<size_t>(t.numel()),
                                nccl_type(t.dtype()), root, c, s));
  });
}

void NcclCommunicator::broadcast(Tensor t, int root) {
  broadcast_async(t, root).wait();
}

Handle NcclCommunicator::send_async(Tensor t, int peer, int /*tag: NCCL has none*/) {
  check_tensor(t, "send");
  check_peer(peer, "send");
  ctx_->stats->record(kind_, CommOp::Send, static_cast<uint64_t>(t.numel()), dtype_size(t.dtype()),
                      2);
  return issue(CommOp::Send, [&](ncclComm_t c, cudaStream_t s) {
    ZT_NCCL_ISSUE(
        ncclSend(t.data(), static_cast<size_t>(t.numel()), nccl_type(t.dtype()), peer, c, s));
  });
}

Handle NcclCommunicator::recv_async(Tensor t, int peer, int /*tag: NCCL has none*/) {
  check_tensor(t, "recv");
  check_peer(peer, "recv");
  ctx_->stats->record(kind_, CommOp::Recv, static_cast<uint64_t>(t.numel()), dtype_size(t.dtype()),
                      2);
  return issue(CommOp::Recv, [&](ncclComm_t c, cudaStream_t s) {
    ZT_NCCL_ISSUE(
        ncclRecv(t.data(), static_cast<size_t>(t.numel()), nccl_type(t.dtype()), peer, c, s));
  });
}

std::pair<Handle, Handle> NcclCommunicator::send_recv_async(Tensor send, int send_peer, int /*tag*/,
                                                            Tensor recv, int recv_peer,
                                                            int /*tag*/) {
  check_tensor(send, "send");
  check_peer(send_peer, "send");
  check_tensor(recv, "recv");
  check_peer(recv_peer, "recv");
  ctx_->stats->record(kind_, CommOp::Send, static_cast<uint64_t>(send.numel()),
                      dtype_size(send.dtype()), 2);
  ctx_->stats->record(kind_, CommOp::Recv, static_cast<uint64_t>(recv.numel()),
                      dtype_size(recv.dtype()), 2);
  // One group: NCCL progresses both together, and the pair completes as one.
  const Issued in = enqueue("send/recv", [&](ncclComm_t c, cudaStream_t s) {
    ZT_NCCL_ISSUE(ncclSend(send.data(), static_cast<size_t>(send.numel()), nccl_type(send.dtype()),
                           send_peer, c, s));
    ZT_NCCL_ISSUE(ncclRecv(recv.data(), static_cast<size_t>(recv.numel()), nccl_type(recv.dtype()),
                           recv_peer, c, s));
  });
  return {work(CommOp::Send, in), work(CommOp::Recv, in)};
}

std::vector<Handle> NcclCommunicator::batch_async(std::span<const PeerOp> ops) {
  std::vector<Handle> out;
  if (ops.empty()) return out;
  for (const PeerOp& op : ops) {
    check_tensor(op.t, op.send ? "send" : "recv");
    check_peer(op.peer, op.send ? "send" : "recv");
    ctx_->stats->record(kind_, op.send ? CommOp::Send : CommOp::Recv,
                        static_cast<uint64_t>(op.t.numel()), dtype_size(op.t.dtype()), 2);
  }
  // One group: NCCL progresses every operation together, and they complete as one.
  const Issued in = enqueue("send/recv batch", [&](ncclComm_t c, cudaStream_t s) {
    for (const PeerOp& op : ops) {
      const auto n = static_cast<size_t>(op.t.numel());
      if (op.send)
        ZT_NCCL_ISSUE(ncclSend(op.t.data(), n, nccl_type(op.t.dtype()), op.peer, c, s));
      else
        ZT_NCCL_ISSUE(ncclRecv(op.t.data(), n, nccl_type(op.t.dtype()), op.peer, c, s));
    }
  });
  out.reserve(ops.size());
  for (const PeerOp& op : ops) out.push_back(work(op.send ? CommOp::Send : CommOp::Recv, in));
  return out;
}

void NcclCommunicator::send(Tensor t, int peer, int tag) {
  send_async(t, peer, tag).wait();
}

void NcclCommunicator::recv(Tensor t, int peer, int tag) {
  recv_async(t, peer, tag).wait();
}

Handle NcclCommunicator::barrier_async() {
  if (barrier_word_.data() == nullptr) {
    ZT_CHECK(ctx_->device_pool != nullptr && ctx_->device_pool->device() == Device::Cuda,
             "barrier on group {}: NcclContext::device_pool must be a device pool", name());
    barrier_word_ = ctx_->device_pool->allocate(kNcclBarrierWordBytes, MemCategory::Buffers);
  }
  ctx_->stats->record(kind_, CommOp::Barrier, 0, 0, size_);
  // Complete only when every member contributed: the all-reduce is the rendezvous.
  return issue(CommOp::Barrier, [&](ncclComm_t c, cudaStream_t s) {
    ZT_NCCL_ISSUE(
        ncclAllReduce(barrier_word_.data(), barrier_word_.data(), 1, ncclFloat32, ncclSum, c, s));
  });
}

void NcclCommunicator::barrier() {
  barrier_async().wait();
}

std::unique_ptr<Communicator> NcclCommunicator::split(int color, int key, GroupKind kind) {
  MPI_Comm c = MPI_COMM_NULL;
  {
    auto guard = ctx_->watchdog->arm("split", name());
    ZT_MPI(MPI_Comm_split(comm_.c, color, key, &c));
  }
  int members = 0;
  ZT_MPI(MPI_Comm_size(c, &members));
  if (!group_needs_nccl(members)) {
    ZT_MPI(MPI_Comm_free(&c));
    ZT_CHECK(ctx_->backend != nullptr,
             "split of group {}: a group of one needs NcclContext::backend to copy with", name());
    int world_rank = 0;
    ZT_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank));
    return SelfCommunicator::member(*ctx_->backend, kind, *ctx_->stats, world_rank);
  }
  return std::make_unique<NcclCommunicator>(c, kind, *ctx_);
}

}  // namespace zt::comm
