#pragma once
// NcclCommunicator: Communicator on NCCL (CUDA backend; device tensors), bootstrapped over MPI.
// Select the device first (cuda::select_device): NCCL binds a communicator to the current one.
//
// Groups of one. split() returns a SelfCommunicator (no NCCL) for a group that holds only this rank
// (group_needs_nccl, nccl_groups.h): counted in the same CommStats, copying with
// NcclContext::backend in stream order.
//
// Groups. Each NcclCommunicator owns an MPI communicator with the same members in the same order
// (its bootstrap): the group's rank 0 calls ncclGetUniqueId and MPI_Bcasts it, every member calls
// ncclCommInitRank. split() is MPI_Comm_split of the bootstrap followed by the same bootstrap of
// a new NCCL communicator, not ncclCommSplit: members and order are then MPI's, identical to
// MpiCommunicator's (Topology builds the same groups on both backends), world_rank_of() comes
// from the MPI group, and any NCCL 2.x works. The cost is one ncclCommInitRank per group, once.
//
// Streams. Collectives run on the communicator's own non-blocking, highest-priority stream.
// Issuing one records an event on the compute stream (NcclContext::compute), makes the comm
// stream wait on it (the collective sees every kernel issued before it), enqueues the collective
// and records a completion event on the comm stream; the host does not block. Work::test()
// queries the completion event. Work::wait() does not block the host either: it makes the compute
// stream wait on the completion event (cudaStreamWaitEvent), so every kernel, copy and stream-
// ordered allocation issued on the compute stream after it sees the result; the host sees it
// after any host read through that stream (the backend's copy_to_host synchronises it). Blocking
// forms are the async form plus wait(): "blocking" for the device, not the host.
//
// Timeouts and errors. Every issued op is tracked by the world Watchdog (watchdog.h), whose
// monitor thread polls its completion event and ncclCommGetAsyncError every 2 ms. An op not
// complete after the timeout (--comm-timeout), or an asynchronous NCCL or CUDA error, prints one
// line naming the op, the group and the rank, aborts this NCCL communicator (ncclCommAbort also
// stops its kernels) and ends the job (MPI_Abort) — a hang surfaces at the op that hangs, even
// though no host thread waits on it. test() still throws zt::Error (after aborting) on an
// asynchronous error it sees first; every op on an aborted communicator throws. The blocking
// setup calls (the unique id broadcast, ncclCommInitRank) are armed on the Watchdog like MPI's
// blocking calls. Destroying a communicator waits for its queued work (under the watchdog).
//
// Half precision. NCCL reduces bf16 and fp16 natively in 16 bits (ncclBfloat16, ncclFloat16),
// rounding after every step of its ring or tree — unlike MpiCommunicator, which widens to fp32
// and rounds once (communicator.h). Results can differ from it in the last bits, more so for
// larger groups. CommStats counts the tensor's own element size either way (here also what
// moves). Nothing is staged, so reserve_staging() is the base class's no-op.
//
// Counting: exactly as MpiCommunicator (the same CommStats::record calls, comm_stats.h), when
// the op is issued, on the issuing thread.
//
// Point to point. NCCL has no tags: `tag` is ignored and messages between two ranks match in
// issue order. A send holds its stream until the peer's matching recv runs, so two ranks that
// both send before they receive deadlock even with the async forms (MPI's eager protocol hides
// this for small messages): issue such an exchange with send_recv_async (one group), or order
// it oppositely on the two sides. MpiCommunicator's synchronous-send mode makes the same
// mistake hang on the CPU (mpi_communicator.h).
//
// Non-blocking communicators and abort. Communicators are created with blocking = 0: every NCCL
// call returns at once (ncclInProgress while it settles) and the issuing thread polls
// ncclCommGetAsyncError until it has, under the watchdog. Every NCCL call on a communicator holds
// its lock (State::use); the watchdog's poll only tries it, and ncclCommAbort waits for it at
// most 5 s, after which the process ends without the abort. Timing events around each op feed
// the overlap metrics (timeline.h; stamp() is an event on the compute stream).
// barrier() is a one-element all-reduce on the comm stream, counted as a barrier (0 bytes); its
// device word is allocated at the first barrier (kNcclBarrierWordBytes, nccl_groups.h).
#include <cuda_runtime_api.h>
#include <mpi.h>
#include <nccl.h>

#include <memory>
#include <vector>

#include "kernels/backend.h"
#include "src/comm/communicator.h"
#include "src/comm/watchdog.h"
#include "src/core/cuda_stream.h"
#include "src/core/memory_pool.h"

