#pragma once
// Communicator: the collectives of one process group on zt::Tensor views.
//
// Every operation exists in a blocking form and an asynchronous form that returns a Handle.
// Tensors are contiguous host (CPU backend) or device (CUDA backend) views; all ranks of the
// group must call the same operations in the same order with the same element counts and
// dtypes (MPI's rule; a rank that deviates is caught by the collective watchdog, not by us).
//
// Half precision. bf16 and fp16 inputs to a reduction (all_reduce, reduce_scatter) are widened
// into an fp32 staging buffer owned by the communicator, reduced in fp32, and rounded back once.
// The result is therefore the correctly rounded value of the fp32 sum (the same rounding a
// single fp32 accumulator would give), independent of the group size and of the reduction
// order up to fp32 rounding — a naive ring that adds in bf16 rounds after each of its N-1
// steps and loses up to log2(N) bits (tests/dist/collectives_test.cpp shows both). The cost: the
// wire carries fp32, 2x the bytes of the half tensor. CommStats still counts the tensor's own
// element size (the paper's convention, and what NCCL would send); see comm_stats.h.
// Non-reducing ops (all_gather, broadcast, send/recv) move half tensors bit-exactly as 16-bit
// words. NcclCommunicator (CUDA backend) instead reduces half tensors natively in 16 bits, so
// its results may differ from these in the last bits (nccl_communicator.h).
//
// Staging buffers come from the MemoryPool given at construction (category Buffers). They are
// reused: a buffer is allocated only the first time a larger size (or more concurrently
// outstanding async ops) is seen, so a training loop allocates nothing in steady state.
//
// Async forms and progress: see Handle and MpiCommunicator (progress engine).
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "src/comm/comm_stats.h"
#include "src/comm/timeline.h"
#include "src/core/tensor.h"

namespace zt::comm {

enum class ReduceOp : uint8_t { Sum, Max };
std::string_view reduce_op_name(ReduceOp op);

// The state of one in-flight asynchronous operation. Backends implement it.
class Work {
 public:
  virtual ~Work() = default;
  // Non-blocking: drives progress once and returns true when the operation is complete (the
  // output tensor then holds the result). Idempotent after completion.
  virtual bool test() = 0;
  // Blocks until complete (under the collective watchdog). Idempotent.
  virtual void wait() = 0;
  // Where the operation started and (once complete) ended on its communicator's timeline
  // (timeline.h); null where nothing is timed.
  virtual StampRef started() const { return nullptr; }
  virtual StampRef finished() const { return nullptr; }
};

// RAII handle of an asynchronous operation. Move-only; the destructor waits, so a handle going
// out of scope can never leave an operation reading or writing a tensor that is being freed.
// The tensors passed to the async call must stay alive and untouched until wait() returns.
class Handle {
 public:
  Handle() = default;
  explicit Handle(std::unique_ptr<Work> w) : work_(std::move(w)) {}
  Handle(Handle&&) noexcept = default;
  Handle& operator=(Handle&& o) noexcept;
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle();

  // True when there is nothing to wait for (default-constructed, or completed and waited).
  bool done() const { return work_ == nullptr; }
  bool test();
  void wait();
  // The operation's start and end (timeline.h), kept once it completed; null before.
  const StampRef& started() const { return started_; }
  const StampRef& finished() const { return finished_; }

 private:
  void keep_stamps();
  std::unique_ptr<Work> work_;
  StampRef started_, finished_;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Which kind of group this is (world, tp, dp, pp, mp): the key of its CommStats row.
  virtual GroupKind kind() const = 0;
  std::string_view name() const { return group_kind_name(kind()); }
  // The world rank of this group's member `group_rank`.
  virtual int world_rank_of(int group_rank) const = 0;
  // Counters shared by every communicator split from the same world.
  virtual CommStats& stats() = 0;

  // In place: every rank's `t` becomes the element-wise sum (or max) over the group.
  virtual void all_reduce(Tensor t, ReduceOp op = ReduceOp::Sum) = 0;
  virtual Handle all_reduce_async(Tensor t, ReduceOp op = ReduceOp::Sum) = 0;

  // `input` has size()*m elements, `output` m: output = reduction of every rank's chunk
  // number rank(). `output` may be input's own chunk (input.slice(rank()*m)) — in place; then
  // the rest of `input` is left undefined. Otherwise the two must not overlap.
  virtual void reduce_scatter(Tensor input, Tensor output, ReduceOp op = ReduceOp::Sum) = 0;
  virtual Handle reduce_scatter_async(Tensor input, Tensor output, ReduceOp op = ReduceOp::Sum) = 0;

