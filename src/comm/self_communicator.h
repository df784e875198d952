#pragma once
// SelfCommunicator: the Communicator of a world of one rank, for a process that runs without MPI
// (unit tests, benchmarks, a single-process Trainer). Every collective is what it is over a group
// of one: a reduction or a gather of this rank's own data (a copy where output and input differ,
// nothing where in place), a broadcast and a barrier nothing. Each is counted in
// CommStats exactly as MpiCommunicator counts a group of one: a call and its elements, 0 bytes.
// There is no peer to send to or receive from: point to point throws.
//
// SelfWorld owns such a world together with the Topology over it (tp = pp = dp = 1).
#include <memory>

#include "kernels/backend.h"
#include "src/comm/communicator.h"
#include "src/comm/topology.h"

namespace zt::comm {

class SelfCommunicator final : public Communicator {
 public:
  // The world: owns the counters its splits share. `backend` (which must outlive it and its
  // splits) copies the device tensors of the reductions and gathers that are not in place.
  explicit SelfCommunicator(Backend& backend);
  // A group of one inside a larger world (e.g. the tp group at tp 1): the same collectives,
  // counted in that world's `stats` (which must outlive it), world_rank_of(0) = `world_rank`.
  // NcclCommunicator::split makes these instead of an NCCL communicator of one (nccl_groups.h).
  static std::unique_ptr<SelfCommunicator> member(Backend& backend, GroupKind kind,
                                                  CommStats& stats, int world_rank);

  int rank() const override { return 0; }
  int size() const override { return 1; }
  GroupKind kind() const override { return kind_; }
  int world_rank_of(int group_rank) const override;
  CommStats& stats() override { return *stats_; }

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
  void progress() override {}
  std::unique_ptr<Communicator> split(int color, int key, GroupKind kind) override;

 private:
  SelfCommunicator(Backend& backend, GroupKind kind, std::shared_ptr<CommStats> stats,
                   int world_rank = 0);
  void record(CommOp op, const Tensor& t);
  // `output` takes `input`'s elements unless it already holds them (in place).
  void copy(const Tensor& input, const Tensor& output, bool in_place);
  [[noreturn]] void no_peer(const char* op, int peer) const;

  Backend* backend_;
  GroupKind kind_;
  std::shared_ptr<CommStats> stats_;
  int world_rank_ = 0;
};

// A process on its own: a world of one rank and the Topology over it.
class SelfWorld {
 public:
  explicit SelfWorld(Backend& backend = cpu_backend());
  Topology& topology() { return topology_; }

 private:
  SelfCommunicator world_;
  Topology topology_;
};

}  // namespace zt::comm
