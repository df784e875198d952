#include "src/checkpoint/shard.h"

#include <algorithm>
#include <cstring>

#include "src/core/error.h"

namespace zt {
namespace {

constexpr char kMagic[8] = {'Z', 'T', 'C', 'K', 'P', 'T', '0', '3'};
constexpr uint64_t kPage = 4096;

std::vector<uint64_t> fixed_words(const ShardHeader& h) {
  uint64_t magic = 0;
  std::memcpy(&magic, kMagic, 8);
  auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
  std::vector<uint64_t> words = {magic,
                                 h.version(),
                                 h.header_bytes(),
                                 u(h.tp_rank),
                                 u(h.dp_rank),
                                 u(h.tp),
                                 u(h.dp),
                                 u(h.zero_stage),
                                 u(h.iteration),
                                 u(h.partition_unit),
                                 u(h.layout_numel),
                                 u(h.shard_numel),
                                 ShardHeader::kTensors,
                                 ShardHeader::kBlockBytes};
  if (h.pipeline()) words.insert(words.end(), {u(h.pp_rank), u(h.pp), u(h.chunks)});
  return words;
}

// "pp rank R of P, C chunks, " of a header's words (nothing for a file without a pipeline).
std::string pipeline_words(const std::vector<uint64_t>& w) {
  const size_t i = ShardHeader::kFixedWords;
  return w.size() > i ? fmt::format("pp rank {} of {}, {} chunks, ", w[i], w[i + 1], w[i + 2]) : "";
}

std::vector<char> encode(const ShardHeader& h, const std::vector<uint32_t>& crcs) {
  std::vector<char> out(h.header_bytes(), 0);
  const auto words = fixed_words(h);
  std::memcpy(out.data(), words.data(), words.size() * 8);
  std::memcpy(out.data() + words.size() * 8, crcs.data(), crcs.size() * 4);
  return out;
}

}  // namespace

uint64_t ShardHeader::header_bytes() const {
  const uint64_t raw = fixed_words() * 8 + kTensors * blocks_per_section() * 4;
  return (raw + kPage - 1) / kPage * kPage;
}

ShardWriter::ShardWriter(const std::string& path, const ShardHeader& h)
    : fd_(Fd::create(path)), h_(h) {
  crcs_.reserve(ShardHeader::kTensors * h_.blocks_per_section());
  const std::vector<char> placeholder(h_.header_bytes(), 0);  // the checksums come at finish()
  fd_.write(placeholder.data(), placeholder.size());
}

void ShardWriter::append(const void* data, size_t n) {
  const auto* p = static_cast<const char*>(data);
  const uint64_t section = h_.section_bytes();
  while (n > 0) {
    const uint64_t in_section = pos_ % section;
    const uint64_t take =
        std::min<uint64_t>({n, ShardHeader::kBlockBytes - in_section % ShardHeader::kBlockBytes,
                            section - in_section});
    crc_ = crc32(p, take, crc_);
    fd_.write(p, take);
    pos_ += take;
    p += take;
    n -= take;
    const uint64_t end = in_section + take;
    if (end % ShardHeader::kBlockBytes == 0 || end == section) {
      crcs_.push_back(crc_);
      crc_ = 0;
    }
  }
}

uint32_t ShardWriter::finish() {
  ZT_CHECK(pos_ == ShardHeader::kTensors * h_.section_bytes(), "shard '{}': {} of {} bytes written",
           fd_.path(), pos_, ShardHeader::kTensors * h_.section_bytes());
  const std::vector<char> header = encode(h_, crcs_);
  fd_.pwrite(header.data(), header.size(), 0);
  fd_.sync();
  return crc32(header.data(), header.size());
}

ShardReader::ShardReader(const std::filesystem::path& dir, const std::string& name,
                         const ShardHeader& expected, uint32_t header_crc, LoadAccounting& acct)
    : h_(expected), acct_(acct) {
  uint64_t size = 0;
  // The expected size bounds what is read: a planted huge file is refused before any read.
  fd_ = open_checkpoint_file(dir, name, expected.file_bytes(), size);
  const std::string& path = fd_.path();
  ZT_REQUIRE(size == expected.file_bytes(),
             "checkpoint shard '{}' is truncated: {} bytes, expected {}", path, size,
             expected.file_bytes());
  std::vector<char> header(expected.header_bytes());
  fd_.pread(header.data(), header.size(), 0);
  acct_.bytes_read += header.size();
  const auto want = fixed_words(expected);
  // As many words as the file's own version has (the header is at least a page), so a stage's
  // file read as another layout's is described as what it is.
  std::vector<uint64_t> got(ShardHeader::kFixedWords);
  std::memcpy(got.data(), header.data(), got.size() * 8);
  if (got[1] == 4) {
    got.resize(ShardHeader::kFixedWords + ShardHeader::kStageWords);
    std::memcpy(got.data(), header.data(), got.size() * 8);
  }
  ZT_REQUIRE(std::memcmp(got.data(), want.data(), 8) == 0, "'{}' is not a zerotron shard", path);
  ZT_REQUIRE(got == want,
             "checkpoint shard '{}' does not match meta.json: it holds {}tp rank {} of {}, dp "
             "rank {} of {}, stage {}, iteration {}, {} elements; expected {}tp rank {} of {}, dp "
             "rank {} of {}, stage {}, iteration {}, {} elements",
             path, pipeline_words(got), got[3], got[5], got[4], got[6], got[7], got[8], got[11],
             pipeline_words(want), want[3], want[5], want[4], want[6], want[7], want[8], want[11]);
  ZT_REQUIRE(crc32(header.data(), header.size()) == header_crc,
             "checkpoint shard '{}' is corrupt: its header's CRC-32 does not match meta.json",
             path);
  crcs_.resize(ShardHeader::kTensors * h_.blocks_per_section());
  std::memcpy(crcs_.data(), header.data() + got.size() * 8, crcs_.size() * 4);
  acct_.add(crcs_.capacity() * 4);
}

ShardReader::~ShardReader() {
  acct_.sub(crcs_.capacity() * 4);
}

uint64_t ShardReader::block_len(uint64_t block) const {
  return std::min(ShardHeader::kBlockBytes, h_.section_bytes() - block * ShardHeader::kBlockBytes);
}

void ShardReader::read_block(int k, uint64_t block, char* dst) const {
  const uint64_t len = block_len(block);
  fd_.pread(dst, len, h_.section_offset(k) + block * ShardHeader::kBlockBytes);
  acct_.bytes_read += len;
  ZT_REQUIRE(crc32(dst, len) == crcs_[static_cast<size_t>(k) * h_.blocks_per_section() + block],
             "checkpoint shard '{}' is corrupt: block {} of section {} does not match its CRC-32",
             fd_.path(), block, k);
}

void ShardReader::read(int k, int64_t first, int64_t n, float* dst, BlockCache& cache) const {
  ZT_CHECK(first >= 0 && n >= 0 && first + n <= h_.shard_numel, "read [{}, {}) of {} in '{}'",
           first, first + n, h_.shard_numel, fd_.path());
  const uint64_t b0 = static_cast<uint64_t>(first) * 4, b1 = static_cast<uint64_t>(first + n) * 4;
  auto* out = reinterpret_cast<char*>(dst);
  for (uint64_t at = b0; at < b1;) {
    const uint64_t block = at / ShardHeader::kBlockBytes;
    const uint64_t begin = block * ShardHeader::kBlockBytes, end = begin + block_len(block);
    const uint64_t take = std::min(b1, end) - at;
    if (at == begin && take == end - begin) {
      read_block(k, block, out + (at - b0));  // a whole block: straight into place
    } else {
      std::memcpy(out + (at - b0), cache.get(*this, k, block) + (at - begin), take);
    }
    at += take;
  }
}

BlockCache::~BlockCache() {
  for (const Slot& s : slots_)
    if (s.data) acct_.sub(ShardHeader::kBlockBytes);
}

const char* BlockCache::get(const ShardReader& r, int k, uint64_t block) {
  ++clock_;
  for (Slot& s : slots_)
    if (s.reader == &r && s.k == k && s.block == block) {
      s.used = clock_;
      return s.data.get();
    }
  Slot* slot = nullptr;
  if (slots_.size() < kSlots) {
    slots_.reserve(kSlots);
    slots_.emplace_back();
    slot = &slots_.back();
    slot->data = std::make_unique<char[]>(ShardHeader::kBlockBytes);
    acct_.add(ShardHeader::kBlockBytes);
  } else {
    slot = &*std::min_element(slots_.begin(), slots_.end(),
                              [](const Slot& a, const Slot& b) { return a.used < b.used; });
  }
  slot->reader = nullptr;  // invalid until the read below is verified
  r.read_block(k, block, slot->data.get());
  slot->reader = &r;
  slot->k = k;
  slot->block = block;
  slot->used = clock_;
  return slot->data.get();
}

}  // namespace zt
