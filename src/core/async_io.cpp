#include "src/core/async_io.h"

#include <liburing.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

#include "src/core/error.h"

namespace zt {
namespace {

enum class Op : uint8_t { Read, Write };

// One block-size piece (or the unfinished rest of one after a short transfer).
struct Piece {
  AsyncIo::Ticket ticket = 0;
  uint64_t offset = 0;
  char* buf = nullptr;
  unsigned bytes = 0;
};

struct Request {
  Op op = Op::Read;
  int fd = -1;
  std::string path;
  uint64_t offset = 0;
  size_t bytes = 0;
  size_t pieces_left = 0;  // queued or in the kernel
  std::string error;       // where and why it first failed; its queued pieces are dropped
};

}  // namespace

struct AsyncIo::Impl {
  io_uring ring{};
  unsigned depth = 0;
  size_t block = 0;
  Ticket next = 1;
  std::unordered_map<Ticket, Request> requests;
  std::deque<Piece> queued;  // not yet submitted, in order
  std::vector<Piece> slots;  // in the kernel, indexed by the SQE's user data
  std::vector<unsigned> free_slots;
  size_t in_flight = 0;
  size_t resubmitted = 0;

  Ticket submit(Op op, int fd, uint64_t offset, char* buf, size_t bytes, std::string_view path);
  void fill();
  void complete_one();
  void take_ready();
  void finish(const Piece& p, int res);
  void fail(Request& r, const Piece& p, const std::string& why);
};

AsyncIo::AsyncIo(unsigned queue_depth, size_t block_bytes) : impl_(std::make_unique<Impl>()) {
  ZT_CHECK(queue_depth >= 1 && queue_depth <= 4096, "AsyncIo: queue depth {} is not in [1, 4096]",
           queue_depth);
  ZT_CHECK(block_bytes > 0 && block_bytes % kBlockAlign == 0 && block_bytes <= (size_t{1} << 30),
           "AsyncIo: block size {} is not a multiple of {} up to 1 GiB", block_bytes, kBlockAlign);
  Impl& m = *impl_;
  m.depth = queue_depth;
  m.block = block_bytes;
  const int rc = io_uring_queue_init(queue_depth, &m.ring, 0);
  if (rc < 0)
    throw Error(
        fmt::format("io_uring_queue_init({}): {}: the kernel refuses io_uring (see "
                    "/proc/sys/kernel/io_uring_disabled, or a container's seccomp profile)",
                    queue_depth, std::strerror(-rc)));
  m.slots.resize(queue_depth);
  for (unsigned i = queue_depth; i > 0; --i) m.free_slots.push_back(i - 1);
}

AsyncIo::~AsyncIo() {
  Impl& m = *impl_;
  m.queued.clear();
  // Pieces in the kernel still read from or write into their buffers: wait for every one.
  while (m.in_flight > 0) {
    try {
      m.complete_one();
    } catch (...) {
      break;  // the ring itself failed: nothing more can be reaped
    }
  }
  io_uring_queue_exit(&m.ring);
}

AsyncIo::Ticket AsyncIo::read(int fd, uint64_t offset, void* buf, size_t bytes,
                              std::string_view path) {
  return impl_->submit(Op::Read, fd, offset, static_cast<char*>(buf), bytes, path);
}

AsyncIo::Ticket AsyncIo::write(int fd, uint64_t offset, const void* buf, size_t bytes,
                               std::string_view path) {
  // io_uring's write takes a non-const pointer; the kernel only reads from it.
  return impl_->submit(Op::Write, fd, offset, static_cast<char*>(const_cast<void*>(buf)), bytes,
                       path);
}

AsyncIo::Ticket AsyncIo::Impl::submit(Op op, int fd, uint64_t offset, char* buf, size_t bytes,
                                      std::string_view path) {
  const Ticket t = next++;
  Request& r = requests[t];
  r.op = op;
  r.fd = fd;
  r.path = path;
  r.offset = offset;
  r.bytes = bytes;
  for (size_t done = 0; done < bytes; done += block) {
    const size_t n = std::min(block, bytes - done);
    queued.push_back({t, offset + done, buf + done, static_cast<unsigned>(n)});
    ++r.pieces_left;
  }
  fill();
  return t;
}

// Moves queued pieces into free slots and hands them to the kernel.
void AsyncIo::Impl::fill() {
  bool added = false;
  while (!queued.empty() && !free_slots.empty()) {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring);
    if (sqe == nullptr) break;  // SQ full of entries the kernel has not taken yet
    const Piece p = queued.front();
    queued.pop_front();
    const unsigned slot = free_slots.back();
    free_slots.pop_back();
    slots[slot] = p;
    const Request& r = requests.at(p.ticket);
    if (r.op == Op::Read)
      io_uring_prep_read(sqe, r.fd, p.buf, p.bytes, p.offset);
    else
      io_uring_prep_write(sqe, r.fd, p.buf, p.bytes, p.offset);
    io_uring_sqe_set_data64(sqe, slot);
    ++in_flight;
    added = true;
  }
  if (!added) return;
  // Entries the kernel does not take now (EAGAIN, EINTR) stay in the SQ ring and go with the
  // next submit_and_wait in complete_one().
  const int rc = io_uring_submit(&ring);
  if (rc < 0 && rc != -EAGAIN && rc != -EBUSY && rc != -EINTR)
    throw Error(fmt::format("io_uring_submit: {}", std::strerror(-rc)));
}

