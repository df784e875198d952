// The NVMe tier's I/O layer: AsyncIo's io_uring requests, SwapFile's unlinked, checksummed chunk
// file, the directory checks and IoBuffer. Files go to a fresh directory under the test's temp
// directory; errors are provoked without privileges (a short file, RLIMIT_FSIZE, writing through
// /proc/self/fd).
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "src/core/async_io.h"
#include "src/core/checksum.h"
#include "src/core/error.h"
#include "src/core/input_file.h"
#include "src/core/io_buffer.h"
#include "src/core/memory_pool.h"
#include "src/core/swap_dir.h"
#include "src/core/swap_file.h"

namespace zt {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  explicit TempDir(const std::string& parent = ::testing::TempDir()) {
    std::string t = (fs::path(parent) / "zt-swap-test-XXXXXX").string();
    if (mkdtemp(t.data()) != nullptr) path_ = t;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  bool empty() const { return fs::is_empty(path_); }

 private:
  std::string path_;
};

// Chunk contents that differ per chunk and per generation.
void fill(void* buf, size_t bytes, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto* w = static_cast<uint64_t*>(buf);
  for (size_t i = 0; i < bytes / 8; ++i) w[i] = rng();
}

bool holds(const void* buf, size_t bytes, uint64_t seed) {
  std::vector<uint64_t> want(bytes / 8);
  fill(want.data(), bytes, seed);
  return std::memcmp(buf, want.data(), bytes) == 0;
}

uint64_t seed_of(size_t chunk, int generation) {
  return chunk * 1000 + generation;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ChunkChecksum, InstructionAndTablesAgree) {
  std::vector<unsigned char> data((1 << 20) + 37);
  fill(data.data(), data.size() / 8 * 8, 7);
  for (const size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{31}, size_t{32}, size_t{33},
                         size_t{4096}, size_t{1} << 20, data.size()})
    EXPECT_EQ(chunk_checksum(data.data(), n), detail::chunk_checksum_tables(data.data(), n)) << n;
  RecordProperty("crc32_instruction", detail::crc32c_instruction() ? "yes" : "no");
}

TEST(ChunkChecksum, ChangesWithAnyBitAndWithWordOrder) {
  std::vector<uint64_t> w(512);
  fill(w.data(), w.size() * 8, 3);
  const uint32_t base = chunk_checksum(w.data(), w.size() * 8);
  for (const size_t bit : {size_t{0}, size_t{77}, size_t{4095 * 8 + 7}}) {
    auto* b = reinterpret_cast<unsigned char*>(w.data());
    b[bit / 8] ^= static_cast<unsigned char>(1u << (bit % 8));
    EXPECT_NE(chunk_checksum(w.data(), w.size() * 8), base) << bit;
    b[bit / 8] ^= static_cast<unsigned char>(1u << (bit % 8));
  }
  std::swap(w[0], w[1]);  // two lanes
  EXPECT_NE(chunk_checksum(w.data(), w.size() * 8), base);
  std::swap(w[0], w[1]);
  std::swap(w[0], w[4]);  // one lane
  EXPECT_NE(chunk_checksum(w.data(), w.size() * 8), base);
  std::vector<uint64_t> zeros(512, 0);
  EXPECT_NE(chunk_checksum(zeros.data(), 4096), chunk_checksum(zeros.data(), 2048));
}

TEST(IoBuffer, IsPageAlignedAndCountedInItsCategory) {
  MemoryPool pool(make_host_allocator());
  {
    IoBuffer a(pool, 10000);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data()) % IoBuffer::kAlign, 0u);
    EXPECT_EQ(a.bytes(), 3 * IoBuffer::kAlign);
    EXPECT_EQ(pool.current(MemCategory::NvmeBuffers), a.bytes() + IoBuffer::kAlign);
    IoBuffer b = std::move(a);
    EXPECT_EQ(a.data(), nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % IoBuffer::kAlign, 0u);
  }
  EXPECT_EQ(pool.current(MemCategory::NvmeBuffers), 0u);
  EXPECT_EQ(mem_category_name(MemCategory::NvmeBuffers), "nvme_buffers");
}

