#include "src/zero/param_shard.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <optional>
#include <utility>

#include "src/core/async_io.h"
#include "src/core/error.h"
#include "src/core/io_buffer.h"
#include "src/core/swap_file.h"
#include "src/zero/precision.h"
#include "src/zero/unit_pages.h"

namespace zt {
namespace {

// Device: the shard in the backend's memory.
class DeviceShard final : public ParamShard {
 public:
  DeviceShard(const Partition& part, DType working, const DeviceContext& ctx)
      : part_(part), working_(working), be_(ctx.backend()) {
    shard_ = ctx.pool().allocate({part_.shard_numel()}, working_, MemCategory::Params);
  }
  StateTier tier() const override { return StateTier::Device; }
  void begin_fetch(int, int) override {}
  void cancel_fetch(int) override {}
  Tensor part(int unit, int) override {
    const auto& u = part_.units()[static_cast<size_t>(unit)];
    return shard_.view({part_.shard_numel()}, working_).slice(u.shard_offset, {u.part_len});
  }
  void write(int64_t offset, int64_t len, const float* master) override {
    from_f32(be_, at(shard_.data(), working_, offset), working_, master, len);
  }
  void write_host(int64_t offset, int64_t len, const void* host) override {
    be_.copy_to_device(at(shard_.data(), working_, offset), host,
                       static_cast<size_t>(len) * dtype_size(working_));
  }

 private:
  const Partition& part_;
  DType working_;
  Backend& be_;
  Buffer shard_;
};

// What the Host and Nvme tiers share: the device buffers a slot's part is staged into and the
// one the master is rounded in before it goes to the host, where the host cannot reach the
// device's memory.
class Staging {
 public:
  Staging(const DeviceContext& ctx, DType working, const std::vector<int64_t>& slot_parts,
          int64_t max_part)
      : working_(working), be_(ctx.backend()), needed_(ctx.needs_staging()) {
    if (!needed_) return;
    for (int64_t n : slot_parts)
      slots_.push_back(ctx.pool().allocate({n}, working_, MemCategory::Buffers));
    round_ = ctx.pool().allocate({max_part}, working_, MemCategory::Buffers);
  }
  static size_t bytes(bool needed, DType working, const std::vector<int64_t>& slot_parts,
                      int64_t max_part) {
    if (!needed) return 0;
    size_t b = static_cast<size_t>(max_part) * dtype_size(working);
    for (int64_t n : slot_parts) b += static_cast<size_t>(n) * dtype_size(working);
    return b;
  }
  // Starts `len` elements of a part in host memory on their way into slot `slot`'s device
  // buffer on the side stream; the host must not change them until the backend's wait_copies().
  void send(int slot, const void* host, int64_t len) {
    if (!needed_) return;
    be_.fetch(slots_[static_cast<size_t>(slot)].data(), host,
              static_cast<size_t>(len) * dtype_size(working_));
  }
  // The part sent into slot `slot` (or, where no staging is needed, `host` itself) as a tensor
  // in the backend's memory, for the work enqueued from now on.
  Tensor arrived(int slot, const void* host, int64_t len) {
    if (!needed_) return Tensor(const_cast<void*>(host), {len}, working_);
    be_.join_copies();
    return slots_[static_cast<size_t>(slot)].view({len}, working_);
  }
  // `len` master elements (backend memory) rounded to the working precision into host memory;
  // len is at most a unit's part.
  void round_to_host(void* host, const float* master, int64_t len) {
    if (!needed_) {
      from_f32(be_, host, working_, master, len);
      return;
    }
    from_f32(be_, round_.data(), working_, master, len);
    be_.copy_to_host(host, round_.data(), static_cast<size_t>(len) * dtype_size(working_));
  }

