// Megatron MMapIndexedDataset: write then read, byte-for-byte agreement with the fixtures made by
// tests/fixtures/make_megatron_idx.py (a mirror of Megatron-LM's writer), and every malformed
// .idx/.bin case the reader must reject with an InputError naming the file.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "src/core/error.h"
#include "src/data/index_format.h"
#include "src/data/indexed_dataset.h"
#include "src/data/indexed_dataset_builder.h"
#include "tests/support/data_testing.h"

namespace zt::data {
namespace {

using testing::fixture;
using testing::TempDir;
using Docs = std::vector<std::vector<int32_t>>;

void write_docs(const std::string& prefix, DType dtype, const Docs& docs) {
  IndexedDatasetBuilder b(prefix, dtype);
  for (const auto& d : docs) {
    if (d.empty())
      b.end_document();  // as Megatron: an empty text is a document with no sequence
    else
      b.add_document(d);
  }
  b.finalize();
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), bytes.size());
}

// Reads documents back through the doc index.
Docs read_docs(const IndexedDataset& ds) {
  Docs out;
  for (size_t d = 0; d < ds.num_documents(); ++d) {
    std::vector<int32_t> doc;
    for (auto s = ds.doc_idx()[d]; s < ds.doc_idx()[d + 1]; ++s) {
      auto seq = ds.sequence(static_cast<size_t>(s));
      doc.insert(doc.end(), seq.begin(), seq.end());
    }
    out.push_back(doc);
  }
  return out;
}

TEST(IndexedDataset, WriteThenRead) {
  TempDir dir;
  const Docs docs = {{1, 2, 3}, {}, {65535}, {0, 0, 7, 9}};
  write_docs(dir / "d", DType::kUInt16, docs);
  const auto ds = IndexedDataset::open(dir / "d", 65536);
  EXPECT_EQ(ds.dtype(), DType::kUInt16);
  EXPECT_EQ(ds.num_documents(), 4u);
  EXPECT_EQ(ds.num_sequences(), 3u);
  EXPECT_EQ(ds.total_tokens(), 8);
  EXPECT_EQ(read_docs(ds), docs);
  std::vector<int32_t> part(2);
  ds.read(2, 1, part);
  EXPECT_EQ(part, (std::vector<int32_t>{0, 7}));
  EXPECT_THROW(ds.read(2, 3, part), Error);  // past the end of the sequence: a caller bug
}

TEST(IndexedDataset, EveryTokenDtypeRoundTrips) {
  TempDir dir;
  for (DType t :
       {DType::kUInt8, DType::kInt8, DType::kInt16, DType::kUInt16, DType::kInt32, DType::kInt64}) {
    const Docs docs = {{0, 1, 100}, {127}};
    write_docs(dir / "x", t, docs);
    const auto ds = IndexedDataset::open(dir / "x");
    EXPECT_EQ(ds.dtype(), t);
    EXPECT_EQ(read_docs(ds), docs) << dtype_name(t);
  }
  IndexedDatasetBuilder b(dir / "y", DType::kUInt8);
  EXPECT_THROW(b.add_document(std::vector<int32_t>{256}), InputError);
}

TEST(IndexedDataset, OptimalDtypeIsMegatrons) {
  EXPECT_EQ(optimal_dtype(50257), DType::kUInt16);
  EXPECT_EQ(optimal_dtype(65499), DType::kUInt16);
  EXPECT_EQ(optimal_dtype(65500), DType::kInt32);
}

class MegatronFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(MegatronFixture, WriterIsByteIdenticalAndReaderReadsIt) {
  const auto spec = nlohmann::json::parse(read_file(fixture("megatron/docs.json")))[GetParam()];
  const Docs docs = spec["documents"];
  const int64_t vocab = spec["vocab_size"];
  const std::string theirs = fixture("megatron/" + GetParam());
  TempDir dir;
  write_docs(dir / "ours", optimal_dtype(vocab), docs);
  EXPECT_EQ(read_file(dir / "ours.idx"), read_file(theirs + ".idx"));
  EXPECT_EQ(read_file(dir / "ours.bin"), read_file(theirs + ".bin"));
  const auto ds = IndexedDataset::open(theirs, vocab);
  EXPECT_EQ(read_docs(ds), docs);
}

INSTANTIATE_TEST_SUITE_P(Data, MegatronFixture, ::testing::Values("gpt2_uint16", "big_int32"));

// --- malformed files ------------------------------------------------------------------------

class Malformed : public ::testing::Test {
 protected:
  void SetUp() override {
    write_docs(dir_ / "good", DType::kUInt16, {{1, 2, 3}, {4, 5}, {6}});
    idx_ = read_file(dir_ / "good.idx");
    bin_ = read_file(dir_ / "good.bin");
  }
  // Writes the (possibly edited) pair as "bad" and expects open() to fail naming `file` and
  // containing `needle`.
  void expect_rejected(const std::string& needle, std::string_view file = ".idx",
                       std::optional<int64_t> vocab = std::nullopt) {
    write_bytes(dir_ / "bad.idx", idx_);
    write_bytes(dir_ / "bad.bin", bin_);
    try {
      IndexedDataset::open(dir_ / "bad", vocab);
      ADD_FAILURE() << "accepted; wanted: " << needle;
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(needle), std::string::npos) << what;
      EXPECT_NE(what.find(dir_ / "bad" + std::string(file)), std::string::npos) << what;
    }
  }
  template <typename T>
  void poke(size_t offset, T v) {
    std::memcpy(idx_.data() + offset, &v, sizeof v);
  }
  static constexpr size_t kSizes = kIndexHeaderBytes, kPointers = kSizes + 3 * 4,
                          kDocs = kPointers + 3 * 8;
  TempDir dir_;
  std::string idx_, bin_;
};

