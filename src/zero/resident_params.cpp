#include "src/zero/resident_params.h"

#include <algorithm>
#include <vector>

#include "src/model/param_ref.h"
#include "src/zero/model_state_defaults.h"
#include "src/zero/precision.h"
#include "src/zero/unit_pages.h"

namespace zt {
namespace {

Tensor typed(const Buffer& b, int64_t offset, int64_t n, DType t) {
  return b.view({offset + n}, t).slice(offset, {n});
}

}  // namespace

ResidentParams::ResidentParams(const ParamLayout& layout, DType working, const DeviceContext& ctx)
    : layout_(layout), working_(working), be_(ctx.backend()) {
  params_ = ctx.pool().allocate({layout_.numel()}, working_, MemCategory::Params);
}

CRef ResidentParams::acquire(const Span& s) {
  const int64_t off = layout_offset(layout_, s);
  if (written_) written_(off + s.len);
  return {at(params_.data(), working_, off), working_};
}

void ResidentParams::from_master(const float* master) {
  from_master_range(0, layout_.numel(), master);
}

void ResidentParams::from_master_range(int64_t shard_offset, int64_t len, const float* master) {
  void* dst = at(params_.data(), working_, shard_offset);
  if (master == dst) return;  // fp32: the master is the working copy
  from_f32(be_, dst, working_, master, len);
}

void ResidentParams::from_host_range(int64_t shard_offset, int64_t len, const void* host) {
  be_.copy_to_device(at(params_.data(), working_, shard_offset), host,
                     static_cast<size_t>(len) * dtype_size(working_));
}

PaddedParams::PaddedParams(const ParamLayout& layout, const Partition& part, DType working,
                           const DeviceContext& ctx, const UnitGroups& groups,
                           int64_t allgather_elems, uint64_t seed, float* chunk,
                           int64_t chunk_elems)
    : layout_(layout),
      part_(part),
      working_(working),
      ctx_(ctx),
      be_(ctx.backend()),
      dp_(groups.dp()),
      groups_(groups),
      allgather_elems_(allgather_elems),
      chunk_(chunk),
      chunk_elems_(chunk_elems) {
  params_ = ctx.pool().allocate({part_.padded_numel()}, working_, MemCategory::Params);
  // Every parameter from the seed, unit by unit (a parameter may span several padded units),
  // through the fp32 chunk — made in a host chunk of the same size where the host cannot write
  // the device.
  Buffer host_chunk;
  float* make = chunk_;
  int64_t room = chunk_elems_;
  if (ctx.needs_staging()) {
    room = std::min(room, model_state_defaults::kHostChunkElems);
    host_chunk = ctx.host().allocate({room}, DType::F32, MemCategory::Buffers);
    make = static_cast<float*>(host_chunk.data());
  }
  for (const auto& p : layout_.params())
    for (int64_t i = 0; i < p.numel();) {
      const auto& u = part_.units()[static_cast<size_t>(part_.unit_of(p.offset + i))];
      const int64_t len =
          std::min({room, p.numel() - i, u.layout_begin + u.real_len - (p.offset + i)});
      init_parameter_range(p, seed, i, len, make);
      if (make != chunk_) be_.copy_to_device(chunk_, make, static_cast<size_t>(len) * 4);
      from_f32(be_, at(params_.data(), working_, part_.padded_of(p.offset + i)), working_, chunk_,
               len);
      i += len;
    }
}

CRef PaddedParams::acquire(const Span& s) {
  const int64_t off = layout_offset(layout_, s);
  if (written_) gather_through(part_.unit_of(off));
  return {at(params_.data(), working_, part_.padded_of(off)), working_};
}

void PaddedParams::from_master(const float* master) {
  from_master_range(0, part_.shard_numel(), master);
  finish_from_master();
}

void* PaddedParams::own_part(int unit, int64_t within) const {
  const auto& u = part_.units()[static_cast<size_t>(unit)];
  return at(params_.data(), working_, u.padded_begin + int64_t{u.part} * u.part_len + within);
}

void PaddedParams::from_master_range(int64_t shard_offset, int64_t len, const float* master) {
  // This rank's updated part of each unit the run overlaps goes in place into the padded full
  // buffer.
  for_unit_pieces(
      part_, shard_offset, len, [&](int unit, int64_t within, int64_t at_shard, int64_t n) {
        from_f32(be_, own_part(unit, within), working_, master + (at_shard - shard_offset), n);
      });
}

void PaddedParams::from_host_range(int64_t shard_offset, int64_t len, const void* host) {
  for_unit_pieces(
      part_, shard_offset, len, [&](int unit, int64_t within, int64_t at_shard, int64_t n) {
        be_.copy_to_device(own_part(unit, within), at(host, working_, at_shard - shard_offset),
                           static_cast<size_t>(n) * dtype_size(working_));
      });
}

void PaddedParams::finish_from_master() {
  // All-gather unit by unit with at most --allgather-bucket-size elements in flight.
  std::vector<comm::Handle> inflight;
  int64_t inflight_elems = 0;
  for (const auto& u : part_.units()) {
    if (inflight_elems + u.padded_len > allgather_elems_ && !inflight.empty()) {
      for (auto& h : inflight) h.wait();
      inflight.clear();
      inflight_elems = 0;
    }
    inflight.push_back(
        groups_.of(u).all_gather_async(typed(params_, u.padded_begin, u.padded_len, working_)));
    inflight_elems += u.padded_len;
  }
  for (auto& h : inflight) h.wait();
}

void PaddedParams::defer_finish(std::function<void(int64_t)> written) {
  written_ = std::move(written);
  gathered_ = 0;
}

void PaddedParams::finish_deferred() {
  if (!written_) return;
  gather_through(static_cast<int>(part_.units().size()) - 1);
  written_ = nullptr;
}

void PaddedParams::gather_through(int unit) {
  std::vector<comm::Handle> inflight;
  for (; gathered_ <= unit; ++gathered_) {
    const auto& u = part_.units()[static_cast<size_t>(gathered_)];
    written_(u.shard_offset + u.part_len);
    inflight.push_back(
        groups_.of(u).all_gather_async(typed(params_, u.padded_begin, u.padded_len, working_)));
  }
  for (auto& h : inflight) h.wait();
}

void PaddedParams::from_full(const float* full, const float*) {
  // Every rank has the full copy: convert it into padded space directly, unit by unit (through
  // the fp32 chunk where the host cannot reach the device).
  for (const auto& u : part_.units()) {
    void* dst = at(params_.data(), working_, u.padded_begin);
    if (!ctx_.needs_staging()) {
      from_f32(be_, dst, working_, full + u.layout_begin, u.real_len);
      continue;
    }
    for (int64_t i = 0; i < u.real_len; i += chunk_elems_) {
      const int64_t len = std::min(chunk_elems_, u.real_len - i);
      be_.copy_to_device(chunk_, full + u.layout_begin + i, static_cast<size_t>(len) * 4);
      from_f32(be_, at(dst, working_, i), working_, chunk_, len);
    }
  }
}

}  // namespace zt
