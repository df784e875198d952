// fp32 <-> bf16 / fp16 casts: round to nearest even, subnormals, inf/NaN, overflow, checked
// against an independent reference (decode by ldexp, round by searching the value table) and
// exhaustively over all 65536 half bit patterns.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "kernels/cpu/ops.h"
#include "src/core/half.h"
#include "tests/support/kernels_testing.h"

namespace zt {
namespace {

struct Format {
  int mant_bits, bias;
  uint16_t inf_bits;  // = one past the largest finite positive pattern
};
constexpr Format kBf16{7, 127, 0x7f80};
constexpr Format kFp16{10, 15, 0x7c00};

// Independent decode of a positive finite (or inf) pattern; inf decodes to 2^(emax+1), the
// value the rounding table uses for "rounds to inf".
double decode(const Format& f, uint16_t bits) {
  const int exp = bits >> f.mant_bits, mant = bits & ((1 << f.mant_bits) - 1);
  if (exp == 0) return std::ldexp(double(mant), 1 - f.bias - f.mant_bits);
  return std::ldexp(double((1 << f.mant_bits) + mant), exp - f.bias - f.mant_bits);
}

// Positive value table indexed by pattern 0 .. inf_bits.
std::vector<double> table(const Format& f) {
  std::vector<double> t(size_t(f.inf_bits) + 1);
  for (uint32_t b = 0; b <= f.inf_bits; ++b) t[b] = decode(f, static_cast<uint16_t>(b));
  return t;
}

// Reference round-to-nearest-even of a float into the format, by search.
uint16_t ref_round(const Format& f, const std::vector<double>& t, float x) {
  if (std::isnan(x)) return 0xffff;  // marker: caller checks NaN-ness
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const double a = std::fabs(double(x));
  if (a >= t.back()) return sign | f.inf_bits;
  const auto it = std::upper_bound(t.begin(), t.end(), a);  // first value > a
  const uint16_t hi = static_cast<uint16_t>(it - t.begin()), lo = static_cast<uint16_t>(hi - 1);
  const double dlo = a - t[lo], dhi = t[hi] - a;
  uint16_t r;
  if (dlo < dhi) {
    r = lo;
  } else if (dhi < dlo) {
    r = hi;
  } else {
    r = (lo & 1) ? hi : lo;  // tie: even pattern
  }
  return sign | r;
}

template <typename H>
uint16_t bits_of(float x) {
  return from_float<H>(x).bits;
}

// Floats worth testing for a format: every table value, every midpoint between neighbours
// (the ties), the float neighbours of both, signs, specials, and random bit patterns.
std::vector<float> probes(const std::vector<double>& t) {
  std::vector<float> v;
  for (size_t i = 0; i + 1 < t.size(); ++i) {
    const float mid = static_cast<float>((t[i] + t[i + 1]) / 2);  // exact in float
    for (float c : {static_cast<float>(t[i]), mid}) {
      v.push_back(c);
      v.push_back(std::nextafter(c, 0.0f));
      v.push_back(std::nextafter(c, std::numeric_limits<float>::infinity()));
    }
  }
  std::mt19937 g(7);
  for (int i = 0; i < 200000; ++i) v.push_back(bits_float(static_cast<uint32_t>(g())));
  for (float c : {0.0f, std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::min(),
                  std::numeric_limits<float>::max(), std::numeric_limits<float>::infinity()})
    v.push_back(c);
  const size_t n = v.size();
  for (size_t i = 0; i < n; ++i) v.push_back(-v[i]);
  return v;
}

template <typename H>
void check_rounding(const Format& f) {
  const auto t = table(f);
  const auto xs = probes(t);
  for (float x : xs) {
    const uint16_t got = bits_of<H>(x);
    if (std::isnan(x)) {
      ASSERT_TRUE(std::isnan(to_float(H{got}))) << std::hexfloat << x;
      continue;
    }
    ASSERT_EQ(got, ref_round(f, t, x)) << std::hexfloat << x;
  }
  // The cast kernel matches the scalar conversion element for element.
  std::vector<H> h(xs.size());
  cpu::Kernels::cast(h.data(), xs.data(), static_cast<int64_t>(xs.size()));
  for (size_t i = 0; i < xs.size(); ++i) ASSERT_EQ(h[i].bits, bits_of<H>(xs[i])) << i;
}

TEST(KernelsCast, Bf16RoundsToNearestEven) {
  check_rounding<bf16>(kBf16);
}
TEST(KernelsCast, Fp16RoundsToNearestEven) {
  check_rounding<fp16>(kFp16);
}

TEST(KernelsCast, Bf16Cases) {
  EXPECT_EQ(bits_of<bf16>(1.0f), 0x3f80);
  EXPECT_EQ(bits_of<bf16>(1.0f + 0x1p-8f), 0x3f80);             // tie, even stays
  EXPECT_EQ(bits_of<bf16>(1.0f + 3 * 0x1p-8f), 0x3f82);         // tie, odd rounds up
  EXPECT_EQ(bits_of<bf16>(1.0f + 0x1p-8f + 0x1p-23f), 0x3f81);  // just above the tie
  EXPECT_EQ(bits_of<bf16>(bits_float(0x00000001u)), 0x0000);    // float subnormals
  EXPECT_EQ(bits_of<bf16>(bits_float(0x00018000u)), 0x0002);    // subnormal tie -> even
  EXPECT_EQ(bits_of<bf16>(bits_float(0x00010000u)), 0x0001);    // smallest bf16 subnormal
  EXPECT_EQ(bits_of<bf16>(bits_float(0x7f7f7fffu)), 0x7f7f);    // largest finite stays
  EXPECT_EQ(bits_of<bf16>(bits_float(0x7f7f8000u)), 0x7f80);    // overflow by rounding
  EXPECT_EQ(bits_of<bf16>(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_EQ(bits_of<bf16>(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(bits_of<bf16>(-std::numeric_limits<float>::infinity()), 0xff80);
  EXPECT_EQ(bits_of<bf16>(-0.0f), 0x8000);
  const uint16_t nan = bits_of<bf16>(bits_float(0x7f800001u));  // payload only in low bits
  EXPECT_TRUE((nan & 0x7f80) == 0x7f80 && (nan & 0x7f) != 0) << std::hex << nan;
}

TEST(KernelsCast, Fp16Cases) {
  EXPECT_EQ(bits_of<fp16>(1.0f), 0x3c00);
  EXPECT_EQ(bits_of<fp16>(1.0f + 0x1p-11f), 0x3c00);      // tie, even stays
  EXPECT_EQ(bits_of<fp16>(1.0f + 3 * 0x1p-11f), 0x3c02);  // tie, odd rounds up
  EXPECT_EQ(bits_of<fp16>(65504.0f), 0x7bff);
  EXPECT_EQ(bits_of<fp16>(65519.99f), 0x7bff);  // below the overflow tie
  EXPECT_EQ(bits_of<fp16>(65520.0f), 0x7c00);   // tie with inf: rounds to inf
  EXPECT_EQ(bits_of<fp16>(1e6f), 0x7c00);
  EXPECT_EQ(bits_of<fp16>(-1e6f), 0xfc00);
  EXPECT_EQ(bits_of<fp16>(0x1p-24f), 0x0001);         // smallest subnormal
  EXPECT_EQ(bits_of<fp16>(0x1p-25f), 0x0000);         // tie with 0 -> even (0)
  EXPECT_EQ(bits_of<fp16>(0x1.000002p-25f), 0x0001);  // just above that tie
  EXPECT_EQ(bits_of<fp16>(3 * 0x1p-25f), 0x0002);     // subnormal tie -> even
  EXPECT_EQ(bits_of<fp16>(0x1.ff8p-15f), 0x03ff);     // largest subnormal
  EXPECT_EQ(bits_of<fp16>(0x1.ffcp-15f), 0x0400);     // tie: rounds up to the normal
  EXPECT_EQ(bits_of<fp16>(-0.0f), 0x8000);
  EXPECT_EQ(bits_of<fp16>(std::numeric_limits<float>::infinity()), 0x7c00);
  const uint16_t nan = bits_of<fp16>(std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE((nan & 0x7c00) == 0x7c00 && (nan & 0x3ff) != 0);
}

// All 65536 patterns: decoding matches the independent decoder, and encoding the decoded
// value gives the pattern back (NaN stays NaN with its sign; decoded, with its payload).
template <typename H>
void check_exhaustive(const Format& f) {
  std::vector<H> all(65536);
  for (uint32_t b = 0; b < 65536; ++b) all[b].bits = static_cast<uint16_t>(b);
  std::vector<float> wide(65536);
  cpu::Kernels::cast(wide.data(), all.data(), 65536);
  std::vector<H> back(65536);
  cpu::Kernels::cast(back.data(), wide.data(), 65536);
  const uint16_t abs_mask = 0x7fff;
  for (uint32_t b = 0; b < 65536; ++b) {
    const uint16_t a = b & abs_mask;
    const bool neg = (b & 0x8000) != 0;
    const float x = wide[b];
    ASSERT_EQ(float_bits(x), float_bits(to_float(all[b]))) << b;
    if (a > f.inf_bits) {
      ASSERT_TRUE(std::isnan(x)) << b;
      ASSERT_EQ(std::signbit(x), neg) << b;
      // Widening keeps the payload where it was (no quieting of a signalling NaN).
      const uint32_t payload = a & ((1u << f.mant_bits) - 1);
      ASSERT_EQ(float_bits(x),
                (neg ? 0x80000000u : 0u) | 0x7f800000u | payload << (23 - f.mant_bits))
          << b;
      ASSERT_TRUE(std::isnan(to_float(back[b]))) << b;
      ASSERT_EQ(back[b].bits & 0x8000, b & 0x8000) << b;
      continue;
    }
    const double want = a == f.inf_bits ? std::numeric_limits<double>::infinity() : decode(f, a);
    ASSERT_EQ(double(x), neg ? -want : want) << b;
    ASSERT_EQ(std::signbit(x), neg) << b;
    ASSERT_EQ(back[b].bits, b) << b;
  }
}

TEST(KernelsCast, Bf16AllPatternsRoundTrip) {
  check_exhaustive<bf16>(kBf16);
}
TEST(KernelsCast, Fp16AllPatternsRoundTrip) {
  check_exhaustive<fp16>(kFp16);
}

TEST(KernelsCast, AccumulateRoundsOnce) {
  const int64_t n = 50000;
  const auto a = testing::random_floats(n, 1, -4, 4), s = testing::random_floats(n, 2, -1, 1);
  std::vector<bf16> hb(n);
  std::vector<fp16> hf(n);
  cpu::Kernels::cast(hb.data(), a.data(), n);
  cpu::Kernels::cast(hf.data(), a.data(), n);
  const auto hb0 = hb;
  const auto hf0 = hf;
  cpu::Kernels::accumulate(hb.data(), s.data(), n);
  cpu::Kernels::accumulate(hf.data(), s.data(), n);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(hb[i].bits, to_bf16(to_float(hb0[i]) + s[i]).bits) << i;
    ASSERT_EQ(hf[i].bits, to_fp16(to_float(hf0[i]) + s[i]).bits) << i;
  }
  // A small addend below half an ulp is lost (one rounding, no stochastic rounding).
  bf16 one = to_bf16(1.0f);
  cpu::Kernels::accumulate(&one, std::vector<float>{0x1p-9f}.data(), 1);
  EXPECT_EQ(one.bits, 0x3f80);
}

}  // namespace
}  // namespace zt