// Blocks until one piece leaves the kernel and accounts for it.
void AsyncIo::Impl::complete_one() {
  ZT_CHECK(in_flight > 0, "AsyncIo: waiting with nothing in flight");
  io_uring_cqe* cqe = nullptr;
  while (io_uring_peek_cqe(&ring, &cqe) != 0 || cqe == nullptr) {
    const int rc = io_uring_submit_and_wait(&ring, 1);
    if (rc < 0 && rc != -EAGAIN && rc != -EBUSY && rc != -EINTR)
      throw Error(fmt::format("io_uring_submit_and_wait: {}", std::strerror(-rc)));
  }
  const auto slot = static_cast<unsigned>(io_uring_cqe_get_data64(cqe));
  const int res = cqe->res;
  io_uring_cqe_seen(&ring, cqe);
  const Piece p = slots[slot];
  free_slots.push_back(slot);
  --in_flight;
  finish(p, res);
}

// Accounts for every completion already posted, without blocking.
void AsyncIo::Impl::take_ready() {
  io_uring_cqe* cqe = nullptr;
  while (in_flight > 0 && io_uring_peek_cqe(&ring, &cqe) == 0 && cqe != nullptr) complete_one();
}

void AsyncIo::Impl::finish(const Piece& p, int res) {
  Request& r = requests.at(p.ticket);
  if (res < 0) {
    fail(r, p, std::strerror(-res));
  } else if (res == 0) {
    fail(r, p,
         r.op == Op::Read ? "the file ends before it (read returned 0 bytes: truncated?)"
                          : "write returned 0 bytes");
  } else if (static_cast<unsigned>(res) < p.bytes) {
    // Short transfer: the rest goes next, ahead of everything queued.
    if (r.error.empty()) {
      queued.push_front({p.ticket, p.offset + static_cast<unsigned>(res), p.buf + res,
                         p.bytes - static_cast<unsigned>(res)});
      ++resubmitted;
    } else {
      --r.pieces_left;
    }
  } else {
    --r.pieces_left;
  }
  fill();
}

void AsyncIo::Impl::fail(Request& r, const Piece& p, const std::string& why) {
  --r.pieces_left;
  if (!r.error.empty()) return;
  r.error = fmt::format("at offset {} ({} bytes of a {}-byte request at {}): {}", p.offset, p.bytes,
                        r.bytes, r.offset, why);
  // The request has failed: its pieces not yet submitted never will be.
  const Ticket t = p.ticket;
  std::erase_if(queued, [&](const Piece& q) {
    if (q.ticket != t) return false;
    --r.pieces_left;
    return true;
  });
}

void AsyncIo::wait(Ticket ticket) {
  Impl& m = *impl_;
  auto it = m.requests.find(ticket);
  ZT_CHECK(it != m.requests.end(), "AsyncIo: wait on ticket {}, which is unknown or already waited",
           ticket);
  while (it->second.pieces_left > 0) {
    m.fill();
    m.complete_one();
  }
  const Request r = std::move(it->second);
  m.requests.erase(it);
  if (r.error.empty()) return;
  const bool read = r.op == Op::Read;
  throw IoError(fmt::format("{} {} {}", read ? "read from" : "write to", r.path, r.error),
                fmt::format("{} {}", read ? "read" : "write", r.error));
}

bool AsyncIo::ready(Ticket ticket) {
  Impl& m = *impl_;
  const auto it = m.requests.find(ticket);
  ZT_CHECK(it != m.requests.end(),
           "AsyncIo: ready() on ticket {}, which is unknown or already waited", ticket);
  m.take_ready();
  return it->second.pieces_left == 0;
}

unsigned AsyncIo::queue_depth() const {
  return impl_->depth;
}
size_t AsyncIo::block_bytes() const {
  return impl_->block;
}
size_t AsyncIo::in_flight() const {
  return impl_->in_flight;
}
size_t AsyncIo::pending() const {
  return impl_->requests.size();
}
size_t AsyncIo::resubmitted() const {
  return impl_->resubmitted;
}

}  // namespace zt