 private:
  DType working_;
  Backend& be_;
  bool needed_;
  std::vector<Buffer> slots_;
  Buffer round_;
};

// Host: the shard in host memory, staged to the device per gather.
class HostShard final : public ParamShard {
 public:
  HostShard(const Partition& part, DType working, const DeviceContext& ctx,
            const std::vector<int64_t>& slot_parts)
      : part_(part),
        working_(working),
        be_(ctx.backend()),
        staging_(ctx, working, slot_parts, part.max_part()) {
    shard_ = ctx.host().allocate({part_.shard_numel()}, working_, MemCategory::HostParams);
  }
  StateTier tier() const override { return StateTier::Host; }
  // The part goes to the device behind the compute enqueued so far, as the prefetch asks.
  void begin_fetch(int unit, int slot) override {
    sending_.resize(std::max(sending_.size(), static_cast<size_t>(slot) + 1), -1);
    sending_[static_cast<size_t>(slot)] = unit;
    staging_.send(slot, host_part(unit), part_len(unit));
  }
  void cancel_fetch(int) override {}
  Tensor part(int unit, int slot) override {
    ZT_CHECK(sending_[static_cast<size_t>(slot)] == unit, "slot {} was fetching unit {}, not {}",
             slot, sending_[static_cast<size_t>(slot)], unit);
    return staging_.arrived(slot, host_part(unit), part_len(unit));
  }
  void write(int64_t offset, int64_t len, const float* master) override {
    be_.wait_copies();  // no part on its way to the device still reads the shard
    for_unit_pieces(part_, offset, len, [&](int, int64_t, int64_t at_shard, int64_t n) {
      staging_.round_to_host(at(shard_.data(), working_, at_shard), master + (at_shard - offset),
                             n);
    });
  }
  void write_host(int64_t offset, int64_t len, const void* host) override {
    be_.wait_copies();  // no part on its way to the device still reads the shard
    std::memcpy(at(shard_.data(), working_, offset), host,
                static_cast<size_t>(len) * dtype_size(working_));
  }

 private:
  const void* host_part(int unit) const {
    return at(shard_.data(), working_, part_.units()[static_cast<size_t>(unit)].shard_offset);
  }
  int64_t part_len(int unit) const { return part_.units()[static_cast<size_t>(unit)].part_len; }

  const Partition& part_;
  DType working_;
  Backend& be_;
  Buffer shard_;
  Staging staging_;
  std::vector<int> sending_;  // per slot: the unit sent into it
  SideCopyGuard copies_{&be_};
};

// Nvme: every unit's part in whole pages of the swap file; a slot's fetch reads them into the
// slot's host buffer; writes collect a unit's part in a host buffer and write it whole.
class SwappedShard final : public ParamShard {
 public:
  SwappedShard(const StateTierConfig& cfg, const Partition& part, DType working,
               const DeviceContext& ctx, const std::vector<int64_t>& slot_parts)
      : part_(part),
        working_(working),
        e_(dtype_size(working)),
        be_(ctx.backend()),
        staging_(ctx, working, slot_parts, part.max_part()),
        pages_(unit_pages(part, e_)),
        io_(static_cast<unsigned>(cfg.aio_queue_depth), static_cast<size_t>(cfg.aio_block_bytes)) {
    for (int64_t n : slot_parts) {
      Fetch f;
      f.buf = IoBuffer(ctx.host(), pages_of(n, e_) * kPageBytes);
      slots_.push_back(std::move(f));
    }
    unit_buf_ = IoBuffer(ctx.host(), pages_of(part.max_part(), e_) * kPageBytes);
    written_.assign(part_.units().size(), false);
    if (pages_.total > 0) file_.emplace(io_, cfg.nvme_path, "params", pages_.total, kPageBytes);
  }
  ~SwappedShard() override {
    for (auto& f : slots_) {
      try {
        wait_all(std::exchange(f.reads, {}));
      } catch (const Error&) {  // the run is ending already; the file waits for the rest
      }
    }
  }
  StateTier tier() const override { return StateTier::Nvme; }
  uint64_t file_bytes() const override { return file_ ? file_->file_bytes() : 0; }

  void begin_fetch(int unit, int slot) override {
    Fetch& f = slots_[static_cast<size_t>(slot)];
    settle(slot);
    be_.wait_copies();           // the slot's last part has left its host buffer
    if (held_ == unit) flush();  // the file must have what the next read asks for
    f.unit = unit;
    const auto k = static_cast<size_t>(unit);
    if (!written_[k]) {
      std::memset(f.buf.data(), 0, f.buf.bytes());
      return;
    }
    read_pages(*file_, pages_.first[k], pages_of(part_.units()[k].part_len, e_), f.buf, f.reads);
  }
  Tensor part(int unit, int slot) override {
    Fetch& f = slots_[static_cast<size_t>(slot)];
    ZT_CHECK(f.unit == unit, "slot {} was fetching unit {}, not {}", slot, f.unit, unit);
    settle(slot);
    const int64_t len = part_.units()[static_cast<size_t>(unit)].part_len;
    staging_.send(slot, f.buf.data(), len);
    return staging_.arrived(slot, f.buf.data(), len);
  }
  void cancel_fetch(int slot) override { settle(slot); }

