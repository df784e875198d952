// Swap-file bandwidth: writes and reads a SwapFile under DIR the way the NVMe tier does (chunks
// from a few aligned buffers, each chunk checksummed on write and verified on read, all through
// one io_uring ring), and times the checksum alone. Prints one JSON object, which `zerotron
// simulate --calibrate` reads for the NVMe tier's bandwidths.
//
// Usage: build/bin/bench_disk_bandwidth DIR [TOTAL [CHUNK [QUEUE_DEPTH]]] [--block B] [--buffered]
//   TOTAL        bytes written and read (default 2G; K, M, G suffixes are powers of 1024)
//   CHUNK        the chunk size (default 16M, a multiple of 4096)
//   QUEUE_DEPTH  io_uring requests in flight (default 32)
//   --block B    the size one request covers (default 1M)
//   --buffered   no O_DIRECT (the page cache then serves the reads: not the disk's speed)
// The file is written twice: the first pass (first_write_bytes_per_s) also converts the
// preallocated extents, the second is what every later swap-out sees (write_bytes_per_s).
#include <sys/vfs.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/bench_main.h"
#include "src/core/async_io.h"
#include "src/core/checksum.h"
#include "src/core/error.h"
#include "src/core/io_buffer.h"
#include "src/core/memory_pool.h"
#include "src/core/swap_file.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

uint64_t parse_bytes(const std::string& s, const char* what) {
  size_t end = 0;
  uint64_t v = 0;
  try {
    v = std::stoull(s, &end);
  } catch (const std::exception&) {
    throw zt::InputError(fmt::format("{}: '{}' is not a byte count", what, s));
  }
  const std::string unit = s.substr(end);
  const int shift = unit.empty()                   ? 0
                    : unit == "K" || unit == "KiB" ? 10
                    : unit == "M" || unit == "MiB" ? 20
                    : unit == "G" || unit == "GiB" ? 30
                                                   : -1;
  ZT_REQUIRE(shift >= 0, "{}: '{}' has an unknown unit (K, M or G)", what, s);
  return v << shift;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos)
      return line.substr(line.find(':') + 2);
  return "";
}

// Bytes per second of `f` over `bytes`, the best of `reps` runs.
template <typename F>
double best_rate(size_t bytes, int reps, F&& f) {
  double best = 0;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    f();
    best = std::max(best, static_cast<double>(bytes) / seconds_since(t0));
  }
  return best;
}

}  // namespace