// A plain (buffered) file of `bytes` for AsyncIo alone.
UniqueFd plain_file(const std::string& dir, size_t bytes) {
  const std::string p = dir + "/plain";
  UniqueFd fd(open(p.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  EXPECT_TRUE(fd);
  EXPECT_EQ(ftruncate(fd.get(), static_cast<off_t>(bytes)), 0);
  return fd;
}

TEST(AsyncIo, SplitsRequestsIntoBlocksAndQueuesBeyondTheDepth) {
  TempDir dir;
  const size_t n = 64 * 4096;
  UniqueFd fd = plain_file(dir.path(), 2 * n);
  AsyncIo io(2, 4096);
  std::vector<uint64_t> a(n / 8), b(n / 8), back(2 * n / 8);
  fill(a.data(), n, 1);
  fill(b.data(), n, 2);
  const auto ta = io.write(fd.get(), 0, a.data(), n, "plain");
  const auto tb = io.write(fd.get(), n, b.data(), n, "plain");
  EXPECT_LE(io.in_flight(), 2u);
  EXPECT_EQ(io.pending(), 2u);
  io.wait(tb);  // out of order
  io.wait(ta);
  const auto tr = io.read(fd.get(), 0, back.data(), 2 * n, "plain");
  while (!io.ready(tr)) {
  }
  io.wait(tr);
  EXPECT_EQ(io.pending(), 0u);
  EXPECT_EQ(io.in_flight(), 0u);
  EXPECT_TRUE(holds(back.data(), n, 1));
  EXPECT_TRUE(holds(back.data() + n / 8, n, 2));
}

TEST(AsyncIo, AReadPastTheEndThrowsNamingTheFileAndOffset) {
  TempDir dir;
  UniqueFd fd = plain_file(dir.path(), 6000);
  AsyncIo io(1, 8192);  // one piece at a time: the first failure is the one at 6000
  std::vector<char> buf(3 * 8192);
  // 6000 bytes come back, the rest of the first block is asked for again and meets the end.
  const std::string e =
      error_of([&] { io.wait(io.read(fd.get(), 0, buf.data(), buf.size(), "F")); });
  EXPECT_PRED2(contains, e, "read from F at offset 6000");
  EXPECT_PRED2(contains, e, "the file ends before it");
  EXPECT_EQ(io.in_flight(), 0u);
  EXPECT_EQ(io.pending(), 0u);
}

TEST(AsyncIo, AShortReadIsResubmittedForTheRest) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  UniqueFd rd(p[0]), wr(p[1]);
  std::vector<uint64_t> want(1024);
  fill(want.data(), 8192, 9);
  const auto* bytes = reinterpret_cast<const char*>(want.data());
  ASSERT_EQ(::write(wr.get(), bytes, 3000), 3000);
  // The pipe holds 3000 bytes: the read returns those, and its rest waits for the others.
  AsyncIo io(1, 8192);
  std::vector<uint64_t> got(1024);
  const auto t = io.read(rd.get(), 0, got.data(), 8192, "pipe");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (io.resubmitted() == 0) {
    ASSERT_FALSE(io.ready(t));
    ASSERT_LT(std::chrono::steady_clock::now(), deadline);
  }
  EXPECT_EQ(io.in_flight(), 1u);
  ASSERT_EQ(::write(wr.get(), bytes + 3000, 8192 - 3000), 8192 - 3000);
  io.wait(t);
  EXPECT_EQ(io.resubmitted(), 1u);
  EXPECT_EQ(got, want);
}

TEST(AsyncIo, UnknownTicketsAndBadSizesAreBugs) {
  AsyncIo io;
  EXPECT_EQ(io.queue_depth(), 32u);
  EXPECT_EQ(io.block_bytes(), size_t{1} << 20);
  EXPECT_PRED2(contains, error_of([&] { io.wait(12345); }), "unknown or already waited");
  EXPECT_THROW(AsyncIo(0, 4096), Error);
  EXPECT_THROW(AsyncIo(8, 1000), Error);
}

TEST(AsyncIo, TheDestructorWaitsForWhatIsInFlight) {
  TempDir dir;
  UniqueFd fd = plain_file(dir.path(), 1 << 20);
  std::vector<char> buf(1 << 20);
  {
    AsyncIo io(4, 4096);
    io.read(fd.get(), 0, buf.data(), buf.size(), "plain");
    io.write(fd.get(), 0, buf.data(), 4096, "plain");
  }  // no kernel I/O into `buf` after this
  SUCCEED();
}

constexpr size_t kChunk = 64 << 10;

TEST(SwapFile, RoundTripsManyChunksWithReadsAndWritesInFlight) {
  TempDir dir;
  MemoryPool pool(make_host_allocator());
  AsyncIo io(8, 16 << 10);  // 4 pieces a chunk, 8 in the kernel: most wait their turn
  constexpr size_t kChunks = 48;
  SwapFile file(io, dir.path(), "opt", kChunks, kChunk);
  std::vector<IoBuffer> out, in;
  for (size_t c = 0; c < kChunks; ++c) {
    out.emplace_back(pool, kChunk);
    in.emplace_back(pool, kChunk);
    fill(out[c].data(), kChunk, seed_of(c, 0));
  }
  EXPECT_EQ(pool.current(MemCategory::NvmeBuffers), 2 * kChunks * (kChunk + IoBuffer::kAlign));
  std::vector<SwapFile::Ticket> t;
  for (size_t c = 0; c < kChunks; ++c) t.push_back(file.write_async(c, out[c].data()));
  for (size_t c = kChunks; c-- > 0;) file.wait(t[c]);
  // Each round reads one half while the other half is rewritten, all in flight together.
  for (int gen = 1; gen <= 3; ++gen) {
    t.clear();
    const size_t odd = gen % 2;
    for (size_t c = 0; c < kChunks; ++c) {
      if (c % 2 == odd) {
        fill(out[c].data(), kChunk, seed_of(c, gen));
        t.push_back(file.write_async(c, out[c].data()));
      } else {
        t.push_back(file.read_async(c, in[c].data()));
      }
    }
    for (const auto ticket : t) file.wait(ticket);
    for (size_t c = 0; c < kChunks; ++c) {
      if (c % 2 != odd) {
        EXPECT_TRUE(holds(in[c].data(), kChunk, seed_of(c, gen - 1)))
            << "gen " << gen << " chunk " << c;
      }
    }
  }
  for (size_t c = 0; c < kChunks; ++c) t[c] = file.read_async(c, in[c].data());
  for (size_t c = 0; c < kChunks; ++c) {
    file.wait(t[c]);
    EXPECT_TRUE(holds(in[c].data(), kChunk, seed_of(c, c % 2 == 1 ? 3 : 2))) << c;
  }
  EXPECT_EQ(io.pending(), 0u);
}

TEST(SwapFile, IsGoneFromTheDirectoryOnceConstructed) {
  TempDir dir;
  AsyncIo io;
  SwapFile file(io, dir.path(), "params", 10, kChunk);
  EXPECT_TRUE(dir.empty());
  EXPECT_EQ(
      file.path().rfind(dir.path() + "/zerotron-swap-" + std::to_string(getpid()) + "-params-", 0),
      0u)
      << file.path();
  struct stat st {};
  ASSERT_EQ(fstat(file.fd(), &st), 0);
  EXPECT_EQ(st.st_nlink, 0u);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), 10 * kChunk);
  EXPECT_GE(static_cast<uint64_t>(st.st_blocks) * 512, 10 * kChunk);  // reserved, not sparse
  EXPECT_EQ(file.file_bytes(), 10 * kChunk);
}

