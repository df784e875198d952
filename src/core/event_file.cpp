#include "src/core/event_file.h"

#include <unistd.h>

#include <array>
#include <bit>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "src/core/error.h"

namespace zt {
namespace {

constexpr std::array<uint32_t, 256> make_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[i] = c;
  }
  return t;
}
constexpr std::array<uint32_t, 256> kTable = make_table();

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void put_fixed(std::string& out, const void* p, size_t n) {  // little-endian hosts only
  out.append(static_cast<const char*>(p), n);
}

// A length-delimited field (wire type 2).
void put_bytes(std::string& out, int field, std::string_view bytes) {
  put_varint(out, (static_cast<uint64_t>(field) << 3) | 2);
  put_varint(out, bytes.size());
  out.append(bytes);
}

std::string event_head(double wall_time, int64_t step) {
  std::string e;
  put_varint(e, (1 << 3) | 1);  // wall_time: fixed64
  put_fixed(e, &wall_time, 8);
  if (step != 0) {
    put_varint(e, 2 << 3);  // step: varint (two's complement for a negative)
    put_varint(e, static_cast<uint64_t>(step));
  }
  return e;
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

static_assert(std::endian::native == std::endian::little, "event files are little-endian");

uint32_t crc32c(const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) c = kTable[(c ^ p[i]) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

uint32_t masked_crc32c(const void* data, size_t n) {
  const uint32_t c = crc32c(data, n);
  return ((c >> 15) | (c << 17)) + 0xA282EAD8u;
}

std::string tfrecord(std::string_view data) {
  std::string r;
  const uint64_t len = data.size();
  put_fixed(r, &len, 8);
  const uint32_t len_crc = masked_crc32c(&len, 8);
  put_fixed(r, &len_crc, 4);
  r.append(data);
  const uint32_t data_crc = masked_crc32c(data.data(), data.size());
  put_fixed(r, &data_crc, 4);
  return r;
}

std::string scalar_event(double wall_time, int64_t step, std::string_view tag, float value) {
  std::string v;
  put_bytes(v, 1, tag);
  put_varint(v, (2 << 3) | 5);  // simple_value: fixed32
  put_fixed(v, &value, 4);
  std::string summary;
  put_bytes(summary, 1, v);
  std::string e = event_head(wall_time, step);
  put_bytes(e, 5, summary);
  return e;
}

std::string version_event(double wall_time) {
  std::string e = event_head(wall_time, 0);
  put_bytes(e, 3, "brain.Event:2");
  return e;
}

EventFileWriter::EventFileWriter(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "localhost");
  const double now = now_seconds();
  path_ = (std::filesystem::path(dir) /
           fmt::format("events.out.tfevents.{}.{}", static_cast<int64_t>(now), host))
              .string();
  file_.reset(std::fopen(path_.c_str(), "ab"));
  ZT_REQUIRE(file_ != nullptr, "cannot write the TensorBoard event file '{}' ({})", path_,
             ec ? ec.message() : std::strerror(errno));
  append(version_event(now));
  flush();
}

void EventFileWriter::append(const std::string& event) {
  const std::string r = tfrecord(event);
  ZT_REQUIRE(std::fwrite(r.data(), 1, r.size(), file_.get()) == r.size(),
             "cannot write the TensorBoard event file '{}' ({})", path_, std::strerror(errno));
}

void EventFileWriter::add_scalar(std::string_view tag, double value, int64_t step) {
  append(scalar_event(now_seconds(), step, tag, static_cast<float>(value)));
}

void EventFileWriter::flush() {
  std::fflush(file_.get());
}

}  // namespace zt