TEST_F(Malformed, GoodPairOpens) {
  write_bytes(dir_ / "bad.idx", idx_);
  write_bytes(dir_ / "bad.bin", bin_);
  EXPECT_NO_THROW(IndexedDataset::open(dir_ / "bad", 7));
}
TEST_F(Malformed, WrongMagic) {
  idx_[0] = 'X';
  expect_rejected("bad magic");
}
TEST_F(Malformed, UnsupportedVersion) {
  poke<uint64_t>(9, 2);
  expect_rejected("unsupported index version 2");
}
TEST_F(Malformed, UnknownDtypeCode) {
  poke<uint8_t>(17, 9);
  expect_rejected("unknown dtype code 9");
  poke<uint8_t>(17, 0);
  expect_rejected("unknown dtype code 0");
}
TEST_F(Malformed, FloatDtype) {
  poke<uint8_t>(17, 7);
  expect_rejected("dtype float32 cannot hold token ids");
}
TEST_F(Malformed, EveryTruncationOfTheIndex) {
  const std::string full = idx_;
  for (size_t len = 0; len < full.size(); ++len) {
    idx_ = full.substr(0, len);
    expect_rejected("truncated");
  }
}
TEST_F(Malformed, TrailingBytes) {
  idx_ += "junk";
  expect_rejected("4 unexpected bytes");
}
TEST_F(Malformed, HugeSequenceCount) {
  poke<uint64_t>(18, uint64_t{1} << 62);
  expect_rejected("truncated");
}
TEST_F(Malformed, TruncatedBin) {
  bin_.pop_back();
  expect_rejected("truncated, or the pair does not belong together", ".bin");
  bin_.clear();
  expect_rejected("truncated, or the pair does not belong together", ".bin");
}
TEST_F(Malformed, BinLongerThanItsIndex) {
  bin_ += std::string(2, '\0');  // Megatron's .bin holds the tokens and nothing else
  expect_rejected("has 14 bytes, but its index describes 12", ".bin");
}
TEST_F(Malformed, PointerOutOfRange) {
  poke<int64_t>(kPointers + 16, 1 << 20);
  expect_rejected("sequence 2 starts at byte 1048576");
}
TEST_F(Malformed, NegativeOrMisalignedPointer) {
  poke<int64_t>(kPointers + 8, -2);
  expect_rejected("not a non-negative multiple of 2 bytes");
  poke<int64_t>(kPointers + 8, 7);
  expect_rejected("not a non-negative multiple of 2 bytes");
}
TEST_F(Malformed, OverlappingPointers) {
  poke<int64_t>(kPointers + 8, 2);  // sequence 1 starts inside sequence 0
  expect_rejected("the sequences before it end at byte 6");
}
TEST_F(Malformed, GapBetweenSequences) {
  poke<int64_t>(kPointers + 8, 8);  // sequence 1 leaves a hole after sequence 0
  expect_rejected("the dtype code or the pointers are wrong");
}
TEST_F(Malformed, EditedDtypeCode) {
  // uint16 data read as uint8 or int32: the pointers no longer add up, so garbage tokens
  // (half or double the bytes per token) never reach training.
  poke<uint8_t>(17, static_cast<uint8_t>(DType::kUInt8));
  expect_rejected("with dtype uint8 (1 bytes per token)");
  poke<uint8_t>(17, static_cast<uint8_t>(DType::kInt32));
  expect_rejected("sequence 1 has pointer 6, not a non-negative multiple of 4 bytes");
}
TEST_F(Malformed, DtypeTooNarrowForTheVocabulary) {
  // Same size as uint16, so the layout is consistent; a vocabulary of 70000 ids cannot have
  // been written as int16 (Megatron writes int32 from 65500 ids on).
  poke<uint8_t>(17, static_cast<uint8_t>(DType::kInt16));
  expect_rejected("cannot hold the vocabulary's ids", ".idx", 70000);
}
TEST_F(Malformed, NegativeSize) {
  poke<int32_t>(kSizes + 4, -1);
  expect_rejected("negative length");
}
TEST_F(Malformed, DocIndexNotStartingAtZero) {
  poke<int64_t>(kDocs, 1);
  expect_rejected("must start with 0");
}
TEST_F(Malformed, DocIndexOutOfOrder) {
  poke<int64_t>(kDocs + 8, 3);
  poke<int64_t>(kDocs + 16, 1);
  expect_rejected("out of order");
}
TEST_F(Malformed, DocIndexBeyondSequences) {
  poke<int64_t>(kDocs + 24, 4);
  expect_rejected("there are 3 sequences");
}
TEST_F(Malformed, TokenIdOutsideVocab) {
  expect_rejected("token 0 is id 6, outside the vocab [0, 6)", ".bin", 6);
}
TEST_F(Malformed, MissingFiles) {
  write_bytes(dir_ / "bad.idx", idx_);
  EXPECT_THROW(IndexedDataset::open(dir_ / "bad"), InputError);  // no .bin
  EXPECT_THROW(IndexedDataset::open(dir_ / "nothing"), InputError);
}

}  // namespace
}  // namespace zt::data
