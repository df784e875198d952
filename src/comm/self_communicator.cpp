#include "src/comm/self_communicator.h"

#include <cstring>
#include <string>

#include "src/core/protected_memory.h"

namespace zt::comm {

SelfCommunicator::SelfCommunicator(Backend& backend)
    : SelfCommunicator(backend, GroupKind::World, std::make_shared<CommStats>()) {}

SelfCommunicator::SelfCommunicator(Backend& backend, GroupKind kind,
                                   std::shared_ptr<CommStats> stats, int world_rank)
    : backend_(&backend), kind_(kind), stats_(std::move(stats)), world_rank_(world_rank) {}

std::unique_ptr<SelfCommunicator> SelfCommunicator::member(Backend& backend, GroupKind kind,
                                                           CommStats& stats, int world_rank) {
  // Not owned: the world's communicators own the counters.
  std::shared_ptr<CommStats> shared(std::shared_ptr<CommStats>(), &stats);
  return std::unique_ptr<SelfCommunicator>(
      new SelfCommunicator(backend, kind, std::move(shared), world_rank));
}

int SelfCommunicator::world_rank_of(int group_rank) const {
  ZT_CHECK(group_rank == 0, "group {} of one rank has no member {}", name(), group_rank);
  return world_rank_;
}

void SelfCommunicator::record(CommOp op, const Tensor& t) {
  stats_->record(kind_, op, static_cast<uint64_t>(t.numel()), dtype_size(t.dtype()), 1);
}

void SelfCommunicator::copy(const Tensor& input, const Tensor& output, bool in_place) {
  if (in_place || output.numel() == 0) return;
  if (output.device() == Device::Cpu) {
    const DeviceAccess access;  // host memory, or the staging backend's device memory
    std::memcpy(output.data(), input.data(), output.bytes());
    return;
  }
  ZT_CHECK(output.device() == backend_->device(), "{} tensor on group {} over the {} backend",
           device_name(output.device()), name(), device_name(backend_->device()));
  backend_->copy(output.data(), input.data(), output.bytes());  // in stream order
}

void SelfCommunicator::no_peer(const char* op, int peer) const {
  throw Error(std::string(op) + " to peer " + std::to_string(peer) + " on group " +
              std::string(name()) + " of one rank: there is no peer");
}

void SelfCommunicator::all_reduce(Tensor t, ReduceOp op) {
  (void)op;  // the sum or max of one value is that value
  record(CommOp::AllReduce, t);
}

Handle SelfCommunicator::all_reduce_async(Tensor t, ReduceOp op) {
  all_reduce(t, op);
  return {};
}

void SelfCommunicator::reduce_scatter(Tensor input, Tensor output, ReduceOp op) {
  (void)op;
  const bool in_place = check_reduce_scatter(input, output);
  record(CommOp::ReduceScatter, input);
  copy(input, output, in_place);
}

Handle SelfCommunicator::reduce_scatter_async(Tensor input, Tensor output, ReduceOp op) {
  reduce_scatter(input, output, op);
  return {};
}

void SelfCommunicator::all_gather(Tensor input, Tensor output) {
  const bool in_place = check_all_gather(input, output);
  record(CommOp::AllGather, output);
  copy(input, output, in_place);
}

Handle SelfCommunicator::all_gather_async(Tensor input, Tensor output) {
  all_gather(input, output);
  return {};
}

void SelfCommunicator::all_to_all(Tensor input, Tensor output) {
  check_all_to_all(input, output);
  record(CommOp::AllToAll, input);
  copy(input, output, false);
}

Handle SelfCommunicator::all_to_all_async(Tensor input, Tensor output) {
  all_to_all(input, output);
  return {};
}

void SelfCommunicator::all_to_all_v(Tensor input, std::span<const int64_t> send_counts,
                                    Tensor output, std::span<const int64_t> recv_counts) {
  const int64_t leaving = check_all_to_all_v(input, send_counts, output, recv_counts);
  stats_->record(kind_, CommOp::AllToAll,
                 all_to_all_v_cost(static_cast<uint64_t>(input.numel()),
                                   static_cast<uint64_t>(leaving), dtype_size(input.dtype())));
  copy(input, output, false);
}

void SelfCommunicator::broadcast(Tensor t, int root) {
  ZT_CHECK(root == 0, "broadcast root {} outside group {} of 1", root, name());
  record(CommOp::Broadcast, t);
}

Handle SelfCommunicator::broadcast_async(Tensor t, int root) {
  broadcast(t, root);
  return {};
}

void SelfCommunicator::send(Tensor, int peer, int) {
  no_peer("send", peer);
}

void SelfCommunicator::recv(Tensor, int peer, int) {
  no_peer("recv", peer);
}

Handle SelfCommunicator::send_async(Tensor, int peer, int) {
  no_peer("send", peer);
}

Handle SelfCommunicator::recv_async(Tensor, int peer, int) {
  no_peer("recv", peer);
}

void SelfCommunicator::barrier() {
  stats_->record(kind_, CommOp::Barrier, 0, 0, 1);
}

Handle SelfCommunicator::barrier_async() {
  barrier();
  return {};
}

std::unique_ptr<Communicator> SelfCommunicator::split(int color, int key, GroupKind kind) {
  (void)color;  // every split of a group of one is that one rank
  (void)key;
  return std::unique_ptr<Communicator>(new SelfCommunicator(*backend_, kind, stats_, world_rank_));
}

SelfWorld::SelfWorld(Backend& backend) : world_(backend), topology_(world_, 1) {}

}  // namespace zt::comm
