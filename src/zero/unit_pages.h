#pragma once
// How the NVMe tier lays a shard's unit parts out in a swap file (the parameters' and the
// gradients'): each unit's part in whole pages of its own, so it is read and written without
// touching another unit's bytes (64 KiB: 4 KiB-aligned for O_DIRECT, a few percent of waste at
// most on a unit of a few MiB, one request per page).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "src/core/io_buffer.h"
#include "src/core/swap_file.h"
#include "src/zero/partition.h"

namespace zt {

inline constexpr size_t kPageBytes = size_t{64} << 10;

inline size_t pages_of(int64_t elems, size_t elem_bytes) {
  return (static_cast<size_t>(elems) * elem_bytes + kPageBytes - 1) / kPageBytes;
}

// The file's layout: where each unit's part starts, in pages, and the pages of them all.
struct UnitPages {
  std::vector<size_t> first;  // per unit
  size_t total = 0;
};
inline UnitPages unit_pages(const Partition& part, size_t elem_bytes) {
  UnitPages p;
  for (const auto& u : part.units()) {
    p.first.push_back(p.total);
    p.total += pages_of(u.part_len, elem_bytes);
  }
  return p;
}

// Starts reading (writing) `pages` pages of `file` from page `first` into (from) `buf`, and
// appends their requests to `tickets`.
inline void read_pages(SwapFile& file, size_t first, size_t pages, const IoBuffer& buf,
                       std::vector<AsyncIo::Ticket>& tickets) {
  for (size_t p = 0; p < pages; ++p)
    tickets.push_back(file.read_async(first + p, static_cast<char*>(buf.data()) + p * kPageBytes));
}
inline void write_pages(SwapFile& file, size_t first, size_t pages, const IoBuffer& buf,
                        std::vector<AsyncIo::Ticket>& tickets) {
  for (size_t p = 0; p < pages; ++p)
    tickets.push_back(file.write_async(first + p, static_cast<char*>(buf.data()) + p * kPageBytes));
}

// What an IoBuffer of `bytes` takes from its pool.
inline size_t io_buffer_bytes(size_t bytes) {
  return (bytes + IoBuffer::kAlign - 1) / IoBuffer::kAlign * IoBuffer::kAlign + IoBuffer::kAlign;
}

// fn(unit, element within its part, shard element, length) for each unit part overlapping shard
// elements [offset, offset + len), in shard order.
template <typename Fn>
void for_unit_pieces(const Partition& part, int64_t offset, int64_t len, Fn&& fn) {
  const auto& units = part.units();
  // Units' parts are back to back in shard order: the first one ending past `offset`.
  auto it = std::upper_bound(
      units.begin(), units.end(), offset,
      [](int64_t o, const PartitionUnit& u) { return o < u.shard_offset + u.part_len; });
  for (int64_t done = 0; done < len && it != units.end(); ++it) {
    const int64_t at = offset + done;
    const int64_t within = at - it->shard_offset;
    const int64_t n = std::min(len - done, it->part_len - within);
    if (n <= 0) continue;
    fn(static_cast<int>(it - units.begin()), within, at, n);
    done += n;
  }
}

}  // namespace zt