static int run(int argc, char** argv) {
  std::vector<std::string> pos;
  size_t block = zt::AsyncIo::kDefaultBlockBytes;
  bool buffered = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--block") {
      ZT_REQUIRE(i + 1 < argc, "--block needs a value");
      block = parse_bytes(argv[++i], "--block");
    } else if (a == "--buffered") {
      buffered = true;
    } else {
      pos.push_back(a);
    }
  }
  ZT_REQUIRE(!pos.empty() && pos.size() <= 4,
             "usage: bench_disk_bandwidth DIR [TOTAL [CHUNK [QUEUE_DEPTH]]] [--block B] "
             "[--buffered]");
  const std::string dir = pos[0];
  const uint64_t total = pos.size() > 1 ? parse_bytes(pos[1], "TOTAL") : uint64_t{2} << 30;
  const uint64_t chunk = pos.size() > 2 ? parse_bytes(pos[2], "CHUNK") : uint64_t{16} << 20;
  const uint64_t depth = pos.size() > 3 ? parse_bytes(pos[3], "QUEUE_DEPTH") : 32;
  ZT_REQUIRE(chunk > 0 && chunk % 4096 == 0, "CHUNK must be a positive multiple of 4096");
  ZT_REQUIRE(total >= chunk, "TOTAL must hold at least one chunk");
  ZT_REQUIRE(depth >= 1 && depth <= 4096, "QUEUE_DEPTH must be 1 to 4096");
  ZT_REQUIRE(block > 0 && block % 4096 == 0, "--block must be a positive multiple of 4096");
  const size_t chunks = total / chunk;

  zt::MemoryPool pool(zt::make_host_allocator());
  zt::AsyncIo io(static_cast<unsigned>(depth), block);
  zt::SwapFile file(io, dir, "bench", chunks, chunk, !buffered);
  // Enough buffers to keep the queue full while one more is being checksummed.
  const size_t in_queue = (depth * block + chunk - 1) / chunk;
  const size_t nbuf = std::min(chunks, std::max<size_t>(2, in_queue + 1));
  std::vector<zt::IoBuffer> bufs;
  std::mt19937_64 rng(1);
  for (size_t b = 0; b < nbuf; ++b) {
    bufs.emplace_back(pool, chunk);
    auto* w = static_cast<uint64_t*>(bufs.back().data());
    for (size_t i = 0; i < chunk / 8; ++i) w[i] = rng();
  }
  std::vector<zt::SwapFile::Ticket> ticket(nbuf, 0);
  // Every chunk once, buffer c % nbuf, waiting for that buffer's previous request first.
  const auto pass = [&](bool write) {
    const auto t0 = Clock::now();
    for (size_t c = 0; c < chunks; ++c) {
      const size_t b = c % nbuf;
      if (ticket[b] != 0) file.wait(ticket[b]);
      ticket[b] = write ? file.write_async(c, bufs[b].data()) : file.read_async(c, bufs[b].data());
    }
    for (auto& t : ticket)
      if (t != 0) file.wait(std::exchange(t, 0));
    return static_cast<double>(chunks * chunk) / seconds_since(t0);
  };
  const double first_write = pass(true);
  const double write = pass(true);
  const double read = pass(false);

  // The checksum alone: over a buffer larger than the caches, and over one that fits in L2.
  std::vector<uint64_t> big(64 << 17);  // 64 MiB
  for (auto& w : big) w = rng();
  uint32_t sink = 0;
  const size_t big_bytes = big.size() * 8;
  const double sum_memory =
      best_rate(big_bytes, 5, [&] { sink ^= zt::chunk_checksum(big.data(), big_bytes); });
  const size_t small = 256 << 10;
  const double sum_cache = best_rate(small * 256, 5, [&] {
    for (int r = 0; r < 256; ++r) sink ^= zt::chunk_checksum(big.data(), small);
  });
  const double sum_tables = best_rate(
      big_bytes, 2, [&] { sink ^= zt::detail::chunk_checksum_tables(big.data(), big_bytes); });

  struct statfs sf {};
  statfs(dir.c_str(), &sf);
  const nlohmann::json j = {
      {"bench", "disk_bandwidth"},
      {"cpu_model", cpu_model()},
      {"dir", dir},
      {"filesystem_magic", fmt::format("{:#x}", static_cast<unsigned long>(sf.f_type))},
      {"direct", file.direct()},
      {"total_bytes", chunks * chunk},
      {"chunk_bytes", chunk},
      {"queue_depth", depth},
      {"block_bytes", block},
      {"buffers", nbuf},
      {"first_write_bytes_per_s", first_write},
      {"write_bytes_per_s", write},
      {"read_bytes_per_s", read},
      // The same in the cluster description's fields: `zerotron simulate --calibrate` takes this
      // output as it is.
      {"nvme_read_gbps", read / 1e9},
      {"nvme_write_gbps", write / 1e9},
      {"resubmitted", io.resubmitted()},
      {"crc32_instruction", zt::detail::crc32c_instruction()},
      {"checksum_bytes_per_s", sum_memory},
      {"checksum_in_cache_bytes_per_s", sum_cache},
      {"checksum_tables_bytes_per_s", sum_tables},
      {"checksum_sink", sink},
  };
  std::printf("%s\n", j.dump().c_str());
  return 0;
}

int main(int argc, char** argv) {
  return zt::bench::guarded([&] { return run(argc, argv); });
}
