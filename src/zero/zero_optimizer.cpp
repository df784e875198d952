#include "src/zero/zero_optimizer.h"

#include <algorithm>

#include "src/zero/all_reduce_grads.h"
#include "src/zero/cast_params.h"
#include "src/zero/gathered_params.h"
#include "src/zero/precision.h"
#include "src/zero/reduce_scatter_grads.h"
#include "src/zero/resident_params.h"
#include "src/zero/swapped_grads.h"
#include "src/zero/swapped_states.h"
#include "src/zero/unit_groups.h"

namespace zt {
namespace {

constexpr int64_t kChunk = model_state_defaults::kHostChunkElems;

enum class Store : uint8_t { Resident, Padded, Gathered };
enum class Reducer : uint8_t { AllReduce, ReduceScatterAtStep, ReduceScatterUnits };
struct Composition {
  Store store;
  Reducer grads;
};
// Stage k is kStages[k] (the table in zero_optimizer.h). ShardedAdam runs over the whole layout
// where the store is resident, else over the rank's partition shard.
constexpr Composition kStages[] = {
    {Store::Resident, Reducer::AllReduce},
    {Store::Padded, Reducer::ReduceScatterAtStep},
    {Store::Padded, Reducer::ReduceScatterUnits},
    {Store::Gathered, Reducer::ReduceScatterUnits},
};

}  // namespace

ZeroOptimizer::ZeroOptimizer(const ParamLayout& layout, DType working, const AdamConfig& adam,
                             const DeviceContext& ctx, uint64_t seed, const ZeroConfig& zero)
    : layout_(layout),
      working_(working),
      grad_dtype_(zero.fp32_grads ? DType::F32 : working),
      zero_(zero),
      ctx_(ctx),
      be_(ctx.backend()) {
  ZT_REQUIRE(zero.stage >= 0 && zero.stage <= 3, "--zero-stage must be 0, 1, 2 or 3, got {}",
             zero.stage);
  ZT_CHECK(zero.stage == 0 || zero.dp != nullptr, "ZeRO stage {} needs a data-parallel group",
           zero.stage);
  ZT_CHECK(zero.expert_dp == nullptr ||
               (zero.dp != nullptr && zero.dp->size() % zero.expert_dp->size() == 0),
           "the expert-data-parallel group must divide the data-parallel group");
  norm_excluded_.assign(layout_.params().size(), 0);
  if (zero.tied_copy)
    for (int k : zero.tied_params) norm_excluded_.at(static_cast<size_t>(k)) = 1;
  // Stage 0 all-reduces: every replica of a gradient holds the same sum, so only its group's
  // first rank counts it in the global norm (dense: dp rank 0; expert: edp rank 0, once per
  // set of experts).
  if (kStages[zero.stage].grads == Reducer::AllReduce) {
    comm::Communicator* edp = zero.expert_dp != nullptr ? zero.expert_dp : zero.dp;
    const bool dense_counts = zero.dp == nullptr || zero.dp->rank() == 0;
    const bool expert_counts = edp == nullptr || edp->rank() == 0;
    for (size_t k = 0; k < layout_.params().size(); ++k)
      if (!(layout_.params()[k].expert ? expert_counts : dense_counts)) norm_excluded_[k] = 1;
  }
  if (zero.world != nullptr && zero.world->size() > 1)
    norm_ = std::make_unique<comm::ScalarReducer>(*zero.world, ctx.host(), 1);
  ZT_CHECK(!zero.cast_params || (zero.stage == 0 && working != DType::F32),
           "cast working parameters need ZeRO stage 0 and a half working precision (stage {}, {})",
           zero.stage, dtype_name(working));
  const StateTierConfig& tier = zero.optimizer_tier;
  const bool offloaded = tier.tier != StateTier::Device;
  ZT_CHECK(!zero.cast_params || !offloaded,
           "cast working parameters read the master parameters resident on the device");
  if (offloaded && ctx.needs_staging() && working != DType::F32)
    host_round_ = ctx.host().allocate({kChunk}, working, MemCategory::Buffers);
  ZT_CHECK(
      zero.param_tier.tier == StateTier::Device || kStages[zero.stage].store == Store::Gathered,
      "parameter partitions exist at ZeRO stage 3 only (stage {})", zero.stage);
  if (kStages[zero.stage].store != Store::Resident) {
    compose_partitioned(adam, seed);
    return;
  }
  if (zero.cast_params) {
    grads_ = std::make_unique<AllReduceGrads>(layout_, grad_dtype_, ctx, zero.dp,
                                              zero.reduce_bucket_elems, zero.overlap_comm,
                                              zero.expert_dp);
    adam_ = std::make_unique<ShardedAdam>(layout_, Shard::whole(layout_), adam, ctx, nullptr);
    init_parameters_on(ctx, layout_, seed, adam_->master());
    store_ = std::make_unique<CastParams>(layout_, working_, ctx, zero.held_params_elems,
                                          adam_->master());
    return;
  }
  // In fp32 the resident working parameters are the master parameters themselves (when those
  // are on the device).
  auto params = std::make_unique<ResidentParams>(layout_, working_, ctx);
  float* alias = working_ != DType::F32 || offloaded ? nullptr : params->params().f32();
  store_ = std::move(params);
  grads_ =
      std::make_unique<AllReduceGrads>(layout_, grad_dtype_, ctx, zero.dp, zero.reduce_bucket_elems,
                                       zero.overlap_comm, zero.expert_dp);
  adam_ = std::make_unique<ShardedAdam>(layout_, Shard::whole(layout_), adam, ctx, alias, tier);
  if (offloaded)
    adam_->init_master(seed);
  else
    init_parameters_on(ctx, layout_, seed, adam_->master());
  refresh_working();
  if (offloaded && zero.overlap_offloaded_step) start_update_thread();
}

void ZeroOptimizer::start_update_thread() {
  update_ = std::make_unique<BackgroundJob>([&be = be_] { be.bind_thread(); });
}

void ZeroOptimizer::compose_partitioned(const AdamConfig& adam, uint64_t seed) {
  const Composition& c = kStages[zero_.stage];
  const UnitGroups groups(*zero_.dp, zero_.expert_dp);
  part_.emplace(layout_, groups.dp().size(), groups.dp().rank(), zero_.reduce_bucket_elems,
                groups.edp().size(), groups.edp().rank());
  const Partition& part = *part_;
  chunk_ = ctx_.pool().allocate({workspace_elems(part)}, DType::F32, MemCategory::Buffers);
  auto* chunk = static_cast<float*>(chunk_.data());
  const int64_t chunk_elems = static_cast<int64_t>(chunk_.bytes() / 4);
  adam_ = std::make_unique<ShardedAdam>(layout_, Shard::of(part), adam, ctx_, nullptr,
                                        zero_.optimizer_tier);
  // The own shard of the master parameters, element by element from the seed: the full model is
  // never materialised in fp32. Where the host cannot write the device, through a host chunk.
  if (zero_.optimizer_tier.tier != StateTier::Device) {
    adam_->init_master(seed);
  } else {
    Buffer host_chunk;
    float* make = nullptr;
    int64_t room = chunk_elems;
    if (ctx_.needs_staging()) {
      room = std::min(kChunk, chunk_elems);
      host_chunk = ctx_.host().allocate({room}, DType::F32, MemCategory::Buffers);
      make = static_cast<float*>(host_chunk.data());
    }
    float* master = adam_->master();
    for (const auto& s : part.segments()) {
      const auto& p = layout_.params()[static_cast<size_t>(s.param)];
      if (make == nullptr) {
        init_parameter_range(p, seed, s.layout_offset - p.offset, s.len, master + s.shard_offset);
        continue;
      }
      for (int64_t i = 0; i < s.len; i += room) {
        const int64_t len = std::min(room, s.len - i);
        init_parameter_range(p, seed, s.layout_offset - p.offset + i, len, make);
        be_.copy_to_device(master + s.shard_offset + i, make, static_cast<size_t>(len) * 4);
      }
    }
  }
  if (c.store == Store::Gathered) {
    store_ = std::make_unique<GatheredParams>(
        layout_, part, working_, ctx_, groups, zero_.param_persistence_threshold,
        PrefetchLimits{zero_.prefetch_bucket_elems, zero_.max_live_parameters}, zero_.param_tier);
    refresh_working();
  } else {
    store_ = std::make_unique<PaddedParams>(layout_, part, working_, ctx_, groups,
                                            zero_.allgather_bucket_elems, seed, chunk, chunk_elems);
  }
  if (c.grads == Reducer::ReduceScatterAtStep)
    grads_ = std::make_unique<ReduceScatterAtStep>(layout_, part, grad_dtype_, ctx_, groups,
                                                   zero_.reduce_bucket_elems, zero_.overlap_comm);
  else
    grads_ = std::make_unique<ReduceScatterUnits>(
        layout_, part, grad_dtype_, ctx_, groups, zero_.reduce_bucket_elems, zero_.overlap_comm,
        chunk, grad_tier(zero_.stage, zero_.optimizer_tier.tier, ctx_.needs_staging()),
        zero_.optimizer_tier);
  if (!grads_->grads_resident()) adam_->read_grads_by_segment(ctx_.host(), grad_dtype_);
  // Stages 1-2: the update writes the padded space behind the next forward, whose acquires
  // gather each unit once it is in (ParamStore::defer_finish). Stage 3's prefetch reads the
  // shard ahead of the acquires, so its update runs before the forward.
  if (zero_.optimizer_tier.tier != StateTier::Device && zero_.overlap_offloaded_step &&
      c.store == Store::Padded)
    start_update_thread();
  if (grad_dtype_ != DType::F32)
    groups.reserve_staging(static_cast<size_t>(part.max_unit()), ReduceScatterUnits::kReductions);
}

ZeroOptimizer::~ZeroOptimizer() = default;

ModelStateBytes ZeroOptimizer::model_state_bytes(const ParamLayout& layout, const Partition& part,
                                                 DType working, const ZeroConfig& zero,
                                                 bool needs_staging) {
  const Composition& c = kStages[zero.stage];
  const DType grad = zero.fp32_grads ? DType::F32 : working;
  const size_t e = dtype_size(working), eg = dtype_size(grad);
  const auto numel = static_cast<size_t>(layout.numel());
  const auto padded = static_cast<size_t>(part.padded_numel());
  const auto shard = static_cast<size_t>(part.shard_numel());
  ModelStateBytes b;
  switch (c.store) {
    case Store::Resident:  // the cast store keeps none: its arena is a buffer
      b.params = zero.cast_params ? 0 : numel * e;
      break;
    case Store::Padded:
      b.params = padded * e;
      break;
    case Store::Gathered: {
      const ParamShardBytes s = param_shard_bytes(
          zero.param_tier.tier, part, working, needs_staging,
          GatheredParams::slot_parts(
              layout, part, zero.param_persistence_threshold,
              PrefetchLimits{zero.prefetch_bucket_elems, zero.max_live_parameters}));
      b.params = s.params;
      b.host_params = s.host_params;
      b.nvme_buffers += s.nvme_buffers;
      b.param_file = s.nvme_file;
      b.param_staging = s.buffers;
      break;
    }
  }
  switch (c.grads) {
    case Reducer::AllReduce:
      b.grads = numel * eg;
      break;
    case Reducer::ReduceScatterAtStep:
      b.grads = padded * eg;
      break;
    case Reducer::ReduceScatterUnits:
      switch (grad_tier(zero.stage, zero.optimizer_tier.tier, needs_staging)) {
        case StateTier::Device:
          b.grads = shard * eg;
          break;
        case StateTier::Host:
          b.host_grads = shard * eg;
          break;
        case StateTier::Nvme:  // read back through a unit buffer and, for the norm, a segment one
          b.grad_file = SwappedGrads::file_bytes(part, grad);
          b.nvme_buffers += SwappedGrads::buffer_bytes(part, grad) +
                            ShardedAdam::segment_buffer_bytes(Shard::of(part), grad);
          break;
      }
      break;
  }
  const size_t owned = c.store == Store::Resident ? numel : shard;
  b.optimizer_elems = static_cast<int64_t>(owned);
  const auto n = static_cast<int64_t>(owned);
  switch (zero.optimizer_tier.tier) {
    case StateTier::Device:  // stage 0 in fp32: the working parameters are the master
      b.optimizer = (c.store == Store::Resident && working == DType::F32 ? 2 : 3) * owned * 4;
      break;
    case StateTier::Host:
      b.host_optimizer = 3 * owned * 4;
      break;
    case StateTier::Nvme:
      b.optimizer_file = swapped_states_file_bytes(n, zero.optimizer_tier.chunk_elems);
      b.nvme_buffers += swapped_states_buffer_bytes(n, zero.optimizer_tier.chunk_elems);
      break;
  }
  return b;
}

int64_t ZeroOptimizer::workspace_elems(const Partition& part) {
  // Constant-size: the largest unit part (a reduced gradient part), at least 4 MiB.
  return std::max(kChunk, part.max_part());
}

void ZeroOptimizer::zero_grad() {
  store_->begin_step();
  if (updating_)
    zero_pending_ = true;
  else
    grads_->zero();
}

void ZeroOptimizer::wait_for_update() const {
  if (!updating_) return;
  update_->wait();            // rethrows a failure, here and at every later call
  store_->finish_deferred();  // stages 1-2: the gathers no acquire has reached (collective)
  updating_ = false;
}

void ZeroOptimizer::settle_grads() {
  wait_for_update();
  if (!zero_pending_) return;
  grads_->zero();
  zero_pending_ = false;
}

void ZeroOptimizer::tie_grads() {
  settle_grads();
  if (zero_.tied == nullptr) return;
  for (int k : zero_.tied_params) {
    const ParamSpec& p = layout_.params()[static_cast<size_t>(k)];
    // Chunk by chunk of whole rows, the rule partition units follow: each chunk is contiguous in
    // the kept gradient, and both stages cut their copy of the tensor the same way.
    const int64_t step = p.chunk_rows(zero_.reduce_bucket_elems) * p.row_len();
    for (int64_t i = 0; i < p.numel(); i += step) {
      const Tensor g = grads_->local_grads(p.offset + i, std::min(step, p.numel() - i));
      ZT_CHECK(g.data() != nullptr, "ZeRO stage {} keeps no whole gradient to tie", zero_.stage);
      zero_.tied->all_reduce(g);
    }
  }
}

StepResult ZeroOptimizer::step(double lr, double loss_scale) {
  settle_grads();
  grads_->finish();
  store_->end_step();
  // A replicated gradient's copies on ranks other than its group's first are in
  // norm_excluded_ (the constructor).
  if (!update_) {
    const StepResult r = adam_->step(*grads_, grad_dtype_, lr, loss_scale, zero_.tp_rank,
                                     norm_.get(), norm_excluded_, to_store());
    if (!r.skipped) store_->finish_from_master();
    return r;
  }
  // Each updated chunk is published once its working copy is written: the resident store's
  // finish_from_master has nothing left to do.
  const MasterChunkFn updated = [this](int64_t offset, int64_t len, const float* master,
                                       bool on_host) {
    to_store()(offset, len, master, on_host);
    update_->publish(offset + len);
  };
  return adam_->step(*grads_, grad_dtype_, lr, loss_scale, zero_.tp_rank, norm_.get(),
                     norm_excluded_, updated, [this](std::function<void()> update) {
                       update_->start(std::move(update));
                       updating_ = true;
                       store_->defer_finish([this](int64_t end) { update_->wait_for(end); });
                     });
}

MasterChunkFn ZeroOptimizer::to_store() {
  return [this](int64_t offset, int64_t len, const float* master, bool on_host) {
    if (!on_host) {
      store_->from_master_range(offset, len, master);
      return;
    }
    // Rounded on the host, piece by piece through host_round_: the device receives the working
    // precision (half the bytes of fp32 in bf16/fp16), the same bits as its own from_f32.
    if (working_ == DType::F32) {
      store_->from_host_range(offset, len, master);
      return;
    }
    const auto room = static_cast<int64_t>(host_round_.bytes() / dtype_size(working_));
    ZT_CHECK(room > 0, "no host buffer to round the master parameters in");
    for (int64_t i = 0; i < len; i += room) {
      const int64_t n = std::min(room, len - i);
      from_f32(cpu_backend(), host_round_.data(), working_, master + i, n);
      store_->from_host_range(offset + i, n, host_round_.data());
    }
  };
}

void ZeroOptimizer::refresh_working() {
  adam_->visit_master(to_store());
  store_->finish_from_master();
}

std::string ZeroOptimizer::first_nonfinite_grad() const {
  wait_for_update();
  const int k = adam_->first_nonfinite_grad(*grads_, grad_dtype_);
  return k < 0 ? std::string() : layout_.params()[static_cast<size_t>(k)].name;
}

GradSyncTiming ZeroOptimizer::grad_sync_timing() const {
  GradSyncTiming t = grads_->timing();
  const comm::OverlapTiming g = store_->gather_timing();
  if (g.comm_ms <= 0) return t;
  const double hidden = t.hidden_fraction * t.comm_ms + g.hidden_fraction * g.comm_ms;
  t.comm_ms += g.comm_ms;
  t.exposed_ms += g.comm_ms * (1 - g.hidden_fraction);
  t.hidden_fraction = hidden / t.comm_ms;
  return t;
}

void ZeroOptimizer::gather_master(float* full) {
  wait_for_update();
  OptimizerStates& states = adam_->states();
  if (!part_) {
    states.read(OptimizerStates::kMaster, 0, layout_.numel(), full);
    return;
  }
  // The gather lands in the backend's memory: a host vector on the CPU, a device buffer for the
  // duration of this call elsewhere (checkpoint reshaping and tests call it, never a step).
  const int64_t max_unit = part_->max_unit();
  std::vector<float> host_tmp;
  Buffer device_tmp;
  float* tmp = nullptr;
  if (ctx_.needs_staging()) {
    device_tmp = ctx_.pool().allocate({max_unit}, DType::F32, MemCategory::Buffers);
    tmp = static_cast<float*>(device_tmp.data());
  } else {
    host_tmp.resize(static_cast<size_t>(max_unit));
    tmp = host_tmp.data();
  }
  // Offloaded states: each unit's part through host memory into the gather's own place first.
  float* master = adam_->master();
  std::vector<float> part;
  if (master == nullptr) part.resize(static_cast<size_t>(part_->max_part()));
  const UnitGroups groups(*zero_.dp, zero_.expert_dp);
  for (const auto& u : part_->units()) {
    Tensor out(tmp, {u.padded_len}, DType::F32, be_.device());
    float* own = tmp + int64_t{u.part} * u.part_len;
    if (master != nullptr) {
      own = master + u.shard_offset;
    } else {
      states.read(OptimizerStates::kMaster, u.shard_offset, u.part_len, part.data());
      be_.copy_to_device(own, part.data(), static_cast<size_t>(u.part_len) * 4);
    }
    groups.of(u).all_gather(Tensor(own, {u.part_len}, DType::F32, be_.device()), out);
    be_.copy_to_host(full + u.layout_begin, tmp, static_cast<size_t>(u.real_len) * 4);
  }
}

void ZeroOptimizer::set_master(const float* full) {
  wait_for_update();
  OptimizerStates& states = adam_->states();
  for (const auto& s : shard().segments)
    states.write(OptimizerStates::kMaster, s.shard_offset, s.len, full + s.layout_offset);
  if (states_resident())
    store_->from_full(full, adam_->master());
  else
    refresh_working();
}

void ZeroOptimizer::after_load(int64_t adam_step) {
  wait_for_update();
  adam_->set_steps(adam_step);
  refresh_working();
}

Tensor ZeroOptimizer::working_params() const {
  wait_for_update();
  const Tensor t = store_->layout_params();
  ZT_CHECK(t.data() != nullptr,
           "stage {} keeps no full working parameters{}; use gather_master() or master_params()",
           zero_.stage, zero_.cast_params ? " (they are cast from the master on acquire)" : "");
  return t;
}

Tensor ZeroOptimizer::working_grads() const {
  wait_for_update();
  const Tensor t = grads_->layout_grads();
  ZT_CHECK(t.data() != nullptr, "stage {} keeps no full gradient", zero_.stage);
  return t;
}

Tensor ZeroOptimizer::master_params() const {
  wait_for_update();
  ZT_CHECK(!part_, "stage {} keeps only a shard of the master parameters", zero_.stage);
  ZT_CHECK(states_resident(), "the master parameters are offloaded ({})",
           state_tier_flag_value(adam_->states().tier()));
  return Tensor(adam_->master(), {layout_.numel()}, DType::F32, be_.device());
}

}  // namespace zt
