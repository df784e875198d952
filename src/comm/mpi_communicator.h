#pragma once
// MpiCommunicator: Communicator on Open MPI (CPU backend; host memory). Groups come from
// MPI_Comm_split; every communicator owns its MPI_Comm and frees it in the destructor.
//
// Asynchronous progress. Open MPI 4.1 has no asynchronous progress for the shared-memory BTL
// (vader) or for its non-blocking collectives (libnbc): an MPI_Iallreduce advances only while
// some thread is inside MPI. MpiProgress supplies that thread:
//   ProgressMode::Thread (default) — MPI runs with MPI_THREAD_MULTIPLE and a progress thread
//     calls MPI_Test on the outstanding requests while any exist, sleeping poll_interval_us
//     between polls (it sleeps on a condition variable, costing nothing, when none exist).
//     Communication then overlaps compute without the trainer doing anything.
//   ProgressMode::Manual — no thread; operations advance when the caller calls
//     Communicator::progress() or Handle::test() (e.g. between layers of backward), and in wait().
// bench_collectives --overlap measures both (the numbers are in the runtime note / README).
//
// Synchronous sends (MpiContext::synchronous_sends, ZT_SYNCHRONOUS_SENDS=1): a test mode where
// send and send_async are MPI_Ssend / MPI_Issend, complete only once the receiver matched them,
// as NCCL's are: an exchange order that relies on buffering hangs and the watchdog names it.
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "src/comm/communicator.h"
#include "src/comm/watchdog.h"
#include "src/core/memory_pool.h"
#include "src/core/protected_memory.h"

namespace zt::comm {

enum class ProgressMode : uint8_t { Thread, Manual };

// One per process, shared by all communicators (owned by MpiRuntime).
class MpiProgress {
 public:
  struct Op {
    MPI_Request req = MPI_REQUEST_NULL;
    bool done = false;  // guarded by MpiProgress::mu_
    std::chrono::steady_clock::time_point issued = std::chrono::steady_clock::now();
    std::chrono::steady_clock::time_point completed;  // when `done` was first seen
  };

  MpiProgress(ProgressMode mode, int poll_interval_us);
  ~MpiProgress();
  MpiProgress(const MpiProgress&) = delete;
  MpiProgress& operator=(const MpiProgress&) = delete;

  // Switching is allowed when no operation is outstanding.
  void set_mode(ProgressMode mode);
  ProgressMode mode() const { return mode_; }
  void set_poll_interval_us(int us) { poll_us_.store(us); }
  int poll_interval_us() const { return poll_us_.load(); }

  std::shared_ptr<Op> track(MPI_Request req);
  // Tests every outstanding request once; returns how many completed.
  int poll();
  bool test(Op& op);
  void wait(Op& op);  // the caller arms the watchdog
  size_t outstanding() const;

 private:
  int poll_locked();
  void start_thread();
  void stop_thread();
  void loop();

  ProgressMode mode_;
  std::atomic<int> poll_us_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::shared_ptr<Op>> ops_;
  bool stop_ = false;
  std::thread thread_;
};

// fp32 staging buffers for half-precision reductions, reused across calls. A lease holds one
// buffer until it is destroyed (for async ops: until wait()). Allocates only when no free
// buffer is large enough; then the largest free one is regrown (or, if all are leased, a new
// one is added) — so steady state allocates nothing.
class StagingPool {
 public:
  explicit StagingPool(MemoryPool& pool) : pool_(&pool) {}
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& o) noexcept : owner_(o.owner_), slot_(o.slot_), data_(o.data_) {
      o.owner_ = nullptr;
    }
    Lease& operator=(Lease&& o) noexcept;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease() { reset(); }
    void reset();
    float* data() const { return data_; }

   private:
    friend class StagingPool;
    Lease(StagingPool* p, size_t s, float* d) : owner_(p), slot_(s), data_(d) {}
    StagingPool* owner_ = nullptr;
    size_t slot_ = 0;
    float* data_ = nullptr;
  };
  Lease acquire(size_t floats);
  // At least `count` free buffers of at least `floats` each exist afterwards.
  void reserve(size_t floats, int count);
  size_t allocations() const { return allocations_; }  // buffers allocated so far
  size_t bytes() const;                                // bytes held now

 private:
  struct Slot {
    Buffer buf;
    bool leased = false;
  };
  MemoryPool* pool_;
  std::vector<Slot> slots_;
  size_t allocations_ = 0;
};

// What MpiCommunicators of one world share.
struct MpiContext {
  MemoryPool* pool = nullptr;
  CommStats* stats = nullptr;
  MpiProgress* progress = nullptr;
  Watchdog* watchdog = nullptr;
  // Point-to-point sends complete only once the receiver has matched them (MPI_Ssend and
  // MPI_Issend), never from MPI's eager buffer: an exchange order that deadlocks without
  // buffering, as NCCL's would, hangs here too and the watchdog names it
  // (RuntimeOptions::synchronous_sends).
  bool synchronous_sends = false;
};

class MpiCommunicator final : public Communicator {
 public:
  // Takes ownership of `comm` (freed in the destructor). The context's objects must outlive it.
  MpiCommunicator(MPI_Comm comm, GroupKind kind, MpiContext ctx);
  ~MpiCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  GroupKind kind() const override { return kind_; }
  int world_rank_of(int group_rank) const override {
    return world_ranks_.at(static_cast<size_t>(group_rank));
  }
  CommStats& stats() override { return *ctx_.stats; }
  MPI_Comm native() const { return comm_; }
  const StagingPool& staging() const { return staging_; }
  void reserve_staging(size_t elements, int count) override;
  // A blocking all-reduce of a half tensor longer than this is staged slice by slice.
  static constexpr int64_t kStagingSlice = int64_t{1} << 20;

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
  void barrier() override;
  Handle barrier_async() override;
  void progress() override;
  std::unique_ptr<Communicator> split(int color, int key, GroupKind kind) override;

  // What remains to do after MPI completes: widen back fp32 -> half, move an in-place
  // reduce-scatter result to its chunk, release the staging lease.
  struct Finish {
    StagingPool::Lease lease;
    const float* narrow_src = nullptr;
    Tensor narrow_dst;
    const void* move_src = nullptr;
    void* move_dst = nullptr;
    size_t move_bytes = 0;
    void run();
  };

 private:
  struct Plan;
  Plan plan_all_reduce(Tensor t);
  Plan plan_reduce_scatter(Tensor input, Tensor output);
  Plan plan_all_gather(Tensor input, Tensor output);
  Plan plan_all_to_all(Tensor input, Tensor output);
  // `access` (held until the operation finished) where its tensors may be device memory.
  Handle make_handle(CommOp op, MPI_Request req, Finish finish, const Watchdog::Where& where,
                     std::optional<DeviceAccess> access);
  // Counts `op` as issued by this rank (the watchdog's board) and returns where it is: a
  // collective of the group, or with `peer` (a group rank) a point-to-point operation.
  Watchdog::Where place(std::string_view op, int peer = -1);
  void check_tensor(const Tensor& t, const char* what) const;

  MPI_Comm comm_ = MPI_COMM_NULL;
  GroupKind kind_;
  MpiContext ctx_;
  int rank_ = 0;
  int size_ = 1;
  std::vector<int> world_ranks_;
  uint64_t key_ = 0;  // group_key(kind_, world_ranks_): its collectives' counter on the board
  StagingPool staging_;
  std::vector<int> v_args_;  // all_to_all_v's counts and displacements, reused
};

}  // namespace zt::comm
