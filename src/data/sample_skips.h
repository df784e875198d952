#pragma once
// SampleSkips: ranges of the training stream's sample positions a run leaves out. The trainer
// addresses samples by logical position (step, micro-step, data-parallel rank: the samples it has
// trained on, which the iteration counts); physical() maps that to the stream's position, past
// every skipped range. A run that rewinds after diverging adds the window before the divergence
// here, and --skip-train-samples names ranges by hand; a checkpoint carries the list, so a resumed
// run skips what the saved one did.
#include <cstdint>
#include <string>
#include <vector>

namespace zt::data {

struct SampleRange {
  int64_t begin = 0, end = 0;  // [begin, end) of stream positions
  bool operator==(const SampleRange&) const = default;
};

class SampleSkips {
 public:
  // At most this many disjoint ranges: bounds what a checkpoint's list may make a load hold.
  static constexpr size_t kMaxRanges = 4096;
  SampleSkips() = default;
  // Sorted, disjoint and non-empty ranges; InputError otherwise (naming `what`).
  SampleSkips(std::vector<SampleRange> ranges, const std::string& what);
  // "A-B[,C-D...]": half-open ranges of stream positions; InputError naming the flag otherwise.
  static SampleSkips parse(const std::string& text);

  // The stream position of the sample at logical position `logical`.
  int64_t physical(int64_t logical) const;
  // The stream positions of logical positions [begin, end), as few ranges as they make.
  std::vector<SampleRange> physical_ranges(int64_t begin, int64_t end) const;
  // Adds `r`, merging with the ranges it touches.
  void add(const SampleRange& r);
  void add(const SampleSkips& other);
  const std::vector<SampleRange>& ranges() const { return ranges_; }
  bool empty() const { return ranges_.empty(); }
  // "A-B,C-D": what parse() reads.
  std::string text() const;

 private:
  std::vector<SampleRange> ranges_;
};

}  // namespace zt::data
