#pragma once
// SwapFile: one rank's file of `chunks` fixed-size chunks under a directory, the NVMe tier's
// backing store (docs/design/swap-io.md). It is created as
// DIR/zerotron-swap-<pid>-<name>-XXXXXX, unlinked at once (so it disappears whenever the process
// ends, kill -9 included), its whole size reserved with fallocate, and read and written with
// O_DIRECT where the filesystem allows it (else buffered: direct() says which).
//
// Every write records a checksum of its chunk (chunk_checksum); every read verifies it once the
// data is in, so a file changed or truncated under the run throws instead of feeding it wrong
// states. Buffers and chunk sizes are 4096-byte aligned (IoBuffer). I/O goes through the caller's
// AsyncIo, which must outlive the file; the destructor waits for this file's requests.
// Not thread-safe, like AsyncIo.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "src/core/async_io.h"
#include "src/core/input_file.h"

namespace zt {

class SwapFile {
 public:
  using Ticket = AsyncIo::Ticket;
  static constexpr size_t kAlign = 4096;

  // `name` ([A-Za-z0-9_.-]) says what the file holds ("optimizer", "params"). Throws InputError
  // when `dir` is unusable or lacks the space; `prefer_direct` false opens it buffered.
  SwapFile(AsyncIo& io, const std::string& dir, std::string_view name, size_t chunks,
           size_t chunk_bytes, bool prefer_direct = true);
  ~SwapFile();
  SwapFile(const SwapFile&) = delete;
  SwapFile& operator=(const SwapFile&) = delete;

  // Checksums `buf` (chunk_bytes, 4096-aligned) and starts writing it to `chunk`. No other
  // request on that chunk may be pending.
  Ticket write_async(size_t chunk, const void* buf);
  // Starts reading `chunk` (written before) into `buf`. No write to that chunk may be pending.
  Ticket read_async(size_t chunk, void* buf);
  // Completes a request of this file; after a read, verifies the chunk's checksum. Throws
  // zt::Error naming the file and the chunk on any failure.
  void wait(Ticket ticket);
  // Completes every one of `tickets`, then throws the first failure, if any: none of them is
  // in flight when this returns or throws.
  void wait_all(const std::vector<Ticket>& tickets);

  bool direct() const { return direct_; }
  const std::string& path() const { return path_; }  // unlinked: for messages only
  size_t chunks() const { return checksums_.size(); }
  size_t chunk_bytes() const { return chunk_bytes_; }
  uint64_t file_bytes() const { return static_cast<uint64_t>(chunks()) * chunk_bytes_; }
  int fd() const { return fd_.get(); }

 private:
  struct Pending {
    size_t chunk = 0;
    bool read = false;
    void* buf = nullptr;
  };
  void check_chunk(size_t chunk, const void* buf) const;
  std::string where(size_t chunk) const;

  AsyncIo& io_;
  std::string path_;
  size_t chunk_bytes_ = 0;
  UniqueFd fd_;
  bool direct_ = false;
  std::vector<uint32_t> checksums_;  // of each chunk's last write
  std::vector<bool> written_;
  std::vector<int> busy_;  // per chunk: reads pending, or -1 while a write is
  std::unordered_map<Ticket, Pending> pending_;
};

}  // namespace zt
