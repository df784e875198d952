#pragma once
// AsyncIo: reads and writes of whole buffers at file offsets through one io_uring ring, for the
// NVMe tier (optimizer states and parameter partitions swapped to files). A request is split into
// block-size pieces; at most queue-depth pieces are in the kernel at once and the rest wait their
// turn in order (DeepSpeed aio's block_size and queue_depth). A short read or write is resubmitted
// for the rest. Every failure (EIO, ENOSPC, EFBIG, a read that meets the end of the file) throws
// zt::Error from wait(), naming the file, the offset and the system's reason.
//
// The caller keeps each buffer alive and untouched until wait() on its ticket returns or throws:
// the kernel reads from or writes into it until then. wait() returns only once no piece of its
// request is in the kernel, also when it throws. The destructor waits for every piece still in
// flight before the ring goes, so no kernel I/O outlives it. Not thread-safe: one thread uses it.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "src/core/error.h"

namespace zt {

// What AsyncIo::wait throws for a failed request. what(): "write to PATH at offset N (...):
// strerror"; detail(): the same without the file, for callers that name it themselves.
class IoError : public Error {
 public:
  IoError(const std::string& what, std::string detail) : Error(what), detail_(std::move(detail)) {}
  const std::string& detail() const { return detail_; }

 private:
  std::string detail_;
};

class AsyncIo {
 public:
  using Ticket = uint64_t;
  static constexpr unsigned kDefaultQueueDepth = 32;
  static constexpr size_t kDefaultBlockBytes = size_t{1} << 20;
  static constexpr size_t kBlockAlign = 4096;  // block_bytes keeps O_DIRECT pieces aligned

  // Throws zt::Error when the kernel refuses io_uring (kernel.io_uring_disabled, a seccomp
  // profile).
  explicit AsyncIo(unsigned queue_depth = kDefaultQueueDepth,
                   size_t block_bytes = kDefaultBlockBytes);
  ~AsyncIo();
  AsyncIo(const AsyncIo&) = delete;
  AsyncIo& operator=(const AsyncIo&) = delete;

  // `bytes` of `buf` from / to `fd` at `offset`; `path` names the file in error messages.
  Ticket read(int fd, uint64_t offset, void* buf, size_t bytes, std::string_view path);
  Ticket write(int fd, uint64_t offset, const void* buf, size_t bytes, std::string_view path);
  // Completes the request (waiting as needed) and forgets its ticket; throws zt::Error when it
  // failed (IoError). Each ticket is waited for exactly once.
  void wait(Ticket ticket);
  // Whether wait(ticket) would return without blocking; takes what completions are ready.
  bool ready(Ticket ticket);

  unsigned queue_depth() const;
  size_t block_bytes() const;
  size_t in_flight() const;    // pieces in the kernel now
  size_t pending() const;      // requests not yet waited for
  size_t resubmitted() const;  // short transfers whose rest was submitted again, ever

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace zt