namespace zt::comm {

// What the NcclCommunicators of one world share; owned by the caller, outlives them.
struct NcclContext {
  CommStats* stats = nullptr;    // the world's counters (MpiRuntime::stats())
  Watchdog* watchdog = nullptr;  // its timeout bounds wait() (MpiRuntime::watchdog())
  // Device memory for a communicator's barrier word (category Buffers, nccl_groups.h), taken at
  // its first barrier: may be set after the communicators are made.
  MemoryPool* device_pool = nullptr;
  cudaStream_t compute = nullptr;  // where compute kernels run; nullptr: legacy default stream
  // The CUDA backend a group of one copies with (split: nccl_groups.h); needed only by a split
  // that yields one.
  Backend* backend = nullptr;
};

class NcclCommunicator final : public Communicator {
 public:
  // Collective over `comm`, which it takes ownership of (freed in the destructor).
  NcclCommunicator(MPI_Comm comm, GroupKind kind, NcclContext& ctx);
  ~NcclCommunicator() override;
  // Over all ranks (a duplicate of MPI_COMM_WORLD); also names this rank in CUDA errors.
  static std::unique_ptr<NcclCommunicator> world(NcclContext& ctx);

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  GroupKind kind() const override { return kind_; }
  int world_rank_of(int group_rank) const override {
    return world_ranks_.at(static_cast<size_t>(group_rank));
  }
  CommStats& stats() override { return *ctx_->stats; }

  // For every communicator of this world (they share the context).
  void set_compute_stream(cudaStream_t s) { ctx_->compute = s; }
  cudaStream_t compute_stream() const { return ctx_->compute; }
  cudaStream_t comm_stream() const;
  ncclComm_t native() const;
  // ncclCommAbort now (idempotent; never blocks): for the ranks whose peer already aborted after
  // an error, since finalizing a communicator a peer has abandoned could wait forever. Every
  // later op on it throws.
  void abort();
  bool aborted() const;

  void all_reduce(Tensor t, ReduceOp op = ReduceOp::Sum) override;
  Handle all_reduce_async(Tensor t, ReduceOp op = ReduceOp::Sum) override;
  void reduce_scatter(Tensor input, Tensor output, ReduceOp op = ReduceOp::Sum) override;
  Handle reduce_scatter_async(Tensor input, Tensor output, ReduceOp op = ReduceOp::Sum) override;
  using Communicator::all_gather;
  using Communicator::all_gather_async;
  void all_gather(Tensor input, Tensor output) override;
  Handle all_gather_async(Tensor input, Tensor output) override;
  void all_to_all(Tensor input, Tensor output) override;
  Handle all_to_all_async(Tensor input, Tensor output) override;
  void all_to_all_v(Tensor input, std::span<const int64_t> send_counts, Tensor output,
                    std::span<const int64_t> recv_counts) override;
  void broadcast(Tensor t, int root) override;
  Handle broadcast_async(Tensor t, int root) override;
  void send(Tensor t, int peer, int tag = 0) override;
  void recv(Tensor t, int peer, int tag = 0) override;
  Handle send_async(Tensor t, int peer, int tag = 0) override;
  Handle recv_async(Tensor t, int peer, int tag = 0) override;
  // One ncclGroupStart/End: the send and the receive progress together (tags ignored).
  std::pair<Handle, Handle> send_recv_async(Tensor send, int send_peer, int send_tag, Tensor recv,
                                            int recv_peer, int recv_tag) override;
  // One ncclGroupStart/End for all of them (tags ignored): the k-th send to a peer matches its
  // k-th receive from this rank, across groups and inside one.
  std::vector<Handle> batch_async(std::span<const PeerOp> ops) override;
  // An event on the compute stream (timeline.h).
  StampRef stamp() override;
  void barrier() override;
  Handle barrier_async() override;
  void progress() override {}  // the GPU progresses NCCL by itself
  std::unique_ptr<Communicator> split(int color, int key, GroupKind kind) override;

  struct State;  // the NCCL communicator and its stream, shared with in-flight Work

 private:
  // Frees the MPI communicator even when the constructor throws half-way.
  struct OwnedMpiComm {
    MPI_Comm c = MPI_COMM_NULL;
    ~OwnedMpiComm();
  };
  // An op (or a group of them) on the comm stream: its completion event, the watchdog's entry
  // and its timing events.
  struct Issued {
    std::shared_ptr<cuda::Event> done;
    StampRef started, finished;
  };
  // `what` names it in the watchdog's messages (a string literal).
  template <typename Enqueue>
  Issued enqueue(std::string_view what, Enqueue&& enqueue);
  template <typename Enqueue>
  Handle issue(CommOp op, Enqueue&& enqueue);
  Handle work(CommOp op, const Issued& in);
  void check_tensor(const Tensor& t, const char* what) const;
  void check_peer(int peer, const char* what) const;

  OwnedMpiComm comm_;
  GroupKind kind_;
  NcclContext* ctx_;
  int rank_ = 0;
  int size_ = 1;
  std::vector<int> world_ranks_;
  std::shared_ptr<State> state_;
  cuda::Event ready_;  // re-recorded per op: a stream wait captures the record current at the call
  Buffer barrier_word_;
};

}  // namespace zt::comm
