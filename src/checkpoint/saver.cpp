#include "src/checkpoint/saver.h"

#include <cstring>
#include <utility>
#include <vector>

#include "src/checkpoint/shard_role.h"
#include "src/core/error.h"

namespace zt {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The largest of each value over the world's ranks.
void max_over(comm::Communicator& world, double& a, double& b) {
  float v[2] = {static_cast<float>(a), static_cast<float>(b)};
  world.all_reduce(Tensor(v, {2}, DType::F32), comm::ReduceOp::Max);
  a = v[0];
  b = v[1];
}

}  // namespace

CheckpointSaver::CheckpointSaver(const DeviceContext& ctx, bool async, ZeroOptimizer& optimizer,
                                 int dp_rank) {
  if (!async) return;
  async_ = true;
  // Stage 0 saves one copy of the replicated states: those of edp rank 0 (shard_role).
  const bool writes =
      writes_shard(optimizer.state_replicated_over_dp(), dp_rank, optimizer.layout().ep_size());
  size_t bytes = 0;
  if (writes)
    bytes = static_cast<size_t>(optimizer.states().numel()) * 4 * OptimizerStates::kStates;
  if (bytes > 0) snapshot_ = ctx.host().allocate(bytes, MemCategory::HostSnapshot);
}

CheckpointSaver::~CheckpointSaver() = default;  // the jthread joins

std::optional<SaveRecord> CheckpointSaver::save(const std::string& dir, const CheckpointState& s,
                                                const SaveHooks& hooks) {
  comm::Communicator& world = s.topology.host_world();
  if (!async_) {
    const auto t0 = Clock::now();
    const SaveInProgress save = begin_save(dir, s);
    const auto w0 = Clock::now();
    const uint32_t crc = write_shard_from_state(save, s, hooks);
    double write_s = seconds_since(w0);
    SaveRecord r;
    r.iteration = save.iteration;
    r.where = finish_save(save, crc, world, hooks);
    r.stall_s = seconds_since(t0);
    max_over(world, r.stall_s, write_s);
    r.write_s = write_s;
    return r;
  }
  std::optional<SaveRecord> previous = wait(world);
  const auto t0 = Clock::now();
  Pending p{begin_save(dir, s), hooks, 0};
  const size_t bytes = p.save.section_bytes;
  std::vector<const void*> live;  // the states, where the writer thread copies them itself
  if (p.save.role.writes) {
    const std::vector<Tensor> state = s.optimizer.owned_state();
    constexpr size_t kStates = OptimizerStates::kStates;
    ZT_CHECK(snapshot_.bytes() >= bytes * kStates,
             "the host snapshot ({} bytes) is smaller than the shard's states ({} bytes)",
             snapshot_.bytes(), bytes * kStates);
    // Each state section's bytes, back to back, as the step left them: copied here through the
    // backend where the device's memory needs it, or from the tier offloaded states live on,
    // else by the writer thread.
    for (size_t k = 0; k < kStates; ++k) {
      char* dst = static_cast<char*>(snapshot_.data()) + k * bytes;
      if (!s.optimizer.states_resident())
        s.optimizer.states().read(static_cast<int>(k), 0, static_cast<int64_t>(bytes / 4),
                                  reinterpret_cast<float*>(dst));
      else if (s.staging.data() != nullptr)
        s.backend.copy_to_host(dst, state[k].data(), bytes);
      else
        live.push_back(state[k].data());
    }
  }
  p.stall_s = seconds_since(t0);
  pending_ = std::move(p);
  written_ = false;
  error_ = nullptr;
  std::promise<void> taken;
  snapshot_taken_ = live.empty() ? std::future<void>() : taken.get_future();
  writer_ = std::jthread([this, live = std::move(live), taken = std::move(taken),
                          save = &pending_->save, hooks = &pending_->hooks]() mutable {
    const auto w0 = Clock::now();
    char* base = static_cast<char*>(snapshot_.data());
    const size_t bytes = save->section_bytes;
    for (size_t k = 0; k < live.size(); ++k) std::memcpy(base + k * bytes, live[k], bytes);
    if (!live.empty()) taken.set_value();
    try {
      crc_ = write_shard(
          *save,
          [&](int k, size_t at, size_t) -> const void* {
            return base + static_cast<size_t>(k) * bytes + at;
          },
          kSavePieceBytes, *hooks);
    } catch (...) {
      error_ = std::current_exception();
    }
    write_s_ = seconds_since(w0);
    written_ = true;
  });
  return previous;
}

void CheckpointSaver::wait_for_snapshot() {
  if (!snapshot_taken_.valid()) return;
  const auto t0 = Clock::now();
  snapshot_taken_.get();
  if (pending_) pending_->stall_s += seconds_since(t0);
}

std::optional<SaveRecord> CheckpointSaver::wait(comm::Communicator& world) {
  if (!pending_) return std::nullopt;
  const auto t0 = Clock::now();
  if (writer_.joinable()) writer_.join();
  snapshot_taken_ = {};
  return publish(world, seconds_since(t0));
}

std::optional<SaveRecord> CheckpointSaver::finish_if_written(comm::Communicator& world) {
  if (!pending_) return std::nullopt;
  const auto t0 = Clock::now();
  float busy = written_ ? 0.0f : 1.0f;
  world.all_reduce(Tensor(&busy, {1}, DType::F32), comm::ReduceOp::Max);
  if (busy != 0.0f) {
    pending_->stall_s += seconds_since(t0);  // the loop waited for the agreement
    return std::nullopt;
  }
  if (writer_.joinable()) writer_.join();
  snapshot_taken_ = {};
  return publish(world, seconds_since(t0));
}

SaveRecord CheckpointSaver::publish(comm::Communicator& world, double waited_s) {
  const auto t0 = Clock::now();
  Pending p = std::move(*pending_);
  pending_.reset();
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  SaveRecord r;
  r.iteration = p.save.iteration;
  r.async = true;
  r.where = finish_save(p.save, crc_, world, p.hooks);
  r.stall_s = p.stall_s + waited_s + seconds_since(t0);
  double write_s = write_s_;
  max_over(world, r.stall_s, write_s);
  r.write_s = write_s;
  return r;
}

}  // namespace zt
