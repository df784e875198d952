#include "src/zero/swapped_states.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>
#include <vector>

#include "src/core/async_io.h"
#include "src/core/error.h"
#include "src/core/io_buffer.h"
#include "src/core/swap_file.h"

namespace zt {
namespace {

constexpr int kBuffers = 3;  // read ahead, update, write behind

// Elements per chunk (whole 4 KiB blocks of fp32; no more than the shard needs) and chunks of a
// shard of `numel` elements: what the file is made of and what the plan counts.
struct SwapGeometry {
  int64_t chunk_elems = 0;
  int64_t chunks = 0;
};
SwapGeometry swap_geometry(int64_t numel, int64_t chunk_elems) {
  SwapGeometry g;
  g.chunk_elems = std::min(chunk_elems, (std::max<int64_t>(numel, 1) + 1023) / 1024 * 1024);
  g.chunks = (numel + g.chunk_elems - 1) / g.chunk_elems;
  return g;
}

class SwappedStates final : public OptimizerStates {
 public:
  SwappedStates(const StateTierConfig& cfg, int64_t numel, const DeviceContext& ctx)
      : OptimizerStates(numel),
        chunk_elems_(swap_geometry(numel, cfg.chunk_elems).chunk_elems),
        chunks_(static_cast<size_t>(swap_geometry(numel, cfg.chunk_elems).chunks)),
        io_(static_cast<unsigned>(cfg.aio_queue_depth), static_cast<size_t>(cfg.aio_block_bytes)),
        on_write_back_(cfg.on_write_back) {
    for (auto& b : buf_) b = IoBuffer(ctx.host(), static_cast<size_t>(chunk_elems_) * 4 * kStates);
    if (chunks_ > 0)
      file_.emplace(io_, cfg.nvme_path, "optimizer", chunks_,
                    static_cast<size_t>(chunk_elems_) * 4 * kStates);
    written_.assign(chunks_, false);
  }

  StateTier tier() const override { return StateTier::Nvme; }
  float* resident(int) const override { return nullptr; }
  uint64_t file_bytes() const override { return file_ ? file_->file_bytes() : 0; }

  void stream(bool write_back, const std::function<void(const StateChunk&)>& fn) override {
    flush_cached();
    cached_ = -1;
    std::array<std::optional<AsyncIo::Ticket>, kBuffers> reading, writing;
    const auto start_read = [&](size_t c) {
      const size_t b = c % kBuffers;
      if (writing[b]) file_->wait(*std::exchange(writing[b], std::nullopt));
      if (written_[c])
        reading[b] = file_->read_async(c, buf_[b].data());
      else
        std::memset(buf_[b].data(), 0, buf_[b].bytes());
    };
    if (chunks_ > 0) start_read(0);
    for (size_t c = 0; c < chunks_; ++c) {
      if (c + 1 < chunks_) start_read(c + 1);
      const size_t b = c % kBuffers;
      if (reading[b]) file_->wait(*std::exchange(reading[b], std::nullopt));
      fn(view(c, b));
      if (write_back) {
        writing[b] = file_->write_async(c, buf_[b].data());
        written_[c] = true;
        if (on_write_back_) on_write_back_();
      }
    }
    for (auto& w : writing)
      if (w) file_->wait(*w);
  }

  void read(int k, int64_t offset, int64_t n, float* host) override {
    for_ranges(k, offset, n, [&](float* chunk_part, int64_t done, int64_t len) {
      std::memcpy(host + done, chunk_part, static_cast<size_t>(len) * 4);
    });
  }
  void write(int k, int64_t offset, int64_t n, const float* host) override {
    for_ranges(k, offset, n, [&](float* chunk_part, int64_t done, int64_t len) {
      std::memcpy(chunk_part, host + done, static_cast<size_t>(len) * 4);
      dirty_ = true;
    });
  }

 private:
  StateChunk view(size_t c, size_t b) const {
    StateChunk s;
    s.offset = static_cast<int64_t>(c) * chunk_elems_;
    s.len = std::min(chunk_elems_, numel() - s.offset);
    auto* base = static_cast<float*>(buf_[b].data());
    for (int k = 0; k < kStates; ++k) s.state[k] = base + int64_t{k} * chunk_elems_;
    return s;
  }

  // fn(part of state k in the cached chunk, elements done so far, length) over [offset, +n),
  // one chunk at a time through buffer 0.
  template <typename Fn>
  void for_ranges(int k, int64_t offset, int64_t n, Fn&& fn) {
    ZT_CHECK(offset >= 0 && n >= 0 && offset + n <= numel(),
             "optimizer states [{}, {}) outside the shard's {} elements", offset, offset + n,
             numel());
    for (int64_t done = 0; done < n;) {
      const int64_t at = offset + done;
      const auto c = static_cast<size_t>(at / chunk_elems_);
      cache(c);
      const int64_t within = at - static_cast<int64_t>(c) * chunk_elems_;
      const int64_t len = std::min(n - done, chunk_elems_ - within);
      fn(view(c, 0).state[k] + within, done, len);
      done += len;
    }
  }

  void cache(size_t c) {
    if (cached_ == static_cast<int64_t>(c)) return;
    flush_cached();
    if (written_[c])
      file_->wait(file_->read_async(c, buf_[0].data()));
    else
      std::memset(buf_[0].data(), 0, buf_[0].bytes());
    cached_ = static_cast<int64_t>(c);
  }

  void flush_cached() {
    if (!dirty_ || cached_ < 0) return;
    const auto c = static_cast<size_t>(cached_);
    file_->wait(file_->write_async(c, buf_[0].data()));
    written_[c] = true;
    dirty_ = false;
  }

  int64_t chunk_elems_;
  size_t chunks_;
  // Destroyed in reverse: the file (waiting for its requests) before the ring and the buffers.
  std::array<IoBuffer, kBuffers> buf_;
  AsyncIo io_;
  std::optional<SwapFile> file_;
  std::vector<bool> written_;
  std::function<void()> on_write_back_;
  int64_t cached_ = -1;  // the chunk buffer 0 holds for read()/write(), or -1
  bool dirty_ = false;
};

}  // namespace

std::unique_ptr<OptimizerStates> make_swapped_states(const StateTierConfig& cfg, int64_t numel,
                                                     const DeviceContext& ctx) {
  return std::make_unique<SwappedStates>(cfg, numel, ctx);
}

uint64_t swapped_states_file_bytes(int64_t numel, int64_t chunk_elems) {
  const SwapGeometry g = swap_geometry(numel, chunk_elems);
  return static_cast<uint64_t>(g.chunks) * static_cast<uint64_t>(g.chunk_elems) * 4 *
         OptimizerStates::kStates;
}

size_t swapped_states_buffer_bytes(int64_t numel, int64_t chunk_elems) {
  const SwapGeometry g = swap_geometry(numel, chunk_elems);
  // IoBuffer takes one alignment's worth more than it spans.
  return (static_cast<size_t>(g.chunk_elems) * 4 * OptimizerStates::kStates + IoBuffer::kAlign) *
         kBuffers;
}

}  // namespace zt