// Writes every chunk of `file` from one buffer, generation 0.
void write_all(SwapFile& file, IoBuffer& buf) {
  for (size_t c = 0; c < file.chunks(); ++c) {
    fill(buf.data(), file.chunk_bytes(), seed_of(c, 0));
    file.wait(file.write_async(c, buf.data()));
  }
}

TEST(SwapFile, AChangedChunkIsRefusedNamingTheFileAndChunk) {
  TempDir dir;
  MemoryPool pool(make_host_allocator());
  AsyncIo io;
  SwapFile file(io, dir.path(), "opt", 10, kChunk);
  IoBuffer buf(pool, kChunk);
  write_all(file, buf);
  {
    // Another writer of the same (unlinked) file, buffered: the page cache is written back
    // before the direct read.
    UniqueFd other(open(fmt::format("/proc/self/fd/{}", file.fd()).c_str(), O_WRONLY | O_CLOEXEC));
    ASSERT_TRUE(other);
    const char garbage[] = "not what was written";
    ASSERT_EQ(pwrite(other.get(), garbage, sizeof garbage, 3 * kChunk + 100),
              static_cast<ssize_t>(sizeof garbage));
  }
  const std::string e = error_of([&] { file.wait(file.read_async(3, buf.data())); });
  EXPECT_PRED2(contains, e,
               "swap file " + file.path() +
                   " (chunk 3 of 10): checksum mismatch: "
                   "the file was changed or truncated");
  file.wait(file.read_async(4, buf.data()));  // the others are intact
  EXPECT_TRUE(holds(buf.data(), kChunk, seed_of(4, 0)));
}

