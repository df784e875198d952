#include "src/data/sample_skips.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "src/core/error.h"

namespace zt::data {
namespace {

// Positions stay far inside int64 however many samples a run consumes (2^50 ~ 10^15 samples).
constexpr int64_t kMaxPosition = int64_t{1} << 50;

int64_t parse_position(std::string_view s, const std::string& text) {
  int64_t v = -1;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  ZT_REQUIRE(ec == std::errc() && end == s.data() + s.size() && v >= 0 && v <= kMaxPosition,
             "--skip-train-samples '{}': '{}' is not a sample position in [0, 2^50]",
             text.substr(0, 80), s.substr(0, 24));
  return v;
}

}  // namespace

SampleSkips::SampleSkips(std::vector<SampleRange> ranges, const std::string& what)
    : ranges_(std::move(ranges)) {
  ZT_REQUIRE(ranges_.size() <= kMaxRanges, "{}: more than {} skipped sample ranges", what,
             kMaxRanges);
  for (size_t i = 0; i < ranges_.size(); ++i) {
    const SampleRange& r = ranges_[i];
    ZT_REQUIRE(r.begin >= 0 && r.begin < r.end && r.end <= kMaxPosition,
               "{}: skipped sample range [{}, {}) is empty or outside [0, 2^50]", what, r.begin,
               r.end);
    ZT_REQUIRE(i == 0 || ranges_[i - 1].end < r.begin,
               "{}: skipped sample ranges must be sorted and apart ([{}, {}) then [{}, {}))", what,
               ranges_[i - 1].begin, ranges_[i - 1].end, r.begin, r.end);
  }
}

SampleSkips SampleSkips::parse(const std::string& text) {
  SampleSkips skips;
  const std::string_view all = text;
  for (size_t pos = 0;;) {
    const size_t comma = all.find(',', pos);
    const std::string_view item =
        all.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    const size_t dash = item.find('-');
    ZT_REQUIRE(dash != std::string_view::npos,
               "--skip-train-samples '{}': '{}' is not a range A-B (sample positions, B excluded)",
               text.substr(0, 80), item.substr(0, 40));
    const int64_t b = parse_position(item.substr(0, dash), text);
    const int64_t e = parse_position(item.substr(dash + 1), text);
    ZT_REQUIRE(b < e, "--skip-train-samples '{}': the range {}-{} is empty", text.substr(0, 80), b,
               e);
    ZT_REQUIRE(skips.ranges_.size() < kMaxRanges, "--skip-train-samples: more than {} ranges",
               kMaxRanges);
    skips.add({b, e});
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return skips;
}

int64_t SampleSkips::physical(int64_t logical) const {
  int64_t p = logical;
  for (const SampleRange& r : ranges_) {
    if (r.begin > p) break;
    p += r.end - r.begin;
  }
  return p;
}

std::vector<SampleRange> SampleSkips::physical_ranges(int64_t begin, int64_t end) const {
  std::vector<SampleRange> out;
  for (int64_t l = begin; l < end; ++l) {
    const int64_t p = physical(l);
    if (!out.empty() && out.back().end == p)
      ++out.back().end;
    else
      out.push_back({p, p + 1});
  }
  return out;
}

void SampleSkips::add(const SampleRange& r) {
  if (r.begin >= r.end) return;
  std::vector<SampleRange> merged;
  SampleRange cur = r;
  bool placed = false;
  for (const SampleRange& x : ranges_) {
    if (x.end < cur.begin) {
      merged.push_back(x);
    } else if (cur.end < x.begin) {
      if (!placed) merged.push_back(cur);
      placed = true;
      merged.push_back(x);
    } else {  // touching or overlapping
      cur = {std::min(cur.begin, x.begin), std::max(cur.end, x.end)};
    }
  }
  if (!placed) merged.push_back(cur);
  ranges_ = std::move(merged);
}

void SampleSkips::add(const SampleSkips& other) {
  for (const SampleRange& r : other.ranges_) add(r);
}

std::string SampleSkips::text() const {
  std::string s;
  for (const SampleRange& r : ranges_)
    s += fmt::format("{}{}-{}", s.empty() ? "" : ",", r.begin, r.end);
  return s;
}

}  // namespace zt::data
