#include "kernels/deferred_copies.h"

#include <cstring>

#include "src/core/checksum.h"
#include "src/core/error.h"

namespace zt {
namespace {

bool overlap(const void* a, size_t an, const void* b, size_t bn) {
  const auto* x = static_cast<const std::byte*>(a);
  const auto* y = static_cast<const std::byte*>(b);
  return an > 0 && bn > 0 && x < y + bn && y < x + an;
}

}  // namespace

bool DeferredCopies::written_ahead(const void* p, size_t bytes, size_t before) const {
  for (size_t i = 0; i < before; ++i)
    if (!queue_[i].ran && overlap(queue_[i].dst, queue_[i].bytes, p, bytes)) return true;
  return false;
}

bool DeferredCopies::read_ahead(const void* p, size_t bytes) const {
  for (const Copy& c : queue_)
    if (overlap(c.src, c.bytes, p, bytes)) return true;
  return false;
}

void DeferredCopies::add(void* dst, const void* src, size_t bytes, bool to_host) {
  if (bytes == 0) return;
  const std::lock_guard lock(mu_);
  Copy c{dst, src, bytes, to_host};
  c.check_src = !to_host || !written_ahead(src, bytes, queue_.size());
  if (to_host && c.check_src) c.src_sum = chunk_checksum(src, bytes);
  if (!read_ahead(dst, bytes)) std::memset(dst, 0xff, bytes);
  queue_.push_back(c);
}

void DeferredCopies::deliver_locked(Copy& c) {
  if (c.delivered) return;
  std::memcpy(c.dst, kept_.data() + c.kept, c.bytes);
  c.delivered = true;
}

void DeferredCopies::run_locked() {
  for (size_t i = 0; i < queue_.size(); ++i) {
    Copy& c = queue_[i];
    if (c.ran) continue;
    if (c.to_host) {
      if (c.check_src && chunk_checksum(c.src, c.bytes) != c.src_sum) {
        queue_.clear();
        kept_.clear();
        throw Error(fmt::format(
            "the source of an offload ({} bytes) changed before join_copies: compute enqueued "
            "after offload() overwrote what the copy still reads",
            c.bytes));
      }
      c.kept = kept_.size();
      const auto* s = static_cast<const std::byte*>(c.src);
      kept_.insert(kept_.end(), s, s + c.bytes);
    } else {
      for (size_t j = 0; j < i; ++j)  // stream order: an offload ahead reached this host range
        if (queue_[j].to_host && overlap(queue_[j].dst, queue_[j].bytes, c.src, c.bytes))
          deliver_locked(queue_[j]);
      std::memcpy(c.dst, c.src, c.bytes);
      c.src_sum = chunk_checksum(c.src, c.bytes);
    }
    c.ran = true;
  }
}

void DeferredCopies::join() {
  const std::lock_guard lock(mu_);
  run_locked();
}

void DeferredCopies::wait() {
  const std::lock_guard lock(mu_);
  run_locked();
  for (const Copy& c : queue_) {
    if (!c.to_host && chunk_checksum(c.src, c.bytes) != c.src_sum) {
      const size_t bytes = c.bytes;
      queue_.clear();
      kept_.clear();
      throw Error(fmt::format(
          "the host source of a fetch ({} bytes) changed before wait_copies: the host reused it "
          "while the copy could still be reading it",
          bytes));
    }
  }
  for (Copy& c : queue_)
    if (c.to_host) deliver_locked(c);
  queue_.clear();
  kept_.clear();
}

}  // namespace zt