  void write(int64_t offset, int64_t len, const float* master) override {
    for_unit_pieces(part_, offset, len, [&](int unit, int64_t within, int64_t at_shard, int64_t n) {
      hold(unit, n == part_.units()[static_cast<size_t>(unit)].part_len);
      staging_.round_to_host(at(unit_buf_.data(), working_, within), master + (at_shard - offset),
                             n);
      dirty_ = true;
    });
  }
  void write_host(int64_t offset, int64_t len, const void* host) override {
    for_unit_pieces(part_, offset, len, [&](int unit, int64_t within, int64_t at_shard, int64_t n) {
      hold(unit, n == part_.units()[static_cast<size_t>(unit)].part_len);
      std::memcpy(at(unit_buf_.data(), working_, within), at(host, working_, at_shard - offset),
                  static_cast<size_t>(n) * e_);
      dirty_ = true;
    });
  }
  void finish_write() override { flush(); }

 private:
  struct Fetch {
    IoBuffer buf;
    int unit = -1;
    std::vector<AsyncIo::Ticket> reads;
  };
  // Waits for every request (each page read checked against its checksum).
  void wait_all(const std::vector<AsyncIo::Ticket>& tickets) { file_->wait_all(tickets); }
  void settle(int slot) { wait_all(std::exchange(slots_[static_cast<size_t>(slot)].reads, {})); }
  // Makes unit_buf_ the unit's part: what the file has of it unless the write covers it whole.
  void hold(int unit, bool whole) {
    if (held_ == unit) return;
    flush();
    // No read of the unit's pages may be in flight while they are written.
    for (size_t s = 0; s < slots_.size(); ++s)
      if (slots_[s].unit == unit) settle(static_cast<int>(s));
    const auto k = static_cast<size_t>(unit);
    const size_t n = pages_of(part_.units()[k].part_len, e_);
    if (whole || !written_[k]) {
      std::memset(unit_buf_.data(), 0, n * kPageBytes);
    } else {
      std::vector<AsyncIo::Ticket> reads;
      read_pages(*file_, pages_.first[k], n, unit_buf_, reads);
      wait_all(reads);
    }
    held_ = unit;
  }
  void flush() {
    if (held_ < 0) return;
    const auto k = static_cast<size_t>(held_);
    if (dirty_) {
      std::vector<AsyncIo::Ticket> writes;
      write_pages(*file_, pages_.first[k], pages_of(part_.units()[k].part_len, e_), unit_buf_,
                  writes);
      wait_all(writes);
      written_[k] = true;
    }
    held_ = -1;
    dirty_ = false;
  }

  const Partition& part_;
  DType working_;
  size_t e_;
  Backend& be_;
  Staging staging_;
  UnitPages pages_;            // the file's layout
  std::vector<bool> written_;  // per unit: its pages hold its part
  // Destroyed in reverse: the file (waiting for its requests) before the ring and the buffers.
  std::vector<Fetch> slots_;
  IoBuffer unit_buf_;
  AsyncIo io_;
  std::optional<SwapFile> file_;
  int held_ = -1;  // the unit unit_buf_ holds for write(), or -1
  bool dirty_ = false;
  SideCopyGuard copies_{&be_};
};

}  // namespace

std::unique_ptr<ParamShard> make_param_shard(const StateTierConfig& cfg, const Partition& part,
                                             DType working, const DeviceContext& ctx,
                                             const std::vector<int64_t>& slot_parts) {
  switch (cfg.tier) {
    case StateTier::Host:
      return std::make_unique<HostShard>(part, working, ctx, slot_parts);
    case StateTier::Nvme:
      return std::make_unique<SwappedShard>(cfg, part, working, ctx, slot_parts);
    default:
      return std::make_unique<DeviceShard>(part, working, ctx);
  }
}

ParamShardBytes param_shard_bytes(StateTier tier, const Partition& part, DType working,
                                  bool needs_staging, const std::vector<int64_t>& slot_parts) {
  ParamShardBytes b;
  const size_t e = dtype_size(working);
  const auto shard = static_cast<size_t>(part.shard_numel()) * e;
  if (tier == StateTier::Device) {
    b.params = shard;
    return b;
  }
  b.buffers = Staging::bytes(needs_staging, working, slot_parts, part.max_part());
  if (tier == StateTier::Host) {
    b.host_params = shard;
    return b;
  }
  for (int64_t n : slot_parts) b.nvme_buffers += io_buffer_bytes(pages_of(n, e) * kPageBytes);
  b.nvme_buffers += io_buffer_bytes(pages_of(part.max_part(), e) * kPageBytes);
  b.nvme_file = static_cast<uint64_t>(unit_pages(part, e).total) * kPageBytes;
  return b;
}

}  // namespace zt
