// The TensorBoard event file's pieces against known values: CRC-32C's check value and RFC 3720's
// vectors, TFRecord framing, and the hand-encoded Event bytes (decoded here field by field).
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "src/core/event_file.h"

namespace zt {
namespace {

TEST(EventFile, Crc32cKnownVectors) {
  EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);  // the CRC catalogue's check value
  EXPECT_EQ(crc32c("", 0), 0u);
  // RFC 3720 (iSCSI) B.4: 32 bytes of zeros, of 0xFF, and ascending 0..31.
  std::string zeros(32, '\0'), ones(32, '\xff'), up(32, '\0');
  for (int i = 0; i < 32; ++i) up[static_cast<size_t>(i)] = static_cast<char>(i);
  EXPECT_EQ(crc32c(zeros.data(), 32), 0x8A9136AAu);
  EXPECT_EQ(crc32c(ones.data(), 32), 0x62A8AB43u);
  EXPECT_EQ(crc32c(up.data(), 32), 0x46DD794Eu);
}

TEST(EventFile, MaskedCrcIsRotatedPlusConstant) {
  const uint32_t c = 0xE3069283u;
  EXPECT_EQ(masked_crc32c("123456789", 9), ((c >> 15) | (c << 17)) + 0xA282EAD8u);
}

uint32_t u32(const std::string& s, size_t at) {
  uint32_t v;
  std::memcpy(&v, s.data() + at, 4);
  return v;
}

TEST(EventFile, RecordFraming) {
  const std::string data = "hello";
  const std::string r = tfrecord(data);
  ASSERT_EQ(r.size(), 8 + 4 + data.size() + 4);
  uint64_t len;
  std::memcpy(&len, r.data(), 8);
  EXPECT_EQ(len, data.size());
  EXPECT_EQ(u32(r, 8), masked_crc32c(r.data(), 8));
  EXPECT_EQ(r.substr(12, data.size()), data);
  EXPECT_EQ(u32(r, 12 + data.size()), masked_crc32c(data.data(), data.size()));
}

TEST(EventFile, ScalarEventBytes) {
  const std::string e = scalar_event(1.5, 300, "lm loss", 2.25f);
  // wall_time: tag 0x09 then 8 bytes of the double.
  ASSERT_EQ(static_cast<uint8_t>(e[0]), 0x09);
  double wall;
  std::memcpy(&wall, e.data() + 1, 8);
  EXPECT_EQ(wall, 1.5);
  // step: tag 0x10, varint 300 = AC 02.
  EXPECT_EQ(static_cast<uint8_t>(e[9]), 0x10);
  EXPECT_EQ(static_cast<uint8_t>(e[10]), 0xAC);
  EXPECT_EQ(static_cast<uint8_t>(e[11]), 0x02);
  // summary (field 5, length 16) { value (field 1, length 14) { tag (1) "lm loss", simple_value
  // (2, fixed32) 2.25 } }
  const std::string want_tail = std::string("\x2a\x10\x0a\x0e\x0a\x07lm loss\x15", 14);
  ASSERT_EQ(e.size(), 12 + want_tail.size() + 4);
  EXPECT_EQ(e.substr(12, want_tail.size()), want_tail);
  float v;
  std::memcpy(&v, e.data() + 12 + want_tail.size(), 4);
  EXPECT_EQ(v, 2.25f);
}

TEST(EventFile, VersionEventFirstInFile) {
  const auto dir = std::filesystem::temp_directory_path() / "zt_event_file_test";
  std::filesystem::remove_all(dir);
  std::string path;
  {
    EventFileWriter w(dir.string());
    path = w.path();
    w.add_scalar("lm loss", 3.0, 1);
  }
  EXPECT_NE(std::filesystem::path(path).filename().string().find("events.out.tfevents."),
            std::string::npos);
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), {});
  uint64_t len;
  std::memcpy(&len, bytes.data(), 8);
  const std::string first = bytes.substr(12, len);
  EXPECT_NE(first.find("brain.Event:2"), std::string::npos);
  const std::string second = bytes.substr(12 + len + 4 + 12);
  EXPECT_NE(second.find("lm loss"), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace zt
