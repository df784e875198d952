#include "src/core/swap_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>

#include "src/core/checksum.h"
#include "src/core/error.h"
#include "src/core/swap_dir.h"

namespace zt {
namespace {

bool valid_name(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (const char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
          c == '.' || c == '-'))
      return false;
  return true;
}

// O_DIRECT on the open file: false when the filesystem refuses it (EINVAL), so the file stays
// buffered.
bool enable_direct(int fd, const std::string& path) {
  const int flags = fcntl(fd, F_GETFL);
  ZT_CHECK(flags >= 0, "fcntl(F_GETFL) on {}: {}", path, std::strerror(errno));
  if (fcntl(fd, F_SETFL, flags | O_DIRECT) == 0) return true;
  ZT_CHECK(errno == EINVAL, "fcntl(F_SETFL, O_DIRECT) on {}: {}", path, std::strerror(errno));
  return false;
}

}  // namespace

SwapFile::SwapFile(AsyncIo& io, const std::string& dir, std::string_view name, size_t chunks,
                   size_t chunk_bytes, bool prefer_direct)
    : io_(io), chunk_bytes_(chunk_bytes) {
  ZT_CHECK(valid_name(name), "swap file name '{}' is not 1 to 64 of [A-Za-z0-9_.-]", name);
  ZT_CHECK(chunks > 0 && chunk_bytes > 0 && chunk_bytes % kAlign == 0,
           "swap file {}: {} chunks of {} bytes (a positive multiple of {} is needed)", name,
           chunks, chunk_bytes, kAlign);
  ZT_CHECK(chunks <= UINT64_MAX / chunk_bytes, "swap file {}: {} chunks of {} bytes overflow", name,
           chunks, chunk_bytes);
  const uint64_t total = static_cast<uint64_t>(chunks) * chunk_bytes;
  const std::string what = fmt::format("the swap file for {}", name);
  require_writable_dir(dir, what);
  require_free_space(dir, total, what);

  std::string templ = fmt::format("{}/zerotron-swap-{}-{}-XXXXXX", dir, getpid(), name);
  fd_ = UniqueFd(mkostemp(templ.data(), O_CLOEXEC));
  ZT_REQUIRE(fd_, "{}: cannot create {}: {}", what, templ, std::strerror(errno));
  path_ = templ;
  // Nothing but this descriptor refers to the file from here: the kernel frees it when the
  // process ends, however it ends.
  ZT_CHECK(unlink(path_.c_str()) == 0, "unlink {}: {}", path_, std::strerror(errno));

  if (fallocate(fd_.get(), 0, 0, static_cast<off_t>(total)) != 0) {
    const int err = errno;
    ZT_REQUIRE(err != ENOSPC && err != EFBIG && err != EDQUOT,
               "{}: cannot reserve {} bytes ({}) in {}: {}", what, total, format_bytes(total), dir,
               std::strerror(err));
    // No fallocate on this filesystem: a sparse file of the size; a full disk shows as ENOSPC on
    // a later write.
    ZT_CHECK(err == EOPNOTSUPP && ftruncate(fd_.get(), static_cast<off_t>(total)) == 0,
             "{}: cannot reserve {} bytes in {}: {}", what, total, dir, std::strerror(err));
  }
  direct_ = prefer_direct && enable_direct(fd_.get(), path_);
  checksums_.assign(chunks, 0);
  written_.assign(chunks, false);
  busy_.assign(chunks, 0);
}

SwapFile::~SwapFile() {
  // The kernel may still be writing into the callers' buffers: let every request finish.
  for (const auto& [ticket, op] : pending_) {
    try {
      io_.wait(ticket);
    } catch (...) {
      // Its failure was never asked for; the file is going away.
    }
  }
}

std::string SwapFile::where(size_t chunk) const {
  return fmt::format("swap file {} (chunk {} of {})", path_, chunk, chunks());
}

void SwapFile::check_chunk(size_t chunk, const void* buf) const {
  ZT_CHECK(chunk < chunks(), "swap file {}: chunk {} of {}", path_, chunk, chunks());
  ZT_CHECK(reinterpret_cast<uintptr_t>(buf) % kAlign == 0,
           "{}: buffer {} is not {}-byte aligned (use an IoBuffer)", where(chunk), buf, kAlign);
}

SwapFile::Ticket SwapFile::write_async(size_t chunk, const void* buf) {
  check_chunk(chunk, buf);
  ZT_CHECK(busy_[chunk] == 0, "{}: written while a request on it is pending", where(chunk));
  checksums_[chunk] = chunk_checksum(buf, chunk_bytes_);
  const Ticket t =
      io_.write(fd_.get(), static_cast<uint64_t>(chunk) * chunk_bytes_, buf, chunk_bytes_, path_);
  // Until the write completes the chunk on disk is neither the old nor the new data.
  written_[chunk] = true;
  busy_[chunk] = -1;
  pending_[t] = {chunk, false, nullptr};
  return t;
}

SwapFile::Ticket SwapFile::read_async(size_t chunk, void* buf) {
  check_chunk(chunk, buf);
  ZT_CHECK(written_[chunk], "{}: read before it was ever written", where(chunk));
  ZT_CHECK(busy_[chunk] >= 0, "{}: read while a write to it is pending", where(chunk));
  const Ticket t =
      io_.read(fd_.get(), static_cast<uint64_t>(chunk) * chunk_bytes_, buf, chunk_bytes_, path_);
  ++busy_[chunk];
  pending_[t] = {chunk, true, buf};
  return t;
}

void SwapFile::wait(Ticket ticket) {
  const auto it = pending_.find(ticket);
  ZT_CHECK(it != pending_.end(), "swap file {}: wait on ticket {}, not a pending request of it",
           path_, ticket);
  const Pending op = it->second;
  pending_.erase(it);
  busy_[op.chunk] = op.read ? busy_[op.chunk] - 1 : 0;
  try {
    io_.wait(ticket);
  } catch (const IoError& e) {
    if (!op.read) written_[op.chunk] = false;  // what is on disk is unknown
    throw Error(fmt::format("{}: {}", where(op.chunk), e.detail()));
  }
  if (op.read && chunk_checksum(op.buf, chunk_bytes_) != checksums_[op.chunk])
    throw Error(
        fmt::format("{}: checksum mismatch: the file was changed or truncated while training",
                    where(op.chunk)));
}

void SwapFile::wait_all(const std::vector<Ticket>& tickets) {
  std::exception_ptr first;
  for (const Ticket t : tickets) {
    try {
      wait(t);
    } catch (const Error&) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

}  // namespace zt
