#include "src/core/checksum.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace zt {
namespace {

constexpr size_t kLanes = 4;
constexpr size_t kStride = kLanes * sizeof(uint64_t);

// Slice-by-8 tables for the reflected polynomial 0x82F63B78: table[k][b] is the CRC of byte b
// followed by k zero bytes, so one word costs eight lookups instead of eight dependent steps.
using Tables = std::array<std::array<uint32_t, 256>, 8>;

constexpr Tables make_tables() {
  Tables t{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t c = b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
    t[0][b] = c;
  }
  for (size_t k = 1; k < 8; ++k)
    for (size_t b = 0; b < 256; ++b) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xFF];
  return t;
}
constexpr Tables kTables = make_tables();

uint32_t table_byte(uint32_t crc, uint8_t b) {
  return (crc >> 8) ^ kTables[0][(crc ^ b) & 0xFF];
}

// The same as the instruction's crc32 of a little-endian 64-bit word.
uint32_t table_word(uint32_t crc, uint64_t w) {
  const uint64_t x = w ^ crc;
  return kTables[7][x & 0xFF] ^ kTables[6][(x >> 8) & 0xFF] ^ kTables[5][(x >> 16) & 0xFF] ^
         kTables[4][(x >> 24) & 0xFF] ^ kTables[3][(x >> 32) & 0xFF] ^
         kTables[2][(x >> 40) & 0xFF] ^ kTables[1][(x >> 48) & 0xFF] ^ kTables[0][x >> 56];
}

uint64_t load(const unsigned char* p) {
  uint64_t w;
  std::memcpy(&w, p, sizeof w);
  return w;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t checksum_instruction(const unsigned char* p, size_t n) {
  uint64_t c0 = 0xFFFFFFFFu, c1 = c0, c2 = c0, c3 = c0;
  size_t i = 0;
  for (; i + kStride <= n; i += kStride) {
    c0 = _mm_crc32_u64(c0, load(p + i));
    c1 = _mm_crc32_u64(c1, load(p + i + 8));
    c2 = _mm_crc32_u64(c2, load(p + i + 16));
    c3 = _mm_crc32_u64(c3, load(p + i + 24));
  }
  for (; i < n; ++i) c0 = _mm_crc32_u8(static_cast<uint32_t>(c0), p[i]);
  uint64_t f = 0xFFFFFFFFu;
  for (const uint64_t c : {c0, c1, c2, c3})
    f = _mm_crc32_u32(static_cast<uint32_t>(f), static_cast<uint32_t>(c));
  f = _mm_crc32_u64(f, n);
  return ~static_cast<uint32_t>(f);
}

bool have_instruction() {
  static const bool have = __builtin_cpu_supports("sse4.2");
  return have;
}
#else
bool have_instruction() {
  return false;
}
#endif

}  // namespace

namespace detail {

uint32_t chunk_checksum_tables(const void* data, size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t c[kLanes] = {0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu};
  size_t i = 0;
  for (; i + kStride <= bytes; i += kStride)
    for (size_t l = 0; l < kLanes; ++l) c[l] = table_word(c[l], load(p + i + 8 * l));
  for (; i < bytes; ++i) c[0] = table_byte(c[0], p[i]);
  uint32_t f = 0xFFFFFFFFu;
  for (const uint32_t lane : c)
    for (int k = 0; k < 4; ++k) f = table_byte(f, static_cast<uint8_t>(lane >> (8 * k)));
  f = table_word(f, bytes);
  return ~f;
}

bool crc32c_instruction() {
  return have_instruction();
}

}  // namespace detail

uint32_t chunk_checksum(const void* data, size_t bytes) {
#if defined(__x86_64__)
  if (have_instruction())
    return checksum_instruction(static_cast<const unsigned char*>(data), bytes);
#endif
  return detail::chunk_checksum_tables(data, bytes);
}

}  // namespace zt
