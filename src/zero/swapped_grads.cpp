#include "src/zero/swapped_grads.h"

#include <cstring>
#include <exception>
#include <utility>

#include "src/core/error.h"
#include "src/zero/precision.h"
#include "src/zero/unit_pages.h"

namespace zt {
SwappedGrads::SwappedGrads(const StateTierConfig& cfg, const Partition& part, DType type,
                           MemoryPool& host)
    : part_(part),
      type_(type),
      e_(dtype_size(type)),
      pages_(unit_pages(part, e_)),
      buf_(host, pages_of(part.max_part(), dtype_size(type)) * kPageBytes),
      io_(static_cast<unsigned>(cfg.aio_queue_depth), static_cast<size_t>(cfg.aio_block_bytes)) {
  added_.assign(part_.units().size(), false);
  if (pages_.total > 0) file_.emplace(io_, cfg.nvme_path, "grads", pages_.total, kPageBytes);
}

SwappedGrads::~SwappedGrads() {
  try {
    wait_writes();
  } catch (const Error&) {  // the run is ending already; the file waits for the rest
  }
}

void SwappedGrads::wait_writes() {
  if (!writes_.empty()) file_->wait_all(std::exchange(writes_, {}));
}

void SwappedGrads::zero() {
  wait_writes();
  added_.assign(added_.size(), false);
  held_ = -1;
}

void SwappedGrads::hold(int unit) {
  if (held_ == unit) return;
  wait_writes();  // buf_ is about to change
  held_ = -1;
  const auto k = static_cast<size_t>(unit);
  const size_t n = pages_of(part_.units()[k].part_len, e_);
  if (!added_[k]) {
    std::memset(buf_.data(), 0, n * kPageBytes);
  } else {
    std::vector<AsyncIo::Ticket> reads;
    read_pages(*file_, pages_.first[k], n, buf_, reads);
    file_->wait_all(reads);
  }
  held_ = unit;
}

void SwappedGrads::add(int unit, const float* part) {
  hold(unit);
  wait_writes();  // the held part's last write reads buf_
  const auto k = static_cast<size_t>(unit);
  const int64_t len = part_.units()[k].part_len;
  accumulate_f32(cpu_backend(), buf_.data(), type_, part, len);
  write_pages(*file_, pages_.first[k], pages_of(len, e_), buf_, writes_);
  added_[k] = true;
}

void SwappedGrads::read(int64_t offset, int64_t len, void* dst) {
  for_unit_pieces(part_, offset, len, [&](int unit, int64_t within, int64_t at_shard, int64_t n) {
    void* to = at(dst, type_, at_shard - offset);
    const auto bytes = static_cast<size_t>(n) * e_;
    if (!added_[static_cast<size_t>(unit)]) {
      std::memset(to, 0, bytes);
      return;
    }
    hold(unit);
    std::memcpy(to, at(buf_.data(), type_, within), bytes);
  });
}

uint64_t SwappedGrads::file_bytes(const Partition& part, DType type) {
  return static_cast<uint64_t>(unit_pages(part, dtype_size(type)).total) * kPageBytes;
}

size_t SwappedGrads::buffer_bytes(const Partition& part, DType type) {
  return io_buffer_bytes(pages_of(part.max_part(), dtype_size(type)) * kPageBytes);
}

}  // namespace zt