  // `input` has m elements, `output` size()*m: chunk r of output = rank r's input. `input` may
  // be output's own chunk (output.slice(rank()*m)) — in place.
  virtual void all_gather(Tensor input, Tensor output) = 0;
  virtual Handle all_gather_async(Tensor input, Tensor output) = 0;
  // In place: this rank's chunk already sits at output.slice(rank()*m).
  void all_gather(Tensor output);
  Handle all_gather_async(Tensor output);

  // `input` and `output` have size()*m elements each and do not overlap: chunk r of `input` goes
  // to rank r, chunk r of `output` comes from rank r (this rank's own chunk is copied across).
  virtual void all_to_all(Tensor input, Tensor output) = 0;
  virtual Handle all_to_all_async(Tensor input, Tensor output) = 0;
  // Chunks of any size (a mixture of experts' token dispatch): `input` holds chunk r for rank r,
  // send_counts[r] elements, back to back in rank order; chunk r of `output` (recv_counts[r]
  // elements, back to back) comes from rank r. Both count lists are the host's, size() long,
  // and recv_counts[r] here must be send_counts[rank()] on rank r (the caller exchanges them
  // first). One dtype, no overlap. Blocking: a dispatch needs its rows before the experts run.
  virtual void all_to_all_v(Tensor input, std::span<const int64_t> send_counts, Tensor output,
                            std::span<const int64_t> recv_counts) = 0;

  // `root` is a rank of this group.
  virtual void broadcast(Tensor t, int root) = 0;
  virtual Handle broadcast_async(Tensor t, int root) = 0;

  // Point to point inside this group (`peer` is a group rank).
  virtual void send(Tensor t, int peer, int tag = 0) = 0;
  virtual void recv(Tensor t, int peer, int tag = 0) = 0;
  virtual Handle send_async(Tensor t, int peer, int tag = 0) = 0;
  virtual Handle recv_async(Tensor t, int peer, int tag = 0) = 0;

  // A send and a receive issued as one group (Megatron-LM's batched isend/irecv): neither waits
  // for the other to be matched before the other is posted. NCCL runs a communicator's
  // operations in issue order on one stream, where a send holds the stream until its peer
  // receives: a receive issued after it would not be posted, and two ranks that exchange
  // both ways would deadlock. Here (MPI) the receive is posted first, then the send.
  // Returns {send, receive}.
  virtual std::pair<Handle, Handle> send_recv_async(Tensor send, int send_peer, int send_tag,
                                                    Tensor recv, int recv_peer, int recv_tag);
  // Several sends and receives as one group (Megatron-LM's batch_isend_irecv): none waits for
  // another to be matched before the rest are posted, so the order they are listed in is not an
  // order they complete in. NCCL: one ncclGroupStart/End, every handle completing with the group.
  // Here (MPI): every receive posted, then every send, all nonblocking, each its own handle.
  // Returns one handle per operation, in the order given.
  struct PeerOp {
    bool send = false;
    Tensor t;
    int peer = -1;
    int tag = 0;
  };
  virtual std::vector<Handle> batch_async(std::span<const PeerOp> ops);

  virtual void barrier() = 0;
  virtual Handle barrier_async() = 0;

  // Now, on the timeline this communicator's operations are timed on (timeline.h): the host
  // clock, or on NCCL an event on the compute stream.
  virtual StampRef stamp() { return HostStamp::now(); }

  // Drives every outstanding async operation of this process forward once (cheap; for the
  // manual progress mode the trainer calls it between layers). Never blocks.
  virtual void progress() = 0;

  // Allocates now the staging a caller will need for up to `count` concurrent half-precision
  // reductions of `elements` elements each (a constant-size bucket plan), so none is allocated —
  // and no hole left in a fixed device memory — while training. A no-op where nothing stages.
  virtual void reserve_staging(size_t elements, int count) {
    (void)elements;
    (void)count;
  }

  // A new communicator for the ranks of this group that pass the same `color`, ordered by
  // `key`. Collective over this group. Used by Topology.
  virtual std::unique_ptr<Communicator> split(int color, int key, GroupKind kind) = 0;

 protected:
  Communicator() = default;
  // The shape rules every backend enforces: reduce_scatter's input holds size() x the output's
  // elements, all_gather's output size() x the input's, one dtype, and the smaller tensor is
  // either the larger one's chunk number rank() (in place: the return value) or disjoint from it.
  bool check_reduce_scatter(const Tensor& in, const Tensor& out) const;
  bool check_all_gather(const Tensor& in, const Tensor& out) const;
  // all_to_all's: one dtype, equal sizes divisible by size(), no overlap.
  void check_all_to_all(const Tensor& in, const Tensor& out) const;
  // all_to_all_v's: one dtype, size() counts each, none negative, summing to each tensor's
  // elements, no overlap. Returns the elements that leave this rank (the own chunk stays).
  int64_t check_all_to_all_v(const Tensor& in, std::span<const int64_t> send_counts,
                             const Tensor& out, std::span<const int64_t> recv_counts) const;
};

}  // namespace zt::comm