TEST(SwapFile, ATruncatedFileIsRefused) {
  TempDir dir;
  MemoryPool pool(make_host_allocator());
  AsyncIo io;
  SwapFile file(io, dir.path(), "opt", 10, kChunk);
  IoBuffer buf(pool, kChunk);
  write_all(file, buf);
  ASSERT_EQ(ftruncate(file.fd(), 2 * kChunk), 0);
  std::string e = error_of([&] { file.wait(file.read_async(5, buf.data())); });
  EXPECT_PRED2(contains, e, "(chunk 5 of 10)");
  EXPECT_PRED2(contains, e, file.path());
  EXPECT_PRED2(contains, e, "the file ends before it");
  // Grown back to its size, the lost chunks read as zeros: the checksum catches it.
  ASSERT_EQ(ftruncate(file.fd(), 10 * kChunk), 0);
  e = error_of([&] { file.wait(file.read_async(5, buf.data())); });
  EXPECT_PRED2(contains, e, "(chunk 5 of 10): checksum mismatch");
  file.wait(file.read_async(1, buf.data()));
  EXPECT_TRUE(holds(buf.data(), kChunk, seed_of(1, 0)));
}

// Lowers this process's file size limit with SIGXFSZ ignored, so writing past it fails with EFBIG
// instead of killing the process; both are restored after.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    getrlimit(RLIMIT_FSIZE, &saved_);
    old_ = signal(SIGXFSZ, SIG_IGN);
    rlimit r = saved_;
    r.rlim_cur = bytes;
    ok_ = setrlimit(RLIMIT_FSIZE, &r) == 0;
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &saved_);
    signal(SIGXFSZ, old_);
  }
  bool ok() const { return ok_; }

 private:
  rlimit saved_{};
  sighandler_t old_{};
  bool ok_ = false;
};

TEST(SwapFile, AFailedWriteThrowsNamingTheFile) {
  TempDir dir;
  MemoryPool pool(make_host_allocator());
  AsyncIo io(4, 16 << 10);
  SwapFile file(io, dir.path(), "opt", 10, kChunk);
  IoBuffer buf(pool, kChunk);
  fill(buf.data(), kChunk, 1);
  std::string e;
  {
    FileSizeLimit limit(2 * kChunk);
    ASSERT_TRUE(limit.ok());
    file.wait(file.write_async(1, buf.data()));  // below the limit
    e = error_of([&] { file.wait(file.write_async(3, buf.data())); });
  }
  EXPECT_PRED2(contains, e, "swap file " + file.path() + " (chunk 3 of 10): write at offset ");
  EXPECT_PRED2(contains, e, "65536-byte request at 196608): " + std::string(std::strerror(EFBIG)));
  EXPECT_EQ(io.pending(), 0u);
  file.wait(file.read_async(1, buf.data()));
  EXPECT_TRUE(holds(buf.data(), kChunk, 1));
  // The failed chunk was never written as far as the file knows.
  EXPECT_PRED2(contains, error_of([&] { file.read_async(3, buf.data()); }),
               "read before it was ever written");
}

TEST(SwapFile, BufferedWhenDirectIsNotWanted) {
  TempDir dir;
  MemoryPool pool(make_host_allocator());
  AsyncIo io;
  SwapFile file(io, dir.path(), "opt", 4, kChunk, /*prefer_direct=*/false);
  EXPECT_FALSE(file.direct());
  EXPECT_EQ(fcntl(file.fd(), F_GETFL) & O_DIRECT, 0);
  IoBuffer buf(pool, kChunk);
  write_all(file, buf);
  file.wait(file.read_async(2, buf.data()));
  EXPECT_TRUE(holds(buf.data(), kChunk, seed_of(2, 0)));
}

