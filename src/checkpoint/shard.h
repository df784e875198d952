#pragma once
// One shard file of a checkpoint (format zerotron-checkpoint-3): a header, then the fp32 master
// parameters, Adam m and Adam v of one rank's shard, each a section of shard_numel floats.
//
//   u64[14]  magic "ZTCKPT03", version 3, header bytes, tp rank, dp rank, tp, dp, zero stage,
//            iteration, partition unit, layout numel, shard numel, tensors (3), block bytes
//   u64[3]   a pipeline stage's file only (pp > 1, version 4): pp rank, pp, model chunks
//   u32[]    CRC-32 of every block (1 MiB) of every section, section by section
//   zeros    up to header bytes (a multiple of 4096)
//   f32[]    section 0, 1, 2
//
// Block checksums let a reader take any byte range and still verify what it used, so a
// reshaping load reads only the ranges it needs. meta.json records each file's size and the
// CRC-32 of its header (which holds the block checksums): meta -> header -> blocks -> data.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "src/checkpoint/file.h"

namespace zt {

struct ShardHeader {
  static constexpr int kTensors = 3;  // master, Adam m, Adam v
  static constexpr uint64_t kBlockBytes = uint64_t{1} << 20;
  int64_t tp_rank = 0, dp_rank = 0, tp = 1, dp = 1, zero_stage = 0, iteration = 0;
  int64_t partition_unit = 0, layout_numel = 0, shard_numel = 0;
  // The pipeline stage, recorded (version 4) only where there is a pipeline, so the files of
  // runs without one are those of before pipelines.
  int64_t pp_rank = 0, pp = 1, chunks = 1;

  bool pipeline() const { return pp != 1 || chunks != 1; }
  uint64_t version() const { return pipeline() ? 4 : 3; }
  static constexpr size_t kFixedWords = 14, kStageWords = 3;
  size_t fixed_words() const { return kFixedWords + (pipeline() ? kStageWords : 0); }

  uint64_t section_bytes() const { return static_cast<uint64_t>(shard_numel) * 4; }
  uint64_t blocks_per_section() const { return (section_bytes() + kBlockBytes - 1) / kBlockBytes; }
  uint64_t header_bytes() const;
  uint64_t file_bytes() const { return header_bytes() + kTensors * section_bytes(); }
  uint64_t section_offset(int k) const { return header_bytes() + uint64_t(k) * section_bytes(); }
  bool operator==(const ShardHeader&) const = default;
};

// Host bytes a load holds beyond the model states, kept by the loader itself so a test can
// check the bound (block cache, checksum tables).
struct LoadAccounting {
  uint64_t held = 0, peak = 0, bytes_read = 0;
  void add(uint64_t n) {
    held += n;
    peak = std::max(peak, held);
  }
  void sub(uint64_t n) { held -= n; }
};

// Writes one shard: the sections streamed in order, each block's checksum taken on the way, the
// header (with the checksums) written last, then fsync.
class ShardWriter {
 public:
  ShardWriter(const std::string& path, const ShardHeader& h);
  void append(const void* data, size_t n);  // the next bytes of the sections
  // Returns the CRC-32 of the header, for meta.json.
  uint32_t finish();

 private:
  Fd fd_;
  ShardHeader h_;
  uint64_t pos_ = 0;  // bytes of the sections written
  uint32_t crc_ = 0;  // of the current block so far
  std::vector<uint32_t> crcs_;
};

class BlockCache;

// Reads byte ranges of one shard, verifying every block it uses.
class ShardReader {
 public:
  // Opens `dir/name` and checks it against `expected` (every header field), meta.json's
  // `file_bytes` and `header_crc`. Throws InputError naming the file on any difference.
  ShardReader(const std::filesystem::path& dir, const std::string& name,
              const ShardHeader& expected, uint32_t header_crc, LoadAccounting& acct);
  ~ShardReader();
  ShardReader(const ShardReader&) = delete;
  ShardReader& operator=(const ShardReader&) = delete;
  // Elements [first, first + n) of section k into host memory `dst`. Whole blocks are read
  // straight into `dst`; the ends of a range come through `cache`.
  void read(int k, int64_t first, int64_t n, float* dst, BlockCache& cache) const;
  const std::string& path() const { return fd_.path(); }

 private:
  friend class BlockCache;
  void read_block(int k, uint64_t block, char* dst) const;  // read and verified
  uint64_t block_len(uint64_t block) const;
  Fd fd_;
  ShardHeader h_;
  std::vector<uint32_t> crcs_;
  LoadAccounting& acct_;
};

// A fixed number of verified blocks, least recently used out: the constant host buffer of a
// reshaping load, whatever the model size.
class BlockCache {
 public:
  static constexpr size_t kSlots = 8;
  explicit BlockCache(LoadAccounting& acct) : acct_(acct) {}
  ~BlockCache();
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;
  const char* get(const ShardReader& r, int k, uint64_t block);

 private:
  struct Slot {
    const ShardReader* reader = nullptr;
    int k = 0;
    uint64_t block = 0, used = 0;
    std::unique_ptr<char[]> data;
  };
  std::vector<Slot> slots_;
  uint64_t clock_ = 0;
  LoadAccounting& acct_;
};

}  // namespace zt