TEST(SwapFile, RoundTripsOnTmpfs) {
  if (!fs::is_directory("/dev/shm")) GTEST_SKIP() << "no /dev/shm";
  TempDir dir("/dev/shm");
  MemoryPool pool(make_host_allocator());
  AsyncIo io;
  SwapFile file(io, dir.path(), "opt", 4, kChunk);
  // tmpfs refuses O_DIRECT before Linux 6.6: the file is then buffered.
  EXPECT_EQ(file.direct(), (fcntl(file.fd(), F_GETFL) & O_DIRECT) != 0);
  RecordProperty("tmpfs_direct", file.direct() ? "yes" : "no");
  IoBuffer buf(pool, kChunk);
  write_all(file, buf);
  file.wait(file.read_async(3, buf.data()));
  EXPECT_TRUE(holds(buf.data(), kChunk, seed_of(3, 0)));
}

TEST(SwapFile, MisuseIsABug) {
  TempDir dir;
  MemoryPool pool(make_host_allocator());
  AsyncIo io;
  SwapFile file(io, dir.path(), "opt", 4, kChunk);
  IoBuffer buf(pool, 2 * kChunk);
  EXPECT_PRED2(contains, error_of([&] { file.read_async(0, buf.data()); }),
               "(chunk 0 of 4): read before it was ever written");
  EXPECT_PRED2(contains,
               error_of([&] { file.write_async(0, static_cast<char*>(buf.data()) + 512); }),
               "is not 4096-byte aligned");
  EXPECT_THROW(file.write_async(4, buf.data()), Error);
  const auto t = file.write_async(1, buf.data());
  EXPECT_PRED2(contains,
               error_of([&] { file.read_async(1, static_cast<char*>(buf.data()) + kChunk); }),
               "read while a write to it is pending");
  file.wait(t);
  EXPECT_PRED2(contains, error_of([&] { file.wait(t); }), "not a pending request");
  EXPECT_THROW(SwapFile(io, dir.path(), "a/b", 1, kChunk), Error);
  EXPECT_THROW(SwapFile(io, dir.path(), "opt", 1, 1000), Error);
}

TEST(SwapFile, TheDestructorWaitsForItsRequests) {
  TempDir dir;
  MemoryPool pool(make_host_allocator());
  AsyncIo io(2, 4096);
  IoBuffer buf(pool, 4 * kChunk);
  {
    SwapFile file(io, dir.path(), "opt", 4, kChunk);
    for (size_t c = 0; c < 4; ++c) file.write_async(c, static_cast<char*>(buf.data()) + c * kChunk);
  }
  EXPECT_EQ(io.pending(), 0u);
  EXPECT_EQ(io.in_flight(), 0u);
}

TEST(SwapDir, RefusesMoreThanTheFreeSpace) {
  TempDir dir;
  const uint64_t free = free_bytes(dir.path());
  EXPECT_GT(free, 0u);
  EXPECT_NO_THROW(require_free_space(dir.path(), 4096, "a test"));
  try {
    require_free_space(dir.path(), free + (uint64_t{1} << 40), "the swap file for opt");
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_PRED2(contains, e.what(), "the swap file for opt needs");
    EXPECT_PRED2(contains, e.what(), "in " + dir.path() + ", which has only");
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
  }
  AsyncIo io;
  const size_t too_many = (free + (uint64_t{1} << 40)) / kChunk;
  EXPECT_THROW(SwapFile(io, dir.path(), "opt", too_many, kChunk), InputError);
  EXPECT_TRUE(dir.empty());
}

TEST(SwapDir, RefusesWhatIsNotAWritableDirectory) {
  TempDir dir;
  const std::string missing = dir.path() + "/missing";
  EXPECT_PRED2(contains, error_of([&] { require_writable_dir(missing, "--nvme-path"); }),
               "--nvme-path: " + missing + ": No such file or directory");
  AsyncIo io;
  EXPECT_THROW(SwapFile(io, missing, "opt", 1, kChunk), InputError);
  const std::string file = dir.path() + "/file";
  UniqueFd(open(file.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
  EXPECT_PRED2(contains, error_of([&] { require_writable_dir(file, "--nvme-path"); }),
               file + " is not a directory");
  if (geteuid() != 0) {  // root may write anywhere
    const std::string ro = dir.path() + "/ro";
    ASSERT_EQ(mkdir(ro.c_str(), 0500), 0);
    EXPECT_PRED2(contains, error_of([&] { require_writable_dir(ro, "--nvme-path"); }),
                 "cannot create files in " + ro);
  }
  EXPECT_EQ(format_bytes(1536ull << 20), "1.50 GiB");
  EXPECT_EQ(format_bytes(100), "100 bytes");
}

}  // namespace
}  // namespace zt
